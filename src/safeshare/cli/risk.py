"""``safeshare risk``: exact re-identification measures, the estimators of B, and their evaluation.

Stable interface for scripts (issue 9)::

    safeshare risk DATA --qi a,b,c --population-size N [--estimator NAME|all] --out DIR
                   [--data-is-population | --population FILE] [--seed S]

writes ``DIR/risk.json`` atomically with at least ``A``, ``B_estimates``
(estimator name -> value) and, when the population is known, ``B_exact``.

``risk`` is a command group (``estimate``, ``evaluate``) whose default command
is ``estimate``: ``safeshare risk DATA ...`` is ``safeshare risk estimate DATA
...``, so the fixed invocation above keeps working next to ``safeshare risk
evaluate DATA ...`` (the §2.8 simulation, :mod:`safeshare.risk.evaluation`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from safeshare.cli.common import (
    DelimiterOption,
    HeaderOption,
    MissingOption,
    NamesOption,
    SkipRowsOption,
    csv_list,
    data_source,
)
from safeshare.errors import InputError

# Module-level imports stay light (typer, pathlib, typing, safeshare.errors, safeshare.cli.common):
# `safeshare --help` imports this module; numpy, pandas, rich and the library load in the commands.

DEFAULT_COMMAND = "estimate"


class DefaultCommandGroup(TyperGroup):
    """A group whose first argument, when it is not a subcommand name, goes to ``estimate``.

    Only ``--help`` (or nothing at all) stays with the group, so ``safeshare risk --qi a DATA``
    and ``safeshare risk DATA --qi a`` both reach the default command; a data file that happens
    to be called ``evaluate`` must be written ``./evaluate``.
    """

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:  # typer's own click Context
        if args and args[0] not in self.commands and args[0] not in ctx.help_option_names:
            args = [DEFAULT_COMMAND, *args]
        return super().parse_args(ctx, args)


risk_app = typer.Typer(
    cls=DefaultCommandGroup,
    help="Re-identification risk: exact measures and estimates of B (`estimate`, the default: "
    "`safeshare risk DATA ...`), and the estimators' evaluation (`evaluate`).",
    no_args_is_help=True,
)


@risk_app.command(DEFAULT_COMMAND)
def risk_command(
    data: Annotated[Path, typer.Argument(help="The sample (CSV or Parquet).")],
    qi: Annotated[str, typer.Option("--qi", help="Quasi-identifiers, comma separated.")],
    population_size: Annotated[int, typer.Option("--population-size", help="N, people in the population.")],
    out_dir: Annotated[Path, typer.Option("--out", help="Output directory for risk.json and risk.html.")],
    estimator: Annotated[
        str,
        typer.Option(
            "--estimator",
            help="An estimator name, a comma-separated list, or all (default: the best on our evaluation).",
        ),
    ] = "default",
    data_is_population: Annotated[
        bool, typer.Option("--data-is-population", help="DATA is the whole population (B exact).")
    ] = False,
    population: Annotated[
        Path | None, typer.Option("--population", help="The population file (B exact).")
    ] = None,
    seed: Annotated[
        int, typer.Option("--seed", help="Seed of the synthetic populations and bootstraps.")
    ] = 0,
    repetitions: Annotated[int, typer.Option("--repetitions", help="Synthetic populations per copula.")] = 1,
    correlation: Annotated[str, typer.Option("--correlation", help="Gaussian copula fit: mi | rank.")] = "mi",
    bootstrap: Annotated[
        int | None,
        typer.Option(
            "--bootstrap", help="Class resamples of the class-size estimators' intervals (default 50)."
        ),
    ] = None,
    max_synthetic_records: Annotated[
        int | None,
        typer.Option(
            "--max-synthetic-records",
            help="Most synthetic records (N x repetitions) a copula may draw (default 50,000,000).",
        ),
    ] = None,
    threshold: Annotated[float, typer.Option("--threshold", help="Risk threshold of the shares.")] = 0.09,
    delimiter: DelimiterOption = ",",
    header: HeaderOption = True,
    names: NamesOption = None,
    missing: MissingOption = None,
    skip_rows: SkipRowsOption = 0,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print nothing on success.")] = False,
) -> None:
    """Exact risk measures and the estimated sample-to-population risk B (Jiang et al. 2022)."""
    from rich.table import Table

    from safeshare.console import err, out
    from safeshare.io import OutputDirectory
    from safeshare.risk.assess import DEFAULT_MAX_SYNTHETIC_RECORDS, assess_risk, publish_assessment, rows

    # A foreign, locked or unwritable --out (or one holding an input) is refused before any data is read.
    OutputDirectory(out_dir).preflight()

    def source(path: Path) -> Any:
        return data_source(path, delimiter, header, names, missing, skip_rows)

    kwargs: dict[str, Any] = {
        "estimators": estimator,
        "population": None if population is None else source(population),
        "data_is_population": data_is_population,
        "seed": seed,
        "repetitions": repetitions,
        "correlation": correlation,
        "bootstrap": bootstrap,
        "threshold": threshold,
        "max_synthetic_records": max_synthetic_records or DEFAULT_MAX_SYNTHETIC_RECORDS,
    }
    if quiet or not err.is_terminal:
        assessment = assess_risk(source(data), csv_list(qi), population_size, **kwargs)
    else:
        with err.status("reading the data", spinner="dots") as status:

            def progress(name: str, index: int, total: int) -> None:
                status.update(f"estimating B with {name} ({index + 1} of {total})")

            assessment = assess_risk(source(data), csv_list(qi), population_size, progress=progress, **kwargs)
    published = publish_assessment(assessment, out_dir)
    if quiet:
        return
    table_out = Table(
        title=f"re-identification risk of {assessment.data} on {', '.join(assessment.quasi_identifiers)}"
    )
    table_out.add_column("measure")
    table_out.add_column("value", justify="right")
    for label, value in rows(assessment):
        table_out.add_row(label, value)
    out.print(table_out)
    out.print(f"wrote {published / 'risk.json'} and risk.html")


SHORT_NAMES = {
    "hypothesis_test": "hyp_test",
    "benedetti_franconi": "BF",
    "gaussian_copula": "gauss",
    "dvine_copula": "dvine",
}


def _float_list(value: str, flag: str) -> tuple[float, ...]:
    out = []
    for part in csv_list(value):
        try:
            out.append(float(part))
        except ValueError:
            raise InputError(f"{flag}: expected comma-separated numbers, got {part!r}") from None
    return tuple(out)


@risk_app.command("evaluate")
def evaluate_command(
    data: Annotated[Path, typer.Argument(help="The dataset taken as the whole population (CSV or Parquet).")],
    qi_pool: Annotated[
        str, typer.Option("--qi-pool", help="Quasi-identifiers to draw from, comma separated.")
    ],
    out_dir: Annotated[Path, typer.Option("--out", help="Output directory.")],
    points: Annotated[int, typer.Option("--points", help="Study points R.")] = 300,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the whole simulation.")] = 0,
    jobs: Annotated[int, typer.Option("--jobs", "-j", help="Processes running study points.")] = 1,
    estimators: Annotated[
        str, typer.Option("--estimators", "--estimator", help="Estimator names, comma separated, or all.")
    ] = "all",
    population_size_error: Annotated[
        str,
        typer.Option(
            "--population-size-error", help="Sensitivity: N off by ± these fractions ('' for none)."
        ),
    ] = "0.1,0.2,0.3",
    sensitivity_estimator: Annotated[
        str, typer.Option("--sensitivity-estimator", help="Estimator of the sensitivity analysis.")
    ] = "average",
    correlation: Annotated[str, typer.Option("--correlation", help="Gaussian copula fit: mi | rank.")] = "mi",
    plots: Annotated[bool, typer.Option("--plots/--no-plots", help="Write the box plots.")] = True,
    delimiter: DelimiterOption = ",",
    header: HeaderOption = True,
    names: NamesOption = None,
    missing: MissingOption = None,
    skip_rows: SkipRowsOption = 0,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print nothing on success.")] = False,
) -> None:
    """The estimators' evaluation (Jiang et al. 2022, §2.8): DATA is the population; each study point
    draws QIs and a sampling fraction, and compares every estimate of B with the exact B.

    Writes errors.csv, summary.csv, sensitivity.csv, sensitivity_summary.csv, timings.csv,
    evaluation.json (seed, settings, checks) and box plots (SVG, PNG) into --out."""
    import json
    import os
    import time

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from safeshare.console import err, out
    from safeshare.data.engines.memory import MemoryEngine
    from safeshare.io import OutputDirectory
    from safeshare.risk import evaluation as ev
    from safeshare.risk.estimators import estimator_names

    # A foreign, locked or unwritable --out is refused before the (long) evaluation starts.
    output = OutputDirectory(Path(out_dir))
    output.preflight()

    wanted = tuple(estimator_names()) if estimators == "all" else tuple(csv_list(estimators))
    settings = ev.EvaluationSettings(
        points=points,
        seed=seed,
        estimators=wanted,
        population_size_errors=_float_list(population_size_error, "--population-size-error"),
        sensitivity_estimator=sensitivity_estimator,
        correlation=correlation,
    )
    settings.validate()
    if jobs < 1:
        raise InputError(f"--jobs: expected a positive integer, got {jobs}")
    frame = MemoryEngine(data_source(data, delimiter, header, names, missing, skip_rows)).frame
    population = ev.Population.from_frame(frame, csv_list(qi_pool))
    N = population.size

    start = time.perf_counter()
    if quiet or not err.is_terminal:
        results = ev.run_points(population, settings, jobs)
    else:
        columns = (TextColumn("study points"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
        with Progress(*columns, console=err, transient=True) as bar:
            task = bar.add_task("points", total=points)
            results = ev.run_points(population, settings, jobs, progress=lambda: bar.advance(task))
    wall = time.perf_counter() - start

    errors = ev.errors_frame(results, wanted)
    summary = ev.summarize(errors)
    sens = (
        ev.sensitivity_frame(results, sensitivity_estimator, N) if settings.population_size_errors else None
    )
    timing_rows = [(r.point, name, s) for r in results for name, s in sorted(r.seconds.items())]
    cpu: dict[str, float] = {}
    for _p, name, s in timing_rows:
        cpu[name] = cpu.get(name, 0.0) + s
    failures = {f"{r.point}:{name}": msg for r in results for name, msg in r.failures.items()}
    ranking = ev.rank_estimators(summary)
    # Every file is written into a private stage and the folder is published as one unit: an
    # interrupted or repeated run never leaves a mix of old and new files (nor old plots).
    with output as stage:
        stage.joinpath("errors.csv").write_text(errors.to_csv(index=False), encoding="utf-8")
        stage.joinpath("summary.csv").write_text(summary.to_csv(index=False), encoding="utf-8")
        stage.joinpath("timings.csv").write_text(
            "point,estimator,cpu_seconds\n" + "".join(f"{p},{n},{s:.4f}\n" for p, n, s in timing_rows),
            encoding="utf-8",
        )
        if sens is not None:
            stage.joinpath("sensitivity.csv").write_text(sens.to_csv(index=False), encoding="utf-8")
            stage.joinpath("sensitivity_summary.csv").write_text(
                ev.sensitivity_summary(sens).to_csv(index=False), encoding="utf-8"
            )
        figures = (
            _figures(
                stage,
                errors,
                sens,
                wanted,
                data.name,
                N,
                points,
                seed,
                sensitivity_estimator,
                population_size_error,
            )
            if plots
            else []
        )
        doc = {
            "data": data.name,  # the file's name: no local path in a published file
            "population_size": N,
            "qi_pool": list(population.columns),
            "points": points,
            "seed": seed,
            "seeding": "point p draws everything from numpy SeedSequence([seed, p]); estimators get one "
            "seed drawn after the design (dvine_copula that seed + 1, as inside average)",
            "estimators": list(wanted),
            "correlation": correlation,
            "sampling_fraction_range": [settings.min_fraction, settings.max_fraction],
            "population_size_errors": list(settings.population_size_errors),
            "sensitivity_estimator": sensitivity_estimator if sens is not None else None,
            "jobs": jobs,
            "wall_seconds": round(wall, 1),
            "cpu_seconds_by_estimator": {k: round(v, 1) for k, v in cpu.items()},
            "failures": failures,
            "acceptance": ev.acceptance(summary),
            "paper_directions": ev.qualitative_checks(summary),
            "ranking": ranking,
            "figures": [p.name for p in figures],
            "cpu_count": os.cpu_count(),
        }
        stage.joinpath("evaluation.json").write_text(
            json.dumps(doc, indent=2, default=_json_default) + "\n", encoding="utf-8"
        )
        output.publish()
    if quiet:
        return
    _print_summary(summary, wanted, f"{data.name}, N = {N:,}, {points} study points, seed {seed}")
    out.print(
        f"best on this evaluation: {ranking[0]} (ranked by share within ±0.05, worst bin, median |error|)"
    )
    out.print(
        f"wrote {output.out_dir}/errors.csv, summary.csv, evaluation.json and {len(figures)} figures "
        f"({wall:.0f} s wall)"
    )


def _figures(
    out_dir: Path,
    errors: Any,
    sens: Any,
    wanted: tuple[str, ...],
    data_name: str,
    N: int,
    points: int,
    seed: int,
    sensitivity_estimator: str,
    population_size_error: str,
) -> list[Path]:
    """The box plots: all points, one figure per sampling-fraction band (Figs. 1-6), the sensitivity."""
    from safeshare.risk import evaluation as ev
    from safeshare.risk import plots

    title = f"{data_name}, N = {N:,}, {points} study points, seed {seed}"
    figures = plots.error_figure(errors, wanted, f"error of B: {title}", out_dir / "errors_by_true_risk")
    errors_band = errors.assign(band=ev.fraction_band(errors["sampling_fraction"]))
    for band in ev.FRACTION_BANDS:
        part = errors_band[errors_band["band"] == band]
        if len(part):
            slug = {"<0.1": "lt_0.1", "0.1-0.5": "0.1_to_0.5", ">0.5": "gt_0.5"}[band]
            figures += plots.error_figure(
                part, wanted, f"sampling fraction {band}: {title}", out_dir / f"errors_by_true_risk_f_{slug}"
            )
    if sens is not None:
        figures += plots.sensitivity_figure(
            sens,
            f"{sensitivity_estimator} with N off by ±{population_size_error}: {title}",
            out_dir / "sensitivity",
        )
    return figures


def _json_default(value: object) -> Any:
    import math

    if isinstance(value, float) and not math.isfinite(value):
        return None
    raise TypeError(f"not JSON serializable: {type(value).__name__}")


def _print_summary(summary: Any, estimators: tuple[str, ...], title: str) -> None:
    """Three tables, every estimator side by side, rows = all / true-risk bins / sampling-fraction bands."""
    import math

    from rich.console import Console
    from rich.table import Table

    from safeshare.console import out

    rows = list(dict.fromkeys(zip(summary["group"], summary["bin"], strict=True)))
    bands = {"<0.1": "0", "0.1-0.5": "1", ">0.5": "2"}
    rows.sort(
        key=lambda gb: ({"all": 0, "true_B": 1, "sampling_fraction": 2}[gb[0]], bands.get(gb[1], gb[1]))
    )
    wide = Console(highlight=False, width=max(out.width, 24 + 9 * len(estimators)))
    by = {
        (e, g, b): r
        for e, g, b, r in zip(
            summary["estimator"], summary["group"], summary["bin"], summary.to_dict("records"), strict=True
        )
    }
    for metric, label, fmt in (
        ("median_error", "median error (estimate - true B)", "{:+.3f}"),
        ("median_abs_error", "median absolute error", "{:.3f}"),
        ("iqr", "interquartile range of the error", "{:.3f}"),
        ("within_0.05", "share of errors within ±0.05", "{:.0%}"),
    ):
        t = Table(title=f"{label}: {title}")
        t.add_column("points in", no_wrap=True)
        t.add_column("n", justify="right", no_wrap=True)
        for e in estimators:
            t.add_column(SHORT_NAMES.get(e, e), justify="right", no_wrap=True)
        for g, b in rows:
            name = {"all": "all", "true_B": f"B {b}", "sampling_fraction": f"f {b}"}[g]
            first = by.get((estimators[0], g, b))
            count = "" if first is None else str(first["points"])
            cells = []
            for e in estimators:
                r = by.get((e, g, b))
                v = None if r is None else r[metric]
                cells.append("-" if v is None or not math.isfinite(v) else fmt.format(v))
            t.add_row(name, count, *cells)
        wide.print(t)
