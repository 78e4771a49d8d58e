"""The figures of the surveillance commands (matplotlib, Agg backend, imported on first use).

Each function draws one figure from a result computed elsewhere and saves it to ``path``:
the PK band over time of a simulated series (:func:`simulation_plot`) and of several policies
on the same draws (:func:`bands_plot`), the Fig. 3 table as a heat map (:func:`fig3_heatmap`) and
the paper's case-study figure (Fig. 4/5, :func:`case_study_plot`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from safeshare.core.lattice import Node
from safeshare.surveillance.inputs import CaseSeries
from safeshare.surveillance.search import DO_NOT_SHARE, PolicySearch
from safeshare.surveillance.select import Evaluation, Schedule


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def simulation_plot(path: Path, band: pd.DataFrame, k: int, title: str) -> None:
    """The PK_k band (``mean``, ``lower``, ``upper`` per period) of one policy."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(9, 3.5))
    x = np.arange(len(band))
    ax.fill_between(x, band["lower"], band["upper"], alpha=0.3, label="95% range")
    ax.plot(x, band["mean"], label=f"mean PK{k}")
    ax.set_xlabel("period")
    ax.set_ylabel(f"PK{k}")
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def bands_plot(path: Path, table: pd.DataFrame, k: int, title: str) -> None:
    """The PK_k band over time of each policy of ``table`` (``policy, mean, lower, upper`` per period)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(9, 4))
    for code, frame in table.groupby("policy", sort=False):
        x = np.arange(len(frame))
        ax.fill_between(x, frame["lower"], frame["upper"], alpha=0.2)
        ax.plot(x, frame["mean"], label=str(code))
    ax.set_xlabel("period")
    ax.set_ylabel(f"PK{k} (mean and 95% range)")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7, ncols=2)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def fig3_heatmap(path: Path, table: pd.DataFrame, title: str) -> None:
    """The Fig. 3 table as a heat map: policies x categories, coloured by the smallest acceptable case
    volume (log scale), the volume written in each cell, blank where no searched volume suffices."""
    plt = _pyplot()
    from matplotlib.colors import LogNorm

    columns = list(table.columns[1:])
    values = table[columns].to_numpy(dtype="float64", na_value=np.nan)
    fig, ax = plt.subplots(figsize=(2.2 + 1.1 * len(columns), 0.16 * len(table) + 1.6))
    finite = values[np.isfinite(values) & (values > 0)]
    norm = LogNorm(vmin=max(1.0, finite.min()), vmax=max(2.0, finite.max())) if finite.size else None
    image = ax.imshow(np.where(values > 0, values, np.nan), aspect="auto", cmap="viridis_r", norm=norm)
    for (r, c), v in np.ndenumerate(values):
        if np.isfinite(v):
            ax.text(c, r, str(int(v)), ha="center", va="center", fontsize=5, color="white")
    ax.set_xticks(range(len(columns)), ["all regions" if c == "min_volume" else c for c in columns])
    ax.set_yticks(range(len(table)), list(table["policy"]), fontsize=5)
    ax.set_xlabel("regions by population size")
    ax.set_title(title, fontsize=9)
    if norm is not None:
        fig.colorbar(image, ax=ax, label="cases in the window")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def case_study_plot(
    path: Path,
    series: CaseSeries,
    forecast: Schedule,
    perfect: Schedule,
    dynamic: Evaluation,
    ideal: Evaluation,
    search: PolicySearch,
    lag: int,
) -> None:
    """The paper's Fig. 4 for one region: rolling sums (forecast vs realized) with the weekly
    minima, the policy chosen each week from both, and the PK_k band of each sequence."""
    plt = _pyplot()
    space = search.space
    crit = search.criterion
    n_days = 7 * len(forecast.week_starts)
    first = int(np.flatnonzero(series.dates == forecast.week_starts[0])[0]) if n_days else 0
    days = np.arange(n_days)
    actual = np.convolve(series.cases[first : first + n_days].astype(float), np.ones(lag))[:n_days]
    fig, (top, mid, bottom, amortized) = plt.subplots(
        4, 1, figsize=(10, 10), sharex=True, gridspec_kw={"height_ratios": [3, 2, 3, 2]}
    )
    top.plot(days, actual, color="tab:red", lw=1, label=f"{lag}-day sum, realized")
    top.step(
        np.arange(len(forecast.volumes)) * 7,
        forecast.volumes,
        where="post",
        color="tab:blue",
        label="weekly minimum, forecast",
    )
    top.plot(
        np.arange(len(perfect.volumes)) * 7 + 3,
        perfect.volumes,
        "s",
        color="tab:red",
        ms=4,
        label="weekly minimum, realized",
    )
    top.set_ylabel("cases")
    top.legend(fontsize=7)
    order = [DO_NOT_SHARE] + [space.format(r.best) for r in search.results if r.best is not None]
    labels = list(dict.fromkeys(order))

    def rank(nodes: list[Node | None]) -> list[int]:
        codes = [space.format(n) if n is not None else DO_NOT_SHARE for n in nodes]
        return [labels.index(c) if c in labels else len(labels) for c in codes]

    weeks = np.arange(len(forecast.policies)) * 7 + 3
    mid.plot(weeks, rank(forecast.policies), "^", color="tab:blue", label="from forecast")
    mid.plot(weeks, rank(perfect.policies), "s", color="tab:red", mfc="none", label="from realized")
    mid.set_yticks(range(len(labels)), labels, fontsize=7)
    mid.legend(fontsize=7)
    for ev, color, name in ((dynamic, "tab:blue", "forecast"), (ideal, "tab:red", "realized")):
        f = ev.frame
        bottom.fill_between(days[: len(f)], f["lower"], f["upper"], color=color, alpha=0.25)
        bottom.plot(days[: len(f)], f["mean"], color=color, lw=1, label=f"policies from {name}")
    bottom.axhline(crit.threshold, ls="--", color="black", lw=0.8)
    bottom.set_ylabel(f"PK{crit.k}")
    bottom.legend(fontsize=7)
    for ev, color, name in ((dynamic, "tab:blue", "forecast"), (ideal, "tab:red", "realized")):
        f = ev.frame
        amortized.fill_between(
            days[: len(f)], f["marketer_lower"], f["marketer_upper"], color=color, alpha=0.25
        )
        amortized.plot(days[: len(f)], f["marketer_mean"], color=color, lw=1, label=f"policies from {name}")
    amortized.set_ylabel("amortized\n(marketer) risk")
    amortized.set_xlabel(f"days from {forecast.week_starts[0] if n_days else ''}")
    amortized.legend(fontsize=7)
    fig.suptitle(
        f"region {series.region}: dynamic policy, {lag}-day lag, {crit.sims} simulations", fontsize=10
    )
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def table2_plot(path: Path, table: pd.DataFrame, threshold: float) -> None:
    """Table 2 as a figure: per category, the average share of releases meeting the threshold (marker)
    and its 95% quantile range across the category's regions (bar), static k-anonymous vs dynamic,
    daily and weekly; one panel per k."""
    from safeshare.surveillance.categories import TABLE2_CELLS, category_label

    plt = _pyplot()
    ks = list(dict.fromkeys(table["k"]))
    fig, axes = plt.subplots(len(ks), 1, figsize=(11, 3.2 * len(ks)), squeeze=False)
    styles = {
        ("daily", "static"): ("tab:red", "o"),
        ("daily", "dynamic"): ("tab:blue", "o"),
        ("weekly", "static"): ("tab:red", "s"),
        ("weekly", "dynamic"): ("tab:blue", "s"),
    }
    for ax, k in zip(axes[:, 0], ks, strict=True):
        part = table[table["k"] == k]
        categories = list(dict.fromkeys(part["category"]))
        for j, cell in enumerate(TABLE2_CELLS):
            rows = part[(part["schedule"] == cell[0]) & (part["policy"] == cell[1])]
            rows = rows.set_index("category").reindex(categories)
            x = np.arange(len(categories)) + (j - 1.5) * 0.15
            color, marker = styles[cell]
            ax.errorbar(
                x,
                rows["mean"],
                yerr=[rows["mean"] - rows["q025"], rows["q975"] - rows["mean"]],
                fmt=marker,
                color=color,
                mfc="white" if cell[0] == "weekly" else color,
                capsize=3,
                label=f"{cell[0]}, {'k-anonymous' if cell[1] == 'static' else 'dynamic'} policy",
            )
        labels = [
            f"{category_label(str(c))}\n(n = {int(part[part['category'] == c]['regions'].iloc[0])})"
            for c in categories
        ]
        ax.set_xticks(range(len(categories)), labels, fontsize=8)
        ax.set_xlim(-0.5, len(categories) - 0.5)
        ax.set_ylim(-0.03, 1.03)
        ax.set_ylabel("share of releases")
        ax.set_title(f"releases with PK{k} upper bound <= {threshold:g}: average and 95% range", fontsize=9)
        ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    axes[-1, 0].set_xlabel("county population size")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
