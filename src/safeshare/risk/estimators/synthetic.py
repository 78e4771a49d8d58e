"""The fit loop shared by the synthetic-population (copula) estimators (Jiang et al. 2022, §2.5).

A subclass fits its generative model of the quasi-identifiers on the sample
(``_prepare``) and says how to draw records (``_codes``) and how to count the
rest of a synthetic population (``_rest``: from the model's class
probabilities, or streamed; :mod:`safeshare.risk.synthesis`). The loop then
draws ``R = repetitions`` independent synthetic populations of ``N`` records,
each with its synthetic sample of ``n``, and reports

* ``B_runs_``: the ``R`` values ``B*_r = (1/n) sum_{k in D_s,r} 1/F*_k``;
* ``B_ = mean_r B*_r``, the estimate (the paper's "repeat and average");
* ``B_mc_interval_``: the 95 % Monte Carlo interval of that mean,
  ``B_ -+ t_{0.975, R-1} s / sqrt(R)`` (``s`` the standard deviation of the
  ``B*_r``), i.e. how much ``B_`` would move with other seeds; ``None`` for
  ``R = 1``;
* ``B_interval_``: the 95 % interval for the true B (see
  :mod:`safeshare.risk.estimators.accuracy`): the Monte Carlo interval widened by the
  estimator's error measured on real populations;
* ``population_uniques_``: the mean over the syntheses of the estimated
  population uniques of the synthetic population.

Seeds: repetition ``r`` draws from ``numpy.random.SeedSequence(random_state)``'s
``r``-th spawned child, whatever ``N`` (so :meth:`SyntheticEstimator.B_at`
equals a refit at another ``N``) and whatever the estimator: ``average``
gives both of its copulas its own ``random_state``, so it is the mean of the
two estimates printed beside it.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

from safeshare.errors import InputError
from safeshare.risk import copula
from safeshare.risk.classes import ClassSizeHistogram, SampleTable, radices
from safeshare.risk.estimators.base import RiskEstimator, Sample, check_positive_int, check_seed
from safeshare.risk.synthesis import RestCounter, SyntheticRisk, synthetic_risk

DEFAULT_REPETITIONS = 10
"""Syntheses per estimate (docs/risk.md "Uncertainty": the Monte Carlo error of the mean is then
below a third of one synthesis' spread, and ``average`` at N = 10^6 stays within a few seconds)."""


def mc_interval(runs: np.ndarray) -> tuple[float, float] | None:
    """The 95 % Student-t interval of the mean of ``runs`` (``None`` for fewer than two)."""
    R = runs.size
    if R < 2:
        return None
    half = float(stats.t.ppf(0.975, R - 1) * runs.std(ddof=1) / math.sqrt(R))
    mean = float(runs.mean())
    return (mean - half, mean + half)


def clip_B(value: float, N: int) -> float:
    """A B estimate clipped to its range ``[1/N, 1]`` (guards rounding only)."""
    return float(min(1.0, max(1.0 / N, value)))


class SyntheticEstimator(RiskEstimator):
    """Common fit loop of the synthetic-population estimators (module docstring)."""

    requires_table = True

    repetitions: int
    chunk_size: int
    random_state: int | None

    B_runs_: list[float]
    B_mc_interval_: tuple[float, float] | None
    B_interval_: tuple[float, float] | None
    B_reason_: str | None

    def _validate(self) -> None:
        check_positive_int(self.repetitions, f"{self.name} repetitions")
        check_positive_int(self.chunk_size, f"{self.name} chunk_size")
        check_seed(self.random_state, f"{self.name} random_state")

    def _prepare(self, table: SampleTable) -> None:
        raise NotImplementedError

    def _codes(self, size: int, rng: np.random.Generator) -> np.ndarray:
        """``size`` synthetic records as category codes (size x m)."""
        raise NotImplementedError

    def _rest(self) -> RestCounter:
        """How the records of the synthetic population beyond its sample are counted."""
        raise NotImplementedError

    def _fit(self, sample: Sample, hist: ClassSizeHistogram, N: int) -> None:
        assert isinstance(sample, SampleTable)
        self.cumulative_ = copula.cumulative(sample)
        self._cardinalities = sample.cardinalities
        self._weights = radices(sample.cardinalities)
        self._prepare(sample)
        runs = self._synthesize(N)
        self._set_estimate(np.array([r.B for r in runs]), N)
        self.population_uniques_ = float(np.mean([r.population_uniques for r in runs]))

    def _set_estimate(self, runs: np.ndarray, N: int) -> None:
        from safeshare.risk.estimators.accuracy import interval_method, prediction_interval

        self.B_runs_ = [float(b) for b in runs]
        self.B_ = clip_B(float(runs.mean()), N)
        self.B_reason_ = None
        mc = mc_interval(runs)
        self.B_mc_interval_ = None if mc is None else (clip_B(mc[0], N), clip_B(mc[1], N))
        self.B_interval_ = prediction_interval(
            self.name, self.B_, self.B_mc_interval_, self.sampling_fraction_, N
        )
        self.interval_method_ = interval_method(self.name, self.repetitions, self.sampling_fraction_)

    def _synthesize(self, N: int) -> list[SyntheticRisk]:
        """``repetitions`` synthetic populations of ``N`` from the fitted model (module docstring)."""
        seeds = np.random.SeedSequence(self.random_state).spawn(self.repetitions)
        rest = self._rest()
        return [
            synthetic_risk(
                self._codes,
                rest,
                self._weights,
                self._cardinalities,
                N,
                self.n_,
                np.random.default_rng(s),
                self.chunk_size,
            )
            for s in seeds
        ]

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
        runs = np.array([r.B for r in self._synthesize(population_size)])
        return clip_B(float(runs.mean()), population_size)

    def _codes_from_uniform(self, u: np.ndarray) -> np.ndarray:
        """Codes of uniforms through each column's empirical quantile function."""
        out = np.empty(u.shape, dtype=np.int64)
        for c, cum in enumerate(self.cumulative_):
            out[:, c] = np.minimum(np.searchsorted(cum, u[:, c], side="left"), cum.size - 1)
        return out

    def _marginal_probabilities(self, codes: np.ndarray) -> np.ndarray:
        """``prod_c p_c(code_c)``: class probabilities when the columns are independent."""
        p = np.ones(codes.shape[0])
        for c, cum in enumerate(self.cumulative_):
            p *= np.diff(cum, prepend=0.0)[codes[:, c]]
        return p
