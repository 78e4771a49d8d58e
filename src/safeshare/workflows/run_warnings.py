"""A run's disclosure warnings beside the Run and Release buttons, and what each code means.

The warnings are the run's own (report.json's ``warnings: [{code, columns, value, message}]``,
docs/report.md "Disclosure warnings"): nothing is computed here. Where the report's certificate
lists them with the headline check of the certificate issue (``certificate.warnings[]`` with
``contradicts``, ``reason``, ``acknowledged``, ``acknowledged_by``), each shown warning carries
those marks: a warning that contradicts the headline and is not acknowledged is what the
custodian has to answer before publishing.

What a code means is said once, in the documentation: :func:`explanations` reads the bullet of
each code from docs/report.md's "Disclosure warnings" section where the documentation is beside
the package (a source checkout), and otherwise the one-line summary of the code's table in
:mod:`safeshare.warning_codes`. The workbench (``safeshare ui``, through
:mod:`safeshare.workflows.workbench`) shows them on its ``/help/warnings`` page, one anchor a
code, and links each shown warning to its code's anchor.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

from safeshare import warning_codes
from safeshare.warning_codes import WarningCode
from safeshare.workflows.acknowledgement import WarningMark

#: docs/report.md of a source checkout (src/safeshare/workflows/ -> the repository's docs/)
REPORT_DOCS = Path(__file__).resolve().parents[3] / "docs" / "report.md"
SECTION = "## Disclosure warnings"


def run_warnings(report: Mapping[str, Any] | None) -> list[WarningMark]:
    """The warnings of a run's report.json, marked from its certificate's entries of the same
    code (and message, where two warnings share a code)."""
    if not report:
        return []
    certificate = report.get("certificate") if isinstance(report.get("certificate"), Mapping) else {}
    marks = certificate.get("warnings") if isinstance(certificate, Mapping) else None
    entries = [m for m in marks if isinstance(m, Mapping)] if isinstance(marks, list) else None
    shown = []
    for w in report.get("warnings") or []:
        if not isinstance(w, Mapping):
            continue
        code, message = str(w.get("code", "")), str(w.get("message", ""))
        mark: Mapping[str, Any] | None = None
        if entries is not None:
            same = [m for m in entries if m.get("code") == code]
            mark = next((m for m in same if m.get("message") == message), same[0] if same else None)
        columns = w.get("columns") or []
        shown.append(
            WarningMark(
                code=code,
                message=message,
                columns=tuple(str(c) for c in columns) if isinstance(columns, list) else (),
                contradicts=None if entries is None else bool(mark and mark.get("contradicts")),
                reason=str((mark or {}).get("reason") or ""),
                acknowledged=bool(mark and mark.get("acknowledged")),
                acknowledged_by=str((mark or {}).get("acknowledged_by") or ""),
            )
        )
    return shown


def _table_summaries() -> dict[str, str]:
    """The one-line summaries of :mod:`safeshare.warning_codes`' table (its docstring)."""
    summaries: dict[str, str] = {}
    current = None
    for line in (warning_codes.__doc__ or "").splitlines():
        found = re.match(r"``([a-z0-9-]+)``\s+(.*)", line)
        if found and found.group(1) in WarningCode._value2member_map_:
            current = found.group(1)
            summaries[current] = found.group(2).strip()
        elif current and line.startswith(" ") and line.strip() and not line.strip().startswith("="):
            summaries[current] += " " + line.strip()
        else:
            current = None
    return summaries


def _doc_bullets(text: str) -> dict[str, str]:
    """Each code's bullet of the "Disclosure warnings" section of docs/report.md: a bullet
    ``* **`code`** ...`` up to the next bullet, blank line or heading; a bullet naming several
    codes in bold (``**`a`** (or **`b`** ...)``) explains each of them."""
    start = text.find(SECTION)
    if start < 0:
        return {}
    body = text[start + len(SECTION) :]
    end = re.search(r"^#{2,3} ", body, re.M)
    body = body[: end.start()] if end else body
    bullets: dict[str, str] = {}
    for bullet in re.findall(r"^\* (\*\*`[a-z0-9-]+`\*\*.*?)(?=^\* |^\s*$|\Z)", body, re.M | re.S):
        flat = " ".join(bullet.split())
        for code in re.findall(r"\*\*`([a-z0-9-]+)`\*\*", flat):
            if code in WarningCode._value2member_map_:
                bullets.setdefault(code, flat)
    return bullets


@lru_cache(maxsize=1)
def _explanations(docs: Path, mtime: float) -> dict[str, tuple[str, str]]:
    bullets = _doc_bullets(docs.read_text(encoding="utf-8")) if mtime else {}
    summaries = _table_summaries()
    return {c.value: (summaries.get(c.value, ""), bullets.get(c.value, "")) for c in WarningCode}


def explanations(docs: Path = REPORT_DOCS) -> dict[str, tuple[str, str]]:
    """Every code's ``(summary, documentation)``: the table's line of
    :mod:`safeshare.warning_codes` and docs/report.md's bullet ("" where there is none)."""
    return _explanations(docs, docs.stat().st_mtime if docs.is_file() else 0.0)


__all__ = ["REPORT_DOCS", "explanations", "run_warnings"]
