"""``safeshare risk``: exact re-identification measures, the estimators of B, and their evaluation.

Stable interface for scripts (issue 9)::

    safeshare risk DATA --qi a,b,c --population-size N [--estimator NAME|all] --out DIR
                   [--data-is-population | --population FILE] [--seed S]

publishes ``DIR/risk.json`` and ``DIR/risk.html`` as one unit with at least ``A``,
``B_estimates`` (estimator name -> value or ``null``: no estimate, ``no_estimate`` says why),
``B_intervals`` and, when the population is known, ``B_exact``.

The module only parses and prints: each command calls its use case in :mod:`safeshare.api`
(:func:`~safeshare.workflows.risk.risk`, :func:`~safeshare.workflows.risk_evaluation.risk_evaluate`)
with the same keywords and shows the result it returns (``--json``: the result's document).

``risk`` is a command group (``estimate``, ``evaluate``) whose default command
is ``estimate``: ``safeshare risk DATA ...`` is ``safeshare risk estimate DATA
...``, so the fixed invocation above keeps working next to ``safeshare risk
evaluate DATA ...`` (the §2.8 simulation, :mod:`safeshare.risk.evaluation`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

import typer
from typer.core import TyperGroup

from safeshare.cli.common import JsonOption, Keywords, PersonOption, QuietOption, emit, reads_data

# Module-level imports stay light (typer, pathlib, typing, safeshare.cli.common):
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


Correlation = Literal["mi", "rank"]
CorrelationOption = Annotated[
    Correlation, typer.Option("--correlation", help="Gaussian copula fit: mutual information or rank.")
]


@risk_app.command(DEFAULT_COMMAND)
@reads_data
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
        int, typer.Option("--seed", help="Integer seed of the synthetic populations and bootstraps.")
    ] = 0,
    simulations: Annotated[
        int, typer.Option("--simulations", help="Synthetic populations per copula estimate.")
    ] = 1,
    correlation: CorrelationOption = "mi",
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
            help="Most synthetic records (N x simulations) a copula may draw (default 50,000,000).",
        ),
    ] = None,
    threshold: Annotated[float, typer.Option("--threshold", help="Risk threshold of the shares.")] = 0.09,
    person: PersonOption = None,
    *,
    reading: Keywords,
    quiet: QuietOption = False,
    as_json: JsonOption = False,
) -> None:
    """Exact risk measures and the estimated sample-to-population risk B (Jiang et al. 2022)."""
    from safeshare import api
    from safeshare.cli.common import ConsoleMonitor

    result = api.risk(
        data,
        out_dir,
        monitor=ConsoleMonitor(quiet or as_json),
        qi=qi,
        population_size=population_size,
        estimator=estimator,
        population=population,
        data_is_population=data_is_population,
        seed=seed,
        simulations=simulations,
        correlation=correlation,
        bootstrap=bootstrap,
        max_synthetic_records=max_synthetic_records,
        threshold=threshold,
        person=person,
        **reading,
    )

    def show() -> None:
        from rich.table import Table

        from safeshare.console import out

        table = Table(
            title=f"re-identification risk of {result.data} on {', '.join(result.quasi_identifiers)}"
        )
        table.add_column("measure")
        table.add_column("value", justify="right")
        for label, value in result.rows():
            table.add_row(label, value)
        for warning in result.warnings:  # issue 32: a column that looks like a person key repeats
            table.add_row("warning", str(warning["message"]), style="yellow")
        out.print(table)
        out.print(f"wrote {result.out}/risk.json and risk.html")

    emit(result.to_dict(), as_json, quiet, show)


SHORT_NAMES = {
    "hypothesis_test": "hyp_test",
    "benedetti_franconi": "BF",
    "gaussian_copula": "gauss",
    "dvine_copula": "dvine",
}


@risk_app.command("evaluate")
@reads_data
def evaluate_command(
    data: Annotated[Path, typer.Argument(help="The dataset taken as the whole population (CSV or Parquet).")],
    qi: Annotated[
        str, typer.Option("--qi", help="Quasi-identifiers each study point draws from, comma separated.")
    ],
    out_dir: Annotated[Path, typer.Option("--out", help="Output directory.")],
    simulations: Annotated[int, typer.Option("--simulations", help="Study points R.")] = 300,
    seed: Annotated[int, typer.Option("--seed", help="Integer seed of the whole simulation.")] = 0,
    jobs: Annotated[int, typer.Option("--jobs", "-j", help="Processes running study points.")] = 1,
    estimator: Annotated[
        str, typer.Option("--estimator", help="Estimator names, comma separated, or all.")
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
    correlation: CorrelationOption = "mi",
    plots: Annotated[bool, typer.Option("--plots/--no-plots", help="Write the box plots.")] = True,
    *,
    reading: Keywords,
    quiet: QuietOption = False,
    as_json: JsonOption = False,
) -> None:
    """The estimators' evaluation (Jiang et al. 2022, §2.8): DATA is the population; each study point
    draws QIs and a sampling fraction, and compares every estimate of B with the exact B.

    Writes errors.csv, summary.csv, sensitivity.csv, sensitivity_summary.csv, timings.csv,
    evaluation.json (seed, settings, checks) and box plots (SVG, PNG) into --out."""
    from safeshare import api
    from safeshare.cli.common import ConsoleMonitor

    result = api.risk_evaluate(
        data,
        out_dir,
        monitor=ConsoleMonitor(quiet or as_json),
        qi=qi,
        simulations=simulations,
        seed=seed,
        jobs=jobs,
        estimator=estimator,
        population_size_error=population_size_error,
        sensitivity_estimator=sensitivity_estimator,
        correlation=correlation,
        plots=plots,
        **reading,
    )

    def show() -> None:
        from safeshare.console import out

        _print_summary(result.summary, result.estimators, result.title)
        out.print(
            f"best on this evaluation: {result.ranking[0]} "
            "(ranked by share within ±0.05, worst bin, median |error|)"
        )
        out.print(
            f"wrote {result.out}/errors.csv, summary.csv, evaluation.json and {len(result.figures)} figures "
            f"({result.wall_seconds:.0f} s wall)"
        )

    emit(result.to_dict(), as_json, quiet, show)


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
