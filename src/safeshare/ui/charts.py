"""Charts of the workbench that the report has not: the PK band plot and a column's records
before and after (rendering only: every figure is given, none is computed)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from safeshare.figures import count, percent

COLORS = ("#3a6fd8", "#d8453a", "#3aa657", "#e0a200", "#7a4fd8", "#1d9bb0")


def bands_svg(
    periods: Sequence[str],
    bands: Sequence[Mapping[str, Any]],
    title: str,
    width: int = 900,
    height: int = 320,
) -> str:
    """Mean and 95% band of PK per period, one colour per policy (``bands``: policy, mean, lower, upper)."""
    left, right, top, bottom = 60, 150, 30, 40
    plot_w, plot_h = width - left - right, height - top - bottom
    n = max(len(periods), 2)
    ymax = max([float(v) for b in bands for v in b["upper"]] + [1e-9])

    def x(i: int) -> float:
        return left + plot_w * i / (n - 1)

    def y(v: float) -> float:
        return top + plot_h - plot_h * float(v) / ymax

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
        f'aria-label="{escape(title)}" data-testid="pk-bands">',
        f'<text x="{left + plot_w / 2}" y="18" text-anchor="middle" class="chart-title">'
        f"{escape(title)}</text>",
        f'<line x1="{left}" y1="{top + plot_h}" x2="{left + plot_w}" y2="{top + plot_h}" class="axis"/>',
        f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + plot_h}" class="axis"/>',
    ]
    for t in range(5):
        v = ymax * t / 4
        parts.append(f'<text x="{left - 6}" y="{y(v) + 4:.1f}" text-anchor="end" class="tick">{v:.3g}</text>')
        parts.append(f'<line x1="{left}" y1="{y(v):.1f}" x2="{left + plot_w}" y2="{y(v):.1f}" class="grid"/>')
    for i in range(0, len(periods), max(1, len(periods) // 8)):
        parts.append(
            f'<text x="{x(i):.1f}" y="{top + plot_h + 14}" text-anchor="middle" class="tick">'
            f"{escape(periods[i])}</text>"
        )
    for j, band in enumerate(bands):
        color = COLORS[j % len(COLORS)]
        upper = " ".join(f"{x(i):.1f},{y(v):.1f}" for i, v in enumerate(band["upper"]))
        lower = " ".join(f"{x(i):.1f},{y(v):.1f}" for i, v in reversed(list(enumerate(band["lower"]))))
        mean = " ".join(f"{x(i):.1f},{y(v):.1f}" for i, v in enumerate(band["mean"]))
        parts.append(f'<polygon points="{upper} {lower}" fill="{color}" fill-opacity="0.18" stroke="none"/>')
        parts.append(f'<polyline points="{mean}" fill="none" stroke="{color}" stroke-width="1.5"/>')
        ly = top + 14 + 16 * j
        parts.append(f'<rect x="{left + plot_w + 12}" y="{ly - 9}" width="10" height="10" fill="{color}"/>')
        parts.append(
            f'<text x="{left + plot_w + 26}" y="{ly}" class="tick">{escape(str(band["policy"]))}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


#: Characters of a category's label drawn beside its bars (the whole label is in its <title>).
LABEL_CHARS = 22


def before_after_svg(column: str, rows: Sequence[Mapping[str, Any]], width: int = 440) -> str:
    """A column's categories as horizontal bars, one row each: the records of the input (a light
    bar) and the released ones over it (a dark bar). ``rows``: ``label``, ``before``, ``after``,
    ``lost`` (the report's figures); an accessible image (``role="img"``, its ``aria-label`` and
    ``<title>`` say what it shows; each row's ``<title>`` gives its figures)."""
    left, right, top, row_h = 150, 12, 30, 14
    plot_w = width - left - right
    height = top + row_h * max(len(rows), 1) + 8
    vmax = max([float(r["before"]) for r in rows] + [1.0])
    name = (
        f"{column}: records in the input (light bar) and released (dark bar) for each of "
        f"{len(rows)} rows of the table below"
    )
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
        f'aria-label="{escape(name)}" class="before-after" data-testid="chart-{escape(column)}">',
        f"<title>{escape(name)}</title>",
        f'<rect x="{left}" y="6" width="10" height="10" class="before"/>',
        f'<text x="{left + 14}" y="15" class="tick">input</text>',
        f'<rect x="{left + 60}" y="6" width="10" height="10" class="after"/>',
        f'<text x="{left + 74}" y="15" class="tick">released</text>',
    ]
    for i, r in enumerate(rows):
        y = top + i * row_h
        label = str(r["label"])
        short = label if len(label) <= LABEL_CHARS else label[: LABEL_CHARS - 1] + "…"
        before, after = float(r["before"]), float(r["after"])
        tip = (
            f"{label}: {count(int(before))} records in the input, {count(int(after))} released "
            f"({percent(float(r['lost']))} lost)"
        )
        parts.append(f"<g><title>{escape(tip)}</title>")
        parts.append(
            f'<text x="{left - 6}" y="{y + row_h - 4}" text-anchor="end" class="tick">{escape(short)}</text>'
        )
        parts.append(
            f'<rect x="{left}" y="{y + 2}" width="{plot_w * before / vmax:.1f}" height="{row_h - 4}" '
            'class="before"/>'
        )
        parts.append(
            f'<rect x="{left}" y="{y + 4}" width="{plot_w * after / vmax:.1f}" height="{row_h - 8}" '
            'class="after"/>'
        )
        parts.append("</g>")
    parts.append("</svg>")
    return "".join(parts)


