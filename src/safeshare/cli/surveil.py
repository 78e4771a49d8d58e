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
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import pandas as pd
import typer
from rich.console import Console
from rich.progress import Progress

from safeshare.cli.common import csv_list
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
from safeshare.surveillance.policies import PolicySpace, load_space
from safeshare.surveillance.search import (
    DO_NOT_SHARE,
    PolicySearch,
    RiskCriterion,
    categorize,
    search_policies,
)
from safeshare.surveillance.select import case_study_plot, evaluate, select_weekly, static_grouping
from safeshare.surveillance.simulate import draw_series, seeded, series_risk

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
WeeklyOpt = Annotated[bool, typer.Option("--weekly", help="Weekly releases instead of daily.")]
PriorityOpt = Annotated[str, typer.Option("--priority", help="Dimensions to keep granular first.")]
LayoutOpt = Annotated[str, typer.Option("--layout", help="Case series layout: long or jhu.")]
HierOpt = Annotated[
    Path | None,
    typer.Option(
        "--hierarchies",
        help="YAML/JSON policy space (dimensions, leaves, levels with codes); default: the 96 policies.",
    ),
]


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


@contextmanager
def _progress(label: str, total: int) -> Iterator[Callable[[int], None]]:
    """A progress bar on stderr (nothing when stderr is not a terminal); yields ``update(done)``."""
    if not err.is_terminal:
        yield lambda done: None
        return
    with Progress(console=err, transient=True) as bar:
        task = bar.add_task(label, total=total)
        yield lambda done: bar.update(task, completed=done)


def _search(
    population: Population, regions: list[str], volumes: list[int], crit: RiskCriterion, label: str = ""
) -> PolicySearch:
    with _progress(f"searching policies{label}", len(set(volumes))) as update:
        return search_policies(population, regions, volumes, crit, progress=lambda i, n: update(i))


