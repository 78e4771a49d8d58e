"""The one release pipeline (issue 31): every release safeshare writes is published here.

A *plan* is what a search decided: a global one (one node for every record,
:class:`~safeshare.workflows.anonymizer.AnonymizationResult`) or a mixed one (the global node,
then local recoding's rounds on the records it suppressed,
:class:`~safeshare.workflows.local_recoding.LocalRecodingResult`). :func:`publish` takes
either and always runs the same steps, so the report of a release does not depend on which
caller asked for it (``safeshare anonymize``, :func:`safeshare.api.anonymize`, the workbench,
:func:`~safeshare.workflows.publish.write_release`,
:func:`~safeshare.workflows.publish.publish_local_recoding`, ``sweep
--write-releases``; the algorithms ``node`` and ``epsilon-safe`` are plans like the others)::

    plan -> refused unless it has a node and N >= the input
      -> the engine writes it into a private stage (Engine.write_release / write_mixed_release)
      -> the independent verifier re-reads the written file (verify/: the configuration's
         roles and models, every label true of its records, people, identifiers)
      -> one Release describes it (workflows/result.py); then, over the written file:
         the disclosure warnings and the informed adversary (verify/disclosure.py), the
         headline, the certificate and the evidence (workflows/evidence.py)
      -> report.json and report.html rendered from that Release
      -> published in one atomic rename (io.OutputDirectory), with its ledger line
         (workflows/ledger.py) when a ledger is kept

A plan that is only described (``out_dir=None``) goes through the same description, without
the steps that need a written file (the verifier, the disclosure warnings, the evidence).
Nothing reaches ``out_dir`` unless every step passed (the Privacy-by-default rule of the
project guide: a release that fails its own check is never written).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from safeshare.app_runner import SILENT, Monitor
from safeshare.data.engines.base import Engine, OutputFormat
from safeshare.errors import InputError
from safeshare.io import OutputDirectory
from safeshare.report.content import report_warnings
from safeshare.verify import Expectations, Verification
from safeshare.workflows.acknowledgement import Acknowledgement, acknowledge
from safeshare.workflows.anonymizer import AnonymizationResult
from safeshare.workflows.certificate import risk_certificate
from safeshare.workflows.coverage import coverage
from safeshare.workflows.local_recoding import LocalRecodingResult
from safeshare.workflows.local_release import PublishedLocalRelease
from safeshare.workflows.persons import people_certificate, person_warnings
from safeshare.workflows.release import (
    PublishedRelease,
    ReleaseContext,
    build_release,
    check_releasable,
    release_name,
    stage_and_build,
    verifier_expectations,
    write_reports,
)
from safeshare.workflows.release_attack import attack_written_release
from safeshare.workflows.result import Release, headline

if TYPE_CHECKING:
    from safeshare.data.schema import Schema

#: What :func:`publish` publishes: one node for every record, or the global node and local
#: recoding's rounds (a mixed release).
Plan = AnonymizationResult | LocalRecodingResult


def publish(
    plan: Plan,
    engine: Engine,
    out_dir: Path | None,
    context: ReleaseContext,
    *,
    fmt: OutputFormat = "csv",
    delimiter: str = ",",
    html: bool = True,
    monitor: Monitor = SILENT,
    timings: dict[str, float] | None = None,
    atomic: bool = True,
) -> Release:
    """Write, verify, describe and publish ``plan`` into ``out_dir`` (module docstring).

    ``engine`` holds the records the plan was searched on (epsilon-safe: the sample,
    ``plan.prepared.engine``); ``context`` what the report says besides the plan (the
    configuration, N, the ledger, ...: :meth:`ReleaseContext.of_config`); ``timings``: the
    seconds of the earlier phases (default: the context's and the plan's). ``out_dir=None``
    describes the plan without writing it (the :class:`Release` then has no verification).
    ``atomic=False`` writes into the new directory ``out_dir`` inside a stage the caller
    publishes as a whole (``sweep --write-releases``): not locked, not swapped, no ledger line.

    Raises :class:`InputError` when the plan has no node (or N is below the input) and
    :class:`~safeshare.errors.VerificationError` when the written release fails its check;
    then nothing is published.
    """
    _check_publishable(plan, context)
    if timings is None:
        timings = {**context.timings, **plan.timings}
    if out_dir is None:
        release = _describe(plan, engine, fmt, delimiter, context, None, None, timings)
        _attest(release, context)
        return release
    out_dir = Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise InputError(f"output path {out_dir} exists and is not a directory")
    name = release_name(fmt)
    if not atomic:
        if context.ledger_path is not None:
            raise InputError("a release written into a caller's stage is not recorded in a ledger")
        out_dir.mkdir(parents=True, exist_ok=False)
        with monitor.phase("writing and verifying the release"):
            return _write(plan, engine, out_dir, out_dir, context, fmt, delimiter, html, timings)
    output = OutputDirectory(out_dir)  # lock, recover, check, stage (see safeshare.io)
    with monitor.phase("writing and verifying the release"), output as stage:
        release = _write(plan, engine, stage, out_dir, context, fmt, delimiter, html, timings)
        release.ledger_entry = _publish_and_record(output, stage / name, release, _schema(plan), context)
    assert (out_dir / name).exists()
    return release


def _check_publishable(plan: Plan, context: ReleaseContext) -> None:
    """Refuse, before anything is written, a plan without a node or with an impossible N."""
    if isinstance(plan, LocalRecodingResult):
        from safeshare.workflows.local_release import check_local_releasable

        check_local_releasable(plan)
        check_releasable(plan.global_result, context.population_size)
        return
    records = context.input_table.n_records if context.input_table is not None else None
    check_releasable(plan, context.population_size, records)


def _schema(plan: Plan) -> Schema:
    return plan.global_result.schema if isinstance(plan, LocalRecodingResult) else plan.schema


def _expectations(plan: Plan, engine: Engine, delimiter: str, context: ReleaseContext) -> Expectations:
    """What the verifier must find in the written release: the configuration's roles and models,
    people and linked profiles, and the identifiers recomputed from the key
    (:func:`~safeshare.workflows.release.verifier_expectations`); for a mixed plan the labels of
    any level (:func:`~safeshare.workflows.local_release.local_release_expectations`;
    identifier treatments are refused with local recoding by the configuration)."""
    if isinstance(plan, LocalRecodingResult):
        from safeshare.workflows.local_release import local_release_expectations

        return local_release_expectations(plan, engine.columns(), delimiter)
    return verifier_expectations(plan, engine, delimiter, context.identifiers, context.missing)


def _describe(
    plan: Plan,
    engine: Engine,
    fmt: OutputFormat,
    delimiter: str,
    context: ReleaseContext,
    verification: Verification | None,
    out_dir: Path | None,
    timings: dict[str, float],
) -> Release:
    """The :class:`Release` of ``plan``, without what depends on the written file."""
    if isinstance(plan, LocalRecodingResult):
        from safeshare.workflows.local_release import build_local_release

        return build_local_release(plan, engine, fmt, delimiter, context, verification, out_dir, timings)
    return build_release(plan, engine, fmt, delimiter, context, verification, out_dir, timings)


def _write(
    plan: Plan,
    engine: Engine,
    stage: Path,
    out_dir: Path,
    context: ReleaseContext,
    fmt: OutputFormat,
    delimiter: str,
    html: bool,
    timings: dict[str, float],
) -> Release:
    """The plan written into ``stage``, verified, described, attested and reported there
    (published later at ``out_dir``)."""
    expected = _expectations(plan, engine, delimiter, context)
    if isinstance(plan, LocalRecodingResult):
        from safeshare.workflows.local_release import stage_local_release

        verification = stage_local_release(plan, engine, stage, fmt, delimiter, timings, expected=expected)
        release = _describe(plan, engine, fmt, delimiter, context, verification, out_dir, timings)
    else:  # the risk section on a second thread while the engine writes (stage_and_build)
        release = stage_and_build(plan, engine, stage, fmt, delimiter, context, out_dir, timings, expected)
    acknowledgement = _attest(
        release, context, plan, expected, stage / release_name(fmt), out_dir, fmt, delimiter, engine
    )
    acknowledgement.require()  # contradicting warnings unacknowledged: refused, nothing published
    write_reports(release, stage, html)
    return release


def _attest(
    release: Release,
    context: ReleaseContext,
    plan: Plan | None = None,
    expected: Expectations | None = None,
    staged: Path | None = None,
    out_dir: Path | None = None,
    fmt: OutputFormat = "csv",
    delimiter: str = ",",
    engine: Engine | None = None,
) -> Acknowledgement:
    """What a privacy officer signs, added to ``release``: the report's warnings, the headline and
    the certificate; for a release written at ``staged`` (and verified against ``expected``) also
    the disclosure warnings over the file, the informed adversary and the evidence. The same for a
    global and a mixed release, so a locally recoded release carries its own figures.

    Returns every warning marked against the headline with the custodian's acknowledgements
    (:mod:`safeshare.workflows.acknowledgement`), also on the certificate (``warnings``,
    ``acknowledged``), in the evidence and, through the report, in the ledger entry; the caller
    of a written release refuses it while one is missing (:meth:`Acknowledgement.require`)."""
    release.warnings = report_warnings(release.report) + person_warnings(release.report)
    if staged is not None:
        assert plan is not None and expected is not None and out_dir is not None
        counts = _add_disclosure_and_evidence(
            release, context, plan, expected, staged, out_dir, fmt, delimiter
        )
        if engine is not None:  # utility before and after, over the written file (issue 33)
            _add_before_after(release, plan, engine, staged, fmt, delimiter, counts)
    # the headline states a per-record bound only where it holds against the informed adversary
    release.headline = headline(release.report, context.threshold_reason)
    release.certificate = {
        "data_set": release.input.source,
        "records": release.input.records,
        "purpose": context.purpose,
        "approved_by": context.approved_by,
        "ledger": context.ledger,
        **people_certificate(release.report),
        **risk_certificate(release, context),  # N, its source, the band, the spread (issue 33)
    }
    attack_written_release(release, context.attack, staged)  # issue 34: the attack beside B
    # every warning of the run on the certificate, marked against the headline (issue 33)
    report = release.report
    acknowledgement = acknowledge(report["warnings"], report, context.accepted_warnings, context.approved_by)
    release.certificate = {**(release.certificate or {}), **acknowledgement.to_dict()}
    if release.evidence is not None:
        release.evidence = {**release.evidence, "acknowledgements": acknowledgement.acknowledged}
    # the context and the clause-by-clause coverage of the standards, last: it reads the rest
    release.certificate = {**release.certificate, "governance": context.governance}
    release.certificate = {**release.certificate, "coverage": coverage(release.report)}
    return acknowledgement


def _add_before_after(
    release: Release,
    plan: Plan,
    engine: Engine,
    staged: Path,
    fmt: OutputFormat,
    delimiter: str,
    counts: Mapping[str, Mapping[str, int]] | None = None,
) -> None:
    """Utility before and after over the written file (:mod:`safeshare.workflows.before_after`):
    each column's categories in the input and released, and a ``subgroup-suppressed`` warning
    where a category of at least 11 records loses more than half of them. ``counts``: the kept
    columns' released counts the disclosure check read from the file (not read again)."""
    from safeshare.workflows.before_after import before_after

    t0 = time.perf_counter()
    mixed = isinstance(plan, LocalRecodingResult)
    result = plan.global_result if isinstance(plan, LocalRecodingResult) else plan
    assert release.verification is not None
    columns = release.verification.checks.get("columns", [])
    found = before_after(result, engine, staged, fmt, delimiter, columns, mixed=mixed, released=counts)
    release.before_after = found.to_dict()
    release.warnings += found.warnings()
    release.timings["before_after"] = time.perf_counter() - t0


