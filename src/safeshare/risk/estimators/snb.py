"""Slide negative binomial (SNB) model of population uniqueness (Chen & Keller-McNulty 1998;
ARX ``ModelSNB``).

Population classes: ``K`` non-empty classes with ``F - 1 ~ NegBin(a, b)``
(``P(F = 1) = b^a``); a class shows ``f ~ Binomial(F, pi)`` records. With
``d = (1 - b)(1 - pi)`` the expected numbers of sample classes of size 1 and 2 are
(derived from the NB generating function; tested against direct sums)

    E c_1 = K pi (b/(1-d))^a (1 + a d/(1-d)),
    E c_2 = K pi^2/2 a (1-b) b^a (1-d)^(-(a+2)) (2 - (1-a) d).

``K`` is Shlosser's estimate ``J + c_1 sum_i (1-pi)^i c_i / sum_i i pi (1-pi)^(i-1) c_i``
(Haas et al. 1995); ``(a, b)`` solve the two moment equations (MINPACK's hybrid method from
four starting points; no root within 1e-6 is *no estimate*, said as such); population
uniques ``= K b^a``. ARX's second equation multiplies by ``(1-d)^(a+2)`` where the
derivation divides by it; we follow the derivation (the test checks it by direct sums).

B: ``E[1/F | f]`` under the posterior ``P(F | f) ∝ NB(F - 1; a, b) Binomial(f; F, pi)``; in
``y = F - f`` its log weight is ``lnG(f + y - 1 + a) - lnG(f + y) + lnG(f + y + 1) - lnG(y + 1)
+ y ln d``, summed over ``y`` in ``[0, N - f]`` in O(1) per class size
(:func:`~._sums.posterior_moments`) where the plain sum cost ``O(N / n)`` per size (10 minutes
at N = 10^6, issue 21).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import optimize

from safeshare.risk.classes import ClassSizeHistogram
from safeshare.risk.estimators import register
from safeshare.risk.estimators._sums import log_gamma_ratio, posterior_moments
from safeshare.risk.estimators.base import NoEstimate
from safeshare.risk.estimators.class_size import DEFAULT_BOOTSTRAP, ClassSizeEstimator


@dataclass(frozen=True)
class SNBFit:
    K: float
    a: float
    b: float


def snb_expected_c1_c2(K: float, a: float, b: float, pi: float) -> tuple[float, float]:
    d = (1 - b) * (1 - pi)
    c1 = K * pi * (b / (1 - d)) ** a * (1 + a * d / (1 - d))
    c2 = K * pi**2 / 2 * a * (1 - b) * b**a * (1 - d) ** (-(a + 2)) * (2 - (1 - a) * d)
    return c1, c2


def shlosser(hist: ClassSizeHistogram, pi: float) -> float:
    q = 1 - pi
    num = float((q ** hist.sizes.astype(float) * hist.classes).sum())
    den = float((hist.sizes * pi * q ** (hist.sizes - 1.0) * hist.classes).sum())
    return hist.n_classes + hist.count(1) * (num / den if den > 0 else 0.0)


def snb_fit(hist: ClassSizeHistogram, N: int) -> SNBFit:
    """``(K, a, b)``; :class:`NoEstimate` when the moment equations have no solution."""
    pi = hist.n / N
    c1, c2 = hist.count(1), hist.count(2)
    if c1 == 0 or c2 == 0:
        raise NoEstimate(f"SNB needs sample uniques and pairs (the sample has {c1} and {c2})")
    K = shlosser(hist, pi)

    def equations(x: np.ndarray) -> np.ndarray:
        a, b = math.exp(x[0]), 1 / (1 + math.exp(-x[1]))
        e1, e2 = snb_expected_c1_c2(K, a, b, pi)
        return np.array([math.log(e1 / c1), math.log(e2 / c2)])

    for start in ((0.0, 0.0), (-2.0, -2.0), (1.0, 2.0), (-1.0, -4.0)):
        try:
            with np.errstate(all="ignore"):
                res = optimize.root(equations, np.array(start), method="hybr")
        except (ValueError, OverflowError, ZeroDivisionError):
            continue
        if res.success and np.all(np.abs(res.fun) < 1e-6):
            return SNBFit(K, math.exp(res.x[0]), 1 / (1 + math.exp(-res.x[1])))
    raise NoEstimate("the SNB moment equations did not converge to a solution for this sample")


def snb_moments(fit: SNBFit, hist: ClassSizeHistogram, N: int) -> tuple[np.ndarray, np.ndarray]:
    """``E[1/F | f]``, ``E[1/F^2 | f]`` for every size of ``hist`` (the NB x binomial posterior)."""
    f = hist.sizes.astype(float)
    pi = hist.n / N
    log_d = math.log1p(-fit.b) + math.log1p(-pi) if fit.b < 1 and pi < 1 else -math.inf
    if not math.isfinite(log_d):
        return 1.0 / f, 1.0 / f**2
    a = fit.a

    def logw(r: np.ndarray, y: np.ndarray) -> np.ndarray:
        F = f[r] + y
        out: np.ndarray = log_gamma_ratio(F, a - 1) + log_gamma_ratio(y + 1, f[r]) + y * log_d
        return out

    return posterior_moments(logw, np.zeros(f.size), N - f, f)


@register
class SNBEstimator(ClassSizeEstimator):
    """Chen & Keller-McNulty's slide negative binomial model."""

    name = "snb"

    def __init__(self, n_bootstrap: int = DEFAULT_BOOTSTRAP, random_state: int | None = 0) -> None:
        self.n_bootstrap = n_bootstrap
        self.random_state = random_state

    def _fit_model(self, hist: ClassSizeHistogram, N: int, start: object = None) -> SNBFit:
        return snb_fit(hist, N)

    def _moments(self, model: SNBFit, hist: ClassSizeHistogram, N: int) -> tuple[np.ndarray, np.ndarray]:
        return snb_moments(model, hist, N)

    def _use_model(self, model: SNBFit, hist: ClassSizeHistogram, N: int) -> None:
        self.K_, self.a_, self.b_ = model.K, model.a, model.b
        self.population_uniques_ = model.K * model.b**model.a
