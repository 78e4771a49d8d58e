"""Zayatz (1991) population-uniqueness model, as in ARX (baseline of the issue's harness).

The population class-size distribution is taken to be the sample's:
``P(F = j) = c_j / J`` (``c_j`` sample classes of size ``j``), and a population
class of size ``j`` shows ``i`` records in a simple random sample of ``n`` out
of ``N`` with the hypergeometric probability ``H(i; N, j, n)``. Then

    P(F = 1 | f = 1) = c_1 H(1; N, 1, n) / sum_j c_j H(1; N, j, n),
    population uniques = c_1 P(F = 1 | f = 1) / pi,

and, by the same Bayes rule, ``E[1/F | f = i] = sum_j c_j H(i; N, j, n) / j /
sum_j c_j H(i; N, j, n)``, so ``B = (1/n) sum_i i c_i E[1/F | f = i]``.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from safeshare.risk.classes import ClassSizeHistogram
from safeshare.risk.estimators import register
from safeshare.risk.estimators.base import RiskEstimator, Sample


def zayatz_posterior(hist: ClassSizeHistogram, N: int) -> np.ndarray:
    """``post[i, j] = P(F = sizes[j] | f = sizes[i])`` under the Zayatz prior."""
    n = hist.n
    # In log space: with large classes every likelihood can underflow (P(all 300 of a class
    # are in the sample) ~ 1e-300), which must not turn the posterior into zeros.
    log_joint = stats.hypergeom.logpmf(hist.sizes[:, None], N, hist.sizes[None, :], n)
    log_joint = log_joint + np.log(hist.classes[None, :])
    log_joint -= log_joint.max(axis=1, keepdims=True)
    joint = np.exp(log_joint)
    return np.asarray(joint / joint.sum(axis=1, keepdims=True), dtype=float)


@register
class ZayatzEstimator(RiskEstimator):
    """Population uniques (and B) from the sample histogram with hypergeometric sampling."""

    name = "zayatz"

    def __init__(self) -> None:
        pass

    def _fit(self, sample: Sample, hist: ClassSizeHistogram, N: int) -> None:
        post = zayatz_posterior(hist, N)
        inv = post @ (1.0 / hist.sizes)
        self.B_ = float((hist.sizes * hist.classes * inv).sum() / hist.n)
        c1 = hist.count(1)
        if c1 == 0:
            self.population_uniques_ = 0.0
            return
        p11 = float(post[hist.sizes == 1][0, hist.sizes == 1][0])
        self.population_uniques_ = c1 * p11 / (hist.n / N)
