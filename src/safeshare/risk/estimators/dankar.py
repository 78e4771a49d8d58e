"""Dankar et al. (2012, BMC Med Inform Decis Mak 12:66) decision rule, as ARX implements it
(``RiskModelPopulationUniqueness.getNumUniqueTuplesDankar``).

The rule chooses a model of *population uniqueness*, by the number of population uniques it
estimates -- not by B:

* no sample uniques: ``zayatz`` (ARX: 0 population uniques);
* sampling fraction ``pi <= 0.1``: ``pitman``, or ``zayatz`` when Pitman has no valid
  estimate (no fit, or population uniques outside ``[0, N]``);
* ``pi > 0.1``: of ``zayatz`` and ``snb``, the one that estimates *fewer population
  uniques* (``zayatz`` when SNB has no solution).

``B_``, ``B_interval_`` and ``population_uniques_`` are the chosen model's; ``chosen_`` names
it. Because the choice is made on the uniques, the chosen model's B is not necessarily the
smaller of the two Bs (the rule is *not* ``min(B_zayatz, B_snb)``).
"""

from __future__ import annotations

from safeshare.risk.classes import ClassSizeHistogram
from safeshare.risk.estimators import register
from safeshare.risk.estimators.base import (
    NoEstimate,
    RiskEstimator,
    Sample,
    check_non_negative_int,
    check_seed,
)
from safeshare.risk.estimators.class_size import DEFAULT_BOOTSTRAP
from safeshare.risk.estimators.pitman import PitmanEstimator
from safeshare.risk.estimators.snb import SNBEstimator
from safeshare.risk.estimators.zayatz import ZayatzEstimator


@register
class DankarEstimator(RiskEstimator):
    """Pitman, Zayatz or SNB, chosen by the sampling fraction and the estimated population uniques."""

    name = "dankar"

    def __init__(self, n_bootstrap: int = DEFAULT_BOOTSTRAP, random_state: int | None = 0) -> None:
        self.n_bootstrap = n_bootstrap
        self.random_state = random_state

    def _validate(self) -> None:
        check_non_negative_int(self.n_bootstrap, "dankar n_bootstrap")
        check_seed(self.random_state, "dankar random_state")

    def _fit(self, sample: Sample, hist: ClassSizeHistogram, N: int) -> None:
        boot, seed = self.n_bootstrap, self.random_state
        zayatz = ZayatzEstimator(boot, seed).fit(hist, N)
        chosen: RiskEstimator = zayatz
        if hist.count(1) > 0:
            if hist.n / N <= 0.1:
                pitman = PitmanEstimator(boot, seed).fit(hist, N)
                if pitman.B_ is not None and pitman.population_uniques_ is not None:
                    chosen = pitman
            else:
                snb = SNBEstimator(boot, seed).fit(hist, N)
                su, zu = snb.population_uniques_, zayatz.population_uniques_
                if snb.B_ is not None and su is not None and su < (zu if zu is not None else float("inf")):
                    chosen = snb
        self.chosen_ = chosen.name
        if chosen.B_ is None:
            raise NoEstimate(f"dankar chose {chosen.name}, which has no estimate: {chosen.B_reason_}")
        self.B_ = chosen.B_
        self.B_interval_ = chosen.B_interval_
        self.population_uniques_ = chosen.population_uniques_ if hist.count(1) > 0 else 0.0
