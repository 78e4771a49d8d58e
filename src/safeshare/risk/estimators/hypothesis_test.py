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
from scipy import special

from safeshare.errors import InputError
from safeshare.risk.classes import ClassSizeHistogram
from safeshare.risk.estimators import register
from safeshare.risk.estimators.base import RiskEstimator, Sample


def ztp_sf(f: np.ndarray | int, lam: np.ndarray | float) -> np.ndarray:
    """P(X >= f) for a zero-truncated Poisson(lam), f >= 1 (elementwise)."""
    f, lam = np.broadcast_arrays(np.asarray(f, dtype=float), np.asarray(lam, dtype=float))
    with np.errstate(divide="ignore", invalid="ignore"):
        out = special.pdtrc(f - 1, lam) / -np.expm1(-lam)
    return np.where(lam > 0, out, np.where(f <= 1, 1.0, 0.0))


def largest_established_sizes(f: np.ndarray, pi: float, N: int, alpha: float) -> np.ndarray:
    """Per size in ``f``: the largest k in [f, N] with P_ZTP(X >= f; pi k) <= alpha, or f if there
    is none (a bisection over k for all sizes at once: O(log N) steps)."""
    f = np.asarray(f, dtype=float)
    out = f.copy()
    some = (f < N) & (ztp_sf(f, pi * (f + 1)) <= alpha)
    if not some.any():
        return out
    fs = f[some]
    lo, hi = fs + 1, np.full(fs.shape, float(N))  # lo satisfies; ztp_sf grows with k
    at_top = ztp_sf(fs, pi * hi) <= alpha
    for _ in range(max(1, math.ceil(math.log2(max(N, 2)))) + 1):
        active = hi - lo > 1
        if not active.any():
            break
        mid = np.floor((lo + hi) / 2)
        ok = ztp_sf(fs, pi * mid) <= alpha
        lo = np.where(active & ok, mid, lo)
        hi = np.where(active & ~ok, mid, hi)
    out[some] = np.where(at_top, float(N), lo)
    return out


@register
class HypothesisTestEstimator(RiskEstimator):
    """El Emam & Dankar's truncated-Poisson test, inverted into a population class size per class.

    No interval: the estimate is itself a one-sided confidence bound (``F^`` is a lower
    confidence bound on ``F``)."""

    name = "hypothesis_test"

    def __init__(self, alpha: float = 0.05) -> None:
        self.alpha = alpha

    def _validate(self) -> None:
        if not 0 < self.alpha < 1:
            raise InputError(f"hypothesis_test alpha: expected a level in (0, 1), got {self.alpha}")

    def _fit(self, sample: Sample, hist: ClassSizeHistogram, N: int) -> None:
        pi = hist.n / N
        F = largest_established_sizes(hist.sizes, pi, N, self.alpha)
        self.B_ = float((hist.sizes * hist.classes / F).sum() / hist.n)
        self.population_uniques_ = float(hist.classes[F == 1].sum() / pi) if (F == 1).any() else 0.0
