"""The average of the Gaussian and D-vine copula estimates: the estimator Jiang et al. (2022,
§2.5, §4.1) recommend, ``B = (B*_gaussian + B*_dvine) / 2``.

One seed policy: both copulas get this estimator's ``random_state`` (and its
``repetitions``), exactly as each is fitted on its own, so ``average`` is the
mean of the two estimates printed beside it. Its ``R`` runs are the pairwise
means ``(B*_gaussian,r + B*_dvine,r) / 2``; ``B_mc_interval_`` and
``B_interval_`` follow from them as for each copula
(:mod:`safeshare.risk.estimators.synthetic`).
"""

from __future__ import annotations

import numpy as np

from safeshare.risk.classes import ClassSizeHistogram
from safeshare.risk.estimators import register
from safeshare.risk.estimators.base import NoEstimate, Sample
from safeshare.risk.estimators.dvine_copula import DVineCopulaEstimator
from safeshare.risk.estimators.gaussian_copula import GaussianCopulaEstimator
from safeshare.risk.estimators.synthetic import DEFAULT_REPETITIONS, SyntheticEstimator, clip_B
from safeshare.risk.synthesis import DEFAULT_CHUNK


@register
class AverageCopulaEstimator(SyntheticEstimator):
    """Mean of :class:`GaussianCopulaEstimator` and :class:`DVineCopulaEstimator`."""

    name = "average"

    def __init__(
        self,
        correlation: str = "mi",
        repetitions: int = DEFAULT_REPETITIONS,
        chunk_size: int = DEFAULT_CHUNK,
        random_state: int | None = None,
    ) -> None:
        self.correlation = correlation
        self.repetitions = repetitions
        self.chunk_size = chunk_size
        self.random_state = random_state

    def _fit(self, sample: Sample, hist: ClassSizeHistogram, N: int) -> None:
        self.gaussian_ = GaussianCopulaEstimator(
            correlation=self.correlation,
            repetitions=self.repetitions,
            chunk_size=self.chunk_size,
            random_state=self.random_state,
        ).fit(sample, N)
        self.dvine_ = DVineCopulaEstimator(
            repetitions=self.repetitions, chunk_size=self.chunk_size, random_state=self.random_state
        ).fit(sample, N)
        self._combine(N)

    @classmethod
    def from_fitted(
        cls, gaussian: GaussianCopulaEstimator, dvine: DVineCopulaEstimator
    ) -> AverageCopulaEstimator:
        """The average of two copulas already fitted on the same sample with the same seed and
        repetitions: what :meth:`fit` would give, without fitting them again (the evaluation
        fits each copula once for all three names)."""
        if (gaussian.random_state, gaussian.repetitions, gaussian.n_, gaussian.N_) != (
            dvine.random_state,
            dvine.repetitions,
            dvine.n_,
            dvine.N_,
        ):
            raise ValueError("average: the two copulas differ in seed, repetitions, n or N")
        est = cls(gaussian.correlation, gaussian.repetitions, gaussian.chunk_size, gaussian.random_state)
        est.n_, est.N_, est.sampling_fraction_ = gaussian.n_, gaussian.N_, gaussian.sampling_fraction_
        est.gaussian_, est.dvine_ = gaussian, dvine
        try:
            est._combine(gaussian.N_)
        except NoEstimate as exc:  # as fit() records it (the estimate contract, base.py)
            est.B_, est.B_reason_, est.B_interval_ = None, str(exc), None
        return est

    def _combine(self, N: int) -> None:
        gb, db = self.gaussian_.B_, self.dvine_.B_
        if gb is None or db is None:  # the estimate contract (base.py): no estimate, with the reason
            failed = self.gaussian_ if gb is None else self.dvine_
            raise NoEstimate(f"{failed.name} has no estimate: {failed.B_reason_}")
        runs = (np.array(self.gaussian_.B_runs_) + np.array(self.dvine_.B_runs_)) / 2
        self._set_estimate(runs, N)
        self.B_ = clip_B((gb + db) / 2, N)
        gu, du = self.gaussian_.population_uniques_, self.dvine_.population_uniques_
        self.population_uniques_ = None if gu is None or du is None else (gu + du) / 2

    def B_at(self, population_size: int) -> float:
        """The average at another population size without refitting either copula."""
        return (self.gaussian_.B_at(population_size) + self.dvine_.B_at(population_size)) / 2
