"""OLA beside ARX 3.9's FLASH on UCI Adult over the 72-cell grid, interleaved in one run.

k in {2, 5, 25, 100} x max_sup in {0, 1, 5, 10, 20, 50} % x metric in {prec, dm_star,
entropy}. Both tools get the same records (the 32,561 rows safeshare reads from
``examples/adult/adult.data``, written to a temporary CSV for ARX) and the same hierarchy
files (``examples/adult/hierarchies``, ARX's format). ARX runs in one warm JVM
(``ArxBench serve``, see ``benchmarks/arx.py``), warmed by one full pass over the grid;
then each cell runs ARX, ours, ARX, ours, ... and keeps the best of ``--repeat``.

What each time includes:

* ARX ``time_ms`` = ``ARXResult.getTime()``: FLASH's traversal (every check groups the
  encoded rows, with ARX's snapshots and history) plus building the result lattice. Not
  included: reading the CSV (done once at start), encoding the data and hierarchies,
  initializing the metric and the transformation checker (``anonymize_ms`` includes those).
* ours ``search`` = :func:`ours_once`: a fresh ``Evaluator``, the
  ``SearchContext``, the metric, the entropy guide and OLA, as the workflow runs them, with
  the compiled loops (``--loops compiled``, the default: numba's import and cache load, about
  0.8 s, is paid once per process, as ARX's JVM start and JIT warm-up are) or numpy's
  (``--loops numpy``: what a one-off CLI run on a table this small uses). Not
  included: reading the CSV and building the frequency table (the group-by of the QIs,
  measured once as ``tabulate`` and added in the second ratio, against ``anonymize_ms``).

Per cell: both times and their ratio, checked nodes of both, the chosen levels of both, and
whether the optimum is the same: safeshare's loss of ARX's node equals that of ours (the
levels too, or a tie: another node of the same loss; ARX's own loss is printed to be on the
same scale). Targets (issue 11): median ratio <= 0.25, no cell slower than ARX (max ratio
<= 1), equal losses in all 72 cells. Without ARX (not built, or no
java) it says so and prints safeshare's figures alone::

    python benchmarks/bench_arx.py [--repeat 3] [--cells prec,dm_star,entropy]
                                   [--loops compiled|numpy] [--hierarchies ours,alt] [--json out.json]

``--hierarchies alt``: Adult's second set (``bench_ola.ALT_HIERARCHIES``: the same QIs and
heights, the project's builders at other widths; issue 24), given to ARX too.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from arx import Arx, ArxServer, export_hierarchies, locate_or_say, write_data_csv  # noqa: E402
from bench_grid import KS, LIMITS, METRICS  # noqa: E402
from bench_ola import HIERARCHY_SETS, QIS, adult_hierarchies, adult_table  # noqa: E402
from safeshare.config.algorithms import make_strategy  # noqa: E402
from safeshare.core.evaluation import Evaluator  # noqa: E402
from safeshare.core.frequency import FrequencyTable  # noqa: E402
from safeshare.data.engines.memory import MemoryEngine  # noqa: E402
from safeshare.metrics.loss import make_metric  # noqa: E402
from safeshare.models import KAnonymity, PrivacyCriterion  # noqa: E402
from safeshare.search.context import SearchContext  # noqa: E402

TARGET_MEDIAN = 0.25
TARGET_MAX = 1.0


def cells(metrics: tuple[str, ...]) -> list[tuple[str, int, float]]:
    return [(m, k, limit) for m in metrics for k in KS for limit in LIMITS]


def ours_once(
    table: FrequencyTable, k: int, limit: float, metric: str, compiled: bool | None
) -> dict[str, Any]:
    """One OLA search the way the workflow runs it (a fresh evaluator; setup included), with
    the compiled loops or with numpy's (``compiled``; ``None``: the evaluator's default; the
    search follows its evaluator)."""
    start, cpu = time.perf_counter(), time.process_time()
    ev = Evaluator(table, compiled=compiled)
    ctx = SearchContext(table, ev, PrivacyCriterion([KAnonymity(k)], limit), make_metric(metric, ev))
    result = make_strategy("ola").run(ctx)
    return {
        "seconds": time.perf_counter() - start,
        "cpu_s": time.process_time() - cpu,
        "checked": result.checked_nodes,
        "node": result.node,
    }


def tabulate_s(engine: MemoryEngine, repeat: int, which: str = "ours") -> float:
    """Best-of seconds to build the frequency table from the rows in memory (group-by + encoding)."""
    hierarchies = adult_hierarchies(engine.frame, which)
    best = math.inf
    for _ in range(repeat):
        start = time.perf_counter()
        FrequencyTable.from_grouped(engine.grouped_counts(QIS), QIS, hierarchies)
        best = min(best, time.perf_counter() - start)
    return best


def loss_of(table: FrequencyTable, metric: str, node: tuple[int, ...]) -> float:
    ev = Evaluator(table)
    return float(make_metric(metric, ev).value(node))


def same_loss(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


def run(
    arx: Arx | None, repeat: int, metrics: tuple[str, ...], compiled: bool, which: str = "ours"
) -> dict[str, Any]:
    engine, table = adult_table(which)
    grid = cells(metrics)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench-arx-") as tmp:
        server = None
        if arx is not None:
            csv = write_data_csv(engine.frame, QIS, Path(tmp) / "adult.csv")
            hierarchies = dict(zip(QIS, adult_hierarchies(engine.frame, which), strict=True))
            server = ArxServer(arx, csv, export_hierarchies(hierarchies, Path(tmp) / "hierarchies"), QIS)
            start = time.perf_counter()
            for metric, k, limit in grid:  # warm ARX's JVM: one full pass
                server.search(k, limit, metric)
            warm = time.perf_counter() - start
            print(f"ARX warmed by one pass over {len(grid)} cells ({warm:.0f} s)", flush=True)
        ours_once(table, 5, 0.05, "prec", compiled)  # warm ours (imports, first allocations)
        try:
            for metric, k, limit in grid:
                a_runs: list[dict[str, Any]] = []
                o_runs: list[dict[str, Any]] = []
                for _ in range(repeat):  # interleaved: ARX, ours, ARX, ours, ...
                    if server is not None:
                        a_runs.append(server.search(k, limit, metric))
                    o_runs.append(ours_once(table, k, limit, metric, compiled))
                ours_node = tuple(int(x) for x in o_runs[0]["node"])
                row: dict[str, Any] = {
                    "metric": metric,
                    "k": k,
                    "max_suppression": limit,
                    "ours_s": min(r["seconds"] for r in o_runs),
                    "ours_cpu_s": min(r["cpu_s"] for r in o_runs),
                    "ours_checked": o_runs[0]["checked"],
                    "ours_node": ours_node,
                    "ours_loss": loss_of(table, metric, ours_node),
                }
                if a_runs:
                    a = a_runs[0]
                    arx_node = tuple(int(x) for x in a["levels"]) if a.get("found") else None
                    row.update(
                        arx_s=min(r["time_ms"] for r in a_runs) / 1000,
                        arx_call_s=min(r["anonymize_ms"] for r in a_runs) / 1000,
                        arx_checked=a["checked"],
                        arx_node=arx_node,
                        arx_loss_raw=a.get("loss"),
                        ours_loss_of_arx_node=None if arx_node is None else loss_of(table, metric, arx_node),
                    )
                    row["ratio"] = row["ours_s"] / row["arx_s"] if row["arx_s"] > 0 else math.inf
                    row["same_node"] = arx_node == ours_node
                    row["same_loss"] = arx_node is not None and same_loss(
                        row["ours_loss_of_arx_node"], row["ours_loss"]
                    )
                rows.append(row)
                show(row)
        finally:
            if server is not None:
                server.close()
    tab = tabulate_s(engine, max(3, repeat), which)
    return {
        "rows": rows,
        "tabulate_s": tab,
        "repeat": repeat,
        "arx": arx is not None,
        "compiled": compiled,
        "hierarchies": which,
    }


def _levels(node: tuple[int, ...] | None) -> str:
    return "-" if node is None else "".join(str(x) for x in node)


HEADER = (
    f"{'metric':>8} {'k':>4} {'sup':>4} {'ARX ms':>8} {'ours ms':>8} {'ratio':>6} "
    f"{'chk ARX':>7} {'chk ours':>8} {'ARX node':>10} {'our node':>10} same"
)


def show(r: dict[str, Any]) -> None:
    if "arx_s" not in r:
        print(
            f"{r['metric']:>8} {r['k']:>4} {r['max_suppression']:>4.0%} {'':>8} {1000 * r['ours_s']:>8.1f} "
            f"{'':>6} {'':>7} {r['ours_checked']:>8} {'':>10} {_levels(r['ours_node']):>10}",
            flush=True,
        )
        return
    same = "node" if r["same_node"] else ("loss" if r["same_loss"] else "NO")
    print(
        f"{r['metric']:>8} {r['k']:>4} {r['max_suppression']:>4.0%} {1000 * r['arx_s']:>8.1f} "
        f"{1000 * r['ours_s']:>8.1f} {r['ratio']:>6.2f} {r['arx_checked']:>7} {r['ours_checked']:>8} "
        f"{_levels(r['arx_node']):>10} {_levels(r['ours_node']):>10} {same}",
        flush=True,
    )


def summary(res: dict[str, Any]) -> bool:
    rows = res["rows"]
    tab = res["tabulate_s"]
    ours_checked = sum(r["ours_checked"] for r in rows)
    ours_total = sum(r["ours_s"] for r in rows)
    print(f"ours: {'compiled loops (numba)' if res['compiled'] else 'numpy loops (no numba)'}")
    print(
        f"ours: median search {1000 * statistics.median(r['ours_s'] for r in rows):.1f} ms, "
        f"{1000 * ours_total / ours_checked:.3f} ms per checked node ({ours_checked:,} checked); "
        f"frequency table from the rows in memory {1000 * tab:.1f} ms"
    )
    cpu_total = sum(r["ours_cpu_s"] for r in rows)
    cpu_median = statistics.median(r["ours_cpu_s"] for r in rows)
    print(
        f"ours: CPU time of the searches: median {1000 * cpu_median:.1f} ms, "
        f"sum over the {len(rows)} cells {cpu_total:.2f} s"
    )
    if not res["arx"]:
        return True
    ratios = [r["ratio"] for r in rows]
    med, worst = statistics.median(ratios), max(ratios)
    arx_checked = sum(r["arx_checked"] for r in rows)
    arx_total = sum(r["arx_s"] for r in rows)
    print(
        f"ARX:  median search {1000 * statistics.median(r['arx_s'] for r in rows):.1f} ms "
        f"(whole anonymize call {1000 * statistics.median(r['arx_call_s'] for r in rows):.1f} ms), "
        f"{1000 * arx_total / arx_checked:.3f} ms per checked node ({arx_checked:,} checked)"
    )
    slower = [r for r in rows if r["ratio"] > TARGET_MAX]
    named = ", ".join(f"{r['metric']} k={r['k']} {r['max_suppression']:.0%}" for r in slower[:6])
    print(
        f"ratio ours/ARX (search vs time_ms): median {med:.2f} (target <= {TARGET_MEDIAN}: "
        f"{'met' if med <= TARGET_MEDIAN else 'MISSED'}), min {min(ratios):.2f}, max {worst:.2f} "
        f"(target <= {TARGET_MAX:g}: {'met' if worst <= TARGET_MAX else 'MISSED'}, "
        f"{len(slower)} cells slower than ARX" + (f": {named}" if slower else "") + ")"
    )
    whole = [(tab + r["ours_s"]) / r["arx_call_s"] for r in rows]
    print(
        f"ratio ours/ARX (frequency table + search vs the whole anonymize call): median "
        f"{statistics.median(whole):.2f}, max {max(whole):.2f}"
    )
    same_node = sum(r["same_node"] for r in rows)
    same_loss_n = sum(r["same_loss"] for r in rows)
    print(
        f"identical optimum (the two nodes' losses equal, safeshare's metric): {same_loss_n}/{len(rows)} "
        f"(target {len(rows)}: {'met' if same_loss_n == len(rows) else 'MISSED'}); same levels "
        f"{same_node}/{len(rows)} (the others: two nodes of equal loss, a tie); "
        f"checked nodes ours/ARX {ours_checked / arx_checked:.2f}"
    )
    for metric in dict.fromkeys(r["metric"] for r in rows):
        pairs = [
            (r["arx_loss_raw"], r["ours_loss_of_arx_node"])
            for r in rows
            if r["metric"] == metric and r["arx_node"] is not None and r["ours_loss_of_arx_node"]
        ]
        scale = [a / b for a, b in pairs if a is not None and b]
        if scale:
            equal = all(math.isclose(s, 1.0, rel_tol=1e-6) for s in scale)
            print(
                f"  {metric}: ARX's own loss of its node / safeshare's loss of the same node: "
                + ("1 (same scale)" if equal else f"{min(scale):.4g}..{max(scale):.4g} (another scale)")
            )
    return bool(med <= TARGET_MEDIAN and worst <= TARGET_MAX and same_loss_n == len(rows))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs per cell and tool (best is kept)")
    parser.add_argument("--cells", default=",".join(METRICS), help="metrics to run, comma-separated")
    parser.add_argument("--json", type=Path)
    parser.add_argument(
        "--loops",
        choices=("compiled", "numpy"),
        default="compiled",
        help="our inner loops: compiled (numba, loaded once per process, as ARX's JVM is warm) or "
        "numpy (what a one-off CLI run on a table this small uses: no numba import)",
    )
    parser.add_argument(
        "--hierarchies",
        default="ours",
        help=f"hierarchy sets to run, comma-separated, of: {', '.join(HIERARCHY_SETS)} (issue 24: "
        "ours = examples/adult/hierarchies, alt = bench_ola.ALT_HIERARCHIES)",
    )
    args, _ = parser.parse_known_args()  # benchmarks/run.py passes its options to every benchmark
    arx = locate_or_say()
    ok = True
    results = {}
    for which in args.hierarchies.split(","):
        print(f"hierarchies {which!r}")
        print(HEADER)
        res = run(arx, args.repeat, tuple(args.cells.split(",")), args.loops == "compiled", which)
        results[which] = res
        ok = summary(res) and ok
    if args.json:
        shown = results[which] if len(results) == 1 else results
        args.json.write_text(json.dumps(shown, indent=1, default=str))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
