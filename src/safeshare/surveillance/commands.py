"""The ``safeshare surveil`` commands: simulate, search, select, evaluate (docs/surveillance.md).

Every command writes CSV + JSON (+ a PNG plot) into ``--out``; bad input raises
:class:`~safeshare.errors.InputError` subclasses, which the CLI turns into one line
on stderr and exit status 2, as for ``anonymize``.

Stable interface for scripts::

    safeshare surveil simulate --population POP.csv --region R --cases CASES.csv --policy CODE \\
        --k 11 --lag L --sims S --seed X --out DIR

writes ``DIR/simulation.csv`` with columns ``period, cases, mean, lower, upper``
(lower/upper: the 2.5% and 97.5% quantiles of PK_k over the simulations).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import pandas as pd
import typer
from rich.console import Console
from rich.progress import Progress

from safeshare.errors import InputError
from safeshare.surveillance.inputs import (
    CaseSeries,
    Population,
    check_cases_fit,
    read_case_series,
    read_forecasts,
    read_jhu_series,
    read_population,
)
from safeshare.surveillance.policies import default_space
from safeshare.surveillance.search import DO_NOT_SHARE, PolicySearch, RiskCriterion, search_policies
from safeshare.surveillance.select import case_study_plot, evaluate, select_weekly, static_grouping
from safeshare.surveillance.simulate import simulate_series

surveil_app = typer.Typer(
    help="Surveillance release policies: Monte Carlo PK risk forecasts, policy search, weekly selection.",
    no_args_is_help=True,
)
out = Console(highlight=False)
err = Console(stderr=True, highlight=False)

DEFAULT_VOLUMES = "10,11,20,50,75,150,300,500,750"

PopOpt = Annotated[
    Path, typer.Option("--population", help="Population table region,age,race,sex,ethnicity,count.")
]
OutOpt = Annotated[Path, typer.Option("--out", help="Output directory (created).")]
KOpt = Annotated[int, typer.Option("--k", help="A record is at risk in a group of fewer than k (PK_k).")]
LagOpt = Annotated[int, typer.Option("--lag", help="Lagging window L in periods (diagnosed in the last L).")]
SimsOpt = Annotated[int, typer.Option("--sims", help="Number of Monte Carlo simulations.")]
SeedOpt = Annotated[int, typer.Option("--seed", help="Seed of the simulations (reproducible forecasts).")]
ThrOpt = Annotated[float, typer.Option("--threshold", help="Largest acceptable PK_k upper quantile.")]
QOpt = Annotated[float, typer.Option("--quantile", help="Quantile of PK_k compared with the threshold.")]
VolOpt = Annotated[str, typer.Option("--volumes", help="Comma-separated case volumes to search.")]


def _cases(path: Path, layout: str) -> dict[str, CaseSeries]:
    if layout == "long":
        return read_case_series(path)
    if layout == "jhu":
        return read_jhu_series(path)
    raise InputError(f"--layout: 'long' or 'jhu', got {layout!r}")


def _series(cases: dict[str, CaseSeries], region: str, population: Population, path: Path) -> CaseSeries:
    if region not in cases:
        raise InputError(f"{path}: region {region!r} has no case series")
    series = cases[region]
    check_cases_fit(series, population, str(path))
    return series


def _int_list(text: str, option: str) -> list[int]:
    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise InputError(f"{option}: comma-separated whole numbers are required, got {text!r}") from None
    if not values or min(values) < 0:
        raise InputError(f"{option}: at least one number >= 0 is required, got {text!r}")
    return values


def _write_json(path: Path, doc: dict[str, Any]) -> None:
    path.write_text(json.dumps(doc, indent=2, default=str) + "\n")


def _plot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _search(
    population: Population, regions: list[str], volumes: list[int], crit: RiskCriterion, quiet: bool = False
) -> PolicySearch:
    if quiet or not err.is_terminal:
        return search_policies(population, regions, volumes, crit)
    with Progress(console=err, transient=True) as bar:
        task = bar.add_task("searching policies", total=len(set(volumes)))
        return search_policies(
            population, regions, volumes, crit, progress=lambda i, n: bar.update(task, completed=i)
        )


@surveil_app.command("simulate")
def simulate_command(
    population: PopOpt,
    region: Annotated[str, typer.Option("--region", help="Region of the population table.")],
    cases: Annotated[Path, typer.Option("--cases", help="Case series (new cases per period).")],
    policy: Annotated[str, typer.Option("--policy", help="Policy code, e.g. 1C*e.")],
    out_dir: OutOpt,
    k: KOpt = 11,
    lag: LagOpt = 1,
    sims: SimsOpt = 1000,
    seed: SeedOpt = 0,
    layout: Annotated[str, typer.Option("--layout", help="Case series layout: long or jhu.")] = "long",
) -> None:
    """Forecast PK_k (and marketer risk) per period of releasing a case series under one policy."""
    space = default_space()
    node = space.parse(policy)
    pop = read_population(population, space)
    pop.region_index(region)
    series = _series(_cases(cases, layout), region, pop, cases)
    risk = simulate_series(
        pop.of(region), series.cases, space.grouping(node), k=k, lag=lag, sims=sims, seed=seed
    )
    mean, lower, upper = risk.band("pk")
    m_mean, m_lower, m_upper = risk.band("marketer")
    out_dir.mkdir(parents=True, exist_ok=True)
    frame = pd.DataFrame(
        {
            "period": series.dates.astype(str),
            "cases": series.cases,
            "mean": mean,
            "lower": lower,
            "upper": upper,
        }
    )
    frame.to_csv(out_dir / "simulation.csv", index=False, lineterminator="\n")
    pd.DataFrame(
        {
            "period": series.dates.astype(str),
            "cases": series.cases,
            "mean": m_mean,
            "lower": m_lower,
            "upper": m_upper,
        }
    ).to_csv(out_dir / "marketer.csv", index=False, lineterminator="\n")
    _write_json(
        out_dir / "simulation.json",
        {
            "region": region,
            "policy": policy,
            "k": k,
            "lag": lag,
            "sims": sims,
            "seed": seed,
            "periods": len(series.cases),
            "max_upper": float(upper.max()) if len(upper) else 0.0,
            "files": ["simulation.csv", "marketer.csv", "simulation.png"],
        },
    )
    plt = _plot()
    fig, ax = plt.subplots(figsize=(9, 3.5))
    x = np.arange(len(mean))
    ax.fill_between(x, lower, upper, alpha=0.3, label="95% range")
    ax.plot(x, mean, label=f"mean PK{k}")
    ax.set_xlabel("period")
    ax.set_ylabel(f"PK{k}")
    ax.set_title(f"{region}, policy {policy}, lag {lag}, {sims} simulations")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out_dir / "simulation.png", dpi=100)
    plt.close(fig)
    out.print(
        f"wrote {out_dir / 'simulation.csv'} ({len(frame)} periods, "
        f"max upper PK{k} {frame['upper'].max():.4f})"
    )


@surveil_app.command("search")
def search_command(
    population: PopOpt,
    out_dir: OutOpt,
    regions: Annotated[
        str | None, typer.Option("--regions", help="Comma-separated regions (default all).")
    ] = None,
    volumes: VolOpt = DEFAULT_VOLUMES,
    k: KOpt = 11,
    threshold: ThrOpt = 0.01,
    quantile: QOpt = 0.975,
    sims: SimsOpt = 1000,
    seed: SeedOpt = 0,
) -> None:
    """The acceptable policies per case volume in every listed region (Fig. 3 table)."""
    space = default_space()
    pop = read_population(population, space)
    region_list = [r.strip() for r in regions.split(",")] if regions else list(pop.regions)
    crit = RiskCriterion(k=k, threshold=threshold, quantile=quantile, sims=sims, seed=seed)
    result = _search(pop, region_list, _int_list(volumes, "--volumes"), crit)
    out_dir.mkdir(parents=True, exist_ok=True)
    minimum = result.min_volume()
    table = pd.DataFrame(
        [{"policy": space.format(n), "min_volume": v} for n, v in minimum.items()]
    ).sort_values(["min_volume", "policy"], na_position="last")
    table["min_volume"] = table["min_volume"].astype("Int64")
    table.to_csv(out_dir / "search.csv", index=False, lineterminator="\n")
    bands = result.bands()
    pd.DataFrame([{**b, "minimal": " ".join(b.get("minimal", []))} for b in bands]).to_csv(
        out_dir / "bands.csv", index=False, lineterminator="\n"
    )
    _write_json(
        out_dir / "search.json",
        {
            "regions": region_list,
            "criterion": crit.__dict__,
            "elapsed_s": round(result.elapsed_s, 3),
            "volumes": [
                {
                    "volume": r.volume,
                    "checked": r.checked,
                    "acceptable": len(r.acceptable),
                    "minimal": [space.format(n) for n in r.minimal],
                    "best": space.format(r.best) if r.best is not None else DO_NOT_SHARE,
                }
                for r in result.results
            ],
        },
    )
    plt = _plot()
    vols = [r.volume for r in result.results]
    codes = [space.format(n) for n in space.policies()]
    grid = np.array(
        [[1.0 if n in set(r.acceptable) else 0.0 for r in result.results] for n in space.policies()]
    )
    fig, ax = plt.subplots(figsize=(1.0 + 0.6 * len(vols), 14))
    ax.imshow(grid, aspect="auto", cmap="Greens", vmin=0, vmax=1)
    ax.set_xticks(range(len(vols)), [str(v) for v in vols])
    ax.set_yticks(range(len(codes)), codes, fontsize=6)
    ax.set_xlabel("new cases in the window")
    ax.set_title(f"acceptable policies (PK{k} q{quantile} <= {threshold})", fontsize=9)
    fig.tight_layout()
    fig.savefig(out_dir / "search.png", dpi=100)
    plt.close(fig)
    for b in bands:
        out.print(
            f"{b['from']:>7} .. {b['to'] if b['to'] is not None else '':<7} "
            f"{b['policy']:<14} ({b['acceptable']} acceptable)"
        )
    out.print(f"searched {len(region_list)} region(s) x {len(vols)} volume(s) in {result.elapsed_s:.2f} s")


@surveil_app.command("select")
def select_command(
    population: PopOpt,
    region: Annotated[str, typer.Option("--region", help="Region of the population table.")],
    cases: Annotated[Path, typer.Option("--cases", help="Daily case series (its weeks are scheduled).")],
    out_dir: OutOpt,
    forecasts: Annotated[
        Path | None, typer.Option("--forecasts", help="Forecast Hub file; omitted: perfect forecasts.")
    ] = None,
    forecast_value: Annotated[
        str, typer.Option("--forecast-value", help="'point' or a quantile level such as 0.5.")
    ] = "point",
    volumes: VolOpt = DEFAULT_VOLUMES,
    lag: LagOpt = 1,
    weekly: Annotated[bool, typer.Option("--weekly", help="Weekly releases instead of daily.")] = False,
    priority: Annotated[str, typer.Option("--priority", help="Dimensions to keep granular first.")] = "age",
    k: KOpt = 11,
    threshold: ThrOpt = 0.01,
    quantile: QOpt = 0.975,
    sims: SimsOpt = 1000,
    seed: SeedOpt = 0,
    layout: Annotated[str, typer.Option("--layout", help="Case series layout: long or jhu.")] = "long",
) -> None:
    """Choose the policy of each Sunday-Saturday week from the forecast (schedule.csv)."""
    space = default_space()
    pop = read_population(population, space)
    pop.region_index(region)
    series = _series(_cases(cases, layout), region, pop, cases)
    fc = read_forecasts(forecasts) if forecasts is not None else None
    crit = RiskCriterion(k=k, threshold=threshold, quantile=quantile, sims=sims, seed=seed)
    usable = [v for v in _int_list(volumes, "--volumes") if v <= pop.totals[region]]
    search = _search(pop, [region], usable, crit)
    prio = [p.strip() for p in priority.split(",") if p.strip()]
    sched = select_weekly(search, series, fc, lag=lag, weekly=weekly, priority=prio, value=forecast_value)
    out_dir.mkdir(parents=True, exist_ok=True)
    frame = pd.DataFrame(
        {
            "week_start": sched.week_starts.astype(str),
            "volume": sched.volumes,
            "policy": [space.format(p) if p else DO_NOT_SHARE for p in sched.policies],
        }
    )
    frame.to_csv(out_dir / "schedule.csv", index=False, lineterminator="\n")
    _write_json(
        out_dir / "schedule.json",
        {
            "region": region,
            "forecasts": str(forecasts) if forecasts else "perfect (realized counts)",
            "lag": lag,
            "weekly": weekly,
            "priority": prio,
            "criterion": crit.__dict__,
            "weeks": frame.to_dict(orient="records"),
        },
    )
    out.print(frame.to_string(index=False))


@surveil_app.command("evaluate")
def evaluate_command(
    population: PopOpt,
    cases: Annotated[Path, typer.Option("--cases", help="Daily case series.")],
    forecasts: Annotated[Path, typer.Option("--forecasts", help="Forecast Hub file (1 wk ahead inc case).")],
    out_dir: OutOpt,
    regions: Annotated[
        str | None, typer.Option("--regions", help="Comma-separated regions (default all).")
    ] = None,
    volumes: VolOpt = DEFAULT_VOLUMES,
    lag: LagOpt = 1,
    weekly: Annotated[bool, typer.Option("--weekly", help="Weekly releases instead of daily.")] = False,
    priority: Annotated[str, typer.Option("--priority", help="Dimensions to keep granular first.")] = "age",
    k: KOpt = 11,
    threshold: ThrOpt = 0.01,
    quantile: QOpt = 0.975,
    sims: SimsOpt = 1000,
    seed: SeedOpt = 0,
    layout: Annotated[str, typer.Option("--layout", help="Case series layout: long or jhu.")] = "long",
) -> None:
    """Select a policy per week from the forecasts and evaluate it on the realized cases (Table 2)."""
    space = default_space()
    pop = read_population(population, space)
    series_all = _cases(cases, layout)
    fc = read_forecasts(forecasts)
    region_list = [r.strip() for r in regions.split(",")] if regions else list(pop.regions)
    prio = [p.strip() for p in priority.split(",") if p.strip()]
    crit = RiskCriterion(k=k, threshold=threshold, quantile=quantile, sims=sims, seed=seed)
    vols = _int_list(volumes, "--volumes")
    out_dir.mkdir(parents=True, exist_ok=True)
    rows = []
    periods = []
    for region in region_list:
        series = _series(series_all, region, pop, cases)
        usable = [v for v in vols if v <= pop.totals[region]]
        search = _search(pop, [region], usable, crit)
        dyn_sched = select_weekly(search, series, fc, lag=lag, weekly=weekly, priority=prio)
        perf_sched = select_weekly(search, series, None, lag=lag, weekly=weekly, priority=prio)
        dyn = evaluate(pop, series, dyn_sched, search, lag=lag, weekly=weekly)
        perf = evaluate(pop, series, perf_sched, search, lag=lag, weekly=weekly)
        stat = evaluate(pop, series, static_grouping(pop), search, lag=lag, weekly=weekly)
        rows.append(
            {
                "region": region,
                "people": pop.totals[region],
                "releases": len(dyn.frame),
                "static": round(stat.share_met, 4),
                "dynamic": round(dyn.share_met, 4),
                "perfect_forecast": round(perf.share_met, 4),
            }
        )
        if not weekly:
            case_study_plot(
                out_dir / f"case_study_{region}.png", series, dyn_sched, perf_sched, dyn, perf, search, lag
            )
        for name, ev in (("dynamic", dyn), ("perfect_forecast", perf), ("static", stat)):
            periods.append(ev.frame.assign(region=region, strategy=name))
        pd.DataFrame(
            {
                "week_start": dyn_sched.week_starts.astype(str),
                "forecast_volume": dyn_sched.volumes,
                "policy": [space.format(p) if p else DO_NOT_SHARE for p in dyn_sched.policies],
                "actual_volume": perf_sched.volumes,
                "policy_perfect": [space.format(p) if p else DO_NOT_SHARE for p in perf_sched.policies],
            }
        ).to_csv(out_dir / f"schedule_{region}.csv", index=False, lineterminator="\n")
    table = pd.DataFrame(rows)
    table.to_csv(out_dir / "evaluation.csv", index=False, lineterminator="\n")
    pd.concat(periods).to_csv(out_dir / "periods.csv", index=False, lineterminator="\n")
    _write_json(
        out_dir / "evaluation.json",
        {"lag": lag, "weekly": weekly, "priority": prio, "criterion": crit.__dict__, "regions": rows},
    )
    out.print(table.to_string(index=False))


@surveil_app.command("release")
def release_command(
    population: PopOpt,
    cases_records: Annotated[
        Path, typer.Option("--cases-records", help="Person-level records region,date,age,race,sex,ethnicity.")
    ],
    out_dir: Annotated[Path, typer.Option("--out", help="Output directory (published atomically).")],
    policies: Annotated[
        Path | None, typer.Option("--policies", help="Weekly schedule (schedule.csv of surveil select).")
    ] = None,
    policy: Annotated[str | None, typer.Option("--policy", help="One policy code for every period.")] = None,
    k: KOpt = 11,
    weekly: Annotated[bool, typer.Option("--weekly", help="One release per week, not per day.")] = False,
    keep: Annotated[
        str, typer.Option("--keep", help="Comma-separated extra columns to release (none by default).")
    ] = "",
    engine: Annotated[
        str, typer.Option("--engine", help="memory | duckdb: reads and writes the records.")
    ] = ("memory"),
    fmt: Annotated[str, typer.Option("--format", help="csv | parquet: the release files' format.")] = "csv",
) -> None:
    """Release each period's case records under its week's policy: generalize, suppress records whose
    population bin has fewer than k people, write through the engine, verify every file, publish the
    directory atomically."""
    from safeshare.data.engines.factory import make_engine
    from safeshare.data.source import TableSource
    from safeshare.io import OutputDirectory
    from safeshare.surveillance.release import read_schedule, release_cases

    if (policies is None) == (policy is None):
        raise InputError("give exactly one of --policies SCHEDULE.csv and --policy CODE")
    if engine not in ("memory", "duckdb"):
        raise InputError(f"--engine: memory or duckdb, got {engine!r}")
    if fmt not in ("csv", "parquet"):
        raise InputError(f"--format: csv or parquet, got {fmt!r}")
    space = default_space()
    node = space.parse(policy) if policy is not None else None
    OutputDirectory(out_dir).preflight()
    pop = read_population(population, space)
    schedule = node if node is not None else read_schedule(policies, space)  # type: ignore[arg-type]
    keep_cols = [c.strip() for c in keep.split(",") if c.strip()]
    with make_engine(engine, TableSource(cases_records)) as eng:
        result = release_cases(
            pop,
            eng,
            schedule,
            out_dir,
            k,
            weekly,
            keep_cols,
            str(cases_records),
            fmt,  # type: ignore[arg-type]
        )
    doc = result.to_dict()
    for p in result.periods:
        shown = p.file or "nothing (do not share)"
        out.print(f"{p.period}  {p.policy:>12}  {p.records_out}/{p.records_in} records  -> {shown}")
    out.print(
        f"{doc['records_out']} of {doc['records_in']} records released ({doc['suppressed']} suppressed), "
        f"every file verified -> {out_dir}"
    )
