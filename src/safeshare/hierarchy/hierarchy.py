"""Generalization hierarchies (thesis §4.1.4, §4.3; appendix B).

A hierarchy for one quasi-identifier is a table with one row per original
value and one column per generalization level::

    value ; level 1 ; level 2 ; ... ; top

Column 0 holds the original values (the leaves), column ``h`` the most general
labels. A consistent hierarchy is a forest: every label at level ``j`` has
exactly one parent at level ``j + 1``. Level ``j`` of a value is what full-domain
generalization at level ``j`` writes in the release.

Internally each level is dictionary-encoded: the labels at level ``j`` are
numbered ``0 .. size(j) - 1`` in order of first appearance, and
:meth:`Hierarchy.leaf_codes` maps a leaf index to its code at any level. Leaves
are reordered so that the leaves under any label are contiguous, which keeps
codes monotone across levels.

Labels are published, so a label above the original values may not hold a control
character (:data:`CONTROL_CHARACTERS`: U+0000-U+001F, U+007F-U+009F, e.g. NUL, a line
break, ESC), whatever made the hierarchy: a file, a builder's parameters (``top: "\\0"``)
or a builder's labels derived from the data (a masked value). The original values
themselves are the data's; :mod:`safeshare.hierarchy.io` refuses them in files too.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Protocol

import numpy as np
import numpy.typing as npt

from safeshare.errors import HierarchyError

IntArray = npt.NDArray[np.int32]

#: Characters no published label may hold (C0 and C1 controls, DEL).
CONTROL_CHARACTERS = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def control_character(text: str) -> str | None:
    """``"U+0000"`` for the first control character of ``text``, or None."""
    found = CONTROL_CHARACTERS.search(text)
    return None if found is None else f"U+{ord(found.group()):04X}"


@dataclass(frozen=True)
class HierarchyWarning:
    """What a builder noticed in the data and must say (issue 30: implausible values are not
    absorbed silently).

    ``message`` names no value of the data: it is shown in the run's warnings, hence in
    published reports; ``values`` are the data's values concerned, shown only where the
    custodian works (``safeshare hierarchy build``'s output).
    """

    code: str
    column: str
    message: str
    values: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, object]:
        return {"code": self.code, "column": self.column, "message": self.message}


class Hierarchy:
    """A validated generalization hierarchy for one attribute.

    Parameters
    ----------
    rows:
        One sequence per original value: ``[value, level1, ..., top]``. Every
        row must have the same length (at least 1: a hierarchy with only the
        original values allows no generalization).
    name:
        Where the hierarchy came from (file name or attribute), used in errors.
    warnings:
        What its builder noticed in the data (:class:`HierarchyWarning`), kept for the run.

    Raises
    ------
    HierarchyError
        When rows have unequal depth, a value appears twice, a label has
        two different parents at one level, or a label above the values holds
        a control character. The message names the offending value and level.
    """

    def __init__(
        self,
        rows: Iterable[Sequence[str]],
        name: str = "hierarchy",
        warnings: Sequence[HierarchyWarning] = (),
    ) -> None:
        self.name = name
        self.warnings: tuple[HierarchyWarning, ...] = tuple(warnings)
        table = [tuple(str(v) for v in row) for row in rows]
        if not table:
            raise HierarchyError(f"{name}: hierarchy is empty")
        depth = len(table[0])
        if depth < 1:
            raise HierarchyError(f"{name}: hierarchy rows must not be empty")
        for i, row in enumerate(table):
            if len(row) != depth:
                raise HierarchyError(
                    f"{name}: row {i + 1} (value {row[0]!r}) has {len(row)} levels, "
                    f"expected {depth} like the first row"
                )
        seen: dict[str, int] = {}
        for i, row in enumerate(table):
            if row[0] in seen:
                raise HierarchyError(
                    f"{name}: value {row[0]!r} appears twice (rows {seen[row[0]] + 1} and {i + 1})"
                )
            seen[row[0]] = i
        for level in range(depth - 1):
            parent: dict[str, str] = {}
            for row in table:
                label, up = row[level], row[level + 1]
                known = parent.setdefault(label, up)
                if known != up:
                    raise HierarchyError(
                        f"{name}: label {label!r} at level {level} has two parents at level "
                        f"{level + 1}: {known!r} and {up!r}"
                    )
        _check_labels(table, name)
        # Order leaves by their path from the top so that every subtree is a
        # contiguous block of leaves (stable: keeps file order within a block).
        first_seen: list[dict[str, int]] = [{} for _ in range(depth)]
        for row in table:
            for level, label in enumerate(row):
                first_seen[level].setdefault(label, len(first_seen[level]))
        order = sorted(
            range(len(table)),
            key=lambda i: tuple(first_seen[lv][table[i][lv]] for lv in range(depth - 1, -1, -1)),
        )
        self._rows: tuple[tuple[str, ...], ...] = tuple(table[i] for i in order)
        self._depth = depth

    # ------------------------------------------------------------------ shape
    @property
    def height(self) -> int:
        """Number of generalization steps above the original values."""
        return self._depth - 1

    @property
    def rows(self) -> tuple[tuple[str, ...], ...]:
        """The rows ``(value, level1, ..., top)``, leaves in subtree order."""
        return self._rows

    @cached_property
    def leaves(self) -> tuple[str, ...]:
        """The original values the hierarchy covers."""
        return tuple(row[0] for row in self._rows)

    @cached_property
    def _levels(self) -> tuple[tuple[tuple[str, ...], IntArray], ...]:
        out = []
        for level in range(self._depth):
            index: dict[str, int] = {}
            codes = np.empty(len(self._rows), dtype=np.int32)
            for i, row in enumerate(self._rows):
                codes[i] = index.setdefault(row[level], len(index))
            out.append((tuple(index), codes))
        return tuple(out)

    def labels(self, level: int) -> tuple[str, ...]:
        """Distinct labels at ``level``, indexed by their code."""
        return self._levels[self._check_level(level)][0]

    def size(self, level: int) -> int:
        """Number of distinct labels at ``level``."""
        return len(self.labels(level))

    def leaf_codes(self, level: int) -> IntArray:
        """Array mapping leaf index (position in :attr:`leaves`) to its code at ``level``."""
        return self._levels[self._check_level(level)][1]

    @cached_property
    def leaf_index(self) -> dict[str, int]:
        """Map from original value to its leaf index."""
        return {v: i for i, v in enumerate(self.leaves)}

    def mapping(self, level: int) -> dict[str, str]:
        """Map original value -> label at ``level``."""
        level = self._check_level(level)
        return {row[0]: row[level] for row in self._rows}

    def generalize(self, value: str, level: int) -> str:
        """The label of ``value`` at ``level``."""
        try:
            return self._rows[self.leaf_index[value]][self._check_level(level)]
        except KeyError:
            raise HierarchyError(f"{self.name}: value {value!r} is not in the hierarchy") from None

    def missing_values(self, values: Iterable[str]) -> list[str]:
        """The values from ``values`` that the hierarchy does not cover (sorted)."""
        index = self.leaf_index
        return sorted({v for v in values if v not in index})

    def restricted_to(self, values: Iterable[str]) -> Hierarchy:
        """The sub-hierarchy of the rows whose original value is in ``values``."""
        keep = set(values)
        missing = self.missing_values(keep)
        if missing:
            raise HierarchyError(f"{self.name}: value {missing[0]!r} is not in the hierarchy")
        return Hierarchy([r for r in self._rows if r[0] in keep], name=self.name, warnings=self.warnings)

    def _check_level(self, level: int) -> int:
        if not 0 <= level < self._depth:
            raise HierarchyError(f"{self.name}: level {level} outside 0..{self.height}")
        return level

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Hierarchy):
            return NotImplemented
        return sorted(self._rows) == sorted(other._rows)

    def __hash__(self) -> int:
        return hash(tuple(sorted(self._rows)))

    def __repr__(self) -> str:
        return f"Hierarchy({self.name!r}, values={len(self._rows)}, height={self.height})"


def _check_labels(table: Sequence[tuple[str, ...]], name: str) -> None:
    """Refuse a control character in a label above the values (one scan of the distinct labels)."""
    labels = {label for row in table for label in row[1:]}
    if control_character("".join(labels)) is None:
        return
    for row in table:
        for level, label in enumerate(row[1:], start=1):
            code = control_character(label)
            if code is not None:
                raise HierarchyError(
                    f"{name}: the level-{level} label {label!r} of value {row[0]!r} holds the control "
                    f"character {code}; labels are published, so they may not hold one"
                )


class HierarchyBuilder(Protocol):
    """Anything that builds a hierarchy from the distinct values of a column."""

    def build(self, values: Sequence[str], name: str = "") -> Hierarchy: ...
