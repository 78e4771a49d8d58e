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
risk 0. An estimator without a solution (e.g. Pitman's fit failing; ``B_ = None`` in the
estimate contract) gives ``nan`` here and ``None`` from :class:`ReleaseRisk`, which no threshold
accepts: a doubtful estimate never publishes.

:func:`release_risk` computes one value (the verifier's path); :class:`ReleaseRisk` answers the
search's "at most t?" at many nodes, with a provable lower bound first and a cache by histogram.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from safeshare.errors import InputError
from safeshare.numerics import TOLERANCE
from safeshare.risk.bounds import lower_bound
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


def _estimate(fitted: Any, measure: str) -> float | None:
    """The fitted estimator's ``measure`` (``B`` or ``uniques``), ``None`` for "no estimate".

    The estimate contract: ``B_`` is a float or ``None``; a value that is not a finite number
    (``nan`` from an estimator that predates the contract, or an infinity) is no estimate
    either, which no threshold accepts (``-inf`` would pass every one).
    """
    raw = fitted.B_ if measure == "B" else fitted.population_uniqueness_
    if raw is None:
        return None
    value = float(raw)
    return value if math.isfinite(value) else None


def _sizes(class_sizes: Sequence[int] | np.ndarray) -> np.ndarray:
    sizes = np.asarray(class_sizes, dtype=np.int64)
    return sizes[sizes > 0]


def release_risk(
    class_sizes: Sequence[int] | np.ndarray,
    population_size: int,
    measure: str = "B",
    estimator: str = DEFAULT_ESTIMATOR,
    params: Mapping[str, Any] | None = None,
) -> float:
    """``measure`` of released classes of ``class_sizes`` drawn from ``population_size`` people.

    ``class_sizes`` may contain zeros (empty class slots), which are ignored. ``nan`` when the
    estimator gives no estimate.
    """
    if measure not in MEASURES:
        raise InputError(f"risk measure {measure!r}: expected one of {', '.join(MEASURES)}")
    sizes = _sizes(class_sizes)
    if sizes.size == 0:
        return 0.0
    if measure == "A":
        return float(sizes.size / population_size)
    hist = ClassSizeHistogram.from_sizes(sizes)
    fitted = make_estimator(check_estimator(estimator), **dict(params or {})).fit(hist, int(population_size))
    value = _estimate(fitted, measure)
    return float("nan") if value is None else value


#: Bytes of histogram keys :class:`ReleaseRisk` keeps before it forgets the oldest estimates.
CACHE_BYTES = 64 * 1024**2


class ReleaseRisk:
    """The measure at many releases of one population: the risk model's search calls it per node.

    Same values as :func:`release_risk`, with three savings that never change a decision:

    * estimates are cached by class-size histogram (an estimator sees only the histogram and
      ``N``; nodes, or repeated evaluations of one node, with the same histogram share a fit);
    * :meth:`at_most` first compares a provable lower bound on the estimate with the threshold
      (:mod:`safeshare.risk.bounds`) and rejects without a fit when the bound exceeds it;
    * ``A = J/N`` needs no estimator.

    ``counts`` says what was done: ``nodes`` (decisions of :meth:`at_most` that needed an
    estimate), ``estimates`` (fits run), ``cached`` (estimates answered from the cache),
    ``bound_rejections`` (decisions the bound made without a fit).
    """

    def __init__(
        self,
        measure: str,
        estimator: str,
        population_size: int,
        params: Mapping[str, Any] | None = None,
        bound: bool = True,
        cache_bytes: int | None = None,
    ) -> None:
        if measure not in MEASURES:
            raise InputError(f"risk measure {measure!r}: expected one of {', '.join(MEASURES)}")
        self.measure = measure
        self.estimator = check_estimator(estimator) if measure != "A" else estimator
        self.population_size = int(population_size)
        self.params = dict(params or {})
        self.bound = bound
        self.cache_bytes = CACHE_BYTES if cache_bytes is None else cache_bytes
        self._bound = lower_bound(self.estimator) if measure == "B" and bound else None
        self._cache: OrderedDict[bytes, float | None] = OrderedDict()
        self._cache_bytes = 0
        self.counts = {"nodes": 0, "estimates": 0, "cached": 0, "bound_rejections": 0}

    def value(self, class_sizes: Sequence[int] | np.ndarray) -> float | None:
        """The measure of the released classes, ``None`` when the estimator gives no estimate."""
        sizes = _sizes(class_sizes)
        if sizes.size == 0:
            return 0.0
        if self.measure == "A":
            return float(sizes.size / self.population_size)
        hist = ClassSizeHistogram.from_sizes(sizes)
        key = hist.sizes.tobytes() + b"|" + hist.classes.tobytes()
        if key in self._cache:
            self._cache.move_to_end(key)
            self.counts["cached"] += 1
            return self._cache[key]
        fitted = make_estimator(self.estimator, **self.params).fit(hist, self.population_size)
        value = _estimate(fitted, self.measure)
        self.counts["estimates"] += 1
        if len(key) > self.cache_bytes:
            return value
        self._cache[key] = value
        self._cache_bytes += len(key)
        while self._cache_bytes > self.cache_bytes:
            old, _ = self._cache.popitem(last=False)
            self._cache_bytes -= len(old)
        return value

    def at_most(self, class_sizes: Sequence[int] | np.ndarray, threshold: float) -> bool:
        """Whether the measure of the released classes is at most ``threshold`` (``+ TOLERANCE``).

        "No estimate" is not at most any threshold. The lower bound decides first when it can
        (a rejection it makes is one the estimate would make).
        """
        sizes = _sizes(class_sizes)
        bound = self._bound
        if bound is not None and sizes.size and bound(sizes, self.population_size) > threshold + TOLERANCE:
            self.counts["bound_rejections"] += 1
            return False
        if self.measure != "A" and sizes.size:  # A = J/N and an empty release need no estimate
            self.counts["nodes"] += 1
        value = self.value(sizes)
        return value is not None and value <= threshold + TOLERANCE
