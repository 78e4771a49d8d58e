"""Exact re-identification risk measures from sample and population class sizes.

Notation (Jiang et al. 2022, PLoS ONE 17(6):e0269097, §2.2): a sample of ``n``
records drawn from a population of ``N`` people; record ``k``'s equivalence
class (records equal on the quasi-identifiers) has ``f_k`` records in the
sample and ``F_k`` people in the population; ``J`` sample classes.
Per class ``j``: sizes ``f_j`` and ``F_j`` (every record of a class shares them).

* **A**, population-to-sample match rate (the paper's Eq. 1): an adversary picks
  a person of the population and matches him to a random sample record of the
  same class. Class ``j``'s ``F_j`` people each succeed with probability
  ``(f_j/F_j)(1/f_j)``, so the class contributes 1 and ``A = J / N``.
* **B**, sample-to-population match rate (Eq. 2): the adversary picks a sample
  record and matches it to a random person of its class,
  ``B = (1/n) sum_k 1/F_k = (1/n) sum_j f_j / F_j``.
* **Prosecutor** risk (the adversary knows the target is in the sample):
  ``1/f_k`` per record; its maximum ``1/min f``, mean ``J/n`` and the share of
  records with ``1/f_k > threshold``.
* **Journalist** risk (the target is only known to be in the population):
  ``1/F_k`` per record; its maximum ``1/min F``, mean (which is ``B``) and the
  share of records above the threshold.
* **Marketer** risk (the adversary matches *every* record and counts the
  correct matches): the expected share of correct matches is
  ``(1/n) sum_j f_j / F_j`` against the population (the same number as B,
  as in ARX's risk summary) and ``J/n`` when the sample is the whole population.
* **PK_k**: the share of sample records in classes smaller than ``k``
  (``f_k < k``), i.e. the records a k-anonymity release would have to
  generalize or suppress.

PK_k and the marketer risk are defined once, here (:func:`records_at_risk`,
:func:`pk_share`, :func:`marketer_risk`), vectorized along any axis so that
the surveillance Monte Carlo forecast (``safeshare.surveillance.simulate``,
many simulations at once) uses the same definitions as :func:`risk_measures`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from safeshare.errors import DataError, InputError
from safeshare.risk.population import check_population

DEFAULT_THRESHOLD = 0.09
"""The paper's acceptable sample-to-population risk (§1, §4.3)."""

DEFAULT_PK = (2, 3, 5, 11)


def records_at_risk(sizes: np.ndarray, k: int, axis: int | None = None) -> np.ndarray:
    """The records in classes of fewer than ``k``: ``sum_j f_j [f_j < k]`` along ``axis``.

    ``sizes`` holds class sizes ``f_j`` (0 for an empty class, which counts for
    nothing) of any integer dtype; the sum stays in that dtype (it is at most
    the number of records, which the dtype holds), because widening sums and
    ``np.where`` with a scalar are several times slower on the Monte Carlo
    arrays of the surveillance forecast (simulations x groups)."""
    sizes = np.asarray(sizes)
    if np.issubdtype(sizes.dtype, np.integer) and k > np.iinfo(sizes.dtype).max:
        small = sizes  # every class is smaller than k
    else:
        small = sizes * (sizes < k)
    return np.asarray(small.sum(axis=axis, dtype=sizes.dtype))


def pk_share(sizes: np.ndarray, k: int, axis: int | None = None) -> np.ndarray:
    """PK_k along ``axis``: the share of records in classes of fewer than ``k`` (0 without records)."""
    sizes = np.asarray(sizes)
    n = sizes.sum(axis=axis, dtype=np.int64)
    at_risk = records_at_risk(sizes, k, axis).astype(np.float64)
    return np.asarray(np.divide(at_risk, n, out=np.zeros(np.shape(at_risk)), where=n > 0))


def marketer_risk(
    sample_sizes: np.ndarray, population_sizes: np.ndarray, axis: int | None = None
) -> np.ndarray:
    """The marketer risk ``(1/n) sum_j f_j / F_j`` along ``axis`` (0 without records).

    ``population_sizes`` broadcasts against ``sample_sizes``; a class with no
    people (``F_j = 0``, so no records either) counts for nothing."""
    f = np.asarray(sample_sizes)
    F = np.asarray(population_sizes, dtype=np.float64)
    ratio = np.divide(f, F, out=np.zeros(np.broadcast_shapes(f.shape, F.shape)), where=F > 0)
    n = f.sum(axis=axis, dtype=np.float64)
    matched = ratio.sum(axis=axis)
    return np.asarray(np.divide(matched, n, out=np.zeros(np.shape(matched)), where=n > 0))


def _as_sizes(values: Sequence[int] | np.ndarray, what: str) -> np.ndarray:
    arr = np.asarray(values, dtype=np.int64)
    if arr.ndim != 1 or arr.size == 0:
        raise InputError(f"{what}: expected a non-empty one-dimensional array of class sizes")
    if (arr < 1).any():
        raise InputError(f"{what}: every class size must be >= 1")
    return arr


