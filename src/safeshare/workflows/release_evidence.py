"""What ``anonymize`` adds to a written release for the privacy officer who signs it (issue 20).

The library parts are plain functions of explicit parameters (the identifier check,
:mod:`safeshare.verify.identifiers`; the disclosure warnings, :mod:`safeshare.verify.disclosure`;
the evidence, :mod:`safeshare.workflows.evidence`; the ledger, :mod:`safeshare.workflows.ledger`).
This module calls them from one run's configuration and result, so that the terminal,
report.json, report.html and the Python API show one result:

* :func:`verifier_expectations`: what the independent verifier must find, from the
  configuration's roles, with the pseudonyms and shifted dates recomputed from the key;
* :func:`release_warnings`: the disclosure warnings over the written release file;
* :func:`release_evidence`: the evidence section (attack models, threshold and its source,
  the quasi-identifiers with their hierarchies and every released label, the verifier's
  checks, SHA-256 of every file, software, engine, seeds, the key's fingerprint);
* :func:`headline`: the one sentence of the result (the achieved risk against the threshold,
  re-checked on the file; the prosecutor figure only with its context);
* :func:`ledger_entry`: the ledger line of a published release.
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from safeshare.data.engines.base import Engine
from safeshare.data.identifiers import IdentifierTreatment
from safeshare.data.schema import Role, Schema
from safeshare.io import files_of, sha256_file
from safeshare.report.content import ReportWarning
from safeshare.verify import Expectations, Verification, with_identifiers
from safeshare.verify.disclosure import disclosure_warnings
from safeshare.verify.identifiers import IdentifierExpectations
from safeshare.workflows.anonymizer import AnonymizationResult
from safeshare.workflows.evidence import (
    Evidence,
    FileDigest,
    build_evidence,
    describe_hierarchy,
    hierarchy_files,
    released_labels,
    threshold_of,
)
from safeshare.workflows.release import release_expectations


def verifier_expectations(
    result: AnonymizationResult,
    engine: Engine,
    delimiter: str,
    identifiers: IdentifierTreatment | None,
    missing: Sequence[str] = (),
) -> Expectations:
    """What the verifier must find in the release: the configuration's roles and models
    (:func:`~safeshare.workflows.release.release_expectations`) and, with an identifier
    treatment, every pseudonym and shifted date recomputed from the key and the raw input
    (:func:`~safeshare.verify.with_identifiers`)."""
    header = engine.columns()
    expected = release_expectations(result, header, delimiter)
    if identifiers is None:
        return expected
    schema = result.schema
    table = result.table
    checks = IdentifierExpectations.from_schema(
        schema,
        identifiers.key,
        engine.raw_grouped_batches,
        missing,
        {q: h.rows for q, h in zip(table.qi_names, table.hierarchies, strict=True)},
        result.levels,
    )
    roles = {name: attr.role.value for name, attr in schema.attributes.items()}
    default = schema.default_role.value if schema.default_role is not None else None
    return with_identifiers(expected, header, roles, default, checks)


def kept_columns(schema: Schema, released_columns: Sequence[str]) -> list[str]:
    """The released columns an adversary may know as they are: sensitive and insensitive ones
    (listed, or unlisted under ``default_role: insensitive``). Pseudonyms (keyed: nobody
    outside knows them) and shifted dates (a date an adversary knows is not the one released)
    are not; quasi-identifiers are the classes themselves."""
    qis = set(schema.quasi_identifiers)
    return [
        c for c in released_columns if c not in qis and schema.role(c) in (Role.SENSITIVE, Role.INSENSITIVE)
    ]


def release_warnings(
    release: Path,
    fmt: str,
    result: AnonymizationResult,
    released_columns: Sequence[str],
    delimiter: str,
    missing: Sequence[str],
) -> list[ReportWarning]:
    """The disclosure warnings of the written ``release`` (``kept_column_identifying``,
    ``homogeneous_classes``, ``singleton_classes``) as report warnings."""
    schema = result.schema
    found = disclosure_warnings(
        release,
        fmt,
        list(result.table.qi_names),
        kept_columns=kept_columns(schema, released_columns),
        sensitive_columns=[c for c in schema.sensitive if c in released_columns],
        delimiter=delimiter,
        missing=missing,
    )
    return [ReportWarning(w.code, w.message, w.columns, w.value) for w in found]


def release_evidence(
    *,
    result: AnonymizationResult,
    expected: Expectations,
    verification: Verification,
    staged: Path,
    published: Path,
    fmt: str,
    delimiter: str,
    base: Path,
    config: Path | None,
    inputs: Sequence[Path],
    version: str,
    engine: str,
    population_size: int | None,
    threshold_reason: str | None,
    seeds: Mapping[str, Any],
    identifiers: IdentifierTreatment | None,
) -> Evidence:
    """The evidence of a verified release written at ``staged`` and published at ``published``.

    Hashes are of the bytes written; released files are named by where they are published
    (relative to the configuration's directory ``base``), not by the private stage.
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
        labels=released_labels(staged, fmt, qis, delimiter),
        files=files,
        version=version,
        engine=engine,
        base=base,
        population_size=population_size,
        risk_estimate=float(estimate) if isinstance(estimate, int | float) else None,
        threshold_reason=threshold_reason,
        seeds=dict(seeds),
        identifiers=identifiers.describe() if identifiers is not None else None,
    )
    released = tuple(
        FileDigest(
            "release",
            os.path.relpath((published / path.relative_to(staged.parent)).absolute(), base.absolute()),
            sha256_file(path),
            path.stat().st_size,
        )
        for path in files_of(staged)
    )
    return dataclasses.replace(evidence, files=evidence.files + released)


