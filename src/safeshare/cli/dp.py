"""The ``safeshare dp`` commands and the epsilon-safe path of ``safeshare anonymize``.

* ``safeshare dp params``: the DPS parameter calculus (:mod:`safeshare.dp.parameters`);
  with ``--json`` ONE JSON object on stdout (a stable interface for scripts);
  ``--grid`` prints the thesis §6.2.1 table.
* ``safeshare dp experiment``: the thesis §6.2.2-6.2.3 experiments
  (:mod:`safeshare.experiments.dp`), CSV + PNG plots.
* :func:`anonymize_epsilon_safe`: what ``safeshare anonymize --algorithm
  epsilon-safe`` runs (a release, or with ``--dry-run`` the distribution).
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from safeshare.errors import InputError

dp_app = typer.Typer(
    help="Differential privacy under sampling: parameters and experiments (thesis 4.5, 6.2).",
    no_args_is_help=True,
)
out = Console(highlight=False)
err = Console(stderr=True, highlight=False)


def _fmt(value: float | None, digits: int = 6) -> str:
    return "-" if value is None else f"{value:.{digits}g}"


@dp_app.command("params")
def params_command(
    k: Annotated[int | None, typer.Option("--k", help="k of k-anonymity (omit to solve for it).")] = None,
    beta: Annotated[
        float | None, typer.Option("--beta", help="Sampling probability (omit to solve).")
    ] = None,
    epsilon: Annotated[float | None, typer.Option("--epsilon", help="DPS epsilon (omit to solve).")] = None,
    epsilon_prime: Annotated[
        float | None, typer.Option("--epsilon-prime", help="Budget of the node choice (omit to solve).")
    ] = None,
    delta: Annotated[float | None, typer.Option("--delta", help="Target: delta <= this.")] = None,
    n: Annotated[int | None, typer.Option("--n", help="Number of records of the input (N).")] = None,
    grid: Annotated[
        bool, typer.Option("--grid", help="The thesis 6.2.1 table over beta and epsilon.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Compute delta = D(k, beta, epsilon - epsilon'), or solve for the one parameter left out."""
    from safeshare.dp.parameters import solve

    if grid:
        _grid(delta if delta is not None else 1e-4, n if n is not None else 32561, as_json)
        return
    if n is None:
        raise InputError("--n: the number of records of the input is required")
    p = solve(k=k, beta=beta, epsilon=epsilon, epsilon_prime=epsilon_prime, delta=delta, n_records=n)
    doc = {
        "k": p.k,
        "beta": p.beta,
        "epsilon": p.epsilon,
        "epsilon_prime": p.epsilon_prime,
        "n": p.n_records,
        "gamma": p.gamma,
        "epsilon_min": p.epsilon_min,
        "delta": p.delta,
        "log10_delta": None if math.isinf(p.log_delta) else p.log10_delta,
        "delta_scientific": p.to_dict()["delta_scientific"],
        "delta_n_argmax": p.n_argmax,
        "n_min": p.n_min,
        "delta_target": p.delta_target,
        "meets_target": p.meets_target,
        "solved": list(p.solved),
    }
    if as_json:
        sys.stdout.write(json.dumps(doc) + "\n")
        return
    table = Table(title="differential privacy under sampling (thesis 4.5.2)", show_header=False)
    table.add_column("parameter", style="bold")
    table.add_column("value")
    for key, label in (
        ("k", "k"),
        ("beta", "beta (sampling probability)"),
        ("epsilon", "epsilon"),
        ("epsilon_prime", "epsilon' (node choice)"),
        ("n", "N (records)"),
        ("gamma", "gamma = (e^(eps-eps') - 1 + beta) / e^(eps-eps')"),
        ("epsilon_min", "epsilon_min = -ln(1 - beta) + epsilon'"),
        ("delta_scientific", "delta = D(k, beta, epsilon - epsilon')"),
        ("delta_n_argmax", "n attaining the max in D"),
    ):
        value = doc[key]
        text = _fmt(value) if isinstance(value, float) else str(value)
        if key in p.solved or (key == "epsilon_prime" and "epsilon_prime" in p.solved):
            text += "  (solved)"
        table.add_row(label, text)
    if p.delta_target is not None:
        table.add_row("target", f"delta <= {p.delta_target:g}: {'met' if p.meets_target else 'NOT met'}")
    out.print(table)


