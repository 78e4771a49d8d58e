"""Anytime branch and bound: the best node found within a budget, with a proven bound.

For lattices too large for an exact search (Census-Income KDD with 18 QIs has
about 2 * 10^7 nodes), the ``anytime`` strategy returns, when its budget
(``time_limit`` seconds and/or ``max_evaluations`` node evaluations) runs
out, the qualifying node of least loss it has found, the *incumbent*, together
with a lower bound ``B`` on the loss of the optimum that is *proven*, not
estimated, and the gap ``loss(incumbent) - B``. When the gap reaches 0 the
incumbent is optimal and the search says so (``optimal``); it never says so
otherwise.

Setting. ``P`` is the search predicate (the privacy models with the
suppression limit), ``loss`` the configured metric. All three metrics
(:mod:`safeshare.metrics.loss`) are computed *before suppression*: Prec and
non-uniform entropy are sums over the QIs of a per-QI value that does not
decrease with the level; DM* is ``sum_E |E|^2`` over the node's classes, and
a generalization merges classes, ``(a + b)^2 >= a^2 + b^2``. No metric charges
suppressed records, so ``loss`` itself is monotone non-decreasing upward in the
lattice (``x <= y`` implies ``loss(x) <= loss(y)``) on every node, qualifying
or not. That is the only property of the metric the bound uses.

*Known failures.* When ``P`` is monotone upward (``criterion.monotone``), a
node where ``P`` fails has only failing nodes below it. When it is not (entropy
l-diversity, t-closeness with suppression), a failure of the criterion's
monotone relaxation ``R`` (:func:`~safeshare.search.best_first.monotone_relaxation`:
every class ``R`` rejects, ``P`` rejects, so ``P`` implies ``R``) has the same
consequence; without a relaxation no failure says anything about other
nodes. The maximal nodes known to fail with their whole down-set are kept in
:class:`FailingSet`, an antichain ``F``; ``D(F)`` denotes its down-set.

*Keys.* Every node ``z`` pushed on the frontier (a heap) carries a key with
``key(z) <= loss(z)``: for Prec and entropy the key *is* the node's loss (it
depends on the node alone); for DM* it is the largest of the key of the node
that pushed ``z`` and that node's DM* when it was evaluated (both lower bounds
of ``loss(z)`` by monotonicity), and ``ceil(N^2 / c)`` where ``c`` bounds the
number of classes of ``z`` (at most the distinct QI tuples ``M``, at most the
product over the QIs of the values present at ``z``'s levels, at most the
classes of an evaluated node below ``z``): by Cauchy-Schwarz
``sum_E |E|^2 >= (sum_E |E|)^2 / #classes = N^2 / #classes``, and DM* is an
integer. A popped DM* node whose key is below its DM* is evaluated and pushed
back with the exact key.

Algorithm. Pop the frontier node ``z`` of least key.

1. If ``key(z) >= loss(incumbent)``: stop, the incumbent is optimal (below).
2. If ``z`` qualifies (evaluated), it becomes the incumbent when it is better;
   nothing above it is pushed (every node above has loss ``>= loss(z)``). A
   greedy *descent* then walks down through qualifying predecessors of least
   loss (each evaluated) to a minimal qualifying node, a cheap improvement.
3. Otherwise ``z`` fails. Let ``a = z`` if nothing is known below ``z``'s own
   failure, or ``a`` a member of ``F`` with ``z <= a`` when ``z`` is *known* to
   fail (then ``z`` is not evaluated at all). Push, for every QI ``i`` with
   ``a_i < h_i``, the node ``z^(i)`` equal to ``z`` with level ``a_i + 1`` on
   QI ``i`` (when ``a = z`` these are the successors of ``z``; when ``a`` is far
   above ``z`` they jump over the whole failing box ``[z, a]``). Nodes already
   pushed once are not pushed again.

Before the loop the incumbent is seeded by evaluating the top node and
descending from it (the same greedy descent), so a node is returned even with
a budget of a few evaluations; every failure met on the way joins ``F``.
When a frontier node is evaluated and fails with its down-set, a greedy
*climb* walks up through failing successors to a maximal failing node, which
joins ``F`` and rules out a larger box (successors above a qualifying node found
so far are skipped: with a monotone criterion they qualify, with no less loss).
Descents and climbs only evaluate nodes, add true facts to ``F`` and may
improve the incumbent; the proof below does not depend on them.

Claim (coverage). At any time, every node ``y`` that is neither in ``D(F)``,
nor evaluated and failing, nor at or above an evaluated qualifying node, lies
at or above some node of the frontier. Proof: the bottom was pushed and
``y >= bottom``. Take a pushed node ``w <= y`` (one exists). If ``w`` is on the
frontier we are done. Otherwise ``w`` was popped and processed: it did not
qualify (else ``y`` would be above a qualifying node), so it failed with the
``a`` of step 3, ``a`` evaluated failing (``a = w``) or in ``D(F)`` (``F``
only grows: a member is only replaced by a node above it). ``y`` is not in
``D(a)`` (``a = w`` would mean ``y = w``, evaluated and failing), so
``y_i > a_i >= w_i`` for some ``i``, hence ``y >= w^(i)``, which was pushed in
step 3 (or earlier) and is strictly above ``w``. Repeat with ``w^(i)``; the
chain strictly rises in a finite lattice, so it ends at a frontier node.

Theorem (bound). Let ``B = min(loss(incumbent), min_{z in frontier} key(z))``
(``+inf`` for an empty minimum). Every qualifying node ``y`` has
``loss(y) >= B``; in particular the optimum's loss is ``>= B``. Proof: ``y``
qualifies, so it is neither in ``D(F)`` nor evaluated failing. If it is at or
above an evaluated qualifying node ``p``, ``loss(y) >= loss(p) >=
loss(incumbent) >= B``. Otherwise by the claim ``y >= z`` for a frontier node
``z``, and ``loss(y) >= loss(z) >= key(z) >= B``. QED. Step 1's stop is this
theorem with ``B = loss(incumbent)`` (gap 0); an empty frontier without an
incumbent proves that no node qualifies.

The bound is honest at every moment, but it rises only as fast as the
frontier's least key: on a lattice of 10^7 nodes the gap after a minute may
stay large. Which failing node ``a`` is used in step 3 (the one lifting the
least pushed value of an additive guide most: the metric itself for Prec and
entropy, non-uniform entropy for DM*), the order of the descents and the
climbs (see :meth:`_Run.climb`) are heuristics; they change the speed, never
the validity.

Reference points: branch and bound over a partial order (Land & Doig 1960);
ARX's anytime *Lightning* search (Prasser et al., "Lightning: Utility-Driven
Anonymization of High-Dimensional Data", TDP 2016) returns a node within a
time limit but no bound.
"""

