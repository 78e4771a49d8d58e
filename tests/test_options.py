"""One meaning per option name across all commands (issue 7, item 12).

``--max-suppression`` is a fraction of the records in every command, or an
explicit percent (``5%``), read by one parser; ``--delimiter`` is always the
data's field separator (a hierarchy file's is ``--hierarchy-delimiter``); and
no option name means two different things in two commands.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
import typer

from safeshare.cli import app
from safeshare.config_checks import parse_fraction, parse_fractions
from safeshare.errors import ConfigError
from tests.conftest import run_cli, write_small_adult


@pytest.mark.parametrize(
    ("text", "value"),
    [("0.05", 0.05), ("5%", 0.05), (" 5 % ", 0.05), ("0", 0.0), ("1", 1.0), ("100%", 1.0), ("0.5%", 0.005)],
)
def test_parse_fraction(text: str, value: float) -> None:
    assert parse_fraction(text, "--max-suppression") == pytest.approx(value)


@pytest.mark.parametrize("text", ["5", "1.01", "-0.5", "101%", "-1%", "nan", "inf", "x", "%", "", "5%%"])
def test_parse_fraction_rejects(text: str) -> None:
    with pytest.raises(ConfigError, match=r"^--max-suppression: expected a fraction in"):
        parse_fraction(text, "--max-suppression")


def test_parse_fractions() -> None:
    assert parse_fractions("0, 1%,0.5", "--x") == pytest.approx([0.0, 0.01, 0.5])
    with pytest.raises(ConfigError, match="--x"):
        parse_fractions(" , ", "--x")


def _options() -> dict[str, list[tuple[str, str]]]:
    """Option name -> [(command, help)] over every command of the CLI."""
    found: dict[str, list[tuple[str, str]]] = defaultdict(list)

    def walk(command: Any, path: list[str]) -> None:
        if hasattr(command, "commands"):  # a group (risk and surveil are loaded by get_command)
            for name in command.list_commands(None):
                walk(command.get_command(None, name), [*path, name])
            return
        for param in command.params:
            if getattr(param, "param_type_name", "") == "option":
                for opt in [*param.opts, *param.secondary_opts]:
                    found[opt].append((" ".join(path), param.help or ""))

    walk(typer.main.get_command(app), [])
    return found


#: Option names used by several commands, with a word that every command's help must contain.
SHARED_MEANING = {
    "--max-suppression": "fraction",
    "--delimiter": "data",
    "--missing": "missing",
    "--k": "k",
    "--out": "",
    "--seed": "",
}


def test_one_meaning_per_option_name() -> None:
    options = _options()
    assert "--data-delimiter" not in options
    assert [c for c, _ in options["--hierarchy-delimiter"]] == ["hierarchy check"]
    for name, word in SHARED_MEANING.items():
        for command, help_text in options[name]:
            assert word in help_text, (name, command, help_text)
    assert {c for c, _ in options["--max-suppression"]} == {"anonymize", "utility", "sweep"}
    assert {c for c, _ in options["--delimiter"]} == {
        "attack",
        "inspect",
        "flatten",
        "hierarchy check",
        "hierarchy build",
        "risk estimate",
        "risk evaluate",
    }
    # renamed: flatten --n/--missing (events per person, padding), anonymize --utility (DP score function)
    assert [c for c, _ in options["--n"]] == ["dp params"]
    assert [c for c, _ in options["--utility"]] == ["sweep"]
    assert [c for c, _ in options["--events"]] == [c for c, _ in options["--pad"]] == ["flatten"]
    assert [c for c, _ in options["--utility-function"]] == ["anonymize"]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_small_adult(tmp_path_factory.mktemp("adult"), n_train=1000)


@pytest.mark.parametrize("limit", ["0.02", "2%"])
def test_anonymize_takes_a_fraction_or_a_percent(
    workdir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], limit: str
) -> None:
    out = tmp_path / "out"
    args = ["anonymize", str(workdir / "adult.yaml"), "--out", str(out), "-q", "--no-tradeoff"]
    # the run's warnings that contradict its headline, acknowledged (issue 33)
    args += ["--accept-warning", "kept-column-identifying"]
    code, _, stderr = run_cli([*args, "--max-suppression", limit], capsys)
    assert code == 0, stderr
    assert json.loads((out / "report.json").read_text())["max_suppression"] == pytest.approx(0.02)


@pytest.mark.parametrize("command", ["anonymize", "sweep"])
def test_a_bare_number_above_one_is_refused(
    workdir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    out = tmp_path / "out"
    args = [command, str(workdir / "adult.yaml"), "--out", str(out), "--max-suppression", "5"]
    code, _, stderr = run_cli(args, capsys)
    assert code == 2 and len(stderr.strip().splitlines()) == 1, stderr
    assert "did you mean 5%" in stderr and not out.exists()


def test_sweep_limits_are_fractions(
    workdir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "sweep"
    args = ["sweep", str(workdir / "adult.yaml"), "--out", str(out), "--k", "5", "--metric", "prec", "-q"]
    code, _, stderr = run_cli([*args, "--max-suppression", "0.01,5%"], capsys)
    assert code == 0, stderr
    rows = json.loads((out / "sweep.json").read_text())["rows"]
    assert sorted(r["max_suppression"] for r in rows) == pytest.approx([0.01, 0.05])


def test_delimiter_is_the_data_delimiter_everywhere(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data.csv"
    data.write_text("age|sex\n39|Male\n50|Female\n")
    hierarchy = tmp_path / "age.csv"
    hierarchy.write_text("39,30-39,*\n50,50-59,*\n")  # a comma-separated hierarchy file
    args = ["hierarchy", "check", str(hierarchy), "--hierarchy-delimiter", ",", "--data", str(data)]
    code, stdout, stderr = run_cli([*args, "--column", "age", "--delimiter", "|"], capsys)
    assert code == 0, stderr
    assert "height 2" in " ".join(stdout.split())
    code, _, stderr = run_cli([*args, "--column", "age", "--data-delimiter", "|"], capsys)
    assert code == 2 and "--data-delimiter" in stderr
    code, stdout, stderr = run_cli(
        ["inspect", str(data), "--qi", "age,sex", "--delimiter", "|", "--json"], capsys
    )
    assert code == 0 and json.loads(stdout)["records"] == 2, stderr