def _policy_bands(
    out_dir: Path,
    space: PolicySpace,
    draw: Any,
    series: CaseSeries,
    nodes: list[Any],
    k: int,
    lag: int,
    title: str,
) -> None:
    """bands.csv (period, policy, cases, mean, lower, upper) and bands.png: the PK_k band over time of
    each policy, all from the same draws."""
    frames = []
    with _progress("policies", len(nodes)) as update:
        for i, node in enumerate(dict.fromkeys(nodes)):
            mean, lower, upper = series_risk(draw, space.grouping(node), k, lag).band("pk")
            frames.append(
                pd.DataFrame(
                    {
                        "period": series.dates.astype(str),
                        "policy": space.format(node),
                        "cases": series.cases,
                        "mean": mean,
                        "lower": lower,
                        "upper": upper,
                    }
                )
            )
            update(i + 1)
    table = pd.concat(frames, ignore_index=True)
    table.to_csv(out_dir / "bands.csv", index=False, lineterminator="\n")
    plt = _plot()
    fig, ax = plt.subplots(figsize=(9, 4))
    x = np.arange(len(series.cases))
    for code, frame in table.groupby("policy", sort=False):
        ax.fill_between(x, frame["lower"], frame["upper"], alpha=0.2)
        ax.plot(x, frame["mean"], label=str(code))
    ax.set_xlabel("period")
    ax.set_ylabel(f"PK{k} (mean and 95% range)")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7, ncols=2)
    fig.tight_layout()
    fig.savefig(out_dir / "bands.png", dpi=100)
    plt.close(fig)


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
) -> None:
    """Forecast PK_k (and marketer risk) per period of releasing a case series under one policy."""
    space = load_space(hierarchies)
    node = space.parse(policy)
    others = [space.parse(c) for c in csv_list(compare)]
    pop = read_population(population, space)
    pop.region_index(region)
    series = _series(_cases(cases, layout), region, pop, cases)
    with _progress("drawing the cases", 1) as update:
        # one draw for every policy (common random numbers): the same as simulate_series for `policy`
        draw = draw_series(pop.of(region), series.cases, sims, seeded(seed))
        update(1)
    risk = series_risk(draw, space.grouping(node), k, lag)
    if others:
        out_dir.mkdir(parents=True, exist_ok=True)
        _policy_bands(
            out_dir, space, draw, series, [node, *others], k, lag, f"{region}, lag {lag}, {sims} simulations"
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
            "compare": [space.format(n) for n in others],
            "files": ["simulation.csv", "marketer.csv", "simulation.png"]
            + (["bands.csv", "bands.png"] if others else []),
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
    categories: Annotated[
        str | None,
        typer.Option(
            "--categories",
            help="Population-size edges, e.g. 10000,100000: one search per category of regions "
            "(<10000, 10000-100000, >=100000), each over the volumes its smallest region can have.",
        ),
    ] = None,
    volumes: VolOpt = DEFAULT_VOLUMES,
    k: KOpt = 11,
    threshold: ThrOpt = 0.01,
    quantile: QOpt = 0.975,
    sims: SimsOpt = 1000,
    seed: SeedOpt = 0,
    hierarchies: HierOpt = None,
) -> None:
    """The acceptable policies per case volume in every region of a category (the Fig. 3 table)."""
    space = load_space(hierarchies)
    pop = read_population(population, space)
    region_list = [r.strip() for r in regions.split(",")] if regions else list(pop.regions)
    for region in region_list:
        pop.region_index(region)
    crit = RiskCriterion(k=k, threshold=threshold, quantile=quantile, sims=sims, seed=seed)
    vols = _int_list(volumes, "--volumes")
    if categories is None:
        groups = {"all": region_list}
    else:
        by_size = categorize(pop, _int_list(categories, "--categories"))
        groups = {name: [r for r in members if r in region_list] for name, members in by_size.items()}
        groups = {name: members for name, members in sorted(groups.items(), key=_category_order) if members}
    results: dict[str, PolicySearch] = {}
    for name, members in groups.items():
        usable = [v for v in vols if v <= min(pop.totals[r] for r in members)]
        if not usable:
            raise InputError(f"--volumes: every volume exceeds the people of category {name!r} ({members})")
        label = f" ({name})" if categories is not None else ""
        results[name] = _search(pop, members, usable, crit, label)
    out_dir.mkdir(parents=True, exist_ok=True)
    codes = [space.format(n) for n in space.policies()]
    table = pd.DataFrame({"policy": codes})
    for name, result in results.items():
        column = "min_volume" if categories is None else name
        table[column] = pd.array(list(result.min_volume().values()), dtype="Int64")
    first = table.columns[1]
    table = table.sort_values([first, "policy"], na_position="last", kind="stable")
    table.to_csv(out_dir / "search.csv", index=False, lineterminator="\n")
    band_rows = []
    for name, result in results.items():
        for b in result.bands():
            extra = {} if categories is None else {"category": name}
            band_rows.append({**extra, **b, "minimal": " ".join(b.get("minimal", []))})
    pd.DataFrame(band_rows).to_csv(out_dir / "bands.csv", index=False, lineterminator="\n")
    _write_json(
        out_dir / "search.json",
        {
            "regions": region_list,
            "categories": {name: groups[name] for name in results},
            "criterion": crit.__dict__,
            "elapsed_s": round(sum(r.elapsed_s for r in results.values()), 3),
            "volumes": [
                {
                    **({} if categories is None else {"category": name}),
                    "volume": r.volume,
                    "checked": r.checked,
                    "acceptable": len(r.acceptable),
                    "minimal": [space.format(n) for n in r.minimal],
                    "best": space.format(r.best) if r.best is not None else DO_NOT_SHARE,
                }
                for name, result in results.items()
                for r in result.results
            ],
        },
    )
    _fig3_heatmap(out_dir / "search.png", table, k, quantile, threshold)
    for name, result in results.items():
        if categories is not None:
            out.print(f"category {name}: {', '.join(groups[name])}")
        for b in result.bands():
            out.print(
                f"{b['from']:>7} .. {b['to'] if b['to'] is not None else '':<7} "
                f"{b['policy']:<14} ({b['acceptable']} acceptable)"
            )
    total = sum(len(r.results) for r in results.values())
    elapsed = sum(r.elapsed_s for r in results.values())
    out.print(f"searched {len(region_list)} region(s), {total} category-volume(s) in {elapsed:.2f} s")


def _category_order(item: tuple[str, list[str]]) -> int:
    """Categories of :func:`categorize` from the smallest regions up (``<a``, ``a-b``, ``>=b``)."""
    name = item[0]
    if name.startswith("<"):
        return -1
    return int(name.removeprefix(">=").split("-")[0]) if name != "all" else 0


