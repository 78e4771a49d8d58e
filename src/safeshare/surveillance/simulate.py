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

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from safeshare.errors import InputError

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
Grouping = tuple[IntArray, int]  # (group of each fine bin, number of groups)

#: Quantile levels of the reported band (the paper's 95% range).
LOWER, UPPER = 0.025, 0.975
#: Largest (simulations x periods x groups) block held at once by the series path.
_BLOCK = 4_000_000


def seeded(seed: int, *key: int) -> np.random.Generator:
    """A generator for one (seed, key...) stream: independent streams per region/volume,
    reproducible whatever else is simulated."""
    return np.random.default_rng(np.random.SeedSequence(entropy=seed, spawn_key=tuple(int(k) for k in key)))


def _method(colors: IntArray) -> Literal["count", "marginals"]:
    """numpy's exact multivariate hypergeometric: ``count`` (an urn of ``sum(colors)`` balls) is many
    times faster for regional populations; ``marginals`` (no urn) for huge ones."""
    return "count" if int(colors.sum()) <= 50_000_000 else "marginals"


def _check(population: IntArray, total_cases: int, sims: int, k: int) -> None:
    if sims < 1:
        raise InputError(f"--sims: at least 1 simulation is required, got {sims}")
    if k < 1:
        raise InputError(f"--k: k must be >= 1, got {k}")
    if total_cases < 0:
        raise InputError(f"the number of cases must be >= 0, got {total_cases}")
    people = int(population.sum())
    if total_cases > people:
        raise InputError(f"{total_cases} cases but only {people} people in the region")


class VolumeRisk:
    """PK_k of ``volume`` new cases in one region, for any policy, on common random numbers.

    The fine-bin counts of the cases (``sims x populated bins``) are drawn once;
    a policy's group counts are rolled up from the cached group counts of the
    policy with the fewest groups that it coarsens (the bins themselves at first),
    so a search touching many policies stays cheap.
    """

    def __init__(self, population: IntArray, volume: int, sims: int, rng: np.random.Generator) -> None:
        population = np.asarray(population, dtype=np.int64)
        _check(population, volume, sims, 1)
        self.volume = int(volume)
        self.sims = sims
        self._populated = np.flatnonzero(population > 0)
        colors = population[self._populated]
        counts: npt.NDArray[Any]
        if self.volume == 0 or colors.size == 0:
            counts = np.zeros((sims, colors.size), dtype=np.int32)
        else:
            counts = rng.multivariate_hypergeometric(colors, self.volume, size=sims, method=_method(colors))
        #: cache: key -> (group of each populated bin, n groups, sims x groups counts)
        self._cache: dict[object, tuple[IntArray, int, npt.NDArray[np.int32]]] = {
            "bins": (np.arange(colors.size, dtype=np.int64), colors.size, counts.astype(np.int32))
        }
        self._records: npt.NDArray[np.int32] | None = None

    @property
    def bin_counts(self) -> npt.NDArray[np.int32]:
        """Cases per populated fine bin and simulation."""
        return self._cache["bins"][2]

    @property
    def records(self) -> npt.NDArray[np.int32]:
        """The populated-bin index of every case (``sims x volume``), the same draws as :attr:`bin_counts`."""
        if self._records is None:
            n_bins = self._populated.size
            flat = np.repeat(np.tile(np.arange(n_bins, dtype=np.int32), self.sims), self.bin_counts.ravel())
            self._records = flat.reshape(self.sims, self.volume)
        return self._records

    def _dense(self, grouping: Grouping) -> tuple[IntArray, int]:
        """Dense group number of each populated bin, and the number of groups with people."""
        _, dense = np.unique(np.asarray(grouping[0], dtype=np.int64)[self._populated], return_inverse=True)
        dense = dense.ravel().astype(np.int64)
        return dense, int(dense.max()) + 1 if dense.size else 0

    def _finest_cached(self, dense: IntArray) -> tuple[int, IntArray, npt.NDArray[np.int32]]:
        """The cached grouping with the fewest groups that ``dense`` coarsens, and the group map."""
        best: tuple[int, IntArray, npt.NDArray[np.int32]] | None = None
        for gid, n, counts in self._cache.values():
            if best is not None and n >= best[0]:
                continue
            mapping = np.full(n, -1, dtype=np.int64)
            mapping[gid] = dense
            if np.array_equal(mapping[gid], dense):  # each cached group inside one new group
                best = (n, mapping, counts)
        assert best is not None  # the bins are always coarsened
        return best

    def group_counts(self, grouping: Grouping, key: object = None) -> npt.NDArray[np.int32]:
        """Cases per group (``sims x groups``; only groups with people), rolled up from the cache."""
        if key is not None and key in self._cache:
            return self._cache[key][2]
        dense, n_groups = self._dense(grouping)
        _, mapping, counts = self._finest_cached(dense)
        # gather the columns group by group and add each run: O(sims x cached groups), no index array
        order = np.argsort(mapping, kind="stable")
        starts = np.flatnonzero(np.r_[True, np.diff(mapping[order]) != 0]) if order.size else order
        out = np.add.reduceat(counts[:, order], starts, axis=1) if order.size else counts
        if key is not None:
            self._cache[key] = (dense, n_groups, out)
        return out

    def pk(self, grouping: Grouping, k: int, key: object = None) -> FloatArray:
        """PK_k of every simulation (0 for zero cases).

        Two exact paths, whichever touches fewer numbers: rolling up cached group
        counts (``sims x cached groups``), or counting the cases' groups record by
        record (``sims x volume``, for volumes below the number of cached groups)."""
        if self.volume == 0:
            return np.zeros(self.sims)
        if key is not None and key in self._cache:
            counts = self._cache[key][2]
        else:
            dense, n_groups = self._dense(grouping)
            n_cached = self._finest_cached(dense)[0]
            if self.volume < n_cached and self.sims * n_groups <= 50_000_000:
                groups = dense[self.records] + (np.arange(self.sims, dtype=np.int64) * n_groups)[:, None]
                size = np.bincount(groups.ravel(), minlength=self.sims * n_groups)
                at_risk = (size[groups] < k).sum(axis=1)
                return np.asarray(at_risk / self.volume, dtype=np.float64)
            counts = self.group_counts(grouping, key)
        at_risk = np.where(counts < k, counts, 0).sum(axis=1)
        out: FloatArray = at_risk / self.volume
        return out