from __future__ import annotations

import heapq
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from safeshare.core.evaluation import Classes
from safeshare.core.lattice import Lattice, Node
from safeshare.errors import ConfigError
from safeshare.metrics.loss import DMStar, InformationLoss, NonUniformEntropy, Prec
from safeshare.search.best_first import monotone_relaxation
from safeshare.search.result import SearchResult

if TYPE_CHECKING:
    from safeshare.search.context import SearchContext

#: Default time budget of the strategy, seconds.
DEFAULT_TIME_LIMIT = 60.0


class FailingSet:
    """An antichain of nodes each known to fail with its whole down-set.

    ``dominating(x)`` answers "is ``x`` below a member?" with one vectorized
    comparison; adding a node drops the members it lies above.
    """

    def __init__(self, q: int) -> None:
        self._arr = np.zeros((16, q), dtype=np.int16)
        self._n = 0

    def __len__(self) -> int:
        return self._n

    @property
    def members(self) -> np.ndarray:
        """The antichain, one node per row (a read-only view)."""
        view = self._arr[: self._n]
        view.flags.writeable = False
        return view

    def dominating(self, node: Node) -> np.ndarray:
        """The members ``a`` with ``node <= a`` (rows of an array, possibly empty)."""
        arr = self._arr[: self._n]
        return arr[(arr >= np.asarray(node, dtype=np.int16)).all(axis=1)]

    def covers(self, node: Node) -> bool:
        """Whether ``node`` is at or below a member."""
        arr = self._arr[: self._n]
        return bool((arr >= np.asarray(node, dtype=np.int16)).all(axis=1).any())

    def add(self, node: Node) -> None:
        """Record that ``node`` and everything below it fails."""
        vec = np.asarray(node, dtype=np.int16)
        arr = self._arr[: self._n]
        if self._n and (arr >= vec).all(axis=1).any():
            return
        keep = ~(arr <= vec).all(axis=1)
        kept = arr[keep]
        n = kept.shape[0]
        if n + 1 > self._arr.shape[0]:
            grown = np.zeros((2 * (n + 1), self._arr.shape[1]), dtype=np.int16)
            grown[:n] = kept
            self._arr = grown
        else:
            self._arr[:n] = kept
        self._arr[n] = vec
        self._n = n + 1


