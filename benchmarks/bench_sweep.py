"""Benchmark: a sweep on one frequency table vs. one fresh anonymization per configuration.

Run from the repository root::

    PYTHONPATH=src python benchmarks/bench_sweep.py [--quick]

Figures printed (UCI Adult, 32,561 records, 9 QIs, 7,776 nodes):

1. the thesis' Fig. 6.1 grid restricted to Prec (k in {5, 25, 100} x max_sup in
   {0, 1, 5, 10, 20, 50} %: 18 searches), run (a) as a :class:`~safeshare.workflows.sweep.Sweep`
   sharing ONE frequency table and ONE evaluator, and (b) the baseline measured in
   the same run: every configuration builds its own frequency table (GROUP BY over
   the records) and its own evaluator, as 18 separate ``safeshare anonymize``
   calls would (minus process start-up and writing);
2. the full Fig. 6.1 grid (54 searches, three metrics) as a sweep;
3. the classifier of the utility task (thesis §5.3) fitted on the original training
   set with BLAS limited to one thread (what :mod:`safeshare.utility.classifier`
   does) against the same fit with BLAS's default threads.

Both sides of each comparison give identical results (asserted). Each side
is warmed up once, then the two sides alternate and the best time of each is
reported. Timings are wall-clock on a possibly shared machine: compare the two
columns of a run, not runs with each other.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from threadpoolctl import threadpool_limits  # type: ignore[import-untyped]

from safeshare.config import load_config
from safeshare.core.evaluation import Evaluator
from safeshare.data.engines.memory import MemoryEngine
from safeshare.models import KAnonymity
from safeshare.utility import UtilityTask, heldout_source, read_test_set
from safeshare.utility.classifier import build_pipeline
from safeshare.utility.features import clean_labels, design_frame
from safeshare.workflows.anonymizer import Anonymizer, build_frequency_table
from safeshare.workflows.sweep import Sweep, SweepGrid

ROOT = Path(__file__).resolve().parent.parent
ADULT = ROOT / "examples" / "adult"


def bench_sweep(quick: bool, repeats: int) -> None:
    cfg = load_config(ADULT / "adult.yaml")
    engine = MemoryEngine(cfg.source)
    ks = (5, 25) if quick else (5, 25, 100)
    limits = (0.0, 1.0, 5.0) if quick else (0.0, 1.0, 5.0, 10.0, 20.0, 50.0)
    grid = SweepGrid(ks, limits, ("prec",))

    def shared() -> tuple[float, list[tuple[int, ...] | None]]:
        start = time.perf_counter()
        table, _ = build_frequency_table(engine, cfg.schema)
        result = Sweep(cfg.spec(), grid).run(table, Evaluator(table))
        return time.perf_counter() - start, [r.node for r in result.rows]

    def fresh() -> tuple[float, list[tuple[int, ...] | None]]:
        start = time.perf_counter()
        nodes = [
            Anonymizer(cfg.schema, [KAnonymity(k)], max_suppression=pct / 100, metric=metric).fit(engine).node
            for k, pct, metric in grid
        ]
        return time.perf_counter() - start, nodes

    shared()  # warm-up: imports and first-call costs are paid before anything is timed
    shared_s, fresh_s = [], []
    for _ in range(repeats):  # alternate, so that a change in machine load hits both sides
        t, nodes_shared = shared()
        shared_s.append(t)
        t, nodes_fresh = fresh()
        fresh_s.append(t)
        assert nodes_shared == nodes_fresh, "the sweep and the fresh runs disagree"
    a, b = min(shared_s), min(fresh_s)
    n = len(grid)
    print(f"1. {n} OLA searches (Prec) on UCI Adult, best of {repeats}")
    print(f"   sweep, one table + one evaluator : {a:8.2f} s  ({a / n:.3f} s per configuration)")
    print(f"   baseline, fresh table per config : {b:8.2f} s  ({b / n:.3f} s per configuration)")
    print(f"   speed-up                         : {b / a:8.2f} x")

    if not quick:
        full = SweepGrid(ks, limits, ("prec", "dm_star", "entropy"))
        start = time.perf_counter()
        table, _ = build_frequency_table(engine, cfg.schema)
        result = Sweep(cfg.spec(), full).run(table, Evaluator(table))
        total = time.perf_counter() - start
        searches = [r.search_seconds for r in result.rows]
        print(f"2. the full Fig. 6.1 grid: {len(full)} searches in {total:.2f} s")
        print(
            f"   per search: median {statistics.median(searches):.3f} s, max {max(searches):.3f} s; "
            f"checked nodes median {statistics.median(r.checked_nodes for r in result.rows):.0f} of 7,776"
        )


def bench_classifier(repeats: int) -> None:
    cfg = load_config(ADULT / "adult.yaml")
    test = read_test_set(heldout_source(cfg.source, ADULT / "adult.test", skip_rows=1))
    task = UtilityTask(cfg.schema, MemoryEngine(cfg.source), test, "income")
    frame = task.train.frame
    x = design_frame(frame, task.features)
    y = clean_labels(frame["income"], True).to_numpy(dtype=object)

    def fit(limit: int | None) -> tuple[float, float]:
        pipeline = build_pipeline(task.features, task.classifier)
        start = time.perf_counter()
        with threadpool_limits(limits=limit, user_api="blas"):
            pipeline.fit(x, y)
        elapsed = time.perf_counter() - start
        accuracy = float(
            (pipeline.predict(design_frame(task.test, task.features)) == task.y_test.to_numpy()).mean()
        )
        return elapsed, accuracy

    fit(1)  # warm-up
    one, default = [], []
    for _ in range(repeats):  # alternate, so that a change in machine load hits both sides
        one.append(fit(1))
        default.append(fit(None))
    assert one[0][1] == default[0][1]
    t1 = min(t for t, _ in one)
    td = min(t for t, _ in default)
    print(f"3. logistic regression on the original training set (32,561 records), best of {repeats}")
    print(f"   BLAS on one thread (used)        : {t1:8.3f} s  accuracy {one[0][1]:.4f}")
    print(f"   BLAS default threads (baseline)  : {td:8.3f} s  accuracy {default[0][1]:.4f}")
    print(f"   speed-up                         : {td / t1:8.2f} x")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smaller grid and fewer repeats")
    args, _ = parser.parse_known_args()
    bench_sweep(args.quick, 1 if args.quick else 3)
    bench_classifier(1 if args.quick else 3)
    return 0  # both sides of each comparison are asserted to give identical results


if __name__ == "__main__":
    sys.exit(main())
