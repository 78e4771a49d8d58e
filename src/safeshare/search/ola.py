"""Optimal Lattice Anonymization (El Emam et al. 2009; thesis §4.3).

OLA finds every *minimal* node of a monotone predicate (for k-anonymity with a
suppression limit: the k-minimal nodes, qualifying nodes none of whose
predecessors qualifies) by a binary search along the generalization
strategies, then returns the one of least information loss. Because the loss
metric is monotone, the optimum over all qualifying nodes is attained at a
minimal one, so the result is globally optimal among full-domain
generalizations.

``Kmin(B, T)`` works on the sub-lattice between ``B`` and ``T`` (``T`` always
qualifies). When it spans more than one step it visits every node ``N`` at
half its height and recurses into ``Kmin(B, N)`` if ``N`` qualifies, into
``Kmin(N, T)`` otherwise; a two-node sub-lattice yields ``B`` if it qualifies,
else ``T``. Every check tags the node's up-set (qualifies) or down-set (fails),
so most nodes are never checked (*predictive tagging*).

Implementation notes, none of which changes the result:

* Repeated ``(B, T)`` pairs are visited once, and a sub-lattice that is fully
  tagged, or whose ``B`` qualifies, is not entered: the recursion tree depends
  only on the predicate, so what a visit would find is already in the tags.
* Every minimal node is therefore tagged as qualifying when the recursion
  ends, and has no qualifying predecessor; the k-minimal set is read off the
  tags (:func:`tag_minimal`) instead of being maintained during the search.
* Two extra probes, *look below* and *descent* (see
  :func:`find_minimal_nodes`), settle many nodes with fewer checks: on UCI
  Adult every one of the thesis' 18 configurations needs fewer checks than
  its Table 6.9 reports.

The search is generic: :func:`find_minimal_nodes` takes any monotone
predicate, and an anti-monotone one (e.g. "loss <= max_loss", Inverse OLA)
is searched on the dual lattice, which turns its maximal nodes into minimal
ones.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable
from functools import lru_cache
from operator import add, sub

import numpy as np

from safeshare.core import jit_cache
from safeshare.core.lattice import SATISFIED, UNKNOWN, Lattice, Node, TagStore
from safeshare.search import compiled_loops
from safeshare.search.progress import Progress, Ticker
from safeshare.search.result import SearchResult

Predicate = Callable[[Node], bool]
Objective = Callable[[Node], float]
Guide = Callable[[Node], float] | np.ndarray


def guide_array(lattice: Lattice, guide: Guide) -> np.ndarray:
    """A node score as a float array of shape ``heights + 1``, indexed by the node."""
    shape = tuple(h + 1 for h in lattice.heights)
    if isinstance(guide, np.ndarray):
        if guide.shape != shape:
            raise ValueError(f"guide array has shape {guide.shape}, expected {shape}")
        return guide.astype(np.float64, copy=False)
    out = np.empty(shape, dtype=np.float64)
    for node in lattice.nodes():
        out[node] = guide(node)
    return out


class MinimalSet:
    """An antichain of nodes: adding a node drops the members it lies below."""

    def __init__(self, q: int) -> None:
        self._nodes: list[Node] = []
        self._members: set[Node] = set()
        self._arr = np.zeros((0, q), dtype=np.int32)

    def add(self, node: Node) -> None:
        if node in self._members:
            return
        arr = self._arr
        if arr.shape[0]:
            vec = np.asarray(node, dtype=np.int32)
            if (arr <= vec).all(axis=1).any():
                return  # a member is below (or equal to) node
            keep = ~(arr >= vec).all(axis=1)
            if not keep.all():
                self._nodes = [n for n, k in zip(self._nodes, np.asarray(keep, dtype=bool), strict=True) if k]
                self._members = set(self._nodes)
                arr = arr[keep]
        self._nodes.append(node)
        self._members.add(node)
        self._arr = np.vstack([arr, np.asarray(node, dtype=np.int32)[None, :]])

    def nodes(self) -> list[Node]:
        return sorted(self._nodes)


def find_minimal_nodes(
    lattice: Lattice,
    predicate: Predicate,
    monotone: bool = True,
    guide: Guide | None = None,
    progress: Progress | Ticker | None = None,
    known: Iterable[tuple[Node, bool]] = (),
    compiled: bool | None = None,
) -> tuple[list[Node], int, bool]:
    """All minimal qualifying nodes of a monotone predicate (maximal ones, if anti-monotone).

    Parameters
    ----------
    lattice: the lattice to search.
    predicate: the node test; for ``monotone=True`` it must hold at every
        generalization of a node where it holds.
    monotone: ``False`` for an anti-monotone predicate (holds at every
        specialization of a node where it holds); it is then searched on the
        dual lattice and the *maximal* qualifying nodes are returned.
    guide: a cheap score, lower for less generalized nodes (e.g. the
        non-uniform entropy of a node), as a function of the node or as an
        array indexed by the node; it decides which predecessor is probed
        first (see below). It never changes the result.
    progress: ``progress(checked)`` called every :data:`~safeshare.search.progress.EVERY`
        predicate evaluations, or a :class:`~safeshare.search.progress.Ticker`
        shared with the caller (one count over several searches).
    known: ``(node, qualifies)`` facts from earlier evaluations of the same
        predicate, tagged before the search (monotone case): the recursion
        only ever relies on true tags, so the result is unchanged and those
        nodes (and the ones their tags settle) are not evaluated again.
    compiled: run the recursion compiled (:mod:`safeshare.search._ola_jit`: the same checks
        in the same order, without the interpreter); by default on lattices of at least
        :attr:`~safeshare.core.lattice.TagStore.walk_from` nodes, where numba is loaded anyway,
        and on every lattice once the compiled loops were loaded from numba's cache
        (:func:`safeshare.core.jit_cache.preload`, when this module is imported).

    Returns ``(nodes, checked, any_qualifies)``.

    Besides OLA's recursion this adds two probes that only ever add true
    tags and true minimal nodes, so the recursion tree and the result are
    those of OLA, with fewer predicate evaluations:

    * *look below*: before an unknown mid node is checked, its predecessor of
      least ``guide`` is checked; if it qualifies, the mid node is settled by
      tagging and that lower, better node is found instead;
    * *descent*: from a qualifying mid node, walk down through qualifying
      predecessors (least ``guide`` first) to a minimal node, whose whole
      up-set is then tagged.

    On UCI Adult this keeps every one of the thesis' 18 configurations below
    the checks of its Table 6.9.
    """
    if not monotone:
        top_node = lattice.top

        def dual(node: Node) -> Node:
            return tuple(t - v for t, v in zip(top_node, node, strict=True))

        dual_guide = None
        if guide is not None:
            arr = guide_array(lattice, guide)
            dual_guide = -arr[tuple(slice(None, None, -1) for _ in lattice.heights)]
        nodes, checked, found_any = find_minimal_nodes(
            lattice,
            lambda n: predicate(dual(n)),
            monotone=True,
            guide=dual_guide,
            progress=progress,
            compiled=compiled,
        )
        return sorted(dual(n) for n in nodes), checked, found_any

    walk = lattice.size >= TagStore.walk_from
    run_compiled = (walk or jit_cache.loaded()) if compiled is None else compiled
    # the compiled recursion walks the tag array itself: no bit sets to keep
    tags = TagStore(lattice, monotone=True, bit_sets=False if run_compiled else None)
    state = tags.array
    status = state.item
    checked = 0
    tick = (progress if isinstance(progress, Ticker) else Ticker(progress)).tick
    for node, qualifies in known:
        if status(node) == UNKNOWN:
            tags.tag(node, qualifies)

    def check(node: Node) -> int:
        nonlocal checked
        value = status(node)
        if value == UNKNOWN:
            checked += 1
            tick()
            tags.tag(node, bool(predicate(node)))
            value = status(node)
        return value

    if check(lattice.top) != SATISFIED:
        return [], checked, False
    scores = guide_array(lattice, guide if guide is not None else lambda n: float(sum(n)))
    visited: set[tuple[Node, Node]] = set()
    walked: set[Node] = set()
    offsets_cache: dict[tuple[tuple[int, ...], int], tuple[list[Node], np.ndarray | None]] = {}
    pred_cache: dict[Node, list[Node]] = {}

    def mid_nodes(bottom: Node, top: Node, steps: int) -> tuple[list[Node], np.ndarray | None]:
        """The sub-lattice's nodes ``steps`` above ``bottom``, by increasing guide (stable),
        as tuples and (for the compiled paths of big lattices) as a ``(K, q)`` array.

        Offsets from the bottom are cached per shape; long lists are built with numpy.
        """
        key = (tuple(map(sub, top, bottom)), steps)
        hit = offsets_cache.get(key)
        if hit is None:
            hit = offsets_cache[key] = level_offsets(*key, compiled=walk)
        rows, arr = hit
        if arr is None:
            nodes = [tuple(map(add, bottom, o)) for o in rows]
            nodes.sort(key=scores.item)
            return nodes, np.array(nodes, dtype=np.int64).reshape(len(nodes), len(bottom)) if walk else None
        full = arr + np.asarray(bottom, dtype=np.int64)
        full = full[np.argsort(scores[tuple(full.T)], kind="stable")]
        return list(map(tuple, full.tolist())), full if walk else None

    def predecessors_by_score(node: Node) -> list[Node]:
        hit = pred_cache.get(node)
        if hit is None:
            hit = sorted(lattice.predecessors(node), key=lambda p: (scores.item(p), p))
            pred_cache[node] = hit
        return hit

    def descend(node: Node) -> None:
        """From a qualifying node, walk down through qualifying predecessors
        (least guide first) until every predecessor fails: a minimal node."""
        while node not in walked:
            walked.add(node)
            preds = predecessors_by_score(node)
            nxt = None
            for p in preds:
                if status(p) == SATISFIED:
                    nxt = p
                    break
            if nxt is None:
                for p in preds:
                    if status(p) == UNKNOWN and check(p) == SATISFIED:
                        nxt = p
                        break
            if nxt is None:
                return
            node = nxt

    def kmin(bottom: Node, top: Node, low: int, high: int) -> None:
        """OLA's Kmin on the sub-lattice [bottom, top] (heights low..high, high - low >= 2)."""
        key = (bottom, top)
        if key in visited:
            return
        visited.add(key)
        span = high - low
        half = span // 2
        mid = low + half
        nodes, array = mid_nodes(bottom, top, half)
        # Whose next sub-lattice is already fully tagged, asked once for all of them (what
        # `tags.settled` would say below; it stays true as tags are only ever added).
        settled_now = [False] * len(nodes)
        if array is not None:
            settled_now = tags.settled_children(bottom, top, array).tolist()
        for node, child_settled in zip(nodes, settled_now, strict=True):
            if status(node) == UNKNOWN:
                for p in predecessors_by_score(node):
                    if status(p) == UNKNOWN:
                        check(p)  # look below first
                        break
            if check(node) == SATISFIED:
                descend(node)
                child_bottom, child_top, child_low, child_high = bottom, node, low, mid
            else:
                child_bottom, child_top, child_low, child_high = node, top, mid, high
            if status(child_bottom) == SATISFIED:
                continue  # its only minimal node is its bottom, already tagged
            if child_high - child_low == 1:
                check(child_bottom)  # two nodes: bottom if it qualifies, else top
            elif (child_bottom, child_top) in visited:
                continue
            elif child_high - child_low == 2 or not (child_settled or tags.settled(child_bottom, child_top)):
                kmin(child_bottom, child_top, child_low, child_high)

    if run_compiled and lattice.max_height > 1:
        from safeshare.search._ola_jit import kmin as compiled_kmin

        node_at = lattice.node_at

        def evaluate(position: int) -> int:
            nonlocal checked
            checked += 1
            tick()
            return 1 if predicate(node_at(position)) else 0

        compiled_kmin(state, scores, lattice.heights, evaluate)
        return _minimal_from_tags(state, walk), checked, True
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10 * lattice.max_height + 1000))
    try:
        if lattice.max_height == 1:
            check(lattice.bottom)
        elif lattice.max_height > 1:
            kmin(lattice.bottom, lattice.top, 0, lattice.max_height)
    finally:
        sys.setrecursionlimit(limit)
    return _minimal_from_tags(state, walk), checked, True


