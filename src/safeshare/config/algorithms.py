"""Every algorithm a run may name: the one registry of search strategies.

``algorithm:`` in a configuration, ``--algorithm`` on the command line and
``algorithm=`` in Python name an entry of :data:`ALGORITHMS`. An entry (:class:`Algorithm`)
says how the strategy is built (``make``) from its options, and what its options are: a
frozen pydantic model (:class:`NoOptions` when it takes none), validated once with the
rest of the run's specification. The searches of ``search/`` and epsilon-safe (``dp/``)
are registered here alike; a new strategy is one file and one line (docs/architecture.md).

Options are read from the configuration's top-level keys named as the options' fields
(``max_loss: 0.5``), or, for an entry with a ``section``, from that section (epsilon-safe's
``dp:``); a key that belongs to another algorithm is an error saying which.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from safeshare.errors import ConfigError

if TYPE_CHECKING:
    from pydantic import BaseModel

    from safeshare.models.base import PrivacyCriterion
    from safeshare.search.strategy import SearchStrategy


# The registry is read by the command line to list the algorithms: it imports neither pydantic
# nor a search. An entry's options model and its strategy are imported when they are used.
def _no_options() -> type[BaseModel]:
    from safeshare.config.strategy_options import NoOptions

    return NoOptions


def _inverse_ola_options() -> type[BaseModel]:
    from safeshare.config.strategy_options import InverseOLAOptions

    return InverseOLAOptions


def _anytime_options() -> type[BaseModel]:
    from safeshare.config.strategy_options import AnytimeOptions

    return AnytimeOptions


def _auto_options() -> type[BaseModel]:
    from safeshare.config.strategy_options import AutoOptions

    return AutoOptions


def _fixed_node_options() -> type[BaseModel]:
    from safeshare.config.strategy_options import FixedNodeOptions

    return FixedNodeOptions


def _epsilon_safe_options() -> type[BaseModel]:
    from safeshare.dp.config import EpsilonSafeOptions

    return EpsilonSafeOptions


@dataclass(frozen=True)
class Algorithm:
    """One entry of :data:`ALGORITHMS`.

    Attributes
    ----------
    make: the strategy from its validated options.
    options: the pydantic model of its options (a function returning it: imported when used).
    summary: what it finds, in one line (``safeshare anonymize --help``, docs).
    section: the configuration section holding its options (``None``: top-level keys).
    metrics: the loss metrics it supports (``None``: every metric).
    needs_privacy: whether a run needs a privacy model (Inverse OLA maximizes k without one).
    check: what it requires of the privacy criterion (epsilon-safe: exactly one k-anonymity).
    """

    make: Callable[[Any], SearchStrategy]
    options: Callable[[], type[BaseModel]] = _no_options
    summary: str = ""
    section: str | None = None
    metrics: tuple[str, ...] | None = None
    needs_privacy: bool = True
    check: Callable[[PrivacyCriterion], Any] | None = None


# The strategies are imported when one is built, so that naming and validating an algorithm
# (a configuration error, ``safeshare --help``) does not load the searches.
def _ola(options: Any) -> SearchStrategy:
    from safeshare.search.strategy import OLA

    return OLA()


def _exhaustive(options: Any) -> SearchStrategy:
    from safeshare.search.exhaustive import ExhaustiveSearch

    return ExhaustiveSearch()


def _inverse_ola(options: Any) -> SearchStrategy:
    from safeshare.search.inverse_ola import InverseOLA

    return InverseOLA(options.max_loss)


def _anytime(options: Any) -> SearchStrategy:
    from safeshare.search.anytime import make_anytime

    return make_anytime(options.model_dump(exclude_none=True))


def _auto(options: Any) -> SearchStrategy:
    from safeshare.search.auto import make_auto
    from safeshare.search.strategy import OLA

    return make_auto(OLA())(options.model_dump(exclude_none=True))


def _fixed_node(options: Any) -> SearchStrategy:
    from safeshare.search.fixed import FixedNode

    return FixedNode(options.levels)


def _epsilon_safe(options: Any) -> SearchStrategy:
    from safeshare.dp.epsilon_safe import EpsilonSafeStrategy

    return EpsilonSafeStrategy(options.params())


def _single_k(criterion: PrivacyCriterion) -> int:
    from safeshare.dp.epsilon_safe import single_k

    return single_k(criterion)


#: The registry: every strategy by name.
ALGORITHMS: dict[str, Algorithm] = {
    "ola": Algorithm(_ola, summary="least loss among the k-minimal nodes (thesis 4.3)"),
    "exhaustive": Algorithm(_exhaustive, summary="every node evaluated (the reference)"),
    "inverse-ola": Algorithm(
        _inverse_ola,
        _inverse_ola_options,
        "the largest achievable k within a loss budget (thesis 4.4)",
        needs_privacy=False,
    ),
    "anytime": Algorithm(_anytime, _anytime_options, "branch and bound within a time/evaluation budget"),
    "auto": Algorithm(_auto, _auto_options, "ola up to exact_max_nodes, else anytime"),
    "node": Algorithm(
        _fixed_node,
        _fixed_node_options,
        "the node of the configured levels, released if it satisfies the privacy models",
    ),
    "epsilon-safe": Algorithm(
        _epsilon_safe,
        _epsilon_safe_options,
        "a node drawn by the exponential mechanism from a Bernoulli sample (thesis 4.5)",
        section="dp",
        metrics=("prec",),
        check=_single_k,
    ),
}


def algorithm(name: Any, where: str = "algorithm") -> Algorithm:
    """The entry called ``name``, with a "did you mean" for a typo."""
    if not isinstance(name, str):
        shown = "null" if name is None else repr(name)
        raise ConfigError(f'{where}: expected a text, got {shown} (quote it: "...")')
    entry = ALGORITHMS.get(name)
    if entry is None:
        close = difflib.get_close_matches(name, list(ALGORITHMS), n=1)
        hint = f"did you mean {close[0]!r}?" if close else f"expected one of {', '.join(ALGORITHMS)}"
        raise ConfigError(f"{where}: unknown algorithm {name!r}; {hint}")
    return entry


def algorithm_options(name: str, options: Mapping[str, Any] | None) -> BaseModel:
    """The validated options of the algorithm ``name`` (an error names the algorithm and the option)."""
    from pydantic import ValidationError

    entry = algorithm(name)
    model = entry.options()
    given = {key: value for key, value in (options or {}).items() if value is not None}
    try:
        return model.model_validate(given)
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        if error["type"] == "extra_forbidden":
            takes = ", ".join(model.model_fields)
            raise ConfigError(
                f"algorithm {name!r} takes no option {error['loc'][-1]!r}"
                + (f" (it takes {takes})" if takes else "")
            ) from None
        key = (error.get("ctx") or {}).get("key") or (error["loc"][-1] if error["loc"] else None)
        raise ConfigError(f"{key}: {error['msg']}" if key else str(error["msg"])) from None


def make_strategy(name: str, options: Mapping[str, Any] | BaseModel | None = None) -> SearchStrategy:
    """The strategy registered as ``name``, built with ``options`` (validated here when a mapping)."""
    from pydantic import BaseModel

    validated = options if isinstance(options, BaseModel) else algorithm_options(name, options)
    return ALGORITHMS[name].make(validated)


def config_keys() -> dict[str, tuple[str, ...]]:
    """Top-level configuration keys that apply to some algorithms only: key -> those algorithms."""
    out: dict[str, list[str]] = {}
    for name, entry in ALGORITHMS.items():
        keys = [entry.section] if entry.section else list(entry.options().model_fields)
        for key in keys:
            out.setdefault(key, []).append(name)
    return {key: tuple(names) for key, names in out.items()}


__all__ = [
    "ALGORITHMS",
    "Algorithm",
    "algorithm",
    "algorithm_options",
    "config_keys",
    "make_strategy",
]
