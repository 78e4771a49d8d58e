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

from safeshare.config.vocabulary import SURVEILLANCE_LAG
from safeshare.core.lattice import Node
from safeshare.errors import InputError
from safeshare.surveillance.choices import ZERO_WINDOWS, ZeroWindows
from safeshare.surveillance.inputs import CaseSeries, Population
from safeshare.surveillance.policies import PolicySpace
from safeshare.surveillance.search import DO_NOT_SHARE, PolicySearch, RiskCriterion
from safeshare.surveillance.simulate import (
    LOWER,
    UPPER,
    Grouping,
    SeriesDraw,
    SeriesRisk,
    draw_series,
    seeded,
    series_risk,
)

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
    lag: int = SURVEILLANCE_LAG,
    weekly: bool = False,
    priority: Sequence[str] = (),
    value: str = "point",
    zero_windows: ZeroWindows = "drop",
) -> Schedule:
    """Choose a policy for every whole Sunday-Saturday week of a daily series (``forecasts=None``:
    perfect forecasts, i.e. the realized counts).

    ``zero_windows`` (daily releases): ``drop`` takes the week's minimum over the lagging windows that
    hold cases, as the paper's code does (``cases[cases.gt(0)]``); ``keep`` over every window, so a
    week with a day of no cases in its window (a weekend without reports) shares nothing. Dropping is
    the default: a window of no cases releases no record, so it cannot be at risk, and every window
    that does release records holds at least the minimum taken."""
    if zero_windows not in ZERO_WINDOWS:
        raise InputError(f"--zero-windows: 'keep' or 'drop', got {zero_windows!r}")
    if series.step_days != 1:
        raise InputError(f"region {series.region!r}: weekly selection needs a daily case series")
    first, n_weeks = _weeks(series)
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


def select_cumulative(search: PolicySearch, series: CaseSeries, priority: Sequence[str] = ()) -> Schedule:
    """The marketer approach of the paper's supplement: the whole cumulative release is re-published
    each period at the week's policy, dates exact, and demographic granularity never decreases.

    At the start of each Sunday-Saturday week the volume is the number of records released so far (the
    realized cases before the week: known, no forecast needed; the release only grows during the week,
    and the marketer risk's upper quantile falls as it grows). The week's policy is, among the policies
    acceptable at that volume -- acceptable at some searched volume <= it, so that a policy once
    acceptable stays so -- and at least as fine as the previous week's (``policy <= previous`` in the
    lattice), the one of least Prec loss, ties by ``priority``; "do not share" until one is acceptable.
    A coarser release after a finer one would add nothing to what is known, so the sequence of
    releases is no riskier than its last (finest) one. ``search`` must be a marketer search
    (``RiskCriterion(risk="marketer")``) whose volumes are cumulative record counts."""
    if search.criterion.risk != "marketer":
        raise InputError("--approach cumulative needs the marketer risk (a search with --risk marketer)")
    if series.step_days != 1:
        raise InputError(f"region {series.region!r}: weekly selection needs a daily case series")
    first, n_weeks = _weeks(series)
    starts = series.dates[first : first + 7 * n_weeks : 7]
    before = np.concatenate([[0], np.cumsum(series.cases)])  # cases before each day
    volumes = before[first : first + 7 * n_weeks : 7].astype(float)
    space = search.space
    names = list(space.names)
    order = [names.index(p) for p in priority] + [i for i in range(len(names)) if names[i] not in priority]
    policies: list[Node | None] = []
    previous: Node | None = None
    for volume in volumes:
        candidates = search.acceptable_upto(volume)
        if previous is not None:
            candidates = [n for n in candidates if space.lattice.leq(n, previous)] or [previous]
        chosen = (
            min(candidates, key=lambda n: (space.precision_loss(n), tuple(n[i] for i in order)))
            if candidates
            else None
        )
        policies.append(chosen)
        previous = chosen
    return Schedule(series.region, starts, volumes, policies)


def _weeks(series: CaseSeries) -> tuple[int, int]:
    """Index of the series' first Sunday and the number of whole Sunday-Saturday weeks from it."""
    sundays = np.flatnonzero((series.dates.astype("datetime64[D]").view("int64") - 3) % 7 == 0)
    n_weeks = (len(series.dates) - int(sundays[0])) // 7 if sundays.size else 0
    if n_weeks == 0:
        raise InputError(f"region {series.region!r}: the case series holds no whole Sunday-Saturday week")
    return int(sundays[0]), n_weeks


@dataclass
class Evaluation:
    """Per period: cases, policy code, PK_k band under the policy, whether it meets the threshold, and
    the amortized (marketer) risk band of everything released so far; the share meeting the threshold."""

    frame: pd.DataFrame
    share_met: float


@dataclass
class ScheduledDraw:
    """The realized cases of a region's scheduled weeks drawn once (common to every schedule, policy
    and k): daily periods, and the same people aggregated by week for weekly releases."""

    dates: np.ndarray  # the first day of each period
    draw: SeriesDraw

    def weekly(self) -> ScheduledDraw:
        """The same draw with Sunday-Saturday weeks as periods (records keep their order: drawing week
        by week without replacement is drawing day by day and adding the days up)."""
        n = len(self.dates) // 7
        cases = self.draw.cases[: 7 * n].reshape(n, 7).sum(axis=1)
        kept = int(cases.sum())
        draw = SeriesDraw(
            self.draw.populated,
            self.draw.population,
            cases,
            self.draw.order[:, :kept],
            np.repeat(np.arange(n, dtype=np.int64), cases),
        )
        return ScheduledDraw(self.dates[: 7 * n : 7], draw)