def _add_disclosure_and_evidence(
    release: Release,
    context: ReleaseContext,
    plan: Plan,
    expected: Expectations,
    staged: Path,
    out_dir: Path,
    fmt: OutputFormat,
    delimiter: str,
) -> dict[str, dict[str, int]]:
    """The disclosure warnings and the informed adversary over the written file
    (:func:`~safeshare.workflows.release_evidence.release_disclosure`), then the evidence
    (:func:`~safeshare.workflows.release_evidence.release_evidence`); the kept columns' released
    counts read by the same scan of the file (for the before / after)."""
    from safeshare.workflows.release_evidence import release_disclosure, release_evidence

    t0 = time.perf_counter()
    verification = release.verification
    assert verification is not None
    result = plan.global_result if isinstance(plan, LocalRecodingResult) else plan
    per_level = (
        {
            g["qi"]: {int(lv): int(n) for lv, n in g["records_per_level"].items()}
            for g in plan.generalization()
        }
        if isinstance(plan, LocalRecodingResult)
        else None
    )
    released_columns = verification.checks.get("columns", [])
    warnings, informed, counts = release_disclosure(
        staged,
        fmt,
        result,
        released_columns,
        delimiter,
        context.missing,
        release.privacy.k,
        verification.rows,
    )
    verification.rows = None  # read: not held longer
    release.warnings += warnings
    release.informed_adversary = informed
    evidence = release_evidence(
        result=result,
        expected=expected,
        verification=verification,
        staged=staged,
        published=out_dir,
        fmt=fmt,
        delimiter=delimiter,
        base=context.base,
        config=Path(context.config) if context.config is not None else None,
        inputs=context.inputs,
        version=release.provenance.version,
        engine=release.provenance.engine,
        population_size=context.population_size,
        threshold_reason=context.threshold_reason,
        seeds=release.provenance.seeds,
        identifiers=context.identifiers,
        records_per_level=per_level,
        informed=informed,
    )
    release.evidence = evidence.to_dict()
    release.timings["evidence"] = time.perf_counter() - t0
    return counts


