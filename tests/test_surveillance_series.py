"""Issue 37: a surveillance release is checked against every earlier release of its series.

The attacks are made here from the published files alone (the recipient's view, with nothing of the
verifier), and compared with the custodian's truth: the differencing attack that recovers a count the
first release hid (``test_differencing_attack_...``) and the public-total attack (a county's public
case count minus its released records) both work on the main before this issue (the second release
exits 0 there) and are refused after; ``--on-conflict suppress`` / ``coarsen`` release what remains
without them.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from safeshare.cli import main
from safeshare.surveillance.policies import default_space

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "surveillance"
POP = str(EXAMPLES / "population.csv")
RECORDS = str(EXAMPLES / "case_records.csv")
DIMS = ["age", "race", "sex", "ethnicity"]


def _release(out: Path, *extra: str, records: str = RECORDS) -> list[str]:
    return [
        "surveil",
        "release",
        "--population-table",
        POP,
        "--cases-records",
        records,
        *extra,
        "--out",
        str(out),
    ]


def _one_line(capsys: pytest.CaptureFixture[str], *parts: str) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert "internal error" not in err, err
    for part in parts:
        assert part in err, err
    return err


def _cells(folder: Path, code: str) -> pd.DataFrame:
    """The recipient's counts: every release file's records per (date, region, labels at ``code``)."""
    space = default_space()
    node = space.parse(code)
    frames = []
    for path in sorted(folder.glob("release_*.csv")):
        frame = pd.read_csv(path, dtype=str, keep_default_na=False)
        frames.append(frame)
    frame = pd.concat(frames, ignore_index=True)
    policy = json.loads((folder / "release.json").read_text())["files"][0]["policy"]
    source = space.parse(policy)
    for d, (dim, a, b) in enumerate(zip(space.dimensions, source, node, strict=True)):
        up = {dim.levels[a].groups[i]: dim.levels[b].groups[i] for i in range(len(dim.leaves))}
        frame[DIMS[d]] = frame[DIMS[d]].map(up)
    return frame.groupby(["date", "region", *DIMS]).size().rename("n").reset_index()


def _difference(first: Path, second: Path, code: str) -> pd.DataFrame:
    """The attack: the second release's counts minus the first's, at the coarser policy ``code``,
    on the days both publish."""
    a, b = _cells(first, code), _cells(second, code)
    days = set(a["date"]) & set(b["date"])
    keys = ["date", "region", *DIMS]
    both = a.merge(b, on=keys, how="outer", suffixes=("_first", "_second")).fillna(0)
    both = both[both["date"].isin(days)]
    both["hidden"] = both["n_second"] - both["n_first"]
    return both[both["hidden"] != 0]


def test_differencing_attack_recovers_a_hidden_count_and_is_refused(tmp_path: Path, capsys) -> None:
    """Release 1 shares single-year ages (0Ase): records of small population bins are suppressed.
    Release 2 re-publishes the same days at 2Bse, where those bins are large: on the main of the
    issue it is published, and the difference at 2Bse recovers, day by day and cell by cell, the
    records release 1 hid. Now it is refused with the cell named; with --on-conflict suppress the
    earlier files stand and the difference is zero everywhere."""
    out, kept, log = tmp_path / "out", tmp_path / "recipient", tmp_path / "custodian.json"
    assert main(_release(out, "--policy", "0Ase", "--custodian-log", str(log))) == 0
    shutil.copytree(out, kept)  # the recipient keeps release 1
    hidden = {p["period"]: p["suppressed"] for p in json.loads(log.read_text())["periods"]}
    assert sum(hidden.values()) > 0

    # the attack itself, on a release 2 made without the series (what the main of the issue publishes)
    alone = tmp_path / "alone"
    assert main(_release(alone, "--policy", "2Bse", "--new-series")) == 0
    recovered = _difference(kept, alone, "2Bse")
    assert (recovered["hidden"] > 0).all()
    by_day = recovered.groupby("date")["hidden"].sum().to_dict()
    shown_days = {p.name.removeprefix("release_").removesuffix(".csv") for p in kept.glob("release_*.csv")}
    assert by_day == {d: n for d, n in hidden.items() if n and d in shown_days}  # every hidden count

    # the series check: release 2 into the series' folder is refused, the cell named, nothing changed
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    assert main(_release(out, "--policy", "2Bse")) == 1
    err = _one_line(capsys, "reveals a difference of 1 record(s), fewer than k = 11", "release 1")
    first = recovered.sort_values(["date", "region", *DIMS]).iloc[0]
    assert f"cell region {first['region']}, age {first['age']}, race {first['race']}" in err
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    # the same through --series from another folder
    assert main(_release(tmp_path / "other", "--policy", "2Bse", "--series", str(out / "series.jsonl"))) == 1
    capsys.readouterr()

    # suppressed further: the days with a hidden record keep their earlier files; the attack finds nothing
    assert main(_release(out, "--policy", "2Bse", "--on-conflict", "suppress")) == 0
    frozen = {line.split()[0] for line in capsys.readouterr().out.splitlines() if "frozen to" in line}
    assert frozen == {d for d, n in hidden.items() if n and d in shown_days}
    assert _difference(kept, out, "2Bse").empty
    for day in frozen:
        name = f"release_{day}.csv"
        assert (out / name).read_bytes() == (kept / name).read_bytes()
    doc = json.loads((out / "release.json").read_text())
    assert doc["series"] == {"release": 2, "ledger": "series.jsonl"}
    # the days release 1 did not show (every record suppressed) are shown now, at 2Bse
    assert {f["period"] for f in doc["files"]} == set(hidden)


def _totals(records: str, path: Path) -> Path:
    """The county's daily case counts (public elsewhere), from the records themselves."""
    frame = pd.read_csv(records, dtype=str)
    days = pd.date_range(frame["date"].min(), frame["date"].max()).strftime("%Y-%m-%d")
    counts = frame.groupby(["region", "date"]).size().rename("new_cases")
    grid = pd.MultiIndex.from_product([sorted(frame["region"].unique()), days], names=["region", "date"])
    counts.reindex(grid, fill_value=0).reset_index().to_csv(path, index=False)
    return path


