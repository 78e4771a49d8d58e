"""The 95 % prediction interval of a copula estimate: its Monte Carlo interval widened by the
estimator's error measured on real populations.

The syntheses' spread (``B_mc_interval_``) says how far ``B_`` would move with other seeds; it
does not say how far ``B_`` is from the true B. The models' error is larger: on our evaluations
(docs/risk.md, "Uncertainty") an interval of the syntheses alone held the true B on few points.
So the interval is split-conformal (Vovk, Gammerman & Shafer 2005; Lei et al. 2018) with the
relative error to the estimate as the score: with ``q_lo``, ``q_hi`` the conformal 2.5 % and
97.5 % quantiles of ``r = (estimate - B) / estimate`` over the evaluation points of the same
sampling-fraction band (:func:`~safeshare.risk.estimators.choice.accuracy_table`, three datasets),

    B in [ B_ (1 - q_hi),  B_ (1 - q_lo) ],  widened to contain B_mc_interval_,  clipped to [1/N, 1].

Its coverage is marginal: over populations and quasi-identifier sets like those of the
evaluation, 95 % of such intervals hold the true B; for one population it may be more or less
(leave-one-dataset-out coverage in docs/risk.md).
"""

from __future__ import annotations

import math

from safeshare.risk.estimators import choice
from safeshare.risk.estimators.choice import band

#: The syntheses per estimate of the evaluation the error quantiles come from (``safeshare risk
#: evaluate`` with the estimators' default, ``synthetic.DEFAULT_REPETITIONS``).
CALIBRATION_REPETITIONS = 10


def prediction_interval(
    name: str, B: float, mc: tuple[float, float] | None, sampling_fraction: float, N: int
) -> tuple[float, float] | None:
    """The interval of the module docstring (the Monte Carlo interval alone for an estimator the
    evaluation did not cover; ``None`` if that is ``None`` too)."""
    entry = choice.accuracy_table().get(name, {}).get(band(sampling_fraction))
    if entry is None or "relative_error_quantiles" not in entry:
        return mc
    q_lo, q_hi = entry["relative_error_quantiles"]
    lo = B * (1.0 - q_hi) if math.isfinite(q_hi) else 0.0
    hi = B * (1.0 - q_lo) if math.isfinite(q_lo) else 1.0
    if mc is not None:
        lo, hi = min(lo, mc[0]), max(hi, mc[1])
    return (min(1.0, max(1.0 / N, lo)), min(1.0, max(1.0 / N, hi)))


def interval_method(name: str, repetitions: int, sampling_fraction: float) -> str:
    """How :func:`prediction_interval` made the interval of ``name``'s estimate, in words,
    with what its coverage depends on: report.json's ``interval_method``. An estimate from
    fewer syntheses than the calibration's carries more Monte Carlo error than the interval
    was calibrated with: said, with the option that gives the calibrated setting."""
    entry = choice.accuracy_table().get(name, {}).get(band(sampling_fraction))
    if entry is None or "relative_error_quantiles" not in entry:
        if repetitions < 2:
            return "none: one synthesis has no Monte Carlo interval, and the evaluation did not cover it"
        return f"Monte Carlo: the Student-t 95 % interval of the mean of {repetitions} syntheses"
    text = (
        "split-conformal 95 % prediction interval: the estimator's relative error on the evaluation's "
        f"populations at this sampling-fraction band ({band(sampling_fraction)}), calibrated on estimates "
        f"from R = {CALIBRATION_REPETITIONS} syntheses"
    )
    if repetitions < CALIBRATION_REPETITIONS:
        text += (
            f"; this estimate is the mean of R = {repetitions}, so its Monte Carlo error exceeds the "
            f"calibration's and the coverage is not measured (--simulations {CALIBRATION_REPETITIONS} "
            "gives the calibrated setting)"
        )
    else:
        text += f", widened to hold the Monte Carlo interval of this estimate's {repetitions} syntheses"
    return text
