"""The release certificate as a PDF (issue 33): the page a privacy officer signs, printed.

The certificate page is rendered from report.json by the same template as report.html
(:func:`safeshare.report.html.render_report` with ``only_certificate``), so the PDF shows the same
figures and the same SHA-256 of the released files; headless Chromium prints it
(``--print-to-pdf``: no network, a throw-away profile). Chromium is found at
``$SAFESHARE_CHROMIUM``, else ``chromium`` / ``chromium-browser`` / ``google-chrome`` on the
``PATH``; without one the command says so (print report.html from a browser instead).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from safeshare.errors import InputError

#: How long Chromium may take to print the page (seconds).
PRINT_TIMEOUT = 120.0
BROWSERS = ("chromium", "chromium-browser", "google-chrome")


def find_chromium() -> Path | None:
    """The Chromium to print with (module docstring), or ``None``."""
    given = os.environ.get("SAFESHARE_CHROMIUM")
    if given:
        return Path(given) if Path(given).exists() else None
    for name in BROWSERS:
        found = shutil.which(name)
        if found:
            return Path(found)
    return None


def read_report(release_dir: Path) -> dict[str, Any]:
    """report.json of the release in ``release_dir`` (a clear error if it is not one)."""
    path = Path(release_dir) / "report.json"
    if not path.is_file():
        raise InputError(f"{release_dir}: no report.json (give the directory a release was published in)")
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"{path}: not a readable report ({exc})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("certificate"), dict):
        raise InputError(f"{path}: the report has no certificate (a release written by safeshare anonymize)")
    return doc


def certificate_pdf(release_dir: Path, target: Path, chromium: Path | None = None) -> Path:
    """Print the certificate of the release in ``release_dir`` to ``target`` (a PDF); returns it.

    Raises :class:`InputError` without report.json, without Chromium, when ``target`` is inside a
    directory that does not exist, or when Chromium fails or takes longer than
    :data:`PRINT_TIMEOUT`; ``target`` is then not written (Chromium prints into a temporary file
    that is moved into place)."""
    from safeshare.report.html import render_report

    doc = read_report(release_dir)
    browser = chromium or find_chromium()
    if browser is None:
        raise InputError(
            "no Chromium to print the certificate with (apt-get install chromium, or set "
            "SAFESHARE_CHROMIUM); report.html can be printed from any browser instead"
        )
    target = Path(target)
    if not target.parent.is_dir():
        raise InputError(f"{target}: its directory {target.parent} does not exist")
    with tempfile.TemporaryDirectory(prefix="safeshare-pdf-") as tmp:
        page = Path(tmp) / "certificate.html"
        page.write_text(render_report(doc, only_certificate=True), encoding="utf-8")
        printed = Path(tmp) / "certificate.pdf"
        args = [
            str(browser),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--no-pdf-header-footer",
            f"--user-data-dir={Path(tmp) / 'profile'}",
            f"--print-to-pdf={printed}",
            page.as_uri(),
        ]
        try:
            proc = subprocess.run(args, capture_output=True, text=True, timeout=PRINT_TIMEOUT, check=False)
        except subprocess.TimeoutExpired:
            late = f"Chromium took longer than {PRINT_TIMEOUT:.0f} s to print the certificate"
            raise InputError(late) from None
        if proc.returncode != 0 or not printed.is_file() or printed.stat().st_size == 0:
            last = (proc.stderr.strip().splitlines() or ["no message"])[-1]
            raise InputError(f"Chromium could not print the certificate (exit {proc.returncode}): {last}")
        shutil.move(str(printed), target)
    return target


__all__ = ["PRINT_TIMEOUT", "certificate_pdf", "find_chromium", "read_report"]
