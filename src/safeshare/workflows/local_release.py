"""Write, verify and publish a locally recoded release (issue 25).

The same protocol as :func:`safeshare.workflows.release.write_release` (stage in a private
directory, verify the written file independently, swap atomically; see "Publishing" in
docs/anonymization.md), for a :class:`~safeshare.workflows.local_recoding.LocalRecodingResult`:
the engine writes the :class:`~safeshare.data.engines.base.MixedReleasePlan`
(:meth:`Engine.write_mixed_release`), and :func:`safeshare.verify.verify_release` re-reads the
file with the expectations of :func:`safeshare.verify.expectations_any_level`: the columns from
the configuration's roles, every QI value a label of its configured hierarchy at some level,
classes by identical released values satisfying every configured model, and the suppression
within ``floor(max_suppression * N)`` of the whole input. Nothing is published unless the
check passes and its counts agree with the result's.

report.json holds :meth:`LocalRecodingResult.summary` (rounds, the loss of the global and of
the mixed release) and the verification; the HTML report of a mixed release is not rendered
here (the report layer renders one result object; its wiring is separate).
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from safeshare.data.engines.base import Engine, OutputFormat, peak_rss_mb
from safeshare.errors import InputError, VerificationError
from safeshare.io import OutputDirectory, atomic_write_text
from safeshare.verify import (
    Expectations,
    Verification,
    allowed_release_columns,
    expectations_any_level,
    verify_release,
    with_identifiers,
)
from safeshare.verify.identifiers import IdentifierExpectations
from safeshare.workflows.local_recoding import LocalRecodingResult
from safeshare.workflows.release import _json_default, _version, release_name


@dataclass
class PublishedLocalRelease:
    """Where the outputs went, and what report.json says."""

    release: Path
    report_json: Path
    report: dict[str, Any]
    verification: Verification


def local_release_expectations(
    result: LocalRecodingResult, input_columns: Sequence[str], delimiter: str = ","
) -> Expectations:
    """What the verifier must find in the written release of ``result``: the columns from the
    configuration's roles, the labels of every level of the configured hierarchies, every
    configured model (as :func:`safeshare.workflows.release.release_expectations`)."""
    table = result.table
    schema = result.global_result.schema
    roles = {name: attr.role.value for name, attr in schema.attributes.items()}
    default = schema.default_role.value if schema.default_role is not None else None
    criterion = result.global_result.criterion
    return expectations_any_level(
        columns=allowed_release_columns(input_columns, roles, default),
        quasi_identifiers=list(table.qi_names),
        hierarchy_rows={q: h.rows for q, h in zip(table.qi_names, table.hierarchies, strict=True)},
        records_in=result.records_in,
        max_suppression=criterion.max_suppression,
        models={m.name: m.verification_params(table) for m in criterion.models},
        delimiter=delimiter,
    )


def publish_local_recoding(
    result: LocalRecodingResult,
    engine: Engine,
    out_dir: Path,
    fmt: OutputFormat = "csv",
    delimiter: str = ",",
    report: dict[str, Any] | None = None,
    identifiers: IdentifierExpectations | None = None,
) -> PublishedLocalRelease:
    """Write the mixed release to ``out_dir``, verify the written file, write report.json, publish.

    ``report``: extra entries for report.json. ``identifiers``: the pseudonym and shifted-date
    checks (:func:`safeshare.verify.with_identifiers`) when the schema has such columns.
    Raises :class:`InputError` when no node qualified and :class:`VerificationError` when the
    written release fails its check; then nothing is written to ``out_dir``.
    """
    if not result.found:
        raise InputError(
            "no generalization satisfies the privacy models within the suppression limit "
            f"({result.max_suppression:.0%}); allow more suppression or lower the requirements"
        )
    out_dir = Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise InputError(f"output path {out_dir} exists and is not a directory")
    input_columns = engine.columns()
    plan = result.release_plan(input_columns, fmt, delimiter)
    name = release_name(fmt)
    timings = dict(result.timings)
    output = OutputDirectory(out_dir)
    with output as stage:
        start = time.perf_counter()
        written = engine.write_mixed_release(plan, stage / name)
        timings["apply"] = time.perf_counter() - start
        start = time.perf_counter()
        expected = local_release_expectations(result, input_columns, delimiter)
        if identifiers is not None:
            schema = result.global_result.schema
            roles = {n: a.role.value for n, a in schema.attributes.items()}
            default = schema.default_role.value if schema.default_role is not None else None
            expected = with_identifiers(expected, input_columns, roles, default, identifiers)
        verification = verify_release(stage / name, fmt, expected)
        timings["verify"] = time.perf_counter() - start
        if not verification.passed:
            failures = "; ".join(verification.failures)
            raise VerificationError(f"the written release failed its independent privacy check: {failures}")
        if written != verification.records_out:
            raise VerificationError(
                f"the engine wrote {written} records but the release holds {verification.records_out}"
            )
        if verification.suppressed_records != result.suppressed_records:
            raise VerificationError(
                f"{verification.suppressed_records} records were suppressed, "
                f"local recoding expected {result.suppressed_records}"
            )
        doc: dict[str, Any] = {
            "safeshare_version": _version(),
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "engine": engine.name,
            "engine_settings": {**engine.settings(), "peak_rss_mb": peak_rss_mb()},
            "release": name,
            **result.summary(),
            "privacy": result.global_result.criterion.params(),
            "metric": result.global_result.metric.name,
            "algorithm": result.global_result.search.algorithm,
            "verified": True,
            "verification": verification.to_dict(),
        }
        for key, value in (report or {}).items():
            doc.setdefault(key, value)
        doc["elapsed_s"] = {k: round(v, 6) for k, v in timings.items()}
        atomic_write_text(stage / "report.json", json.dumps(doc, indent=2, default=_json_default) + "\n")
        output.publish()
    return PublishedLocalRelease(
        release=out_dir / name, report_json=out_dir / "report.json", report=doc, verification=verification
    )


__all__ = ["PublishedLocalRelease", "local_release_expectations", "publish_local_recoding"]