def risk_bins_svg(bins: Sequence[Mapping[str, Any]], threshold: float | None, width: int = 520) -> str:
    """The records by prosecutor risk: one horizontal bar per class-size bin of the report
    (``label``, ``records``, ``classes``, ``risk`` = 1 / its smallest class size), the riskiest
    first; a bin whose risk exceeds ``threshold`` is drawn as such (``class="above"``). An
    accessible image: its ``aria-label`` and ``<title>`` say what it shows, each bar's ``<title>``
    its figures."""
    shown = [b for b in bins if b["records"]]
    left, right, top, row_h = 170, 60, 30, 16
    plot_w = width - left - right
    height = top + row_h * max(len(shown), 1) + 8
    vmax = max([float(b["records"]) for b in shown] + [1.0])
    name = "released records by the size of their class (prosecutor risk 1 / size), the riskiest first" + (
        f"; bars above the threshold {threshold:g} are marked" if threshold is not None else ""
    )
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
        f'aria-label="{escape(name)}" class="before-after" data-testid="risk-distribution">',
        f"<title>{escape(name)}</title>",
        f'<text x="{left}" y="15" class="tick">'
        "records in classes of each size (risk at most 1 / size)</text>",
    ]
    for i, b in enumerate(shown):
        y = top + i * row_h
        risk = float(b["risk"])
        above = threshold is not None and risk > threshold
        tip = (
            f"classes of {b['label']} records: {count(int(b['classes']))} classes, "
            f"{count(int(b['records']))} records, prosecutor risk at most {risk:.3g}"
            + (" (above the threshold)" if above else "")
        )
        mark, kind = (' data-above="1"', "above") if above else ("", "after")
        parts.append(f'<g data-risk="{risk:.6g}"{mark}><title>{escape(tip)}</title>')
        parts.append(
            f'<text x="{left - 6}" y="{y + row_h - 4}" text-anchor="end" class="tick">'
            f"{escape(str(b['label']))} (≤ {risk:.2g})</text>"
        )
        parts.append(
            f'<rect x="{left}" y="{y + 2}" width="{plot_w * float(b["records"]) / vmax:.1f}" '
            f'height="{row_h - 4}" class="{kind}"/>'
        )
        parts.append(
            f'<text x="{left + plot_w * float(b["records"]) / vmax + 4:.1f}" y="{y + row_h - 4}" '
            f'class="tick">{count(int(b["records"]))}</text>'
        )
        parts.append("</g>")
    parts.append("</svg>")
    return "".join(parts)


__all__ = ["bands_svg", "before_after_svg", "risk_bins_svg"]
