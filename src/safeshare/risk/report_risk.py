"""The risk section of every ``safeshare anonymize`` report: input and release side by side.

Computed on class sizes only (the input's classes on the raw quasi-identifiers, the release's
released classes), never on a suppressed record's values; cheap (one class-size estimator,
no copula). For both sides: prosecutor risk (``1/f``: max, mean ``J/n``, share of records
above the threshold), ``A = J/N``, journalist and marketer risk, ``B``, and the default
estimator's ``B`` (the one our evaluation recommends at the input's sampling fraction,
:func:`~safeshare.risk.spread.recommended_estimator`: Pitman, the project's
:data:`~safeshare.risk.estimators.DEFAULT_ESTIMATOR`, in every band today).

Population:

* no ``population_size`` configured: the input is taken as the whole population (N = its
  record count). Then every population class size is known exactly: the input's classes are
  the population's, and a released class is a whole class of the node's classes over the
  input (suppression removes whole classes), so ``F = f`` for it, and B, journalist and
  marketer risk are exact;
* ``population_size: N`` configured: the data are a sample of N people; the journalist and
  marketer risks (ARX's definition: both have mean B) are the estimator's B, flagged
  ``estimated``.

Beside the measures, for the views (the workbench's Risk screen shows this section, nothing
recomputed): each side's ``drivers``, the classes that drive its risk grouped by ``(f, F)`` with
their contribution to B (:func:`~safeshare.risk.drivers.risk_drivers`), and the input's
``estimators``, every class-size estimator's B on the input's classes with the same N
(:func:`~safeshare.risk.spread.estimator_spread`: the release's are the certificate's
``estimators``, computed once there).

Every estimate follows the estimators' contract (:mod:`safeshare.risk.estimators.base`):
``B_estimate: {name: B or null}``, ``B_interval: {name: [low, high] or null}`` (95 %) and,
when there is no estimate, ``B_no_estimate: {name: reason}``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from safeshare.risk.classes import ClassSizeHistogram
from safeshare.risk.drivers import risk_drivers
from safeshare.risk.estimators import DEFAULT_ESTIMATOR, make_estimator
from safeshare.risk.estimators.base import RiskEstimator
from safeshare.risk.measures import DEFAULT_THRESHOLD, risk_measures
from safeshare.risk.population import Population
from safeshare.risk.sensitivity import ReleasedClasses
from safeshare.risk.spread import estimator_spread, recommended_estimator


def _estimate(sizes: np.ndarray, N: int, estimator: str) -> RiskEstimator:
    return make_estimator(estimator).fit(ClassSizeHistogram.from_sizes(sizes), N)


def side(
    sizes: Sequence[int] | np.ndarray,
    population_size: int,
    exact_population: bool,
    estimator: str = DEFAULT_ESTIMATOR,
    threshold: float = DEFAULT_THRESHOLD,
) -> dict[str, Any] | None:
    """The measures of one side (input or release) of ``sizes`` classes; ``None`` when empty."""
    f = np.asarray(sizes, dtype=np.int64)
    f = f[f > 0]
    if f.size == 0:
        return None
    fitted = _estimate(f, population_size, estimator)
    estimate = fitted.B_
    if exact_population:
        doc = risk_measures(f, f, population_size, threshold).to_dict()
        doc["estimated"] = False
    else:
        doc = risk_measures(f, None, population_size, threshold).to_dict()
        doc["B"] = estimate
        doc["journalist"] = {"mean": estimate}
        doc["marketer"] = estimate
        doc["estimated"] = True
    doc["B_estimate"] = {estimator: estimate}
    doc["B_interval"] = {estimator: None if fitted.B_interval_ is None else list(fitted.B_interval_)}
    if estimate is None:
        doc["B_no_estimate"] = {estimator: fitted.B_reason_}
    doc["drivers"] = risk_drivers(f, f if exact_population else None)
    return doc


def input_estimators(
    classes: ReleasedClasses, population_size: int, threshold: float, estimator: str
) -> dict[str, Any] | None:
    """The input side's ``estimators``: every class-size estimator's B on the input's classes at
    N (:func:`~safeshare.risk.spread.estimator_spread`, as the certificate's are of the release);
    ``None`` without records."""
    if classes.n == 0:
        return None
    return estimator_spread(classes, population_size, threshold, estimator)


def risk_section(
    input_sizes: Sequence[int] | np.ndarray,
    release_sizes: Sequence[int] | np.ndarray,
    population_size: int | None,
    estimator: str | None = None,
    threshold: float = DEFAULT_THRESHOLD,
) -> dict[str, Any]:
    """report.json's ``risk``: ``input`` and ``release`` measures, the population and how it is known.
    ``estimator``: default the one our evaluation recommends at the input's sampling fraction
    (:func:`~safeshare.risk.spread.recommended_estimator`, ``choice.default_estimator``)."""
    n_input = int(np.asarray(input_sizes, dtype=np.int64).sum())
    population = Population.of(population_size)
    exact = population.whole_input
    N = population.resolve(n_input)
    if estimator is None:
        estimator = recommended_estimator(n_input, N)
    doc: dict[str, Any] = {
        "population_size": N,
        "population": "the input, taken as the whole population (exact risks)"
        if exact
        else "configured population_size (journalist and marketer risks estimated)",
        "estimator": estimator,
        "threshold": threshold,
        "input": side(input_sizes, N, exact, estimator, threshold),
        "release": side(release_sizes, N, exact, estimator, threshold),
    }
    if doc["input"] is not None:
        doc["input"]["estimators"] = input_estimators(
            ReleasedClasses.of(input_sizes), N, threshold, estimator
        )
    return doc
