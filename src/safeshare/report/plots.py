"""Sweep figures in the style of the thesis' Fig. 6.1 and Fig. 6.2 (matplotlib, no display needed).

* :func:`plot_loss_vs_suppression` (Fig. 6.1, thesis §6.1.1): information loss of
  the node chosen by OLA against the suppression limit, one line per k, one
  panel per metric: Prec normalized to [0, 1], DM* minus its value on the
  original data (linear, and log scale "for ease of comparison"), and raw
  non-uniform entropy (it "already factors in the original dataset").
* :func:`plot_loss_vs_accuracy` (Fig. 6.2, thesis §6.1.2): classification
  accuracy against the same information loss, one panel per metric, colour =
  k, marker = suppression limit; the dashed line is the accuracy on the
  original data.

Figures are drawn with matplotlib's object API on the Agg canvas (no pyplot,
no global state, no display) and written as PNG and SVG. SVG output is
deterministic (fixed hash salt, no date) so reruns give identical files.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import matplotlib
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator, NullLocator, ScalarFormatter


class SweepRow(Protocol):
    """What a plot reads of one configuration of a sweep.

    A Protocol, so that the report layer does not import the sweep workflow
    (:class:`safeshare.workflows.sweep.SweepRow` satisfies it); the loss values
    are read by name (:attr:`Panel.value`).
    """

    @property
    def k(self) -> int: ...
    @property
    def max_suppression_pct(self) -> float: ...
    @property
    def metric(self) -> str: ...
    @property
    def found(self) -> bool: ...
    @property
    def accuracy(self) -> float | None: ...
    @property
    def information_loss(self) -> float | None: ...
    @property
    def information_loss_normalized(self) -> float | None: ...
    @property
    def information_loss_minus_bottom(self) -> float | None: ...


_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "<", ">")


@dataclass(frozen=True)
class Panel:
    """One panel: which metric, which loss value, how to label it."""

    metric: str
    value: str  # attribute of SweepRow
    title: str
    y_label: str
    log: bool = False


PANELS_6_1 = (
    Panel("prec", "information_loss_normalized", "Prec (normalized)", "information loss"),
    Panel("dm_star", "information_loss_minus_bottom", "DM* − DM*(original)", "information loss"),
    Panel(
        "dm_star", "information_loss_minus_bottom", "DM* − DM*(original), log scale", "information loss", True
    ),
    Panel("entropy", "information_loss", "Non-uniform entropy", "information loss (bits)"),
)

PANELS_6_2 = (
    Panel("prec", "information_loss_normalized", "Prec (normalized)", "accuracy"),
    Panel("dm_star", "information_loss_minus_bottom", "DM* − DM*(original)", "accuracy"),
    Panel("entropy", "information_loss", "Non-uniform entropy", "accuracy"),
)


def _value(row: SweepRow, panel: Panel) -> float | None:
    v = getattr(row, panel.value)
    if v is None or not row.found:
        return None
    value = float(v)
    if panel.log and value <= 0:
        return None
    return value


def _grid(n: int) -> tuple[int, int]:
    cols = n if n <= 3 else 2
    return math.ceil(n / cols), cols


def _save(fig: Figure, stem: Path) -> list[Path]:
    FigureCanvasAgg(fig)
    png, svg = stem.with_suffix(".png"), stem.with_suffix(".svg")
    with matplotlib.rc_context({"svg.hashsalt": "safeshare", "svg.fonttype": "path"}):
        fig.savefig(png, format="png", dpi=150, metadata={"Software": None})
        fig.savefig(svg, format="svg", metadata={"Date": None, "Creator": None})
    return [png, svg]


def _axis_format(ax: Any, axis: str) -> None:
    """At most 6 ticks and a shared power-of-ten offset for large values (no overlapping labels)."""
    target = getattr(ax, f"{axis}axis")
    if getattr(ax, f"get_{axis}scale")() == "log":
        return
    target.set_major_locator(MaxNLocator(6))
    formatter = ScalarFormatter(useMathText=True)
    formatter.set_powerlimits((-3, 4))
    target.set_major_formatter(formatter)


def _suppression_axis(ax: Any, limits: Sequence[float]) -> None:
    """A linear suppression axis as in the thesis' Fig. 6.1 (the "initial plunge" between
    0 and 1 % stays visible); a tick at every limit of the grid, labels omitted where
    they would overlap the previous one (0 and 1 % on a 0-50 % axis)."""
    ax.set_xlabel("maximum suppression (%)")
    ticks = sorted(limits)
    span = (ticks[-1] - ticks[0]) or 1.0
    labels, last = [], None
    for v in ticks:
        show = last is None or (v - last) / span >= 0.04
        labels.append(f"{v:g}" if show else "")
        last = v if show else last
    ax.set_xticks(ticks)
    ax.set_xticklabels(labels)
    ax.xaxis.set_minor_locator(NullLocator())


def _colors(n: int) -> list[tuple[float, float, float, float]]:
    cmap = matplotlib.colormaps["viridis"]
    return [cmap(0.15 + 0.7 * i / max(n - 1, 1)) for i in range(n)]


def plot_loss_vs_suppression(rows: Sequence[SweepRow], stem: Path, title: str | None = None) -> list[Path]:
    """Fig. 6.1: loss against the suppression limit per k and metric; writes ``stem``.png/.svg."""
    metrics = {r.metric for r in rows}
    panels = [p for p in PANELS_6_1 if p.metric in metrics]
    ks = sorted({r.k for r in rows})
    colors = _colors(len(ks))
    n_rows, n_cols = _grid(len(panels))
    fig = Figure(figsize=(5.2 * n_cols, 3.8 * n_rows), layout="constrained")
    axes = fig.subplots(n_rows, n_cols, squeeze=False).ravel()
    limits = sorted({r.max_suppression_pct for r in rows})
    for ax, panel in zip(axes, panels, strict=False):
        for i, k in enumerate(ks):
            points = sorted(
                (r.max_suppression_pct, _value(r, panel))
                for r in rows
                if r.k == k and r.metric == panel.metric
            )
            xs = [x for x, y in points if y is not None]
            ys = [y for _, y in points if y is not None]
            if xs:
                ax.plot(xs, ys, marker=_MARKERS[i % len(_MARKERS)], color=colors[i], label=f"k = {k}")
        if panel.log:
            ax.set_yscale("log")
        _axis_format(ax, "y")
        _suppression_axis(ax, limits)
        ax.set_title(panel.title)
        ax.set_ylabel(panel.y_label)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize="small")
    for ax in axes[len(panels) :]:
        ax.set_visible(False)
    fig.suptitle(title or "Information loss of the node chosen by OLA vs. maximum suppression")
    return _save(fig, stem)


def plot_loss_vs_accuracy(
    rows: Sequence[SweepRow],
    stem: Path,
    baseline_accuracy: float | None = None,
    title: str | None = None,
) -> list[Path]:
    """Fig. 6.2: accuracy against information loss, one panel per metric; writes ``stem``.png/.svg."""
    metrics = {r.metric for r in rows}
    panels = [p for p in PANELS_6_2 if p.metric in metrics]
    ks = sorted({r.k for r in rows})
    limits = sorted({r.max_suppression_pct for r in rows})
    colors = _colors(len(ks))
    fig = Figure(figsize=(5.0 * len(panels), 4.0), layout="constrained")
    axes = fig.subplots(1, len(panels), squeeze=False).ravel()
    for ax, panel in zip(axes, panels, strict=True):
        for r in rows:
            x = _value(r, panel)
            if r.metric != panel.metric or x is None or r.accuracy is None:
                continue
            ax.scatter(
                [x],
                [r.accuracy],
                color=colors[ks.index(r.k)],
                marker=_MARKERS[limits.index(r.max_suppression_pct) % len(_MARKERS)],
                s=42,
                edgecolors="black",
                linewidths=0.4,
            )
        if baseline_accuracy is not None:
            ax.axhline(baseline_accuracy, color="grey", linestyle="--", linewidth=1)
        _axis_format(ax, "x")
        ax.set_title(panel.title)
        ax.set_xlabel("information loss" if panel.metric != "entropy" else "information loss (bits)")
        ax.set_ylabel("accuracy")
        ax.grid(True, alpha=0.3)
    # one legend for colours (k), markers (suppression) and the baseline
    handles, labels = [], []
    for i, k in enumerate(ks):
        handles.append(
            axes[0].scatter([], [], color=colors[i], marker="o", edgecolors="black", linewidths=0.4)
        )
        labels.append(f"k = {k}")
    for j, pct in enumerate(limits):
        handles.append(
            axes[0].scatter([], [], color="white", marker=_MARKERS[j % len(_MARKERS)], edgecolors="black")
        )
        labels.append(f"max sup {pct:g}%")
    if baseline_accuracy is not None:
        (line,) = axes[0].plot([], [], color="grey", linestyle="--", linewidth=1)
        handles.append(line)
        labels.append(f"original data ({baseline_accuracy:.4f})")
    fig.legend(handles, labels, loc="outside right center", fontsize="small")
    fig.suptitle(title or "Classification accuracy vs. information loss of the release")
    return _save(fig, stem)
