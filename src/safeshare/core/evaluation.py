"""The evaluator: equivalence classes of a lattice node, on the frequency table.

Every search asks one question of a node: what are its equivalence classes
(records sharing all generalized QI values) and how large are they? This
module answers it without sorting or hashing, using only counts and
gathers, so its cost is a few passes over the ``M`` rows of the frequency
table. On big tables (``COMPILED_FROM_ROWS``) the passes are compiled loops
(:mod:`safeshare.core.kernels`): one pass per QI over int32 ids, and a bit set
with a rank directory to re-densify, with the same results as numpy.

Method: *prefix composition of dense class ids.* Fix an order of the QIs. For
a node ``n`` and a prefix of the first ``j`` QIs, every frequency-table row
gets a dense id of its class on those QIs; the id on ``j + 1`` QIs is
``id_j * s + code_{j+1}`` (``s`` = number of labels of QI ``j + 1`` at its
level), re-densified with a presence array when the id space grows past
``M``. The last QI needs no re-densification: a weighted ``bincount`` of
``id_{q-1} * s + code_q`` gives the class sizes directly.

Prefix ids are cached (LRU, bounded in bytes), so nodes that share a prefix
(as OLA's binary search tends to produce) share work, and
:meth:`Evaluator.iter_classes` walks the whole lattice depth-first, computing
each prefix once: for UCI Adult's 7,776 nodes that is about 1.5 s on one core.
QIs are ordered by decreasing number of distinct values so that the id space
of the last, cheapest step stays small.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterator
from functools import cached_property
from typing import Any, cast

import numpy as np
import numpy.typing as npt

from safeshare.core import jit_cache
from safeshare.core.frequency import FrequencyTable
from safeshare.core.kernels import DenseComposer, compose, compose_count, count_below, records_below
from safeshare.core.lattice import Lattice, Node
from safeshare.core.persons import PersonGrain

#: Row ids and codes as platform integers: numpy indexes and counts with them without conversion.
IntArray = npt.NDArray[np.intp]
FloatArray = npt.NDArray[np.float64]
#: Class slots of rows: int32 or int64 depending on the id space.
SlotArray = npt.NDArray[np.signedinteger[Any]]

#: Frequency tables of at least this many rows are evaluated with the compiled loops.
COMPILED_FROM_ROWS = 1 << 16
_DEFAULT_CACHE_BYTES = 256 * 2**20
#: class keys of recently counted nodes kept for refinement (:meth:`Evaluator.records_below`)
_REFINE_NODES = 16
_REFINE_BYTES = 64 * 2**20
_DEFAULT_TABLE_CACHE_BYTES = 128 * 2**20
#: Off by default: measured on OLA's own evaluation order it does not pay (issue 11, see
#: docs/benchmarks.md "Roll-up evaluation"): OLA mostly probes *below* what it evaluated (look
#: below, descent), so few nodes have a small evaluated descendant, and on UCI Adult's 21,551
#: rows the per-call overhead of composing q columns equals a pass over the leaf table.
_DEFAULT_ROLLUP_RATIO = 0.0


def densify(key: SlotArray, space: int) -> tuple[IntArray, int]:
    """Relabel ids in ``0 .. space - 1`` to ``0 .. k - 1`` (k distinct), keeping their order.

    A presence array when ``space`` is within 64 times the number of ids,
    otherwise a sort.
    """
    m = key.shape[0]
    if space <= max(64 * m, 1 << 16):
        present = np.zeros(space, dtype=bool)
        present[key] = True
        # The relabelling table is int32 (ids < space < 2**31 here): a table of 8-byte
        # entries over a space of millions cost more in page faults than all the rest.
        if space <= 4 * m:
            rank = np.cumsum(present, dtype=np.int32)
            n_used = int(rank[-1]) if space else 0
            rank -= 1
            return rank[key].astype(np.intp), n_used
        used = np.flatnonzero(present)
        small = np.int32 if space < 2**31 else np.intp
        remap = np.empty(space, dtype=small)
        remap[used] = np.arange(used.shape[0], dtype=small)
        return remap[key].astype(np.intp, copy=False), int(used.shape[0])
    uniq, inverse = np.unique(key, return_inverse=True)
    return inverse.astype(np.intp).ravel(), int(uniq.shape[0])


def _read_only(array: SlotArray) -> SlotArray:
    array.flags.writeable = False
    return array


class Classes:
    """The equivalence classes of one node, before suppression.

    Attributes
    ----------
    node: the lattice node.
    sizes: records per class slot (float64, exact integers); unused slots are 0.
    n_records: total number of records ``N``.
    row_class: ``(M,)`` class slot of every frequency-table row (computed on
        first use when the classes were rolled up from another node's).
    compiled: count with the compiled loops of :mod:`safeshare.core.kernels` (as the
        evaluator that made them does; same results).
    persons: the table's (row, person) grain when the run has a person key: :attr:`people`
        counts the distinct people of every class from it (issue 32).
    """

    def __init__(
        self,
        node: Node,
        sizes: FloatArray,
        n_records: int,
        row_class: SlotArray | Callable[[], SlotArray],
        compiled: bool = False,
        persons: PersonGrain | None = None,
    ) -> None:
        self.node = node
        self.sizes = sizes
        self.n_records = n_records
        self._row_class = row_class
        self._compiled = compiled
        self.persons = persons

    @cached_property
    def people(self) -> FloatArray:
        """Distinct people per class slot (float64 of exact integers; unused slots 0): with a
        person key, from the (row, person) grain (:meth:`PersonGrain.people_per_slot`); without
        one, the records (one record per person)."""
        if self.persons is None:
            return self.sizes
        return self.persons.people_per_slot(self.row_class, int(self.sizes.shape[0]))

    @property
    def n_people(self) -> int:
        """People of the table (``N`` without a person key)."""
        return self.persons.n_people if self.persons is not None else self.n_records

    @property
    def row_class(self) -> SlotArray:
        """``(M,)`` class slot of every frequency-table row (computed once, on first use, for
        classes rolled up from a descendant's class table: the search itself never needs it)."""
        value = self._row_class
        if callable(value):
            value = self._row_class = value()
        return value

    @cached_property
    def nonempty(self) -> npt.NDArray[np.int64]:
        """Sizes of the non-empty classes (int64)."""
        return self.sizes[self.sizes > 0].astype(np.int64)

    @property
    def n_classes(self) -> int:
        return int(self.nonempty.shape[0])

    @property
    def min_size(self) -> int:
        return int(self.nonempty.min())

    @property
    def max_size(self) -> int:
        return int(self.nonempty.max())

    def records_in_classes_smaller_than(self, k: int) -> int:
        """Records in classes of fewer than ``k`` records (zero slots add nothing)."""
        sizes = self.sizes
        if self._compiled:
            return records_below(sizes, k)
        # Elementwise, not np.dot: BLAS would spin up threads for long vectors.
        return int((sizes * (sizes < k)).sum())

    @cached_property
    def dm_star(self) -> int:
        """DM* = sum over classes of ``|E|^2`` (thesis §5.1; El Emam et al. 2009)."""
        s = self.nonempty
        return int(np.dot(s, s))

    def row_sizes(self) -> FloatArray:
        """Size of the class of every frequency-table row."""
        return self.sizes[self.row_class]

    def dense(self) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """Dense class ids ``(row_class_dense, sizes)`` with no empty slots."""
        used = self.sizes > 0
        remap = np.cumsum(used) - 1
        return remap[self.row_class], self.sizes[used].astype(np.int64)


class _ClassTable:
    """The classes of an evaluated node: one representative frequency-table row and the
    record count of each class (what a roll-up to any generalization needs).

    A node evaluated from the leaf table is kept as its ``(row slot, sizes)`` pair, which
    the evaluation made anyway, and turned into representatives only if some node rolls up
    from it (most never serve).
    """

    __slots__ = ("_rep", "_row_slot", "_sizes", "n_classes", "nbytes")

    def __init__(self, rep_or_slots: SlotArray, sizes: FloatArray, n_classes: int, dense: bool) -> None:
        self._row_slot: SlotArray | None = None if dense else rep_or_slots
        self._sizes = sizes
        self.n_classes = n_classes
        self.nbytes = int(rep_or_slots.nbytes + sizes.nbytes)
        if dense:
            self._rep: IntArray = cast(IntArray, rep_or_slots)

    def rep_and_sizes(self) -> tuple[IntArray, FloatArray]:
        row_slot = self._row_slot
        if row_slot is not None:
            rep = np.empty(self._sizes.shape[0], dtype=np.intp)
            rep[row_slot] = np.arange(row_slot.shape[0], dtype=np.intp)
            used = np.flatnonzero(self._sizes)
            self._rep, self._sizes, self._row_slot = rep.take(used), self._sizes.take(used), None
        return self._rep, self._sizes


class _TableCache:
    """Class tables of evaluated nodes, least recently used out first, bounded in bytes.

    The nodes sit in one ``(capacity, q)`` array (freed slots get an impossible size), so
    the smallest cached descendant of a node is one vectorized comparison.
    """

    _FREE = np.iinfo(np.int64).max

    def __init__(self, q: int, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.used = 0
        self._q = q
        self._entries: OrderedDict[Node, tuple[int, _ClassTable]] = OrderedDict()
        self._nodes = np.zeros((16, q), dtype=np.int32)
        self._counts = np.full(16, self._FREE, dtype=np.int64)
        self._free: list[int] = list(range(15, -1, -1))
        self._node_at: dict[int, Node] = {}

    def clear(self) -> None:
        self._entries.clear()
        self._node_at.clear()
        self._counts[:] = self._FREE
        self._free = list(range(self._counts.shape[0] - 1, -1, -1))
        self.used = 0

    def best_descendant(self, node: Node, limit: int) -> _ClassTable | None:
        """The cached table of fewest classes (at most ``limit``) among ``node``'s descendants
        (nodes at or below it in every QI), or ``None``."""
        entries = self._entries
        if not entries:
            return None
        best: Node | None = None
        fewest = limit + 1
        below_node = list(node)
        for i, level in enumerate(node):  # the nearest descendants first: one step below
            if level:
                below_node[i] = level - 1
                hit = entries.get(tuple(below_node))
                below_node[i] = level
                if hit is not None and hit[1].n_classes < fewest:
                    best, fewest = (*node[:i], level - 1, *node[i + 1 :]), hit[1].n_classes
        if best is not None:
            entries.move_to_end(best)
            return entries[best][1]
        below = (self._nodes <= np.asarray(node, dtype=np.int32)).all(axis=1)
        counts = np.where(below, self._counts, self._FREE)
        slot = int(counts.argmin())
        if int(counts[slot]) > limit:
            return None
        found = self._node_at[slot]
        self._entries.move_to_end(found)
        return self._entries[found][1]

    def add(self, node: Node, table: _ClassTable) -> None:
        nbytes = table.nbytes
        if nbytes > self.max_bytes or node in self._entries:
            return
        while self.used + nbytes > self.max_bytes and self._entries:
            _, (slot, old) = self._entries.popitem(last=False)
            self._counts[slot] = self._FREE
            del self._node_at[slot]
            self._free.append(slot)
            self.used -= old.nbytes
        if not self._free:
            size = self._counts.shape[0]
            self._nodes = np.vstack([self._nodes, np.zeros((size, self._q), dtype=np.int32)])
            self._counts = np.concatenate([self._counts, np.full(size, self._FREE, dtype=np.int64)])
            self._free = list(range(2 * size - 1, size - 1, -1))
        slot = self._free.pop()
        self._nodes[slot] = node
        self._counts[slot] = table.n_classes
        self._node_at[slot] = node
        self._entries[node] = (slot, table)
        self.used += nbytes


class Evaluator:
    """Computes :class:`Classes` of lattice nodes on a :class:`FrequencyTable`.

    Parameters
    ----------
    table: the frequency table.
    cache_bytes: memory budget of the prefix-id cache.
    leaf_cache: how many recently evaluated nodes to keep, so that asking
        again for a node (e.g. for its DM* after the search) costs nothing.
    table_cache_bytes: memory budget of the class tables kept for roll-up
        (least recently used first out).
    rollup_ratio: a node is rolled up from a cached descendant's class table
        when that table has at most ``rollup_ratio * M`` classes (and only such
        tables are kept); ``0`` disables roll-up, ``1`` uses any descendant.
    compiled: use the compiled loops of :mod:`safeshare.core.kernels` (same results);
        by default for tables of at least :data:`COMPILED_FROM_ROWS` rows, and for every
        table once they are loaded (:func:`safeshare.core.jit_cache.loaded`).
    """

    def __init__(
        self,
        table: FrequencyTable,
        cache_bytes: int = _DEFAULT_CACHE_BYTES,
        leaf_cache: int = 32,
        table_cache_bytes: int = _DEFAULT_TABLE_CACHE_BYTES,
        rollup_ratio: float = _DEFAULT_ROLLUP_RATIO,
        compiled: bool | None = None,
    ) -> None:
        self.table = table
        self._persons = table.persons
        self.lattice: Lattice = table.lattice
        self.cache_bytes = cache_bytes
        self._m = table.n_rows
        self._weights = table.counts.astype(np.float64)
        q = len(table.qi_names)
        # Dense codes per (QI, level), over the values present in the data.
        self._codes: list[list[SlotArray]] = []
        self._sizes: list[list[int]] = []
        #: the compiled loops: by default from COMPILED_FROM_ROWS rows, and on every table once
        #: they were loaded from numba's cache (jit_cache.preload, when the search path is
        #: imported); otherwise numpy, so that a run need not import numba nor compile
        default = self._m >= COMPILED_FROM_ROWS or jit_cache.loaded()
        self.compiled = default if compiled is None else bool(compiled)
        for per_level in table.present_level_codes:
            # int32 for the compiled loops: memory traffic is most of a pass's cost
            self._codes.append(
                [_read_only(codes.astype(np.int32)) if self.compiled else codes for codes, _ in per_level]
            )
            self._sizes.append([size for _, size in per_level])
        self.order: tuple[int, ...] = tuple(sorted(range(q), key=lambda i: (-self._sizes[i][0], i)))
        self._cache: OrderedDict[tuple[int, ...], tuple[SlotArray | None, int]] = OrderedDict()
        self._cache_used = 0
        self._leaf_capacity = leaf_cache
        self._leaves: OrderedDict[Node, Classes] = OrderedDict()
        self.evaluations = 0
        #: nodes whose classes were rolled up from a descendant's class table
        self.rolled_up = 0
        self._tables = _TableCache(q, table_cache_bytes)
        #: scratch of the compiled relabelling: id spaces up to 256 M (a 4 M-byte bit set
        #: for M = 10**5); larger ones (rare) are sorted by :func:`densify`
        self._composer = DenseComposer(max(256 * self._m, 1 << 16) if self.compiled else 0)
        self._table_limit = int(rollup_ratio * self._m)
        #: the predicate's path (:meth:`records_below`): class keys of recently counted nodes,
        #: the child rank of every row's label under its parent label per (QI, level), and
        #: for the compiled count, integer weights and a zeroed scratch of counts
        self._recent: OrderedDict[Node, tuple[SlotArray, int]] = OrderedDict()
        self._recent_capacity = max(0, min(_REFINE_NODES, _REFINE_BYTES // max(1, 4 * self._m)))
        self._children: dict[tuple[int, int], tuple[SlotArray, int]] = {}
        self._count_space = max(2 * self._m, 1 << 12)
        #: refine only within the id spaces re-densified without a sort (see :func:`densify`)
        self._refine_limit = self._composer.max_space if self.compiled else max(64 * self._m, 1 << 16)
        big = self.table.n_records >= 2**31
        self._int_weights = table.counts.astype(np.int64 if big else np.int32)
        self._count_scratch: npt.NDArray[Any] | None = None
        #: nodes counted by refining a recent node's classes (one pass) instead of from the prefixes
        self.refined = 0

    # ----------------------------------------------------------------- public
    def classes(self, node: Node) -> Classes:
        """The equivalence classes of ``node``."""
        self.evaluations += 1
        hit = self._leaves.get(node)
        if hit is not None:
            self._leaves.move_to_end(node)
            return hit
        source = self._tables.best_descendant(node, self._table_limit) if self._table_limit > 0 else None
        if source is not None:
            result = self._roll_up(node, source)
        else:
            key, sizes = self._from_leaves(node)
            result = Classes(
                node,
                sizes,
                self.table.n_records,
                row_class=key,
                compiled=self.compiled,
                persons=self._persons,
            )
            if self._table_limit > 0:
                n_classes = int(np.count_nonzero(sizes))
                if n_classes <= self._table_limit:
                    self._tables.add(node, _ClassTable(key, sizes, n_classes, dense=False))
        self._remember_leaf(result)
        return result

    def records_below(self, node: Node, k: int) -> int:
        """Records in the classes of fewer than ``k`` records at ``node``: exactly
        ``self.classes(node).records_in_classes_smaller_than(k)``, all that k-anonymity's
        predicate needs, counted without building the class table (no float sizes, no
        :class:`Classes`; integer counts in a reused scratch on the compiled path).

        Two ways, the cheaper first:

        * *refinement* of a recently counted node ``n`` one level above ``node`` in a single QI
          ``i`` (``node = n - e_i``: OLA's descents and most of its look-below probes). The
          classes of ``node`` are those of ``n`` split by QI ``i``'s finer label; since the
          coarser label is part of ``n``'s class, the finer label's rank among the labels
          sharing its parent (``r < f``, ``f`` the largest number of such children) identifies
          it, so the key ``key_n * f + r`` numbers the classes of ``node``: one pass over the rows
          instead of one per QI not in a cached prefix;
        * otherwise the prefix composition of :meth:`classes`, counted as above.

        The classes, hence the multiset of their sizes, are the same either way; only their
        numbering differs, which a count does not see.
        """
        self.evaluations += 1
        hit = self._leaves.get(node)
        if hit is not None:
            self._leaves.move_to_end(node)
            return hit.records_in_classes_smaller_than(k)
        source = self._refinable(node)
        if source is not None:
            qi, (key, space) = source
            self.refined += 1
            rank, fanout = self._child_ranks(qi, node[qi])
            key, space, below = self._count(key, fanout, rank, space * fanout, k)
        else:
            ordered = tuple(node[i] for i in self.order)
            ids, n = self._prefix(ordered[:-1])
            last = self.order[-1]
            level = ordered[-1]
            s = self._sizes[last][level]
            code = self._codes[last][level]
            if ids is None:
                key, space, below = self._count(None, s, code, s, k)
            elif s == 1:
                key, space, below = self._count(None, n, ids, n, k)
            else:
                key, space, below = self._count(ids, s, code, n * s, k)
        if self._recent_capacity > 0:
            self._recent[node] = (key, space)
            if len(self._recent) > self._recent_capacity:
                self._recent.popitem(last=False)
        return below

    def _refinable(self, node: Node) -> tuple[int, tuple[SlotArray, int]] | None:
        """``(i, (key, space))`` of a recently counted node ``node + e_i`` whose refinement has
        the smallest id space, within the space re-densified without sorting; else ``None``."""
        recent = self._recent
        if not recent:
            return None
        best: tuple[int, tuple[SlotArray, int]] | None = None
        best_space = self._refine_limit + 1
        heights = self.lattice.heights
        above = list(node)
        for i, level in enumerate(node):
            if level < heights[i]:
                above[i] = level + 1
                hit = recent.get(tuple(above))
                above[i] = level
                if hit is not None:
                    space = hit[1] * self._child_ranks(i, level)[1]
                    if space < best_space:
                        best, best_space = (i, hit), space
        return best

    def _child_ranks(self, qi: int, level: int) -> tuple[SlotArray, int]:
        """Per row, the rank of its QI ``qi`` label at ``level`` among the labels with the same
        parent label (at ``level + 1``), in label order; and the largest number of such children."""
        hit = self._children.get((qi, level))
        if hit is None:
            low = self._codes[qi][level]
            n_low = self._sizes[qi][level]
            parent = np.empty(n_low, dtype=np.intp)
            parent[low] = self._codes[qi][level + 1]
            by_parent = np.lexsort((np.arange(n_low), parent))
            grouped = parent[by_parent]
            starts = np.flatnonzero(np.r_[True, grouped[1:] != grouped[:-1]]) if n_low else grouped
            first = np.repeat(starts, np.diff(np.r_[starts, n_low]))
            rank = np.empty(n_low, dtype=np.intp)
            rank[by_parent] = np.arange(n_low) - first
            codes = rank[low]
            hit = (
                _read_only(codes.astype(np.int32) if self.compiled else codes),
                int(rank.max(initial=0)) + 1,
            )
            self._children[(qi, level)] = hit
        return hit

    def _count(
        self, ids: SlotArray | None, s: int, code: SlotArray, space: int, k: int
    ) -> tuple[SlotArray, int, int]:
        """``(key, its space, records in keys of fewer than k records)`` for ``key = ids * s +
        code`` (``code`` when ``ids`` is ``None``) in a space of ``space`` ids, re-densified first
        when the space outgrows the count array."""
        if not self.compiled:
            if space > self._count_space:
                key, space = densify(code if ids is None else ids * s + code, space)
            else:
                key = code if ids is None else ids * s + code
            sizes = np.bincount(key, weights=self._weights, minlength=space)
            return key, space, int((sizes * (sizes < k)).sum())
        scratch = self._count_scratch
        if scratch is None:
            scratch = self._count_scratch = np.zeros(self._count_space, dtype=self._int_weights.dtype)
        if space > self._count_space:
            if space <= self._composer.max_space:
                dense, space, below = self._composer.count_below_dense(
                    ids, s, code, space, self._int_weights, k, scratch
                )
                return dense, space, below
            wide = code.astype(np.int64) if ids is None else ids.astype(np.int64) * s + code
            key, space = densify(wide, space)
            ids, s, code = None, space, key
        counted, below = count_below(ids, s, code, self._int_weights, space, k, scratch)
        return counted, space, below

    def _from_leaves(self, node: Node) -> tuple[SlotArray, FloatArray]:
        """``(class slot per row, records per slot)`` composed from the frequency table."""
        ordered = tuple(node[i] for i in self.order)
        ids, n = self._prefix(ordered[:-1])
        last = self.order[-1]
        level = ordered[-1]
        return self._finish(ids, n, self._codes[last][level], self._sizes[last][level], self._weights)

    def _roll_up(self, node: Node, source: _ClassTable) -> Classes:
        """The classes of ``node`` from the class table of a descendant: the same prefix
        composition over its ``C`` classes (each stands for one representative row) instead
        of the ``M`` rows, so the cost is proportional to ``C``. The classes come out in the
        same (lexicographic) order as from the leaf table, so their dense ids are equal."""
        self.rolled_up += 1
        rep, weights = source.rep_and_sizes()
        c = rep.shape[0]
        ids: SlotArray | None = None
        n = 1
        order = self.order
        for qi in order[:-1]:
            level = node[qi]
            s = self._sizes[qi][level]
            if s > 1:
                ids, n = self._compose(ids, n, self._codes[qi][level].take(rep), s, c)
        last = order[-1]
        level = node[last]
        s = self._sizes[last][level]
        code = self._codes[last][level].take(rep) if s > 1 or ids is None else rep
        key, sizes = self._finish(ids, n, code, s, weights)
        used = np.flatnonzero(sizes)
        slot_rep = np.empty(sizes.shape[0], dtype=np.intp)
        slot_rep[key] = rep
        dense_sizes = sizes.take(used)
        if used.shape[0] <= self._table_limit:
            self._tables.add(node, _ClassTable(slot_rep.take(used), dense_sizes, used.shape[0], dense=True))

        def row_class() -> SlotArray:
            leaf_key, leaf_sizes = self._from_leaves(node)
            rank = np.cumsum(leaf_sizes > 0, dtype=np.intp) - 1
            return rank[leaf_key]

        return Classes(node, dense_sizes, self.table.n_records, row_class=row_class, persons=self._persons)

    def iter_classes(self) -> Iterator[Classes]:
        """The classes of every node of the lattice, depth-first (each prefix computed once)."""
        order = self.order
        q = len(order)
        heights = [self.table.hierarchies[i].height for i in order]
        levels = [0] * q
        n_records = self.table.n_records

        def walk(depth: int, ids: SlotArray | None, n: int) -> Iterator[Classes]:
            qi = order[depth]
            for level in range(heights[depth] + 1):
                levels[depth] = level
                if depth == q - 1:
                    node = [0] * q
                    for pos, i in enumerate(order):
                        node[i] = levels[pos]
                    self.evaluations += 1
                    key, sizes = self._finish(
                        ids, n, self._codes[qi][level], self._sizes[qi][level], self._weights
                    )
                    yield Classes(tuple(node), sizes, n_records, row_class=key, persons=self._persons)
                else:
                    nids, nn = self._compose(ids, n, self._codes[qi][level], self._sizes[qi][level], self._m)
                    yield from walk(depth + 1, nids, nn)

        yield from walk(0, None, 1)

    def class_sizes_at(self, node: Node) -> npt.NDArray[np.int64]:
        """Sizes of the non-empty classes of ``node``."""
        return self.classes(node).nonempty

    def clear_cache(self) -> None:
        self._cache.clear()
        self._cache_used = 0
        self._leaves.clear()
        self._tables.clear()
        self._recent.clear()

    # --------------------------------------------------------------- internal
    def _compose(
        self, ids: SlotArray | None, n: int, code: SlotArray, s: int, m: int
    ) -> tuple[SlotArray | None, int]:
        """Class ids after adding one QI (codes ``code`` with ``s`` values) to ``(ids, n)``.

        ``m`` is the number of elements; the ids are re-densified once their
        space exceeds ``m``.
        """
        if s == 1:
            return ids, n
        if ids is None:
            return code, s
        space = n * s
        if not self.compiled:
            key = ids * s
            key += code
            return (key, space) if space <= m else densify(key, space)
        if space <= m:
            return compose(ids, s, code), space
        return self._densify(ids, s, code, space)

    def _densify(self, ids: SlotArray, s: int, code: SlotArray, space: int) -> tuple[SlotArray, int]:
        """``ids * s + code`` relabelled densely (in order): with the compiled rank directory
        of :class:`~safeshare.core.kernels.DenseComposer` up to its space, else :func:`densify`."""
        if space <= self._composer.max_space:
            return self._composer.compose_dense(ids, s, code, space)
        key = ids.astype(np.int64) * s
        key += code
        return densify(key, space)

    def _finish(
        self, ids: SlotArray | None, n: int, code: SlotArray, s: int, weights: FloatArray
    ) -> tuple[SlotArray, FloatArray]:
        """Add the last QI and count: ``(class slot per element, records per slot)``.

        Slots stay within twice the number of elements, so that everything
        computed per class later costs no more than a pass over the rows.
        """
        m = code.shape[0]
        if not self.compiled:
            return self._finish_numpy(ids, n, code, s, weights)
        if ids is None:
            return compose_count(None, s, code, weights, s)
        if s == 1:
            return compose_count(None, n, ids, weights, n)
        space = n * s
        if space <= max(2 * m, 1 << 12):
            return compose_count(ids, s, code, weights, space)
        key, space = self._densify(ids, s, code, space)
        return key, cast(FloatArray, np.bincount(key, weights=weights, minlength=space))

    @staticmethod
    def _finish_numpy(
        ids: SlotArray | None, n: int, code: SlotArray, s: int, weights: FloatArray
    ) -> tuple[SlotArray, FloatArray]:
        """:meth:`_finish` in numpy (small tables)."""
        m = code.shape[0]
        if ids is None:
            key, space = code, s
        elif s == 1:
            key, space = ids, n
        else:
            key = ids * s
            key += code
            space = n * s
        if space > max(2 * m, 1 << 12):
            key, space = densify(key, space)
        sizes = cast(FloatArray, np.bincount(key, weights=weights, minlength=space))
        return key, sizes

    def _prefix(self, ordered_levels: tuple[int, ...]) -> tuple[SlotArray | None, int]:
        """The ids of the prefix ``ordered_levels`` (levels of the first QIs of :attr:`order`):
        from the longest cached prefix, composing (and caching) the QIs after it."""
        cache = self._cache
        end = len(ordered_levels)
        start = end
        hit: tuple[SlotArray | None, int] | None = None
        while start > 0:
            key = ordered_levels if start == end else ordered_levels[:start]
            hit = cache.get(key)
            if hit is not None:
                cache.move_to_end(key)
                break
            start -= 1
        ids, n = (None, 1) if hit is None else hit
        order, codes, sizes, m = self.order, self._codes, self._sizes, self._m
        for pos in range(start, end):
            qi, level = order[pos], ordered_levels[pos]
            ids, n = self._compose(ids, n, codes[qi][level], sizes[qi][level], m)
            self._remember(ordered_levels[: pos + 1], (ids, n))
        return ids, n

    def _remember(self, key: tuple[int, ...], value: tuple[SlotArray | None, int]) -> None:
        if value[0] is not None:
            _read_only(value[0])  # shared by every node with this prefix (and maybe its row_class)
        nbytes = value[0].nbytes if value[0] is not None else 0
        if nbytes > self.cache_bytes:
            return
        self._cache[key] = value
        self._cache_used += nbytes
        while self._cache_used > self.cache_bytes and self._cache:
            _, (old, _) = self._cache.popitem(last=False)
            self._cache_used -= old.nbytes if old is not None else 0

    def _remember_leaf(self, classes: Classes) -> None:
        if self._leaf_capacity <= 0:
            return
        self._leaves[classes.node] = classes
        if len(self._leaves) > self._leaf_capacity:
            self._leaves.popitem(last=False)
