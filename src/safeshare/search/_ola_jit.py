"""OLA's recursion compiled (numba): :func:`safeshare.search.ola.find_minimal_nodes`, monotone case.

The same algorithm, step for step, as the Python recursion of
:func:`~safeshare.search.ola.find_minimal_nodes` (Kmin with look below, descent, the
visited sub-lattices and the "fully tagged" test), on the same tag array, so that it
checks the same nodes in the same order and finds the same minimal nodes; tested
against the Python recursion and against exhaustive search. What it saves is the
interpreter: on UCI Adult half of a search's time is the recursion's bookkeeping (tuples,
tag lookups, sorting predecessors), on Census-Income KDD a quarter.

Nodes are int64 level vectors and positions ``sum_i n_i * stride_i`` in the C-ordered tag
array (position order is lexicographic node order, so the ties of the guide break the
same way). The predicate is Python: each check leaves the compiled code through
``numba.objmode`` (about a microsecond) and calls the function on top of a thread-local
stack with the node's position; exceptions (an interrupt, a failed evaluation) propagate.
Compiled once per machine and cached on disk, like :mod:`safeshare.core._jit`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numba
import numpy as np

_local = threading.local()
_jit = numba.njit(cache=True)
_NO_LIMIT = np.iinfo(np.int64).max


def _evaluate(position: int) -> int:
    """The predicate of the innermost running search at the node at ``position`` (1 or 0)."""
    stack: list[Callable[[int], int]] = _local.stack
    return stack[-1](position)


@_jit
def _fill(tags: Any, strides: Any, lo: Any, hi: Any, value: int) -> None:  # pragma: no cover
    """Set every entry of the box ``lo <= n <= hi`` of the flattened tag array to ``value``.

    The odometer of :func:`safeshare.core._jit._box_tagged`, written out again: one helper
    shared by both (numba ``inline="always"``) made the 12-QI KDD search 12-18 % slower."""
    q = lo.shape[0]
    idx = lo.copy()
    pos = 0
    for i in range(q):
        pos += lo[i] * strides[i]
    last = q - 1
    step = strides[last]
    while True:
        p = pos
        for _ in range(hi[last] - lo[last] + 1):
            tags[p] = value
            p += step
        i = last - 1
        while i >= 0:
            if idx[i] < hi[i]:
                idx[i] += 1
                pos += strides[i]
                break
            pos -= (idx[i] - lo[i]) * strides[i]
            idx[i] = lo[i]
            i -= 1
        if i < 0:
            return


@_jit
def offsets(shape: Any, steps: int, out: Any) -> int:  # pragma: no cover
    """The offsets ``o`` with ``0 <= o_i <= shape_i`` and ``sum(o) == steps``, in lexicographic
    order, written to the rows of ``out`` when it has room (a depth-first walk that only
    takes values from which ``steps`` is still reachable); returns how many there are."""
    q = shape.shape[0]
    rest = np.zeros(q + 1, dtype=np.int64)
    for i in range(q - 1, -1, -1):
        rest[i] = rest[i + 1] + shape[i]
    if steps < 0 or steps > rest[0]:
        return 0
    o = np.zeros(q, dtype=np.int64)
    sums = np.zeros(q + 1, dtype=np.int64)
    n = 0
    room = out.shape[0]
    i = 0
    o[0] = max(0, steps - rest[1])
    while i >= 0:
        if o[i] > min(shape[i], steps - sums[i]):
            i -= 1
            if i >= 0:
                o[i] += 1
            continue
        if i == q - 1:
            if n < room:
                out[n, :] = o
            n += 1
            o[i] += 1
            continue
        sums[i + 1] = sums[i] + o[i]
        i += 1
        o[i] = max(0, steps - sums[i] - rest[i + 1])
    return n


def level_offsets(shape: tuple[int, ...], steps: int) -> np.ndarray:
    """``(n, q)`` array of the offsets ``o`` with ``0 <= o_i <= shape_i`` and ``sum(o) == steps``,
    in lexicographic order (the nodes ``steps`` above the bottom of a box of that shape)."""
    if not shape:
        return np.zeros((1 if steps == 0 else 0, 0), dtype=np.int64)
    dims = np.asarray(shape, dtype=np.int64)
    count = int(offsets(dims, steps, np.zeros((0, len(shape)), dtype=np.int64)))
    out = np.empty((count, len(shape)), dtype=np.int64)
    offsets(dims, steps, out)
    return out


@_jit
def _position(node: Any, strides: Any) -> int:  # pragma: no cover
    pos = 0
    for i in range(node.shape[0]):
        pos += node[i] * strides[i]
    return pos


@_jit
def _check(tags: Any, strides: Any, heights: Any, node: Any) -> int:  # pragma: no cover
    """The node's tag, evaluating the predicate (and tagging its up-set or down-set) if unknown."""
    pos = _position(node, strides)
    value = tags[pos]
    if value == 0:
        with numba.objmode(qualifies="int64"):
            qualifies = _evaluate(pos)
        if qualifies:
            _fill(tags, strides, node, heights, 1)
        else:
            _fill(tags, strides, np.zeros_like(node), node, -1)
        value = tags[pos]
    return int(value)


