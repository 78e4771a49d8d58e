"""The typed options of the searches of ``search/`` (the registry of algorithms,
:mod:`safeshare.config.algorithms`, loads them when a run is validated)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import model_validator

from safeshare.config_checks import Count, PositiveInt, Seconds, Section, UnitInterval, refuse


class NoOptions(Section):
    """A strategy without options."""


class InverseOLAOptions(Section):
    """``inverse-ola``: the largest normalized information loss (thesis §4.4)."""

    max_loss: UnitInterval

    @model_validator(mode="before")
    @classmethod
    def _required(cls, data: Any) -> Any:
        if isinstance(data, Mapping) and data.get("max_loss") is None:
            raise refuse(
                "algorithm 'inverse-ola' needs max_loss, the largest normalized information loss in [0, 1] "
                "(--max-loss or max_loss: in the configuration)"
            )
        return data


class AnytimeOptions(Section):
    """``anytime``: the search's budget (docs/anytime.md); default 60 s unless only
    ``max_evaluations`` is given."""

    time_limit: Seconds | None = None
    max_evaluations: PositiveInt | None = None


class AutoOptions(AnytimeOptions):
    """``auto``: the largest lattice searched exactly (default 500,000 nodes), and the anytime
    search's budget above it."""

    exact_max_nodes: PositiveInt | None = None


class FixedNodeOptions(Section):
    """``node``: the levels of the one node to release, quasi-identifier -> level (search/fixed.py)."""

    levels: dict[str, Count]

    @model_validator(mode="before")
    @classmethod
    def _required(cls, data: Any) -> Any:
        if isinstance(data, Mapping) and not data.get("levels"):
            raise refuse(
                "algorithm 'node' needs levels, the level of every quasi-identifier "
                "(levels: {age: 1, sex: 0, ...} in the configuration)"
            )
        return data
