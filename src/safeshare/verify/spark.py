"""Independent verification of a Spark release, by Spark (issue 12).

The twin of :mod:`safeshare.verify` for data too large for one machine: the
written Parquet directory is re-read in a separate Spark query that shares no
code with the plan or the engine that wrote it (no lookup tables, no keys, no
frequency table), and checked against the same :class:`~safeshare.verify.Expectations`:

* the release has exactly the columns the configuration's roles allow;
* every quasi-identifier value is a label of its hierarchy at the chosen level
  (the distinct values per column, a few hundred, are collected);
* every class (``GROUP BY`` the quasi-identifiers, by their text) holds at least ``k``
  records (only ``MIN`` and ``COUNT`` of the class sizes reach the driver);
* the suppressed records, ``N_in - N_out``, are within ``floor(max_suppression * N_in)``.

Further privacy models (l-diversity, t-closeness, ...) are not re-checked here: they
are listed under ``checks["models_not_checked_by_spark"]``, and the release path also
runs the DuckDB verifier of :mod:`safeshare.verify` on the same directory, which checks them.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from safeshare.verify import Expectations, Verification


def verify_release_spark(spark: Any, path: Path, expected: Expectations) -> Verification:
    """Re-read the Parquet release at ``path`` with ``spark`` and check it against ``expected``."""
    from pyspark.sql import functions as F

    rel = spark.read.parquet(Path(path).absolute().as_uri())
    failures: list[str] = []
    checks: dict[str, Any] = {"verifier": "spark"}
    columns = list(rel.columns)
    checks["columns"] = columns
    allowed = set(expected.columns)
    extra = [c for c in columns if c not in allowed]
    if extra:
        failures.append(f"release column {extra[0]!r} is not allowed by the configuration's roles")
    elif columns != list(expected.columns):
        failures.append(f"release columns {columns} differ from the expected {expected.columns}")
    qis = [q for q in expected.quasi_identifiers if q in columns]
    if len(qis) != len(expected.quasi_identifiers):
        failures.append("a quasi-identifier column is missing from the release")
    text = {q: F.coalesce(F.col(f"`{q}`").cast("string"), F.lit("")) for q in qis}
    classes = rel.groupBy(*[text[q].alias(f"q{j}") for j, q in enumerate(qis)]).count()
    stats = classes.agg(
        F.coalesce(F.sum("count"), F.lit(0)).alias("n"),
        F.min("count").alias("smallest"),
        F.count(F.lit(1)).alias("classes"),
    ).collect()[0]
    records_out = int(stats["n"])
    suppressed = expected.records_in - records_out
    limit = math.floor(expected.max_suppression * expected.records_in + 1e-9)
    checks["suppression_limit"] = limit
    if suppressed < 0:
        failures.append(f"the release has more records ({records_out}) than the input")
    elif suppressed > limit:
        failures.append(f"{suppressed} records suppressed, more than the limit {limit}")
    for qi in qis:
        values = {str(r[0]) for r in rel.select(text[qi]).distinct().collect()}
        bad = sorted(values - expected.allowed_labels[qi])
        if bad:
            failures.append(f"column {qi!r} has value {bad[0]!r}, not a label of its chosen level")
    min_size, n_classes = 0, 0
    if records_out and qis:
        min_size, n_classes = int(stats["smallest"]), int(stats["classes"])
        if min_size < expected.k:
            failures.append(f"an equivalence class has {min_size} records, fewer than k = {expected.k}")
    checks["models_not_checked_by_spark"] = sorted(m for m in expected.models if m != "k-anonymity")
    return Verification(
        passed=not failures,
        records_out=records_out,
        suppressed_records=suppressed,
        min_class_size=min_size,
        equivalence_classes=n_classes,
        failures=failures,
        checks=checks,
    )