def _remainders(folder: Path, totals: Path) -> pd.Series:
    """Per region and day with a file: the public count minus the records released (a day without a
    file tells nothing of its records: it may not have been shared)."""
    public = pd.read_csv(totals, dtype={"region": str}).set_index(["region", "date"])["new_cases"]
    released = pd.Series(0, index=public.index)
    days = set()
    for path in folder.glob("release_*.csv"):
        frame = pd.read_csv(path, dtype=str)
        days |= set(frame["date"])
        for key, n in frame.groupby(["region", "date"]).size().items():
            released[key] += n
    left = public - released
    return left[left.index.get_level_values("date").isin(days)]


def test_public_totals_minus_the_released_records_are_refused(tmp_path: Path, capsys) -> None:
    """A county's daily case count is public (a dashboard): minus the records released, it counts the
    records suppressed -- the UK dashboard's recovered counts below 3. Refused unless 0 or >= k."""
    totals = _totals(RECORDS, tmp_path / "totals.csv")
    out = tmp_path / "out"
    assert main(_release(out, "--policy", "0Ase", "--public-totals", str(totals))) == 1
    _one_line(capsys, "the public total of 2020-08-0", "totals.csv", "fewer than k = 11")
    assert not out.exists()

    # the attack on what the main of the issue publishes: every suppressed record counted
    alone = tmp_path / "alone"
    assert main(_release(alone, "--policy", "0Ase", "--custodian-log", str(tmp_path / "log.json"))) == 0
    remainders = _remainders(alone, totals)
    periods = json.loads((tmp_path / "log.json").read_text())["periods"]
    suppressed = {p["period"]: p["suppressed"] for p in periods if p["records_out"]}
    assert remainders.groupby(level="date").sum().to_dict() == suppressed
    assert ((remainders > 0) & (remainders < 11)).any()

    # complementary suppression: every hidden remainder is 0 or at least k (here: no day holds k)
    assert (
        main(_release(out, "--policy", "0Ase", "--public-totals", str(totals), "--on-conflict", "suppress"))
        == 0
    )
    left = _remainders(out, totals)
    assert ((left == 0) | (left >= 11)).all()
    # coarsening instead: the days are coarsened until nothing is hidden
    coarse = tmp_path / "coarse"
    args = _release(coarse, "--policy", "0Ase", "--public-totals", str(totals), "--on-conflict", "coarsen")
    assert main(args) == 0
    out_text = capsys.readouterr().out
    left = _remainders(coarse, totals)
    assert ((left == 0) | (left >= 11)).all()
    policies = {f["period"]: f["policy"] for f in json.loads((coarse / "release.json").read_text())["files"]}
    coarsened = {line.split()[0] for line in out_text.splitlines() if "series check: coarsened" in line}
    assert coarsened and all(policies[d] != "0Ase" for d in coarsened)
    assert all(policies[d] == "0Ase" for d in policies if d not in coarsened)
    assert {d for d, n in suppressed.items() if n} >= coarsened
    ledger = [json.loads(line) for line in (coarse / "series.jsonl").read_text().splitlines()]
    assert ledger[-1]["series"]["public_totals"]["file"] == "totals.csv"


