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

Aggregated: ``B = (1/n) sum_j f_j r(f_j)``.

Population uniques (sdcMicro's semantics, ``tau_1`` of ``modRisk``): the expected number of
the sample's uniques that are unique in the population,
``tau_1 = sum_{j: f_j = 1} P(F_j = 1 | f_j = 1) = s_1 p`` (the negative binomial with one
success gives ``P(F = 1) = p``), with ``s_1`` the sample uniques; ``s_1`` itself at ``p = 1``.
It counts people of the sample only (``uniques_scope = "sample"``): the model says nothing of
the classes the sample misses, and extrapolating by ``1/p`` would give back ``s_1``, the
sample's own count, which is not an estimate (issue 30, item 14).
"""

from __future__ import annotations

import math

import numpy as np

from safeshare.errors import InputError
from safeshare.risk.classes import ClassSizeHistogram
from safeshare.risk.estimators import register
from safeshare.risk.estimators._sums import log_gamma_ratio, posterior_moments
from safeshare.risk.estimators.class_size import ClassSizeEstimator


def individual_risk(f: int, p: float, method: str = "approx") -> float:
    """sdcMicro's ``indivRisk`` for a class of ``f`` sample records and ``p = f/F^``."""
    return float(individual_risks(np.array([f]), p, method)[0])


def individual_risks(f: np.ndarray, p: float, method: str = "approx") -> np.ndarray:
    """:func:`individual_risk` for every size in ``f`` at once."""
    f = np.asarray(f, dtype=float)
    if p >= 1.0:
        return 1.0 / f
    if method == "exact":
        return nb_moments(f, p)[0]
    odds = p / (1 - p)
    log_inv = -math.log(p)
    out = p / (f - (1 - p))  # f >= 3: sdcMicro's "approx"
    out = np.where(f == 1, odds * log_inv, out)
    return np.where(f == 2, odds - odds * odds * log_inv, out)


def nb_moments(f: np.ndarray, p: float) -> tuple[np.ndarray, np.ndarray]:
    """``E[1/F]``, ``E[1/F^2]`` with ``F - f ~ NegBin(f, p)`` (O(1) per size, whatever ``1/p``)."""
    f = np.asarray(f, dtype=float)
    if p >= 1.0:
        return 1.0 / f, 1.0 / f**2
    log_q = math.log1p(-p)

    def logw(r: np.ndarray, x: np.ndarray) -> np.ndarray:  # ln C(f + x - 1, x) + x ln q
        return log_gamma_ratio(x + 1, f[r] - 1) + x * log_q

    hi = np.full(f.size, 2.0**52)  # the model is unbounded; the weights vanish long before
    return posterior_moments(logw, np.zeros(f.size), hi, f)


@register
class BenedettiFranconiEstimator(ClassSizeEstimator):
    """sdcMicro's individual risk with weights N/n, averaged over records.

    Interval: the negative binomial's own variance of ``1/F`` per class (no fitted
    parameter: ``p = n/N``), centred on the estimate."""

    name = "benedetti_franconi"
    fitted_parameters = False
    uniques_scope = "sample"

    def __init__(self, method: str = "approx") -> None:
        self.method = method
        self.n_bootstrap = 0
        self.random_state: int | None = None

    def get_params(self) -> dict[str, object]:
        return {"method": self.method}

    def _validate(self) -> None:
        if self.method not in ("approx", "exact"):
            raise InputError(f"benedetti_franconi method: expected approx or exact, got {self.method!r}")

    def _fit_model(self, hist: ClassSizeHistogram, N: int, start: object = None) -> float:
        return hist.n / N

    def _moments(self, model: float, hist: ClassSizeHistogram, N: int) -> tuple[np.ndarray, np.ndarray]:
        m1, m2 = nb_moments(hist.sizes, model)
        if self.method == "approx":  # sdcMicro's closed forms for B; the NB's variance for the interval
            approx = individual_risks(hist.sizes, model, "approx")
            m2 = m2 - m1 * m1 + approx * approx
            m1 = approx
        return m1, m2

    def _use_model(self, model: float, hist: ClassSizeHistogram, N: int) -> None:
        # tau_1 = sum over the sample uniques of P(F = 1 | f = 1) = p (module docstring)
        self.population_uniques_ = float(hist.count(1)) * min(model, 1.0)
