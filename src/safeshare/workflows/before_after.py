"""Utility before and after: what the release keeps of each category of every column (issue 33).

A release can meet its privacy model and its suppression limit while a whole subgroup vanishes
(t-closeness suppressed all 89 women of a 2,843-case AIDS data set; the only note said "sex
carries no information"). For every quasi-identifier (by its input values, level 0) and every
column released as it is (sensitive and insensitive) this module counts, per category ``v``,

    before(v) = records of the input with value v,    after(v) = released records with value v,
    lost(v)   = 1 - after(v) / before(v),

and warns (``subgroup-suppressed``) when ``lost(v) > loss_share`` (default 0.5) for a category
of at least :data:`SMALL_CELL` input records. Categories below that size are pooled into one row
(their count, records before and after) and never named: a per-category count below 11 is what
the small-cell rules of the field (CMS, the CDC's surveillance rules) keep out of a published
table, and the report may travel with the release. Columns with more than
:data:`MAX_CATEGORIES` distinct values are not tabulated (said per column).

The quasi-identifiers' figures come from the search's frequency table (its rows' released mask);
the kept columns' *before* from the engine (one grouping of the input) and *after* from the
written release, re-read with DuckDB as a recipient would: in a publication by the verifier's
one scan, whose distinct rows the disclosure check sums
(:attr:`safeshare.verify.disclosure.Disclosure.counts`), else here. Counts are of records (a
person key's people are not counted here: the suppression limit counts records too). A locally
recoded release reports its kept columns only: its quasi-identifiers mix levels per record.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from safeshare.data.schema import Role
from safeshare.figures import percent
from safeshare.report.content import ReportWarning
from safeshare.warning_codes import WarningCode

if TYPE_CHECKING:
    from safeshare.data.engines.base import Engine
    from safeshare.workflows.anonymizer import AnonymizationResult

#: Categories with fewer input records are pooled, never named, never warned about.
SMALL_CELL = 11
#: Default share of a category's records whose suppression is warned about.
SUBGROUP_LOSS = 0.5
#: A column with more distinct values is not tabulated by category.
MAX_CATEGORIES = 100


@dataclass(frozen=True)
class Category:
    """One category of a column: records before, released after, the share lost."""

    value: str
    before: int
    after: int

    @property
    def lost(self) -> float:
        return 1.0 - self.after / self.before if self.before else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"value": self.value, "before": self.before, "after": self.after, "lost": self.lost}


@dataclass(frozen=True)
class ColumnBeforeAfter:
    """A column's categories (at least :data:`SMALL_CELL` records each, most records first), the
    pooled small ones, or why it is not tabulated."""

    column: str
    role: str
    categories: tuple[Category, ...] = ()
    small: Category | None = None
    small_categories: int = 0
    skipped: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "column": self.column,
            "role": self.role,
            "categories": [c.to_dict() for c in self.categories],
            "small": (
                {**self.small.to_dict(), "categories": self.small_categories}
                if self.small is not None
                else None
            ),
            "skipped": self.skipped,
        }


@dataclass(frozen=True)
class BeforeAfter:
    """Every column's before / after (module docstring) and the rule of its warning."""

    columns: tuple[ColumnBeforeAfter, ...]
    loss_share: float = SUBGROUP_LOSS
    small_cell: int = SMALL_CELL
    notes: tuple[str, ...] = field(default_factory=tuple)

    def flagged(self) -> list[tuple[ColumnBeforeAfter, Category]]:
        """The categories of at least :data:`SMALL_CELL` records losing more than ``loss_share``."""
        return [(col, c) for col in self.columns for c in col.categories if c.lost > self.loss_share]

    def warnings(self) -> list[ReportWarning]:
        """One ``subgroup-suppressed`` warning per column with flagged categories."""
        out: list[ReportWarning] = []
        by_column: dict[str, list[Category]] = {}
        for col, cat in self.flagged():
            by_column.setdefault(col.column, []).append(cat)
        for column, cats in by_column.items():
            worst = max(c.lost for c in cats)
            listed = "; ".join(
                f"{c.value!r}: {c.before:,} records in the input, {c.after:,} released "
                f"({percent(c.lost)} suppressed)"
                for c in cats[:5]
            )
            more = f" and {len(cats) - 5} more" if len(cats) > 5 else ""
            lose = "categories lose" if len(cats) != 1 else "category loses"
            out.append(
                ReportWarning(
                    WarningCode.SUBGROUP_SUPPRESSED,
                    f"column {column!r}: {len(cats)} {lose} more than {percent(self.loss_share)} of "
                    f"their records ({listed}{more}): an analysis of that subgroup on the release is "
                    "biased or impossible; relax the model that suppresses them, "
                    "generalize that column further, or say so to the recipient",
                    (column,),
                    worst,
                )
            )
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "unit": "records",
            "loss_share": self.loss_share,
            "small_cell": self.small_cell,
            "columns": [c.to_dict() for c in self.columns],
            "flagged": [{"column": col.column, **c.to_dict()} for col, c in self.flagged()],
            "notes": list(self.notes),
        }


def column_before_after(
    column: str, role: str, before: Mapping[str, int], after: Mapping[str, int], small_cell: int = SMALL_CELL
) -> ColumnBeforeAfter:
    """A column's categories from its ``before`` and ``after`` counts (value -> records)."""
    if len(before) > MAX_CATEGORIES:
        return ColumnBeforeAfter(
            column,
            role,
            skipped=f"{len(before):,} distinct values (more than {MAX_CATEGORIES}): not by category",
        )
    big: list[Category] = []
    small: list[Category] = []
    for value, n in before.items():
        cat = Category(str(value), int(n), int(after.get(value, 0)))
        (big if n >= small_cell else small).append(cat)
    big.sort(key=lambda c: (-c.before, c.value))
    pooled = (
        Category(
            f"{len(small)} categories of fewer than {small_cell} records",
            sum(c.before for c in small),
            sum(c.after for c in small),
        )
        if small
        else None
    )
    return ColumnBeforeAfter(column, role, tuple(big), pooled, len(small))


