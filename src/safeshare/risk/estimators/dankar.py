"""Dankar et al. (2012, BMC Med Inform Decis Mak 12:66) decision rule, as in ARX
(``RiskModelPopulationUniqueness.getNumUniqueTuplesDankar``).

No sample uniques: no population uniques. Sampling fraction ``pi <= 0.1``:
Pitman (Zayatz when Pitman is invalid). Otherwise the smaller of Zayatz and
SNB (Zayatz when SNB is invalid). B is the chosen model's; ``chosen_`` names it.
"""

from __future__ import annotations

from safeshare.risk.classes import ClassSizeHistogram
from safeshare.risk.estimators import register
from safeshare.risk.estimators.base import RiskEstimator, Sample
from safeshare.risk.estimators.pitman import PitmanEstimator
from safeshare.risk.estimators.snb import SNBEstimator
from safeshare.risk.estimators.zayatz import ZayatzEstimator


@register
class DankarEstimator(RiskEstimator):
    """Pitman, Zayatz or SNB, chosen by the sampling fraction."""

    name = "dankar"

    def __init__(self) -> None:
        pass

    def _fit(self, sample: Sample, hist: ClassSizeHistogram, N: int) -> None:
        zayatz = ZayatzEstimator().fit(hist, N)
        chosen: RiskEstimator = zayatz
        if hist.count(1) == 0:
            self.chosen_ = "none"
            self.B_ = zayatz.B_
            self.population_uniques_ = 0.0
            return
        if hist.n / N <= 0.1:
            pitman = PitmanEstimator().fit(hist, N)
            if pitman.valid_:
                chosen = pitman
        else:
            snb = SNBEstimator().fit(hist, N)
            if snb.valid_ and (snb.population_uniques_ or 0.0) < (zayatz.population_uniques_ or 0.0):
                chosen = snb
        self.chosen_ = chosen.name
        self.B_ = chosen.B_
        self.population_uniques_ = chosen.population_uniques_