def protected_files(context: ReleaseContext, schema: Schema) -> dict[str, list[Path]]:
    """The files a ledger may not be (an append would replace them): the input, the
    configuration, the hierarchy files and the key file."""
    from safeshare.workflows.evidence import hierarchy_files

    specs = {n: a.hierarchy for n, a in schema.attributes.items() if a.hierarchy is not None}
    protected = {
        "input": list(context.inputs),
        "configuration": [Path(context.config)] if context.config is not None else [],
        "hierarchy file": hierarchy_files(specs),
    }
    if context.key_path is not None:
        protected["key file"] = [context.key_path]
    return protected


def _publish_and_record(
    output: OutputDirectory, staged: Path, release: Release, schema: Schema, context: ReleaseContext
) -> dict[str, Any] | None:
    """Publish the staged release (``output.publish()``) and, with a ledger, record it: the
    ledger's lock is taken, its chain and place checked and the new ledger written beside it
    (the entry hashes the staged files, recorded at their published paths) *before* the release
    is published; only the final rename of the ledger follows the publication, with SIGINT and
    SIGTERM held back between the two. A ledger problem therefore stops the run with nothing
    published. The ledger line's ``{path, seq, entry_sha256}``, or ``None`` without a ledger."""
    from safeshare.io import signals_deferred
    from safeshare.workflows.evidence import hierarchy_files
    from safeshare.workflows.ledger import LedgerAppend
    from safeshare.workflows.release_evidence import ledger_entry

    ledger = context.ledger_path
    if ledger is None:
        output.publish()
        return None
    stage = staged.parent
    specs = {n: a.hierarchy for n, a in schema.attributes.items() if a.hierarchy is not None}
    files = {
        "input": list(context.inputs),
        "config": [Path(context.config)] if context.config is not None else [],
        "hierarchy": hierarchy_files(specs),
        "release": [staged],
        "report": [p for p in (stage / "report.json", stage / "report.html") if p.exists()],
    }
    identifiers = context.identifiers
    fingerprint = identifiers.key.fingerprint if identifiers is not None else None
    window = (
        identifiers.shifted_dates[0].max_days
        if identifiers is not None and identifiers.shifted_dates
        else None
    )
    with LedgerAppend(ledger, protected=protected_files(context, schema), out_dir=output.out_dir) as append:
        entry = ledger_entry(
            append.path,
            release.report,
            files,
            context.approved_by or "",
            fingerprint,
            window,
            moved=(stage, output.out_dir),
        )
        append.prepare(entry)
        with signals_deferred():  # no interrupt between the publication and its ledger line
            output.publish()
            written = append.commit()
    return {"path": str(ledger), "seq": written["seq"], "entry_sha256": written["entry_sha256"]}


