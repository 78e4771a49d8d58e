"""One use case per ``safeshare surveil`` command: simulate, search, select, evaluate, release.

Each function takes the command's options as keyword arguments, validates them once, reads and
checks the inputs, computes, and returns a typed result; the files of ``--out`` and the terminal
lines are both rendered from that result (``result.write(folder)``, ``result.lines()``), so the
command line only parses and prints, and a program gets the same result object.

With ``out`` given, the folder is checked before any input is read (a locked folder, or one
holding files safeshare did not write -- such as the inputs themselves -- is refused at once) and
the outputs are published through :class:`safeshare.io.OutputDirectory`: written into a private
staging folder and swapped into place in one atomic step, so ``out`` holds the complete previous
outputs or the complete new ones, never a mix (an interrupt or a failure leaves it as it was; a
run without plots or a weekly run leaves no figure of an earlier run behind). No output names a
local path: input files are recorded by their file name only.

``progress(label, done, total)`` is called as long loops advance (the command line draws bars).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from safeshare.errors import InputError
from safeshare.io import OutputDirectory
from safeshare.surveillance.inputs import (
    CaseSeries,
    Population,
    check_cases_fit,
    check_forecasts_fit,
    read_case_series,
    read_forecasts,
    read_jhu_series,
    read_population,
)
from safeshare.surveillance.policies import PolicySpace, load_space
from safeshare.surveillance.release import SurveillanceRelease
from safeshare.surveillance.search import (
    DO_NOT_SHARE,
    PolicySearch,
    RiskCriterion,
    categorize,
    check_volumes,
    search_policies,
)
from safeshare.surveillance.select import Evaluation, Schedule, select_weekly, static_grouping
from safeshare.surveillance.select import evaluate as evaluate_schedule
from safeshare.surveillance.simulate import SeriesRisk, check_lag, draw_series, seeded, series_risk

#: ``progress(label, done, total)``
Progress = Callable[[str, int, int], None]

#: The case volumes searched by default (the paper's Fig. 3 columns, from 10 to 750 cases).
DEFAULT_VOLUMES = (10, 11, 20, 50, 75, 150, 300, 500, 750)


def _silent(label: str, done: int, total: int) -> None:
    """No progress display."""


def _tick(progress: Progress, label: str) -> Callable[[int, int], None]:
    """``progress`` with its label bound: ``tick(done, total)``."""

    def tick(done: int, total: int) -> None:
        progress(label, done, total)

    return tick


def _write_json(path: Path, doc: dict[str, Any]) -> None:
    path.write_text(json.dumps(doc, indent=2, default=str) + "\n", encoding="utf-8")


def _csv(frame: pd.DataFrame, path: Path) -> None:
    frame.to_csv(path, index=False, lineterminator="\n")


def _publish(out: Path, write: Callable[[Path], None]) -> None:
    """Write the outputs into a staging folder and swap it into place (io.OutputDirectory)."""
    output = OutputDirectory(out)
    with output as stage:
        write(stage)
        output.publish()


def _preflight(out: Path | None) -> None:
    """Refuse a locked folder, or one holding files safeshare did not write, before reading inputs."""
    if out is not None:
        OutputDirectory(Path(out)).preflight()


def file_label(region: str) -> str:
    """A region as part of a file name: letters, digits, ``.``, ``_`` and ``-`` kept, others ``_``."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", region) or "_"


def _region_files(regions: Sequence[str]) -> dict[str, str]:
    """A distinct file label per region (``a/b`` and ``a_b`` do not overwrite each other)."""
    out: dict[str, str] = {}
    used: set[str] = set()
    for region in regions:
        label = file_label(region)
        n = 2
        while label.casefold() in used:
            label = f"{file_label(region)}-{n}"
            n += 1
        used.add(label.casefold())
        out[region] = label
    return out