def _qi_columns(result: AnonymizationResult, small_cell: int) -> list[ColumnBeforeAfter]:
    """Each quasi-identifier by its input values (level 0), from the frequency table."""
    table = result.table
    released = result.released_rows
    counts = np.asarray(table.counts, dtype=np.int64)
    out = []
    for j, (name, h) in enumerate(zip(table.qi_names, table.hierarchies, strict=True)):
        codes = np.asarray(table.codes[:, j], dtype=np.int64)
        size = len(h.leaves)
        before = np.bincount(codes, weights=counts, minlength=size).astype(np.int64)
        after = np.bincount(codes[released], weights=counts[released], minlength=size).astype(np.int64)
        b = {str(h.leaves[i]): int(before[i]) for i in range(size) if before[i] > 0}
        a = {str(h.leaves[i]): int(after[i]) for i in range(size) if before[i] > 0}
        out.append(column_before_after(name, "quasi", b, a, small_cell))
    return out


def _released_counts(
    staged: Path, fmt: str, delimiter: str, columns: Sequence[str]
) -> dict[str, dict[str, int]]:
    """Value -> released records of each of ``columns``, from the written release (DuckDB)."""
    import duckdb

    from safeshare.resources import duckdb_memory_limit
    from safeshare.verify.sql import quote, release_relation

    out: dict[str, dict[str, int]] = {c: {} for c in columns}
    if not columns:
        return out
    with tempfile.TemporaryDirectory(prefix="safeshare-before-after-") as spill:
        limit = duckdb_memory_limit()  # the machine's, as the engine's default
        con = duckdb.connect(config={"memory_limit": limit, "threads": 2, "temp_directory": spill})
        try:
            rel = release_relation(staged, fmt, delimiter)
            raw = ", ".join(quote(c) for c in columns)
            con.execute(f"CREATE TEMP TABLE kept AS SELECT {raw}, COUNT(*) AS w FROM {rel} GROUP BY ALL")
            for c in columns:
                rows = con.execute(
                    f"SELECT COALESCE(CAST({quote(c)} AS VARCHAR), ''), SUM(w) FROM kept GROUP BY 1"
                ).fetchall()
                out[c] = {str(v): int(n) for v, n in rows}
        finally:
            con.close()
    return out


def _input_counts(engine: Engine, columns: Sequence[str]) -> dict[str, dict[str, int]]:
    """Value -> input records of each of ``columns`` (one grouping of the input)."""
    out: dict[str, dict[str, int]] = {c: {} for c in columns}
    if not columns:
        return out
    grouped = engine.grouped_counts(list(columns))
    for c in columns:
        series = grouped.groupby(grouped[c].fillna("").astype(str), sort=False)["__count__"].sum()
        out[c] = {str(v): int(n) for v, n in series.items()}
    return out


def before_after(
    result: AnonymizationResult,
    engine: Engine,
    staged: Path,
    fmt: str,
    delimiter: str,
    released_columns: Sequence[str],
    *,
    mixed: bool = False,
    loss_share: float = SUBGROUP_LOSS,
    small_cell: int = SMALL_CELL,
    released: Mapping[str, Mapping[str, int]] | None = None,
) -> BeforeAfter:
    """The before / after of every column of the release written at ``staged`` (module
    docstring). ``result``: the search's (global) result; ``mixed``: a locally recoded release
    (its quasi-identifiers are not tabulated); ``released_columns``: the written file's columns;
    ``released``: value -> released records of kept columns, already read from the file (the
    disclosure check's :attr:`~safeshare.verify.disclosure.Disclosure.counts`). The file is read
    only for a kept column of at most :data:`MAX_CATEGORIES` input values that ``released``
    lacks."""
    if not 0 < loss_share < 1:
        raise ValueError(f"loss_share must be in (0, 1), got {loss_share!r}")
    schema = result.schema
    notes: list[str] = []
    columns: list[ColumnBeforeAfter] = []
    if mixed:
        notes.append(
            "locally recoded: the quasi-identifiers mix levels per record and are not tabulated here"
        )
    else:
        columns += _qi_columns(result, small_cell)
    qis = set(result.table.qi_names)
    kept = [
        c
        for c in released_columns
        if c not in qis and schema.role(c) in (Role.SENSITIVE, Role.INSENSITIVE) and c in engine.columns()
    ]
    if kept:
        before = _input_counts(engine, kept)
        # the after of a column of few enough categories, from the counts given, else the file
        given = released if released is not None else {}
        read = [c for c in kept if len(before[c]) <= MAX_CATEGORIES and c not in given]
        after = {**_released_counts(staged, fmt, delimiter, read), **given}
        for c in kept:
            columns.append(
                column_before_after(c, schema.role(c).value, before[c], after.get(c, {}), small_cell)
            )
    return BeforeAfter(tuple(columns), loss_share, small_cell, tuple(notes))


__all__ = [
    "MAX_CATEGORIES",
    "SMALL_CELL",
    "SUBGROUP_LOSS",
    "BeforeAfter",
    "Category",
    "ColumnBeforeAfter",
    "before_after",
    "column_before_after",
]
