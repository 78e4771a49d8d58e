"""Write, verify and describe a global release: the steps :mod:`safeshare.workflows.publish`
runs for a plan of one node (the one release pipeline, issue 31), and the thin callers
:func:`write_release` and :func:`write_release_files` of it.

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

import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, cast

import numpy as np

from safeshare.app_runner import to_json
from safeshare.core.evaluation import Evaluator
from safeshare.core.frequency import FrequencyTable
from safeshare.data.engines.base import Engine, OutputFormat, peak_rss_mb
from safeshare.data.identifiers import IdentifierTreatment
from safeshare.data.schema import Schema
from safeshare.errors import DataError, InputError, VerificationError
from safeshare.io import atomic_write_text
from safeshare.report.content import portable_paths
from safeshare.risk.drivers import risk_drivers
from safeshare.risk.measures import risk_measures
from safeshare.risk.population import Population
from safeshare.risk.report_risk import risk_section
from safeshare.verify import (
    Expectations,
    Verification,
    allowed_release_columns,
    expectations_for,
    verify_release,
    with_identifiers,
)
from safeshare.verify.identifiers import IdentifierExpectations
from safeshare.verify.truth import TruthExpectations
from safeshare.workflows.anonymizer import AnonymizationResult
from safeshare.workflows.result import (
    Provenance,
    Release,
    UtilityOutcome,
    choice_of,
    input_profile,
    output_of,
    privacy_of,
)


@dataclass
class PublishedRelease:
    """Where the outputs went, and the :class:`Release` that describes them."""

    release: Path
    report_json: Path
    report_html: Path
    result: Release
    verification: Verification

    @property
    def report(self) -> dict[str, Any]:
        """report.json (:attr:`Release.report`)."""
        return self.result.report


@dataclass
class ReleaseContext:
    """What a release's report says besides the search's result (all optional).

    Attributes
    ----------
    config: the configuration file (reported by its name only).
    source: the input file (reported relative to the configuration's directory).
    settings: the validated configuration, every key (report.json's ``provenance.settings``).
    population_size: N of the risk section; ``None``: the input is the whole population.
    input_table: the frequency table of the whole input when the search ran on a sample of
        it (epsilon-safe): the risk section then compares the input with the sampled release.
    tradeoff: the suppression / loss curve (:func:`~safeshare.workflows.anonymizer.tradeoff`).
    m_concealing: report.json's ``m``, ``inverse_m`` and ``m_concealing`` of the release.
    timings: seconds of earlier phases (reading the input, ...).
    """

    config: str | Path | None = None
    source: str | Path | None = None
    settings: Mapping[str, Any] = field(default_factory=dict)
    population_size: int | None = None
    #: where N comes from (``population.source``, ``--population-source``; issue 33)
    population_source: str | None = None
    input_table: FrequencyTable | None = None
    tradeoff: list[dict[str, Any]] | None = None
    tradeoff_skipped: str | None = None
    m_concealing: dict[str, Any] | None = None
    timings: dict[str, float] = field(default_factory=dict)
    #: the custodian's reason for the risk threshold (the headline and the evidence)
    threshold_reason: str | None = None
    #: the printable cover: what the release is for, who approved it, the ledger it goes to
    purpose: str | None = None
    approved_by: str | None = None
    ledger: str | None = None
    #: pseudonyms and shifted dates: the verifier recomputes them from the key (``None``: none)
    identifiers: IdentifierTreatment | None = None
    #: the input's missing-value tokens (released as they are by the identifier treatment)
    missing: tuple[str, ...] = ()
    #: without a person key, the columns that look like a person identifier and repeat (issue 32)
    repeated_persons: tuple[Mapping[str, Any], ...] = ()
    #: the configuration's folder: the evidence names files relative to it (``None``: by name)
    base_dir: Path | None = None
    #: the input files the evidence and the ledger hash (none for a Spark SQL table)
    inputs: tuple[Path, ...] = ()
    #: the release ledger the publication appends to (``None``: no ledger is kept)
    ledger_path: Path | None = None
    #: the key file (a ledger may not be it)
    key_path: Path | None = None
    #: ``governance:`` as the certificate shows it (``GovernanceSection.to_dict()``; ``None``: none)
    governance: Mapping[str, Any] | None = None
    #: the attack on the written release (``attack:``; a ``ReleaseAttack`` prepared before the
    #: search by :func:`safeshare.workflows.release_attack.prepare_release_attack`), or ``None``
    attack: Any = None
    #: the warning codes the custodian acknowledges (``accept_warnings:``; issue 33): a written
    #: release whose warnings contradict its headline is refused without them
    accepted_warnings: tuple[str, ...] = ()

    @property
    def population(self) -> Population:
        """N and its source (:class:`~safeshare.risk.population.Population`; no N: the input is the
        whole population)."""
        return Population.of(self.population_size, self.population_source)

    @property
    def base(self) -> Path | None:
        """The folder report paths are relative to: ``base_dir``, else the configuration's."""
        if self.base_dir is not None:
            return self.base_dir
        return Path(self.config).parent if self.config is not None else None

    @classmethod
    def of_config(cls, cfg: Any, **fields: Any) -> ReleaseContext:
        """The context of a loaded configuration (:func:`safeshare.config.load_config`): every
        caller that publishes a configured run describes it alike (``fields`` add the run's own:
        ``input_table``, ``repeated_persons``, ...)."""
        from safeshare.paths import shown_path

        ledger: Path | None = cfg.ledger_path
        context = cls(
            config=cfg.path,
            source=cfg.source.path,
            settings=cfg.settings(),
            population_size=cfg.population_size,
            population_source=cfg.population.source if cfg.population_size is not None else None,
            threshold_reason=cfg.threshold_reason,
            purpose=cfg.purpose,
            approved_by=cfg.approved_by,
            ledger=shown_path(ledger, cfg.base_dir) if ledger is not None else None,
            identifiers=cfg.identifiers,
            missing=tuple(cfg.source.missing),
            base_dir=cfg.base_dir,
            inputs=(cfg.source.path,) if cfg.source.table is None else (),
            ledger_path=ledger,
            key_path=cfg.key_path,
            governance=cfg.governance.to_dict() if getattr(cfg, "governance", None) is not None else None,
            accepted_warnings=tuple(getattr(cfg, "accept_warnings", ())),
        )
        for name, value in fields.items():
            setattr(context, name, value)
        return context


def release_name(fmt: OutputFormat) -> str:
    return "release.parquet" if fmt == "parquet" else "release.csv"


def truth_expectations(
    schema: Schema, table: FrequencyTable, engine: Engine, levels: Mapping[str, int] | None = None
) -> TruthExpectations:
    """What the verifier's truth check (:mod:`safeshare.verify.truth`) needs: what the labels
    of each quasi-identifier state, from its configured builder or file
    (:func:`~safeshare.hierarchy.truth.semantics_of`), the labels the configured hierarchy
    gives each value at ``levels`` (``None``: at every level, a locally recoded release), and
    the input's distinct quasi-identifier tuples with their record counts as ``engine`` reads
    them (:meth:`~safeshare.data.engines.base.Engine.grouped_counts`, asked when the check runs:
    the DuckDB engine answers from its first pass, no second read of the records)."""
    from safeshare.hierarchy.truth import semantics_of

    qis = list(table.qi_names)
    labels: dict[str, dict[str, tuple[str, ...]]] = {}
    for qi, h in zip(qis, table.hierarchies, strict=True):
        if levels is None:
            labels[qi] = {row[0]: tuple(dict.fromkeys(row)) for row in h.rows}
        else:
            labels[qi] = {row[0]: (row[levels[qi]],) for row in h.rows}
    return TruthExpectations(
        semantics={qi: semantics_of(schema.hierarchy_spec(qi)) for qi in qis},
        labels=labels,
        input_classes=lambda: engine.grouped_counts(qis),
        any_level=levels is None,
    )


def release_expectations(
    result: AnonymizationResult, input_columns: Sequence[str], delimiter: str = ","
) -> Expectations:
    """What the independent verifier must find in the release of ``result``.

    The release's columns come from the configuration's roles applied to the
    input's header ``input_columns`` (:func:`safeshare.verify.allowed_release_columns`),
    not from the release plan, so that a plan that keeps a column it should
    not (an unlisted one, a renamed duplicate) fails verification. :func:`stage_release` adds
    the truth of every label against the input's values (:func:`truth_expectations`).
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
        return with_people(expected, result, engine)
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
    return with_people(with_identifiers(expected, header, roles, default, checks), result, engine)


def check_releasable(
    result: AnonymizationResult, population_size: int | None, input_records: int | None = None
) -> None:
    """Refuse, before anything is written, a result without a node or an impossible N."""
    if not result.found:
        stop = result.search.extra.get("stop_reason")
        if result.search.extra.get("search") == "anytime" and stop in ("time_limit", "max_evaluations"):
            raise InputError(
                f"the anytime search found no qualifying node before its {str(stop).replace('_', ' ')}; "
                "raise time_limit or max_evaluations"
            )
        if result.search.algorithm == "node":
            levels = ", ".join(
                f"{q}={lv}"
                for q, lv in zip(result.table.qi_names, result.search.extra["requested_node"], strict=True)
            )
            raise InputError(
                f"the node of the configured levels ({levels}) does not satisfy the privacy models within "
                f"the suppression limit ({result.criterion.max_suppression:.0%}); nothing written"
            )
        raise InputError(
            "no generalization satisfies the privacy models within the suppression limit "
            f"({result.criterion.max_suppression:.0%}); allow more suppression or lower the requirements"
        )
    records = input_records if input_records is not None else result.table.n_records
    if result.table.persons is not None and input_records is None:  # N counts people (issue 32)
        people = result.table.n_people
        Population.of(population_size).check(people, "input", "people", "population_size")
        return
    Population.of(population_size).check(records, "input", "records", "population_size")


#: The most distinct rows of a written release the verifier hands on, from its one scan of the
#: file, to the disclosure check (:attr:`safeshare.verify.Verification.rows`; a release with more
#: is read again by that check): 2**18 rows, a few tens of MB of text; 10 million resampled Adult
#: records release 29,096.
KEPT_ROWS = 1 << 18


def stage_release(
    result: AnonymizationResult,
    engine: Engine,
    stage: Path,
    fmt: OutputFormat,
    delimiter: str,
    timings: dict[str, float],
    expected: Expectations | None = None,
) -> Verification:
    """Apply the chosen node to every record of ``engine`` into ``stage`` and verify the file.

    ``expected``: what the verifier must find (default: :func:`release_expectations` of the
    configuration's roles; the anonymize use case adds the identifier checks); the truth check
    of :func:`truth_expectations` is added unless ``expected`` has one.

    Raises :class:`VerificationError` when the written release fails the independent check
    (the caller's :class:`OutputDirectory` then removes the stage: nothing is published).
    """
    input_columns = engine.columns()
    plan = result.release_plan(input_columns, fmt, delimiter)
    name = release_name(fmt)
    start = time.perf_counter()
    written = engine.write_release(plan, stage / name)
    timings["apply"] = time.perf_counter() - start
    start = time.perf_counter()
    if expected is None:
        expected = release_expectations(result, input_columns, delimiter)
    if expected.truth is None:  # every label true of its records, against the input's values
        expected = replace(
            expected, truth=truth_expectations(result.schema, result.table, engine, result.levels)
        )
    expected = with_people(expected, result, engine)  # k in people; linked records' profiles
    verification = verify_release(stage / name, fmt, expected, keep_rows=KEPT_ROWS)
    if engine.name == "spark":  # a second verifier that scales with the cluster (verify/spark.py)
        from safeshare.verify.spark import verify_release_spark

        again = verify_release_spark(cast(Any, engine).spark, stage / name, expected)
        verification.checks[engine.name] = again.to_dict()
        verification.failures += [f"({engine.name} verifier) {f}" for f in again.failures]
        verification.passed = verification.passed and again.passed
    timings["verify"] = time.perf_counter() - start
    check_verified(verification, written, result.suppressed_records, "the search")
    return verification


def with_people(expected: Expectations, result: AnonymizationResult, engine: Engine) -> Expectations:
    """``expected`` with the people check (a person key) and the profiles of linked records
    (:mod:`safeshare.workflows.persons`, issue 32), unless it has them."""
    from safeshare.workflows.persons import link_expectations, person_expectations, release_k

    if expected.persons is None and result.table.persons is not None:
        expected = replace(expected, persons=person_expectations(result, engine))
    if expected.links is None:
        expected = replace(
            expected, links=link_expectations(result.schema, expected.columns, release_k(result))
        )
    return expected


def check_verified(verification: Verification, written: int, suppressed: int, expecting: str) -> None:
    """Raise :class:`VerificationError` unless the written release passed the verifier, holds the
    ``written`` records the engine reported and suppressed the ``suppressed`` records that
    ``expecting`` (the search, local recoding) expected."""
    if not verification.passed:
        raise VerificationError(
            "the written release failed its independent privacy check: " + "; ".join(verification.failures)
        )
    if written != verification.records_out:
        raise VerificationError(
            f"the engine wrote {written} records but the release holds {verification.records_out}"
        )
    if verification.suppressed_records != suppressed:
        raise VerificationError(
            f"{verification.suppressed_records} records were suppressed, {expecting} expected {suppressed}"
        )


def build_release(
    result: AnonymizationResult,
    engine: Engine,
    fmt: OutputFormat,
    delimiter: str,
    context: ReleaseContext,
    verification: Verification | None,
    out_dir: Path | None,
    timings: Mapping[str, float],
    risk: dict[str, Any] | None = None,
) -> Release:
    """The :class:`Release` of ``result`` (written to ``out_dir`` and verified, or not written).
    ``risk``: its risk section when already computed (:func:`stage_and_build`), else
    :func:`release_risk`. The warnings, the headline, the certificate and the evidence are added
    by :func:`safeshare.workflows.publish.publish`, the same for every plan."""
    input_columns = engine.columns()
    released_columns = result.schema.released_columns(input_columns)
    config, source = portable(context.config, context.source)
    sampling = (
        dict(result.prepared.report) if result.prepared is not None and result.prepared.sampled else None
    )
    records = context.input_table.n_records if context.input_table is not None else result.records_in
    seeds = {"dp": result.search.extra["seed"]} if "seed" in result.search.extra else {}
    release = Release(
        input=input_profile(
            result, source, input_columns, released_columns, records, context.repeated_persons
        ),
        choice=choice_of(result),
        output=output_of(result, release_name(fmt), fmt, out_dir),
        privacy=privacy_of(result),
        risk=risk if risk is not None else release_risk(result, context.population_size, context.input_table),
        utility=UtilityOutcome(
            tradeoff=tuple(context.tradeoff) if context.tradeoff is not None else None,
            tradeoff_skipped=context.tradeoff_skipped,
            m_concealing=context.m_concealing,
        ),
        provenance=Provenance(
            config=config,
            settings=dict(context.settings),
            version=_version(),
            seeds=seeds,
            created=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            engine=engine.name,
            engine_settings=engine.settings(),
        ),
        verification=verification,
        sampling=sampling,
        timings=dict(timings),
        peak_rss_mb=peak_rss_mb(),
        fit=result,
    )
    return release


def stage_and_build(
    result: AnonymizationResult,
    engine: Engine,
    stage: Path,
    fmt: OutputFormat,
    delimiter: str,
    context: ReleaseContext,
    out_dir: Path,
    timings: dict[str, float] | None = None,
    expected: Expectations | None = None,
) -> Release:
    """:func:`stage_release` then :func:`build_release`: the release written into ``stage``,
    verified and described. ``timings`` (updated): default the context's and the search's;
    ``expected``: default :func:`release_expectations`, with the context's identifier checks.

    The risk section needs the search's class sizes only, not the file: it is computed on a
    second thread while the engine writes (the grouped release's Parquet writer runs on one
    thread, so the second core is otherwise idle; 10 million records: about 0.3 s, the
    estimator's import and its bootstrap interval). The same function of the same sizes as
    :func:`release_risk`, so the same section; an error in it is raised here as it would be
    there, after the write and before anything is published. An interrupt (Ctrl-C, SIGTERM)
    during the write leaves once the section is done: it works on the class-size histogram,
    1.4 s at 5 million classes."""
    if timings is None:
        timings = {**context.timings, **result.timings}
    if expected is None and context.identifiers is not None:
        expected = verifier_expectations(result, engine, delimiter, context.identifiers, context.missing)
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="safeshare-risk") as pool:
        risk = None
        if result.table.persons is not None and context.input_table is None:  # in people (issue 32)
            _ = result.evaluator.classes(result.table.lattice.bottom).people  # here, on this thread
            risk = pool.submit(release_risk, result, context.population_size)
        elif context.input_table is None:  # the class sizes read here, on this thread
            sizes = input_class_sizes(result), result.released_class_sizes
            risk = pool.submit(risk_section, *sizes, context.population_size)
        verification = stage_release(result, engine, stage, fmt, delimiter, timings, expected)
        section = risk.result() if risk is not None else None
        return build_release(result, engine, fmt, delimiter, context, verification, out_dir, timings, section)


def write_reports(release: Release, directory: Path, html: bool = True) -> None:
    """report.json (:attr:`Release.report`) and report.html (rendered from it) into ``directory``."""
    if html:
        from safeshare.report.html import render_report

        start = time.perf_counter()
        release.timings["report"] = 0.0
        atomic_write_text(directory / "report.html", render_report(release.report))
        release.timings["report"] = time.perf_counter() - start
    atomic_write_text(directory / "report.json", to_json(release.report, indent=2) + "\n")


def release_risk(
    result: AnonymizationResult, population_size: int | None, input_table: FrequencyTable | None = None
) -> dict[str, Any]:
    """report.json's ``risk``: the input's and the release's risk, same estimator, same N.

    When the search ran on the input (``input_table`` is ``None``), the input's classes
    are those of the search's table (:func:`input_class_sizes`). When it ran on a sample
    of the input (epsilon-safe), ``input_table`` is the whole input's table: its classes
    are the input side, N is ``population_size`` or the input's record count, and, when
    the input is the population, every released class's population size ``F_j`` is
    counted exactly on the input at the chosen node.
    """
    if input_table is None and result.table.persons is not None:  # in people (issue 32)
        from safeshare.workflows.persons import person_risk

        return person_risk(result, population_size)
    if input_table is None:
        return risk_section(input_class_sizes(result), result.released_class_sizes, population_size)
    sizes = Evaluator(input_table).classes(input_table.lattice.bottom).nonempty
    doc = risk_section(sizes, result.released_class_sizes, population_size)
    if population_size is None and result.node is not None and doc["release"] is not None:
        f, F = released_population_sizes(result, input_table)
        exact = risk_measures(f, F, doc["population_size"], doc["threshold"]).to_dict()
        exact["estimated"] = False
        exact["B_estimate"] = doc["release"]["B_estimate"]
        exact["drivers"] = risk_drivers(f, F)
        doc["release"] = exact
        doc["population"] = (
            "the input, taken as the whole population; the release is a sample of it (exact risks)"
        )
    return doc


def released_population_sizes(
    result: AnonymizationResult, population: FrequencyTable
) -> tuple[np.ndarray, np.ndarray]:
    """Sizes ``f_j`` of the released classes and ``F_j`` of the same classes in ``population``.

    Classes are matched by their generalized labels at the chosen node (the two tables
    share the QIs and the data-independent hierarchies).
    """
    import pandas as pd

    assert result.node is not None
    qis = list(result.table.qi_names)
    rows = result.released_rows
    sample = result.table.labels_at(result.node)[rows]
    sample["_f"] = result.table.counts[rows]
    f = sample.groupby(qis, sort=False)["_f"].sum()
    whole = population.labels_at(result.node)
    whole["_F"] = population.counts
    F = whole.groupby(qis, sort=False)["_F"].sum()
    joined = pd.concat([f, F], axis=1, join="inner")
    if len(joined) != len(f):
        raise DataError("a released class is not in the input: the input changed since the sample was drawn")
    return joined["_f"].to_numpy(np.int64), joined["_F"].to_numpy(np.int64)


def portable(config: str | Path | None, source: str | Path | None) -> tuple[str | None, str | None]:
    """The configuration by its name and the input relative to the configuration's directory."""
    doc: dict[str, Any] = {"config": str(config) if config is not None else None, "input": source}
    if source is not None:
        doc["input"] = str(source)
    portable_paths(doc)
    return doc["config"], doc["input"]


def input_class_sizes(result: AnonymizationResult) -> np.ndarray:
    """Sizes of the input's classes on the raw quasi-identifiers (the lattice's bottom node)."""
    bottom = result.table.lattice.bottom
    return result.evaluator.classes(bottom).nonempty


def _version() -> str:
    from safeshare import __version__

    return __version__
