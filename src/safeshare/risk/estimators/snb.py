"""Slide negative binomial (SNB) model of population uniqueness (Chen & Keller-McNulty 1998;
ARX ``ModelSNB``).

Population classes: ``K`` non-empty classes with ``F - 1 ~ NegBin(a, b)``
(``P(F = 1) = b^a``); a class shows ``f ~ Binomial(F, pi)`` records. With
``d = (1 - b)(1 - pi)`` the expected numbers of sample classes of size 1 and 2 are
(derived from the NB generating function; tested against direct sums)

    E c_1 = K pi (b/(1-d))^a (1 + a d/(1-d)),
    E c_2 = K pi^2/2 a (1-b) b^a (1-d)^(-(a+2)) (2 - (1-a) d).

``K`` is Shlosser's estimate ``J + c_1 sum_i (1-pi)^i c_i / sum_i i pi (1-pi)^(i-1) c_i``
(Haas et al. 1995); ``(a, b)`` solve the two moment equations; population
uniques ``= K b^a``. B: ``E[1/F | f]`` under the posterior
``P(F | f) ∝ NB(F - 1; a, b) Binomial(f; F, pi)``, summed over ``F``.
ARX's second equation multiplies by ``(1-d)^(a+2)`` where the derivation
divides by it; we follow the derivation (the test checks it by direct sums).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import optimize, stats

from safeshare.risk.classes import ClassSizeHistogram
from safeshare.risk.estimators import register
from safeshare.risk.estimators.base import RiskEstimator, Sample


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


def snb_fit(hist: ClassSizeHistogram, N: int) -> tuple[float, float, float] | None:
    """(K, a, b) or None when the moment equations have no solution."""
    pi = hist.n / N
    c1, c2 = hist.count(1), hist.count(2)
    if c1 == 0 or c2 == 0 or pi >= 1:
        return None
    K = shlosser(hist, pi)

    def equations(x: np.ndarray) -> np.ndarray:
        a, b = math.exp(x[0]), 1 / (1 + math.exp(-x[1]))
        e1, e2 = snb_expected_c1_c2(K, a, b, pi)
        return np.array([math.log(e1 / c1), math.log(e2 / c2)])

    best = None
    for start in ((0.0, 0.0), (-2.0, -2.0), (1.0, 2.0), (-1.0, -4.0)):
        try:
            res = optimize.root(equations, np.array(start), method="hybr")
        except (ValueError, OverflowError, ZeroDivisionError):
            continue
        if res.success and np.all(np.abs(res.fun) < 1e-6):
            best = res
            break
    if best is None:
        return None
    return K, math.exp(best.x[0]), 1 / (1 + math.exp(-best.x[1]))


def snb_expected_inverse(f: int, a: float, b: float, pi: float, N: int) -> float:
    hi = min(N, f + int(stats.nbinom.ppf(1 - 1e-12, a, b) / max(pi, 1e-12)) + 10 * f + 100)
    F = np.arange(f, hi + 1)
    w = stats.nbinom.pmf(F - 1, a, b) * stats.binom.pmf(f, F, pi)
    total = w.sum()
    return float((w / F).sum() / total) if total > 0 else 1.0 / f


@register
class SNBEstimator(RiskEstimator):
    """Chen & Keller-McNulty's slide negative binomial model."""

    name = "snb"

    def __init__(self) -> None:
        pass

    def _fit(self, sample: Sample, hist: ClassSizeHistogram, N: int) -> None:
        pi = hist.n / N
        fitted = snb_fit(hist, N)
        self.valid_ = fitted is not None
        if fitted is None:
            self.B_ = float("nan")
            return
        self.K_, self.a_, self.b_ = fitted
        self.population_uniques_ = self.K_ * self.b_**self.a_
        inv = [snb_expected_inverse(int(f), self.a_, self.b_, pi, N) for f in hist.sizes]
        self.B_ = float((hist.sizes * hist.classes * np.array(inv)).sum() / hist.n)
