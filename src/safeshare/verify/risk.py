"""Independent check of the ``risk`` privacy model on a written release.

Listed in :data:`safeshare.verify.EXTRA_CHECKS` as ``"risk"``. The class sizes come from the
release file (``GROUP BY`` the quasi-identifier columns in DuckDB SQL), not from the search's
frequency table, evaluator or suppression bookkeeping; ``A = J / N`` is computed here; ``B``
and ``uniques`` are re-estimated from those sizes with the named estimator (the estimator is
the measure's definition, shared on purpose; what the check guards is the path from the data
to the class sizes: generalization, suppression, the written file). The release passes when
the value is at most ``threshold + 1e-9``; an estimate without a solution fails.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import duckdb
import numpy as np

from safeshare.errors import InputError
from safeshare.numerics import TOLERANCE
from safeshare.risk.release_risk import release_risk


def risk_figures(
    con: duckdb.DuckDBPyConnection, relation: str, group: str, params: Mapping[str, Any]
) -> dict[str, Any]:
    """The risk threshold re-checked on the release: ``{measure, threshold, value, estimator,
    population_size, failures}`` (``value`` ``None`` when it cannot be computed). Recorded in
    the verification's ``checks["risk"]`` (what the report says was re-checked, with the figure)."""
    try:
        measure = str(params.get("measure", "B"))
        threshold = float(params["threshold"])
        population = int(params["population_size"])
        estimator = str(params.get("estimator", ""))
    except (KeyError, TypeError, ValueError):
        return {"value": None, "failures": [f"risk: malformed parameters {dict(params)!r}"]}
    doc: dict[str, Any] = {
        "measure": measure,
        "threshold": threshold,
        "estimator": estimator or None,
        "population_size": population,
        "value": None,
        "failures": [],
    }
    rows = con.execute(f"SELECT COUNT(*) FROM {relation} GROUP BY {group}").fetchall()
    sizes = np.array([int(r[0]) for r in rows], dtype=np.int64)
    try:
        if measure == "A":
            value = len(sizes) / population
        else:
            value = release_risk(sizes, population, measure, estimator)
    except InputError as exc:
        doc["failures"] = [f"risk: {exc}"]
        return doc
    if math.isnan(value):
        doc["failures"] = [f"risk: the {estimator} estimator has no solution for the release's class sizes"]
        return doc
    doc["value"] = float(value)
    if value > threshold + TOLERANCE:
        doc["failures"] = [f"risk: {measure} = {value:.6g} on the release, above the threshold {threshold:g}"]
    return doc


def check_risk(
    con: duckdb.DuckDBPyConnection, relation: str, group: str, params: Mapping[str, Any]
) -> list[str]:
    """Failures of the risk threshold on the release (empty when it holds)."""
    return list(risk_figures(con, relation, group, params)["failures"])
