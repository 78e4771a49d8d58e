"""Lattice searches: OLA, exhaustive (and, on the same core, Inverse OLA, epsilon-safe LA)."""

from safeshare.search.exhaustive import ExhaustiveSearch, maximal_of, minimal_of
from safeshare.search.ola import OLA, MinimalSet, choose_best, find_minimal_nodes
from safeshare.search.result import SearchResult

__all__ = [
    "OLA",
    "ExhaustiveSearch",
    "MinimalSet",
    "SearchResult",
    "choose_best",
    "find_minimal_nodes",
    "maximal_of",
    "minimal_of",
]
