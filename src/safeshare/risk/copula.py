"""Shared pieces of the copula estimators (Jiang et al. 2022, §2.6): empirical marginals of
categorical quasi-identifiers, normal scores, the bivariate normal CDF and the mutual
information of a discretized bivariate Gaussian.

A column with categories ``0..K-1`` (in the order of
:class:`~safeshare.risk.classes.SampleTable`) and sample probabilities
``p_0..p_{K-1}`` has the empirical CDF ``cum_c = p_0 + ... + p_c``. Under a latent
Gaussian copula the category is ``c`` when the latent standard normal ``Z``
falls in ``(t_{c-1}, t_c]`` with cut points ``t_c = Phi^{-1}(cum_c)``.
"""

from __future__ import annotations

import numpy as np
from scipy import special, stats

from safeshare.errors import InputError
from safeshare.risk.classes import SampleTable


def cumulative(table: SampleTable) -> list[np.ndarray]:
    """The empirical CDF of every column at its categories (the last value is 1)."""
    out = []
    for c in range(len(table.columns)):
        cum = np.cumsum(table.marginal(c))
        cum[-1] = 1.0
        out.append(cum)
    return out


def cut_points(cum: np.ndarray) -> np.ndarray:
    """The K-1 finite latent cut points of a column (Phi^{-1} of its inner CDF values)."""
    return np.asarray(stats.norm.ppf(np.clip(cum[:-1], 1e-15, 1 - 1e-15)), dtype=float)


def normal_scores(table: SampleTable) -> np.ndarray:
    """Per-class normal scores ``Phi^{-1}`` of each category's mid-CDF (J x m)."""
    scores = np.empty(table.codes.shape, dtype=float)
    for c, cum in enumerate(cumulative(table)):
        lower = np.concatenate([[0.0], cum[:-1]])
        mid = np.clip((lower + cum) / 2, 1e-15, 1 - 1e-15)
        scores[:, c] = stats.norm.ppf(mid)[table.codes[:, c]]
    return scores


