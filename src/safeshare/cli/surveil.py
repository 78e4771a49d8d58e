"""The ``safeshare surveil`` commands: simulate, search, select, evaluate, release (docs/surveillance.md).

Each command only parses its options, calls its use case in :mod:`safeshare.api`
(``surveil_simulate`` ... ``surveil_release``, the same keywords: ``--population-table`` is
``population_table``, ``--simulations`` is ``simulations``) and prints the result it returns: its
lines, or with ``--json`` its ``to_dict()``, or nothing with ``--quiet`` (docs/cli.md). The use case
validates, computes, and publishes ``--out`` atomically through ``io.OutputDirectory``. Bad input
raises :class:`~safeshare.errors.InputError` subclasses, which the CLI turns into one line on stderr
and exit status 2, as for ``anonymize``.

Only light modules are imported here: numpy, pandas and the use cases are imported inside the
commands, so ``safeshare --help`` starts quickly.

Stable interface for scripts::

    safeshare surveil simulate --population-table POP.csv --region R --cases CASES.csv --policy CODE \\
        --k 11 --lag L --simulations S --seed X --out DIR

writes ``DIR/simulation.csv`` with columns ``period, cases, mean, lower, upper``
(lower/upper: the 2.5% and 97.5% quantiles of PK_k over the simulations).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from safeshare.cli.common import (
    ConsoleMonitor,
    JsonOption,
    Keywords,
    QuietOption,
    SimulationsOption,
    csv_list,
    emit,
    options_of,
)
from safeshare.config.vocabulary import (
    SMALL_CELL,
    SURVEILLANCE_LAG,
    SURVEILLANCE_QUANTILE,
    SURVEILLANCE_SIMULATIONS,
    SURVEILLANCE_THRESHOLD,
)
from safeshare.errors import InputError
from safeshare.surveillance.choices import (
    Approach,
    Layout,
    ReleaseEngine,
    ReleaseFormat,
    RiskName,
    ZeroWindows,
)

surveil_app = typer.Typer(
    help="Surveillance release policies: Monte Carlo PK risk forecasts, policy search, weekly selection.",
    no_args_is_help=True,
)


PopOpt = Annotated[
    Path,
    typer.Option(
        "--population-table",
        help="Population table: people per region and cell (region,age,race,sex,ethnicity,count).",
    ),
]
OutOpt = Annotated[
    Path, typer.Option("--out", help="Output directory (published atomically; a new or safeshare folder).")
]
KOpt = Annotated[int, typer.Option("--k", help="A record is at risk in a group of fewer than k (PK_k).")]
LagOpt = Annotated[int, typer.Option("--lag", help="Lagging window L in periods (diagnosed in the last L).")]
SeedOpt = Annotated[
    int, typer.Option("--seed", help="Integer seed (>= 0) of the simulations (reproducible forecasts).")
]
ThrOpt = Annotated[float, typer.Option("--threshold", help="Largest acceptable PK_k upper quantile.")]
QOpt = Annotated[float, typer.Option("--quantile", help="Quantile of PK_k compared with the threshold.")]
VolOpt = Annotated[
    str | None,
    typer.Option(
        "--volumes",
        help="Comma-separated case volumes (each >= 1) to search; default 10,11,20,50,75,150,300,500,750 "
        "(cumulative counts 11 .. 50000 for the marketer risk).",
    ),
]
KsOpt = Annotated[
    str, typer.Option("--k", help="k of PK_k; several in one run, e.g. 5,11,20 (the supplement's).")
]
CatOpt = Annotated[
    str | None,
    typer.Option(
        "--categories",
        help="Regions by population size: 'paper' (<1,000; 1,000-50,000; 50,000-100,000; "
        "100,000-1,000,000; >1,000,000) or edges such as 10000,100000; a policy is acceptable at a "
        "volume when it is in every region of the category that can hold it.",
    ),
]
WeeklyOpt = Annotated[bool, typer.Option("--weekly", help="One release per week, not per day.")]
PriorityOpt = Annotated[str, typer.Option("--priority", help="Dimensions to keep granular first.")]
LayoutOpt = Annotated[Layout, typer.Option("--layout", help="Case series layout: long or jhu.")]
PlotsOpt = Annotated[bool, typer.Option("--plots/--no-plots", help="Write the PNG figures.")]
HierOpt = Annotated[
    str | None,
    typer.Option(
        "--hierarchies",
        help="YAML/JSON policy space (dimensions, leaves, levels with codes); default: the 96 policies.",
    ),
]
ZeroOpt = Annotated[
    ZeroWindows,
    typer.Option(
        "--zero-windows",
        help="drop (default, the paper's code) or keep the lagging windows of no cases in the weekly "
        "minimum of daily releases.",
    ),
]
RegionsOpt = Annotated[str | None, typer.Option("--regions", help="Comma-separated regions (default all).")]
RegionOpt = Annotated[str, typer.Option("--region", help="Region of the population table.")]
DailyCasesOpt = Annotated[Path, typer.Option("--cases", help="Daily case series (its weeks are scheduled).")]


def _criterion(
    threshold: ThrOpt = SURVEILLANCE_THRESHOLD,
    quantile: QOpt = SURVEILLANCE_QUANTILE,
    simulations: SimulationsOption = SURVEILLANCE_SIMULATIONS,
    seed: SeedOpt = 0,
) -> Keywords:
    """The acceptability criterion of a policy (search, select, evaluate): the ``quantile`` of PK_k
    over ``simulations`` Monte Carlo runs is at most ``threshold``."""
    return {"threshold": threshold, "quantile": quantile, "simulations": simulations, "seed": seed}


def _weeks(
    volumes: VolOpt = None,
    lag: LagOpt = SURVEILLANCE_LAG,
    weekly: WeeklyOpt = False,
    priority: PriorityOpt = "age",
) -> Keywords:
    """How the weeks of a case series are scheduled (select, evaluate): the case volumes searched, the
    lagging window, daily or weekly releases, the dimensions kept granular first."""
    return {"volumes": _volumes(volumes), "lag": lag, "weekly": weekly, "priority": csv_list(priority)}


#: The commands that take the criterion's options as ``criterion``, the scheduling options as ``weeks``.
takes_criterion = options_of(_criterion, "criterion")
takes_weeks = options_of(_weeks, "weeks")


def _categories(text: str | None) -> list[int] | str | None:
    if text is None or text.strip() == "paper":
        return text.strip() if text is not None else None
    return _ints(text, "--categories")


def _volumes(text: str | None) -> list[int] | None:
    return _ints(text, "--volumes") if text is not None else None


def _ints(text: str, option: str) -> list[int]:
    """Comma-separated whole numbers (how many and their range are checked by the use case)."""
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise InputError(f"{option}: comma-separated whole numbers are required, got {text!r}") from None


def _emit(result: Any, lines: list[str], as_json: bool, quiet: bool) -> None:
    """The result's ``to_dict()`` with ``--json``, nothing with ``--quiet``, else its lines."""

    def show() -> None:
        from safeshare.console import out

        for line in lines:
            out.print(line, highlight=False, markup=False, soft_wrap=True)

    emit(result.to_dict(), as_json, quiet, show)


