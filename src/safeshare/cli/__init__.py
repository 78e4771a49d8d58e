"""The ``safeshare`` command line.

Exit status: 0 success, 2 bad input or an output that cannot be written (one
line on stderr saying what and where: a read-only or full disk, a locked or
foreign output directory), 1 internal error or memory exhausted, 3 a ledger whose
chain or recorded files do not hold (``ledger verify``), 130 SIGINT
(Ctrl-C), 143 SIGTERM (one line; staging removed, nothing published): the one table of
:func:`safeshare.app_runner.outcome`, shared with the workbench's runs. Nothing is
written to an output directory unless the release passed its independent
verification.
"""

from __future__ import annotations

import os
import signal
import sys
from importlib import import_module
from typing import Any

import typer
from typer.core import TyperGroup

from safeshare.app_runner import CLI_VOICE, run_guarded
from safeshare.cli import anonymize as anonymize_commands
from safeshare.cli import attack as attack_command
from safeshare.cli import experiments as experiment_commands
from safeshare.cli import ui as ui_command  # typer only; the web stack loads when it runs
from safeshare.cli.common import JsonOption, QuietOption, emit
from safeshare.cli.dp import dp_app
from safeshare.console import out
from safeshare.errors import InputError, Interrupted

#: Command groups loaded only when one of their commands (or their own help) runs, so that
#: ``safeshare --help`` and every other command start without importing them: name ->
#: (module, the Typer app in it, the line ``safeshare --help`` shows).
LAZY_GROUPS: dict[str, tuple[str, str, str]] = {
    "risk": (
        "safeshare.cli.risk",
        "risk_app",
        "Re-identification risk: exact measures and estimates of B, and the estimators' evaluation.",
    ),
    "surveil": (
        "safeshare.cli.surveil",
        "surveil_app",
        "Surveillance release policies: Monte Carlo PK risk forecasts, policy search, weekly selection.",
    ),
    "ledger": (
        "safeshare.cli.ledger",
        "ledger_app",
        "The release ledger: one hash-chained line per published release.",
    ),
    "certificate": (
        "safeshare.cli.certificate",
        "certificate_app",
        "The release certificate: printed to a PDF.",
    ),
}


class LazyGroup(TyperGroup):
    """The ``safeshare`` group: the groups of :data:`LAZY_GROUPS` are imported on first use.

    Listing them in ``safeshare --help`` needs only their name and one line; running one (or
    asking for its help) imports its module and builds its commands.
    """

    _listing = False

    def list_commands(self, ctx: Any) -> list[str]:
        names = list(super().list_commands(ctx))
        return names + [name for name in LAZY_GROUPS if name not in names]

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if cmd_name in LAZY_GROUPS and cmd_name not in self.commands:
            module, attribute, line = LAZY_GROUPS[cmd_name]
            if self._listing:  # the help's list of commands: a placeholder with the line
                return TyperGroup(name=cmd_name, help=line)
            sub = getattr(import_module(module), attribute)
            sub._add_completion = False  # as for a group added with add_typer (no completion options)
            group = typer.main.get_command(sub)
            group.name = cmd_name
            self.commands[cmd_name] = group
        return super().get_command(ctx, cmd_name)

    def format_help(self, ctx: Any, formatter: Any) -> None:
        self._listing = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self._listing = False


app = typer.Typer(
    name="safeshare",
    cls=LazyGroup,
    help="Release person-level health data with a measured, defensible re-identification risk.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

# The command groups, one module each (the order is the order of ``safeshare --help``).
anonymize_commands.register(app)  # anonymize, inspect, hierarchy check|build, flatten
experiment_commands.register(app)  # utility, sweep
attack_command.register(app)  # attack (issue 34)
app.add_typer(dp_app, name="dp")  # differential privacy under sampling (thesis 4.5)
# risk (issue 9), surveil (issue 10) and ledger (issue 20): LAZY_GROUPS
ui_command.register(app)  # the browser workbench (issue 23)


@app.command()
def version(quiet: QuietOption = False, as_json: JsonOption = False) -> None:
    """Print the version."""
    from safeshare import __version__

    emit({"version": __version__}, as_json, quiet, lambda: out.print(__version__))


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``safeshare`` command: its exit status (:func:`safeshare.app_runner.outcome`)."""

    def invoke() -> int:
        try:
            rv = app(args=argv, standalone_mode=False)
        except typer.Exit as exc:
            return int(exc.exit_code or 0)  # a command's own status (ledger verify: 1)
        except typer.Abort:
            raise Interrupted(signal.SIGINT) from None
        except Exception as exc:
            # Usage errors (unknown option, missing argument, bad value) come from the
            # click layer under Typer; recognize them by interface, not by import path.
            if getattr(exc, "exit_code", None) == 2 and hasattr(exc, "format_message"):
                # click >= 8.2 prints the help of a bare group and raises with an empty message
                message = " ".join(str(exc.format_message()).split()) or "missing command (see above)"
                raise InputError(message) from None
            raise
        # Without standalone mode Typer returns the exit status of an Exit it caught (130 for
        # a KeyboardInterrupt) instead of raising; the commands themselves return None.
        if isinstance(rv, int) and not isinstance(rv, bool) and rv:
            if rv == 128 + signal.SIGINT:
                raise Interrupted(signal.SIGINT)
            return rv
        return 0

    result = run_guarded(invoke, CLI_VOICE, debug=bool(os.environ.get("SAFESHARE_DEBUG")))
    if result.line is not None:
        sys.stderr.write(result.line + "\n")
        sys.stderr.flush()
    return result.status


if __name__ == "__main__":
    sys.exit(main())
