"""D-vine copula estimator (Jiang et al. 2022, §2.6): a D-vine on the path of maximal mutual
information whose first-tree pair copulas are the sample's checkerboard copulas.

**The vine.** A D-vine on ``m`` quasi-identifiers ordered ``v_1 - v_2 - ... - v_m``
(Aas, Czado, Frigessi & Bakken 2009) factorizes the joint distribution into the
marginals, the pair copulas ``C_{v_i, v_{i+1}}`` of the first tree (adjacent
variables) and the conditional pair copulas ``C_{v_i, v_{i+k} | v_{i+1..i+k-1}}``
of the trees ``k >= 2``. Here:

* *structure*: the order is a Hamiltonian path through the quasi-identifiers of
  maximal total pairwise mutual information ``sum_i MI(v_i, v_{i+1})`` (the
  Miller-Madow-corrected sample MI, :func:`copula.sample_mutual_information`;
  exact by dynamic programming over subsets for ``m <= 12``, greedy beyond);
* *first tree*: ``C_{v_i, v_{i+1}}`` is the **checkerboard copula** of the
  pair in the sample (the multilinear extension of the sample's empirical
  copula, Genest & Neslehova 2007; Genest, Neslehova & Remillard 2014). Joined
  with the empirical marginals it gives back the sample's contingency table
  exactly, ``P(X_a = x, X_b = y) = n_xy / n``, whatever order the categories
  are listed in;
* *trees 2..m-1*: independence copulas (the vine truncated after the first
  tree).

**The distribution.** For discrete margins the vine's probability mass is then
the first-order Markov chain of the sample's transition tables::

    P(X = x) = p_{v_1}(x_{v_1}) prod_{i=2..m} n_{x_{v_{i-1}} x_{v_i}} / n_{x_{v_{i-1}}}

(``n_xy``: records with ``x`` on ``v_{i-1}`` and ``y`` on ``v_i``; ``n_x``:
records with ``x`` on ``v_{i-1}``). It depends on the categories only as
labels: relabelling a nominal column permutes the tables and nothing else
(tested). Constant columns take their one value.

**Sampling.** The vine's own algorithm (inverse h-functions tree by tree) with
independence beyond the first tree reduces to drawing ``x_{v_1}`` from its
marginal and each ``x_{v_i}`` from the row ``x_{v_{i-1}}`` of the transition
table, by inversion of one uniform per column. The tables are kept sparse
(:class:`Transition`: the occupied cells only, at most ``J`` per edge). ``P(X = x)`` above is also the
class probability the synthesis uses (:func:`synthesis.multinomial_rest`), so
``B*`` costs ``O(n m)`` whatever ``N``.

``pair_copulas="gaussian"`` is the alternative that was measured against it
(docs/risk.md): the same path, Gaussian first-tree pair copulas whose
correlation matches the pair's sample MI (as the Gaussian copula's, §2.6) and
Gaussian pair copulas in the higher trees fitted by the discrete likelihood
(pyvinecopulib, categories in label order; Panagiotelis, Czado & Joe 2012).
It samples as pyvinecopulib does, the continuous vine on the uniform scale
mapped through the empirical quantiles (as the paper describes its syntheses),
which has no closed-form class probabilities, so the rest of the population is
streamed (``O(N)``). It overestimates at high risk, so it is not the default.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import pairwise

import numpy as np
import pyvinecopulib as pv

from safeshare.errors import InputError
from safeshare.risk import copula
from safeshare.risk.classes import SampleTable
from safeshare.risk.estimators import register
from safeshare.risk.estimators.synthetic import DEFAULT_REPETITIONS, SyntheticEstimator
from safeshare.risk.synthesis import DEFAULT_CHUNK, RestCounter, multinomial_rest, streamed_rest

EXACT_PATH_MAX = 12
"""Up to this many varying quasi-identifiers the maximal-MI path is found exactly."""

VINE_CHUNK = 100_000
"""Records per call into the vine library (each call answers an interrupt only when it returns)."""


def max_weight_path(weight: np.ndarray) -> list[int]:
    """A Hamiltonian path through all vertices maximizing the sum of ``weight`` over its edges.

    Held-Karp dynamic programming over (visited set, last vertex) for up to
    :data:`EXACT_PATH_MAX` vertices; beyond, greedy: start from the heaviest edge and extend
    whichever end gains more.
    """
    m = weight.shape[0]
    if m <= 2:
        return list(range(m))
    if m > EXACT_PATH_MAX:
        return _greedy_path(weight)
    full = 1 << m
    best = np.full((full, m), -np.inf)
    parent = np.full((full, m), -1, dtype=np.int64)
    for v in range(m):
        best[1 << v, v] = 0.0
    bits = 1 << np.arange(m)
    for mask in range(1, full):
        row = best[mask]
        ends = np.flatnonzero(np.isfinite(row))
        if ends.size == 0:
            continue
        free = np.flatnonzero((mask & bits) == 0)
        if free.size == 0:
            continue
        gain = row[ends][:, None] + weight[np.ix_(ends, free)]
        arg = np.argmax(gain, axis=0)
        value = gain[arg, np.arange(free.size)]
        targets = mask | bits[free]
        better = value > best[targets, free]
        best[targets[better], free[better]] = value[better]
        parent[targets[better], free[better]] = ends[arg[better]]
    mask, last = full - 1, int(np.argmax(best[full - 1]))
    path = [last]
    while parent[mask, last] >= 0:
        mask, last = mask ^ (1 << last), int(parent[mask, last])
        path.append(last)
    return path[::-1]


def _greedy_path(weight: np.ndarray) -> list[int]:
    w = weight.astype(float).copy()
    np.fill_diagonal(w, -np.inf)
    i, j = np.unravel_index(int(np.argmax(w)), w.shape)
    path = [int(i), int(j)]
    left = set(range(w.shape[0])) - set(path)
    while left:
        head = max((w[path[0], v], v) for v in left)
        tail = max((w[path[-1], v], v) for v in left)
        if head > tail:
            path.insert(0, head[1])
            left.remove(head[1])
        else:
            path.append(tail[1])
            left.remove(tail[1])
    return path


@register
class DVineCopulaEstimator(SyntheticEstimator):
    """Synthetic population from a D-vine with checkerboard first-tree pair copulas (module docstring)."""

    name = "dvine_copula"

    def __init__(
        self,
        pair_copulas: str = "checkerboard",
        repetitions: int = DEFAULT_REPETITIONS,
        chunk_size: int = DEFAULT_CHUNK,
        random_state: int | None = None,
        mi_bias_correction: bool = True,
    ) -> None:
        self.pair_copulas = pair_copulas
        self.repetitions = repetitions
        self.chunk_size = chunk_size
        self.random_state = random_state
        self.mi_bias_correction = mi_bias_correction

    def _validate(self) -> None:
        super()._validate()
        if self.pair_copulas not in ("checkerboard", "gaussian"):
            raise InputError(
                f"dvine_copula pair_copulas: expected checkerboard or gaussian, got {self.pair_copulas!r}"
            )

    def _prepare(self, table: SampleTable) -> None:
        self.varying_ = [c for c, k in enumerate(table.cardinalities) if k > 1]
        mi = copula.mutual_information_matrix(table, self.mi_bias_correction)
        sub = mi[np.ix_(self.varying_, self.varying_)]
        self.order_ = [self.varying_[v] for v in max_weight_path(sub)]
        self.vine_: pv.Vinecop | None = None
        # transition_[i]: P(X_{order[i+1]} = y | X_{order[i]} = x) = n_xy / n_x on the occupied cells
        self.transition_ = [Transition.fit(table, a, b) for a, b in pairwise(self.order_)]
        if self.pair_copulas == "gaussian" and len(self.order_) >= 2:
            self.vine_ = _likelihood_vine(table, self.cumulative_, self.order_, self.mi_bias_correction)

    # --- the checkerboard D-vine: a first-order Markov chain ------------------------------------------

    def _codes(self, size: int, rng: np.random.Generator) -> np.ndarray:
        if self.vine_ is not None:
            return self._vine_codes(size, rng)
        u = rng.random((size, len(self.cumulative_)))
        out = self._codes_from_uniform(u)  # constant columns, and the path's first variable
        if not self.order_:
            return out
        x = out[:, self.order_[0]]
        for step, b in zip(self.transition_, self.order_[1:], strict=True):
            out[:, b] = x = step.draw(x, u[:, b])
        return out

    def class_probabilities(self, codes: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """``P(X = x)`` of each row of ``codes`` under the checkerboard vine (module docstring)."""
        if not self.order_:
            return self._marginal_probabilities(codes)
        first = self.order_[0]
        p = np.diff(self.cumulative_[first], prepend=0.0)[codes[:, first]]
        for step, a, b in zip(self.transition_, self.order_, self.order_[1:], strict=False):
            p = p * step.probability(codes[:, a], codes[:, b])
        return np.asarray(p, dtype=float)

    def _rest(self) -> RestCounter:
        if self.vine_ is not None:  # the Gaussian variant has no class probabilities: streamed
            return streamed_rest(self._codes, self._weights, self.chunk_size)
        return multinomial_rest(self.class_probabilities)

    # --- the Gaussian alternative (pyvinecopulib) -----------------------------------------------------

    def _vine_codes(self, size: int, rng: np.random.Generator) -> np.ndarray:
        assert self.vine_ is not None
        u = rng.random((size, len(self.cumulative_)))
        columns = [self.order_.index(c) for c in self.varying_]
        for start in range(0, size, VINE_CHUNK):
            step = min(VINE_CHUNK, size - start)
            seeds = [int(s) for s in rng.integers(0, 2**31 - 1, size=4)]
            drawn = np.asarray(self.vine_.sample(step, seeds=seeds))
            u[start : start + step][:, self.varying_] = drawn[:, columns]
        return self._codes_from_uniform(u)


@dataclass(frozen=True)
class Transition:
    """One first-tree edge of the checkerboard D-vine as a sparse transition table.

    The occupied cells ``(x, y)`` of the pair's contingency table, sorted by ``(x, y)``, with
    ``P(y | x) = n_xy / n_x``; memory ``O(occupied cells)``, never ``K_x x K_y``. Row ``x``'s
    cumulative probabilities shifted by ``x`` lie in ``(x, x + 1]``, so all rows together form
    one increasing array (``shifted``) that one ``searchsorted`` inverts for every record.
    """

    keys: np.ndarray
    """``x * K_y + y`` of the occupied cells, increasing."""
    target: np.ndarray
    """``y`` of each cell."""
    probability_: np.ndarray
    """``P(y | x)`` of each cell."""
    shifted: np.ndarray
    """``x + sum of P(y' | x) over the row's cells up to this one``; the last cell of row x is x + 1."""
    last: np.ndarray
    """Index of the last cell of each row ``x`` (``K_x`` entries)."""
    k_y: int

    @classmethod
    def fit(cls, table: SampleTable, a: int, b: int) -> Transition:
        x, y, counts = copula.pair_cells(table, a, b)
        rows = np.bincount(x, weights=counts, minlength=table.cardinalities[a])
        prob = counts / rows[x]
        first = np.searchsorted(x, x, side="left")
        total = np.cumsum(prob)
        within = total - (total[first] - prob[first])
        last = np.searchsorted(x, np.arange(table.cardinalities[a]), side="right") - 1
        within[last[rows > 0]] = 1.0
        k_y = max(table.cardinalities[b], 1)
        return cls(x * k_y + y, y, prob, x + within, last, k_y)

    def draw(self, x: np.ndarray, u: np.ndarray) -> np.ndarray:
        """``y`` for each ``x``, drawn from row ``x`` by inverting the uniform ``u``."""
        at = np.searchsorted(self.shifted, x + u, side="right")
        return np.asarray(self.target[np.minimum(at, self.last[x])], dtype=np.int64)

    def probability(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """``P(y | x)`` (0 for a pair the sample never shows)."""
        key = x * self.k_y + y
        at = np.minimum(np.searchsorted(self.keys, key), self.keys.size - 1)
        return np.where(self.keys[at] == key, self.probability_[at], 0.0)


_EPS = 1e-10


def _vine_scale(
    cumulative: list[np.ndarray], order: list[int], codes: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``F(x)`` and ``F(x^-)`` of every column on the path (in path order), clipped into (0, 1)."""
    upper = np.column_stack([cumulative[c][codes[:, c]] for c in order])
    lower = np.column_stack([np.concatenate([[0.0], cumulative[c][:-1]])[codes[:, c]] for c in order])
    return np.clip(upper, _EPS, 1 - _EPS), np.clip(lower, _EPS, 1 - _EPS)


def _gaussian(rho: float) -> pv.Bicop:
    return pv.Bicop.from_family(pv.BicopFamily.gaussian, parameters=np.array([[rho]]), var_types=["d", "d"])


def _likelihood_vine(
    table: SampleTable, cumulative: list[np.ndarray], order: list[int], bias_correction: bool
) -> pv.Vinecop:
    """The ``pair_copulas="gaussian"`` D-vine: tree 1 MI-matched, trees >= 2 by the discrete likelihood.

    Tree ``t`` edge ``e`` joins ``order[e]`` and ``order[e+t]`` given the variables between;
    its data are the conditional distribution functions ``F(x_a | between)`` and
    ``F(x_b | between)`` with their left limits, from the h-functions of tree ``t-1``
    (for discrete margins: ``h(u | v) = (C(u, v) - C(u, v^-)) / (v - v^-)``).
    """
    corr = copula.mi_matched_correlation(table, bias_correction)
    weights = table.counts.astype(float)
    upper, lower = _vine_scale(cumulative, order, table.codes)
    trees = [[_gaussian(float(corr[a, b])) for a, b in pairwise(order)]]
    # inputs[e] = ((U, U^-), (V, V^-)) of edge e of the current tree
    inputs = [((upper[:, e], lower[:, e]), (upper[:, e + 1], lower[:, e + 1])) for e in range(len(order) - 1)]
    controls = pv.FitControlsBicop(family_set=[pv.BicopFamily.gaussian], weights=weights, num_threads=1)
    while len(trees[-1]) > 1:
        conditionals = [_h_functions(cop, a, b) for cop, (a, b) in zip(trees[-1], inputs, strict=True)]
        inputs = [(conditionals[e][0], conditionals[e + 1][1]) for e in range(len(conditionals) - 1)]
        tree = []
        for (u, u_), (v, v_) in inputs:
            data = np.asfortranarray(np.clip(np.column_stack([u, v, u_, v_]), _EPS, 1 - _EPS))
            tree.append(pv.Bicop.from_data(data, controls=controls, var_types=["d", "d"]))
        trees.append(tree)
    structure = pv.DVineStructure(order=[i + 1 for i in range(len(order))])
    return pv.Vinecop.from_structure(structure=structure, pair_copulas=trees, var_types=["d"] * len(order))


Pair = tuple[np.ndarray, np.ndarray]


def _h_functions(cop: pv.Bicop, a: Pair, b: Pair) -> tuple[Pair, Pair]:
    """``(F(a | b), F(a^- | b))`` and ``(F(b | a), F(b^- | a))`` of a discrete pair copula."""

    def call(fn: str, ua: np.ndarray, ub: np.ndarray, la: np.ndarray, lb: np.ndarray) -> np.ndarray:
        data = np.asfortranarray(np.clip(np.column_stack([ua, ub, la, lb]), _EPS, 1 - _EPS))
        return np.asarray(getattr(cop, fn)(data))

    (u, u_), (v, v_) = a, b
    # F(a^- | b): the same conditional at the left limit of a (its own left limit just below it)
    a_given_b = (call("hfunc2", u, v, u_, v_), call("hfunc2", u_, v, u_ - _EPS, v_))
    b_given_a = (call("hfunc1", u, v, u_, v_), call("hfunc1", u, v_, u_, v_ - _EPS))
    return a_given_b, b_given_a
