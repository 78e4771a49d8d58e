"""OLA on Census-Income (KDD): big lattices (11-14 QIs), Prec, k = 5, at most 5 % suppression.

The data (199,523 records, UCI, CC BY 4.0) is read from ``--data`` (default: the shared
datasets folder; the benchmark says so and stops when it is missing). Hierarchies are made
with the project's builders; the QIs are added in this order, giving the lattice sizes of
issue 11 (11 QIs: 103,680 nodes; 12: 207,360; 13: 414,720; 14: 1,244,160)::

    age (5-, 10-, 20-year bands, *)             5 levels
    detailed_industry_recode, detailed_occupation_recode (mask 1 digit, *)   3 levels each
    weeks_worked_in_year (26-week bands, *), num_persons_worked_for_employer (3)   3 each
    wage_per_hour (500, 2000), capital_gains (1000, 10000)   4 levels each
    sex, race, marital_stat, education (suppression)   2 levels each
    12: + citizenship; 13: + class_of_worker (2 levels); 14: + own_business_or_self_employed (3)

First a search on 2,000 records compiles the numba loops (or loads them from numba's
cache) and says how long that took; then, per configuration: checked nodes, search seconds
(process CPU and wall), time per checked node, with the default evaluator; ``--compare``
also runs it with roll-up evaluation on (``ROLLUP_RATIO``) and checks that the node and the
checked count are the same.

Beside ARX (when it is built, see ``benchmarks/arx.py``; ``--no-arx`` leaves it out): the
same hierarchies are exported to ARX's format (``QI.csv`` = ``value;level1;...;top``) and
the same QI columns of the same records to a CSV, in a temporary directory, and ARX 3.9's
FLASH runs the same search (Prec, k = 5, 5 %) in its own JVM (``ArxBench serve``), before
ours, capped at ``--arx-timeout`` seconds (then reported as "> T"). ARX's time is
``ARXResult.getTime()`` (its search, without reading or encoding the data); ours is the
search with its setup (a fresh evaluator), without reading the data or building the
frequency table. The JVM is not warmed: JIT warm-up is a small part of searches of tens
of seconds::

    python benchmarks/bench_kdd.py [--qis 11,12,13] [--hierarchies ours,alt] [--compare] [--no-arx]
                                   [--arx-timeout 300]

``--hierarchies alt``: the second set (:data:`ALT_BUILDERS`, the same columns and heights at
other widths); ``random``: the third (issue 36, :class:`RandomNesting`), generated from the
data with a fixed seed: random, unbalanced nestings of each column's values at the same heights
(the same lattice).

Per set, two exact searches on the same table: OLA (``ola``, every k-minimal node, the
project's default) and the anytime branch and bound without a budget (the optimum alone, proven:
its bound equals its loss); they must agree on the node and its loss. ``--max-cpu S``: exit 1
when the proven optimum takes more than S CPU seconds (OLA's figure is printed beside it).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from arx import Arx, ArxServer, ArxTimeout, export_hierarchies, locate_or_say, write_data_csv  # noqa: E402
from safeshare.config.algorithms import make_strategy  # noqa: E402
from safeshare.core.evaluation import Evaluator  # noqa: E402
from safeshare.core.frequency import FrequencyTable  # noqa: E402
from safeshare.data.engines.base import COUNT_COLUMN  # noqa: E402
from safeshare.hierarchy.builders import IntervalBuilder, MaskingBuilder, SuppressionBuilder  # noqa: E402
from safeshare.hierarchy.hierarchy import Hierarchy  # noqa: E402
from safeshare.metrics.loss import make_metric  # noqa: E402
from safeshare.models import KAnonymity, PrivacyCriterion  # noqa: E402
from safeshare.search.anytime import AnytimeSearch  # noqa: E402
from safeshare.search.context import SearchContext  # noqa: E402

DATA = Path("/work/shared/datasets/census-income-kdd/census-income.data.gz")
COLUMNS = (  # noqa: SIM905
    "age class_of_worker detailed_industry_recode detailed_occupation_recode education wage_per_hour "
    "enroll_in_edu_inst_last_wk marital_stat major_industry_code major_occupation_code race "
    "hispanic_origin sex member_of_a_labor_union reason_for_unemployment "
    "full_or_part_time_employment_stat capital_gains capital_losses dividends_from_stocks "
    "tax_filer_stat region_of_previous_residence state_of_previous_residence "
    "detailed_household_and_family_stat detailed_household_summary_in_household instance_weight "
    "migration_code_change_in_msa migration_code_change_in_reg migration_code_move_within_reg "
    "live_in_this_house_1_year_ago migration_prev_res_in_sunbelt num_persons_worked_for_employer "
    "family_members_under_18 country_of_birth_father country_of_birth_mother country_of_birth_self "
    "citizenship own_business_or_self_employed fill_inc_questionnaire_for_veterans_admin "
    "veterans_benefits weeks_worked_in_year year income"
).split()
BUILDERS: dict[str, Any] = {
    "age": IntervalBuilder(widths=[5, 10, 20]),
    "detailed_industry_recode": MaskingBuilder(max_masked=1, pad="0", pad_side="start"),
    "detailed_occupation_recode": MaskingBuilder(max_masked=1, pad="0", pad_side="start"),
    "weeks_worked_in_year": IntervalBuilder(widths=[26]),
    "num_persons_worked_for_employer": IntervalBuilder(widths=[3]),
    "wage_per_hour": IntervalBuilder(widths=[500, 2000]),
    "capital_gains": IntervalBuilder(widths=[1000, 10000]),
    "sex": SuppressionBuilder(),
    "race": SuppressionBuilder(),
    "marital_stat": SuppressionBuilder(),
    "education": SuppressionBuilder(),
    "citizenship": SuppressionBuilder(),
    "class_of_worker": SuppressionBuilder(),
    "own_business_or_self_employed": IntervalBuilder(widths=[2]),
}
#: A second set (issue 24: "measured on at least two hierarchy sets ... so nothing is tuned to
#: one"): the same columns and heights (so the same lattice sizes), the builders at coarser
#: widths. Of six such sets tried at 14 QIs (finer, coarser, mixed; 40,632-65,300 checked
#: nodes) the one OLA checks most nodes on (65,300 against ours' 57,292).
ALT_BUILDERS: dict[str, Any] = {
    **BUILDERS,
    "age": IntervalBuilder(widths=[10, 20, 40]),
    "detailed_industry_recode": IntervalBuilder(widths=[20]),
    "detailed_occupation_recode": IntervalBuilder(widths=[20]),
    "weeks_worked_in_year": IntervalBuilder(widths=[52]),
    "num_persons_worked_for_employer": IntervalBuilder(widths=[4]),
    "wage_per_hour": IntervalBuilder(widths=[1000, 5000]),
    "capital_gains": IntervalBuilder(widths=[5000, 50000]),
}
#: heights of the project's set per QI (what :class:`RandomNesting` keeps: the same lattice)
HEIGHTS: dict[str, int] = {
    "age": 4,
    "detailed_industry_recode": 2,
    "detailed_occupation_recode": 2,
    "weeks_worked_in_year": 2,
    "num_persons_worked_for_employer": 2,
    "wage_per_hour": 3,
    "capital_gains": 3,
    "sex": 1,
    "race": 1,
    "marital_stat": 1,
    "education": 1,
    "citizenship": 1,
    "class_of_worker": 1,
    "own_business_or_self_employed": 2,
}
#: the seed of the generated set (issue 36)
RANDOM_SEED = 36


class RandomNesting:
    """A hierarchy generated from the data with a fixed seed (issue 36's third set): the
    column's distinct values in a random order, cut into groups of random, unbalanced sizes
    (uniform random cut points, so a few large groups and many small ones), those groups
    shuffled and cut again, up to ``height - 1`` levels, then ``*``. No order, no interval,
    no meaning: the nestings a custodian's hand-made hierarchy may have, unlike the regular
    widths of the builders. Each level has fewer labels than the one below (at least two
    below the top when the column has more than two values)."""

    def __init__(self, height: int, seed: int) -> None:
        self.height = height
        self.seed = seed

    def build(self, values: list[str], name: str) -> Hierarchy:
        rng = np.random.default_rng([self.seed, zlib.crc32(name.encode())])
        parent_of: list[dict[str, str]] = []
        current = list(values)
        for level in range(1, self.height):
            n = len(current)
            if n <= 2:
                groups = [[c] for c in current]  # nothing to nest: the level repeats the one below
            else:
                g = int(rng.integers(2, max(3, (n + 1) // 2 + 1)))  # 2 .. about n / 2 groups
                order = rng.permutation(n)
                cuts = np.sort(rng.choice(np.arange(1, n), size=g - 1, replace=False))
                groups = [[current[i] for i in part] for part in np.split(order, cuts)]
            parent = {}
            for j, members in enumerate(groups):
                label = f"{name[:3]}L{level}g{j}({len(members)})" if len(members) > 1 else members[0]
                if len(members) == 1 and level > 1:
                    label = f"{name[:3]}L{level}g{j}(1)"
                for m in members:
                    parent[m] = label
            parent_of.append(parent)
            current = sorted(set(parent.values()))
        rows = []
        for v in values:
            row = [v]
            for parent in parent_of:
                row.append(parent[row[-1]])
            row.append("*")
            rows.append(row)
        return Hierarchy(rows, name=name)


RANDOM_BUILDERS: dict[str, Any] = {q: RandomNesting(h, RANDOM_SEED) for q, h in HEIGHTS.items()}
HIERARCHY_SETS = {"ours": BUILDERS, "alt": ALT_BUILDERS, "random": RANDOM_BUILDERS}
QI_ORDER = list(BUILDERS)
#: roll-up setting measured against the leaf evaluator
ROLLUP_RATIO = 0.25


def load(path: Path) -> pd.DataFrame:
    return pd.read_csv(path, header=None, names=COLUMNS, skipinitialspace=True, dtype=str, usecols=QI_ORDER)


def hierarchies_for(frame: pd.DataFrame, n_qis: int, builders: str = "ours") -> dict[str, Hierarchy]:
    """The builders of set ``builders`` (:data:`HIERARCHY_SETS`) applied to the values of the
    first ``n_qis`` QIs."""
    chosen = HIERARCHY_SETS[builders]
    return {q: chosen[q].build(sorted(frame[q].unique()), q) for q in QI_ORDER[:n_qis]}


def table_for(frame: pd.DataFrame, n_qis: int, builders: str = "ours") -> FrequencyTable:
    qis = QI_ORDER[:n_qis]
    hierarchies = list(hierarchies_for(frame, n_qis, builders).values())
    grouped = frame.groupby(qis, sort=False).size().reset_index(name=COUNT_COLUMN)
    return FrequencyTable.from_grouped(grouped, qis, hierarchies)


def search(
    table: FrequencyTable, rollup: bool, k: int = 5, limit: float = 0.05, compiled: bool | None = None
) -> dict[str, Any]:
    wall, cpu = time.perf_counter(), time.process_time()
    ev = Evaluator(table, rollup_ratio=ROLLUP_RATIO if rollup else 0.0, compiled=compiled)
    ctx = SearchContext(table, ev, PrivacyCriterion([KAnonymity(k)], limit), make_metric("prec", ev))
    result = make_strategy("ola").run(ctx)
    return {
        "wall_s": time.perf_counter() - wall,
        "cpu_s": time.process_time() - cpu,
        "checked": result.checked_nodes,
        "rolled_up": ev.rolled_up,
        "node": result.node,
        "objective": result.objective,
        "minimal": len(result.minimal_nodes),
    }


def exact_optimum(table: FrequencyTable, k: int = 5, limit: float = 0.05) -> dict[str, Any]:
    """The anytime branch and bound without a budget (``anytime`` with ``time_limit: null``): the
    optimum alone, proven (its bound equals its loss), on a fresh evaluator; a search that
    settles what OLA enumerates (every k-minimal node) by the loss bound instead."""
    wall, cpu = time.perf_counter(), time.process_time()
    ev = Evaluator(table)
    ctx = SearchContext(table, ev, PrivacyCriterion([KAnonymity(k)], limit), make_metric("prec", ev))
    result = AnytimeSearch(time_limit=None).run(ctx)
    return {
        "wall_s": time.perf_counter() - wall,
        "cpu_s": time.process_time() - cpu,
        "checked": result.checked_nodes,
        "rolled_up": ev.rolled_up,
        "node": result.node,
        "objective": result.objective,
        "optimal": bool(result.extra["optimal"]),
        "minimal": 0,
    }


def show(label: str, r: dict[str, Any]) -> None:
    print(
        f"  {label:<8} checked {r['checked']:>7,}  minimal {r['minimal']:>6,}  "
        f"wall {r['wall_s']:>7.1f} s  cpu {r['cpu_s']:>7.1f} s  "
        f"{1000 * r['cpu_s'] / max(1, r['checked']):.2f} ms cpu/checked node  node {r['node']} "
        f"Prec {r['objective']:.6f}",
        flush=True,
    )


def arx_search(
    arx: Arx,
    frame: pd.DataFrame,
    n_qis: int,
    timeout: float,
    k: int = 5,
    limit: float = 0.05,
    builders: str = "ours",
) -> dict[str, Any]:
    """ARX's FLASH on the same records and the same (exported) hierarchies; ``timed_out`` past ``timeout``."""
    qis = QI_ORDER[:n_qis]
    with tempfile.TemporaryDirectory(prefix="bench-kdd-arx-") as tmp:
        hier_dir = export_hierarchies(hierarchies_for(frame, n_qis, builders), Path(tmp) / "hierarchies")
        csv = write_data_csv(frame, qis, Path(tmp) / "kdd.csv")
        wall = time.perf_counter()
        with ArxServer(arx, csv, hier_dir, qis) as server:
            try:
                answer = server.search(k, limit, "prec", timeout=timeout)
            except ArxTimeout:
                return {"timed_out": True, "timeout_s": timeout}
        answer["wall_s"] = time.perf_counter() - wall  # JVM start, reading the CSV, the whole call
        answer["timed_out"] = False
        return answer


def show_arx(r: dict[str, Any]) -> None:
    if r["timed_out"]:
        t = r["timeout_s"]
        print(f"  {'ARX':<8} no answer within {t:.0f} s: search time > {t:.0f} s", flush=True)
        return
    seconds = r["time_ms"] / 1000
    print(
        f"  {'ARX':<8} checked {r['checked']:>7,}  search {seconds:>7.1f} s  "
        f"(whole call {r['anonymize_ms'] / 1000:.1f} s, with JVM start and CSV {r['wall_s']:.1f} s)  "
        f"{1000 * seconds / max(1, r['checked']):.2f} ms/checked node  node {tuple(r.get('levels', ()))}",
        flush=True,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--qis", default="11,12,13", help="QI counts to run (11..14), comma-separated")
    parser.add_argument("--compare", action="store_true", help="also run with roll-up evaluation")
    parser.add_argument("--no-arx", action="store_true", help="leave ARX out even when it is built")
    parser.add_argument("--arx-timeout", type=float, default=300.0, help="seconds allowed to ARX's search")
    parser.add_argument(
        "--hierarchies",
        default="ours",
        help=f"hierarchy sets to run, comma-separated, of: {', '.join(HIERARCHY_SETS)} (issue 24)",
    )
    parser.add_argument(
        "--max-cpu",
        type=float,
        default=None,
        help="exit 1 if one of our searches takes more CPU seconds (issue 24: 60 at 14 QIs)",
    )
    args, _ = parser.parse_known_args()
    if not args.data.exists():
        print(f"Census-Income (KDD) not found at {args.data}: skipped")
        return 0
    frame = load(args.data)
    arx = None if args.no_arx else locate_or_say()
    # The compiled loops (safeshare.core.kernels): compiled on a machine's first run, loaded
    # from numba's cache after that; a search on 2,000 records pays it before the timed ones.
    start = time.process_time()
    search(table_for(frame.head(2000), 11), rollup=False, compiled=True)
    print(f"warm-up (compiled loops: compile or load from cache): cpu {time.process_time() - start:.1f} s")
    same = True
    summary: list[str] = []
    runs = [(n, h) for h in args.hierarchies.split(",") for n in (int(x) for x in args.qis.split(","))]
    for n_qis, builders in runs:
        table = table_for(frame, n_qis, builders)
        print(
            f"{n_qis} QIs, hierarchies {builders!r}: {table.lattice.size:,} nodes, "
            f"M = {table.n_rows:,} distinct tuples",
            flush=True,
        )
        if arx is not None:
            a = arx_search(arx, frame, n_qis, args.arx_timeout, builders=builders)
            show_arx(a)
        leaf = search(table, rollup=False)
        show("ola", leaf)
        best = exact_optimum(table)
        show("optimum", best)
        agree = best["optimal"] and (best["objective"], best["node"]) == (leaf["objective"], leaf["node"])
        print(
            f"  the proven optimum (anytime, gap 0) {'equals' if agree else 'DIFFERS FROM'} "
            "OLA's node and loss",
            flush=True,
        )
        same = same and agree
        verdict = ""
        if args.max_cpu is not None:
            within = best["cpu_s"] <= args.max_cpu
            same = same and within
            verdict = (
                f"target <= {args.max_cpu:g} s: optimum {'met' if within else 'MISSED'}, "
                f"OLA {'met' if leaf['cpu_s'] <= args.max_cpu else 'missed'}"
            )
            print(f"  {verdict}", flush=True)
        summary.append(
            f"  {builders:<8}{n_qis:>4} {leaf['checked']:>8,} {leaf['cpu_s']:>8.1f} "
            f"{best['checked']:>8,} {best['cpu_s']:>8.1f}  {leaf['objective']:.6f} "
            f"{'same' if agree else 'DIFFERENT'}  {verdict}"
        )
        if arx is not None and not a["timed_out"]:
            ratio = leaf["wall_s"] / (a["time_ms"] / 1000)
            match = "same node" if tuple(a.get("levels", ())) == tuple(leaf["node"]) else "DIFFERENT node"
            fewer = leaf["checked"] / a["checked"]
            print(f"  ours/ARX: search wall time {ratio:.2f}, checked nodes {fewer:.2f}; {match}")
        if args.compare:
            roll = search(table, rollup=True)
            show("roll-up", roll)
            same = same and leaf["node"] == roll["node"] and leaf["checked"] == roll["checked"]
    print("per set: OLA (every k-minimal node) and the proven optimum (anytime, no budget), CPU s")
    print(f"  {'set':<8}{'QIs':>4} {'OLA chk':>8} {'OLA s':>8} {'opt chk':>8} {'opt s':>8}  Prec")
    print("\n".join(summary))
    if args.compare:
        print(f"same node and checked count: {'yes' if same else 'NO'}")
    # same: both searches' optimum equal, the CPU target of the optimum, the roll-up comparison
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
