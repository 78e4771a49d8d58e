"""The ``anonymize`` use case: a configuration in, a verified :class:`Release` out.

One path for every algorithm (thesis §4.3-4.5)::

    configuration (+ overrides) -> specification, validated once
      -> engine reads the input
      -> the strategy prepares its records (epsilon-safe: a Bernoulli sample; others: as is)
      -> frequency table -> search -> node
      -> trade-off curve, m-concealing (when asked)
      -> release written, verified independently, report rendered from the Release, published

``safeshare anonymize CONFIG --out DIR [options]`` is this function with the same
keywords (the options' names with ``_``), and prints the :class:`Release` it returns.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from safeshare.app_runner import SILENT, Monitor, to_json
from safeshare.errors import ConfigError
from safeshare.options import TRADEOFF_AUTO_MAX

#: How a run selects the DuckDB engine, for the advice when the memory engine runs out of memory
#: (the command's option and the API's keyword are both ``engine``; a configuration's key too).
ENGINE_SWITCH = "--engine duckdb, or engine: duckdb in the configuration"

if TYPE_CHECKING:
    from safeshare.core.evaluation import Evaluator
    from safeshare.data.engines.base import Engine
    from safeshare.io import OutputDirectory
    from safeshare.workflows.anonymizer import AnonymizationResult, Anonymizer
    from safeshare.workflows.epsilon_safe import EpsilonSafeDryRun
    from safeshare.workflows.release import ReleaseContext
    from safeshare.workflows.result import Release

# The configuration is validated before the engine, the core and the searches are imported,
# so that a mistake in it is reported at once (docs/cli.md); each step imports what it uses.


def anonymize(
    config: str | Path,
    out: str | Path | None = None,
    *,
    monitor: Monitor = SILENT,
    **overrides: Any,
) -> Release:
    """Anonymize the input of ``config`` and return the :class:`Release` (thesis §4.3).

    ``out``: the directory that receives ``release.csv`` (or ``.parquet``), report.json and
    report.html, published atomically only after the independent verification passed;
    ``None`` chooses the node and describes the release without writing it (the Release
    then has no ``verification``). ``overrides`` are the options of ``safeshare
    anonymize`` by their Python names (``k=10``, ``max_suppression="5%"``,
    ``algorithm="epsilon-safe"``, ``beta=0.5``, ``tradeoff=False``, ...), validated with
    the file in one specification.
    """
    from safeshare.config import load_config

    run_options = {key: overrides.pop(key) for key in ("tradeoff",) if key in overrides}
    cfg = load_config(config, **overrides)
    return run_anonymization(cfg, out, monitor=monitor, tradeoff=run_options.get("tradeoff"))


def run_anonymization(
    cfg: Any, out: str | Path | None, monitor: Monitor = SILENT, tradeoff: bool | None = None
) -> Release:
    """:func:`anonymize` of a loaded configuration (:func:`safeshare.config.load_config`)."""
    from safeshare.data.engines.factory import make_engine
    from safeshare.io import OutputDirectory
    from safeshare.workflows.anonymizer import Anonymizer
    from safeshare.workflows.m_concealing import (
        check_knowledge_columns,
        concealment_report,
        knowledge_columns,
        report_knowledge,
    )
    from safeshare.workflows.release import ReleaseContext, check_releasable

    anonymizer = Anonymizer(cfg.spec())
    sampling = anonymizer.prepares
    if tradeoff and sampling:
        raise ConfigError(f"--tradeoff: does not apply to algorithm {cfg.algorithm} (it draws its node)")
    if tradeoff and cfg.local_recoding is not None:
        raise ConfigError("--tradeoff: does not apply to local recoding (the curve is of global nodes)")
    knowledge = report_knowledge(cfg.knowledge, cfg.privacy)
    out_dir = Path(out) if out is not None else None
    if out_dir is not None:
        # A foreign, locked or unwritable --out is refused before any data is read (checked
        # again, under the lock, when the release is published), and so is a ledger an append
        # could not take (checked again, under its lock, before the release is published).
        OutputDirectory(out_dir).preflight()
        ledger = _ledger_path(cfg)
        if ledger is not None:
            from safeshare.workflows.ledger import check_ledger

            check_ledger(ledger, protected=_protected(cfg), out_dir=out_dir)  # its chain holds: read
        _check_key_window(cfg)
    timings: dict[str, float] = {}
    start = time.perf_counter()
    with monitor.phase(f"reading {cfg.source.path.name}"):
        engine = make_engine(
            cfg.engine, cfg.source, cfg.spark, cfg.duckdb, switch=ENGINE_SWITCH, identifiers=cfg.identifiers
        )
    timings["read"] = time.perf_counter() - start
    try:
        check_knowledge_columns(knowledge_columns(cfg.knowledge, cfg.privacy), cfg.schema, engine.columns())
        repeated = _repeated_persons(cfg, engine, monitor)  # issue 32: warned by name, before the search
        if out_dir is not None and not sampling:  # one pass over the input for the table and release
            cfg.schema.check_columns(engine.columns(), engine.label)
            engine.expect_release(cfg.schema.released_columns(engine.columns()))
        result, input_table = _search(anonymizer, engine, timings, monitor, cfg.algorithm)
        check_releasable(
            result, cfg.population_size, input_table.n_records if input_table is not None else None
        )
        context = ReleaseContext(
            config=cfg.path,
            source=cfg.source.path,
            settings=cfg.settings(),
            population_size=cfg.population_size,
            input_table=input_table,
            threshold_reason=cfg.threshold_reason,
            purpose=cfg.purpose,
            approved_by=cfg.approved_by,
            ledger=_relative_to(cfg.ledger_path, cfg.base_dir) if cfg.ledger_path is not None else None,
            repeated_persons=tuple(r.to_dict() for r in repeated),
        )
        if cfg.local_recoding is not None:  # issue 25: rounds on the records the optimum suppresses
            return _publish_local(anonymizer, result, engine, cfg, context, out_dir, timings, monitor)
        if knowledge is not None:
            with monitor.phase("measuring m-concealing of the release"):
                t0 = time.perf_counter()
                context.m_concealing = concealment_report(result, engine, knowledge)
                result.timings["m_concealing"] = time.perf_counter() - t0
        size = result.table.lattice.size
        if tradeoff is None and not sampling and size > TRADEOFF_AUTO_MAX:
            context.tradeoff_skipped = f"lattice of {size:,} nodes > {TRADEOFF_AUTO_MAX:,}; use --tradeoff"
            monitor.note(f"trade-off curve skipped: {context.tradeoff_skipped} to compute it")
        elif (tradeoff is None or tradeoff) and not sampling:
            with monitor.phase("suppression / loss trade-off"):
                t0 = time.perf_counter()
                context.tradeoff = tradeoff_curve(anonymizer, result)
                result.timings["tradeoff"] = time.perf_counter() - t0
        timings.update(result.timings)
        released = result.prepared.engine if result.prepared is not None else engine
        return _publish(result, released, cfg, context, out_dir, timings, monitor)
    finally:
        engine.close()


def _repeated_persons(cfg: Any, engine: Engine, monitor: Monitor) -> list[Any]:
    """Without a person key, the columns that look like a person identifier and repeat
    (:func:`safeshare.workflows.persons.detect_repeated_persons`), each noted on the terminal now
    and warned in the report: every figure of such a run counts records, not people."""
    from safeshare.workflows.persons import detect_repeated_persons

    cfg.schema.check_columns(engine.columns(), engine.label)
    found = detect_repeated_persons(engine, cfg.schema)
    for item in found:
        monitor.note(f"warning: {item.message()}")
    return found


def tradeoff_curve(anonymizer: Anonymizer, result: AnonymizationResult) -> list[dict[str, Any]]:
    """:func:`~safeshare.workflows.anonymizer.tradeoff` (thesis Fig. 6.1)."""
    from safeshare.workflows.anonymizer import tradeoff

    return tradeoff(anonymizer, result)


def _search(
    anonymizer: Anonymizer, engine: Engine, timings: dict[str, float], monitor: Monitor, algorithm: str
) -> tuple[AnonymizationResult, Any]:
    """Prepare the records, build the frequency table and search; the input's own table too
    when the strategy searched a sample of it (for the risk section)."""
    from safeshare.core.evaluation import Evaluator
    from safeshare.core.tabulate import build_frequency_table
    from safeshare.search.context import Prepared

    prepared, input_table = Prepared(engine), None
    if anonymizer.prepares:
        t0 = time.perf_counter()
        with monitor.phase(f"preparing the records ({anonymizer.algorithm})"):
            prepared = anonymizer.prepare(engine)
        timings["prepare"] = time.perf_counter() - t0
    if prepared.sampled:  # the risk section compares the whole input with the sampled release
        with monitor.phase("building the frequency table of the input"):
            input_table, _ = build_frequency_table(engine, anonymizer.schema)
    with monitor.phase("building the frequency table"):
        table, table_timings = build_frequency_table(
            prepared.engine, anonymizer.schema, anonymizer.criterion.sensitive_columns
        )
    timings.update(table_timings)
    anonymizer.criterion.validate(table)  # bad input (k above N, ...) before any announcement
    evaluator = Evaluator(table)
    _announce(table, evaluator, algorithm, monitor)
    with monitor.progress("searching", table.lattice.size) as progress:
        result = anonymizer.fit_table(table, {}, evaluator=evaluator, progress=progress)
    result.prepared = prepared
    return result, input_table


def _announce(table: Any, evaluator: Evaluator, algorithm: str, monitor: Monitor) -> None:
    """The lattice size and an estimate of the search's cost.

    The estimate times the classes of one mid-lattice node (the evaluator keeps them, so
    the search does not pay twice) and multiplies by the lattice size: the cost if every
    node were checked. OLA's tagging usually checks a small fraction.
    """
    if not monitor.wants_estimates:
        return
    lattice = table.lattice
    t0 = time.perf_counter()
    evaluator.classes(tuple(h // 2 for h in lattice.heights))
    per_node = time.perf_counter() - t0
    worst = per_node * lattice.size
    how = {
        "exhaustive": "every node is checked",
        "anytime": "the anytime search checks far fewer and stops at its budget",
        "auto": "OLA, or above exact_max_nodes the anytime search, checks far fewer",
        "epsilon-safe": "epsilon-safe scores every node of the sample's lattice",
    }.get(algorithm, "OLA usually checks far fewer")
    monitor.note(
        f"search: lattice of {lattice.size:,} nodes ({len(lattice.heights)} quasi-identifiers, "
        f"{len(table.counts):,} distinct rows); about {per_node * 1e3:.2g} ms a node, "
        f"at most ~{worst:.3g} s ({how})"
    )


def _publish(
    result: AnonymizationResult,
    engine: Engine,
    cfg: Any,
    context: ReleaseContext,
    out_dir: Path | None,
    timings: dict[str, float],
    monitor: Monitor,
) -> Release:
    """Write, verify and publish the release into ``out_dir`` (or describe it, unwritten).

    Written: the verifier re-checks the staged file (pseudonyms and shifted dates recomputed
    from the key), the disclosure warnings and the evidence are computed over the staged file,
    the reports rendered from the one :class:`Release`, everything published at once; then,
    with a ledger, one entry is appended for the published files.
    """
    from safeshare.io import OutputDirectory
    from safeshare.workflows.release import (
        build_release,
        release_name,
        stage_and_build,
        verifier_expectations,
        write_reports,
    )

    fmt, delimiter = cfg.release_format, cfg.output_delimiter
    if out_dir is None:
        return build_release(result, engine, fmt, delimiter, context, None, None, timings)
    ledger = _ledger_path(cfg)
    identifiers = cfg.identifiers
    name = release_name(fmt)
    output = OutputDirectory(out_dir)
    with monitor.phase("writing and verifying the release"), output as stage:
        expected = verifier_expectations(result, engine, delimiter, identifiers, tuple(cfg.source.missing))
        release = stage_and_build(result, engine, stage, fmt, delimiter, context, out_dir, timings, expected)
        verification = release.verification
        assert verification is not None
        _add_evidence(release, result, expected, verification, cfg, stage / name, out_dir, identifiers)
        write_reports(release, stage)
        release.ledger_entry = _publish_and_record(output, stage / name, ledger, cfg, release, identifiers)
    assert (out_dir / name).exists()
    return release


def _check_key_window(cfg: Any) -> None:
    """A key that shifted dates in the ledger with another window is refused before any data is
    read (workflows/key_window.py: two windows under one key combine)."""
    from safeshare.workflows.key_window import check_key_window

    identifiers, ledger = cfg.identifiers, cfg.ledger_path
    if identifiers is not None and identifiers.shifted_dates and ledger is not None:
        check_key_window(ledger, identifiers.key.fingerprint, identifiers.shifted_dates[0].max_days)


def _ledger_path(cfg: Any) -> Path | None:
    """The configured ledger, refused (before anything is written) when its folder is missing."""
    ledger: Path | None = cfg.ledger_path
    if ledger is not None and not ledger.parent.is_dir():
        raise ConfigError(f"{cfg.path}: ledger: directory {ledger.parent} does not exist")
    return ledger


def _inputs(cfg: Any) -> list[Path]:
    """The input files the evidence and the ledger hash (none for a Spark SQL table)."""
    return [cfg.source.path] if cfg.source.table is None else []


def _add_evidence(
    release: Release,
    result: AnonymizationResult,
    expected: Any,
    verification: Any,
    cfg: Any,
    staged: Path,
    out_dir: Path,
    identifiers: Any,
    records_per_level: dict[str, dict[int, int]] | None = None,
) -> None:
    """The disclosure warnings and the evidence of the release staged at ``staged`` (verified
    against ``expected``), added to ``release``: the same for a global and a mixed release."""
    from safeshare.workflows.release_evidence import release_disclosure, release_evidence
    from safeshare.workflows.result import headline

    t0 = time.perf_counter()
    fmt, delimiter = cfg.release_format, cfg.output_delimiter
    released_columns = verification.checks.get("columns", [])
    warnings, informed = release_disclosure(
        staged, fmt, result, released_columns, delimiter, tuple(cfg.source.missing), release.privacy.k
    )
    release.warnings += warnings
    release.informed_adversary = informed
    # the headline states a per-record bound only where it holds against the informed adversary
    release.headline = headline(release.report, cfg.threshold_reason)
    evidence = release_evidence(
        result=result,
        expected=expected,
        verification=verification,
        staged=staged,
        published=out_dir,
        fmt=fmt,
        delimiter=delimiter,
        base=cfg.base_dir,
        config=cfg.path,
        inputs=_inputs(cfg),
        version=release.provenance.version,
        engine=release.provenance.engine,
        population_size=cfg.population_size,
        threshold_reason=cfg.threshold_reason,
        seeds=release.provenance.seeds,
        identifiers=identifiers,
        records_per_level=records_per_level,
        informed=informed,
    )
    release.evidence = evidence.to_dict()
    release.timings["evidence"] = time.perf_counter() - t0


def _publish_local(
    anonymizer: Anonymizer,
    result: AnonymizationResult,
    engine: Engine,
    cfg: Any,
    context: ReleaseContext,
    out_dir: Path | None,
    timings: dict[str, float],
    monitor: Monitor,
) -> Release:
    """Local recoding after the global optimum ``result`` (workflows/local_recoding.py), then the
    mixed release written, verified and published as :func:`_publish` does a global one."""
    from safeshare.io import OutputDirectory
    from safeshare.workflows.local_recoding import LocalRecoding
    from safeshare.workflows.local_release import (
        build_local_release,
        local_release_expectations,
        stage_local_release,
    )
    from safeshare.workflows.release import release_name, write_reports

    rounds = cfg.local_recoding.rounds
    with monitor.phase(f"local recoding of the {result.suppressed_records:,} suppressed records"):
        t0 = time.perf_counter()
        recoded = LocalRecoding(anonymizer.spec, rounds).recode(result)
        timings.update(result.timings)
        timings["local_recoding"] = time.perf_counter() - t0
    context.tradeoff_skipped = "local recoding: the curve is of global nodes"
    fmt, delimiter = cfg.release_format, cfg.output_delimiter
    if out_dir is None:
        return build_local_release(recoded, engine, fmt, delimiter, context, None, None, timings)
    ledger = _ledger_path(cfg)
    output = OutputDirectory(out_dir)
    name = release_name(fmt)
    with monitor.phase("writing and verifying the release"), output as stage:
        expected = local_release_expectations(recoded, engine.columns(), delimiter)
        verification = stage_local_release(recoded, engine, stage, fmt, delimiter, timings, expected=expected)
        release = build_local_release(
            recoded, engine, fmt, delimiter, context, verification, out_dir, timings
        )
        per_level = {
            g["qi"]: {int(lv): int(n) for lv, n in g["records_per_level"].items()}
            for g in recoded.generalization()
        }
        # identifiers: refused with local recoding (config)
        _add_evidence(release, result, expected, verification, cfg, stage / name, out_dir, None, per_level)
        write_reports(release, stage)
        release.ledger_entry = _publish_and_record(output, stage / name, ledger, cfg, release, None)
    assert (out_dir / name).exists()
    return release


def _protected(cfg: Any) -> dict[str, list[Path]]:
    """The files a ledger may not be: an append would replace them."""
    from safeshare.workflows.evidence import hierarchy_files

    specs = {n: a.hierarchy for n, a in cfg.schema.attributes.items() if a.hierarchy is not None}
    protected = {"input": _inputs(cfg), "configuration": [cfg.path], "hierarchy file": hierarchy_files(specs)}
    if cfg.key_path is not None:
        protected["key file"] = [cfg.key_path]
    return protected


def _publish_and_record(
    output: OutputDirectory, staged: Path, ledger: Path | None, cfg: Any, release: Release, identifiers: Any
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

    if ledger is None:
        output.publish()
        return None
    stage = staged.parent
    specs = {n: a.hierarchy for n, a in cfg.schema.attributes.items() if a.hierarchy is not None}
    files = {
        "input": _inputs(cfg),
        "config": [cfg.path],
        "hierarchy": hierarchy_files(specs),
        "release": [staged],
        "report": [stage / "report.json", stage / "report.html"],
    }
    fingerprint = identifiers.key.fingerprint if identifiers is not None else None
    window = (
        identifiers.shifted_dates[0].max_days
        if identifiers is not None and identifiers.shifted_dates
        else None
    )
    with LedgerAppend(ledger, protected=_protected(cfg), out_dir=output.out_dir) as append:
        entry = ledger_entry(
            append.path,
            release.report,
            files,
            cfg.approved_by,
            fingerprint,
            window,
            moved=(stage, output.out_dir),
        )
        append.prepare(entry)
        with signals_deferred():  # no interrupt between the publication and its ledger line
            output.publish()
            written = append.commit()
    return {"path": str(ledger), "seq": written["seq"], "entry_sha256": written["entry_sha256"]}


def _relative_to(path: Path, base: Path) -> str:
    """The ledger as report.json names it (:func:`safeshare.paths.shown_path`)."""
    from safeshare.paths import shown_path

    return shown_path(path, base)


def anonymize_dry_run(
    config: str | Path, out: str | Path, *, monitor: Monitor = SILENT, **overrides: Any
) -> EpsilonSafeDryRun:
    """``safeshare anonymize --dry-run``: epsilon-safe's distribution over every node of the
    sample's lattice, written to ``out`` (``distribution.csv``, ``distribution.json``) for the
    data custodian, no node drawn and nothing released (thesis §4.5.4)."""

    from safeshare.config import load_config
    from safeshare.data.engines.factory import make_engine
    from safeshare.io import OutputDirectory, atomic_write, atomic_write_text
    from safeshare.workflows.epsilon_safe import EpsilonSafeAnonymizer

    cfg = load_config(config, release=False, **overrides)
    if cfg.algorithm != "epsilon-safe":
        raise ConfigError(f"--dry-run applies to algorithm epsilon-safe only (algorithm is {cfg.algorithm})")
    anonymizer = EpsilonSafeAnonymizer(cfg.spec())
    output = OutputDirectory(Path(out))
    output.preflight()
    with monitor.phase(f"reading {cfg.source.path.name}"):
        engine = make_engine(
            cfg.engine, cfg.source, cfg.spark, cfg.duckdb, switch=ENGINE_SWITCH, identifiers=cfg.identifiers
        )
    try:
        with monitor.phase("sampling and scoring every node"):
            run = anonymizer.dry_run(engine)
    finally:
        engine.close()
    frame = run.distribution.frame()
    doc = run.document()
    doc["config"] = Path(cfg.path).name
    with output as stage:
        atomic_write(stage / "distribution.csv", lambda p: frame.to_csv(p, index=False))
        atomic_write_text(stage / "distribution.json", to_json(doc, indent=2) + "\n")
        output.publish()
    run.path = Path(out)
    return run
