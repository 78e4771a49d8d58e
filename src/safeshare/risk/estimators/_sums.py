"""Expectations over a discrete posterior of a population class size, in O(1) per class size.

The population-uniqueness models (Pitman, SNB, Benedetti-Franconi's negative binomial) give,
for a sample class of ``f`` records, a posterior over the number ``y = F - f`` of the class's
people outside the sample, ``y`` in ``[lo, hi]`` with ``hi`` up to ``N - n`` (10^9 and more).
What B needs is ``E[1/F]`` (and ``E[1/F^2]`` for its interval); a plain sum over ``y`` costs
``O(N)`` per class size. :func:`posterior_moments` computes both in a fixed number of
evaluations of the log-weights per class size, whatever ``N``:

1. **window**: the mode of ``log w`` (a coarse grid geometric from both ends of ``[lo, hi]``,
   refined by golden section) and, by bisection, the points where ``log w`` has fallen by
   1/2 (the local width ``sigma`` on each side) and by ``TAIL = 40`` (beyond which the
   weights are below ``e^-40`` of the largest: they are dropped). Grid points above that
   level outside the bisected window widen it (no second mode is lost);
2. **exact sums** over the first and last ``K = 64`` integers of the window, and over
   ``±K`` integers around the mode when it is sharp (``sigma < 8``): there the weights
   change at the scale of one integer (a power law near ``lo``, a narrow peak);
3. **quadrature** of the rest: the sum over the integers of a segment equals the integral
   of the smooth continuation of ``w`` over ``[a - 1/2, b + 1/2]`` up to the Poisson
   summation terms, ``exp(-2 pi^2 sigma^2)`` relative for a feature of width ``sigma``
   (``< 1e-100`` at ``sigma >= 8``); the integral is a composite 8-point Gauss-Legendre rule
   on panels geometric from both ends of each segment (from the exact block in units of
   ``K``, from the mode in units of ``sigma``), so that a power law, a peak and an
   exponential tail are each resolved by a few panels.

The log-weights of every row are evaluated in one vectorized call per step, so a histogram
of a few hundred class sizes costs a few thousand array operations in total; every step is
a bounded Python-level loop (an interrupt is answered at once). Accuracy is tested against
exact sums and mpmath (``tests/test_risk_estimators.py``): relative error below 1e-9.

:func:`log_gamma_ratio` (``ln Gamma(x + d) - ln Gamma(x)``) keeps the weights exact for
``x`` near 10^9, where a difference of two ``gammaln`` values (each about 2e10) would lose
six digits.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from scipy import special

LogWeights = Callable[[np.ndarray, np.ndarray], np.ndarray]
"""``logw(rows, y)``: the unnormalised log posterior weight of ``y`` (real, the smooth
continuation) for each row index in ``rows``; the two arrays have the same shape."""

TAIL = 40.0
K = 64
SHARP = 8.0
_GRID = 24
_STEPS = np.append(np.expm1(np.arange(96) * np.log(1.5)), np.inf)  # 1.5^k - 1, then the end
_GL_X, _GL_W = np.polynomial.legendre.leggauss(8)
_STIRLING_MIN = 8.0
_EXP_MAX = 600.0  # weights are relative to the largest found; never let exp overflow


def _stirling_tail(z: np.ndarray) -> np.ndarray:
    """``ln Gamma(z) - [(z - 1/2) ln z - z + ln(2 pi)/2]`` for ``z >= 8`` (error below 1e-11)."""
    r = 1.0 / z
    r2 = r * r
    return r * (1 / 12 - r2 * (1 / 360 - r2 * (1 / 1260 - r2 / 1680)))


def log_gamma_ratio(x: np.ndarray | float, d: np.ndarray | float) -> np.ndarray:
    """``ln Gamma(x + d) - ln Gamma(x)`` for ``x > 0``, ``x + d > 0``, accurate for large ``x``.

    For ``x, x + d >= 8``: Stirling's series written as differences,
    ``(x - 1/2) log1p(d/x) + d ln(x + d) - d + S(x + d) - S(x)``; below, ``gammaln``.
    """
    x, d = np.broadcast_arrays(np.asarray(x, dtype=float), np.asarray(d, dtype=float))
    z = x + d
    big = (x >= _STIRLING_MIN) & (z >= _STIRLING_MIN)
    if big.all():
        return np.asarray(
            (x - 0.5) * np.log1p(d / x) + d * np.log(z) - d + _stirling_tail(z) - _stirling_tail(x)
        )
    out = np.empty(x.shape)
    if big.any():
        xb, db, zb = x[big], d[big], z[big]
        out[big] = (
            (xb - 0.5) * np.log1p(db / xb) + db * np.log(zb) - db + _stirling_tail(zb) - _stirling_tail(xb)
        )
    small = ~big
    out[small] = special.gammaln(z[small]) - special.gammaln(x[small])
    return out


def log_gamma_ratio1(x: float, d: float) -> float:
    """:func:`log_gamma_ratio` of two Python floats (no array overhead: optimizers call it often)."""
    z = x + d
    if x >= _STIRLING_MIN and z >= _STIRLING_MIN:
        rx, rz = 1.0 / x, 1.0 / z
        sx = rx * (1 / 12 - rx * rx * (1 / 360 - rx * rx * (1 / 1260 - rx * rx / 1680)))
        sz = rz * (1 / 12 - rz * rz * (1 / 360 - rz * rz * (1 / 1260 - rz * rz / 1680)))
        return (x - 0.5) * math.log1p(d / x) + d * math.log(z) - d + sz - sx
    return math.lgamma(z) - math.lgamma(x)


def digamma_diff1(x: float, d: float) -> float:
    """:func:`digamma_diff` of two Python floats."""
    z = x + d
    if x >= _STIRLING_MIN and z >= _STIRLING_MIN:

        def tail(v: float) -> float:
            r = 1.0 / v
            r2 = r * r
            return -0.5 * r - r2 * (1 / 12 - r2 * (1 / 120 - r2 * (1 / 252 - r2 * (1 / 240 - r2 / 132))))

        return math.log1p(d / x) + tail(z) - tail(x)
    return float(special.digamma(z) - special.digamma(x))


def digamma_diff(x: np.ndarray | float, d: np.ndarray | float) -> np.ndarray:
    """``psi(x + d) - psi(x)``, accurate for large ``x`` (the derivative of :func:`log_gamma_ratio`)."""
    x, d = np.broadcast_arrays(np.asarray(x, dtype=float), np.asarray(d, dtype=float))
    z = x + d
    big = (x >= _STIRLING_MIN) & (z >= _STIRLING_MIN)
    out = np.empty(x.shape)

    def tail(v: np.ndarray) -> np.ndarray:  # psi(v) - ln v
        r = 1.0 / v
        r2 = r * r
        return -0.5 * r - r2 * (1 / 12 - r2 * (1 / 120 - r2 * (1 / 252 - r2 * (1 / 240 - r2 / 132))))

    if big.any():
        out[big] = np.log1p(d[big] / x[big]) + tail(z[big]) - tail(x[big])
    small = ~big
    if small.any():
        out[small] = special.digamma(z[small]) - special.digamma(x[small])
    return out


def _golden_max(logw: LogWeights, rows: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The maximizer of a unimodal ``logw(rows, .)`` in ``[a, b]`` per row (golden section)."""
    g = (np.sqrt(5.0) - 1) / 2
    c = b - g * (b - a)
    d = a + g * (b - a)
    fc, fd = logw(rows, c), logw(rows, d)
    for _ in range(48):
        left = fc >= fd  # the maximum is in [a, d]
        b = np.where(left, d, b)
        a = np.where(left, a, c)
        new = np.where(left, b - g * (b - a), a + g * (b - a))
        fnew = logw(rows, new)
        c, d = np.where(left, new, d), np.where(left, c, new)
        fc, fd = np.where(left, fnew, fd), np.where(left, fc, fnew)
        if np.all(b - a <= 1e-3 * np.maximum(1.0, np.abs(a))):
            break
    return np.asarray(np.where(fc >= fd, c, d))


