"""The re-identification risk of a set of released classes, from class sizes and N only.

The measure behind the ``risk`` privacy model (:mod:`safeshare.models.risk`) and its
independent re-check (:mod:`safeshare.verify.risk`). A release of ``n`` records in ``J``
classes of sizes ``f_1..f_J`` is taken as a sample of a population of ``N`` people:

* ``A = J / N``, the population-to-sample match rate (exact: no model needed);
* ``B``, the sample-to-population match rate ``(1/n) sum_k 1/F_k``, estimated by one of the
  class-size estimators of :mod:`safeshare.risk.estimators` (the project's default,
  :data:`~safeshare.risk.estimators.DEFAULT_ESTIMATOR`, unless told otherwise);
* ``uniques``, the estimated share of the population that is unique on the QIs
  (``population_uniques_ / N``).

Only estimators that work on a class-size histogram are accepted (``requires_table =
False``): a release's classes are generalized values, and the copula and entropy estimators
would need the released table re-coded at every node of the search. An empty release has
risk 0.

:func:`release_risk_estimate` returns a :class:`RiskValue` that follows the estimators'
contract (:mod:`safeshare.risk.estimators.base`): the value (``B`` always in ``[1/N, 1]``),
or ``None`` with the reason -- a doubtful estimate, which no threshold accepts, so it never
publishes -- and the 95 % interval when asked for (``interval=True``: the ``use: upper`` of
the risk privacy model, whose bound is the interval's upper end). :func:`release_risk` is the
same as a float (``nan`` for no estimate).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from safeshare.errors import InputError
from safeshare.risk.classes import ClassSizeHistogram
from safeshare.risk.estimators import DEFAULT_ESTIMATOR, ESTIMATORS, make_estimator

#: Measures a threshold can bound, with what they mean (for errors and reports).
MEASURES: dict[str, str] = {
    "B": "estimated sample-to-population match rate B",
    "A": "population-to-sample match rate A = J/N",
    "uniques": "estimated share of population uniques",
}


def histogram_estimators() -> list[str]:
    """Names of the estimators that need only class sizes (usable on a release)."""
    return sorted(name for name, cls in ESTIMATORS.items() if not cls.requires_table)


def check_estimator(name: str) -> str:
    """``name`` if it is a class-size estimator, else :class:`InputError` naming the usable ones."""
    if name not in ESTIMATORS:
        raise InputError(f"unknown estimator {name!r}: expected one of {', '.join(histogram_estimators())}")
    if ESTIMATORS[name].requires_table:
        raise InputError(
            f"estimator {name!r} needs the frequency table, not class sizes; "
            f"use one of {', '.join(histogram_estimators())}"
        )
    return name


#: What a threshold bounds: the estimate itself, or the upper end of its 95 % interval.
USES: dict[str, str] = {
    "estimate": "the estimate",
    "upper": "the upper end of the estimate's 95 % interval",
}


@dataclass(frozen=True)
class RiskValue:
    """A release's risk measure: ``value`` (``None``: no estimate, ``reason`` says why) and, for
    ``B`` asked with ``interval=True``, its 95 % ``interval``."""

    value: float | None
    reason: str | None = None
    interval: tuple[float, float] | None = None

    def bound(self, use: str = "estimate") -> float | None:
        """The number a threshold is compared with: the value, or the interval's upper end
        (``None`` when there is none: such a release does not qualify)."""
        if use == "upper":
            return None if self.value is None or self.interval is None else self.interval[1]
        return self.value


def release_risk_estimate(
    class_sizes: Sequence[int] | np.ndarray,
    population_size: int,
    measure: str = "B",
    estimator: str = DEFAULT_ESTIMATOR,
    params: Mapping[str, Any] | None = None,
    interval: bool = False,
) -> RiskValue:
    """``measure`` of released classes of ``class_sizes`` drawn from ``population_size`` people.

    ``class_sizes`` may contain zeros (empty class slots), which are ignored. Without
    ``interval`` the estimator skips its bootstrap (``n_bootstrap=0``, unless ``params`` says
    otherwise): the search only needs the value.
    """
    sizes = np.asarray(class_sizes, dtype=np.float64)
    sizes = sizes[sizes > 0]
    if measure not in MEASURES:
        raise InputError(f"risk measure {measure!r}: expected one of {', '.join(MEASURES)}")
    if sizes.size == 0:
        return RiskValue(0.0, None, (0.0, 0.0))
    if measure == "A":
        a = float(sizes.size / population_size)
        return RiskValue(a, None, (a, a))
    hist = ClassSizeHistogram.from_sizes(sizes.astype(np.int64))
    given = dict(params or {})
    if not interval:
        given.setdefault("n_bootstrap", 0)
    fitted = make_estimator(check_estimator(estimator), **given).fit(hist, int(population_size))
    if measure == "B":
        return RiskValue(fitted.B_, fitted.B_reason_, fitted.B_interval_ if interval else None)
    share = fitted.population_uniqueness_
    if share is None or not math.isfinite(share):
        why = fitted.B_reason_ or f"the {estimator} model gives no estimate of the population uniques"
        return RiskValue(None, why)
    return RiskValue(float(share))


def release_risk(
    class_sizes: Sequence[int] | np.ndarray,
    population_size: int,
    measure: str = "B",
    estimator: str = DEFAULT_ESTIMATOR,
    params: Mapping[str, Any] | None = None,
) -> float:
    """:func:`release_risk_estimate`'s value as a float, ``nan`` when there is no estimate."""
    value = release_risk_estimate(class_sizes, population_size, measure, estimator, params).value
    return float("nan") if value is None else float(value)
