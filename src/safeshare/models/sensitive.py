"""Sensitive values inside equivalence classes: what l-diversity and t-closeness look at.

Both models judge a class ``E`` by the distribution of a sensitive attribute
``S`` among its records (thesis §2.4). On the frequency table that
distribution is a histogram per class: the number of records with class ``E``
and value ``v``,

    ``n(E, v) = sum of counts of the rows r with class(r) = E and S(r) = v``.

Only the non-zero entries are kept, as *(class, value) pairs* sorted by class
and then by value, so that the cost is bounded by the number ``M`` of rows of
the frequency table and never by ``classes x values``. The pairs are found
with one weighted ``bincount`` over ``class * V + value`` when that key space
is small (about ``4 M``), and otherwise with one sort of the keys (the row's
count is packed into the low bits so that no ``argsort`` is needed).

This module also holds :class:`SensitiveAttributeModel`, the common base of
models that are applied to every sensitive attribute of the schema: a model
configured as ``l-diversity: {l: 3}`` does not name its columns; it is bound
to the schema's sensitive columns by :meth:`SensitiveAttributeModel.bind`
when an :class:`~safeshare.workflows.anonymizer.Anonymizer` is built.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast
from weakref import WeakKeyDictionary

import numpy as np
import numpy.typing as npt

from safeshare.core.evaluation import Classes
from safeshare.core.frequency import FrequencyTable
from safeshare.errors import ConfigError, InputError
from safeshare.models.base import BoolArray, PrivacyModel

if TYPE_CHECKING:
    from safeshare.data.schema import Schema

Int64Array = npt.NDArray[np.int64]
#: Indices (int32 or int64).
IndexArray = npt.NDArray[np.signedinteger[Any]]
FloatArray = npt.NDArray[np.float64]

#: Slack of floating-point comparisons (entropies, distances): a class passes
#: ``H >= log l`` when ``H >= log l - TOLERANCE``, ``D <= t`` when ``D <= t + TOLERANCE``.
#: It absorbs rounding (``-sum p log p`` of a uniform class is not exactly ``log l``);
#: it is far below any difference a single record can make.


@dataclass(frozen=True)
class ClassValueCounts:
    """The non-zero cells of the per-class histograms of one sensitive attribute.

    Attributes
    ----------
    cls: class slot (as in :attr:`Classes.sizes`) of every pair.
    value: value index of every pair (``0 .. n_values - 1``).
    count: records of every pair (float64, exact integers).
    n_values: ``V``, the number of possible values.
    n_slots: number of class slots.

    Pairs are sorted by ``(cls, value)``.
    """

    cls: IndexArray
    value: IndexArray
    count: FloatArray
    n_values: int
    n_slots: int

    @property
    def n_pairs(self) -> int:
        return int(self.cls.shape[0])

    def per_class_sum(self, weights: FloatArray) -> FloatArray:
        """``sum`` of ``weights`` over the pairs of every class slot."""
        return cast(FloatArray, np.bincount(self.cls, weights=weights, minlength=self.n_slots))

    def class_starts(self) -> Int64Array:
        """Index of the first pair of every class that has pairs (pairs are sorted by class)."""
        change = np.empty(self.n_pairs, dtype=bool)
        if self.n_pairs:
            change[0] = True
            np.not_equal(self.cls[1:], self.cls[:-1], out=change[1:])
        return np.flatnonzero(change)


@dataclass(frozen=True)
class SensitiveRows:
    """The frequency table seen by one sensitive attribute.

    The table's rows are distinct on the QIs *and every* sensitive column; for
    one attribute, rows that share the QI tuple and the value are merged, and
    each merged row keeps a representative table row (to look its class up).

    Attributes
    ----------
    rep: ``(R,)`` a frequency-table row of every merged row.
    values: ``(R,)`` value index of every merged row.
    counts: ``(R,)`` records of every merged row.
    n_values: ``V``.
    """

    rep: Int64Array
    values: Int64Array
    counts: Int64Array
    n_values: int

    @classmethod
    def of(cls, table: FrequencyTable, values: Int64Array, n_values: int) -> SensitiveRows:
        """Merge the rows of ``table`` that share QI tuple and value (``values``: per table row)."""
        qi_row = _qi_rows(table)
        key = qi_row * n_values + values
        _, rep, inverse = np.unique(key, return_index=True, return_inverse=True)
        counts = np.bincount(inverse.ravel(), weights=table.counts).astype(np.int64)
        return cls(rep.astype(np.int64), values[rep], counts, n_values)


_QI_ROWS: WeakKeyDictionary[FrequencyTable, Int64Array] = WeakKeyDictionary()


def _qi_rows(table: FrequencyTable) -> Int64Array:
    """Dense id of the QI tuple of every frequency-table row (cached per table)."""
    hit = _QI_ROWS.get(table)
    if hit is None:
        if table.codes.shape[1] == 0:
            hit = np.zeros(table.n_rows, dtype=np.int64)
        else:
            _, inverse = np.unique(table.codes, axis=0, return_inverse=True)
            hit = inverse.astype(np.int64).ravel()
        _QI_ROWS[table] = hit
    return hit


def class_value_counts(classes: Classes, rows: SensitiveRows) -> ClassValueCounts:
    """The (class, value) pairs of the node of ``classes``, sorted by class then value.

    A weighted ``bincount`` over ``class * V + value`` when that key space is
    within ``4 R`` (``R`` merged rows); otherwise one sort of the keys with the
    count packed into the low bits, in int32 when it fits (twice as fast to
    sort as int64), with per-pair sums taken as differences of a running sum.
    """
    n_values = rows.n_values
    n_slots = int(classes.sizes.shape[0])
    r = int(rows.rep.shape[0])
    space = n_slots * n_values
    if space <= max(4 * r, 1024):
        key = classes.row_class[rows.rep].astype(np.int64) * n_values + rows.values
        cell = cast(FloatArray, np.bincount(key, weights=rows.counts, minlength=space))
        used = np.flatnonzero(cell)
        return ClassValueCounts(used // n_values, used % n_values, cell[used], n_values, n_slots)
    bits = max(int(rows.counts.max()), 1).bit_length()
    width = (space - 1).bit_length() + bits
    dtype = np.int32 if width <= 31 else np.int64
    keys: IndexArray
    weights: IndexArray
    if width <= 62:
        packed: IndexArray = classes.row_class[rows.rep].astype(dtype)
        packed *= n_values
        packed += rows.values.astype(dtype, copy=False)
        packed <<= bits
        packed |= rows.counts.astype(dtype, copy=False)
        packed.sort()
        keys = packed >> bits
        weights = packed & ((1 << bits) - 1)
    else:  # pragma: no cover - beyond 2**62 distinct keys and counts
        key = classes.row_class[rows.rep].astype(np.int64) * n_values + rows.values
        order = np.argsort(key, kind="stable")
        keys, weights = key[order], rows.counts[order]
    last = np.empty(r, dtype=bool)
    last[-1] = True
    np.not_equal(keys[1:], keys[:-1], out=last[:-1])
    ends = np.flatnonzero(last)
    pair_keys = keys[ends]
    running = np.cumsum(weights, dtype=np.int64)[ends]
    pair_counts = np.diff(running, prepend=0).astype(np.float64)
    pair_class, pair_value = np.divmod(pair_keys, n_values)
    return ClassValueCounts(pair_class, pair_value, pair_counts, n_values, n_slots)


class SensitiveAttributeModel(PrivacyModel):
    """A privacy model applied to every sensitive attribute (l-diversity, t-closeness).

    Parameters
    ----------
    columns: the sensitive columns; ``None`` means every sensitive column of
        the schema (set by :meth:`bind`) or, for a model used directly on a
        frequency table, every sensitive column of the table.
    """

    def __init__(self, columns: Sequence[str] | None = None) -> None:
        if columns is not None:
            if isinstance(columns, str) or not all(isinstance(c, str) for c in columns):
                raise InputError(f"{self.name}: columns must be a list of column names, got {columns!r}")
            if not columns:
                raise InputError(f"{self.name}: at least one sensitive column is required")
        self.columns: tuple[str, ...] | None = tuple(columns) if columns is not None else None
        # Per frequency table: whatever the model precomputes (value orders, reference distributions).
        self._prepared: WeakKeyDictionary[FrequencyTable, Any] = WeakKeyDictionary()

    @property
    def sensitive_columns(self) -> tuple[str, ...]:
        return self.columns or ()

    def bind(self, schema: Schema) -> SensitiveAttributeModel:
        """A copy applied to the sensitive columns of ``schema`` (unless columns were given)."""
        if self.columns is not None:
            unknown = [c for c in self.columns if c not in schema.sensitive]
            if unknown:
                raise ConfigError(
                    f"{self.name}: column {unknown[0]!r} does not have the role 'sensitive' in the schema"
                )
            return self
        if not schema.sensitive:
            raise ConfigError(
                f"privacy.{self.name}: the model protects sensitive attributes, "
                "but no column has the role 'sensitive'"
            )
        out = copy.copy(self)
        out.columns = tuple(schema.sensitive)
        out._prepared = WeakKeyDictionary()
        return out

    def columns_of(self, table: FrequencyTable) -> tuple[str, ...]:
        """The sensitive columns the model checks on ``table``."""
        columns = self.columns if self.columns is not None else table.sensitive_names
        if not columns:
            raise InputError(f"{self.name}: the frequency table holds no sensitive column")
        for c in columns:
            if c not in table.sensitive_names:
                raise InputError(f"{self.name}: sensitive column {c!r} is not in the frequency table")
        return tuple(columns)

    def validate(self, table: FrequencyTable) -> None:
        self.columns_of(table)
        self.prepared(table)

    def prepared(self, table: FrequencyTable) -> Any:
        """The model's precomputation for ``table`` (cached per table)."""
        hit = self._prepared.get(table)
        if hit is None:
            hit = self.prepare(table)
            self._prepared[table] = hit
        return hit

    def prepare(self, table: FrequencyTable) -> Any:
        """Precompute what the model needs for ``table`` (override)."""
        return None

    def params(self) -> dict[str, Any]:
        return {"columns": list(self.columns) if self.columns is not None else None}

    #: How :meth:`achieved` summarizes :meth:`measure` over the released classes, and what it means.
    achieved_summary: tuple[str, str] = ("min", "")

    def measure(self, classes: Classes, table: FrequencyTable) -> dict[str, FloatArray]:
        """Per sensitive column, the model's quantity for every class slot (override)."""
        raise NotImplementedError

    def achieved(self, classes: Classes, table: FrequencyTable, released: BoolArray) -> dict[str, Any]:
        """Per column, the worst value of :meth:`measure` over the released classes."""
        how, meaning = self.achieved_summary
        columns: dict[str, float | None] = {}
        for column, values in self.measure(classes, table).items():
            kept = values[released]
            if kept.size == 0:
                columns[column] = None
            else:
                worst = float(kept.min() if how == "min" else kept.max())
                columns[column] = worst if math.isfinite(worst) else None
        return {"measure": meaning, how: columns}
