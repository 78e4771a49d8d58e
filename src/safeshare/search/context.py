"""The one input of every search strategy: :class:`SearchContext`.

Its own module so that the strategies (``ola``, ``best_first``,
``inverse_ola``, and ``epsilon-safe`` in ``dp/``) import it without importing
the registry that imports them (:mod:`safeshare.search.strategy`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from safeshare.core.evaluation import Evaluator
from safeshare.core.frequency import FrequencyTable
from safeshare.core.lattice import Lattice
from safeshare.data.engines.base import Engine
from safeshare.metrics.loss import InformationLoss, NonUniformEntropy
from safeshare.models.base import PrivacyCriterion
from safeshare.search.memo import MemoizedCriterion
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
        """The privacy criterion at ``node`` (remembered by a :class:`MemoizedCriterion`)."""
        if isinstance(self.criterion, MemoizedCriterion):
            known = self.criterion.known(node, self.table.n_records)
            if known is not None:
                return known
        return self.criterion.holds(self.evaluator.classes(node), self.table)


@dataclass
class Prepared:
    """The records a strategy searches and releases, when the strategy prepares them first.

    Most strategies search the input as it is; epsilon-safe (``dp/``) first draws a
    Bernoulli sample (thesis §4.5.4) and searches and releases the sample. A strategy
    that prepares its records has a method ``prepare(engine, schema, criterion) ->
    Prepared``; :class:`~safeshare.workflows.anonymizer.Anonymizer` calls it before it
    builds the frequency table, so that there is one anonymization path for every strategy.

    Attributes
    ----------
    engine: the records to search and release (the input's engine when nothing changed).
    sampled: whether ``engine`` holds a sample of the input's records (then the input is
        not what is released, and the report's risk section compares the two).
    report: what the preparation adds to report.json (the sample's size, the seed).
    """

    engine: Engine
    sampled: bool = False
    report: dict[str, Any] = field(default_factory=dict)
