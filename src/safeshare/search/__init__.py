"""Lattice searches: every strategy is ``run(ctx: SearchContext) -> SearchResult``
(OLA, exhaustive, best-first, Inverse OLA; epsilon-safe LA in ``dp/``); the generic
algorithms (:func:`find_minimal_nodes`, :func:`ola_search`, :func:`exhaustive_search`)
are plain functions of a lattice and a predicate.

The names below are imported on first use (PEP 562): importing one module of the package (the
search context, the progress protocol) does not import OLA and, with it, numba and the compiled
loops, which :mod:`safeshare.search.ola` loads when it is imported (before the first search).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from safeshare.search.best_first import BestFirstOLA
    from safeshare.search.context import SearchContext
    from safeshare.search.exhaustive import ExhaustiveSearch, exhaustive_search, maximal_of, minimal_of
    from safeshare.search.inverse_ola import InverseOLA
    from safeshare.search.ola import MinimalSet, choose_best, find_minimal_nodes, ola_search
    from safeshare.search.result import SearchResult
    from safeshare.search.strategy import OLA

#: public name -> the module that defines it
_EXPORTS = {
    "OLA": "safeshare.search.strategy",
    "BestFirstOLA": "safeshare.search.best_first",
    "ExhaustiveSearch": "safeshare.search.exhaustive",
    "InverseOLA": "safeshare.search.inverse_ola",
    "MinimalSet": "safeshare.search.ola",
    "SearchContext": "safeshare.search.context",
    "SearchResult": "safeshare.search.result",
    "choose_best": "safeshare.search.ola",
    "exhaustive_search": "safeshare.search.exhaustive",
    "find_minimal_nodes": "safeshare.search.ola",
    "maximal_of": "safeshare.search.exhaustive",
    "minimal_of": "safeshare.search.exhaustive",
    "ola_search": "safeshare.search.ola",
}

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


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'safeshare.search' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value