@_jit
def _predecessors(node: Any, pos: int, scores: Any, strides: Any) -> Any:  # pragma: no cover
    """The QIs whose one-step specialization of ``node`` exists, ordered by the guide score
    of that predecessor, then by its position (lexicographic order)."""
    q = node.shape[0]
    axes = np.empty(q, dtype=np.int64)
    n = 0
    for i in range(q):
        if node[i] > 0:
            p = pos - strides[i]
            j = n
            # insertion by (score, position)
            while j > 0:
                other = pos - strides[axes[j - 1]]
                if scores[other] > scores[p] or (scores[other] == scores[p] and other > p):
                    axes[j] = axes[j - 1]
                    j -= 1
                else:
                    break
            axes[j] = i
            n += 1
    return axes[:n]


@_jit
def _descend(
    tags: Any, strides: Any, heights: Any, scores: Any, walked: Any, start: Any
) -> None:  # pragma: no cover
    """From a qualifying node, down through qualifying predecessors (least guide first)."""
    node = start.copy()
    while True:
        pos = _position(node, strides)
        if walked[pos]:
            return
        walked[pos] = 1
        axes = _predecessors(node, pos, scores, strides)
        nxt = -1
        for a in axes:
            if tags[pos - strides[a]] == 1:
                nxt = a
                break
        if nxt < 0:
            for a in axes:
                if tags[pos - strides[a]] == 0:
                    node[a] -= 1
                    found = _check(tags, strides, heights, node)
                    node[a] += 1
                    if found == 1:
                        nxt = a
                        break
        if nxt < 0:
            return
        node[nxt] -= 1


@_jit
def _settled(tags: Any, strides: Any, bottom: Any, top: Any) -> bool:  # pragma: no cover
    """Whether every node of the box ``[bottom, top]`` is tagged.

    A walk over the box's rows along its widest side (an odometer over the other sides).
    Tags are closed upward for 1 (a node tagged 1 has its up-set tagged 1), so once a row
    meets a 1 the rest of it is tagged: the walk goes on with the next row. The 14-QI KDD
    search proves 3.4 million boxes settled, 506 million nodes in all, most of them in
    rows that start with a 1."""
    if tags[_position(bottom, strides)] == 0 or tags[_position(top, strides)] == 0:
        return False
    q = bottom.shape[0]
    axis = 0
    for i in range(q):
        if top[i] - bottom[i] > top[axis] - bottom[axis]:
            axis = i
    step = strides[axis]
    length = top[axis] - bottom[axis] + 1
    idx = bottom.copy()
    pos = _position(bottom, strides)
    while True:
        p = pos
        for _ in range(length):
            t = tags[p]
            if t == 0:
                return False
            if t > 0:
                break
            p += step
        i = q - 1
        while i >= 0:
            if i != axis and idx[i] < top[i]:
                idx[i] += 1
                pos += strides[i]
                break
            if i != axis:
                pos -= (idx[i] - bottom[i]) * strides[i]
                idx[i] = bottom[i]
            i -= 1
        if i < 0:
            return True


_EMPTY = -1
_GOLDEN = 0x9E3779B97F4A7C15  # Fibonacci hashing (Knuth, TAOCP 6.4)


@_jit
def _slot(table: Any, key: int) -> Any:  # pragma: no cover
    """The slot of ``key`` in the open-addressing set ``table`` (linear probing): where it is,
    or the empty slot where it would go."""
    mask = table.shape[0] - 1
    slot = np.int64((np.uint64(key) * np.uint64(_GOLDEN)) >> np.uint64(32)) & mask
    while table[slot] != key and table[slot] != _EMPTY:
        slot = (slot + 1) & mask
    return slot


#: bits of the filter in front of the set of visited sub-lattices (2**20 bits: 128 kB)
_FILTER_BITS = 20


@_jit
def _filter_bit(key: int) -> tuple[Any, Any]:  # pragma: no cover
    """Word and bit of ``key`` in the filter."""
    h = (np.uint64(key) * np.uint64(_GOLDEN)) >> np.uint64(64 - _FILTER_BITS)
    return np.int64(h >> np.uint64(6)), np.uint64(1) << (h & np.uint64(63))


@_jit
def _holds(table: Any, bits: Any, key: int) -> Any:  # pragma: no cover
    """Whether the set ``table`` holds ``key``; asked only when the key's bit is set in the
    filter ``bits`` (a Bloom filter of one hash, in cache: most sub-lattices OLA asks about
    were never visited, and the set itself is a megabyte on a 14-QI lattice)."""
    word, bit = _filter_bit(key)
    return (bits[word] & bit) != 0 and table[_slot(table, key)] == key


@_jit
def _add(table: Any, count: Any, bits: Any, key: int) -> Any:  # pragma: no cover
    """Add ``key`` (>= 0) to the set ``table`` holding ``count[0]`` keys (and to the filter
    ``bits``); returns the table, a new one twice as large when it was half full."""
    word, bit = _filter_bit(key)
    bits[word] |= bit
    if 2 * (count[0] + 1) > table.shape[0]:
        grown = np.full(2 * table.shape[0], _EMPTY, dtype=np.int64)
        for old in table:
            if old != _EMPTY:
                grown[_slot(grown, old)] = old
        table = grown
    slot = _slot(table, key)
    if table[slot] == _EMPTY:
        table[slot] = key
        count[0] += 1
    return table


