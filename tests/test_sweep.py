"""Sweeps (thesis §6.1.1-6.1.2) and the ``sweep`` / ``utility`` commands.

A sweep must give, configuration by configuration, what a fresh anonymization
of the same data gives (its only difference is the shared table and
evaluator), and the optimum of an exhaustive search; its outputs appear
complete or not at all.
"""

from __future__ import annotations

import csv
import json
from itertools import pairwise
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from safeshare.config import load_config
from safeshare.config.spec import AnonymizationSpec
from safeshare.core.evaluation import Evaluator
from safeshare.data.engines.memory import MemoryEngine
from safeshare.data.schema import Attribute, Role, Schema
from safeshare.errors import ConfigError
from safeshare.models import KAnonymity
from safeshare.report.plots import plot_loss_vs_suppression
from safeshare.workflows.anonymizer import AnonymizationResult, Anonymizer, build_frequency_table
from safeshare.workflows.sweep import SWEEP_COLUMNS, Sweep, SweepGrid, SweepRow
from tests.conftest import ADULT_DIR, random_table, run_cli, write_small_adult

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The Adult config on the first 3,000 training and 1,500 test records (comment line kept)."""
    directory = write_small_adult(tmp_path_factory.mktemp("adult"), n_test=1500)
    config = directory / "adult.yaml"
    # the run's warnings that contradict its headline, acknowledged (issue 33): on 3,000 records
    # a kept sensitive column singles out more than 5 % of the released records
    text = config.read_text().replace(
        "accept_warnings: [subgroup-suppressed]",
        "accept_warnings: [subgroup-suppressed, kept-column-identifying]",
    )
    assert "kept-column-identifying" in text
    config.write_text(text)
    return directory


run = run_cli


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


# --------------------------------------------------------------------------- grid
def test_grid_parse() -> None:
    grid = SweepGrid.parse("100,5,25,5", "0.5, 0,1%,0.05,10%,0.2", "entropy,DM*,prec,entropy")
    assert grid.k == (5, 25, 100)
    assert grid.max_suppression_pct == (0.0, 1.0, 5.0, 10.0, 20.0, 50.0)
    assert grid.metrics == ("entropy", "dm_star", "prec")
    assert len(grid) == 54 == len(list(grid))
    assert list(grid)[:2] == [(5, 0.0, "entropy"), (5, 0.0, "dm_star")]


@pytest.mark.parametrize(
    ("k", "sup", "metric", "message"),
    [
        ("0", "0.05", "prec", "--k"),
        ("five", "0.05", "prec", "--k"),
        ("5,", "0.05", "prec", "--k"),
        ("5", "5", "prec", r"--max-suppression: expected a fraction in \[0, 1\].*'5' \(did you mean 5%\?\)"),
        ("5", "150%", "prec", "--max-suppression"),
        ("5", "-1", "prec", "--max-suppression"),
        ("5", "nan", "prec", "--max-suppression"),
        ("5", "x", "prec", "--max-suppression"),
        ("5", "0.05", "bogus", "--metric: unknown metric 'bogus'"),
        ("5", "0.05", "", "--metric"),
    ],
)
def test_grid_rejects(k: str, sup: str, metric: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        SweepGrid.parse(k, sup, metric)


# --------------------------------------------------------------------------- sweep = fresh runs = exhaustive
def test_sweep_shares_one_table_and_equals_fresh_runs(workdir: Path) -> None:
    cfg = load_config(workdir / "adult.yaml")
    engine = MemoryEngine(cfg.source)
    table, _ = build_frequency_table(engine, cfg.schema)
    evaluator = Evaluator(table)
    grid = SweepGrid((2, 10), (0.0, 5.0), ("prec", "entropy"))
    seen: list[SweepRow] = []

    def check(row: SweepRow, result: AnonymizationResult) -> None:
        assert result.table is table and result.evaluator is evaluator
        seen.append(row)

    result = Sweep(cfg.spec(), grid).run(table, evaluator, on_result=check)
    assert len(result.rows) == len(seen) == 8
    for row in result.rows:
        fresh = Anonymizer(
            cfg.schema, [KAnonymity(row.k)], max_suppression=row.max_suppression_pct / 100, metric=row.metric
        ).fit(MemoryEngine(cfg.source))
        assert row.node == fresh.node
        assert row.suppressed_records == fresh.suppressed_records
        assert row.information_loss == pytest.approx(fresh.metric.value(fresh.node, fresh.classes))
        assert row.checked_nodes == fresh.search.checked_nodes
        assert row.records_out == 3000 - row.suppressed_records
        assert row.min_class_size >= row.k


@pytest.mark.parametrize("seed", range(6))
def test_sweep_equals_exhaustive_on_random_tables(seed: int) -> None:
    table = random_table(np.random.default_rng(seed), n_qis=4, n_rows=300)
    schema = Schema.from_attributes(
        [Attribute(q, Role.QUASI, h) for q, h in zip(table.qi_names, table.hierarchies, strict=True)]
    )
    grid = SweepGrid((1, 3, 10, 40), (0.0, 2.0, 10.0, 50.0), ("prec", "dm_star", "entropy"))
    ola = Sweep(AnonymizationSpec(schema, (KAnonymity(2),)), grid).run(table)
    exhaustive = Sweep(AnonymizationSpec(schema, (KAnonymity(2),), algorithm="exhaustive"), grid).run(table)
    for a, b in zip(ola.rows, exhaustive.rows, strict=True):
        assert (a.k, a.max_suppression_pct, a.metric) == (b.k, b.max_suppression_pct, b.metric)
        assert a.found == b.found
        if a.found:
            assert a.information_loss == pytest.approx(b.information_loss, rel=1e-12, abs=1e-12)
            assert a.information_loss_minus_bottom == pytest.approx(b.information_loss_minus_bottom, abs=1e-9)
            assert 0.0 <= (a.information_loss_normalized or 0.0) <= 1.0


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_optimal_loss_is_monotone_in_k_and_suppression(seed: int) -> None:
    """The optimum over a larger qualifying set is never worse: loss is non-increasing in the
    suppression limit (fixed k) and non-decreasing in k (fixed limit), for every metric.
    This is the shape of the thesis' Fig. 6.1."""
    rng = np.random.default_rng(seed)
    table = random_table(rng, n_qis=3, n_rows=int(rng.integers(20, 200)))
    schema = Schema.from_attributes(
        [Attribute(q, Role.QUASI, h) for q, h in zip(table.qi_names, table.hierarchies, strict=True)]
    )
    grid = SweepGrid((1, 2, 5, 15), (0.0, 1.0, 5.0, 20.0, 50.0), ("prec", "dm_star", "entropy"))
    result = Sweep(AnonymizationSpec(schema, (KAnonymity(2),)), grid).run(table)
    loss = {(r.k, r.max_suppression_pct, r.metric): r.information_loss for r in result.rows}
    assert all(r.found for r in result.rows)  # the top node always qualifies when k <= N
    for metric in grid.metrics:
        for k in grid.k:
            series = [loss[(k, s, metric)] for s in grid.max_suppression_pct]
            assert all(b <= a + 1e-9 for a, b in pairwise(series)), (metric, k, series)
        for s in grid.max_suppression_pct:
            series = [loss[(k, s, metric)] for k in grid.k]
            assert all(a <= b + 1e-9 for a, b in pairwise(series)), (metric, s, series)