def read_cases(path: Path, layout: str) -> dict[str, CaseSeries]:
    """The case series of a file, in the ``long`` or the ``jhu`` layout."""
    if layout == "long":
        return read_case_series(path)
    if layout == "jhu":
        return read_jhu_series(path)
    raise InputError(f"--layout: 'long' or 'jhu', got {layout!r}")


def _series_of(cases: dict[str, CaseSeries], region: str, population: Population, path: Path) -> CaseSeries:
    if region not in cases:
        raise InputError(f"{path}: region {region!r} has no case series")
    series = cases[region]
    check_cases_fit(series, population, str(path))
    return series


def _regions(population: Population, regions: Sequence[str] | None) -> list[str]:
    chosen = [r.strip() for r in regions] if regions else list(population.regions)
    for region in chosen:
        population.region_index(region)
    if len(set(chosen)) != len(chosen):
        raise InputError(f"--regions: a region is listed twice ({', '.join(chosen)})")
    return chosen


# --------------------------------------------------------------------------------------------- simulate
@dataclass
class SimulationResult:
    """``surveil simulate``: the PK_k and marketer bands per period of one policy (and compared ones)."""

    region: str
    policy: str
    k: int
    lag: int
    sims: int
    seed: int
    pk: pd.DataFrame  # period, cases, mean, lower, upper
    marketer: pd.DataFrame  # period, cases, mean, lower, upper
    compare: list[str] = field(default_factory=list)
    bands: pd.DataFrame | None = None  # period, policy, cases, mean, lower, upper
    plots: bool = True

    @property
    def max_upper(self) -> float:
        return float(self.pk["upper"].max()) if len(self.pk) else 0.0

    @property
    def files(self) -> list[str]:
        names = ["simulation.csv", "marketer.csv", "simulation.json"]
        names += ["simulation.png"] if self.plots else []
        if self.bands is not None:
            names += ["bands.csv"] + (["bands.png"] if self.plots else [])
        return names

    def to_dict(self) -> dict[str, Any]:
        return {
            "region": self.region,
            "policy": self.policy,
            "k": self.k,
            "lag": self.lag,
            "sims": self.sims,
            "seed": self.seed,
            "periods": len(self.pk),
            "max_upper": self.max_upper,
            "compare": self.compare,
            "files": [f for f in self.files if f != "simulation.json"],
        }

    def write(self, folder: Path) -> None:
        from safeshare.surveillance import plots

        _csv(self.pk, folder / "simulation.csv")
        _csv(self.marketer, folder / "marketer.csv")
        _write_json(folder / "simulation.json", self.to_dict())
        title = f"{self.region}, policy {self.policy}, lag {self.lag}, {self.sims} simulations"
        if self.plots:
            plots.simulation_plot(folder / "simulation.png", self.pk, self.k, title)
        if self.bands is not None:
            _csv(self.bands, folder / "bands.csv")
            if self.plots:
                plots.bands_plot(folder / "bands.png", self.bands, self.k, title)

    def lines(self) -> list[str]:
        return [f"{len(self.pk)} periods, max upper PK{self.k} {self.max_upper:.4f}"]