def pk_volume(
    population: IntArray, grouping: Grouping, volume: int, k: int = 11, sims: int = 1000, seed: int = 0
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
    population: IntArray, cases: Sequence[int] | IntArray, sims: int, rng: np.random.Generator
) -> SeriesDraw:
    """Draw the cases of every period without replacement from the region's people."""
    population = np.asarray(population, dtype=np.int64)
    cases_arr = np.asarray(cases, dtype=np.int64)
    if (cases_arr < 0).any():
        raise InputError(f"period {int(np.flatnonzero(cases_arr < 0)[0]) + 1}: negative number of cases")
    total = int(cases_arr.sum())
    _check(population, total, sims, 1)
    populated = np.flatnonzero(population > 0)
    colors = population[populated]
    if total:
        # each simulation: an ordered sample without replacement of the people (uniformly random
        # order), looked up to its bin; several times faster than shuffling hypergeometric counts
        person_bin = np.repeat(np.arange(colors.size, dtype=np.int32), colors)
        order = np.empty((sims, total), dtype=np.int32)
        for sim in range(sims):
            order[sim] = person_bin[rng.choice(person_bin.size, total, replace=False, shuffle=True)]
    else:
        order = np.zeros((sims, 0), dtype=np.int32)
    period = np.repeat(np.arange(cases_arr.size, dtype=np.int64), cases_arr)
    return SeriesDraw(populated, colors, cases_arr, order, period)


@dataclass(frozen=True)
class SeriesRisk:
    """Per simulation and period: PK_k of the lagging window and marketer risk of the cumulative release."""

    pk: FloatArray  # sims x periods
    marketer: FloatArray  # sims x periods
    window_cases: IntArray  # records in each period's lagging window

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


