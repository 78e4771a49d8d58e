"""Search strategies: how a workflow picks a node, on the shared core.

Every strategy receives the same :class:`SearchContext` (the frequency table,
the one evaluator, the privacy criterion, the loss metric) and returns a
:class:`~safeshare.search.result.SearchResult`. Strategies are registered by
name in :data:`STRATEGIES` so that configuration files and the command line
can select them (``algorithm: ola``); a strategy's own parameters come from
``algorithm_options``.

A strategy may change the privacy criterion the release is checked against:
Inverse OLA, for instance, maximizes k instead of taking it, and returns the
criterion with the k it achieved in ``SearchResult.criterion``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Protocol

import numpy as np

from safeshare.data.frequency import FrequencyTable
from safeshare.errors import ConfigError
from safeshare.evaluation import Evaluator
from safeshare.lattice.lattice import Lattice
from safeshare.metrics.loss import InformationLoss, NonUniformEntropy
from safeshare.models.base import PrivacyCriterion
from safeshare.search.best_first import BestFirstOLA
from safeshare.search.exhaustive import ExhaustiveSearch
from safeshare.search.inverse_ola import make_inverse_ola
from safeshare.search.memo import MemoizedCriterion
from safeshare.search.ola import OLA
from safeshare.search.progress import Progress, Ticker
from safeshare.search.result import SearchResult


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


class SearchStrategy(Protocol):
    """A way to choose a node."""

    name: str

    def run(self, ctx: SearchContext) -> SearchResult: ...


class OLAStrategy:
    """OLA: least loss among the k-minimal nodes (thesis §4.3).

    When the criterion is not monotone, predictive tagging is not exact: the
    exact best-first search of :mod:`safeshare.search.best_first` (pruned by a
    monotone relaxation when one is known, e.g. k-anonymity with
    ``k = ceil(l)`` for entropy l-diversity) returns the exhaustive optimum.
    """

    name = "ola"

    def run(self, ctx: SearchContext) -> SearchResult:
        if not ctx.criterion.monotone:
            return BestFirstOLA().search(ctx)
        known = (
            ctx.criterion.facts(ctx.table.n_records) if isinstance(ctx.criterion, MemoizedCriterion) else ()
        )
        return OLA(guide=ctx.guide, progress=ctx.ticker, known=known).search(
            ctx.lattice, ctx.holds, lambda n: ctx.metric.value(n)
        )


class ExhaustiveStrategy:
    """Evaluate every node (verification, small lattices, non-monotone models)."""

    name = "exhaustive"

    def run(self, ctx: SearchContext) -> SearchResult:
        return ExhaustiveSearch().search(
            ctx.lattice,
            ctx.evaluator.iter_classes(),
            lambda c: (ctx.criterion.holds(c, ctx.table), ctx.metric.value(c.node, c)),
            progress=ctx.ticker,
        )


StrategyFactory = Callable[[Mapping[str, Any]], SearchStrategy]


def _no_options(cls: type) -> StrategyFactory:
    def factory(options: Mapping[str, Any]) -> SearchStrategy:
        used = {k: v for k, v in options.items() if v is not None}
        if used:
            raise ConfigError(f"algorithm {cls.name!r} takes no option {sorted(used)[0]!r}")  # type: ignore[attr-defined]
        return cls()  # type: ignore[no-any-return]

    return factory


def _epsilon_safe(options: Mapping[str, Any]) -> SearchStrategy:
    """Epsilon-safe LA (thesis §4.5.4): imported lazily, it builds on this module."""
    from safeshare.dp.epsilon_safe import make_epsilon_safe_strategy

    return make_epsilon_safe_strategy(options)


#: Strategy factories by name; further workflows register here.
STRATEGIES: dict[str, StrategyFactory] = {
    "ola": _no_options(OLAStrategy),
    "exhaustive": _no_options(ExhaustiveStrategy),
    "inverse-ola": make_inverse_ola,
    "epsilon-safe": _epsilon_safe,
}


def make_strategy(name: str, options: Mapping[str, Any] | None = None) -> SearchStrategy:
    """The strategy registered as ``name``, built with ``options``."""
    factory = STRATEGIES.get(name)
    if factory is None:
        raise ConfigError(f"unknown algorithm {name!r}; expected one of {', '.join(STRATEGIES)}")
    return factory(dict(options or {}))