def _minimal_from_tags(state: np.ndarray, compiled: bool) -> list[Node]:
    """The minimal nodes, read off the tags once the recursion has ended: exactly the nodes
    :func:`tag_minimal` lists.

    Each of those is tagged as qualifying (a true tag) with no predecessor so tagged. If one
    of them, ``c``, were not minimal, a qualifying node below it would lie above a minimal
    node ``m < c``; every minimal node is tagged as qualifying when the recursion ends, and
    tags are closed upward, so the predecessor of ``c`` on a path up from ``m`` would be
    tagged as qualifying too: a contradiction. So no filter is needed (a minimal-elements
    pass over the 17,201 minimal nodes of the 14-QI KDD search cost a quarter of OLA's own
    time; ``tests/test_ola.py`` checks the result against exhaustive search)."""
    return sorted(tag_minimal(state))


@lru_cache(maxsize=4096)
def level_offsets(
    shape: tuple[int, ...], steps: int, compiled: bool = False
) -> tuple[list[Node], np.ndarray | None]:
    """Offsets ``o`` with ``0 <= o_i <= shape_i`` and ``sum(o) == steps``, lexicographic;
    also as an array when there are more than 16 (for numpy gathers).

    Shared by every search (the same sub-lattice shapes recur from one search to the
    next), and built one QI at a time, keeping only prefixes that can still reach
    ``steps``: never the whole box, which for a lattice of a million nodes is seconds of
    Python. ``compiled``: by a compiled depth-first walk (big lattices; same offsets).
    """
    if compiled:
        from safeshare.search._ola_jit import level_offsets as compiled_offsets

        prefixes = compiled_offsets(shape, steps)
    else:
        prefixes = _offsets_numpy(shape, steps)
    rows: list[Node] = list(map(tuple, prefixes.tolist()))
    if len(rows) <= 16:
        return rows, None
    prefixes.flags.writeable = False
    return rows, prefixes


