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

:class:`ReleaseRisk` answers the search's "at most t?" at many nodes: a provable lower bound
first (:mod:`safeshare.risk.bounds`), then the estimate, cached by class-size histogram.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from safeshare.errors import InputError
from safeshare.numerics import TOLERANCE
from safeshare.risk.bounds import lower_bound
from safeshare.risk.classes import ClassSizeHistogram
from safeshare.risk.estimators import DEFAULT_ESTIMATOR, ESTIMATORS, make_estimator, requires_table

#: Measures a threshold can bound, with what they mean (for errors and reports).
MEASURES: dict[str, str] = {
    "B": "estimated sample-to-population match rate B",
    "A": "population-to-sample match rate A = J/N",
    "uniques": "estimated share of population uniques",
    "record": "largest per-record probability of correct re-identification",
}


def histogram_estimators() -> list[str]:
    """Names of the estimators that need only class sizes (usable on a release)."""
    return sorted(name for name in ESTIMATORS if not requires_table(name))


def check_estimator(name: str, measure: str = "B") -> str:
    """``name`` if it is a class-size estimator that can give ``measure``, else :class:`InputError`
    naming the usable ones.

    ``uniques`` (the share of the *population* that is unique) needs an estimator whose
    ``population_uniques_`` counts the population's uniques (``uniques_scope = "population"``):
    Benedetti-Franconi's counts only the sample's records that are population unique.
    """
    if name not in ESTIMATORS:
        raise InputError(f"unknown estimator {name!r}: expected one of {', '.join(histogram_estimators())}")
    if requires_table(name):
        raise InputError(
            f"estimator {name!r} needs the frequency table, not class sizes; "
            f"use one of {', '.join(histogram_estimators())}"
        )
    if measure == "uniques" and ESTIMATORS[name].uniques_scope != "population":
        usable = [e for e in histogram_estimators() if ESTIMATORS[e].uniques_scope == "population"]
        raise InputError(
            f"estimator {name!r} estimates how many of the sample's records are population uniques, "
            f"not the population's share the uniques measure bounds; use one of {', '.join(usable)}"
        )
    return name


def _sizes(class_sizes: Sequence[int] | np.ndarray) -> np.ndarray:
    sizes = np.asarray(class_sizes, dtype=np.int64)
    return sizes[sizes > 0]


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
    if measure not in MEASURES or measure == "record":
        raise InputError(f"risk measure {measure!r}: expected one of B, A, uniques")
    if sizes.size == 0:
        return RiskValue(0.0, None, (0.0, 0.0))
    if measure == "A":
        a = float(sizes.size / population_size)
        return RiskValue(a, None, (a, a))
    hist = ClassSizeHistogram.from_sizes(sizes.astype(np.int64))
    given = dict(params or {})
    if not interval:
        given.setdefault("n_bootstrap", 0)
    fitted = make_estimator(check_estimator(estimator, measure), **given).fit(hist, int(population_size))
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


#: Bytes of histogram keys :class:`ReleaseRisk` keeps before it forgets the oldest estimates.
CACHE_BYTES = 64 * 1024**2


