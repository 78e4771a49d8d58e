"""Attribute roles (thesis §4.1.1, §5.3; ARX's attribute types).

* ``identifying``: direct identifiers (name, record number); dropped from the release.
* ``quasi``: quasi-identifiers; generalized with a hierarchy, define equivalence classes.
* ``sensitive``: kept as they are; privacy models such as l-diversity protect them.
* ``insensitive``: kept as they are.
* ``text``: free text; always dropped (thesis §4.1.1: unstructured fields are
  suppressed in a data release).
* ``pseudonym``: a direct identifier released as a keyed pseudonym (HMAC-SHA256 of the
  value, ``length`` hex digits; :mod:`safeshare.data.identifiers`), so that releases
  made with one key can be linked.
* ``shifted_date``: a date moved by a secret whole number of days in ``[-max_days,
  max_days] \\ {0}``, the same for every date of one ``person`` (a column naming the
  person), so that intervals within a person are kept and calendar dates are not. With a
  hierarchy it is also a quasi-identifier, generalized after the shift.

Every input column must have a role: a column the configuration does not name
is an error, unless ``default_role`` says what unlisted columns are
(``identifying``: dropped, or ``insensitive``: kept unchanged). Columns are
never released by accident.

**The person** (issue 32). ``Schema.person`` names the column that identifies the person of
each record (a record number, a pseudonym, a shifted date's ``person``). With it, every model
counts people, not records: a class holds ``k`` people when ``k`` distinct values of this
column fall in it (:mod:`safeshare.core.persons`). The column may be dropped (identifying), a
pseudonym or kept (insensitive); it is never a quasi-identifier, sensitive, free text or a
date. Without it the records are taken to be one per person.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from safeshare.config import vocabulary
from safeshare.data.identifiers.date_shift import (
    ISO_FORMAT,
    check_date_format,
    check_max_days,
    check_one_window,
)
from safeshare.data.identifiers.pseudonym import DEFAULT_LENGTH, check_length
from safeshare.errors import ConfigError, DataError
from safeshare.hierarchy.hierarchy import Hierarchy, HierarchyBuilder
from safeshare.missing import BLANK


class Role(StrEnum):
    """A column's role: the values of :data:`safeshare.config.vocabulary.ROLES`, in its order
    (tests/test_vocabulary.py checks that they agree)."""

    IDENTIFYING = "identifying"
    QUASI = "quasi"
    SENSITIVE = "sensitive"
    INSENSITIVE = "insensitive"
    TEXT = "text"
    PSEUDONYM = "pseudonym"
    SHIFTED_DATE = "shifted_date"

    @classmethod
    def parse(cls, value: str, column: str = "") -> Role:
        """The role ``value`` names (:func:`safeshare.config.vocabulary.role_name`: its aliases)."""
        key = vocabulary.role_name(str(value))
        if key is None:
            where = f" for column {column!r}" if column else ""
            choices = ", ".join(r.value for r in cls)
            raise ConfigError(f"unknown role {value!r}{where}; expected one of {choices}")
        return cls(key)

    @property
    def released(self) -> bool:
        """Whether columns with this role appear in the release."""
        return self not in (Role.IDENTIFYING, Role.TEXT)


HierarchySpec = Hierarchy | HierarchyBuilder


#: Roles whose columns are released transformed by the key (:mod:`safeshare.data.identifiers`).
IDENTIFIER_ROLES = frozenset({Role.PSEUDONYM, Role.SHIFTED_DATE})


@dataclass(frozen=True)
class Attribute:
    """One column of the input and what to do with it.

    ``length`` (hex digits of a ``pseudonym``, default 16), ``person``, ``max_days`` and
    ``date_format`` (of a ``shifted_date``; the format defaults to ISO ``%Y-%m-%d``) are
    the identifier roles' parameters; any other role refuses them.
    """

    name: str
    role: Role
    hierarchy: HierarchySpec | None = None
    length: int | None = None
    person: str | None = None
    max_days: int | None = None
    date_format: str | None = None

    def __post_init__(self) -> None:
        if self.role is Role.QUASI and self.hierarchy is None:
            raise ConfigError(f"quasi-identifier {self.name!r} needs a hierarchy")
        where = f"column {self.name!r}"
        own = {
            Role.PSEUDONYM: ("length",),
            Role.SHIFTED_DATE: ("person", "max_days", "date_format"),
        }.get(self.role, ())
        for param in ("length", "person", "max_days", "date_format"):
            if getattr(self, param) is not None and param not in own:
                raise ConfigError(
                    f"{where}: {param} applies to the role {_role_of(param)}, not {self.role.value}"
                )
        if self.role is Role.PSEUDONYM:
            if self.hierarchy is not None:
                raise ConfigError(f"{where}: a pseudonym has no hierarchy (it is released whole)")
            length = DEFAULT_LENGTH if self.length is None else self.length
            object.__setattr__(self, "length", check_length(length, f"{where}: length"))
        elif self.role is Role.SHIFTED_DATE:
            if not isinstance(self.person, str) or not self.person.strip():
                raise ConfigError(
                    f"{where}: a shifted date needs person: the column that identifies the person"
                )
            if self.person == self.name:
                raise ConfigError(f"{where}: person must be another column (the one identifying the person)")
            if self.max_days is None:
                raise ConfigError(f"{where}: a shifted date needs max_days: the largest shift in days")
            object.__setattr__(self, "max_days", check_max_days(self.max_days, f"{where}: max_days"))
            fmt = ISO_FORMAT if self.date_format is None else self.date_format
            object.__setattr__(self, "date_format", check_date_format(fmt, f"{where}: date_format"))
            builder_format = getattr(self.hierarchy, "format", None)
            if getattr(self.hierarchy, "type_name", None) == "dates" and builder_format != self.date_format:
                raise ConfigError(
                    f"{where}: the date hierarchy reads {builder_format!r} but the dates are written "
                    f"{self.date_format!r}; give both the same format"
                )

    @property
    def is_quasi(self) -> bool:
        """Whether the column defines equivalence classes: a quasi-identifier, or a shifted
        date with a hierarchy (generalized after the shift)."""
        return self.role is Role.QUASI or (self.role is Role.SHIFTED_DATE and self.hierarchy is not None)


def _role_of(param: str) -> str:
    return "pseudonym" if param == "length" else "shifted_date"


#: The roles ``default_role`` may give unlisted columns (:data:`safeshare.config.vocabulary.DEFAULT_ROLES`).
DEFAULT_ROLES = tuple(Role(name) for name in vocabulary.DEFAULT_ROLES)

#: A quasi-identifier empty in more than this fraction of the records is refused.
MAX_EMPTY_FRACTION = 0.5


#: The advice of :func:`check_not_empty`'s refusal, for a configuration.
CONFIG_EMPTY_HINT = "check input.delimiter, or declare a missing-value token (e.g. input.missing: ['?'])"


def check_not_empty(
    grouped: Any,
    columns: Sequence[str],
    count_column: str,
    source: str = "the input",
    hint: str = CONFIG_EMPTY_HINT,
    missing: Sequence[str] = (),
) -> None:
    """Refuse a quasi-identifier that is empty in more than half of the records.

    ``grouped`` holds distinct value tuples with their counts (a frequency
    table), ``columns`` the quasi-identifiers to check. Mostly empty values are
    the mark of a wrong delimiter (each line read as one field, the other
    columns padded) or of a column that carries no information; either way,
    generalizing it would publish nothing useful about the values that are
    there. A declared missing token (``input.missing``, ``--missing``) replaces
    ``''`` before this check, so columns that are mostly missing on purpose pass
    when the token is declared. ``hint`` is the advice of the message (the
    configuration's keys by default; a command gives its options). Every command
    that reads quasi-identifiers applies it (``anonymize`` through
    :meth:`Schema.check_not_empty`, ``inspect``). With the blank cell itself declared missing
    (``missing`` holds ``""``: :mod:`safeshare.missing`), blanks are missing on purpose and pass.
    """
    if BLANK in missing:
        return
    total = int(grouped[count_column].sum())
    if total == 0:
        return
    for qi in columns:
        if qi not in grouped:
            continue
        empty = int(grouped.loc[grouped[qi].astype(str) == "", count_column].sum())
        if empty > MAX_EMPTY_FRACTION * total:
            raise DataError(
                f"{source}: quasi-identifier {qi!r} is empty in {empty} of {total} records "
                f"(more than {MAX_EMPTY_FRACTION:.0%}): {hint}"
            )


@dataclass
class Schema:
    """The role of every column.

    ``default_role`` is the role of columns not listed in ``attributes``:
    ``None`` (the default, also in Python) makes an unlisted column an error
    (:meth:`check_columns`); ``identifying`` drops them, ``insensitive`` keeps
    them unchanged.
    """

    attributes: dict[str, Attribute] = field(default_factory=dict)
    default_role: Role | None = None
    #: the column that identifies the person of every record (``None``: one record per person)
    person: str | None = None

    def __post_init__(self) -> None:
        if self.default_role is not None:
            self.default_role = Role.parse(str(self.default_role))
            if self.default_role not in DEFAULT_ROLES:
                raise ConfigError(
                    f"default_role: expected identifying or insensitive, got {self.default_role.value!r}"
                )
        self._check_persons()
        self._check_person_key()

    def _check_person_key(self) -> None:
        """The person key identifies a person: not a quasi-identifier, a sensitive column, free
        text or a shifted date (the same rule as a shifted date's ``person``, issue 30 item 7)."""
        if self.person is None:
            return
        if not isinstance(self.person, str) or not self.person.strip():
            raise ConfigError(f"person: expected a column name, got {self.person!r}")
        attr = self.attributes.get(self.person)
        role = attr.role if attr is not None else self.default_role
        what = (
            {
                Role.QUASI: "a quasi-identifier",
                Role.SHIFTED_DATE: "a shifted date",
                Role.SENSITIVE: "a sensitive column",
                Role.TEXT: "free text",
            }.get(role)
            if role is not None
            else None
        )
        if attr is not None and attr.is_quasi:
            what = "a quasi-identifier"
        if what is not None:
            raise ConfigError(
                f"person: column {self.person!r} is {what}: the person key must identify one person "
                "(a record number or patient id, role identifying, pseudonym or insensitive)"
            )

    @property
    def person_released(self) -> bool:
        """Whether the person key is in the release (a pseudonym or a kept column): a person's
        records are then linkable in it (:mod:`safeshare.risk.profiles`)."""
        if self.person is None:
            return False
        attr = self.attributes.get(self.person)
        role = attr.role if attr is not None else self.default_role
        return role in (Role.PSEUDONYM, Role.INSENSITIVE)

    def _check_persons(self) -> None:
        """A shifted date's ``person`` identifies a person: not a quasi-identifier, a sensitive or a
        free-text column (issue 30, item 7: ``person: sex`` moved every woman's dates by one shift);
        and every shifted date has the same ``max_days`` (item 5: one person, one shift)."""
        shifted = [a for a in self.attributes.values() if a.role is Role.SHIFTED_DATE]
        for attr in shifted:
            person = self.attributes.get(str(attr.person))
            if person is None:
                continue
            what = {
                Role.QUASI: "a quasi-identifier",
                Role.SHIFTED_DATE: "a shifted date",
                Role.SENSITIVE: "a sensitive column",
                Role.TEXT: "free text",
            }.get(person.role)
            if what is not None:
                raise ConfigError(
                    f"column {attr.name!r}: its person column {person.name!r} is {what}: the person must be "
                    "the column that identifies one person (a record number, role identifying or pseudonym); "
                    "records that share a value share one shift"
                )
        check_one_window([(a.name, int(a.max_days or 0)) for a in shifted])

    @classmethod
    def from_attributes(
        cls, attributes: Iterable[Attribute], default_role: Role | None = None, person: str | None = None
    ) -> Schema:
        out: dict[str, Attribute] = {}
        for a in attributes:
            if a.name in out:
                raise ConfigError(f"column {a.name!r} is listed twice")
            out[a.name] = a
        return cls(out, default_role, person)

    def shifted_person(self) -> str | None:
        """The one ``person`` column every shifted date names (``None``: no shifted date, or
        several person columns): the person key a configuration without ``person:`` implies."""
        persons = {str(a.person) for a in self.attributes.values() if a.role is Role.SHIFTED_DATE}
        return persons.pop() if len(persons) == 1 else None

    def role(self, column: str) -> Role:
        """The role of ``column``; :class:`DataError` for an unlisted column without ``default_role``."""
        attr = self.attributes.get(column)
        if attr is not None:
            return attr.role
        if self.default_role is None:
            raise DataError(
                f"column {column!r} has no role in attributes: give it one, or set default_role: "
                "identifying (drop unlisted columns) or insensitive (keep them unchanged)"
            )
        return self.default_role

    def unlisted(self, available: Sequence[str]) -> list[str]:
        """Columns of ``available`` that ``attributes`` does not name."""
        return [c for c in available if c not in self.attributes]

    def columns_with(self, role: Role) -> list[str]:
        return [n for n, a in self.attributes.items() if a.role is role]

    @property
    def quasi_identifiers(self) -> list[str]:
        """The quasi-identifiers, in order: ``quasi`` columns and shifted dates with a hierarchy."""
        return [n for n, a in self.attributes.items() if a.is_quasi]

    @property
    def identifier_columns(self) -> list[str]:
        """Columns released transformed by the key: pseudonyms and shifted dates."""
        return [n for n, a in self.attributes.items() if a.role in IDENTIFIER_ROLES]

    @property
    def sensitive(self) -> list[str]:
        return self.columns_with(Role.SENSITIVE)

    def hierarchy_spec(self, column: str) -> HierarchySpec:
        attr = self.attributes.get(column)
        if attr is None or attr.hierarchy is None:
            raise ConfigError(f"column {column!r} has no hierarchy")
        return attr.hierarchy

    def check_columns(self, available: Sequence[str], source: str = "the input") -> None:
        """Raise :class:`DataError` when the input's columns and the roles do not match.

        A listed column missing from ``available`` (and, when ``available`` is a
        single column while more are listed, a hint that the delimiter is
        wrong), or, without ``default_role``, input columns that have no role.
        """
        have = set(available)
        if len(available) == 1 and len(self.attributes) > 1:
            raise DataError(
                f"{source} reads as a single column but the configuration names {len(self.attributes)} "
                "columns: check input.delimiter"
            )
        for name, attr in self.attributes.items():
            if name not in have:
                shown = ", ".join(list(available)[:20])
                raise DataError(f"unknown column {name!r}: {source} has columns {shown}")
            if attr.person is not None and attr.person not in have:
                raise DataError(f"column {name!r}: its person column {attr.person!r} is not in {source}")
        if self.person is not None and self.person not in have:
            shown = ", ".join(list(available)[:20])
            raise DataError(f"person: unknown column {self.person!r}: {source} has columns {shown}")
        if not self.quasi_identifiers:
            raise ConfigError("no quasi-identifier: give at least one column the role 'quasi'")
        unlisted = self.unlisted(available)
        if unlisted and self.default_role is None:
            shown = ", ".join(unlisted[:10]) + (", ..." if len(unlisted) > 10 else "")
            raise DataError(
                f"{source}: columns {shown} ({len(unlisted)}) have no role in attributes: give each a role, "
                "or set default_role: identifying (drop them) or insensitive (keep them unchanged)"
            )

    def check_not_empty(
        self, grouped: Any, count_column: str, source: str = "the input", missing: Sequence[str] = ()
    ) -> None:
        """Refuse a quasi-identifier that is empty in more than half of the records
        (:func:`check_not_empty` on :attr:`quasi_identifiers`)."""
        check_not_empty(grouped, self.quasi_identifiers, count_column, source, missing=missing)

    def released_columns(self, available: Sequence[str]) -> list[str]:
        """Columns of the release, in input order: everything but identifying and text columns."""
        return [c for c in available if self.role(c).released]

    def with_roles(self, roles: Mapping[str, Role]) -> Schema:
        """A copy with some roles replaced (hierarchies are kept)."""
        attrs = dict(self.attributes)
        for name, role in roles.items():
            old = attrs.get(name)
            attrs[name] = Attribute(name, role, old.hierarchy if old else None)
        return Schema(attrs, self.default_role, self.person)