def _offsets_numpy(shape: tuple[int, ...], steps: int) -> np.ndarray:
    q = len(shape)
    rest = [sum(shape[i:]) for i in range(q)] + [0]
    prefixes = np.zeros((1, 0), dtype=np.intp)
    sums = np.zeros(1, dtype=np.intp)
    for i, size in enumerate(shape):
        values = np.arange(size + 1, dtype=np.intp)
        new_sums = (sums[:, None] + values[None, :]).ravel()
        keep = (new_sums <= steps) & (new_sums + rest[i + 1] >= steps)
        rows_idx = np.repeat(np.arange(prefixes.shape[0]), size + 1)[keep]
        prefixes = np.column_stack([prefixes[rows_idx], np.tile(values, prefixes.shape[0])[keep]])
        sums = new_sums[keep]
    return prefixes


def tag_minimal(state: np.ndarray) -> list[Node]:
    """Nodes tagged as qualifying none of whose predecessors is tagged as qualifying.

    Every minimal qualifying node is among them once OLA's recursion has
    covered the lattice (each is checked, or lies in a sub-lattice whose
    nodes are all tagged), and every other one lies above a minimal node, so
    the minimal elements of this list are exactly the minimal nodes.
    """
    sat = state == SATISFIED
    candidate = sat.copy()
    for axis in range(sat.ndim):
        upper = [slice(None)] * sat.ndim
        lower = [slice(None)] * sat.ndim
        upper[axis] = slice(1, None)
        lower[axis] = slice(0, -1)
        candidate[tuple(upper)] &= ~sat[tuple(lower)]
    return list(map(tuple, np.argwhere(candidate).tolist()))


