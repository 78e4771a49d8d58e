"""A search predicate that remembers its evaluations across suppression limits.

The suppression/loss trade-off curve (:func:`safeshare.workflows.anonymizer.tradeoff`)
searches the same lattice on the same table for several suppression limits.
Whether a node qualifies at limit ``s`` depends on ``s`` only through one
number, the records failing the privacy models at the node (``failing <=
floor(s N)``): remembered once, it answers the predicate for every limit, and
a node qualifying at ``s`` qualifies at every larger limit.
"""

from __future__ import annotations

from collections.abc import Sequence

from safeshare.core.evaluation import Classes, Evaluator
from safeshare.core.frequency import FrequencyTable
from safeshare.core.lattice import Node
from safeshare.models.base import PrivacyCriterion, PrivacyModel


class MemoizedCriterion(PrivacyCriterion):
    """:class:`PrivacyCriterion` whose predicate remembers, per node, the records failing the models.

    ``holds`` is exactly ``failing(node) <= floor(max_suppression N)`` (what
    :meth:`PrivacyCriterion.holds` decides, without its early exit), so
    searches with different suppression limits on the same table can share
    ``failing`` and evaluate each node's models once.
    """

    def __init__(
        self, models: Sequence[PrivacyModel], max_suppression: float, failing: dict[Node, int]
    ) -> None:
        super().__init__(models, max_suppression)
        self.failing = failing

    def holds(self, classes: Classes, table: FrequencyTable) -> bool:
        count = self.failing.get(classes.node)
        if count is None:
            count = self.failing_count(classes, table)
            self.failing[classes.node] = count
        return count <= self.suppression_limit(classes.n_records)

    def holds_at(self, evaluator: Evaluator, node: Node) -> bool:
        count = self.failing.get(node)
        if count is None:
            count = self.failing[node] = self.failing_at(evaluator, node)
        return count <= self.suppression_limit(evaluator.table.n_records)

    def facts(self, n_records: int) -> list[tuple[Node, bool]]:
        """``(node, qualifies)`` for every remembered node, at this criterion's limit."""
        limit = self.suppression_limit(n_records)
        return [(node, count <= limit) for node, count in self.failing.items()]

    def known(self, node: Node, n_records: int) -> bool | None:
        """The predicate at ``node`` if an earlier search evaluated it, else ``None``: no need
        to compute the node's classes (the costly part of a check)."""
        count = self.failing.get(node)
        return None if count is None else count <= self.suppression_limit(n_records)
