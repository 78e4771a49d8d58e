"""Re-identification risk as a privacy model: "the release's risk is at most a threshold".

A thin adapter over :func:`safeshare.risk.release_risk.release_risk` (the measure; issue 9,
Jiang et al. 2022 §4.3): at a node, the classes the per-class models release (all of them
when ``risk`` is the only model) are taken as a sample of ``population_size`` people, and
the node qualifies iff the measure is at most ``threshold``:

* ``B`` (default; threshold 0.09, the paper's §4.3): estimated by a class-size estimator,
  the project's default (Pitman) unless ``estimator`` names another;
* ``A = J / N``: exact;
* ``uniques``: the estimated share of population uniques.

It is a :class:`~safeshare.models.base.NodePrivacyModel`: it judges the node, suppresses
nothing itself, and a node it rejects qualifies at no suppression limit.

Monotonicity (what the search may assume):

* ``A`` **without suppression** is monotone: a qualifying node releases every class, and
  generalizing merges classes, so ``J`` never grows while ``N`` is fixed. OLA's predictive
  tagging applies.
* ``A`` **with suppression** is not: two suppressed classes can merge into a released one,
  so the released ``J`` can grow along a generalization.
* ``B`` and ``uniques`` are estimates: the fitted model changes with the whole class-size
  histogram, and no estimator here is proven monotone under merging (the exact B is, without
  suppression: ``(f1+f2)/(F1+F2) <= f1/F1 + f2/F2``; its estimates need not be). Declared
  not monotone.

So the OLA strategy runs the exact best-first search (:mod:`safeshare.search.best_first`)
for these criteria. No monotone relaxation is offered: the only provable one (for ``A``:
``J(n) <= threshold * N + L``, since at most ``L`` suppressed records remove at most ``L``
classes) is a node-level bound the relaxation interface (per-class models) cannot express;
the best-first search then checks nodes in loss order until the first that qualifies. The
written release is re-checked by :mod:`safeshare.verify.risk`.
"""

from __future__ import annotations

import math
from typing import Any

from safeshare.core.evaluation import Classes
from safeshare.core.frequency import FrequencyTable
from safeshare.errors import InputError
from safeshare.models.base import BoolArray, NodePrivacyModel
from safeshare.numerics import TOLERANCE
from safeshare.risk.estimators import DEFAULT_ESTIMATOR
from safeshare.risk.measures import DEFAULT_THRESHOLD
from safeshare.risk.release_risk import MEASURES, check_estimator, release_risk


class RiskThreshold(NodePrivacyModel):
    """The release's ``measure`` (``B``, ``A`` or ``uniques``) is at most ``threshold``.

    Parameters
    ----------
    threshold: the largest tolerated value, in (0, 1].
    measure: ``"B"``, ``"A"`` or ``"uniques"`` (see the module docstring).
    estimator: a class-size estimator of :mod:`safeshare.risk.estimators` (``B``, ``uniques``).
    population_size: ``N``; ``None``: the input's record count (the data is the population).
    """

    name = "risk"
    monotone_with_suppression = False
    monotone_without_suppression = False

    def __init__(
        self,
        threshold: float = DEFAULT_THRESHOLD,
        measure: str = "B",
        estimator: str = DEFAULT_ESTIMATOR,
        population_size: int | None = None,
    ) -> None:
        if measure not in MEASURES:
            raise InputError(f"risk measure {measure!r}: expected one of {', '.join(MEASURES)}")
        if isinstance(threshold, bool) or not isinstance(threshold, int | float) or not 0 < threshold <= 1:
            raise InputError(f"risk threshold: expected a number in (0, 1], got {threshold!r}")
        if population_size is not None and (
            isinstance(population_size, bool) or not isinstance(population_size, int) or population_size < 1
        ):
            raise InputError(f"risk population_size: expected a positive integer, got {population_size!r}")
        self.threshold = float(threshold)
        self.measure = measure
        self.estimator = check_estimator(estimator) if measure != "A" else estimator
        self.population_size = population_size
        self.monotone_without_suppression = measure == "A"

    def population(self, table: FrequencyTable) -> int:
        """``N``: the configured population size, or the input's record count."""
        return table.n_records if self.population_size is None else self.population_size

    def validate(self, table: FrequencyTable) -> None:
        if self.population(table) < table.n_records:
            raise InputError(
                f"risk population_size {self.population_size} is smaller than the input "
                f"({table.n_records} records)"
            )

    def value(self, classes: Classes, table: FrequencyTable, released: BoolArray) -> float:
        """The measure of the released classes (``nan`` when the estimator has no solution)."""
        sizes = classes.sizes[released]
        return release_risk(sizes, self.population(table), self.measure, self.estimator)

    def node_acceptable(self, classes: Classes, table: FrequencyTable, released: BoolArray) -> bool:
        value = self.value(classes, table, released)
        return not math.isnan(value) and value <= self.threshold + TOLERANCE

    def achieved(self, classes: Classes, table: FrequencyTable, released: BoolArray) -> dict[str, Any]:
        value = self.value(classes, table, released)
        return {self.measure: None if math.isnan(value) else value, "population_size": self.population(table)}

    def params(self) -> dict[str, Any]:
        out: dict[str, Any] = {"measure": self.measure, "threshold": self.threshold}
        if self.measure != "A":
            out["estimator"] = self.estimator
        out["population_size"] = self.population_size
        return out

    def verification_params(self, table: FrequencyTable) -> dict[str, Any]:
        return {**self.params(), "population_size": self.population(table)}
