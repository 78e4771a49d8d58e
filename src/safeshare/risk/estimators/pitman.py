"""Pitman model of population uniqueness (Hoshino 2001; ARX ``ModelPitman``).

The partition of the sample into classes is a Pitman (two-parameter
Ewens) partition with ``theta > -alpha``, ``0 <= alpha < 1``, fitted by maximum
likelihood on the sample's class sizes (``c_s`` classes of size ``s``, ``J`` classes):

    log L = sum_{i=1}^{J-1} log(theta + i alpha) - sum_{i=1}^{n-1} log(theta + i)
            + sum_s c_s sum_{l=1}^{s - 1} log(l - alpha)
          = (J-1) log alpha + lnG(theta/alpha + J) - lnG(theta/alpha + 1)
            - [lnG(theta + n) - lnG(theta + 1)] + sum_s c_s [lnG(s - alpha) - lnG(1 - alpha)],

each bracket a difference ``lnG(x + d) - lnG(x)`` computed stably
(:func:`~._sums.log_gamma_ratio`), so one evaluation costs O(distinct sizes); maximized by
L-BFGS-B with the analytic gradient (digamma differences) over ``(logit alpha,
log(theta + alpha))``. No maximum -- an all-unique sample (``theta -> infinity``), ``alpha ->
1``, an optimizer that does not converge -- is *no estimate*. One class (``J = 1``): the
likelihood is largest as ``theta -> -alpha``, a partition that never opens a new class: the
population is that class, ``F = N``.

Population uniques (Hoshino): ``Gamma(theta+1)/Gamma(theta+alpha) N^alpha``.
B: under the Pitman urn a class holding ``f`` of the ``n`` sample records receives
``Y = F - f ~ BetaBinomial(N - n, f - alpha, theta + n - f + alpha)`` of the other ``N - n``
people, so ``E[1/F | f] = sum_y P(y) / (f + y)``: a sum over up to ``N - n`` terms, computed in
O(1) per class size by :func:`~._sums.posterior_moments` (log weights
``lnG(y + a) - lnG(y + 1) + lnG(M - y + b) - lnG(M - y + 1)``, exact to about 1e-9 at any N).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy import optimize, special

from safeshare.risk.classes import ClassSizeHistogram
from safeshare.risk.estimators import register
from safeshare.risk.estimators._sums import (
    digamma_diff1,
    log_gamma_ratio,
    log_gamma_ratio1,
    posterior_moments,
)
from safeshare.risk.estimators.base import NoEstimate
from safeshare.risk.estimators.class_size import DEFAULT_BOOTSTRAP, ClassSizeEstimator

#: log(theta + alpha) beyond which the fit is refused (theta > 5e21, far beyond any population):
#: an all-unique sample drives theta to infinity.
THETA_LOG_LIMIT = 50.0
#: logit(alpha) range searched: alpha in [2e-9, 1 - 2e-9]; alpha at the upper end is no fit.
ALPHA_LOGIT_LIMIT = 20.0


@dataclass(frozen=True)
class PitmanFit:
    theta: float
    alpha: float
    one_class: bool = False


def pitman_log_likelihood(hist: ClassSizeHistogram, theta: float, alpha: float) -> float:
    """``log L(theta, alpha)`` of the module docstring (up to the partition's constant)."""
    n, J = hist.n, hist.n_classes
    s = theta + alpha
    first = (J - 1) * math.log(alpha) + log_gamma_ratio1(s / alpha, J - 1) if J > 1 else 0.0
    second = log_gamma_ratio1(theta + 1, n - 1)
    third = float((hist.classes * log_gamma_ratio(1 - alpha, hist.sizes - 1.0)).sum())
    return first - second + third


def _objective(hist: ClassSizeHistogram) -> Callable[[np.ndarray], tuple[float, np.ndarray]]:
    """``x -> (-log L, its gradient)`` in ``x = (logit alpha, log(theta + alpha))``."""
    n, J = hist.n, hist.n_classes
    classes = hist.classes.astype(float)
    sizes = hist.sizes - 1.0

    def objective(x: np.ndarray) -> tuple[float, np.ndarray]:
        alpha = 1.0 / (1.0 + math.exp(-float(x[0])))
        s = math.exp(float(x[1]))
        theta = s - alpha
        first = (J - 1) * math.log(alpha) + log_gamma_ratio1(s / alpha, J - 1)
        second = log_gamma_ratio1(theta + 1, n - 1)
        # 1 - alpha < 1: lnG(s - alpha) - lnG(1 - alpha) loses nothing computed directly
        third = float(classes @ special.gammaln(sizes + (1 - alpha))) - J * math.lgamma(1 - alpha)
        ll = first - second + third
        if not math.isfinite(ll):
            return math.inf, np.zeros(2)
        # T1 = sum_i 1/(theta + i alpha); (J-1) - theta T1 = alpha sum_i i/(theta + i alpha)
        t1 = digamma_diff1(s / alpha, J - 1) / alpha
        d_theta = t1 - digamma_diff1(theta + 1, n - 1)
        d_third = J * float(special.digamma(1 - alpha)) - float(
            classes @ special.digamma(sizes + (1 - alpha))
        )
        d_x0 = (1 - alpha) * ((J - 1) - theta * t1) + alpha * (1 - alpha) * (d_third - d_theta)
        return -ll, np.array([-d_x0, -d_theta * s])

    return objective


#: The fits of the last histograms fitted without a start (the fit does not depend on N): the
#: report's sensitivity band and its crossing ask B of one release at about 20 values of N
#: (issue 36: the refits were a third of a small run's time). A fit is a pure function of the
#: histogram; the key is its sizes and counts. At most ``_FIT_CACHE_SIZE`` are kept.
_FITS: dict[tuple[str, bytes, str, bytes], PitmanFit | str] = {}
_FIT_CACHE_SIZE = 64


def pitman_fit(hist: ClassSizeHistogram, start: PitmanFit | None = None) -> PitmanFit:
    """The ML ``(theta, alpha)``; :class:`NoEstimate` when the likelihood has no maximum.

    ``start``: a fit of a similar histogram (the bootstrap's), tried first, alone when it converges.
    Without one, the fit of a histogram fitted before is that fit (or that refusal), kept."""
    if start is not None:
        return _pitman_fit(hist, start)
    sizes, classes = np.ascontiguousarray(hist.sizes), np.ascontiguousarray(hist.classes)
    key = (sizes.dtype.str, sizes.tobytes(), classes.dtype.str, classes.tobytes())
    found = _FITS.get(key)
    if found is None:
        try:
            found = _pitman_fit(hist, None)
        except NoEstimate as exc:
            found = str(exc)
        if len(_FITS) >= _FIT_CACHE_SIZE:
            _FITS.pop(next(iter(_FITS), key), None)
        _FITS[key] = found
    if isinstance(found, str):
        raise NoEstimate(found)
    return found


def _pitman_fit(hist: ClassSizeHistogram, start: PitmanFit | None) -> PitmanFit:
    n, J = hist.n, hist.n_classes
    if J == 1:
        return PitmanFit(theta=0.0, alpha=0.0, one_class=True)
    if n == J:
        raise NoEstimate(
            "every sample class is unique: the Pitman likelihood grows without bound (theta -> infinity)"
        )
    objective = _objective(hist)
    bounds = [(-ALPHA_LOGIT_LIMIT, ALPHA_LOGIT_LIMIT), (-40.0, THETA_LOG_LIMIT)]
    best = None
    starts = [(0.0, math.log(J)), (-2.0, math.log(max(J / 2, 1.0))), (2.0, 0.0)]
    if start is not None and not start.one_class and 0 < start.alpha < 1:
        starts.insert(0, (float(special.logit(start.alpha)), math.log(start.theta + start.alpha)))
    for x0 in starts:
        if best is not None and best.success and np.abs(best.jac).max() <= 1e-6 * max(1.0, abs(best.fun)):
            break  # converged: the likelihood is unimodal in practice (tested against all starts)
        with np.errstate(all="ignore"):
            res = optimize.minimize(
                objective,
                np.array(x0),
                jac=True,
                method="L-BFGS-B",
                bounds=bounds,
                options={"maxiter": 500, "ftol": 1e-14, "gtol": 1e-9},
            )
        if np.isfinite(res.fun) and (best is None or res.fun < best.fun):
            best = res
    if best is None:
        raise NoEstimate("the Pitman likelihood could not be evaluated at any starting point")
    logit_alpha, log_s = (float(v) for v in best.x)
    if log_s >= THETA_LOG_LIMIT - 1e-6:
        raise NoEstimate("the Pitman fit diverged (theta -> infinity): too few repeated classes")
    if logit_alpha >= ALPHA_LOGIT_LIMIT - 1e-6:
        raise NoEstimate("the Pitman fit diverged (alpha -> 1)")
    if not best.success and np.abs(best.jac).max() > 1e-4 * max(1.0, abs(best.fun)):
        raise NoEstimate(f"the Pitman fit did not converge ({best.message})")
    alpha = float(special.expit(logit_alpha))
    return PitmanFit(theta=math.exp(log_s) - alpha, alpha=alpha)


def pitman_moments(fit: PitmanFit, hist: ClassSizeHistogram, N: int) -> tuple[np.ndarray, np.ndarray]:
    """``E[1/F | f]``, ``E[1/F^2 | f]`` for every size of ``hist`` (the Beta-binomial urn)."""
    f = hist.sizes.astype(float)
    n = hist.n
    M = float(N - n)
    if M == 0:
        return 1.0 / f, 1.0 / f**2
    if fit.one_class:  # no new class ever opens: the class is the whole population
        return np.full(f.shape, 1.0 / N), np.full(f.shape, 1.0 / N**2)
    a = f - fit.alpha
    b = fit.theta + n - f + fit.alpha

    def logw(r: np.ndarray, y: np.ndarray) -> np.ndarray:
        out: np.ndarray = log_gamma_ratio(y + 1, a[r] - 1) + log_gamma_ratio(M - y + 1, b[r] - 1)
        return out

    m1, m2 = posterior_moments(logw, np.zeros(f.size), np.full(f.size, M), f)
    return m1, m2


@register
class PitmanEstimator(ClassSizeEstimator):
    """Hoshino's Pitman-partition model of the sample's class sizes."""

    name = "pitman"

    def __init__(self, n_bootstrap: int = DEFAULT_BOOTSTRAP, random_state: int | None = 0) -> None:
        self.n_bootstrap = n_bootstrap
        self.random_state = random_state

    def _fit_model(self, hist: ClassSizeHistogram, N: int, start: PitmanFit | None = None) -> PitmanFit:
        return pitman_fit(hist, start)

    def _moments(self, model: PitmanFit, hist: ClassSizeHistogram, N: int) -> tuple[np.ndarray, np.ndarray]:
        return pitman_moments(model, hist, N)

    def _use_model(self, model: PitmanFit, hist: ClassSizeHistogram, N: int) -> None:
        self.theta_, self.alpha_ = model.theta, model.alpha
        if model.one_class:
            self.population_uniques_ = 0.0
            return
        s = model.theta + model.alpha
        log_u = float(log_gamma_ratio(s, 1 - model.alpha)) + model.alpha * math.log(N)
        self.population_uniques_ = math.exp(log_u) if log_u < 700 else math.inf
