"""The surveillance commands on the application layer (issue 19): ``safeshare.api.surveil_*`` and
``safeshare surveil ... --json`` give the same result, and write the same files, on the shipped
example inputs with a fixed seed; ``--quiet`` prints nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from safeshare import api
from safeshare.app_runner import to_json
from tests.conftest import run_cli

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "surveillance"
POP = EXAMPLES / "population.csv"
CASES = EXAMPLES / "cases_long.csv"
FORECASTS = EXAMPLES / "forecasts.csv"
RECORDS = EXAMPLES / "case_records.csv"

#: Measured, not computed: left out of the comparison.
TIMINGS = {"elapsed_s"}


def _plain(doc: dict[str, Any]) -> dict[str, Any]:
    """The document as ``--json`` prints it (numpy values and paths as JSON), timings left out."""
    out: dict[str, Any] = json.loads(to_json(doc))
    return {key: value for key, value in out.items() if key not in TIMINGS}


#: command -> (its options on the command line, the same as Python keywords, the file to compare)
CASES_OF: dict[str, tuple[list[str], dict[str, Any], str]] = {
    "simulate": (
        ["--region", "99003", "--cases", str(CASES), "--policy", "1C*e", "--lag", "3", "--compare", "****"],
        {"region": "99003", "cases": CASES, "policy": "1C*e", "lag": 3, "compare": ["****"]},
        "bands.csv",
    ),
    "search": (
        ["--regions", "99003,99005", "--volumes", "10,11,150", "--k", "5,11"],
        {"regions": ["99003", "99005"], "volumes": [10, 11, 150], "k": [5, 11]},
        "search.csv",
    ),
    "select": (
        ["--region", "99001", "--cases", str(CASES), "--forecasts", str(FORECASTS), "--lag", "3"],
        {"region": "99001", "cases": CASES, "forecasts": FORECASTS, "lag": 3},
        "schedule.csv",
    ),
    "evaluate": (
        [
            "--cases",
            str(CASES),
            "--forecasts",
            str(FORECASTS),
            "--regions",
            "99005",
            "--volumes",
            "11,50,150",
        ],
        {"cases": CASES, "forecasts": FORECASTS, "regions": ["99005"], "volumes": [11, 50, 150]},
        "evaluation.csv",
    ),
}


@pytest.mark.parametrize("command", sorted(CASES_OF))
def test_the_api_and_the_command_give_one_result(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cli_args, keywords, compared = CASES_OF[command]
    plots = [] if command == "select" else ["--no-plots"]
    args = ["surveil", command, "--population-table", str(POP), "--simulations", "30", "--seed", "4"]
    code, stdout, stderr = run_cli(
        [*args, *cli_args, *plots, "--json", "--out", str(tmp_path / "cli")], capsys
    )
    assert code == 0, stderr
    function = getattr(api, f"surveil_{command}")
    extra = {} if command == "select" else {"plots": False}
    result = function(population_table=POP, simulations=30, seed=4, out=tmp_path / "api", **keywords, **extra)
    assert _plain(json.loads(stdout)) == _plain(result.to_dict())
    _same_folders(tmp_path / "cli", tmp_path / "api", result.files)
    assert compared in result.files


def _same_folders(cli: Path, python: Path, files: list[str]) -> None:
    """The same files, byte for byte (a JSON document: the same, timings aside)."""
    names = sorted(p.name for p in cli.iterdir() if not p.name.startswith("."))
    assert names == sorted(p.name for p in python.iterdir() if not p.name.startswith("."))
    assert names == sorted(files)
    for name in names:
        if name.endswith(".json"):
            assert _plain(json.loads((cli / name).read_text())) == _plain(
                json.loads((python / name).read_text())
            )
        else:
            assert (cli / name).read_bytes() == (python / name).read_bytes(), name


def test_release_the_api_and_the_command_give_one_result(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["surveil", "release", "--population-table", str(POP), "--cases-records", str(RECORDS)]
    args += ["--policy", "1C*e", "--weekly"]
    code, stdout, stderr = run_cli([*args, "--json", "--out", str(tmp_path / "cli")], capsys)
    assert code == 0, stderr
    result = api.surveil_release(
        population_table=POP, cases_records=RECORDS, policy="1C*e", weekly=True, out=tmp_path / "api"
    )
    doc = json.loads(stdout)
    assert doc == _plain(result.to_dict())
    # --json prints release.json: nothing of the records kept back (no count of them)
    assert doc == json.loads((tmp_path / "cli" / "release.json").read_text())
    assert not {"records_in", "suppressed", "periods"} & set(doc)
    for entry in doc["files"]:
        name = entry["file"]
        assert (tmp_path / "cli" / name).read_bytes() == (tmp_path / "api" / name).read_bytes()


def test_quiet_prints_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["surveil", "search", "--population-table", str(POP), "--regions", "99003", "--volumes", "11"]
    code, stdout, stderr = run_cli([*args, "--simulations", "5", "-q", "--out", str(tmp_path / "q")], capsys)
    assert code == 0, stderr
    assert stdout == "" and (tmp_path / "q" / "search.csv").exists()
    code, stdout, _ = run_cli([*args, "--simulations", "5", "--out", str(tmp_path / "loud")], capsys)
    assert code == 0 and "searched 1 region(s)" in stdout


def test_the_old_spellings_are_gone(capsys: pytest.CaptureFixture[str]) -> None:
    """``--sims`` is ``--simulations`` and ``--population`` is ``--population-table`` (docs/cli.md)."""
    for old in (["--sims", "5"], ["--population", str(POP)]):
        code, _, stderr = run_cli(["surveil", "search", *old, "--out", "never"], capsys)
        assert code == 2 and f"No such option: {old[0]}" in stderr
