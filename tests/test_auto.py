"""``algorithm: auto``: exact OLA up to ``exact_max_nodes`` lattice nodes, the anytime search above."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from safeshare.config import load_config
from safeshare.config.algorithms import make_strategy
from safeshare.errors import ConfigError
from safeshare.models import KAnonymity
from safeshare.report.content import describe_search
from safeshare.search.auto import DEFAULT_EXACT_MAX_NODES, AutoSearch
from tests.conftest import random_table, run_cli, write_small_adult
from tests.test_anytime import context


@pytest.mark.parametrize("seed", range(4))
def test_switch_at_the_threshold(seed: int) -> None:
    """Exactly ``exact_max_nodes`` nodes: OLA, with OLA's node; one node fewer allowed: anytime."""
    table = random_table(np.random.default_rng(seed), n_qis=3, n_rows=60)
    size = table.lattice.size
    ola = make_strategy("ola").run(context(table, [KAnonymity(3)], 0.05, "prec"))
    at = make_strategy("auto", {"exact_max_nodes": size}).run(context(table, [KAnonymity(3)], 0.05, "prec"))
    assert at.algorithm == "auto" and at.extra["auto_choice"] == "ola"
    assert (at.node, at.objective, at.checked_nodes) == (ola.node, ola.objective, ola.checked_nodes)
    assert at.extra["optimal"] is (ola.node is not None)
    assert at.extra["auto_reason"].startswith(f"lattice of {size:,} nodes <= exact_max_nodes {size:,}")
    over = make_strategy("auto", {"exact_max_nodes": size - 1, "time_limit": None, "max_evaluations": 10_000})
    above = over.run(context(table, [KAnonymity(3)], 0.05, "prec"))
    assert above.algorithm == "auto" and above.extra["auto_choice"] == "anytime"
    assert above.extra["search"] == "anytime" and above.extra["exact_max_nodes"] == size - 1
    assert above.extra["auto_reason"].startswith(f"lattice of {size:,} nodes > exact_max_nodes {size - 1:,}")
    assert "anytime search (max_evaluations 10,000)" in above.extra["auto_reason"]
    # an unconstrained-enough budget: anytime proves OLA's optimum (same loss)
    assert above.extra["optimal"] and above.objective == pytest.approx(ola.objective)


def test_options_are_checked() -> None:
    auto = make_strategy("auto")
    assert isinstance(auto, AutoSearch) and auto.exact_max_nodes == DEFAULT_EXACT_MAX_NODES
    assert auto.anytime.time_limit == 60.0  # the anytime search's default
    with pytest.raises(ConfigError, match="exact_max_nodes: expected an integer >= 1, got 0"):
        make_strategy("auto", {"exact_max_nodes": 0})
    with pytest.raises(ConfigError, match="takes no option 'max_loss'"):
        make_strategy("auto", {"max_loss": 0.5})
    with pytest.raises(ConfigError, match="time_limit: expected a positive number of seconds"):
        make_strategy("auto", {"time_limit": -1})
    with pytest.raises(ConfigError, match="takes no option 'exact_max_nodes'"):
        make_strategy("anytime", {"exact_max_nodes": 5})


