"""Benedetti-Franconi individual risk (Benedetti & Franconi 1998; sdcMicro ``indivRisk``;
Templ 2017; baseline "Italian" of Jiang et al. 2022, §2.4).

With sampling weights ``w = N/n`` (simple random sampling), a class of ``f``
sample records has estimated population size ``F^ = f N/n`` and
``p = f / F^ = n/N``. Given ``f``, ``F - f`` is modelled as negative binomial
with ``f`` successes and probability ``p``; the record's risk is
``r = E[1/F | f]``:

* ``f = 1``: ``r = p/(1-p) ln(1/p)``
* ``f = 2``: ``r = p/(1-p) - (p/(1-p))^2 ln(1/p)``
* ``f >= 3``: ``r = p / (f - (1-p))`` (sdcMicro's default "approx"), or the
  exact negative-binomial sum ``sum_{F>=f} C(F-1, f-1) p^f (1-p)^(F-f) / F``
  with ``method="exact"``;
* ``p = 1`` (the sample is the population): ``r = 1/f``.

Aggregated: ``B = (1/n) sum_j f_j r(f_j)``. Population uniques: the model's
``P(F = 1 | f = 1) = p`` for each sample unique, scaled by ``1/p``, i.e. the
number of sample uniques.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

from safeshare.errors import InputError
from safeshare.risk.classes import ClassSizeHistogram
from safeshare.risk.estimators import register
from safeshare.risk.estimators.base import RiskEstimator, Sample


def individual_risk(f: int, p: float, method: str = "approx") -> float:
    """sdcMicro's ``indivRisk`` for a class of ``f`` sample records and ``p = f/F^``."""
    if p >= 1.0:
        return 1.0 / f
    if f == 1:
        return p / (1 - p) * -math.log(p)
    if f == 2:
        odds = p / (1 - p)
        return odds - odds * odds * -math.log(p)
    if method == "approx":
        return p / (f - (1 - p))
    # exact: E[1/F] with F - f ~ NegBin(f, p), summed until the tail is negligible
    hi = int(stats.nbinom.ppf(1 - 1e-12, f, p)) + 1
    x = np.arange(hi + 1)
    return float((stats.nbinom.pmf(x, f, p) / (f + x)).sum())


@register
class BenedettiFranconiEstimator(RiskEstimator):
    """sdcMicro's individual risk with weights N/n, averaged over records."""

    name = "benedetti_franconi"

    def __init__(self, method: str = "approx") -> None:
        self.method = method

    def _validate(self) -> None:
        if self.method not in ("approx", "exact"):
            raise InputError(f"benedetti_franconi method: expected approx or exact, got {self.method!r}")

    def _fit(self, sample: Sample, hist: ClassSizeHistogram, N: int) -> None:
        p = hist.n / N
        risks = np.array([individual_risk(int(f), p, self.method) for f in hist.sizes])
        self.B_ = float((hist.sizes * hist.classes * risks).sum() / hist.n)
        self.population_uniques_ = float(hist.count(1))
