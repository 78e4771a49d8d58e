"""Entropy estimator (Erlich & Narayanan 2014; baseline of Jiang et al. 2022, §2.4).

The quasi-identifiers are assumed independent: a record with values
``x_1..x_m`` has population cell probability ``q = prod_c p_c(x_c)``, where
``p_c`` are the sample's marginal frequencies. The record's own person plus
the ``N - 1`` others, each in the cell with probability ``q``, give
``F = 1 + Binomial(N - 1, q)`` and

    E[1/F] = (1 - (1 - q)^N) / (N q),        B = (1/n) sum_k E[1/F_k].

Population uniques: ``(N/n) sum_k (1 - q_k)^(N-1)`` over sample records.
With one class (``q = 1``) this gives ``B = 1/N``, the exact value; with
independent QIs it is the model's exact expectation. Real QIs are dependent,
so the product of marginals spreads people over more cells than there are and
the estimator overestimates B (the paper's finding).

**Interval** (95 %, ``B_interval_``): a nonparametric bootstrap over the sample's records
(``n_bootstrap`` multinomial resamples of the records, the marginals and B recomputed on
each), ``B^ exp(±1.96 sd(ln B^*))`` clipped to ``[1/N, 1]``, seeded (``random_state``). It
states how much the estimate moves with another sample; the independence model's own bias
(above) is not in it, so on dependent QIs it does not cover the true B at its rate.
"""

from __future__ import annotations

import math

import numpy as np

from safeshare.risk.classes import ClassSizeHistogram, SampleTable
from safeshare.risk.estimators import register
from safeshare.risk.estimators.base import (
    RiskEstimator,
    Sample,
    bootstrap_log_variance,
    check_non_negative_int,
    check_seed,
    log_scale_interval,
)


def expected_inverse_binomial(q: np.ndarray, N: int) -> np.ndarray:
    """E[1/(1 + Binomial(N-1, q))] = (1 - (1-q)^N) / (N q), stable for tiny q and for q = 1."""
    q = np.asarray(q, dtype=float)
    out = np.full(q.shape, 1.0 / N)
    part = q < 1.0
    qq = q[part]
    out[part] = -np.expm1(N * np.log1p(-qq)) / (N * qq)
    return out


@register
class EntropyEstimator(RiskEstimator):
    """B under independent quasi-identifiers (population cells = product of sample marginals)."""

    name = "entropy"
    requires_table = True

    def __init__(self, n_bootstrap: int = 50, random_state: int | None = 0) -> None:
        self.n_bootstrap = n_bootstrap
        self.random_state = random_state

    def _validate(self) -> None:
        check_non_negative_int(self.n_bootstrap, f"{self.name} n_bootstrap")
        check_seed(self.random_state, f"{self.name} random_state")

    @staticmethod
    def _estimate(sample: SampleTable, N: int) -> tuple[float, float]:
        """``B`` and the population uniques of ``sample`` under independent QIs."""
        log_q = np.zeros(sample.n_classes)
        for c in range(len(sample.columns)):
            log_q += np.log(sample.marginal(c)[sample.codes[:, c]])
        q = np.exp(log_q)
        f = sample.counts
        B = float((f * expected_inverse_binomial(q, N)).sum() / sample.n)
        with np.errstate(divide="ignore", invalid="ignore"):
            p_unique = np.exp((N - 1) * np.log1p(-q)) if N > 1 else np.ones_like(q)
        return B, float((N / sample.n) * (f * p_unique).sum())

    def _fit(self, sample: Sample, hist: ClassSizeHistogram, N: int) -> None:
        assert isinstance(sample, SampleTable)
        self.B_, self.population_uniques_ = self._estimate(sample, N)
        draws = []
        rng = np.random.default_rng(self.random_state)
        p = sample.counts / sample.n
        for _ in range(self.n_bootstrap):
            counts = rng.multinomial(sample.n, p)
            keep = counts > 0
            resample = SampleTable(sample.columns, sample.categories, sample.codes[keep], counts[keep])
            B, _ = self._estimate(resample, N)
            if math.isfinite(B) and B > 0:
                draws.append(B)
        var_log = bootstrap_log_variance(draws)
        if var_log is not None:
            self.B_interval_ = log_scale_interval(self.B_, var_log)
            self.interval_method_ = (
                f"a {len(draws)}-resample bootstrap over the sample's records (sampling variability "
                "only: the independence model's bias is not in it)"
            )
