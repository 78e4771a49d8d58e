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

Progress goes to ``monitor`` (:class:`safeshare.app_runner.Monitor`, the protocol of every use case:
``monitor.progress(label, total)`` as long loops advance; the command line draws bars).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from safeshare.app_runner import SILENT, Monitor, to_json
from safeshare.config.vocabulary import (
    SMALL_CELL,
    SURVEILLANCE_LAG,
    SURVEILLANCE_QUANTILE,
    SURVEILLANCE_SIMULATIONS,
    SURVEILLANCE_THRESHOLD,
)
from safeshare.core.lattice import Node
from safeshare.errors import InputError
from safeshare.io import OutputDirectory
from safeshare.surveillance.categories import (
    categorize,
    category_order,
    check_edges,
    table2,
    table2_markdown,
)
from safeshare.surveillance.choices import (
    APPROACHES,
    LAYOUTS,
    RELEASE_ENGINES,
    RELEASE_FORMATS,
    ZERO_WINDOWS,
    Approach,
    Layout,
    ReleaseEngine,
    ReleaseFormat,
    RiskName,
    ZeroWindows,
)
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
from safeshare.surveillance.search import (
    DO_NOT_SHARE,
    PolicySearch,
    RiskCriterion,
    check_volumes,
    search_policies,
)
from safeshare.surveillance.select import (
    Evaluation,
    RiskCache,
    Schedule,
    draw_scheduled,
    evaluate_policies,
    select_cumulative,
    select_weekly,
    static_grouping,
)
from safeshare.surveillance.simulate import (
    SeriesRisk,
    check_k,
    check_lag,
    draw_series,
    seeded,
    series_risk,
)

if TYPE_CHECKING:
    from safeshare.surveillance.release import SurveillanceRelease

#: The case volumes searched by default (the paper's Fig. 3 columns, from 10 to 750 cases).
DEFAULT_VOLUMES = (10, 11, 20, 50, 75, 150, 300, 500, 750)
#: The cumulative record counts searched by default for the marketer risk (``--risk marketer``).
DEFAULT_CUMULATIVE_VOLUMES = (11, 20, 50, 100, 200, 500, 1_000, 2_000, 5_000, 10_000, 20_000, 50_000)


@contextmanager
def _counting(monitor: Monitor, label: str, total: int) -> Iterator[Callable[[int, int], None]]:
    """``monitor.progress(label, total)`` as the surveillance loops' callback ``tick(done, total)``."""
    with monitor.progress(label, total) as update:

        def tick(done: int, total: int) -> None:
            if update is not None:
                update(done)

        yield tick


def _write_json(path: Path, doc: dict[str, Any]) -> None:
    path.write_text(to_json(doc, indent=2) + "\n", encoding="utf-8")


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


def read_cases(path: Path, layout: Layout) -> dict[str, CaseSeries]:
    """The case series of a file, in the ``long`` or the ``jhu`` layout."""
    if layout == "long":
        return read_case_series(path)
    if layout == "jhu":
        return read_jhu_series(path)
    raise InputError(f"--layout: one of {', '.join(LAYOUTS)}, got {layout!r}")


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
class SurveilSimulation:
    """``surveil simulate``: the PK_k and marketer bands per period of one policy (and compared ones)."""

    region: str
    policy: str
    k: int
    lag: int
    simulations: int
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
            "simulations": self.simulations,
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
        title = f"{self.region}, policy {self.policy}, lag {self.lag}, {self.simulations} simulations"
        if self.plots:
            plots.simulation_plot(folder / "simulation.png", self.pk, self.k, title)
        if self.bands is not None:
            _csv(self.bands, folder / "bands.csv")
            if self.plots:
                plots.bands_plot(folder / "bands.png", self.bands, self.k, title)

    def lines(self) -> list[str]:
        return [f"{len(self.pk)} periods, max upper PK{self.k} {self.max_upper:.4f}"]


