"""The generalization lattice of full-domain generalization (thesis §4.3.2).

A *node* is a vector of generalization levels, one per quasi-identifier (QI).
Its *successors* generalize one QI by one step; its *predecessors* specialize
one QI by one step. The bottom ``(0, ..., 0)`` is the original data, the top
``(h_1, ..., h_q)`` the most general release. Node ``a`` is *below* node ``b``
(``a <= b``) when ``a_i <= b_i`` for every QI: then ``b`` is a generalization
of ``a``. The lattice has ``prod_i (h_i + 1)`` nodes and height ``sum_i h_i``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from functools import cached_property
from itertools import product

import numpy as np
import numpy.typing as npt

from safeshare.core.kernels import BoxTest, box_tagged_kernel, children_tagged
from safeshare.errors import InputError

Node = tuple[int, ...]

#: Largest lattice whose tag array we allocate (one byte per node).
MAX_TAGGED_NODES = 200_000_000


class Lattice:
    """All full-domain generalization nodes for QIs with the given hierarchy heights.

    Parameters
    ----------
    heights:
        ``h_i`` for each QI: the number of generalization steps of its hierarchy.
    names:
        The QI names, in the same order (for messages and reports).
    """

    def __init__(self, heights: Sequence[int], names: Sequence[str] | None = None) -> None:
        if not heights:
            raise InputError("a lattice needs at least one quasi-identifier")
        if any(h < 0 for h in heights):
            raise InputError(f"hierarchy heights must be >= 0, got {list(heights)}")
        self.heights: Node = tuple(int(h) for h in heights)
        self.names: tuple[str, ...] = (
            tuple(names) if names is not None else tuple(f"qi{i}" for i in range(len(heights)))
        )
        if len(self.names) != len(self.heights):
            raise InputError("lattice: one name per quasi-identifier is required")

    @property
    def n_qis(self) -> int:
        return len(self.heights)

    @cached_property
    def size(self) -> int:
        """Number of nodes, ``prod_i (h_i + 1)``."""
        out = 1
        for h in self.heights:
            out *= h + 1
        return out

    @property
    def bottom(self) -> Node:
        return (0,) * len(self.heights)

    @property
    def top(self) -> Node:
        return self.heights

    @property
    def max_height(self) -> int:
        """Height of the top node, ``sum_i h_i``."""
        return sum(self.heights)

    @staticmethod
    def height(node: Node) -> int:
        """Number of generalization steps of ``node`` above the bottom."""
        return sum(node)

    def contains(self, node: Sequence[int]) -> bool:
        return len(node) == len(self.heights) and all(
            0 <= lv <= h for lv, h in zip(node, self.heights, strict=True)
        )

    def validate(self, node: Sequence[int]) -> Node:
        """Return ``node`` as a tuple or raise :class:`InputError` if it is not in the lattice."""
        if not self.contains(node):
            raise InputError(f"node {list(node)} is not in the lattice with heights {list(self.heights)}")
        return tuple(int(v) for v in node)

    @staticmethod
    def leq(a: Node, b: Node) -> bool:
        """True when ``b`` generalizes ``a`` (``a_i <= b_i`` for all i)."""
        return all(x <= y for x, y in zip(a, b, strict=True))

    def successors(self, node: Node) -> list[Node]:
        """Nodes that generalize exactly one QI of ``node`` by one step."""
        return [
            (*node[:i], node[i] + 1, *node[i + 1 :]) for i in range(len(node)) if node[i] < self.heights[i]
        ]

    def predecessors(self, node: Node) -> list[Node]:
        """Nodes that specialize exactly one QI of ``node`` by one step."""
        return [(*node[:i], node[i] - 1, *node[i + 1 :]) for i in range(len(node)) if node[i] > 0]

    def nodes(self) -> Iterator[Node]:
        """All nodes, in lexicographic order."""
        return product(*(range(h + 1) for h in self.heights))

    def nodes_by_height(self) -> list[list[Node]]:
        """All nodes grouped by height (index = height)."""
        out: list[list[Node]] = [[] for _ in range(self.max_height + 1)]
        for node in self.nodes():
            out[sum(node)].append(node)
        return out

    @staticmethod
    def interval_at_height(lower: Node, upper: Node, steps: int) -> list[Node]:
        """Nodes ``n`` with ``lower <= n <= upper`` and ``height(n) = height(lower) + steps``."""
        q = len(lower)
        spans = [u - lo for lo, u in zip(lower, upper, strict=True)]
        out: list[Node] = []
        # suffix capacity: max steps the QIs from i on can absorb
        cap = [0] * (q + 1)
        for i in range(q - 1, -1, -1):
            cap[i] = cap[i + 1] + spans[i]
        if steps < 0 or steps > cap[0]:
            return out
        current = list(lower)

        def rec(i: int, left: int) -> None:
            if i == q:
                if left == 0:
                    out.append(tuple(current))
                return
            lo = max(0, left - cap[i + 1])
            hi = min(spans[i], left)
            for d in range(lo, hi + 1):
                current[i] = lower[i] + d
                rec(i + 1, left - d)
            current[i] = lower[i]

        rec(0, steps)
        return out

    def index(self, node: Node) -> int:
        """Mixed-radix index of ``node`` in ``0 .. size - 1`` (lexicographic order)."""
        idx = 0
        for lv, h in zip(node, self.heights, strict=True):
            idx = idx * (h + 1) + lv
        return idx

    def node_at(self, index: int) -> Node:
        """Inverse of :meth:`index`."""
        out = []
        for h in reversed(self.heights):
            index, lv = divmod(index, h + 1)
            out.append(lv)
        return tuple(reversed(out))

    def levels_array(self) -> npt.NDArray[np.int16]:
        """``(size, q)`` array of all nodes in lexicographic order."""
        grids = np.meshgrid(*(np.arange(h + 1) for h in self.heights), indexing="ij")
        return np.stack([g.ravel() for g in grids], axis=1).astype(np.int16)

    def __repr__(self) -> str:
        return f"Lattice(heights={list(self.heights)}, size={self.size})"


UNKNOWN, SATISFIED, FAILED = 0, 1, -1


class _BoxMasks:
    """Sets of lattice nodes as bits of a Python integer (bit = row-major node index).

    A sub-lattice ``{n : b <= n <= t}`` is the AND over the QIs of "level of
    QI i in [b_i, t_i]" (all precomputed): whether it holds an untagged node
    is a few ANDs of integers of ``|lattice|`` bits, stopping as soon as the
    intersection is empty, several times cheaper than slicing the tag array.
    """

    def __init__(self, heights: tuple[int, ...] | list[int]) -> None:
        shape = tuple(h + 1 for h in heights)
        size = int(np.prod(shape, dtype=np.int64))
        self.everything = (1 << size) - 1
        grid = np.indices(shape).reshape(len(shape), -1)
        #: ranges[axis][low][high]: nodes whose level of QI ``axis`` lies in [low, high]
        self.ranges: list[list[list[int]]] = []
        for axis, levels in enumerate(grid):
            per_low = []
            for low in range(shape[axis]):
                per_high = [0] * shape[axis]
                for high in range(low, shape[axis]):
                    bits = np.packbits((levels >= low) & (levels <= high), bitorder="little")
                    per_high[high] = int.from_bytes(bits.tobytes(), "little")
                per_low.append(per_high)
            self.ranges.append(per_low)
        self._top = tuple(heights)
        self._bottom = (0,) * len(heights)

    def meets(self, nodes: int, bottom: Node, top: Node) -> bool:
        """Whether the set ``nodes`` has a node in the sub-lattice ``[bottom, top]``."""
        for per_low, low, high in zip(self.ranges, bottom, top, strict=True):
            nodes &= per_low[low][high]
            if not nodes:
                return False
        return True

    def box(self, bottom: Node, top: Node) -> int:
        """The nodes ``n`` with ``bottom <= n <= top``."""
        out = self.everything
        for per_low, low, high in zip(self.ranges, bottom, top, strict=True):
            out &= per_low[low][high]
        return out

    def up(self, node: Node) -> int:
        """The up-set of ``node``."""
        return self.box(node, self._top)

    def down(self, node: Node) -> int:
        """The down-set of ``node``."""
        return self.box(self._bottom, node)


class TagStore:
    """Predictive tagging of one monotone predicate over a lattice (thesis §4.3.2).

    For a *monotone* predicate (true at ``a`` implies true at every ``b >= a``,
    e.g. k-anonymity with a suppression limit), a node found to satisfy it tags
    its whole up-set as satisfying and a failing node tags its whole down-set
    as failing. For an *anti-monotone* predicate (true at ``a`` implies true at
    every ``b <= a``, e.g. information loss <= max_loss) the directions swap.

    The tags live in a q-dimensional int8 array indexed by the node itself, so
    an up-set ``[l_1:, ..., l_q:]`` or down-set ``[:l_1+1, ..., :l_q+1]`` is
    tagged with one slice assignment. On small lattices the untagged nodes are also
    kept as a bit set, so that :meth:`settled` (is a whole sub-lattice tagged?) is a
    few integer ANDs; on big ones (``bit_sets`` False, by default from ``walk_from``
    nodes) it walks the tags of small boxes (compiled) and slices big ones.
    """

    def __init__(self, lattice: Lattice, monotone: bool = True, bit_sets: bool | None = None) -> None:
        if lattice.size > MAX_TAGGED_NODES:
            raise InputError(
                f"the lattice has {lattice.size:,} nodes, more than the {MAX_TAGGED_NODES:,} an "
                "optimal search can tag; use fewer quasi-identifiers or shallower hierarchies"
            )
        self.lattice = lattice
        self.monotone = monotone
        self._tags = np.zeros(tuple(h + 1 for h in lattice.heights), dtype=np.int8)
        if bit_sets is None:
            bit_sets = lattice.size < self.walk_from
        # The bit sets cost q ANDs of |lattice|-bit integers per tag (a fifth of a millisecond
        # on a million nodes) and megabytes to build: big lattices walk the tag array instead.
        self._boxes = _BoxMasks(lattice.heights) if bit_sets else None
        self._unknown = self._boxes.everything if self._boxes is not None else 0  # untagged nodes
        self._size = lattice.size
        self._flat = self._tags.reshape(-1)
        self._strides = tuple(stride // self._tags.itemsize for stride in self._tags.strides)

    @property
    def array(self) -> npt.NDArray[np.int8]:
        """The tag array itself, indexed by node (read it; write through :meth:`tag`)."""
        return self._tags

    def status(self, node: Node) -> int:
        """``SATISFIED`` (1), ``FAILED`` (-1) or ``UNKNOWN`` (0)."""
        return int(self._tags[node])

    def _up(self, node: Node) -> tuple[slice, ...]:
        return tuple(slice(lv, None) for lv in node)

    def _down(self, node: Node) -> tuple[slice, ...]:
        return tuple(slice(0, lv + 1) for lv in node)

    def tag(self, node: Node, satisfied: bool) -> None:
        """Record the predicate's value at ``node`` and propagate it."""
        upward = satisfied == self.monotone
        self._tags[self._up(node) if upward else self._down(node)] = SATISFIED if satisfied else FAILED
        if self._boxes is not None:
            self._unknown &= ~(self._boxes.up(node) if upward else self._boxes.down(node))

    #: A sub-lattice of at most ``walk_volume`` nodes is checked by walking its tags (compiled,
    #: stopping at the first untagged node): OLA asks about boxes of 16-128 nodes half a
    #: million times on Census-Income's 207,360-node lattice. Larger ones: the bit sets.
    walk_volume = 4096
    #: ... on lattices of at least this many nodes (on smaller ones the bit sets are cheap)
    walk_from = 1 << 16

    @cached_property
    def _box_walk(self) -> BoxTest:
        return box_tagged_kernel()

    def settled(self, bottom: Node, top: Node) -> bool:
        """Whether every node ``n`` with ``bottom <= n <= top`` is tagged."""
        item = self._tags.item
        if not item(bottom) or not item(top):  # UNKNOWN is 0: an untagged corner
            return False
        if self._size >= self.walk_from:
            found = self._box_walk(self._flat, self._strides, bottom, top, self.walk_volume)
            if found >= 0:
                return found == 1
        if self._boxes is None:
            box = tuple(slice(low, high + 1) for low, high in zip(bottom, top, strict=True))
            return bool(self._tags[box].all())  # UNKNOWN is 0
        return not self._boxes.meets(self._unknown, bottom, top)

    def settled_children(self, bottom: Node, top: Node, mids: npt.NDArray[np.int64]) -> npt.NDArray[np.bool_]:
        """For each node ``n`` (row of ``mids``, nodes of ``[bottom, top]``): True when ``n``
        is tagged and the sub-lattice OLA enters after it (``[bottom, n]`` if ``n`` satisfies
        the predicate, ``[n, top]`` if not) is fully tagged. False says nothing (untagged
        ``n``, a box of more than ``walk_volume`` nodes, or not settled yet); True stays true,
        since tags are never removed. Monotone tagging only."""
        if not self.monotone:
            raise ValueError("settled_children needs a monotone predicate")
        return children_tagged(self._flat, self._strides, bottom, top, mids, self.walk_volume)
