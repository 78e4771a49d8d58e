"""One vocabulary for the command line (issue 19; docs/cli.md), checked on every command's ``--help``.

* every command has ``--quiet`` and ``--json``;
* every command that reads a data file given on the command line has the same reading
  options (``--delimiter``, ``--header/--no-header``, ``--names``, ``--missing``, ``--skip-rows``);
* ``--seed`` is an integer everywhere; a count of Monte Carlo runs is ``--simulations``;
  no other spelling of one concept (``--sims``, ``--points``, ``--repetitions``, ``--samples``,
  ``--qi-pool``, ``--estimators``) exists;
* an option that takes one of a fixed set of values shows them as choices (``<a|b>``).

The commands are every command of :data:`safeshare.cli.app` except the groups listed in
:data:`NOT_YET`, empty now: every group is on the application layer (issue 19).
"""

from __future__ import annotations

import typing
from collections.abc import Iterator
from typing import Any

import pytest
import typer

from safeshare.cli import app
from safeshare.cli.common import DATA_OPTIONS, Keywords, QuietOption, options_of
from safeshare.cli.common import reads_data as takes_reading_options
from tests.conftest import run_cli

#: Command groups not yet on the application layer (issue 19, phase 2 adds them by removing them here).
NOT_YET: set[str] = set()

#: Spellings replaced by one name each (docs/cli.md).
FORBIDDEN = {
    "--sims": "--simulations",
    "--points": "--simulations",
    "--repetitions": "--simulations",
    "--samples": "--simulations",
    "--qi-pool": "--qi",
    "--estimators": "--estimator",
}

#: Options whose values are a fixed set: they must be declared as choices.
CHOICES = {
    "--metric",
    "--algorithm",
    "--engine",
    "--orphans",
    "--utility-function",
    "--penalty-mode",
    "--sensitivity",
    "--format",
    "--layout",
    "--risk",
    "--approach",
    "--zero-windows",
    "--correlation",
}

#: Commands whose values take several metrics at once (a comma list, not a choice).
LISTS = {("sweep", "--metric")}


def commands() -> Iterator[tuple[str, Any]]:
    """``(command path, click command)`` for every command of the CLI, ``NOT_YET`` groups left out."""

    def walk(command: Any, path: list[str]) -> Iterator[tuple[str, Any]]:
        if hasattr(command, "commands"):
            for name in command.list_commands(None):
                if not path and name in NOT_YET:
                    continue
                yield from walk(command.get_command(None, name), [*path, name])
            return
        yield " ".join(path), command

    yield from walk(typer.main.get_command(app), [])


COMMANDS = dict(commands())


def options(command: Any) -> dict[str, Any]:
    """Option name (and its ``--no-`` form) -> the parameter."""
    out: dict[str, Any] = {}
    for param in command.params:
        if getattr(param, "param_type_name", "") == "option":
            for name in [*param.opts, *param.secondary_opts]:
                out[name] = param
    return out


def annotation(param: Any) -> Any:
    return param.type_descriptor.annotation


def test_the_commands_are_all_there() -> None:
    assert set(COMMANDS) == {
        "anonymize",
        "attack",
        "certificate pdf",
        "compare",
        "inspect",
        "hierarchy check",
        "hierarchy build",
        "flatten",
        "utility",
        "sweep",
        "dp params",
        "dp experiment",
        "ledger verify",
        "risk estimate",
        "risk evaluate",
        "surveil simulate",
        "surveil search",
        "surveil select",
        "surveil evaluate",
        "surveil release",
        "ui",
        "version",
    }


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_command_has_quiet_and_json(name: str) -> None:
    found = options(COMMANDS[name])
    assert "--quiet" in found and "-q" in found and "--json" in found, name


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_one_spelling_per_concept(name: str) -> None:
    found = options(COMMANDS[name])
    for spelling, replacement in FORBIDDEN.items():
        assert spelling not in found, f"{name}: {spelling} is spelled {replacement}"
    if "--seed" in found:
        assert annotation(found["--seed"]) is int, name
    if "--simulations" in found:
        assert annotation(found["--simulations"]) is int, name


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_fixed_sets_are_choices(name: str) -> None:
    for option, param in options(COMMANDS[name]).items():
        if option in CHOICES and (name, option) not in LISTS:
            assert typing.get_origin(annotation(param)) is typing.Literal, (name, option)


