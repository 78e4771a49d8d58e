"""Weekly policy selection from forecasts and its evaluation (issue 10, paper Table 2)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from safeshare.errors import InputError
from safeshare.surveillance.inputs import CaseSeries, read_case_series, read_forecasts, read_population
from safeshare.surveillance.policies import default_space
from safeshare.surveillance.search import RiskCriterion, search_policies
from safeshare.surveillance.select import choose, evaluate, select_weekly, static_grouping

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "surveillance"
VOLUMES = [11, 20, 50, 75, 150, 300, 500, 750]


@pytest.fixture(scope="module")
def inputs():
    pop = read_population(EXAMPLES / "population.csv", default_space())
    return pop, read_case_series(EXAMPLES / "cases_long.csv"), read_forecasts(EXAMPLES / "forecasts.csv")


def test_selection_volumes_follow_the_paper(inputs) -> None:
    pop, cases, fc = inputs
    search = search_policies(pop, ["99003"], VOLUMES, RiskCriterion(sims=60, seed=1))
    series = cases["99003"]
    perfect = select_weekly(search, series, None, lag=3)
    days = series.cases[:14].astype(float)  # the series starts on a Sunday
    roll = np.convolve(days, np.ones(3))[:14]
    assert perfect.volumes[1] == roll[7:14].min()
    weekly = select_weekly(search, series, None, weekly=True)
    assert weekly.volumes[0] == days[:7].sum()
    fcast = select_weekly(search, series, fc, lag=3)
    point = (
        fc[(fc.location == "99003") & (fc.type == "point")].sort_values("target_end_date")["value"].to_numpy()
    )
    # Sunday's and Monday's windows reach into the previous week's forecast
    prev, cur = point[:19] / 7, point[1:20] / 7
    expected = np.minimum.reduce([3 * cur, 2 * cur + prev, cur + 2 * prev])
    np.testing.assert_allclose(fcast.volumes[1:], expected)
    assert fcast.volumes[0] == pytest.approx(point[0] / 7)  # the first Sunday: 1 day in the window
    for vol, node in zip(perfect.volumes, perfect.policies, strict=True):
        assert (node is None) == (vol < 11)


def test_priority_breaks_ties(inputs) -> None:
    pop, _, _ = inputs
    search = search_policies(pop, ["99001"], [750], RiskCriterion(sims=60, seed=1))
    space = pop.space
    acceptable = search.acceptable_at(800)
    best_age = choose(search, 800, ["age"])
    assert best_age in acceptable
    with pytest.raises(InputError, match="not dimensions"):
        choose(search, 800, ["zip"])
    assert choose(search, 5, ["age"]) is None
    assert space.format(best_age)


def test_dynamic_policy_meets_the_threshold_far_more_often_than_static(inputs) -> None:
    pop, cases, fc = inputs
    search = search_policies(pop, ["99001"], VOLUMES, RiskCriterion(sims=100, seed=1))
    series = cases["99001"]
    dynamic = evaluate(pop, series, select_weekly(search, series, fc, lag=1), search, lag=1)
    perfect = evaluate(pop, series, select_weekly(search, series, None, lag=1), search, lag=1)
    static = evaluate(pop, series, static_grouping(pop), search, lag=1)
    assert static.share_met < 0.2 < 0.8 < dynamic.share_met
    assert perfect.share_met == 1.0
    assert list(dynamic.frame.columns) == [
        *["period", "cases", "policy", "mean", "lower", "upper", "met"],
        *["marketer_mean", "marketer_lower", "marketer_upper"],
    ]


def test_static_policy_grouping(inputs) -> None:
    pop, _, _ = inputs
    _, n = static_grouping(pop)
    assert n == 4 * 6 * 2 * 2  # the paper's and CDC's races: "other" and "multiple" merged
    from safeshare.surveillance.inputs import Population
    from safeshare.surveillance.policies import ages_to_100_space

    _, n = static_grouping(Population(ages_to_100_space(), pop.regions, pop.counts))
    assert n == 4 * 7 * 2 * 2  # issue 10's static policy: all seven races


def test_series_without_a_whole_week_is_refused(inputs) -> None:
    pop, _, _ = inputs
    search = search_policies(pop, ["99003"], [11], RiskCriterion(sims=5))
    dates = np.datetime64("2020-08-03") + np.arange(5)
    with pytest.raises(InputError, match="no whole Sunday-Saturday week"):
        select_weekly(search, CaseSeries("99003", dates, np.ones(5, dtype=np.int64)), None)


def test_zero_windows_keep_or_drop(inputs) -> None:
    """Issue 22: a county that reports nothing on weekends shares nothing all series when zero windows
    count in the weekly minimum (keep); dropping them (the paper's code, the default) shares every
    weekday, and the volume is the minimum over the windows that hold cases, computed here directly."""
    pop, _, _ = inputs
    search = search_policies(pop, ["99001"], VOLUMES, RiskCriterion(sims=60, seed=1))
    start = np.datetime64("2020-08-02")  # a Sunday
    weekday = np.tile([0, 30, 31, 32, 33, 34, 0], 4)  # nothing reported on Sundays and Saturdays
    series = CaseSeries("99001", start + np.arange(28), weekday.astype(np.int64))
    keep = select_weekly(search, series, None, lag=1, zero_windows="keep")
    assert (keep.volumes == 0).all() and keep.policies == [None] * 4
    drop = select_weekly(search, series, None, lag=1)
    assert (drop.volumes == 30).all() and all(p is not None for p in drop.policies)
    assert drop.policies == select_weekly(search, series, None, lag=1, zero_windows="drop").policies
    lag2 = select_weekly(search, series, None, lag=2)
    windows = np.convolve(weekday, np.ones(2))[:28].reshape(4, 7)
    assert list(lag2.volumes) == [min(w[w > 0]) for w in windows]  # 30: Monday alone in week 1, then 34
    empty = CaseSeries("99001", start + np.arange(7), np.zeros(7, dtype=np.int64))
    assert select_weekly(search, empty, None).volumes.tolist() == [0.0]
    with pytest.raises(InputError, match="--zero-windows"):
        select_weekly(search, series, None, zero_windows="ignore")


def test_cumulative_selection_never_decreases_granularity(inputs) -> None:
    """--approach cumulative (the supplement's marketer approach): the volume of each week is the count
    of records released before it (computed here from the series), every chosen policy is acceptable at
    it (at some searched volume <= it) and at least as fine as the week before."""
    from safeshare.surveillance.select import select_cumulative

    pop, cases, _ = inputs
    space = pop.space
    crit = RiskCriterion(sims=100, seed=1, threshold=0.05, risk="marketer")
    volumes = [11, 50, 100, 200, 400, 800, 1600, 3200]
    for region in ("99001", "99003"):
        search = search_policies(pop, [region], [v for v in volumes if v <= pop.totals[region]], crit)
        series = cases[region]
        sched = select_cumulative(search, series, ["age"])
        assert list(sched.volumes) == [int(series.cases[: 7 * w].sum()) for w in range(len(sched.volumes))]
        previous = None
        for volume, node in zip(sched.volumes, sched.policies, strict=True):
            if node is None:
                assert previous is None and not any(
                    r.acceptable for r in search.results if r.volume <= volume
                )
                continue
            assert any(node in r.acceptable for r in search.results if r.volume <= volume)
            if previous is not None:
                assert space.lattice.leq(node, previous), (space.format(node), space.format(previous))
            previous = node
        assert sched.policies[-1] is not None and sched.policies[0] is None  # nothing before any record
    with pytest.raises(InputError, match="--approach cumulative needs the marketer risk"):
        select_cumulative(search_policies(pop, ["99003"], [11], RiskCriterion(sims=5)), cases["99003"])


def test_amortized_risk_band_of_a_schedule_record_by_record(inputs) -> None:
    """The evaluation's amortized (marketer) risk: per simulation, the mean of 1 / F_g(r) over the records
    released so far, each generalized by its own period's policy; "do not share" periods release none."""
    from safeshare.surveillance.select import RiskCache, draw_scheduled, evaluate_policies

    pop, cases, _ = inputs
    space = pop.space
    series = cases["99005"]
    crit = RiskCriterion(sims=30, seed=2)
    starts = series.dates[0:28:7]
    scheduled = draw_scheduled(pop, series, starts, crit)
    codes = ["****", None, "4*s*", "2Bse"]
    per_day = [space.parse(c) if c else None for c in codes for _ in range(7)]
    ev = evaluate_policies(RiskCache(space, scheduled.draw, 1, [11]), scheduled.dates, per_day, crit)
    draw = scheduled.draw
    people = pop.of("99005")
    bins = draw.populated
    expected = np.zeros((crit.sims, 28))
    for s in range(crit.sims):
        total, count = 0.0, 0
        for day in range(28):
            node = per_day[day]
            lo, hi = int(draw.cases[:day].sum()), int(draw.cases[: day + 1].sum())
            if node is not None:
                group_of_bin = space.grouping(node)[0]
                for b in draw.order[s, lo:hi]:
                    group = group_of_bin[bins[b]]
                    total += 1.0 / people[group_of_bin == group].sum()
                    count += 1
            expected[s, day] = total / count if count else 0.0
    np.testing.assert_allclose(ev.frame["marketer_mean"], expected.mean(axis=0))
    assert (ev.frame["policy"][7:14] == "do not share").all()
    weekly = scheduled.weekly()
    assert weekly.draw.cases.tolist() == [int(series.cases[7 * w : 7 * w + 7].sum()) for w in range(4)]
    assert (weekly.draw.order == draw.order).all()  # the same people, in the same order
