"""The workbench's only door into safeshare's use cases.

Every call the browser workbench makes into the library goes through this module, so that
the pages and the JSON API hold no logic of their own and move onto the application layer
(``safeshare.api``, issue 19): ``anonymize`` is :func:`safeshare.api.anonymize`, the very
function ``safeshare anonymize`` calls, so the same configuration gives the same node, the
same verified release bytes and the same report figures.

The functions that read records (:func:`profile`, :func:`estimate`, :func:`anonymize`, the
surveillance ones) run in the run's child process (:mod:`safeshare.ui.worker`), never in the
server; the server only calls :func:`check_config`, :func:`hierarchy_preview` and the
readers of what a run wrote.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from safeshare.errors import InputError


class Monitor(Protocol):
    """What a use case reports while it runs (the application layer's ``workflows.monitor.Monitor``)."""

    def phase(self, name: str) -> AbstractContextManager[None]: ...

    def note(self, message: str) -> None: ...

    def progress(self, what: str, total: int) -> AbstractContextManager[Callable[[int], None] | None]: ...

    @property
    def wants_estimates(self) -> bool: ...


# --------------------------------------------------------------------------- configuration
def check_config(path: Path) -> Any:
    """The validated configuration at ``path`` (:class:`InputError` with the key path if not)."""
    from safeshare.config import load_config

    return load_config(path)


def algorithms() -> list[str]:
    """The names ``algorithm:`` accepts."""
    from safeshare.config.algorithms import ALGORITHMS

    return list(ALGORITHMS)


def metrics() -> list[str]:
    from safeshare.metrics.loss import METRICS

    return list(METRICS)


def builder_types() -> list[str]:
    """The ``type:`` names of the hierarchy builders that build from the data (docs/hierarchies.md)."""
    from safeshare.hierarchy.builders import BUILDERS

    return [name for name in BUILDERS if name != "file"]


# --------------------------------------------------------------------------- data
def source(input_section: Mapping[str, Any], base_dir: Path) -> Any:
    """The :class:`~safeshare.data.source.TableSource` of a configuration's ``input:`` section."""
    from safeshare.data.source import TableSource

    path = Path(str(input_section["path"]))
    names = input_section.get("names")
    return TableSource(
        path=path if path.is_absolute() else base_dir / path,
        delimiter=str(input_section.get("delimiter", ",")),
        header=bool(input_section.get("header", True)),
        names=tuple(str(n) for n in names) if names else None,
        missing=tuple(str(m) for m in input_section.get("missing", []) or []),
        skip_rows=int(input_section.get("skip_rows", 0)),
    )


def profile(
    input_section: Mapping[str, Any], base_dir: Path, values_limit: int
) -> tuple[Any, dict[str, Any]]:
    """The :class:`~safeshare.workflows.profile.DataProfile` of the input (read in place by DuckDB)
    and each column's distinct values when there are at most ``values_limit`` (hierarchy previews)."""
    from safeshare.data.engines.factory import make_engine
    from safeshare.workflows.profile import column_values, profile_table

    src = source(input_section, base_dir)
    engine = make_engine("duckdb", src)
    try:
        data = profile_table(engine, src.missing)
        values = {c: column_values(engine, c, values_limit) for c in engine.columns()}
    finally:
        engine.close()
    return data, values


def hierarchy_preview(spec: Mapping[str, Any] | str, base_dir: Path, values: Sequence[str], name: str) -> Any:
    """The :class:`~safeshare.hierarchy.hierarchy.Hierarchy` a configuration's ``hierarchy:`` entry
    (a file path or a builder mapping) gives for ``values``."""
    from safeshare.hierarchy.builders import FileBuilder, builder_from_spec

    if isinstance(spec, str):
        return FileBuilder(path=base_dir / spec).build(list(values), name=name)
    return builder_from_spec(dict(spec), base_dir, f"attributes.{name}.hierarchy").build(
        list(values), name=name
    )


def read_hierarchy_text(text: str, name: str) -> Any:
    """An ARX CSV hierarchy (``;``-separated) from its text, checked (:class:`InputError` if not)."""
    from safeshare.hierarchy.io import parse_arx_csv

    delimiter = ";" if ";" in text.partition("\n")[0] else ","
    return parse_arx_csv(text, name=name, delimiter=delimiter)


# --------------------------------------------------------------------------- runs (child process)
def estimate(config: Path, monitor: Monitor) -> Any:
    """The lattice size and the search's cost (:func:`~safeshare.workflows.estimate.search_estimate`)."""
    from safeshare.data.engines.factory import make_engine
    from safeshare.workflows.anonymizer import Anonymizer
    from safeshare.workflows.estimate import search_estimate

    cfg = check_config(config)
    anonymizer = Anonymizer(cfg.spec())
    with monitor.phase(f"reading {cfg.source.path.name}"):
        engine = make_engine(cfg.engine, cfg.source, cfg.spark, cfg.duckdb)
    try:
        with monitor.phase("building the frequency table"):
            return search_estimate(anonymizer, engine)
    finally:
        engine.close()


@dataclass
class Anonymized:
    """What :func:`anonymize` returns: report.json as written, the fitted search (for the lattice
    view), the input's class sizes and the configured N (for the risk comparison)."""

    report: dict[str, Any]
    fit: Any
    input_sizes: Any
    population_size: int | None


def anonymize(config: Path, out: Path, monitor: Monitor) -> Anonymized:
    """``safeshare anonymize CONFIG --out OUT``: :func:`safeshare.api.anonymize` itself (search,
    write, verify, publish atomically), so the page's release is the command's, byte for byte."""
    from safeshare import api
    from safeshare.workflows.release import input_class_sizes

    release = api.anonymize(config, out, monitor=monitor)
    fit = release.fit
    return Anonymized(
        report=release.report,
        fit=fit,
        input_sizes=input_class_sizes(fit) if fit is not None and fit.found else None,
        population_size=check_config(config).population_size,
    )


# --------------------------------------------------------------------------- surveillance
def surveillance_simulate(settings: Mapping[str, Any], monitor: Monitor) -> dict[str, Any]:
    """``safeshare surveil simulate`` and ``search`` for one region of a population table and its
    case series (docs/surveillance.md), as one document: the PK_k band of each policy over the
    periods (all policies on the same draws, as ``simulate --compare``), and the least coarse
    acceptable policy for each case volume (``search``, the policy table by volume).

    ``settings``: ``population`` and ``cases`` (CSV paths), ``layout`` (long or jhu), ``region``
    (default: the table's first), ``policies`` (codes), ``k``, ``lag``, ``simulations``, ``seed``,
    ``threshold``, ``quantile``, ``volumes``. (With the application layer: its ``surveil_simulate``
    and ``surveil_search``.)
    """
    from safeshare.surveillance.inputs import (
        check_cases_fit,
        read_case_series,
        read_jhu_series,
        read_population,
    )
    from safeshare.surveillance.policies import load_space
    from safeshare.surveillance.search import DO_NOT_SHARE, RiskCriterion, search_policies
    from safeshare.surveillance.simulate import draw_series, seeded, series_risk

    k, lag = int(settings.get("k", 11)), int(settings.get("lag", 1))
    sims, seed = int(settings.get("simulations", 200)), int(settings.get("seed", 0))
    if k < 2 or lag < 1 or sims < 1:
        raise InputError(
            f"k >= 2, lag >= 1 and simulations >= 1 are required (k {k}, lag {lag}, simulations {sims})"
        )
    space = load_space(None)
    with monitor.phase("reading the population and the cases"):
        population = read_population(Path(settings["population"]), space)
        layout = settings.get("layout", "long")
        if layout not in ("long", "jhu"):
            raise InputError(f"layout: 'long' or 'jhu', got {layout!r}")
        read = read_case_series if layout == "long" else read_jhu_series
        cases = read(Path(settings["cases"]))
    region = str(settings.get("region") or "") or next(iter(population.regions))
    population.region_index(region)
    if region not in cases:
        raise InputError(f"{Path(settings['cases']).name}: region {region!r} has no case series")
    series = cases[region]
    check_cases_fit(series, population, Path(settings["cases"]).name)
    codes = list(settings.get("policies") or []) or ["1C*e"]
    nodes = [space.parse(code) for code in codes]
    with monitor.phase(f"drawing {sims:,} simulations of the cases"):
        draw = draw_series(population.of(region), series.cases, sims, seeded(seed))
    bands = []
    with monitor.progress("forecasting PK per policy", len(nodes)) as update:
        for i, node in enumerate(nodes):
            mean, lower, upper = series_risk(draw, space.grouping(node), k, lag).band("pk")
            bands.append({"policy": space.format(node), "mean": mean, "lower": lower, "upper": upper})
            if update is not None:
                update(i + 1)
    volumes = sorted(
        {int(v) for v in settings.get("volumes") or [] if 0 <= int(v) <= population.totals[region]}
    )
    policies: list[dict[str, Any]] = []
    if volumes:
        criterion = RiskCriterion(
            k=k,
            threshold=float(settings.get("threshold", 0.01)),
            quantile=float(settings.get("quantile", 0.975)),
            sims=sims,
            seed=seed,
        )
        with monitor.progress("searching policies by volume", len(volumes)) as update:
            search = search_policies(
                population, [region], volumes, criterion, progress=lambda i, n: update(i) if update else None
            )
        for r in search.results:
            policies.append(
                {
                    "volume": r.volume,
                    "policy": space.format(r.best) if r.best is not None else DO_NOT_SHARE,
                    "acceptable": len(r.acceptable),
                    "checked": r.checked,
                }
            )
    return {
        "region": region,
        "k": k,
        "lag": lag,
        "simulations": sims,
        "seed": seed,
        "periods": [str(d) for d in series.dates],
        "cases": [int(c) for c in series.cases],
        "bands": bands,
        "policies": policies,
        "threshold": float(settings.get("threshold", 0.01)),
        "quantile": float(settings.get("quantile", 0.975)),
    }


__all__ = [
    "Anonymized",
    "Monitor",
    "algorithms",
    "anonymize",
    "builder_types",
    "check_config",
    "estimate",
    "hierarchy_preview",
    "metrics",
    "profile",
    "read_hierarchy_text",
    "source",
    "surveillance_simulate",
]
