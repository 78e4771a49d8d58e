"""The ``anonymize`` use case: a configuration in, a verified :class:`Release` out.

One path for every algorithm (thesis §4.3-4.5)::

    configuration (+ overrides) -> specification, validated once
      -> engine reads the input
      -> the strategy prepares its records (epsilon-safe: a Bernoulli sample; others: as is)
      -> frequency table -> search -> node
      -> trade-off curve, m-concealing (when asked)
      -> local recoding's rounds on the records the node suppresses (when asked)
      -> workflows/publish.py: the release written, verified independently, attested (warnings,
         evidence, headline, certificate), reported and published, with its ledger line

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
    from safeshare.workflows.anonymizer import AnonymizationResult, Anonymizer
    from safeshare.workflows.epsilon_safe import EpsilonSafeDryRun
    from safeshare.workflows.local_recoding import LocalRecodingResult
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
    from safeshare.search import compiled_loops

    compiled_loops.load_in_background()  # numba beside the read of the input, not before it
    from safeshare.data.engines.factory import make_engine
    from safeshare.io import OutputDirectory
    from safeshare.workflows.anonymizer import Anonymizer
    from safeshare.workflows.m_concealing import (
        check_knowledge_columns,
        knowledge_columns,
        report_knowledge,
    )
    from safeshare.workflows.publish import protected_files, publish
    from safeshare.workflows.release import ReleaseContext, check_releasable
    from safeshare.workflows.release_attack import prepare_release_attack

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

            protected = protected_files(ReleaseContext.of_config(cfg), cfg.schema)
            check_ledger(ledger, protected=protected, out_dir=out_dir)  # its chain holds: read
        _check_key_window(cfg)
    attack = prepare_release_attack(cfg, monitor)  # issue 34: its frame checked before the search
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
        context = ReleaseContext.of_config(
            cfg,
            input_table=input_table,
            repeated_persons=tuple(r.to_dict() for r in repeated),
            attack=attack,
        )
        plan: AnonymizationResult | LocalRecodingResult = result
        released = result.prepared.engine if result.prepared is not None else engine
        if cfg.local_recoding is not None:  # issue 25: rounds on the records the optimum suppresses
            plan = _recode(anonymizer, result, cfg.local_recoding.rounds, timings, monitor)
        else:
            _measure(anonymizer, result, engine, context, knowledge, tradeoff, monitor)
            timings.update(result.timings)
        fmt, delimiter = cfg.release_format, cfg.output_delimiter
        return publish(
            plan, released, out_dir, context, fmt=fmt, delimiter=delimiter, monitor=monitor, timings=timings
        )
    finally:
        engine.close()


def _measure(
    anonymizer: Anonymizer,
    result: AnonymizationResult,
    engine: Engine,
    context: ReleaseContext,
    knowledge: Any,
    tradeoff: bool | None,
    monitor: Monitor,
) -> None:
    """What the report says of a global node besides the node: m-concealing (when asked) and the
    suppression / loss trade-off (thesis Fig. 6.1; skipped above ``TRADEOFF_AUTO_MAX`` nodes
    unless asked, never for a sampling strategy), into ``context``."""
    from safeshare.workflows.m_concealing import concealment_report

    if knowledge is not None:
        with monitor.phase("measuring m-concealing of the release"):
            t0 = time.perf_counter()
            context.m_concealing = concealment_report(result, engine, knowledge)
            result.timings["m_concealing"] = time.perf_counter() - t0
    sampling = anonymizer.prepares
    size = result.table.lattice.size
    if tradeoff is None and not sampling and size > TRADEOFF_AUTO_MAX:
        context.tradeoff_skipped = f"lattice of {size:,} nodes > {TRADEOFF_AUTO_MAX:,}; use --tradeoff"
        monitor.note(f"trade-off curve skipped: {context.tradeoff_skipped} to compute it")
    elif (tradeoff is None or tradeoff) and not sampling:
        with monitor.phase("suppression / loss trade-off"):
            t0 = time.perf_counter()
            context.tradeoff = tradeoff_curve(anonymizer, result)
            result.timings["tradeoff"] = time.perf_counter() - t0


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


def _recode(
    anonymizer: Anonymizer,
    result: AnonymizationResult,
    rounds: int,
    timings: dict[str, float],
    monitor: Monitor,
) -> LocalRecodingResult:
    """Local recoding after the global optimum ``result`` (workflows/local_recoding.py): the
    mixed plan :func:`~safeshare.workflows.publish.publish` writes."""
    from safeshare.workflows.local_recoding import LocalRecoding

    with monitor.phase(f"local recoding of the {result.suppressed_records:,} suppressed records"):
        t0 = time.perf_counter()
        recoded = LocalRecoding(anonymizer.spec, rounds).recode(result)
        timings.update(result.timings)
        timings["local_recoding"] = time.perf_counter() - t0
    return recoded


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
