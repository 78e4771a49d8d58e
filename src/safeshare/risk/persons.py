"""Re-identification risk counted in people (issue 32).

The measures of :mod:`safeshare.risk.measures` are per record: record ``k`` of class ``j`` has
prosecutor risk ``1/f_j``. With several records per person the unit a privacy officer signs for
is the person, and ``f_j`` must count the class's **people**: a class of 5 records of 3 people
gives each of them risk 1/3. A person with records in several classes is exposed through each;
an adversary who knows the person's quasi-identifiers for any of their records finds its class,
so the person's risk is that of their most exposed record. With ``c(p)`` the released class of
person ``p`` with the fewest people, ``f_p = people(c(p))`` and ``F_p`` its population size:

* prosecutor risk of ``p``: ``1/f_p``; its maximum, its mean over the ``n`` released people and
  the share of people above the threshold;
* journalist risk ``1/F_p``; ``B = (1/n) sum_p 1/F_p`` (sample-to-population, Jiang et al. 2022
  Eq. 2, per person), the share above the threshold, the marketer risk (``B``; the prosecutor mean
  when the sample is the population);
* ``A = (1/N) sum_p 1/f_p`` (population-to-sample: each released class ``j`` contributes the
  share ``g_j / f_j <= 1`` of its people whose most exposed class it is, so ``A <= J / N``);
* ``PK_k``: the share of people whose most exposed class holds fewer than ``k`` people.

``N`` is the population in people. With one record per person (``f_p`` the class size of each
record) every formula is the record-level one of :func:`~safeshare.risk.measures.risk_measures`
(tests/test_persons.py checks it). These figures are for an adversary who sees records, not
people: when the release links a person's records the profile figures
(:mod:`safeshare.risk.profiles`) are the ones that bound the linked person.

The estimators of B (:mod:`safeshare.risk.estimators`) fit a class-size histogram: here the
released classes' people. When people lie in several classes the histogram counts a person once
per class (``n`` is then the person-class incidences, more than the people); the estimate is
flagged so, and refused when those exceed ``N``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from safeshare.errors import InputError
from safeshare.risk.drivers import risk_drivers
from safeshare.risk.measures import DEFAULT_PK, DEFAULT_THRESHOLD, RiskMeasures
from safeshare.risk.population import check_population

FloatArray = npt.NDArray[np.float64]


def _as_people(values: Sequence[int] | np.ndarray, what: str) -> np.ndarray:
    arr = np.asarray(values, dtype=np.int64)
    if arr.ndim != 1 or arr.size == 0:
        raise InputError(f"{what}: expected a non-empty one-dimensional array of sizes in people")
    if (arr < 1).any():
        raise InputError(f"{what}: every size must be >= 1")
    return arr


def person_risk_measures(
    person_sizes: Sequence[int] | np.ndarray,
    population_sizes: Sequence[int] | np.ndarray | None = None,
    population_size: int | None = None,
    n_classes: int | None = None,
    threshold: float = DEFAULT_THRESHOLD,
    pk: Sequence[int] = DEFAULT_PK,
) -> RiskMeasures:
    """The risk measures (module docstring) of ``n`` released people from ``f_p`` (the people of
    each person's most exposed released class) and, when known, ``F_p`` (that class's people in
    the population). ``n_classes``: the released classes ``J`` (reported)."""
    f = _as_people(person_sizes, "people's class sizes")
    if not 0 < threshold <= 1:
        raise InputError(f"threshold: expected a probability in (0, 1], got {threshold}")
    n = int(f.size)
    check_population(population_size, n, unit="people")
    inv_f = 1.0 / f
    out: dict[str, Any] = {
        "n": n,
        "n_classes": int(n_classes) if n_classes is not None else int(np.unique(f).size),
        "population_size": population_size,
        "threshold": threshold,
        "prosecutor_max": float(inv_f.max()),
        "prosecutor_mean": float(inv_f.mean()),
        "prosecutor_share_above": float((inv_f > threshold).mean()),
        "sample_uniques": int((f == 1).sum()),
        "pk": {int(k): float((f < int(k)).mean()) for k in pk},
    }
    if population_size is not None:
        out["A"] = float(inv_f.sum() / population_size)
    if population_sizes is None:
        if population_size is not None and population_size == n:
            population_sizes = f
        else:
            out["marketer"] = float(inv_f.mean()) if population_size is None else None
            return RiskMeasures(**out)
    F = _as_people(population_sizes, "population sizes in people")
    if F.shape != f.shape:
        raise InputError("population sizes in people: one size per person is required")
    if (f > F).any():
        raise InputError("a person's class holds more people in the sample than in the population")
    inv_F = 1.0 / F
    B = float(inv_F.mean())
    out.update(
        B=B,
        journalist_max=float(inv_F.max()),
        journalist_share_above=float((inv_F > threshold).mean()),
        marketer=B,
        population_uniques_in_sample=int((F == 1).sum()),
    )
    return RiskMeasures(**out)


def most_exposed(
    slot_people: np.ndarray, pair_slot: np.ndarray, pair_person: np.ndarray, counted: np.ndarray | None = None
) -> np.ndarray:
    """``f_p``: per person (of the pairs, sorted by person), the fewest people of a class of
    theirs; ``counted``: per class slot, whether it counts (the released classes)."""
    slot_people = np.asarray(slot_people, dtype=np.float64)
    slots = np.asarray(pair_slot)
    persons = np.asarray(pair_person)
    if counted is not None:
        keep = np.asarray(counted, dtype=bool)[slots]
        slots, persons = slots[keep], persons[keep]
    if persons.size == 0:
        return np.zeros(0, dtype=np.int64)
    values = slot_people[slots]
    starts = np.flatnonzero(np.r_[True, persons[1:] != persons[:-1]])
    return np.minimum.reduceat(values, starts).astype(np.int64)


def person_side(
    person_sizes: np.ndarray,
    class_people: np.ndarray,
    population_size: int,
    exact_population: bool,
    estimator: str,
    threshold: float = DEFAULT_THRESHOLD,
) -> dict[str, Any] | None:
    """One side (input or release) of the risk section in people; ``None`` without people."""
    from safeshare.risk.classes import ClassSizeHistogram
    from safeshare.risk.estimators import make_estimator

    f = np.asarray(person_sizes, dtype=np.int64)
    if f.size == 0:
        return None
    classes = np.asarray(class_people, dtype=np.int64)
    classes = classes[classes > 0]
    incidences = int(classes.sum())
    estimate: float | None = None
    interval: list[float] | None = None
    reason: str | None = None
    if incidences > population_size:
        reason = (
            f"the classes count {incidences:,} person-class pairs (people in several classes), more than the "
            f"population of {population_size:,} people"
        )
    else:
        fitted = make_estimator(estimator).fit(ClassSizeHistogram.from_sizes(classes), population_size)
        estimate, reason = fitted.B_, fitted.B_reason_
        interval = None if fitted.B_interval_ is None else list(fitted.B_interval_)
    if exact_population:
        doc = person_risk_measures(f, f, population_size, int(classes.size), threshold).to_dict()
        doc["estimated"] = False
    else:
        doc = person_risk_measures(f, None, population_size, int(classes.size), threshold).to_dict()
        doc["B"] = estimate
        doc["journalist"] = {"mean": estimate}
        doc["marketer"] = estimate
        doc["estimated"] = True
    doc["B_estimate"] = {estimator: estimate}
    doc["B_interval"] = {estimator: interval}
    # the classes that drive the risk, by the people in them (each person counted in each class)
    doc["drivers"] = risk_drivers(classes, classes if exact_population else None)
    if estimate is None:
        doc["B_no_estimate"] = {estimator: reason or "no estimate"}
    doc["unit"] = "people"
    doc["class_incidences"] = incidences
    return doc


__all__ = ["most_exposed", "person_risk_measures", "person_side"]
