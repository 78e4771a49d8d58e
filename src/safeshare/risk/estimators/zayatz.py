"""Zayatz (1991) population-uniqueness model, as in ARX (baseline of the issue's harness).

The population class-size distribution is taken to be the sample's:
``P(F = j) = c_j / J`` (``c_j`` sample classes of size ``j``), and a population
class of size ``j`` shows ``i`` records in a simple random sample of ``n`` out
of ``N`` with the hypergeometric probability ``H(i; N, j, n)``. Then

    P(F = 1 | f = 1) = c_1 H(1; N, 1, n) / sum_j c_j H(1; N, j, n),
    population uniques = c_1 P(F = 1 | f = 1) / pi,

and, by the same Bayes rule, ``E[1/F | f = i] = sum_j c_j H(i; N, j, n) / j /
sum_j c_j H(i; N, j, n)``, so ``B = (1/n) sum_i i c_i E[1/F | f = i]``. The prior is the
histogram itself, so the cost is O(distinct sizes^2), whatever N; the hypergeometric
weights are computed in log space with stable log-Gamma differences (with large classes
every likelihood can underflow -- P(all 300 of a class are in the sample) ~ 1e-300 -- which
must not turn the posterior into zeros). The interval's parameter part resamples the prior.
"""

from __future__ import annotations

import numpy as np
from scipy import special

from safeshare.risk.classes import ClassSizeHistogram
from safeshare.risk.estimators import register
from safeshare.risk.estimators._sums import log_gamma_ratio
from safeshare.risk.estimators.class_size import DEFAULT_BOOTSTRAP, ClassSizeEstimator


def log_hypergeom(i: np.ndarray, N: int, j: np.ndarray, n: int) -> np.ndarray:
    """``ln H(i; N, j, n)`` up to a term constant in ``i`` and ``j``: ``ln C(j, i) + ln C(N - j, n - i)``
    (``-inf`` where ``i > j`` or ``n - i > N - j``)."""
    i, j = np.broadcast_arrays(np.asarray(i, dtype=float), np.asarray(j, dtype=float))
    ok = (i <= j) & (n - i <= N - j)
    out = np.full(i.shape, -np.inf)
    ii, jj = i[ok], j[ok]
    rest = N - jj - (n - ii)  # people of neither the class nor the sample
    out[ok] = (
        special.gammaln(jj + 1)
        - special.gammaln(ii + 1)
        - special.gammaln(jj - ii + 1)
        + log_gamma_ratio(rest + 1, n - ii)
        - special.gammaln(n - ii + 1)
    )
    return out


def zayatz_posterior(prior: ClassSizeHistogram, hist: ClassSizeHistogram, N: int) -> np.ndarray:
    """``post[i, j] = P(F = prior.sizes[j] | f = hist.sizes[i])`` under the Zayatz prior."""
    n = hist.n
    log_joint = log_hypergeom(hist.sizes[:, None], N, prior.sizes[None, :], n)
    log_joint = log_joint + np.log(prior.classes[None, :])
    top = log_joint.max(axis=1, keepdims=True)
    joint = np.exp(log_joint - np.where(np.isfinite(top), top, 0.0))
    total = joint.sum(axis=1, keepdims=True)
    return np.asarray(joint / np.where(total > 0, total, np.nan), dtype=float)


@register
class ZayatzEstimator(ClassSizeEstimator):
    """Population uniques (and B) from the sample histogram with hypergeometric sampling."""

    name = "zayatz"

    def __init__(self, n_bootstrap: int = DEFAULT_BOOTSTRAP, random_state: int | None = 0) -> None:
        self.n_bootstrap = n_bootstrap
        self.random_state = random_state

    def _fit_model(self, hist: ClassSizeHistogram, N: int, start: object = None) -> ClassSizeHistogram:
        return hist  # the prior is the sample's histogram

    def _moments(
        self, model: ClassSizeHistogram, hist: ClassSizeHistogram, N: int
    ) -> tuple[np.ndarray, np.ndarray]:
        post = zayatz_posterior(model, hist, N)
        inv = 1.0 / model.sizes
        return post @ inv, post @ (inv * inv)

    def _use_model(self, model: ClassSizeHistogram, hist: ClassSizeHistogram, N: int) -> None:
        c1 = hist.count(1)
        if c1 == 0:
            self.population_uniques_ = 0.0
            return
        post = zayatz_posterior(model, hist, N)
        one = hist.sizes == 1
        p11 = float(post[one][0, model.sizes == 1][0])
        self.population_uniques_ = c1 * p11 / (hist.n / N)
