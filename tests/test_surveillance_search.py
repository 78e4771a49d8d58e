"""Policy search by case volume through the core find_minimal_nodes (issue 10)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from safeshare.errors import InputError
from safeshare.surveillance.categories import categorize
from safeshare.surveillance.inputs import read_population
from safeshare.surveillance.policies import default_space
from safeshare.surveillance.search import DO_NOT_SHARE, RiskCriterion, search_policies

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "surveillance"


@pytest.fixture(scope="module")
def population():
    return read_population(EXAMPLES / "population.csv", default_space())


def test_monotone_search_equals_evaluating_every_policy(population) -> None:
    crit = RiskCriterion(sims=150, seed=2)
    regions = ["99001", "99003"]
    volumes = [10, 11, 50, 150, 500]
    fast = search_policies(population, regions, volumes, crit)
    full = search_policies(population, regions, volumes, crit, exhaustive=True)
    for a, b in zip(fast.results, full.results, strict=True):
        assert a.volume == b.volume
        assert a.minimal == b.minimal
        assert a.acceptable == b.acceptable
        assert a.best == b.best
        assert a.checked <= b.checked
    assert sum(r.checked for r in fast.results) < sum(r.checked for r in full.results) / 2
    assert fast.min_volume() == full.min_volume()


def test_search_results_make_sense(population) -> None:
    space = population.space
    res = search_policies(population, ["99003"], [10, 11, 300], RiskCriterion(sims=100, seed=1))
    at10, at11, at300 = res.results
    assert at10.acceptable == [] and at10.best is None  # fewer than 11 records: PK11 = 1
    assert space.parse("****") in at11.acceptable  # 11 records in one group: PK11 = 0
    assert at11.acceptable == [space.parse("****")]
    assert len(at300.acceptable) > 1
    assert set(at11.acceptable) <= set(at300.acceptable)
    for node in at300.minimal:  # minimal: passes, every predecessor fails
        assert all(p not in at300.acceptable for p in space.lattice.predecessors(node))
    bands = res.bands()
    assert bands[0] == {"from": 0, "to": 10, "policy": DO_NOT_SHARE, "acceptable": 0}
    assert bands[1]["policy"] == DO_NOT_SHARE
    assert bands[2]["policy"] == "****" and bands[2]["to"] == 300
    assert bands[3]["policy"] == space.format(at300.best) and bands[3]["to"] is None
    assert res.acceptable_at(12) == at11.acceptable
    assert res.acceptable_at(5) == []


def test_volumes_above_a_regions_people_are_searched_in_the_regions_that_hold_them(population) -> None:
    """Issue 22: never dropped silently; a volume is searched in the regions with at least that many
    people (the paper's code), a volume no region holds is not searched, and one line says so."""
    crit = RiskCriterion(sims=30, seed=3)
    res = search_policies(population, ["99005", "99003"], [11, 2000, 9000], crit)
    assert [r.volume for r in res.results] == [11, 2000] and res.unsearched == [9000]
    assert res.results[0].regions == ("99005", "99003") and res.results[1].regions == ("99003",)
    alone = search_policies(population, ["99003"], [2000], crit)
    assert res.results[1].acceptable == alone.results[0].acceptable  # the same streams, the same draws
    note = res.volume_notes(population.totals)
    assert note == (
        "volumes above a region's people (each searched in the regions that can hold it): "
        "2,000 searched without 99005 (1,500); 9,000 above every region's people: not searched"
    )
    assert search_policies(population, ["99003"], [11, 300], crit).volume_notes(population.totals) is None
    with pytest.raises(InputError, match="'12345' is not in the population table"):
        search_policies(population, ["12345"], [10], RiskCriterion(sims=5))


def test_categorize(population) -> None:
    assert categorize(population, [5000, 20000]) == {
        ">=20000": ["99001"],
        "5000-20000": ["99003"],
        "<5000": ["99005"],
    }


# ---------------------------------------------------------------- contracts of the result (issue 13)
# Written for mutants of ``make mutation`` (target ``surveillance``) that the tests above let
# through; ``# kills:`` names them.


def _upper_by_hand(population, node, regions, volume: int, crit: RiskCriterion) -> float:
    """The search's ``upper`` of one policy, recomputed: regions smallest first (the documented order),
    each region's draws from ``seeded(seed, index of the region, volume)``, PK_k of every draw by a
    plain loop over its class sizes, np.quantile; the running max up to the first region over the
    threshold."""
    from safeshare.surveillance.simulate import VolumeRisk, seeded

    grouping = population.space.grouping(node)
    worst = 0.0
    for region in sorted(regions, key=lambda r: population.totals[r]):
        pop = population.of(region)
        draws = VolumeRisk(pop, volume, crit.sims, seeded(crit.seed, population.region_index(region), volume))
        group_of_bin = np.asarray(grouping[0])[np.flatnonzero(pop > 0)]
        pks = []
        for counts in draws.bin_counts:
            sizes = np.bincount(group_of_bin, weights=counts, minlength=grouping[1])
            pks.append(sum(int(f) for f in sizes if f < crit.k) / volume)
        worst = max(worst, float(np.quantile(pks, crit.quantile)))
        if worst > crit.threshold:
            break
    return worst


def test_upper_is_the_running_max_over_the_regions_smallest_first(population) -> None:
    crit = RiskCriterion(sims=40, seed=5)
    regions = ["99001", "99003", "99005"]
    res = search_policies(population, regions, [5, 60], crit, exhaustive=True)
    few, some = res.results
    policies = population.space.policies()
    # kills: VolumeResult built without `upper`; regions searched in name order (`key=None`);
    # the draws' stream without the volume (`seeded(seed, index)`)
    assert few.upper == {n: 1.0 for n in policies}  # 5 records: PK_11 = 1 whatever the policy
    assert set(some.upper) == set(policies)
    failing = 0
    for node in [*policies[::6], population.space.parse("****")]:
        want = _upper_by_hand(population, node, regions, 60, crit)
        assert some.upper[node] == pytest.approx(want, abs=1e-12), population.space.format(node)
        assert (node in some.acceptable) is (want <= crit.threshold)
        failing += want > crit.threshold
    assert failing > 5  # failing policies whose upper is that of the smallest region only
    fast = search_policies(population, regions, [60], crit)
    assert len(fast.results[0].upper) == fast.results[0].checked
    assert {n: some.upper[n] for n in fast.results[0].upper} == fast.results[0].upper


def test_the_threshold_is_inclusive_at_both_ends(population) -> None:
    """Threshold 1 accepts every policy below k records; threshold 0 accepts a PK of exactly 0."""
    space = population.space
    crit = RiskCriterion(threshold=1.0, sims=5)
    res = search_policies(population, ["99005"], [5], crit)
    assert res.results[0].acceptable == sorted(space.policies())
    assert res.results[0].minimal == [space.lattice.bottom]
    res = search_policies(population, ["99005"], [11], RiskCriterion(threshold=0.0, sims=5))
    assert res.results[0].acceptable == [space.parse("****")]  # 11 records in one group: PK_11 = 0
    res = search_policies(population, ["99005"], [11], RiskCriterion(k=12, threshold=0.999, sims=5))
    assert res.results[0].acceptable == []  # 11 records, k = 12: PK_12 = 1 > 0.999


def test_risk_criterion_bounds() -> None:
    assert RiskCriterion() == RiskCriterion(k=11, threshold=0.01, quantile=0.975, sims=1000, seed=0)
    # kills: `k < 1` -> `k <= 1` (k = 1 refused)
    assert RiskCriterion(k=1).k == 1
    assert RiskCriterion(threshold=0).threshold == 0 and RiskCriterion(threshold=1).threshold == 1
    assert RiskCriterion(quantile=1).quantile == 1 and RiskCriterion(sims=1).sims == 1
    for kwargs, message in (
        ({"k": 0}, "k must be >= 1, got 0"),
        ({"threshold": -1e-9}, "threshold: a share in"),
        ({"threshold": 1 + 1e-9}, "threshold: a share in"),
        ({"quantile": 0}, "quantile: a level in"),
        ({"quantile": 1 + 1e-9}, "quantile: a level in"),
        ({"sims": 0}, "at least 1 simulation"),
    ):
        with pytest.raises(InputError, match=message):
            RiskCriterion(**kwargs)


def test_search_reports_progress_and_its_elapsed_time(population) -> None:
    import time

    calls: list[tuple[int, int]] = []
    before = time.perf_counter()
    crit = RiskCriterion(sims=5)
    res = search_policies(
        population, ["99005"], [30, 5, 11, 30], crit, progress=lambda i, n: calls.append((i, n))
    )
    outer = time.perf_counter() - before
    # kills: progress called without the number of volumes; elapsed_s None or `perf_counter() + start`
    assert calls == [(1, 3), (2, 3), (3, 3)]
    assert [r.volume for r in res.results] == [5, 11, 30]
    assert isinstance(res.elapsed_s, float) and 0 <= res.elapsed_s <= outer
    assert res.regions == ("99005",) and res.criterion == RiskCriterion(sims=5)


def test_bands_rows_and_their_keys(population) -> None:
    space = population.space
    res = search_policies(population, ["99003"], [10, 11, 300], RiskCriterion(sims=100, seed=1))
    at300 = res.results[2]
    # kills: a renamed key of the per-volume rows ("from")
    assert res.bands() == [
        {"from": 0, "to": 10, "policy": DO_NOT_SHARE, "acceptable": 0},
        {"from": 10, "to": 11, "policy": DO_NOT_SHARE, "acceptable": 0, "minimal": []},
        {"from": 11, "to": 300, "policy": "****", "acceptable": 1, "minimal": ["****"]},
        {
            "from": 300,
            "to": None,
            "policy": space.format(at300.best),
            "acceptable": len(at300.acceptable),
            "minimal": [space.format(n) for n in at300.minimal],
        },
    ]
    # issue 18 item 2: volume 0 would make [0, next) share the finest policy; it is refused
    with pytest.raises(InputError, match="--volumes: 0 is no case volume"):
        search_policies(population, ["99003"], [0, 11], RiskCriterion(sims=5))


def test_categorize_without_edges_is_one_category(population) -> None:
    # kills: the name "all" of the single category
    assert categorize(population, []) == {"all": ["99001", "99003", "99005"]}
    assert categorize(population, [8000]) == {">=8000": ["99001", "99003"], "<8000": ["99005"]}


def test_region_draws_beyond_the_memory_budget_are_drawn_again(population, monkeypatch) -> None:
    """With room for one region's draws at a time, the search evicts and redraws from each region's own
    seed stream: the same results as with every region kept."""
    from safeshare.surveillance import search as search_module

    crit = RiskCriterion(sims=60, seed=2)
    regions = list(population.regions)
    kept = search_policies(population, regions, [11, 150, 300], crit, exhaustive=True)
    monkeypatch.setattr(search_module, "available_memory", lambda: 4)
    tight = search_policies(population, regions, [11, 150, 300], crit, exhaustive=True)
    assert [(r.volume, r.acceptable, r.upper) for r in tight.results] == [
        (r.volume, r.acceptable, r.upper) for r in kept.results
    ]


def test_marketer_search_equals_evaluating_every_policy_and_its_expectation(population) -> None:
    """--risk marketer: the monotone search returns what evaluating every policy returns, and a policy
    whose J/N (the exact expected marketer risk) is far above the threshold is never acceptable, one far
    below it always is at a large enough volume."""
    crit = RiskCriterion(sims=200, seed=4, threshold=0.05, risk="marketer")
    volumes = [20, 200, 1000]
    fast = search_policies(population, ["99003", "99005"], volumes, crit)
    full = search_policies(population, ["99003", "99005"], volumes, crit, exhaustive=True)
    assert [(r.minimal, r.acceptable) for r in fast.results] == [
        (r.minimal, r.acceptable) for r in full.results
    ]
    space = population.space
    for node in space.policies():
        grouping = space.grouping(node)
        j_over_n = max(
            np.unique(grouping[0][population.of(r) > 0]).size / population.totals[r]
            for r in ("99003", "99005")
        )
        at1000 = node in fast.results[-1].acceptable
        if j_over_n > 0.06:
            assert not at1000, space.format(node)
        if j_over_n < 0.03:
            assert at1000, space.format(node)
    assert len(fast.results[-1].acceptable) >= len(fast.results[0].acceptable)
    with pytest.raises(InputError, match="--risk: one of pk, marketer"):
        RiskCriterion(risk="journalist")
