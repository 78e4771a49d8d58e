"""Every algorithm a run may name (``algorithm:`` in the configuration, ``--algorithm``).

The search registry (:data:`safeshare.search.strategy.STRATEGIES`) knows only
the searches of :mod:`safeshare.search`; the workflow layer adds, explicitly,
the strategies built on further packages: epsilon-safe lattice anonymization
(:mod:`safeshare.dp.epsilon_safe`), which draws its node with the exponential
mechanism. A new strategy is one file and one line here (docs/architecture.md).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from safeshare.dp.epsilon_safe import check_epsilon_safe_spec, make_epsilon_safe_strategy
from safeshare.errors import ConfigError
from safeshare.models.base import PrivacyCriterion
from safeshare.search.strategy import STRATEGIES, SearchStrategy, StrategyFactory

#: Strategy factories by name: the searches of ``search/``, then the workflow-level ones.
ALGORITHMS: dict[str, StrategyFactory] = {
    **STRATEGIES,
    "epsilon-safe": make_epsilon_safe_strategy,
}

#: Algorithms whose strategy needs options only known at run time (epsilon-safe: the
#: Bernoulli sample): :class:`~safeshare.workflows.spec.AnonymizationSpec` validates the
#: specified options with this check instead of building the strategy.
SPEC_CHECKS: dict[str, Callable[[Mapping[str, Any], PrivacyCriterion], None]] = {
    "epsilon-safe": check_epsilon_safe_spec,
}


def make_algorithm(name: str, options: Mapping[str, Any] | None = None) -> SearchStrategy:
    """The strategy registered as ``name`` in :data:`ALGORITHMS`, built with ``options``."""
    factory = ALGORITHMS.get(name)
    if factory is None:
        raise ConfigError(f"unknown algorithm {name!r}; expected one of {', '.join(ALGORITHMS)}")
    return factory(dict(options or {}))