@surveil_app.command("simulate")
def simulate_command(
    population_table: PopOpt,
    region: RegionOpt,
    cases: Annotated[Path, typer.Option("--cases", help="Case series (new cases per period).")],
    policy: Annotated[str, typer.Option("--policy", help="Policy code, e.g. 1C*e.")],
    out_dir: OutOpt,
    k: KOpt = SMALL_CELL,
    lag: LagOpt = SURVEILLANCE_LAG,
    simulations: SimulationsOption = SURVEILLANCE_SIMULATIONS,
    seed: SeedOpt = 0,
    layout: LayoutOpt = "long",
    compare: Annotated[
        str,
        typer.Option(
            "--compare",
            help="Comma-separated further policies: bands.csv/bands.png, the PK band over time per policy "
            "(the same draws for every policy).",
        ),
    ] = "",
    hierarchies: HierOpt = None,
    plots: PlotsOpt = True,
    quiet: QuietOption = False,
    as_json: JsonOption = False,
) -> None:
    """Forecast PK_k (and marketer risk) per period of releasing a case series under one policy."""
    from safeshare import api

    result = api.surveil_simulate(
        population_table=population_table,
        region=region,
        cases=cases,
        policy=policy,
        k=k,
        lag=lag,
        simulations=simulations,
        seed=seed,
        layout=layout,
        compare=csv_list(compare),
        hierarchies=hierarchies,
        out=out_dir,
        plots=plots,
        monitor=ConsoleMonitor(quiet or as_json),
    )
    _emit(result, [f"wrote {out_dir / 'simulation.csv'} ({result.lines()[0]})"], as_json, quiet)


