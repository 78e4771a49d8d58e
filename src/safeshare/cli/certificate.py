"""``safeshare certificate pdf RELEASE_DIR``: the release certificate printed to a PDF (issue 33).

The page is report.html's certificate, rendered from the release's report.json by the same
template (:mod:`safeshare.report.pdf`), so the PDF carries the same figures and SHA-256 digests.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from safeshare.cli.common import JsonOption, QuietOption, emit
from safeshare.console import out

certificate_app = typer.Typer(help="The release certificate: printed to a PDF.", no_args_is_help=True)


@certificate_app.callback()
def certificate_group() -> None:
    """The release certificate: printed to a PDF (a callback keeps ``certificate`` a group)."""


@certificate_app.command("pdf")
def pdf_command(
    release_dir: Annotated[Path, typer.Argument(help="The directory a release was published in.")],
    out_file: Annotated[
        Path | None,
        typer.Option("--out", help="The PDF to write (default: certificate.pdf in RELEASE_DIR)."),
    ] = None,
    chromium: Annotated[
        Path | None,
        typer.Option(
            "--chromium",
            help="The Chromium to print with (default: SAFESHARE_CHROMIUM, then chromium on PATH).",
        ),
    ] = None,
    quiet: QuietOption = False,
    as_json: JsonOption = False,
) -> None:
    """Print the certificate of a published release to a PDF with headless Chromium."""
    from safeshare import api

    target = api.certificate_pdf(
        release_dir, out_file or Path(release_dir) / "certificate.pdf", chromium=chromium
    )
    emit({"pdf": str(target)}, as_json, quiet, lambda: out.print(f"certificate printed to {target}"))
