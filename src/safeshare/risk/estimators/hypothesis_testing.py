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
from safeshare.risk.estimators.base import (
    RiskEstimator,
    Sample,
    bootstrap_log_variance,
    check_non_negative_int,
    check_seed,
    log_scale_interval,
)


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

    The estimate is itself built from one-sided confidence bounds (``F^`` is a lower confidence
    bound on ``F``). Its interval (``B_interval_``) is the sampling variability of that
    estimate: a bootstrap over the sample's classes (``n_bootstrap`` multinomial resamples of
    the ``J`` classes, B recomputed on each), ``B^ exp(±1.96 sd(ln B^*))``, seeded."""

    name = "hypothesis_test"

    def __init__(self, alpha: float = 0.05, n_bootstrap: int = 50, random_state: int | None = 0) -> None:
        self.alpha = alpha
        self.n_bootstrap = n_bootstrap
        self.random_state = random_state

    def _validate(self) -> None:
        if not 0 < self.alpha < 1:
            raise InputError(f"hypothesis_test alpha: expected a level in (0, 1), got {self.alpha}")
        check_non_negative_int(self.n_bootstrap, f"{self.name} n_bootstrap")
        check_seed(self.random_state, f"{self.name} random_state")

    def _estimate(self, hist: ClassSizeHistogram, N: int) -> tuple[float, float]:
        pi = hist.n / N
        F = largest_established_sizes(hist.sizes, pi, N, self.alpha)
        B = float((hist.sizes * hist.classes / F).sum() / hist.n)
        return B, float(hist.classes[F == 1].sum() / pi) if (F == 1).any() else 0.0

    def _fit(self, sample: Sample, hist: ClassSizeHistogram, N: int) -> None:
        self.B_, self.population_uniques_ = self._estimate(hist, N)
        rng = np.random.default_rng(self.random_state)
        J = hist.n_classes
        draws = []
        for _ in range(self.n_bootstrap):
            counts = rng.multinomial(J, hist.classes / J)
            keep = counts > 0
            resample = ClassSizeHistogram(hist.sizes[keep], counts[keep])
            B, _ = self._estimate(resample, max(N, resample.n))
            if math.isfinite(B) and B > 0:
                draws.append(B)
        var_log = bootstrap_log_variance(draws)
        if var_log is not None:
            self.B_interval_ = log_scale_interval(self.B_, var_log)
            self.interval_method_ = f"a {len(draws)}-resample bootstrap over the sample's classes"