class _Keys:
    """Lower bounds of the loss of unevaluated nodes (see the module docstring, *Keys*)."""

    def __init__(self, metric: InformationLoss, ctx: SearchContext) -> None:
        self.metric = metric
        self.exact = not metric.needs_classes
        table = ctx.table
        heights = ctx.lattice.heights
        if not isinstance(metric, Prec | NonUniformEntropy | DMStar):
            raise ConfigError(
                f"algorithm 'anytime' has no proven lower bound for metric {metric.name!r} "
                "(it supports prec, dm_star and entropy)"
            )
        #: a cheap additive score ordering the descents, climbs and jumps (heuristics only): the
        #: metric itself for Prec and entropy, non-uniform entropy (marginals only) for DM*
        self.guide: InformationLoss = metric if self.exact else NonUniformEntropy(ctx.evaluator)
        #: the guide's per-QI value of each level (``inf`` past the top)
        width = max(heights) + 2
        self.parts = np.full((len(heights), width), np.inf)
        bottom = ctx.lattice.bottom
        for i, h in enumerate(heights):
            for level in range(h + 1):
                node = tuple(level if j == i else 0 for j in range(len(heights)))
                self.parts[i, level] = self.guide.value(node) - self.guide.value(bottom)
        self.n_records = table.n_records
        self.n_rows = table.n_rows
        self.values_at = [
            [int(np.count_nonzero(table.marginal(i, level))) for level in range(h + 1)]
            for i, h in enumerate(heights)
        ]

    def class_cap(self, node: Node) -> int:
        """An upper bound on the number of classes at ``node``."""
        cap = self.n_rows
        prod = 1
        for i, level in enumerate(node):
            prod *= self.values_at[i][level]
            if prod >= cap:
                return cap
        return prod

    def key(self, node: Node, inherited: float, cap: int) -> float:
        """A lower bound of ``loss(node)``, given a lower bound ``inherited`` from below."""
        if self.exact:
            return self.metric.value(node)
        cap = min(cap, self.class_cap(node))
        return max(inherited, float(-(-(self.n_records**2) // max(cap, 1))))


@dataclass
class _Outcome:
    qualifies: bool
    fails_below: bool
    loss: float
    n_classes: int


class AnytimeSearch:
    """The ``anytime`` strategy: branch and bound within a budget, with a proven lower bound.

    Parameters
    ----------
    time_limit: seconds of search (``None``: no time limit); checked between node evaluations.
    max_evaluations: node evaluations at most (``None``: no limit).

    With neither limit the search runs to the proven optimum (gap 0).
    """

    name = "anytime"

    def __init__(
        self, time_limit: float | None = DEFAULT_TIME_LIMIT, max_evaluations: int | None = None
    ) -> None:
        if time_limit is not None and (
            isinstance(time_limit, bool)
            or not isinstance(time_limit, int | float)
            or not math.isfinite(time_limit)
            or time_limit <= 0
        ):
            raise ConfigError(f"anytime: time_limit must be a positive number of seconds, got {time_limit!r}")
        if max_evaluations is not None and (
            isinstance(max_evaluations, bool) or not isinstance(max_evaluations, int) or max_evaluations < 1
        ):
            raise ConfigError(f"anytime: max_evaluations must be an integer >= 1, got {max_evaluations!r}")
        self.time_limit = None if time_limit is None else float(time_limit)
        self.max_evaluations = max_evaluations

    def run(self, ctx: SearchContext) -> SearchResult:
        return _Run(ctx, self.time_limit, self.max_evaluations).search()


#: A frontier entry: (key, height, node, bound on the node's classes, whether key = loss).
_Entry = tuple[float, int, Node, int, bool]


class _Budget(Exception):
    """The budget ran out (raised by an evaluation that would exceed it)."""


class _Run:
    """One anytime search (state shared by the seed, the descents and the main loop)."""

    def __init__(self, ctx: SearchContext, time_limit: float | None, max_evaluations: int | None) -> None:
        self.ctx = ctx
        self.lattice: Lattice = ctx.lattice
        self.keys = _Keys(ctx.metric, ctx)
        self.relaxed = None if ctx.criterion.monotone else monotone_relaxation(ctx.criterion)
        self.failing = FailingSet(self.lattice.n_qis)
        #: minimal qualifying nodes found, negated (``x >= p`` iff ``-x <= -p``); monotone criteria only
        self.passing = FailingSet(self.lattice.n_qis) if ctx.criterion.monotone else None
        self.evaluated: dict[Node, _Outcome] = {}
        self.incumbent: tuple[float, int, Node] | None = None
        self.start = time.perf_counter()
        self.deadline = None if time_limit is None else self.start + time_limit
        self.time_limit = time_limit
        self.max_evaluations = max_evaluations
        self.stop_reason: str | None = None
        self.known_failing = 0
        self.incumbent_found_at = 0
        self.popped = 0
        self.seen: set[Node] = set()
        self.descended: set[Node] = set()
        #: climb from evaluated failures (a heuristic: the bound holds either way)
        self.climbing = True

    # ---------------------------------------------------------------- evaluation
    def out_of_budget(self) -> bool:
        if self.max_evaluations is not None and len(self.evaluated) >= self.max_evaluations:
            self.stop_reason = "max_evaluations"
            return True
        if self.deadline is not None and time.perf_counter() >= self.deadline and self.evaluated:
            self.stop_reason = "time_limit"
            return True
        return False

    def evaluate(self, node: Node) -> _Outcome:
        hit = self.evaluated.get(node)
        if hit is not None:
            return hit
        if self.out_of_budget():
            raise _Budget
        ctx = self.ctx
        if self.keys.exact and ctx.criterion.monotone:
            # Prec and entropy need no classes, a monotone criterion no relaxation: the
            # search's predicate as OLA asks it (for k-anonymity alone a count of the records
            # under k, by refinement of a recently counted node above when there is one:
            # the descents and climbs), at a third of the cost of the class table (issue 36)
            qualifies = bool(ctx.holds(node))
            out = _Outcome(qualifies, not qualifies, float(ctx.metric.value(node)), self.keys.n_rows)
        else:
            classes: Classes = ctx.evaluator.classes(node)
            qualifies = bool(ctx.criterion.holds(classes, ctx.table))
            if qualifies:
                fails_below = False
            elif self.relaxed is None:
                fails_below = ctx.criterion.monotone
            else:
                fails_below = not self.relaxed.holds(classes, ctx.table)
            loss = float(ctx.metric.value(node, classes))
            # the class count only tightens DM* keys: not computed for the other metrics
            out = _Outcome(
                qualifies, fails_below, loss, self.keys.n_rows if self.keys.exact else classes.n_classes
            )
        self.evaluated[node] = out
        ctx.ticker.tick()
        if out.fails_below:
            self.failing.add(node)
        if qualifies and self.passing is not None:
            self.passing.add(tuple(-v for v in node))
        if qualifies:
            key = (out.loss, sum(node), node)
            if self.incumbent is None or key < self.incumbent:
                self.incumbent = key
                self.incumbent_found_at = len(self.evaluated)
        return out

    def descend(self, node: Node) -> None:
        """From a qualifying node, walk down through qualifying predecessors (least loss first)."""
        while True:
            self.descended.add(node)
            preds = [p for p in self.lattice.predecessors(node) if not self.failing.covers(p)]
            preds.sort(key=lambda p: (self.keys.guide.value(p), p))
            nxt = None
            for p in preds:
                out = self.evaluate(p)
                if out.qualifies:
                    nxt = p
                    break
            if nxt is None or nxt in self.descended:
                return
            node = nxt

    def climb(self, node: Node) -> None:
        """From a node failing with its down-set, walk up through failing successors (least loss first)
        to a maximal failing node, which joins ``F`` and covers a larger box; qualifying successors
        met on the way may improve the incumbent (and are descended from when they do)."""
        while True:
            succ = sorted(self.lattice.successors(node), key=lambda s: (self.keys.guide.value(s), s))
            nxt = None
            for s in succ:
                if self.failing.covers(s):
                    nxt = s
                    break
                if self.passing is not None and self.passing.covers(tuple(-v for v in s)):
                    continue  # above a qualifying node: qualifies, with no better loss
                out = self.evaluate(s)
                if out.fails_below:
                    nxt = s
                    break
                if out.qualifies and self.incumbent is not None and self.incumbent[2] == s:
                    self.descend(s)
            if nxt is None:
                return
            node = nxt

    # ---------------------------------------------------------------- main loop
    def jump_base(self, node: Node, rows: np.ndarray) -> Node:
        """The member of ``F`` above ``node`` (``rows``) whose box step 3 jumps over (module docstring)."""
        if rows.shape[0] == 1:
            return tuple(int(v) for v in rows[0])
        parts = self.keys.parts
        q = rows.shape[1]
        here = parts[np.arange(q), np.asarray(node)]
        lift = (parts[np.arange(q)[None, :], rows + 1] - here[None, :]).min(axis=1)
        best = int(np.argmax(lift))
        return tuple(int(v) for v in rows[best])

    def search(self) -> SearchResult:
        lattice, keys = self.lattice, self.keys
        bottom = lattice.bottom
        heap: list[_Entry] = []
        self.seen = {bottom}
        heapq.heappush(heap, (keys.key(bottom, 0.0, keys.n_rows), 0, bottom, keys.n_rows, keys.exact))
        try:
            if self.evaluate(lattice.top).qualifies:
                self.descend(lattice.top)
            while heap:
                if self.incumbent is not None and heap[0][0] >= self.incumbent[0]:
                    break  # the theorem with B = loss(incumbent): optimal
                if self.out_of_budget():
                    raise _Budget
                entry = heapq.heappop(heap)
                try:
                    self.process(entry, heap)
                except _Budget:
                    heapq.heappush(heap, entry)  # not (fully) processed: it stays on the frontier
                    raise
        except _Budget:
            pass
        return self.result(heap)

    def process(self, entry: _Entry, heap: list[_Entry]) -> None:
        """Steps 2 and 3 of the module docstring for the popped frontier node."""
        key, height, node, cap, exact = entry
        self.popped += 1
        out = self.evaluated.get(node)
        if not exact:
            fresh = out is None
            out = self.evaluate(node)
            if fresh and out.fails_below and self.climbing:
                self.climb(node)
            if out.loss > key:  # DM*: the exact key goes back on the frontier
                heapq.heappush(heap, (out.loss, height, node, cap, True))
                return
        rows = None
        if out is None:
            rows = self.failing.dominating(node)
            if rows.shape[0]:
                self.known_failing += 1
            else:
                out = self.evaluate(node)
                if out.fails_below and self.climbing:
                    self.climb(node)
        if out is not None and out.qualifies:
            if node not in self.descended:
                self.descended.add(node)
                self.descend(node)
            return
        if out is not None:
            if out.fails_below:
                rows = self.failing.dominating(node)
                base = self.jump_base(node, rows)
            else:
                base = node
            inherited = max(key, out.loss)
            cap = min(cap, out.n_classes)
        else:
            assert rows is not None
            base = self.jump_base(node, rows)
            inherited = key
        heights, keys, seen = self.lattice.heights, self.keys, self.seen
        for i, level in enumerate(base):
            if level >= heights[i]:
                continue
            child = (*node[:i], level + 1, *node[i + 1 :])
            if child in seen:
                continue
            seen.add(child)
            heapq.heappush(
                heap, (keys.key(child, inherited, cap), height + level + 1 - node[i], child, cap, keys.exact)
            )

    def result(self, heap: list[_Entry]) -> SearchResult:
        heap = [e for e in heap if e[2] not in self.evaluated or not self.evaluated[e[2]].qualifies]
        frontier_min = min((entry[0] for entry in heap), default=math.inf)
        best = self.incumbent
        loss = best[0] if best is not None else math.inf
        bound = min(loss, frontier_min)
        optimal = best is not None and bound >= loss
        if self.stop_reason is None or optimal:
            self.stop_reason = "optimal" if best is not None else "no qualifying node"
        gap = (loss - bound) if best is not None else None
        relative = None if gap is None else (gap / loss if loss > 0 else 0.0)
        self.ctx.ticker.done()
        extra: dict[str, Any] = {
            "search": "anytime",
            "lower_bound": None if best is None and math.isinf(bound) else float(bound),
            "gap": gap,
            "gap_relative": relative,
            "optimal": optimal,
            "stop_reason": self.stop_reason,
            "time_limit": self.time_limit,
            "max_evaluations": self.max_evaluations,
            "incumbent_found_at_evaluation": self.incumbent_found_at if best is not None else None,
            "frontier_nodes": len(heap),
            "popped_nodes": self.popped,
            "pushed_nodes": len(self.seen),
            "skipped_known_failing": self.known_failing,
            "failing_antichain": len(self.failing),
        }
        return SearchResult(
            algorithm=AnytimeSearch.name,
            node=best[2] if best is not None else None,
            objective=best[0] if best is not None else None,
            minimal_nodes=[],
            checked_nodes=len(self.evaluated),
            lattice_size=self.lattice.size,
            elapsed_s=time.perf_counter() - self.start,
            extra=extra,
        )


def make_anytime(options: Mapping[str, Any]) -> AnytimeSearch:
    """The ``anytime`` strategy factory: options ``time_limit`` (seconds; default 60 unless only
    ``max_evaluations`` is given) and ``max_evaluations``."""
    used = {k: v for k, v in options.items() if v is not None}
    unknown = set(used) - {"time_limit", "max_evaluations"}
    if unknown:
        raise ConfigError(
            f"algorithm 'anytime' takes no option {sorted(unknown)[0]!r} "
            "(it takes time_limit, max_evaluations)"
        )
    time_limit = used.get("time_limit", DEFAULT_TIME_LIMIT if "max_evaluations" not in used else None)
    return AnytimeSearch(time_limit=time_limit, max_evaluations=used.get("max_evaluations"))
