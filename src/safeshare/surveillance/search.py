"""Policy search by case volume (paper: "Dynamic policy search", Fig. 3).

For a set of regions (a population-size category) and a case volume ``v``, a
policy is *acceptable* when, in every region, the upper quantile (default
97.5%, the upper end of the 95% range) of the simulated PK_k of ``v`` new cases
is at most the threshold (default 0.01, k = 11).

**Monotonicity.** Generalizing a policy merges groups, so every record's group
can only grow and no record joins the at-risk set: for *each simulated draw*,
PK_k(coarser) <= PK_k(finer). The draws are common random numbers (the same
fine-bin cases for every policy, :class:`~.simulate.VolumeRisk`), so the
per-policy samples are pointwise ordered and so are their empirical quantiles
(order statistics, and numpy's interpolation between them, are monotone in the
sample). The predicate "upper quantile <= threshold in every region" is
therefore exactly monotone on the simulated draws — not only in expectation —
and the core's :func:`~safeshare.search.ola.find_minimal_nodes` (OLA's binary
search with predictive tagging) finds the minimal acceptable policies without
simulating most policies, and returns exactly what evaluating every policy
returns (tested). With *independent* draws per policy the Monte Carlo noise
could break monotonicity near the threshold, and tagging would then silently
differ from exhaustive evaluation.

The acceptable policies at ``v`` are the up-set of the minimal ones; among the
minimal ones the least information loss (Sweeney's Prec, ties by fewer steps)
is the recommended policy. Reading the volumes as bands ``[v_i, v_{i+1})`` uses
the paper's observation that more cases make groups larger (PK falls with the
volume); below the smallest volume nothing is shared.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from safeshare.config.vocabulary import (
    SMALL_CELL,
    SURVEILLANCE_QUANTILE,
    SURVEILLANCE_SIMULATIONS,
    SURVEILLANCE_THRESHOLD,
)
from safeshare.core.lattice import Node
from safeshare.errors import InputError
from safeshare.surveillance.choices import RISKS, RiskName
from safeshare.surveillance.inputs import MAX_COUNT, Population
from safeshare.surveillance.simulate import (
    VolumeRisk,
    available_memory,
    check_k,
    check_seed,
    check_sims,
    seeded,
    upper_quantile,
)

DO_NOT_SHARE = "do not share"


@dataclass(frozen=True)
class RiskCriterion:
    """What makes a policy acceptable: upper ``quantile`` of PK_k <= ``threshold``."""

    k: int = SMALL_CELL
    threshold: float = SURVEILLANCE_THRESHOLD
    quantile: float = SURVEILLANCE_QUANTILE
    simulations: int = SURVEILLANCE_SIMULATIONS
    seed: int = 0
    #: ``pk`` (PK_k of the records of one window) or ``marketer`` (the amortized risk of a cumulative
    #: release, the paper's supplement: volumes are then the records released so far)
    risk: RiskName = "pk"

    def __post_init__(self) -> None:
        if self.risk not in RISKS:
            raise InputError(f"--risk: one of {', '.join(RISKS)}, got {self.risk!r}")
        check_k(self.k)
        if not 0 <= self.threshold <= 1:  # NaN fails too
            raise InputError(f"--threshold: a share in [0, 1] is required, got {self.threshold}")
        if not 0 < self.quantile <= 1:
            raise InputError(f"--quantile: a level in (0, 1] is required, got {self.quantile}")
        check_sims(self.simulations)
        check_seed(self.seed)


@dataclass
class VolumeResult:
    """The search at one case volume."""

    volume: int
    minimal: list[Node]
    acceptable: list[Node]
    best: Node | None
    checked: int
    #: per evaluated policy, the largest upper quantile over the regions, smallest region first, up to
    #: the first region over the threshold: the maximum over all regions for an acceptable policy, a
    #: value above the threshold (not necessarily the maximum) for the others
    upper: dict[Node, float] = field(default_factory=dict)
    #: the regions searched at this volume: those with at least ``volume`` people (the paper's code too)
    regions: tuple[str, ...] = ()


@dataclass
class PolicySearch:
    """Search results for one set of regions over a list of volumes."""

    space: Any  # PolicySpace (Any: avoid an import cycle in type-only use)
    regions: tuple[str, ...]
    criterion: RiskCriterion
    results: list[VolumeResult]
    elapsed_s: float
    #: volumes above the people of every region: not searched
    unsearched: list[int] = field(default_factory=list)

    def volume_notes(self, totals: dict[str, int]) -> str | None:
        """One line on the volumes some region cannot hold (``None`` when every region holds every
        volume): which regions each was searched without, and which volumes no region holds."""
        parts = []
        for res in self.results:
            left_out = [r for r in self.regions if r not in res.regions]
            if left_out:
                shown = ", ".join(f"{r} ({totals[r]:,})" for r in left_out[:3])
                more = f" and {len(left_out) - 3} more" if len(left_out) > 3 else ""
                parts.append(f"{res.volume:,} searched without {shown}{more}")
        if self.unsearched:
            parts.append(
                f"{', '.join(f'{v:,}' for v in self.unsearched)} above every region's people: not searched"
            )
        if not parts:
            return None
        return (
            "volumes above a region's people (each searched in the regions that can hold it): "
            + "; ".join(parts)
        )

    def acceptable_at(self, cases: float) -> list[Node]:
        """The acceptable policies for ``cases`` new cases: those of the largest volume <= cases."""
        out: list[Node] = []
        for res in self.results:  # sorted by volume
            if res.volume <= cases:
                out = res.acceptable
        return out

    def acceptable_upto(self, cases: float) -> list[Node]:
        """The policies acceptable at some searched volume <= ``cases`` (the paper's code drops a policy
        found acceptable from the larger volumes: once acceptable, acceptable), in lattice order."""
        out: set[Node] = set()
        for res in self.results:
            if res.volume <= cases:
                out.update(res.acceptable)
        return sorted(out)

    def min_volume(self) -> dict[Node, int | None]:
        """Per policy, the smallest searched volume at which it is acceptable (Fig. 3)."""
        out: dict[Node, int | None] = {n: None for n in self.space.policies()}
        for res in self.results:
            for node in res.acceptable:
                if out[node] is None:
                    out[node] = res.volume
        return out

    def bands(self) -> list[dict[str, Any]]:
        """Case-volume bands and the least-loss policy of each ("do not share" below the first)."""
        rows: list[dict[str, Any]] = []
        first = self.results[0].volume if self.results else 0
        if first > 0:
            rows.append({"from": 0, "to": first, "policy": DO_NOT_SHARE, "acceptable": 0})
        for i, res in enumerate(self.results):
            upto = self.results[i + 1].volume if i + 1 < len(self.results) else None
            rows.append(
                {
                    "from": res.volume,
                    "to": upto,
                    "policy": self.space.format(res.best) if res.best is not None else DO_NOT_SHARE,
                    "acceptable": len(res.acceptable),
                    "minimal": [self.space.format(n) for n in res.minimal],
                }
            )
        return rows


class _RegionDraws:
    """The regions' draws at one volume, kept for the policies checked next, least recently used
    first out once they hold more than ``budget`` bytes: a category of hundreds of regions does not
    hold every region's draws at once. An evicted region is drawn again from its own seed stream,
    so its draws are the same (the search's result does not depend on the budget)."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self._draws: OrderedDict[str, VolumeRisk] = OrderedDict()

    def get(self, region: str) -> VolumeRisk | None:
        hit = self._draws.get(region)
        if hit is not None:
            self._draws.move_to_end(region)
        return hit

    def put(self, region: str, risk: VolumeRisk) -> VolumeRisk:
        self._draws[region] = risk
        while len(self._draws) > 1 and sum(r.nbytes for r in self._draws.values()) > self.budget:
            self._draws.popitem(last=False)
        return risk


def check_volumes(volumes: Sequence[int]) -> list[int]:
    """The distinct volumes, increasing; each a whole number of cases >= 1.

    Volume 0 is refused: zero cases have PK 0 under every policy, so the band ``[0, next)`` would
    share the finest policy with 1 .. next-1 cases. Below the smallest volume nothing is shared."""
    vols = sorted({int(v) for v in volumes})
    if not vols:
        raise InputError("--volumes: at least one case volume is required")
    if vols[0] < 1:
        raise InputError(
            f"--volumes: {vols[0]} is no case volume (each is a number of cases >= 1: below the smallest "
            "volume nothing is shared, and zero cases would make every policy acceptable)"
        )
    if vols[-1] > MAX_COUNT:
        raise InputError(f"--volumes: {vols[-1]} is more cases than {MAX_COUNT:,} (the people on Earth)")
    return vols


def search_policies(
    population: Population,
    regions: Sequence[str],
    volumes: Sequence[int],
    criterion: RiskCriterion | None = None,
    exhaustive: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> PolicySearch:
    """The acceptable policies at each volume, by the core monotone search (or every policy, if
    ``exhaustive``). Region ``r``'s draws at volume ``v`` come from the stream
    ``seeded(seed, index of r in the population table, v)``, so results do not depend on which
    other regions or volumes are searched."""
    from safeshare.search.ola import choose_best, find_minimal_nodes  # numba's loads with the search

    crit = criterion or RiskCriterion()
    space = population.space
    if not regions:
        raise InputError("no regions to search")
    vols = check_volumes(volumes)
    totals = population.totals
    for region in regions:
        population.region_index(region)
    budget = available_memory() // 4  # the draws kept for re-use; evicted ones are drawn again
    start = time.perf_counter()
    results = []
    unsearched = []
    for j, v in enumerate(vols):
        # a volume is searched in the regions that can hold it (at least v people), as the paper's code
        by_size = sorted((r for r in regions if totals[r] >= v), key=lambda r: totals[r])
        if not by_size:
            unsearched.append(v)
            if progress is not None:
                progress(j + 1, len(vols))
            continue
        # draws are made lazily: a region is simulated only when a check reaches it
        risks = _RegionDraws(budget)
        upper: dict[Node, float] = {}

        def risk_of(region: str, v: int = v, risks: _RegionDraws = risks) -> VolumeRisk:
            hit = risks.get(region)
            if hit is None:
                index = population.region_index(region)
                hit = risks.put(
                    region,
                    VolumeRisk(population.of(region), v, crit.simulations, seeded(crit.seed, index, v)),
                )
            return hit

        def predicate(
            node: Node, v: int = v, upper: dict[Node, float] = upper, by_size: list[str] = by_size
        ) -> bool:
            if crit.risk == "pk" and v < crit.k:
                upper[node] = 1.0  # fewer records than k: every group is smaller than k, PK_k = 1
                return crit.threshold >= 1.0
            grouping = space.grouping(node)
            worst = 0.0
            for region in by_size:
                risk = risk_of(region)
                values = (
                    risk.pk(grouping, crit.k, key=node)
                    if crit.risk == "pk"
                    else risk.marketer(grouping, key=node)
                )
                worst = max(worst, upper_quantile(values, crit.quantile))
                if worst > crit.threshold:
                    break  # one failing region settles it
            upper[node] = worst
            return worst <= crit.threshold

        if exhaustive:
            passing = [n for n in space.policies() if predicate(n)]
            minimal = [n for n in passing if not any(p in passing for p in space.lattice.predecessors(n))]
            checked = space.lattice.size
        else:
            minimal, checked, _ = find_minimal_nodes(space.lattice, predicate)
            passing = [n for n in space.policies() if any(space.lattice.leq(m, n) for m in minimal)]
        best, _ = choose_best(minimal, space.precision_loss)
        results.append(
            VolumeResult(v, sorted(minimal), sorted(passing), best, checked, upper, tuple(by_size))
        )
        if progress is not None:
            progress(j + 1, len(vols))
    return PolicySearch(space, tuple(regions), crit, results, time.perf_counter() - start, unsearched)
