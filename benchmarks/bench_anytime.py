"""The anytime search on Census-Income (KDD): a node and a proven bound within a budget.

Prec, k = 5, at most 5 % suppression, the QIs and hierarchies of ``bench_kdd.py``
(11-14 QIs) plus, beyond 14, four attributes generalized by suppression only
(2 levels each), so 18 QIs give 1,244,160 * 16 = 19,906,560 nodes::

    15: + hispanic_origin; 16: + tax_filer_stat; 17: + region_of_previous_residence;
    18: + member_of_a_labor_union

Per configuration: lattice size, budget, checked nodes, the incumbent's loss, the
proven lower bound, the gap, the stop reason; ``--exact`` also runs OLA and
checks ``bound <= optimum <= incumbent`` (feasible up to 13 QIs); ``--ola-cpu-budget S`` runs
OLA stopped after ``S`` seconds of CPU and checks the same, exit 1 unless it finished (``make
bench``'s ``kdd-18``: 18 QIs, 600 s, issue 24)::

    python benchmarks/bench_anytime.py [--qis 11,18] [--time-limit 60] [--exact] [--ola-cpu-budget 600]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_kdd import BUILDERS, COLUMNS, DATA  # noqa: E402
from safeshare.config.algorithms import make_strategy  # noqa: E402
from safeshare.core.evaluation import Evaluator  # noqa: E402
from safeshare.core.frequency import FrequencyTable  # noqa: E402
from safeshare.data.engines.base import COUNT_COLUMN  # noqa: E402
from safeshare.hierarchy.builders import SuppressionBuilder  # noqa: E402
from safeshare.metrics.loss import make_metric  # noqa: E402
from safeshare.models import KAnonymity, PrivacyCriterion  # noqa: E402
from safeshare.search.context import SearchContext  # noqa: E402

EXTRA: dict[str, Any] = {
    "hispanic_origin": SuppressionBuilder(),
    "tax_filer_stat": SuppressionBuilder(),
    "region_of_previous_residence": SuppressionBuilder(),
    "member_of_a_labor_union": SuppressionBuilder(),
}
ALL_BUILDERS = {**BUILDERS, **EXTRA}
QI_ORDER = list(ALL_BUILDERS)


def load(path: Path) -> pd.DataFrame:
    return pd.read_csv(
        path,
        header=None,
        names=COLUMNS,
        skipinitialspace=True,
        dtype=str,
        usecols=QI_ORDER,
        keep_default_na=False,
    )


def table_for(frame: pd.DataFrame, n_qis: int) -> FrequencyTable:
    qis = QI_ORDER[:n_qis]
    hierarchies = [ALL_BUILDERS[q].build(sorted(frame[q].unique()), q) for q in qis]
    grouped = frame.groupby(qis, sort=False).size().reset_index(name=COUNT_COLUMN)
    return FrequencyTable.from_grouped(grouped, qis, hierarchies)


def run(table: FrequencyTable, algorithm: str, options: dict[str, Any], metric: str = "prec") -> Any:
    ev = Evaluator(table)
    ctx = SearchContext(table, ev, PrivacyCriterion([KAnonymity(5)], 0.05), make_metric(metric, ev))
    wall = time.perf_counter()
    result = make_strategy(algorithm, options).run(ctx)
    return result, time.perf_counter() - wall


class _Budget(Exception):
    """Raised by the progress callback of :func:`ola_within` at its CPU budget."""


def ola_within(table: FrequencyTable, budget_s: float, metric: str = "prec") -> Any:
    """Exact OLA, printing the checked nodes every 30 s of CPU and stopped at ``budget_s``
    seconds of CPU (the progress callback raises; a search answers it within one check); its
    result, or ``None`` at the budget."""
    start, shown = time.process_time(), [0.0]

    def progress(checked: int) -> None:
        cpu = time.process_time() - start
        if cpu - shown[0] >= 30:
            shown[0] = cpu
            print(f"  ola      cpu {cpu:7.1f} s  checked {checked:,}", flush=True)
        if cpu > budget_s:
            raise _Budget(checked)

    ev = Evaluator(table)
    criterion = PrivacyCriterion([KAnonymity(5)], 0.05)
    ctx = SearchContext(table, ev, criterion, make_metric(metric, ev), progress=progress)
    try:
        result = make_strategy("ola", {}).run(ctx)
    except _Budget as stop:
        cpu = time.process_time() - start
        print(f"  ola      stopped at the budget: cpu {cpu:.1f} s, checked {stop.args[0]:,}", flush=True)
        return None
    print(
        f"  ola      finished: cpu {time.process_time() - start:.1f} s  checked {result.checked_nodes:,}  "
        f"optimum {result.objective:.6g}  node {result.node}",
        flush=True,
    )
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--qis", default="11,18", help="QI counts to run (1..18), comma-separated")
    parser.add_argument("--time-limit", type=float, default=60.0)
    parser.add_argument("--max-evaluations", type=int, default=None)
    parser.add_argument("--metric", default="prec")
    parser.add_argument("--exact", action="store_true", help="also run OLA and check the bound")
    parser.add_argument(
        "--ola-cpu-budget",
        type=float,
        default=None,
        help="also run exact OLA, stopped after this many seconds of CPU (issue 24: 18 QIs; exit 1 "
        "unless it finishes)",
    )
    args, _ = parser.parse_known_args()  # benchmarks/run.py passes its options to every benchmark
    if not args.data.exists():
        print(f"Census-Income (KDD) not found at {args.data}: skipped")
        return 0
    frame = load(args.data)
    honest = True
    for n_qis in (int(x) for x in args.qis.split(",")):
        table = table_for(frame, n_qis)
        print(f"{n_qis} QIs: {table.lattice.size:,} nodes, M = {table.n_rows:,} distinct tuples", flush=True)
        options = {"time_limit": args.time_limit, "max_evaluations": args.max_evaluations}
        result, wall = run(table, "anytime", options, args.metric)
        x = result.extra
        print(
            f"  anytime  budget {args.time_limit:g} s  wall {wall:.1f} s  checked {result.checked_nodes:,}  "
            f"popped {x['popped_nodes']:,}  loss {result.objective:.6g}  bound {x['lower_bound']:.6g}  "
            f"gap {x['gap']:.6g} ({100 * x['gap_relative']:.1f} %)  {x['stop_reason']}  node {result.node}",
            flush=True,
        )
        if args.ola_cpu_budget is not None:  # exact OLA within a CPU budget, beside the anytime search
            exact = ola_within(table, args.ola_cpu_budget, args.metric)
            ok = exact is not None and x["lower_bound"] <= exact.objective <= result.objective
            honest = honest and ok
            verdict = "did not finish" if exact is None else "yes" if ok else "NO"
            print(
                f"  target: exact within {args.ola_cpu_budget:g} s of CPU and bound <= optimum <= incumbent: "
                f"{verdict}",
                flush=True,
            )
        elif args.exact:
            exact, ewall = run(table, "ola", {}, args.metric)
            ok = x["lower_bound"] <= exact.objective <= result.objective
            honest = honest and ok
            print(
                f"  ola      wall {ewall:.1f} s  checked {exact.checked_nodes:,}  "
                f"optimum {exact.objective:.6g}  "
                f"bound <= optimum <= incumbent: {'yes' if ok else 'NO'}",
                flush=True,
            )
    return 0 if honest else 1


if __name__ == "__main__":
    sys.exit(main())
