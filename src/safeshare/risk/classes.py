"""Equivalence classes of a sample: the input of every risk measure and estimator.

A sample of ``n`` records on ``m`` quasi-identifiers (QIs) is held as its
*frequency table*: the ``J`` distinct QI combinations (as integer category
codes per column) and the number ``f_j`` of records in each. Estimators that
model the joint distribution of the QIs (entropy, copulas) need the table;
the population-uniqueness models (Pitman, Zayatz, SNB, Benedetti-Franconi,
the hypothesis test) need only its *class-size histogram*: how many classes
have size 1, 2, 3, ...

Codes are combined into one int64 key per record by mixed-radix packing
(``key = sum_c code_c * radix_c``), so that class sizes are one ``np.unique``
and the keys of a synthetic population generated in chunks stay comparable
across chunks. Packing refuses a code space larger than 2^62.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from safeshare.errors import DataError, InputError

MAX_KEY_SPACE = 2**62


def _category_order(values: pd.Series) -> list[str]:
    """Categories of a text column in a stable order: numeric order when every value is a
    number (ages stay ordered, which the copulas' latent Gaussian relies on), else text order."""
    uniques = pd.unique(values.astype(str))
    numbers = pd.to_numeric(pd.Series(uniques), errors="coerce")
    if not numbers.isna().any():
        order = np.argsort(numbers.to_numpy(dtype=float), kind="stable")
        return [str(uniques[i]) for i in order]
    return sorted(str(v) for v in uniques)


def category_codes(values: pd.Series) -> tuple[np.ndarray, tuple[str, ...]]:
    """Integer codes of a column (in :func:`_category_order`) and its labels in code order."""
    text = values.astype(str)
    order = _category_order(text)
    return np.asarray(pd.Categorical(text, categories=order).codes, dtype=np.int64), tuple(order)


def radices(cardinalities: Sequence[int]) -> np.ndarray:
    """Mixed-radix weights for packing codes into one int64 key; refuses an overflowing space."""
    space = 1
    for k in cardinalities:
        space *= max(int(k), 1)
    if space > MAX_KEY_SPACE:
        raise InputError(
            f"the quasi-identifiers span {space:.3g} combinations, more than packed int64 keys hold "
            f"({MAX_KEY_SPACE:.3g}); use fewer or generalized quasi-identifiers"
        )
    out = np.ones(len(cardinalities), dtype=np.int64)
    for c in range(len(cardinalities) - 2, -1, -1):
        out[c] = out[c + 1] * max(int(cardinalities[c + 1]), 1)
    return out


def pack(codes: np.ndarray, cardinalities: Sequence[int]) -> np.ndarray:
    """One int64 key per row of ``codes`` (rows x columns of category codes)."""
    codes = np.asarray(codes, dtype=np.int64)
    if codes.ndim != 2 or codes.shape[1] != len(cardinalities):
        raise ValueError("codes must be a 2-D array with one column per cardinality")
    if codes.shape[1] == 0:
        return np.zeros(codes.shape[0], dtype=np.int64)
    return np.asarray(codes @ radices(cardinalities), dtype=np.int64)


@dataclass(frozen=True)
class ClassSizeHistogram:
    """How many sample classes have each size: ``classes[i]`` classes of size ``sizes[i]``."""

    sizes: np.ndarray
    classes: np.ndarray

    @classmethod
    def from_sizes(cls, class_sizes: Sequence[int] | np.ndarray) -> ClassSizeHistogram:
        f = np.asarray(class_sizes, dtype=np.int64)
        if f.ndim != 1 or f.size == 0:
            raise InputError("class sizes: expected a non-empty list of sizes")
        if (f < 1).any():
            raise InputError("class sizes: every equivalence class has at least one record")
        sizes, classes = np.unique(f, return_counts=True)
        return cls(sizes.astype(np.int64), classes.astype(np.int64))

    @property
    def n(self) -> int:
        """Records in the sample."""
        return int((self.sizes * self.classes).sum())

    @property
    def n_classes(self) -> int:
        """Distinct classes in the sample, J."""
        return int(self.classes.sum())

    def count(self, size: int) -> int:
        """Classes of exactly ``size`` records (c_1 = sample uniques, c_2 = pairs, ...)."""
        hit = self.sizes == size
        return int(self.classes[hit].sum())


@dataclass(frozen=True)
class SampleTable:
    """The frequency table of a sample on its quasi-identifiers.

    ``codes[j, c]`` is the category code (0..K_c-1) of class ``j`` on column ``c``,
    ``counts[j]`` its size ``f_j``; ``categories[c]`` lists column ``c``'s labels in
    code order (numeric order for numeric columns).
    """

    columns: tuple[str, ...]
    categories: tuple[tuple[str, ...], ...]
    codes: np.ndarray
    counts: np.ndarray

    @classmethod
    def from_frame(cls, frame: pd.DataFrame, qi: Sequence[str]) -> SampleTable:
        qi = list(qi)
        if not qi:
            raise InputError("--qi: at least one quasi-identifier is required")
        missing = [c for c in qi if c not in frame.columns]
        if missing:
            known = ", ".join(map(str, frame.columns))
            raise InputError(f"unknown quasi-identifier {missing[0]!r}: the data has columns {known}")
        if len(set(qi)) != len(qi):
            raise InputError("--qi: a quasi-identifier is listed twice")
        if len(frame) == 0:
            raise DataError("the data has no records")
        cats: list[tuple[str, ...]] = []
        per_record = np.empty((len(frame), len(qi)), dtype=np.int64)
        for c, col in enumerate(qi):
            per_record[:, c], labels = category_codes(frame[col])
            cats.append(labels)
        return cls.from_codes(per_record, tuple(qi), tuple(cats))

    @classmethod
    def from_codes(
        cls,
        per_record: np.ndarray,
        columns: tuple[str, ...] | None = None,
        categories: tuple[tuple[str, ...], ...] | None = None,
    ) -> SampleTable:
        """The table of per-record codes (records x columns)."""
        per_record = np.asarray(per_record, dtype=np.int64)
        if per_record.ndim != 2 or per_record.shape[0] == 0:
            raise InputError("a sample needs at least one record and a 2-D code array")
        m = per_record.shape[1]
        if columns is None:
            columns = tuple(f"q{c}" for c in range(m))
        if categories is None:
            categories = tuple(
                tuple(str(v) for v in range(int(per_record[:, c].max()) + 1)) for c in range(m)
            )
        uniq, counts = np.unique(per_record, axis=0, return_counts=True)
        return cls(columns, categories, uniq.astype(np.int64), counts.astype(np.int64))

    @property
    def n(self) -> int:
        return int(self.counts.sum())

    @property
    def n_classes(self) -> int:
        return int(self.counts.size)

    @property
    def cardinalities(self) -> tuple[int, ...]:
        return tuple(len(c) for c in self.categories)

    def keys(self) -> np.ndarray:
        """Packed int64 key of every class."""
        return pack(self.codes, self.cardinalities)

    def histogram(self) -> ClassSizeHistogram:
        return ClassSizeHistogram.from_sizes(self.counts)

    def marginal(self, c: int) -> np.ndarray:
        """Category probabilities of column ``c`` in the sample (length K_c)."""
        k = self.cardinalities[c]
        counts = np.bincount(self.codes[:, c], weights=self.counts, minlength=k)
        return np.asarray(counts / counts.sum(), dtype=float)

    def records(self) -> np.ndarray:
        """Per-record codes (the table expanded back to n rows, in class order)."""
        return np.repeat(self.codes, self.counts, axis=0)
