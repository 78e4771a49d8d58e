"""Provable lower bounds on an estimator's B from class sizes alone (no fit).

The ``risk`` privacy model's search (:mod:`safeshare.models.risk`) asks, at every node it
checks, whether the released classes' estimated ``B`` is at most a threshold ``t``. A lower
bound ``L(f, N) <= B_`` that holds for every fit the estimator can return lets the search
reject a release whose bound exceeds ``t`` without fitting: the node fails whatever the fit
gives, and a release without an estimate (``B_ is None``) fails too, so the decision is the
one the estimator would have made. A bound never accepts a release (the estimate may be
"no estimate"); the node that qualifies is always fitted. A model that compares a value at
least ``B_`` with the threshold (an interval's upper end) may use the same bound.

Every estimator (the estimate contract): ``1/N <= B_ <= 1``.

Pitman (Hoshino 2001; :mod:`safeshare.risk.estimators.pitman`). Its estimate is

    B_ = (1/n) sum_j f_j E[1/(f_j + Y_j)],  Y_j ~ BetaBinomial(N - n, f_j - alpha, theta + n - f_j + alpha),

for the fitted ``(theta, alpha)`` in the model's space ``0 <= alpha < 1``, ``theta > -alpha``.
For every such pair and every class of ``f`` records:

1. ``Beta(a, b)`` grows with ``a`` and shrinks with ``b`` in the likelihood-ratio order
   (the density ratio ``p^(a-a') (1-p)^(b-b')`` is monotone), hence stochastically; here
   ``a = f - alpha <= f`` and ``b = theta + alpha + n - f > n - f``, so the class's share
   ``p ~ Beta(f - alpha, theta + n - f + alpha)`` is stochastically below ``Beta(f, n - f)``;
2. ``Binomial(M, p)`` grows stochastically with ``p`` and with ``M``;
3. ``1/(f + y)`` decreases in ``y``;

so ``E[1/(f + Y)] >= l_n(f) := E[1/(f + Y*)]``, ``Y* ~ BetaBinomial(N - n, f, n - f)``, a
number that depends on ``f``, ``n`` and ``N`` only. Moreover

4. ``l_n(f)`` does not decrease with ``n`` (a smaller ``n`` means more trials ``N - n`` and a
   stochastically larger ``Beta(f, n - f)``), so a table of ``l`` computed at any ``n' <= n``
   bounds a release of ``n`` records (tables are kept on a grid of ``n'``, at most 1/128
   below ``n``);
5. a partial sum of the positive terms ``P(Y* = y)/(f + y)`` is below ``l`` (when the sum
   would be long, i.e. ``N / n`` large, a lower Riemann sum of ``E[1/(f + (N - n) p)]``,
   ``p ~ Beta(f, n - f)``, instead: :func:`beta_inverse_floor`);
6. for large classes (``f > SMALL``, and ``f >= n'``) Jensen's inequality instead:
   ``E[1/(f + Y)] >= 1/(f + E Y)`` with ``E Y = (N - n)(f - alpha)/(theta + n) <= (N - n) f / n``
   (as ``theta >= -alpha >= -n alpha / f``), i.e. ``>= n / (N f)``: ``1/N`` per class in B.

Hence

    B_  >=  (1/n) [ sum_{f_j <= SMALL} f_j l_n'(f_j) ]  +  #{j : f_j > SMALL} / N.

Up to items 4-6 it is the infimum of Pitman's B over the whole parameter space (every term is
smallest at the same corner, ``alpha -> 0``, ``theta -> 0``): no bound that holds for every
fit does better. It is loose where the fit is far from that corner, and bites where many
classes are small:
at Adult's 9 QIs (n = 32,561, N = 400,000) ``l(1) = 0.222`` against the Jensen value
``n/N = 0.081``, and the bound rejects 250 of the 7,776 nodes under ``B <= 0.09`` (0.134 at
the most specific node, where the estimate is 0.382).
``tests/test_risk_model_search.py`` checks ``L <= B_`` against the estimator with hypothesis.

Other estimators have only the contract's ``1/N`` here (their estimate is cheap, or no bound
independent of the fit is known): the search fits them at every node it checks.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

#: Classes of at most this many records use the tabulated ``l_n(f)``; larger ones Jensen's bound.
SMALL = 64
#: Relative slack for rounding, in the bound's sums and in the estimate's (a bound must never
#: exceed the estimate: Pitman's B_ of one class of f records from N = 10 f is 1/N - 5e-16).
SLACK = 1e-9
#: Most terms of the beta-binomial sum per size; beyond, the Beta-integral bound (large N / n).
MAX_TERMS = 200_000
#: Grid points of the Beta-integral bound.
RIEMANN_POINTS = 4_000
#: ``l`` tables are computed at ``n' = floor(n / step) * step`` with ``step ~ n / 128``.
GRID = 128


_SIZES = np.arange(SMALL + 1, dtype=np.float64)


def _grid_floor(n: int) -> int:
    """A grid point at most ``n`` and at least ``n (1 - 1/GRID)`` (so few tables serve many ``n``)."""
    step = 1 << max(0, n.bit_length() - 1 - int(math.log2(GRID)))
    return (n // step) * step


def beta_binomial_inverse_floor(f: int, n: int, N: int, max_terms: int | None = None) -> float:
    """A lower bound on ``l_n(f) = E[1/(f + Y)]``, ``Y ~ BetaBinomial(N - n, f, n - f)``, ``f < n``.

    The terms ``P(Y = y)/(f + y)`` are summed over the ``y`` that carry all but ``1e-15`` of
    ``Beta(f, n - f)``'s mass, times ``N - n``, plus a margin; dropping the tail only lowers
    the sum (item 5 of the module docstring). When that takes more than ``max_terms`` terms
    (default :data:`MAX_TERMS`; a large ``N / n``), :func:`beta_inverse_floor` instead.
    """
    from scipy import stats  # here: scipy.stats costs 0.4 s of every command's start-up

    M = N - n
    if M <= 0:
        return 1.0 / f
    p_hi = float(stats.beta.isf(1e-15, f, n - f))
    hi = min(M, math.ceil(M * p_hi) + 200)
    if hi > (MAX_TERMS if max_terms is None else max_terms):
        return beta_inverse_floor(f, n, N)
    y = np.arange(hi + 1, dtype=np.float64)
    pmf = stats.betabinom.pmf(y, M, f, n - f)
    value = float(np.sum(pmf / (f + y)))
    return value if math.isfinite(value) else 0.0


def beta_inverse_floor(f: int, n: int, N: int) -> float:
    """A lower bound on ``l_n(f)`` in ``O(RIEMANN_POINTS)``, whatever ``N``.

    Given ``p``, ``Y ~ Binomial(N - n, p)`` and ``1/(f + y)`` is convex, so (Jensen)
    ``E[1/(f + Y) | p] >= g(p) = 1/(f + (N - n) p)``; ``g`` decreases, so on a grid
    ``0 = p_0 < ... < p_K = 1`` the lower Riemann sum ``sum_i g(p_(i+1)) P(p_i < p <= p_(i+1))``,
    ``p ~ Beta(f, n - f)``, is below ``E g(p)``. The grid is geometric (``RIEMANN_POINTS``
    points from far below ``f / (N - n)`` to 1), so ``g`` changes by under 1 % within a cell.
    """
    from scipy import stats  # here: scipy.stats costs 0.4 s of every command's start-up

    M = N - n
    if M <= 0:
        return 1.0 / f
    low = min(f / M, f / n) * 1e-9
    grid = np.concatenate(([0.0], np.geomspace(low, 1.0, RIEMANN_POINTS)))
    mass = np.diff(stats.beta.cdf(grid, f, n - f))
    value = float(np.sum(np.clip(mass, 0.0, None) / (f + M * grid[1:])))
    return value if math.isfinite(value) else 0.0


class PitmanBound:
    """``L(f, N) <= B_`` of the Pitman estimator, for any fit (see the module docstring)."""

    def __init__(self) -> None:
        self._tables: dict[tuple[int, int], np.ndarray] = {}

    def table(self, n: int, N: int) -> np.ndarray:
        """``out[f] <= l_n(f)`` for ``f = 1..SMALL`` (``out[0] = 0``), computed at a grid ``n' <= n``."""
        n_grid = _grid_floor(n)
        key = (n_grid, N)
        out = self._tables.get(key)
        if out is None:
            out = np.zeros(SMALL + 1, dtype=np.float64)
            for f in range(1, SMALL + 1):
                # f >= n': Jensen's n/(N f) >= n'/(N f) (item 6)
                out[f] = beta_binomial_inverse_floor(f, n_grid, N) if f < n_grid else n_grid / (N * f)
            self._tables[key] = out
        return out

    def __call__(self, sizes: np.ndarray, N: int) -> float:
        """The bound for released classes of ``sizes`` (positive ints) from ``N`` people."""
        n = int(sizes.sum())
        if n == 0:
            return 0.0
        # classes per size 0..SMALL, and above SMALL in the last bin (one pass; no BLAS call,
        # whose threads cost more than the sum on a loaded machine)
        counts = np.bincount(np.minimum(sizes, SMALL + 1), minlength=SMALL + 2)
        table = self.table(n, N)
        tabulated = float((counts[: SMALL + 1] * _SIZES * table).sum()) / n
        return (tabulated + int(counts[SMALL + 1]) / N) * (1.0 - SLACK)


Bound = Callable[[np.ndarray, int], float]

#: Estimator name -> a factory of its bound (a bound may keep tables across calls).
LOWER_BOUNDS: dict[str, Callable[[], Bound]] = {"pitman": PitmanBound}


def contract_bound(sizes: np.ndarray, N: int) -> float:
    """Every estimator's ``B_ >= 1/N`` (the estimate contract, less :data:`SLACK` for an estimate
    rounded below it); 0 for an empty release."""
    return (1.0 - SLACK) / N if sizes.size else 0.0


def lower_bound(estimator: str) -> Bound:
    """The best known lower bound on ``estimator``'s B (the contract's ``1/N`` at least)."""
    factory = LOWER_BOUNDS.get(estimator)
    if factory is None:
        return contract_bound
    specific = factory()

    def bound(sizes: np.ndarray, N: int) -> float:
        return max(contract_bound(sizes, N), specific(sizes, N))

    return bound
