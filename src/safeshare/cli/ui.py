"""``safeshare ui``: the browser workbench (docs/ui.md). Parses and calls :func:`safeshare.ui.server.serve`;
the web stack is imported only when the command runs."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from safeshare.cli.common import JsonOption, QuietOption


def ui(
    port: Annotated[int, typer.Option("--port", help="Port to listen on (0: any free port).")] = 8765,
    host: Annotated[
        str, typer.Option("--host", help="Address to bind; anything but 127.0.0.1 prints a warning.")
    ] = "127.0.0.1",
    no_browser: Annotated[bool, typer.Option("--no-browser", help="Do not open a browser.")] = False,
    workdir: Annotated[
        Path, typer.Option("--workdir", help="Directory of the data files and projects (default: here).")
    ] = Path("."),
    max_upload: Annotated[
        int, typer.Option("--max-upload-mb", help="Largest upload, in MiB (default 4096).")
    ] = 4096,
    quiet: QuietOption = False,
    as_json: JsonOption = False,
) -> None:
    """A local browser workbench: data, privacy, run, explore, risk, release, surveillance."""
    from safeshare.errors import InputError
    from safeshare.ui.server import serve

    if not 0 <= port <= 65535:
        raise InputError(f"--port: expected 0..65535, got {port}")
    if max_upload < 1:
        raise InputError(f"--max-upload-mb: expected at least 1, got {max_upload}")
    serve(workdir, host, port, not no_browser, max_upload << 20, quiet=quiet, as_json=as_json)


def register(app: typer.Typer) -> None:
    app.command("ui")(ui)
