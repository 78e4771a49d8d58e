"""`safeshare surveil release`: weekly policies applied to case records, population-bin suppression,
an independent re-check of every file, atomic publishing; bad input exits 2 with one line."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from safeshare.cli import main
from safeshare.data.engines.duckdb_engine import DuckDBEngine
from safeshare.data.engines.memory import MemoryEngine
from safeshare.data.source import TableSource
from safeshare.errors import VerificationError
from safeshare.surveillance.inputs import read_case_records, read_population
from safeshare.surveillance.policies import default_space
from safeshare.surveillance.release import (
    population_of_labels,
    release_cases,
    verify_period,
)

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "surveillance"
POP = str(EXAMPLES / "population.csv")
RECORDS = str(EXAMPLES / "case_records.csv")


@pytest.fixture(scope="module")
def inputs():
    space = default_space()
    return read_population(POP, space), read_case_records(RECORDS, space)


def _engine() -> MemoryEngine:
    return MemoryEngine(TableSource(Path(RECORDS)))


def _schedule(tmp_path: Path, rows: list[tuple[str, str]]) -> str:
    path = tmp_path / "schedule.csv"
    pd.DataFrame(rows, columns=["week_start", "policy"]).assign(volume=0).to_csv(path, index=False)
    return str(path)


def test_release_by_weekly_schedule(tmp_path: Path) -> None:
    sched = _schedule(tmp_path, [("2020-08-02", "do not share"), ("2020-08-09", "1C*e")])
    out = tmp_path / "out"
    args = ["surveil", "release", "--population", POP, "--cases-records", RECORDS, "--policies", sched]
    assert main([*args, "--k", "11", "--out", str(out)]) == 0
    records = pd.read_csv(RECORDS, dtype=str)
    second_week = records[records["date"] >= "2020-08-09"]
    files = sorted(p.name for p in out.glob("release_*.csv"))
    assert files == sorted(f"release_{d}.csv" for d in second_week["date"].unique())  # week 1: nothing
    doc = json.loads((out / "release.json").read_text())
    assert doc["verified"]
    shared = doc["files"]
    assert sorted(p["file"] for p in shared) == files
    assert all(p["policy"] == "1C*e" and p["period"] >= "2020-08-09" for p in shared)
    frame = pd.concat(pd.read_csv(out / f, dtype=str) for f in files)
    assert list(frame.columns) == ["region", "date", "age", "race", "sex", "ethnicity"]  # no case_id
    assert set(frame["sex"]) == {"*"} and set(frame["race"]) <= {"white-or-black", "other"}
    assert set(frame["age"]) <= {f"{a}-{a + 4}" for a in range(0, 100, 5)} | {"100+"}
    assert len(frame) == doc["records"] == sum(p["records"] for p in shared)


def test_population_bins_below_k_are_suppressed(tmp_path: Path, inputs) -> None:
    pop, records = inputs
    space = pop.space
    node = space.parse("0Ase")
    result = release_cases(pop, _engine(), node, tmp_path / "o", k=11)
    # expected: records whose (region, 1-year age, race, sex, ethnicity) has fewer than 11 people
    people = population_of_labels(pop, node)
    merged = records.frame.merge(people, on=["region", *space.names], how="left")
    expected_out = int((merged["people"] >= 11).sum())
    assert 0 < expected_out < len(records.frame)
    assert sum(p.records_out for p in result.periods) == expected_out
    # a coarse policy keeps everybody
    result = release_cases(pop, _engine(), space.parse("****"), tmp_path / "o")
    assert sum(p.suppressed for p in result.periods) == 0


def test_tampered_release_fails_verification(tmp_path: Path, inputs) -> None:
    pop, _records = inputs
    space = pop.space
    node = space.parse("2Bse")
    out = tmp_path / "o"
    release_cases(pop, _engine(), node, out, k=11)
    path = sorted(out.glob("release_*.csv"))[0]
    frame = pd.read_csv(path, dtype=str)
    columns = ["region", "date", *space.names]
    day = path.stem.removeprefix("release_")

    def failures() -> list[str]:
        return verify_period(path, "csv", pop, node, 11, columns, day, len(frame)).failures

    assert failures() == []
    finer = frame.copy()
    finer.loc[0, "age"] = "37"  # a 1-year age under a 15-year policy
    finer.to_csv(path, index=False)
    assert any("'age' has value '37', not a label of its chosen level" in f for f in failures())
    leak = frame.assign(case_id="S00001")
    leak.to_csv(path, index=False)
    assert "release column 'case_id' is not allowed" in failures()[0]
    other_day = frame.assign(date="2020-08-01")
    other_day.to_csv(path, index=False)
    assert any("'date' has value '2020-08-01'" in f for f in failures())
    more = pd.concat([frame, frame.iloc[:1]])
    more.to_csv(path, index=False)
    assert any("more records" in f for f in failures())
    rare = frame.copy()
    rare.loc[0, ["region", "age", "race", "sex", "ethnicity"]] = [
        "99003",
        "0-14",
        "asian",
        "female",
        "hispanic",
    ]
    rare.to_csv(path, index=False)
    assert failures() == ["a record of region 99003 in a population bin of 2 people (< k = 11)"]


def test_failed_check_publishes_nothing(tmp_path: Path, inputs, monkeypatch: pytest.MonkeyPatch) -> None:
    pop, _records = inputs
    space = pop.space
    out = tmp_path / "o"
    release_cases(pop, _engine(), space.parse("****"), out)
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    import safeshare.verify as verify_mod

    def tampered(*a: object, **kw: object) -> list[str]:
        return ["tampered"]

    # the plan is fine; the independent population-bin check (in safeshare.verify) says no
    monkeypatch.setitem(verify_mod.EXTRA_CHECKS, "population-bins", tampered)
    with pytest.raises(VerificationError, match="tampered"):
        release_cases(pop, _engine(), space.parse("3B*e"), out)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before  # the old release, complete
    assert not list(tmp_path.glob(".o.staging-*"))


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda f: f.assign(region=np.where(f.index == 3, "12345", f["region"])),
            "case_records.csv:5: column 'region'",
        ),
        (lambda f: f.assign(age=np.where(f.index == 2, "old", f["age"])), ":4: column 'age'"),
        (lambda f: f.assign(date=np.where(f.index == 1, "2020-09-30", f["date"])), ":3: column 'date'"),
    ],
)
@pytest.mark.parametrize("engine", ["memory", "duckdb"])
def test_bad_records_exit_2_with_one_line(tmp_path: Path, capsys, edit, message: str, engine: str) -> None:
    frame = edit(pd.read_csv(RECORDS, dtype=str))
    path = tmp_path / "case_records.csv"
    frame.to_csv(path, index=False)
    sched = _schedule(tmp_path, [("2020-08-02", "****"), ("2020-08-09", "****")])
    args = ["surveil", "release", "--population", POP, "--cases-records", str(path), "--policies", sched]
    assert main([*args, "--engine", engine, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1, err
    assert not (tmp_path / "out").exists()


def test_bad_options_and_schedules(tmp_path: Path, capsys) -> None:
    base = [
        "surveil",
        "release",
        "--population",
        POP,
        "--cases-records",
        RECORDS,
        "--out",
        str(tmp_path / "o"),
    ]
    assert main(base) == 2
    assert "exactly one of --policies" in capsys.readouterr().err
    assert main([*base, "--policy", "9Ase"]) == 2
    assert "character 1 '9'" in capsys.readouterr().err
    sched = _schedule(tmp_path, [("2020-08-03", "****")])
    assert main([*base, "--policies", sched]) == 2
    assert "schedule.csv:2: column 'week_start': 2020-08-03 is not a Sunday" in capsys.readouterr().err
    sched = _schedule(tmp_path, [("2020-08-02", "ZZZZ")])
    assert main([*base, "--policies", sched]) == 2
    assert "schedule.csv:2: column 'policy'" in capsys.readouterr().err


def test_weekly_release_with_kept_column(tmp_path: Path) -> None:
    out = tmp_path / "o"
    args = ["surveil", "release", "--population", POP, "--cases-records", RECORDS, "--policy", "4*s*"]
    assert main([*args, "--weekly", "--keep", "hospitalized", "--out", str(out)]) == 0
    files = sorted(p.name for p in out.glob("release_*.csv"))
    assert files == ["release_week_2020-08-02.csv", "release_week_2020-08-09.csv"]
    frame = pd.read_csv(out / files[0], dtype=str)
    assert list(frame.columns) == ["region", "date", "age", "race", "sex", "ethnicity", "hospitalized"]
    assert set(frame["date"]) == {"2020-08-02"} and set(frame["race"]) == {"*"}


@pytest.mark.parametrize("weekly", [False, True])
def test_memory_and_duckdb_engines_write_the_same_release_bytes(tmp_path: Path, inputs, weekly: bool) -> None:
    """The release goes through Engine.write_release: both engines give byte-identical files, and
    Parquet releases hold the same rows."""
    pop, records = inputs
    space = pop.space
    sched = _schedule(tmp_path, [("2020-08-02", "0Ase"), ("2020-08-09", "2Bse")])
    from safeshare.surveillance.release import read_schedule

    schedule = read_schedule(sched, space)
    outs = {}
    for name, make in (("memory", _engine), ("duckdb", lambda: DuckDBEngine(TableSource(Path(RECORDS))))):
        for fmt in ("csv", "parquet"):
            out = tmp_path / f"{name}-{fmt}"
            with make() as engine:
                result = release_cases(pop, engine, schedule, out, 11, weekly, ["hospitalized"], RECORDS, fmt)  # type: ignore[arg-type]
            outs[name, fmt] = out
    csv_files = sorted(p.name for p in outs["memory", "csv"].glob("release_*.csv"))
    # a file per period with a record released (a day whose records are all suppressed has none)
    assert len(csv_files) == len(result.released) == sum(p.records_out > 0 for p in result.periods)
    assert len(result.periods) == (2 if weekly else len(set(records.frame["date"])))
    for name in csv_files:
        assert (outs["memory", "csv"] / name).read_bytes() == (outs["duckdb", "csv"] / name).read_bytes()
        stem = name.removesuffix(".csv")
        from_csv = pd.read_csv(outs["memory", "csv"] / name, dtype=str, keep_default_na=False)
        for engine in ("memory", "duckdb"):
            parquet = pd.read_parquet(outs[engine, "parquet"] / f"{stem}.parquet")
            pd.testing.assert_frame_equal(parquet.astype(str), from_csv, check_dtype=False)
    docs = {key: json.loads((out / "release.json").read_text()) for key, out in outs.items()}
    assert docs["memory", "csv"]["files"] == [
        {**p, "file": p["file"].replace(".parquet", ".csv")} for p in docs["duckdb", "parquet"]["files"]
    ]
    assert docs["duckdb", "csv"]["engine"] == "duckdb" and docs["memory", "parquet"]["format"] == "parquet"


def test_cli_release_with_duckdb_and_parquet(tmp_path: Path) -> None:
    out = tmp_path / "o"
    args = ["surveil", "release", "--population", POP, "--cases-records", RECORDS, "--policy", "3B*e"]
    assert main([*args, "--engine", "duckdb", "--format", "parquet", "--out", str(out)]) == 0
    files = sorted(out.glob("release_*.parquet"))
    assert files and not list(out.glob("release_*.csv"))
    frame = pd.concat(pd.read_parquet(f) for f in files)
    assert set(frame["sex"]) == {"*"} and set(frame["age"]) <= {"0-29", "30-59", "60-89", "90+"}
    assert main([*args, "--engine", "spark", "--out", str(out)]) == 2
