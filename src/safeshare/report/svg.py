"""Small, dependency-free SVG charts for the HTML reports."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape


def bar_chart(
    labels: Sequence[str],
    values: Sequence[float],
    title: str,
    y_label: str,
    width: int = 640,
    height: int = 260,
) -> str:
    """A vertical bar chart as an inline ``<svg>`` element."""
    left, right, top, bottom = 60, 10, 30, 50
    plot_w, plot_h = width - left - right, height - top - bottom
    vmax = max([float(v) for v in values] + [1.0])
    n = max(len(values), 1)
    bar_w = plot_w / n
    parts = _frame(width, height, title, (left, top, plot_w, plot_h), vmax, y_label)
    for i, (label, value) in enumerate(zip(labels, values, strict=True)):
        h = plot_h * float(value) / vmax
        x = left + i * bar_w + bar_w * 0.1
        parts.append(
            f'<rect x="{x:.1f}" y="{top + plot_h - h:.1f}" width="{bar_w * 0.8:.1f}" height="{h:.1f}" '
            f'class="bar"><title>{escape(label)}: {_fmt(float(value))}</title></rect>'
        )
        tx, ty = x + bar_w * 0.4, top + plot_h + 12
        parts.append(
            f'<text x="{tx:.1f}" y="{ty}" text-anchor="end" transform="rotate(-35 {tx:.1f} {ty})" '
            f'class="tick">{escape(label)}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def line_chart(
    xs: Sequence[float],
    ys: Sequence[float | None],
    title: str,
    x_label: str,
    y_label: str,
    highlight: int | None = None,
    width: int = 640,
    height: int = 260,
) -> str:
    """A line chart with markers as an inline ``<svg>``; ``None`` values are skipped."""
    left, right, top, bottom = 60, 20, 30, 50
    plot_w, plot_h = width - left - right, height - top - bottom
    pts = [(float(x), float(y)) for x, y in zip(xs, ys, strict=True) if y is not None]
    xmax = max([x for x, _ in pts] + [1e-9])
    ymax = max([y for _, y in pts] + [1e-9])

    def px(x: float) -> float:
        return left + plot_w * x / xmax

    def py(y: float) -> float:
        return top + plot_h - plot_h * y / ymax

    parts = _frame(width, height, title, (left, top, plot_w, plot_h), ymax, y_label, x_label)
    for x, _ in pts:
        parts.append(
            f'<text x="{px(x)}" y="{top + plot_h + 14}" text-anchor="middle" class="tick">{_fmt(x)}</text>'
        )
    if pts:
        path = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in pts)
        parts.append(f'<polyline points="{path}" class="line"/>')
    for i, (x, y) in enumerate(pts):
        cls = "dot chosen" if highlight is not None and i == highlight else "dot"
        parts.append(
            f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="4" class="{cls}">'
            f"<title>{_fmt(x)}: {_fmt(y)}</title></circle>"
        )
    parts.append("</svg>")
    return "".join(parts)


def _frame(
    width: int,
    height: int,
    title: str,
    plot: tuple[float, float, float, float],
    ymax: float,
    y_label: str,
    x_label: str | None = None,
) -> list[str]:
    """The opening ``<svg>``, title, axes, axis labels and five y ticks with grid lines.

    ``plot`` is ``(left, top, width, height)`` of the plotting area; y runs from 0 to ``ymax``.
    """
    left, top, plot_w, plot_h = plot
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'role="img" aria-label="{escape(title)}">',
        f'<text x="{width / 2}" y="18" text-anchor="middle" class="chart-title">{escape(title)}</text>',
        f'<line x1="{left}" y1="{top + plot_h}" x2="{left + plot_w}" y2="{top + plot_h}" class="axis"/>',
        f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + plot_h}" class="axis"/>',
    ]
    if x_label is not None:
        parts.append(
            f'<text x="{left + plot_w / 2}" y="{height - 8}" text-anchor="middle" class="axis-label">'
            f"{escape(x_label)}</text>"
        )
    parts.append(
        f'<text x="14" y="{top + plot_h / 2}" transform="rotate(-90 14 {top + plot_h / 2})" '
        f'text-anchor="middle" class="axis-label">{escape(y_label)}</text>'
    )
    for tick in range(5):
        y = top + plot_h - plot_h * tick / 4
        parts.append(
            f'<text x="{left - 6}" y="{y + 4}" text-anchor="end" class="tick">{_fmt(ymax * tick / 4)}</text>'
        )
        parts.append(f'<line x1="{left}" y1="{y}" x2="{left + plot_w}" y2="{y}" class="grid"/>')
    return parts


def _fmt(v: float) -> str:
    if v == 0:
        return "0"
    if abs(v) >= 1e6 or abs(v) < 1e-3:
        return f"{v:.2e}"
    if abs(v) >= 100:
        return f"{v:,.0f}"
    return f"{v:.3g}"


CSS = """
body { font-family: system-ui, -apple-system, Segoe UI, Roboto, sans-serif; margin: 2em auto;
       max-width: 980px; color: #1d2433; line-height: 1.45; padding: 0 1em; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; } h2 { font-size: 1.2em; margin-top: 1.8em;
     border-bottom: 1px solid #dde3ee; padding-bottom: 0.2em; }
.badge { display: inline-block; padding: 0.15em 0.6em; border-radius: 1em; font-size: 0.85em;
         font-weight: 600; } .ok { background: #dff5e3; color: #17612b; }
.fail { background: #fde2e1; color: #8b1a13; }
table { border-collapse: collapse; margin: 0.6em 0; } th, td { padding: 0.3em 0.8em;
        border-bottom: 1px solid #e8ecf3; text-align: left; } th { background: #f4f6fa; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
.muted { color: #5d6b82; font-size: 0.9em; } code { background: #f4f6fa; padding: 0 0.3em; }
.chart-title { font-size: 13px; font-weight: 600; fill: #1d2433; }
.axis { stroke: #5d6b82; } .grid { stroke: #eef1f6; } .tick { font-size: 10px; fill: #5d6b82; }
.axis-label { font-size: 11px; fill: #1d2433; } .bar { fill: #3a6fd8; }
.line { fill: none; stroke: #3a6fd8; stroke-width: 2; } .dot { fill: #3a6fd8; }
.dot.chosen { fill: #d8453a; }
"""
