"""The ``risk evaluate`` use case: the estimators of B evaluated on a population (Jiang et al.
2022, §2.8), one :class:`RiskEvaluation` out.

DATA is taken as the whole population. Each of the ``simulations`` study points draws a set of
quasi-identifiers from ``qi``, a sampling fraction and a simple random sample, computes the
exact ``B = (1/n) sum_j f_j / F_j`` from the population, and compares every estimate with it
(:mod:`safeshare.risk.evaluation`). Everything published -- errors.csv, summary.csv,
timings.csv, sensitivity*.csv, evaluation.json and the box plots -- is written into a private
stage and published as one unit through :class:`~safeshare.io.OutputDirectory` (an interrupted
or repeated run never leaves a mix of old and new files, nor old plots); a foreign, locked or
unwritable ``out`` is refused before the evaluation starts. No published file names a local
path (the data's file name only).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from safeshare.app_runner import SILENT, Monitor, to_json

#: How evaluation.json says the study points are seeded.
SEEDING = (
    "point p draws everything from numpy SeedSequence([seed, p]); estimators get one seed drawn after "
    "the design (dvine_copula that seed + 1, as inside average)"
)


@dataclass(frozen=True)
class RiskEvaluation:
    """The evaluation's tables and its document (evaluation.json, what ``--json`` prints).

    ``summary``: one row per estimator and group of points (all, true-B bins, sampling-fraction
    bands) with the median error, median |error|, IQR and the share within ±0.05; ``document``:
    the settings, the CPU time per estimator, the failures, the paper's acceptance criterion
    and the ranking; ``figures``: the plot files' names; ``out``: where it was published."""

    summary: Any
    estimators: tuple[str, ...]
    document: dict[str, Any]
    figures: tuple[str, ...]
    out: Path
    wall_seconds: float

    @property
    def ranking(self) -> list[str]:
        return list(self.document["ranking"])

    @property
    def title(self) -> str:
        d = self.document
        return f"{d['data']}, N = {d['population_size']:,}, {d['points']} study points, seed {d['seed']}"

    def to_dict(self) -> dict[str, Any]:
        return dict(self.document)


def risk_evaluate(
    data: str | Path, out: str | Path, *, monitor: Monitor = SILENT, **options: Any
) -> RiskEvaluation:
    """``safeshare risk evaluate DATA --qi ... --out OUT``: see the module doc.

    Keywords are the command's options: ``qi`` (the pool of quasi-identifiers each point draws
    from), ``simulations`` (study points, default 300), ``seed``, ``jobs`` (processes),
    ``estimator`` (names or ``all``), ``population_size_error`` (the sensitivity analysis' errors
    of N, fractions; empty: none), ``sensitivity_estimator``, ``correlation`` (``mi`` |
    ``rank``), ``plots``, and the data-reading options.
    """

    from safeshare.config.commands import RiskEvaluateOptions
    from safeshare.config.commands import options as validated
    from safeshare.io import OutputDirectory

    opts = validated(RiskEvaluateOptions, {**options, "out": out})
    output = OutputDirectory(Path(out))
    output.preflight()  # refused before the (long) evaluation starts
    source = opts.source(data)
    source.check_readable()  # before numpy, pandas and the estimators are imported

    from safeshare.data.engines.memory import MemoryEngine
    from safeshare.risk import evaluation as ev

    wanted = tuple(opts.estimator)
    settings = ev.EvaluationSettings(
        points=opts.simulations,
        seed=opts.seed,
        estimators=wanted,
        population_size_errors=tuple(opts.population_size_error),
        sensitivity_estimator=opts.sensitivity_estimator,
        correlation=opts.correlation,
    )
    settings.validate()
    with monitor.phase("reading the population"):
        frame = MemoryEngine(source).frame
        population = ev.Population.from_frame(frame, opts.qi)
    N = population.size

    start = time.perf_counter()
    with monitor.progress("study points", opts.simulations) as update:
        done = [0]

        def advance() -> None:
            done[0] += 1
            if update is not None:
                update(done[0])

        results = ev.run_points(population, settings, opts.jobs, progress=advance)
    wall = time.perf_counter() - start

    errors = ev.errors_frame(results, wanted)
    summary = ev.summarize(errors)
    sens = (
        ev.sensitivity_frame(results, opts.sensitivity_estimator, N)
        if settings.population_size_errors
        else None
    )
    timing_rows = [(r.point, name, s) for r in results for name, s in sorted(r.seconds.items())]
    cpu: dict[str, float] = {}
    for _p, name, s in timing_rows:
        cpu[name] = cpu.get(name, 0.0) + s
    failures = {f"{r.point}:{name}": msg for r in results for name, msg in r.failures.items()}
    ranking = ev.rank_estimators(summary)
    title = f"{source.path.name}, N = {N:,}, {opts.simulations} study points, seed {opts.seed}"
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
        figures = _figures(stage, errors, sens, wanted, title, opts) if opts.plots else []
        document: dict[str, Any] = {
            "data": source.path.name,  # the file's name: no local path in a published file
            "population_size": N,
            "qi_pool": list(population.columns),
            "points": opts.simulations,  # study points (--simulations)
            "seed": opts.seed,
            "seeding": SEEDING,
            "estimators": list(wanted),
            "correlation": opts.correlation,
            "sampling_fraction_range": [settings.min_fraction, settings.max_fraction],
            "population_size_errors": list(settings.population_size_errors),
            "sensitivity_estimator": opts.sensitivity_estimator if sens is not None else None,
            "jobs": opts.jobs,
            "wall_seconds": round(wall, 1),
            "cpu_seconds_by_estimator": {k: round(v, 1) for k, v in cpu.items()},
            "failures": failures,
            "acceptance": ev.acceptance(summary),
            "paper_directions": ev.qualitative_checks(summary),
            "ranking": ranking,
            "figures": [p.name for p in figures],
            "cpu_count": os.cpu_count(),
        }
        stage.joinpath("evaluation.json").write_text(to_json(document, indent=2) + "\n", encoding="utf-8")
        output.publish()
    return RiskEvaluation(summary, wanted, document, tuple(p.name for p in figures), output.out_dir, wall)


def _figures(
    stage: Path, errors: Any, sens: Any, wanted: tuple[str, ...], title: str, opts: Any
) -> list[Path]:
    """The box plots: all points, one figure per sampling-fraction band (Figs. 1-6), the sensitivity."""
    from safeshare.risk import evaluation as ev
    from safeshare.risk import plots

    figures = plots.error_figure(errors, wanted, f"error of B: {title}", stage / "errors_by_true_risk")
    errors_band = errors.assign(band=ev.fraction_band(errors["sampling_fraction"]))
    for band in ev.FRACTION_BANDS:
        part = errors_band[errors_band["band"] == band]
        if len(part):
            slug = {"<0.1": "lt_0.1", "0.1-0.5": "0.1_to_0.5", ">0.5": "gt_0.5"}[band]
            figures += plots.error_figure(
                part, wanted, f"sampling fraction {band}: {title}", stage / f"errors_by_true_risk_f_{slug}"
            )
    if sens is not None:
        errors_text = ",".join(f"{e:g}" for e in opts.population_size_error)
        figures += plots.sensitivity_figure(
            sens, f"{opts.sensitivity_estimator} with N off by ±{errors_text}: {title}", stage / "sensitivity"
        )
    return figures


__all__ = ["RiskEvaluation", "risk_evaluate"]
