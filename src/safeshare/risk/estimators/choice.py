"""Which estimator of B to use at a sampling fraction, and what it is known to get wrong there.

Both come from our evaluations (docs/risk.md, "Which estimator, by sampling fraction"): every
estimator on 300 study points of each of Adult, Census-Income KDD and German credit
(``safeshare risk evaluate``), summarized per sampling-fraction band in :func:`accuracy_table`
(package data, ``measured_accuracy.json``, written by ``tools/risk_accuracy.py``).

* :func:`default_estimator`: in the band of ``n/N``, the estimator whose *worst* dataset has the
  largest share of points within ±0.05 of the true B (a point without an estimate counts as a
  miss); ties go to the smaller worst-dataset median absolute error. Judging by the worst dataset
  rather than the pooled points keeps one easy dataset from carrying the choice.
* :func:`caveat`: a one-line warning when the evaluation shows a bias of that estimator in that
  band: a pooled median relative error (estimate / B - 1, points with B >= 0.01) of at least
  :data:`BIAS` in size, or fewer than :data:`MIN_WITHIN` of the points within ±0.05 on some
  dataset. ``None`` otherwise, and for estimators the evaluation did not cover.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable
from typing import Any

from safeshare.errors import InputError
from safeshare.resources import read_json_resource

BANDS = ("<0.1", "0.1-0.5", ">0.5")
"""Sampling-fraction bands: f < 0.1, 0.1 <= f <= 0.5, f > 0.5 (the evaluation's)."""

DATASET_NAMES = {"adult": "Adult", "kdd": "Census-Income KDD", "german": "German credit"}

BIAS = 0.10
"""A median relative error at least this large (either sign) earns a caveat."""

MIN_WITHIN = 0.90
"""A dataset with fewer of its points within ±0.05 of the true B earns a caveat."""


#: The data file of the measured accuracy (in this package).
ACCURACY_FILE = "measured_accuracy.json"


@functools.cache
def accuracy_table() -> dict[str, dict[str, dict[str, Any]]]:
    """The measured accuracy, per estimator and band (read from :data:`ACCURACY_FILE` on first use;
    its ``about`` says what each figure is): ``datasets`` (per dataset) and ``pooled``: ``points``,
    ``failed`` (no estimate), ``within`` (share of points within ±0.05 of the true B),
    ``median_abs_error``, ``median_error``, ``median_relative_error``, ``relative_points``; for the
    copulas ``relative_error_quantiles`` (a pair). Do not change the returned mapping."""
    table: dict[str, dict[str, dict[str, Any]]] = read_json_resource(__package__, ACCURACY_FILE)["estimators"]
    return table


def band(sampling_fraction: float) -> str:
    """The band of a sampling fraction ``n/N`` (0 < f <= 1)."""
    f = float(sampling_fraction)
    if not 0.0 < f <= 1.0:
        raise InputError(f"sampling fraction: expected a number in (0, 1], got {sampling_fraction!r}")
    return BANDS[0] if f < 0.1 else BANDS[1] if f <= 0.5 else BANDS[2]


def _band_text(label: str) -> str:
    return {
        BANDS[0]: "at sampling fractions below 0.1",
        BANDS[1]: "at sampling fractions 0.1-0.5",
        BANDS[2]: "at sampling fractions above 0.5",
    }[label]


def _worst(entry: dict[str, Any]) -> tuple[float, float]:
    """(worst share within ±0.05, worst median absolute error) over the datasets the estimator was
    evaluated on, failures as misses."""
    within, mae = [], []
    for stats in entry["datasets"].values():
        points = stats["points"]  # failures included
        if not points:
            continue  # not evaluated on this dataset
        ok = points - stats["failed"]
        within.append(stats["within"] * ok / points)
        mae.append(stats["median_abs_error"] if math.isfinite(stats["median_abs_error"]) else math.inf)
    return (min(within), max(mae)) if within else (0.0, math.inf)


def ranking(sampling_fraction: float, candidates: Iterable[str] | None = None) -> list[str]:
    """The evaluated estimators (of ``candidates``, if given), best first, in the band of
    ``sampling_fraction`` (module rule; ties keep the table's order)."""
    label = band(sampling_fraction)
    table = accuracy_table()
    names = list(table) if candidates is None else [n for n in candidates if n in table]

    def key(name: str) -> tuple[float, float]:
        within, mae = _worst(table[name][label])
        return (-within, mae)

    return sorted(names, key=key)


def default_estimator(sampling_fraction: float, candidates: Iterable[str] | None = None) -> str:
    """The estimator to use at ``sampling_fraction = n/N`` (module docstring): the first of
    :func:`ranking`. ``candidates`` restricts the choice (e.g. to the estimators that need only
    the class-size histogram, when no frequency table is at hand)."""
    pool = None if candidates is None else list(candidates)
    names = ranking(sampling_fraction, pool)
    if not names:
        raise InputError(f"no evaluated estimator among {', '.join(pool or ())}")
    return names[0]


def caveat(name: str, sampling_fraction: float) -> str | None:
    """One line naming the bias the evaluation shows for ``name`` in the band of ``sampling_fraction``."""
    label = band(sampling_fraction)
    table = accuracy_table()
    if name not in table:
        return None
    entry = table[name][label]
    where = _band_text(label)
    rel = entry["pooled"]["median_relative_error"]
    if math.isfinite(rel) and abs(rel) >= BIAS:
        word = "overestimated" if rel > 0 else "underestimated"
        return f"{name} {word} B by about {abs(rel):.0%} (median) {where} in our evaluation"
    failed = entry["pooled"]["failed"] / max(entry["pooled"]["points"], 1)
    if failed >= 1 - MIN_WITHIN:
        return f"{name} gave no estimate on {failed:.0%} of the points {where} in our evaluation"
    low = [
        (stats["within"], ds)
        for ds, stats in entry["datasets"].items()
        if stats["points"] and stats["within"] < MIN_WITHIN
    ]
    if low:
        within, ds = min(low)
        median = entry["datasets"][ds]["median_error"]
        return (
            f"{name} was within ±0.05 of the true B on only {within:.0%} of the points {where} "
            f"on {DATASET_NAMES.get(ds, ds)} in our evaluation (median error {median:+.3f})"
        )
    return None
