"""What ``anonymize`` adds to a written release for the privacy officer who signs it (issue 20).

The library parts are plain functions of explicit parameters (the identifier check,
:mod:`safeshare.verify.identifiers`; the disclosure warnings, :mod:`safeshare.verify.disclosure`;
the evidence, :mod:`safeshare.workflows.evidence`; the ledger, :mod:`safeshare.workflows.ledger`).
This module calls them from one run's configuration and result, so that the terminal,
report.json, report.html and the Python API show one result:

* :func:`release_disclosure`: the disclosure warnings over the written release file, and the
  informed adversary's figures (kept shifted dates known within ``max_days``, coarse
  pseudonyms known: :mod:`safeshare.verify.informed`);
* :func:`release_evidence`: the evidence section (attack models, threshold and its source,
  the quasi-identifiers with their hierarchies and every released label, the verifier's
  checks, SHA-256 of the configuration and the released files, software, engine, seeds);
* :func:`ledger_entry`: the ledger line of a published release.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa

from safeshare.data.identifiers import IdentifierTreatment
from safeshare.data.schema import Role, Schema
from safeshare.io import files_of
from safeshare.paths import shown_path
from safeshare.report.content import ReportWarning
from safeshare.verify import Expectations, Verification
from safeshare.verify.disclosure import disclosure_check
from safeshare.verify.informed import KeptShiftedDate
from safeshare.workflows.anonymizer import AnonymizationResult
from safeshare.workflows.evidence import (
    Evidence,
    FileDigest,
    build_evidence,
    describe_hierarchy,
    hierarchy_files,
    released_labels,
)


def kept_columns(schema: Schema, released_columns: Sequence[str]) -> list[str]:
    """The released columns an adversary may know as they are: sensitive and insensitive ones
    (listed, or unlisted under ``default_role: insensitive``); quasi-identifiers are the classes
    themselves. Pseudonyms and kept shifted dates are the informed adversary's
    (:func:`kept_shifted_dates`; a pseudonym is known only when it is coarse)."""
    qis = set(schema.quasi_identifiers)
    return [
        c for c in released_columns if c not in qis and schema.role(c) in (Role.SENSITIVE, Role.INSENSITIVE)
    ]


def kept_shifted_dates(schema: Schema, released_columns: Sequence[str]) -> list[KeptShiftedDate]:
    """The shifted dates released as they are (no hierarchy): an adversary who knows a person's
    true date knows the released one within ``max_days`` (issue 30)."""
    out = []
    for column in released_columns:
        attr = schema.attributes.get(column)
        if attr is not None and attr.role is Role.SHIFTED_DATE and attr.hierarchy is None:
            out.append(
                KeptShiftedDate(column, str(attr.person), int(attr.max_days or 0), str(attr.date_format))
            )
    return out


def release_disclosure(
    release: Path,
    fmt: str,
    result: AnonymizationResult,
    released_columns: Sequence[str],
    delimiter: str,
    missing: Sequence[str],
    k: int | None,
    rows: pa.Table | None = None,
) -> tuple[list[ReportWarning], dict[str, Any] | None, dict[str, dict[str, int]]]:
    """The disclosure warnings of the written ``release`` as report warnings, the informed
    adversary's figures (report.json's ``informed_adversary``; ``None`` without kept shifted dates
    or coarse pseudonyms) and value -> released records of each kept column of at most
    :data:`~safeshare.workflows.before_after.MAX_CATEGORIES` values, from the same scan (the
    before / after's). ``k``: the release's k-anonymity (``None`` without); ``rows``: the
    release's distinct rows as the verifier read them (:attr:`Verification.rows`), read instead
    of the file."""
    from safeshare.workflows.before_after import MAX_CATEGORIES

    schema = result.schema
    found = disclosure_check(
        release,
        fmt,
        list(result.table.qi_names),
        kept_columns=kept_columns(schema, released_columns),
        sensitive_columns=[c for c in schema.sensitive if c in released_columns],
        delimiter=delimiter,
        missing=missing,
        shifted_dates=kept_shifted_dates(schema, released_columns),
        pseudonyms=[c for c in released_columns if schema.role(c) is Role.PSEUDONYM],
        k=k,
        value_counts=MAX_CATEGORIES,
        rows=rows,
    )
    warnings = [ReportWarning(w.code, w.message, w.columns, w.value) for w in found.warnings]
    informed = found.adversary.to_dict() if found.adversary is not None else None
    return warnings, informed, found.counts


def release_evidence(
    *,
    result: AnonymizationResult,
    expected: Expectations,
    verification: Verification,
    staged: Path,
    published: Path,
    fmt: str,
    delimiter: str,
    base: Path | None,
    config: Path | None,
    inputs: Sequence[Path],
    version: str,
    engine: str,
    population_size: int | None,
    threshold_reason: str | None,
    seeds: Mapping[str, Any],
    identifiers: IdentifierTreatment | None,
    records_per_level: Mapping[str, Mapping[int, int]] | None = None,
    informed: Mapping[str, Any] | None = None,
) -> Evidence:
    """The evidence of a verified release written at ``staged`` and published at ``published``.

    Hashes are of the bytes written; released files are named by where they are published
    (relative to the configuration's directory ``base``), not by the private stage.
    ``result`` is the search's result (for a locally recoded release, the global one, with
    ``records_per_level`` the released records at each level per QI); ``base``: ``None`` names
    files by their names only; ``informed``: the informed adversary's figures
    (:func:`release_disclosure`).
    """
    schema = result.schema
    table = result.table
    qis = list(table.qi_names)
    specs = {name: attr.hierarchy for name, attr in schema.attributes.items() if attr.hierarchy is not None}
    files: dict[str, list[Path]] = {"input": list(inputs), "config": [config] if config is not None else []}
    files["hierarchy"] = hierarchy_files(specs)
    risk = verification.checks.get("models", {}).get("risk", {})
    estimate = risk.get("value")
    evidence = build_evidence(
        expected=expected,
        verification=verification,
        hierarchies={q: describe_hierarchy(specs[q], base) for q in qis},
        heights={q: h.height for q, h in zip(qis, table.hierarchies, strict=True)},
        levels=result.levels,
        labels=_labels(verification, staged, fmt, qis, delimiter),
        records_per_level=records_per_level,
        files=files,
        version=version,
        engine=engine,
        base=base,
        population_size=population_size,
        risk_estimate=float(estimate) if isinstance(estimate, int | float) else None,
        threshold_reason=threshold_reason,
        seeds=dict(seeds),
        identifiers=identifiers.describe() if identifiers is not None else None,
        informed=informed,
    )
    released = tuple(
        FileDigest.of(
            "release",
            path,
            shown_path(published / path.relative_to(staged.parent), base),
            verification.digests.get(str(path)),  # the verifier read these bytes: not read again
        )
        for path in files_of(staged)
    )
    return dataclasses.replace(evidence, files=evidence.files + released)


# ------------------------------------------------------------------ the ledger
def ledger_entry(
    ledger: Path,
    doc: Mapping[str, Any],
    files: Mapping[str, Sequence[Path]],
    approved_by: str,
    key_fingerprint: str | None,
    date_shift_max_days: int | None = None,
    moved: tuple[Path, Path] | None = None,
) -> dict[str, Any]:
    """The ledger entry of a published release, from its report (report.json's content).

    ``key_fingerprint``: the key's, when identifiers were treated (in the ledger only: it
    confirms a guessed key, so no published file has it); ``date_shift_max_days``: the window
    of the shifted dates under that key (:mod:`safeshare.workflows.key_window`); ``moved``:
    ``(stage, out_dir)`` when the files are still staged (recorded where they will be
    published: :func:`safeshare.workflows.ledger.file_records`)."""
    from safeshare.workflows.key_window import WINDOW_FIELD
    from safeshare.workflows.ledger import release_entry

    risk = doc.get("risk") or {}
    release = risk.get("release") or {}
    figures = {
        "population_size": risk.get("population_size"),
        "B": release.get("B"),
        "prosecutor_max": (release.get("prosecutor") or {}).get("max"),
        "headline": (doc.get("headline") or {}).get("text"),
    }
    extra: dict[str, Any] = {
        "engine": doc.get("engine"),
        "seeds": (doc.get("provenance") or {}).get("seeds", {}),
        "purpose": (doc.get("certificate") or {}).get("purpose"),
        "warnings": [w.get("code") for w in doc.get("warnings", [])],
        # the contradicting warnings the custodian acknowledged, and by whom (issue 33)
        "accepted_warnings": [
            {"code": a.get("code"), "by": a.get("by")}
            for a in (doc.get("certificate") or {}).get("acknowledged") or []
        ],
    }
    if key_fingerprint is not None:
        extra["key_fingerprint"] = key_fingerprint
    if date_shift_max_days is not None:
        extra[WINDOW_FIELD] = int(date_shift_max_days)
    local = doc.get("local_recoding")
    if local:  # a mixed release: node and levels are the global node's; the rounds released the rest
        extra["local_recoding"] = {
            "rounds_run": local.get("rounds_run"),
            "records_released_global": local.get("records_released_global"),
            "records_out": doc.get("records_out"),
        }
    verification = doc.get("verification") or {}
    return release_entry(
        ledger,
        files,
        approved_by,
        node=doc.get("node"),
        levels=doc.get("levels"),
        risk={k: v for k, v in figures.items() if v is not None and not _nan(v)},
        verification={"passed": verification.get("passed"), "failures": verification.get("failures", [])},
        version=str(doc.get("safeshare_version")),
        extra=extra,
        moved=moved,
    )


def _nan(value: Any) -> bool:
    return isinstance(value, float) and not math.isfinite(value)


def _labels(
    verification: Verification, staged: Path, fmt: str, qis: list[str], delimiter: str
) -> dict[str, list[str]]:
    """The released labels of ``qis`` in the staged file: the verifier's, read in its one scan of
    the same file (:attr:`Verification.labels`), when it read every one of them (a release with
    records); else one scan of the file (:func:`released_labels`). On a 1 GB CSV release that
    scan cost 3 s of CPU (issue 36)."""
    if verification.records_out and all(q in verification.labels for q in qis):
        return {q: list(verification.labels[q]) for q in dict.fromkeys(qis)}
    return released_labels(staged, fmt, qis, delimiter)
