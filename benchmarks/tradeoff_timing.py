"""Quick timing of the search and of the suppression/loss trade-off curve on UCI Adult.

Not a test (no assertion on times): ``PYTHONPATH=src python benchmarks/tradeoff_timing.py``.
Prints the seconds of the main search and of :func:`safeshare.workflows.anonymizer.tradeoff`
(9 quasi-identifiers, 7776 nodes, k = 5, 5 % suppression, prec), best of ``--repeat``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from safeshare.config import load_config
from safeshare.core.evaluation import Evaluator
from safeshare.data.engines.memory import MemoryEngine
from safeshare.workflows.anonymizer import Anonymizer, tradeoff

CALLS = [0]
_classes = Evaluator.classes


def _counting_classes(self: Evaluator, node: tuple[int, ...]) -> object:
    CALLS[0] += 1
    return _classes(self, node)


ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--metric", default="prec")
    args = parser.parse_args()
    cfg = load_config(ROOT / "examples" / "adult" / "adult.yaml")
    engine = MemoryEngine(cfg.source)
    anonymizer = Anonymizer(
        cfg.schema,
        cfg.privacy,
        max_suppression=cfg.max_suppression,
        metric=args.metric,
        algorithm=cfg.algorithm,
    )
    Evaluator.classes = _counting_classes  # type: ignore[method-assign,assignment]
    best_search, best_curve = float("inf"), float("inf")
    evaluations = (0, 0)
    for _ in range(args.repeat):
        CALLS[0] = 0
        t0 = time.perf_counter()
        result = anonymizer.fit(engine)
        t1 = time.perf_counter()
        searched = CALLS[0]
        curve = tradeoff(anonymizer, result)
        t2 = time.perf_counter()
        evaluations = (searched, CALLS[0] - searched)
        best_search, best_curve = min(best_search, t1 - t0), min(best_curve, t2 - t1)
    print(f"lattice {result.search.lattice_size} nodes, {result.search.checked_nodes} checked by the search")
    print(f"search + table: {best_search:.2f} s   trade-off ({len(curve)} limits): {best_curve:.2f} s")
    print(f"classes computed: search {evaluations[0]}, trade-off {evaluations[1]}")
    for point in curve:
        print(f"  {point['max_suppression']:.2f}: {point['levels']} loss {point['information_loss']}")


if __name__ == "__main__":
    main()