def weighted_correlation(x: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Pearson correlation of the columns of ``x`` with row weights (1 for a constant column)."""
    w = weights / weights.sum()
    mean = w @ x
    centered = x - mean
    cov = (centered * w[:, None]).T @ centered
    sd = np.sqrt(np.diag(cov))
    safe = np.where(sd > 0, sd, 1.0)
    corr = cov / np.outer(safe, safe)
    corr[sd == 0, :] = 0.0
    corr[:, sd == 0] = 0.0
    np.fill_diagonal(corr, 1.0)
    return np.asarray(np.clip(corr, -1.0, 1.0), dtype=float)


def rank_correlation(table: SampleTable) -> np.ndarray:
    """The fast option: correlation of the normal scores (a rank correlation on the Gaussian scale)."""
    return weighted_correlation(normal_scores(table), table.counts.astype(float))


def nearest_correlation(corr: np.ndarray, floor: float = 1e-6) -> np.ndarray:
    """A positive-definite correlation matrix near ``corr`` (eigenvalues clipped, diagonal rescaled)."""
    sym = (corr + corr.T) / 2
    values, vectors = np.linalg.eigh(sym)
    fixed = (vectors * np.maximum(values, floor)) @ vectors.T
    d = np.sqrt(np.diag(fixed))
    out = fixed / np.outer(d, d)
    np.fill_diagonal(out, 1.0)
    return np.asarray(out, dtype=float)


def bvn_cdf(h: np.ndarray, k: np.ndarray, rho: float) -> np.ndarray:
    """Phi_2(h, k; rho) for finite arrays ``h``, ``k`` (broadcast), via Owen's T function."""
    h = np.asarray(h, dtype=float)
    k = np.asarray(k, dtype=float)
    h, k = np.broadcast_arrays(h, k)
    if rho == 0.0:
        return np.asarray(special.ndtr(h) * special.ndtr(k), dtype=float)
    h = np.where(h == 0, 1e-12, h)
    k = np.where(k == 0, 1e-12, k)
    s = np.sqrt((1 - rho) * (1 + rho))
    t1 = special.owens_t(h, (k - rho * h) / (h * s))
    t2 = special.owens_t(k, (h - rho * k) / (k * s))
    beta = np.where(h * k > 0, 0.0, 0.5)
    return np.asarray(0.5 * special.ndtr(h) + 0.5 * special.ndtr(k) - t1 - t2 - beta, dtype=float)


def latent_cell_probabilities(cum_i: np.ndarray, cum_j: np.ndarray, rho: float) -> np.ndarray:
    """P(category a of i, category b of j) under a latent bivariate Gaussian with correlation rho."""
    ti, tj = cut_points(cum_i), cut_points(cum_j)
    inner = bvn_cdf(ti[:, None], tj[None, :], rho)
    grid = np.zeros((ti.size + 2, tj.size + 2))
    grid[1:-1, 1:-1] = inner
    grid[-1, 1:-1] = special.ndtr(tj)
    grid[1:-1, -1] = special.ndtr(ti)
    grid[-1, -1] = 1.0
    cells = grid[1:, 1:] - grid[:-1, 1:] - grid[1:, :-1] + grid[:-1, :-1]
    return np.asarray(np.clip(cells, 0.0, None), dtype=float)


def pair_cells(table: SampleTable, i: int, j: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The occupied cells of the sample's contingency table of columns i and j: codes on i and
    on j and record counts, sorted by (i, j) (``O(J)`` memory, whatever ``K_i x K_j``)."""
    kj = max(table.cardinalities[j], 1)
    keys = table.codes[:, i] * kj + table.codes[:, j]
    cells, inverse = np.unique(keys, return_inverse=True)
    counts = np.bincount(inverse, weights=table.counts, minlength=cells.size)
    return cells // kj, cells % kj, np.asarray(counts, dtype=float)


def pair_counts(table: SampleTable, i: int, j: int) -> np.ndarray:
    """The sample's contingency table of columns i and j, dense (K_i x K_j record counts)."""
    a, b, counts = pair_cells(table, i, j)
    out = np.zeros((table.cardinalities[i], table.cardinalities[j]))
    out[a, b] = counts
    return out


def mutual_information(joint: np.ndarray) -> float:
    """MI (nats) of a joint probability table."""
    joint = joint / joint.sum()
    pi = joint.sum(axis=1, keepdims=True)
    pj = joint.sum(axis=0, keepdims=True)
    nz = joint > 0
    return float((joint[nz] * np.log(joint[nz] / (pi @ pj)[nz])).sum())


def sample_mutual_information(table: SampleTable, i: int, j: int, bias_correction: bool) -> float:
    """Plug-in MI of columns i and j in the sample, Miller-Madow corrected when asked.

    The plug-in MI of n records overstates the population MI by about
    ``(K_ij - K_i - K_j + 1) / (2n)`` (K = occupied cells); the latent model's MI
    is a population quantity, so the corrected value is the one to match. Computed on
    the occupied cells only.
    """
    a, b, counts = pair_cells(table, i, j)
    n = counts.sum()
    pa = np.bincount(a, weights=counts) / n
    pb = np.bincount(b, weights=counts) / n
    p = counts / n
    mi = float(np.sum(p * np.log(p / (pa[a] * pb[b]))))
    if bias_correction:
        rows, cols = int(np.unique(a).size), int(np.unique(b).size)
        mi -= (counts.size - rows - cols + 1) / (2 * table.n)
    return max(mi, 0.0)


MAX_LATENT_CELLS = 1_000_000
"""Largest ``K_i x K_j`` grid of bivariate normal probabilities the MI fit evaluates for one pair."""


def mi_matched_correlation(table: SampleTable, bias_correction: bool = True, tol: float = 1e-6) -> np.ndarray:
    """Pairwise latent correlations whose model MI equals the sample MI (§2.6), signs from the
    rank correlation, made positive definite."""
    m = len(table.columns)
    cums = cumulative(table)
    signs = np.sign(rank_correlation(table))
    corr = np.eye(m)
    for i in range(m):
        for j in range(i + 1, m):
            target = sample_mutual_information(table, i, j, bias_correction)
            sign = 1.0 if signs[i, j] >= 0 else -1.0
            if target <= 0 or cums[i].size < 2 or cums[j].size < 2:
                continue
            cells = cums[i].size * cums[j].size
            if cells > MAX_LATENT_CELLS:
                raise InputError(
                    f"the MI fit of {table.columns[i]!r} x {table.columns[j]!r} needs {cells:,} cells of "
                    f"bivariate normal probabilities per step (at most {MAX_LATENT_CELLS:,}): generalize "
                    "them, or use the rank correlation (--correlation rank) or the dvine_copula estimator"
                )
            lo, hi = 0.0, 0.999
            if mutual_information(latent_cell_probabilities(cums[i], cums[j], sign * hi)) <= target:
                corr[i, j] = corr[j, i] = sign * hi
                continue
            while hi - lo > tol:
                mid = (lo + hi) / 2
                if mutual_information(latent_cell_probabilities(cums[i], cums[j], sign * mid)) < target:
                    lo = mid
                else:
                    hi = mid
            corr[i, j] = corr[j, i] = sign * (lo + hi) / 2
    return nearest_correlation(corr)


def mutual_information_matrix(table: SampleTable, bias_correction: bool = True) -> np.ndarray:
    """The m x m matrix of pairwise sample MI (:func:`sample_mutual_information`; zero diagonal)."""
    m = len(table.columns)
    out = np.zeros((m, m))
    for i in range(m):
        for j in range(i + 1, m):
            out[i, j] = out[j, i] = sample_mutual_information(table, i, j, bias_correction)
    return out


def rectangle_probabilities(
    lower: np.ndarray, upper: np.ndarray, correlation: np.ndarray, points: np.ndarray
) -> np.ndarray:
    """``P(lower < Z <= upper)`` row by row on the given points (:func:`_ghk`)."""
    return _ghk(lower, upper, correlation, points)[0]


def _ghk(
    lower: np.ndarray, upper: np.ndarray, correlation: np.ndarray, points: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``P(lower < Z <= upper)`` for ``Z ~ N(0, correlation)``, row by row, by the GHK simulator,
    and the estimate's relative standard error.

    Geweke-Hajivassiliou-Keane (Genz 1992, Keane 1994): with ``Z = L e`` (``L`` the
    Cholesky factor), ``e`` standard normal, the constraint on ``Z_c`` given
    ``e_1..e_{c-1}`` is ``e_c in (alpha_c, beta_c]``, ``alpha_c = (lower_c - sum_{j<c}
    L_cj e_j) / L_cc`` (``beta_c`` likewise); then ``P = E[prod_c (Phi(beta_c) -
    Phi(alpha_c))]`` when each ``e_c`` is drawn from the standard normal truncated to
    ``(alpha_c, beta_c]`` by inverting the uniform ``points[:, c]``.

    Each row takes its variables in Genz & Bretz's (2009, §4.1.3) prioritized order
    (:func:`_prioritized_cholesky`), with its own Cholesky factor; the products are
    accumulated in logarithms and the truncated normals inverted on the log scale
    (``log_ndtr``, ``ndtri_exp``) so that far-tail cells keep their mass. ``points``
    (M x m in (0, 1)) are shared by every row; a randomized quasi-Monte Carlo set
    (scrambled Sobol') makes the mean over them an unbiased, low-variance estimate.
    ``lower``/``upper`` are J x m and may hold -inf/+inf.
    """
    J, m = lower.shape
    M = points.shape[0]
    lower, upper, chol = _prioritized_cholesky(lower, upper, correlation)
    log_weight = np.zeros((J, M))
    e = np.zeros((J, M, m))
    for c in range(m):
        shift = np.einsum("jmk,jk->jm", e[:, :, :c], chol[:, c, :c]) if c else np.zeros((J, M))
        d = chol[:, c, c][:, None]
        lo = (lower[:, c : c + 1] - shift) / d
        hi = (upper[:, c : c + 1] - shift) / d
        # an interval above zero is mirrored below it: its tail mass stays representable
        flip = lo > 0
        a = np.where(flip, -hi, lo)
        b = np.where(flip, -lo, hi)
        la, lb = special.log_ndtr(a), special.log_ndtr(b)
        ratio = np.exp(la - lb)
        with np.errstate(divide="ignore"):
            log_weight += lb + np.log1p(-ratio)
        if c < m - 1:
            target = lb + np.log(ratio + points[None, :, c] * (1.0 - ratio))
            draw = special.ndtri_exp(np.minimum(target, 0.0))
            e[:, :, c] = np.where(flip, -draw, draw)
    weight = np.exp(log_weight)
    mean = weight.mean(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        rel_se = np.where(mean > 0, weight.std(axis=1) / (mean * np.sqrt(M)), np.inf)
    return np.asarray(mean, dtype=float), np.asarray(rel_se, dtype=float)


GHK_LEVELS = (256, 4096, 65536)
"""Scrambled Sobol' points of the successive GHK passes (:func:`adaptive_rectangle_probabilities`)."""


def adaptive_rectangle_probabilities(
    lower: np.ndarray,
    upper: np.ndarray,
    correlation: np.ndarray,
    rng: np.random.Generator,
    tolerance: float = 0.25,
    budget: int = 2**20,
) -> np.ndarray:
    """:func:`rectangle_probabilities` with more points where they are needed.

    A first pass uses ``GHK_LEVELS[0]`` points for every row; rows whose estimated
    relative standard error (the spread of the GHK weights over the points, a
    conservative figure for quasi-random points) exceeds ``tolerance``, or whose
    estimate is 0, are done again with the next level's points, and so on. Thin
    rectangles along a nearly singular correlation put their mass on few points
    (plain GHK then returns 0 or a large multiple of the truth); they are few, so
    this costs little. Rows are processed in steps of at most ``budget`` point-rows.
    """
    m = lower.shape[1]
    out = np.zeros(lower.shape[0])
    todo = np.arange(lower.shape[0])
    for level, M in enumerate(GHK_LEVELS):
        if todo.size == 0:
            break
        points = stats.qmc.Sobol(m, scramble=True, seed=rng).random(M)
        step = max(1, budget // M)
        rel = np.empty(todo.size)
        for start in range(0, todo.size, step):
            rows = todo[start : start + step]
            out[rows], rel[start : start + step] = _ghk(lower[rows], upper[rows], correlation, points)
        if level < len(GHK_LEVELS) - 1:
            todo = todo[~(rel <= tolerance)]
    return out


def _prioritized_cholesky(
    lower: np.ndarray, upper: np.ndarray, correlation: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per row, the variable order of Genz & Bretz (2009, §4.1.3) and its Cholesky factor.

    Step ``c`` takes, among the variables not yet placed, the one whose interval has the
    least probability given the previous ones at their truncated means (the expected
    conditional interval probability), then extends the Cholesky factor by it. Thin
    rectangles of a nearly singular correlation are then integrated along their narrow
    directions first, which is where plain GHK loses them. Returns the permuted bounds
    and the J x m x m factors.
    """
    J, m = lower.shape
    rows = np.arange(J)
    lo, hi = lower.copy(), upper.copy()
    cov = np.broadcast_to(correlation, (J, m, m)).copy()
    chol = np.zeros((J, m, m))
    mean = np.zeros((J, m))  # truncated means of the variables already placed
    for c in range(m):
        shift = np.einsum("jik,jk->ji", chol[:, c:, :c], mean[:, :c])
        var = np.diagonal(cov, axis1=1, axis2=2)[:, c:] - np.einsum(
            "jik,jik->ji", chol[:, c:, :c], chol[:, c:, :c]
        )
        sd = np.sqrt(np.maximum(var, 1e-300))
        mass = _log_mass((lo[:, c:] - shift) / sd, (hi[:, c:] - shift) / sd)
        pick = c + np.argmin(mass, axis=1)
        for arr in (lo, hi, mean):
            arr[rows, c], arr[rows, pick] = arr[rows, pick], arr[rows, c].copy()
        chol[rows, c], chol[rows, pick] = chol[rows, pick], chol[rows, c].copy()
        cov[rows, c], cov[rows, pick] = cov[rows, pick], cov[rows, c].copy()
        cov[rows, :, c], cov[rows, :, pick] = cov[rows, :, pick], cov[rows, :, c].copy()
        d = np.sqrt(np.maximum(cov[:, c, c] - np.einsum("jk,jk->j", chol[:, c, :c], chol[:, c, :c]), 1e-300))
        chol[:, c, c] = d
        if c < m - 1:
            below = cov[:, c + 1 :, c] - np.einsum("jik,jk->ji", chol[:, c + 1 :, :c], chol[:, c, :c])
            chol[:, c + 1 :, c] = below / d[:, None]
        s = np.einsum("jk,jk->j", chol[:, c, :c], mean[:, :c])
        a, b = (lo[:, c] - s) / d, (hi[:, c] - s) / d
        mean[:, c] = _truncated_mean(a, b)
    return lo, hi, chol


def _truncated_mean(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``E[e | a < e <= b]`` for a standard normal ``e`` (the mean of the interval's mass)."""
    flip = a > 0
    aa = np.where(flip, -b, a)
    bb = np.where(flip, -a, b)
    log_mass = _log_mass(aa, bb)
    with np.errstate(over="ignore", invalid="ignore"):
        num = np.exp(_log_pdf(aa) - log_mass) - np.exp(_log_pdf(bb) - log_mass)
        # numerically empty intervals: their midpoint (or their finite end), kept in range
        mean = np.where(np.isfinite(num), num, np.nan_to_num(np.clip((aa + bb) / 2, -40.0, 40.0)))
        mean = np.where(np.isfinite(log_mass), mean, np.clip(np.where(np.isfinite(aa), aa, bb), -40.0, 40.0))
    return np.asarray(np.where(flip, -mean, mean), dtype=float)


def _log_pdf(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        return np.asarray(
            np.where(np.isfinite(x), -0.5 * x * x - 0.5 * np.log(2 * np.pi), -np.inf), dtype=float
        )


def _log_mass(lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """``log(Phi(upper) - Phi(lower))`` elementwise, accurate in both tails."""
    flip = lower > 0
    a = np.where(flip, -upper, lower)
    b = np.where(flip, -lower, upper)
    la, lb = special.log_ndtr(a), special.log_ndtr(b)
    with np.errstate(divide="ignore"):
        return np.asarray(lb + np.log1p(-np.exp(la - lb)), dtype=float)
