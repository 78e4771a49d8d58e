"""m-concealing as a privacy model (thesis §5.2, formula 5.1; §7.3 "m-concealing inside OLA").

A class ``E`` is acceptable iff every record ``i`` in it has

    m(i) = pi * sum_{q subset K} P(q) / |{ j in E : x_c(j) = x_c(i) for all c in q }| <= m

(see :mod:`safeshare.risk.m_concealing` for the notation). Every set in the
denominator lies inside ``i``'s QI class, so a class's acceptability depends
on that class only, and rejected classes are suppressed like k-anonymity's.

Monotonicity (thesis §5.2, "generalization property"). Generalizing merges
classes; each record's indistinguishable set, for every knowledge state, can
only grow, so ``m(i)`` never increases. Hence:

* **without suppression** the model is monotone: if every record of node
  ``n`` has ``m(i) <= m``, so has every record of any generalization ``n' >= n``;
  predictive tagging applies (OLA, Inverse OLA);
* **with suppression** it is *not*: when a passing class ``A`` merges with a
  failing class ``B`` whose failing record still fails, the merged class is
  rejected and ``A``'s records become suppressed too, so the suppressed count
  can grow along a generalization. Example (``m = 1/2``, column ``s`` known
  with probability 1): ``A`` = two records with ``s = x``, ``B`` = one record
  with ``s = y``; ``n`` suppresses 1 record, ``n'`` (``A`` and ``B`` merged)
  suppresses 3. With a limit of 1 record, ``n`` qualifies and ``n'`` does not.

Where predictive tagging is not exact, the OLA strategy uses the exact
best-first search of :mod:`safeshare.search.best_first`, whose pruning needs a
*monotone relaxation*: a class of fewer than ``ceil(pi/m)`` records always
fails (``m(i) >= pi/|E|`` since every ``P(q)`` term's set is within ``E`` and the
``P(q)`` sum to 1), which is k-anonymity with ``k = ceil(pi/m)``
(:meth:`MConcealing.monotone_relaxation`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from safeshare.core.evaluation import Classes
from safeshare.core.frequency import FrequencyTable
from safeshare.errors import InputError
from safeshare.models.base import BoolArray, PrivacyModel
from safeshare.models.k_anonymity import KAnonymity
from safeshare.numerics import TOLERANCE
from safeshare.risk.knowledge import AdversaryKnowledge, is_number
from safeshare.risk.m_concealing import MConcealingMeasure


class MConcealing(PrivacyModel):
    """Every released record has re-identification probability ``m(i) <= m`` (formula 5.1).

    Parameters
    ----------
    m: the largest tolerated probability, in (0, 1].
    knowledge: column -> probability that an adversary knows the column.
    inclusion_probability: probability that a person is in the release, in (0, 1].
    """

    name = "m-concealing"
    counts_records = True  # the expected number of records hiding a record (issue 32)
    monotone_with_suppression = False
    monotone_without_suppression = True

    def __init__(self, m: float, knowledge: Mapping[str, float], inclusion_probability: float = 1.0) -> None:
        if not is_number(m) or not 0.0 < float(m) <= 1.0:
            raise InputError(f"m must be a number in (0, 1], got {m!r}")
        self.m = float(m)
        self.knowledge = AdversaryKnowledge(knowledge, inclusion_probability)
        self._measures: list[tuple[FrequencyTable, MConcealingMeasure]] = []

    def measure(self, table: FrequencyTable) -> MConcealingMeasure:
        """The measure of ``table`` (its auxiliary evaluators are built once and kept for reuse)."""
        for known, measure in self._measures:
            if known is table:
                return measure
        measure = MConcealingMeasure(table, self.knowledge)
        self._measures = [(table, measure), *self._measures[:1]]
        return measure

    @property
    def sensitive_columns(self) -> tuple[str, ...]:
        return self.knowledge.columns

    def validate(self, table: FrequencyTable) -> None:
        self.measure(table)  # raises InputError for unusable columns

    def acceptable(self, classes: Classes, table: FrequencyTable) -> BoolArray:
        return self.measure(table).acceptable(classes, self.m)

    def failing_rows(self, classes: Classes, table: FrequencyTable) -> BoolArray:
        """Frequency-table rows whose records have ``m(i) > m`` at this node.

        ``m(i)`` never decreases when the node is specialized, so these records
        fail, and are suppressed, at every node below as well: their count is
        a monotone lower bound of the suppressed records
        (:mod:`safeshare.search.best_first` tags down-sets with it).
        """
        return self.measure(table).failing_rows(classes, self.m)

    def monotone_relaxation(self) -> KAnonymity:
        """k-anonymity with the smallest class size that can pass: ``min{c : pi/c <= m}``.

        Every class this model accepts has at least that many records, so a
        node rejected by the relaxation (beyond the suppression limit) is
        rejected by the model too. The threshold is taken a hair below the
        model's own (``2 * TOLERANCE``) so that rounding can never make the
        relaxation reject a class the model accepts.
        """
        pi = self.knowledge.inclusion_probability
        limit = self.m + 2 * TOLERANCE
        k = max(1, int(pi // limit))
        while pi / k > limit:  # from floor(pi / limit), at most one step: the least c with pi / c <= limit
            k += 1
        return KAnonymity(k)

    def params(self) -> dict[str, Any]:
        return {
            "m": self.m,
            "knowledge": self.knowledge.as_dict(),
            "inclusion_probability": self.knowledge.inclusion_probability,
        }
