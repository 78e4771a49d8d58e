"""The HTML report of an anonymization run: one self-contained file."""

from __future__ import annotations

from html import escape
from typing import Any

from safeshare.report.svg import CSS, bar_chart, line_chart

METRIC_TITLES = {
    "prec": "Prec (Sweeney)",
    "dm_star": "DM* (sum of squared class sizes)",
    "entropy": "Non-uniform entropy",
}


def _row(*cells: object, header: bool = False, numeric: tuple[int, ...] = ()) -> str:
    tag = "th" if header else "td"
    out = []
    for i, c in enumerate(cells):
        cls = ' class="num"' if i in numeric else ""
        out.append(f"<{tag}{cls}>{escape(str(c))}</{tag}>")
    return "<tr>" + "".join(out) + "</tr>"


def _num(v: Any, digits: int = 6) -> str:
    if v is None:
        return "–"
    if isinstance(v, int):
        return f"{v:,}"
    return f"{float(v):.{digits}g}"


def _extra_privacy_rows(doc: dict[str, Any]) -> list[str]:
    """Rows for Inverse OLA's k and the m-concealing measure, when the report has them."""
    rows = []
    if doc.get("k_achieved") is not None:
        rows.append(
            _row(
                "Inverse OLA (thesis §4.4)",
                f"largest achievable k = {doc['k_achieved']:,} within normalized loss {doc.get('max_loss')}",
            )
        )
    if doc.get("inverse_m") is not None:
        detail = doc.get("m_concealing", {})
        known = ", ".join(f"{c} p={p:g}" for c, p in detail.get("knowledge", {}).items())
        rows.append(
            _row(
                "m-concealing (thesis §5.2)",
                f"m = {doc['m']:.4g}, 1/m = {doc['inverse_m']:.4g} "
                f"({detail.get('records_at_max', 0):,} records at m; "
                f"adversary knows {known or 'nothing more'})",
            )
        )
    return rows


