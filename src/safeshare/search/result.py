"""What a lattice search returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from safeshare.core.lattice import Node

if TYPE_CHECKING:
    from safeshare.models.base import PrivacyCriterion


#: How every search breaks ties of loss (:func:`safeshare.search.ola.choose_best`; the exhaustive,
#: anytime and best-first searches order candidates the same way), as the report states it.
TIE_BREAK = (
    "least information loss; among equal losses the lower node (the least sum of levels), "
    "then the first in lexicographic order of the levels"
)


@dataclass
class SearchResult:
    """The outcome of a search over a generalization lattice.

    Attributes
    ----------
    algorithm: ``ola``, ``exhaustive``, ``inverse-ola``, ...
    node: the chosen node, or ``None`` when no node qualifies.
    objective: the value the search optimized at ``node`` (e.g. information loss).
    minimal_nodes: the frontier the search found (OLA: the k-minimal nodes).
    checked_nodes: predicate evaluations (nodes not settled by predictive tagging).
    lattice_size: number of nodes of the lattice.
    elapsed_s: wall-clock time of the search.
    extra: algorithm-specific figures (they go into report.json).
    minimal_losses: the objective at each minimal node, aligned with ``minimal_nodes``.
    criterion: the criterion the release must satisfy when the search chose
        it (e.g. Inverse OLA's k-anonymity with the k it achieved); ``None``
        means the configured one.
    """

    algorithm: str
    node: Node | None
    objective: float | None
    minimal_nodes: list[Node]
    checked_nodes: int
    lattice_size: int
    elapsed_s: float
    extra: dict[str, Any] = field(default_factory=dict)
    criterion: PrivacyCriterion | None = None
    #: the objective at each of ``minimal_nodes`` (same order), where the search computed it
    #: (OLA compares every minimal node's loss); empty otherwise
    minimal_losses: list[float] = field(default_factory=list)
