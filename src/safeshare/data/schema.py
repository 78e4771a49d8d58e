"""Attribute roles (thesis §4.1.1, §5.3; ARX's attribute types).

* ``identifying``: direct identifiers (name, record number); dropped from the release.
* ``quasi``: quasi-identifiers; generalized with a hierarchy, define equivalence classes.
* ``sensitive``: kept as they are; privacy models such as l-diversity protect them.
* ``insensitive``: kept as they are.
* ``text``: free text; always dropped (thesis §4.1.1: unstructured fields are
  suppressed in a data release).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Protocol

from safeshare.errors import ConfigError, DataError
from safeshare.hierarchy.hierarchy import Hierarchy


class Role(StrEnum):
    IDENTIFYING = "identifying"
    QUASI = "quasi"
    SENSITIVE = "sensitive"
    INSENSITIVE = "insensitive"
    TEXT = "text"

    @classmethod
    def parse(cls, value: str, column: str = "") -> Role:
        aliases = {
            "quasi-identifying": cls.QUASI,
            "quasi_identifying": cls.QUASI,
            "quasi-identifier": cls.QUASI,
            "qi": cls.QUASI,
            "identifier": cls.IDENTIFYING,
            "free-text": cls.TEXT,
        }
        key = str(value).strip().lower()
        if key in aliases:
            return aliases[key]
        try:
            return cls(key)
        except ValueError:
            where = f" for column {column!r}" if column else ""
            choices = ", ".join(r.value for r in cls)
            raise ConfigError(f"unknown role {value!r}{where}; expected one of {choices}") from None

    @property
    def released(self) -> bool:
        """Whether columns with this role appear in the release."""
        return self not in (Role.IDENTIFYING, Role.TEXT)


class HierarchyBuilder(Protocol):
    """Anything that builds a hierarchy from the distinct values of a column."""

    def build(self, values: Sequence[str], name: str = "") -> Hierarchy: ...


HierarchySpec = Hierarchy | HierarchyBuilder


@dataclass(frozen=True)
class Attribute:
    """One column of the input and what to do with it."""

    name: str
    role: Role
    hierarchy: HierarchySpec | None = None

    def __post_init__(self) -> None:
        if self.role is Role.QUASI and self.hierarchy is None:
            raise ConfigError(f"quasi-identifier {self.name!r} needs a hierarchy")


@dataclass
class Schema:
    """The role of every column. Columns not listed are insensitive."""

    attributes: dict[str, Attribute] = field(default_factory=dict)

    @classmethod
    def from_attributes(cls, attributes: Iterable[Attribute]) -> Schema:
        out: dict[str, Attribute] = {}
        for a in attributes:
            if a.name in out:
                raise ConfigError(f"column {a.name!r} is listed twice")
            out[a.name] = a
        return cls(out)

    def role(self, column: str) -> Role:
        attr = self.attributes.get(column)
        return attr.role if attr else Role.INSENSITIVE

    def columns_with(self, role: Role) -> list[str]:
        return [n for n, a in self.attributes.items() if a.role is role]

    @property
    def quasi_identifiers(self) -> list[str]:
        return self.columns_with(Role.QUASI)

    @property
    def sensitive(self) -> list[str]:
        return self.columns_with(Role.SENSITIVE)

    def hierarchy_spec(self, column: str) -> HierarchySpec:
        attr = self.attributes.get(column)
        if attr is None or attr.hierarchy is None:
            raise ConfigError(f"column {column!r} has no hierarchy")
        return attr.hierarchy

    def check_columns(self, available: Sequence[str], source: str = "the input") -> None:
        """Raise :class:`DataError` naming the first listed column that is not in ``available``."""
        have = set(available)
        for name in self.attributes:
            if name not in have:
                shown = ", ".join(list(available)[:20])
                raise DataError(f"unknown column {name!r}: {source} has columns {shown}")
        if not self.quasi_identifiers:
            raise ConfigError("no quasi-identifier: give at least one column the role 'quasi'")

    def released_columns(self, available: Sequence[str]) -> list[str]:
        """Columns of the release, in input order: everything but identifying and text columns."""
        return [c for c in available if self.role(c).released]

    def with_roles(self, roles: Mapping[str, Role]) -> Schema:
        """A copy with some roles replaced (hierarchies are kept)."""
        attrs = dict(self.attributes)
        for name, role in roles.items():
            old = attrs.get(name)
            attrs[name] = Attribute(name, role, old.hierarchy if old else None)
        return Schema(attrs)