def simulate(
    *,
    population: Path,
    region: str,
    cases: Path,
    policy: str,
    k: int = 11,
    lag: int = 1,
    sims: int = 1000,
    seed: int = 0,
    layout: str = "long",
    compare: Sequence[str] = (),
    hierarchies: str | Path | None = None,
    out: Path | None = None,
    plots: bool = True,
    progress: Progress = _silent,
) -> SimulationResult:
    """Forecast PK_k (and the marketer risk) per period of releasing a case series under one policy;
    with ``compare``, the PK band of further policies on the same draws (common random numbers)."""
    RiskCriterion(k=k, sims=sims, seed=seed)  # validates k, sims, seed
    check_lag(lag)
    space = load_space(hierarchies)
    node = space.parse(policy)
    others = [space.parse(c) for c in compare]
    _preflight(out)
    pop = read_population(population, space)
    pop.region_index(region)
    series = _series_of(read_cases(cases, layout), region, pop, cases)
    draw = draw_series(pop.of(region), series.cases, sims, seeded(seed), _tick(progress, "drawing the cases"))
    periods = series.dates.astype(str)

    def band(risk: SeriesRisk, what: str) -> pd.DataFrame:
        mean, lower, upper = risk.band(what)
        return pd.DataFrame(
            {"period": periods, "cases": series.cases, "mean": mean, "lower": lower, "upper": upper}
        )

    risk = series_risk(draw, space.grouping(node), k, lag)
    frames = {what: band(risk, what) for what in ("pk", "marketer")}
    bands = None
    if others:
        parts = []
        nodes = list(dict.fromkeys([node, *others]))
        for i, n in enumerate(nodes):
            other = risk if n == node else series_risk(draw, space.grouping(n), k, lag)
            parts.append(band(other, "pk").assign(policy=space.format(n)))
            progress("policies", i + 1, len(nodes))
        bands = pd.concat(parts, ignore_index=True)[["period", "policy", "cases", "mean", "lower", "upper"]]
    result = SimulationResult(
        region,
        space.format(node),
        k,
        lag,
        sims,
        seed,
        frames["pk"],
        frames["marketer"],
        [space.format(n) for n in others],
        bands,
        plots,
    )
    if out is not None:
        _publish(out, result.write)
    return result


# --------------------------------------------------------------------------------------------- search
def _category_order(name: str) -> int:
    """Categories of :func:`categorize` from the smallest regions up (``<a``, ``a-b``, ``>=b``)."""
    if name.startswith("<"):
        return -1
    return int(name.removeprefix(">=").split("-")[0]) if name != "all" else 0


@dataclass
class SearchResult:
    """``surveil search``: the acceptable policies per volume, per category of regions (Fig. 3)."""

    space: PolicySpace
    regions: list[str]
    categories: dict[str, list[str]] | None  # None: one search over all the listed regions
    criterion: RiskCriterion
    searches: dict[str, PolicySearch]
    plots: bool = True

    @property
    def table(self) -> pd.DataFrame:
        """Fig. 3: per policy, the smallest searched volume at which it is acceptable (per category)."""
        table = pd.DataFrame({"policy": [self.space.format(n) for n in self.space.policies()]})
        for name, result in self.searches.items():
            column = "min_volume" if self.categories is None else name
            table[column] = pd.array(list(result.min_volume().values()), dtype="Int64")
        first = table.columns[1]
        return table.sort_values([first, "policy"], na_position="last", kind="stable")

    @property
    def files(self) -> list[str]:
        return ["search.csv", "bands.csv", "search.json"] + (["search.png"] if self.plots else [])

    def bands(self) -> pd.DataFrame:
        rows = []
        for name, result in self.searches.items():
            for b in result.bands():
                extra = {} if self.categories is None else {"category": name}
                rows.append({**extra, **b, "minimal": " ".join(b.get("minimal", []))})
        return pd.DataFrame(rows)

    def to_dict(self) -> dict[str, Any]:
        space = self.space
        return {
            "regions": self.regions,
            "categories": {name: s.regions for name, s in self.searches.items()},
            "criterion": vars(self.criterion),
            "elapsed_s": round(sum(r.elapsed_s for r in self.searches.values()), 3),
            "volumes": [
                {
                    **({} if self.categories is None else {"category": name}),
                    "volume": r.volume,
                    "checked": r.checked,
                    "acceptable": len(r.acceptable),
                    "minimal": [space.format(n) for n in r.minimal],
                    "best": space.format(r.best) if r.best is not None else DO_NOT_SHARE,
                }
                for name, result in self.searches.items()
                for r in result.results
            ],
        }

    def write(self, folder: Path) -> None:
        from safeshare.surveillance import plots

        table = self.table
        _csv(table, folder / "search.csv")
        _csv(self.bands(), folder / "bands.csv")
        _write_json(folder / "search.json", self.to_dict())
        if self.plots:
            c = self.criterion
            title = f"smallest case volume with PK{c.k} q{c.quantile} <= {c.threshold}"
            plots.fig3_heatmap(folder / "search.png", table, title)

    def lines(self) -> list[str]:
        out = []
        for name, result in self.searches.items():
            if self.categories is not None:
                out.append(f"category {name}: {', '.join(result.regions)}")
            for b in result.bands():
                upto = b["to"] if b["to"] is not None else ""
                out.append(f"{b['from']:>7} .. {upto:<7} {b['policy']:<14} ({b['acceptable']} acceptable)")
        total = sum(len(r.results) for r in self.searches.values())
        elapsed = sum(r.elapsed_s for r in self.searches.values())
        out.append(f"searched {len(self.regions)} region(s), {total} category-volume(s) in {elapsed:.2f} s")
        return out


