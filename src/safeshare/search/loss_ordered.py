"""Loss-ordered search: the exact optimum when predictive tagging is not allowed.

OLA (thesis §4.3) prunes the lattice with predictive tagging, which is exact
only for a *monotone* criterion. Entropy and recursive l-diversity and
t-closeness are monotone without suppression but not with it: a passing class
merged with a failing one can fail, so a generalization of a qualifying node
may need more suppression than allowed (see :mod:`safeshare.models.l_diversity`).
Exhaustive search is then the reference: evaluate the criterion on every
node and return the qualifying node of least loss, ties to the lower node and
then to the lexicographically smaller one.

This search returns exactly that node, but evaluates the expensive part of the
criterion on as few nodes as possible:

1. the loss of every node: at once for node-only metrics (Prec, non-uniform
   entropy); during one depth-first walk of the lattice
   (:meth:`~safeshare.evaluation.Evaluator.iter_classes`) for DM*;
2. in the same walk, the *cheap part* of the criterion: the models that need
   no sensitive attribute (k-anonymity), with the same suppression limit. A
   node failing it fails the whole criterion, because every further model can
   only reject more classes. A model that cannot accept classes smaller than
   some size (``minimum_class_size``: l-diversity needs ``ceil(l)`` records)
   adds k-anonymity with that k to the cheap part, for the same reason;
3. the remaining nodes sorted by ``(loss, height, node)``, the exhaustive
   search's order, are checked against the whole criterion; the first one that
   qualifies is the optimum and the search stops (after the nodes whose loss
   equals it up to floating-point rounding, which are compared with the
   metric's exact value, as exhaustive search does).

No monotonicity is assumed anywhere, so the result equals exhaustive search
for any criterion (checked in tests/test_l_diversity.py and
tests/test_t_closeness.py). In the worst case (no node qualifies) every
candidate is evaluated, at about the cost of exhaustive search.
"""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING

from safeshare.evaluation import Classes
from safeshare.lattice.lattice import Node
from safeshare.models.base import PrivacyCriterion, PrivacyModel
from safeshare.models.k_anonymity import KAnonymity
from safeshare.search.result import SearchResult

if TYPE_CHECKING:
    from safeshare.search.strategy import SearchContext


class LossOrderedStrategy:
    """Exact optimum for any criterion: nodes by increasing loss, stop at the first that qualifies.

    ``SearchResult.checked_nodes`` counts the nodes checked against the whole
    criterion; ``extra["walked_nodes"]`` the nodes visited by the walk of
    step 1-2 (0 when no walk was needed) and ``extra["candidates"]`` the nodes
    that passed the cheap part.
    """

    name = "loss-ordered"

    def run(self, ctx: SearchContext) -> SearchResult:
        start = time.perf_counter()
        lattice = ctx.lattice
        criterion = ctx.criterion
        cheap_models: list[PrivacyModel] = [m for m in criterion.models if not m.sensitive_columns]
        implied = max((int(getattr(m, "minimum_class_size", 1)) for m in criterion.models), default=1)
        if implied > 1:
            cheap_models.append(KAnonymity(implied))
        cheap = PrivacyCriterion(cheap_models, criterion.max_suppression) if cheap_models else None
        # Node-only metrics give every node's loss at once (floating-point sums: the order is
        # exact up to rounding, so ties are settled below with the metric's own value).
        table_of_loss = ctx.metric.node_array()

        def loss(node: Node, classes: Classes | None = None) -> float:
            if table_of_loss is not None:
                return float(table_of_loss[node])
            return ctx.metric.value(node, classes)

        keys: list[tuple[float, int, Node]] = []
        walked = 0
        if cheap is not None or table_of_loss is None:
            for classes in ctx.evaluator.iter_classes():
                walked += 1
                if cheap is not None and not cheap.holds(classes, ctx.table):
                    continue
                keys.append((loss(classes.node, classes), sum(classes.node), classes.node))
        else:
            keys = [(loss(node), sum(node), node) for node in lattice.nodes()]
        keys.sort()
        checked = 0
        found: list[Node] = []
        bound = math.inf
        for value, _, node in keys:
            if value > bound:
                break
            checked += 1
            if ctx.holds(node):
                found.append(node)
                bound = value + 1e-9 * max(1.0, abs(value))
        best: tuple[float, int, Node] | None = None
        if found:  # the exhaustive search's key, with the metric's exact value
            best = min((ctx.metric.value(n), sum(n), n) for n in found)
        return SearchResult(
            algorithm=self.name,
            node=best[2] if best else None,
            objective=best[0] if best else None,
            minimal_nodes=[best[2]] if best else [],
            checked_nodes=checked,
            lattice_size=lattice.size,
            elapsed_s=time.perf_counter() - start,
            extra={"walked_nodes": walked, "candidates": len(keys)},
        )
