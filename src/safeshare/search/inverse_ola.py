"""Inverse OLA: the largest k within an information-loss budget (thesis §4.4).

OLA fixes k and minimizes the information loss. Inverse OLA fixes the loss a
data user can tolerate, ``max_loss`` (the configured metric normalized to
[0, 1], see :meth:`InformationLoss.normalized`), and the suppression limit,
and maximizes k.

Definitions. ``N`` records, suppression limit ``L = floor(max_suppression * N)``.
At a node ``n`` with classes ``E``, let ``O`` be the configured privacy models
other than k-anonymity (e.g. m-concealing; empty for plain k-anonymity). A
class rejected by a model of ``O`` is always suppressed. For ``k >= 1``

    S_k(n) = records in the classes that some model of O rejects or that have fewer than k records,

and the *achievable k* of ``n`` is

    k*(n) = max { k : S_k(n) <= L and S_k(n) < N }        (0 if there is none),

the largest k for which suppressing the classes smaller than k (and those
``O`` rejects) stays within the limit and releases at least one record. It is
the size of an ``O``-accepted class: sorting those sizes ``a_1 <= ... <= a_r``,
``k*(n) = max { a_i : R_O(n) + sum_{a_j < a_i} a_j <= L }`` with ``R_O(n)`` the
records ``O`` rejects (:func:`achievable_k`). Releasing node ``n`` with
k-anonymity ``k*(n)`` and ``O`` suppresses ``S_{k*(n)}(n) <= L`` records and its
smallest released class has exactly ``k*(n)`` records. A k-anonymity model in
the configuration is a *floor*: a node qualifies only if ``k*(n) >= k0``, so
Inverse OLA never releases below the k the configuration asks for.

Problem. Among the nodes with ``loss(n) <= max_loss`` (normalized), find one of
largest ``k*``; ties go to the least loss, then OLA's tie-break (lower
height, then lexicographic order; :func:`~safeshare.search.ola.choose_best`).

Search (when the criterion "O and k-anonymity" is monotone, i.e. predictive
tagging is exact; see :attr:`PrivacyCriterion.monotone`):

1. ``A = {n : loss(n) <= max_loss}`` is *down-closed* (the loss is monotone),
   so it is searched with OLA's machinery on the dual lattice
   (``find_minimal_nodes(..., monotone=False)``), which returns its
   **maximal** nodes (thesis §4.4: "keeps all the most general ones").
2. ``S_k(n)`` does not increase along generalization (merging classes never
   turns accepted classes into rejected ones), so ``k*`` does not decrease:
   ``n <= n'`` implies ``k*(n) <= k*(n')``. Every node of ``A`` lies below a
   maximal node of ``A``, hence ``K* = max_{n in A} k*(n)`` is attained at a
   maximal node, and evaluating ``k*`` there suffices.
3. Tie-break. ``U = {n : k*(n) >= K*}`` is *up-closed* (step 2), and on ``A``,
   ``k*(n) = K*`` iff ``n`` is in ``U``. Let ``n`` be the best node of ``A ∩ U``
   for ``key(n) = (loss(n), height(n), n)``, and ``u <= n`` a minimal node of
   ``U``. Then ``loss(u) <= loss(n) <= max_loss`` (monotone loss), so ``u`` is in
   ``A ∩ U``, and ``key(u) < key(n)`` unless ``u = n`` (lower height). So the
   answer is a minimal node of ``U``: OLA with the monotone predicate
   ``k*(n) >= K*`` finds them, and the best of those within ``A`` is the
   answer. ∎ Moreover the answer lies below a maximal node ``t`` of ``A`` (``A``
   is down-closed), and ``k*(t) >= k*(answer) = K*``: OLA only needs to run on
   the sub-lattices below the maximal nodes with ``k* = K*``
   (:func:`minimal_below`); a minimal node of ``U`` found there is minimal in
   the whole lattice, since its predecessors lie below ``t`` too.

When ``O`` is not monotone with suppression (m-concealing with a positive
suppression limit), step 2 fails. The search is then still exact, best-first
on an upper bound: with ``R`` the monotone relaxation of ``O``
(:mod:`safeshare.search.best_first`), ``k*_R(n) >= k*(n)`` (R rejects fewer
classes) and ``k*_R`` is computed for every node of ``A`` in one depth-first
pass; nodes are visited by decreasing ``k*_R`` (then key), their exact ``k*``
evaluated, and the visit stops once ``k*_R`` drops below the best exact ``k*``
found (or equals it with a larger key).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from safeshare.core.evaluation import Classes
from safeshare.core.frequency import FrequencyTable
from safeshare.core.lattice import Lattice, Node
from safeshare.errors import ConfigError
from safeshare.models.base import NodePrivacyModel, PrivacyCriterion, PrivacyModel
from safeshare.models.k_anonymity import KAnonymity
from safeshare.search.best_first import relaxation_models
from safeshare.search.ola import choose_best, find_minimal_nodes
from safeshare.search.result import SearchResult

if TYPE_CHECKING:
    from safeshare.search.context import SearchContext

#: Normalized losses within this distance above ``max_loss`` count as within it (rounding).
LOSS_TOLERANCE = 1e-12


def achievable_k(classes: Classes, table: FrequencyTable, others: Sequence[PrivacyModel], limit: int) -> int:
    """``k*(n)``: the largest k whose suppression (with ``others``) stays within ``limit`` records
    (k in people with a person key: the classes of fewer than k people are suppressed).

    Returns 0 when the records rejected by ``others`` alone exceed the limit
    or no class is accepted.
    """
    sizes = classes.sizes
    used = sizes > 0
    for model in others:  # cheap exit: a relaxation's rejections alone exceed the limit
        relax = getattr(model, "monotone_relaxation", None)
        if callable(relax) and float((sizes * (used & ~relax().acceptable(classes, table))).sum()) > limit:
            return 0
    ok = used.copy()
    for model in others:
        ok &= model.acceptable(classes, table)
    rejected = float((sizes * (used & ~ok)).sum())
    if rejected > limit:
        return 0
    # k counts people (records without a person key); the limit counts records (issue 32)
    people = classes.people[ok]
    by_people = np.argsort(people, kind="stable")
    a = people[by_people]
    if a.shape[0] == 0:
        return 0
    prefix = np.concatenate(([0.0], np.cumsum(sizes[ok][by_people])))
    feasible = rejected + prefix[np.searchsorted(a, a, side="left")] <= limit
    return int(a[feasible].max())


def minimal_below(
    ctx: SearchContext, tops: Sequence[Node], predicate: Callable[[Node], bool]
) -> tuple[list[Node], int]:
    """Minimal nodes of a monotone predicate among the nodes below one of ``tops`` (all qualifying).

    The nodes below ``t`` form a lattice of heights ``t`` (same bottom), and a
    node's predecessors lie below ``t`` too, so a minimal node found there is
    minimal in the whole lattice. OLA runs once per top, or once on the whole
    lattice when the sub-lattices hold more nodes than it.
    """
    below = sum(math.prod(v + 1 for v in top) for top in tops)
    if below >= ctx.lattice.size:  # the sub-lattices overlap too much: one OLA on the whole lattice
        nodes, n_checked, _ = find_minimal_nodes(ctx.lattice, predicate, monotone=True, guide=ctx.guide)
        return nodes, n_checked
    found: set[Node] = set()
    checked = 0
    for top in tops:
        sub = Lattice(top, ctx.lattice.names)
        guide = ctx.guide[tuple(slice(0, v + 1) for v in top)]
        nodes, n_checked, _ = find_minimal_nodes(sub, predicate, monotone=True, guide=guide)
        found.update(nodes)
        checked += n_checked
    return sorted(found), checked


def split_models(criterion: PrivacyCriterion) -> tuple[int, list[PrivacyModel]]:
    """The k floor (largest configured k, 1 if none) and the models other than k-anonymity."""
    floor = max((m.k for m in criterion.models if isinstance(m, KAnonymity)), default=1)
    others = [m for m in criterion.models if not isinstance(m, KAnonymity)]
    return floor, others


class InverseOLA:
    """The node of largest achievable k among those within ``max_loss`` (thesis §4.4).

    Parameters
    ----------
    max_loss: the largest tolerated information loss, normalized to [0, 1].
    """

    name = "inverse-ola"

    def __init__(self, max_loss: float) -> None:
        if isinstance(max_loss, bool) or not isinstance(max_loss, int | float) or not 0.0 <= max_loss <= 1.0:
            raise ConfigError(f"max_loss: expected a number in [0, 1], got {max_loss!r}")
        self.max_loss = float(max_loss)

    def run(self, ctx: SearchContext) -> SearchResult:
        start = time.perf_counter()
        table, metric, criterion = ctx.table, ctx.metric, ctx.criterion
        node_level = [m.name for m in criterion.models if isinstance(m, NodePrivacyModel)]
        if node_level:  # k* is a per-class notion; a node-level rule (risk) has no k to maximize
            raise ConfigError(f"inverse-ola does not support the node-level privacy model {node_level[0]!r}")
        floor, others = split_models(criterion)
        limit = criterion.suppression_limit(table.n_records)
        bound = self.max_loss + LOSS_TOLERANCE
        evaluator = ctx.evaluator

        values = metric.node_array()  # node-only metrics: one array lookup per loss check

        def within(node: Node, classes: Classes | None = None) -> bool:
            if values is not None:
                return metric.normalize(values.item(node)) <= bound
            return metric.normalized(node, classes) <= bound

        def k_star(node: Node, classes: Classes | None = None) -> int:
            ctx.ticker.tick()
            return achievable_k(classes or evaluator.classes(node), table, others, limit)

        k_cache: dict[Node, int] = {}

        def cached_k(node: Node) -> int:
            hit = k_cache.get(node)
            if hit is None:
                hit = k_cache[node] = k_star(node)
            return hit

        probe = PrivacyCriterion([KAnonymity(1), *others], criterion.max_suppression)
        extra: dict[str, Any] = {"max_loss": self.max_loss, "k_floor": floor}
        if probe.monotone:
            maximal, checked_a, _ = find_minimal_nodes(
                ctx.lattice, within, monotone=False, guide=ctx.guide, progress=ctx.ticker
            )
            # In the evaluator's QI order consecutive nodes share prefixes (cached class ids).
            for n in sorted(maximal, key=lambda n: tuple(n[i] for i in evaluator.order)):
                k_cache[n] = k_star(n)
            best_k = max((k_cache[n] for n in maximal), default=0)
            checked = checked_a + len(maximal)
            extra.update(maximal_nodes=len(maximal), loss_checks=checked_a)
            candidates: list[Node] = []
            if best_k >= max(floor, 1):
                tops = [n for n in maximal if k_cache[n] == best_k]
                minimal, checked_u = minimal_below(ctx, tops, lambda n: cached_k(n) >= best_k)
                checked += checked_u
                candidates = [n for n in minimal if within(n)]
                extra.update(k_checks=checked_u, best_maximal_nodes=len(tops))
            node, value = choose_best(candidates, lambda n: metric.value(n))
        else:
            node, value, best_k, checked, candidates = self._best_first(ctx, within, others, limit, floor)
            extra.update(
                search="best-first",
                note="privacy models not monotone with suppression: exact best-first search on an "
                "upper bound of the achievable k",
            )
        if node is None or best_k < max(floor, 1):
            node, value = None, None
            extra["k_achieved"] = None
            extra["reason"] = (
                f"no node within max_loss = {self.max_loss} achieves k >= {max(floor, 1)} "
                f"with at most {limit} suppressed records"
            )
            result_criterion = None
        else:
            extra["k_achieved"] = best_k
            result_criterion = PrivacyCriterion([KAnonymity(best_k), *others], criterion.max_suppression)
        return SearchResult(
            algorithm=self.name,
            node=node,
            objective=value,
            minimal_nodes=sorted(candidates),
            checked_nodes=checked,
            lattice_size=ctx.lattice.size,
            elapsed_s=time.perf_counter() - start,
            extra=extra,
            criterion=result_criterion,
        )

    def _best_first(
        self,
        ctx: SearchContext,
        within: Callable[[Node, Classes | None], bool],
        others: list[PrivacyModel],
        limit: int,
        floor: int,
    ) -> tuple[Node | None, float | None, int, int, list[Node]]:
        """Exact search when ``k*`` is not monotone (see the module docstring)."""
        table, metric = ctx.table, ctx.metric
        relaxed = relaxation_models(others)
        bounds: list[tuple[int, float, int, Node]] = []
        for classes in ctx.evaluator.iter_classes():
            node = classes.node
            if not within(node, classes):
                continue
            ub = achievable_k(classes, table, relaxed, limit)
            if ub >= max(floor, 1):
                bounds.append((-ub, metric.value(node, classes), sum(node), node))
                ctx.ticker.tick()  # a checked node (``checked`` counts the bounds below)
        bounds.sort()
        best: tuple[int, float, int, Node] | None = None
        checked = len(bounds)
        for bound in bounds:
            if best is not None and bound >= (best[0], *best[1:]):
                break  # k*_R(n) < best k, or equal with a key no better than the best's
            node = bound[3]
            k = achievable_k(ctx.evaluator.classes(node), table, others, limit)
            checked += 1
            ctx.ticker.tick()
            key = (-k, *bound[1:])
            if k > 0 and (best is None or key < best):
                best = key
        if best is None:
            return None, None, 0, checked, []
        return best[3], best[1], -best[0], checked, [best[3]]


def make_inverse_ola(options: Mapping[str, Any]) -> InverseOLA:
    """The ``inverse-ola`` strategy factory: options ``{max_loss: float in [0, 1]}``."""
    used = {k: v for k, v in options.items() if v is not None}
    unknown = set(used) - {"max_loss"}
    if unknown:
        raise ConfigError(
            f"algorithm 'inverse-ola' takes no option {sorted(unknown)[0]!r} (it takes max_loss)"
        )
    if "max_loss" not in used:
        raise ConfigError(
            "algorithm 'inverse-ola' needs max_loss, the largest normalized information loss in [0, 1] "
            "(--max-loss or max_loss: in the configuration)"
        )
    return InverseOLA(used["max_loss"])
