"""The average of the Gaussian and D-vine copula estimates: the estimator Jiang et al. (2022,
§2.5, §4.1) recommend, ``B = (B*_gaussian + B*_dvine) / 2``."""

from __future__ import annotations

from safeshare.risk.classes import ClassSizeHistogram
from safeshare.risk.estimators import register
from safeshare.risk.estimators.base import NoEstimate, RiskEstimator, Sample
from safeshare.risk.estimators.dvine_copula import DVineCopulaEstimator
from safeshare.risk.estimators.gaussian_copula import GaussianCopulaEstimator
from safeshare.risk.synthesis import DEFAULT_CHUNK


@register
class AverageCopulaEstimator(RiskEstimator):
    """Mean of :class:`GaussianCopulaEstimator` and :class:`DVineCopulaEstimator`."""

    name = "average"
    requires_table = True

    def __init__(
        self,
        correlation: str = "mi",
        repetitions: int = 1,
        chunk_size: int = DEFAULT_CHUNK,
        random_state: int | None = None,
    ) -> None:
        self.correlation = correlation
        self.repetitions = repetitions
        self.chunk_size = chunk_size
        self.random_state = random_state

    def _fit(self, sample: Sample, hist: ClassSizeHistogram, N: int) -> None:
        self.gaussian_ = GaussianCopulaEstimator(
            self.correlation, self.repetitions, self.chunk_size, self.random_state
        ).fit(sample, N)
        seed = None if self.random_state is None else self.random_state + 1
        self.dvine_ = DVineCopulaEstimator(self.repetitions, self.chunk_size, seed).fit(sample, N)
        gb, db = self.gaussian_.B_, self.dvine_.B_
        if gb is None or db is None:  # the estimate contract (base.py): no estimate, with the reason
            failed = self.gaussian_ if gb is None else self.dvine_
            raise NoEstimate(f"{failed.name} has no estimate: {failed.B_reason_}")
        self.B_ = (gb + db) / 2
        gu, du = self.gaussian_.population_uniques_, self.dvine_.population_uniques_
        self.population_uniques_ = None if gu is None or du is None else (gu + du) / 2

    def B_at(self, population_size: int) -> float:
        """The average at another population size without refitting either copula."""
        return (self.gaussian_.B_at(population_size) + self.dvine_.B_at(population_size)) / 2
