"""Issue 37: the CDC public-use-style rule set (``surveil release --rules cdc``) on a SYNTHETIC case file
built so that each of CDC's rules decides something, against expectations computed by hand (below,
rule by rule); the independent verifier refuses files that break each rule; bad input exits 2.

The population (people per county and bin; every record aged 30 or 70, so at policy ``4Ase`` ages
0-59 or 60+) and the week's records:

* state 80: 80001 (100,000 people; 3,191 records), 80003 (60,000; 1,200), 80005 (15,000; 400).
  #3: 80005 has fewer than 20,000 people: its county is suppressed (region ``80``). #1-#2: the state's
  county-less records (400) are fewer than 1,000, so its smallest shown county, 80003 (1,200), is
  suppressed too (1,600). #10: 3 counties, 1 shown: 2 missing, fine.
  In 80001: 20 records of (female, aian, hispanic), a subpopulation of 150 people (< 220, #4):
  ethnicity suppressed, (female, aian, any) has 250 people. 160 records of (male, asian, hispanic), 300
  people: 160 >= 150 (#5, half): ethnicity suppressed, (male, asian, any) has 800 people. 4 records
  of (60+, white, male, hispanic) and 7 of (60+, black, male, hispanic): classes below 11 (#6): their
  ethnicity, then their race is suppressed, and together they make (60+, NA, male, NA) of 11.
* state 81: 81001 (50,000 people; 1,500 records), 81003 (40,000; 600). #1-#2: 81003 has fewer than
  1,000 records: suppressed; the county-less 600 are fewer than 1,000: 81001 suppressed as well; the
  state (2,100) is shown.
* state 82: one county, 82001 (30,000; 1,100): shown (#10: none missing).
* state 83: 83001 (50,000; 1,300) and 83003 (25,000; no record). #10: exactly one county missing
  would name 83001's county-less records' county... 83001 is shown, 83003 missing: 83001 is
  suppressed (region ``83``); then both are missing.
* state 84: 84001 (30,000; 300 records): fewer than 1,000 records in the county and in the state:
  both suppressed (region ``NA``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from safeshare.cli import main
from safeshare.surveillance.cdc import CdcRules
from safeshare.surveillance.inputs import read_population
from safeshare.surveillance.policies import default_space
from safeshare.surveillance.release import _population_rows, verify_cdc_period

W, M = ("white", "female", "non-hispanic"), ("white", "male", "non-hispanic")
#: county -> {(age, race, sex, ethnicity): (people, records)}
DESIGN: dict[str, dict[tuple[int, str, str, str], tuple[int, int]]] = {
    "80001": {
        (30, *W): (40_000, 2_000),
        (30, *M): (38_000, 600),
        (70, "white", "male", "hispanic"): (5_000, 4),
        (70, "black", "male", "hispanic"): (2_000, 7),
        (30, "aian", "female", "hispanic"): (150, 20),
        (30, "aian", "female", "non-hispanic"): (100, 0),
        (30, "asian", "male", "hispanic"): (300, 160),
        (30, "asian", "male", "non-hispanic"): (500, 100),
        (30, "black", "female", "non-hispanic"): (13_950, 300),
    },
    "80003": {(30, *W): (30_000, 700), (30, *M): (30_000, 500)},
    "80005": {(30, *W): (8_000, 250), (30, *M): (7_000, 150)},
    "81001": {(30, *W): (25_000, 900), (30, *M): (25_000, 600)},
    "81003": {(30, *W): (20_000, 400), (30, *M): (20_000, 200)},
    "82001": {(30, *W): (15_000, 700), (30, *M): (15_000, 400)},
    "83001": {(30, *W): (25_000, 800), (30, *M): (25_000, 500)},
    "83003": {(30, *W): (12_500, 0), (30, *M): (12_500, 0)},
    "84001": {(30, *W): (15_000, 200), (30, *M): (15_000, 100)},
}
#: the hand-computed release: (region, age, race, sex, ethnicity) -> records
EXPECTED = {
    ("80001", "0-59", "white", "female", "non-hispanic"): 2_000,
    ("80001", "0-59", "white", "male", "non-hispanic"): 600,
    ("80001", "60+", "NA", "male", "NA"): 11,
    ("80001", "0-59", "aian", "female", "NA"): 20,
    ("80001", "0-59", "asian", "male", "NA"): 160,
    ("80001", "0-59", "asian", "male", "non-hispanic"): 100,
    ("80001", "0-59", "black", "female", "non-hispanic"): 300,
    ("80", "0-59", "white", "female", "non-hispanic"): 700 + 250,
    ("80", "0-59", "white", "male", "non-hispanic"): 500 + 150,
    ("81", "0-59", "white", "female", "non-hispanic"): 900 + 400,
    ("81", "0-59", "white", "male", "non-hispanic"): 600 + 200,
    ("82001", "0-59", "white", "female", "non-hispanic"): 700,
    ("82001", "0-59", "white", "male", "non-hispanic"): 400,
    ("83", "0-59", "white", "female", "non-hispanic"): 800,
    ("83", "0-59", "white", "male", "non-hispanic"): 500,
    ("NA", "0-59", "white", "female", "non-hispanic"): 200,
    ("NA", "0-59", "white", "male", "non-hispanic"): 100,
}
DAYS = ("2020-08-02", "2020-08-04", "2020-08-07")
KEYS = ["region", "age", "race", "sex", "ethnicity"]


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("cdc")
    pop, rec = [], []
    for county, cells in DESIGN.items():
        for (age, race, sex, eth), (people, records) in cells.items():
            pop.append((county, age, race, sex, eth, people))
            for _ in range(records):
                rec.append((county, DAYS[len(rec) % 3], age, race, sex, eth))
    pd.DataFrame(pop, columns=[*KEYS, "count"]).to_csv(folder / "population.csv", index=False)
    pd.DataFrame(rec, columns=["region", "date", *KEYS[1:]]).to_csv(folder / "records.csv", index=False)
    return folder / "population.csv", folder / "records.csv"


def _args(inputs: tuple[Path, Path], out: Path, *extra: str) -> list[str]:
    pop, rec = inputs
    return ["surveil", "release", "--population-table", str(pop), "--cases-records", str(rec), "--policy",
            "4Ase", "--weekly", *extra, "--out", str(out)]  # fmt: skip


def test_the_preset_reproduces_the_hand_computed_release(inputs: tuple[Path, Path], tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert main(_args(inputs, out, "--rules", "cdc")) == 0
    frame = pd.read_csv(out / "release_week_2020-08-02.csv", dtype=str, keep_default_na=False)
    assert list(frame.columns) == ["region", "date", *KEYS[1:]] and set(frame["date"]) == {"2020-08-02"}
    got = frame.groupby(KEYS).size().to_dict()
    assert got == EXPECTED
    assert len(frame) == sum(n for cells in DESIGN.values() for _, n in cells.values())  # nobody dropped
    doc = json.loads((out / "release.json").read_text())
    log = doc["rules"]
    assert log["name"] == "cdc" and "review_public_geo.R" in log["source"]
    thresholds = {r["rule"]: r["threshold"] for r in log["rules"]}
    assert thresholds == {
        "#1, #2": 1000,
        "#3": 20000,
        "#4": 220,
        "#5": 0.5,
        "#6": 11,
        "#7-#9": None,
        "#10": 1,
    }
    fields = log["files"]["release_week_2020-08-02.csv"]["suppressed_fields"]
    assert fields == {
        "records": 9591,
        "region": 300,
        "date": 0,
        "age": 0,
        "race": 11,
        "sex": 0,
        "ethnicity": 191,
    }
    text = (out / "rules_log.md").read_text()
    assert "| #3 | a shown county has at least this many people | 20,000 |" in text
    assert "region 300" in text and "ethnicity 191" in text


def test_thresholds_can_be_changed_by_a_file(inputs: tuple[Path, Path], tmp_path: Path, capsys) -> None:
    rules = tmp_path / "rules.yaml"
    rules.write_text("preset: cdc\nlocation_k: 500\n")
    out = tmp_path / "out"
    assert main(_args(inputs, out, "--rules", str(rules))) == 0
    got = pd.read_csv(out / "release_week_2020-08-02.csv", dtype=str, keep_default_na=False)
    regions = set(got["region"])
    # at 500: 81003 (600 records) is shown, so 81001 is too; 80005's 400 county-less records still need
    # 80003 beside them; 84001 (300) is still suppressed with its state
    assert {"81001", "81003", "80"} <= regions and "80003" not in regions and "NA" in regions
    rules.write_text("preset: cdc\nlocation: 500\n")
    assert main(_args(inputs, tmp_path / "o2", "--rules", str(rules))) == 2
    assert "unknown key 'location'" in capsys.readouterr().err
    rules.write_text("preset: cdc\nshare_cap: 2\n")
    assert main(_args(inputs, tmp_path / "o2", "--rules", str(rules))) == 2
    assert "share_cap: a share in (0, 1]" in capsys.readouterr().err
    assert main(_args(inputs, tmp_path / "o2", "--rules", "cdcx")) == 2
    assert "no preset (cdc) and no file" in capsys.readouterr().err


def _rows(frame: pd.DataFrame, where: pd.Series, n: int, **values: str) -> pd.DataFrame:
    """``frame`` with the first ``n`` rows of ``where`` changed to ``values``."""
    out = frame.copy()
    rows = out.index[where][:n]
    for column, value in values.items():
        out.loc[rows, column] = value
    return out


@pytest.mark.parametrize(
    ("edit", "rule"),
    [
        (lambda f: f.assign(region=f["region"].replace("80", "80005")), "#3"),
        (lambda f: _rows(f, f["region"] == "81", 500, region="81003"), "#1, #2"),
        (lambda f: f.assign(region=f["region"].replace("83", "83001")), "#10"),
        (lambda f: f.assign(ethnicity=f["ethnicity"].where(f["race"] != "aian", "hispanic")), "#4"),
        (lambda f: f.assign(ethnicity=f["ethnicity"].where(f["race"] != "asian", "hispanic")), "#5"),
        (lambda f: _rows(f, f["age"] == "60+", 1, race="white"), "#6"),
        (lambda f: f.assign(region=f["region"].replace("NA", "85")), "#7-#9"),
    ],
)
def test_the_verifier_refuses_a_file_that_breaks_a_rule(
    inputs: tuple[Path, Path], tmp_path: Path, edit, rule: str
) -> None:
    out = tmp_path / "out"
    assert main(_args(inputs, out, "--rules", "cdc")) == 0
    path = out / "release_week_2020-08-02.csv"
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    pop = read_population(inputs[0], default_space())
    columns = ["region", "date", *KEYS[1:]]

    def failures() -> list[str]:
        node = pop.space.parse("4Ase")
        rows = _population_rows(pop)
        return verify_cdc_period(
            path, "csv", pop, node, CdcRules(), columns, "2020-08-02", 9591, rows
        ).failures

    assert failures() == []
    edit(frame).to_csv(path, index=False)
    found = failures()
    assert any(f.startswith(f"cdc-rules {rule}") for f in found), found


def test_regions_that_are_no_county_fips_codes_are_refused(tmp_path: Path, capsys) -> None:
    examples = Path(__file__).resolve().parent.parent / "examples" / "surveillance"
    pop = tmp_path / "pop.csv"
    frame = pd.read_csv(examples / "population.csv", dtype=str)
    frame.assign(region=frame["region"].str.replace("99003", "alpha")).to_csv(pop, index=False)
    rec = tmp_path / "rec.csv"
    records = pd.read_csv(examples / "case_records.csv", dtype=str)
    records.assign(region="alpha").to_csv(rec, index=False)
    args = ["surveil", "release", "--population-table", str(pop), "--cases-records", str(rec)]
    assert main([*args, "--policy", "4Ase", "--rules", "cdc", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert "region 'alpha' is not a 5-digit county FIPS code" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "o").exists()


def test_a_label_equal_to_the_suppression_token_is_refused(tmp_path: Path, capsys) -> None:
    spec = tmp_path / "h.yaml"
    spec.write_text(
        "dimensions:\n  - {name: age, age_widths: [1, 5]}\n"
        "  - name: race\n    leaves: [white, black, aian, asian, nhpi, other, NA]\n    levels: [{code: A}]\n"
        "  - {name: sex, leaves: [female, male], levels: [{code: s}]}\n"
        "  - {name: ethnicity, leaves: [hispanic, non-hispanic], levels: [{code: e}]}\n"
    )
    examples = Path(__file__).resolve().parent.parent / "examples" / "surveillance"
    pop = tmp_path / "pop.csv"
    frame = pd.read_csv(examples / "population.csv", dtype=str)
    frame.assign(race=frame["race"].replace("multiple", "NA")).to_csv(pop, index=False)
    args = ["surveil", "release", "--population-table", str(pop), "--cases-records"]
    args += [str(examples / "case_records.csv"), "--policy", "1Ase", "--hierarchies", str(spec)]
    assert main([*args, "--rules", "cdc", "--out", str(tmp_path / "o")]) == 2
    assert "'race' has a label 'NA', the suppression token" in capsys.readouterr().err


def test_a_cdc_style_release_in_its_series(inputs: tuple[Path, Path], tmp_path: Path, capsys) -> None:
    """The series check reads the NA fields at their virtual top: a re-release with 3 more records of
    80001 (late reports) shows a difference of 3 in a county cell; refused, or the earlier file kept."""
    out = tmp_path / "out"
    assert main(_args(inputs, out, "--rules", "cdc")) == 0
    first = (out / "release_week_2020-08-02.csv").read_bytes()
    entry = json.loads((out / "series.jsonl").read_text())
    (pub,) = entry["series"]["publications"]
    assert pub["na"] == "NA" and pub["admissible"][0] == [0, 1]
    assert sum(c[-1] for c in pub["cells"]) == 9591
    assert main(_args(inputs, out, "--rules", "cdc")) == 0  # the same again: nothing new
    pop, rec = inputs
    late = tmp_path / "late.csv"
    frame = pd.read_csv(rec, dtype=str)
    extra = frame[(frame["region"] == "80001") & (frame["race"] == "black")].head(3)
    pd.concat([frame, extra]).to_csv(late, index=False)
    args = ["surveil", "release", "--population-table", str(pop), "--cases-records", str(late), "--policy"]
    args += ["4Ase", "--weekly", "--rules", "cdc", "--out", str(out)]
    assert main(args) == 1
    err = capsys.readouterr().err
    assert "cell region 80001, age 60+, race NA, sex male, ethnicity NA" in err  # the 11 became 14
    assert "a difference of 3 record(s)" in err
    assert main([*args, "--on-conflict", "suppress"]) == 0
    assert (out / "release_week_2020-08-02.csv").read_bytes() == first
    log = json.loads((out / "release.json").read_text())["rules"]
    assert log["files"]["release_week_2020-08-02.csv"]["suppressed_fields"]["records"] == 9591