# --------------------------------------------------------------------------- sweep command
def test_sweep_command_writes_csv_json_and_plots(
    workdir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "sweep"
    args = ["sweep", str(workdir / "adult.yaml"), "--out", str(out), "--k", "5,25"]
    code, stdout, stderr = run(
        [*args, "--max-suppression", "0,10%", "--metric", "prec,dm_star,entropy"], capsys
    )
    assert code == 0, stderr
    names = sorted(p.name for p in out.iterdir())
    assert names == [  # published as one unit (io.OutputDirectory), with its marker
        ".safeshare-output",
        "loss_vs_suppression.png",
        "loss_vs_suppression.svg",
        "sweep.csv",
        "sweep.json",
    ]
    rows = read_csv(out / "sweep.csv")
    with (out / "sweep.csv").open() as fh:
        assert next(csv.reader(fh)) == list(SWEEP_COLUMNS)
    assert len(rows) == 12
    assert {(r["k"], r["max_suppression_pct"], r["metric"]) for r in rows} == {
        (k, s, m) for k in ("5", "25") for s in ("0.0", "10.0") for m in ("prec", "dm_star", "entropy")
    }
    for r in rows:
        assert r["found"] == "True" and r["accuracy"] == "" and r["accuracy_thesis"] == ""
        assert float(r["max_suppression"]) == float(r["max_suppression_pct"]) / 100
        assert int(r["suppressed_records"]) <= float(r["max_suppression"]) * 3000
        assert len(r["node"].split(",")) == 9 and r["levels"].startswith("age=")
        assert int(r["lattice_size"]) == 7776
    dm = [r for r in rows if r["metric"] == "dm_star"]
    assert all(float(r["information_loss_minus_bottom"]) < float(r["information_loss"]) for r in dm)
    png = (out / "loss_vs_suppression.png").read_bytes()
    assert png.startswith(PNG_MAGIC) and len(png) > 10_000
    svg = (out / "loss_vs_suppression.svg").read_text()
    assert "<svg" in svg and "</svg>" in svg
    doc = json.loads((out / "sweep.json").read_text())
    assert doc["configurations"] == 12 and doc["frequency_table"]["records"] == 3000
    assert doc["utility"] is None and set(doc["elapsed_s"]) >= {"group_by", "search", "total"}
    assert "12 configurations" in stdout
    assert not list(tmp_path.glob(".sweep.staging-*"))


def test_sweep_with_utility_and_releases(
    workdir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "sweep"
    code, stdout, stderr = run(
        [
            "sweep",
            str(workdir / "adult.yaml"),
            "--out",
            str(out),
            "--k",
            "25",
            "--max-suppression",
            "0,0.1",
            "--metric",
            "prec",
            "--utility",
            "--test",
            str(workdir / "adult.test"),
            "--test-skip-rows",
            "1",
            "--target",
            "income",
            "--write-releases",
        ],
        capsys,
    )
    assert code == 0, stderr
    rows = read_csv(out / "sweep.csv")
    assert [float(r["accuracy_thesis"]) for r in rows] == [0.802, 0.8057]
    assert all(0.5 < float(r["accuracy"]) <= 1.0 for r in rows)
    table = read_csv(out / "accuracy_table.csv")
    assert [(t["k"], t["max_suppression_pct"]) for t in table] == [("25", "0.0"), ("25", "10.0")]
    assert [t["prec"] for t in table] == [r["accuracy"] for r in rows]
    assert (out / "loss_vs_accuracy.png").read_bytes().startswith(PNG_MAGIC)
    assert "<svg" in (out / "loss_vs_accuracy.svg").read_text()
    doc = json.loads((out / "sweep.json").read_text())
    assert 0.5 < doc["utility"]["baseline_accuracy"] <= 1.0 and doc["utility"]["test_records"] == 1500
    for r in rows:
        name = f"k25_sup{float(r['max_suppression_pct']):g}_prec"
        report = json.loads((out / "releases" / name / "report.json").read_text())
        assert report["verified"] is True and report["suppressed_records"] == int(r["suppressed_records"])
        release = pd.read_csv(out / "releases" / name / "release.csv", dtype=str, keep_default_na=False)
        assert len(release) == int(r["records_out"])
    assert "ours / thesis" in stdout and "0.8020" in stdout


def test_sweep_failure_publishes_nothing(
    workdir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import safeshare.report.plots as plots

    out = tmp_path / "sweep"
    args = [
        "sweep",
        str(workdir / "adult.yaml"),
        "--out",
        str(out),
        "--k",
        "5",
        "--max-suppression",
        "0",
        "-q",
    ]
    assert run([*args, "--no-plots"], capsys)[0] == 0  # a previous sweep, published
    before = {p.name: p.read_bytes() for p in out.iterdir()}

    def broken(rows: object, stem: Path, title: str | None = None) -> list[Path]:
        stem.with_suffix(".png").write_bytes(b"partial")
        raise RuntimeError("disk full")

    monkeypatch.setattr(plots, "plot_loss_vs_suppression", broken)
    code, _, stderr = run(args, capsys)
    assert code == 1 and "disk full" in stderr and len(stderr.strip().splitlines()) == 1
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before  # the previous sweep, untouched
    assert not list(tmp_path.glob(".sweep.staging-*"))
    # a directory safeshare did not write is refused before any work (nothing replaced)
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "sweep.csv").write_text("old\n")
    code, _, stderr = run([*args[:3], str(foreign), *args[4:]], capsys)
    assert code == 2 and "not a safeshare output" in stderr
    assert (foreign / "sweep.csv").read_text() == "old\n"


@pytest.mark.parametrize(
    "args",
    [
        ["--max-suppression", "150"],
        ["--max-suppression", "5"],
        ["--k", "0"],
        ["--k", "3.5"],
        ["--metric", "bogus"],
        ["--utility"],
        ["--test", "adult.test"],
        ["--utility", "--test", "adult.test", "--target", "incme"],
        ["--utility", "--test", "nothere.test", "--target", "income"],
        ["--k", "5000"],
    ],
)
def test_sweep_bad_input_exit_2(
    workdir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    out = tmp_path / "o"
    args = [a if a not in ("adult.test", "nothere.test") else str(workdir / a) for a in args]
    code, _, stderr = run(["sweep", str(workdir / "adult.yaml"), "--out", str(out), *args], capsys)
    assert code == 2, stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), stderr
    assert not out.exists()
    assert not list(tmp_path.glob(".o.staging-*"))


def test_sweep_help_says_fraction(capsys: pytest.CaptureFixture[str]) -> None:
    code, stdout, _ = run(["sweep", "--help"], capsys)
    assert code == 0 and "fraction" in stdout and "5%" in stdout


def test_svg_is_deterministic(workdir: Path, tmp_path: Path) -> None:
    cfg = load_config(workdir / "adult.yaml")
    table, _ = build_frequency_table(MemoryEngine(cfg.source), cfg.schema)
    rows = Sweep(cfg.spec(), SweepGrid((5,), (0.0, 5.0), ("prec",))).run(table).rows
    a = plot_loss_vs_suppression(rows, tmp_path / "a")
    b = plot_loss_vs_suppression(rows, tmp_path / "b")
    assert a[1].read_bytes() == b[1].read_bytes()


# --------------------------------------------------------------------------- utility command
def test_utility_command(workdir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "u"
    code, stdout, stderr = run(
        [
            "utility",
            str(workdir / "adult.yaml"),
            "--test",
            str(workdir / "adult.test"),
            "--test-skip-rows",
            "1",
            "--target",
            "income",
            "--out",
            str(out),
            "--k",
            "10",
            "--max-suppression",
            "0.05",
            "--metric",
            "entropy",
        ],
        capsys,
    )
    assert code == 0, stderr
    assert sorted(p.name for p in out.iterdir()) == [".safeshare-output", "utility.json"]
    doc = json.loads((out / "utility.json").read_text())
    assert set(doc) >= {
        "accuracy",
        "baseline_accuracy",
        "majority_accuracy",
        "node",
        "levels",
        "k",
        "max_suppression",
        "metric",
        "train_records",
        "test_records",
        "suppressed_records",
        "release_records",
        "elapsed_s",
        "features",
        "classifier",
    }
    assert doc["k"] == 10 and doc["max_suppression"] == 0.05 and doc["metric"] == "entropy"
    assert doc["train_records"] == 3000 and doc["test_records"] == 1500
    assert doc["release_records"] == 3000 - doc["suppressed_records"] and doc["suppressed_records"] <= 150
    assert 0.5 < doc["accuracy"] <= 1 and 0.5 < doc["baseline_accuracy"] <= 1
    assert doc["release_classifier"]["converged"] and doc["baseline"]["converged"]
    assert "baseline accuracy" in stdout


def test_utility_bad_input_exit_2(workdir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = ["utility", str(workdir / "adult.yaml"), "--test-skip-rows", "1"]
    test = str(workdir / "adult.test")
    lines = (workdir / "adult.data").read_text().splitlines()
    (tmp_path / "poor.data").write_text("\n".join(x for x in lines if x.endswith("<=50K")) + "\n")
    poor = (workdir / "adult.yaml").read_text().replace("path: adult.data", f"path: {tmp_path / 'poor.data'}")
    (tmp_path / "poor.yaml").write_text(poor)
    # a CSV with a header: the test file's columns must match the training file's
    frame = pd.read_csv(workdir / "adult.data", header=None, dtype=str, skipinitialspace=True).iloc[
        :, [0, 1, 3, 14]
    ]
    frame.columns = ["age", "workclass", "education", "income"]
    frame.to_csv(tmp_path / "train.csv", index=False)
    frame.rename(columns={"education": "schooling"}).to_csv(tmp_path / "test.csv", index=False)
    (tmp_path / "small.yaml").write_text(
        f"input: {{path: {tmp_path / 'train.csv'}}}\n"
        "attributes:\n"
        f"  age: {{role: quasi, hierarchy: {ADULT_DIR}/hierarchies/age.csv}}\n"
        f"  workclass: {{role: quasi, hierarchy: {ADULT_DIR}/hierarchies/workclass.csv}}\n"
        "privacy: {k-anonymity: {k: 5}}\n"
    )
    cases = {
        "unknown target": [*base, "--test", test, "--target", "incme"],
        "identifying target": [*base, "--test", test, "--target", "fnlwgt"],
        "QI target": [*base, "--test", test, "--target", "age"],
        "dotted labels kept": [*base, "--test", test, "--target", "income", "--keep-target-dot"],
        "missing test file": [*base, "--test", str(tmp_path / "none.test"), "--target", "income"],
        "negative skip": [*base[:-1], "-1", "--test", test, "--target", "income"],
        "comment line not skipped": [*base[:-2], "--test", test, "--target", "income"],
        "one class": [
            "utility",
            str(tmp_path / "poor.yaml"),
            "--test",
            test,
            "--test-skip-rows",
            "1",
            "--target",
            "income",
        ],
        "columns differ": [
            "utility",
            str(tmp_path / "small.yaml"),
            "--test",
            str(tmp_path / "test.csv"),
            "--target",
            "income",
        ],
        "bad k": [*base, "--test", test, "--target", "income", "--k", "0"],
        "suppression as percent": [*base, "--test", test, "--target", "income", "--max-suppression", "5"],
    }
    for name, args in cases.items():
        out = tmp_path / f"out_{name.replace(' ', '_')}"
        code, _, stderr = run([*args, "--out", str(out)], capsys)
        assert code == 2, (name, stderr)
        got = stderr.strip().splitlines()
        assert len(got) == 1 and got[0].startswith("error: "), (name, stderr)
        assert not out.exists(), name


# --------------------------------------------------------------------------- every algorithm
def _inverse_ola_config(workdir: Path) -> Path:
    """The Adult config with ``algorithm: inverse-ola`` and its option ``max_loss``."""
    import yaml

    raw = yaml.safe_load((workdir / "adult.yaml").read_text())
    raw["algorithm"] = "inverse-ola"
    raw["max_loss"] = 0.8  # 0.5 leaves no node on this 3,000-record slice (anonymize says so too)
    path = workdir / "adult-inverse-ola.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path


def test_utility_and_sweep_accept_inverse_ola_with_max_loss(
    workdir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Regression (issue 8): both commands passed the config without ``algorithm_options``, so
    ``algorithm: inverse-ola`` failed with "needs max_loss"; they now take the run's spec whole."""
    config = _inverse_ola_config(workdir)
    code, _, stderr = run(
        [
            "utility",
            str(config),
            "--test",
            str(workdir / "adult.test"),
            "--test-skip-rows",
            "1",
            "--target",
            "income",
            "--out",
            str(tmp_path / "u"),
        ],
        capsys,
    )
    assert code == 0, stderr
    doc = json.loads((tmp_path / "u" / "utility.json").read_text())
    assert doc["information_loss_normalized"] <= 0.8
    grid = ["--k", "5", "--max-suppression", "5%", "--metric", "prec"]
    code, _, stderr = run(
        ["sweep", str(config), "--out", str(tmp_path / "s"), *grid],
        capsys,
    )
    assert code == 0, stderr
    rows = read_csv(tmp_path / "s" / "sweep.csv")
    assert len(rows) == 1 and rows[0]["found"] == "True"
