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
   ``api.surveil_evaluate(categories="paper")``, CPU time (``time.process_time``) — target 600 s;
6. (issue 37) a series of 52 weekly releases of 9 synthetic counties
   (:func:`safeshare.surveillance.synthetic.series_frames`: 20,000-300,000 people, 10 % of the records
   reported 1-10 days late), each release cumulative (every week so far, as reported by its Saturday),
   checked against every earlier release of the series and the public daily counts as of the release,
   ``--on-conflict suppress``: the series check's seconds per release (reading the files back and
   :func:`safeshare.verify.series.check_series`) — target 10 s for the 52nd release; beside it the
   same 52 releases without a series (``--new-series`` into a fresh folder, no public counts), the
   peak memory and the ledger's size. ``--series`` runs this part alone.

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
SERIES_TARGETS = {"releases_last_check": 10.0}


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
    crit = RiskCriterion(k=K, simulations=SIMS, seed=1)
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

    from safeshare import api
    from safeshare.surveillance.synthetic import generate_nation

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        generate_nation(folder, seed=1)
        start = time.process_time()
        result = api.surveil_evaluate(
            population_table=folder / "population.csv",
            cases=folder / "cases_long.csv",
            forecasts=folder / "forecasts.csv",
            categories="paper",
            simulations=SIMS,
            seed=1,
        )
        cpu = time.process_time() - start
    return {"nation_cpu": cpu, "nation_regions": float(len({r.region for r in result.regions}))}


def releases(weeks: int = 52, counties: int = 9, policy: str = "3B*e") -> dict[str, float]:
    """Workload 6 (see the module docstring): wall seconds of the releases with and without the
    series, the series check's own seconds, what it withheld, the ledger's bytes and the peak RSS."""
    import json
    import resource
    import tempfile

    import pandas as pd

    from safeshare import api
    from safeshare.surveillance.synthetic import START, series_frames

    frames = series_frames(np.random.default_rng(1), counties=counties, weeks=weeks)
    records = frames["case_records.csv"]
    out: dict[str, float] = {
        "weeks": float(weeks),
        "counties": float(counties),
        "records": float(len(records)),
    }
    check_times, with_series, without = [], 0.0, 0.0
    actions = 0
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        frames["population.csv"].to_csv(folder / "population.csv", index=False)
        regions = sorted(records["region"].unique())
        for week in range(1, weeks + 1):
            cut = str(START + 7 * week - 1)
            known = records[(records["report_date"] <= cut) & (records["date"] <= cut)]
            known.to_csv(folder / "records.csv", index=False)
            days = pd.date_range(str(START), cut).strftime("%Y-%m-%d")
            grid = pd.MultiIndex.from_product([regions, days], names=["region", "date"])
            counts = known.groupby(["region", "date"]).size().rename("new_cases")
            counts.reindex(grid, fill_value=0).reset_index().to_csv(folder / "totals.csv", index=False)
            pop, recs = folder / "population.csv", folder / "records.csv"
            start = time.perf_counter()
            result = api.surveil_release(
                population_table=pop,
                cases_records=recs,
                policy=policy,
                weekly=True,
                out=folder / "series",
                on_conflict="suppress",
                public_totals=folder / "totals.csv",
                custodian_log=folder / "custodian.json",
            )
            with_series += time.perf_counter() - start
            check_times.append(result.timings["series_check"])
            actions += sum(len(p.series) for p in result.periods)
            start = time.perf_counter()
            alone = api.surveil_release(
                population_table=pop,
                cases_records=recs,
                policy=policy,
                weekly=True,
                out=folder / f"alone{week}",
                new_series=True,
            )
            without += time.perf_counter() - start
            out["released_without"] = float(alone.to_dict()["records"])
        held = json.loads((folder / "custodian.json").read_text())
        out["ledger_bytes"] = float((folder / "series" / "series.jsonl").stat().st_size)
        out["released"] = float(held["records_out"])
        out["held_back"] = float(held["records_in"] - held["records_out"])
    out.update(
        releases_with_series=with_series,
        releases_without=without,
        releases_check_total=sum(check_times),
        releases_last_check=check_times[-1],
        releases_max_check=max(check_times),
        releases_actions=float(actions),
        peak_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    )
    return out


def main_series() -> int:
    f = releases()
    print(
        f"series of {int(f['weeks'])} weekly releases, {int(f['counties'])} counties, {int(f['records']):,} "
        "case records (cumulative releases, public daily counts, --on-conflict suppress; seconds)"
    )
    print(
        f"  all releases: {f['releases_with_series']:.1f} with the series, {f['releases_without']:.1f} "
        f"without (new series each time)"
    )
    print(
        f"  series check (read back + check): {f['releases_check_total']:.1f} in all, "
        f"{f['releases_last_check']:.2f} for the last release, {f['releases_max_check']:.2f} at most   "
        f"target {SERIES_TARGETS['releases_last_check']:.0f}"
    )
    print(
        f"  {int(f['releases_actions'])} remedies; last release: {int(f['released']):,} records released "
        f"({int(f['released_without']):,} without the series), {int(f['held_back']):,} not released; "
        f"ledger {f['ledger_bytes'] / 1e6:.1f} MB; peak RSS "
        f"{f['peak_rss_mb']:.0f} MB"
    )
    missed = [k for k, target in SERIES_TARGETS.items() if f[k] > target]
    if missed:
        print(f"  TARGET MISSED: {', '.join(missed)}")
    return 1 if missed else 0


def main() -> int:
    if "--series" in sys.argv[1:]:
        return main_series()
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
