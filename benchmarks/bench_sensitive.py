"""l-diversity and t-closeness on UCI Adult: per-node cost and the non-monotone search.

Adult with its 9 QIs and the three sensitive columns of ``examples/adult/adult.yaml``
(capital-gain, capital-loss, hours-per-week) in the frequency table's grain.

1. **Per-node evaluation.** One depth-first walk over all 7,776 nodes
   (``Evaluator.iter_classes``), each model's per-class check on every node.
   Baselines in the same run: the walk with k-anonymity alone, and the same
   per-class quantity computed with pandas on the record-level generalized
   data (``groupby(QIs)[s]``) for a sample of nodes.
   Target: the vectorized check is at least 20 times faster per node than pandas.
2. **Search with suppression** (criteria not monotone: no predictive tagging).
   The OLA strategy's fallback, the exact best-first search
   (``search/best_first.py``, pruned by a monotone relaxation: k-anonymity, and
   k = ceil(l) for l-diversity), against exhaustive search (baseline).
   Targets: the same node on every setting, and a geometric mean speedup of
   at least 3.
3. With ``--grid``: what is feasible on Adult (the table of docs/privacy-models.md),
   each setting searched once with the ``ola`` strategy, CPU seconds.

    python benchmarks/bench_sensitive.py [--repeat 3] [--quick] [--grid]
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from safeshare.config import load_config  # noqa: E402
from safeshare.core.evaluation import Evaluator  # noqa: E402
from safeshare.core.frequency import FrequencyTable  # noqa: E402
from safeshare.data.engines.memory import MemoryEngine  # noqa: E402
from safeshare.data.schema import Schema  # noqa: E402
from safeshare.models import KAnonymity, LDiversity, PrivacyCriterion, TCloseness  # noqa: E402
from safeshare.models.base import PrivacyModel  # noqa: E402
from safeshare.workflows.anonymizer import AnonymizationResult, Anonymizer, build_frequency_table  # noqa: E402

CONFIG = ROOT / "examples" / "adult" / "adult.yaml"


def best_of(repeat: int, fn: Callable[[], object]) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def walk(table: FrequencyTable, model: PrivacyModel | None) -> None:
    for classes in Evaluator(table).iter_classes():
        if model is not None:
            model.acceptable(classes, table)


def pandas_per_node(table: FrequencyTable, nodes: list[tuple[int, ...]], what: str) -> float:
    """Seconds per node to compute the per-class quantity with pandas on record-level data."""
    base = {}
    for j, name in enumerate(table.sensitive_names):
        labels = np.asarray(table.sensitive_labels[j], dtype=object)
        base[name] = np.repeat(labels[table.sensitive_codes[:, j]], table.counts)
    qis = list(table.qi_names)
    start = time.perf_counter()
    for node in nodes:
        frame = table.labels_at(node)
        frame = frame.loc[frame.index.repeat(table.counts)].reset_index(drop=True)
        for name, values in base.items():
            frame[name] = values
            grouped = frame.groupby(qis, sort=False)[name]
            if what == "distinct":
                grouped.nunique()
            else:
                counts = frame.groupby([*qis, name], sort=False).size()
                p = counts / counts.groupby(level=list(range(len(qis)))).transform("sum")
                (-(p * np.log(p))).groupby(level=list(range(len(qis)))).sum()
    return (time.perf_counter() - start) / len(nodes)


def timed_search(
    table: FrequencyTable,
    schema: Schema,
    models: list[PrivacyModel],
    limit: float,
    metric: str,
    algorithm: str,
    repeat: int,
) -> tuple[float, AnonymizationResult]:
    """Best time of ``repeat`` searches, each on a fresh evaluator; and the result."""
    best, result = math.inf, None
    for _ in range(repeat):
        start = time.perf_counter()
        result = Anonymizer(
            schema, models, max_suppression=limit, metric=metric, algorithm=algorithm
        ).fit_table(table, evaluator=Evaluator(table))
        best = min(best, time.perf_counter() - start)
    assert result is not None
    return best, result


GRID: list[tuple[list[PrivacyModel], float]] = [
    ([KAnonymity(5), LDiversity(2)], 0.05),
    ([KAnonymity(5), LDiversity(3)], 0.05),
    ([KAnonymity(5), LDiversity(2)], 0.0),
    ([KAnonymity(5), LDiversity(2, "entropy")], 0.05),
    ([KAnonymity(5), LDiversity(1.2, "entropy")], 0.05),
    ([KAnonymity(5), LDiversity(2, "recursive", c=30)], 0.05),
    ([KAnonymity(5), TCloseness(0.2)], 0.0),
    ([KAnonymity(5), TCloseness(0.2)], 0.05),
    ([KAnonymity(5), TCloseness(0.1)], 0.05),
    ([KAnonymity(5), TCloseness(0.05)], 0.05),
    ([TCloseness(0.15)], 0.05),
]


def feasibility(table: FrequencyTable, schema: Schema) -> None:
    """Section 3: each GRID setting searched once (Prec), on one frequency table."""
    for j, name in enumerate(table.sensitive_names):
        counts = np.bincount(table.sensitive_codes[:, j], weights=table.counts)
        p = counts[counts > 0] / counts.sum()
        print(
            f"  {name}: {p.size} values, exp(H) = {math.exp(-(p * np.log(p)).sum()):.2f}, "
            f"most frequent value {p.max():.1%}"
        )
    evaluator = Evaluator(table)
    for models, limit in GRID:
        start = time.process_time()
        result = Anonymizer(schema, models, max_suppression=limit).fit_table(table, evaluator=evaluator)
        cpu = time.process_time() - start
        summary = result.summary()
        extra = result.search.extra
        checks = (
            f"{extra['exact_checks']:5,} exact + {extra['relaxation_checks']:5,} relaxation checks"
            if "exact_checks" in extra
            else f"{result.search.checked_nodes:5,} checks"
        )
        outcome = (
            f"levels {','.join(map(str, result.node))}, {result.suppressed_records:,} suppressed, "
            f"Prec {summary['information_loss']:.3f}"
            if result.node is not None
            else "infeasible"
        )
        print(
            f"  {' + '.join(map(repr, models)):70s} {limit:4.0%}  {outcome:50s} "
            f"{result.search.extra.get('search', 'ola (tagging)'):13s} {checks}  {cpu:5.1f} s CPU"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="one repetition, fewer settings")
    parser.add_argument("--grid", action="store_true", help="only the feasibility grid (section 3)")
    args = parser.parse_args()
    repeat = 1 if args.quick else args.repeat
    ok = True

    cfg = load_config(CONFIG)
    engine = MemoryEngine(cfg.source)
    table, _ = build_frequency_table(engine, cfg.schema, cfg.schema.sensitive)
    print(
        f"Adult: {table.n_records:,} records, {table.n_rows:,} frequency-table rows "
        f"(9 QIs + {', '.join(table.sensitive_names)}), lattice {table.lattice.size:,} nodes"
    )

    if args.grid:
        feasibility(table, cfg.schema)
        return 0

    print(f"\n1. per-node evaluation, whole lattice (best of {repeat})")
    models: list[tuple[str, PrivacyModel | None]] = [
        ("k-anonymity only (baseline)", None),
        ("distinct l-diversity, l=2", LDiversity(2)),
        ("entropy l-diversity, l=2", LDiversity(2, "entropy")),
        ("recursive (3,2)-diversity", LDiversity(2, "recursive", c=3)),
        ("t-closeness, ordered EMD", TCloseness(0.2)),
        ("t-closeness, equal EMD", TCloseness(0.2, "equal")),
    ]
    base_time = 0.0
    per_node: dict[str, float] = {}
    for label, model in models:
        if model is not None:
            model.validate(table)
        seconds = best_of(repeat, lambda m=model: walk(table, m))  # type: ignore[misc]
        if model is None:
            base_time = seconds
        extra = (seconds - base_time) / table.lattice.size / 3
        per_node[label] = extra
        note = "" if model is None else f", model {extra * 1e6:7.0f} us per node and column"
        print(f"  {label:32s} {seconds:6.2f} s  ({seconds / table.lattice.size * 1e6:6.0f} us/node{note})")
    sample = list(table.lattice.nodes())[:: table.lattice.size // (8 if args.quick else 24)]
    for what, label in (("distinct", "distinct l-diversity, l=2"), ("entropy", "entropy l-diversity, l=2")):
        naive = pandas_per_node(table, sample, what) / 3
        speedup = naive / per_node[label]
        target = speedup >= 20
        ok &= target
        print(
            f"  pandas {what:8s} (record level, {len(sample)} nodes): {naive * 1e3:6.1f} ms per node"
            f" and column -> vectorized is {speedup:,.0f}x faster"
            f" (target >= 20x: {'met' if target else 'MISSED'})"
        )

    print("\n2. searches with suppression: OLA's fallback (best-first) vs exhaustive (baseline)")
    settings: list[tuple[list[PrivacyModel], float, str]] = [
        ([KAnonymity(5), TCloseness(0.2)], 0.05, "prec"),
        ([KAnonymity(5), TCloseness(0.1)], 0.05, "prec"),
        ([KAnonymity(5), LDiversity(1.2, "entropy")], 0.05, "dm_star"),
        ([TCloseness(0.15)], 0.05, "prec"),
        ([LDiversity(1.2, "entropy")], 0.05, "prec"),
    ]
    if args.quick:
        settings = settings[:2]
    speedups = []
    for models_, limit, metric in settings:
        name = " + ".join(
            repr(m).split("(")[0] + str(m.params().get("k", m.params().get("t", m.params().get("l"))))
            for m in models_
        )
        assert not PrivacyCriterion(models_, limit).monotone
        results, times = {}, {}
        for algorithm in ("ola", "exhaustive"):
            times[algorithm], results[algorithm] = timed_search(
                table,
                cfg.schema,
                models_,
                limit,
                metric,
                algorithm,
                1 if algorithm == "exhaustive" else repeat,
            )
        same = results["ola"].node == results["exhaustive"].node
        ok &= same
        speedup = times["exhaustive"] / times["ola"]
        speedups.append(speedup)
        print(
            f"  {name:28s} {limit:4.0%} {metric:8s} node {results['ola'].node}: best-first "
            f"{times['ola']:5.2f} s ({results['ola'].search.extra['exact_checks']:,} exact checks), "
            f"exhaustive "
            f"{times['exhaustive']:5.2f} s -> {speedup:4.1f}x, same node: {same}"
        )
    geomean = math.exp(statistics.fmean(math.log(s) for s in speedups))
    ok &= geomean >= 3
    print(f"  geometric mean speedup {geomean:.1f}x (target >= 3x: {'met' if geomean >= 3 else 'MISSED'})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
