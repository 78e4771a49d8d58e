"""Pitman model of population uniqueness (Hoshino 2001; ARX ``ModelPitman``).

The partition of the sample into classes is a Pitman (two-parameter
Ewens) partition with ``theta > -alpha``, ``0 <= alpha < 1``, fitted by maximum
likelihood on the sample's class sizes:

    log L = sum_{i=1}^{J-1} log(theta + i alpha) - sum_{i=1}^{n-1} log(theta + i)
            + sum_j sum_{l=1}^{f_j - 1} log(l - alpha).

Population uniques (Hoshino): ``Gamma(theta+1)/Gamma(theta+alpha) N^alpha``
(invalid, as in ARX, when not in [0, N]). B: under the Pitman urn a class
holding ``f`` of the ``n`` sample records receives ``F - f ~
BetaBinomial(N - n, f - alpha, theta + n - f + alpha)`` of the other
``N - n`` people, so ``E[1/F | f]`` is a finite sum (or its Beta-integral
limit for ``N - n`` above a million).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import integrate, optimize, special, stats

from safeshare.risk.classes import ClassSizeHistogram
from safeshare.risk.estimators import register
from safeshare.risk.estimators.base import RiskEstimator, Sample

EXACT_SUM_LIMIT = 1_000_000
#: log(theta) beyond which the fit is refused (theta > 5e21, far beyond any population; the
#: log-likelihood's Gamma differences lose all precision there and exp() overflows soon after).
THETA_LOG_LIMIT = 50.0


def pitman_fit(hist: ClassSizeHistogram) -> tuple[float, float] | None:
    """ML (theta, alpha), or None when the optimiser fails."""
    n, J = hist.n, hist.n_classes
    i = np.arange(1, J)
    sizes, classes = hist.sizes.astype(float), hist.classes.astype(float)

    def nll(x: np.ndarray) -> float:
        if x[1] > THETA_LOG_LIMIT:  # an all-unique sample drives theta to infinity: no fit
            return math.inf
        alpha = special.expit(x[0])
        theta = math.exp(x[1]) - alpha
        with np.errstate(invalid="ignore", divide="ignore"):  # alpha -> 1: Gamma(0) terms, no fit there
            ll = np.log(theta + i * alpha).sum()
            ll -= special.gammaln(theta + n) - special.gammaln(theta + 1)
            ll += (classes * (special.gammaln(sizes - alpha) - special.gammaln(1 - alpha))).sum()
        return float(-ll) if np.isfinite(ll) else math.inf

    best = None
    for start in ((0.0, math.log(max(J, 1.0))), (-2.0, math.log(max(J / 2, 1.0))), (2.0, 0.0)):
        res = optimize.minimize(
            nll, np.array(start), method="Nelder-Mead", options={"xatol": 1e-8, "fatol": 1e-9}
        )
        if np.isfinite(res.fun) and (best is None or res.fun < best.fun):
            best = res
    if best is None:
        return None
    if best.x[1] > THETA_LOG_LIMIT:
        return None
    alpha = float(special.expit(best.x[0]))
    return float(math.exp(best.x[1]) - alpha), alpha


def expected_inverse_beta_binomial(f: int, extra: int, a: float, b: float) -> float:
    """E[1/(f + Y)], Y ~ BetaBinomial(extra, a, b)."""
    if extra == 0:
        return 1.0 / f
    if extra <= EXACT_SUM_LIMIT:
        y = np.arange(extra + 1)
        return float((stats.betabinom.pmf(y, extra, a, b) / (f + y)).sum())
    value, _ = integrate.quad(lambda p: stats.beta.pdf(p, a, b) / (f + extra * p), 0, 1, limit=200)
    return float(value)


@register
class PitmanEstimator(RiskEstimator):
    """Hoshino's Pitman-partition model of the sample's class sizes."""

    name = "pitman"

    def __init__(self) -> None:
        pass

    def _fit(self, sample: Sample, hist: ClassSizeHistogram, N: int) -> None:
        fitted = pitman_fit(hist)
        self.valid_ = fitted is not None
        if fitted is None:
            self.B_ = float("nan")
            return
        self.theta_, self.alpha_ = fitted
        theta, alpha, n = self.theta_, self.alpha_, hist.n
        uniques = math.exp(special.gammaln(theta + 1) - special.gammaln(theta + alpha) + alpha * math.log(N))
        self.valid_ = alpha > 0 and 0 <= uniques <= N
        self.population_uniques_ = uniques if self.valid_ else None
        inv = [
            expected_inverse_beta_binomial(int(f), N - n, f - alpha, theta + n - f + alpha)
            for f in hist.sizes
        ]
        self.B_ = float((hist.sizes * hist.classes * np.array(inv)).sum() / n)
