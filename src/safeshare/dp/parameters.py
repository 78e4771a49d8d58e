r"""The parameter calculus of differential privacy under sampling (thesis §4.5.2).

Li, Qardaji and Su (2012, "On sampling, anonymization, and differential
privacy", Theorem 5 and its epsilon-safe corollary) show that sampling every
record independently with probability ``beta`` and then k-anonymizing with a
generalization chosen by an ``epsilon'``-differentially private procedure
(suppressing every class with fewer than ``k`` records) satisfies
``(beta, epsilon, delta)``-DPS whenever

.. math::

    \\epsilon \\ge -\\ln(1 - \\beta) + \\epsilon', \\qquad
    \\delta = D(k, \\beta, \\epsilon - \\epsilon'),

    D(k, \\beta, \\epsilon) = \\max_{n:\\ \\lceil k/\\gamma - 1 \\rceil \\le n \\le N}
        \\sum_{j > \\gamma n}^{n} f(j; n, \\beta), \\qquad
    \\gamma = \\frac{e^{\\epsilon} - 1 + \\beta}{e^{\\epsilon}},

with ``f(j; n, beta)`` the binomial probability mass function and ``N`` the
number of records of the input (thesis §4.5.2; REFERENCE.md G). The sum is
over ``j`` STRICTLY greater than ``gamma * n``: it is the upper tail
``P[Bin(n, beta) >= floor(gamma n) + 1]``.

How :func:`d_function` computes ``D`` exactly
----------------------------------------------

*Every* ``n`` of the range is accounted for, not just its first terms (the
thesis' footnote 3 computed only the first few; ARX and the R code of
Cardell-Oliver stop with a looser bound or after ``n_m + 10``).

1. **Only block ends can be maxima.** Write ``m(n) = floor(gamma n) + 1``.
   On a block of consecutive ``n`` with the same ``m``, the tail
   ``P[Bin(n, beta) >= m]`` is non-decreasing in ``n`` (a binomial with one
   more trial stochastically dominates: couple ``Bin(n+1) = Bin(n) + Bernoulli``).
   So the maximum over a block is at its last ``n`` (or at ``N``), and only
   those ``n`` (about ``gamma`` of all of them) are evaluated.
2. **Each tail in log space.** ``P[Bin(n, beta) >= m] = I_beta(m, n - m + 1)``
   (the regularized incomplete beta function, computed by
   :func:`scipy.special.betainc` to about 1e-14 relative). Where that
   underflows (below ``1e-280``), the logarithm is computed directly:
   ``log f(m; n, beta)`` with Loader's saddle-point expansion (``stirlerr``
   and ``bd0``, accurate to about 1e-15 relative even for ``n = 1e7``) plus
   the logarithm of ``sum_{i >= 0} prod_{t < i} r_{m+t}``, with
   ``r_j = f(j+1)/f(j) = (n - j) beta / ((j + 1)(1 - beta))``. The ratios are
   below 1 and decreasing for ``j >= m > beta n``, so the series is summed
   until the remainder, bounded by the geometric tail ``term r / (1 - r)``,
   is below 1e-17 of the sum. Values far below ``1e-300`` are therefore
   reported as logarithms, never as 0.
3. **A rigorous early stop.** For ``gamma > beta`` (always: ``gamma - beta =
   (1 - beta)(1 - e^{-epsilon}) > 0``) the Chernoff bound gives, for every ``n``,

   .. math::

       a_n = P[Bin(n, \\beta) > \\gamma n] \\le P[Bin(n, \\beta) \\ge \\gamma n]
           \\le C_n = \\exp(-n\\, KL(\\gamma \\| \\beta)),

   ``KL(g || b) = g ln(g/b) + (1-g) ln((1-g)/(1-b)) > 0``. When ``gamma`` is
   close to ``beta`` the Chernoff bound is loose, and the Berry-Esseen
   inequality is tighter: with ``sigma^2 = beta(1-beta)``,
   ``rho = E|B - beta|^3 = beta(1-beta)(beta^2 + (1-beta)^2)`` and the
   proven constant ``C_BE = 0.56`` (Shevtsova 2010),

   .. math::

       a_n \le \bar\Phi\Big(\frac{(\gamma - \beta)\sqrt n}{\sigma}\Big)
           + \frac{C_{BE}\, \rho}{\sigma^3 \sqrt n} = B_n .

   Both ``C_n`` and ``B_n`` are non-increasing in ``n``, hence so is
   ``U_n = min(C_n, B_n)``. *Proof of the stop:* the ``n`` are scanned in
   increasing order, keeping the running maximum ``M`` of the terms seen.
   Once ``M >= U_{n'}`` for the first unscanned ``n'``, every later term
   satisfies ``a_n <= U_n <= U_{n'} <= M``, so no later term can raise the
   maximum and ``D = M``. If the bound never drops below ``M`` the scan
   simply runs to ``N``. (ARX uses the weaker Poisson-type bound
   ``exp(-n(gamma ln(gamma/beta) - (gamma - beta)))``; the KL exponent is
   larger by ``(1-gamma) ln((1-gamma)/(1-beta)) + gamma - beta >= 0``, so it
   stops earlier, and is equally rigorous.)

The scan is vectorized in chunks of growing size, so ``N = 10^7`` costs a
few seconds in the worst case (``epsilon - epsilon'`` close to 0) and
milliseconds in the usual one.

Solvers
-------

:func:`solve` answers "given the others, what is the missing one": the
smallest ``k`` with ``delta <= target`` (``D`` is non-increasing in ``k``
because the range of ``n`` shrinks, so bisection is exact), the largest
``epsilon'`` or ``beta``, the smallest ``epsilon``. For the last three the
searches keep the invariant "the returned value satisfies every
constraint", so the answer is always *valid*. ``D`` is NOT monotone in
``beta``: raising ``beta`` raises ``gamma``, which lowers
``n_min = ceil(k/gamma - 1)`` by one at some points, and the first term of
the new range can be smaller than the old maximum (e.g. ``k = 5``,
``epsilon = 0.5``: ``D`` drops from 2.6e-3 at ``beta = 0.099`` to 1.7e-3 at
``beta = 0.101``). The ``beta`` solver therefore scans a grid of 1,000 points before
bisecting, and is optimal to that resolution. In ``epsilon - epsilon'``,
``D`` was non-increasing on every grid the tests tried (slow test), and the
solvers bisect.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy import special

from safeshare.errors import InputError

FloatArray = npt.NDArray[np.float64]

#: Below this, :func:`scipy.special.betainc` is replaced by the log-space series.
_UNDERFLOW = 1e-280
#: First chunk of ``n`` scanned by :func:`d_function`; chunks double up to the cap.
_FIRST_CHUNK = 512
_MAX_CHUNK = 1 << 20
#: Largest ``epsilon - epsilon'`` the solvers try before declaring a target unreachable.
_EPSILON_CAP = 60.0
#: Grid points of the beta solver's scan.
_BETA_GRID = 1000


# --------------------------------------------------------------------------- validation
def _check_open_unit(value: float, name: str, what: str) -> float:
    """``value`` as a float strictly between 0 and 1 (``what`` names it in the error)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InputError(f"{name}: expected a number in (0, 1), got {value!r}")
    if not 0.0 < float(value) < 1.0:
        raise InputError(f"{name}: expected {what} in (0, 1), got {value!r}")
    return float(value)