def surveil_simulate(
    *,
    population_table: Path,
    region: str,
    cases: Path,
    policy: str,
    k: int = SMALL_CELL,
    lag: int = SURVEILLANCE_LAG,
    simulations: int = SURVEILLANCE_SIMULATIONS,
    seed: int = 0,
    layout: Layout = "long",
    compare: Sequence[str] = (),
    hierarchies: str | Path | None = None,
    out: Path | None = None,
    plots: bool = True,
    monitor: Monitor = SILENT,
) -> SurveilSimulation:
    """Forecast PK_k (and the marketer risk) per period of releasing a case series under one policy;
    with ``compare``, the PK band of further policies on the same draws (common random numbers)."""
    RiskCriterion(k=k, simulations=simulations, seed=seed)  # validates k, simulations, seed
    check_lag(lag)
    space = load_space(hierarchies)
    node = space.parse(policy)
    others = [space.parse(c) for c in compare]
    _preflight(out)
    pop = read_population(population_table, space)
    pop.region_index(region)
    series = _series_of(read_cases(cases, layout), region, pop, cases)
    with _counting(monitor, "drawing the cases", simulations) as tick:
        draw = draw_series(pop.of(region), series.cases, simulations, seeded(seed), tick)
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
        with monitor.progress("policies", len(nodes)) as update:
            for i, n in enumerate(nodes):
                other = risk if n == node else series_risk(draw, space.grouping(n), k, lag)
                parts.append(band(other, "pk").assign(policy=space.format(n)))
                if update is not None:
                    update(i + 1)
        bands = pd.concat(parts, ignore_index=True)[["period", "policy", "cases", "mean", "lower", "upper"]]
    result = SurveilSimulation(
        region,
        space.format(node),
        k,
        lag,
        simulations,
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
def _ks(k: int | Sequence[int]) -> list[int]:
    """One k or several (``--k 5,11,20``: the supplement's thresholds in one run), each checked."""
    values = [k] if isinstance(k, int) else list(k)
    if not values:
        raise InputError("--k: at least one k is required")
    return [check_k(v) for v in dict.fromkeys(values)]


def _default_volumes(volumes: Sequence[int] | None, risk: str) -> list[int]:
    if volumes is not None:
        return check_volumes(volumes)
    return list(DEFAULT_CUMULATIVE_VOLUMES if risk == "marketer" else DEFAULT_VOLUMES)


def _groups(pop: Population, region_list: list[str], edges: list[int] | None) -> dict[str, list[str]]:
    """The listed regions by category (smallest first), or all of them as ``all``."""
    if edges is None:
        return {"all": region_list}
    listed = {n: [r for r in m if r in region_list] for n, m in categorize(pop, edges).items()}
    return {n: m for n, m in sorted(listed.items(), key=lambda i: category_order(i[0])) if m}


@dataclass
class SurveilSearch:
    """``surveil search``: the acceptable policies per volume, per k and category of regions (Fig. 3)."""

    space: PolicySpace
    regions: list[str]
    categories: dict[str, list[str]] | None  # None: one search over all the listed regions
    criteria: list[RiskCriterion]  # one per k
    searches: dict[tuple[int, str], PolicySearch]  # (k, category) -> search
    totals: dict[str, int]
    plots: bool = True

    @property
    def criterion(self) -> RiskCriterion:
        return self.criteria[0]

    def _column(self, k: int, name: str) -> str:
        base = "min_volume" if self.categories is None else name
        if len(self.criteria) == 1:
            return base
        return f"k{k}" if self.categories is None else f"k{k} {name}"

    @property
    def table(self) -> pd.DataFrame:
        """Fig. 3: per policy, the smallest searched volume at which it is acceptable (per k, category)."""
        table = pd.DataFrame({"policy": [self.space.format(n) for n in self.space.policies()]})
        for (k, name), result in self.searches.items():
            table[self._column(k, name)] = pd.array(list(result.min_volume().values()), dtype="Int64")
        first = table.columns[1]
        return table.sort_values([first, "policy"], na_position="last", kind="stable")

    @property
    def files(self) -> list[str]:
        return ["search.csv", "bands.csv", "search.json"] + (["search.png"] if self.plots else [])

    def _keys(self, k: int, name: str) -> dict[str, Any]:
        out: dict[str, Any] = {} if len(self.criteria) == 1 else {"k": k}
        return out if self.categories is None else {**out, "category": name}

    def bands(self) -> pd.DataFrame:
        rows = []
        for (k, name), result in self.searches.items():
            for b in result.bands():
                rows.append({**self._keys(k, name), **b, "minimal": " ".join(b.get("minimal", []))})
        return pd.DataFrame(rows)

    def notes(self) -> list[str]:
        """One line per search whose volumes some region cannot hold."""
        out = []
        for (k, name), result in self.searches.items():
            note = result.volume_notes(self.totals)
            if note is not None:
                where = " ".join(f"{key} {value}" for key, value in self._keys(k, name).items())
                out.append(f"{where}: {note}" if where else note)
        return out

    def to_dict(self) -> dict[str, Any]:
        space = self.space
        ks = [c.k for c in self.criteria]
        return {
            "regions": self.regions,
            "categories": {name: s.regions for (_, name), s in self.searches.items()},
            "criterion": {**vars(self.criterion), "k": ks if len(ks) > 1 else ks[0]},
            "elapsed_s": round(sum(r.elapsed_s for r in self.searches.values()), 3),
            "notes": self.notes(),
            "volumes": [
                {
                    **self._keys(k, name),
                    "volume": r.volume,
                    "regions": len(r.regions),
                    "checked": r.checked,
                    "acceptable": len(r.acceptable),
                    "minimal": [space.format(n) for n in r.minimal],
                    "best": space.format(r.best) if r.best is not None else DO_NOT_SHARE,
                }
                for (k, name), result in self.searches.items()
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
            measure = f"PK{'/'.join(str(x.k) for x in self.criteria)}" if c.risk == "pk" else "marketer risk"
            title = f"smallest case volume with {measure} q{c.quantile} <= {c.threshold}"
            plots.fig3_heatmap(folder / "search.png", table, title)

    def lines(self) -> list[str]:
        out = []
        for (k, name), result in self.searches.items():
            head = [f"k {k}"] if len(self.criteria) > 1 else []
            if self.categories is not None:
                head.append(f"category {name}: {', '.join(result.regions)}")
            if head:
                out.append(", ".join(head))
            for b in result.bands():
                upto = b["to"] if b["to"] is not None else ""
                out.append(f"{b['from']:>7} .. {upto:<7} {b['policy']:<14} ({b['acceptable']} acceptable)")
        out += self.notes()
        total = sum(len(r.results) for r in self.searches.values())
        elapsed = sum(r.elapsed_s for r in self.searches.values())
        out.append(f"searched {len(self.regions)} region(s), {total} category-volume(s) in {elapsed:.2f} s")
        return out


def surveil_search(
    *,
    population_table: Path,
    regions: Sequence[str] | None = None,
    categories: Sequence[int] | str | None = None,
    volumes: Sequence[int] | None = None,
    k: int | Sequence[int] = SMALL_CELL,
    threshold: float = SURVEILLANCE_THRESHOLD,
    quantile: float = SURVEILLANCE_QUANTILE,
    simulations: int = SURVEILLANCE_SIMULATIONS,
    seed: int = 0,
    risk: RiskName = "pk",
    hierarchies: str | Path | None = None,
    out: Path | None = None,
    plots: bool = True,
    monitor: Monitor = SILENT,
) -> SurveilSearch:
    """The acceptable policies per case volume in every region (of each population-size category, the
    paper's with ``categories="paper"``), for each k; a volume is searched in the regions that hold it."""
    ks = _ks(k)
    criteria = [
        RiskCriterion(
            k=kk, threshold=threshold, quantile=quantile, simulations=simulations, seed=seed, risk=risk
        )
        for kk in ks
    ]
    vols = _default_volumes(volumes, risk)
    edges = check_edges(categories)
    space = load_space(hierarchies)
    _preflight(out)
    pop = read_population(population_table, space)
    region_list = _regions(pop, regions)
    groups = _groups(pop, region_list, edges)
    searches: dict[tuple[int, str], PolicySearch] = {}
    for crit in criteria:
        for name, members in groups.items():
            label = (
                "searching policies"
                + (f" ({name})" if edges is not None else "")
                + (f", k {crit.k}" if len(ks) > 1 else "")
            )
            with _counting(monitor, label, len(vols)) as tick:
                searches[crit.k, name] = search_policies(pop, members, vols, crit, progress=tick)
    if not any(found.results for found in searches.values()):
        most = max(pop.totals[r] for r in region_list)
        raise InputError(f"--volumes: every volume is above the people of every region (at most {most:,})")
    result = SurveilSearch(
        space, region_list, groups if edges is not None else None, criteria, searches, pop.totals, plots
    )
    if out is not None:
        _publish(out, result.write)
    return result


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
class SurveilSelection:
    """``surveil select``: the policy of each Sunday-Saturday week of one region."""

    space: PolicySpace
    region: str
    schedule: Schedule
    forecasts: str  # the forecast file's name, "perfect (realized counts)", or the cumulative records
    lag: int
    weekly: bool
    priority: list[str]
    criterion: RiskCriterion
    zero_windows: ZeroWindows = "drop"
    approach: Approach = "window"
    search: PolicySearch | None = None
    totals: dict[str, int] = field(default_factory=dict)

    @property
    def frame(self) -> pd.DataFrame:
        return _schedule_frame(self.space, self.schedule)

    files = ("schedule.csv", "schedule.json")

    def notes(self) -> list[str]:
        note = self.search.volume_notes(self.totals) if self.search is not None else None
        return [note] if note else []

    def to_dict(self) -> dict[str, Any]:
        return {
            "region": self.region,
            "approach": self.approach,
            "forecasts": self.forecasts,
            "lag": self.lag,
            "weekly": self.weekly,
            "zero_windows": self.zero_windows,
            "priority": self.priority,
            "criterion": vars(self.criterion),
            "searched_regions": list(self.search.regions) if self.search is not None else [self.region],
            "notes": self.notes(),
            "weeks": self.frame.to_dict(orient="records"),
        }

    def write(self, folder: Path) -> None:
        _csv(self.frame, folder / "schedule.csv")
        _write_json(folder / "schedule.json", self.to_dict())

    def lines(self) -> list[str]:
        return self.frame.to_string(index=False).splitlines() + self.notes()


def surveil_select(
    *,
    population_table: Path,
    region: str,
    cases: Path,
    forecasts: Path | None = None,
    forecast_value: str = "point",
    volumes: Sequence[int] | None = None,
    lag: int = SURVEILLANCE_LAG,
    weekly: bool = False,
    priority: Sequence[str] = ("age",),
    k: int = SMALL_CELL,
    threshold: float = SURVEILLANCE_THRESHOLD,
    quantile: float = SURVEILLANCE_QUANTILE,
    simulations: int = SURVEILLANCE_SIMULATIONS,
    seed: int = 0,
    layout: Layout = "long",
    zero_windows: ZeroWindows = "drop",
    approach: Approach = "window",
    categories: Sequence[int] | str | None = None,
    hierarchies: str | Path | None = None,
    out: Path | None = None,
    monitor: Monitor = SILENT,
) -> SurveilSelection:
    """Choose the policy of each Sunday-Saturday week of one region: from a forecast (or, without one,
    the realized counts: perfect forecasts), or with ``approach="cumulative"`` by the marketer risk of
    everything released so far, granularity never decreasing. With ``categories``, the policies are
    searched over every region of the region's population-size category (the paper's Fig. 3)."""
    if approach not in APPROACHES:
        raise InputError(f"--approach: one of {', '.join(APPROACHES)}, got {approach!r}")
    risk: RiskName = "marketer" if approach == "cumulative" else "pk"
    crit = RiskCriterion(
        k=k, threshold=threshold, quantile=quantile, simulations=simulations, seed=seed, risk=risk
    )
    vols = _default_volumes(volumes, risk)
    check_lag(lag)
    _forecast_value(forecast_value)
    _check_zero_windows(zero_windows)
    edges = check_edges(categories)
    if approach == "cumulative" and forecasts is not None:
        raise InputError(
            "--approach cumulative chooses by the records released so far: it takes no --forecasts"
        )
    space = load_space(hierarchies)
    _check_priority(space, priority)
    _preflight(out)
    pop = read_population(population_table, space)
    pop.region_index(region)
    series = _series_of(read_cases(cases, layout), region, pop, cases)
    fc = None
    if forecasts is not None:
        fc = read_forecasts(forecasts)
        check_forecasts_fit(fc, pop, str(forecasts))
    members = [region]
    if edges is not None:
        members = next(m for m in categorize(pop, edges).values() if region in m)
    with _counting(monitor, "searching policies", len(vols)) as tick:
        found = search_policies(pop, members, vols, crit, progress=tick)
    if approach == "cumulative":
        sched = select_cumulative(found, series, priority)
        source = "records released so far (cumulative)"
    else:
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
        source = Path(forecasts).name if forecasts is not None else "perfect (realized counts)"
    result = SurveilSelection(
        space,
        region,
        sched,
        source,
        lag,
        weekly,
        list(priority),
        crit,
        zero_windows,
        approach,
        found,
        pop.totals,
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
    if zero_windows not in ZERO_WINDOWS:
        raise InputError(f"--zero-windows: one of {', '.join(ZERO_WINDOWS)}, got {zero_windows!r}")


def _check_priority(space: PolicySpace, priority: Sequence[str]) -> None:
    unknown = [p for p in priority if p not in space.names]
    if unknown:
        raise InputError(f"--priority: {unknown} are not dimensions ({', '.join(space.names)})")


# --------------------------------------------------------------------------------------------- evaluate
@dataclass
class RegionEvaluation:
    """One region, k and release schedule of ``surveil evaluate``: its schedules and evaluations."""

    region: str
    people: int
    category: str
    k: int
    schedule: str  # "daily" or "weekly"
    series: CaseSeries
    search: PolicySearch
    dynamic_schedule: Schedule
    perfect_schedule: Schedule
    dynamic: Evaluation
    perfect: Evaluation
    static: Evaluation

    def row(self, keys: Sequence[str] = ()) -> dict[str, Any]:
        extra = {key: getattr(self, key) for key in keys}
        return {
            "region": self.region,
            **({"category": extra.pop("category")} if "category" in extra else {}),
            "people": self.people,
            **extra,
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
class SurveilEvaluation:
    """``surveil evaluate``: per region (and k, release schedule), the share of releases meeting the
    threshold; with categories, the paper's Table 2 across each category's regions."""

    space: PolicySpace
    regions: list[RegionEvaluation]
    lag: int
    weekly: bool
    priority: list[str]
    criterion: RiskCriterion
    plots: bool = True
    zero_windows: ZeroWindows = "drop"
    ks: list[int] = field(default_factory=lambda: [SMALL_CELL])
    categories: dict[str, list[str]] | None = None
    case_studies: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def _keys(self) -> list[str]:
        keys = ["category", "k", "schedule"] if self.categories is not None else []
        if self.categories is None and len(self.ks) > 1:
            keys = ["k"]
        return keys

    @property
    def table(self) -> pd.DataFrame:
        return pd.DataFrame([r.row(self._keys) for r in self.regions])

    @property
    def table2(self) -> pd.DataFrame | None:
        """The paper's Table 2 (with categories): per k, category, schedule and policy, the average
        share of releases meeting the threshold and its 95% quantile range across the regions."""
        if self.categories is None:
            return None
        return table2(self.table)

    def _studied(self) -> list[RegionEvaluation]:
        """The evaluations drawn as case studies (daily releases, the first k)."""
        return [
            r
            for r in self.regions
            if r.schedule == "daily"
            and r.k == self.ks[0]
            and (self.categories is None or r.region in self.case_studies)
        ]

    @property
    def periods(self) -> pd.DataFrame:
        chosen = (
            self.regions
            if self.categories is None
            else [r for r in self.regions if r.region in self.case_studies]
        )
        frames = [
            ev.frame.assign(region=r.region, strategy=name, **{key: getattr(r, key) for key in self._keys})
            for r in chosen
            for name, ev in (("dynamic", r.dynamic), ("perfect_forecast", r.perfect), ("static", r.static))
        ]
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

    @property
    def files(self) -> list[str]:
        labels = _region_files(list(dict.fromkeys(r.region for r in self.regions)))
        names = ["evaluation.csv", "evaluation.json"]
        if self.categories is None or self.case_studies:
            names.append("periods.csv")
        if self.categories is None:
            names += [f"schedule_{labels[r]}.csv" for r in dict.fromkeys(r.region for r in self.regions)]
        else:
            names += ["schedules.csv", "table2.csv", "table2.md"] + (["table2.png"] if self.plots else [])
        if self.plots:
            names += [f"case_study_{labels[r.region]}.png" for r in self._studied()]
        return names

    def to_dict(self) -> dict[str, Any]:
        t2 = self.table2
        return {
            "lag": self.lag,
            "weekly": self.weekly if self.categories is None else "daily and weekly",
            "zero_windows": self.zero_windows,
            "priority": self.priority,
            "criterion": {**vars(self.criterion), "k": self.ks if len(self.ks) > 1 else self.ks[0]},
            "categories": self.categories,
            "notes": self.notes,
            "regions": self.table.to_dict(orient="records"),
            **({"table2": t2.to_dict(orient="records")} if t2 is not None else {}),
        }

    def _schedules(self) -> pd.DataFrame:
        frames = [
            r.schedule_frame(self.space).assign(region=r.region, k=r.k, schedule=r.schedule)
            for r in self.regions
        ]
        table = pd.concat(frames, ignore_index=True)
        return table[
            ["region", "k", "schedule", *(c for c in table.columns if c not in ("region", "k", "schedule"))]
        ]

    def write(self, folder: Path) -> None:
        from safeshare.surveillance import plots

        _csv(self.table, folder / "evaluation.csv")
        if "periods.csv" in self.files:
            _csv(self.periods, folder / "periods.csv")
        _write_json(folder / "evaluation.json", self.to_dict())
        labels = _region_files(list(dict.fromkeys(r.region for r in self.regions)))
        t2 = self.table2
        if t2 is None:
            for region in dict.fromkeys(r.region for r in self.regions):
                mine = [r for r in self.regions if r.region == region]
                frame = pd.concat(
                    [r.schedule_frame(self.space).assign(k=r.k) for r in mine], ignore_index=True
                )
                if len(self.ks) == 1:
                    frame = frame.drop(columns="k")
                _csv(frame, folder / f"schedule_{labels[region]}.csv")
        else:
            _csv(self._schedules(), folder / "schedules.csv")
            _csv(t2, folder / "table2.csv")
            c = self.criterion
            (folder / "table2.md").write_text(table2_markdown(t2, c.threshold, c.quantile), encoding="utf-8")
            if self.plots:
                plots.table2_plot(folder / "table2.png", t2, c.threshold)
        if self.plots:
            for r in self._studied():
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
        t2 = self.table2
        if t2 is None:
            return self.table.to_string(index=False).splitlines() + self.notes
        c = self.criterion
        return table2_markdown(t2, c.threshold, c.quantile).splitlines() + self.notes


def surveil_evaluate(
    *,
    population_table: Path,
    cases: Path,
    forecasts: Path,
    regions: Sequence[str] | None = None,
    categories: Sequence[int] | str | None = None,
    volumes: Sequence[int] | None = None,
    lag: int = SURVEILLANCE_LAG,
    weekly: bool = False,
    priority: Sequence[str] = ("age",),
    k: int | Sequence[int] = SMALL_CELL,
    threshold: float = SURVEILLANCE_THRESHOLD,
    quantile: float = SURVEILLANCE_QUANTILE,
    simulations: int = SURVEILLANCE_SIMULATIONS,
    seed: int = 0,
    layout: Layout = "long",
    zero_windows: ZeroWindows = "drop",
    case_studies: Sequence[str] | None = None,
    hierarchies: str | Path | None = None,
    out: Path | None = None,
    plots: bool = True,
    monitor: Monitor = SILENT,
) -> SurveilEvaluation:
    """Select a policy per week from the forecasts and evaluate it on the realized cases, beside the
    perfect-forecast and the static k-anonymous policies (Table 2 per region). With ``categories``
    (``"paper"``: the paper's five), the policies are searched per category and Table 2 is written in
    the paper's form, daily and weekly releases both, from one draw per region."""
    ks = _ks(k)
    criteria = {
        kk: RiskCriterion(k=kk, threshold=threshold, quantile=quantile, simulations=simulations, seed=seed)
        for kk in ks
    }
    vols = _default_volumes(volumes, "pk")
    check_lag(lag)
    _check_zero_windows(zero_windows)
    edges = check_edges(categories)
    if edges is not None and weekly:
        raise InputError(
            "--weekly: with --categories, daily and weekly releases are both evaluated (Table 2)"
        )
    space = load_space(hierarchies)
    _check_priority(space, priority)
    _preflight(out)
    pop = read_population(population_table, space)
    series_all = read_cases(cases, layout)
    fc = read_forecasts(forecasts)
    check_forecasts_fit(fc, pop, str(forecasts))
    region_list = _regions(pop, regions)
    studies = _regions(pop, case_studies) if case_studies else []
    groups = _groups(pop, region_list, edges)
    category_of = {r: name for name, members in groups.items() for r in members}
    for region in region_list:
        _series_of(series_all, region, pop, cases)  # every region's series checked before the long work
    static = static_grouping(pop)
    searches: dict[tuple[int, str], PolicySearch] = {}
    if edges is not None:
        for kk, crit in criteria.items():
            for name, members in groups.items():
                label = f"searching policies ({name}" + (f", k {kk})" if len(ks) > 1 else ")")
                with _counting(monitor, label, len(vols)) as tick:
                    searches[kk, name] = search_policies(pop, members, vols, crit, progress=tick)
    modes = ["daily", "weekly"] if edges is not None else ["weekly" if weekly else "daily"]
    done: list[RegionEvaluation] = []
    notes: list[str] = []
    with monitor.progress("evaluating regions", len(region_list)) as update:
        for i, region in enumerate(region_list):
            series = series_all[region]
            per_k: dict[int, PolicySearch] = {}
            for kk, crit in criteria.items():
                if edges is not None:
                    per_k[kk] = searches[kk, category_of[region]]
                else:
                    per_k[kk] = search_policies(pop, [region], vols, crit)
                    note = per_k[kk].volume_notes(pop.totals)
                    if note and note not in notes:
                        notes.append(note)
            scheduled = None
            for mode in modes:
                mode_lag = 1 if mode == "weekly" else lag
                schedules = {
                    kk: (
                        select_weekly(
                            per_k[kk],
                            series,
                            fc,
                            lag=lag,
                            weekly=mode == "weekly",
                            priority=priority,
                            zero_windows=zero_windows,
                        ),
                        select_weekly(
                            per_k[kk],
                            series,
                            None,
                            lag=lag,
                            weekly=mode == "weekly",
                            priority=priority,
                            zero_windows=zero_windows,
                        ),
                    )
                    for kk in ks
                }
                if scheduled is None:
                    scheduled = draw_scheduled(pop, series, schedules[ks[0]][0].week_starts, criteria[ks[0]])
                drawn = scheduled.weekly() if mode == "weekly" else scheduled
                cache = RiskCache(space, drawn.draw, mode_lag, ks)
                for kk in ks:
                    dyn, perf = schedules[kk]

                    def policies(sched: Schedule, mode: str = mode) -> list[Node | None]:
                        return (
                            list(sched.policies)
                            if mode == "weekly"
                            else [p for p in sched.policies for _ in range(7)]
                        )

                    done.append(
                        RegionEvaluation(
                            region,
                            pop.totals[region],
                            category_of[region],
                            kk,
                            mode,
                            series,
                            per_k[kk],
                            dyn,
                            perf,
                            evaluate_policies(cache, drawn.dates, policies(dyn), criteria[kk]),
                            evaluate_policies(cache, drawn.dates, policies(perf), criteria[kk]),
                            evaluate_policies(cache, drawn.dates, static, criteria[kk]),
                        )
                    )
            if update is not None:
                update(i + 1)
    if edges is not None:
        for search_result in searches.values():
            note = search_result.volume_notes(pop.totals)
            if note and note not in notes:
                notes.append(note)
    result = SurveilEvaluation(
        space,
        done,
        lag,
        weekly,
        list(priority),
        criteria[ks[0]],
        plots,
        zero_windows,
        ks,
        groups if edges is not None else None,
        studies,
        notes,
    )
    if out is not None:
        _publish(out, result.write)
    return result


# --------------------------------------------------------------------------------------------- release
def surveil_release(
    *,
    population_table: Path,
    cases_records: Path,
    out: Path,
    policies: Path | None = None,
    policy: str | None = None,
    k: int = SMALL_CELL,
    weekly: bool = False,
    keep: Sequence[str] = (),
    engine: ReleaseEngine = "memory",
    fmt: ReleaseFormat = "csv",
    hierarchies: str | Path | None = None,
    custodian_log: Path | None = None,
    series: Path | None = None,
    new_series: bool = False,
    on_conflict: str = "refuse",
    public_totals: Path | None = None,
    rules: str | Path | None = None,
) -> SurveillanceRelease:
    """Release each period's case records under its week's policy: generalize, suppress records whose
    population bin has fewer than ``k`` people, write through the engine, verify every file, check the
    files against every earlier release of the series (``series``: an earlier ``series.jsonl``; by
    default ``out``'s own; ``new_series`` starts over) and against ``public_totals`` (a case series
    in the long layout that is public elsewhere), then publish the folder and its series ledger
    atomically (:func:`safeshare.surveillance.release.release_cases`,
    :mod:`safeshare.workflows.series_ledger`). ``on_conflict``: ``refuse`` a release that reveals a
    cell with the earlier ones, or ``suppress`` / ``coarsen`` it further. ``rules``: ``cdc`` (or a
    YAML file changing its thresholds) releases under a CDC public-use-style rule set
    (:mod:`safeshare.surveillance.cdc`) instead of the population-bin suppression."""
    from safeshare.data.engines.factory import make_engine
    from safeshare.data.source import TableSource

    # the engines and the verifier load for a release only
    from safeshare.surveillance.cdc import load_rules
    from safeshare.surveillance.release import check_custodian_log, read_schedule, release_cases
    from safeshare.surveillance.series import check_conflict
    from safeshare.surveillance.series import public_totals as totals_of
    from safeshare.workflows.series_ledger import open_series, series_context

    if (policies is None) == (policy is None):
        raise InputError("give exactly one of --policies SCHEDULE.csv and --policy CODE")
    if engine not in RELEASE_ENGINES:
        raise InputError(f"--engine: one of {', '.join(RELEASE_ENGINES)}, got {engine!r}")
    if fmt not in RELEASE_FORMATS:
        raise InputError(f"--format: one of {', '.join(RELEASE_FORMATS)}, got {fmt!r}")
    RiskCriterion(k=k)
    conflict = check_conflict(on_conflict)
    rule_set = None if rules is None else load_rules(rules)
    space = load_space(hierarchies)
    node = space.parse(policy) if policy is not None else None
    check_custodian_log(custodian_log, out)
    _preflight(out)
    ledger = open_series(Path(out), series, new_series)  # verified before any data is read
    pop = read_population(population_table, space)
    schedule = node if node is not None else read_schedule(policies, space)  # type: ignore[arg-type]
    totals = (
        []
        if public_totals is None
        else totals_of(read_case_series(public_totals), pop, Path(public_totals).name)
    )
    context = series_context(ledger, pop, k, weekly, conflict, totals, public_totals)
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
            fmt,
            custodian_log,
            context,
            rule_set,
        )
