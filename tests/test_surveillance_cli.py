"""`safeshare surveil ...`: files written, stable simulate interface, exit status 2 with one line."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from safeshare.cli import main

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "surveillance"
POP = str(EXAMPLES / "population.csv")
CASES = str(EXAMPLES / "cases_long.csv")


def test_simulate_stable_interface(tmp_path: Path) -> None:
    args = ["surveil", "simulate", "--population-table", POP, "--region", "99003", "--cases", CASES]
    args += [
        "--policy",
        "****",
        "--k",
        "11",
        "--lag",
        "3",
        "--simulations",
        "40",
        "--seed",
        "5",
        "--out",
        str(tmp_path),
    ]
    assert main(args) == 0
    frame = pd.read_csv(tmp_path / "simulation.csv")
    assert list(frame.columns) == ["period", "cases", "mean", "lower", "upper"]
    assert len(frame) == 140
    assert ((frame["lower"] <= frame["mean"]) & (frame["mean"] <= frame["upper"])).all()
    assert frame["period"].iloc[0] == "2020-08-02"
    assert (tmp_path / "simulation.png").stat().st_size > 0
    doc = json.loads((tmp_path / "simulation.json").read_text())
    assert doc["policy"] == "****" and doc["simulations"] == 40
    again = tmp_path / "again"
    assert main([*args[:-1], str(again)]) == 0
    assert (again / "simulation.csv").read_bytes() == (tmp_path / "simulation.csv").read_bytes()


def test_search_and_evaluate_write_their_files(tmp_path: Path) -> None:
    args = ["surveil", "search", "--population-table", POP, "--regions", "99003", "--volumes", "10,11,150"]
    assert main([*args, "--simulations", "30", "--out", str(tmp_path / "s")]) == 0
    table = pd.read_csv(tmp_path / "s" / "search.csv")
    assert len(table) == 96 and table["policy"].iloc[0] == "****"
    assert json.loads((tmp_path / "s" / "search.json").read_text())["volumes"][0]["best"] == "do not share"
    args = ["surveil", "evaluate", "--population-table", POP, "--cases", CASES, "--forecasts"]
    args += [
        str(EXAMPLES / "forecasts.csv"),
        "--regions",
        "99005",
        "--simulations",
        "30",
        "--out",
        str(tmp_path / "e"),
    ]
    assert main(args) == 0
    ev = pd.read_csv(tmp_path / "e" / "evaluation.csv")
    assert list(ev.columns) == ["region", "people", "releases", "static", "dynamic", "perfect_forecast"]
    assert (tmp_path / "e" / "schedule_99005.csv").is_file()
    assert (tmp_path / "e" / "case_study_99005.png").stat().st_size > 0


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ("99003,2020-08-01,3\n99003,2020-08-02,-2\n", "c.csv:3: column 'new_cases' (3): -2 is below 0"),
        ("99003,2020-08-02,3\n99003,2020-08-01,2\n", "c.csv:3: column 'date' (2): 2020-08-01 is not after"),
        (
            "99003,2020-08-01,3000\n99003,2020-08-02,6000\n",
            "'99003' on 2020-08-02: 9000 cases so far but only 8000",
        ),
        ("99004,2020-08-01,3\n", "c.csv: region '99003' has no case series"),
    ],
)
def test_bad_case_series_exit_2_naming_the_row(tmp_path: Path, capsys, rows: str, message: str) -> None:
    cases = tmp_path / "c.csv"
    cases.write_text("region,date,new_cases\n" + rows)
    args = ["surveil", "simulate", "--population-table", POP, "--region", "99003", "--cases", str(cases)]
    assert main([*args, "--policy", "****", "--simulations", "5", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_region_missing_from_population_exits_2(tmp_path: Path, capsys) -> None:
    args = ["surveil", "simulate", "--population-table", POP, "--region", "12345", "--cases", CASES]
    assert main([*args, "--policy", "****", "--simulations", "5", "--out", str(tmp_path)]) == 2
    assert "region '12345' is not in the population table" in capsys.readouterr().err


BASE = {
    "search": ["--population-table", POP],
    "select": ["--population-table", POP, "--region", "99003", "--cases", CASES],
    "evaluate": ["--population-table", POP, "--cases", CASES, "--forecasts", str(EXAMPLES / "forecasts.csv")],
}


@pytest.mark.parametrize(
    ("command", "option", "message"),
    [
        ("search", ["--k", ","], "--k: at least one k is required"),
        ("evaluate", ["--k", ""], "--k: at least one k is required"),
        ("search", ["--volumes", ","], "--volumes: at least one case volume is required"),
        ("select", ["--volumes", ""], "--volumes: at least one case volume is required"),
        ("evaluate", ["--categories", ","], "--categories: population sizes >= 1 are required"),
        ("select", ["--categories", ""], "--categories: population sizes >= 1 are required"),
        ("search", ["--k", "5,x"], "--k: comma-separated whole numbers are required, got '5,x'"),
        ("evaluate", ["--volumes", "1,2.5"], "--volumes: comma-separated whole numbers are required"),
    ],
)
def test_empty_or_bad_number_lists_exit_2_with_one_line(
    tmp_path: Path, capsys, command: str, option: list[str], message: str
) -> None:
    """The CLI only parses a comma list of whole numbers; that it is empty is the use case's check,
    and reaches the user as one line naming the option, exit 2, nothing written."""
    out = tmp_path / "o"
    args = ["surveil", command, *BASE[command], *option, "--simulations", "5", "--out", str(out)]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err == f"error: {err.removeprefix('error: ')}" and message in err and err.count("\n") == 1, err
    assert not out.exists()


def test_select_writes_a_schedule(tmp_path: Path) -> None:
    args = [
        "surveil",
        "select",
        "--population-table",
        POP,
        "--region",
        "99001",
        "--cases",
        CASES,
        "--lag",
        "3",
    ]
    args += ["--forecasts", str(EXAMPLES / "forecasts.csv"), "--simulations", "30", "--out", str(tmp_path)]
    assert main(args) == 0
    frame = pd.read_csv(tmp_path / "schedule.csv")
    assert list(frame.columns) == ["week_start", "volume", "policy"]
    assert len(frame) == 20 and frame["week_start"].iloc[0] == "2020-08-02"


def test_simulate_compare_writes_a_band_per_policy(tmp_path: Path) -> None:
    """--compare: the PK band over time of every policy from the same draws; the main policy's band is
    simulation.csv's, and a coarser policy's mean is never above a finer one's (common random numbers)."""
    args = ["surveil", "simulate", "--population-table", POP, "--region", "99003", "--cases", CASES]
    args += [
        "--policy",
        "2Bse",
        "--compare",
        "0Ase,4*s*",
        "--simulations",
        "30",
        "--seed",
        "2",
        "--out",
        str(tmp_path),
    ]
    assert main(args) == 0
    bands = pd.read_csv(tmp_path / "bands.csv")
    assert list(bands.columns) == ["period", "policy", "cases", "mean", "lower", "upper"]
    assert list(bands["policy"].unique()) == ["2Bse", "0Ase", "4*s*"]
    main_band = bands[bands["policy"] == "2Bse"].reset_index(drop=True)
    sim = pd.read_csv(tmp_path / "simulation.csv")
    pd.testing.assert_frame_equal(main_band[["mean", "lower", "upper"]], sim[["mean", "lower", "upper"]])
    by = {p: f.reset_index(drop=True) for p, f in bands.groupby("policy")}
    assert (by["4*s*"]["mean"] <= by["2Bse"]["mean"] + 1e-12).all()
    assert (by["2Bse"]["mean"] <= by["0Ase"]["mean"] + 1e-12).all()
    assert (tmp_path / "bands.png").stat().st_size > 0


