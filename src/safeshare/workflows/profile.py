"""A profile of every input column, and a suggested role for each: the first look at a table.

Before anything is anonymized, a custodian must say what each column is (docs/configuration.md,
"Roles"): a direct identifier to drop, a quasi-identifier an adversary can link, a sensitive
value, or something harmless. ARX and sdcMicro start the same way. This module measures, per
column, over the whole input (one ``GROUP BY`` per column through the engine, so a
larger-than-memory file is profiled by DuckDB in place):

* ``distinct``: the number of distinct non-missing values;
* ``missing``: records whose value is missing (empty, or a configured missing token);
* ``uniqueness``: ``distinct / non-missing records`` (1.0: every value occurs once);
* ``singletons``: records whose value occurs in no other record;

and suggests a role, with its reason, by two rules (thesis §4.1.1: direct identifiers are
removed, quasi-identifiers generalized):

* a name that looks like a direct identifier (``id``, ``name``, ``ssn``, ``mrn``, ``email``,
  ``phone``, ``address``, ...) or a *near-unique* column (``uniqueness >= near_unique``,
  default 0.9, with more than 20 values): ``identifying`` (flagged);
* a name that looks like a demographic or geographic attribute an adversary can know (age,
  sex, race, zip/postcode, dates of birth, country, marital status, ...): ``quasi``;
* anything else: ``insensitive``, unflagged, which the custodian must confirm.

The suggestion is a suggestion: the roles the custodian sets are the configuration's.
Nothing here is shown of a value itself, only counts.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from safeshare.data.engines.base import COUNT_COLUMN, Engine
from safeshare.errors import DataError, InputError

#: A column is near-unique when its distinct values are at least this share of its records.
NEAR_UNIQUE = 0.9
#: ... and it has more than this many distinct values (a 3-record table is not "unique").
NEAR_UNIQUE_MIN_VALUES = 20

#: Name tokens of direct identifiers (matched on the name split at non-letters and case changes).
IDENTIFIER_TOKENS = frozenset(
    {
        "id", "ids", "uuid", "guid", "key", "ssn", "sin", "nhs", "mrn", "nino", "passport",
        "name", "firstname", "lastname", "surname", "forename", "fullname",
        "email", "mail", "phone", "telephone", "mobile", "fax", "address", "street",
        "license", "licence", "account", "iban", "ip", "url", "record", "patient", "insurance",
    }
)  # fmt: skip
#: Name tokens of attributes an adversary commonly knows (quasi-identifiers).
QUASI_TOKENS = frozenset(
    {
        "age", "sex", "gender", "race", "ethnicity", "ethnic", "zip", "zipcode", "postcode",
        "postal", "plz", "birth", "dob", "birthdate", "birthday", "yob", "country", "nationality",
        "native", "marital", "education", "occupation", "job", "relationship", "workclass",
        "religion", "language", "city", "region", "state", "county", "district", "municipality",
        "height", "weight", "admission", "discharge", "date",
    }
)  # fmt: skip


@dataclass(frozen=True)
class ColumnProfile:
    """One column's figures (counts only) and its suggested role."""

    name: str
    records: int
    distinct: int
    missing: int
    #: records whose value occurs in no other record
    singletons: int
    #: distinct / non-missing records (0 when every value is missing)
    uniqueness: float
    suggested_role: str
    #: why this role is suggested (one sentence)
    reason: str
    #: ``True`` when the suggestion is a warning: a likely direct identifier
    flagged: bool

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class DataProfile:
    """The profile of a table: its record count and one :class:`ColumnProfile` per column."""

    records: int
    columns: tuple[ColumnProfile, ...]

    def column(self, name: str) -> ColumnProfile:
        for c in self.columns:
            if c.name == name:
                return c
        raise KeyError(name)

    def suggested_roles(self) -> dict[str, str]:
        return {c.name: c.suggested_role for c in self.columns}

    def to_dict(self) -> dict[str, Any]:
        return {"records": self.records, "columns": [c.to_dict() for c in self.columns]}

    @classmethod
    def from_dict(cls, doc: dict[str, Any]) -> DataProfile:
        return cls(records=int(doc["records"]), columns=tuple(ColumnProfile(**c) for c in doc["columns"]))


