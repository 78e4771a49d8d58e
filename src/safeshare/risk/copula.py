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


def mutual_information(joint: np.ndarray) -> float:
    """MI (nats) of a joint probability table."""
    joint = joint / joint.sum()
    pi = joint.sum(axis=1, keepdims=True)
    pj = joint.sum(axis=0, keepdims=True)
    nz = joint > 0
    return float((joint[nz] * np.log(joint[nz] / (pi @ pj)[nz])).sum())


def pair_counts(table: SampleTable, i: int, j: int) -> np.ndarray:
    """The sample's contingency table of columns i and j (K_i x K_j record counts)."""
    ki, kj = table.cardinalities[i], table.cardinalities[j]
    joint = np.bincount(table.codes[:, i] * kj + table.codes[:, j], weights=table.counts, minlength=ki * kj)
    return np.asarray(joint.reshape(ki, kj), dtype=float)


def sample_mutual_information(table: SampleTable, i: int, j: int, bias_correction: bool) -> float:
    """Plug-in MI of columns i and j in the sample, Miller-Madow corrected when asked.

    The plug-in MI of n records overstates the population MI by about
    ``(K_ij - K_i - K_j + 1) / (2n)`` (K = occupied cells); the latent model's MI
    is a population quantity, so the corrected value is the one to match.
    """
    joint = pair_counts(table, i, j)
    mi = mutual_information(joint)
    if bias_correction:
        occupied = int((joint > 0).sum())
        rows = int((joint.sum(axis=1) > 0).sum())
        cols = int((joint.sum(axis=0) > 0).sum())
        mi -= (occupied - rows - cols + 1) / (2 * table.n)
    return max(mi, 0.0)


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
    lower: np.ndarray, upper: np.ndarray, cholesky: np.ndarray, points: np.ndarray
) -> np.ndarray:
    """``P(lower < Z <= upper)`` for ``Z ~ N(0, L L^T)``, row by row, by the GHK simulator.

    Geweke-Hajivassiliou-Keane (Genz 1992, Keane 1994): with ``Z = L e``, ``e``
    standard normal, the constraint on ``Z_c`` given ``e_1..e_{c-1}`` is
    ``e_c in (alpha_c, beta_c]`` with ``alpha_c = (lower_c - sum_{j<c} L_cj e_j) / L_cc``
    (``beta_c`` likewise); then ``P = E[prod_c (Phi(beta_c) - Phi(alpha_c))]`` when
    each ``e_c`` is drawn from the standard normal truncated to ``(alpha_c, beta_c]``
    by inversion of the uniform ``points[:, c]``. ``points`` (M x m, in (0, 1)) are
    shared by every row; a randomized quasi-Monte Carlo set (scrambled Sobol') makes
    the average over them an unbiased, low-variance estimate. ``lower``/``upper``
    are J x m and may hold +-inf.
    """
    J, m = lower.shape
    M = points.shape[0]
    weight = np.ones((J, M))
    e = np.zeros((J, M, m))
    for c in range(m):
        shift = e[:, :, :c] @ cholesky[c, :c] if c else np.zeros((J, M))
        lo = (lower[:, c : c + 1] - shift) / cholesky[c, c]
        hi = (upper[:, c : c + 1] - shift) / cholesky[c, c]
        # Work in the lower tail (Phi(-x) for x > 0) so far-tail differences keep their precision.
        flip = lo > 0
        a = np.where(flip, -hi, lo)
        b = np.where(flip, -lo, hi)
        pa, pb = special.ndtr(a), special.ndtr(b)
        mass = pb - pa
        weight *= mass
        if c < m - 1:
            u = np.clip(pa + points[None, :, c] * mass, 1e-300, 1.0 - 1e-16)
            draw = special.ndtri(u)
            e[:, :, c] = np.where(flip, -draw, draw)
    return np.asarray(weight.mean(axis=1), dtype=float)
