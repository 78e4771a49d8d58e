"""The command line: outputs, report fields, and bad input (exit 2, one line, nothing written)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from tests.conftest import ADULT_COLUMNS, ADULT_DIR, acknowledge, run_cli, write_small_adult

REQUIRED_REPORT_KEYS = {
    "levels",
    "information_loss",
    "records_in",
    "suppressed_records",
    "min_class_size",
    "checked_nodes",
    "lattice_size",
    "elapsed_s",
    "verified",
}


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the Adult config on the first 3,000 records."""
    directory = write_small_adult(tmp_path_factory.mktemp("adult"))
    acknowledge(directory / "adult.yaml")  # kept columns identify on 3,000 records (issue 33)
    return directory


run = run_cli


def test_anonymize_writes_verified_release(
    workdir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    code, stdout, stderr = run(["anonymize", str(workdir / "adult.yaml"), "--out", str(out)], capsys)
    assert code == 0, stderr
    names = sorted(p.name for p in out.iterdir())
    assert names == [".safeshare-output", "release.csv", "report.html", "report.json"]
    report = json.loads((out / "report.json").read_text())
    assert set(report) >= REQUIRED_REPORT_KEYS
    assert report["verified"] is True
    assert report["records_in"] == 3000
    assert set(report["elapsed_s"]) >= {"read", "group_by", "search", "apply", "verify"}
    assert report["lattice_size"] == 7776
    assert len(report["tradeoff"]) == 6
    # independent check with pandas: k-anonymous, within the limit, no identifying columns
    release = pd.read_csv(out / "release.csv", dtype=str, keep_default_na=False)
    qis = list(report["levels"])
    assert release.groupby(qis).size().min() >= 5
    assert 3000 - len(release) == report["suppressed_records"] <= 0.05 * 3000
    assert "fnlwgt" not in release.columns and "education-num" not in release.columns
    assert list(release.columns) == [c for c in ADULT_COLUMNS if c not in ("fnlwgt", "education-num")]
    html = (out / "report.html").read_text()
    assert "verified" in html and "<svg" in html and "Suppression versus information loss" in html
    assert "verified" in stdout


def test_duckdb_engine_gives_the_memory_engines_release(
    workdir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    reports, releases = {}, {}
    for engine in ("memory", "duckdb"):
        out = tmp_path / engine
        args = ["anonymize", str(workdir / "adult.yaml"), "--out", str(out), "--engine", engine, "-q"]
        code, _, stderr = run([*args, "--no-tradeoff"], capsys)
        assert code == 0, stderr
        reports[engine] = json.loads((out / "report.json").read_text())
        frame = pd.read_csv(out / "release.csv", dtype=str, keep_default_na=False)
        releases[engine] = frame.sort_values(list(frame.columns)).reset_index(drop=True)
    assert reports["duckdb"]["engine"] == "duckdb" and reports["duckdb"]["verified"] is True
    for key in ("levels", "information_loss", "suppressed_records", "min_class_size", "checked_nodes"):
        assert reports["duckdb"][key] == reports["memory"][key], key
    pd.testing.assert_frame_equal(releases["duckdb"], releases["memory"])


@pytest.mark.parametrize(
    ("options", "metric"),
    [
        (["--metric", "entropy", "--k", "10"], "entropy"),
        (["--metric", "dm_star", "--algorithm", "exhaustive"], "dm_star"),
    ],
)
def test_overrides(
    workdir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], options: list[str], metric: str
) -> None:
    out = tmp_path / "o"
    code, _, stderr = run(
        ["anonymize", str(workdir / "adult.yaml"), "--out", str(out), "--no-tradeoff", "-q", *options], capsys
    )
    assert code == 0, stderr
    report = json.loads((out / "report.json").read_text())
    assert report["metric"] == metric
    if "--k" in options:
        assert report["privacy"]["models"]["k-anonymity"]["k"] == 10 and report["min_class_size"] >= 10
    if "exhaustive" in options:
        assert report["checked_nodes"] == 7776


def bad_configs(workdir: Path, tmp: Path) -> dict[str, Path]:
    base = (workdir / "adult.yaml").read_text()
    (tmp / "empty.data").write_text("")
    (tmp / "bad_race.csv").write_text("White;*\nBlack;*;x\n")
    (tmp / "two_parents.csv").write_text("Male;M;*\nFemale;M;x\n")
    (tmp / "sex_partial.csv").write_text("Male;*\n")
    data = str(workdir / "adult.data")
    variants = {
        "unknown column": base.replace("income:         {role: insensitive}", "incme: {role: insensitive}"),
        "value missing from hierarchy": base.replace(f"{ADULT_DIR}/hierarchies/sex.csv", "sex_partial.csv"),
        "k below 1": base.replace("k: 5}", "k: 0}"),
        "k above N": base.replace("k: 5}", "k: 5000}"),
        "suppression above 1": base.replace("max_suppression: 0.05", "max_suppression: 1.5"),
        "empty data": base.replace("path: adult.data", "path: empty.data"),
        "unreadable file": base.replace("path: adult.data", "path: nothere.data"),
        "inconsistent hierarchy": base.replace(f"{ADULT_DIR}/hierarchies/race.csv", "bad_race.csv"),
        "two parents": base.replace(f"{ADULT_DIR}/hierarchies/sex.csv", "two_parents.csv"),
    }
    out = {}
    for name, text in variants.items():
        p = tmp / (name.replace(" ", "_") + ".yaml")
        p.write_text(text.replace("path: adult.data", f"path: {data}"))
        out[name] = p
    return out


@pytest.mark.parametrize("engine", ["memory", "duckdb"])
def test_bad_input_exit_2_one_line_nothing_written(
    workdir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], engine: str
) -> None:
    for name, config in bad_configs(workdir, tmp_path).items():
        out = tmp_path / f"out_{name.replace(' ', '_')}"
        code, _, stderr = run(["anonymize", str(config), "--out", str(out), "--engine", engine], capsys)
        assert code == 2, (name, stderr)
        lines = stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), (name, stderr)
        assert not out.exists() or not any(out.iterdir()), name
        # no staging leftovers either
        assert not list(tmp_path.glob(f".{out.name}.staging-*")), name


