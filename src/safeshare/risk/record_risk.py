"""Per-record re-identification risk: each released record's probability of correct re-identification.

A released record ``k`` lies in a class of ``f_k`` released records and ``F_k`` people of the
population (``N`` people; the release has ``n`` records). An adversary who knows the record's
person's quasi-identifiers and matches the record to one of the ``F_k`` people of its class,
uniformly, is right with probability ``1/F_k`` (the journalist risk of one record; its mean over
the records is B, :mod:`safeshare.risk.measures`).

* **Exact** (the population known, e.g. the adversary's identified frame is the population):
  ``r_k = 1/F_k`` (:func:`exact_record_risk`).
* **From the class size** (N known, F not): ``r(f) = E[1/F | f]`` under the Benedetti-Franconi
  model ``F - f ~ NegBin(f, p)``, ``p = n/N`` (:func:`class_size_record_risk`; sdcMicro's
  ``indivRisk``, the exact negative-binomial sum). It depends on ``f`` only and decreases in
  ``f``, so "every released record's risk is at most t" is a per-class rule monotone under merging
  classes (the ``record`` measure of the risk privacy model, :mod:`safeshare.models.risk`).
* **From the fitted Gaussian copula** (Rocher, Hendrickx & de Montjoye, Nat. Commun. 10:3069,
  2019; implemented from the paper): the copula of :mod:`safeshare.risk.copula` (empirical
  marginals, MI-matched latent correlation) gives the probability ``p_k`` of the record's
  combination for one person of the population (the latent normal's rectangle probability, GHK).
  The paper's *individual uniqueness* and *correctness* of a person ``x`` of a population of ``N``
  are ``xi_x = (1 - p_x)^(N-1)`` and ``kappa_x = E[1/(1 + Bin(N-1, p_x))] = (1 - (1 - p_x)^N) / (N p_x)``.
  A released record is known to share its combination with the ``f_k - 1`` other released records
  of its class; the other ``N - n`` people carry it independently with probability ``p_k``, so
  (the paper's formulas conditioned on the release, which reduce to them at ``n = 1``):

      F_k = f_k + Y_k,  Y_k ~ Binomial(N - n, p_k)
      uniqueness  xi_k    = P(F_k = 1) = [f_k = 1] (1 - p_k)^(N - n)
      correctness kappa_k = E[1/F_k]  = int_0^1 t^(f_k - 1) (1 - p_k + p_k t)^(N - n) dt

  (:func:`expected_inverse_shifted_binomial`, Gauss-Legendre quadrature). ``kappa_k`` is the
  probability of correct re-identification of record ``k``; ``xi_k`` the probability that its
  person is unique in the population (what the paper's AUC is about).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import numpy as np

from safeshare.errors import InputError
from safeshare.risk.classes import SampleTable
from safeshare.risk.population import check_population

#: Gauss-Legendre nodes per panel of :func:`expected_inverse_shifted_binomial`.
_NODES, _WEIGHTS = np.polynomial.legendre.leggauss(64)
#: e-folds of the integrand kept (the rest of [0, 1] holds less than exp(-_EFOLDS) of it).
_EFOLDS = 60.0


def expected_inverse_shifted_binomial(f: np.ndarray, m: int, p: np.ndarray) -> np.ndarray:
    """``E[1/(f + Y)]``, ``Y ~ Binomial(m, p)``, element-wise (``f >= 1``, ``0 <= p <= 1``).

    ``1/(f + y) = int_0^1 t^(f+y-1) dt`` and ``E[t^Y] = (1 - p + p t)^m``, so
    ``E[1/(f+Y)] = int_0^1 (1-u)^(f-1) (1 - p u)^m du`` (``u = 1 - t``). The integrand
    decreases from 1 at ``u = 0`` at least like ``exp(-(f - 1 + m p) u)``; it is integrated by
    Gauss-Legendre on ``[0, U]``, ``U = min(1, 60 / (f - 1 + m p))``, in four panels of 64
    nodes (what lies beyond ``U`` is below ``e^-60`` of the integral). Equal to the direct sum
    over ``y`` to 1e-12 (tests/test_record_risk.py).
    """
    f = np.asarray(f, dtype=float)
    p = np.clip(np.asarray(p, dtype=float), 0.0, 1.0)
    f, p = np.broadcast_arrays(f, p)
    if (f < 1).any():
        raise InputError("a class holds at least one record")
    if m < 0:
        raise InputError("the rest of the population cannot be negative")
    rate = f - 1 + m * p
    upper = np.minimum(1.0, _EFOLDS / np.maximum(rate, 1e-300))
    total = np.zeros(f.shape)
    edges = (0.0, 1 / 16, 1 / 4, 1 / 2, 1.0)
    for a, b in itertools.pairwise(edges):
        lo, hi = a * upper, b * upper
        half = (hi - lo) / 2
        u = lo[..., None] + half[..., None] * (_NODES + 1)
        with np.errstate(divide="ignore", invalid="ignore"):
            log = (f[..., None] - 1) * np.log1p(-u) + m * np.log1p(-p[..., None] * u)
        vals = np.where(np.isfinite(log), np.exp(log), 0.0)
        total += half * (vals * _WEIGHTS).sum(axis=-1)
    return np.clip(total, 1.0 / (f + m), 1.0 / f)


def exact_record_risk(population_sizes: np.ndarray) -> np.ndarray:
    """``1/F_k`` per record (or per class): the population known."""
    F = np.asarray(population_sizes, dtype=float)
    if (F < 1).any():
        raise InputError("a released record's class holds at least its own person")
    return 1.0 / F


def class_size_record_risk(class_sizes: np.ndarray, sampling_fraction: float) -> np.ndarray:
    """``E[1/F | f]`` with ``F - f ~ NegBin(f, p)``, ``p`` the sampling fraction (the exact
    negative-binomial sum of sdcMicro's ``indivRisk``; ``1/f`` at ``p = 1``). Decreasing in ``f``."""
    from safeshare.risk.estimators.benedetti_franconi import individual_risks

    if not 0 < sampling_fraction <= 1:
        raise InputError(f"sampling fraction: expected a number in (0, 1], got {sampling_fraction!r}")
    return np.asarray(individual_risks(np.asarray(class_sizes), float(sampling_fraction), "exact"))


def smallest_safe_class(threshold: float, sampling_fraction: float, limit: int = 10**7) -> int:
    """The smallest class size ``f`` with ``class_size_record_risk(f) <= threshold`` (the risk is
    decreasing in ``f``, so every larger class is safe too): a bisection over ``f``."""
    if not 0 < threshold <= 1:
        raise InputError(f"record risk threshold: expected a number in (0, 1], got {threshold!r}")

    def ok(f: int) -> bool:
        return bool(class_size_record_risk(np.array([f]), sampling_fraction)[0] <= threshold + 1e-12)

    if ok(1):
        return 1
    lo, hi = 1, 2
    while not ok(hi):
        lo, hi = hi, hi * 2
        if hi > limit:
            raise InputError(
                f"record risk threshold {threshold:g}: no class of at most {limit:,} records meets it"
            )
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return hi


@dataclass(frozen=True)
class CopulaRecordRisk:
    """Per class of a released table: the copula's probability ``p`` of the combination, the
    uniqueness ``xi`` and the correctness ``kappa`` (module docstring), aligned with ``table``."""

    table: SampleTable
    population_size: int
    probability: np.ndarray
    uniqueness: np.ndarray
    correctness: np.ndarray
    correlation: np.ndarray


def copula_record_risk(
    table: SampleTable, population_size: int, random_state: int | None = 0, correlation: str = "mi"
) -> CopulaRecordRisk:
    """Rocher et al.'s per-record risk of every class of ``table`` (the released classes, a sample of
    ``population_size`` people) from the Gaussian copula fitted to ``table``."""
    from safeshare.risk.estimators.gaussian_copula import GaussianCopulaEstimator

    N, n = int(population_size), table.n
    check_population(N, n, "release")
    model = GaussianCopulaEstimator(correlation=correlation).fit_model(table)
    rng = np.random.default_rng(random_state)
    p = np.clip(model.class_probabilities(table.codes, rng), 0.0, 1.0)
    f = table.counts.astype(float)
    rest = N - n
    with np.errstate(divide="ignore"):
        unique = np.where(f == 1, np.exp(rest * np.log1p(-np.minimum(p, 1 - 1e-16))), 0.0)
    kappa = expected_inverse_shifted_binomial(f, rest, p)
    return CopulaRecordRisk(table, N, p, unique, kappa, model.correlation_)


#: Edges of the distribution's bins in report.json (probability of correct re-identification).
RISK_BINS = (0.0, 0.01, 0.02, 0.05, 0.09, 0.1, 0.2, 0.5, 1.0)


def distribution(per_record: np.ndarray, threshold: float) -> dict[str, Any]:
    """A distribution of per-record risks as a report shows it: records, mean, quantiles,
    maximum, the records above ``threshold``, and the records per bin (:data:`RISK_BINS`)."""
    r = np.asarray(per_record, dtype=float)
    if r.size == 0:
        return {"records": 0, "threshold": threshold, "above_threshold": 0, "share_above_threshold": 0.0}
    q = np.quantile(r, [0.5, 0.9, 0.99])
    counts = np.histogram(np.clip(r, 0.0, 1.0), bins=RISK_BINS)[0]
    return {
        "records": int(r.size),
        "mean": float(r.mean()),
        "median": float(q[0]),
        "p90": float(q[1]),
        "p99": float(q[2]),
        "max": float(r.max()),
        "threshold": float(threshold),
        "above_threshold": int((r > threshold).sum()),
        "share_above_threshold": float((r > threshold).mean()),
        "bins": [
            {"low": float(lo), "high": float(hi), "records": int(c)}
            for lo, hi, c in zip(RISK_BINS[:-1], RISK_BINS[1:], counts, strict=True)
        ],
    }