def test_incomparable_policies_on_the_same_days_are_refused(tmp_path: Path, capsys) -> None:
    out = tmp_path / "out"
    assert main(_release(out, "--policy", "1C*e")) == 0
    first = {p.name: p.read_bytes() for p in out.glob("release_*.csv")}
    assert main(_release(out, "--policy", "3Ase")) == 1
    err = _one_line(capsys, "at incomparable generalizations", "finer than either file")
    assert "cell region 99003, age " in err and ", race white" in err
    assert main(_release(out, "--policy", "3Ase", "--on-conflict", "suppress")) == 0
    assert {p.name: p.read_bytes() for p in out.glob("release_*.csv")} == first  # frozen, byte for byte
    # a week over those days at an incomparable policy: coarsened to the join, not held back
    week = tmp_path / "week"
    args = ["--policy", "4*s*", "--weekly", "--series", str(out / "series.jsonl"), "--on-conflict", "coarsen"]
    assert main(_release(week, *args)) == 0
    assert "coarsened 4*s* -> 4***" in capsys.readouterr().out
    assert {f["policy"] for f in json.loads((week / "release.json").read_text())["files"]} <= {
        "4***",
        "4C**",
        "4C*e",
    }


def test_a_week_over_days_not_shared_is_refused(tmp_path: Path, capsys) -> None:
    """Daily files at 0Ase leave days without a file (every record suppressed); a weekly file of the
    same days, minus the daily files, counts the records of the days no file shows."""
    out = tmp_path / "out"
    assert main(_release(out, "--policy", "0Ase")) == 0
    assert main(_release(out, "--policy", "4*s*", "--weekly")) == 1
    _one_line(capsys, "days that no file publishes at this generalization")
    assert main(_release(out, "--policy", "4*s*", "--weekly", "--on-conflict", "suppress")) == 0
    assert "held back" in capsys.readouterr().out
    assert not list(out.glob("release_week_*"))  # both weeks held back: nothing new is shown


def test_the_ledger_is_published_with_the_release_and_holds_only_what_was_released(tmp_path: Path) -> None:
    out, log = tmp_path / "out", tmp_path / "log.json"
    assert main(_release(out, "--policy", "0Ase", "--custodian-log", str(log))) == 0
    assert main(["ledger", "verify", str(out / "series.jsonl")]) == 0
    entry = json.loads((out / "series.jsonl").read_text())
    assert entry["seq"] == 1 and entry["approved_by"] is None
    assert {f["path"] for f in entry["files"]} == {
        p.name for p in out.iterdir() if p.name != "series.jsonl" and not p.name.startswith(".")
    }
    pubs = entry["series"]["publications"]
    for pub in pubs:
        frame = pd.read_csv(out / pub["file"], dtype=str)
        counted = frame.groupby(["region", *DIMS]).size()
        assert sorted(tuple(c) for c in pub["cells"]) == sorted((*key, int(n)) for key, n in counted.items())
    released = sum(c[-1] for pub in pubs for c in pub["cells"])
    custodian = json.loads(log.read_text())
    assert released == custodian["records_out"] < custodian["records_in"]
    text = (out / "series.jsonl").read_text()
    assert str(tmp_path) not in text and "records_in" not in text and "suppressed" not in text
    # a second, identical release records the same contents by reference only
    assert main(_release(out, "--policy", "0Ase")) == 0
    second = json.loads((out / "series.jsonl").read_text().splitlines()[1])
    assert second["seq"] == 2 and all("cells" not in p for p in second["series"]["publications"])
    assert [p["content"] for p in second["series"]["publications"]] == [p["content"] for p in pubs]


@pytest.mark.parametrize(
    ("tamper", "message"),
    [
        (lambda text: text.replace('"release_2020-08-02.csv"', '"release_2020-08-01.csv"', 1), "is broken"),
        (lambda text: text + "not json\n", "is broken"),
        (lambda text: text.replace('"series":{', '"other":{', 1), "is broken"),
    ],
)
def test_a_tampered_series_ledger_is_refused_before_anything_is_read(
    tmp_path: Path, capsys, tamper, message: str
) -> None:
    out = tmp_path / "out"
    assert main(_release(out, "--policy", "2Bse")) == 0
    ledger = out / "series.jsonl"
    ledger.write_text(tamper(ledger.read_text()))
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    assert main(_release(out, "--policy", "2Bse")) == 2
    _one_line(capsys, "series ledger", message)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


