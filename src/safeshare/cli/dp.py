"""The ``safeshare dp`` commands.

* ``safeshare dp params``: the DPS parameter calculus (:mod:`safeshare.dp.parameters`);
  with ``--json`` ONE JSON object on stdout (a stable interface for scripts);
  ``--grid`` prints the thesis §6.2.1 table.
* ``safeshare dp experiment``: the thesis §6.2.2-6.2.3 experiments
  (:mod:`safeshare.workflows.dp_experiment`), CSV + PNG plots.

Both call their use case in :mod:`safeshare.api` and print what it returns.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from safeshare.cli.common import JsonOption, QuietOption, emit

dp_app = typer.Typer(
    help="Differential privacy under sampling: parameters and experiments (thesis 4.5, 6.2).",
    no_args_is_help=True,
)
out = Console(highlight=False)


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
    quiet: QuietOption = False,
    as_json: JsonOption = False,
) -> None:
    """Compute delta = D(k, beta, epsilon - epsilon'), or solve for the one parameter left out."""
    from safeshare import api

    result = api.dp_params(
        k=k, beta=beta, epsilon=epsilon, epsilon_prime=epsilon_prime, delta=delta, n=n, grid=grid
    )
    if grid:
        emit(result.document, as_json, quiet, lambda: _grid(result.document["summary"], result.rows))
        return
    emit(result.document, as_json, quiet, lambda: _table(result.document))


def _table(doc: dict[str, Any]) -> None:
    table = Table(title="differential privacy under sampling (thesis 4.5.2)", show_header=False)
    table.add_column("parameter", style="bold")
    table.add_column("value")
    solved = set(doc["solved"])
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
        if key in solved:
            text += "  (solved)"
        table.add_row(label, text)
    if doc["delta_target"] is not None:
        table.add_row(
            "target", f"delta <= {doc['delta_target']:g}: {'met' if doc['meets_target'] else 'NOT met'}"
        )
    out.print(table)


def _grid(summary: dict[str, Any], records: list[dict[str, Any]]) -> None:
    """Print the thesis 6.2.1 table and what it says (computed by :func:`safeshare.api.dp_params`)."""
    from types import SimpleNamespace

    from safeshare.dp.parameters import THESIS_K

    rows = [SimpleNamespace(**r) for r in records]
    delta, n = summary["delta_target"], summary["n"]
    k_all, k_trunc = summary["k_min_all_cells"], summary["k_min_all_cells_first_10_terms"]
    worst = SimpleNamespace(**summary["worst_cell"])
    ok50 = summary["betas_where_thesis_k_suffices"]
    beta_fail = summary["first_beta_where_thesis_k_fails"]
    experiment = SimpleNamespace(epsilon_prime=summary["largest_epsilon_prime_for_beta_0.75_epsilon_2_k_50"])
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
    simulations: Annotated[
        int,
        typer.Option("--simulations", help="Number of Monte Carlo runs: stored samples to average over."),
    ] = 10,
    seed: Annotated[int, typer.Option("--seed", help="Integer seed of the first stored sample.")] = 2024,
    quiet: QuietOption = False,
    as_json: JsonOption = False,
) -> None:
    """Thesis 6.2.2-6.2.3: probability of a good node and expected suppression vs the penalty."""
    from safeshare import api

    result = api.dp_experiment(out=out_dir, config=config, simulations=simulations, seed=seed)

    def show() -> None:
        for p in result.files:
            out.print(f"wrote {p}")

    emit(result.to_dict(), as_json, quiet, show)