def _published(release: Release, out_dir: Path, fmt: OutputFormat) -> PublishedRelease:
    """Where :func:`publish` put a verified release's files in ``out_dir`` (global or mixed)."""
    assert release.verification is not None
    return PublishedRelease(
        release=out_dir / release_name(fmt),
        report_json=out_dir / "report.json",
        report_html=out_dir / "report.html",
        result=release,
        verification=release.verification,
    )


def write_release(
    result: AnonymizationResult,
    engine: Engine,
    out_dir: Path,
    fmt: OutputFormat = "csv",
    delimiter: str = ",",
    html: bool = True,
    population_size: int | None = None,
    context: ReleaseContext | None = None,
) -> PublishedRelease:
    """:func:`safeshare.workflows.publish.publish` of a global ``result`` into ``out_dir``:
    the chosen node applied to every record, the written file verified, the report (warnings,
    evidence, headline, certificate) rendered, published atomically.

    ``engine`` holds the records the search ran on (for epsilon-safe, the sample:
    ``result.prepared.engine``). ``population_size`` (N) is the population the risk
    section assumes; ``None``: the input is the population. ``context`` adds what the
    report says besides the result (:meth:`ReleaseContext.of_config`: the configuration,
    the ledger, ...).

    Raises :class:`InputError` when no node qualifies and
    :class:`VerificationError` when the written release fails verification;
    in both cases nothing is written to ``out_dir``.
    """
    context = context or ReleaseContext(population_size=population_size)
    if population_size is not None:
        context.population_size = population_size
    out_dir = Path(out_dir)
    release = publish(result, engine, out_dir, context, fmt=fmt, delimiter=delimiter, html=html)
    return _published(release, out_dir, fmt)