def name_tokens(name: str) -> list[str]:
    """``patientID`` -> ``["patient", "id"]``; ``date_of_birth`` -> ``["date", "of", "birth"]``."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name)
    return [t for t in re.split(r"[^A-Za-z0-9]+", spaced.lower()) if t]


def suggest_role(
    name: str, distinct: int, non_missing: int, near_unique: float = NEAR_UNIQUE
) -> tuple[str, str, bool]:
    """``(role, reason, flagged)`` for a column (see the module docstring for the rules)."""
    tokens = set(name_tokens(name))
    joined = "".join(name_tokens(name))
    hit = sorted(tokens & IDENTIFIER_TOKENS) or ([joined] if joined in IDENTIFIER_TOKENS else [])
    if hit:
        return "identifying", f"the name looks like a direct identifier ({hit[0]!r})", True
    uniqueness = distinct / non_missing if non_missing else 0.0
    if distinct > NEAR_UNIQUE_MIN_VALUES and uniqueness >= near_unique:
        return (
            "identifying",
            f"near-unique: {distinct:,} distinct values in {non_missing:,} records ({uniqueness:.0%})",
            True,
        )
    quasi = sorted(tokens & QUASI_TOKENS) or ([joined] if joined in QUASI_TOKENS else [])
    if quasi:
        return "quasi", f"an attribute an adversary can know ({quasi[0]!r})", False
    return "insensitive", "no rule applies: confirm that it is harmless, or choose another role", False


def profile_column(
    name: str, sizes: np.ndarray, missing: int, near_unique: float = NEAR_UNIQUE
) -> ColumnProfile:
    """The profile of one column from the record counts of its distinct non-missing values."""
    sizes = np.asarray(sizes, dtype=np.int64)
    non_missing = int(sizes.sum())
    distinct = int(sizes.size)
    role, reason, flagged = suggest_role(name, distinct, non_missing, near_unique)
    return ColumnProfile(
        name=name,
        records=non_missing + int(missing),
        distinct=distinct,
        missing=int(missing),
        singletons=int((sizes == 1).sum()),
        uniqueness=distinct / non_missing if non_missing else 0.0,
        suggested_role=role,
        reason=reason,
        flagged=flagged,
    )


def is_missing(values: Sequence[Any], tokens: Sequence[str]) -> np.ndarray:
    """Which of ``values`` (a column's distinct values as read) are missing: ``None``/NaN, empty
    text, or one of ``tokens`` (the input's ``missing:`` list)."""
    out = np.zeros(len(values), dtype=bool)
    for i, v in enumerate(values):
        if v is None or (isinstance(v, float) and v != v):
            out[i] = True
        else:
            text = str(v)
            out[i] = text == "" or text in tokens
    return out


def profile_table(
    engine: Engine, missing_tokens: Sequence[str] = (), near_unique: float = NEAR_UNIQUE
) -> DataProfile:
    """The :class:`DataProfile` of every column the engine reads (one ``GROUP BY`` each)."""
    if not 0.0 < near_unique <= 1.0:
        raise InputError(f"near_unique: expected a share in (0, 1], got {near_unique}")
    columns = engine.columns()
    if not columns:
        raise DataError("the input has no columns")
    profiles = []
    records = None
    for name in columns:
        grouped = engine.grouped_counts([name])
        counts = grouped[COUNT_COLUMN].to_numpy(dtype=np.int64)
        gone = is_missing(grouped[name].tolist(), missing_tokens)
        total = int(counts.sum())
        records = total if records is None else records
        profiles.append(profile_column(name, counts[~gone], int(counts[gone].sum()), near_unique))
    if not records:
        raise DataError("the input has no records")
    return DataProfile(records=records, columns=tuple(profiles))


def column_counts(engine: Engine, column: str, limit: int) -> dict[str, int] | None:
    """The distinct values of ``column`` as text (what a hierarchy builder takes), sorted, each
    with its number of records; ``None`` when there are more than ``limit`` (too many to build a
    preview from in a page). A null cell is the empty value, as the builders read it."""
    from safeshare.data.engines.base import COUNT_COLUMN

    if column not in engine.columns():
        raise InputError(f"unknown column {column!r}")
    grouped = engine.grouped_counts([column])
    if len(grouped) > limit:
        return None
    counts: dict[str, int] = {}
    for value, n in zip(grouped[column].tolist(), grouped[COUNT_COLUMN].tolist(), strict=True):
        text = "" if value is None else str(value)
        counts[text] = counts.get(text, 0) + int(n)
    return dict(sorted(counts.items()))


__all__ = [
    "NEAR_UNIQUE",
    "ColumnProfile",
    "DataProfile",
    "column_counts",
    "profile_column",
    "profile_table",
    "suggest_role",
]