def search(
    *,
    population: Path,
    regions: Sequence[str] | None = None,
    categories: Sequence[int] | None = None,
    volumes: Sequence[int] = DEFAULT_VOLUMES,
    k: int = 11,
    threshold: float = 0.01,
    quantile: float = 0.975,
    sims: int = 1000,
    seed: int = 0,
    hierarchies: str | Path | None = None,
    out: Path | None = None,
    plots: bool = True,
    progress: Progress = _silent,
) -> SearchResult:
    """The acceptable policies per case volume in every region (of each population-size category)."""
    crit = RiskCriterion(k=k, threshold=threshold, quantile=quantile, sims=sims, seed=seed)
    vols = check_volumes(volumes)
    edges = _edges(categories)
    space = load_space(hierarchies)
    _preflight(out)
    pop = read_population(population, space)
    region_list = _regions(pop, regions)
    if edges is None:
        groups = {"all": region_list}
    else:
        by_size = categorize(pop, edges)
        listed = {name: [r for r in members if r in region_list] for name, members in by_size.items()}
        groups = {n: m for n, m in sorted(listed.items(), key=lambda i: _category_order(i[0])) if m}
    searches: dict[str, PolicySearch] = {}
    for name, members in groups.items():
        usable = [v for v in vols if v <= min(pop.totals[r] for r in members)]
        if not usable:
            raise InputError(f"--volumes: every volume exceeds the people of category {name!r} ({members})")
        label = f"searching policies ({name})" if edges is not None else "searching policies"
        searches[name] = search_policies(pop, members, usable, crit, progress=_tick(progress, label))
    result = SearchResult(space, region_list, groups if edges is not None else None, crit, searches, plots)
    if out is not None:
        _publish(out, result.write)
    return result


def _edges(categories: Sequence[int] | None) -> list[int] | None:
    if categories is None:
        return None
    edges = sorted({int(e) for e in categories})
    if not edges or edges[0] < 1:
        raise InputError(f"--categories: population sizes >= 1 are required, got {list(categories)}")
    return edges


# --------------------------------------------------------------------------------------------- select
def _schedule_frame(space: PolicySpace, sched: Schedule) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "week_start": sched.week_starts.astype(str),
            "volume": sched.volumes,
            "policy": [space.format(p) if p else DO_NOT_SHARE for p in sched.policies],
        }
    )


@dataclass
class SelectResult:
    """``surveil select``: the policy of each Sunday-Saturday week of one region."""

    space: PolicySpace
    region: str
    schedule: Schedule
    forecasts: str  # the forecast file's name, or "perfect (realized counts)"
    lag: int
    weekly: bool
    priority: list[str]
    criterion: RiskCriterion
    zero_windows: str = "drop"

    @property
    def frame(self) -> pd.DataFrame:
        return _schedule_frame(self.space, self.schedule)

    files = ("schedule.csv", "schedule.json")

    def to_dict(self) -> dict[str, Any]:
        return {
            "region": self.region,
            "forecasts": self.forecasts,
            "lag": self.lag,
            "weekly": self.weekly,
            "zero_windows": self.zero_windows,
            "priority": self.priority,
            "criterion": vars(self.criterion),
            "weeks": self.frame.to_dict(orient="records"),
        }

    def write(self, folder: Path) -> None:
        _csv(self.frame, folder / "schedule.csv")
        _write_json(folder / "schedule.json", self.to_dict())

    def lines(self) -> list[str]:
        return self.frame.to_string(index=False).splitlines()


