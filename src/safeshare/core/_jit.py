"""The numba-compiled loops behind :mod:`safeshare.core.kernels` (imported on first use).

Plain loops over arrays, compiled once per machine (``cache=True``); their meaning,
and why each exists, is documented in :mod:`safeshare.core.kernels`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import numba
import numpy as np

_jit = numba.njit(cache=True, nogil=True)


@numba.njit(cache=True, nogil=True, inline="always")
def _popcount(x: Any) -> Any:  # pragma: no cover - runs compiled
    """Number of set bits of a 64-bit word (SWAR; Warren, Hacker's Delight §5-1)."""
    x = x - ((x >> np.uint64(1)) & np.uint64(0x5555555555555555))
    x = (x & np.uint64(0x3333333333333333)) + ((x >> np.uint64(2)) & np.uint64(0x3333333333333333))
    x = (x + (x >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return np.int64((x * np.uint64(0x0101010101010101)) >> np.uint64(56))


def _compose_dense(  # pragma: no cover
    ids: Any, s: int, code: Any, space: int, bits: Any, ranks: Any, out: Any
) -> int:
    """``out = ids * s + code`` relabelled by rank among the distinct keys; returns their number.

    ``bits`` (``ceil(space / 64)`` zero words, left zero) marks the keys present; ``ranks[w]``
    is the number of keys in words before ``w``.
    """
    m = code.shape[0]
    one = np.uint64(1)
    for r in range(m):
        v = ids[r] * s + code[r]
        out[r] = v
        bits[v >> 6] |= one << np.uint64(v & 63)
    n_words = (space + 63) >> 6
    count = 0
    for w in range(n_words):
        ranks[w] = count
        count += _popcount(bits[w])
    for r in range(m):
        v = out[r]
        w = v >> 6
        out[r] = ranks[w] + _popcount(bits[w] & ((one << np.uint64(v & 63)) - one))
    for w in range(n_words):
        bits[w] = 0
    return count


def _count_below_dense(  # pragma: no cover
    ids: Any,
    s: int,
    code: Any,
    space: int,
    bits: Any,
    ranks: Any,
    weights: Any,
    counts: Any,
    k: int,
    out: Any,
) -> Any:
    """:func:`_compose_dense` and :func:`_count_below` in one: ``out`` = the dense rank of
    ``ids * s + code`` (``code`` when ``s`` is 0) among the distinct keys, the records in keys
    of fewer than ``k``; returns ``(distinct keys, records below k)``. ``bits``, ``counts``
    zero on entry, left zero."""
    m = code.shape[0]
    one = np.uint64(1)
    for r in range(m):
        v = ids[r] * s + code[r] if s else code[r]
        out[r] = v
        bits[v >> 6] |= one << np.uint64(v & 63)
    n_words = (space + 63) >> 6
    count = 0
    for w in range(n_words):
        ranks[w] = count
        count += _popcount(bits[w])
    for r in range(m):
        v = out[r]
        w = v >> 6
        d = ranks[w] + _popcount(bits[w] & ((one << np.uint64(v & 63)) - one))
        out[r] = d
        counts[d] += weights[r]
    for w in range(n_words):
        bits[w] = 0
    total = 0
    for v in range(count):
        c = counts[v]
        total += np.int64(c) * (c < k)
        counts[v] = 0
    return count, total


def _compose(ids: Any, s: int, code: Any, out: Any) -> None:  # pragma: no cover
    """``out = ids * s + code`` in one pass."""
    for r in range(code.shape[0]):
        out[r] = ids[r] * s + code[r]


def _compose_count(  # pragma: no cover
    ids: Any, s: int, code: Any, weights: Any, out: Any, sizes: Any
) -> None:
    """``out = ids * s + code`` (or ``code`` when ``s`` is 0) and ``sizes[out[r]] += weights[r]``
    in row order (``sizes`` zero on entry): ``np.bincount(out, weights)`` in the same pass."""
    for r in range(code.shape[0]):
        v = ids[r] * s + code[r] if s else code[r]
        out[r] = v
        sizes[v] += weights[r]


def _count_below(  # pragma: no cover
    ids: Any, s: int, code: Any, weights: Any, counts: Any, space: int, k: int, out: Any
) -> int:
    """``out = ids * s + code`` (``code`` when ``s`` is 0), the records of every key
    (``counts[v] = sum of weights[r] with out[r] == v``, ``counts`` zero on entry and left
    zero) and the records in keys of fewer than ``k``: ``sum_v counts[v] * (counts[v] < k)``
    over ``v < space``. Integer weights and counts; summed branch-free as in :func:`_below`."""
    for r in range(code.shape[0]):
        v = ids[r] * s + code[r] if s else code[r]
        out[r] = v
        counts[v] += weights[r]
    total = 0
    for v in range(space):
        c = counts[v]
        total += np.int64(c) * (c < k)
        counts[v] = 0
    return total


def _below(sizes: Any, k: int) -> int:  # pragma: no cover
    """Sum of the entries of ``sizes`` (record counts: whole numbers) smaller than ``k``.

    Summed as int64 without a branch: which slots are under ``k`` is unpredictable, and a
    float sum is one chain of dependent additions (4 cycles each) that the compiler may not
    reorder; integer additions it vectorizes. Exact, as the float sum of whole numbers below
    2**53 is."""
    total = 0
    for v in sizes:
        total += np.int64(v) * (v < k)
    return total


@_jit
def _box_tagged(tags: Any, strides: Any, bottom: Any, top: Any, max_volume: int) -> int:  # pragma: no cover
    """1 if no entry of the box ``[bottom, top]`` of a flattened C-ordered array is 0, else 0
    (an odometer over the box, stopping at the first 0); -1, without looking, when the box
    has more than ``max_volume`` entries."""
    q = len(bottom)
    volume = 1
    for i in range(q):
        volume *= top[i] - bottom[i] + 1
    if volume > max_volume:
        return -1
    idx = np.empty(q, dtype=np.int64)
    pos = 0
    for i in range(q):
        idx[i] = bottom[i]
        pos += bottom[i] * strides[i]
    while True:
        if tags[pos] == 0:
            return 0
        i = q - 1
        while i >= 0:
            if idx[i] < top[i]:
                idx[i] += 1
                pos += strides[i]
                break
            pos -= (idx[i] - bottom[i]) * strides[i]
            idx[i] = bottom[i]
            i -= 1
        if i < 0:
            return 1


def _children_tagged(  # pragma: no cover
    tags: Any, strides: Any, bottom: Any, top: Any, mids: Any, max_volume: int, out: Any
) -> None:
    """For each row ``n`` of ``mids``: whether the box ``[bottom, n]`` (``n`` tagged 1) or
    ``[n, top]`` (``n`` tagged -1) has no 0 entry; False when ``n`` is 0 or the box has
    more than ``max_volume`` entries."""
    for j in range(mids.shape[0]):
        mid = mids[j]
        pos = 0
        for i in range(mid.shape[0]):
            pos += mid[i] * strides[i]
        status = tags[pos]
        if status == 0:
            out[j] = False
        elif status > 0:
            out[j] = _box_tagged(tags, strides, bottom, mid, max_volume) == 1
        else:
            out[j] = _box_tagged(tags, strides, mid, top, max_volume) == 1


compose = cast(Callable[..., None], _jit(_compose))
compose_count = cast(Callable[..., None], _jit(_compose_count))
below = cast(Callable[..., int], _jit(_below))
count_below = cast(Callable[..., int], _jit(_count_below))
count_below_dense = cast(Callable[..., tuple[int, int]], _jit(_count_below_dense))
box_tagged = cast(Callable[..., int], _box_tagged)
children_tagged = cast(Callable[..., None], _jit(_children_tagged))
compose_dense = cast(Callable[..., int], _jit(_compose_dense))

#: what an evaluation runs (:mod:`safeshare.core.evaluation`), loaded before a search by
#: :func:`safeshare.core.jit_cache.preload`; the tag walks above serve the Python OLA only
EVALUATION = (compose, compose_count, compose_dense, count_below, count_below_dense, below)
