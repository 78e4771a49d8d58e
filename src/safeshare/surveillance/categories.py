"""Regions by population size, and the paper's Table 2 over them (paper: Fig. 3, Table 2).

The paper groups US counties into five population-size categories -- < 1,000; 1,000-50,000;
50,000-100,000; 100,000-1,000,000; > 1,000,000 (:data:`PAPER_EDGES`) -- searches the policies of
each category (a policy is listed at the smallest volume at which it meets the threshold in *every*
county of the category) and summarizes the evaluation per category: the average share of releases
meeting the threshold and its 95% quantile range across the category's counties (:func:`table2`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from safeshare.errors import InputError
from safeshare.surveillance.inputs import Population

#: The paper's category edges (people): < 1,000; 1,000-50,000; 50,000-100,000; 100,000-1,000,000; more.
PAPER_EDGES = (1_000, 50_000, 100_000, 1_000_000)


def check_edges(categories: Sequence[int] | str | None) -> list[int] | None:
    """``"paper"`` -> :data:`PAPER_EDGES`; a list of population sizes >= 1 (sorted, distinct); None."""
    if categories is None:
        return None
    if isinstance(categories, str):
        if categories != "paper":
            raise InputError(f"--categories: 'paper' or comma-separated population sizes, got {categories!r}")
        return list(PAPER_EDGES)
    edges = sorted({int(e) for e in categories})
    if not edges or edges[0] < 1:
        raise InputError(f"--categories: population sizes >= 1 are required, got {list(categories)}")
    return edges


def categorize(population: Population, edges: Sequence[int]) -> dict[str, list[str]]:
    """Regions by population size: ``edges = [1000, 50000]`` -> ``<1000``, ``1000-50000``, ``>=50000``
    (a region of exactly an edge's size belongs to the category above it)."""
    bounds = sorted(int(e) for e in edges)
    out: dict[str, list[str]] = {}
    for region, people in population.totals.items():
        i = int(np.searchsorted(bounds, people, side="right"))
        if i == 0:
            name = f"<{bounds[0]}" if bounds else "all"
        elif i == len(bounds):
            name = f">={bounds[-1]}"
        else:
            name = f"{bounds[i - 1]}-{bounds[i]}"
        out.setdefault(name, []).append(region)
    return out


def category_order(name: str) -> int:
    """Categories of :func:`categorize` from the smallest regions up (``<a``, ``a-b``, ``>=b``)."""
    if name.startswith("<"):
        return -1
    return int(name.removeprefix(">=").split("-")[0]) if name != "all" else 0


def category_label(name: str) -> str:
    """A category as the paper writes it: ``<1000`` -> ``< 1,000``, ``1000-50000`` -> ``1,000 - 50,000``."""
    if name.startswith("<"):
        return f"< {int(name[1:]):,}"
    if name.startswith(">="):
        return f"> {int(name[2:]):,}"
    if "-" in name:
        lo, hi = name.split("-")
        return f"{int(lo):,} - {int(hi):,}"
    return name


#: Table 2's cells: (release schedule, policy).
TABLE2_CELLS = (
    ("daily", "static"),
    ("daily", "dynamic"),
    ("weekly", "static"),
    ("weekly", "dynamic"),
)


def table2(per_region: pd.DataFrame) -> pd.DataFrame:
    """The paper's Table 2 from one row per region, k and release schedule with columns ``k, category,
    region, schedule, releases, static, dynamic, perfect_forecast`` (each a share of releases meeting the
    threshold): per k, category, schedule and policy, the number of regions, the periods of each, the
    average share and the 2.5% and 97.5% quantiles of the shares across the category's regions."""
    rows = []
    for (_, category, schedule), group in per_region.groupby(["k", "category", "schedule"], sort=False):
        k = int(group["k"].iloc[0])
        for policy in ("static", "dynamic", "perfect_forecast"):
            shares = group[policy].to_numpy(dtype=float)
            lo, hi = np.quantile(shares, [0.025, 0.975])
            rows.append(
                {
                    "k": k,
                    "category": category,
                    "regions": len(group),
                    "schedule": schedule,
                    "releases": int(group["releases"].max()),
                    "policy": policy,
                    "mean": float(shares.mean()),
                    "q025": float(lo),
                    "q975": float(hi),
                }
            )
    table = pd.DataFrame(rows)
    if len(table):
        table = table.assign(_order=table["category"].map(category_order))
        table = table.sort_values(["k", "_order"], kind="stable").drop(columns="_order")
        table = table.reset_index(drop=True)
    return table


def _cell(row: pd.Series) -> str:
    def fmt(x: float) -> str:
        return "1" if x == 1 else ("0" if x == 0 else f"{x:.3f}")

    return f"{fmt(row['mean'])} [{fmt(row['q025'])}, {fmt(row['q975'])}]"


def table2_markdown(table: pd.DataFrame, threshold: float, quantile: float) -> str:
    """Table 2 as the paper prints it: one row per category (``n`` regions), per release schedule the
    static k-anonymous and the dynamic policy, each cell ``average [95% quantile range]``; one table per
    k."""
    out = []
    for k, part in table.groupby("k", sort=False):
        daily = part[part["schedule"] == "daily"]["releases"]
        weekly = part[part["schedule"] == "weekly"]["releases"]
        n_daily = int(daily.max()) if len(daily) else 0
        n_weekly = int(weekly.max()) if len(weekly) else 0
        out.append(
            f"Average proportion of releases whose PK{k} upper bound (the {quantile:g} quantile) is <= "
            f"{threshold:g} [95% quantile range across the category's regions]\n"
        )
        out.append(
            "| population size | daily: k-anonymous policy | daily: dynamic policy "
            "| weekly: k-anonymous policy | weekly: dynamic policy |"
        )
        out.append("|---|---|---|---|---|")
        out.append(f"| (releases) | n = {n_daily} | n = {n_daily} | n = {n_weekly} | n = {n_weekly} |")
        for category, rows in part.groupby("category", sort=False):
            cells = []
            for schedule, policy in TABLE2_CELLS:
                hit = rows[(rows["schedule"] == schedule) & (rows["policy"] == policy)]
                cells.append(_cell(hit.iloc[0]) if len(hit) else "")
            n = int(rows["regions"].iloc[0])
            out.append(f"| {category_label(str(category))} (n = {n}) | " + " | ".join(cells) + " |")
        out.append("")
    return "\n".join(out)