@surveil_app.command("search")
@takes_criterion
def search_command(
    population_table: PopOpt,
    out_dir: OutOpt,
    regions: RegionsOpt = None,
    categories: CatOpt = None,
    volumes: VolOpt = None,
    k: KsOpt = str(SMALL_CELL),
    *,
    criterion: Keywords,
    risk: Annotated[
        RiskName,
        typer.Option(
            "--risk",
            help="pk (PK_k of a window of cases) or marketer (the amortized risk of all the records "
            "released so far; volumes are cumulative counts).",
        ),
    ] = "pk",
    hierarchies: HierOpt = None,
    plots: PlotsOpt = True,
    quiet: QuietOption = False,
    as_json: JsonOption = False,
) -> None:
    """The acceptable policies per case volume in every region of a category (the Fig. 3 table)."""
    from safeshare import api

    result = api.surveil_search(
        population_table=population_table,
        regions=csv_list(regions) or None,
        categories=_categories(categories),
        volumes=_volumes(volumes),
        risk=risk,
        k=_ints(k, "--k"),
        **criterion,
        hierarchies=hierarchies,
        out=out_dir,
        plots=plots,
        monitor=ConsoleMonitor(quiet or as_json),
    )
    _emit(result, result.lines(), as_json, quiet)


@surveil_app.command("select")
@takes_weeks
@takes_criterion
def select_command(
    population_table: PopOpt,
    region: RegionOpt,
    cases: DailyCasesOpt,
    out_dir: OutOpt,
    forecasts: Annotated[
        Path | None, typer.Option("--forecasts", help="Forecast Hub file; omitted: perfect forecasts.")
    ] = None,
    forecast_value: Annotated[
        str, typer.Option("--forecast-value", help="'point' or a quantile level such as 0.5.")
    ] = "point",
    *,
    weeks: Keywords,
    k: KOpt = SMALL_CELL,
    criterion: Keywords,
    layout: LayoutOpt = "long",
    zero_windows: ZeroOpt = "drop",
    approach: Annotated[
        Approach,
        typer.Option(
            "--approach",
            help="window (PK of each lagging window, a policy per week from the forecast) or cumulative "
            "(the supplement's marketer approach: all records released so far, granularity never "
            "decreasing, dates exact).",
        ),
    ] = "window",
    categories: CatOpt = None,
    hierarchies: HierOpt = None,
    quiet: QuietOption = False,
    as_json: JsonOption = False,
) -> None:
    """Choose the policy of each Sunday-Saturday week from the forecast (schedule.csv)."""
    from safeshare import api

    result = api.surveil_select(
        population_table=population_table,
        region=region,
        cases=cases,
        forecasts=forecasts,
        forecast_value=forecast_value,
        approach=approach,
        categories=_categories(categories),
        **weeks,
        k=k,
        **criterion,
        layout=layout,
        zero_windows=zero_windows,
        hierarchies=hierarchies,
        out=out_dir,
        monitor=ConsoleMonitor(quiet or as_json),
    )
    _emit(result, result.lines(), as_json, quiet)


