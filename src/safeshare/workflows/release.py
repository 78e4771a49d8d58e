"""Write, verify and publish a release.

Nothing reaches the output directory unless the written release passed the
independent verification of :mod:`safeshare.verify`: the release and its
reports are prepared in a private staging directory beside the output
directory, verified there, and only then swapped with the previous output
directory in one atomic rename (:class:`safeshare.io.OutputDirectory`: a lock
against concurrent runs, recovery of what a killed run left, a refusal to
replace a directory safeshare did not write). After a failure or a kill at
any moment the output directory holds the complete previous output or the
complete new one; on a failure the staging directory is removed.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import numpy as np

from safeshare.data.engines.base import Engine, OutputFormat, peak_rss_mb
from safeshare.errors import InputError, VerificationError
from safeshare.io import OutputDirectory, atomic_write_text
from safeshare.report.content import column_treatments, portable_paths, report_warnings
from safeshare.risk.report_risk import risk_section
from safeshare.verify import (
    Expectations,
    Verification,
    allowed_release_columns,
    expectations_for,
    verify_release,
)
from safeshare.workflows.anonymizer import AnonymizationResult


@dataclass
class PublishedRelease:
    """Where the outputs went, and the report that describes them."""

    release: Path
    report_json: Path
    report_html: Path
    report: dict[str, Any]
    verification: Verification


def release_name(fmt: OutputFormat) -> str:
    return "release.parquet" if fmt == "parquet" else "release.csv"


def release_expectations(
    result: AnonymizationResult, input_columns: Sequence[str], delimiter: str = ","
) -> Expectations:
    """What the independent verifier must find in the release of ``result``.

    The release's columns come from the configuration's roles applied to the
    input's header ``input_columns`` (:func:`safeshare.verify.allowed_release_columns`),
    not from the release plan, so that a plan that keeps a column it should
    not (an unlisted one, a renamed duplicate) fails verification.
    """
    table = result.table
    schema = result.schema
    roles = {name: attr.role.value for name, attr in schema.attributes.items()}
    default = schema.default_role.value if schema.default_role is not None else None
    return expectations_for(
        columns=allowed_release_columns(input_columns, roles, default),
        quasi_identifiers=list(table.qi_names),
        hierarchy_rows={q: h.rows for q, h in zip(table.qi_names, table.hierarchies, strict=True)},
        levels=result.levels,
        records_in=result.records_in,
        max_suppression=result.criterion.max_suppression,
        models={m.name: m.verification_params(table) for m in result.criterion.models},
        delimiter=delimiter,
    )


def write_release(
    result: AnonymizationResult,
    engine: Engine,
    out_dir: Path,
    fmt: OutputFormat = "csv",
    delimiter: str = ",",
    report: dict[str, Any] | None = None,
    html: bool = True,
    population_size: int | None = None,
) -> PublishedRelease:
    """Apply the chosen node to every record, verify the written file, report, publish.

    ``report`` holds extra entries for report.json (configuration, timings of
    earlier phases, trade-off curve...). ``population_size`` (N) is the population the risk
    section assumes (:mod:`safeshare.risk.report_risk`); ``None``: the input is the population.

    Raises :class:`InputError` when no node qualifies and
    :class:`VerificationError` when the written release fails verification;
    in both cases nothing is written to ``out_dir``.
    """
    if not result.found:
        raise InputError(
            "no generalization satisfies the privacy models within the suppression limit "
            f"({result.criterion.max_suppression:.0%}); allow more suppression or lower the requirements"
        )
    if population_size is not None and population_size < result.table.n_records:
        raise InputError(
            f"population_size {population_size} is smaller than the input ({result.table.n_records} records)"
        )
    out_dir = Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise InputError(f"output path {out_dir} exists and is not a directory")
    timings = dict(result.timings)
    input_columns = engine.columns()
    plan = result.release_plan(input_columns, fmt, delimiter)
    name = release_name(fmt)
    output = OutputDirectory(out_dir)  # lock, recover, check, stage (see safeshare.io)
    with output as stage:
        start = time.perf_counter()
        written = engine.write_release(plan, stage / name)
        timings["apply"] = time.perf_counter() - start
        start = time.perf_counter()
        expected = release_expectations(result, input_columns, delimiter)
        verification = verify_release(stage / name, fmt, expected)
        if engine.name == "spark":  # a second verifier that scales with the cluster (verify/spark.py)
            from safeshare.verify.spark import verify_release_spark

            again = verify_release_spark(cast(Any, engine).spark, stage / name, expected)
            verification.checks[engine.name] = again.to_dict()
            verification.failures += [f"({engine.name} verifier) {f}" for f in again.failures]
            verification.passed = verification.passed and again.passed
        timings["verify"] = time.perf_counter() - start
        if not verification.passed:
            raise VerificationError(
                "the written release failed its independent privacy check: "
                + "; ".join(verification.failures)
            )
        if written != verification.records_out:
            raise VerificationError(
                f"the engine wrote {written} records but the release holds {verification.records_out}"
            )
        if verification.suppressed_records != result.suppressed_records:
            raise VerificationError(
                f"{verification.suppressed_records} records were suppressed, "
                f"the search expected {result.suppressed_records}"
            )
        doc: dict[str, Any] = {
            "safeshare_version": _version(),
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "engine": engine.name,
            "engine_settings": {**engine.settings(), "peak_rss_mb": peak_rss_mb()},
            "release": name,
            **result.summary(),
            "verified": True,
            "verification": verification.to_dict(),
            "class_size_histogram": class_size_histogram(result),
            "risk": risk_section(input_class_sizes(result), result.released_class_sizes, population_size),
        }
        for key, value in (report or {}).items():
            doc.setdefault(key, value)
        doc.setdefault("columns", column_treatments(result.schema, input_columns, plan.columns))
        portable_paths(doc)
        doc["warnings"] = [*doc.get("warnings", []), *report_warnings(doc)]
        start = time.perf_counter()
        timings["report"] = 0.0
        doc["elapsed_s"] = {k: round(v, 6) for k, v in timings.items()}
        if html:
            from safeshare.report.html import render_report

            atomic_write_text(stage / "report.html", render_report(doc))
        timings["report"] = time.perf_counter() - start
        doc["elapsed_s"] = {k: round(v, 6) for k, v in timings.items()}
        atomic_write_text(stage / "report.json", json.dumps(doc, indent=2, default=_json_default) + "\n")
        output.publish()  # seal, swap atomically with the previous output, discard it
    return PublishedRelease(
        release=out_dir / name,
        report_json=out_dir / "report.json",
        report_html=out_dir / "report.html",
        report=doc,
        verification=verification,
    )


def input_class_sizes(result: AnonymizationResult) -> np.ndarray:
    """Sizes of the input's classes on the raw quasi-identifiers (the lattice's bottom node)."""
    bottom = result.table.lattice.bottom
    return result.evaluator.classes(bottom).nonempty


def class_size_histogram(result: AnonymizationResult) -> list[dict[str, Any]]:
    """Released classes by size, in bins 1, 2, ..., 10, 11-20, 21-50, ... (for the HTML report)."""
    sizes = result.released_class_sizes
    edges = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 21, 51, 101, 201, 501, 1001, 2001, 5001, 10001]
    out = []
    for lo, hi in zip(edges, [*edges[1:], None], strict=True):
        mask = sizes >= lo if hi is None else (sizes >= lo) & (sizes < hi)
        count = int(mask.sum())
        if count or (hi is not None and hi <= 11):
            label = str(lo) if hi == lo + 1 else (f"{lo}+" if hi is None else f"{lo}-{hi - 1}")
            out.append({"label": label, "low": lo, "classes": count, "records": int(sizes[mask].sum())})
    return out


def _version() -> str:
    from safeshare import __version__

    return __version__


def _json_default(obj: object) -> object:
    import numpy as np

    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.floating):
        return float(obj)
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, Path):
        return str(obj)
    if isinstance(obj, set | frozenset | tuple):
        return list(obj)
    raise TypeError(f"not JSON serializable: {type(obj).__name__}")
