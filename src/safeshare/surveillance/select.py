"""Weekly policy selection from forecasts, and its evaluation on realized cases (paper: "Dynamic
policy evaluation", Table 2, Fig. 4).

**Selection.** At the start of each Sunday-Saturday week the policy is fixed from the
expected case volume of the week:

* daily releases with a lag of ``L`` days: daily cases are the weekly forecast / 7
  (or, with *perfect forecasts*, the realized daily counts); the volume is the minimum
  over the week's days of the ``L``-day rolling sum (the most protective policy for
  every day of the week);
* weekly releases: the weekly forecast itself.

The acceptable policies for that volume come from the search (:mod:`.search`); the
chosen one is the first by the user's priority (default: least Prec information loss,
ties broken by the priority order of the dimensions, e.g. ``age`` first = prefer age
granularity); "do not share" when none is acceptable (or no forecast exists).

**Evaluation.** The realized cases are simulated once per region (common random numbers)
and every period's PK_k upper quantile is read under that period's policy; a period
meets the threshold when it is <= the threshold; a "do not share" period releases
nothing and meets it. Approximation (documented): the lagging window of a period is
generalized by *that period's* policy, including records of earlier days of another
week, and records of unshared days are still counted in later windows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from safeshare.core.lattice import Node
from safeshare.errors import InputError
from safeshare.surveillance.inputs import CaseSeries, Population
from safeshare.surveillance.search import DO_NOT_SHARE, PolicySearch
from safeshare.surveillance.simulate import Grouping, draw_series, seeded, series_risk

#: The paper's static k-anonymous policy: ages 0-17, 18-49, 50-64, 65+; race, sex, ethnicity in full.
STATIC_AGE_BANDS = (0, 18, 50, 65)


def static_grouping(population: Population) -> Grouping:
    """The k-anonymous comparison policy (Table 2) as a fine-bin grouping: ages 0-17, 18-49, 50-64, 65+,
    every other dimension in full, except where the space's :attr:`~.policies.PolicySpace.static_groups`
    merges leaves (the paper's space: races other and multiple, as CDC's public-use data)."""
    space = population.space
    if space.names[:1] != ("age",):
        raise InputError("the static k-anonymous policy needs an 'age' first dimension")
    per_dim = []
    for i, dim in enumerate(space.dimensions):
        if dim.name in space.static_groups:
            seen: dict[str, int] = {}
            labels = space.static_groups[dim.name]
            per_dim.append(np.array([seen.setdefault(g, len(seen)) for g in labels], dtype=np.int64))
        elif i == 0:
            ages = np.array([int(x.rstrip("+")) for x in dim.leaves])
            per_dim.append(
                np.searchsorted(np.array(STATIC_AGE_BANDS), ages, side="right").astype(np.int64) - 1
            )
        else:
            per_dim.append(space.level_groups(i, 0))
    return space.grouping_from_levels(per_dim)


def weekly_forecast(
    forecasts: pd.DataFrame, region: str, week_starts: np.ndarray, value: str = "point"
) -> np.ndarray:
    """The 1-week-ahead forecast for each week (``value``: ``point`` or a quantile level like ``0.5``);
    NaN where none exists. The latest forecast made before the week wins."""
    f = forecasts[(forecasts["location"] == region) & (forecasts["horizon"] == 1)]
    if value == "point":
        f = f[f["type"] == "point"]
    else:
        f = f[(f["type"] == "quantile") & np.isclose(f["quantile"], float(value))]
    out = np.full(len(week_starts), np.nan)
    for i, start in enumerate(week_starts):
        rows = f[(f["target_end_date"] == start + 6) & (f["forecast_date"] <= start)]
        if len(rows):
            out[i] = float(rows.sort_values("forecast_date")["value"].iloc[-1])
    return out


def choose(search: PolicySearch, cases: float, priority: Sequence[str] = ()) -> Node | None:
    """The acceptable policy of least information loss for ``cases`` (ties by ``priority``)."""
    if not np.isfinite(cases):
        return None
    acceptable = search.acceptable_at(cases)
    if not acceptable:
        return None
    space = search.space
    names = list(space.names)
    unknown = [p for p in priority if p not in names]
    if unknown:
        raise InputError(f"--priority: {unknown} are not dimensions ({', '.join(names)})")
    order = [names.index(p) for p in priority] + [i for i in range(len(names)) if names[i] not in priority]
    return min(acceptable, key=lambda n: (space.precision_loss(n), tuple(n[i] for i in order)))


@dataclass
class Schedule:
    """Policies per week for one region and release schedule."""

    region: str
    week_starts: np.ndarray
    volumes: np.ndarray  # expected cases used for the choice
    policies: list[Node | None]


def select_weekly(
    search: PolicySearch,
    series: CaseSeries,
    forecasts: pd.DataFrame | None,
    lag: int = 1,
    weekly: bool = False,
    priority: Sequence[str] = (),
    value: str = "point",
    zero_windows: str = "drop",
) -> Schedule:
    """Choose a policy for every whole Sunday-Saturday week of a daily series (``forecasts=None``:
    perfect forecasts, i.e. the realized counts).

    ``zero_windows`` (daily releases): ``drop`` takes the week's minimum over the lagging windows that
    hold cases, as the paper's code does (``cases[cases.gt(0)]``); ``keep`` over every window, so a
    week with a day of no cases in its window (a weekend without reports) shares nothing. Dropping is
    the default: a window of no cases releases no record, so it cannot be at risk, and every window
    that does release records holds at least the minimum taken."""
    if zero_windows not in ("drop", "keep"):
        raise InputError(f"--zero-windows: 'keep' or 'drop', got {zero_windows!r}")
    if series.step_days != 1:
        raise InputError(f"region {series.region!r}: weekly selection needs a daily case series")
    sundays = np.flatnonzero((series.dates.astype("datetime64[D]").view("int64") - 3) % 7 == 0)
    n_weeks = (len(series.dates) - int(sundays[0])) // 7 if sundays.size else 0
    if n_weeks == 0:
        raise InputError(f"region {series.region!r}: the case series holds no whole Sunday-Saturday week")
    first = int(sundays[0])
    starts = series.dates[first : first + 7 * n_weeks : 7]
    days = series.cases[first : first + 7 * n_weeks].astype(float)
    if forecasts is None:
        weekly_values = days.reshape(n_weeks, 7).sum(axis=1)
        daily = days
    else:
        weekly_values = weekly_forecast(forecasts, series.region, starts, value)
        daily = np.repeat(weekly_values / 7.0, 7)
    if weekly:
        volumes = weekly_values
    else:
        roll = np.convolve(np.nan_to_num(daily, nan=np.inf), np.ones(lag), mode="full")[: len(daily)]
        roll[np.repeat(np.isnan(weekly_values), 7)] = np.nan
        by_week = roll.reshape(n_weeks, 7)
        if zero_windows == "drop":  # windows of no cases release nothing; a week of none stays 0
            nonzero = np.where(by_week == 0, np.inf, by_week)
            volumes = np.where(np.isinf(nonzero.min(axis=1)), 0.0, nonzero.min(axis=1))
        else:
            volumes = by_week.min(axis=1)
    policies = [choose(search, float(v), priority) for v in volumes]
    return Schedule(series.region, starts, volumes, policies)


@dataclass
class Evaluation:
    """Per period: cases, policy code, PK_k band under the policy; and the share meeting the threshold."""

    frame: pd.DataFrame
    share_met: float


def evaluate(
    population: Population,
    series: CaseSeries,
    schedule: Schedule | Grouping,
    search: PolicySearch,
    lag: int = 1,
    weekly: bool = False,
) -> Evaluation:
    """PK_k of releasing the realized cases under a weekly schedule (or one static grouping)."""
    crit = search.criterion
    space = population.space
    if isinstance(schedule, Schedule):
        first = (
            int(np.flatnonzero(series.dates == schedule.week_starts[0])[0])
            if len(schedule.week_starts)
            else 0
        )
        n_days = 7 * len(schedule.week_starts)
        dates = series.dates[first : first + n_days]
        cases = series.cases[first : first + n_days]
        day_policy: list[Node | None] = [p for p in schedule.policies for _ in range(7)]
    else:
        dates, cases = series.dates, series.cases
        day_policy = []
    if weekly:
        n = len(cases) // 7
        dates, cases = dates[: 7 * n : 7], cases[: 7 * n].reshape(n, 7).sum(axis=1)
        day_policy = day_policy[: 7 * n : 7]
        lag = 1
    draw = draw_series(
        population.of(series.region),
        cases,
        crit.sims,
        seeded(crit.seed, population.region_index(series.region)),
    )
    upper = np.zeros(len(cases))
    lower = np.zeros(len(cases))
    mean = np.zeros(len(cases))
    codes: list[str] = []
    if isinstance(schedule, Schedule):
        for node in set(day_policy):
            idx = np.array([i for i, p in enumerate(day_policy) if p == node])
            if node is None:
                continue
            risk = series_risk(draw, space.grouping(node), crit.k, lag).pk[:, idx]
            lower[idx], upper[idx] = np.quantile(risk, [1 - crit.quantile, crit.quantile], axis=0)
            mean[idx] = risk.mean(axis=0)
        codes = [space.format(p) if p is not None else DO_NOT_SHARE for p in day_policy]
    else:
        risk = series_risk(draw, schedule, crit.k, lag).pk
        lower, upper = np.quantile(risk, [1 - crit.quantile, crit.quantile], axis=0)
        mean = risk.mean(axis=0)
        codes = ["static"] * len(cases)
    met = upper <= crit.threshold + 1e-12
    frame = pd.DataFrame(
        {
            "period": dates.astype(str),
            "cases": cases,
            "policy": codes,
            "mean": mean,
            "lower": lower,
            "upper": upper,
            "met": met,
        }
    )
    return Evaluation(frame, float(met.mean()) if len(met) else 1.0)
