"""``safeshare risk``: exact re-identification measures and the estimators of B for one dataset.

Stable interface for scripts (issue 9)::

    safeshare risk DATA --qi a,b,c --population-size N [--estimator NAME|all] --out DIR
                   [--data-is-population | --population FILE] [--seed S]

writes ``DIR/risk.json`` atomically with at least ``A``, ``B_estimates``
(estimator name -> value) and, when the population is known, ``B_exact``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from safeshare.errors import InputError

out = Console(highlight=False)


def _csv_list(value: str | None) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()] if value else []


def _finite(value: float | None) -> float | None:
    return None if value is None or not math.isfinite(value) else float(value)


def risk_command(
    data: Annotated[Path, typer.Argument(help="The sample (CSV or Parquet).")],
    qi: Annotated[str, typer.Option("--qi", help="Quasi-identifiers, comma separated.")],
    population_size: Annotated[int, typer.Option("--population-size", help="N, people in the population.")],
    out_dir: Annotated[Path, typer.Option("--out", help="Output directory for risk.json.")],
    estimator: Annotated[
        str, typer.Option("--estimator", help="An estimator name, a comma-separated list, or all.")
    ] = "all",
    data_is_population: Annotated[
        bool, typer.Option("--data-is-population", help="DATA is the whole population (B exact).")
    ] = False,
    population: Annotated[
        Path | None, typer.Option("--population", help="The population file (B exact).")
    ] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the synthetic populations.")] = 0,
    repetitions: Annotated[int, typer.Option("--repetitions", help="Synthetic populations per copula.")] = 1,
    correlation: Annotated[str, typer.Option("--correlation", help="Gaussian copula fit: mi | rank.")] = "mi",
    threshold: Annotated[float, typer.Option("--threshold", help="Risk threshold of the shares.")] = 0.09,
    delimiter: Annotated[str, typer.Option("--delimiter", help="Field separator of the data (CSV).")] = ",",
    header: Annotated[bool, typer.Option("--header/--no-header")] = True,
    names: Annotated[str | None, typer.Option("--names", help="Column names of a headerless CSV.")] = None,
    missing: Annotated[
        str | None, typer.Option("--missing", help="Comma-separated missing-value tokens.")
    ] = None,
    skip_rows: Annotated[int, typer.Option("--skip-rows")] = 0,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print nothing on success.")] = False,
) -> None:
    """Exact risk measures and the estimated sample-to-population risk B (Jiang et al. 2022)."""
    from safeshare.data.engines.memory import MemoryEngine
    from safeshare.data.source import TableSource
    from safeshare.io import atomic_write_text
    from safeshare.risk.classes import SampleTable
    from safeshare.risk.estimators import estimator_names, make_estimator
    from safeshare.risk.measures import class_sizes, risk_measures

    if data_is_population and population is not None:
        raise InputError("--data-is-population and --population exclude each other")
    if seed < 0:
        raise InputError(f"--seed: expected a non-negative integer, got {seed}")
    wanted = estimator_names() if estimator == "all" else _csv_list(estimator)
    if not wanted:
        raise InputError("--estimator: expected a name or all")
    for name in wanted:
        if name not in estimator_names():
            raise InputError(
                f"--estimator: unknown estimator {name!r} (one of {', '.join(estimator_names())})"
            )
    columns = _csv_list(qi)

    def source(path: Path) -> TableSource:
        return TableSource(
            path,
            delimiter=delimiter,
            header=header,
            names=tuple(_csv_list(names)) or None,
            missing=tuple(_csv_list(missing)),
            skip_rows=skip_rows,
        )

    frame = MemoryEngine(source(data)).frame
    table = SampleTable.from_frame(frame, columns)
    n = table.n
    if population_size < n:
        raise InputError(f"--population-size {population_size} is smaller than the data ({n} records)")
    pop_frame = None
    if population is not None:
        pop_frame = MemoryEngine(source(population)).frame
        if len(pop_frame) != population_size:
            raise InputError(
                f"--population-size {population_size} differs from {population}'s {len(pop_frame)} records"
            )
    if data_is_population and population_size != n:
        raise InputError(
            f"--data-is-population: --population-size {population_size} differs from {n} records"
        )
    f, F = class_sizes(frame, columns, pop_frame)
    measures = risk_measures(f, F, population_size=population_size, threshold=threshold)

    estimates: dict[str, float | None] = {}
    details: dict[str, Any] = {}
    params = {"random_state": seed, "repetitions": repetitions, "correlation": correlation}
    for name in wanted:
        est = make_estimator(name, **params).fit(table, population_size)
        estimates[name] = _finite(est.B_)
        details[name] = {
            "B": _finite(est.B_),
            "population_uniques": _finite(est.population_uniques_),
            "population_uniqueness": _finite(est.population_uniqueness_),
            "params": est.get_params(),
        }
        if hasattr(est, "chosen_"):
            details[name]["chosen"] = est.chosen_
    doc = {
        "data": str(data),
        "quasi_identifiers": columns,
        "n": n,
        "population_size": population_size,
        "sampling_fraction": n / population_size,
        "seed": seed,
        "A": measures.A,
        "B_estimates": estimates,
        "B_exact": measures.B,
        "estimators": details,
        "measures": measures.to_dict(),
    }
    if measures.B is None:
        del doc["B_exact"]
    atomic_write_text(Path(out_dir) / "risk.json", json.dumps(doc, indent=2) + "\n")
    if quiet:
        return
    table_out = Table(title=f"re-identification risk of {data.name} on {', '.join(columns)}")
    table_out.add_column("measure")
    table_out.add_column("value", justify="right")
    table_out.add_row("records n / population N", f"{n:,} / {population_size:,}")
    table_out.add_row("A = J/N (population-to-sample)", f"{measures.A:.4g}")
    if measures.B is not None:
        table_out.add_row("B exact (sample-to-population)", f"{measures.B:.4g}")
    table_out.add_row(
        "prosecutor max / mean", f"{measures.prosecutor_max:.3g} / {measures.prosecutor_mean:.4g}"
    )
    for name, value in estimates.items():
        table_out.add_row(f"B estimated: {name}", "-" if value is None else f"{value:.4g}")
    out.print(table_out)
    out.print(f"wrote {Path(out_dir) / 'risk.json'}")