def select(
    *,
    population: Path,
    region: str,
    cases: Path,
    forecasts: Path | None = None,
    forecast_value: str = "point",
    volumes: Sequence[int] = DEFAULT_VOLUMES,
    lag: int = 1,
    weekly: bool = False,
    priority: Sequence[str] = ("age",),
    k: int = 11,
    threshold: float = 0.01,
    quantile: float = 0.975,
    sims: int = 1000,
    seed: int = 0,
    layout: str = "long",
    zero_windows: str = "drop",
    hierarchies: str | Path | None = None,
    out: Path | None = None,
    progress: Progress = _silent,
) -> SelectResult:
    """Choose the policy of each Sunday-Saturday week of one region from a forecast (or, without one,
    from the realized counts: perfect forecasts)."""
    crit = RiskCriterion(k=k, threshold=threshold, quantile=quantile, sims=sims, seed=seed)
    vols = check_volumes(volumes)
    check_lag(lag)
    _forecast_value(forecast_value)
    _check_zero_windows(zero_windows)
    space = load_space(hierarchies)
    _check_priority(space, priority)
    _preflight(out)
    pop = read_population(population, space)
    pop.region_index(region)
    series = _series_of(read_cases(cases, layout), region, pop, cases)
    fc = None
    if forecasts is not None:
        fc = read_forecasts(forecasts)
        check_forecasts_fit(fc, pop, str(forecasts))
    usable = [v for v in vols if v <= pop.totals[region]]
    found = search_policies(pop, [region], usable, crit, progress=_tick(progress, "searching policies"))
    sched = select_weekly(
        found,
        series,
        fc,
        lag=lag,
        weekly=weekly,
        priority=priority,
        value=forecast_value,
        zero_windows=zero_windows,
    )
    result = SelectResult(
        space,
        region,
        sched,
        Path(forecasts).name if forecasts is not None else "perfect (realized counts)",
        lag,
        weekly,
        list(priority),
        crit,
        zero_windows,
    )
    if out is not None:
        _publish(out, result.write)
    return result


def _forecast_value(value: str) -> None:
    if value == "point":
        return
    try:
        level = float(value)
    except ValueError:
        level = float("nan")
    if not 0 <= level <= 1:
        raise InputError(f"--forecast-value: 'point' or a quantile level in [0, 1], got {value!r}")


def _check_zero_windows(zero_windows: str) -> None:
    if zero_windows not in ("drop", "keep"):
        raise InputError(f"--zero-windows: 'keep' or 'drop', got {zero_windows!r}")


def _check_priority(space: PolicySpace, priority: Sequence[str]) -> None:
    unknown = [p for p in priority if p not in space.names]
    if unknown:
        raise InputError(f"--priority: {unknown} are not dimensions ({', '.join(space.names)})")


# --------------------------------------------------------------------------------------------- evaluate
@dataclass
class RegionEvaluation:
    """One region of ``surveil evaluate``: its schedules and their evaluations."""

    region: str
    people: int
    series: CaseSeries
    search: PolicySearch
    dynamic_schedule: Schedule
    perfect_schedule: Schedule
    dynamic: Evaluation
    perfect: Evaluation
    static: Evaluation

    def row(self) -> dict[str, Any]:
        return {
            "region": self.region,
            "people": self.people,
            "releases": len(self.dynamic.frame),
            "static": round(self.static.share_met, 4),
            "dynamic": round(self.dynamic.share_met, 4),
            "perfect_forecast": round(self.perfect.share_met, 4),
        }

    def schedule_frame(self, space: PolicySpace) -> pd.DataFrame:
        dyn, perf = self.dynamic_schedule, self.perfect_schedule
        return pd.DataFrame(
            {
                "week_start": dyn.week_starts.astype(str),
                "forecast_volume": dyn.volumes,
                "policy": [space.format(p) if p else DO_NOT_SHARE for p in dyn.policies],
                "actual_volume": perf.volumes,
                "policy_perfect": [space.format(p) if p else DO_NOT_SHARE for p in perf.policies],
            }
        )


