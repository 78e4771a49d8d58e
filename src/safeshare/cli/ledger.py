"""``safeshare ledger``: the release ledger (issue 20).

``safeshare ledger verify PATH`` re-reads every entry of the ledger, checks the hash chain
and the SHA-256 of the recorded files that are still there
(:func:`safeshare.workflows.ledger.verify_ledger`): exit 0 when everything holds,
:data:`BROKEN` (3) naming the first broken entry (an edited, removed or truncated line, a changed
file: tampering or damage, told apart from an error of the command), 2 when the ledger cannot be
read (missing, not a regular file).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from safeshare.cli.common import JsonOption, QuietOption, emit
from safeshare.console import out

#: The exit status of ``ledger verify`` when the chain or a recorded file does not hold.
BROKEN = 3

ledger_app = typer.Typer(
    help="The release ledger: one hash-chained line per published release.", no_args_is_help=True
)


@ledger_app.callback()
def ledger_group() -> None:
    """The release ledger: one hash-chained line per published release.

    A callback keeps ``ledger`` a group: Typer runs a one-command app as that command, which
    made ``safeshare ledger verify PATH`` read ``verify`` as the path.
    """


@ledger_app.command("verify")
def verify_command(
    path: Annotated[Path, typer.Argument(help="The ledger file (JSON lines).")],
    quiet: QuietOption = False,
    as_json: JsonOption = False,
) -> None:
    """Check the ledger's hash chain and the files it records: exit 0 if all hold, 3 if broken."""
    from safeshare.workflows.ledger import verify_ledger

    result = verify_ledger(path)
    emit(result.to_dict(), as_json, quiet, lambda: out.print(result.summary(), soft_wrap=True))
    if not result.ok:
        raise typer.Exit(BROKEN)
