"""Issue 37: the Brown pipeline's weekly releases of the SYNTHETIC nation, as a series.

For a county: ``surveil select --weekly`` chooses each week's policy from the forecasts (the paper's
weekly release schedule); the county's person-level records are drawn from its people for its daily
cases; each week the week's records are released (``--policies``) into the series' folder, checked
against every earlier release and the county's daily case counts, which are public (a dashboard such as
JHU's). A week passes, or -- ``--on-conflict coarsen`` -- is coarsened, and the report names it.

The expectation is computed here, independently: a week must be coarsened exactly when some but fewer
than k of its records are suppressed by the population-bin rule at its policy (the public counts minus
the released records would count them) and some are released (a week without a file says nothing).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from safeshare import api
from safeshare.surveillance.policies import default_space
from safeshare.surveillance.synthetic import generate_nation

K = 11


@pytest.fixture(scope="module")
def nation(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("nation")
    generate_nation(folder, seed=1)
    return folder


def _county(nation: Path, rank: int) -> str:
    """The county of 50,000 to 300,000 people at ``rank`` (by people, smallest first): enough cases for
    weeks to be shared (smaller counties' weeks are mostly "do not share")."""
    pop = pd.read_csv(nation / "population.csv", dtype={"region": str})
    people = pop.groupby("region")["count"].sum()
    middle = people[(people >= 50_000) & (people < 300_000)].sort_values()
    return str(middle.index[rank])


def _suppressed(pop: pd.DataFrame, records: pd.DataFrame, code: str) -> int:
    """Records whose population bin (people of the county with the record's labels at ``code``) holds
    fewer than k people -- from the hierarchies' labels, not from the release's groupings."""
    space = default_space()
    node = space.parse(code)
    labels = {}
    for dim, level in zip(space.dimensions, node, strict=True):
        labels[dim.name] = dict(zip(dim.leaves, dim.levels[level].groups, strict=True))
    names = list(labels)

    def relabel(frame: pd.DataFrame) -> pd.DataFrame:
        return frame.assign(**{n: frame[n].astype(str).map(labels[n]) for n in names})

    people = relabel(pop).groupby(names)["count"].sum()
    keyed = relabel(records).set_index(names).index
    return int((people.reindex(keyed).fillna(0).to_numpy() < K).sum())


def _run_county(
    nation: Path, tmp: Path, region: str, override: str | None = None
) -> tuple[dict[str, str], dict[str, str], set[str]]:
    """The pipeline for one county: its schedule (``override``: every shared week at that policy
    instead), what each week's release was coarsened to, the weeks expected to be coarsened."""
    pop = pd.read_csv(nation / "population.csv", dtype={"region": str})
    pop = pop[pop["region"] == region]
    pop.to_csv(tmp / "population.csv", index=False)
    cases = pd.read_csv(nation / "cases_long.csv", dtype={"region": str})
    cases = cases[cases["region"] == region].reset_index(drop=True)
    cases.to_csv(tmp / "cases.csv", index=False)
    plan = api.surveil_select(
        population_table=tmp / "population.csv",
        region=region,
        cases=tmp / "cases.csv",
        forecasts=nation / "forecasts.csv",
        weekly=True,
        simulations=200,
        seed=1,
    )
    schedule = plan.frame
    if override is not None:
        schedule = schedule.assign(
            policy=schedule["policy"].where(schedule["policy"] == "do not share", override)
        )
    schedule.to_csv(tmp / "schedule.csv", index=False)
    rng = np.random.default_rng(7)
    people = np.repeat(np.arange(len(pop)), pop["count"].to_numpy())
    order = rng.permutation(people)
    who = order[: int(cases["new_cases"].sum())]
    rows = pop.iloc[who].reset_index(drop=True)
    records = rows.drop(columns="count").assign(
        region=region, date=np.repeat(cases["date"].to_numpy(), cases["new_cases"].to_numpy())
    )
    weeks = {str(w): str(p) for w, p in zip(schedule["week_start"], schedule["policy"], strict=True)}
    coarsened: dict[str, str] = {}
    expected: set[str] = set()
    out = tmp / "series"
    released = 0
    for start, policy in weeks.items():
        end = str(np.datetime64(start) + 6)
        week = records[(records["date"] >= start) & (records["date"] <= end)]
        if week.empty or policy == "do not share":
            continue
        week.to_csv(tmp / "week.csv", index=False)
        totals = cases[(cases["date"] >= start) & (cases["date"] <= end)]
        totals.to_csv(tmp / "totals.csv", index=False)
        result = api.surveil_release(
            population_table=tmp / "population.csv",
            cases_records=tmp / "week.csv",
            policies=tmp / "schedule.csv",
            weekly=True,
            out=out,
            on_conflict="coarsen",
            public_totals=tmp / "totals.csv",
        )
        released += 1
        assert result.series == {"release": released, "ledger": "series.jsonl"}
        (period,) = result.periods
        assert period.period == start
        if period.series:
            assert all("coarsened" in action for action in period.series), period.series
            coarsened[start] = period.policy
        s = _suppressed(pop, week, policy)
        if 0 < s < K and s < len(week):
            expected.add(start)
        if period.file is not None:  # what is published: the public count minus it is 0 or >= k
            frame = pd.read_csv(out / period.file, dtype=str)
            assert len(totals) == 7 and (int(totals["new_cases"].sum()) - len(frame)) in (0, *range(K, 10**6))
    ledger = [json.loads(line) for line in (out / "series.jsonl").read_text().splitlines()]
    assert [e["seq"] for e in ledger] == list(range(1, released + 1))  # one entry per release
    return weeks, coarsened, expected


def _check(nation: Path, tmp: Path, rank: int, override: str | None = None) -> set[str]:
    weeks, coarsened, expected = _run_county(nation, tmp, _county(nation, rank), override)
    assert set(coarsened) == expected  # the weeks it would have to coarsen, and only those
    space = default_space()
    for start, policy in coarsened.items():
        assert space.lattice.leq(space.parse(weeks[start]), space.parse(policy))  # coarser than planned
    return set(coarsened)


def test_brown_weekly_releases_pass_or_name_the_weeks_to_coarsen(nation: Path, tmp_path: Path) -> None:
    """The schedule's weekly policies (coarse in these counties: ages suppressed) hide no record that
    the public counts would count: every week passes as scheduled."""
    assert _check(nation, tmp_path, rank=0) == set()


def test_finer_weekly_policies_are_coarsened_week_by_week(nation: Path, tmp_path: Path) -> None:
    """The same pipeline with every shared week at 5-year ages (1Ase): the weeks where the population
    bins hide a few records are named and coarsened, the others released as planned."""
    assert _check(nation, tmp_path, rank=0, override="1Ase")


@pytest.mark.slow
@pytest.mark.parametrize("rank", [10, 25, 40])
def test_brown_weekly_releases_of_more_counties(nation: Path, tmp_path: Path, rank: int) -> None:
    _check(nation, tmp_path, rank=rank)
