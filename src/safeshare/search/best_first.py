"""Exact least-loss search when the privacy criterion is not monotone with suppression.

OLA's predictive tagging needs a predicate that, once true, stays true along
generalization (thesis §4.3.2). Some privacy models only have the
*generalization property* (m-concealing, thesis §5.2; entropy l-diversity;
t-closeness): without suppression they are monotone, but with a suppression
limit a generalization can merge a passing class into a failing one and
suppress more records, so a qualifying node can have a non-qualifying
generalization. This module finds the optimum exactly anyway, usually after
checking a small part of the lattice.

Problem. Minimize ``key(n) = (loss(n), height(n), n)`` (OLA's objective and
tie-break, see :func:`safeshare.search.ola.choose_best`) over the nodes ``n``
with ``suppressed(n) <= L``, where ``suppressed(n)`` counts the records of the
classes some model rejects.

Monotone relaxation. Let ``R`` be the criterion built from the models that are
monotone with suppression plus, for every other model, its
``monotone_relaxation()`` when it has one (a monotone model that rejects only
classes the model rejects; for m-concealing, k-anonymity with
``k = ceil(pi/m)``). Every class ``R`` rejects is rejected by the criterion, so
``suppressed_R(n) <= suppressed(n)``, and ``R`` is monotone. Hence

    suppressed_R(n) > L  implies  suppressed(n'') > L  for every n'' <= n,

which is exactly what predictive tagging of ``R``'s failures (down-sets) needs.

Second bound, learned from failures. When a node fails, the records that are
suppressed at it *and at every node below it* are known: those in classes
rejected by a monotone model (a merged class is rejected only if all its parts
are, base.py), and, for a model with ``failing_rows`` (m-concealing), the
records that fail individually (their value can only grow when the node is
specialized). If these records exceed ``L``, every node below fails as well.

Algorithm (best-first on the loss).

1. Find the minimal nodes of ``R`` with OLA (predictive tagging is exact for
   ``R``); ``G``, their up-set, holds every qualifying node.
2. Visit the nodes of ``G`` by increasing ``key``, skipping those below a node
   where the second bound exceeded ``L``; check the exact criterion. The first
   node that qualifies is optimal: every node of smaller key was checked and
   failed, or lies outside ``G``, or lies below such a failure. (Loss values of
   node-only metrics come from a float array; nodes whose array value is
   within ``1e-9`` (relative) of the first qualifying node's are also checked and
   compared with the metric's own ``value``, so ties are broken exactly as OLA
   and the exhaustive search break them.)

Cost: OLA on ``R``, one evaluation per node visited in step 2, and, for
metrics that need the classes (DM*), one depth-first pass to compute the loss
of every node. A node-level model decides inside that evaluation, as cheaply as
it can: the re-identification risk threshold (:mod:`safeshare.models.risk`)
rejects a node by a provable lower bound on its estimate before it fits one, and
caches estimates by class-size histogram; its running counts
(``estimate_counts()``) are reported as ``risk_estimates``: ``nodes_estimated``
(checked nodes whose decision needed an estimate), ``fitted``, ``cached`` and
``bound_rejections``.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import numpy as np

from safeshare.core.evaluation import Classes
from safeshare.core.frequency import FrequencyTable
from safeshare.core.lattice import Lattice, Node
from safeshare.models.base import BoolArray, PrivacyCriterion, PrivacyModel
from safeshare.search.ola import find_minimal_nodes
from safeshare.search.result import SearchResult

if TYPE_CHECKING:
    from safeshare.metrics.loss import InformationLoss
    from safeshare.search.context import SearchContext

#: Node-array loss values within this relative distance count as ties (exact comparison follows).
_TIE = 1e-9


def relaxation_models(models: tuple[PrivacyModel, ...] | list[PrivacyModel]) -> list[PrivacyModel]:
    """The models of a monotone relaxation of ``models`` (see the module docstring)."""
    out: list[PrivacyModel] = []
    for model in models:
        if model.monotone_with_suppression:
            out.append(model)
            continue
        relax = getattr(model, "monotone_relaxation", None)
        if callable(relax):
            relaxed = relax()
            if isinstance(relaxed, PrivacyModel) and relaxed.monotone_with_suppression:
                out.append(relaxed)
    return out


def monotone_relaxation(criterion: PrivacyCriterion) -> PrivacyCriterion | None:
    """A monotone criterion that every node qualifying for ``criterion`` satisfies, if one is known."""
    models = relaxation_models(criterion.models)
    if not models:
        return None
    return PrivacyCriterion(models, criterion.max_suppression)


def loss_array(metric: InformationLoss, ctx: SearchContext) -> np.ndarray:
    """The metric at every node, indexed by the node (one depth-first pass if it needs classes)."""
    arr = metric.node_array()
    if arr is not None:
        return arr
    out = np.empty(tuple(h + 1 for h in ctx.lattice.heights), dtype=np.float64)
    for classes in ctx.evaluator.iter_classes():
        out[classes.node] = metric.value(classes.node, classes)
    return out


def surely_failing_rows(criterion: PrivacyCriterion, classes: Classes, table: FrequencyTable) -> BoolArray:
    """Rows whose records are suppressed at ``classes.node`` and at every node below it."""
    rows = np.zeros(table.n_rows, dtype=bool)
    for model in criterion.models:
        failing = getattr(model, "failing_rows", None)
        if model.monotone_with_suppression:
            rows |= ~model.acceptable(classes, table)[classes.row_class]
        elif callable(failing):
            rows |= np.asarray(failing(classes, table), dtype=bool)
    return rows


def estimate_counts(criterion: PrivacyCriterion) -> dict[str, int] | None:
    """The node-level models' running counts of risk estimates (``estimate_counts()``), summed;
    ``None`` when no model keeps them."""
    out: dict[str, int] | None = None
    for model in criterion.models:
        counts = getattr(model, "estimate_counts", None)
        if callable(counts):
            out = out or {}
            for key, value in counts().items():
                out[key] = out.get(key, 0) + int(value)
    return out


def estimate_report(before: dict[str, int] | None, after: dict[str, int] | None) -> dict[str, int]:
    """What a search spent on risk estimates: ``nodes_estimated`` (checked nodes whose decision
    needed an estimate), ``fitted`` (estimates computed), ``cached`` (estimates answered from the
    cache: the node's class-size histogram had been fitted before), ``bound_rejections``
    (nodes rejected by a lower bound without an estimate) and, with ``use: upper``,
    ``intervals`` (estimates computed with their bootstrap interval)."""
    if before is None or after is None:
        return {}
    diff = {key: after[key] - before.get(key, 0) for key in after}
    return {
        "nodes_estimated": diff.get("nodes", 0),
        "fitted": diff.get("estimates", 0),
        "cached": diff.get("cached", 0),
        "bound_rejections": diff.get("bound_rejections", 0),
        **({"intervals": diff["intervals"]} if "intervals" in diff else {}),
    }


def up_set_array(lattice: Lattice, nodes: list[Node]) -> BoolArray:
    """Boolean array indexed by node: at or above one of ``nodes``."""
    out = np.zeros(tuple(h + 1 for h in lattice.heights), dtype=bool)
    for node in nodes:
        out[tuple(slice(v, None) for v in node)] = True
    return out


class BestFirstOLA:
    """OLA's optimum for criteria that are not monotone with suppression (exact; see module)."""

    name = "ola"

    def run(self, ctx: SearchContext) -> SearchResult:
        start = time.perf_counter()
        lattice, table, criterion, metric = ctx.lattice, ctx.table, ctx.criterion, ctx.metric
        limit = criterion.suppression_limit(table.n_records)
        counts_before = estimate_counts(criterion)
        relaxed = monotone_relaxation(criterion)
        relaxation_checks = 0
        if relaxed is not None:
            minimal, relaxation_checks, _ = find_minimal_nodes(
                lattice,
                lambda n: relaxed.holds(ctx.evaluator.classes(n), table),
                guide=ctx.guide,
                progress=ctx.ticker,
            )
            candidates = up_set_array(lattice, minimal)
        else:
            candidates = np.ones(tuple(h + 1 for h in lattice.heights), dtype=bool)
        failed = np.zeros_like(candidates)
        losses = loss_array(metric, ctx)
        flat = losses.ravel()
        heights = lattice.levels_array().sum(axis=1)
        order = np.lexsort((np.arange(flat.shape[0]), heights, flat))
        order = order[candidates.ravel()[order]]
        shape = losses.shape
        exact_checks = pruned = 0
        best: tuple[float, int, Node] | None = None
        window: float | None = None
        for index in order:
            if window is not None and flat[index] > window:
                break
            node: Node = tuple(int(v) for v in np.unravel_index(int(index), shape))
            if failed[node]:
                pruned += 1
                continue
            classes = ctx.evaluator.classes(node)
            exact_checks += 1
            ctx.ticker.tick()
            if criterion.holds(classes, table):
                key = (metric.value(node, classes), sum(node), node)
                if best is None or key < best:
                    best = key
                if window is None:  # relative: DM* values reach 1e9, where rounding exceeds 1e-9
                    value = float(flat[index])
                    window = value + _TIE * max(1.0, abs(value))
            elif window is None:
                rows = surely_failing_rows(criterion, classes, table)
                if int(table.counts[rows].sum()) > limit:
                    failed[tuple(slice(0, v + 1) for v in node)] = True
        estimates = estimate_report(counts_before, estimate_counts(criterion))
        return SearchResult(
            algorithm=self.name,
            node=best[2] if best else None,
            objective=best[0] if best else None,
            minimal_nodes=[],
            checked_nodes=exact_checks + relaxation_checks,
            lattice_size=lattice.size,
            elapsed_s=time.perf_counter() - start,
            extra={
                "search": "best-first",
                "note": "privacy models not monotone with suppression: exact best-first search "
                "over the loss order, pruned by a monotone relaxation "
                f"({', '.join(repr(m) for m in relaxed.models) if relaxed else 'none'})",
                "exact_checks": exact_checks,
                "relaxation_checks": relaxation_checks,
                "relaxation_qualifying_nodes": int(candidates.sum()),
                "pruned_below_failures": pruned,
                **({"risk_estimates": estimates} if estimates else {}),
            },
        )
