"""The ``dp params`` use case: the DPS parameter calculus (thesis §4.5.2, §6.2.1).

``delta = D(k, beta, epsilon - epsilon')`` (:mod:`safeshare.dp.parameters`), or the one
parameter left out solved for; with ``grid`` the thesis §6.2.1 table over beta and epsilon.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # numpy and scipy load once the options are valid (start-up)
    from safeshare.dp.parameters import DPSParameters


@dataclass(frozen=True)
class DPParams:
    """The result of :func:`dp_params`: the parameters (``parameters``, ``document``) or, for
    the grid, its ``rows`` and ``summary``."""

    document: dict[str, Any]
    parameters: DPSParameters | None = None
    rows: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return self.document


def dp_params(**options: Any) -> DPParams:
    """``safeshare dp params``: keywords ``k``, ``beta``, ``epsilon``, ``epsilon_prime``,
    ``delta`` (target: delta <= this), ``n`` (records of the input), ``grid``."""
    from safeshare.config.commands import DPParamsOptions
    from safeshare.config.commands import options as validated

    opts = validated(DPParamsOptions, options)
    from safeshare.dp.parameters import solve  # numpy and scipy load once the options are valid

    if opts.grid:
        return _grid(opts.delta if opts.delta is not None else 1e-4, opts.n if opts.n is not None else 32561)
    assert opts.n is not None
    p = solve(
        k=opts.k,
        beta=opts.beta,
        epsilon=opts.epsilon,
        epsilon_prime=opts.epsilon_prime,
        delta=opts.delta,
        n_records=opts.n,
    )
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
    return DPParams(doc, p)


def _grid(delta: float, n: int) -> DPParams:
    """The thesis §6.2.1 table: the smallest k with delta <= ``delta`` per (beta, epsilon)."""
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
    records = [r.__dict__ for r in rows]
    return DPParams({"summary": summary, "rows": records}, None, records)