@_jit
def _kmin(
    tags: Any,
    strides: Any,
    heights: Any,
    scores: Any,
    walked: Any,
    visited: Any,
    n_visited: Any,
    filter_bits: Any,
    size: int,
    bottom: Any,
    top: Any,
    low: int,
    high: int,
) -> Any:  # pragma: no cover
    """OLA's Kmin on ``[bottom, top]`` (heights ``low .. high``, ``high - low >= 2``).

    ``visited``: the set of sub-lattices entered (keys ``position(bottom) * size +
    position(top)``, :func:`_add`), holding ``n_visited[0]``, with its filter ``filter_bits``;
    returns it (a larger array once it grew)."""
    key = _position(bottom, strides) * size + _position(top, strides)
    if _holds(visited, filter_bits, key):
        return visited
    visited = _add(visited, n_visited, filter_bits, key)
    half = (high - low) // 2
    mid = low + half
    q = bottom.shape[0]
    shape = top - bottom
    count = offsets(shape, half, np.zeros((0, q), dtype=np.int64))
    nodes = np.empty((count, q), dtype=np.int64)
    offsets(shape, half, nodes)
    keys = np.empty(count, dtype=np.float64)
    for j in range(count):
        for i in range(q):
            nodes[j, i] += bottom[i]
        keys[j] = scores[_position(nodes[j], strides)]
    order = np.argsort(keys, kind="mergesort")  # stable: ties in lexicographic order
    for j in order:
        node = nodes[j]
        pos = _position(node, strides)
        if tags[pos] == 0:  # look below first
            for a in _predecessors(node, pos, scores, strides):
                if tags[pos - strides[a]] == 0:
                    node[a] -= 1
                    _check(tags, strides, heights, node)
                    node[a] += 1
                    break
        if _check(tags, strides, heights, node) == 1:
            _descend(tags, strides, heights, scores, walked, node)
            child_bottom, child_top, child_low, child_high = bottom, node, low, mid
        else:
            child_bottom, child_top, child_low, child_high = node, top, mid, high
        if tags[_position(child_bottom, strides)] == 1:
            continue  # its only minimal node is its bottom, already tagged
        if child_high - child_low == 1:
            _check(tags, strides, heights, child_bottom)  # two nodes: bottom if it qualifies, else top
            continue
        child_key = _position(child_bottom, strides) * size + _position(child_top, strides)
        if _holds(visited, filter_bits, child_key):
            continue
        if child_high - child_low == 2 or not _settled(tags, strides, child_bottom, child_top):
            visited = _kmin(
                tags,
                strides,
                heights,
                scores,
                walked,
                visited,
                n_visited,
                filter_bits,
                size,
                child_bottom,
                child_top,
                child_low,
                child_high,
            )

    return visited


def kmin(
    tags: np.ndarray,
    scores: np.ndarray,
    heights: tuple[int, ...],
    evaluate: Callable[[int], int],
) -> None:
    """Run Kmin on the whole lattice, tagging ``tags`` (C-ordered int8, indexed by node; the
    top already checked and qualifying). ``scores``: the guide array of the same shape.
    ``evaluate(position)``: 1 if the node at that flat position qualifies, else 0 (called once
    per checked node, in the order of the Python recursion)."""
    flat = tags.reshape(-1)
    strides = np.asarray([s // tags.itemsize for s in tags.strides], dtype=np.int64)
    guide = np.ascontiguousarray(scores, dtype=np.float64).reshape(-1).view()
    guide.flags.writeable = False  # one argument type whatever the guide's flags (jit_cache)
    top = np.asarray(heights, dtype=np.int64)
    walked = np.zeros(flat.shape[0], dtype=np.uint8)
    stack = getattr(_local, "stack", None)
    if stack is None:
        stack = _local.stack = []
    stack.append(evaluate)
    try:
        _kmin(
            flat,
            strides,
            top,
            guide,
            walked,
            np.full(1 << 12, _EMPTY, dtype=np.int64),
            np.zeros(1, dtype=np.int64),
            np.zeros(1 << (_FILTER_BITS - 6), dtype=np.uint64),
            flat.shape[0],
            np.zeros_like(top),
            top,
            0,
            int(top.sum()),
        )
    finally:
        stack.pop()


def warm() -> None:
    """Run :func:`kmin` once on the lattice of two single-level QIs (four nodes, the top
    tagged as OLA tags it): the first check of a process compiles the ``numba.objmode`` block
    of :func:`_check` (numba cannot cache it on disk; about 0.1-0.2 s of CPU), so the search
    path pays it when it is imported (:func:`safeshare.search.compiled_loops.load`)
    rather than inside the first search."""
    tags = np.zeros((2, 2), dtype=np.int8)
    tags[1, 1] = 1
    kmin(tags, np.zeros((2, 2)), (1, 1), lambda position: int(position > 0))
