"""Lattice searches: every strategy is ``run(ctx: SearchContext) -> SearchResult``
(OLA, exhaustive, best-first, Inverse OLA; epsilon-safe LA in ``dp/``); the generic
algorithms (:func:`find_minimal_nodes`, :func:`ola_search`, :func:`exhaustive_search`)
are plain functions of a lattice and a predicate."""

from safeshare.search.best_first import BestFirstOLA
from safeshare.search.context import SearchContext
from safeshare.search.exhaustive import ExhaustiveSearch, exhaustive_search, maximal_of, minimal_of
from safeshare.search.inverse_ola import InverseOLA
from safeshare.search.ola import MinimalSet, choose_best, find_minimal_nodes, ola_search
from safeshare.search.result import SearchResult
from safeshare.search.strategy import OLA

__all__ = [
    "OLA",
    "BestFirstOLA",
    "ExhaustiveSearch",
    "InverseOLA",
    "MinimalSet",
    "SearchContext",
    "SearchResult",
    "choose_best",
    "exhaustive_search",
    "find_minimal_nodes",
    "maximal_of",
    "minimal_of",
    "ola_search",
]
