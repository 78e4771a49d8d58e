"""The command line's one vocabulary (docs/cli.md), declared once for every command.

* the data-reading options of every command that reads a data file: ``--delimiter``,
  ``--header/--no-header``, ``--names``, ``--missing``, ``--skip-rows``
  (:data:`DelimiterOption` ... :data:`SkipRowsOption`: the group :func:`data_options`, which
  a command takes as one parameter with :func:`reads_data`);
* ``--quiet`` / ``-q`` (nothing on stdout on success) and ``--json`` (the result as one
  JSON document on stdout) on every command (:data:`QuietOption`, :data:`JsonOption`,
  :func:`emit`);
* ``--seed``: an integer >= 0 everywhere (:data:`SeedOption`); ``--simulations``: a count
  of Monte Carlo runs (:data:`SimulationsOption`); ``--population``: a population table
  (risk and surveil);
* choices are shown as choices (``Literal`` types: :data:`Metric`, :data:`AlgorithmName`, ...);
* an option that more than one command takes is declared once, as an ``Annotated`` alias (one
  name, one help text; its default stays at the parameter, as typer requires); a run of options
  that several commands take together is declared once, as a group (:func:`options_of`).

A command module parses its options with these, calls its use case in
:mod:`safeshare.api` (the same keywords) and prints the result; it holds no logic.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar, cast

import typer

from safeshare.app_runner import to_json
from safeshare.options import DATA_DELIMITER_HELP, MAX_SUPPRESSION_HELP

# The reading options of a data file, declared once for every command that reads one
# (the group :func:`data_options`, taken with :func:`reads_data`).
DelimiterOption = Annotated[str, typer.Option("--delimiter", help=DATA_DELIMITER_HELP)]
HeaderOption = Annotated[
    bool, typer.Option("--header/--no-header", help="Whether the data has a header line.")
]
NamesOption = Annotated[
    str | None, typer.Option("--names", help="Column names of a headerless CSV (comma list).")
]
MissingOption = Annotated[
    str | None,
    typer.Option(
        "--missing",
        help="Comma-separated missing-value tokens; an empty item (--missing '') declares blank cells.",
    ),
]
SkipRowsOption = Annotated[int, typer.Option("--skip-rows", help="Lines to skip at the top of the data.")]

QuietOption = Annotated[bool, typer.Option("--quiet", "-q", help="Print nothing on success.")]
JsonOption = Annotated[bool, typer.Option("--json", help="Print the result as one JSON document on stdout.")]
SeedOption = Annotated[
    int | None,
    typer.Option("--seed", help="Integer seed: reproducible (and predictable) random draws."),
]
SimulationsOption = Annotated[int, typer.Option("--simulations", help="Number of Monte Carlo runs.")]

# The overrides of a configuration's anonymization settings (anonymize, utility).
KOverrideOption = Annotated[int | None, typer.Option("--k", help="Override k of k-anonymity.")]
#: The column identifying each record's person (issue 32): k, risk and suppression counted in people.
PersonOption = Annotated[
    str | None,
    typer.Option("--person", help="Column identifying each record's person: k and risk counted in people."),
]
MaxSuppressionOption = Annotated[str | None, typer.Option("--max-suppression", help=MAX_SUPPRESSION_HELP)]

#: The option names of :data:`DATA_OPTIONS` (the vocabulary test checks every reading command has them).
DATA_OPTIONS = ("--delimiter", "--header", "--names", "--missing", "--skip-rows")


#: The choices of the options that take one of a fixed set (shown as ``<a|b|c>`` by ``--help``).
Metric = Literal["prec", "dm_star", "entropy"]
EngineName = Literal["memory", "duckdb", "spark"]
UtilityName = Literal["thesis", "linear", "safepub"]
PenaltyMode = Literal["suppression", "k-anonymity"]
Sensitivity = Literal["exact", "thesis"]
Orphans = Literal["error", "drop"]
MetricOption = Annotated[Metric | None, typer.Option("--metric", help="Information loss.")]
if TYPE_CHECKING:
    AlgorithmName = str
else:  # the names of the one registry of algorithms (safeshare.config.algorithms, import-light)
    from safeshare.config.algorithms import ALGORITHMS

    AlgorithmName = Literal.__getitem__(tuple(ALGORITHMS))


def csv_list(value: str | None) -> list[str]:
    """``"a, b,,c"`` -> ``["a", "b", "c"]``; nothing for ``None`` or an empty text."""
    return [v.strip() for v in value.split(",") if v.strip()] if value else []


#: The keywords of one group of options (see :func:`options_of`), passed on as ``**keywords``.
Keywords = dict[str, Any]
_Command = TypeVar("_Command", bound=Callable[..., Any])


def options_of(group: Callable[..., Any], name: str) -> Callable[[_Command], _Command]:
    """Declare a run of options once for every command that takes it.

    The command has a keyword-only parameter ``name``; typer sees, in its place, the parameters
    of ``group`` (their aliases, defaults and order: ``--help`` lists them there), and the
    command receives ``group(**their values)`` as ``name``. A parameter of ``group`` may not
    share a name with one of the command's.
    """

    def decorate(command: _Command) -> _Command:
        inner = inspect.signature(command, eval_str=True)
        options = inspect.signature(group, eval_str=True).parameters
        placeholder = inner.parameters.get(name)
        if placeholder is None or placeholder.kind is not inspect.Parameter.KEYWORD_ONLY:
            raise TypeError(f"{command.__name__} needs a keyword-only parameter {name!r}")
        if clash := set(options) & set(inner.parameters):
            raise TypeError(f"{command.__name__} already has parameters {sorted(clash)} of {name!r}")
        params: list[inspect.Parameter] = []
        for param in inner.parameters.values():
            if param is placeholder:
                params += [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in options.values()]
            else:
                params.append(param)

        @functools.wraps(command)
        def with_group(*args: Any, **kwargs: Any) -> Any:
            values = {option: kwargs.pop(option) for option in options if option in kwargs}
            return command(*args, **kwargs, **{name: group(**values)})

        outer = inner.replace(parameters=params)
        with_group.__signature__ = outer  # type: ignore[attr-defined]  # what typer reads
        with_group.__annotations__ = {p.name: p.annotation for p in params}
        return cast(_Command, with_group)

    return decorate


def data_options(
    delimiter: DelimiterOption = ",",
    header: HeaderOption = True,
    names: NamesOption = None,
    missing: MissingOption = None,
    skip_rows: SkipRowsOption = 0,
) -> Keywords:
    """The keywords of :class:`safeshare.config.commands.DataOptions` from the reading options."""
    return {
        "delimiter": delimiter,
        "header": header,
        "names": names,
        "missing": missing,
        "skip_rows": skip_rows,
    }


#: A command that reads a data file takes the reading options as ``reading: Keywords``
#: (``api.<use case>(..., **reading)``).
reads_data = options_of(data_options, "reading")


def emit(doc: Any, as_json: bool, quiet: bool, show: Callable[[], None]) -> None:
    """Print a command's result: ``doc`` as JSON (``--json``: :func:`safeshare.app_runner.to_json`,
    NaN and infinities as ``null``), nothing (``--quiet``), else ``show()``."""
    if as_json:
        import sys

        sys.stdout.write(to_json(doc) + "\n")
        sys.stdout.flush()
    elif not quiet:
        show()


class ConsoleMonitor:
    """The command line's :class:`~safeshare.app_runner.Monitor`: spinners, notes and
    progress bars on stderr (nothing with ``--quiet`` or ``--json``; spinners and bars only
    on a terminal)."""

    def __init__(self, quiet: bool) -> None:
        self.quiet = quiet

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        from safeshare.console import phase

        with phase(name, self.quiet):
            yield

    def note(self, message: str) -> None:
        if not self.quiet:
            from safeshare.console import err

            err.print(message, soft_wrap=True)

    @contextmanager
    def progress(self, what: str, total: int) -> Iterator[Callable[[int], None] | None]:
        from safeshare.console import err

        if self.quiet or not err.is_terminal:
            yield None
            return
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        columns = (TextColumn(what), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
        with Progress(*columns, console=err, transient=True) as bar:
            task = bar.add_task(what, total=total)
            yield lambda done: bar.update(task, completed=done)

    @property
    def wants_estimates(self) -> bool:
        return not self.quiet
