"""Class-size statistics of EVERY lattice node, by roll-up (docs/architecture.md; docs/benchmarks.md).

Epsilon-safe lattice anonymization (thesis §4.5.4) needs, for every node of
the lattice, the number of records in equivalence classes smaller than ``k``
(the records it would suppress). The thesis called this cost the method's
main obstacle (§6.3: about 2 s *per node*). This module computes it for all
7,776 nodes of UCI Adult's lattice in about a second on a loaded 2-core
machine (``benchmarks/bench_dp.py`` prints it with its baselines: 1.2-2x
faster than the evaluator's depth-first walk, hundreds of times faster than
a group-by of the records per node).

Method: *roll-up of sorted class tables along a spanning tree.*

* A node's class table is the list of its distinct generalized QI tuples with
  their record counts, each tuple packed into one ``int64`` key (a bit field
  per QI, holding the QI's dense code). The table is kept sorted by key.
* Any node's table can be computed from a more specific node's table: map one
  QI's codes one level up and merge equal keys. The lattice is walked
  depth-first as nested loops over the QIs, so every node except the bottom
  is derived from a parent that differs in exactly one QI by one level, and
  whose table is (much) smaller than the frequency table near the top of the
  lattice. Total work is the sum of the parents' class counts (3.6e7 for
  Adult instead of 7,776 x 21,551 = 1.7e8 for a pass over the frequency table
  per node).
* Generalization maps are non-decreasing on dense codes (hierarchy leaves are
  ordered so that every subtree is contiguous, see
  :mod:`safeshare.hierarchy.hierarchy`). When the QI of the innermost loop
  sits in the least significant bits, mapping it keeps the keys sorted, so
  equal keys are adjacent and merging is one linear pass (no sort, no hash).
  Steps of outer loops re-sort with a stable sort, which merges the sorted
  runs the map leaves (timsort).

When the keys do not fit in 62 bits, or a map is not monotone, the scan falls
back to :meth:`Evaluator.iter_classes`; both give identical numbers (tests).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from safeshare.core.evaluation import Evaluator
from safeshare.core.frequency import FrequencyTable
from safeshare.errors import InputError

Int64Array = npt.NDArray[np.int64]

_MAX_BITS = 62


@dataclass(frozen=True)
class LatticeStatistics:
    """Per-node statistics, each an array indexed by the node itself (``array[node]``).

    Attributes
    ----------
    ks: the class-size thresholds.
    suppressed: ``suppressed[i][node]`` = records in classes smaller than ``ks[i]``
        at ``node`` (what k-anonymity with ``k = ks[i]`` suppresses).
    classes: number of equivalence classes at every node.
    n_records: ``N``.
    method: ``rollup`` or ``evaluator`` (the fallback).
    """

    ks: tuple[int, ...]
    suppressed: tuple[Int64Array, ...]
    classes: Int64Array
    n_records: int
    method: str

    def suppressed_for(self, k: int) -> Int64Array:
        try:
            return self.suppressed[self.ks.index(k)]
        except ValueError:
            raise InputError(f"k = {k} was not scanned (scanned: {list(self.ks)})") from None


def _dense_levels(table: FrequencyTable, qi: int) -> list[Int64Array]:
    """Dense codes of every row of the frequency table at each level of QI ``qi`` (int64)."""
    return [codes.astype(np.int64, copy=False) for codes, _ in table.present_level_codes[qi]]


class _Plan:
    """Bit layout and level maps of a roll-up scan (``None`` fields: fall back)."""

    def __init__(self, table: FrequencyTable) -> None:
        q = len(table.qi_names)
        self.heights = [h.height for h in table.hierarchies]
        self.level0: list[Int64Array] = []
        self.maps: list[list[Int64Array]] = []  # maps[i][l - 1]: code at l - 1 -> code at l
        self.feasible = True
        sizes = []
        for i in range(q):
            levels = _dense_levels(table, i)
            self.level0.append(levels[0])
            sizes.append(int(levels[0].max()) + 1 if levels[0].size else 1)
            maps = []
            for lv in range(1, self.heights[i] + 1):
                m = np.zeros(int(levels[lv - 1].max()) + 1, dtype=np.int64)
                m[levels[lv - 1]] = levels[lv]
                if m.size > 1 and bool((np.diff(m) < 0).any()):
                    self.feasible = False
                maps.append(m)
            self.maps.append(maps)
        # significance: the innermost loop (least significant bits) is the QI with the
        # most levels, so that most steps are linear; then by size
        self.inner_first = sorted(range(q), key=lambda i: (-self.heights[i], sizes[i], i))
        self.shift = [0] * q
        self.mask = [0] * q
        bits = 0
        for i in self.inner_first:
            width = max(1, (sizes[i] - 1).bit_length())
            self.shift[i] = bits
            self.mask[i] = (1 << width) - 1
            bits += width
        if bits > _MAX_BITS:
            self.feasible = False
        # shifted deltas: key + delta[code] moves QI i's field from level l-1 to l
        self.deltas = [
            [((m - np.arange(m.size, dtype=np.int64)) << self.shift[i]) for m in self.maps[i]]
            for i in range(q)
        ]


def _merge_sorted(keys: Int64Array, counts: Int64Array, need_keys: bool) -> tuple[Int64Array, Int64Array]:
    """Merge runs of equal keys of a sorted table: ``(distinct keys, summed counts)``."""
    n = keys.shape[0]
    flag = np.empty(n + 1, dtype=bool)
    flag[0] = True
    flag[n] = True
    np.not_equal(keys[1:], keys[:-1], out=flag[1:n])
    bounds = np.flatnonzero(flag)
    csum = np.empty(n + 1, dtype=np.int64)
    csum[0] = 0
    np.cumsum(counts, out=csum[1:])
    sums = np.diff(csum.take(bounds))
    return (keys.take(bounds[:-1]) if need_keys else keys[:0]), sums


def scan_lattice(table: FrequencyTable, ks: Sequence[int]) -> LatticeStatistics:
    """Records in classes smaller than each ``k`` and class counts, at every node.

    Parameters
    ----------
    table: the frequency table.
    ks: class-size thresholds (e.g. ``[k]`` for k-anonymity).
    """
    ks_t = tuple(int(k) for k in ks)
    if not ks_t or any(k < 1 for k in ks_t):
        raise InputError(f"class-size thresholds must be integers >= 1, got {list(ks)}")
    plan = _Plan(table)
    if not plan.feasible:
        return _scan_with_evaluator(table, ks_t)
    shape = tuple(h + 1 for h in plan.heights)
    suppressed = [np.zeros(shape, dtype=np.int64) for _ in ks_t]
    classes = np.zeros(shape, dtype=np.int64)
    q = len(plan.heights)
    key = np.zeros(table.n_rows, dtype=np.int64)
    for i in range(q):
        key |= plan.level0[i] << plan.shift[i]
    order = np.argsort(key, kind="stable")
    key, counts = _merge_sorted(key.take(order), table.counts.astype(np.int64).take(order), True)
    loop = plan.inner_first[::-1]  # outermost loop = most significant QI
    levels = [0] * q
    k_arrays = [np.int64(k) for k in ks_t]

    def record(counts: Int64Array) -> None:
        node = tuple(levels)
        classes[node] = counts.shape[0]
        for arr, k in zip(suppressed, k_arrays, strict=True):
            arr[node] = int(np.dot(counts, counts < k))

    def step(
        keys: Int64Array, counts: Int64Array, qi: int, level: int, linear: bool, need_keys: bool
    ) -> tuple[Int64Array, Int64Array]:
        shift = plan.shift[qi]
        codes = (keys >> shift) & plan.mask[qi] if shift else keys & plan.mask[qi]
        new = keys + plan.deltas[qi][level - 1].take(codes)
        if not linear:
            perm = np.argsort(new, kind="stable")
            new, counts = new.take(perm), counts.take(perm)
        return _merge_sorted(new, counts, need_keys)

    def walk(depth: int, keys: Int64Array, counts: Int64Array) -> None:
        qi = loop[depth]
        height = plan.heights[qi]
        innermost = depth == q - 1
        for level in range(height + 1):
            if level:
                keys, counts = step(keys, counts, qi, level, innermost, not (innermost and level == height))
            levels[qi] = level
            if innermost:
                record(counts)
            else:
                walk(depth + 1, keys, counts)
        levels[qi] = 0

    walk(0, key, counts)
    return LatticeStatistics(ks_t, tuple(suppressed), classes, table.n_records, "rollup")


def _scan_with_evaluator(table: FrequencyTable, ks: tuple[int, ...]) -> LatticeStatistics:
    shape = tuple(h.height + 1 for h in table.hierarchies)
    suppressed = [np.zeros(shape, dtype=np.int64) for _ in ks]
    classes = np.zeros(shape, dtype=np.int64)
    for c in Evaluator(table, leaf_cache=0).iter_classes():
        classes[c.node] = c.n_classes
        for arr, k in zip(suppressed, ks, strict=True):
            arr[c.node] = c.records_in_classes_smaller_than(k)
    return LatticeStatistics(ks, tuple(suppressed), classes, table.n_records, "evaluator")
