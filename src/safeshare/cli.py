"""The ``safeshare`` command line.

Exit status: 0 success, 2 bad input (one line on stderr saying what and
where), 1 internal error. Nothing is written to an output directory unless
the release passed its independent verification.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from rich.console import Console
from rich.table import Table

from safeshare.errors import InputError, SafeshareError, VerificationError
from safeshare.experiment_commands import register as register_experiment_commands

app = typer.Typer(
    name="safeshare",
    help="Release person-level health data with a measured, defensible re-identification risk.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
hierarchy_app = typer.Typer(help="Inspect and build generalization hierarchies.", no_args_is_help=True)
app.add_typer(hierarchy_app, name="hierarchy")
from safeshare.dp.commands import dp_app  # noqa: E402 - differential privacy under sampling (thesis 4.5)

app.add_typer(dp_app, name="dp")
from safeshare.risk.commands import risk_app  # noqa: E402 - re-identification risk (issue 9)

app.add_typer(risk_app, name="risk")

err = Console(stderr=True, highlight=False)
out = Console(highlight=False)

T = TypeVar("T")


class Exit(Exception):
    """Carry an exit status out of a command."""

    def __init__(self, code: int) -> None:
        self.code = code


@contextmanager
def phase(label: str, quiet: bool) -> Iterator[None]:
    """Show a spinner with ``label`` on stderr while a phase runs."""
    if quiet or not err.is_terminal:
        yield
        return
    with err.status(label, spinner="dots"):
        yield


def _csv_list(value: str | None) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()] if value else []


def make_engine(name: str, source: Any) -> Any:
    """The engine called ``name`` reading ``source``."""
    if name == "duckdb":
        from safeshare.data.engines.duckdb_engine import DuckDBEngine

        return DuckDBEngine(source)
    from safeshare.data.engines.memory import MemoryEngine

    return MemoryEngine(source)


# --------------------------------------------------------------------------- anonymize
@app.command()
def anonymize(
    config: Annotated[Path, typer.Argument(help="The YAML configuration (see docs/configuration.md).")],
    out_dir: Annotated[Path, typer.Option("--out", help="Output directory for the release and reports.")],
    k: Annotated[int | None, typer.Option("--k", help="Override k of k-anonymity.")] = None,
    max_suppression: Annotated[
        float | None,
        typer.Option("--max-suppression", help="Override the suppression limit (fraction, 0..1)."),
    ] = None,
    metric: Annotated[str | None, typer.Option("--metric", help="prec | dm_star | entropy")] = None,
    algorithm: Annotated[
        str | None, typer.Option("--algorithm", help="ola | exhaustive | inverse-ola | epsilon-safe")
    ] = None,
    max_loss: Annotated[
        float | None,
        typer.Option("--max-loss", help="inverse-ola: largest normalized information loss (0..1)."),
    ] = None,
    engine: Annotated[str | None, typer.Option("--engine", help="memory | duckdb")] = None,
    tradeoff: Annotated[
        bool, typer.Option("--tradeoff/--no-tradeoff", help="Also report loss for suppression 0-50%.")
    ] = True,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print nothing on success.")] = False,
    beta: Annotated[float | None, typer.Option("--beta", help="epsilon-safe: sampling probability.")] = None,
    epsilon: Annotated[float | None, typer.Option("--epsilon", help="epsilon-safe: DPS epsilon.")] = None,
    epsilon_prime: Annotated[
        float | None, typer.Option("--epsilon-prime", help="epsilon-safe: budget of the node choice.")
    ] = None,
    utility: Annotated[str | None, typer.Option("--utility", help="thesis | linear | safepub")] = None,
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
    from safeshare.anonymizer import Anonymizer
    from safeshare.anonymizer import tradeoff as tradeoff_curve
    from safeshare.config import load_config
    from safeshare.release import write_release
    from safeshare.risk.m_concealing import (
        check_knowledge_columns,
        concealment_report,
        knowledge_columns,
        report_knowledge,
    )

    cfg = load_config(config).with_overrides(k, max_suppression, metric, algorithm, engine, max_loss)
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
    if cfg.algorithm == "epsilon-safe":
        from safeshare.dp.commands import anonymize_epsilon_safe

        anonymize_epsilon_safe(cfg, out_dir, dp_options, dry_run=dry_run, quiet=quiet)
        return
    given = [name for name, value in dp_options.items() if value is not None]
    given += ["dry_run"] if dry_run else []
    if given:
        flag = "--" + given[0].replace("_", "-")
        raise InputError(f"{flag} applies to --algorithm epsilon-safe only")
    anonymizer = Anonymizer(
        cfg.schema,
        cfg.privacy,
        cfg.max_suppression,
        cfg.metric,
        cfg.algorithm,
        cfg.prec_weights,
        cfg.algorithm_options(),
    )
    knowledge = report_knowledge(cfg.knowledge, cfg.privacy)
    start = time.perf_counter()
    with phase(f"reading {cfg.source.path.name}", quiet):
        eng = make_engine(cfg.engine, cfg.source)
    read_s = time.perf_counter() - start
    try:
        check_knowledge_columns(knowledge_columns(cfg.knowledge, cfg.privacy), cfg.schema, eng.columns())
        with phase("building the frequency table and searching the lattice", quiet):
            result = anonymizer.fit(eng)
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
        if tradeoff and result.found:
            with phase("suppression / loss trade-off", quiet):
                t0 = time.perf_counter()
                extra["tradeoff"] = tradeoff_curve(anonymizer, result)
                result.timings["tradeoff"] = time.perf_counter() - t0
        with phase("writing and verifying the release", quiet):
            published = write_release(
                result, eng, out_dir, cfg.release_format, cfg.output_delimiter, report=extra
            )
    finally:
        eng.close()
    if not quiet:
        _print_summary(published.report, published.release)


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
@app.command()
def inspect(
    data: Annotated[Path, typer.Argument(help="A CSV or Parquet file.")],
    qi: Annotated[str, typer.Option("--qi", help="Comma-separated quasi-identifier columns.")],
    k: Annotated[int, typer.Option("--k", help="Report records in classes smaller than k.")] = 5,
    delimiter: Annotated[str, typer.Option("--delimiter")] = ",",
    header: Annotated[bool, typer.Option("--header/--no-header")] = True,
    names: Annotated[str | None, typer.Option("--names", help="Comma-separated column names.")] = None,
    missing: Annotated[str | None, typer.Option("--missing", help="Comma-separated missing tokens.")] = None,
    skip_rows: Annotated[int, typer.Option("--skip-rows")] = 0,
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
    from safeshare.data.source import TableSource
    from safeshare.inspection import class_statistics

    if k < 1:
        raise InputError(f"--k: expected an integer >= 1, got {k}")
    source = TableSource(
        data,
        delimiter=delimiter,
        header=header,
        names=tuple(_csv_list(names)) or None,
        missing=tuple(_csv_list(missing)),
        skip_rows=skip_rows,
    )
    adversary = None
    if knowledge is not None:
        from safeshare.risk.m_concealing import AdversaryKnowledge, parse_knowledge_option

        adversary = AdversaryKnowledge(parse_knowledge_option(knowledge))
    inspected = MemoryEngine(source)
    stats = class_statistics(inspected, _csv_list(qi), k)
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
@hierarchy_app.command("check")
def hierarchy_check(
    hierarchy: Annotated[Path, typer.Argument(help="An ARX CSV hierarchy file.")],
    delimiter: Annotated[str, typer.Option("--delimiter")] = ";",
    data: Annotated[
        Path | None, typer.Option("--data", help="Check that it covers this data's column.")
    ] = None,
    column: Annotated[str | None, typer.Option("--column", help="Column of --data to check.")] = None,
    data_delimiter: Annotated[str, typer.Option("--data-delimiter")] = ",",
    header: Annotated[bool, typer.Option("--header/--no-header")] = True,
    names: Annotated[str | None, typer.Option("--names")] = None,
) -> None:
    """Validate a hierarchy (consistent levels, one parent per label), optionally against data."""
    from safeshare.hierarchy.io import read_arx_csv

    h = read_arx_csv(hierarchy, delimiter=delimiter)
    out.print(f"{hierarchy}: {len(h.leaves)} values, height {h.height}")
    for level in range(h.height + 1):
        labels = h.labels(level)
        shown = ", ".join(labels[:6]) + (", ..." if len(labels) > 6 else "")
        out.print(f"  level {level}: {len(labels)} labels ({shown})")
    if data is not None:
        from safeshare.data.engines.memory import MemoryEngine
        from safeshare.data.source import TableSource

        if not column:
            raise InputError("--column is required with --data")
        eng = MemoryEngine(
            TableSource(data, delimiter=data_delimiter, header=header, names=tuple(_csv_list(names)) or None)
        )
        if column not in eng.columns():
            raise InputError(f"unknown column {column!r}: {data} has columns {', '.join(eng.columns())}")
        missing = h.missing_values(eng.frame[column].unique())
        if missing:
            raise InputError(
                f"value {missing[0]!r} of column {column!r} is missing from hierarchy {hierarchy} "
                f"({len(missing)} value(s) not covered)"
            )
        out.print(f"  covers every value of column {column!r} in {data}")


@hierarchy_app.command("build")
def hierarchy_build(
    data: Annotated[Path, typer.Argument(help="A CSV or Parquet file.")],
    column: Annotated[str, typer.Option("--column", help="The column to build a hierarchy for.")],
    spec: Annotated[
        str, typer.Option("--spec", help="Builder as YAML, e.g. '{type: intervals, widths: [5,10]}'.")
    ],
    out_file: Annotated[Path, typer.Option("--out", help="Where to write the ARX CSV hierarchy.")],
    delimiter: Annotated[str, typer.Option("--delimiter")] = ",",
    header: Annotated[bool, typer.Option("--header/--no-header")] = True,
    names: Annotated[str | None, typer.Option("--names")] = None,
) -> None:
    """Build a hierarchy for a column with a builder and write it in ARX CSV format."""
    import yaml

    from safeshare.data.engines.memory import MemoryEngine
    from safeshare.data.source import TableSource
    from safeshare.hierarchy.builders import builder_from_spec
    from safeshare.hierarchy.io import write_arx_csv

    try:
        parsed = yaml.safe_load(spec)
    except yaml.YAMLError:
        raise InputError(f"--spec: not valid YAML: {spec!r}") from None
    if not isinstance(parsed, dict):
        raise InputError("--spec: expected a mapping such as '{type: intervals, widths: [5, 10]}'")
    eng = MemoryEngine(
        TableSource(data, delimiter=delimiter, header=header, names=tuple(_csv_list(names)) or None)
    )
    if column not in eng.columns():
        raise InputError(f"unknown column {column!r}: {data} has columns {', '.join(eng.columns())}")
    builder = builder_from_spec(parsed, Path.cwd(), "--spec")
    h = builder.build(sorted(eng.frame[column].unique()), name=column)
    write_arx_csv(h, out_file)
    out.print(f"wrote {out_file}: {len(h.leaves)} values, height {h.height}")


# --------------------------------------------------------------------------- flatten
@app.command()
def flatten(
    persons: Annotated[Path, typer.Argument(help="The persons table (one row per person).")],
    events: Annotated[Path, typer.Argument(help="The events table (rows referencing persons).")],
    key: Annotated[str, typer.Option("--key", help="Person id column of the persons table.")],
    n: Annotated[int, typer.Option("--n", help="Number of events to stack per person.")],
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
    missing: Annotated[str, typer.Option("--missing", help="Padding for persons with fewer events.")] = "",
    orphans: Annotated[
        str, typer.Option("--orphans", help="Events matching no person: error (default) or drop.")
    ] = "error",
    delimiter: Annotated[str, typer.Option("--delimiter", help="Field separator of the input CSVs.")] = ",",
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
        order_by=_csv_list(order_by),
        n_events=n,
        columns=_csv_list(columns) or None,
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


# --------------------------------------------------------------------------- utility, sweep
register_experiment_commands(app)


@app.command()
def version() -> None:
    """Print the version."""
    from safeshare import __version__

    out.print(__version__)


def _error_line(message: str) -> None:
    """Print ``message`` to stderr as exactly one line."""
    sys.stderr.write(" ".join(message.split()) + "\n")
    sys.stderr.flush()


def _run(fn: Callable[[], T]) -> int:
    debug = bool(os.environ.get("SAFESHARE_DEBUG"))
    try:
        fn()
    except InputError as exc:
        _error_line(f"error: {exc}")
        return 2
    except VerificationError as exc:
        _error_line(f"error: {exc}; nothing was written")
        return 1
    except SafeshareError as exc:
        _error_line(f"error: {exc}")
        return 1
    except KeyboardInterrupt:
        _error_line("interrupted; nothing was written")
        return 130
    except Exception as exc:
        if debug:
            traceback.print_exc()
        _error_line(f"internal error: {type(exc).__name__}: {exc} (set SAFESHARE_DEBUG=1 for a traceback)")
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``safeshare`` command."""

    def invoke() -> None:
        try:
            app(args=argv, standalone_mode=False)
        except typer.Exit as exc:
            if exc.exit_code:
                raise Exit(exc.exit_code) from None
        except typer.Abort:
            raise KeyboardInterrupt from None
        except Exception as exc:
            # Usage errors (unknown option, missing argument, bad value) come from the
            # click layer under Typer; recognize them by interface, not by import path.
            if getattr(exc, "exit_code", None) == 2 and hasattr(exc, "format_message"):
                raise InputError(" ".join(str(exc.format_message()).split())) from None
            raise

    try:
        return _run(invoke)
    except Exit as exc:
        return exc.code


if __name__ == "__main__":
    sys.exit(main())