class ReleaseRisk:
    """The measure at many releases of one population: the risk model's search calls it per node.

    Same values as :func:`release_risk_estimate`, with savings that never change a decision:

    * estimates are cached by class-size histogram (an estimator sees only the histogram and
      ``N``; nodes, or repeated evaluations of one node, with the same histogram share a fit);
    * :meth:`at_most` first compares a provable lower bound on the estimate with the threshold
      (:mod:`safeshare.risk.bounds`) and rejects without a fit when the bound exceeds it (with
      ``use="upper"`` too: the interval's upper end is at least the estimate);
    * with ``use="upper"``, the estimate without its interval next (no bootstrap): above the
      threshold, the interval's upper end is too (the contract: ``low <= B_ <= high``), and the
      interval is computed only for a release whose estimate is at most the threshold;
    * ``A = J/N`` needs no estimator.

    ``counts`` says what was done: ``nodes`` (decisions of :meth:`at_most` that needed an
    estimate), ``estimates`` (fits run), ``intervals`` (of them, fits with the bootstrap
    interval), ``cached`` (estimates answered from the cache), ``bound_rejections`` (decisions
    the bound made without a fit). ``bound=False`` (no lower bound, no estimate before the
    interval) and ``cache_bytes=0`` switch the savings off (the benchmark's baseline; tests).
    """

    def __init__(
        self,
        measure: str,
        estimator: str,
        population_size: int,
        params: Mapping[str, Any] | None = None,
        use: str = "estimate",
        bound: bool = True,
        cache_bytes: int | None = None,
    ) -> None:
        if measure not in MEASURES or measure == "record":
            raise InputError(f"risk measure {measure!r}: expected one of B, A, uniques")
        if use not in USES:
            raise InputError(f"risk use: expected one of {', '.join(USES)}, got {use!r}")
        self.measure = measure
        self.estimator = check_estimator(estimator, measure) if measure != "A" else estimator
        self.population_size = int(population_size)
        self.params = dict(params or {})
        self.use = use
        self.bound = bound
        self.cache_bytes = CACHE_BYTES if cache_bytes is None else cache_bytes
        self._bound = lower_bound(self.estimator) if measure == "B" and bound else None
        self._cache: OrderedDict[bytes, RiskValue] = OrderedDict()
        self._cache_bytes = 0
        self.counts = {"nodes": 0, "estimates": 0, "intervals": 0, "cached": 0, "bound_rejections": 0}

    def estimate(self, class_sizes: Sequence[int] | np.ndarray, interval: bool | None = None) -> RiskValue:
        """The measure of the released classes, with its interval when ``interval`` (by default:
        when ``use`` is ``upper``). A cached estimate with its interval answers either request."""
        want = self.use == "upper" if interval is None else interval
        sizes = _sizes(class_sizes)
        if sizes.size == 0 or self.measure == "A":
            return release_risk_estimate(sizes, self.population_size, self.measure, self.estimator)
        hist = ClassSizeHistogram.from_sizes(sizes)
        key = hist.sizes.tobytes() + b"|" + hist.classes.tobytes()
        for k in (b"i" + key,) if want else (b"i" + key, b"p" + key):
            found = self._cache.get(k)
            if found is not None:
                self._cache.move_to_end(k)
                self.counts["cached"] += 1
                return found
        value = release_risk_estimate(
            sizes, self.population_size, self.measure, self.estimator, self.params, interval=want
        )
        self.counts["estimates"] += 1
        self.counts["intervals"] += int(want)
        k = (b"i" if want else b"p") + key
        if len(k) <= self.cache_bytes:
            self._cache[k] = value
            self._cache_bytes += len(k)
            while self._cache_bytes > self.cache_bytes:
                old, _ = self._cache.popitem(last=False)
                self._cache_bytes -= len(old)
        return value

    def value(self, class_sizes: Sequence[int] | np.ndarray) -> float | None:
        """The number compared with the threshold (the estimate, or with ``use="upper"`` its
        interval's upper end); ``None`` when there is no estimate."""
        value = self.estimate(class_sizes).bound(self.use)
        return value if value is not None and math.isfinite(value) else None

    def at_most(self, class_sizes: Sequence[int] | np.ndarray, threshold: float) -> bool:
        """Whether :meth:`value` of the released classes is at most ``threshold`` (``+ TOLERANCE``).

        "No estimate" is not at most any threshold. The lower bound decides first when it can,
        then (``use="upper"``) the estimate without its interval: rejections either makes are
        ones the compared value would make.
        """
        sizes = _sizes(class_sizes)
        bound = self._bound
        if bound is not None and sizes.size and bound(sizes, self.population_size) > threshold + TOLERANCE:
            self.counts["bound_rejections"] += 1
            return False
        if self.measure != "A" and sizes.size:  # A = J/N and an empty release need no estimate
            self.counts["nodes"] += 1
        if self.bound and self.use == "upper" and self.measure != "A" and sizes.size:
            point = self.estimate(sizes, interval=False).value
            if point is None or not math.isfinite(point) or point > threshold + TOLERANCE:
                return False
        value = self.value(sizes)
        return value is not None and value <= threshold + TOLERANCE
