"""Search progress, the cost announcement, and the trade-off curve reusing the search (issue 7, item 13)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from safeshare.config import load_config
from safeshare.core.evaluation import Evaluator
from safeshare.core.frequency import FrequencyTable
from safeshare.data.engines.memory import MemoryEngine
from safeshare.search.progress import Ticker
from safeshare.workflows.anonymizer import Anonymizer, build_frequency_table, tradeoff
from tests.conftest import acknowledge, run_cli, write_small_adult


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = write_small_adult(tmp_path_factory.mktemp("adult"), n_train=1500)
    acknowledge(directory / "adult.yaml")  # kept columns identify on 1,500 records (issue 33)
    return directory


@pytest.fixture(scope="module")
def adult(workdir: Path) -> tuple[Anonymizer, FrequencyTable]:
    cfg = load_config(workdir / "adult.yaml")
    anonymizer = Anonymizer(cfg.schema, cfg.privacy, max_suppression=cfg.max_suppression, metric="prec")
    table, _ = build_frequency_table(MemoryEngine(cfg.source), cfg.schema)
    return anonymizer, table


def test_ticker_calls_every_power_of_two() -> None:
    calls: list[int] = []
    ticker = Ticker(calls.append, every=4)
    for _ in range(10):
        ticker.tick()
    ticker.done()
    assert calls == [4, 8, 10]
    with pytest.raises(ValueError, match="power of two"):
        Ticker(None, every=3)


@pytest.mark.parametrize(
    ("algorithm", "options"), [("ola", {}), ("exhaustive", {}), ("inverse-ola", {"max_loss": 0.5})]
)
def test_progress_reports_the_checked_nodes(
    adult: tuple[Anonymizer, FrequencyTable], algorithm: str, options: dict[str, float]
) -> None:
    base, table = adult
    anonymizer = Anonymizer(
        base.schema,
        base.criterion.models,
        max_suppression=0.05,
        metric="prec",
        algorithm=algorithm,
        prec_weights=None,
        algorithm_options=options,
    )
    calls: list[int] = []
    result = anonymizer.fit_table(table, progress=calls.append)
    assert calls == sorted(calls) and len(calls) >= 2
    assert calls[-1] >= result.search.checked_nodes > 0
    assert calls[-1] <= 2 * table.lattice.size


def test_progress_does_not_change_the_result(adult: tuple[Anonymizer, FrequencyTable]) -> None:
    anonymizer, table = adult
    quiet = anonymizer.fit_table(table)
    loud = anonymizer.fit_table(table, progress=lambda _: None)
    assert loud.node == quiet.node and loud.search.checked_nodes == quiet.search.checked_nodes


def test_tradeoff_reuses_evaluations_and_equals_fresh_searches(
    adult: tuple[Anonymizer, FrequencyTable], monkeypatch: pytest.MonkeyPatch
) -> None:
    anonymizer, table = adult
    result = anonymizer.fit_table(table)
    assert result.failing  # the main search's evaluations, kept for the curve
    calls = [0]
    original, original_below = Evaluator.classes, Evaluator.records_below

    def counting(self: Evaluator, node: tuple[int, ...]) -> object:
        calls[0] += 1
        return original(self, node)

    def counting_below(self: Evaluator, node: tuple[int, ...], k: int) -> int:
        calls[0] += 1
        return original_below(self, node, k)

    # a node's evaluation: its class table, or for k-anonymity alone its count of records
    # in classes under k (PrivacyCriterion.failing_at)
    monkeypatch.setattr(Evaluator, "classes", counting)
    monkeypatch.setattr(Evaluator, "records_below", counting_below)
    curve = tradeoff(anonymizer, result)
    reused = calls[0]
    calls[0] = 0
    fresh = []
    for point in curve:
        other = Anonymizer(
            anonymizer.schema,
            anonymizer.criterion.models,
            max_suppression=point["max_suppression"],
            metric="prec",
        )
        r = other.fit_table(table, evaluator=result.evaluator)
        fresh.append((r.levels, r.suppressed_records))
    assert [(p["levels"], p["suppressed_records"]) for p in curve] == fresh
    assert reused < calls[0]  # fewer nodes evaluated than six independent searches


def test_cli_announces_the_search_and_keeps_test_output_clean(
    workdir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["anonymize", str(workdir / "adult.yaml"), "--no-tradeoff"]
    code, _, stderr = run_cli([*args, "--out", str(tmp_path / "a")], capsys)
    assert code == 0, stderr
    assert "search: lattice of 7,776 nodes (9 quasi-identifiers" in stderr and " ms a node" in stderr
    assert "(OLA usually checks far fewer)" in stderr
    assert "nodes checked" not in stderr and "\x1b[" not in stderr  # no bar: stderr is not a terminal
    code, _, stderr = run_cli([*args, "--out", str(tmp_path / "c"), "--algorithm", "anytime"], capsys)
    assert code == 0, stderr
    assert "(the anytime search checks far fewer and stops at its budget)" in stderr
    code, stdout, stderr = run_cli([*args, "--out", str(tmp_path / "b"), "-q"], capsys)
    assert code == 0 and stdout == "" and stderr == ""


def test_cli_skips_the_tradeoff_on_large_lattices_and_says_so(
    workdir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import safeshare.workflows.anonymize

    monkeypatch.setattr(safeshare.workflows.anonymize, "TRADEOFF_AUTO_MAX", 1000)
    out = tmp_path / "out"
    code, _, stderr = run_cli(["anonymize", str(workdir / "adult.yaml"), "--out", str(out)], capsys)
    assert code == 0, stderr
    assert "trade-off curve skipped: lattice of 7,776 nodes > 1,000; use --tradeoff" in " ".join(
        stderr.split()
    )
    report = json.loads((out / "report.json").read_text())
    assert "tradeoff" not in report or not report["tradeoff"]
    forced = tmp_path / "forced"
    code, _, stderr = run_cli(
        ["anonymize", str(workdir / "adult.yaml"), "--out", str(forced), "--tradeoff"], capsys
    )
    assert code == 0 and len(json.loads((forced / "report.json").read_text())["tradeoff"]) == 6, stderr
