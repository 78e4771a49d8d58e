"""The ``anonymize``, ``inspect``, ``flatten`` and ``hierarchy`` commands: parse, call, print.

Each command calls its use case in :mod:`safeshare.api` with the same keywords and prints
the result it returns (``--json``: the result as JSON; ``--quiet``: nothing). Registered on
the main app by :func:`register` (from :mod:`safeshare.cli`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from safeshare.cli.common import (
    AlgorithmName,
    ConsoleMonitor,
    EngineName,
    JsonOption,
    Keywords,
    KOverrideOption,
    MaxSuppressionOption,
    MetricOption,
    Orphans,
    PenaltyMode,
    PersonOption,
    QuietOption,
    SeedOption,
    Sensitivity,
    UtilityName,
    emit,
    reads_data,
)
from safeshare.console import err, out
from safeshare.figures import number, percent
from safeshare.options import TRADEOFF_AUTO_MAX

if TYPE_CHECKING:
    from safeshare.api import Release

hierarchy_app = typer.Typer(help="Inspect and build generalization hierarchies.", no_args_is_help=True)


# --------------------------------------------------------------------------- anonymize
def anonymize(
    config: Annotated[Path, typer.Argument(help="The YAML configuration (see docs/configuration.md).")],
    out_dir: Annotated[Path, typer.Option("--out", help="Output directory for the release and reports.")],
    k: KOverrideOption = None,
    max_suppression: MaxSuppressionOption = None,
    metric: MetricOption = None,
    person: PersonOption = None,
    algorithm: Annotated[
        AlgorithmName | None, typer.Option("--algorithm", help="Search strategy (docs/configuration.md).")
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
    engine: Annotated[EngineName | None, typer.Option("--engine", help="Engine reading the data.")] = None,
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
    local_recoding: Annotated[
        bool,
        typer.Option(
            "--local-recoding",
            help="Release what the optimal node suppresses: rounds on those records (docs/anonymization.md).",
        ),
    ] = False,
    rounds: Annotated[
        int | None, typer.Option("--rounds", help="local recoding: the most rounds (default 100).")
    ] = None,
    quiet: QuietOption = False,
    as_json: JsonOption = False,
    beta: Annotated[float | None, typer.Option("--beta", help="epsilon-safe: sampling probability.")] = None,
    epsilon: Annotated[float | None, typer.Option("--epsilon", help="epsilon-safe: DPS epsilon.")] = None,
    epsilon_prime: Annotated[
        float | None, typer.Option("--epsilon-prime", help="epsilon-safe: budget of the node choice.")
    ] = None,
    utility_function: Annotated[
        UtilityName | None, typer.Option("--utility-function", help="epsilon-safe: the score function.")
    ] = None,
    penalty: Annotated[float | None, typer.Option("--penalty", help="epsilon-safe: penalty factor.")] = None,
    penalty_mode: Annotated[
        PenaltyMode | None, typer.Option("--penalty-mode", help="epsilon-safe: what the penalty counts.")
    ] = None,
    sensitivity: Annotated[
        Sensitivity | None, typer.Option("--sensitivity", help="epsilon-safe: exact, or thesis (NOT DP).")
    ] = None,
    reference_size: Annotated[
        int | None, typer.Option("--reference-size", help="epsilon-safe: N_ref of the suppression penalty.")
    ] = None,
    seed: SeedOption = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="epsilon-safe: write the node distribution, not a release.")
    ] = False,
    allow_non_dp: Annotated[
        bool, typer.Option("--allow-non-dp", help="epsilon-safe: allow --sensitivity thesis releases.")
    ] = False,
    key_file: Annotated[
        Path | None,
        typer.Option("--key-file", help="Key of pseudonyms and shifted dates (hex, mode 0600; never shown)."),
    ] = None,
    ledger: Annotated[
        Path | None,
        typer.Option("--ledger", help="Append the published release to this ledger (JSON lines)."),
    ] = None,
    approved_by: Annotated[
        str | None, typer.Option("--approved-by", help="Who approved the release (report cover, ledger).")
    ] = None,
    population_size: Annotated[
        int | None,
        typer.Option(
            "--population-size",
            help="N of the report's risk section: the people of the population the input was drawn "
            "from (default: the input is the whole population).",
        ),
    ] = None,
    population_source: Annotated[
        str | None,
        typer.Option(
            "--population-source",
            help="Where N comes from (e.g. 'census 2021, table X'): shown on the certificate beside N.",
        ),
    ] = None,
    threshold_reason: Annotated[
        str | None,
        typer.Option(
            "--threshold-reason",
            help="Why the risk threshold is what it is (the report's evidence, beside the threshold).",
        ),
    ] = None,
    purpose: Annotated[
        str | None, typer.Option("--purpose", help="What the release is for (the report's cover).")
    ] = None,
    attack_frame: Annotated[
        Path | None,
        typer.Option(
            "--attack-frame",
            help="Attack the written release with this identified frame (attack.frame; the "
            "certificate shows the attack beside B).",
        ),
    ] = None,
    accept_warnings: Annotated[
        list[str] | None,
        typer.Option(
            "--accept-warning",
            help="Acknowledge a warning code that contradicts the headline (repeatable; added to the "
            "configuration's accept_warnings:). Without it such a release is not published.",
        ),
    ] = None,
) -> None:
    """Anonymize a table (OLA and the other searches) and publish a verified release."""
    from safeshare import api  # imports the anonymize use case only: it validates before importing more

    options: dict[str, Any] = {
        "k": k,
        "max_suppression": max_suppression,
        "metric": metric,
        "person": person,
        "algorithm": algorithm,
        "time_limit": time_limit,
        "max_evaluations": max_evaluations,
        "exact_max_nodes": exact_max_nodes,
        "max_loss": max_loss,
        "engine": engine,
        "duckdb_memory_limit": duckdb_memory_limit,
        "duckdb_threads": duckdb_threads,
        "spark_master": spark_master,
        "local_recoding": local_recoding or None,
        "rounds": rounds,
        "beta": beta,
        "epsilon": epsilon,
        "epsilon_prime": epsilon_prime,
        "utility_function": utility_function,
        "penalty": penalty,
        "penalty_mode": penalty_mode,
        "sensitivity": sensitivity,
        "reference_size": reference_size,
        "seed": seed,
        "allow_non_dp": allow_non_dp or None,
        "key_file": key_file,
        "ledger": ledger,
        "approved_by": approved_by,
        "population_size": population_size,
        "population_source": population_source,
        "threshold_reason": threshold_reason,
        "purpose": purpose,
        "attack_frame": attack_frame,
        "accept_warnings": accept_warnings or None,
    }
    monitor = ConsoleMonitor(quiet or as_json)
    if dry_run:
        if tradeoff is not None:
            from safeshare.errors import InputError

            raise InputError("--tradeoff does not apply to --dry-run")
        preview = api.anonymize_dry_run(config, out_dir, monitor=monitor, **options)
        doc = preview.document()
        if "warning" in doc:
            err.print(doc["warning"], style="bold red")
        emit(
            doc,
            as_json,
            quiet,
            lambda: out.print(
                f"distribution over {doc['nodes']:,} nodes written to {out_dir}/distribution.csv "
                f"(sensitivity {number(doc['sensitivity'], 6)}, "
                f"P(good node) {number(doc['probability_good_node'], 3)}, "
                f"expected suppression {percent(doc['expected_suppressed_fraction'])}); not for release"
            ),
        )
        return
    release = api.anonymize(config, out_dir, monitor=monitor, tradeoff=tradeoff, **options)
    emit(release.report, as_json, quiet, lambda: print_release(release))


def print_release(release: Release) -> None:
    """The terminal summary of a :class:`Release` (rendered from it alone)."""
    from rich.table import Table
    from rich.text import Text

    from safeshare.report.risk_certificate import risk_certificate_text

    report = release.report
    title = "safeshare: release verified" if release.verified else "safeshare: release (not written)"
    table = Table(title=title, show_header=False, title_justify="left")
    table.add_column("what", style="bold")
    table.add_column("value")
    headline = report.get("headline") or {}
    if headline.get("text"):
        table.add_row("result", Text(headline["text"]), style="bold green" if release.verified else None)
    levels = ", ".join(f"{q}={lv}" for q, lv in report["levels"].items())
    local = report.get("local_recoding")
    table.add_row("levels (global node)" if local else "levels", levels)
    if local:
        _local_recoding_rows(table, local)
    table.add_row(
        "information loss (global node)" if local else "information loss",
        f"{report.get('metric_label') or report['metric']} = {number(report['information_loss'], 6)} "
        f"(normalized {number(report['information_loss_normalized'])})",
    )
    if release.sampling is not None:
        table.add_row(
            "sampling",
            f"{report['records_before_sampling']:,} records, {report['records_sampled']:,} sampled "
            f"(beta {number(report['beta'], 6)})",
        )
        table.add_row(
            "(beta, epsilon, delta)",
            f"({number(report['beta'], 6)}, {number(report['epsilon'], 6)}, {report['delta_scientific']}) "
            f"with epsilon' = {number(report['epsilon_prime'], 6)}; node drawn with probability "
            f"{number(report['node_probability'])} ({report['utility']} utility)",
        )
    table.add_row(
        "records",
        f"{report['records_in']:,} in, {report['suppressed_records']:,} suppressed, "
        f"{report['records_out']:,} released",
    )
    people = report.get("people")
    smallest = f"smallest {report['min_class_size']:,} records"
    if people is not None:  # the class's people beside its records (issue 32)
        smallest += f", {people['min_class_people']:,} people"
    table.add_row("classes", f"{report['equivalence_classes']:,}, {smallest}")
    if people is not None:  # issue 32: the unit a privacy officer signs for
        per = people["records_per_person"]
        table.add_row(
            "people",
            f"{people['people_in']:,} in ({per['people_with_several']:,} with several records, up to "
            f"{per['max']:,}), {people['people_out']:,} released, {people['people_suppressed']:,} wholly "
            f"suppressed; smallest class {people['min_class_people']:,} people (by {people['column']}; the "
            f"suppression limit counts {people['suppression_unit']})",
        )
    kept = [c["name"] for c in report["columns"] if c["treatment"] == "kept"]
    table.add_row("kept unchanged", ", ".join(kept) if kept else "none")
    if report.get("k_achieved") is not None:
        table.add_row("inverse OLA", f"k achieved = {report['k_achieved']:,} (max_loss {report['max_loss']})")
    if report.get("inverse_m") is not None:
        table.add_row("m-concealing", f"m = {number(report['m'])}, 1/m = {number(report['inverse_m'])}")
    for name, achieved in report["privacy_achieved"].items():  # l-diversity, t-closeness, ...
        for how in ("min", "max"):
            if how in achieved:
                values = ", ".join(f"{c} {number(v)}" for c, v in achieved[how].items() if v is not None)
                table.add_row(name, f"{how} per column: {values}")
    risk = report["risk"]
    if risk.get("release") is not None:  # the prosecutor figure is in the headline, with its context
        b = risk["release"].get("B")
        how = f"estimated by {risk['estimator']}" if risk["release"].get("estimated") else "exact"
        unit = f" {risk['unit']}" if risk.get("unit") else ""
        table.add_row(
            "risk (release)",
            f"B {'n/a' if b is None else number(b)} ({how}, N = {risk['population_size']:,}{unit})",
        )
    for what, text in risk_certificate_text(report):  # issue 33: N's source, the band, the spread
        table.add_row(what, Text(text))
    table.add_row("search", report["why"])
    from safeshare.report.content import frontier_sentence

    ties = frontier_sentence(report.get("frontier"))
    if ties is not None:
        table.add_row("minimal nodes", Text(ties))
    for warning in release.warnings:
        # Text, not markup: a message quotes labels of the data ("[20-30[") and names a code
        table.add_row("warning", Text(f"{warning.code}: {warning.message}"), style="yellow")
    for ack in (report.get("certificate") or {}).get("acknowledged") or []:  # issue 33
        table.add_row(
            "acknowledged",
            Text(f"{ack['code']} ({ack['warnings']} warning(s) contradicting the headline), by {ack['by']}"),
        )
    evidence = report.get("evidence")
    if evidence is not None:
        checks = ", ".join(c["name"] for c in evidence["verifier_checks"])
        table.add_row("re-checked", f"{checks} (independently, on the written file)")
        hashed = sum(1 for f in evidence["files"] if f.get("sha256"))
        table.add_row(
            "evidence",
            f"SHA-256 of {hashed} files in report.json and report.html (of the input and hierarchy files: "
            "the ledger only)",
        )
    certificate = report.get("certificate") or {}
    if certificate.get("attack"):  # issue 34: the attack on the written release, beside B
        table.add_row("attack (exact matching)", Text(certificate["attack"]["verdict"]))
    if certificate.get("approved_by"):
        table.add_row("approved by", certificate["approved_by"])
    if release.ledger_entry is not None:
        entry = release.ledger_entry
        table.add_row(
            "ledger",
            f"entry {entry['seq']} appended to {entry['path']} (SHA-256 {entry['entry_sha256'][:16]}...)",
        )
    table.add_row("time", ", ".join(f"{k} {v:.2f}s" for k, v in report["elapsed_s"].items()))
    if release.path is not None:
        table.add_row("output", f"{release.path} (+ report.json, report.html)")
    out.print(table)


def _local_recoding_rows(table: Any, local: dict[str, Any]) -> None:
    """The rounds of local recoding and the cell-level loss, global node versus mixed release."""
    for r in local["rounds"][1:]:
        table.add_row(
            f"round {r['round']}",
            f"node {tuple(r['node'])}: {r['released']:,} of {r['records_searched']:,} suppressed records "
            f"released, {r['suppressed_after']:,} left",
        )
    table.add_row("local recoding", f"{local['rounds_run']} round(s); stopped: {local['stop']}")
    g, m = local["loss_global"], local["loss_mixed"]
    table.add_row(
        "cell-level loss",
        f"global node -> local recoding: released {g['released']:,} -> {m['released']:,}, "
        f"Prec {number(g['prec'])} -> {number(m['prec'])}, entropy {number(g['entropy_normalized'])} -> "
        f"{number(m['entropy_normalized'])}, DM* {number(g['dm_star_normalized'])} -> "
        f"{number(m['dm_star_normalized'])}",
    )


# --------------------------------------------------------------------------- inspect
@reads_data
def inspect(
    data: Annotated[Path, typer.Argument(help="A CSV or Parquet file.")],
    qi: Annotated[str, typer.Option("--qi", help="Comma-separated quasi-identifier columns.")],
    k: Annotated[int, typer.Option("--k", help="Report records in classes smaller than k.")] = 5,
    knowledge: Annotated[
        str | None,
        typer.Option(
            "--knowledge",
            help="Also measure m-concealing: COLUMN=PROBABILITY,... known to an adversary "
            "(see docs/m-concealing.md).",
        ),
    ] = None,
    person: PersonOption = None,
    *,
    reading: Keywords,
    quiet: QuietOption = False,
    as_json: JsonOption = False,
) -> None:
    """Equivalence-class statistics of raw data: why removing names is not enough (thesis ch. 3)."""
    from rich.table import Table
    from rich.text import Text

    from safeshare import api

    result = api.inspect(data, qi=qi, k=k, knowledge=knowledge, person=person, **reading)
    stats = result.statistics

    def show() -> None:
        table = Table(title=f"equivalence classes of {data.name} on {', '.join(stats['quasi_identifiers'])}")
        table.add_column("measure")
        table.add_column("value", justify="right")
        table.add_row("records", f"{stats['records']:,}")
        table.add_row("equivalence classes", f"{stats['classes']:,}")
        table.add_row(
            "unique records (class size 1)", f"{stats['uniques']:,} ({percent(stats['uniques_pct'] / 100)})"
        )
        table.add_row(
            f"records in classes < {k}", f"{stats['below_k']:,} ({percent(stats['below_k_pct'] / 100)})"
        )
        table.add_row("mean class size", number(stats["mean_class_size"]))
        table.add_row("median class size", number(stats["median_class_size"]))
        table.add_row("largest class", f"{stats['max_class_size']:,}")
        table.add_row(
            "prosecutor risk: max / mean", f"{number(stats['max_risk'])} / {number(stats['mean_risk'])}"
        )
        if result.m_concealing is not None:
            mc = result.m_concealing
            table.add_row("m-concealing: m / 1/m", f"{number(mc['m'])} / {number(mc['inverse_m'])}")
            table.add_row("m-concealing: mean m(i)", number(mc["mean"]))
        people = result.people
        if people is not None:  # issue 32: the same figures in people
            per = people["rows_per_person"]
            table.add_row(f"people (by {people['column']})", f"{people['people']:,}")
            table.add_row(
                "rows per person: mean / median / max",
                f"{number(per['mean'])} / {number(per['median'])} / {per['max']:,} "
                f"({per['people_with_several']:,} people with several)",
            )
            table.add_row(
                "people alone in a class of theirs",
                f"{people['people_alone']:,} ({percent(people['people_alone_pct'] / 100)})",
            )
            table.add_row(
                f"people in a class of < {k} people",
                f"{people['people_below_k']:,} ({percent(people['people_below_k_pct'] / 100)})",
            )
            table.add_row(
                "prosecutor risk per person: max / mean",
                f"{number(people['max_risk'])} / {number(people['mean_risk'])}",
            )
        for found in result.repeated_persons:
            per = found["rows_per_person"]
            table.add_row(
                f"rows per {found['column']}: mean / max",
                f"{number(per['mean'])} / {per['max']:,} ({per['people_with_several']:,} with several)",
            )
        out.print(table)
        for found in result.repeated_persons:  # warned by name: every figure above counts records
            err.print(Text(f"warning: {found['message']}"), style="yellow")

    emit(result.to_dict(), as_json, quiet, show)


# --------------------------------------------------------------------------- hierarchy
@reads_data
def hierarchy_check(
    hierarchy: Annotated[Path, typer.Argument(help="An ARX CSV hierarchy file.")],
    hierarchy_delimiter: Annotated[
        str, typer.Option("--hierarchy-delimiter", help="Field separator of the hierarchy file.")
    ] = ";",
    data: Annotated[
        Path | None, typer.Option("--data", help="Check that it covers this data's column.")
    ] = None,
    column: Annotated[str | None, typer.Option("--column", help="Column of --data to check.")] = None,
    *,
    reading: Keywords,
    quiet: QuietOption = False,
    as_json: JsonOption = False,
) -> None:
    """Validate a hierarchy (consistent levels, one parent per label), optionally against data."""
    from safeshare import api

    result = api.hierarchy_check(
        hierarchy,
        hierarchy_delimiter=hierarchy_delimiter,
        data=data,
        column=column,
        **reading,
    )

    def show() -> None:
        out.print(f"{hierarchy}: {result.values} values, height {result.height}")
        for level in result.levels:
            shown = ", ".join(level["examples"]) + (
                ", ..." if level["labels"] > len(level["examples"]) else ""
            )
            out.print(f"  level {level['level']}: {level['labels']} labels ({shown})")
        if data is not None:
            out.print(f"  covers every value of column {column!r} in {data}")
        truth = result.truth
        out.print(f"  {truth['true']:,} of {truth['pairs']:,} labels checked true of their values")
        for warning in result.warnings:
            err.print(f"warning: {warning}", style="yellow", soft_wrap=True)

    emit(result.to_dict(), as_json, quiet, show)


@reads_data
def hierarchy_build(
    data: Annotated[Path, typer.Argument(help="A CSV or Parquet file.")],
    column: Annotated[str, typer.Option("--column", help="The column to build a hierarchy for.")],
    spec: Annotated[
        str, typer.Option("--spec", help="Builder as YAML, e.g. '{type: intervals, widths: [5,10]}'.")
    ],
    out_file: Annotated[Path, typer.Option("--out", help="Where to write the ARX CSV hierarchy.")],
    *,
    reading: Keywords,
    quiet: QuietOption = False,
    as_json: JsonOption = False,
) -> None:
    """Build a hierarchy for a column with a builder and write it in ARX CSV format."""
    from safeshare import api

    built = api.hierarchy_build(
        data,
        column=column,
        spec=spec,
        out=out_file,
        **reading,
    )

    def show() -> None:
        out.print(f"wrote {out_file}: {built.values} values, height {built.height}")
        for warning in built.warnings:
            shown = ", ".join(warning["values"][:10]) + (", ..." if len(warning["values"]) > 10 else "")
            err.print(f"warning: {warning['message']} (values: {shown})", style="yellow", soft_wrap=True)

    emit(built.to_dict(), as_json, quiet, show)


# --------------------------------------------------------------------------- flatten
@reads_data
def flatten(
    persons_file: Annotated[
        Path, typer.Argument(metavar="PERSONS", help="The persons table (one row per person).")
    ],
    events_file: Annotated[
        Path, typer.Argument(metavar="EVENTS", help="The events table (rows referencing persons).")
    ],
    key: Annotated[str, typer.Option("--key", help="Person id column of the persons table.")],
    events: Annotated[int, typer.Option("--events", help="Number of events to stack per person.")],
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
    pad: Annotated[str, typer.Option("--pad", help="Padding for persons with fewer events.")] = "",
    orphans: Annotated[
        Orphans, typer.Option("--orphans", help="Events matching no person: refuse, or drop them.")
    ] = "error",
    *,
    reading: Keywords,
    quiet: QuietOption = False,
    as_json: JsonOption = False,
) -> None:
    """Stack the first n events of each person horizontally (thesis §4.2)."""
    from safeshare import api

    done = api.flatten(
        persons_file,
        events_file,
        key=key,
        events=events,
        out=out_file,
        event_key=event_key,
        order_by=order_by,
        order_numeric=order_numeric,
        order_dates=order_dates,
        columns=columns,
        prefix=prefix,
        descending=descending,
        pad=pad,
        orphans=orphans,
        monitor=ConsoleMonitor(quiet or as_json),
        **reading,
    )
    stats = done.stats
    emit(
        done.to_dict(),
        as_json,
        quiet,
        lambda: out.print(
            f"wrote {out_file}: {stats.persons:,} persons, {stats.events_kept:,} of {stats.events:,} events "
            f"stacked ({stats.persons_truncated:,} persons had more than {events}, the most was "
            f"{stats.max_events}; {stats.orphans_dropped:,} orphan events dropped)"
        ),
    )


def compare(
    releases: Annotated[
        list[Path], typer.Argument(help="Published release folders (or their report.json), two or more.")
    ],
    quiet: QuietOption = False,
    as_json: JsonOption = False,
) -> None:
    """Releases of the same people side by side: people, k, risk and loss (docs/longitudinal.md)."""
    from rich.table import Table

    from safeshare import api

    result = api.compare(releases)

    def show() -> None:
        table = Table(title="releases compared (figures in people)")
        table.add_column("figure")
        for name in result.names:
            table.add_column(name, justify="right")
        for label, values in result.rows():
            table.add_row(label, *values)
        out.print(table)
        for warning in result.warnings:
            err.print(f"warning: {warning}", style="yellow", markup=False)

    emit(result.to_dict(), as_json, quiet, show)


def register(app: typer.Typer) -> None:
    """Add ``anonymize``, ``inspect``, ``compare``, ``hierarchy check|build`` and ``flatten`` to ``app``."""
    app.command("anonymize")(anonymize)
    app.command("inspect")(inspect)
    app.command("compare")(compare)
    hierarchy_app.command("check")(hierarchy_check)
    hierarchy_app.command("build")(hierarchy_build)
    app.add_typer(hierarchy_app, name="hierarchy")
    app.command("flatten")(flatten)
