"""Independent check of the ``risk`` privacy model on a written release.

Listed in :data:`safeshare.verify.EXTRA_CHECKS` as ``"risk"``. The class sizes come from the
release file (``GROUP BY`` the quasi-identifier columns in DuckDB SQL), not from the search's
frequency table, evaluator or suppression bookkeeping; ``A = J / N`` is computed here; ``B``
and ``uniques`` are re-estimated from those sizes with the named estimator (the estimator is
the measure's definition, shared on purpose; what the check guards is the path from the data
to the class sizes: generalization, suppression, the written file). The release passes when
the value -- with ``use: upper``, the upper end of its 95 % interval, recomputed with the
estimator's seeded bootstrap -- is at most ``threshold + 1e-9``; no estimate fails.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import duckdb
import numpy as np

from safeshare.errors import InputError
from safeshare.numerics import TOLERANCE
from safeshare.risk.release_risk import USES, release_risk_estimate


def risk_figures(
    con: duckdb.DuckDBPyConnection, relation: str, group: str, params: Mapping[str, Any]
) -> dict[str, Any]:
    """The risk threshold re-checked on the release: ``{measure, threshold, value, estimator,
    population_size, failures}`` (``value`` ``None`` when it cannot be computed). Recorded in
    the verification's ``checks["risk"]`` (what the report says was re-checked, with the figure)."""
    if params.get("measure") == "record":
        rows = con.execute(f"SELECT COUNT(*) FROM {relation} GROUP BY {group}").fetchall()
        record_doc: dict[str, Any] = {
            "measure": "record",
            "threshold": params.get("threshold"),
            "population_size": params.get("population_size"),
            "value": None,
            "failures": [],
        }
        try:
            return _record_figures(record_doc, np.array([int(r[0]) for r in rows], dtype=np.int64), params)
        except (KeyError, TypeError, ValueError, InputError):
            return {"value": None, "failures": [f"risk: malformed parameters {dict(params)!r}"]}
    try:
        measure = str(params.get("measure", "B"))
        threshold = float(params["threshold"])
        population = int(params["population_size"])
        estimator = str(params.get("estimator", ""))
        use = str(params.get("use", "estimate"))
    except (KeyError, TypeError, ValueError):
        return {"value": None, "failures": [f"risk: malformed parameters {dict(params)!r}"]}
    if use not in USES:
        return {"value": None, "failures": [f"risk: malformed parameters {dict(params)!r}"]}
    doc: dict[str, Any] = {
        "measure": measure,
        "threshold": threshold,
        "estimator": estimator or None,
        "population_size": population,
        "use": use,
        "value": None,
        "failures": [],
    }
    rows = con.execute(f"SELECT COUNT(*) FROM {relation} GROUP BY {group}").fetchall()
    sizes = np.array([int(r[0]) for r in rows], dtype=np.int64)
    try:
        if measure == "A":
            value: float | None = len(sizes) / population
            reason = None
        else:
            est = release_risk_estimate(sizes, population, measure, estimator, interval=use == "upper")
            value, reason = est.bound(use), est.reason
    except InputError as exc:
        doc["failures"] = [f"risk: {exc}"]
        return doc
    if value is None or math.isnan(value):
        doc["failures"] = [
            f"risk: the {estimator} estimator has no estimate for the release's class sizes ({reason})"
        ]
        return doc
    doc["value"] = float(value)
    what = measure if use == "estimate" else f"the upper end of the 95 % interval of {measure}"
    if value > threshold + TOLERANCE:
        doc["failures"] = [f"risk: {what} = {value:.6g} on the release, above the threshold {threshold:g}"]
    return doc


def check_risk(
    con: duckdb.DuckDBPyConnection, relation: str, group: str, params: Mapping[str, Any]
) -> list[str]:
    """Failures of the risk threshold on the release (empty when it holds)."""
    return list(risk_figures(con, relation, group, params)["failures"])


def _record_figures(doc: dict[str, Any], sizes: np.ndarray, params: Mapping[str, Any]) -> dict[str, Any]:
    """The ``record`` measure: the largest per-record risk over the written classes, from their
    sizes (``1/f``, or ``E[1/F | f]`` at the sampling fraction ``input_records / N``)."""
    from safeshare.risk.record_risk import class_size_record_risk

    threshold = float(params["threshold"])
    given = params.get("population_size")
    n_input = int(params.get("input_records", 0) or 0)
    if given is not None and n_input <= 0:
        doc["failures"] = [f"risk: malformed parameters {dict(params)!r}"]
        return doc
    fraction = 1.0 if given is None else min(1.0, n_input / int(given))
    value = float(class_size_record_risk(sizes, fraction).max()) if sizes.size else 0.0
    doc["value"] = value
    if value > threshold + TOLERANCE:
        doc["failures"] = [
            f"risk: the largest per-record risk = {value:.6g} on the release, "
            f"above the threshold {threshold:g}"
        ]
    return doc
