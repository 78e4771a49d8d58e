"""Re-identification risk as a privacy model: "the release's risk is at most a threshold".

A thin adapter over :mod:`safeshare.risk.release_risk` (the measure; issue 9,
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

A node whose estimator has **no estimate** (a failed fit, a numerical warning, a value outside
``[1/N, 1]``: the estimators' contract, :mod:`safeshare.risk.estimators.base`) does not
qualify. ``B`` and ``A`` are at least ``1/N`` for any non-empty release, so a threshold below
``1/N`` is refused up front (:meth:`RiskThreshold.validate`): nothing could meet it.

``use: upper`` (``B`` only): the node qualifies when the upper end of the estimate's 95 %
interval is at most the threshold, so that "B <= threshold" holds with that confidence
under the estimator's model (docs/risk.md, "Intervals", for what the interval covers).

So the OLA strategy runs the exact best-first search (:mod:`safeshare.search.best_first`)
for these criteria: nodes in loss order until the first that qualifies. No monotone relaxation
is offered: the only provable one (for ``A``: ``J(n) <= threshold * N + L``, since at most ``L``
suppressed records remove at most ``L`` classes) is a node-level bound the relaxation interface
(per-class models) cannot express.

What a checked node costs (:class:`~safeshare.risk.release_risk.ReleaseRisk`, one per ``N``):
a provable lower bound on the estimate first (:mod:`safeshare.risk.bounds`; for Pitman, the
default, the infimum of its B over its parameter space, from the class sizes alone), which
rejects the node without a fit when it exceeds the threshold; otherwise the estimate, cached
by class-size histogram (the chosen node's estimate is reused for the report). The bound only
rejects, and only nodes the estimate would reject, so the search returns the node an
exhaustive evaluation with the same estimator returns (``tests/test_risk_model_search.py``).
:meth:`RiskThreshold.estimate_counts` keeps the counts the search reports
(``risk_estimates`` in report.json). The written release is re-checked by
:mod:`safeshare.verify.risk`, which re-estimates without bound or cache.
"""

from __future__ import annotations

from typing import Any

from safeshare.core.evaluation import Classes
from safeshare.core.frequency import FrequencyTable
from safeshare.errors import InputError
from safeshare.models.base import BoolArray, NodePrivacyModel, PrivacyModel
from safeshare.numerics import TOLERANCE
from safeshare.risk.estimators import DEFAULT_ESTIMATOR
from safeshare.risk.measures import DEFAULT_THRESHOLD
from safeshare.risk.population import Population
from safeshare.risk.release_risk import MEASURES, USES, ReleaseRisk, RiskValue, check_estimator


class RiskThreshold(NodePrivacyModel):
    """The release's ``measure`` (``B``, ``A`` or ``uniques``) is at most ``threshold``.

    Parameters
    ----------
    threshold: the largest tolerated value, in (0, 1].
    measure: ``"B"``, ``"A"`` or ``"uniques"`` (see the module docstring).
    estimator: a class-size estimator of :mod:`safeshare.risk.estimators` (``B``, ``uniques``).
    population_size: ``N``; ``None``: the input's record count (the data is the population).
    use: ``"estimate"`` (default) or ``"upper"``: compare the upper end of the 95 % interval.
    """

    name = "risk"
    monotone_with_suppression = False
    monotone_without_suppression = False
    counts_records = True  # the estimators' class sizes and N (issue 32)

    def __init__(
        self,
        threshold: float = DEFAULT_THRESHOLD,
        measure: str = "B",
        estimator: str = DEFAULT_ESTIMATOR,
        population_size: int | None = None,
        use: str = "estimate",
    ) -> None:
        if measure not in MEASURES or measure == "record":
            raise InputError(
                f"risk measure {measure!r}: expected one of B, A, uniques (record: RecordRiskThreshold)"
            )
        if isinstance(threshold, bool) or not isinstance(threshold, int | float) or not 0 < threshold <= 1:
            raise InputError(f"risk threshold: expected a number in (0, 1], got {threshold!r}")
        if population_size is not None and (
            isinstance(population_size, bool) or not isinstance(population_size, int) or population_size < 1
        ):
            raise InputError(f"risk population_size: expected a positive integer, got {population_size!r}")
        if use not in USES:
            raise InputError(f"risk use: expected one of {', '.join(USES)}, got {use!r}")
        if use == "upper" and measure == "uniques":
            raise InputError("risk use: upper needs an interval, which the uniques measure does not have")
        self.use = use
        self.threshold = float(threshold)
        self.measure = measure
        self.estimator = check_estimator(estimator, measure) if measure != "A" else estimator
        self.population_size = population_size
        self.monotone_without_suppression = measure == "A"
        self._risks: dict[int, ReleaseRisk] = {}

    def population(self, table: FrequencyTable) -> int:
        """``N``: the configured population size, or the input's record count (no N: the input is
        the population, :class:`~safeshare.risk.population.Population`)."""
        return Population.of(self.population_size).resolve(table.n_records)

    def risk(self, table: FrequencyTable) -> ReleaseRisk:
        """The measure for ``table``'s population, with its estimate cache and counters."""
        N = self.population(table)
        found = self._risks.get(N)
        if found is None:
            found = self._risks[N] = ReleaseRisk(self.measure, self.estimator, N, use=self.use)
        return found

    def estimate_counts(self) -> dict[str, int]:
        """:attr:`ReleaseRisk.counts` summed over the populations seen, so far (the search
        reports the difference over its run)."""
        out: dict[str, int] = {}
        for risk in self._risks.values():
            for key, value in risk.counts.items():
                out[key] = out.get(key, 0) + value
        return out

    def validate(self, table: FrequencyTable) -> None:
        Population.of(self.population_size).check(table.n_records, "input", "records", "risk population_size")
        N = self.population(table)
        if self.measure in ("B", "A") and self.threshold < 1.0 / N * (1 - TOLERANCE):
            raise InputError(
                f"risk threshold {self.threshold:g} is below 1/N = {1.0 / N:.3g} (N = {N:,}): "
                f"no release can meet it, since {self.measure} >= 1/N"
            )

    def estimate(self, classes: Classes, table: FrequencyTable, released: BoolArray) -> RiskValue:
        """The measure of the released classes, with its interval when ``use`` is ``upper``
        (cached by class-size histogram: the search's estimate of the chosen node is reused)."""
        return self.risk(table).estimate(classes.sizes[released])

    def value(self, classes: Classes, table: FrequencyTable, released: BoolArray) -> float:
        """The number compared with the threshold (``nan`` when there is no estimate)."""
        bound = self.estimate(classes, table, released).bound(self.use)
        return float("nan") if bound is None else float(bound)

    def node_acceptable(self, classes: Classes, table: FrequencyTable, released: BoolArray) -> bool:
        return self.risk(table).at_most(classes.sizes[released], self.threshold)

    def achieved(self, classes: Classes, table: FrequencyTable, released: BoolArray) -> dict[str, Any]:
        est = self.estimate(classes, table, released)
        out: dict[str, Any] = {self.measure: est.value, "population_size": self.population(table)}
        if est.value is None:
            out["no_estimate"] = est.reason
        if self.use == "upper":
            out["interval"] = None if est.interval is None else list(est.interval)
            out["use"] = self.use
        return out

    def params(self) -> dict[str, Any]:
        out: dict[str, Any] = {"measure": self.measure, "threshold": self.threshold}
        if self.measure != "A":
            out["estimator"] = self.estimator
        out["population_size"] = self.population_size
        if self.use != "estimate":
            out["use"] = self.use
        return out

    def verification_params(self, table: FrequencyTable) -> dict[str, Any]:
        return {**self.params(), "population_size": self.population(table)}