def rank_nodes(nodes: list[Node], objective: Objective) -> list[tuple[float, Node]]:
    """``(objective, node)`` for every node, best first: the order of :data:`TIE_BREAK`
    (least objective, then least height ``sum(node)``, then lexicographic order)."""
    keyed = sorted((objective(node), sum(node), node) for node in nodes)
    return [(value, node) for value, _, node in keyed]


def choose_best(nodes: list[Node], objective: Objective) -> tuple[Node | None, float | None]:
    """The node of least objective; ties go to the lower node, then lexicographic order
    (:data:`TIE_BREAK`)."""
    ranked = rank_nodes(nodes, objective)
    if not ranked:
        return None, None
    value, node = ranked[0]
    return node, value


def ola_search(
    lattice: Lattice,
    predicate: Predicate,
    objective: Objective,
    guide: Guide | None = None,
    progress: Progress | Ticker | None = None,
    known: Iterable[tuple[Node, bool]] = (),
    compiled: bool | None = None,
) -> SearchResult:
    """Optimal Lattice Anonymization: least ``objective`` among the minimal nodes of a
    monotone ``predicate`` (thesis §4.3).

    The generic algorithm, a plain function like :func:`find_minimal_nodes` (whose
    ``guide``, ``progress``, ``known`` and ``compiled`` it passes on; none changes the result). The
    ``ola`` strategy (:class:`safeshare.search.strategy.OLA`) runs it on a run's
    :class:`~safeshare.search.context.SearchContext`.
    """
    start = time.perf_counter()
    minimal, checked, _ = find_minimal_nodes(
        lattice, predicate, monotone=True, guide=guide, progress=progress, known=known, compiled=compiled
    )
    losses = {node: objective(node) for node in minimal}
    node, value = choose_best(minimal, losses.__getitem__)
    return SearchResult(
        algorithm="ola",
        node=node,
        objective=value,
        minimal_nodes=minimal,
        minimal_losses=[losses[n] for n in minimal],
        checked_nodes=checked,
        lattice_size=lattice.size,
        elapsed_s=time.perf_counter() - start,
    )


# the compiled loops, loaded when the search path is imported (or by the run's thread that
# loads them beside its read of the input: safeshare.search.compiled_loops)
compiled_loops.ensure_loading()