def test_search_by_population_size_category(tmp_path: Path) -> None:
    """--categories: one search per category (the Fig. 3 table: a column per category), equal to the
    API's search over the category's regions."""
    from safeshare.surveillance.categories import categorize
    from safeshare.surveillance.inputs import read_population
    from safeshare.surveillance.policies import default_space
    from safeshare.surveillance.search import RiskCriterion, search_policies

    args = [
        "surveil",
        "search",
        "--population-table",
        POP,
        "--volumes",
        "11,150,500",
        "--categories",
        "5000,20000",
    ]
    assert main([*args, "--simulations", "30", "--seed", "4", "--out", str(tmp_path)]) == 0
    table = pd.read_csv(tmp_path / "search.csv")
    pop = read_population(POP, default_space())
    groups = categorize(pop, [5000, 20000])
    assert list(table.columns) == ["policy", "<5000", "5000-20000", ">=20000"]
    for name, regions in groups.items():
        usable = [v for v in (11, 150, 500) if v <= min(pop.totals[r] for r in regions)]
        api = search_policies(pop, regions, usable, RiskCriterion(simulations=30, seed=4)).min_volume()
        got = dict(zip(table["policy"], table[name], strict=True))
        for node, volume in api.items():
            code = pop.space.format(node)
            assert (volume is None and pd.isna(got[code])) or got[code] == volume, (name, code)
    doc = json.loads((tmp_path / "search.json").read_text())
    assert doc["categories"] == {name: groups[name] for name in ["<5000", "5000-20000", ">=20000"]}
    assert (tmp_path / "search.png").stat().st_size > 0


