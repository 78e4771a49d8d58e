"""OLA on UCI Adult over the whole 72-cell grid, roll-up evaluation against leaf evaluation.

k in {2, 5, 25, 100} x max_sup in {0, 1, 5, 10, 20, 50} % x metric in {prec, dm_star,
entropy}: each cell is searched through the project's own path (``SearchContext`` and the
``ola`` strategy, a fresh evaluator per search, the setup included in the time) with the
evaluator's roll-up on and off, interleaved (A B A B ...) on this shared machine, best of
``--repeat``. Prints per cell: checked nodes, nodes rolled up, both times; then the median
and the per-checked-node cost, and whether the chosen nodes are identical (they must be)::

    python benchmarks/bench_grid.py [--repeat 3] [--cells prec] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_ola import adult_table  # noqa: E402
from safeshare.config.algorithms import make_strategy  # noqa: E402
from safeshare.core.evaluation import Evaluator  # noqa: E402
from safeshare.core.frequency import FrequencyTable  # noqa: E402
from safeshare.metrics.loss import make_metric  # noqa: E402
from safeshare.models import KAnonymity, PrivacyCriterion  # noqa: E402
from safeshare.search.context import SearchContext  # noqa: E402

KS = (2, 5, 25, 100)
#: roll-up setting measured against the leaf evaluator
ROLLUP_RATIO = 0.25
LIMITS = (0.0, 0.01, 0.05, 0.1, 0.2, 0.5)
METRICS = ("prec", "dm_star", "entropy")


def search_once(table: FrequencyTable, k: int, limit: float, metric: str, rollup: bool) -> dict[str, Any]:
    """One search the way the workflow runs it, setup included."""
    start = time.perf_counter()
    ev = Evaluator(table, rollup_ratio=ROLLUP_RATIO if rollup else 0.0)
    ctx = SearchContext(table, ev, PrivacyCriterion([KAnonymity(k)], limit), make_metric(metric, ev))
    result = make_strategy("ola").run(ctx)
    seconds = time.perf_counter() - start
    return {
        "seconds": seconds,
        "checked": result.checked_nodes,
        "rolled_up": ev.rolled_up,
        "evaluations": ev.evaluations,
        "node": result.node,
    }


def run(table: FrequencyTable, repeat: int, metrics: tuple[str, ...]) -> list[dict[str, Any]]:
    rows = []
    for metric in metrics:
        for k in KS:
            for limit in LIMITS:
                on: list[dict[str, Any]] = []
                off: list[dict[str, Any]] = []
                for _ in range(repeat):  # interleaved
                    off.append(search_once(table, k, limit, metric, False))
                    on.append(search_once(table, k, limit, metric, True))
                rows.append(
                    {
                        "metric": metric,
                        "k": k,
                        "max_suppression": limit,
                        "checked": on[0]["checked"],
                        "evaluations": on[0]["evaluations"],
                        "rolled_up": on[0]["rolled_up"],
                        "leaf_s": min(r["seconds"] for r in off),
                        "rollup_s": min(r["seconds"] for r in on),
                        "same_node": (on[0]["node"], on[0]["checked"]) == (off[0]["node"], off[0]["checked"]),
                    }
                )
    return rows


def report(rows: list[dict[str, Any]]) -> bool:
    print(f"{'metric':>8} {'k':>4} {'sup':>5} {'checked':>7} {'rolled':>7} {'leaf ms':>8} {'rollup ms':>9}")
    for r in rows:
        print(
            f"{r['metric']:>8} {r['k']:>4} {r['max_suppression']:>5.0%} {r['checked']:>7} "
            f"{r['rolled_up']:>7} "
            f"{1000 * r['leaf_s']:>8.1f} {1000 * r['rollup_s']:>9.1f}"
            + ("" if r["same_node"] else "  <-- DIFFERENT RESULT")
        )
    leaf = statistics.median(r["leaf_s"] for r in rows)
    roll = statistics.median(r["rollup_s"] for r in rows)
    ratios = [r["rollup_s"] / r["leaf_s"] for r in rows]
    checked = sum(r["checked"] for r in rows)
    print(
        f"median search: leaf {1000 * leaf:.1f} ms, roll-up {1000 * roll:.1f} ms; "
        f"median per-cell ratio roll-up/leaf {statistics.median(ratios):.2f} "
        f"(min {min(ratios):.2f}, max {max(ratios):.2f})"
    )
    print(
        f"per checked node: leaf {1000 * sum(r['leaf_s'] for r in rows) / checked:.3f} ms, "
        f"roll-up {1000 * sum(r['rollup_s'] for r in rows) / checked:.3f} ms ({checked:,} checked)"
    )
    same = all(r["same_node"] for r in rows)
    print(f"same node and checked count in every cell: {'yes' if same else 'NO'}")
    return same


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--cells", default=",".join(METRICS), help="metrics to run, comma-separated")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    _, table = adult_table()
    rows = run(table, args.repeat, tuple(args.cells.split(",")))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1, default=str))
    return 0 if report(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
