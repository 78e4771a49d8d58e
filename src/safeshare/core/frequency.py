"""The frequency table: distinct quasi-identifier tuples with their counts.

Built once by an engine (a ``GROUP BY`` over the QIs, plus the sensitive
columns when a privacy model needs their distribution inside classes), then
every lattice node is evaluated on it instead of on the raw records. Its size
``M`` is the number of distinct combinations (21,551 for the 9 QIs of UCI
Adult), independent of the number of records.

With a person key (issue 32) the engine groups by the person too, and the table keeps that
finer grain beside its rows: :attr:`FrequencyTable.persons`, the (row, person) pairs with their
record counts (:mod:`safeshare.core.persons`), from which the people of every class are counted
exactly. Without one, nothing changes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property

import numpy as np
import numpy.typing as npt
import pandas as pd

from safeshare.core.lattice import Lattice, Node
from safeshare.core.persons import PersonGrain, interval_tags, person_codes
from safeshare.data.engines.base import COUNT_COLUMN
from safeshare.errors import DataError, HierarchyError
from safeshare.hierarchy.hierarchy import Hierarchy

IntArray = npt.NDArray[np.int32]


@dataclass(frozen=True, eq=False)
class FrequencyTable:
    """Distinct value tuples of the QIs (and optional sensitive columns) with counts.

    Attributes
    ----------
    qi_names: the quasi-identifiers, in lattice order.
    hierarchies: one per QI.
    codes: ``(M, q)`` leaf index of each QI value in its hierarchy.
    counts: ``(M,)`` number of records with that tuple.
    sensitive_names: sensitive columns kept in the table's grain.
    sensitive_codes: ``(M, s)`` index of each sensitive value in ``sensitive_labels``.
    sensitive_labels: the distinct values of each sensitive column, sorted.
    persons: the (row, person) grain when the run has a person key (``None``: one record per
        person).
    """

    qi_names: tuple[str, ...]
    hierarchies: tuple[Hierarchy, ...]
    codes: IntArray
    counts: npt.NDArray[np.int64]
    sensitive_names: tuple[str, ...] = ()
    sensitive_codes: IntArray = field(default_factory=lambda: np.zeros((0, 0), np.int32))
    sensitive_labels: tuple[tuple[str, ...], ...] = ()
    persons: PersonGrain | None = None

    @classmethod
    def from_grouped(
        cls,
        grouped: pd.DataFrame,
        qi_names: Sequence[str],
        hierarchies: Sequence[Hierarchy],
        sensitive_names: Sequence[str] = (),
    ) -> FrequencyTable:
        """Encode an engine's ``grouped_counts`` result.

        Raises :class:`HierarchyError` naming the column and the first value
        that its hierarchy does not cover, and :class:`DataError` for empty data.
        """
        if len(grouped) == 0 or int(grouped[COUNT_COLUMN].sum()) == 0:
            raise DataError("the input has no records")
        codes = np.empty((len(grouped), len(qi_names)), dtype=np.int32)
        for j, (name, hierarchy) in enumerate(zip(qi_names, hierarchies, strict=True)):
            values = grouped[name].astype(str)
            col = pd.Index(list(hierarchy.leaves)).get_indexer(pd.Index(values))
            if (col < 0).any():
                bad = values[col < 0]
                n_bad = int(grouped[COUNT_COLUMN][col < 0].sum())
                raise HierarchyError(
                    f"value {bad.iloc[0]!r} of column {name!r} is missing from hierarchy "
                    f"{hierarchy.name} ({bad.nunique()} such value(s), {n_bad} record(s))"
                )
            codes[:, j] = col
        s_codes = np.empty((len(grouped), len(sensitive_names)), dtype=np.int32)
        labels = []
        for j, name in enumerate(sensitive_names):
            values = grouped[name].astype(str)
            uniq = tuple(sorted(values.unique()))
            s_codes[:, j] = pd.Index(list(uniq)).get_indexer(pd.Index(values))
            labels.append(uniq)
        counts = grouped[COUNT_COLUMN].to_numpy(dtype=np.int64)
        return cls(
            qi_names=tuple(qi_names),
            hierarchies=tuple(hierarchies),
            codes=codes,
            counts=counts,
            sensitive_names=tuple(sensitive_names),
            sensitive_codes=s_codes,
            sensitive_labels=tuple(labels),
        )

    @classmethod
    def from_person_grain(
        cls,
        grouped: pd.DataFrame,
        qi_names: Sequence[str],
        hierarchies: Sequence[Hierarchy],
        sensitive_names: Sequence[str],
        person: str,
        tag_columns: Sequence[str] = (),
        date_formats: dict[str, str] | None = None,
    ) -> FrequencyTable:
        """Encode a ``grouped_counts`` result whose grain holds the person key (and the kept
        shifted dates ``tag_columns`` whose intervals enter the profiles): the table's rows are
        its distinct (QI, sensitive) tuples, and :attr:`persons` the (row, person, tag) pairs."""
        if len(grouped) == 0 or int(grouped[COUNT_COLUMN].sum()) == 0:
            raise DataError("the input has no records")
        keys = [*qi_names, *sensitive_names]
        row_of: npt.NDArray[np.int64] = np.asarray(
            grouped.groupby(keys, sort=True, dropna=False).ngroup(), dtype=np.int64
        )
        n_rows = int(row_of.max()) + 1
        first = np.full(n_rows, -1, dtype=np.int64)
        order = np.arange(len(grouped), dtype=np.int64)
        first[row_of[::-1]] = order[::-1]
        rows = grouped.iloc[first][keys].reset_index(drop=True)
        counts = np.bincount(row_of, weights=grouped[COUNT_COLUMN].to_numpy(np.float64), minlength=n_rows)
        rows[COUNT_COLUMN] = counts.astype(np.int64)
        base = cls.from_grouped(rows, qi_names, hierarchies, sensitive_names)
        persons, n_people = person_codes(grouped[person])
        tags, n_tags = interval_tags(persons, grouped[list(tag_columns)], dict(date_formats or {}))
        by_person = np.lexsort((tags, row_of, persons))
        grain = PersonGrain(
            column=person,
            row=row_of[by_person],
            person=persons[by_person],
            records=grouped[COUNT_COLUMN].to_numpy(dtype=np.int64)[by_person],
            n_people=n_people,
            n_rows=n_rows,
            tag=tags[by_person],
            n_tags=n_tags,
            tag_columns=tuple(tag_columns),
        )
        return replace(base, persons=grain)

    @property
    def n_people(self) -> int:
        """People of the table: distinct person keys, or ``N`` (one record per person)."""
        return self.persons.n_people if self.persons is not None else self.n_records

    @property
    def n_rows(self) -> int:
        """``M``: number of distinct tuples."""
        return int(self.counts.shape[0])

    @cached_property
    def n_records(self) -> int:
        """``N``: number of records."""
        return int(self.counts.sum())

    @cached_property
    def lattice(self) -> Lattice:
        return Lattice([h.height for h in self.hierarchies], self.qi_names)

    def level_codes(self, qi: int, level: int) -> IntArray:
        """``(M,)`` code of each row's QI ``qi`` value at ``level`` (hierarchy code space)."""
        return self.hierarchies[qi].leaf_codes(level)[self.codes[:, qi]]

    @cached_property
    def present_level_codes(self) -> tuple[tuple[tuple[npt.NDArray[np.intp], int], ...], ...]:
        """Per QI and level: ``(codes, s)``, each row's label renumbered ``0 .. s - 1`` over the
        ``s`` labels present in the data (order kept), as read-only platform integers (what
        numpy indexes and counts with). Computed once per table and shared by every evaluator
        built on it."""
        out = []
        for i, h in enumerate(self.hierarchies):
            per_level = []
            for level in range(h.height + 1):
                raw = self.level_codes(i, level)
                present = np.zeros(h.size(level), dtype=bool)
                present[raw] = True
                remap = np.cumsum(present, dtype=np.intp) - 1
                codes = remap[raw]
                codes.flags.writeable = False
                per_level.append((codes, int(present.sum())))
            out.append(tuple(per_level))
        return tuple(out)

    def marginal(self, qi: int, level: int) -> npt.NDArray[np.int64]:
        """Record count of each label of QI ``qi`` at ``level`` (indexed by hierarchy code).

        Read-only and computed once per table: every search's guide (the non-uniform
        entropy of each level) asks for all of them, and on a small table that was a fifth
        of a cheap search's time.
        """
        key = (qi, level)
        hit = self._marginals.get(key)
        if hit is None:
            hit = np.bincount(
                self.level_codes(qi, level), weights=self.counts, minlength=self.hierarchies[qi].size(level)
            ).astype(np.int64)
            hit.flags.writeable = False
            self._marginals[key] = hit
        return hit

    @cached_property
    def _marginals(self) -> dict[tuple[int, int], npt.NDArray[np.int64]]:
        return {}

    def labels_at(self, node: Node) -> pd.DataFrame:
        """The generalized QI labels of every row at ``node`` (one column per QI)."""
        data = {}
        for j, (name, h) in enumerate(zip(self.qi_names, self.hierarchies, strict=True)):
            labels = np.asarray(h.labels(node[j]), dtype=object)
            data[name] = labels[self.level_codes(j, node[j])]
        return pd.DataFrame(data)

    def sensitive_index(self, name: str) -> int:
        try:
            return self.sensitive_names.index(name)
        except ValueError:
            raise DataError(f"sensitive column {name!r} is not in the frequency table") from None