HIERARCHIES = """
dimensions:
  - {name: age, age_widths: [1, 10, 50]}
  - name: race
    leaves: [white, black, aian, asian, nhpi, other, multiple]
    levels:
      - {code: A}
      - {code: W, groups: {white: [white], other: [black, aian, asian, nhpi, other, multiple]}}
      - {code: "*", suppress: true}
  - {name: sex, leaves: [female, male], levels: [{code: s}, {code: "*", suppress: true}]}
  - {name: ethnicity, leaves: [hispanic, non-hispanic], levels: [{code: e}, {code: "*", suppress: true}]}
"""


def test_user_hierarchies_file(tmp_path: Path, capsys) -> None:
    path = tmp_path / "space.yaml"
    path.write_text(HIERARCHIES)
    args = ["surveil", "search", "--population-table", POP, "--regions", "99001", "--volumes", "11,300"]
    assert main([*args, "--simulations", "20", "--hierarchies", str(path), "--out", str(tmp_path / "s")]) == 0
    table = pd.read_csv(tmp_path / "s" / "search.csv")
    assert len(table) == 4 * 3 * 2 * 2 and "1W*e" in set(table["policy"])
    sim = [
        "surveil",
        "simulate",
        "--population-table",
        POP,
        "--region",
        "99001",
        "--cases",
        CASES,
        "--simulations",
        "10",
    ]
    assert main([*sim, "--policy", "2W*e", "--hierarchies", str(path), "--out", str(tmp_path / "m")]) == 0
    assert main([*sim, "--policy", "2Bse", "--hierarchies", str(path), "--out", str(tmp_path / "m")]) == 2
    capsys.readouterr()
    path.write_text(HIERARCHIES.replace("age_widths: [1, 10, 50]", "age_widths: [1, 10, 25]"))
    assert main([*args, "--hierarchies", str(path), "--out", str(tmp_path / "bad")]) == 2
    line = capsys.readouterr().err.strip()
    assert f"{path}: dimensions[0].age_widths" in line and "25 is not a multiple of 10" in line
    assert len(line.splitlines()) == 1


def test_zero_windows_option(tmp_path: Path, capsys) -> None:
    args = [
        "surveil",
        "select",
        "--population-table",
        POP,
        "--region",
        "99005",
        "--cases",
        CASES,
        "--simulations",
        "20",
    ]
    for choice in ("keep", "drop"):
        assert main([*args, "--zero-windows", choice, "--out", str(tmp_path / choice)]) == 0
        assert json.loads((tmp_path / choice / "schedule.json").read_text())["zero_windows"] == choice
    keep = pd.read_csv(tmp_path / "keep" / "schedule.csv")
    drop = pd.read_csv(tmp_path / "drop" / "schedule.csv")
    assert (drop["volume"] >= keep["volume"]).all() and (drop["volume"] > keep["volume"]).any()
    assert main([*args, "--zero-windows", "maybe", "--out", str(tmp_path / "x")]) == 2
    assert (
        "'--zero-windows'" in (err := capsys.readouterr().err)
        and "'maybe' is not one of 'drop', 'keep'" in err
    )


def test_default_hierarchies_are_the_papers_and_issue_10s_by_name(tmp_path: Path) -> None:
    """Issue 22: a 96-year-old is released as 90+ under 1*** with the paper's hierarchies (the default),
    as 95-99 with --hierarchies ages-to-100, where the population bin is too small and is suppressed."""
    records = tmp_path / "records.csv"
    records.write_text("region,date,age,race,sex,ethnicity\n99005,2020-08-03,96,white,male,hispanic\n")
    args = [
        "surveil",
        "release",
        "--population-table",
        POP,
        "--cases-records",
        str(records),
        "--policy",
        "1***",
    ]
    log = tmp_path / "log.json"
    assert main([*args, "--out", str(tmp_path / "paper"), "--custodian-log", str(log)]) == 0
    frame = pd.read_csv(tmp_path / "paper" / "release_2020-08-03.csv", dtype=str)
    assert frame["age"].tolist() == ["90+"]
    assert (
        main(
            [
                *args,
                "--hierarchies",
                "ages-to-100",
                "--out",
                str(tmp_path / "old"),
                "--custodian-log",
                str(log),
            ]
        )
        == 0
    )
    assert not list((tmp_path / "old").glob("release_*"))  # 95-99: 4 people in 99005, 90+: 16
    assert json.loads(log.read_text())["periods"][0]["suppressed"] == 1