def _config(tmp_path: Path, extra: str) -> Path:
    directory = write_small_adult(tmp_path, n_train=200)
    path = directory / "adult.yaml"
    path.write_text(path.read_text().replace("algorithm: ola\n", "") + extra)
    return path


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ("algorithm: ola\nexact_max_nodes: 10\n", "exact_max_nodes: applies to algorithm: auto only"),
        ("algorithm: anytime\nexact_max_nodes: 10\n", "exact_max_nodes: applies to algorithm: auto only"),
        ("algorithm: ola\ntime_limit: 5\n", "time_limit: applies to algorithm: anytime or auto only"),
        ("algorithm: auto\nexact_max_nodes: 0\n", "exact_max_nodes: expected an integer >= 1"),
        ("algorithm: auto\nmax_loss: 0.5\n", "max_loss: applies to algorithm: inverse-ola only"),
    ],
)
def test_configuration_keys(tmp_path: Path, extra: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_config(_config(tmp_path, extra))


def test_configuration_accepts_the_budget_with_auto(tmp_path: Path) -> None:
    cfg = load_config(
        _config(tmp_path, "algorithm: auto\ntime_limit: 5\nmax_evaluations: 9\nexact_max_nodes: 7\n")
    )
    assert cfg.algorithm_options() == {"time_limit": 5.0, "max_evaluations": 9, "exact_max_nodes": 7}
    search = make_strategy(cfg.algorithm, cfg.algorithm_options())
    assert isinstance(search, AutoSearch) and search.exact_max_nodes == 7
    with pytest.raises(ConfigError, match=r"applies to algorithm: .* only \(--algorithm ola\)"):
        cfg.with_overrides(algorithm="ola")
    with pytest.raises(
        ConfigError, match=r"exact_max_nodes: applies to algorithm: auto only \(--algorithm anytime"
    ):
        cfg.with_overrides(algorithm="anytime")


def test_report_sentence() -> None:
    base = {"algorithm": "auto", "checked_nodes": 10, "lattice_size": 100, "exact_max_nodes": 50}
    over = {
        **base,
        "search": "anytime",
        "auto_choice": "anytime",
        "auto_reason": "lattice of 100 nodes > exact_max_nodes 50: anytime search (time_limit 60 s)",
        "information_loss": 0.5,
        "lower_bound": 0.25,
        "gap": 0.25,
        "optimal": False,
        "stop_reason": "time_limit",
    }
    text = describe_search(over)
    assert text.startswith("auto: lattice of 100 nodes > exact_max_nodes 50: anytime search")
    assert (
        "anytime: 10 of 100 lattice nodes checked; best found" in text
        and "optimal" not in text.split("50:")[1]
    )
    under = {
        **base,
        "exact_max_nodes": 100,
        "auto_choice": "ola",
        "auto_reason": "lattice of 100 nodes <= exact_max_nodes 100: exact search (ola)",
        "minimal_nodes": 3,
        "optimal": True,
    }
    assert describe_search(under) == (
        "auto: lattice of 100 nodes <= exact_max_nodes 100: exact search (ola); "
        "ola: 10 of 100 lattice nodes checked, 3 minimal qualifying nodes compared; "
        "proven optimal (exact search)"
    )


@pytest.mark.parametrize("over", [False, True])
def test_cli_reports_which_search_ran(tmp_path: Path, capsys: pytest.CaptureFixture[str], over: bool) -> None:
    directory = write_small_adult(tmp_path, n_train=400)
    # the run's warnings that contradict its headline, acknowledged (issue 33)
    accept = ["--accept-warning", "kept-column-identifying"]
    out = tmp_path / "ola"
    args = ["anonymize", str(directory / "adult.yaml"), "--out", str(out), *accept]
    code, _, stderr = run_cli(args, capsys)
    assert code == 0, stderr
    ola = json.loads((out / "report.json").read_text())
    limit = ola["lattice_size"] - 1 if over else ola["lattice_size"]
    out = tmp_path / "auto"
    args = ["anonymize", str(directory / "adult.yaml"), "--out", str(out), "--algorithm", "auto"]
    args += ["--exact-max-nodes", str(limit), "--max-evaluations", "6", *accept]
    code, stdout, stderr = run_cli(args, capsys)
    assert code == 0, stderr
    report = json.loads((out / "report.json").read_text())
    assert report["algorithm"] == "auto" and report["exact_max_nodes"] == limit
    assert report["auto_choice"] == ("anytime" if over else "ola")
    relation = ">" if over else "<="
    assert report["auto_reason"].startswith(
        f"lattice of {ola['lattice_size']:,} nodes {relation} exact_max_nodes"
    )
    assert "auto: lattice of" in " ".join(stdout.split())
    if over:
        assert report["checked_nodes"] <= 6 and report["minimal_nodes"] is None
        assert report["lower_bound"] <= report["information_loss"]
        assert report["optimal"] == (report["gap"] == 0)
    else:  # the same node as ola
        assert report["levels"] == ola["levels"] and report["optimal"] is True
        assert report["information_loss"] == ola["information_loss"]
    html = (out / "report.html").read_text()
    assert "exact_max_nodes" in html
