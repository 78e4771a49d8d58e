"""A release that mixes generalization levels per record (local recoding), on the frequency table.

Full-domain generalization writes every record at one node of the lattice. Local recoding
(:mod:`safeshare.workflows.local_recoding`; ARX's ``ARXResult.optimizeIterative``) writes
each *distinct raw quasi-identifier tuple* at its own node: ``row_levels[r, i]`` is the level
of QI ``i`` for frequency-table row ``r`` (all rows of one raw tuple share it), and
``released[r]`` says whether the row's records are written at all.

The equivalence classes of such a release are the records with **identical released values**
(what a recipient sees): two rows written at different nodes that happen to carry the same
labels (``"20-29"`` written at level 1 for one row, and at level 1 of another node for
another; or the same text at two levels of a hierarchy) are one class. This module computes
those classes: every label of a hierarchy, at any level, gets one id per distinct *text*
(:class:`LabelSpace`), each released row its tuple of ids, and the classes are the distinct
tuples (:func:`merged_classes`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import numpy.typing as npt

from safeshare.core.evaluation import Classes
from safeshare.core.frequency import FrequencyTable
from safeshare.hierarchy.hierarchy import Hierarchy

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

#: Packed class keys stay below this before they are re-densified.
_PACKED_LIMIT = 2**62


@dataclass(frozen=True, eq=False)
class LabelSpace:
    """Every label of every level of each QI's hierarchy, numbered by its text.

    ``ids[i][level]`` maps the hierarchy code of a label at ``level`` to its id, and equal
    texts at different levels get the same id; ``labels[i][id]`` is the text back.
    """

    ids: tuple[tuple[IntArray, ...], ...]
    labels: tuple[tuple[str, ...], ...]

    @classmethod
    def of(cls, hierarchies: tuple[Hierarchy, ...] | list[Hierarchy]) -> LabelSpace:
        ids: list[tuple[IntArray, ...]] = []
        labels: list[tuple[str, ...]] = []
        for h in hierarchies:
            index: dict[str, int] = {}
            per_level = []
            for level in range(h.height + 1):
                per_level.append(
                    np.array([index.setdefault(t, len(index)) for t in h.labels(level)], dtype=np.int64)
                )
            ids.append(tuple(per_level))
            labels.append(tuple(index))
        return cls(tuple(ids), tuple(labels))

    def size(self, qi: int) -> int:
        """Number of distinct label texts of QI ``qi``."""
        return len(self.labels[qi])


@dataclass(frozen=True, eq=False)
class MixedRelease:
    """Per frequency-table row: the level of every QI and whether its records are released.

    Attributes
    ----------
    table: the frequency table (every row of one raw QI tuple must share levels and fate).
    row_levels: ``(M, q)`` level of each QI per row (ignored where not released).
    released: ``(M,)`` whether the row's records are written.
    """

    table: FrequencyTable
    row_levels: npt.NDArray[np.int16]
    released: BoolArray
    #: the table's label space, when the caller has it (built on first use otherwise)
    known_space: LabelSpace | None = None

    @classmethod
    def at_node(
        cls,
        table: FrequencyTable,
        node: tuple[int, ...],
        released: BoolArray,
        space: LabelSpace | None = None,
    ) -> MixedRelease:
        """The full-domain release of ``node`` (every row at the same levels) in this form."""
        levels = np.broadcast_to(np.asarray(node, dtype=np.int16), (table.n_rows, len(node))).copy()
        return cls(table, levels, np.asarray(released, dtype=bool).copy(), space)

    @cached_property
    def space(self) -> LabelSpace:
        return self.known_space if self.known_space is not None else LabelSpace.of(self.table.hierarchies)

    @property
    def records_out(self) -> int:
        return int(self.table.counts[self.released].sum())

    @property
    def suppressed_records(self) -> int:
        return self.table.n_records - self.records_out

    def label_ids(self) -> IntArray:
        """``(M, q)`` id (in :attr:`space`) of the released label of every row; -1 where not released."""
        table = self.table
        out = np.full((table.n_rows, len(table.qi_names)), -1, dtype=np.int64)
        rows = np.flatnonzero(self.released)
        for i in range(len(table.qi_names)):
            levels = self.row_levels[rows, i]
            for level in np.unique(levels).tolist():
                at = rows[levels == level]
                out[at, i] = self.space.ids[i][level][table.level_codes(i, level)[at]]
        return out

    @cached_property
    def classes(self) -> tuple[IntArray, IntArray]:
        """``(row_class, sizes)``: the class of every released row (-1 otherwise), classes
        numbered ``0 .. C - 1`` in the order of their label-id tuples, and their record counts."""
        table = self.table
        rows = np.flatnonzero(self.released)
        ids = self.label_ids()[rows]
        key = np.zeros(rows.shape[0], dtype=np.int64)
        space = 1
        for i in range(ids.shape[1]):
            s = max(1, self.space.size(i))
            if space * s >= _PACKED_LIMIT:
                _, inverse = np.unique(key, return_inverse=True)
                key, space = inverse.astype(np.int64).ravel(), int(inverse.max()) + 1 if inverse.size else 1
            key = key * s + ids[:, i]
            space *= s
        uniq, inverse = np.unique(key, return_inverse=True)
        row_class = np.full(table.n_rows, -1, dtype=np.int64)
        row_class[rows] = inverse.ravel()
        sizes = np.bincount(inverse.ravel(), weights=table.counts[rows], minlength=uniq.shape[0])
        return row_class, np.rint(sizes).astype(np.int64)

    def as_classes(self) -> Classes:
        """The released classes as :class:`Classes` over the whole table, for per-class models.

        Slot ``C`` (the last) holds every row that is not released, so that the models see
        the whole table; callers read the verdicts of slots ``0 .. C - 1`` only. The node is
        a placeholder of ``-1`` levels: models that need one node's classes (m-concealing,
        small cells) are not evaluated through this object.
        """
        row_class, sizes = self.classes
        n = sizes.shape[0]
        slot = np.where(row_class < 0, n, row_class)
        all_sizes = np.append(sizes.astype(np.float64), float(self.suppressed_records))
        node = (-1,) * len(self.table.qi_names)
        return Classes(node, all_sizes, self.table.n_records, slot.astype(np.int64))

    def labels(self) -> list[list[str]]:
        """Per QI, the released text of every row (``""`` where not released)."""
        ids = self.label_ids()
        out = []
        for i in range(ids.shape[1]):
            texts = np.asarray(self.space.labels[i], dtype=object)
            column = np.full(ids.shape[0], "", dtype=object)
            present = ids[:, i] >= 0
            column[present] = texts[ids[present, i]]
            out.append(column.tolist())
        return out


def raw_tuple_rows(table: FrequencyTable) -> IntArray:
    """Dense id of the raw QI tuple of every frequency-table row (rows differing only in a
    sensitive column share it)."""
    if table.codes.shape[1] == 0:
        return np.zeros(table.n_rows, dtype=np.int64)
    _, inverse = np.unique(table.codes, axis=0, return_inverse=True)
    return inverse.astype(np.int64).ravel()


__all__ = ["LabelSpace", "MixedRelease", "raw_tuple_rows"]
