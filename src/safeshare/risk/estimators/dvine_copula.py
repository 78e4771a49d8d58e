"""D-vine copula estimator with Gaussian pair copulas (Jiang et al. 2022, §2.6; pyvinecopulib).

The quasi-identifiers are ordered on a path (a D-vine): greedily, starting
from the most dependent pair and extending either end with the variable most
dependent on it (absolute normal-score correlation), a travelling-salesman
heuristic. Pair copulas are Gaussian, fitted by maximum likelihood for
*discrete* margins (pyvinecopulib's ``var_types="d"``, with the empirical CDF
and its left limit of every category), on the sample's distinct rows weighted
by their counts. Synthetic uniforms map back to categories through the
empirical CDF; B* as for the Gaussian copula (:mod:`safeshare.risk.synthesis`).

The fitted vine is truncated by nothing: a full Gaussian D-vine is a
Gaussian copula in its partial-correlation parameterisation, but fitted by
the discrete likelihood rather than by MI matching, so the two estimators
differ; the paper averages them (``average``).
"""

from __future__ import annotations

import numpy as np
import pyvinecopulib as pv

from safeshare.risk import copula
from safeshare.risk.classes import SampleTable
from safeshare.risk.estimators import register
from safeshare.risk.estimators.gaussian_copula import SyntheticEstimator
from safeshare.risk.synthesis import DEFAULT_CHUNK


def greedy_path(strength: np.ndarray) -> list[int]:
    """A path through all variables with large adjacent |dependence| (greedy TSP)."""
    m = strength.shape[0]
    if m == 1:
        return [0]
    s = np.abs(strength.copy())
    np.fill_diagonal(s, -1.0)
    i, j = np.unravel_index(int(np.argmax(s)), s.shape)
    path = [int(i), int(j)]
    left = set(range(m)) - set(path)
    while left:
        best = max(((s[path[0], v], 0, v) for v in left), default=(-2.0, 0, -1))
        best_end = max(((s[path[-1], v], 1, v) for v in left), default=(-2.0, 1, -1))
        _score, end, v = max(best, best_end)
        if end == 0:
            path.insert(0, v)
        else:
            path.append(v)
        left.remove(v)
    return path


@register
class DVineCopulaEstimator(SyntheticEstimator):
    """Synthetic population from a Gaussian-pair D-vine fitted with discrete margins."""

    name = "dvine_copula"

    def __init__(
        self, repetitions: int = 1, chunk_size: int = DEFAULT_CHUNK, random_state: int | None = None
    ) -> None:
        self.repetitions = repetitions
        self.chunk_size = chunk_size
        self.random_state = random_state

    def _prepare(self, table: SampleTable) -> None:
        # Constant columns carry no dependence: the vine is fitted on the varying ones only.
        self.varying_ = [c for c, k in enumerate(table.cardinalities) if k > 1]
        m = len(self.varying_)
        self.vine_: pv.Vinecop | None = None
        if m < 2 or table.n_classes < 2:
            self.order_ = list(range(len(table.columns)))
            return
        corr = copula.rank_correlation(table)[np.ix_(self.varying_, self.varying_)]
        path = greedy_path(corr)
        self.order_ = [self.varying_[v] for v in path]
        upper = np.empty((table.n_classes, m))
        lower = np.empty((table.n_classes, m))
        for v, c in enumerate(self.varying_):
            cum = self.cumulative_[c]
            left = np.concatenate([[0.0], cum[:-1]])
            upper[:, v] = cum[table.codes[:, c]]
            lower[:, v] = left[table.codes[:, c]]
        eps = 1e-10
        u = np.asfortranarray(np.clip(np.hstack([upper, lower]), eps, 1 - eps))
        controls = pv.FitControlsVinecop(
            family_set=[pv.BicopFamily.gaussian], num_threads=1, weights=table.counts.astype(float)
        )
        structure = pv.DVineStructure(order=[v + 1 for v in path])
        self.vine_ = pv.Vinecop.from_data(u, controls=controls, structure=structure, var_types=["d"] * m)

    def _codes(self, size: int, rng: np.random.Generator) -> np.ndarray:
        if self.vine_ is None:
            return self._independent_codes(size, rng)
        seeds = [int(s) for s in rng.integers(0, 2**31 - 1, size=4)]
        u = rng.random((size, len(self.cumulative_)))
        u[:, self.varying_] = np.asarray(self.vine_.sample(size, seeds=seeds))
        return self._codes_from_uniform(u)
