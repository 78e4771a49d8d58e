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


def check_risk(
    con: duckdb.DuckDBPyConnection, relation: str, group: str, params: Mapping[str, Any]
) -> list[str]:
    """Failures of the risk threshold on the release (empty when it holds)."""
    try:
        measure = str(params.get("measure", "B"))
        threshold = float(params["threshold"])
        population = int(params["population_size"])
        estimator = str(params.get("estimator", ""))
    except (KeyError, TypeError, ValueError):
        return [f"risk: malformed parameters {dict(params)!r}"]
    rows = con.execute(f"SELECT COUNT(*) FROM {relation} GROUP BY {group}").fetchall()
    sizes = np.array([int(r[0]) for r in rows], dtype=np.int64)
    try:
        if measure == "A":
            value = len(sizes) / population
        else:
            value = release_risk(sizes, population, measure, estimator)
    except InputError as exc:
        return [f"risk: {exc}"]
    if math.isnan(value):
        return [f"risk: the {estimator} estimator has no solution for the release's class sizes"]
    if value > threshold + TOLERANCE:
        return [f"risk: {measure} = {value:.6g} on the release, above the threshold {threshold:g}"]
    return []
