"""Policy search by case volume through the core find_minimal_nodes (issue 10)."""

from __future__ import annotations

from pathlib import Path

import pytest

from safeshare.errors import InputError
from safeshare.surveillance.inputs import read_population
from safeshare.surveillance.policies import default_space
from safeshare.surveillance.search import DO_NOT_SHARE, RiskCriterion, categorize, search_policies

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


def test_search_refuses_volumes_above_the_population(population) -> None:
    with pytest.raises(InputError, match="'99005' has 1500 people, fewer than the case volume 2000"):
        search_policies(population, ["99005"], [10, 2000], RiskCriterion(sims=5))
    with pytest.raises(InputError, match="'12345' is not in the population table"):
        search_policies(population, ["12345"], [10], RiskCriterion(sims=5))


def test_categorize(population) -> None:
    assert categorize(population, [5000, 20000]) == {
        ">=20000": ["99001"],
        "5000-20000": ["99003"],
        "<5000": ["99005"],
    }
