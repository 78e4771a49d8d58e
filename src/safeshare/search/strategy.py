"""Search strategies: how a workflow picks a node, on the shared core.

Every strategy has one signature, ``run(ctx: SearchContext) -> SearchResult``:
it receives the same :class:`SearchContext` (the frequency table, the one
evaluator, the privacy criterion, the loss metric) and returns a
:class:`~safeshare.search.result.SearchResult` (:class:`OLA`,
:class:`~safeshare.search.exhaustive.ExhaustiveSearch`,
:class:`~safeshare.search.best_first.BestFirstOLA`,
:class:`~safeshare.search.inverse_ola.InverseOLA`,
:class:`~safeshare.search.anytime.AnytimeSearch`,
:class:`~safeshare.search.auto.AutoSearch`: OLA or anytime by lattice size). The generic algorithms
behind them are plain functions over a lattice and a predicate
(:func:`~safeshare.search.ola.find_minimal_nodes`,
:func:`~safeshare.search.ola.ola_search`,
:func:`~safeshare.search.exhaustive.exhaustive_search`), which other searches
(the surveillance policy search) call with predicates of their own. Strategies are registered by
name, with their typed options, in the one registry of algorithms
(:data:`safeshare.config.algorithms.ALGORITHMS`), so that configuration files,
the command line and Python select them alike (``algorithm: ola``).

A strategy may change the privacy criterion the release is checked against:
Inverse OLA, for instance, maximizes k instead of taking it, and returns the
criterion with the k it achieved in ``SearchResult.criterion``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

from safeshare.search.best_first import BestFirstOLA
from safeshare.search.context import SearchContext
from safeshare.search.memo import MemoizedCriterion
from safeshare.search.ola import ola_search
from safeshare.search.result import SearchResult

__all__ = [
    "OLA",
    "SearchContext",
    "SearchStrategy",
    "StrategyFactory",
]


class SearchStrategy(Protocol):
    """A way to choose a node."""

    name: str

    def run(self, ctx: SearchContext) -> SearchResult: ...


class OLA:
    """The ``ola`` strategy: least loss among the k-minimal nodes (thesis §4.3, :func:`ola_search`).

    When the criterion is not monotone, predictive tagging is not exact: the
    exact best-first search of :mod:`safeshare.search.best_first` (pruned by a
    monotone relaxation when one is known, e.g. k-anonymity with
    ``k = ceil(l)`` for entropy l-diversity) returns the exhaustive optimum.
    (It lives here, not in ``ola.py``, because best-first uses ``ola.py``'s
    :func:`~safeshare.search.ola.find_minimal_nodes`.)
    """

    name = "ola"

    def run(self, ctx: SearchContext) -> SearchResult:
        if not ctx.criterion.monotone:
            return BestFirstOLA().run(ctx)
        known = (
            ctx.criterion.facts(ctx.table.n_records) if isinstance(ctx.criterion, MemoizedCriterion) else ()
        )
        return ola_search(
            ctx.lattice,
            ctx.holds,
            lambda n: ctx.metric.value(n),
            guide=ctx.guide,
            progress=ctx.ticker,
            known=known,
            # with the evaluator's compiled loops loaded, the recursion runs compiled too
            compiled=True if ctx.evaluator.compiled else None,
        )


#: How a strategy is built from its options (e.g. :func:`~safeshare.search.inverse_ola.make_inverse_ola`).
StrategyFactory = Callable[[Mapping[str, Any]], SearchStrategy]
