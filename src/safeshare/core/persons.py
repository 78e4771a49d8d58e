"""People in the frequency table: the (QI tuple, person) grain (issue 32).

Health extracts hold several records per person (tests, visits, prescriptions). A class of 5
records can hold 3 people, whose prosecutor risk is then 1/3, not 1/5. Counting people needs
more than the frequency table's record counts: the distinct people of a class are **not** the
sum over its rows (a person with records in two rows of one class counts once), so no count per
row rolls up under generalization. What does roll up exactly is the set of (row, person) pairs.

**Representation.** :class:`PersonGrain` holds one entry per distinct (frequency-table row,
person, tag) of the input, with its record count, sorted by person: ``row``, ``person`` (dense
ids ``0 .. n_people - 1``), ``records`` and ``tag`` (the record's dates relative to its
person's first date, for kept shifted dates of a linkable release; 0 otherwise). Its size ``P``
is at most the number of records and at least the number of people.

**People per class** at a node with class slot ``c(r)`` per row ``r``:

    ``people(E) = |{p : some pair (r, p) has c(r) = E}|``.

Exact and one pass: the pairs are sorted by person, so a class is counted once per person by
remembering, per class, the last person counted in it (:func:`people_per_slot`). Persons with a
single pair (one record, or all their records on one row) need no such memory: they are a
weighted ``bincount`` over the ``M`` rows, like the record counts; only the pairs of persons
spread over several rows are walked. A merged class holds the union of its parts' people, so
``people(E_1 ∪ E_2) >= max(people(E_1), people(E_2))``: k-anonymity in people is monotone
under generalization, with or without suppression, as in records.

**Profiles** (:meth:`PersonGrain.profiles`): a person's profile at a node is the multiset of
(class, tag) over their records, with multiplicities; people with equal profiles are
indistinguishable to an adversary who sees each person's records linked together (a pseudonym
or a kept person key; :mod:`safeshare.risk.profiles`). Profiles are compared exactly, without
hashing: each person's sorted sequence of elements is numbered position by position (the id of
a prefix of length ``j + 1`` is the dense rank of (id of its prefix of length ``j``, element
``j``)), and the profile is the pair (length, id of the whole sequence). Cost ``O(P log P)``.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

#: Walk the pairs of persons spread over several rows with the compiled loop from this many pairs.
COMPILED_FROM_PAIRS = 1 << 15


def dense_rank(key: npt.NDArray[Any]) -> tuple[IntArray, int]:
    """Dense ids ``0 .. d - 1`` of ``key`` (int64 values), in the order of the values."""
    if key.shape[0] == 0:
        return np.zeros(0, dtype=np.int64), 0
    uniq, inverse = np.unique(key, return_inverse=True)
    return inverse.astype(np.int64).ravel(), int(uniq.shape[0])


def dense_rank_pairs(a: IntArray, b: IntArray) -> tuple[IntArray, int]:
    """Dense ids of the pairs ``(a_i, b_i)`` of non-negative integers, in lexicographic order."""
    if a.shape[0] == 0:
        return np.zeros(0, dtype=np.int64), 0
    span = int(b.max()) + 1
    if int(a.max()) < (2**62) // max(span, 1):
        return dense_rank(a * span + b)
    order = np.lexsort((b, a))
    sa, sb = a[order], b[order]
    new = np.empty(order.shape[0], dtype=bool)
    new[0] = True
    new[1:] = (sa[1:] != sa[:-1]) | (sb[1:] != sb[:-1])
    ids = np.cumsum(new) - 1
    out = np.empty(order.shape[0], dtype=np.int64)
    out[order] = ids
    return out, int(ids[-1]) + 1


@dataclass(frozen=True)
class Profiles:
    """The profiles of the people of a node (see the module docstring).

    ``person``: the people who have a profile (at least one counted record), ascending;
    ``profile``: the dense id of each one's profile; ``sizes``: people per profile id.
    """

    person: IntArray
    profile: IntArray
    sizes: IntArray

    @property
    def n_people(self) -> int:
        return int(self.person.shape[0])

    def shared_by(self) -> IntArray:
        """For every person of :attr:`person`, how many people have the same profile."""
        return self.sizes[self.profile]

    def people_below(self, k: int) -> int:
        """People whose profile fewer than ``k`` people share (themselves included)."""
        return int((self.sizes * (self.sizes < k)).sum())

    @property
    def smallest(self) -> int:
        """The fewest people sharing a profile (0 without people)."""
        return int(self.sizes.min()) if self.sizes.size else 0


@dataclass(frozen=True, eq=False)
class PersonGrain:
    """The (row, person, tag) pairs of a frequency table, sorted by person (module docstring).

    Attributes
    ----------
    column: the person key's column.
    row: ``(P,)`` frequency-table row of every pair.
    person: ``(P,)`` dense person id (non-decreasing).
    records: ``(P,)`` records of every pair.
    n_people: number of distinct people.
    tag: ``(P,)`` dense id of the record's dates relative to its person's first date (0 when
        the profile has no dates); ``n_tags`` of them.
    tag_columns: the kept shifted dates whose intervals are in the tags (none: no dates).
    """

    column: str
    row: IntArray
    person: IntArray
    records: IntArray
    n_people: int
    n_rows: int
    tag: IntArray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    n_tags: int = 1
    tag_columns: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.tag.shape[0] != self.row.shape[0]:
            object.__setattr__(self, "tag", np.zeros(self.row.shape[0], dtype=np.int64))
            object.__setattr__(self, "n_tags", 1)
        for array in (self.row, self.person, self.records, self.tag):
            array.flags.writeable = False

    @property
    def n_pairs(self) -> int:
        return int(self.row.shape[0])

    @cached_property
    def _spread(self) -> tuple[FloatArray, IntArray, IntArray]:
        """``(people per row among persons on one row only, rows and persons of the pairs of the
        persons spread over several rows)``: the split of :func:`people_per_slot`."""
        person, row = self.person, self.row
        n = person.shape[0]
        if n == 0:
            return np.zeros(self.n_rows), row, person
        first = np.empty(n, dtype=bool)
        first[0] = True
        np.not_equal(person[1:], person[:-1], out=first[1:])
        starts = np.flatnonzero(first)
        ends = np.r_[starts[1:], n]
        # a person is on one row when every pair of theirs has the row of their first pair
        same = row == np.repeat(row[starts], ends - starts)
        one_row = np.logical_and.reduceat(same, starts)
        on_one = np.repeat(one_row, ends - starts)
        single_rows = row[first & on_one]
        weights = np.bincount(single_rows, minlength=self.n_rows).astype(np.float64)
        spread = ~on_one
        return weights, row[spread], person[spread]

    def people_per_slot(self, row_class: npt.NDArray[Any], n_slots: int) -> FloatArray:
        """Distinct people per class slot (float64 of exact integers, like :attr:`Classes.sizes`),
        for the class slot ``row_class[r]`` of every frequency-table row ``r``."""
        weights, rows, persons = self._spread
        out = np.bincount(row_class, weights=weights, minlength=n_slots)[:n_slots].astype(np.float64)
        if rows.shape[0]:
            cls = np.asarray(row_class)[rows].astype(np.int64)
            if rows.shape[0] >= COMPILED_FROM_PAIRS:
                from safeshare.core._persons_jit import count_first_per_class

                extra = np.zeros(n_slots, dtype=np.int64)
                count_first_per_class(cls, persons, extra)
            else:
                key = persons * np.int64(n_slots) + cls
                uniq = np.unique(key)
                extra = np.bincount(uniq % n_slots, minlength=n_slots)
            out += extra
        return out

    def people_in_rows(self, rows: BoolArray) -> int:
        """People with at least one record in the frequency-table rows of ``rows`` (a mask)."""
        hit = rows[self.row]
        if not hit.any():
            return 0
        return int(np.unique(self.person[hit]).shape[0])

    def people_all_in_rows(self, rows: BoolArray) -> int:
        """People whose every record lies in the rows of ``rows`` (a mask)."""
        hit = rows[self.row]
        if self.person.shape[0] == 0:
            return 0
        miss = np.bincount(self.person, weights=~hit, minlength=self.n_people)
        return int((miss == 0).sum())

    def records_per_person(self) -> IntArray:
        """Records of every person (``(n_people,)``)."""
        return np.bincount(self.person, weights=self.records, minlength=self.n_people).astype(np.int64)

    def profiles(self, row_class: npt.NDArray[Any], counted: BoolArray | None = None) -> Profiles:
        """Every person's profile at the node of ``row_class`` (class slot per row): the multiset
        of (class, tag) of their records with multiplicities, compared exactly (module
        docstring). ``counted``: per class slot, whether its records count (the released
        classes); ``None``: every record (the profile before suppression)."""
        cls = np.asarray(row_class)[self.row].astype(np.int64)
        person, records, tag = self.person, self.records, self.tag
        if counted is not None:
            keep = counted[cls]
            cls, person, records, tag = cls[keep], person[keep], records[keep], tag[keep]
        if person.shape[0] == 0:
            empty = np.zeros(0, dtype=np.int64)
            return Profiles(empty, empty, empty)
        element = cls * np.int64(self.n_tags) + tag
        order = np.lexsort((element, person))
        p, e, w = person[order], element[order], records[order]
        new = np.empty(p.shape[0], dtype=bool)
        new[0] = True
        new[1:] = (p[1:] != p[:-1]) | (e[1:] != e[:-1])
        at = np.flatnonzero(new)
        p, e, w = p[at], e[at], np.add.reduceat(w, at)
        eid, _ = dense_rank_pairs(e, w)
        first = np.empty(p.shape[0], dtype=bool)
        first[0] = True
        np.not_equal(p[1:], p[:-1], out=first[1:])
        starts = np.flatnonzero(first)
        lengths = np.diff(np.r_[starts, p.shape[0]])
        people = p[starts]
        pos = np.arange(p.shape[0]) - np.repeat(starts, lengths)
        local = np.repeat(np.arange(starts.shape[0]), lengths)  # index into ``people``
        by_pos = np.argsort(pos, kind="stable")
        pos_sorted = pos[by_pos]
        bounds = np.flatnonzero(np.r_[True, pos_sorted[1:] != pos_sorted[:-1], True])
        cur = np.zeros(starts.shape[0], dtype=np.int64)
        for lo, hi in itertools.pairwise(bounds.tolist()):
            idx = by_pos[lo:hi]
            who = local[idx]
            ids, _ = dense_rank_pairs(cur[who], eid[idx])
            cur[who] = ids
        profile, n_profiles = dense_rank_pairs(lengths.astype(np.int64), cur)
        sizes = np.bincount(profile, minlength=n_profiles).astype(np.int64)
        return Profiles(people.astype(np.int64), profile, sizes)


def person_codes(values: pd.Series) -> tuple[IntArray, int]:
    """Dense person ids of ``values`` (text), and their number."""
    codes, uniques = pd.factorize(values.astype(str), sort=False)
    return codes.astype(np.int64), len(uniques)


def interval_tags(persons: IntArray, dates: pd.DataFrame, formats: dict[str, str]) -> tuple[IntArray, int]:
    """The tag of every entry: its dates (one column per kept shifted date) as days after its
    person's first date over all these columns, as a dense id (a missing date stays missing).
    The days are what a shared shift keeps: the intervals between a person's dates."""
    if dates.shape[1] == 0 or dates.shape[0] == 0:
        return np.zeros(dates.shape[0], dtype=np.int64), 1
    days = []
    for column in dates.columns:
        parsed = pd.to_datetime(dates[column].astype(str), format=formats[column], errors="coerce")
        values = parsed.to_numpy(dtype="datetime64[D]").astype("int64").astype(np.float64)
        values[parsed.isna().to_numpy()] = np.nan
        days.append(values)
    matrix = np.column_stack(days)
    n_people = int(persons.max()) + 1 if persons.shape[0] else 0
    first = np.full(n_people, np.inf)
    row_min = np.nanmin(np.where(np.isnan(matrix), np.inf, matrix), axis=1)
    np.minimum.at(first, persons, row_min)
    anchor = first[persons]
    anchor[~np.isfinite(anchor)] = 0.0
    offsets = matrix - anchor[:, None]
    frame = pd.DataFrame(offsets).fillna(-(2.0**60))
    tag: IntArray = np.asarray(frame.groupby(list(frame.columns), sort=True).ngroup(), dtype=np.int64)
    return tag, int(tag.max()) + 1 if tag.size else 1


__all__ = ["PersonGrain", "Profiles", "dense_rank", "dense_rank_pairs", "interval_tags", "person_codes"]