@dataclass
class EvaluationResult:
    """``surveil evaluate``: per region, the share of releases meeting the threshold (Table 2)."""

    space: PolicySpace
    regions: list[RegionEvaluation]
    lag: int
    weekly: bool
    priority: list[str]
    criterion: RiskCriterion
    plots: bool = True
    zero_windows: str = "drop"

    @property
    def table(self) -> pd.DataFrame:
        return pd.DataFrame([r.row() for r in self.regions])

    @property
    def periods(self) -> pd.DataFrame:
        frames = [
            ev.frame.assign(region=r.region, strategy=name)
            for r in self.regions
            for name, ev in (("dynamic", r.dynamic), ("perfect_forecast", r.perfect), ("static", r.static))
        ]
        return pd.concat(frames, ignore_index=True)

    @property
    def files(self) -> list[str]:
        labels = _region_files([r.region for r in self.regions])
        names = ["evaluation.csv", "periods.csv", "evaluation.json"]
        names += [f"schedule_{labels[r.region]}.csv" for r in self.regions]
        if self.plots and not self.weekly:
            names += [f"case_study_{labels[r.region]}.png" for r in self.regions]
        return names

    def to_dict(self) -> dict[str, Any]:
        return {
            "lag": self.lag,
            "weekly": self.weekly,
            "zero_windows": self.zero_windows,
            "priority": self.priority,
            "criterion": vars(self.criterion),
            "regions": self.table.to_dict(orient="records"),
        }

    def write(self, folder: Path) -> None:
        from safeshare.surveillance import plots

        _csv(self.table, folder / "evaluation.csv")
        _csv(self.periods, folder / "periods.csv")
        _write_json(folder / "evaluation.json", self.to_dict())
        labels = _region_files([r.region for r in self.regions])
        for r in self.regions:
            _csv(r.schedule_frame(self.space), folder / f"schedule_{labels[r.region]}.csv")
            if self.plots and not self.weekly:
                plots.case_study_plot(
                    folder / f"case_study_{labels[r.region]}.png",
                    r.series,
                    r.dynamic_schedule,
                    r.perfect_schedule,
                    r.dynamic,
                    r.perfect,
                    r.search,
                    self.lag,
                )

    def lines(self) -> list[str]:
        return self.table.to_string(index=False).splitlines()


