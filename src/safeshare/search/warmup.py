"""Compile the compiled loops ahead of any search, into numba's on-disk cache.

With a cold cache (a fresh clone or install, or the first run after the loops changed) a
search on a small table keeps numpy's loops rather than spend 6-10 s compiling
(:mod:`safeshare.core.jit_cache`), and only big searches compile. Running this module
once compiles everything an evaluation and OLA's compiled recursion run, on a small
synthetic table that takes every path (prefix composition, refinement, re-densified id
spaces, the class table, the recursion), so that every later process loads the machine
code when it imports the search (``make test`` does it too, through the tests)::

    python -m safeshare.search.warmup
"""

from __future__ import annotations

import sys
import time

import numpy as np
import pandas as pd

from safeshare.core.evaluation import Evaluator
from safeshare.core.frequency import FrequencyTable
from safeshare.data.engines.base import COUNT_COLUMN
from safeshare.hierarchy.hierarchy import Hierarchy
from safeshare.search.ola import find_minimal_nodes


def synthetic_table(seed: int = 0, n_rows: int = 3_000) -> FrequencyTable:
    """Three QIs (300, 40 and 3 values, hierarchies of heights 2, 2 and 1) over ``n_rows``
    records: the bottom node's id space (36,000) outgrows twice the distinct rows, so the
    evaluator re-densifies."""
    rng = np.random.default_rng(seed)
    values = {"a": 300, "b": 40, "c": 3}
    hierarchies = [
        Hierarchy([(f"a{i}", f"a{i // 10}x", "*") for i in range(300)], "a"),
        Hierarchy([(f"b{i}", f"b{i // 4}x", "*") for i in range(40)], "b"),
        Hierarchy([(f"c{i}", "*") for i in range(3)], "c"),
    ]
    frame = pd.DataFrame({q: [f"{q}{v}" for v in rng.integers(0, n, n_rows)] for q, n in values.items()})
    grouped = frame.groupby(list(values), sort=False).size().reset_index(name=COUNT_COLUMN)
    return FrequencyTable.from_grouped(grouped, list(values), hierarchies)


def exercise(table: FrequencyTable | None = None) -> int:
    """Run the compiled paths once on ``table`` (default :func:`synthetic_table`): the
    predicate's count on a walk down from the top (prefix compositions, refinements), the
    class table of every node, and OLA's compiled recursion. Returns the nodes checked."""
    table = synthetic_table() if table is None else table
    ev = Evaluator(table, compiled=True, leaf_cache=0)
    for node in sorted(table.lattice.nodes(), key=lambda n: -sum(n)):
        ev.records_below(node, 3)
        ev.classes(node).records_in_classes_smaller_than(3)
    _, checked, _ = find_minimal_nodes(
        table.lattice, lambda node: ev.records_below(node, 3) <= table.n_records // 20, compiled=True
    )
    return checked


def main() -> int:
    start = time.process_time()
    exercise()
    print(f"compiled loops compiled or loaded: {time.process_time() - start:.1f} s of CPU")
    return 0


if __name__ == "__main__":
    sys.exit(main())
