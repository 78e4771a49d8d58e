"""Compiled inner loops of the evaluator and of predictive tagging (numba).

Two kinds of loop dominate an optimal search on a big lattice (issue 11; Census-Income
KDD with 12-14 QIs, ``M`` ~ 115,000 distinct QI tuples, 15,000-60,000 checked nodes):

* **Passes over the rows** (:func:`compose`, :func:`compose_count`,
  :meth:`DenseComposer.compose_dense`, :func:`records_below`). Adding a QI to a prefix
  of class ids gives ``key = id * s + code`` in a space of ``n * s`` ids, of which at
  most ``M`` occur; once the space outgrows ``M`` they are renumbered ``0 .. d - 1``
  keeping their order. numpy does it with a presence array and a cumulative sum over the
  whole space (one byte and four bytes per id: megabytes of random writes). Here the
  presence array is a bit set (``space / 8`` bytes, in cache), and the rank of an id is
  the rank of its 64-bit word plus the population count of the bits below it in the word
  (a rank directory, as in succinct data structures: Jacobson 1989). Each pass is one
  loop over int32 ids.
* **Predictive tagging** (:func:`box_tagged_kernel`, :func:`children_tagged`, for
  :class:`~safeshare.core.lattice.TagStore`): whether a sub-lattice is fully tagged (asked
  half a million times per Python OLA search, mostly about boxes of 16-128 nodes; one
  compiled walk over the box, stopping at the first untagged node, and one call for all
  the nodes at the middle height of a sub-lattice). The compiled OLA recursion has its own
  loops (:mod:`safeshare.search._ola_jit`).

Each returns exactly what the numpy code it replaces returned: the search's results do
not change. The loops are in :mod:`safeshare.core._jit`, imported (numba with it) on first
use, compiled on a machine's first run and cached on disk (``cache=True``): about 6 s of
CPU once, then about 0.8 s per process to import numba and load the cache. Callers use
them only on big tables and lattices (see ``COMPILED_FROM_ROWS`` and
``TagStore.walk_from``).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from types import ModuleType
from typing import Any, cast

import numpy as np
import numpy.typing as npt

#: Class ids of rows: int32 (dense ids and spaces below 2**31; half the memory traffic of int64).
IdArray = npt.NDArray[np.int32]
FloatArray = npt.NDArray[np.float64]
#: ``box_tagged(tags, strides, bottom, top, max_volume)``, see :func:`box_tagged_kernel`
BoxTest = Callable[[npt.NDArray[np.int8], tuple[int, ...], tuple[int, ...], tuple[int, ...], int], int]


@cache
def _kernels() -> ModuleType:
    """:mod:`safeshare.core._jit`, imported (numba with it) on first use, then kept: the
    wrappers below run tens of thousands of times per search."""
    from safeshare.core import _jit

    return _jit


def _input(array: npt.NDArray[Any]) -> IdArray:
    """``array`` as a read-only int32 view (a copy if it is of another integer type): numba
    compiles a loop once per combination of argument types, read-only flags included, and
    :func:`safeshare.core.jit_cache.preload` loads the ones in its cache; with one type per
    argument a search never meets a combination the cache lacks (which it would compile)."""
    if array.dtype != np.int32:
        array = array.astype(np.int32)
    if array.flags.writeable:
        array = array.view()
        array.flags.writeable = False
    return array


def compose(ids: npt.NDArray[Any], s: int, code: npt.NDArray[Any]) -> IdArray:
    """``ids * s + code`` in one pass (numpy's ``ids * s`` then ``+= code`` makes two),
    for a space ``n * s`` below ``2**31``."""
    out = np.empty(code.shape[0], dtype=np.int32)
    _kernels().compose(_input(ids), s, _input(code), out)
    return out


def compose_count(
    ids: npt.NDArray[Any] | None, s: int, code: npt.NDArray[Any], weights: FloatArray, space: int
) -> tuple[IdArray, FloatArray]:
    """``key = ids * s + code`` (``code`` alone when ``ids`` is ``None``) and
    ``np.bincount(key, weights, minlength=space)``, in one pass."""
    out = np.empty(code.shape[0], dtype=np.int32)
    sizes = np.zeros(space, dtype=np.float64)
    code = _input(code)
    _kernels().compose_count(
        code if ids is None else _input(ids), 0 if ids is None else s, code, weights, out, sizes
    )
    return out, sizes


def count_below(
    ids: npt.NDArray[Any] | None,
    s: int,
    code: npt.NDArray[Any],
    weights: npt.NDArray[Any],
    space: int,
    k: int,
    scratch: npt.NDArray[Any],
) -> tuple[IdArray, int]:
    """``key = ids * s + code`` (``code`` alone when ``ids`` is ``None``) and the records in
    keys of fewer than ``k`` records (``weights``: records per row, integers), in one pass
    over the rows and one over the ``space`` keys: what
    ``np.bincount(key, weights)`` then :func:`records_below` give, without a float array.
    ``scratch``: integer counts, zero, at least ``space`` long (left zero)."""
    out = np.empty(code.shape[0], dtype=np.int32)
    code = _input(code)
    below = _kernels().count_below(
        code if ids is None else _input(ids), 0 if ids is None else s, code, weights, scratch, space, k, out
    )
    return out, int(below)


def records_below(sizes: FloatArray, k: int) -> int:
    """Sum of the class sizes smaller than ``k`` (records in classes of fewer than ``k``)."""
    return int(_kernels().below(sizes, k))


class DenseComposer:
    """Reusable scratch space of :meth:`compose_dense` for id spaces up to ``max_space``."""

    def __init__(self, max_space: int) -> None:
        words = (max_space + 63) >> 6
        self.max_space = max_space
        self._bits = np.zeros(words, dtype=np.uint64)
        self._ranks = np.zeros(words, dtype=np.int32)  # ranks < M < 2**31

    def count_below_dense(
        self,
        ids: npt.NDArray[Any] | None,
        s: int,
        code: npt.NDArray[Any],
        space: int,
        weights: npt.NDArray[Any],
        k: int,
        scratch: npt.NDArray[Any],
    ) -> tuple[IdArray, int, int]:
        """:meth:`compose_dense` of ``ids * s + code`` (``code`` alone when ``ids`` is ``None``)
        and :func:`count_below` of the dense key, in one call (one pass over the rows fewer):
        ``(dense key, distinct keys, records in keys of fewer than k records)``. ``scratch``:
        zero integer counts, at least as long as the rows (left zero)."""
        if space > self.max_space:
            raise ValueError(f"id space {space} exceeds the scratch space {self.max_space}")
        out = np.empty(code.shape[0], dtype=np.int32)
        code = _input(code)
        n, below = _kernels().count_below_dense(
            code if ids is None else _input(ids),
            0 if ids is None else s,
            code,
            space,
            self._bits,
            self._ranks,
            weights,
            scratch,
            k,
            out,
        )
        return out, int(n), int(below)

    def compose_dense(
        self, ids: npt.NDArray[Any], s: int, code: npt.NDArray[Any], space: int
    ) -> tuple[IdArray, int]:
        """``ids * s + code`` (ids in ``0 .. space / s - 1``, codes in ``0 .. s - 1``)
        relabelled ``0 .. d - 1`` in increasing order, and ``d``: what
        :func:`safeshare.core.evaluation.densify` returns for that key, for
        ``space <= max_space``."""
        if space > self.max_space:
            raise ValueError(f"id space {space} exceeds the scratch space {self.max_space}")
        out = np.empty(code.shape[0], dtype=np.int32)
        n = _kernels().compose_dense(_input(ids), s, _input(code), space, self._bits, self._ranks, out)
        return out, int(n)


def box_tagged_kernel() -> BoxTest:
    """``box_tagged(tags, strides, bottom, top, max_volume)``: 1 if no entry of the box
    ``bottom <= n <= top`` of the flattened C-ordered array ``tags`` (``strides`` in
    elements) is 0, else 0; -1 (without looking) if the box has more than ``max_volume``
    entries. The compiled function itself: OLA asks it half a million times per search."""
    return cast(BoxTest, _kernels().box_tagged)


def children_tagged(
    tags: npt.NDArray[np.int8],
    strides: tuple[int, ...],
    bottom: tuple[int, ...],
    top: tuple[int, ...],
    mids: npt.NDArray[np.int64],
    max_volume: int,
) -> npt.NDArray[np.bool_]:
    """For each row ``n`` of ``mids`` (a ``(K, q)`` array): whether the box ``[bottom, n]``
    (``n`` tagged 1) or ``[n, top]`` (``n`` tagged -1) of the flattened C-ordered array
    ``tags`` has no 0 entry; False when ``n`` is 0 or its box has more than ``max_volume``
    entries. One call for all the nodes OLA visits at one height of a sub-lattice."""
    out = np.zeros(mids.shape[0], dtype=np.bool_)
    _kernels().children_tagged(tags, strides, bottom, top, mids, max_volume, out)
    return out