def _drop_point(
    logw: LogWeights, rows: np.ndarray, mode: np.ndarray, edge: np.ndarray, level: np.ndarray
) -> np.ndarray:
    """Where ``logw`` falls to ``level`` between ``mode`` and ``edge`` (``edge`` if it never does),
    by bisection on the log of the distance from the mode."""
    dist = np.abs(edge - mode)
    sign = np.sign(edge - mode)
    at_edge = logw(rows, edge) >= level
    lo = np.full(mode.shape, np.log(1e-3))
    hi = np.log(np.maximum(dist, 2e-3))
    for _ in range(44):
        mid = (lo + hi) / 2
        above = logw(rows, mode + sign * np.exp(mid)) >= level
        lo = np.where(above, mid, lo)
        hi = np.where(above, hi, mid)
        if np.all(hi - lo < 1e-2):
            break
    return np.where(at_edge | (dist <= 1e-3), edge, mode + sign * np.exp(hi))


def _geometric(start: np.ndarray, end: np.ndarray, unit: np.ndarray) -> np.ndarray:
    """Panel ends from ``start`` toward ``end`` (rows x points) at distances ``unit (r^k - 1)``,
    ``r = 1.5``, clipped to ``end``: each panel at most half as long as its distance from
    ``start`` (plus ``unit``), so that a power law or a peak at ``start`` is resolved; the
    clipped points make empty panels, which are never evaluated."""
    span = np.abs(end - start)[:, None]
    unit = np.maximum(unit, 1e-9)[:, None]
    dist = np.minimum(unit * _STEPS[None, :], span)
    return np.asarray(start[:, None] + np.sign(end - start)[:, None] * dist)


