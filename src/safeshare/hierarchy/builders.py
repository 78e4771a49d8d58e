"""Hierarchy builders: make a hierarchy from the distinct values of a column.

A builder has ``build(values, name) -> Hierarchy``; :func:`builder_from_spec`
turns a configuration entry (``{type: intervals, widths: [5, 10, 20]}``) into a
builder.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from safeshare.errors import ConfigError
from safeshare.hierarchy.hierarchy import Hierarchy


@dataclass(frozen=True)
class SuppressionBuilder:
    """One level above the values: everything becomes ``top`` (default ``*``)."""

    top: str = "*"

    def build(self, values: Sequence[str], name: str = "") -> Hierarchy:
        return Hierarchy([(v, self.top) for v in values], name=name or "suppression")


BUILDERS: dict[str, Any] = {"suppression": SuppressionBuilder}


def builder_from_spec(spec: Mapping[str, Any], base_dir: Path, where: str = "hierarchy") -> Any:
    """The builder described by a configuration mapping with a ``type`` key."""
    kind = str(spec.get("type", "")).strip().lower()
    if kind not in BUILDERS:
        raise ConfigError(f"{where}: unknown hierarchy type {kind!r}; expected one of {', '.join(BUILDERS)}")
    params = {k: v for k, v in spec.items() if k != "type"}
    try:
        return BUILDERS[kind](**params)
    except TypeError as exc:
        raise ConfigError(f"{where}: {exc}") from None
