"""How much the release's B rests on N: B at N/2, N and 2N, and the N at which B would cross the
threshold (issue 33, "a sensitivity band").

B (Jiang et al., PLoS ONE 17(6):e0269097, 2022, Eq. 2), ``(1/n) sum_k 1/F_k``, is estimated from the
released class sizes ``f_j`` and the population size ``N``: each class-size estimator gives
``E[1/F | f]`` under its model of how a population of ``N`` people is sampled, and
``B^ = (1/n) sum_f c_f f E[1/F | f]``. ``N`` is often a guess; the paper's sensitivity analysis
(§3.3) finds that a larger ``N`` than the true one underestimates B and advises erring on a smaller
one. This module states, with the run's estimator:

* the **band** ``B(N/2)``, ``B(N)``, ``B(2N)``. With no N given (the input is the population,
  ``N = n``), ``N/2`` is smaller than the sample: no B there (said so);
* the **crossing**: the smallest ``N'`` in ``[n, 100 N]`` with ``B(N') <= threshold`` when B
  crosses the threshold there (B decreases with ``N``: a larger population makes each class's
  people more numerous), found by bisection on ``log N'`` to a relative ``1e-4``; else "never
  within [n, 100 N]" and on which side B stays.

**People.** With a person key (issue 32) the sizes are the released classes' *people* and ``n`` the
released people; a person in several classes is counted once per class by the estimator's
histogram (person-class pairs), so B has an estimate only for ``N'`` at least those pairs, as in the
report's risk section (:func:`safeshare.risk.persons.person_side`). ``n <= N'`` is checked in
people, never in pairs (:class:`~safeshare.risk.population.Population`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from safeshare.errors import InputError
from safeshare.numerics import TOLERANCE
from safeshare.risk.population import Population
from safeshare.risk.release_risk import release_risk_estimate

#: The band's factors of N.
FACTORS = (0.5, 1.0, 2.0)

#: The search range of the crossing: [n, CROSSING_RANGE * N].
CROSSING_RANGE = 100

#: Relative precision of the crossing N.
CROSSING_PRECISION = 1e-4


@dataclass(frozen=True)
class ReleasedClasses:
    """What B is estimated from: the released classes' ``sizes`` (in ``unit``), and ``n``, the
    released people (records when one per person): ``sizes.sum()`` without a person key, at most
    it with one (a person in several classes)."""

    sizes: np.ndarray
    n: int
    unit: str = "records"

    @classmethod
    def of(
        cls, sizes: Sequence[int] | np.ndarray, n: int | None = None, unit: str = "records"
    ) -> ReleasedClasses:
        f = np.asarray(sizes, dtype=np.int64)
        f = f[f > 0]
        pairs = int(f.sum())
        count = pairs if n is None else int(n)
        if count > pairs:
            raise InputError(f"released classes: {count} {unit} in classes holding {pairs} in all")
        return cls(f, count, unit)

    @property
    def pairs(self) -> int:
        """The estimator's ``n``: the classes' sizes summed (person-class pairs with a person key)."""
        return int(self.sizes.sum())

    @property
    def smallest_N(self) -> int:
        """The smallest ``N`` at which B has an estimate: ``n``, and the person-class pairs."""
        return max(self.n, self.pairs)


@dataclass(frozen=True)
class Point:
    """B at one ``N`` (``None`` with the ``reason`` when there is no estimate)."""

    N: int
    B: float | None
    reason: str | None = None


def b_at(classes: ReleasedClasses, N: int, estimator: str) -> Point:
    """B of ``classes`` in a population of ``N`` people with ``estimator`` (no bootstrap: the value
    only, as the risk model's search computes it)."""
    N = int(N)
    if classes.sizes.size == 0:
        return Point(N, 0.0)
    try:
        Population.of(N).check(classes.n, "release", classes.unit)
    except InputError as exc:
        return Point(N, None, str(exc))
    if classes.pairs > N:
        return Point(
            N,
            None,
            f"the classes count {classes.pairs:,} person-class pairs (people in several classes), more than "
            f"a population of {N:,} people",
        )
    value = release_risk_estimate(classes.sizes, N, "B", estimator)
    return Point(N, value.value, value.reason)


def _below(point: Point, threshold: float) -> bool:
    return point.B is not None and threshold + TOLERANCE >= point.B


def crossing(classes: ReleasedClasses, N: int, estimator: str, threshold: float) -> dict[str, Any]:
    """The N at which B crosses ``threshold`` in ``[n, 100 N]`` (module docstring): ``N`` (the
    smallest N' of the range with ``B(N') <= threshold``, ``None`` when B does not cross there),
    ``B`` at it, the ``range`` searched and the ``text``."""
    lo, hi = classes.smallest_N, CROSSING_RANGE * int(N)
    a, b = b_at(classes, lo, estimator), b_at(classes, hi, estimator)
    out: dict[str, Any] = {"range": [lo, hi], "N": None, "B": None}
    if _below(a, threshold):
        out["text"] = (
            f"never within [{lo:,}, {hi:,}] ({CROSSING_RANGE} N): B <= {threshold:g} for every N in it"
        )
        return out
    if not _below(b, threshold):
        out["text"] = (
            f"never within [{lo:,}, {hi:,}] ({CROSSING_RANGE} N): B > {threshold:g} "
            "(or no estimate) for every N in it"
        )
        return out
    # invariant: B(lo) above the threshold, B(hi) at most it
    while hi - lo > 1 and hi / lo - 1 > CROSSING_PRECISION:
        mid = round(math.sqrt(lo * hi))
        mid = min(max(mid, lo + 1), hi - 1)
        point = b_at(classes, mid, estimator)
        if _below(point, threshold):
            hi, b = mid, point
        else:
            lo = mid
    out.update(N=hi, B=b.B)
    side = "at most" if hi <= int(N) else "above"
    out["text"] = (
        f"B would reach {threshold:g} at N = {hi:,}: with the given N = {int(N):,} "
        f"B is {side} the threshold; "
        f"{'a smaller' if hi <= int(N) else 'a larger'} population than {hi:,} "
        f"{'would put B above it' if hi <= int(N) else 'is needed to bring B to it'}"
    )
    return out


def sensitivity(classes: ReleasedClasses, N: int, estimator: str, threshold: float) -> dict[str, Any]:
    """report.json's ``certificate.sensitivity``: the band (B at N/2, N, 2N with the run's
    ``estimator``) and the crossing of ``threshold``. ``N``: the population the report's risk
    section assumed (the given size, else the input's people or records:
    :meth:`~safeshare.risk.population.Population.resolve`)."""
    N = int(N)
    points = [b_at(classes, max(1, round(f * N)), estimator) for f in FACTORS]
    return {
        "estimator": estimator,
        "threshold": threshold,
        "unit": classes.unit,
        "N": N,
        "B_at_half_N": points[0].B,
        "B_at_N": points[1].B,
        "B_at_double_N": points[2].B,
        "points": [
            {"factor": f, "N": p.N, "B": p.B, "reason": p.reason}
            for f, p in zip(FACTORS, points, strict=True)
        ],
        "crossing": crossing(classes, N, estimator, threshold),
    }


__all__ = ["FACTORS", "Point", "ReleasedClasses", "b_at", "crossing", "sensitivity"]