def evaluate(
    *,
    population: Path,
    cases: Path,
    forecasts: Path,
    regions: Sequence[str] | None = None,
    volumes: Sequence[int] = DEFAULT_VOLUMES,
    lag: int = 1,
    weekly: bool = False,
    priority: Sequence[str] = ("age",),
    k: int = 11,
    threshold: float = 0.01,
    quantile: float = 0.975,
    sims: int = 1000,
    seed: int = 0,
    layout: str = "long",
    zero_windows: str = "drop",
    hierarchies: str | Path | None = None,
    out: Path | None = None,
    plots: bool = True,
    progress: Progress = _silent,
) -> EvaluationResult:
    """Select a policy per week from the forecasts and evaluate it on the realized cases, beside the
    perfect-forecast and the static k-anonymous policies (Table 2, per region)."""
    crit = RiskCriterion(k=k, threshold=threshold, quantile=quantile, sims=sims, seed=seed)
    vols = check_volumes(volumes)
    check_lag(lag)
    _check_zero_windows(zero_windows)
    space = load_space(hierarchies)
    _check_priority(space, priority)
    _preflight(out)
    pop = read_population(population, space)
    series_all = read_cases(cases, layout)
    fc = read_forecasts(forecasts)
    check_forecasts_fit(fc, pop, str(forecasts))
    region_list = _regions(pop, regions)
    static = static_grouping(pop)
    done: list[RegionEvaluation] = []
    for i, region in enumerate(region_list):
        series = _series_of(series_all, region, pop, cases)
        usable = [v for v in vols if v <= pop.totals[region]]
        found = search_policies(pop, [region], usable, crit)
        dyn_sched = select_weekly(
            found, series, fc, lag=lag, weekly=weekly, priority=priority, zero_windows=zero_windows
        )
        perf_sched = select_weekly(
            found, series, None, lag=lag, weekly=weekly, priority=priority, zero_windows=zero_windows
        )
        done.append(
            RegionEvaluation(
                region,
                pop.totals[region],
                series,
                found,
                dyn_sched,
                perf_sched,
                evaluate_schedule(pop, series, dyn_sched, found, lag=lag, weekly=weekly),
                evaluate_schedule(pop, series, perf_sched, found, lag=lag, weekly=weekly),
                evaluate_schedule(pop, series, static, found, lag=lag, weekly=weekly),
            )
        )
        progress("evaluating regions", i + 1, len(region_list))
    result = EvaluationResult(space, done, lag, weekly, list(priority), crit, plots, zero_windows)
    if out is not None:
        _publish(out, result.write)
    return result


# --------------------------------------------------------------------------------------------- release
def release(
    *,
    population: Path,
    cases_records: Path,
    out: Path,
    policies: Path | None = None,
    policy: str | None = None,
    k: int = 11,
    weekly: bool = False,
    keep: Sequence[str] = (),
    engine: str = "memory",
    fmt: str = "csv",
    hierarchies: str | Path | None = None,
    custodian_log: Path | None = None,
) -> SurveillanceRelease:
    """Release each period's case records under its week's policy: generalize, suppress records whose
    population bin has fewer than ``k`` people, write through the engine, verify every file, publish
    the folder atomically (:func:`safeshare.surveillance.release.release_cases`)."""
    from safeshare.data.engines.factory import make_engine
    from safeshare.data.source import TableSource
    from safeshare.surveillance.release import check_custodian_log, read_schedule, release_cases

    if (policies is None) == (policy is None):
        raise InputError("give exactly one of --policies SCHEDULE.csv and --policy CODE")
    if engine not in ("memory", "duckdb"):
        raise InputError(f"--engine: memory or duckdb, got {engine!r}")
    if fmt not in ("csv", "parquet"):
        raise InputError(f"--format: csv or parquet, got {fmt!r}")
    RiskCriterion(k=k)
    space = load_space(hierarchies)
    node = space.parse(policy) if policy is not None else None
    check_custodian_log(custodian_log, out)
    _preflight(out)
    pop = read_population(population, space)
    schedule = node if node is not None else read_schedule(policies, space)  # type: ignore[arg-type]
    with make_engine(engine, TableSource(cases_records)) as eng:
        return release_cases(
            pop,
            eng,
            schedule,
            out,
            k,
            weekly,
            list(keep),
            str(cases_records),
            fmt,  # type: ignore[arg-type]
            custodian_log,
        )


def release_lines(result: SurveillanceRelease) -> list[str]:
    """The terminal's view of a release (the custodian's: it counts the records kept back too)."""
    lines = [f"{p.period}  {p.policy:>12}  {p.records_out} records -> {p.file}" for p in result.released]
    doc = result.custodian_doc()
    lines.append(
        f"{doc['records_out']} of {doc['records_in']} records released in {len(result.released)} file(s) "
        f"({doc['records_in'] - doc['records_out']} suppressed or not shared), every file verified "
        f"-> {result.out_dir}"
    )
    return lines
