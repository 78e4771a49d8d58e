"""Every class-size estimator's B at the chosen node, their spread, and what our evaluation says
about each at the release's sampling fraction (issue 33: "the estimators' spread").

The risk of a release is reported with one estimator (the run's; the risk model's when it has
one). The others fit the same released class sizes and the same ``N`` with another model of the
population (Pitman, Zayatz, SNB, Dankar's rule, Benedetti-Franconi, the hypothesis test:
:func:`~safeshare.risk.release_risk.histogram_estimators`), and can disagree: on the issue's
COVID test data Pitman gave 0.083, Zayatz 0.099 and SNB 0.091 at a sampling fraction of 0.039. A
signature on "B <= 0.09" should see that. Per estimator: its B (``None`` with the reason when it
has none), and the caveat our evaluation measured for it in the band of ``n/N``
(:func:`safeshare.risk.estimators.choice.caveat`); then the ``min``, ``max`` and ``spread`` (max -
min) of the estimates, which estimators are above the threshold, and the estimator the evaluation
recommends in that band (:func:`~safeshare.risk.estimators.choice.default_estimator`).
"""

from __future__ import annotations

from typing import Any

from safeshare.numerics import TOLERANCE
from safeshare.risk.estimators import DEFAULT_ESTIMATOR, choice
from safeshare.risk.release_risk import histogram_estimators
from safeshare.risk.sensitivity import ReleasedClasses, b_at


def recommended_estimator(n: int, N: int) -> str:
    """The class-size estimator our evaluation recommends at the sampling fraction ``n/N``
    (:func:`~safeshare.risk.estimators.choice.default_estimator` among
    :func:`~safeshare.risk.release_risk.histogram_estimators`); the project's
    :data:`~safeshare.risk.estimators.DEFAULT_ESTIMATOR` without a sample (``n = 0``)."""
    if n <= 0 or N <= 0:
        return DEFAULT_ESTIMATOR
    return choice.default_estimator(min(1.0, n / N), histogram_estimators())


def estimator_spread(
    classes: ReleasedClasses, N: int, threshold: float, run_estimator: str | None = None
) -> dict[str, Any]:
    """report.json's ``certificate.estimators`` (module docstring) for ``classes`` drawn from ``N``
    people; ``run_estimator``: the one the report's B is from (marked ``used``)."""
    fraction = min(1.0, classes.n / int(N)) if N else 1.0
    rows = []
    for name in histogram_estimators():
        point = b_at(classes, N, name)
        rows.append(
            {
                "estimator": name,
                "B": point.B,
                "reason": point.reason,
                "above_threshold": point.B is not None and threshold + TOLERANCE < point.B,
                "caveat": choice.caveat(name, fraction) if classes.n else None,
                "used": name == run_estimator,
            }
        )
    values = [float(r["B"]) for r in rows if r["B"] is not None]
    return {
        "N": int(N),
        "n": classes.n,
        "unit": classes.unit,
        "sampling_fraction": fraction,
        "band": choice.band(fraction) if classes.n else None,
        "threshold": threshold,
        "recommended": recommended_estimator(classes.n, N) if classes.n else None,
        "used": run_estimator,
        "min": min(values) if values else None,
        "max": max(values) if values else None,
        "spread": max(values) - min(values) if values else None,
        "above_threshold": [r["estimator"] for r in rows if r["above_threshold"]],
        "rows": rows,
    }


__all__ = ["estimator_spread", "recommended_estimator"]
