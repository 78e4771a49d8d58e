"""Gaussian copula estimator (Jiang et al. 2022, §2.5-2.6).

Each quasi-identifier keeps the sample's empirical marginal; dependence is a
latent ``m``-dimensional Gaussian with correlation matrix ``R``. A synthetic
record is ``Z ~ N(0, R)`` mapped column by column through
``x_c = ECDF_c^{-1}(Phi(Z_c))``, i.e. category ``c`` when ``Z`` falls between
the cut points ``Phi^{-1}(cum_{c-1})`` and ``Phi^{-1}(cum_c)``.

``R`` is fitted pairwise:

* ``correlation="mi"`` (the paper's choice, the default): ``rho_ij`` is the value
  at which the discretized bivariate Gaussian's mutual information equals
  the sample's (computed exactly from the bivariate normal CDF and matched to
  the Miller-Madow bias-corrected sample MI, by bisection; sign from the rank
  correlation);
* ``correlation="rank"`` (faster): the correlation of the normal scores
  ``Phi^{-1}`` of each category's mid-CDF.

The pairwise matrix is projected onto the nearest positive-definite
correlation matrix. Then a synthetic population of ``N`` and a synthetic
sample of ``n`` give ``B* = (1/n) sum_{k in D_s} 1/F*_k``
(:mod:`safeshare.risk.synthesis`), averaged over ``repetitions``.
"""

from __future__ import annotations

import numpy as np

from safeshare.errors import InputError
from safeshare.risk import copula
from safeshare.risk.classes import SampleTable
from safeshare.risk.estimators import register
from safeshare.risk.estimators.synthetic import DEFAULT_REPETITIONS, SyntheticEstimator
from safeshare.risk.synthesis import DEFAULT_CHUNK, RestCounter, multinomial_rest, streamed_rest

GHK_COST = 256
"""Work of one class probability (GHK, first pass) in record draws: the probabilities and a
multinomial are used when the synthetic sample's classes times this is below ``N - n``."""


@register
class GaussianCopulaEstimator(SyntheticEstimator):
    """Synthetic population from a Gaussian copula with empirical marginals."""

    name = "gaussian_copula"

    def __init__(
        self,
        correlation: str = "mi",
        repetitions: int = DEFAULT_REPETITIONS,
        chunk_size: int = DEFAULT_CHUNK,
        random_state: int | None = None,
        mi_bias_correction: bool = True,
    ) -> None:
        self.correlation = correlation
        self.repetitions = repetitions
        self.chunk_size = chunk_size
        self.random_state = random_state
        self.mi_bias_correction = mi_bias_correction

    def _validate(self) -> None:
        super()._validate()
        if self.correlation not in ("mi", "rank"):
            raise InputError(f"gaussian_copula correlation: expected mi or rank, got {self.correlation!r}")

    def _prepare(self, table: SampleTable) -> None:
        if self.correlation == "mi":
            self.correlation_ = copula.mi_matched_correlation(table, self.mi_bias_correction)
        else:
            self.correlation_ = copula.nearest_correlation(copula.rank_correlation(table))
        self._cholesky = np.linalg.cholesky(self.correlation_)
        self._cuts = [copula.cut_points(cum) for cum in self.cumulative_]

    def fit_model(self, table: SampleTable) -> GaussianCopulaEstimator:
        """Fit the copula (marginals and correlation) to ``table`` without synthesizing a
        population: what :meth:`class_probabilities` needs (the per-record risk of Rocher et al.
        2019, :mod:`safeshare.risk.record_risk`)."""
        self._validate()
        self.cumulative_ = copula.cumulative(table)
        self._prepare(table)
        return self

    def _codes(self, size: int, rng: np.random.Generator) -> np.ndarray:
        z = rng.standard_normal((size, len(self._cuts))) @ self._cholesky.T
        out = np.empty(z.shape, dtype=np.int64)
        for c, cuts in enumerate(self._cuts):
            out[:, c] = np.searchsorted(cuts, z[:, c], side="left")
        return out

    def class_probabilities(self, codes: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """``P(record = codes row)``: the latent normal's probability of the row's rectangle of
        cut points, by GHK on fresh scrambled Sobol' points, more where the first pass is
        unsure (:func:`copula.adaptive_rectangle_probabilities`)."""
        m = len(self._cuts)
        bounds = [np.concatenate([[-np.inf], cuts, [np.inf]]) for cuts in self._cuts]
        lower = np.column_stack([bounds[c][codes[:, c]] for c in range(m)])
        upper = np.column_stack([bounds[c][codes[:, c] + 1] for c in range(m)])
        return copula.adaptive_rectangle_probabilities(lower, upper, self.correlation_, rng)

    def _rest(self) -> RestCounter:
        """GHK probabilities and a multinomial when that is cheaper than streaming the rest of the
        population (:data:`GHK_COST`)."""
        stream = streamed_rest(self._codes, self._weights, self.chunk_size)
        ghk = multinomial_rest(self.class_probabilities)

        def rest(codes: np.ndarray, keys: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
            if codes.shape[0] * GHK_COST < size:
                return ghk(codes, keys, size, rng)
            return stream(codes, keys, size, rng)

        return rest