def _exact_sum(
    logw: LogWeights,
    sel: np.ndarray,
    first: np.ndarray,
    last: np.ndarray,
    count: int,
    top: np.ndarray,
    offset: np.ndarray,
    totals: np.ndarray,
) -> None:
    """Add ``sum w, sum w/F, sum w/F^2`` over the integers ``first .. last`` (at most ``count``
    of them) of the rows ``sel``."""
    if sel.size == 0:
        return
    y = first[sel][:, None] + np.arange(count)[None, :]
    keep = y <= last[sel][:, None]
    r = np.broadcast_to(sel[:, None], y.shape)
    with np.errstate(over="ignore", invalid="ignore"):
        w = np.exp(np.minimum(logw(r, y) - top[sel][:, None], _EXP_MAX))
    w = np.where(keep & np.isfinite(w), w, 0.0)
    inv = 1.0 / (offset[sel][:, None] + y)
    totals[0, sel] += w.sum(axis=1)
    totals[1, sel] += (w * inv).sum(axis=1)
    totals[2, sel] += (w * inv * inv).sum(axis=1)


def _end_corrections(
    logw: LogWeights, rows: np.ndarray, ends: np.ndarray, top: np.ndarray, offset: np.ndarray
) -> np.ndarray:
    """The Euler-Maclaurin terms of the midpoint rule at segment ends ``ends`` (rows x E),
    ``-g1/24 + 7 g3/5760`` with ``g1``, ``g3`` the first and third derivatives of
    ``g = (w, w/F, w/F^2)`` (3 x rows x E), by central differences of step ``h = 1/2``
    (fourth-order for ``g1``); one evaluation of the log-weights for every end at once."""
    steps = np.array([1.0, 0.5, -0.5, -1.0])
    x = ends[:, :, None] + steps[None, None, :]  # rows x E x 4
    r = np.broadcast_to(rows[:, None, None], x.shape)
    with np.errstate(over="ignore", invalid="ignore"):
        w = np.exp(np.minimum(logw(r, x) - top[:, None, None], _EXP_MAX))
    inv = 1.0 / (offset[:, None, None] + x)
    out = []
    for p in range(3):
        g = w * inv**p
        g2, g1, m1, m2 = g[..., 0], g[..., 1], g[..., 2], g[..., 3]
        first = (-g2 + 8 * g1 - 8 * m1 + m2) / 6  # (-g(x+2h) + 8g(x+h) - 8g(x-h) + g(x-2h)) / (12h)
        third = (g2 - 2 * g1 + 2 * m1 - m2) * 4  # (g(x+2h) - 2g(x+h) + 2g(x-h) - g(x-2h)) / (2h^3)
        d = -first / 24 + 7 * third / 5760
        out.append(np.where(np.isfinite(d), d, 0.0))
    return np.array(out)