def render_report(doc: dict[str, Any]) -> str:
    """Render ``report.json``'s content as a standalone HTML page."""
    verified = bool(doc.get("verified"))
    badge = (
        '<span class="badge ok">verified</span>'
        if verified
        else '<span class="badge fail">not verified</span>'
    )
    privacy = doc.get("privacy", {})
    models = ", ".join(
        f"{name} ({', '.join(f'{k}={v}' for k, v in params.items())})"
        for name, params in privacy.get("models", {}).items()
    )
    parts = [
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>",
        "<title>safeshare report</title>",
        f"<style>{CSS}</style></head><body>",
        f"<h1>safeshare release report {badge}</h1>",
        f"<p class='muted'>{escape(str(doc.get('created', '')))} · safeshare "
        f"{escape(str(doc.get('safeshare_version', '')))} · engine {escape(str(doc.get('engine', '')))} · "
        f"input <code>{escape(str(doc.get('input', '')))}</code></p>",
        "<h2>Privacy</h2><table>",
        _row("privacy models", models),
        _row("suppression limit", f"{100 * float(privacy.get('max_suppression', 0)):.4g}% of records"),
        _row(
            "records",
            f"{doc['records_in']:,} in · {doc['suppressed_records']:,} suppressed · "
            f"{doc['records_out']:,} released",
        ),
        _row(
            "equivalence classes",
            f"{doc['equivalence_classes']:,} (smallest {doc['min_class_size']:,} records)",
        ),
        _row(
            "re-identification risk (prosecutor)",
            f"at most 1/{doc['min_class_size']:,} = {1 / max(doc['min_class_size'], 1):.4f} per record; "
            f"average {doc['equivalence_classes'] / max(doc['records_out'], 1):.4f}",
        ),
        *_extra_privacy_rows(doc),
        "</table>",
        "<h2>Chosen generalization</h2>",
        "<table>",
        _row("quasi-identifier", "level", "of", "labels released", header=True, numeric=(1, 2)),
    ]
    for g in doc.get("generalization", []):
        examples = ", ".join(g["examples"]) + (", ..." if g["labels"] > len(g["examples"]) else "")
        parts.append(_row(g["qi"], g["level"], g["height"], f"{g['labels']}: {examples}", numeric=(1, 2)))
    parts.append("</table>")
    parts.append(
        f"<p class='muted'>Found by {escape(str(doc.get('algorithm')))}: "
        f"{doc.get('checked_nodes', 0):,} of {doc.get('lattice_size', 0):,} lattice nodes checked, "
        f"{doc.get('minimal_nodes', 0):,} minimal qualifying nodes compared.</p>"
    )
    loss = doc.get("loss", {})
    parts += [
        "<h2>Information loss</h2><table>",
        _row("metric", "value", "normalized [0, 1]", header=True, numeric=(1, 2)),
    ]
    for key, title in METRIC_TITLES.items():
        if key in loss:
            mark = " (optimized)" if key == doc.get("metric") else ""
            parts.append(
                _row(title + mark, _num(loss[key]), _num(loss.get(f"{key}_normalized"), 4), numeric=(1, 2))
            )
    if "dm_star_minus_bottom" in loss:
        parts.append(
            _row(
                "DM* minus its value on the original data",
                _num(loss["dm_star_minus_bottom"]),
                "",
                numeric=(1,),
            )
        )
    parts.append("</table>")
    hist = doc.get("class_size_histogram", [])
    if hist:
        parts.append("<h2>Equivalence class sizes</h2>")
        parts.append(
            bar_chart(
                [h["label"] for h in hist],
                [h["classes"] for h in hist],
                "released classes by size (records)",
                "classes",
            )
        )
    tradeoff = doc.get("tradeoff")
    if tradeoff:
        parts.append("<h2>Suppression versus information loss</h2>")
        xs = [100 * float(t["max_suppression"]) for t in tradeoff]
        ys = [t["information_loss_normalized"] for t in tradeoff]
        chosen = next((i for i, t in enumerate(tradeoff) if t.get("chosen")), None)
        parts.append(
            line_chart(
                xs,
                ys,
                f"optimal node's normalized {doc.get('metric')} by suppression limit",
                "suppression limit (%)",
                "normalized loss",
                highlight=chosen,
            )
        )
        parts.append("<table>")
        parts.append(
            _row("limit", "loss (normalized)", "suppressed", "levels", header=True, numeric=(0, 1, 2))
        )
        for t in tradeoff:
            levels = ", ".join(f"{q}={lv}" for q, lv in t.get("levels", {}).items()) or "no solution"
            label = f"{100 * float(t['max_suppression']):.4g}%" + (" ◀ chosen" if t.get("chosen") else "")
            parts.append(
                _row(
                    label,
                    _num(t.get("information_loss_normalized"), 4),
                    f"{t.get('suppressed_records', 0):,}",
                    levels,
                    numeric=(0, 1, 2),
                )
            )
        parts.append("</table>")
    ver = doc.get("verification", {})
    parts += [
        "<h2>Independent verification</h2>",
        "<p>The written release was re-read from disk and re-checked with DuckDB SQL, "
        "independently of the search: columns, quasi-identifier labels, class sizes and suppression.</p>",
        "<table>",
        _row("passed", ver.get("passed")),
        _row("records in the release", f"{ver.get('records_out', 0):,}"),
        _row("smallest class in the release", f"{ver.get('min_class_size', 0):,}"),
        _row("failures", "; ".join(ver.get("failures", [])) or "none"),
        "</table>",
        "<h2>Timings</h2><table>",
        _row("phase", "seconds", header=True, numeric=(1,)),
    ]
    for k, v in doc.get("elapsed_s", {}).items():
        parts.append(_row(k, f"{float(v):.3f}", numeric=(1,)))
    parts.append("</table></body></html>\n")
    return "".join(parts)