# ------------------------------------------------------------------ the headline
def _fig(value: float) -> str:
    return f"{value:.4f}".rstrip("0").rstrip(".") if value else "0"


def headline(doc: Mapping[str, Any], threshold_reason: str | None = None) -> dict[str, Any]:
    """The result in one sentence and its figures, from report.json's sections.

    With a risk threshold: the achieved measure (re-checked by the verifier on the written
    file when it was written, else the search's) against the threshold, with where the
    threshold comes from. With k-anonymity: the prosecutor bound 1/k and the smallest class.
    The largest prosecutor risk of a release without k-anonymity is never shown alone: it
    comes with the smallest class and the statement that the threshold bounds an average.
    """
    models = dict(doc.get("privacy", {}).get("models", {}))
    checks = (doc.get("verification") or {}).get("checks", {}).get("models", {})
    achieved = doc.get("privacy_achieved", {})
    k = doc.get("k")
    smallest = int(doc.get("min_class_size") or 0)
    verified = bool(doc.get("verified"))
    out: dict[str, Any] = {"verified": verified, "written": doc.get("verification") is not None}
    parts: list[str] = []
    risk = models.get("risk")
    if isinstance(risk, Mapping):
        measure = str(risk.get("measure", "B"))
        rechecked = checks.get("risk", {})
        value = rechecked.get("value") if "value" in rechecked else achieved.get("risk", {}).get(measure)
        threshold = float(risk["threshold"])
        source = threshold_of(risk, int(k or 1), threshold_reason)
        holds = value is not None and value <= threshold + 1e-9
        out["risk"] = {
            "measure": measure,
            "achieved": value,
            "threshold": threshold,
            "holds": holds,
            "rechecked": bool(rechecked),
            "estimator": risk.get("estimator"),
            "population_size": rechecked.get("params", {}).get(
                "population_size", risk.get("population_size")
            ),
            "source": source.source if source is not None else None,
            "reason": source.reason if source is not None else None,
            "public_release_figure": bool(source is not None and source.public_release_figure),
        }
        shown = "no estimate" if value is None else _fig(float(value))
        where = "re-checked on the written release" if rechecked else "as found by the search (not written)"
        origin = (
            "the EMA / Health Canada public-release threshold"
            if out["risk"]["public_release_figure"]
            else (
                f"the custodian's threshold: {source.reason}"
                if source and source.reason
                else "the custodian's threshold"
            )
        )
        parts.append(f"{measure} = {shown} {'<=' if holds else '>'} {_fig(threshold)} ({origin}), {where}")
    if isinstance(k, int) and k >= 2:
        out["prosecutor"] = {"bounded": True, "k": k, "max": 1 / k, "smallest_class": smallest}
        parts.append(
            f"k = {k}: every released class holds at least {k} records (smallest {smallest:,}), "
            f"so no record's prosecutor risk exceeds 1/{k} = {_fig(1 / k)}"
        )
    elif smallest:
        out["prosecutor"] = {"bounded": False, "k": None, "max": 1 / smallest, "smallest_class": smallest}
        parts.append(
            f"prosecutor risk not bounded per record (no k-anonymity): the smallest released class holds "
            f"{smallest:,} record{'s' if smallest != 1 else ''}"
            + ("; the threshold bounds an average" if isinstance(risk, Mapping) else "")
        )
    out["text"] = "; ".join(parts) if parts else "no privacy figure"
    return out


# ------------------------------------------------------------------ the ledger
def ledger_entry(
    ledger: Path,
    doc: Mapping[str, Any],
    files: Mapping[str, Sequence[Path]],
    approved_by: str,
    key_fingerprint: str | None,
) -> dict[str, Any]:
    """The ledger entry of a published release, from its report (report.json's content)."""
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
    }
    if key_fingerprint is not None:
        extra["key_fingerprint"] = key_fingerprint
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
    )


def _nan(value: Any) -> bool:
    return isinstance(value, float) and not math.isfinite(value)
