"""The ``auto`` strategy: the exact search where it finishes, the anytime search above a lattice size.

Issue 11: "above a configurable size or time budget, a documented anytime
search ... Exact stays the default where it finishes." ``auto`` decides on the
lattice alone, before any node is evaluated:

* ``|L| <= exact_max_nodes``: the exact search (OLA; for criteria not monotone
  with suppression its exact best-first search), whose node is the optimum;
* ``|L| > exact_max_nodes``: the anytime branch and bound
  (:class:`~safeshare.search.anytime.AnytimeSearch`) within ``time_limit`` /
  ``max_evaluations``, whose node is optimal only when it says so (gap 0).

``|L| = prod_i (h_i + 1)`` over the QIs' hierarchy heights ``h_i``. The default
:data:`DEFAULT_EXACT_MAX_NODES` = 500,000 comes from Census-Income KDD
(docs/anytime.md): OLA needed 66.8 s on 13 QIs (414,720 nodes) and did not
finish 14 QIs (1,244,160 nodes) in 10 minutes, so the exact search is kept up
to the largest lattice measured to finish in about a minute.

The decision and its reason go into the result (``auto_choice``,
``auto_reason``, ``exact_max_nodes``) and ``optimal`` is always present:
``True`` for the exact search when it found a node, the anytime search's own
proven flag otherwise.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from safeshare.errors import ConfigError
from safeshare.search.anytime import AnytimeSearch, make_anytime
from safeshare.search.result import SearchResult

if TYPE_CHECKING:
    from safeshare.search.context import SearchContext


class _Exact(Protocol):
    """The exact strategy ``auto`` wraps (the ``ola`` strategy of :mod:`safeshare.search.strategy`,
    which registers ``auto``: importing its protocol here would be an import cycle)."""

    name: str

    def run(self, ctx: SearchContext) -> SearchResult: ...


#: Largest lattice (nodes) searched exactly by default; see the module docstring.
DEFAULT_EXACT_MAX_NODES = 500_000


class AutoSearch:
    """The ``auto`` strategy: ``exact`` when the lattice has at most ``exact_max_nodes`` nodes,
    else ``anytime``.

    Parameters
    ----------
    exact: the exact strategy (the ``ola`` strategy).
    anytime: the anytime search, with its budget.
    exact_max_nodes: the largest lattice searched exactly (an integer >= 1).
    """

    name = "auto"

    def __init__(self, exact: _Exact, anytime: AnytimeSearch, exact_max_nodes: int) -> None:
        if isinstance(exact_max_nodes, bool) or not isinstance(exact_max_nodes, int) or exact_max_nodes < 1:
            raise ConfigError(f"auto: exact_max_nodes must be an integer >= 1, got {exact_max_nodes!r}")
        self.exact = exact
        self.anytime = anytime
        self.exact_max_nodes = exact_max_nodes

    def choose(self, lattice_size: int) -> tuple[str, str]:
        """The strategy for a lattice of ``lattice_size`` nodes and the reason, one line."""
        if lattice_size <= self.exact_max_nodes:
            return self.exact.name, (
                f"lattice of {lattice_size:,} nodes <= exact_max_nodes {self.exact_max_nodes:,}: "
                f"exact search ({self.exact.name})"
            )
        budget = [f"time_limit {self.anytime.time_limit:g} s"] if self.anytime.time_limit is not None else []
        if self.anytime.max_evaluations is not None:
            budget.append(f"max_evaluations {self.anytime.max_evaluations:,}")
        return self.anytime.name, (
            f"lattice of {lattice_size:,} nodes > exact_max_nodes {self.exact_max_nodes:,}: "
            f"anytime search ({', '.join(budget) or 'no budget'})"
        )

    def run(self, ctx: SearchContext) -> SearchResult:
        choice, reason = self.choose(ctx.lattice.size)
        ran = self.exact if choice == self.exact.name else self.anytime
        result = ran.run(ctx)
        optimal = result.extra["optimal"] if choice == self.anytime.name else result.node is not None
        result.extra = {
            **result.extra,
            "auto_choice": choice,
            "auto_reason": reason,
            "exact_max_nodes": self.exact_max_nodes,
            "optimal": optimal,
        }
        result.algorithm = self.name
        return result


def make_auto(exact: _Exact) -> Callable[[Mapping[str, Any]], AutoSearch]:
    """The ``auto`` strategy factory around ``exact``: options ``exact_max_nodes`` (default
    :data:`DEFAULT_EXACT_MAX_NODES`) and the anytime search's ``time_limit`` and ``max_evaluations``."""

    def factory(options: Mapping[str, Any]) -> AutoSearch:
        used = {k: v for k, v in options.items() if v is not None}
        unknown = set(used) - {"exact_max_nodes", "time_limit", "max_evaluations"}
        if unknown:
            raise ConfigError(
                f"algorithm 'auto' takes no option {sorted(unknown)[0]!r} "
                "(it takes exact_max_nodes, time_limit, max_evaluations)"
            )
        limit = used.pop("exact_max_nodes", DEFAULT_EXACT_MAX_NODES)
        return AutoSearch(exact, make_anytime(used), limit)

    return factory