def _fig3_heatmap(path: Path, table: pd.DataFrame, k: int, quantile: float, threshold: float) -> None:
    """The Fig. 3 table as a heat map: policies x categories, coloured by the smallest acceptable case
    volume (log scale), the volume written in each cell, blank where no searched volume suffices."""
    plt = _plot()
    from matplotlib.colors import LogNorm

    columns = list(table.columns[1:])
    values = table[columns].to_numpy(dtype="float64", na_value=np.nan)
    fig, ax = plt.subplots(figsize=(2.2 + 1.1 * len(columns), 0.16 * len(table) + 1.6))
    finite = values[np.isfinite(values) & (values > 0)]
    norm = LogNorm(vmin=max(1.0, finite.min()), vmax=max(2.0, finite.max())) if finite.size else None
    image = ax.imshow(np.where(values > 0, values, np.nan), aspect="auto", cmap="viridis_r", norm=norm)
    for (r, c), v in np.ndenumerate(values):
        if np.isfinite(v):
            ax.text(c, r, str(int(v)), ha="center", va="center", fontsize=5, color="white")
    ax.set_xticks(range(len(columns)), ["all regions" if c == "min_volume" else c for c in columns])
    ax.set_yticks(range(len(table)), list(table["policy"]), fontsize=5)
    ax.set_xlabel("regions by population size")
    ax.set_title(f"smallest case volume with PK{k} q{quantile} <= {threshold}", fontsize=9)
    if norm is not None:
        fig.colorbar(image, ax=ax, label="cases in the window")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


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
    weekly: WeeklyOpt = False,
    priority: PriorityOpt = "age",
    k: KOpt = 11,
    threshold: ThrOpt = 0.01,
    quantile: QOpt = 0.975,
    sims: SimsOpt = 1000,
    seed: SeedOpt = 0,
    layout: LayoutOpt = "long",
    hierarchies: HierOpt = None,
) -> None:
    """Choose the policy of each Sunday-Saturday week from the forecast (schedule.csv)."""
    space = load_space(hierarchies)
    pop = read_population(population, space)
    pop.region_index(region)
    series = _series(_cases(cases, layout), region, pop, cases)
    fc = read_forecasts(forecasts) if forecasts is not None else None
    crit = RiskCriterion(k=k, threshold=threshold, quantile=quantile, sims=sims, seed=seed)
    usable = [v for v in _int_list(volumes, "--volumes") if v <= pop.totals[region]]
    search = _search(pop, [region], usable, crit)
    prio = csv_list(priority)
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
    weekly: WeeklyOpt = False,
    priority: PriorityOpt = "age",
    k: KOpt = 11,
    threshold: ThrOpt = 0.01,
    quantile: QOpt = 0.975,
    sims: SimsOpt = 1000,
    seed: SeedOpt = 0,
    layout: LayoutOpt = "long",
    hierarchies: HierOpt = None,
) -> None:
    """Select a policy per week from the forecasts and evaluate it on the realized cases (Table 2)."""
    space = load_space(hierarchies)
    pop = read_population(population, space)
    series_all = _cases(cases, layout)
    fc = read_forecasts(forecasts)
    region_list = [r.strip() for r in regions.split(",")] if regions else list(pop.regions)
    prio = csv_list(priority)
    crit = RiskCriterion(k=k, threshold=threshold, quantile=quantile, sims=sims, seed=seed)
    vols = _int_list(volumes, "--volumes")
    out_dir.mkdir(parents=True, exist_ok=True)
    rows = []
    periods = []
    with _progress("evaluating regions", len(region_list)) as update:
        for done, region in enumerate(region_list):
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
                    out_dir / f"case_study_{region}.png",
                    series,
                    dyn_sched,
                    perf_sched,
                    dyn,
                    perf,
                    search,
                    lag,
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
            update(done + 1)
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
    hierarchies: HierOpt = None,
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
    space = load_space(hierarchies)
    node = space.parse(policy) if policy is not None else None
    OutputDirectory(out_dir).preflight()
    pop = read_population(population, space)
    schedule = node if node is not None else read_schedule(policies, space)  # type: ignore[arg-type]
    keep_cols = csv_list(keep)
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