@pytest.mark.parametrize(
    "args",
    [
        ["--k", "0"],
        ["--k", "-3"],
        ["--max-suppression", "1.01"],
        ["--max-suppression", "-0.5"],
        ["--metric", "bogus"],
        ["--engine", "spark"],
        ["--algorithm", "magic"],
        ["--no-such-option"],
    ],
)
def test_bad_options_exit_2(
    workdir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    out = tmp_path / "o"
    code, _, stderr = run(["anonymize", str(workdir / "adult.yaml"), "--out", str(out), *args], capsys)
    assert code == 2 and len(stderr.strip().splitlines()) == 1, stderr
    assert not out.exists()


def test_inspect_reports_uniques(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = str(workdir / "adult.data")
    names = ",".join(ADULT_COLUMNS)
    code, stdout, stderr = run(
        ["inspect", data, "--no-header", "--names", names, "--qi", "age,sex,race,native-country", "--json"],
        capsys,
    )
    assert code == 0, stderr
    stats = json.loads(stdout)
    frame = pd.read_csv(data, header=None, names=ADULT_COLUMNS, dtype=str, skipinitialspace=True)
    sizes = frame.groupby(["age", "sex", "race", "native-country"]).size()
    assert stats["records"] == 3000 and stats["classes"] == len(sizes)
    assert stats["uniques"] == int((sizes == 1).sum())
    assert stats["below_k"] == int(sizes[sizes < 5].sum())
    code, _, stderr = run(["inspect", data, "--no-header", "--names", names, "--qi", "age,nope"], capsys)
    assert code == 2 and "unknown column 'nope'" in stderr


def test_hierarchy_check(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, stdout, _ = run(
        ["hierarchy", "check", str(ADULT_DIR / "hierarchies" / "native-country.csv")], capsys
    )
    # rich wraps at 80 columns, so the line break depends on the checkout's path length
    assert code == 0 and "height 3" in " ".join(stdout.split())
    bad = tmp_path / "bad.csv"
    bad.write_text("a;x;*\nb;x;*\nx;y;*\nc;x;z\n")
    code, _, stderr = run(["hierarchy", "check", str(bad)], capsys)
    assert code == 2 and "two parents" in stderr


def test_console_script_runs() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "safeshare", "version"], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0 and proc.stdout.strip()
    proc = subprocess.run(
        [sys.executable, "-m", "safeshare", "anonymize", "/nonexistent.yaml", "--out", "/tmp/x"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1


@pytest.mark.parametrize("args", [[], ["dp"], ["hierarchy"], ["risk"], ["surveil"]])
def test_bare_command_group_prints_help_and_one_error_line(
    args: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.conftest import run_cli

    code, stdout, stderr = run_cli(args, capsys)
    assert code == 2 and "Usage" in stdout + stderr
    lines = [line for line in stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and lines[0] != "error:"


def test_duckdb_memory_limit_and_threads_are_set_and_reported(
    workdir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The DuckDB engine runs with an explicit memory limit and thread count (configuration
    ``duckdb: {memory_limit, threads}``, overridden by --duckdb-memory-limit/--duckdb-threads,
    defaults from the machine) and report.json says which, with the run's peak memory."""
    config = workdir / "adult_duckdb.yaml"
    config.write_text((workdir / "adult.yaml").read_text() + "duckdb: {memory_limit: 700MB, threads: 2}\n")
    out = tmp_path / "configured"
    code, _, stderr = run(
        ["anonymize", str(config), "--out", str(out), "--engine", "duckdb", "-q", "--no-tradeoff"], capsys
    )
    assert code == 0, stderr
    settings = json.loads((out / "report.json").read_text())["engine_settings"]
    assert settings["threads"] == 2 and settings["memory_limit"].replace(" ", "") in ("667.5MiB", "700.0MB")
    assert settings["peak_rss_mb"] > 0
    out = tmp_path / "overridden"
    args = ["anonymize", str(config), "--out", str(out), "--engine", "duckdb", "-q", "--no-tradeoff"]
    code, _, stderr = run([*args, "--duckdb-threads", "1", "--duckdb-memory-limit", "300MB"], capsys)
    assert code == 0, stderr
    settings = json.loads((out / "report.json").read_text())["engine_settings"]
    assert settings["threads"] == 1 and settings["memory_limit"].replace(" ", "") in ("286.1MiB", "300.0MB")
    code, _, stderr = run([*args, "--duckdb-threads", "0"], capsys)
    assert code == 2 and "--duckdb-threads" in stderr