def check_beta(beta: float, name: str = "beta") -> float:
    return _check_open_unit(beta, name, "a sampling probability")


def _check_positive(value: float, name: str, allow_zero: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InputError(f"{name}: expected a finite number, got {value!r}")
    if value < 0 or (value == 0 and not allow_zero):
        raise InputError(f"{name}: expected a number {'>=' if allow_zero else '>'} 0, got {value!r}")
    return float(value)


def _check_int(value: int, name: str, low: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < low:
        raise InputError(f"{name}: expected an integer >= {low}, got {value!r}")
    return int(value)


def _check_delta(value: float, name: str = "delta") -> float:
    return _check_open_unit(value, name, "a target")


# --------------------------------------------------------------------------- formulas
def gamma(beta: float, epsilon: float) -> float:
    """``gamma = (e^eps - 1 + beta) / e^eps = beta + (1 - beta)(1 - e^{-eps})`` (thesis §4.5.2).

    The second form keeps ``gamma - beta`` accurate when ``epsilon`` is tiny.
    Internally :func:`d_function` works with ``1 - gamma = (1 - beta) e^{-eps}``
    (:func:`gamma_complement`), which stays exact when ``gamma`` rounds to 1.
    """
    beta = check_beta(beta)
    epsilon = _check_positive(epsilon, "epsilon")
    return beta + (1.0 - beta) * -math.expm1(-epsilon)


def gamma_complement(beta: float, epsilon: float) -> float:
    """``1 - gamma = (1 - beta) e^{-epsilon}``, accurate even when ``gamma`` rounds to 1."""
    return (1.0 - beta) * math.exp(-epsilon)


def epsilon_min(beta: float, epsilon_prime: float = 0.0) -> float:
    """The least ``epsilon`` allowed: ``-ln(1 - beta) + epsilon'`` (thesis §4.5.2)."""
    beta = check_beta(beta)
    epsilon_prime = _check_positive(epsilon_prime, "epsilon_prime", allow_zero=True)
    return -math.log1p(-beta) + epsilon_prime


#: Berry-Esseen constant for i.i.d. summands (Shevtsova 2010 proves C <= 0.5600).
BERRY_ESSEEN_C = 0.56


class _TailBound:
    """``log U_n``: a non-increasing upper bound on ``P[Bin(n, beta) > gamma n]`` (module docstring)."""

    def __init__(self, beta: float, epsilon: float) -> None:
        c = gamma_complement(beta, epsilon)
        # KL(gamma || beta) with 1 - gamma = c and c / (1 - beta) = e^{-eps}, term by term
        self.kl = max((1.0 - c) * (math.log1p(-c) - math.log(beta)) - c * epsilon, 0.0)
        sigma = math.sqrt(beta * (1.0 - beta))
        self.t = (1.0 - beta) * -math.expm1(-epsilon) / sigma
        self.lyapunov = BERRY_ESSEEN_C * (beta * beta + (1.0 - beta) ** 2) / sigma

    def log_upper(self, n: int) -> float:
        chernoff = -n * self.kl
        root = math.sqrt(n)
        berry_esseen = float(special.ndtr(-self.t * root)) + self.lyapunov / root
        return min(chernoff, math.log(berry_esseen)) if berry_esseen > 0 else chernoff


def n_min(k: int, complement: float) -> int:
    """``ceil(k / gamma - 1)``, the first ``n`` of the range of ``D``.

    With ``c = 1 - gamma``: ``k / gamma - 1 = (k - 1) + k c / (1 - c)``, so the
    ceiling is ``k - 1 + ceil(k c / (1 - c))``, computed without the
    cancellation of ``k / gamma - 1`` when ``gamma`` is close to 1.
    """
    return k - 1 + math.ceil(k * complement / (1.0 - complement))


def tail_threshold(n: npt.ArrayLike, complement: float) -> npt.NDArray[np.int64]:
    """``floor(gamma n) + 1``: the smallest ``j`` with ``j > gamma n`` (the sum is strict).

    Computed as ``n - ceil(n c) + 1`` with ``c = 1 - gamma`` (``floor(n - x) = n - ceil(x)``),
    which stays exact when ``gamma`` rounds to 1 in floating point.
    """
    nn = np.asarray(n, dtype=np.int64)
    return nn - np.ceil(nn.astype(np.float64) * complement).astype(np.int64) + 1


# --------------------------------------------------------------------------- log pmf (Loader)
_STIRLERR_SMALL = np.array(
    [
        float(special.gammaln(i + 1.0) - (i + 0.5) * math.log(i) + i - 0.5 * math.log(2 * math.pi))
        if i > 0
        else 0.0
        for i in range(16)
    ]
)


def _stirlerr(n: FloatArray) -> FloatArray:
    """``log(n!) - log(sqrt(2 pi n) (n/e)^n)`` (Loader 2000), vectorized, for ``n >= 1``."""
    out = np.empty_like(n)
    small = n <= 15
    if small.any():
        out[small] = _STIRLERR_SMALL[n[small].astype(np.int64)]
    big = ~small
    if big.any():
        x = n[big]
        x2 = x * x
        s0, s1, s2, s3, s4 = 1 / 12, 1 / 360, 1 / 1260, 1 / 1680, 1 / 1188
        out[big] = (s0 - (s1 - (s2 - (s3 - s4 / x2) / x2) / x2) / x2) / x
    return out


def _bd0(x: FloatArray, mean: FloatArray) -> FloatArray:
    """``x log(x / mean) + mean - x``, the deviance term, without cancellation (Loader 2000)."""
    out = x * np.log(x / mean) + mean - x
    near = np.abs(x - mean) < 0.1 * (x + mean)
    if near.any():
        xs, ms = x[near], mean[near]
        v = (xs - ms) / (xs + ms)
        s = (xs - ms) * v
        ej = 2.0 * xs * v
        v2 = v * v
        for j in range(1, 200):
            ej = ej * v2
            s1 = s + ej / (2 * j + 1)
            if np.array_equal(s1, s):
                break
            s = s1
        out[near] = s
    return out


def log_binomial_pmf(j: npt.ArrayLike, n: npt.ArrayLike, beta: float) -> FloatArray:
    """``log f(j; n, beta)`` accurate to ~1e-15 relative for any ``n`` (Loader's algorithm)."""
    jj = np.asarray(j, dtype=np.float64)
    nn = np.asarray(n, dtype=np.float64)
    jj, nn = np.broadcast_arrays(jj, nn)
    out = np.full(jj.shape, -np.inf)
    lb, lq = math.log(beta), math.log1p(-beta)
    zero = jj == 0
    full = jj == nn
    inside = (jj > 0) & (jj < nn)
    out[zero] = nn[zero] * lq
    out[full & ~zero] = nn[full & ~zero] * lb
    if inside.any():
        x, m = jj[inside], nn[inside]
        lc = _stirlerr(m) - _stirlerr(x) - _stirlerr(m - x)
        lc -= _bd0(x, m * beta) + _bd0(m - x, m * (1.0 - beta))
        out[inside] = lc + 0.5 * np.log(m / (2.0 * math.pi * x * (m - x)))
    return out


def _log_tail_series(n: FloatArray, m: FloatArray, beta: float) -> FloatArray:
    """``log P[Bin(n, beta) >= m]`` for ``m > n beta``: log pmf(m) + log of the ratio series."""
    odds = beta / (1.0 - beta)
    total = np.ones_like(n)
    term = np.ones_like(n)
    j = m.copy()
    active = np.ones(n.shape, dtype=bool)
    for _ in range(1_000_000):
        idx = np.flatnonzero(active)
        if idx.size == 0:
            break
        r = (n[idx] - j[idx]) / (j[idx] + 1.0) * odds
        term[idx] *= r
        total[idx] += term[idx]
        j[idx] += 1.0
        # the remaining terms are bounded by term * r / (1 - r) (ratios decrease)
        with np.errstate(divide="ignore", invalid="ignore"):
            rest = np.where(r < 1.0, term[idx] * r / (1.0 - r), np.inf)
        done = (j[idx] >= n[idx]) | (term[idx] == 0.0) | (rest <= 1e-17 * total[idx])
        active[idx[done]] = False
    return log_binomial_pmf(m, n, beta) + np.log(total)


def log_binomial_upper_tail(n: npt.ArrayLike, m: npt.ArrayLike, beta: float) -> FloatArray:
    """``log P[Bin(n, beta) >= m]``, vectorized, without underflow (see the module docstring).

    ``m`` must satisfy ``n * beta < m <= n`` (the upper tail beyond the mean),
    which holds for ``m = floor(gamma n) + 1`` since ``gamma > beta``.
    """
    nn = np.asarray(n, dtype=np.float64)
    mm = np.asarray(m, dtype=np.float64)
    nn, mm = np.broadcast_arrays(nn, mm)
    nn, mm = nn.astype(np.float64, copy=True), mm.astype(np.float64, copy=True)
    with np.errstate(under="ignore"):
        direct = special.betainc(mm, nn - mm + 1.0, beta)
    out = np.empty_like(nn)
    ok = direct >= _UNDERFLOW
    out[ok] = np.log(direct[ok])
    low = ~ok
    if low.any():
        out[low] = _log_tail_series(nn[low], mm[low], beta)
    return out


# --------------------------------------------------------------------------- D(k, beta, eps)
@dataclass(frozen=True)
class DValue:
    """``D(k, beta, epsilon)`` with how it was found.

    Attributes
    ----------
    log_value: natural logarithm of ``D`` (``-inf`` when the range of ``n`` is empty).
    n_argmax: the ``n`` at which the maximum is attained (``None`` when empty).
    n_min: ``ceil(k / gamma - 1)``.
    n_records: ``N``, the last ``n`` of the range.
    n_scanned: the last ``n`` whose term was accounted for exactly; every later
        term is below the maximum by the Chernoff bound.
    terms_evaluated: tails computed (block ends only).
    """

    log_value: float
    n_argmax: int | None
    n_min: int
    n_records: int
    n_scanned: int
    terms_evaluated: int

    @property
    def value(self) -> float:
        """``D`` as a float (0.0 only when it is below the float range; see :attr:`log_value`)."""
        return math.exp(self.log_value) if self.log_value > -745.2 else 0.0

    @property
    def log10_value(self) -> float:
        return self.log_value / math.log(10.0)

    def scientific(self, digits: int = 4) -> str:
        return format_log10(self.log10_value, digits)


def format_log10(log10_value: float, digits: int = 4) -> str:
    """Scientific notation of ``10 ** log10_value`` even far outside the float range."""
    if log10_value == -math.inf:
        return "0"
    exponent = math.floor(log10_value)
    mantissa = 10.0 ** (log10_value - exponent)
    if mantissa >= 10.0 - 0.5 * 10.0 ** (1 - digits):
        mantissa, exponent = 1.0, exponent + 1
    return f"{mantissa:.{digits - 1}f}e{exponent:+03d}"


def d_function(k: int, beta: float, epsilon: float, n_records: int) -> DValue:
    """``D(k, beta, epsilon)`` over ``ceil(k/gamma - 1) <= n <= n_records`` (thesis §4.5.2).

    Exact up to floating-point rounding of each term (about 1e-14 relative):
    every ``n`` of the range is accounted for, with the rigorous early stop
    proven in the module docstring.
    """
    k = _check_int(k, "k")
    beta = check_beta(beta)
    epsilon = _check_positive(epsilon, "epsilon")
    n_records = _check_int(n_records, "n (number of records)")
    c = gamma_complement(beta, epsilon)
    lo = n_min(k, c)
    if lo > n_records:
        return DValue(-math.inf, None, lo, n_records, n_records, 0)
    bound = _TailBound(beta, epsilon)
    best, argmax, evaluated = -math.inf, None, 0
    start, chunk = max(lo, 1), _FIRST_CHUNK
    scanned = start - 1
    while start <= n_records:
        stop = min(n_records, start + chunk - 1)
        ns = np.arange(start, stop + 2, dtype=np.int64)  # one extra to detect the last block end
        thresholds = tail_threshold(ns, c)
        ends = np.flatnonzero(thresholds[1:] > thresholds[:-1])
        cand = ns[:-1][ends]
        if stop == n_records and (cand.size == 0 or cand[-1] != n_records):
            cand = np.append(cand, n_records)
        if cand.size:
            logs = log_binomial_upper_tail(cand, tail_threshold(cand, c), beta)
            evaluated += int(cand.size)
            i = int(np.argmax(logs))
            if logs[i] > best:
                best, argmax = float(logs[i]), int(cand[i])
        scanned = stop
        # Every n > stop has a_n <= U_{stop+1} <= best: stop.
        if stop == n_records or best >= bound.log_upper(stop + 1):
            break
        start, chunk = stop + 1, min(2 * chunk, _MAX_CHUNK)
    return DValue(best, argmax, lo, n_records, scanned, evaluated)


def d_first_terms(k: int, beta: float, epsilon: float, n_records: int, terms: int = 10) -> DValue:
    """``D`` with the maximum over the first ``terms`` values of ``n`` only.

    This is NOT ``D``: it is what the thesis' footnote 3 describes (and what the
    R code of Cardell-Oliver does with ``n_m .. n_m + 10``), kept to explain
    the thesis' "k = 50" (``safeshare dp params --grid``).
    """
    c = gamma_complement(beta, epsilon)
    lo = n_min(k, c)
    hi = min(n_records, lo + terms - 1)
    if lo > hi:
        return DValue(-math.inf, None, lo, n_records, hi, 0)
    ns = np.arange(max(lo, 1), hi + 1, dtype=np.int64)
    logs = log_binomial_upper_tail(ns, tail_threshold(ns, c), beta)
    i = int(np.argmax(logs))
    return DValue(float(logs[i]), int(ns[i]), lo, n_records, hi, int(ns.size))


# --------------------------------------------------------------------------- DPS parameters
@dataclass(frozen=True)
class DPSParameters:
    """A consistent set of ``(beta, epsilon, delta)``-DPS parameters for epsilon-safe LA.

    ``delta = D(k, beta, epsilon - epsilon')``; ``solved`` names the quantities
    that :func:`solve` computed rather than received.
    """

    k: int
    beta: float
    epsilon: float
    epsilon_prime: float
    n_records: int
    gamma: float
    epsilon_min: float
    delta: float
    log_delta: float
    n_argmax: int | None
    n_min: int
    delta_target: float | None = None
    solved: tuple[str, ...] = field(default_factory=tuple)

    @property
    def log10_delta(self) -> float:
        return self.log_delta / math.log(10.0)

    @property
    def meets_target(self) -> bool | None:
        if self.delta_target is None:
            return None
        return self.log_delta <= math.log(self.delta_target)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["solved"] = list(self.solved)
        out["log10_delta"] = self.log10_delta
        out["delta_scientific"] = format_log10(self.log10_delta)
        out["meets_target"] = self.meets_target
        if math.isinf(self.log_delta):
            out["log_delta"] = None
            out["log10_delta"] = None
        return out


def dps_parameters(
    k: int,
    beta: float,
    epsilon: float,
    epsilon_prime: float,
    n_records: int,
    delta_target: float | None = None,
    solved: Sequence[str] = (),
) -> DPSParameters:
    """Check ``epsilon >= -ln(1 - beta) + epsilon'``; compute ``delta = D(k, beta, epsilon - epsilon')``."""
    k = _check_int(k, "k")
    beta = check_beta(beta)
    epsilon = _check_positive(epsilon, "epsilon")
    epsilon_prime = _check_positive(epsilon_prime, "epsilon_prime", allow_zero=True)
    n_records = _check_int(n_records, "n (number of records)")
    if n_records < k:
        raise InputError(f"n: the number of records ({n_records}) is smaller than k = {k}")
    e_min = epsilon_min(beta, epsilon_prime)
    if epsilon < e_min * (1 - 1e-12):
        raise InputError(
            f"epsilon = {epsilon:g} is below -ln(1 - beta) + epsilon' = {e_min:.6g} "
            f"(beta = {beta:g}, epsilon' = {epsilon_prime:g}); raise epsilon or lower beta or epsilon'"
        )
    gap = max(epsilon - epsilon_prime, -math.log1p(-beta))
    d = d_function(k, beta, gap, n_records)
    return DPSParameters(
        k=k,
        beta=beta,
        epsilon=epsilon,
        epsilon_prime=epsilon_prime,
        n_records=n_records,
        gamma=gamma(beta, gap),
        epsilon_min=e_min,
        delta=d.value,
        log_delta=d.log_value,
        n_argmax=d.n_argmax,
        n_min=d.n_min,
        delta_target=delta_target,
        solved=tuple(solved),
    )


# --------------------------------------------------------------------------- solvers
def smallest_k(beta: float, gap: float, delta: float, n_records: int) -> int:
    """The smallest ``k`` with ``D(k, beta, gap) <= delta`` (``gap = epsilon - epsilon'``).

    Exact: ``D`` is non-increasing in ``k`` (its range of ``n`` shrinks).
    """
    log_target = math.log(_check_delta(delta))
    n_records = _check_int(n_records, "n (number of records)")

    def ok(k: int) -> bool:
        return d_function(k, beta, gap, n_records).log_value <= log_target

    if not ok(n_records):
        raise InputError(
            f"no k <= n = {n_records} gives delta <= {delta:g} for beta = {beta:g} and "
            f"epsilon - epsilon' = {gap:g}; raise epsilon, lower beta, or use more records"
        )
    lo, hi = 0, n_records  # ok(hi) holds; lo is either 0 or fails
    step = 1
    while step < hi and not ok(step):  # gallop: the answer is usually small
        lo, step = step, step * 2
    hi = min(hi, step)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return hi


def _smallest_gap(k: int, beta: float, delta: float, n_records: int, floor: float) -> float:
    """The smallest ``epsilon - epsilon' >= floor`` with ``D(k, beta, .) <= delta`` (bisection)."""
    log_target = math.log(_check_delta(delta))

    def ok(gap: float) -> bool:
        return d_function(k, beta, gap, n_records).log_value <= log_target

    if ok(floor):
        return floor
    hi = max(2.0 * floor, 0.05)
    while not ok(hi):
        if hi > _EPSILON_CAP:
            raise InputError(
                f"no epsilon - epsilon' up to {_EPSILON_CAP:g} gives delta <= {delta:g} with k = {k} and "
                f"beta = {beta:g} (for large epsilon, delta tends to about beta^k); raise k or lower beta"
            )
        hi *= 2.0
    lo = floor
    while hi - lo > 1e-12 * max(1.0, hi):
        mid = 0.5 * (lo + hi)
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return hi


def _largest_beta(k: int, epsilon_gap: float, delta: float | None, n_records: int) -> float:
    """Largest ``beta`` with ``-ln(1 - beta) <= gap`` and (if given) ``D(k, beta, gap) <= delta``.

    ``D`` is not monotone in ``beta`` (module docstring), so the search scans a
    grid of ``_BETA_GRID`` points downward from the largest allowed ``beta``,
    then bisects between the first satisfying point and the failing one above it.
    """
    top = -math.expm1(-epsilon_gap)  # 1 - e^{-gap}
    if delta is None:
        return top
    log_target = math.log(_check_delta(delta))

    def ok(b: float) -> bool:
        return d_function(k, b, epsilon_gap, n_records).log_value <= log_target

    if ok(top):
        return top
    grid = np.linspace(top, 0.0, _BETA_GRID + 1)[1:-1]
    hi, lo = top, None
    for b in grid:
        if ok(float(b)):
            lo = float(b)
            break
        hi = float(b)
    if lo is None:
        raise InputError(f"no beta gives delta <= {delta:g} with k = {k}; raise k or epsilon")
    while hi - lo > 1e-12:
        mid = 0.5 * (lo + hi)
        if ok(mid):
            lo = mid
        else:
            hi = mid
    return lo


def solve(
    *,
    k: int | None = None,
    beta: float | None = None,
    epsilon: float | None = None,
    epsilon_prime: float | None = None,
    delta: float | None = None,
    n_records: int,
) -> DPSParameters:
    """Complete a set of DPS parameters (see the module docstring).

    Give all of ``k, beta, epsilon, epsilon_prime`` to compute ``delta``, or
    leave one out to solve for it:

    * ``k``: the smallest ``k`` with ``delta <= delta`` target (target required);
    * ``epsilon``: the smallest allowed ``epsilon`` (and ``delta`` <= target if given);
    * ``epsilon_prime``: the largest allowed ``epsilon'`` (same);
    * ``beta``: the largest allowed ``beta`` (same).

    Leaving out both ``k`` and ``epsilon_prime`` (with ``beta``, ``epsilon`` and a
    target) follows thesis §6.2.1: ``epsilon'`` is set to its largest allowed
    value ``epsilon + ln(1 - beta)``, then the smallest ``k`` is found.
    """
    n_records = _check_int(n_records, "n (number of records)")
    if delta is not None:
        delta = _check_delta(delta)
    if beta is not None:
        beta = check_beta(beta)
    if epsilon is not None:
        epsilon = _check_positive(epsilon, "epsilon")
    if epsilon_prime is not None:
        epsilon_prime = _check_positive(epsilon_prime, "epsilon_prime", allow_zero=True)
    if k is not None:
        k = _check_int(k, "k")
    missing = [
        name
        for name, v in (("k", k), ("beta", beta), ("epsilon", epsilon), ("epsilon_prime", epsilon_prime))
        if v is None
    ]
    if missing == ["k", "epsilon_prime"] and beta is not None and epsilon is not None:
        epsilon_prime = epsilon + math.log1p(-beta)
        if epsilon_prime < 0:
            raise InputError(
                f"epsilon = {epsilon:g} is below -ln(1 - beta) = {-math.log1p(-beta):.6g}: "
                "no epsilon' >= 0 is allowed"
            )
        missing = ["k"]
        solved = ["epsilon_prime"]
    else:
        solved = []
    if len(missing) > 1:
        raise InputError(
            f"cannot solve for {' and '.join(missing)} at once: give all but one of "
            "k, beta, epsilon, epsilon-prime (plus a delta target)"
        )
    target = delta
    if missing == ["k"]:
        assert beta is not None and epsilon is not None and epsilon_prime is not None
        if target is None:
            raise InputError("solving for k needs a delta target (--delta)")
        gap = epsilon - epsilon_prime
        if gap < -math.log1p(-beta) * (1 - 1e-12):
            raise InputError(
                f"epsilon = {epsilon:g} is below -ln(1 - beta) + epsilon' = "
                f"{epsilon_min(beta, epsilon_prime):.6g}"
            )
        gap = max(gap, -math.log1p(-beta))
        k = smallest_k(beta, gap, target, n_records)
        solved.append("k")
    elif missing == ["epsilon"]:
        assert k is not None and beta is not None and epsilon_prime is not None
        floor = -math.log1p(-beta)
        gap = floor if target is None else _smallest_gap(k, beta, target, n_records, floor)
        epsilon = epsilon_prime + gap
        solved.append("epsilon")
    elif missing == ["epsilon_prime"]:
        assert k is not None and beta is not None and epsilon is not None
        floor = -math.log1p(-beta)
        gap = floor if target is None else _smallest_gap(k, beta, target, n_records, floor)
        epsilon_prime = epsilon - gap
        if epsilon_prime < 0:
            raise InputError(
                f"no epsilon' >= 0 works: epsilon = {epsilon:g} is below the {gap:.6g} that beta = {beta:g}"
                + ("" if target is None else f" and delta <= {target:g}")
                + " require"
            )
        epsilon_prime = max(epsilon_prime, 0.0)
        solved.append("epsilon_prime")
    elif missing == ["beta"]:
        assert k is not None and epsilon is not None and epsilon_prime is not None
        gap = epsilon - epsilon_prime
        if gap <= 0:
            raise InputError(f"epsilon' = {epsilon_prime:g} must be below epsilon = {epsilon:g}")
        beta = _largest_beta(k, gap, target, n_records)
        solved.append("beta")
    assert k is not None and beta is not None and epsilon is not None and epsilon_prime is not None
    return dps_parameters(k, beta, epsilon, epsilon_prime, n_records, target, solved)


# --------------------------------------------------------------------------- thesis §6.2.1 grid
BETA_GRID = (0.01, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9)
EPSILON_GRID = (0.1, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0)
THESIS_K = 50


@dataclass(frozen=True)
class GridRow:
    """One ``(beta, epsilon)`` cell of the §6.2.1 table."""

    beta: float
    epsilon: float
    epsilon_prime: float | None
    k_min: int | None
    k_min_first_terms: int | None
    delta_at_thesis_k: float | None
    log10_delta_at_thesis_k: float | None
    n_argmax_at_thesis_k: int | None


def parameter_grid(
    betas: Sequence[float] = BETA_GRID,
    epsilons: Sequence[float] = EPSILON_GRID,
    delta: float = 1e-4,
    n_records: int = 32561,
    first_terms: int = 10,
) -> list[GridRow]:
    """Thesis §6.2.1: for each ``(beta, epsilon)``, the largest ``epsilon' = epsilon + ln(1 - beta)``
    (cells where it is negative are skipped, as in the thesis), then the smallest ``k`` with
    ``delta <= delta`` target, exactly and with the max over the first ``first_terms`` ``n`` only.
    """
    rows: list[GridRow] = []
    cache: dict[float, tuple[int, int, DValue]] = {}
    for b in betas:
        for e in epsilons:
            e_prime = e + math.log1p(-b)
            if e_prime <= 0:
                rows.append(GridRow(b, e, None, None, None, None, None, None))
                continue
            if b not in cache:
                gap = -math.log1p(-b)  # epsilon - epsilon' at the largest epsilon'
                exact = smallest_k(b, gap, delta, n_records)
                trunc = _smallest_k_first_terms(b, gap, delta, n_records, first_terms)
                at50 = d_function(THESIS_K, b, gap, n_records)
                cache[b] = (exact, trunc, at50)
            exact, trunc, at50 = cache[b]
            rows.append(GridRow(b, e, e_prime, exact, trunc, at50.value, at50.log10_value, at50.n_argmax))
    return rows


def _smallest_k_first_terms(beta: float, gap: float, delta: float, n_records: int, terms: int) -> int:
    log_target = math.log(delta)
    for k in range(1, n_records + 1):
        if d_first_terms(k, beta, gap, n_records, terms).log_value <= log_target:
            return k
    raise InputError(f"no k gives delta <= {delta:g} even with the first {terms} terms")
