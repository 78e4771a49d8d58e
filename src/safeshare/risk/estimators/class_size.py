"""Estimators of B from class sizes alone: a model's posterior of ``F`` given ``f``, and its interval.

The population-uniqueness models (Pitman, Zayatz, SNB) and Benedetti-Franconi's negative
binomial each give, for a sample class of ``f`` records, a posterior distribution of its
population size ``F``. With ``c_f`` sample classes of size ``f``:

    B^ = (1/n) sum_f c_f f E[1/F | f].

**Interval** (95 %, ``B_interval_``). Two sources of error, taken as independent and
added in variance on the log scale (where the parameters act about linearly -- Pitman's B
scales like ``N^(alpha - 1)`` -- which keeps the interval inside ``(0, 1]`` and right-skewed
for a small B):

* *prediction*: given the model, the classes' ``F_j`` are independent draws from their
  posteriors, so ``Var(B | f) = (1/n^2) sum_f c_f f^2 Var(1/F | f)``, with
  ``Var(1/F | f) = E[1/F^2 | f] - E[1/F | f]^2`` from the same posterior;
* *sampling*: the nonparametric bootstrap over the sample's classes (``n_bootstrap``
  resamples of the ``J`` classes with replacement: the histogram's class counts drawn from a
  multinomial), the estimator refitted and ``B^*`` recomputed on each resample: how much the
  estimate would move with another sample. Models without fitted parameters
  (Benedetti-Franconi's ``p = n/N``) have only the first part.

``s^2 = Var_prediction / B^2 + Var(ln B^*)``; interval ``B^ exp(±1.96 s)``, clipped to
``[1/N, 1]``. The bootstrap is seeded (``random_state``, default 0) so that one histogram
always gets one interval: the risk privacy model's search and its verifier must agree
(``use: upper``).

What it does not contain is the model's own bias on data that are not drawn from it. Measured
by coverage (docs/risk.md, "Intervals"): on populations drawn from the model it covers B at
the stated rate; on Adult it covers Pitman's error at sampling fractions of 0.3 and more, but
less often below (Pitman overestimates there by about 10 % of B, more than the interval's
half-width).

At ``N = n`` (the sample is the population) every such model's posterior is ``F = f``: B is
exact, ``J/n``, and so is its interval.
"""

from __future__ import annotations

import functools
import math
import warnings
from abc import abstractmethod
from typing import Any, ClassVar

import numpy as np

from safeshare.risk.classes import ClassSizeHistogram
from safeshare.risk.estimators.base import (
    NoEstimate,
    RiskEstimator,
    Sample,
    check_non_negative_int,
    check_seed,
    log_scale_interval,
    numeric_warning_types,
)

DEFAULT_BOOTSTRAP = 50


@functools.cache
def _blas_controller() -> Any:
    """One threadpoolctl controller per process (creating one scans the loaded libraries: ms;
    limiting with it: microseconds)."""
    from threadpoolctl import ThreadpoolController  # type: ignore[import-untyped]

    return ThreadpoolController()


class ClassSizeEstimator(RiskEstimator):
    """Per class size ``f`` the model's ``E[1/F | f]`` and ``E[1/F^2 | f]``; B and its interval.

    Subclasses implement :meth:`_fit_model` (the fitted parameters, or :class:`NoEstimate`)
    and :meth:`_moments` (the two posterior moments per size of a histogram, given a model).
    """

    requires_table = False
    #: False for models whose parameters are not fitted (no parameter bootstrap).
    fitted_parameters: ClassVar[bool] = True

    n_bootstrap: int
    random_state: int | None

    def _validate(self) -> None:
        check_non_negative_int(self.n_bootstrap, f"{self.name} n_bootstrap")
        check_seed(self.random_state, f"{self.name} random_state")

    @abstractmethod
    def _fit_model(self, hist: ClassSizeHistogram, N: int, start: Any = None) -> Any:
        """The fitted model of ``hist`` (raise :class:`NoEstimate` when there is none); ``start``:
        the model of the full sample, a starting point for the bootstrap's refits."""

    @abstractmethod
    def _moments(self, model: Any, hist: ClassSizeHistogram, N: int) -> tuple[np.ndarray, np.ndarray]:
        """``E[1/F | f]`` and ``E[1/F^2 | f]`` for every size ``f`` of ``hist`` under ``model``."""

    def _use_model(self, model: Any, hist: ClassSizeHistogram, N: int) -> None:
        """Store the fitted model's attributes (``population_uniques_``, parameters)."""

    def _point(self, model: Any, hist: ClassSizeHistogram, N: int) -> tuple[float, np.ndarray, np.ndarray]:
        """``B`` of ``hist`` under ``model``, with the per-size moments."""
        m1, m2 = self._moments(model, hist, N)
        if not (np.all(np.isfinite(m1)) and np.all(np.isfinite(m2))):
            raise NoEstimate(f"the {self.name} posterior sums did not converge")
        weight = hist.sizes * hist.classes
        return float((weight * m1).sum() / hist.n), m1, m2

    def _fit(self, sample: Sample, hist: ClassSizeHistogram, N: int) -> None:
        # The optimizers' BLAS calls are on 2-vectors: threads only contend (10x slower measured
        # on a loaded 2-core machine).
        with _blas_controller().limit(limits=1, user_api="blas"):
            self._fit_limited(hist, N)

    def _fit_limited(self, hist: ClassSizeHistogram, N: int) -> None:
        n = hist.n
        if n == N:  # the sample is the population: F = f
            self.B_ = hist.n_classes / n
            self.B_interval_ = (self.B_, self.B_)
            self.population_uniques_ = float(hist.count(1))
            self.interval_method_ = "exact (the sample is the population)"
            return
        model = self._fit_model(hist, N)
        self._use_model(model, hist, N)
        B, m1, m2 = self._point(model, hist, N)
        self.B_ = B
        var_prediction = float((hist.classes * hist.sizes**2 * np.maximum(m2 - m1 * m1, 0.0)).sum() / n**2)
        var_log = var_prediction / B**2  # on the log scale (delta method): B > 0
        method = "model prediction"
        if self.fitted_parameters and self.n_bootstrap > 0:
            draws = self._bootstrap(hist, N, model)
            if len(draws) >= max(2, self.n_bootstrap // 2):
                var_log += float(np.var(np.log(draws), ddof=1))
                method = f"model prediction + a {len(draws)}-resample bootstrap over the sample's classes"
            else:
                method = "model prediction (the bootstrap failed on most resamples)"
        self.B_interval_ = log_scale_interval(B, var_log)
        self.interval_method_ = method

    def _bootstrap(self, hist: ClassSizeHistogram, N: int, fitted: Any) -> list[float]:
        """B^* of each resample of the classes, the estimator refitted on it (a resample whose fit
        fails or warns is dropped)."""
        numeric = numeric_warning_types()
        rng = np.random.default_rng(self.random_state)
        J = hist.n_classes
        p = hist.classes / J
        out = []
        for _ in range(self.n_bootstrap):
            counts = rng.multinomial(J, p)
            keep = counts > 0
            resample = ClassSizeHistogram(hist.sizes[keep], counts[keep])
            M = max(N, resample.n)
            with warnings.catch_warnings(record=True) as caught:  # a resample's warning drops it only
                warnings.simplefilter("always")
                try:
                    model = self._fit_model(resample, M, fitted)
                    B, _, _ = self._point(model, resample, M)
                except (NoEstimate, ArithmeticError):
                    continue
            if math.isfinite(B) and B > 0 and not any(issubclass(w.category, numeric) for w in caught):
                out.append(B)
        return out
