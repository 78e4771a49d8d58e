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
risk 0. An estimator without a solution (e.g. Pitman's fit failing) gives ``nan``, which no
threshold accepts: a doubtful estimate never publishes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
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


def release_risk(
    class_sizes: Sequence[int] | np.ndarray,
    population_size: int,
    measure: str = "B",
    estimator: str = DEFAULT_ESTIMATOR,
    params: Mapping[str, Any] | None = None,
) -> float:
    """``measure`` of released classes of ``class_sizes`` drawn from ``population_size`` people.

    ``class_sizes`` may contain zeros (empty class slots), which are ignored.
    """
    sizes = np.asarray(class_sizes, dtype=np.float64)
    sizes = sizes[sizes > 0]
    if measure not in MEASURES:
        raise InputError(f"risk measure {measure!r}: expected one of {', '.join(MEASURES)}")
    if sizes.size == 0:
        return 0.0
    if measure == "A":
        return float(sizes.size / population_size)
    hist = ClassSizeHistogram.from_sizes(sizes.astype(np.int64))
    fitted = make_estimator(check_estimator(estimator), **dict(params or {})).fit(hist, int(population_size))
    if measure == "B":
        value = float(fitted.B_)
    else:
        share = fitted.population_uniqueness_
        value = float("nan") if share is None else float(share)
    return value if math.isfinite(value) else float("nan")