@surveil_app.command("evaluate")
@takes_weeks
@takes_criterion
def evaluate_command(
    population_table: PopOpt,
    cases: DailyCasesOpt,
    forecasts: Annotated[Path, typer.Option("--forecasts", help="Forecast Hub file (1 wk ahead inc case).")],
    out_dir: OutOpt,
    regions: RegionsOpt = None,
    categories: CatOpt = None,
    *,
    weeks: Keywords,
    k: KsOpt = str(SMALL_CELL),
    criterion: Keywords,
    layout: LayoutOpt = "long",
    zero_windows: ZeroOpt = "drop",
    case_studies: Annotated[
        str | None,
        typer.Option(
            "--case-studies",
            help="Regions drawn as case studies (Fig. 4) with --categories (without it: every region).",
        ),
    ] = None,
    hierarchies: HierOpt = None,
    plots: PlotsOpt = True,
    quiet: QuietOption = False,
    as_json: JsonOption = False,
) -> None:
    """Select a policy per week from the forecasts and evaluate it on the realized cases (Table 2; with
    --categories, in the paper's form: per population-size category, daily and weekly)."""
    from safeshare import api

    result = api.surveil_evaluate(
        population_table=population_table,
        cases=cases,
        forecasts=forecasts,
        regions=csv_list(regions) or None,
        categories=_categories(categories),
        case_studies=csv_list(case_studies) or None,
        **weeks,
        k=_ints(k, "--k"),
        **criterion,
        layout=layout,
        zero_windows=zero_windows,
        hierarchies=hierarchies,
        out=out_dir,
        plots=plots,
        monitor=ConsoleMonitor(quiet or as_json),
    )
    _emit(result, result.lines(), as_json, quiet)


@surveil_app.command("release")
def release_command(
    population_table: PopOpt,
    cases_records: Annotated[
        Path, typer.Option("--cases-records", help="Person-level records region,date,age,race,sex,ethnicity.")
    ],
    out_dir: OutOpt,
    policies: Annotated[
        Path | None, typer.Option("--policies", help="Weekly schedule (schedule.csv of surveil select).")
    ] = None,
    policy: Annotated[str | None, typer.Option("--policy", help="One policy code for every period.")] = None,
    k: KOpt = SMALL_CELL,
    weekly: WeeklyOpt = False,
    keep: Annotated[
        str, typer.Option("--keep", help="Comma-separated extra columns to release (none by default).")
    ] = "",
    engine: Annotated[
        ReleaseEngine, typer.Option("--engine", help="The engine that reads and writes the records.")
    ] = "memory",
    fmt: Annotated[ReleaseFormat, typer.Option("--format", help="The release files' format.")] = "csv",
    hierarchies: HierOpt = None,
    custodian_log: Annotated[
        Path | None,
        typer.Option(
            "--custodian-log",
            help="A JSON file OUTSIDE --out for the custodian only: every period's records received, "
            "released and suppressed (never published).",
        ),
    ] = None,
    series: Annotated[
        Path | None,
        typer.Option(
            "--series",
            help="The series ledger (series.jsonl) of the series' latest release, when --out is another "
            "folder; by default --out's own ledger continues the series.",
        ),
    ] = None,
    new_series: Annotated[
        bool, typer.Option("--new-series", help="Start a new series (ignore --out's series ledger).")
    ] = False,
    on_conflict: Annotated[
        str,
        typer.Option(
            "--on-conflict",
            help="A release that reveals a cell with the earlier ones: refuse it (default), or suppress "
            "further (keep earlier files, withhold cells) or coarsen its periods.",
        ),
    ] = "refuse",
    public_totals: Annotated[
        Path | None,
        typer.Option(
            "--public-totals",
            help="Case counts that are public elsewhere (region,date,new_cases): the release must not "
            "reveal, with them, the records it suppresses.",
        ),
    ] = None,
    rules: Annotated[
        str | None,
        typer.Option(
            "--rules",
            help="A rule set instead of population-bin suppression: cdc (CDC's public-use rules: "
            "county population 20,000, subpopulation 220, share cap 50%, k = 11, location k = 1,000, "
            "complementary suppression) or a YAML file changing its thresholds.",
        ),
    ] = None,
    quiet: QuietOption = False,
    as_json: JsonOption = False,
) -> None:
    """Release each period's case records under its week's policy: generalize, suppress records whose
    population bin has fewer than k people, write through the engine, verify every file, check it
    against every earlier release of the series, publish the directory and its series ledger
    atomically. ``--json`` prints release.json (nothing of the records kept back)."""
    from safeshare import api

    result = api.surveil_release(
        population_table=population_table,
        cases_records=cases_records,
        out=out_dir,
        policies=policies,
        policy=policy,
        k=k,
        weekly=weekly,
        keep=csv_list(keep),
        engine=engine,
        fmt=fmt,
        hierarchies=hierarchies,
        custodian_log=custodian_log,
        series=series,
        new_series=new_series,
        on_conflict=on_conflict,
        public_totals=public_totals,
        rules=rules,
    )
    _emit(result, result.lines(), as_json, quiet)