def _grid(delta: float, n: int, as_json: bool) -> None:
    import numpy as np

    from safeshare.dp.parameters import THESIS_K, d_function, parameter_grid, solve

    rows = parameter_grid(delta=delta, n_records=n)
    valid = [r for r in rows if r.k_min is not None]
    k_all = max(r.k_min for r in valid if r.k_min is not None)
    k_trunc = max(r.k_min_first_terms for r in valid if r.k_min_first_terms is not None)
    worst = max(valid, key=lambda r: r.k_min or 0)
    ok50 = sorted({r.beta for r in valid if r.k_min is not None and r.k_min <= THESIS_K})
    experiment = solve(k=THESIS_K, beta=0.75, epsilon=2.0, delta=delta, n_records=n)
    # the first beta (0.001 grid) at which k = 50 misses the target at the largest epsilon'
    beta_fail = next(
        (
            float(b)
            for b in np.round(np.arange(0.001, 0.999, 0.001), 3)
            if d_function(THESIS_K, float(b), -math.log1p(-float(b)), n).log_value > math.log(delta)
        ),
        None,
    )
    summary = {
        "delta_target": delta,
        "n": n,
        "k_min_all_cells": k_all,
        "k_min_all_cells_first_10_terms": k_trunc,
        "worst_cell": {"beta": worst.beta, "epsilon": worst.epsilon, "epsilon_prime": worst.epsilon_prime},
        "thesis_k": THESIS_K,
        "betas_where_thesis_k_suffices": ok50,
        "first_beta_where_thesis_k_fails": beta_fail,
        "largest_epsilon_prime_for_beta_0.75_epsilon_2_k_50": experiment.epsilon_prime,
    }
    if as_json:
        sys.stdout.write(json.dumps({"summary": summary, "rows": [r.__dict__ for r in rows]}) + "\n")
        return
    epsilons = sorted({r.epsilon for r in rows})
    table = Table(
        title=f"thesis 6.2.1: smallest k with delta <= {delta:g} (N = {n:,}), epsilon' at its largest",
        caption="epsilon' = epsilon + ln(1 - beta) (cells where it is negative are skipped, as in the "
        "thesis); then epsilon - epsilon' = -ln(1 - beta) for every epsilon, so k does not depend on epsilon",
    )
    for col in (
        "beta",
        "-ln(1-beta)",
        "epsilon with\nepsilon' > 0",
        "epsilon' range",
        "k min",
        "k min\n(first 10 n)",
        "delta\nat k=50",
        "n*\nat k=50",
    ):
        table.add_column(col, justify="right")
    for beta in sorted({r.beta for r in rows}):
        ok = [r for r in rows if r.beta == beta and r.k_min is not None]
        floor = f"{-math.log1p(-beta):.4f}"
        if not ok:
            table.add_row(f"{beta:g}", floor, "none", "-", "n/a", "n/a", "", "")
            continue
        r = ok[0]
        primes = [x.epsilon_prime for x in ok if x.epsilon_prime is not None]
        table.add_row(
            f"{beta:g}",
            floor,
            f"{len(ok)} of {len(epsilons)}",
            f"{min(primes):.3f}..{max(primes):.3f}",
            str(r.k_min),
            str(r.k_min_first_terms),
            f"{r.delta_at_thesis_k:.2e}",
            str(r.n_argmax_at_thesis_k),
        )
    wide = Console(highlight=False, width=max(out.width, 112))  # the table needs ~110 columns
    wide.print(table)
    wide.print(
        f"Smallest k with delta <= {delta:g} for every cell with epsilon' > 0: k = {k_all} "
        f"(worst cell beta = {worst.beta:g}, epsilon = {worst.epsilon:g}); "
        f"the thesis reports k = {THESIS_K}.\n"
        f"k = {THESIS_K} suffices only for beta <= {max(ok50) if ok50 else 0:g} on this grid"
        + ("" if beta_fail is None else f" (on a 0.001 grid of beta it first fails at beta = {beta_fail:g})")
        + ". Computing only the "
        f"first 10 terms of the max gives k = {k_trunc}: here the maximum is attained at the first n "
        "of the range, so the thesis' truncation (footnote 3) does not explain the difference: its "
        f"values of beta must all have been below {beta_fail if beta_fail is not None else 1:g}, or its "
        "epsilon' below the largest "
        "allowed. With beta = 0.75, epsilon = 2 and "
        f"k = {THESIS_K} (the thesis' experiments), delta <= {delta:g} needs "
        f"epsilon' <= {experiment.epsilon_prime:.4f}."
    )


