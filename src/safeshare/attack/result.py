"""One attack's result: what report.json, report.html, the terminal and the Python API show.

:class:`AttackResult` holds every figure once; :meth:`AttackResult.to_report` is report.json (and
the section another report embeds), :meth:`AttackResult.rows` the terminal's table, and
:func:`render_html` report.html, all from that one dictionary. Nothing in it comes from the
frame but counts and rates: no value, no identifier, no row of it (tests feed a frame of unique
markers and search every output file for them).
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from safeshare.app_runner import to_json


@dataclass(frozen=True)
class AttackResult:
    """The attacks on one release (module docstring)."""

    release: str
    frame: str
    config: str
    quasi_identifiers: list[str]
    records: dict[str, Any]
    exact: dict[str, Any]
    estimate: dict[str, Any]
    linkage: dict[str, Any]
    residual: dict[str, Any]
    record_risk: dict[str, Any]
    notes: list[str] = field(default_factory=list)
    seed: int = 0
    #: where report.json and report.html were published (never in them)
    out: Path | None = None

    def to_report(self) -> dict[str, Any]:
        return {
            "attack": "re-identification attacks on a release with an identified frame",
            "release": self.release,
            "frame": self.frame,
            "configuration": self.config,
            "quasi_identifiers": self.quasi_identifiers,
            "seed": self.seed,
            "records": self.records,
            "exact_matching": self.exact,
            "estimated_B": self.estimate,
            "linkage": self.linkage,
            "residual_risks": self.residual,
            "record_risk": self.record_risk,
            "notes": self.notes,
        }

    def to_dict(self) -> dict[str, Any]:
        return self.to_report()

    def to_json(self) -> str:
        text: str = to_json(self.to_report(), indent=2)
        return text + "\n"

    def rows(self) -> list[tuple[str, str]]:
        """The terminal's table (measure, value), from :meth:`to_report`."""
        return report_rows(self.to_report())

    def to_html(self) -> str:
        return render_html(self.to_report())


def _rate(doc: dict[str, Any] | None) -> str:
    if not doc:
        return "not run"
    lo, hi = doc["interval"]
    return f"{doc['rate']:.4f} (95 % {lo:.4f}-{hi:.4f}; {doc['successes']:,} of {doc['attempts']:,})"


def report_rows(doc: dict[str, Any]) -> list[tuple[str, str]]:
    """(measure, value) rows of an attack report: the terminal and report.html's summary."""
    out: list[tuple[str, str]] = []
    rec = doc["records"]
    out.append(
        (
            "released rows / scored / frame records",
            f"{rec['release']:,} / {rec['scored']:,} / {rec['frame']:,}",
        )
    )
    ex = doc["exact_matching"]
    out.append(("exact matching: correct-match rate", _rate(ex.get("correct"))))
    out.append(("exact matching: expected rate", f"{ex['expected_rate']:.4f}"))
    est = doc["estimated_B"]
    if est.get("B_exact") is not None:
        out.append(("B exact (the frame is the population)", f"{est['B_exact']:.4f}"))
    if est.get("B") is not None:
        interval = est.get("interval")
        extra = f" (95 % {interval[0]:.4f}-{interval[1]:.4f})" if interval else ""
        out.append(
            (f"B estimated ({est['estimator']}, N = {est['population_size']:,})", f"{est['B']:.4f}{extra}")
        )
    out.append(("measured rate against B", est.get("verdict", "")))
    link = doc["linkage"]
    if link.get("correct"):
        out.append(("distance linkage: correct-match rate", _rate(link["correct"])))
    elif link.get("skipped"):
        out.append(("distance linkage", f"not run: {link['skipped']}"))
    residual = doc["residual_risks"]
    if "skipped" in residual:
        out.append(("residual risks", f"not run: {residual['skipped']}"))
    for name in ("singling_out", "singling_out_univariate", "linkability", "inference"):
        res = residual.get(name)
        if isinstance(res, dict) and "risk" in res:
            lo, hi = res["risk_interval"]
            out.append((f"{name} residual risk", f"{res['risk']:.4f} (95 % {lo:.4f}-{hi:.4f})"))
        elif isinstance(res, str):
            out.append((f"{name} residual risk", f"not run: {res}"))
    rr = doc["record_risk"]
    for kind in ("exact", "copula"):
        d = rr.get(kind)
        if isinstance(d, dict) and d.get("records"):
            out.append(
                (
                    f"record risk ({kind}): max / mean, above {d['threshold']:g}",
                    f"{d['max']:.4f} / {d['mean']:.4f}, {d['above_threshold']:,} records",
                )
            )
    return out


def render_html(doc: dict[str, Any]) -> str:
    """report.html: the summary table, every section's figures and the notes (escaped)."""
    e = html.escape
    rows = "".join(f"<tr><th>{e(k)}</th><td>{e(v)}</td></tr>" for k, v in report_rows(doc))
    notes = "".join(f"<li>{e(n)}</li>" for n in doc.get("notes", []))
    body = to_json(doc, indent=2)
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        f"<title>Attack on {e(str(doc['release']))}</title>"
        "<style>body{font-family:sans-serif;max-width:60em;margin:2em auto}th{text-align:left;"
        "padding-right:1em}td{font-variant-numeric:tabular-nums}pre{background:#f4f4f4;padding:1em;"
        "overflow:auto}</style></head><body>"
        f"<h1>Re-identification attacks on {e(str(doc['release']))}</h1>"
        f"<p>Frame: {e(str(doc['frame']))}; configuration: {e(str(doc['configuration']))}; "
        "quasi-identifiers: "
        f"{e(', '.join(doc['quasi_identifiers']))}; seed {e(str(doc['seed']))}.</p>"
        f"<table>{rows}</table><h2>Notes</h2><ul>{notes}</ul>"
        f"<h2>Every figure (report.json)</h2><pre>{e(body)}</pre></body></html>\n"
    )