def write_release_files(
    result: AnonymizationResult,
    engine: Engine,
    directory: Path,
    fmt: OutputFormat = "csv",
    delimiter: str = ",",
    context: ReleaseContext | None = None,
    html: bool = True,
) -> Release:
    """:func:`~safeshare.workflows.publish.publish` into a new ``directory`` inside a private
    stage that is published as a whole later (``sweep --write-releases``): written and
    verified, not locked or swapped."""
    context = context or ReleaseContext()
    return publish(result, engine, directory, context, fmt=fmt, delimiter=delimiter, html=html, atomic=False)


def publish_local_recoding(
    result: LocalRecodingResult,
    engine: Engine,
    out_dir: Path,
    fmt: OutputFormat = "csv",
    delimiter: str = ",",
    context: ReleaseContext | None = None,
    html: bool = True,
) -> PublishedLocalRelease:
    """:func:`safeshare.workflows.publish.publish` of the mixed release of ``result`` into
    ``out_dir``: written, the written file verified, report.json and report.html (warnings,
    evidence, headline, certificate) rendered from the :class:`Release`, published atomically.

    ``context``: what the report says besides the result (the configuration, N, ...:
    :meth:`ReleaseContext.of_config`). Raises :class:`InputError` when no node qualified and
    :class:`VerificationError` when the written release fails its check; then nothing is
    written to ``out_dir``.
    """
    out_dir = Path(out_dir)
    release = publish(
        result, engine, out_dir, context or ReleaseContext(), fmt=fmt, delimiter=delimiter, html=html
    )
    return _published(release, out_dir, fmt)


__all__ = [
    "Plan",
    "protected_files",
    "publish",
    "publish_local_recoding",
    "write_release",
    "write_release_files",
]
