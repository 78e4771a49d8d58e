"""The ``anonymize``, ``inspect``, ``flatten`` and ``hierarchy`` commands.

Registered on the main app by :func:`register` (from :mod:`safeshare.cli`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from safeshare.cli.common import (
    DelimiterOption,
    HeaderOption,
    MissingOption,
    NamesOption,
    SkipRowsOption,
    csv_list,
    data_source,
)
from safeshare.console import err, out, phase
from safeshare.data.engines.factory import make_engine
from safeshare.errors import InputError
from safeshare.options import DATA_DELIMITER_HELP, MAX_SUPPRESSION_HELP, optional_fraction

hierarchy_app = typer.Typer(help="Inspect and build generalization hierarchies.", no_args_is_help=True)


#: Above this many lattice nodes the trade-off curve is computed only when asked (--tradeoff):
#: it repeats the search for six suppression limits.
TRADEOFF_AUTO_MAX = 20_000


# --------------------------------------------------------------------------- anonymize
def anonymize(
    config: Annotated[Path, typer.Argument(help="The YAML configuration (see docs/configuration.md).")],
    out_dir: Annotated[Path, typer.Option("--out", help="Output directory for the release and reports.")],
    k: Annotated[int | None, typer.Option("--k", help="Override k of k-anonymity.")] = None,
    max_suppression: Annotated[
        str | None, typer.Option("--max-suppression", help=MAX_SUPPRESSION_HELP)
    ] = None,
    metric: Annotated[str | None, typer.Option("--metric", help="prec | dm_star | entropy")] = None,
    algorithm: Annotated[
        str | None,
        typer.Option("--algorithm", help="ola | exhaustive | inverse-ola | epsilon-safe | anytime | auto"),
    ] = None,
    time_limit: Annotated[
        float | None, typer.Option("--time-limit", help="anytime, auto: seconds of search (default 60).")
    ] = None,
    max_evaluations: Annotated[
        int | None, typer.Option("--max-evaluations", help="anytime, auto: node evaluations at most.")
    ] = None,
    exact_max_nodes: Annotated[
        int | None,
        typer.Option("--exact-max-nodes", help="auto: largest lattice searched exactly (default 500000)."),
    ] = None,
    max_loss: Annotated[
        float | None,
        typer.Option("--max-loss", help="inverse-ola: largest normalized information loss (0..1)."),
    ] = None,
    engine: Annotated[str | None, typer.Option("--engine", help="memory | duckdb | spark")] = None,
    duckdb_memory_limit: Annotated[
        str | None,
        typer.Option(
            "--duckdb-memory-limit",
            help="DuckDB engine: memory limit, e.g. 2GB (default: RAM/4, 256MB-512MB).",
        ),
    ] = None,
    duckdb_threads: Annotated[
        int | None, typer.Option("--duckdb-threads", help="DuckDB engine: threads (default: CPUs, <= 8).")
    ] = None,
    spark_master: Annotated[
        str | None, typer.Option("--spark-master", help="spark engine: local[2] | spark://HOST:PORT")
    ] = None,
    tradeoff: Annotated[
        bool | None,
        typer.Option(
            "--tradeoff/--no-tradeoff",
            help=f"Also report loss for suppression 0-50% (default: on up to {TRADEOFF_AUTO_MAX:,} nodes).",
        ),
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print nothing on success.")] = False,
    beta: Annotated[float | None, typer.Option("--beta", help="epsilon-safe: sampling probability.")] = None,
    epsilon: Annotated[float | None, typer.Option("--epsilon", help="epsilon-safe: DPS epsilon.")] = None,
    epsilon_prime: Annotated[
        float | None, typer.Option("--epsilon-prime", help="epsilon-safe: budget of the node choice.")
    ] = None,
    utility: Annotated[
        str | None,
        typer.Option("--utility-function", help="epsilon-safe: score function, thesis | linear | safepub."),
    ] = None,
    penalty: Annotated[float | None, typer.Option("--penalty", help="epsilon-safe: penalty factor.")] = None,
    penalty_mode: Annotated[
        str | None, typer.Option("--penalty-mode", help="k-anonymity | suppression")
    ] = None,
    sensitivity: Annotated[str | None, typer.Option("--sensitivity", help="exact | thesis (not DP)")] = None,
    reference_size: Annotated[
        int | None, typer.Option("--reference-size", help="epsilon-safe: N_ref of the suppression penalty.")
    ] = None,
    seed: Annotated[str | None, typer.Option("--seed", help="epsilon-safe: reproducible draws.")] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="epsilon-safe: write the node distribution, not a release.")
    ] = False,
    allow_non_dp: Annotated[
        bool, typer.Option("--allow-non-dp", help="epsilon-safe: allow --sensitivity thesis releases.")
    ] = False,
) -> None:
    """Anonymize a table with optimal k-anonymity (OLA) and write a verified release."""
    from safeshare.config import load_config
    from safeshare.core.tabulate import build_frequency_table
    from safeshare.io import OutputDirectory
    from safeshare.workflows.anonymizer import Anonymizer
    from safeshare.workflows.anonymizer import tradeoff as tradeoff_curve
    from safeshare.workflows.m_concealing import (
        check_knowledge_columns,
        concealment_report,
        knowledge_columns,
        report_knowledge,
    )
    from safeshare.workflows.release import write_release

    suppression = optional_fraction(max_suppression, "--max-suppression")
    cfg = load_config(config).with_overrides(
        k,
        suppression,
        metric,
        algorithm,
        engine,
        max_loss,
        duckdb_memory_limit=duckdb_memory_limit,
        duckdb_threads=duckdb_threads,
        time_limit=time_limit,
        max_evaluations=max_evaluations,
        exact_max_nodes=exact_max_nodes,
    )
    if spark_master is not None:
        import dataclasses

        from safeshare.data.engines.spark_engine import check_master

        cfg.spark = dataclasses.replace(cfg.spark, master=check_master(spark_master, "--spark-master"))
    dp_options: dict[str, Any] = {
        "beta": beta,
        "epsilon": epsilon,
        "epsilon_prime": epsilon_prime,
        "utility": utility,
        "penalty": penalty,
        "penalty_mode": penalty_mode,
        "sensitivity": sensitivity,
        "reference_size": reference_size,
        "seed": None if seed is None else _seed(seed),
        "allow_non_dp": allow_non_dp or None,
    }
    # A foreign, locked or unwritable --out is refused before any data is read (checked again,
    # under the lock, when the release is published).
    OutputDirectory(out_dir).preflight()
    if cfg.algorithm == "epsilon-safe":
        from safeshare.cli.dp import anonymize_epsilon_safe

        anonymize_epsilon_safe(cfg, out_dir, dp_options, dry_run=dry_run, quiet=quiet)
        return
    given = [name for name, value in dp_options.items() if value is not None]
    given += ["dry_run"] if dry_run else []
    if given:
        from safeshare.dp.config import DP_KEYS

        flag = DP_KEYS.get(given[0], "--" + given[0].replace("_", "-"))
        raise InputError(f"{flag} applies to --algorithm epsilon-safe only")
    anonymizer = Anonymizer(cfg.spec())
    knowledge = report_knowledge(cfg.knowledge, cfg.privacy)
    start = time.perf_counter()
    with phase(f"reading {cfg.source.path.name}", quiet):
        eng = make_engine(cfg.engine, cfg.source, cfg.spark, cfg.duckdb)
    read_s = time.perf_counter() - start
    try:
        check_knowledge_columns(knowledge_columns(cfg.knowledge, cfg.privacy), cfg.schema, eng.columns())
        with phase("building the frequency table", quiet):
            table, table_s = build_frequency_table(
                eng, anonymizer.schema, anonymizer.criterion.sensitive_columns
            )
        anonymizer.criterion.validate(table)  # bad input (k above N, ...) before any announcement
        evaluator = _announce_search(table, cfg.algorithm, quiet)
        with search_progress(table.lattice.size, quiet) as progress:
            result = anonymizer.fit_table(table, table_s, evaluator=evaluator, progress=progress)
        result.timings = {"read": read_s, **result.timings}
        extra: dict[str, Any] = {
            "config": str(config),
            "input": str(cfg.source.path),
            "k": next((getattr(m, "k", None) for m in result.criterion.models if hasattr(m, "k")), None),
            "max_suppression": cfg.max_suppression,
        }
        if knowledge is not None and result.found:
            with phase("measuring m-concealing of the release", quiet):
                t0 = time.perf_counter()
                extra.update(concealment_report(result, eng, knowledge))
                result.timings["m_concealing"] = time.perf_counter() - t0
        size = table.lattice.size
        if tradeoff is None and result.found and size > TRADEOFF_AUTO_MAX:
            extra["tradeoff_skipped"] = f"lattice of {size:,} nodes > {TRADEOFF_AUTO_MAX:,}; use --tradeoff"
            if not quiet:
                err.print(
                    f"trade-off curve skipped: {extra['tradeoff_skipped']} to compute it", soft_wrap=True
                )
        elif (tradeoff is None or tradeoff) and result.found:
            with phase("suppression / loss trade-off", quiet):
                t0 = time.perf_counter()
                extra["tradeoff"] = tradeoff_curve(anonymizer, result)
                result.timings["tradeoff"] = time.perf_counter() - t0
        with phase("writing and verifying the release", quiet):
            published = write_release(
                result,
                eng,
                out_dir,
                cfg.release_format,
                cfg.output_delimiter,
                report=extra,
                population_size=cfg.population_size,
            )
    finally:
        eng.close()
    if not quiet:
        _print_summary(published.report, published.release)


def _announce_search(table: Any, algorithm: str, quiet: bool) -> Any:
    """Print the lattice size and an estimate of the search's cost on stderr; return the evaluator.

    The estimate times the classes of one mid-lattice node (the evaluator
    keeps them, so the search does not pay twice) and multiplies by the
    lattice size: the cost if every node were checked. OLA's tagging usually
    checks a small fraction.
    """
    from safeshare.core.evaluation import Evaluator

    evaluator = Evaluator(table)
    lattice = table.lattice
    if quiet:
        return evaluator
    t0 = time.perf_counter()
    evaluator.classes(tuple(h // 2 for h in lattice.heights))
    per_node = time.perf_counter() - t0
    worst = per_node * lattice.size
    how = {
        "exhaustive": "every node is checked",
        "anytime": "the anytime search checks far fewer and stops at its budget",
        "auto": "OLA, or above exact_max_nodes the anytime search, checks far fewer",
    }.get(algorithm, "OLA usually checks far fewer")
    err.print(
        f"search: lattice of {lattice.size:,} nodes ({len(lattice.heights)} quasi-identifiers, "
        f"{len(table.counts):,} distinct rows); about {per_node * 1e3:.2g} ms a node, "
        f"at most ~{worst:.3g} s ({how})",
        soft_wrap=True,
    )
    return evaluator


@contextmanager
def search_progress(total: int, quiet: bool) -> Iterator[Callable[[int], None] | None]:
    """A rich progress bar of checked nodes on stderr, when stderr is a terminal (else nothing)."""
    if quiet or not err.is_terminal:
        yield None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    columns = (TextColumn("searching"), BarColumn(), MofNCompleteColumn(), TextColumn("nodes checked"))
    with Progress(*columns, TimeElapsedColumn(), console=err, transient=True) as bar:
        task = bar.add_task("search", total=total)
        yield lambda checked: bar.update(task, completed=checked)


def _seed(text: str) -> int | str:
    from safeshare.dp.config import parse_seed

    return parse_seed(text)


def _print_summary(report: dict[str, Any], release: Path) -> None:
    from safeshare.report.content import describe_search

    table = Table(title="safeshare: release verified", show_header=False, title_justify="left")
    table.add_column("what", style="bold")
    table.add_column("value")
    levels = ", ".join(f"{q}={lv}" for q, lv in report["levels"].items())
    table.add_row("levels", levels)
    table.add_row(
        "information loss",
        f"{report['metric']} = {report['information_loss']:.6g} "
        f"(normalized {report['information_loss_normalized']:.4f})",
    )
    table.add_row(
        "records",
        f"{report['records_in']:,} in, {report['suppressed_records']:,} suppressed, "
        f"{report['records_out']:,} released",
    )
    table.add_row("classes", f"{report['equivalence_classes']:,}, smallest {report['min_class_size']:,}")
    kept = [c["name"] for c in report.get("columns", []) if c["treatment"] == "kept"]
    if "columns" in report:
        table.add_row("kept unchanged", ", ".join(kept) if kept else "none")
    if report.get("k_achieved") is not None:
        table.add_row("inverse OLA", f"k achieved = {report['k_achieved']:,} (max_loss {report['max_loss']})")
    if report.get("inverse_m") is not None:
        table.add_row("m-concealing", f"m = {report['m']:.4g}, 1/m = {report['inverse_m']:.4g}")
    for name, achieved in report.get("privacy_achieved", {}).items():  # l-diversity, t-closeness, ...
        for how in ("min", "max"):
            if how in achieved:
                values = ", ".join(f"{c} {v:.4g}" for c, v in achieved[how].items() if v is not None)
                table.add_row(name, f"{how} per column: {values}")
    table.add_row("search", describe_search(report))
    for warning in report.get("warnings", []):
        table.add_row("warning", warning, style="yellow")
    table.add_row("time", ", ".join(f"{k} {v:.2f}s" for k, v in report["elapsed_s"].items()))
    table.add_row("output", f"{release} (+ report.json, report.html)")
    out.print(table)


# --------------------------------------------------------------------------- inspect
def inspect(
    data: Annotated[Path, typer.Argument(help="A CSV or Parquet file.")],
    qi: Annotated[str, typer.Option("--qi", help="Comma-separated quasi-identifier columns.")],
    k: Annotated[int, typer.Option("--k", help="Report records in classes smaller than k.")] = 5,
    delimiter: DelimiterOption = ",",
    header: HeaderOption = True,
    names: NamesOption = None,
    missing: MissingOption = None,
    skip_rows: SkipRowsOption = 0,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    knowledge: Annotated[
        str | None,
        typer.Option(
            "--knowledge",
            help="Also measure m-concealing: COLUMN=PROBABILITY,... known to an adversary "
            "(see docs/m-concealing.md).",
        ),
    ] = None,
) -> None:
    """Equivalence-class statistics of raw data: why removing names is not enough (thesis ch. 3)."""
    from safeshare.data.engines.memory import MemoryEngine
    from safeshare.models.k_anonymity import check_k
    from safeshare.workflows.inspection import class_statistics

    check_k(k, "--k")
    source = data_source(data, delimiter, header, names, missing, skip_rows)
    adversary = None
    if knowledge is not None:
        from safeshare.risk.knowledge import AdversaryKnowledge, parse_knowledge_option

        adversary = AdversaryKnowledge(parse_knowledge_option(knowledge))
    inspected = MemoryEngine(source)
    stats = class_statistics(inspected, csv_list(qi), k)
    if adversary is not None:
        from safeshare.risk.m_concealing import measure_engine

        measured = measure_engine(inspected, stats["quasi_identifiers"], adversary, top=5)
        stats["m_concealing"] = measured.to_dict()
    if as_json:
        out.print_json(json.dumps(stats))
        return
    table = Table(title=f"equivalence classes of {data.name} on {', '.join(stats['quasi_identifiers'])}")
    table.add_column("measure")
    table.add_column("value", justify="right")
    table.add_row("records", f"{stats['records']:,}")
    table.add_row("equivalence classes", f"{stats['classes']:,}")
    table.add_row("unique records (class size 1)", f"{stats['uniques']:,} ({stats['uniques_pct']:.2f}%)")
    table.add_row(f"records in classes < {k}", f"{stats['below_k']:,} ({stats['below_k_pct']:.2f}%)")
    table.add_row("mean class size", f"{stats['mean_class_size']:.2f}")
    table.add_row("median class size", f"{stats['median_class_size']:.0f}")
    table.add_row("largest class", f"{stats['max_class_size']:,}")
    table.add_row("prosecutor risk: max / mean", f"{stats['max_risk']:.3f} / {stats['mean_risk']:.4f}")
    if "m_concealing" in stats:
        mc = stats["m_concealing"]
        table.add_row("m-concealing: m / 1/m", f"{mc['m']:.4g} / {mc['inverse_m']:.4g}")
        table.add_row("m-concealing: mean m(i)", f"{mc['mean']:.4g}")
    out.print(table)


# --------------------------------------------------------------------------- hierarchy
def hierarchy_check(
    hierarchy: Annotated[Path, typer.Argument(help="An ARX CSV hierarchy file.")],
    hierarchy_delimiter: Annotated[
        str, typer.Option("--hierarchy-delimiter", help="Field separator of the hierarchy file.")
    ] = ";",
    data: Annotated[
        Path | None, typer.Option("--data", help="Check that it covers this data's column.")
    ] = None,
    column: Annotated[str | None, typer.Option("--column", help="Column of --data to check.")] = None,
    delimiter: Annotated[str, typer.Option("--delimiter", help=DATA_DELIMITER_HELP)] = ",",
    header: Annotated[bool, typer.Option("--header/--no-header")] = True,
    names: Annotated[str | None, typer.Option("--names")] = None,
) -> None:
    """Validate a hierarchy (consistent levels, one parent per label), optionally against data."""
    from safeshare.hierarchy.io import read_arx_csv

    h = read_arx_csv(hierarchy, delimiter=hierarchy_delimiter)
    out.print(f"{hierarchy}: {len(h.leaves)} values, height {h.height}")
    for level in range(h.height + 1):
        labels = h.labels(level)
        shown = ", ".join(labels[:6]) + (", ..." if len(labels) > 6 else "")
        out.print(f"  level {level}: {len(labels)} labels ({shown})")
    if data is not None:
        from safeshare.data.engines.memory import MemoryEngine

        if not column:
            raise InputError("--column is required with --data")
        eng = MemoryEngine(data_source(data, delimiter, header, names))
        if column not in eng.columns():
            raise InputError(f"unknown column {column!r}: {data} has columns {', '.join(eng.columns())}")
        missing = h.missing_values(eng.frame[column].unique())
        if missing:
            raise InputError(
                f"value {missing[0]!r} of column {column!r} is missing from hierarchy {hierarchy} "
                f"({len(missing)} value(s) not covered)"
            )
        out.print(f"  covers every value of column {column!r} in {data}")


def hierarchy_build(
    data: Annotated[Path, typer.Argument(help="A CSV or Parquet file.")],
    column: Annotated[str, typer.Option("--column", help="The column to build a hierarchy for.")],
    spec: Annotated[
        str, typer.Option("--spec", help="Builder as YAML, e.g. '{type: intervals, widths: [5,10]}'.")
    ],
    out_file: Annotated[Path, typer.Option("--out", help="Where to write the ARX CSV hierarchy.")],
    delimiter: Annotated[str, typer.Option("--delimiter", help=DATA_DELIMITER_HELP)] = ",",
    header: Annotated[bool, typer.Option("--header/--no-header")] = True,
    names: Annotated[str | None, typer.Option("--names")] = None,
) -> None:
    """Build a hierarchy for a column with a builder and write it in ARX CSV format."""
    import yaml

    from safeshare.data.engines.memory import MemoryEngine
    from safeshare.hierarchy.builders import builder_from_spec
    from safeshare.hierarchy.io import write_arx_csv

    try:
        parsed = yaml.safe_load(spec)
    except yaml.YAMLError:
        raise InputError(f"--spec: not valid YAML: {spec!r}") from None
    if not isinstance(parsed, dict):
        raise InputError("--spec: expected a mapping such as '{type: intervals, widths: [5, 10]}'")
    eng = MemoryEngine(data_source(data, delimiter, header, names))
    if column not in eng.columns():
        raise InputError(f"unknown column {column!r}: {data} has columns {', '.join(eng.columns())}")
    builder = builder_from_spec(parsed, Path.cwd(), "--spec")
    h = builder.build(sorted(eng.frame[column].unique()), name=column)
    write_arx_csv(h, out_file)
    out.print(f"wrote {out_file}: {len(h.leaves)} values, height {h.height}")


# --------------------------------------------------------------------------- flatten
def flatten(
    persons: Annotated[Path, typer.Argument(help="The persons table (one row per person).")],
    events: Annotated[Path, typer.Argument(help="The events table (rows referencing persons).")],
    key: Annotated[str, typer.Option("--key", help="Person id column of the persons table.")],
    n: Annotated[int, typer.Option("--events", help="Number of events to stack per person.")],
    out_file: Annotated[Path, typer.Option("--out", help="Output file (.csv or .parquet).")],
    event_key: Annotated[str | None, typer.Option("--event-key", help="Person id column of events.")] = None,
    order_by: Annotated[str | None, typer.Option("--order-by", help="Comma-separated sort columns.")] = None,
    order_numeric: Annotated[
        bool, typer.Option("--order-numeric", help="Sort the order-by columns as numbers, not text.")
    ] = False,
    order_dates: Annotated[
        str | None, typer.Option("--order-dates", help="Sort the order-by columns as dates (strptime).")
    ] = None,
    columns: Annotated[str | None, typer.Option("--columns", help="Event columns to keep.")] = None,
    prefix: Annotated[str | None, typer.Option("--prefix", help="Prefix of stacked columns.")] = None,
    descending: Annotated[bool, typer.Option("--descending", help="Most recent events first.")] = False,
    missing: Annotated[str, typer.Option("--pad", help="Padding for persons with fewer events.")] = "",
    orphans: Annotated[
        str, typer.Option("--orphans", help="Events matching no person: error (default) or drop.")
    ] = "error",
    delimiter: Annotated[str, typer.Option("--delimiter", help=DATA_DELIMITER_HELP)] = ",",
) -> None:
    """Stack the first n events of each person horizontally (thesis §4.2)."""
    from safeshare.data.flatten import flatten_files
    from safeshare.data.source import TableSource

    if orphans not in ("error", "drop"):
        raise InputError(f"--orphans: expected error or drop, got {orphans!r}")
    stats = flatten_files(
        TableSource(persons, delimiter=delimiter),
        TableSource(events, delimiter=delimiter),
        key=key,
        event_key=event_key,
        order_by=csv_list(order_by),
        n_events=n,
        columns=csv_list(columns) or None,
        prefix=prefix,
        descending=descending,
        order_numeric=order_numeric,
        order_dates=order_dates,
        missing=missing,
        on_orphans="drop" if orphans == "drop" else "error",
        out=out_file,
    )
    out.print(
        f"wrote {out_file}: {stats.persons:,} persons, {stats.events_kept:,} of {stats.events:,} events "
        f"stacked ({stats.persons_truncated:,} persons had more than {n}, the most was {stats.max_events}; "
        f"{stats.orphans_dropped:,} orphan events dropped)"
    )


def register(app: typer.Typer) -> None:
    """Add ``anonymize``, ``inspect``, ``hierarchy check|build`` and ``flatten`` to ``app``."""
    app.command("anonymize")(anonymize)
    app.command("inspect")(inspect)
    hierarchy_app.command("check")(hierarchy_check)
    hierarchy_app.command("build")(hierarchy_build)
    app.add_typer(hierarchy_app, name="hierarchy")
    app.command("flatten")(flatten)