class RecordRiskThreshold(PrivacyModel):
    """Every released record's probability of correct re-identification is at most ``threshold``
    (``risk: {measure: record, threshold: t}``; issue 34).

    The per-record risk is :func:`safeshare.risk.record_risk.class_size_record_risk`: ``1/f``
    when the input is the population (no ``population_size``), else ``E[1/F | f]`` under
    ``F - f ~ NegBin(f, n/N)`` (Benedetti-Franconi, ``n`` the input's records). It depends on the
    class size only and decreases in it, so a class is released iff ``f >= f*``, the smallest safe
    size (:func:`~safeshare.risk.record_risk.smallest_safe_class`): a per-class rule, monotone with
    and without suppression (merging classes only grows them), searched by OLA with predictive
    tagging exactly like k-anonymity (it *is* k-anonymity at ``k = f*``, which the report shows).
    The maximum over the released records is the model's achieved value. The copula per-record
    risk of the attack report (Rocher et al.) depends on the whole release's fit and is not monotone,
    so it is measured, not searched.
    """

    name = "risk"
    counts_records = True  # the verifier re-checks it on the file's class sizes (issue 32)

    def __init__(self, threshold: float, population_size: int | None = None) -> None:
        if isinstance(threshold, bool) or not isinstance(threshold, int | float) or not 0 < threshold <= 1:
            raise InputError(f"risk threshold: expected a number in (0, 1], got {threshold!r}")
        if population_size is not None and (
            isinstance(population_size, bool) or not isinstance(population_size, int) or population_size < 1
        ):
            raise InputError(f"risk population_size: expected a positive integer, got {population_size!r}")
        self.threshold = float(threshold)
        self.population_size = population_size
        self.measure = "record"
        self._floor: dict[int, int] = {}

    def sampling_fraction(self, n_records: int) -> float:
        return 1.0 if self.population_size is None else min(1.0, n_records / self.population_size)

    def floor(self, n_records: int) -> int:
        """``f*`` for an input of ``n_records`` records."""
        found = self._floor.get(n_records)
        if found is None:
            from safeshare.risk.record_risk import smallest_safe_class

            found = self._floor[n_records] = smallest_safe_class(
                self.threshold, self.sampling_fraction(n_records)
            )
        return found

    def acceptable(self, classes: Classes, table: FrequencyTable) -> BoolArray:
        return classes.sizes >= self.floor(table.n_records)

    def failing_records(self, classes: Classes, table: FrequencyTable) -> int:
        return classes.records_in_classes_smaller_than(self.floor(table.n_records))

    def validate(self, table: FrequencyTable) -> None:
        Population.of(self.population_size).check(table.n_records, "input", "records", "risk population_size")
        if self.floor(table.n_records) > table.n_records:
            raise InputError(
                f"risk threshold {self.threshold:g} (measure record) needs classes of at least "
                f"{self.floor(table.n_records):,} records, more than the input's {table.n_records:,}"
            )

    def achieved(self, classes: Classes, table: FrequencyTable, released: BoolArray) -> dict[str, Any]:
        from safeshare.risk.record_risk import class_size_record_risk

        sizes = classes.sizes[released]
        sizes = sizes[sizes > 0]
        top = (
            float(class_size_record_risk(sizes, self.sampling_fraction(table.n_records)).max())
            if sizes.size
            else 0.0
        )
        return {"record": top, "smallest_safe_class": self.floor(table.n_records)}

    def params(self) -> dict[str, Any]:
        return {"measure": "record", "threshold": self.threshold, "population_size": self.population_size}

    def verification_params(self, table: FrequencyTable) -> dict[str, Any]:
        return {**self.params(), "input_records": table.n_records}