@dp_app.command("experiment")
def experiment_command(
    out_dir: Annotated[Path, typer.Option("--out", help="Directory for the CSV files and PNG plots.")],
    config: Annotated[
        Path | None, typer.Option("--config", help="Configuration (default: examples/adult/adult-dp.yaml).")
    ] = None,
    samples: Annotated[int, typer.Option("--samples", help="Stored samples to average over.")] = 10,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the stored samples.")] = 2024,
) -> None:
    """Thesis 6.2.2-6.2.3: probability of a good node and expected suppression vs the penalty."""
    from safeshare.experiments.dp import default_config, run_experiments

    paths = run_experiments(config or default_config(), out_dir, n_samples=samples, seed=seed)
    for p in paths:
        out.print(f"wrote {p}")


# --------------------------------------------------------------------------- anonymize
def anonymize_epsilon_safe(
    cfg: Any,
    out_dir: Path,
    overrides: dict[str, Any],
    dry_run: bool = False,
    quiet: bool = False,
) -> None:
    """``safeshare anonymize --algorithm epsilon-safe``: a verified release or, with ``dry_run``,
    ``distribution.csv`` and ``distribution.json`` (written atomically)."""
    from safeshare.data.engines.factory import CONFIG_SWITCH, make_engine
    from safeshare.errors import ConfigError
    from safeshare.io import OutputDirectory, atomic_write, atomic_write_text
    from safeshare.workflows.epsilon_safe import NON_DP_WARNING, EpsilonSafeAnonymizer

    for key, value in (("max_loss", cfg.max_loss), ("knowledge", cfg.knowledge)):
        if value is not None:
            raise ConfigError(f"{cfg.path}: {key}: not supported with algorithm epsilon-safe")
    anonymizer = EpsilonSafeAnonymizer(cfg.with_overrides(dp=overrides).spec())
    params = anonymizer.params
    if not params.make_utility().differentially_private:
        err.print(NON_DP_WARNING, style="bold red")
    out_dir = Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise InputError(f"output path {out_dir} exists and is not a directory")
    engine = make_engine(cfg.engine, cfg.source, cfg.spark, cfg.duckdb, switch=CONFIG_SWITCH)
    try:
        if dry_run:
            run = anonymizer.dry_run(engine)
            frame = run.distribution.frame()
            doc = run.document()
            doc["config"] = str(cfg.path)
            output = OutputDirectory(out_dir)
            with output as stage:
                atomic_write(stage / "distribution.csv", lambda p: frame.to_csv(p, index=False))
                atomic_write_text(
                    stage / "distribution.json", json.dumps(doc, indent=2, default=_json) + "\n"
                )
                output.publish()
            if not quiet:
                out.print(
                    f"distribution over {len(frame):,} nodes written to {out_dir}/distribution.csv "
                    f"(sensitivity {doc['sensitivity']:.6g}, "
                    f"P(good node) {doc['probability_good_node']:.3f}, "
                    f"expected suppression {doc['expected_suppressed_fraction']:.2%}); not for release"
                )
            return
        from safeshare.workflows.release import write_release

        fitted = anonymizer.fit(engine)
        extra = {
            "config": str(cfg.path),
            "input": str(cfg.source.path),
            "k": anonymizer.k,
            "max_suppression": anonymizer.max_suppression,
            **fitted.report(),
        }
        published = write_release(
            fitted.result, fitted.engine, out_dir, cfg.release_format, cfg.output_delimiter, report=extra
        )
    finally:
        engine.close()
    if not quiet:
        r = published.report
        levels = ", ".join(f"{q}={lv}" for q, lv in r["levels"].items())
        out.print(
            f"epsilon-safe release verified: {levels}; {r['records_before_sampling']:,} records, "
            f"{r['records_sampled']:,} sampled, {r['suppressed_records']:,} suppressed, "
            f"{r['records_out']:,} released (smallest class {r['min_class_size']:,}).\n"
            f"(beta, epsilon, delta) = ({r['beta']:g}, {r['epsilon']:.6g}, {r['delta_scientific']}) with "
            f"epsilon' = {r['epsilon_prime']:g}; node drawn with probability {r['node_probability']:.4g} "
            f"({r['utility']} utility). Output: {published.release} (+ report.json, report.html)"
        )


def _json(obj: object) -> object:
    import numpy as np

    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.floating):
        return float(obj)
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    raise TypeError(f"not JSON serializable: {type(obj).__name__}")