def reads_data(command: Any) -> bool:
    """A command reads a data file named on the command line: DATA, PERSONS (persons_file), or --data."""
    arguments = [p.name for p in command.params if getattr(p, "param_type_name", "") == "argument"]
    return bool({"data", "persons_file"} & set(arguments)) or "--data" in options(command)


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_the_same_reading_options_wherever_data_is_read(name: str) -> None:
    command = COMMANDS[name]
    if not reads_data(command):
        return
    found = options(command)
    assert set(DATA_OPTIONS) <= set(found), (name, sorted(set(DATA_OPTIONS) - set(found)))
    assert "--no-header" in found


def test_the_readers_are_the_expected_commands() -> None:
    assert {n for n, c in COMMANDS.items() if reads_data(c)} == {
        "inspect",
        "hierarchy check",
        "hierarchy build",
        "flatten",
        "risk estimate",
        "risk evaluate",
    }


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_help_shows_the_vocabulary(
    name: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "300")  # a wide terminal: no option truncated
    code, stdout, stderr = run_cli([*name.split(), "--help"], capsys)
    assert code == 0, stderr
    flat = "".join(c for c in stdout if not c.isspace() and c not in "│╭╮╰╯─")  # the help without its box
    for option in ("--quiet", "--json"):
        assert option in flat, (name, option)
    for option, param in options(COMMANDS[name]).items():
        if option in CHOICES and (name, option) not in LISTS:
            values = typing.get_args(annotation(param))
            assert f"<{values[0]}|{values[1]}" in flat, (name, option)  # shown as <a|b|...>


def test_help_lists_the_lazy_groups_without_importing_them() -> None:
    """``safeshare --help`` lists risk and surveil from one line each; their modules (numpy,
    pandas) are imported only when one of their commands runs (start-up, docs/cli.md)."""
    import subprocess
    import sys

    code = (
        "import sys\nfrom safeshare.cli import main\nmain(['--help'])\n"
        "print(sorted(m for m in ('safeshare.cli.risk', 'safeshare.cli.surveil', 'numpy', 'pandas') "
        "if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "risk" in out and "surveil" in out
    assert out.strip().splitlines()[-1] == "[]", out


def test_an_option_group_is_declared_once_and_passed_as_one_keyword() -> None:
    """:func:`options_of`: typer sees the group's options in the placeholder's place (their order,
    defaults and help), the command receives what the group returns; a command without the
    keyword-only placeholder, or with a parameter of the group's name, is refused."""
    from typer.testing import CliRunner

    seen: list[Keywords] = []

    @takes_reading_options
    def command(first: int = 1, *, reading: Keywords, quiet: QuietOption = False) -> None:
        seen.append({"first": first, **reading, "quiet": quiet})

    one = typer.Typer(add_completion=False)
    one.command()(command)
    result = CliRunner().invoke(one, ["--no-header", "--names", "a,b", "--skip-rows", "2", "-q"])
    assert result.exit_code == 0, result.output
    assert seen == [
        {
            "first": 1,
            "delimiter": ",",
            "header": False,
            "names": "a,b",
            "missing": None,
            "skip_rows": 2,
            "quiet": True,
        }
    ]
    names = [p.name for p in typer.main.get_command(one).params]
    assert names == ["first", "delimiter", "header", "names", "missing", "skip_rows", "quiet"]

    def positional(reading: Keywords) -> None: ...

    def clash(*, reading: Keywords, names: str = "") -> None: ...

    for bad in (positional, clash):
        with pytest.raises(TypeError, match="reading"):
            options_of(lambda delimiter=",", names=None: {}, "reading")(bad)