def posterior_moments(
    logw: LogWeights, lo: np.ndarray, hi: np.ndarray, offset: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``E[1/(offset + y)]`` and ``E[1/(offset + y)^2]`` per row under the weights ``exp(logw)``
    on the integers ``y`` of ``[lo, hi]`` (see the module docstring); ``offset >= 1``."""
    lo = np.asarray(lo, dtype=float)
    hi = np.asarray(hi, dtype=float)
    offset = np.asarray(offset, dtype=float)
    R = lo.size
    rows = np.arange(R)
    width = hi - lo

    # 1. the mode, from a grid geometric from both ends, refined by golden section
    t = np.linspace(0.0, 1.0, _GRID)[None, :] * np.log1p(width)[:, None]
    grid = np.concatenate([lo[:, None] + np.expm1(t), hi[:, None] - np.expm1(t)], axis=1)
    grid = np.sort(np.clip(grid, lo[:, None], hi[:, None]), axis=1)
    grid_rows = np.broadcast_to(rows[:, None], grid.shape)
    gl = logw(grid_rows, grid)
    j = np.argmax(gl, axis=1)
    a = grid[rows, np.maximum(j - 1, 0)]
    b = grid[rows, np.minimum(j + 1, grid.shape[1] - 1)]
    mode = _golden_max(logw, rows, a, b)
    top = np.maximum(logw(rows, mode), gl.max(axis=1))

    # 2. widths (a fall of 1/2) and the window (a fall of TAIL) on each side, in one batch
    rr = np.concatenate([rows] * 4)
    edges = np.concatenate([lo, hi, lo, hi])
    levels = np.concatenate([top - 0.5] * 2 + [top - TAIL] * 2)
    drops = _drop_point(logw, rr, np.concatenate([mode] * 4), edges, levels).reshape(4, R)
    sigma_l = np.maximum(mode - drops[0], 0.5)
    sigma_r = np.maximum(drops[1] - mode, 0.5)
    above = gl >= top[:, None] - TAIL  # a grid point above the cut widens the window
    wl = np.minimum(drops[2], np.where(above, grid, np.inf).min(axis=1))
    wr = np.maximum(drops[3], np.where(above, grid, -np.inf).max(axis=1))
    wl = np.maximum(np.floor(wl), lo)
    wr = np.minimum(np.ceil(wr), hi)
    mode_i = np.clip(np.round(mode), wl, wr)

    # 3. exact sums: a narrow window whole; else the first (last) K integers when the window
    # reaches lo (hi), where a power law changes at the scale of one integer, and +-K around a
    # sharp mode
    totals = np.zeros((3, R))
    narrow = wr - wl < 2 * K
    head_n = np.where(narrow, wr - wl + 1, np.where(wl <= lo, K, 0))
    tail_n = np.where(narrow, 0, np.where(wr >= hi, K, 0))
    _exact_sum(logw, np.nonzero(head_n > 0)[0], wl, wl + head_n - 1, 2 * K, top, offset, totals)
    _exact_sum(logw, np.nonzero(tail_n > 0)[0], wr - tail_n + 1, wr, K, top, offset, totals)
    inner_lo, inner_hi = wl + head_n, wr - tail_n  # integers not yet counted
    sharp = (np.minimum(sigma_l, sigma_r) < SHARP) & (inner_hi >= inner_lo)
    m_lo = np.clip(mode_i - K, inner_lo, inner_hi + 1)
    m_hi = np.where(sharp, np.clip(mode_i + K, m_lo - 1, inner_hi), m_lo - 1)
    _exact_sum(logw, np.nonzero(sharp)[0], m_lo, m_hi, 2 * K + 1, top, offset, totals)

    # 4. quadrature of the two remaining segments: [inner_lo, m_lo - 1] and [m_hi + 1, inner_hi]
    # (with no sharp mode, m_lo - 1 = m_hi: the segments meet at the mode)
    mode_c = np.clip(mode, inner_lo - 0.5, inner_hi + 0.5)
    seg_a0 = inner_lo - 0.5
    seg_b1 = np.maximum(inner_hi + 0.5, seg_a0)
    seg_a1 = np.clip(np.where(sharp, m_lo - 0.5, mode_c), seg_a0, seg_b1)
    seg_b0 = np.clip(np.where(sharp, m_hi + 0.5, mode_c), seg_a1, seg_b1)
    # panels geometric from the mode (in units of sigma) and, where a segment starts at an exact
    # block at lo or hi (a power law), from that end too (in units of K)
    kk = np.full(R, float(K))
    parts = [
        _geometric(seg_a1, seg_a0, sigma_l),
        _geometric(seg_b0, seg_b1, sigma_r),
        _geometric(seg_a0, np.where(head_n == K, seg_a1, seg_a0), kk),
        _geometric(seg_b1, np.where(tail_n == K, seg_b0, seg_b1), kk),
    ]
    points = np.sort(np.concatenate(parts, axis=1), axis=1)
    # panels inside (seg_a1, seg_b0) -- the exact block around a sharp mode -- are skipped
    left, right = points[:, :-1], points[:, 1:]
    skip = (left >= seg_a1[:, None]) & (right <= seg_b0[:, None])
    length = np.where(skip, 0.0, right - left)
    live = length > 0
    if live.any():
        pr, pc = np.nonzero(live)
        centre = (left[pr, pc] + right[pr, pc]) / 2
        half = length[pr, pc] / 2
        y = centre[:, None] + half[:, None] * _GL_X[None, :]
        wts = half[:, None] * _GL_W[None, :]
        r2 = np.broadcast_to(pr[:, None], y.shape)
        with np.errstate(over="ignore", invalid="ignore"):
            w = np.exp(np.minimum(logw(r2, y) - top[pr][:, None], _EXP_MAX)) * wts
        w = np.where(np.isfinite(w), w, 0.0)
        inv = 1.0 / (offset[pr][:, None] + y)
        totals[0] += np.bincount(pr, w.sum(axis=1), minlength=R)
        totals[1] += np.bincount(pr, (w * inv).sum(axis=1), minlength=R)
        totals[2] += np.bincount(pr, (w * inv * inv).sum(axis=1), minlength=R)
    # Euler-Maclaurin: sum_{y=a}^{b} g(y) = int_{a-1/2}^{b+1/2} g - [g1]/24 + 7 [g3]/5760 - ...
    ends = np.stack([seg_a0, seg_a1, seg_b0, seg_b1], axis=1)
    corr = _end_corrections(logw, rows, ends, top, offset)  # 3 x rows x 4
    totals += corr[:, :, 1] - corr[:, :, 0] + corr[:, :, 3] - corr[:, :, 2]
    z = totals[0]
    with np.errstate(invalid="ignore", divide="ignore"):
        return totals[1] / z, totals[2] / z
