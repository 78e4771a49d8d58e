"""The one input of every search strategy: :class:`SearchContext`.

Its own module so that the strategies (``ola``, ``best_first``,
``inverse_ola``, and ``epsilon-safe`` in ``dp/``) import it without importing
the registry that imports them (:mod:`safeshare.search.strategy`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from safeshare.core.evaluation import Evaluator
from safeshare.core.frequency import FrequencyTable
from safeshare.core.lattice import Lattice
from safeshare.metrics.loss import InformationLoss, NonUniformEntropy
from safeshare.models.base import PrivacyCriterion
from safeshare.search.progress import Progress, Ticker


@dataclass
class SearchContext:
    """Everything a strategy may use; built once per run."""

    table: FrequencyTable
    evaluator: Evaluator
    criterion: PrivacyCriterion
    metric: InformationLoss
    #: ``progress(checked_nodes)``, called now and then by the search (never per node).
    progress: Progress | None = None

    @property
    def lattice(self) -> Lattice:
        return self.table.lattice

    @cached_property
    def ticker(self) -> Ticker:
        """One count of checked nodes for the whole run, reported to :attr:`progress`."""
        return Ticker(self.progress)

    @cached_property
    def guide(self) -> np.ndarray:
        """Non-uniform entropy of every node: OLA's probe order (never changes results)."""
        return NonUniformEntropy(self.evaluator).node_array()

    def holds(self, node: tuple[int, ...]) -> bool:
        """The privacy criterion at ``node`` (remembered by a :class:`MemoizedCriterion`; for
        k-anonymity alone a count, :meth:`PrivacyCriterion.holds_at`)."""
        return self.criterion.holds_at(self.evaluator, node)