def series_risk(draw: SeriesDraw, grouping: Grouping, k: int = 11, lag: int = 1) -> SeriesRisk:
    """The risk of releasing the drawn cases under one policy (see the module docstring).

    The records of period ``t``'s lagging window are one contiguous slice of every simulation's
    sequence, so each window is one ``bincount`` over ``sims x groups`` and one gather: the work
    is ``sims x (cases in the window + groups)`` per period. The marketer risk needs no counts:
    ``sum_g f_g / F_g`` is the sum of ``1 / F_g(r)`` over the released records.
    """
    if k < 1:
        raise InputError(f"--k: k must be >= 1, got {k}")
    if lag < 1:
        raise InputError(f"--lag: the lagging window must be >= 1 period, got {lag}")
    sims, periods = draw.order.shape[0], draw.cases.size
    dense, n_groups, people = _groups_of(draw, grouping)
    cum_cases = np.concatenate([[0], np.cumsum(draw.cases)])
    first = cum_cases[np.maximum(np.arange(1, periods + 1) - lag, 0)]
    window = cum_cases[1:] - first
    pk = np.zeros((sims, periods))
    groups = dense.astype(np.int32 if sims * n_groups < 2**31 else np.int64)[draw.order]
    offsets = (np.arange(sims, dtype=groups.dtype) * n_groups)[:, None]
    for t in range(periods):
        lo, hi = int(first[t]), int(cum_cases[t + 1])
        if hi == lo:
            continue
        keys = (groups[:, lo:hi] + offsets).ravel()
        size = np.bincount(keys, minlength=sims * n_groups)
        pk[:, t] = (size[keys] < k).reshape(sims, hi - lo).sum(axis=1) / (hi - lo)
    marketer = np.zeros((sims, periods))
    nonempty = np.flatnonzero(draw.cases > 0)
    if nonempty.size:
        weight = (1.0 / np.maximum(people, 1))[groups]
        per_period = np.zeros((sims, periods))
        per_period[:, nonempty] = np.add.reduceat(weight, cum_cases[nonempty], axis=1)
        cumulative = cum_cases[1:]
        marketer = np.divide(
            np.cumsum(per_period, axis=1), cumulative, out=np.zeros((sims, periods)), where=cumulative > 0
        )
    return SeriesRisk(pk, marketer, window.astype(np.int64))


def series_risk_dense(draw: SeriesDraw, grouping: Grouping, k: int = 11, lag: int = 1) -> SeriesRisk:
    """:func:`series_risk` computed another way, on dense ``sims x periods x groups`` counts (chunked);
    kept as an independent cross-check of the window loop (tested equal)."""
    if k < 1:
        raise InputError(f"--k: k must be >= 1, got {k}")
    if lag < 1:
        raise InputError(f"--lag: the lagging window must be >= 1 period, got {lag}")
    sims, periods = draw.order.shape[0], draw.cases.size
    group_of_bin = np.asarray(grouping[0], dtype=np.int64)[draw.populated]
    _, dense = np.unique(group_of_bin, return_inverse=True)
    dense = dense.ravel().astype(np.int64)
    n_groups = int(dense.max()) + 1 if dense.size else 1
    people = np.bincount(dense, weights=draw.population, minlength=n_groups)
    cum_cases = np.concatenate([[0], np.cumsum(draw.cases)])
    window = cum_cases[1:] - cum_cases[np.maximum(np.arange(1, periods + 1) - lag, 0)]
    cumulative = cum_cases[1:]
    pk = np.zeros((sims, periods))
    marketer = np.zeros((sims, periods))
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
        win = cum - lagged
        at_risk = np.where(win < k, win, 0).sum(axis=2)
        pk[start:stop] = np.divide(at_risk, window, out=np.zeros(at_risk.shape), where=window > 0)
        matched = (cum / np.maximum(people, 1)).sum(axis=2)
        marketer[start:stop] = np.divide(
            matched, cumulative, out=np.zeros(matched.shape), where=cumulative > 0
        )
    return SeriesRisk(pk, marketer, window.astype(np.int64))


def simulate_series(
    population: IntArray,
    cases: Sequence[int] | IntArray,
    grouping: Grouping,
    k: int = 11,
    lag: int = 1,
    sims: int = 1000,
    seed: int = 0,
) -> SeriesRisk:
    """One policy over a case series: :func:`draw_series` then :func:`series_risk`."""
    return series_risk(draw_series(population, cases, sims, seeded(seed)), grouping, k, lag)
