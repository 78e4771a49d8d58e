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
from safeshare.risk.classes import ClassSizeHistogram, SampleTable, radices
from safeshare.risk.estimators import register
from safeshare.risk.estimators.base import RiskEstimator, Sample, check_positive_int, check_seed
from safeshare.risk.synthesis import DEFAULT_CHUNK, SyntheticRisk, synthetic_risk


class SyntheticEstimator(RiskEstimator):
    """Common fit loop of the synthetic-population estimators: ``_prepare`` the model, then
    average ``B*`` over ``repetitions`` synthetic populations drawn by ``_sampler``."""

    requires_table = True

    repetitions: int
    chunk_size: int
    random_state: int | None

    def _validate(self) -> None:
        check_positive_int(self.repetitions, f"{self.name} repetitions")
        check_positive_int(self.chunk_size, f"{self.name} chunk_size")
        check_seed(self.random_state, f"{self.name} random_state")

    def _prepare(self, table: SampleTable) -> None:
        raise NotImplementedError

    def _codes(self, size: int, rng: np.random.Generator) -> np.ndarray:
        """``size`` synthetic records as category codes (size x m)."""
        raise NotImplementedError

    def _fit(self, sample: Sample, hist: ClassSizeHistogram, N: int) -> None:
        assert isinstance(sample, SampleTable)
        self.cumulative_ = copula.cumulative(sample)
        weights = radices(sample.cardinalities)
        self._prepare(sample)

        self._weights = weights
        runs = self._synthesize(N)
        self.B_runs_ = [r.B for r in runs]
        self.B_ = float(np.mean(self.B_runs_))
        self.population_uniques_ = float(np.mean([r.population_uniques for r in runs]))

    def _synthesize(self, N: int) -> list[SyntheticRisk]:
        """``repetitions`` synthetic populations of ``N`` from the fitted model, seeded by
        ``random_state`` alone (so the same seed gives the same populations at any N)."""
        weights = self._weights

        def sampler(size: int, rng: np.random.Generator) -> np.ndarray:
            return np.asarray(self._codes(size, rng) @ weights, dtype=np.int64)

        seeds = np.random.SeedSequence(self.random_state).spawn(self.repetitions)
        return [synthetic_risk(sampler, N, self.n_, np.random.default_rng(s), self.chunk_size) for s in seeds]

    def B_at(self, population_size: int) -> float:
        """B* of the already fitted model with another population size, as ``fit`` would give
        at that N with the same seed (the fit uses the sample only, never N): the population-size
        sensitivity analysis (Jiang et al. 2022, §4.2) without refitting the copula."""
        if not hasattr(self, "_weights"):
            raise ValueError(f"{self.name}: fit before B_at")
        if not self.n_ <= population_size:
            raise InputError(
                f"population size {population_size} is smaller than the sample ({self.n_} records)"
            )
        return float(np.mean([r.B for r in self._synthesize(population_size)]))

    def _independent_codes(self, size: int, rng: np.random.Generator) -> np.ndarray:
        """Columns drawn independently from their marginals (one QI, or no dependence)."""
        u = rng.random((size, len(self.cumulative_)))
        return self._codes_from_uniform(u)

    def _codes_from_uniform(self, u: np.ndarray) -> np.ndarray:
        out = np.empty(u.shape, dtype=np.int64)
        for c, cum in enumerate(self.cumulative_):
            out[:, c] = np.minimum(np.searchsorted(cum, u[:, c], side="left"), cum.size - 1)
        return out


@register
class GaussianCopulaEstimator(SyntheticEstimator):
    """Synthetic population from a Gaussian copula with empirical marginals."""

    name = "gaussian_copula"

    def __init__(
        self,
        correlation: str = "mi",
        repetitions: int = 1,
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

    def _codes(self, size: int, rng: np.random.Generator) -> np.ndarray:
        z = rng.standard_normal((size, len(self._cuts))) @ self._cholesky.T
        out = np.empty(z.shape, dtype=np.int64)
        for c, cuts in enumerate(self._cuts):
            out[:, c] = np.searchsorted(cuts, z[:, c], side="left")
        return out