def draw_scheduled(
    population: Population, series: CaseSeries, week_starts: np.ndarray, criterion: RiskCriterion
) -> ScheduledDraw:
    """Draw the realized cases of the weeks starting on ``week_starts`` (consecutive) once, from the
    region's own stream ``seeded(seed, region index)``."""
    first = int(np.flatnonzero(series.dates == week_starts[0])[0]) if len(week_starts) else 0
    n_days = 7 * len(week_starts)
    dates = series.dates[first : first + n_days]
    cases = series.cases[first : first + n_days]
    draw = draw_series(
        population.of(series.region),
        cases,
        criterion.simulations,
        seeded(criterion.seed, population.region_index(series.region)),
    )
    return ScheduledDraw(dates, draw)


class RiskCache:
    """``series_risk`` of one draw per policy (or static grouping), computed once for every k asked."""

    def __init__(self, space: PolicySpace, draw: SeriesDraw, lag: int, ks: Sequence[int]) -> None:
        self.space, self.draw, self.lag, self.ks = space, draw, lag, list(dict.fromkeys(ks))
        self._risks: dict[object, SeriesRisk] = {}

    def get(self, key: Node | str, grouping: Grouping | None = None) -> SeriesRisk:
        hit = self._risks.get(key)
        if hit is None:
            groups = grouping if grouping is not None else self.space.grouping(key)  # type: ignore[arg-type]
            hit = self._risks[key] = series_risk(self.draw, groups, self.ks[0], self.lag, self.ks)
        return hit


def evaluate_policies(
    cache: RiskCache,
    dates: np.ndarray,
    policies: Sequence[Node | None] | Grouping,
    criterion: RiskCriterion,
    k: int | None = None,
) -> Evaluation:
    """Each period's PK_k band under its policy (``None``: not shared, which releases nothing and meets
    the threshold) or under one static grouping, and the amortized risk of what was released so far:
    ``sum 1 / F_g(r)`` over the released records, each under its period's policy, over their number."""
    k = criterion.k if k is None else k
    space = cache.space
    cases = cache.draw.cases
    periods = len(cases)
    sims = cache.draw.order.shape[0]
    pk = np.zeros((sims, periods))
    weight = np.zeros((sims, periods))
    released = np.zeros(periods, dtype=bool)
    if isinstance(policies, tuple) and len(policies) == 2 and isinstance(policies[1], int):
        risk = cache.get("static", policies)
        pk, weight = risk.pk_of(k), np.asarray(risk.weight)
        released[:] = True
        codes = ["static"] * periods
    else:
        per_period = list(policies)
        for node in dict.fromkeys(per_period):
            if node is None:
                continue
            idx = np.array([i for i, p in enumerate(per_period) if p == node])
            risk = cache.get(node)
            pk[:, idx] = risk.pk_of(k)[:, idx]
            weight[:, idx] = np.asarray(risk.weight)[:, idx]
            released[idx] = True
        codes = [space.format(p) if p is not None else DO_NOT_SHARE for p in per_period]
    lower, upper = np.quantile(pk, [1 - criterion.quantile, criterion.quantile], axis=0)
    out_cases = np.cumsum(np.where(released, cases, 0))
    amortized = np.divide(
        np.cumsum(np.where(released, weight, 0.0), axis=1),
        out_cases,
        out=np.zeros((sims, periods)),
        where=out_cases > 0,
    )
    m_lower, m_upper = np.quantile(amortized, [LOWER, UPPER], axis=0)
    met = upper <= criterion.threshold + 1e-12
    frame = pd.DataFrame(
        {
            "period": np.asarray(dates).astype(str),
            "cases": cases,
            "policy": codes,
            "mean": pk.mean(axis=0),
            "lower": lower,
            "upper": upper,
            "met": met,
            "marketer_mean": amortized.mean(axis=0),
            "marketer_lower": m_lower,
            "marketer_upper": m_upper,
        }
    )
    return Evaluation(frame, float(met.mean()) if len(met) else 1.0)


def evaluate(
    population: Population,
    series: CaseSeries,
    schedule: Schedule | Grouping,
    search: PolicySearch,
    lag: int = SURVEILLANCE_LAG,
    weekly: bool = False,
    week_starts: np.ndarray | None = None,
) -> Evaluation:
    """PK_k of releasing the realized cases under a weekly schedule (or one static grouping, over the
    weeks ``week_starts``, default every whole week of the series), and the amortized risk band."""
    crit = search.criterion
    space = population.space
    if isinstance(schedule, Schedule):
        starts = schedule.week_starts
    elif week_starts is not None:
        starts = week_starts
    else:
        first, n_weeks = _weeks(series)
        starts = series.dates[first : first + 7 * n_weeks : 7]
    scheduled = draw_scheduled(population, series, starts, crit)
    if weekly:
        scheduled, lag = scheduled.weekly(), 1
    cache = RiskCache(space, scheduled.draw, lag, [crit.k])
    if isinstance(schedule, Schedule):
        policies: Sequence[Node | None] | Grouping = (
            schedule.policies if weekly else [p for p in schedule.policies for _ in range(7)]
        )
    else:
        policies = schedule
    return evaluate_policies(cache, scheduled.dates, policies, crit)
