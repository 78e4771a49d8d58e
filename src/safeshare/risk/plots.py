"""Box plots of the evaluation (Jiang et al. 2022, Figs. 1-8): estimation error against true-risk bins.

Each figure is written as SVG and PNG, atomically; matplotlib runs headless
(Agg) and the SVG carries no date, so the same results give the same files.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from safeshare.io import atomic_write
from safeshare.risk.evaluation import ACCURACY_BAND, true_risk_bin

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

FORMATS = ("svg", "png")


def _write_bytes(path: Path, data: bytes) -> None:
    path.write_bytes(data)


def _save(fig: Figure, stem: Path) -> list[Path]:
    written = []
    for fmt in FORMATS:
        buf = io.BytesIO()
        metadata = {"Date": None} if fmt == "svg" else {"Software": None}
        fig.savefig(buf, format=fmt, dpi=100, metadata=metadata)
        target = stem.parent / f"{stem.name}.{fmt}"
        atomic_write(target, partial(_write_bytes, data=buf.getvalue()))
        written.append(target)
    return written


def _boxes(ax: Axes, df: pd.DataFrame, title: str) -> None:
    bins = true_risk_bin(df["true_B"])
    labels = sorted(bins.unique())
    data = [df.loc[bins == b, "error"].dropna().to_numpy() for b in labels]
    ax.axhspan(-ACCURACY_BAND, ACCURACY_BAND, color="0.92", zorder=0)
    ax.axhline(0.0, color="0.4", lw=0.8, zorder=1)
    if any(len(d) for d in data):
        ax.boxplot(
            data,
            tick_labels=[f"{b}\n({len(d)})" for b, d in zip(labels, data, strict=True)],
            showfliers=True,
            flierprops={"markersize": 2},
            widths=0.6,
        )
    ax.set_title(title, fontsize=9)
    ax.tick_params(axis="x", labelsize=6)
    ax.tick_params(axis="y", labelsize=7)


def _panels(
    panels: Sequence[tuple[str, pd.DataFrame]],
    max_cols: int,
    panel_width: float,
    title: str,
    stem: Path,
    sharey: bool = False,
) -> list[Path]:
    """A grid of box-plot panels (one per ``(title, points)``) with the shared axis labels, saved."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ncols = min(max_cols, len(panels))
    nrows = -(-len(panels) // ncols)
    fig, axes = plt.subplots(
        nrows, ncols, figsize=(panel_width * ncols, 2.9 * nrows), squeeze=False, sharey=sharey
    )
    for ax, (label, df) in zip(axes.flat, panels, strict=False):
        _boxes(ax, df, label)
    for ax in list(axes.flat)[len(panels) :]:
        ax.set_visible(False)
    fig.suptitle(title, fontsize=10)
    fig.supxlabel("true B (bin of width 0.1, points)", fontsize=9)
    fig.supylabel("estimate - true B", fontsize=9)
    fig.tight_layout()
    try:
        return _save(fig, stem)
    finally:
        plt.close(fig)


def error_figure(errors: pd.DataFrame, estimators: Sequence[str], title: str, stem: Path) -> list[Path]:
    """One panel per estimator: error (estimate - true B) per true-risk bin of width 0.1 (points in
    brackets); the grey band is ±0.05."""
    panels = [(name, errors[errors["estimator"] == name]) for name in estimators]
    return _panels(panels, 3, 4.2, title, stem)


def sensitivity_figure(sens: pd.DataFrame, title: str, stem: Path) -> list[Path]:
    """One panel per population-size change (Figs. 7-8): error against the true B of the real N."""
    changes = sorted(sens["population_size_error"].unique())
    panels = [
        ("N exact" if e == 0 else f"N {e:+.0%}", sens[sens["population_size_error"] == e]) for e in changes
    ]
    return _panels(panels, 4, 3.8, title, stem, sharey=True)
