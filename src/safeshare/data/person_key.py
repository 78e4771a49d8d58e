"""Likely repeated persons: a column that looks like an identifier and repeats (issue 32).

A table of tests, visits or prescriptions holds several records per person. Without a person key
(``person: COLUMN``) every model counts records: a class of 5 records can hold 3 people. Before
anything is published, ``anonymize``, ``inspect`` and ``risk`` look for such a column and warn by
name:

* the column **looks like an identifier**: a ``pseudonym`` (an identifier by its role), or a
  column whose name reads as one (``id``, ``subject_id``, ``mrn``, ``patient``, ``person``,
  ``member``, ``nhs_number``, ...: :data:`IDENTIFIER_NAME`), whatever its role, except the
  columns that are quasi-identifiers, sensitive, free text or dates (their values describe a
  record, not who it is);
* and it **repeats**: some non-missing value is carried by several records, while the column
  still has many values (at least ``2 sqrt(n)`` over ``n`` records: a coarse column such as a
  ward id does not name people, :mod:`safeshare.data.identifiers.coarse`).

The figures are the distinct values, the values that repeat, and the most records of one value:
``subject_id: 12,344 values over 15,524 records, 1,744 of them on several records (up to 6)``.
One ``GROUP BY`` of the column per candidate (names and pseudonyms only, so usually none or one).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from safeshare.data.engines.base import COUNT_COLUMN, Engine
from safeshare.data.identifiers.coarse import is_coarse

#: Column names that read as an identifier of a person (case-insensitive, as a word or a suffix).
IDENTIFIER_NAME = re.compile(
    r"(?:^|[_\-\s.])(?:id|ids|mrn|pid|uid|patient|patients|person|persons|subject|member|client|"
    r"nhs|ssn|sin|hin|ehr|emr|chart|enrollee|beneficiary|pat)(?:$|[_\-\s.])"
    r"|(?:^|[_\-\s.])(?:patient|person|subject|member|client)[_\-\s.]?(?:id|no|num|number|key)$",
    re.IGNORECASE,
)
#: camelCase identifiers: ``patientId``, ``PatientID`` (case-sensitive: not ``valid`` or ``paid``).
CAMEL_ID = re.compile(r"[a-z0-9](?:Id|ID)$")

#: Roles whose columns describe a record, never who it is: not looked at.
NOT_IDENTIFIERS = frozenset({"quasi", "sensitive", "text", "shifted_date"})


@dataclass(frozen=True)
class RepeatedPersons:
    """A column that looks like a person identifier and repeats (module docstring)."""

    column: str
    records: int
    values: int
    repeated_values: int
    max_records: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "column": self.column,
            "records": self.records,
            "values": self.values,
            "repeated_values": self.repeated_values,
            "max_records": self.max_records,
            "message": self.message(),
        }

    def message(self) -> str:
        return (
            f"column {self.column!r} looks like a person identifier and repeats: {self.values:,} values over "
            f"{self.records:,} records, {self.repeated_values:,} of them on several records (up to "
            f"{self.max_records:,}); without a person key every figure counts records, not people: give "
            f"person: {self.column} (--person {self.column})"
        )


def looks_like_identifier(column: str) -> bool:
    """Whether ``column``'s name reads as a person identifier (:data:`IDENTIFIER_NAME`)."""
    return bool(IDENTIFIER_NAME.search(column) or CAMEL_ID.search(column))


def candidate_columns(columns: Sequence[str], roles: Mapping[str, str | None]) -> list[str]:
    """The columns worth counting: pseudonyms, and names that read as an identifier, among the
    columns that are not quasi-identifiers, sensitive, free text or dates."""
    out = []
    for column in columns:
        role = roles.get(column)
        if role in NOT_IDENTIFIERS:
            continue
        if role == "pseudonym" or looks_like_identifier(column):
            out.append(column)
    return out


def repeated_persons(
    engine: Engine, roles: Mapping[str, str | None], exclude: Sequence[str] = ()
) -> list[RepeatedPersons]:
    """The candidate columns of ``engine``'s input (:func:`candidate_columns`, ``roles``: column ->
    role name, ``None`` for an unlisted column) that repeat, in input order; ``exclude``: columns
    not to look at (the person key itself)."""
    skip = set(exclude)
    columns = [c for c in candidate_columns(engine.columns(), roles) if c not in skip]
    if not columns:
        return []
    missing = {"", *engine.missing}
    out = []
    for column in columns:
        grouped = engine.grouped_counts([column])
        values = grouped[column].astype(str)
        present = ~(values.str.strip().isin(missing) | values.isin(missing))
        counts = grouped.loc[present, COUNT_COLUMN].to_numpy(dtype=np.int64)
        records = int(counts.sum())
        distinct = int(counts.size)
        repeated = int((counts > 1).sum())
        if not repeated or is_coarse(distinct, records):
            continue
        out.append(RepeatedPersons(column, records, distinct, repeated, int(counts.max())))
    return out


__all__ = [
    "IDENTIFIER_NAME",
    "RepeatedPersons",
    "candidate_columns",
    "looks_like_identifier",
    "repeated_persons",
]
