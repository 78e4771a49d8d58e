"""El Emam & Dankar (2008) hypothesis-testing estimator (JAMIA 15(5):627-637; baseline of
Jiang et al. 2022, §2.4).

Population class sizes are modelled through the sample: a population class of
``F`` people appears in a sample with sampling fraction ``pi = n/N`` about
``Poisson(pi F)`` times, and a class that is seen at all follows the
truncated-at-zero Poisson (ZTP). For a sample class of size ``f`` the test
rejects "``F < k``" at level ``alpha`` when ``P_ZTP(X >= f; lambda = pi k) <= alpha``
(the rule ARX's k-map uses to turn a population ``k`` into a sample threshold).
Our estimate of ``F`` is the largest population size the test establishes:

    F^ = max{ k in [f, N] : k <= f  or  P_ZTP(X >= f; pi k) <= alpha },

and ``B = (1/n) sum_j f_j / F^_j``. It is a lower confidence bound on ``F``, so
``1/F^`` is conservative per class. At ``pi = 1`` the ZTP quantile exceeds any
``k > f`` and ``F^ = f``: the exact B. Assumption (the paper's exact
parameterisation is not in our copy): this inversion and ``alpha = 0.05``.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

from safeshare.errors import InputError
from safeshare.risk.classes import ClassSizeHistogram
from safeshare.risk.estimators import register
from safeshare.risk.estimators.base import RiskEstimator, Sample


def ztp_sf(f: int, lam: float) -> float:
    """P(X >= f) for a zero-truncated Poisson(lam), f >= 1."""
    if lam <= 0:
        return 1.0 if f <= 1 else 0.0
    return float(stats.poisson.sf(f - 1, lam) / -math.expm1(-lam))


def largest_established_size(f: int, pi: float, N: int, alpha: float) -> int:
    """The largest k in [f, N] with P_ZTP(X >= f; pi k) <= alpha, or f if there is none."""
    if ztp_sf(f, pi * (f + 1)) > alpha or f >= N:
        return f
    lo, hi = f + 1, N  # lo satisfies; ztp_sf grows with k, so bisect the last k that does
    if ztp_sf(f, pi * hi) <= alpha:
        return hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ztp_sf(f, pi * mid) <= alpha:
            lo = mid
        else:
            hi = mid
    return lo


@register
class HypothesisTestEstimator(RiskEstimator):
    """El Emam & Dankar's truncated-Poisson test, inverted into a population class size per class."""

    name = "hypothesis_test"

    def __init__(self, alpha: float = 0.05) -> None:
        self.alpha = alpha

    def _validate(self) -> None:
        if not 0 < self.alpha < 1:
            raise InputError(f"hypothesis_test alpha: expected a level in (0, 1), got {self.alpha}")

    def _fit(self, sample: Sample, hist: ClassSizeHistogram, N: int) -> None:
        pi = hist.n / N
        F = np.array([largest_established_size(int(f), pi, N, self.alpha) for f in hist.sizes], dtype=float)
        self.B_ = float((hist.sizes * hist.classes / F).sum() / hist.n)
        self.population_uniques_ = float(hist.classes[F == 1].sum() / pi) if (F == 1).any() else 0.0
