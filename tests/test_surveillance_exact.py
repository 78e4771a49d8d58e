"""Issue 22, "Done when": with the default (the paper's) hierarchies, the policy search agrees with an
exact per-policy pass probability on four synthetic counties.

The exact probability is computed here, independently of the simulation: ``v`` cases drawn without
replacement from a region have the law of independent ``Binomial(F_g, p)`` group counts conditioned on
their sum being ``v`` (any ``p``; ``p = v / N`` keeps the numbers tame), so

    P(PK_k <= t) = P(R <= t v, sum_g Y_g = v) / P(Binomial(N, p) = v),   R = sum_g Y_g [Y_g < k],

which a dynamic programme over the groups gives exactly (states: records so far, records at risk so
far, the latter only up to ``t v``; convolutions in the record count). The search passes a policy when
the 97.5% quantile of 1,000 simulated PK values, numpy's linear interpolation between the 975th and
976th order statistics, is at most ``t``: so its pass probability lies between ``P(Bin(1000, q) >= 976)``
and ``P(Bin(1000, q) >= 975)``, ``q = P(PK_k <= t)``. A policy accepted although its pass probability is
below 0.001, or rejected although it is above 0.999, is a failure; between, Monte Carlo noise may go
either way.

Every policy is checked at every volume (volumes 11 .. 1,000; ``make test-all``: 2,688 verdicts, 48 s of
CPU; the fast suite checks the smallest county at three volumes), and the exact probability is checked to
be monotone along the lattice's edges (it never falls when a policy is generalized: PK never rises,
draw by draw), which also means the search's frontier alone decides: the minimal accepted policies are
the accepted ones least likely to pass, the maximal rejected ones the rejected ones most likely to.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import signal, stats

from safeshare.surveillance.inputs import Population
from safeshare.surveillance.policies import DEFAULT_RACES, default_space
from safeshare.surveillance.search import RiskCriterion, search_policies

SIMS = 1000
K, THRESHOLD, QUANTILE = 11, 0.01, 0.975


def exact_pk_cdf(sizes: np.ndarray, v: int, k: int, t: float) -> float:
    """``P(PK_k <= t)`` for ``v`` cases drawn without replacement from groups of ``sizes`` people."""
    sizes = np.asarray(sizes, dtype=np.int64)
    sizes = sizes[sizes > 0]
    people = int(sizes.sum())
    p = v / people
    r_max = int(np.floor(t * v + 1e-9))
    state = np.zeros((r_max + 1, v + 1))  # state[r, n]: n records so far, r of them at risk
    state[0, 0] = 1.0
    for f in sizes:
        top = min(int(f), v)
        pmf = stats.binom.pmf(np.arange(top + 1), int(f), p)
        new = np.zeros_like(state)
        for x in range(min(k - 1, top, r_max) + 1):  # fewer than k: these records are at risk
            new[x:, x:] += pmf[x] * state[: r_max + 1 - x, : v + 1 - x]
        if top >= k:  # k or more: no record at risk, only the count moves
            tail = pmf[k:]
            conv = signal.fftconvolve(state, tail[None, :], axes=1)[:, : v + 1 - k]
            new[:, k:] += np.clip(conv, 0.0, None)
        state = new
    return float(state[:, v].sum() / stats.binom.pmf(v, people, p))


def pass_bounds(q: float) -> tuple[float, float]:
    """Bounds of the probability that the 97.5% quantile of 1,000 draws is <= t, for P(PK <= t) = q."""
    h = (SIMS - 1) * QUANTILE  # numpy's linear interpolation: between order statistics lo and lo + 1
    lo = int(np.floor(h))
    return float(stats.binom.sf(lo + 1, SIMS, q)), float(stats.binom.sf(lo, SIMS, q))


def synthetic_counties() -> Population:
    """Four SYNTHETIC counties (1,500 to 66,610 people) over the default fine bins."""
    space = default_space()
    rng = np.random.default_rng(22)
    ages = np.arange(101, dtype=float)
    age = np.where(ages < 60, 1.0, np.exp(-(ages - 60) / 12.0))
    age /= age.sum()
    counts = []
    for people, races, hispanic in (
        (1_500, (0.90, 0.05, 0.02, 0.005, 0.0, 0.01, 0.015), 0.03),
        (8_000, (0.80, 0.12, 0.01, 0.02, 0.001, 0.02, 0.029), 0.06),
        (26_000, (0.55, 0.28, 0.005, 0.06, 0.002, 0.06, 0.043), 0.12),
        (66_610, (0.70, 0.17, 0.004, 0.04, 0.001, 0.045, 0.04), 0.08),
    ):
        race = np.asarray(races) / sum(races)
        probs = np.einsum("a,r,s,e->arse", age, race, [0.51, 0.49], [hispanic, 1 - hispanic])
        counts.append(rng.multinomial(people, probs.ravel()))
    assert len(DEFAULT_RACES) == 7
    return Population(space, ("c1500", "c8000", "c26000", "c66610"), np.asarray(counts, dtype=np.int64))


def _frontier(space, acceptable: set) -> tuple[list, list]:
    lattice = space.lattice
    minimal = [n for n in acceptable if not any(p in acceptable for p in lattice.predecessors(n))]
    rejected = [n for n in space.policies() if n not in acceptable]
    maximal = [n for n in rejected if all(s in acceptable for s in lattice.successors(n))]
    return minimal, maximal


def _check_county(population: Population, region: str, volumes: list[int], every_policy: bool) -> dict:
    space = population.space
    crit = RiskCriterion(k=K, threshold=THRESHOLD, quantile=QUANTILE, sims=SIMS, seed=7)
    found = search_policies(population, [region], volumes, crit)
    people = population.of(region)
    report = {"failures": [], "borderline": 0, "checked": 0}
    for res in found.results:
        acceptable = set(res.acceptable)
        minimal, maximal = _frontier(space, acceptable)
        nodes = space.policies() if every_policy else [*minimal, *maximal]
        exact = {}
        for node in nodes:
            group, n_groups = space.grouping(node)
            sizes = np.bincount(group, weights=people, minlength=n_groups)
            exact[node] = exact_pk_cdf(sizes, res.volume, K, THRESHOLD)
            low, high = pass_bounds(exact[node])
            accepted = node in acceptable
            report["checked"] += 1
            if (accepted and high < 0.001) or (not accepted and low > 0.999):
                report["failures"].append((res.volume, space.format(node), accepted, exact[node], low, high))
            elif high >= 0.001 and low <= 0.999:
                report["borderline"] += 1
        if every_policy:  # the exact probability never falls along an edge of the lattice
            for node in space.policies():
                for succ in space.lattice.successors(node):
                    assert exact[succ] >= exact[node] - 1e-9, (space.format(node), space.format(succ))
    return report


def test_exact_pass_probability_on_the_smallest_county_every_policy() -> None:
    population = synthetic_counties()
    report = _check_county(population, "c1500", [11, 50, 150], every_policy=True)
    assert report["checked"] == 3 * 96
    assert report["failures"] == []


@pytest.mark.slow
@pytest.mark.parametrize("region", ["c1500", "c8000", "c26000", "c66610"])
def test_exact_pass_probability_on_four_synthetic_counties(region: str) -> None:
    population = synthetic_counties()
    volumes = [v for v in (11, 20, 50, 150, 300, 500, 1000) if v <= population.totals[region]]
    report = _check_county(population, region, volumes, every_policy=True)
    assert report["checked"] == 96 * len(volumes)
    assert report["failures"] == [], report["failures"]
