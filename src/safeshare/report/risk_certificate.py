"""The certificate's risk rows in report.html (issue 33): N with its source, the sensitivity band,
the estimators' spread with their caveats, and the average-vs-maximum sentence.

A view of report.json's ``certificate`` keys written by
:func:`safeshare.workflows.certificate.risk_certificate`; every figure is marked with its key
(:func:`safeshare.report.html.figure`), so that a reader or a test can trace it to report.json.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from markupsafe import Markup

#: How a figure of report.json is marked: :func:`safeshare.report.html.figure` (doc, key, kind).
Figure = Callable[[dict[str, Any], str, str], Markup]


def risk_certificate_rows(doc: dict[str, Any], figure: Figure) -> list[tuple[str, Any]]:
    """The rows (what, value) of the certificate's risk block, figures marked by ``figure``; none
    without a certificate."""

    def _fig(doc: dict[str, Any], path: str, kind: str = "risk") -> Markup:
        return figure(doc, path, kind)

    cert = doc.get("certificate")
    if not isinstance(cert, dict):
        return []
    rows: list[tuple[str, Any]] = []
    population = cert.get("population")
    if isinstance(population, dict):
        how = (
            "assumed: no N was given, the input is taken as the whole population"
            if population.get("assumed")
            else Markup("source: {}").format(population.get("source"))
        )
        rows.append(
            ("population N", Markup("{} ({})").format(_fig(doc, "certificate.population.size", "count"), how))
        )
    kind = cert.get("risk_kind")
    if isinstance(kind, dict) and kind.get("text"):
        rows.append(("average or maximum", str(kind["text"])))
    derived = cert.get("derived_threshold")
    if isinstance(derived, dict) and derived.get("text"):
        rows.append(("threshold of the context", f"{derived['text']} ({derived['source']})"))
    band = cert.get("sensitivity")
    if isinstance(band, dict):
        points = Markup("; ").join(
            Markup("N = {}: B = {}").format(
                _fig(doc, f"certificate.sensitivity.points.{i}.N", "count"),
                _fig(doc, f"certificate.sensitivity.points.{i}.B")
                if p.get("B") is not None
                else Markup("no estimate ({})").format(p.get("reason") or "–"),
            )
            for i, p in enumerate(band.get("points") or [])
        )
        crossing = band.get("crossing") or {}
        rows.append(
            (
                "sensitivity to N",
                Markup("{} (estimator {}, B in {}); crossing of {}: {}{}").format(
                    points,
                    band.get("estimator"),
                    band.get("unit"),
                    _fig(doc, "certificate.sensitivity.threshold"),
                    crossing.get("text") or "–",
                    Markup("; {}").format(band["note"]) if band.get("note") else "",
                ),
            )
        )
    spread = cert.get("estimators")
    if isinstance(spread, dict):
        items = []
        for i, row in enumerate(spread.get("rows") or []):
            value = (
                _fig(doc, f"certificate.estimators.rows.{i}.B")
                if row.get("B") is not None
                else Markup("no estimate ({})").format(row.get("reason") or "–")
            )
            marks = " (used)" if row.get("used") else ""
            marks += " (above the threshold)" if row.get("above_threshold") else ""
            caveat = Markup(" – {}").format(row["caveat"]) if row.get("caveat") else ""
            items.append(Markup("{}{}: {}{}").format(row.get("estimator"), marks, value, caveat))
        rows.append(
            (
                "estimators at the chosen node",
                Markup(
                    "from {} to {} (spread {}) at n/N = {} (band {}); recommended there: {}<ul>{}</ul>"
                ).format(
                    _fig(doc, "certificate.estimators.min"),
                    _fig(doc, "certificate.estimators.max"),
                    _fig(doc, "certificate.estimators.spread"),
                    _fig(doc, "certificate.estimators.sampling_fraction"),
                    spread.get("band"),
                    spread.get("recommended"),
                    Markup("").join(Markup("<li>{}</li>").format(item) for item in items),
                ),
            )
        )
    return rows


def risk_certificate_text(doc: dict[str, Any]) -> list[tuple[str, str]]:
    """The same block as plain text rows for the terminal (``safeshare anonymize``): N and its
    source, B at N/2, N, 2N with the crossing, the estimators' range; none without a certificate."""
    from safeshare.figures import count, number

    cert = doc.get("certificate")
    if not isinstance(cert, dict):
        return []
    rows: list[tuple[str, str]] = []
    population = cert.get("population")
    if isinstance(population, dict) and population.get("size") is not None:
        how = (
            "assumed: the input is the whole population"
            if population.get("assumed")
            else f"source: {population.get('source')}"
        )
        rows.append(("population N", f"{count(population['size'])} ({how})"))
    band = cert.get("sensitivity")
    if isinstance(band, dict):
        shown = ", ".join(
            f"N = {count(p['N'])}: {'n/a' if p.get('B') is None else number(p['B'])}"
            for p in band.get("points") or []
        )
        crossing = (band.get("crossing") or {}).get("text") or ""
        rows.append(("B as N changes", f"{shown} ({band.get('estimator')}); {crossing}"))
    spread = cert.get("estimators")
    if isinstance(spread, dict) and spread.get("min") is not None:
        above = ", ".join(spread.get("above_threshold") or []) or "none"
        rows.append(
            (
                "estimators",
                f"B from {number(spread['min'])} to {number(spread['max'])} at n/N = "
                f"{number(spread['sampling_fraction'])}; above {number(spread['threshold'])}: {above}; "
                f"recommended there: {spread.get('recommended')}",
            )
        )
    return rows


__all__ = ["risk_certificate_rows", "risk_certificate_text"]
