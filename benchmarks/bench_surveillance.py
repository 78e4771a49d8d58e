"""Surveillance policy risk speed (issue 10; Brown et al., JAMIA 2022): the four workloads of the issue.

All with 1,000 simulations, best of several runs (a 2-core machine shared with other jobs):

1. the walkthrough search: 9 synthetic counties of 20,000-30,000 people, case volumes 10, 11, 50,
   75, 150, 300, 500, 750, PK11 97.5th percentile <= 0.01, with pruning (the core
   ``find_minimal_nodes``) — target 1 s;
2. the same evaluating all 96 policies at every volume — target 3 s;
3. a 300,000-person county, all 96 policies, volumes 10 .. 20,000 — target 3 s;
4. a 200-day series of 20,000 cases in that county, lag 3: the draw (shared by every policy),
   then the finest (``0Ase``), a middle (``2Bse``) and the coarsest (``****``) policy —
   target 1 s per policy;
5. (issue 22) Table 2 in the paper's form for the synthetic nation (200 counties over the paper's five
   categories, 20 weeks, 1,000 simulations, daily and weekly releases):
   ``usecases.evaluate(categories="paper")``, CPU time (``time.process_time``) — target 600 s.

Baseline measured in the same run: a plain person-by-person simulation (per simulation, an
ordered sample of people without replacement, groups counted by ``np.unique`` per record set),
timed on a reduced size and scaled linearly (its cost is linear in simulations x regions x
volumes x policies, and in simulations x periods for the series). The counties are drawn from
the synthetic generator's marginals (:mod:`safeshare.surveillance.synthetic`); no real data.

Run: ``PYTHONPATH=src python benchmarks/bench_surveillance.py`` (or ``make bench``).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from safeshare.surveillance.inputs import Population  # noqa: E402
from safeshare.surveillance.policies import default_space  # noqa: E402
from safeshare.surveillance.search import RiskCriterion, search_policies  # noqa: E402
from safeshare.surveillance.simulate import draw_series, seeded, series_risk  # noqa: E402
from safeshare.surveillance.synthetic import REGIONS, _age_shares  # noqa: E402

SIMS, K = 1000, 11
WALK_VOLUMES = [10, 11, 50, 75, 150, 300, 500, 750]
BIG_VOLUMES = [10, 11, 50, 100, 500, 1000, 5000, 10000, 20000]
TARGETS = {"walk_pruned": 1.0, "walk_all": 3.0, "big_all": 3.0, "series_policy": 1.0, "nation_cpu": 600.0}


def _best(fn: Any, repeats: int = 3) -> tuple[float, Any]:
    best, value = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        value = fn()
        best = min(best, time.perf_counter() - start)
    return best, value


def counties(sizes: list[int], seed: int = 1) -> Population:
    """Synthetic counties of the given sizes (the generator's age, race and ethnicity marginals)."""
    space = default_space()
    rng = np.random.default_rng(seed)
    rows = []
    for i, people in enumerate(sizes):
        _, _, _, races, hispanic = REGIONS[i % len(REGIONS)]
        probs = np.einsum(
            "a,r,s,e->arse",
            _age_shares(),
            np.asarray(races) / sum(races),
            np.array([0.51, 0.49]),
            np.array([hispanic, 1 - hispanic]),
        )
        rows.append(rng.multinomial(people, probs.ravel()))
    return Population(space, tuple(f"C{i}" for i in range(len(sizes))), np.array(rows, dtype=np.int64))


def baseline_volume(
    pop: np.ndarray, group_of_bin: np.ndarray, volume: int, sims: int, seed: int
) -> np.ndarray:
    """Person by person: per simulation ``volume`` people without replacement, their groups counted."""
    rng = np.random.default_rng(seed)
    person_group = group_of_bin[np.repeat(np.arange(pop.size), pop)]
    out = np.zeros(sims)
    for s in range(sims):
        groups = person_group[rng.choice(person_group.size, volume, replace=False)]
        _, inverse, counts = np.unique(groups, return_inverse=True, return_counts=True)
        out[s] = (counts[inverse] < K).mean()
    return out


def baseline_series(
    pop: np.ndarray, group_of_bin: np.ndarray, cases: np.ndarray, lag: int, sims: int
) -> None:
    """Person by person: per simulation a random order of the people, each window's groups counted."""
    rng = np.random.default_rng(0)
    person_group = group_of_bin[np.repeat(np.arange(pop.size), pop)]
    cum = np.concatenate([[0], np.cumsum(cases)])
    for _ in range(sims):
        order = person_group[rng.choice(person_group.size, int(cum[-1]), replace=False)]
        for t in range(cases.size):
            window = order[cum[max(0, t + 1 - lag)] : cum[t + 1]]
            if window.size:
                _, inverse, counts = np.unique(window, return_inverse=True, return_counts=True)
                (counts[inverse] < K).mean()


def run() -> dict[str, float]:
    figures: dict[str, float] = {}
    walk = counties([20_000 + 1_250 * i for i in range(9)])
    crit = RiskCriterion(k=K, sims=SIMS, seed=1)
    figures["walk_pruned"], pruned = _best(lambda: search_policies(walk, walk.regions, WALK_VOLUMES, crit))
    figures["walk_all"], full = _best(
        lambda: search_policies(walk, walk.regions, WALK_VOLUMES, crit, exhaustive=True)
    )
    assert [r.acceptable for r in pruned.results] == [r.acceptable for r in full.results]
    figures["walk_checks"] = sum(r.checked for r in pruned.results)

    # baseline: one county, volumes 50 and 750, 100 simulations, all 96 policies -> scaled
    space = walk.space
    policies = space.policies()
    base_sims = 100
    start = time.perf_counter()
    for volume in (50, 750):
        for node in policies:
            baseline_volume(walk.of("C4"), space.grouping(node)[0], volume, base_sims, seed=volume)
    per_unit = (time.perf_counter() - start) / (2 * base_sims)  # all policies, one volume, one sim
    figures["walk_all_baseline"] = per_unit * SIMS * len(walk.regions) * (len(WALK_VOLUMES) - 1)

    big = counties([300_000], seed=2)
    figures["big_all"], _ = _best(
        lambda: search_policies(big, big.regions, BIG_VOLUMES, crit, exhaustive=True), repeats=2
    )
    start = time.perf_counter()
    for node in policies[::8]:
        baseline_volume(big.of("C0"), space.grouping(node)[0], 5000, 10, seed=1)
    per_unit = (time.perf_counter() - start) / (len(policies[::8]) * 10 * 5000)  # per policy, sim, case
    figures["big_all_baseline"] = per_unit * len(policies) * SIMS * sum(BIG_VOLUMES[1:])

    rng = np.random.default_rng(5)
    wave = np.exp(-(((np.arange(200) - 100) / 40.0) ** 2))
    cases = rng.multinomial(20_000, wave / wave.sum())
    figures["series_draw"], draw = _best(lambda: draw_series(big.of("C0"), cases, SIMS, seeded(1)), repeats=2)
    for code in ("0Ase", "2Bse", "****"):
        grouping = space.grouping(space.parse(code))
        figures[f"series_{code}"], _ = _best(lambda g=grouping: series_risk(draw, g, K, 3), repeats=2)
    figures["series_policy"] = max(figures[f"series_{c}"] for c in ("0Ase", "2Bse", "****"))
    base_sims = 5
    start = time.perf_counter()
    baseline_series(big.of("C0"), space.grouping(space.parse("2Bse"))[0], cases, 3, base_sims)
    figures["series_baseline"] = (time.perf_counter() - start) / base_sims * SIMS
    figures.update(nation())
    return figures


def nation() -> dict[str, float]:
    """Table 2 for the synthetic nation: CPU seconds (no baseline: a person-by-person run of the same
    would cost the series baseline per policy for each of its thousands of policy evaluations)."""
    import tempfile

    from safeshare.surveillance import usecases
    from safeshare.surveillance.synthetic import generate_nation

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        generate_nation(folder, seed=1)
        start = time.process_time()
        result = usecases.evaluate(
            population=folder / "population.csv",
            cases=folder / "cases_long.csv",
            forecasts=folder / "forecasts.csv",
            categories="paper",
            sims=SIMS,
            seed=1,
        )
        cpu = time.process_time() - start
    return {"nation_cpu": cpu, "nation_regions": float(len({r.region for r in result.regions}))}


def main() -> int:
    f = run()
    print(f"surveillance risk forecasts, {SIMS} simulations, PK{K} (best of several runs; seconds)")
    rows = [
        (
            "walkthrough search, pruned",
            f["walk_pruned"],
            "walk_pruned",
            f"{int(f['walk_checks'])} policy checks of 768",
        ),
        (
            "walkthrough search, all 96 x 8",
            f["walk_all"],
            "walk_all",
            f"person-by-person baseline {f['walk_all_baseline']:.0f} s"
            " (scaled from 1 county, 2 volumes, 100 sims)",
        ),
        (
            "300k county, all 96 x 9 volumes",
            f["big_all"],
            "big_all",
            f"person-by-person baseline {f['big_all_baseline']:.0f} s"
            " (scaled from 12 policies, 10 sims, 5,000 cases)",
        ),
    ]
    for label, value, key, note in rows:
        print(f"  {label:34s} {value:7.2f}   target {TARGETS[key]:.0f}   {note}")
    print(
        f"  200-day series, 20,000 cases: draw {f['series_draw']:.2f}; per policy "
        + ", ".join(f"{c} {f[f'series_{c}']:.2f}" for c in ("0Ase", "2Bse", "****"))
        + f"   target 1 per policy   person-by-person baseline {f['series_baseline']:.0f} s per policy"
        " (scaled from 5 sims)"
    )
    print(
        f"  Table 2, synthetic nation of {int(f['nation_regions'])} counties, daily and weekly: "
        f"{f['nation_cpu']:.0f} s of CPU   target {TARGETS['nation_cpu']:.0f}"
    )
    missed = [k for k, target in TARGETS.items() if f[k] > target]
    if missed:
        print(f"  TARGET MISSED: {', '.join(missed)}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
