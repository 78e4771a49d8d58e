"""Monte Carlo forecast of the PK risk of a release policy (paper: Methods, Fig. 1).

The paper's framework: nobody is infected at first; in each period the period's
new cases are drawn *without replacement* from the not-yet-infected people of
the region, every person equally likely (no reinfection); the records are
generalized by the policy and their risk is measured; this is repeated ``n``
times (default 1,000) to give the risk's distribution. This is a risk
*forecast*, not a privacy mechanism: the generator is numpy's PCG64 seeded by
the user for reproducibility.

Measures, for a window of records ``R`` and a policy whose group of a record
``r`` is ``g(r)``:

* **PK_k** = ``|{r in R : |{s in R : g(s) = g(r)}| < k}| / |R|``: the share of
  records in a group of at most ``k - 1`` members (PK11: groups of 10 or fewer).
  For a time series, ``R`` is the *lagging window* of period ``t``: the records
  diagnosed in periods ``t - L + 1 .. t`` (the attacker knows the diagnosis
  date to within ``L`` periods); an empty window has PK 0.
* **marketer risk** (the paper's supplementary measure; Dankar & El Emam 2010)
  of the cumulative release ``C_t`` (every record up to ``t``):
  ``(1 / |C_t|) sum_g f_g / F_g``, with ``f_g`` the released records and
  ``F_g`` the people of the region in group ``g``: the expected share of records
  an attacker who matches the whole population re-identifies.

How it is computed (vectorized across simulations; exact, not approximate):

* One **volume** (a single period, the policy search): the fine-bin counts of
  ``v`` cases are one multivariate hypergeometric draw per simulation
  (``Generator.multivariate_hypergeometric``, one call for all simulations).
* A **series** of ``T`` periods with ``X`` cases in all: drawing period after
  period without replacement is the same as drawing the ``X`` infected people
  at once in a uniformly random order, the first ``x_1`` being period 1's
  cases, and so on: per simulation one ordered sample without replacement of
  the people (``Generator.choice``), looked up to its bin. A period's lagging
  window is then one contiguous slice of each sequence: one ``bincount`` over
  simulations x groups per window (:func:`series_risk`).
* **Common random numbers**: the draws are made once at the fine bins and
  reused for every policy (a policy only relabels bins into groups). Merging
  groups never puts a record into a smaller group, so for every single draw
  PK_k(coarser policy) <= PK_k(finer policy); the empirical quantiles inherit
  this, which keeps the policy search's predicate exactly monotone (see
  :mod:`.search`) and makes policy comparisons far less noisy.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
from scipy import sparse

from safeshare.config.vocabulary import SMALL_CELL, SURVEILLANCE_LAG, SURVEILLANCE_SIMULATIONS
from safeshare.errors import InputError
from safeshare.risk.measures import marketer_risk, pk_share, records_at_risk

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
Grouping = tuple[IntArray, int]  # (group of each fine bin, number of groups)

#: Quantile levels of the reported band (the paper's 95% range).
LOWER, UPPER = 0.025, 0.975
#: Largest (simulations x periods x groups) block held at once by the series path.
_BLOCK = 4_000_000
#: Count cells (simulations x groups) per bincount in the series path: a cache-sized block.
_CACHE_CELLS = 1 << 17


#: Bytes of one int64 block of the volume draw (simulations x populated bins) made at once: the draw is
#: streamed into the narrow counts block by block, so its int64 output never holds every simulation.
_DRAW_BLOCK_BYTES = 64 << 20
#: Share of the available memory a run may plan to use (the rest is the interpreter, pandas, plots...).
MEMORY_SHARE = 0.8


def check_seed(seed: int) -> int:
    """A seed is a whole number >= 0 (numpy's SeedSequence refuses negative entropy)."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise InputError(f"--seed: a whole number >= 0 is required, got {seed!r}")
    return int(seed)


def seeded(seed: int, *key: int) -> np.random.Generator:
    """A generator for one (seed, key...) stream: independent streams per region/volume,
    reproducible whatever else is simulated."""
    seed = check_seed(seed)
    return np.random.default_rng(np.random.SeedSequence(entropy=seed, spawn_key=tuple(int(k) for k in key)))


def available_memory() -> int:
    """Bytes of memory a run may still allocate: psutil's ``available``, or less when the process's
    address space is limited (``ulimit -v``)."""
    import resource

    import psutil

    free = int(psutil.virtual_memory().available)
    limit = resource.getrlimit(resource.RLIMIT_AS)[0]
    if limit != resource.RLIM_INFINITY:
        free = min(free, max(0, int(limit) - int(psutil.Process().memory_info().vms)))
    return free


def require_memory(needed: int, what: str, hint: str = "use fewer --simulations") -> None:
    """Refuse, with the figures, a computation whose arrays would not fit in the memory available
    (:data:`MEMORY_SHARE` of it): estimated before anything is allocated, so a run fails in a moment
    instead of swapping for minutes or being killed."""
    budget = int(available_memory() * MEMORY_SHARE)
    if needed > budget:
        raise InputError(
            f"{what} would need about {_gib(needed)} of memory, "
            f"more than the {_gib(budget)} available; {hint}"
        )


def _gib(n: int) -> str:
    return f"{n / 2**30:.1f} GiB" if n >= 2**30 else f"{n / 2**20:.0f} MiB"


def volume_bytes(populated_bins: int, volume: int, sims: int, cached: int = 8) -> int:
    """Peak bytes of one :class:`VolumeRisk`: the narrow counts (populated bins x simulations), up to
    ``cached`` roll-ups of the same size (the policies the search caches are coarser: a generous bound),
    and one int64 block of the draw."""
    narrow = np.dtype(count_dtype(volume)).itemsize
    block = min(sims, _draw_block(populated_bins)) * populated_bins * 8
    return (1 + cached) * sims * populated_bins * narrow + block


def series_bytes(people: int, total_cases: int, periods: int, sims: int) -> int:
    """Peak bytes of :func:`draw_series` and :func:`series_risk`: the ordered samples (int32), the window
    loop's gathered groups (int32) and marketer weights (float64) of as many, the PK and marketer arrays
    (simulations x periods, float64, and their quantiles), and the people (int32) with numpy's
    permutation of them (int64)."""
    return 16 * sims * total_cases + 32 * sims * periods + 12 * people


def _draw_block(populated_bins: int) -> int:
    return max(1, _DRAW_BLOCK_BYTES // (8 * max(1, populated_bins)))


def _method(colors: IntArray, volume: int) -> Literal["count", "marginals"]:
    """numpy's exact multivariate hypergeometric: ``count`` (an urn of ``sum(colors)`` balls, a partial
    shuffle of ``volume`` of them per draw) is many times faster for regional populations and moderate
    volumes; ``marginals`` (one hypergeometric per bin, no urn) wins for huge urns and for volumes of
    several cases per bin (measured: 300,000 people in 2,483 bins, 20,000 cases: 0.59 s against 0.85 s
    per 1,000 draws; 1,000 cases: 0.84 s against 0.06 s)."""
    if int(colors.sum()) > 50_000_000 or volume > 6 * colors.size:
        return "marginals"
    return "count"


#: The largest k accepted (more than any region's people: every record would be at risk).
MAX_K = 10**10


def check_k(k: int) -> int:
    """``k`` is a whole number in ``[1, MAX_K]``."""
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise InputError(f"--k: k must be >= 1, got {k!r}")
    if k > MAX_K:
        raise InputError(f"--k: k must be at most {MAX_K:,} (more than any region's people), got {k}")
    return int(k)


def check_sims(sims: int) -> int:
    """``sims`` is a whole number >= 1 (its memory is checked where the draws are sized)."""
    if isinstance(sims, bool) or not isinstance(sims, (int, np.integer)) or sims < 1:
        raise InputError(f"--simulations: at least 1 simulation is required, got {sims!r}")
    return int(sims)


def _check(population: IntArray, total_cases: int, sims: int, k: int) -> None:
    check_sims(sims)
    check_k(k)
    if total_cases < 0:
        raise InputError(f"the number of cases must be >= 0, got {total_cases}")
    people = int(population.sum())
    if total_cases > people:
        raise InputError(f"{total_cases} cases but only {people} people in the region")


def count_dtype(volume: int) -> type[np.unsignedinteger[Any]]:
    """The narrowest unsigned dtype that holds any count of ``volume`` cases (sums of counts included):
    half or a quarter of the memory traffic of int32/int64 in the roll-ups."""
    if volume < 2**8:
        return np.uint8
    if volume < 2**16:
        return np.uint16
    return np.uint32


def upper_quantile(values: npt.NDArray[Any], q: float) -> float:
    """``np.quantile(values, q)`` (numpy's default 'linear' method, same formula) from a partial sort of
    the two order statistics it needs: the search asks this ~1,000 times, and np.quantile's general
    machinery costs more than the partition itself. Monotone in the sample, like np.quantile."""
    n = values.size
    h = (n - 1) * q
    lo = int(np.floor(h))
    hi = min(lo + 1, n - 1)
    part = np.partition(values, [lo, hi] if hi != lo else [lo])
    a, b = float(part[lo]), float(part[hi])
    t = h - lo
    diff = b - a
    return b - diff * (1 - t) if t >= 0.5 else a + diff * t


def _node(key: object) -> tuple[int, ...] | None:
    """``key`` as a lattice node (a tuple of levels), or None."""
    if isinstance(key, tuple) and all(isinstance(x, int) for x in key):
        return tuple(int(x) for x in key)
    return None


class VolumeRisk:
    """PK_k of ``volume`` new cases in one region, for any policy, on common random numbers.

    The fine-bin counts of the cases are drawn once and kept *bins x simulations* (simulations
    contiguous, in the narrowest unsigned dtype): a policy's group counts are rolled up from the
    cached counts of a finer policy by adding whole rows (one sparse 0/1 matrix product), so every
    step is a pass over contiguous memory. With lattice nodes as cache keys (the policy search) the
    finer policy is the cached node below with the fewest groups (a plain componentwise comparison);
    other keys are checked against each cached grouping.
    """

    def __init__(self, population: IntArray, volume: int, sims: int, rng: np.random.Generator) -> None:
        population = np.asarray(population, dtype=np.int64)
        _check(population, volume, sims, 1)
        self.volume = int(volume)
        self.sims = sims
        self._populated = np.flatnonzero(population > 0)
        colors = population[self._populated]
        self._colors = colors
        require_memory(
            volume_bytes(colors.size, self.volume, sims),
            f"--simulations {sims}: {sims:,} simulations of {self.volume:,} cases "
            f"in {colors.size:,} populated bins",
        )
        dtype = count_dtype(self.volume)
        counts: npt.NDArray[Any]
        counts = np.zeros((colors.size, sims), dtype=dtype)
        if self.volume and colors.size:
            # streamed in blocks of simulations (one block, the same draws, up to thousands of them):
            # the int64 output never holds every simulation, and an interrupt is answered between blocks
            method = _method(colors, self.volume)
            step = _draw_block(colors.size)
            for start in range(0, sims, step):
                stop = min(sims, start + step)
                drawn = rng.multivariate_hypergeometric(colors, self.volume, size=stop - start, method=method)
                counts[:, start:stop] = drawn.T
        #: cache: key -> (group of each populated bin, n groups, groups x sims counts)
        self._cache: dict[object, tuple[IntArray, int, npt.NDArray[Any]]] = {
            "bins": (np.arange(colors.size, dtype=np.int64), colors.size, counts)
        }
        self._records: npt.NDArray[np.int32] | None = None

    @property
    def nbytes(self) -> int:
        """Bytes held: the counts of the bins and of every cached roll-up."""
        return sum(counts.nbytes for _, _, counts in self._cache.values()) + (
            self._records.nbytes if self._records is not None else 0
        )

    @property
    def bin_counts(self) -> npt.NDArray[Any]:
        """Cases per simulation and populated fine bin (``sims x bins``, a transposed view)."""
        return self._cache["bins"][2].T

    @property
    def records(self) -> npt.NDArray[np.int32]:
        """The populated-bin index of every case (``sims x volume``), the same draws as :attr:`bin_counts`."""
        if self._records is None:
            n_bins = self._populated.size
            per_bin = self.bin_counts.ravel().astype(np.int64)
            flat = np.repeat(np.tile(np.arange(n_bins, dtype=np.int32), self.sims), per_bin)
            self._records = flat.reshape(self.sims, self.volume)
        return self._records

    def _dense(self, grouping: Grouping) -> tuple[IntArray, int]:
        """Dense group number of each populated bin, and the number of groups with people."""
        _, dense = np.unique(np.asarray(grouping[0], dtype=np.int64)[self._populated], return_inverse=True)
        dense = dense.ravel().astype(np.int64)
        return dense, int(dense.max()) + 1 if dense.size else 0

    def _finest_cached(self, dense: IntArray, key: object) -> tuple[int, IntArray, npt.NDArray[Any]]:
        """The cached grouping with the fewest groups that ``dense`` coarsens, and the group map."""
        best: tuple[int, IntArray, npt.NDArray[Any]] | None = None
        node = _node(key)
        for ckey, (gid, n, counts) in self._cache.items():
            if best is not None and n >= best[0]:
                continue
            cnode = _node(ckey)
            if node is not None and cnode is not None:
                if len(cnode) != len(node) or any(c > x for c, x in zip(cnode, node, strict=True)):
                    continue
                mapping = np.empty(n, dtype=np.int64)
                mapping[gid] = dense
            else:
                mapping = np.full(n, -1, dtype=np.int64)
                mapping[gid] = dense
                if not np.array_equal(mapping[gid], dense):  # a cached group split by the new grouping
                    continue
            best = (n, mapping, counts)
        assert best is not None  # the bins are always coarsened
        return best

    def _counts(self, grouping: Grouping, key: object) -> npt.NDArray[Any]:
        """Cases per group with people and simulation (``groups x sims``), rolled up from the cache."""
        if key is not None and key in self._cache:
            return self._cache[key][2]
        dense, n_groups = self._dense(grouping)
        _, mapping, counts = self._finest_cached(dense, key)
        # one sparse 0/1 matrix (new groups x cached groups) times the counts: scipy's CSR product adds
        # whole rows of simulations (measured 20-50x faster than np.add.reduceat along axis 0)
        roll = sparse.csr_matrix(
            (np.ones(mapping.size, dtype=counts.dtype), (mapping, np.arange(mapping.size))),
            shape=(n_groups, mapping.size),
        )
        out = np.asarray(roll @ counts, dtype=counts.dtype)
        if key is not None:
            self._cache[key] = (dense, n_groups, out)
        return out

    def group_counts(self, grouping: Grouping, key: object = None) -> npt.NDArray[Any]:
        """Cases per group and simulation (``sims x groups``; only groups with people; a view)."""
        return self._counts(grouping, key).T

    def at_risk(self, grouping: Grouping, k: int, key: object = None) -> npt.NDArray[np.int64]:
        """Per simulation, the number of records in a group of fewer than ``k`` (``PK_k x volume``)."""
        check_k(k)
        if self.volume == 0:
            return np.zeros(self.sims, dtype=np.int64)
        # the shared definition of safeshare.risk.measures, along the groups of every simulation
        out: npt.NDArray[np.int64] = records_at_risk(self._counts(grouping, key), k, axis=0).astype(np.int64)
        return out

    def pk(self, grouping: Grouping, k: int, key: object = None) -> FloatArray:
        """PK_k of every simulation (0 for zero cases), from the rolled-up group counts."""
        if self.volume == 0:
            return np.zeros(self.sims)
        out: FloatArray = self.at_risk(grouping, k, key) / self.volume
        return out

    def marketer(self, grouping: Grouping, key: object = None) -> FloatArray:
        """The marketer (amortized) risk of releasing the drawn cases at once, per simulation:
        ``(1/v) sum_g f_g / F_g`` (Dankar & El Emam 2010; the paper's supplement), from the rolled-up
        group counts ``f_g`` and the people ``F_g`` of each group. Its expectation is exactly ``J/N``
        (``J`` groups with people, ``N`` people) under uniform sampling; merging groups never raises it
        (``(a+c)/(b+d) <= max(a/b, c/d)``), so it is monotone along the lattice for every draw."""
        if self.volume == 0:
            return np.zeros(self.sims)
        dense, n_groups = self._dense(grouping)
        people = np.bincount(dense, weights=self._colors, minlength=n_groups)
        counts = self._counts(grouping, key)  # groups x sims
        # the shared definition of safeshare.risk.measures, along the groups of every simulation
        out: FloatArray = np.asarray(marketer_risk(counts, people[:, None], axis=0), dtype=np.float64)
        return out

    def pk_records(self, grouping: Grouping, k: int) -> FloatArray:
        """PK_k counted record by record (each case's group size in its simulation): an independent
        path over :attr:`records`, kept to cross-check the roll-up in the tests."""
        if self.volume == 0:
            return np.zeros(self.sims)
        dense, n_groups = self._dense(grouping)
        groups = dense[self.records] + (np.arange(self.sims, dtype=np.int64) * n_groups)[:, None]
        size = np.bincount(groups.ravel(), minlength=self.sims * n_groups)
        return np.asarray((size[groups] < k).sum(axis=1) / self.volume, dtype=np.float64)


def pk_volume(
    population: IntArray,
    grouping: Grouping,
    volume: int,
    k: int = SMALL_CELL,
    sims: int = SURVEILLANCE_SIMULATIONS,
    seed: int = 0,
) -> FloatArray:
    """PK_k of ``volume`` cases drawn from ``population`` under one policy, per simulation."""
    return VolumeRisk(population, volume, sims, seeded(seed)).pk(grouping, k)


@dataclass(frozen=True)
class SeriesDraw:
    """The infected of every simulation, in order of diagnosis (common to all policies).

    ``order[s, i]`` is the populated-bin index of the ``i``-th case of simulation ``s``;
    case ``i`` belongs to period ``period[i]``."""

    populated: IntArray
    population: IntArray  # people per populated bin
    cases: IntArray
    order: npt.NDArray[np.int32]
    period: IntArray


def draw_series(
    population: IntArray,
    cases: Sequence[int] | IntArray,
    sims: int,
    rng: np.random.Generator,
    progress: Callable[[int, int], None] | None = None,
) -> SeriesDraw:
    """Draw the cases of every period without replacement from the region's people (``progress(done,
    sims)`` is called as the simulations are drawn)."""
    population = np.asarray(population, dtype=np.int64)
    cases_arr = np.asarray(cases, dtype=np.int64)
    if (cases_arr < 0).any():
        raise InputError(f"period {int(np.flatnonzero(cases_arr < 0)[0]) + 1}: negative number of cases")
    total = int(cases_arr.sum())
    _check(population, total, sims, 1)
    require_memory(
        series_bytes(int(population.sum()), total, cases_arr.size, sims),
        f"--simulations {sims}: {sims:,} simulations of a series of {total:,} cases",
    )
    populated = np.flatnonzero(population > 0)
    colors = population[populated]
    if total:
        # each simulation: an ordered sample without replacement of the people (uniformly random
        # order), looked up to its bin; several times faster than shuffling hypergeometric counts
        person_bin = np.repeat(np.arange(colors.size, dtype=np.int32), colors)
        order = np.empty((sims, total), dtype=np.int32)
        every = max(1, sims // 100)
        for sim in range(sims):
            order[sim] = person_bin[rng.choice(person_bin.size, total, replace=False, shuffle=True)]
            if progress is not None and (sim + 1) % every == 0:
                progress(sim + 1, sims)
    else:
        order = np.zeros((sims, 0), dtype=np.int32)
    period = np.repeat(np.arange(cases_arr.size, dtype=np.int64), cases_arr)
    return SeriesDraw(populated, colors, cases_arr, order, period)


@dataclass(frozen=True)
class SeriesRisk:
    """Per simulation and period: PK_k of the lagging window and marketer risk of the cumulative release.

    ``weight`` holds, per simulation and period, ``sum 1 / F_g(r)`` over the period's records (the
    marketer risk's numerator, period by period: a release whose periods are generalized by different
    policies adds each period's weight under its own policy); ``pk_more`` the PK of further ``k``."""

    pk: FloatArray  # sims x periods
    marketer: FloatArray  # sims x periods
    window_cases: IntArray  # records in each period's lagging window
    weight: FloatArray | None = None  # sims x periods
    k: int = 0
    pk_more: dict[int, FloatArray] = field(default_factory=dict)

    def pk_of(self, k: int) -> FloatArray:
        """PK_k for ``k`` (the main one or one of ``ks``)."""
        if k == self.k or (not self.k and not self.pk_more):
            return self.pk
        return self.pk_more[k]

    def band(self, what: str = "pk") -> tuple[FloatArray, FloatArray, FloatArray]:
        """``(mean, lower, upper)`` per period (lower/upper: the 2.5% and 97.5% quantiles)."""
        values = self.pk if what == "pk" else self.marketer
        lo, hi = np.quantile(values, [LOWER, UPPER], axis=0)
        return values.mean(axis=0), lo, hi


def _groups_of(draw: SeriesDraw, grouping: Grouping) -> tuple[IntArray, int, FloatArray]:
    """Dense group of each populated bin, number of groups, people per group."""
    group_of_bin = np.asarray(grouping[0], dtype=np.int64)[draw.populated]
    _, dense = np.unique(group_of_bin, return_inverse=True)
    dense = dense.ravel().astype(np.int64)
    n_groups = int(dense.max()) + 1 if dense.size else 1
    people = np.bincount(dense, weights=draw.population, minlength=n_groups).astype(np.float64)
    out_dense: IntArray = dense
    return out_dense, n_groups, people


def series_risk(
    draw: SeriesDraw,
    grouping: Grouping,
    k: int = SMALL_CELL,
    lag: int = SURVEILLANCE_LAG,
    ks: Sequence[int] = (),
) -> SeriesRisk:
    """The risk of releasing the drawn cases under one policy (see the module docstring), by whichever
    of two exact computations touches fewer cells: the window loop (:func:`series_risk_windows`,
    ``sims x cases x lag``) or the dense counts (:func:`series_risk_dense`, ``sims x periods x
    groups``, for coarse policies: measured 2-3x faster up to ~100 groups over 200 periods). ``ks``:
    further values of k measured on the same windows (``SeriesRisk.pk_of``)."""
    _check_series_args(k, lag)
    group_of_bin = np.asarray(grouping[0], dtype=np.int64)[draw.populated]
    n_groups = np.unique(group_of_bin).size
    if draw.cases.size * n_groups <= draw.order.shape[1]:
        return series_risk_dense(draw, grouping, k, lag, ks)
    return series_risk_windows(draw, grouping, k, lag, ks)


#: The longest lagging window accepted, in periods (about 27 years of days).
MAX_LAG = 10_000


def check_lag(lag: int) -> int:
    """``lag`` is a whole number of periods in ``[1, MAX_LAG]``."""
    if isinstance(lag, bool) or not isinstance(lag, (int, np.integer)) or not 1 <= lag <= MAX_LAG:
        raise InputError(
            f"--lag: the lagging window must be a whole number of periods in [1, {MAX_LAG:,}], got {lag!r}"
        )
    return int(lag)


def _check_series_args(k: int, lag: int) -> None:
    check_k(k)
    check_lag(lag)


def series_risk_windows(
    draw: SeriesDraw,
    grouping: Grouping,
    k: int = SMALL_CELL,
    lag: int = SURVEILLANCE_LAG,
    ks: Sequence[int] = (),
) -> SeriesRisk:
    """The window loop: the records of period ``t``'s lagging window are one contiguous slice of every
    simulation's sequence, so each window is one ``bincount`` over ``simulations x groups`` and one
    gather (simulations in cache-sized chunks). The marketer risk needs no counts: ``sum_g f_g / F_g``
    is the sum of ``1 / F_g(r)`` over the released records.

    This path counts record by record rather than class by class, so it does not call
    :func:`safeshare.risk.measures.pk_share` / :func:`~safeshare.risk.measures.marketer_risk` (building
    the class sizes of every window would cost the dense path's memory at fine policies); it is tested
    equal to those shared definitions (``tests/test_surveillance_simulate.py``)."""
    _check_series_args(k, lag)
    more = _more_ks(k, ks)
    sims, periods = draw.order.shape[0], draw.cases.size
    dense, n_groups, people = _groups_of(draw, grouping)
    cum_cases = np.concatenate([[0], np.cumsum(draw.cases)])
    first = cum_cases[np.maximum(np.arange(1, periods + 1) - lag, 0)]
    window = cum_cases[1:] - first
    pks = {kk: np.zeros((sims, periods)) for kk in (k, *more)}
    marketer = np.zeros((sims, periods))
    weight = np.zeros((sims, periods))
    nonempty = np.flatnonzero(draw.cases > 0)
    if not nonempty.size:
        return SeriesRisk(pks[k], marketer, window.astype(np.int64), weight, k, {kk: pks[kk] for kk in more})
    # simulations in chunks whose (chunk x groups) count array stays in cache: bincount zero-fills its
    # whole output each call, which for all simulations at fine policies cost more than the counting
    chunk = max(1, min(sims, _CACHE_CELLS // max(1, n_groups)))
    group_of_bin = dense.astype(np.int32 if chunk * n_groups < 2**31 else np.int64)
    weight_of_bin = (1.0 / np.maximum(people, 1))[dense]
    cumulative = cum_cases[1:]
    spans = [(t, int(first[t]), int(cum_cases[t + 1])) for t in range(periods) if cum_cases[t + 1] > first[t]]
    for start in range(0, sims, chunk):
        stop = min(sims, start + chunk)
        c = stop - start
        offsets = (np.arange(c, dtype=group_of_bin.dtype) * n_groups)[:, None]
        groups = group_of_bin[draw.order[start:stop]] + offsets
        for t, lo, hi in spans:
            keys = groups[:, lo:hi].ravel()
            size = np.bincount(keys, minlength=c * n_groups)
            sizes = size[keys]
            for kk, pk in pks.items():
                pk[start:stop, t] = (sizes < kk).reshape(c, hi - lo).sum(axis=1) / (hi - lo)
        # marketer: sum_g f_g / F_g = the sum of 1 / F_g(r) over the released records
        per_period = weight[start:stop]
        weights = weight_of_bin[draw.order[start:stop]]
        per_period[:, nonempty] = np.add.reduceat(weights, cum_cases[nonempty], axis=1)
        marketer[start:stop] = np.divide(
            np.cumsum(per_period, axis=1), cumulative, out=np.zeros((c, periods)), where=cumulative > 0
        )
    return SeriesRisk(pks[k], marketer, window.astype(np.int64), weight, k, {kk: pks[kk] for kk in more})


def _more_ks(k: int, ks: Sequence[int]) -> list[int]:
    """The further values of k (checked), without ``k`` itself and without repeats."""
    return [check_k(kk) for kk in dict.fromkeys(ks) if kk != k]


def series_risk_dense(
    draw: SeriesDraw,
    grouping: Grouping,
    k: int = SMALL_CELL,
    lag: int = SURVEILLANCE_LAG,
    ks: Sequence[int] = (),
) -> SeriesRisk:
    """The risk from dense ``sims x periods x groups`` counts (chunked) and their cumulative sums,
    measured by the shared :func:`~safeshare.risk.measures.pk_share` and
    :func:`~safeshare.risk.measures.marketer_risk`; used for coarse policies, tested equal to the window
    loop."""
    _check_series_args(k, lag)
    sims, periods = draw.order.shape[0], draw.cases.size
    group_of_bin = np.asarray(grouping[0], dtype=np.int64)[draw.populated]
    _, dense = np.unique(group_of_bin, return_inverse=True)
    dense = dense.ravel().astype(np.int64)
    n_groups = int(dense.max()) + 1 if dense.size else 1
    people = np.bincount(dense, weights=draw.population, minlength=n_groups)
    cum_cases = np.concatenate([[0], np.cumsum(draw.cases)])
    window = cum_cases[1:] - cum_cases[np.maximum(np.arange(1, periods + 1) - lag, 0)]
    more = _more_ks(k, ks)
    pks = {kk: np.zeros((sims, periods)) for kk in (k, *more)}
    marketer = np.zeros((sims, periods))
    weight = np.zeros((sims, periods))
    inverse = 1.0 / np.maximum(people, 1)
    chunk = max(1, _BLOCK // max(1, periods * n_groups))
    for start in range(0, sims, chunk):
        stop = min(sims, start + chunk)
        c = stop - start
        groups = dense[draw.order[start:stop]]  # c x X
        key = (np.arange(c, dtype=np.int64)[:, None] * periods + draw.period[None, :]) * n_groups + groups
        per_period = np.bincount(key.ravel(), minlength=c * periods * n_groups).reshape(c, periods, n_groups)
        cum = np.cumsum(per_period, axis=1)
        lagged = np.zeros_like(cum)
        if lag < periods:
            lagged[:, lag:] = cum[:, : periods - lag]
        # the class sizes of every window and cumulative release, measured by the shared definitions
        for kk, pk in pks.items():
            pk[start:stop] = pk_share(cum - lagged, kk, axis=2)
        marketer[start:stop] = marketer_risk(cum, people, axis=2)
        weight[start:stop] = per_period @ inverse
    return SeriesRisk(pks[k], marketer, window.astype(np.int64), weight, k, {kk: pks[kk] for kk in more})


def simulate_series(
    population: IntArray,
    cases: Sequence[int] | IntArray,
    grouping: Grouping,
    k: int = SMALL_CELL,
    lag: int = SURVEILLANCE_LAG,
    sims: int = SURVEILLANCE_SIMULATIONS,
    seed: int = 0,
) -> SeriesRisk:
    """One policy over a case series: :func:`draw_series` then :func:`series_risk`."""
    return series_risk(draw_series(population, cases, sims, seeded(seed)), grouping, k, lag)
