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

Only the reading is Spark's own; what is read (columns, record count, labels, smallest
class) is judged by :func:`safeshare.verify.judge_release`, as for the DuckDB verifier.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from safeshare.verify import Expectations, Verification, judge_release


def verify_release_spark(spark: Any, path: Path, expected: Expectations) -> Verification:
    """Re-read the Parquet release at ``path`` with ``spark`` and check it against ``expected``."""
    from pyspark.sql import functions as F

    rel = spark.read.parquet(Path(path).absolute().as_uri())
    failures: list[str] = []
    checks: dict[str, Any] = {"verifier": "spark"}
    columns = list(rel.columns)
    qis = [q for q in expected.quasi_identifiers if q in columns]
    text = {q: F.coalesce(F.col(f"`{q}`").cast("string"), F.lit("")) for q in qis}
    classes = rel.groupBy(*[text[q].alias(f"q{j}") for j, q in enumerate(qis)]).count()
    stats = classes.agg(
        F.coalesce(F.sum("count"), F.lit(0)).alias("n"),
        F.min("count").alias("smallest"),
        F.count(F.lit(1)).alias("classes"),
    ).collect()[0]
    records_out = int(stats["n"])
    labels = {q: {str(r[0]) for r in rel.select(text[q]).distinct().collect()} for q in qis}
    min_size, n_classes = (int(stats["smallest"]), int(stats["classes"])) if records_out and qis else (0, 0)
    suppressed = judge_release(expected, columns, records_out, labels, min_size, failures, checks)
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
