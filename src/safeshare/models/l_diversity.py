"""l-diversity (Machanavajjhala, Kifer, Gehrke, Venkitasubramaniam 2007; thesis §2.4).

k-anonymity hides a record in a crowd but says nothing about what the crowd
reveals: if every record of an equivalence class has the same diagnosis, an
adversary who places a person in the class learns the diagnosis (the
*homogeneity attack*, thesis §2.4). l-diversity asks every class to hold at
least ``l`` "well represented" values of each sensitive attribute ``S``. With
``n(E, v)`` the records of class ``E`` with value ``v``, ``|E|`` the class
size, ``p(E, v) = n(E, v) / |E|`` and ``r_1 >= r_2 >= ... >= r_m`` the non-zero
``n(E, v)`` sorted in descending order, the three variants are:

* **distinct**: ``|{v : n(E, v) > 0}| >= l``;
* **entropy**: ``H(E) = -sum_v p(E, v) ln p(E, v) >= ln l`` (the base of the
  logarithm cancels: the condition is ``exp(H(E)) >= l``, "the class is as
  diverse as a uniform distribution over l values");
* **recursive (c, l)**: ``r_1 < c (r_l + r_{l+1} + ... + r_m)``: the most
  frequent value is not too frequent compared with the less frequent ones.
  A class with fewer than ``l`` distinct values fails (the right side is 0).

The model is applied to every sensitive attribute: a class is acceptable when
it satisfies the condition for each of them.

Monotonicity (thesis §4.3.2 needs it for predictive tagging):

* distinct l-diversity is monotone for every suppression limit: a merged class
  holds the union of the values of its parts, so it passes as soon as one part
  passes, and the records in failing classes can only decrease;
* entropy and recursive (c, l) have only the *generalization property*
  (Machanavajjhala et al. 2007, §4.3): merging two passing classes gives a
  passing class (entropy is concave; for recursive see the paper), so a node
  that passes with no suppression has passing generalizations. With
  suppression a passing class merged with a failing one can fail
  (e.g. entropy, ``l = 2``: ``{a, b}`` + ``{c x 10}``), so the records to
  suppress can grow along a generalization and the search must not tag. The
  OLA strategy then runs the exact best-first search
  (:mod:`safeshare.search.best_first`), pruned by the monotone relaxation
  k-anonymity with ``k = ceil(l)`` (:meth:`LDiversity.monotone_relaxation`).

All per-class quantities are computed at once from the (class, value) pairs
of :func:`~safeshare.models.sensitive.class_value_counts`: no Python loop over
classes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from safeshare.core.evaluation import Classes
from safeshare.core.frequency import FrequencyTable
from safeshare.errors import InputError
from safeshare.models.base import BoolArray
from safeshare.models.k_anonymity import KAnonymity
from safeshare.models.sensitive import (
    ClassValueCounts,
    FloatArray,
    SensitiveAttributeModel,
    SensitiveRows,
    class_value_counts,
)
from safeshare.models.vocabulary import VARIANTS
from safeshare.numerics import TOLERANCE


def _number(value: Any) -> bool:
    return isinstance(value, int | float | np.integer | np.floating) and not isinstance(value, bool)


class LDiversity(SensitiveAttributeModel):
    """At least ``l`` well-represented values of every sensitive attribute in every class.

    Parameters
    ----------
    l: the diversity. An integer ``>= 1`` for ``distinct`` and ``recursive``;
        a real number ``>= 1`` for ``entropy`` (``exp(H) >= l``).
    variant: ``distinct``, ``entropy`` or ``recursive``.
    c: the constant of recursive (c, l)-diversity, a real number ``> 0``;
        required by ``recursive`` and rejected by the other variants.
    columns: the sensitive columns (default: every sensitive column, see
        :class:`~safeshare.models.sensitive.SensitiveAttributeModel`).
    """

    name = "l-diversity"

    def __init__(
        self,
        l: float,  # noqa: E741 - the model's name for it
        variant: str = "distinct",
        c: float | None = None,
        columns: Sequence[str] | None = None,
    ) -> None:
        if variant not in VARIANTS:
            raise InputError(f"l-diversity: variant must be one of {', '.join(VARIANTS)}, got {variant!r}")
        if variant == "entropy":
            if not _number(l) or not math.isfinite(float(l)) or float(l) < 1:
                raise InputError(f"l-diversity: l must be a number >= 1, got {l!r}")
        elif not _number(l) or not float(l).is_integer() or float(l) < 1:  # 3.0 is accepted as 3, 2.5 is not
            raise InputError(f"l-diversity: l must be an integer >= 1 for the {variant} variant, got {l!r}")
        if variant == "recursive":
            if c is None:
                raise InputError("l-diversity: the recursive variant needs c (r1 < c (r_l + ... + r_m))")
            if not _number(c) or not math.isfinite(float(c)) or float(c) <= 0:
                raise InputError(f"l-diversity: c must be a number > 0, got {c!r}")
        elif c is not None:
            raise InputError(f"l-diversity: c applies to the recursive variant only, not to {variant!r}")
        super().__init__(columns)
        self.l = int(l) if variant != "entropy" else float(l)
        self.variant = variant
        self.c = float(c) if c is not None else None
        self.monotone_with_suppression = variant == "distinct"
        self.monotone_without_suppression = True
        # distinct values are the same counted over records or people; the others weigh records
        self.counts_records = variant != "distinct"

    @property
    def achieved_summary(self) -> tuple[str, str]:  # type: ignore[override]
        return {
            "distinct": ("min", "distinct values per class (smallest over released classes)"),
            "entropy": ("min", "exp(entropy) per class, the effective number of values (smallest)"),
            "recursive": ("max", "r1 / (r_l + ... + r_m) per class (largest; c must exceed it)"),
        }[self.variant]

    def monotone_relaxation(self) -> KAnonymity:
        """k-anonymity with the smallest class size that can pass (used by the best-first search).

        Every variant implies distinct l-diversity (``H <= ln(#values)``;
        recursive needs ``r_l > 0``), so a passing class has at least
        ``ceil(l)`` records; k-anonymity with that k rejects only classes this
        model rejects, and it is monotone with suppression
        (:mod:`safeshare.search.best_first`, :mod:`safeshare.search.inverse_ola`).
        For ``entropy`` the size is the smallest ``n`` with
        ``ln n >= ln l - TOLERANCE``, the model's own comparison, so that the
        relaxation never rejects a class the model accepts.
        """
        k = math.ceil(self.l)
        if self.variant == "entropy":
            while k > 1 and math.log(k - 1) >= math.log(self.l) - TOLERANCE:
                k -= 1
        return KAnonymity(max(1, k))

    # ----------------------------------------------------------------- model
    def acceptable(self, classes: Classes, table: FrequencyTable) -> BoolArray:
        ok = np.ones(classes.sizes.shape[0], dtype=bool)
        for column in self.columns_of(table):
            ok &= self._passes(self.pairs(classes, table, column), classes.sizes)
        return ok

    def prepare(self, table: FrequencyTable) -> dict[str, SensitiveRows]:
        out = {}
        for column in self.columns_of(table):
            j = table.sensitive_index(column)
            codes = table.sensitive_codes[:, j].astype(np.int64)
            out[column] = SensitiveRows.of(table, codes, len(table.sensitive_labels[j]))
        return out

    def pairs(self, classes: Classes, table: FrequencyTable, column: str) -> ClassValueCounts:
        """The (class, value) pairs of ``column`` at the node of ``classes``."""
        rows: dict[str, SensitiveRows] = self.prepared(table)
        return class_value_counts(classes, rows[column])

    def _passes(self, pairs: ClassValueCounts, sizes: FloatArray) -> BoolArray:
        if self.variant == "distinct":
            return distinct_values(pairs) >= self.l
        if self.variant == "entropy":
            return entropy(pairs, sizes) >= math.log(self.l) - TOLERANCE
        assert self.c is not None
        r1, tail = recursive_terms(pairs, int(self.l))
        return r1 < self.c * tail

    # ------------------------------------------------------------- measures
    def measure(self, classes: Classes, table: FrequencyTable) -> dict[str, FloatArray]:
        """Per sensitive column, the diversity of every class slot.

        ``distinct``: the number of distinct values; ``entropy``: ``exp(H)``,
        the "effective number of values" (compare with ``l``); ``recursive``:
        ``r_1 / (r_l + ... + r_m)`` (compare with ``c``; infinite when the class
        has fewer than ``l`` values).
        """
        out: dict[str, FloatArray] = {}
        for column in self.columns_of(table):
            pairs = self.pairs(classes, table, column)
            if self.variant == "distinct":
                out[column] = distinct_values(pairs).astype(np.float64)
            elif self.variant == "entropy":
                out[column] = np.exp(entropy(pairs, classes.sizes))
            else:
                r1, tail = recursive_terms(pairs, int(self.l))
                with np.errstate(divide="ignore", invalid="ignore"):
                    out[column] = np.where(tail > 0, r1 / np.where(tail > 0, tail, 1), np.inf)
        return out

    def params(self) -> dict[str, Any]:
        out: dict[str, Any] = {"l": self.l, "variant": self.variant}
        if self.c is not None:
            out["c"] = self.c
        out.update(super().params())
        return out


def distinct_values(pairs: ClassValueCounts) -> FloatArray:
    """Number of distinct values per class slot."""
    return pairs.per_class_sum(np.ones(pairs.n_pairs))


def entropy(pairs: ClassValueCounts, sizes: FloatArray) -> FloatArray:
    """Shannon entropy (natural log) per class slot: ``ln |E| - sum_v n(E,v) ln n(E,v) / |E|``.

    Empty slots get 0.
    """
    c = pairs.count
    s = pairs.per_class_sum(c * np.log(c))
    out = np.zeros(sizes.shape[0], dtype=np.float64)
    used = sizes > 0
    n = sizes[used]
    out[used] = np.log(n) - s[used] / n
    return out


def recursive_terms(pairs: ClassValueCounts, l: int) -> tuple[FloatArray, FloatArray]:  # noqa: E741
    """Per class slot, ``r_1`` (the largest count) and ``r_l + ... + r_m`` (all but the ``l - 1`` largest)."""
    n_slots = pairs.n_slots
    if pairs.n_pairs == 0:
        return np.zeros(n_slots), np.zeros(n_slots)
    # Sort the pairs by class, then by count descending: one sort of a packed integer key.
    counts = pairs.count.astype(np.int64)
    top = int(counts.max()) + 1
    order = np.argsort(pairs.cls * top + (top - 1 - counts), kind="stable")
    cls, cnt = pairs.cls[order], counts[order]
    change = np.empty(cls.shape[0], dtype=bool)
    change[0] = True
    np.not_equal(cls[1:], cls[:-1], out=change[1:])
    starts = np.flatnonzero(change)
    first = np.repeat(starts, np.diff(np.append(starts, cls.shape[0])))
    rank = np.arange(cls.shape[0]) - first  # 0 for r_1, 1 for r_2, ...
    r1 = np.zeros(n_slots)
    r1[cls[starts]] = cnt[starts]
    tail = np.bincount(cls, weights=cnt * (rank >= l - 1), minlength=n_slots).astype(np.float64)
    return r1, tail
