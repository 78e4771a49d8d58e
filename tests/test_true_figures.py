"""Numbers that are wrong (issue 30, items 13, 15 and 17): every view shows the figure computed.

* 13: with ``prec_weights`` the terminal, report.json, report.html, the trade-off curve and the
  workbench's Explore view show one loss, the weighted one the search minimized, labelled so.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from safeshare import api
from safeshare.metrics.loss import Prec
from tests.conftest import acknowledge, run_cli, write_small_adult


# ------------------------------------------------------------------ item 13: one weighted loss
@pytest.fixture(scope="module")
def weighted_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    directory = write_small_adult(tmp_path_factory.mktemp("weighted"))
    config = directory / "adult.yaml"
    config.write_text(config.read_text() + "prec_weights: {age: 10, sex: 0.5}\n")
    acknowledge(config)  # kept columns identify on 3,000 records (issue 33)
    return {"config": config, "out": directory / "out"}


def test_the_weighted_loss_is_the_one_figure_of_every_view(
    weighted_run: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    config, out = weighted_run["config"], weighted_run["out"]
    code, stdout, stderr = run_cli(["anonymize", str(config), "--out", str(out)], capsys)
    assert code == 0, stderr
    report = json.loads((out / "report.json").read_text())
    node = tuple(report["node"])
    release = api.anonymize(config, None)
    assert release.fit is not None
    weighted = Prec(release.fit.evaluator, {"age": 10, "sex": 0.5}).value(node)
    unweighted = Prec(release.fit.evaluator).value(node)
    assert abs(weighted - unweighted) > 0.05  # the trial's case: the two differ at this node
    # report.json: the minimized figure, under its key and in every metric's table, labelled
    assert report["information_loss"] == pytest.approx(weighted)
    assert report["loss"]["prec"] == pytest.approx(weighted)
    assert report["metric_weights"] == {"age": 10.0, "sex": 0.5}
    assert report["metric_label"] == "prec, weighted (age 10, sex 0.5)"
    # the trade-off curve's chosen point is the same node with the same figure
    chosen = [t for t in report["tradeoff"] if t["chosen"]]
    assert len(chosen) == 1 and chosen[0]["information_loss"] == pytest.approx(report["information_loss"])
    # the terminal
    assert f"prec, weighted (age 10, sex 0.5) = {weighted:.6g}" in re.sub(r"\s*│\s*", " ", stdout)
    assert f"{unweighted:.6g}" not in stdout
    # report.html: the loss table's optimized row, weighted, and no unweighted Prec anywhere
    html = (out / "report.html").read_text()
    assert "Prec (Sweeney), weighted (age 10, sex 0.5) (optimized)" in html
    assert f"{unweighted:.6g}" not in html
    # the Python result and the workbench's Explore view of the same run
    assert release.choice.information_loss == pytest.approx(weighted)
    from safeshare.workflows.explore import lattice_view

    view = lattice_view(release.fit, max_nodes=50)
    optimum = view.node(node)
    assert view.metric == "prec, weighted (age 10, sex 0.5)"
    assert optimum.loss == pytest.approx(report["information_loss_normalized"])
    assert optimum.losses["prec"] == pytest.approx(optimum.loss)


def test_without_weights_the_label_is_the_metric(tmp_path: Path) -> None:
    config = write_small_adult(tmp_path) / "adult.yaml"
    release = api.anonymize(config, None, tradeoff=False)
    report = release.report
    assert report["metric_label"] == "prec" and report["metric_weights"] == {}
    assert report["loss"]["prec"] == report["information_loss"]


# ------------------------------------------------------------------ item 15: figures that can be
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from safeshare.figures import compared, count, number, percent  # noqa: E402

finite = st.floats(allow_nan=False, allow_infinity=False, allow_subnormal=False)
shares = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)


@given(x=finite, digits=st.integers(1, 8))
def test_a_number_is_never_rounded_to_a_value_it_cannot_have(x: float, digits: int) -> None:
    text = number(x, digits)
    shown = float(text)
    assert (shown == 0) == (x == 0) and (shown < 0) == (x < 0)
    if abs(x) < 1:
        assert abs(shown) < 1  # a probability, a share, a normalized loss never reads 1
    assert abs(shown - x) <= 0.5 * 10 ** (1 - digits) * abs(x) * (1 + 1e-9)  # at least `digits` significant


@given(x=shares, digits=st.integers(1, 6))
def test_a_share_is_never_zero_or_whole_unless_it_is(x: float, digits: int) -> None:
    text = percent(x, digits)
    assert text.endswith("%")
    shown = float(text[:-1])
    assert (shown == 0) == (x == 0)
    assert (shown >= 100) == (x >= 1)
    assert abs(shown - 100 * x) <= 10 ** (1 - digits) * 100 * x + 1e-12


@given(a=finite, b=finite)
def test_two_figures_side_by_side_read_as_they_compare(a: float, b: float) -> None:
    left, right = compared(a, b)
    assert (left == right) == (a == b)
    if a < b:
        assert float(left) <= float(right)
    assert float(left) == float(number(float(left), 17))  # each is a number() text


@given(n=st.integers(0, 10**12))
def test_counts_are_exact(n: int) -> None:
    assert int(count(n).replace(",", "")) == n


def test_the_trials_figures() -> None:
    assert number(3.1e-05) == "3.1e-05" and number(1 / 30_000) == "3.333e-05"
    assert number(0.0846) == "0.0846" and number(0.2) == "0.2" and number(0.09) == "0.09"
    assert number(0.99996) == "0.99996" and number(1.0) == "1" and number(0) == "0"
    assert percent(0.00001) == "0.001%" and percent(0.9999999) == "99.99999%" and percent(0.05) == "5%"
    assert compared(0.090004, 0.09) == ("0.090004", "0.09")
    assert number(123456.0, 4) == "123500" and number(3206293.0, 6) == "3206290"


def _doc(achieved: float, threshold: float, k: int | None = None, smallest: int = 3) -> dict[str, Any]:
    return {
        "privacy": {"models": {"risk": {"measure": "B", "threshold": threshold, "estimator": "pitman"}}},
        "verification": {"checks": {"models": {"risk": {"value": achieved, "params": {}}}}},
        "privacy_achieved": {"risk": {"B": achieved}},
        "k": k,
        "min_class_size": smallest,
        "verified": True,
    }


def test_the_headline_never_shows_b_as_zero() -> None:
    """The trial: ``B = 0 <= 0.0001`` for an achieved B of 3.1e-05 (B >= 1/N > 0)."""
    from safeshare.workflows.result import headline

    text = headline(_doc(3.1e-05, 0.0001), "a research environment")["text"]
    assert "B = 3.1e-05 <= 0.0001" in text
    assert "B = 0 " not in text
    # a value just above its threshold never reads equal to it
    text = headline(_doc(0.090004, 0.09))["text"]
    assert "B = 0.090004 > 0.09" in text
    # the prosecutor bound of a large k is not rounded away either
    assert "1/50000 = 2e-05" in headline(_doc(1e-5, 0.01, k=50_000, smallest=50_000))["text"]


N_RECORDS = st.integers(2, 10**9)


@given(n=N_RECORDS, data=st.data())
@settings(max_examples=200)
def test_every_headline_b_is_in_its_range_and_reads_as_it_compares(n: int, data: st.DataObject) -> None:
    """Property: for any achieved B in [1/N, 1] and any threshold, the headline (and the HTML's
    headline figures) show a B in (0, 1] unless it is 1, and the relation they print holds of
    the figures they print."""
    from safeshare.report.html import _headline
    from safeshare.workflows.result import headline

    b = data.draw(st.floats(min_value=1 / n, max_value=1.0))
    threshold = data.draw(st.floats(min_value=1 / n, max_value=1.0))
    doc = _doc(b, threshold)
    head = headline(doc)
    match = re.search(r"B = (\S+) (<=|>) (\S+) ", head["text"])
    assert match is not None, head["text"]
    shown, relation, limit = float(match[1]), match[2], float(match[3])
    assert 0 < shown <= 1 and (shown < 1 or b == 1)
    assert (shown <= limit) if relation == "<=" else (shown > limit)
    doc["headline"] = head
    rows = _headline(doc)
    assert rows is not None
    figures = re.findall(
        r'data-key="headline\.risk\.(?:achieved|threshold)"[^>]*>([^<]+)<', str(rows["rows"][0][1])
    )
    assert [float(f) for f in figures] == [shown, limit]


def test_the_certificates_attack_models_never_round_b_away() -> None:
    from safeshare.workflows.evidence import _attack_models

    verification = type(
        "V", (), {"min_class_size": 50_000, "records_out": 100_000, "equivalence_classes": 2}
    )()
    models = _attack_models(
        verification,
        ["age"],
        {"measure": "B", "threshold": 0.0001, "estimator": "pitman", "population_size": 10**9},
        50_000,
        10**9,
        3.1e-05,
    )
    text = " ".join(m.guarantee for m in models)
    assert "B <= 0.0001 (pitman, N = 1000000000; this release: 3.1e-05)" in text
    assert "1/50000 = 2e-05" in text and " = 0;" not in text and "this release: 0)" not in text


#: The modules that write the figures a person reads: the headline and the Release
#: (workflows/result.py), the certificate's attack models (workflows/evidence.py), report.html
#: (report/html.py, report/content.py), the terminal (cli/anonymize.py, workflows/risk.py's
#: rows), risk.html (risk/html.py), the workbench's filters (ui/app.py) and local recoding's
#: messages (workflows/local_release.py).
VIEWS = (
    "workflows/result.py",
    "workflows/evidence.py",
    "report/html.py",
    "report/content.py",
    "cli/anonymize.py",
    "workflows/risk.py",
    "risk/html.py",
    "ui/app.py",
    "workflows/local_release.py",
    "workflows/release_attack.py",
    "report/attack_section.py",
    "workflows/before_after.py",
    "workflows/coverage.py",
    "workflows/utility_view.py",
)
#: Figures that are not results: timings, and a refused computation's cost
NOT_FIGURES = re.compile(r"elapsed_s|timings|GiB|seconds|days|synthetic records|value:,\.0f")


def test_every_view_writes_its_figures_with_the_one_formatter() -> None:
    """No fixed-decimal or own significant-figure format in the views: ``:.4f`` wrote B = 3.1e-05
    as 0; every figure goes through :mod:`safeshare.figures` (a new view that formats its own
    numbers fails here)."""
    src = Path(__file__).resolve().parents[1] / "src" / "safeshare"
    own = re.compile(r"\{[^{}]*:[ +,]?\.?\d*[efg%]\}|\{[^{}]*:[,+]?\.\d+[efg%]?\}")
    offenders = []
    for name in VIEWS:
        for number_, line in enumerate((src / name).read_text().splitlines(), 1):
            if own.search(line) and not NOT_FIGURES.search(line):
                offenders.append(f"{name}:{number_}: {line.strip()}")
    assert not offenders, "\n".join(offenders)


# ------------------------------------------------------------------ item 17: paths that climb
def _strings(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return [value] if isinstance(value, str) else []


def test_a_path_outside_the_configurations_folder_is_shown_by_name_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The trial: ``../../../../..<path>/age.csv`` in report.json and report.html. The input and
    hierarchy files two folders above the configuration, the release beside neither: every path
    in what is published is a name, or relative to the configuration's folder when inside it."""
    import shutil

    from tests.conftest import ADULT_DIR

    data = tmp_path / "custodian-jdoe" / "project-x"
    (data / "hierarchies").mkdir(parents=True)
    lines = (ADULT_DIR / "adult.data").read_text().splitlines()[:2000]
    (data / "adult.data").write_text("\n".join(lines) + "\n")
    for name in ("age", "workclass", "education", "marital-status", "occupation", "relationship"):
        shutil.copy(ADULT_DIR / "hierarchies" / f"{name}.csv", data / "hierarchies" / f"{name}.csv")
    conf = tmp_path / "configs" / "deep" / "er"
    (conf / "hierarchies").mkdir(parents=True)
    for name in ("race", "sex", "native-country"):  # inside the configuration's folder
        shutil.copy(ADULT_DIR / "hierarchies" / f"{name}.csv", conf / "hierarchies" / f"{name}.csv")
    (conf / "linked").symlink_to(data / "hierarchies")  # inside by name, outside once resolved
    climb = "../../../custodian-jdoe/project-x"
    text = (ADULT_DIR / "adult.yaml").read_text().replace("path: adult.data", f"path: {climb}/adult.data")
    for name in ("age", "workclass", "education", "marital-status", "occupation"):
        text = text.replace(f"hierarchies/{name}.csv", f"{climb}/hierarchies/{name}.csv")
    text = text.replace("hierarchies/relationship.csv", "linked/relationship.csv")
    text += f"ledger: {climb}/releases.jsonl\napproved_by: J. Doe\n"
    (conf / "adult.yaml").write_text(text)
    acknowledge(conf / "adult.yaml")  # kept columns identify on 2,000 records (issue 33)
    out = tmp_path / "elsewhere" / "out"
    code, _, stderr = run_cli(
        ["anonymize", str(conf / "adult.yaml"), "--out", str(out), "--no-tradeoff"], capsys
    )
    assert code == 0, stderr
    report = json.loads((out / "report.json").read_text())
    html = (out / "report.html").read_text()
    secret = ("custodian-jdoe", "project-x", "../", str(tmp_path), "elsewhere")
    leaks = [s for s in _strings(report) if any(part in s for part in secret)]
    assert not leaks, leaks
    assert not [part for part in secret if part in html]
    # named: inside the folder by its relative path, outside by its name
    assert report["input"] == "adult.data"
    settings = report["provenance"]["settings"]
    assert settings["input"]["path"] == "adult.data"
    assert settings["attributes"]["age"]["hierarchy"] == "age.csv"
    assert settings["attributes"]["sex"]["hierarchy"] == "hierarchies/sex.csv"
    assert settings["attributes"]["relationship"]["hierarchy"] == "relationship.csv"  # through a link
    assert settings["ledger"] == "releases.jsonl" and report["certificate"]["ledger"] == "releases.jsonl"
    files = {f["role"] + ":" + f["path"] for f in report["evidence"]["files"]}
    assert {"input:adult.data", "hierarchy:age.csv", "hierarchy:hierarchies/sex.csv"} <= files
    assert "release:release.csv" in files


@pytest.mark.parametrize(
    ("path", "shown"),
    [
        ("a/b.csv", "a/b.csv"),
        ("./a/../b.csv", "b.csv"),
        ("../x/age.csv", "age.csv"),
        ("a/../../../../../etc/age.csv", "age.csv"),
        ("/etc/passwd", "passwd"),
        ("", ""),
    ],
)
def test_written_paths(tmp_path: Path, path: str, shown: str) -> None:
    from safeshare.paths import shown_path, written_path

    assert written_path(path, tmp_path) == shown
    assert shown_path(tmp_path / "a" / "b.csv", None) == "b.csv"