@dataclass(frozen=True)
class RiskMeasures:
    """Exact risk measures of one sample (see the module docstring for the formulas)."""

    n: int
    n_classes: int
    population_size: int | None
    threshold: float
    prosecutor_max: float
    prosecutor_mean: float
    prosecutor_share_above: float
    sample_uniques: int
    pk: dict[int, float] = field(default_factory=dict)
    A: float | None = None
    B: float | None = None
    journalist_max: float | None = None
    journalist_share_above: float | None = None
    marketer: float | None = None
    population_uniques_in_sample: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "classes": self.n_classes,
            "population_size": self.population_size,
            "threshold": self.threshold,
            "A": self.A,
            "B": self.B,
            "prosecutor": {
                "max": self.prosecutor_max,
                "mean": self.prosecutor_mean,
                "share_above_threshold": self.prosecutor_share_above,
            },
            "journalist": None
            if self.journalist_max is None
            else {
                "max": self.journalist_max,
                "mean": self.B,
                "share_above_threshold": self.journalist_share_above,
            },
            "marketer": self.marketer,
            "sample_uniques": self.sample_uniques,
            "population_uniques_in_sample": self.population_uniques_in_sample,
            "pk": {str(k): v for k, v in self.pk.items()},
        }


def risk_measures(
    sample_sizes: Sequence[int] | np.ndarray,
    population_sizes: Sequence[int] | np.ndarray | None = None,
    population_size: int | None = None,
    threshold: float = DEFAULT_THRESHOLD,
    pk: Sequence[int] = DEFAULT_PK,
) -> RiskMeasures:
    """The measures of a sample given per-class sizes ``f_j`` (and ``F_j`` when known).

    ``population_sizes`` must be aligned with ``sample_sizes`` and satisfy
    ``F_j >= f_j``; ``population_size`` (N) is needed for A and defaults to
    nothing (A unknown) unless the population sizes are given, in which case it
    must still be passed: the classes of the population that the sample misses
    are not in ``F_j``.
    """
    f = _as_sizes(sample_sizes, "sample class sizes")
    if not 0 < threshold <= 1:
        raise InputError(f"threshold: expected a probability in (0, 1], got {threshold}")
    n = int(f.sum())
    J = int(f.size)
    check_population(population_size, n)
    inv_f = 1.0 / f
    pk_values = {int(k): float(pk_share(f, int(k))) for k in pk}
    out: dict[str, Any] = {
        "n": n,
        "n_classes": J,
        "population_size": population_size,
        "threshold": threshold,
        "prosecutor_max": float(inv_f.max()),
        "prosecutor_mean": J / n,
        "prosecutor_share_above": float(f[inv_f > threshold].sum() / n),
        "sample_uniques": int((f == 1).sum()),
        "pk": pk_values,
    }
    if population_size is not None:
        out["A"] = J / population_size
    if population_sizes is None:
        if population_size is not None and population_size == n:
            # The sample is the population: F = f.
            population_sizes = f
        else:
            out["marketer"] = J / n if population_size is None else None
            return RiskMeasures(**out)
    F = _as_sizes(population_sizes, "population class sizes")
    if F.shape != f.shape:
        raise InputError("population class sizes: one size per sample class is required")
    if (f > F).any():
        raise DataError("a sample class is larger than its population class: the sample is not drawn from it")
    inv_F = 1.0 / F
    B = float(marketer_risk(f, F))
    out.update(
        B=B,
        journalist_max=float(inv_F.max()),
        journalist_share_above=float(f[inv_F > threshold].sum() / n),
        marketer=B,
        population_uniques_in_sample=int((F == 1).sum()),
    )
    return RiskMeasures(**out)


def class_sizes(
    sample: pd.DataFrame, qi: Sequence[str], population: pd.DataFrame | None = None
) -> tuple[np.ndarray, np.ndarray | None]:
    """Per-class ``f_j`` of ``sample`` on ``qi`` and, with a population, the aligned ``F_j``.

    Values are compared as text. A sample class absent from the population is a
    :class:`~safeshare.errors.DataError` (the sample cannot come from it).
    """
    qi = list(qi)
    for name, frame in (("data", sample), ("population", population)):
        if frame is None:
            continue
        missing = [c for c in qi if c not in frame.columns]
        if missing:
            raise InputError(f"unknown quasi-identifier {missing[0]!r} in the {name}")
    s = sample[qi].astype(str).groupby(qi, sort=False).size().rename("f").reset_index()
    if population is None:
        return s["f"].to_numpy(dtype=np.int64), None
    p = population[qi].astype(str).groupby(qi, sort=False).size().rename("F").reset_index()
    joined = s.merge(p, on=qi, how="left")
    if joined["F"].isna().any():
        row = joined[joined["F"].isna()].iloc[0]
        values = ", ".join(f"{c}={row[c]!r}" for c in qi)
        raise DataError(f"the population has no record with {values}, which the sample has")
    return joined["f"].to_numpy(dtype=np.int64), joined["F"].to_numpy(dtype=np.int64)


def exact_B(sample_keys: np.ndarray, population_keys: np.ndarray) -> float:
    """B from packed per-record keys of a sample and of the population it was drawn from."""
    pop_keys, pop_counts = np.unique(population_keys, return_counts=True)
    idx = np.searchsorted(pop_keys, sample_keys)
    if (idx >= pop_keys.size).any() or (pop_keys[np.minimum(idx, pop_keys.size - 1)] != sample_keys).any():
        raise DataError("a sample record's class is not in the population")
    return float(np.mean(1.0 / pop_counts[idx]))