def test_a_ledger_of_another_kind_or_hierarchies_is_refused(tmp_path: Path, capsys) -> None:
    out = tmp_path / "out"
    assert main(_release(out, "--policy", "2Bse")) == 0
    assert main(_release(out, "--policy", "2Bse", "--hierarchies", "ages-to-100")) == 2
    _one_line(capsys, "used other hierarchies", "--new-series")
    assert main(_release(out, "--policy", "2Bse", "--hierarchies", "ages-to-100", "--new-series")) == 0
    assert len((out / "series.jsonl").read_text().splitlines()) == 1  # a new series
    # an anonymize ledger is no series ledger
    from safeshare.workflows.ledger import append_entry

    other = tmp_path / "ledger.jsonl"
    append_entry(other, {"time": "t", "safeshare_version": "0", "approved_by": "x", "files": []})
    assert main(_release(tmp_path / "o2", "--policy", "2Bse", "--series", str(other))) == 2
    _one_line(capsys, "is not a surveil release of a series")


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--on-conflict", "ignore"], "--on-conflict: one of refuse, suppress, coarsen"),
        (["--series", "missing.jsonl"], "--series missing.jsonl: no such file"),
        (["--series", "x.jsonl", "--new-series"], "at most one of --series FILE and --new-series"),
        (["--public-totals", "nothing.csv"], "nothing.csv"),
    ],
)
def test_hostile_series_options_are_exit_2(tmp_path: Path, capsys, extra: list[str], message: str) -> None:
    assert main(_release(tmp_path / "o", "--policy", "2Bse", *extra)) == 2
    _one_line(capsys, message)
    assert not (tmp_path / "o").exists()


def test_public_totals_of_a_region_outside_the_population_are_refused(tmp_path: Path, capsys) -> None:
    totals = tmp_path / "t.csv"
    totals.write_text("region,date,new_cases\n12345,2020-08-02,3\n")
    assert main(_release(tmp_path / "o", "--policy", "2Bse", "--public-totals", str(totals))) == 2
    _one_line(capsys, "t.csv: region '12345' is not in the population table")


def _long_ledger(path: Path, entries: int) -> None:
    """A valid series ledger of ``entries`` releases, each re-publishing the same week with another
    count: every one is compared with the new release."""
    import hashlib

    from safeshare.workflows.ledger import GENESIS, canonical, entry_hash
    from safeshare.workflows.series_ledger import hierarchy_fingerprint

    fingerprint, previous, lines = hierarchy_fingerprint(default_space()), GENESIS, []
    for seq in range(1, entries + 1):
        record = {
            "first_day": "2020-08-02",
            "last_day": "2020-08-08",
            "admissible": [[0], [4], [3], [1], [1]],
            "na": None,
            "regions": None,
            "cells": [["99003", "0-59", "*", "*", "*", 100 + 20 * seq]],
        }
        content = hashlib.sha256(canonical(record).encode()).hexdigest()
        publication = {
            "file": f"f{seq}.csv",
            "policy": "4***",
            "sha256": "0" * 64,
            "content": content,
            **record,
        }
        entry = {
            "time": "2020-08-09T00:00:00Z",
            "safeshare_version": "0",
            "approved_by": None,
            "files": [],
            "series": {
                "format": 1,
                "hierarchy": fingerprint,
                "k": 11,
                "weekly": True,
                "publications": [publication],
            },
            "seq": seq,
            "prev_sha256": previous,
        }
        entry["entry_sha256"] = entry_hash(entry)
        lines.append(canonical(entry))
        previous = hashlib.sha256(lines[-1].encode()).hexdigest()
    path.write_text("\n".join(lines) + "\n")


@pytest.mark.slow
def test_sigterm_during_the_series_check_publishes_nothing(tmp_path: Path) -> None:
    import os
    import signal
    import subprocess
    import sys
    import time

    import psutil

    ledger = tmp_path / "series.jsonl"
    _long_ledger(ledger, 8000)
    out = tmp_path / "out"
    src = str(Path(__file__).resolve().parent.parent / "src")
    args = _release(out, "--policy", "4***", "--weekly", "--series", str(ledger))
    proc = subprocess.Popen(
        [sys.executable, "-m", "safeshare", *args],
        env={**os.environ, "PYTHONPATH": src},
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
    )
    watch = psutil.Process(proc.pid)
    deadline = time.monotonic() + 300
    while sum(watch.cpu_times()[:2]) < 4 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert proc.poll() is None, "the release ended before the signal"
    sent = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 143, err
    assert time.monotonic() - sent < 5  # within a second or two of CPU, on a loaded machine
    assert not out.exists() and not list(tmp_path.glob(".out.staging-*"))
