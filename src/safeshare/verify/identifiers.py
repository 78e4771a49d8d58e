"""Independent check of pseudonyms and shifted dates on a written release (issue 20).

The engines treat identifiers while reading (:mod:`safeshare.data.identifiers`): mapping
tables over distinct texts, joined in SQL. This check shares none of that code. It reads
the input's distinct **raw** tuples of the treated columns and their persons, with their
record counts (``raw``: the engine's reader before the treatment,
:meth:`~safeshare.data.engines.base.Engine.raw_grouped_batches`), and recomputes from the
key, with its own implementation of the definitions, what every input record must look
like in the release:

* a pseudonym: ``HMAC-SHA256(HMAC-SHA256(key, "safeshare pseudonym v1"), value)`` in hex,
  cut to its length;
* a shifted date: the date plus its person's shift, drawn from the words of
  ``HMAC-SHA256(k_s, uint32_be(c) || person)`` by rejection sampling into ``[-N, N] \\ {0}``;
  for a shifted date that is a quasi-identifier, the label of that shifted date at the
  chosen level of its hierarchy;
* a missing value: itself.

Then, in DuckDB SQL over the written file:

1. **no raw identifier**: no raw (non-missing) value of a pseudonym column occurs in that
   column of the release;
2. **every released row is accounted for**: the release's tuples of the treated columns
   (``GROUP BY`` them, with counts) are a sub-multiset of the expected tuples: each
   released tuple occurs at most as often as the input records that must produce it
   (fewer when records were suppressed). So every released pseudonym is the HMAC of the
   value of an input record, and every released date is the shifted date of an input
   record *with the same values in the other treated columns* (with the person released as
   a pseudonym: the same person), never its raw date: the recomputed shift of every person
   is checked to be non-zero and within ``N``.

A raw date may of course equal another record's shifted date (dates are few, records many),
so "no raw date in the column" is not a property a correct release has; what is checked is
that no record's date is its own. The shift itself is never written.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import itertools
import struct
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import duckdb
import pandas as pd

from safeshare.data.identifiers.key import DATE_SHIFT_LABEL, PSEUDONYM_LABEL, SecretKey
from safeshare.verify.sql import quote

COUNT = "__count__"


@dataclass(frozen=True)
class PseudonymCheck:
    """A ``pseudonym`` column as configured: ``length`` hex digits."""

    column: str
    length: int


@dataclass(frozen=True)
class ShiftCheck:
    """A ``shifted_date`` column as configured; ``labels``: shifted date text -> released label
    (the chosen level of its hierarchy) when it is a quasi-identifier, else ``None``."""

    column: str
    person: str
    max_days: int
    date_format: str
    labels: Mapping[str, str] | None = None


@dataclass
class IdentifierExpectations:
    """What the identifier check needs: the key, the columns as configured, and the raw input.

    ``raw(columns)`` yields the input's distinct tuples of ``columns`` as read, before any
    treatment, with their counts in ``__count__`` (e.g. ``engine.raw_grouped_batches``);
    ``missing``: the input's missing-value tokens (missing values are released as they are).
    """

    key: SecretKey
    pseudonyms: tuple[PseudonymCheck, ...]
    shifted_dates: tuple[ShiftCheck, ...]
    raw: Callable[[Sequence[str]], Iterable[pd.DataFrame]] = field(repr=False)
    missing: tuple[str, ...] = ()

    @property
    def columns(self) -> list[str]:
        return [c.column for c in self.pseudonyms] + [c.column for c in self.shifted_dates]

    @property
    def read_columns(self) -> list[str]:
        return list(dict.fromkeys([*self.columns, *(c.person for c in self.shifted_dates)]))

    @classmethod
    def from_schema(
        cls,
        schema: Any,
        key: SecretKey,
        raw: Callable[[Sequence[str]], Iterable[pd.DataFrame]],
        missing: Sequence[str] = (),
        hierarchy_rows: Mapping[str, Sequence[Sequence[str]]] | None = None,
        levels: Mapping[str, int] | None = None,
    ) -> IdentifierExpectations | None:
        """The expectations of a :class:`~safeshare.data.schema.Schema`'s ``pseudonym`` and
        ``shifted_date`` columns (``None`` when it has none). A shifted date that is a
        quasi-identifier needs its hierarchy's rows and its chosen level."""
        pseudonyms, shifted = [], []
        for attr in schema.attributes.values():
            role = str(attr.role.value)
            if role == "pseudonym":
                pseudonyms.append(PseudonymCheck(attr.name, int(attr.length)))
            elif role == "shifted_date":
                labels = None
                if attr.hierarchy is not None:
                    rows = (hierarchy_rows or {})[attr.name]
                    level = (levels or {})[attr.name]
                    labels = {str(r[0]): str(r[level]) for r in rows}
                shifted.append(
                    ShiftCheck(attr.name, str(attr.person), int(attr.max_days), str(attr.date_format), labels)
                )
        if not pseudonyms and not shifted:
            return None
        return cls(key, tuple(pseudonyms), tuple(shifted), raw, tuple(missing))


def _own_pseudonym(subkey: bytes, value: str, length: int) -> str:
    return hmac.new(subkey, value.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()[:length]


def own_shift(subkey: bytes, person: str, max_days: int) -> int:
    """The shift of ``person``: rejection sampling over the 64-bit words of
    ``HMAC(subkey, uint32_be(c) || person)``, c = 0, 1, ... (written apart from the engines')."""
    message = person.encode("utf-8", "surrogatepass")
    width = 2 * max_days
    accept_below = (2**64 // width) * width
    words: Iterator[int] = itertools.chain.from_iterable(
        struct.unpack(">4Q", hmac.new(subkey, struct.pack(">I", c) + message, hashlib.sha256).digest())
        for c in itertools.count()
    )
    word = next(w for w in words if w < accept_below)
    r = word % width
    shift = r - max_days if r < max_days else r - max_days + 1
    if shift == 0 or abs(shift) > max_days:  # the definition forbids it; a guard on this very code
        raise AssertionError(f"shift {shift} outside [-{max_days}, {max_days}] \\ {{0}}")
    return shift


def check_identifiers(
    con: duckdb.DuckDBPyConnection, relation: str, expected: IdentifierExpectations, checks: dict[str, Any]
) -> list[str]:
    """Failures of the identifier treatment on the release ``relation`` (see the module docstring)."""
    failures: list[str] = []
    columns = expected.columns
    described = {str(r[0]) for r in con.execute(f"DESCRIBE SELECT * FROM {relation}").fetchall()}
    absent_columns = [c for c in columns if c not in described]
    if absent_columns:
        return [f"identifiers: column {absent_columns[0]!r} is missing from the release"]
    absent = frozenset([*expected.missing, ""])
    pseudo_key = expected.key.subkey(PSEUDONYM_LABEL)
    shift_key = expected.key.subkey(DATE_SHIFT_LABEL)
    slots = [f"t{j}" for j in range(len(columns))]
    con.execute(
        "CREATE TEMP TABLE __expected_ids (" + ", ".join(f"{s} VARCHAR" for s in slots) + ", n BIGINT)"
    )
    for c in expected.pseudonyms:
        con.execute(f"CREATE TEMP TABLE {quote('__raw_' + c.column)} (v VARCHAR)")
    unparseable: list[str] = []
    shifts: dict[tuple[str, int], int] = {}  # (person, max_days) -> shift, over all batches
    persons = 0
    for batch in expected.raw(expected.read_columns):
        if batch.empty:
            continue
        out: dict[str, pd.Series] = {}
        for j, c in enumerate(expected.pseudonyms):
            values = batch[c.column].astype(str)
            present = ~values.isin(absent)
            distinct = values[present].unique()
            hashed = {v: _own_pseudonym(pseudo_key, v, c.length) for v in distinct}
            out[slots[j]] = values.where(~present, values.map(hashed))
            con.register("__raw_batch", pd.DataFrame({"v": distinct}))
            con.execute(f"INSERT INTO {quote('__raw_' + c.column)} SELECT v FROM __raw_batch")
            con.unregister("__raw_batch")
        for j, s in enumerate(expected.shifted_dates, start=len(expected.pseudonyms)):
            values, people = batch[s.column].astype(str), batch[s.person].astype(str)
            present = ~values.isin(absent)
            days: dict[str, int | None] = {}
            for v in values[present].unique():
                try:
                    days[v] = dt.datetime.strptime(v, s.date_format).date().toordinal()
                except ValueError:
                    days[v] = None
                    unparseable.append(s.column)
            for person in people[present].unique():
                if (person, s.max_days) not in shifts:
                    shifts[(person, s.max_days)] = own_shift(shift_key, person, s.max_days)
                    persons += 1
            moved = values[present].map(days) + people[present].map(lambda p, n=s.max_days: shifts[(p, n)])
            texts = {m: dt.date.fromordinal(int(m)).strftime(s.date_format) for m in moved.dropna().unique()}
            treated = values.astype(object)
            treated[present] = moved.map(texts)  # NaN where the date was not one
            treated = treated.where(treated.notna(), None)
            if s.labels is not None:
                treated = treated.map(dict(s.labels))  # an unmapped text gives NaN, compared as NULL
            out[slots[j]] = treated
        frame = pd.DataFrame(out)
        frame["n"] = batch[COUNT].astype("int64").to_numpy()
        con.register("__expected_batch", frame)
        con.execute(f"INSERT INTO __expected_ids SELECT {', '.join(slots)}, n FROM __expected_batch")
        con.unregister("__expected_batch")
    if unparseable:
        failures.append(f"identifiers: column {unparseable[0]!r} holds input values that are not dates")
    released = ", ".join(f"CAST({quote(c)} AS VARCHAR) AS {s}" for c, s in zip(columns, slots, strict=True))
    con.execute(
        f"CREATE TEMP TABLE __released_ids AS SELECT {released}, COUNT(*) AS n FROM {relation} GROUP BY ALL"
    )
    # 1. no raw identifier in its column
    for j, c in enumerate(expected.pseudonyms):
        row = con.execute(
            f"SELECT COUNT(DISTINCT r.{slots[j]}) FROM __released_ids AS r "
            f"SEMI JOIN {quote('__raw_' + c.column)} AS raw ON r.{slots[j]} = raw.v"
        ).fetchone()
        if row is not None and int(row[0]):
            failures.append(
                f"identifiers: {int(row[0])} raw values of column {c.column!r} appear in the release"
            )
    # 2. each treated column alone, then the tuples with their counts
    for j, column in enumerate(columns):
        row = con.execute(
            f"SELECT COUNT(*) FROM (SELECT DISTINCT {slots[j]} AS v FROM __released_ids) AS r "
            f"ANTI JOIN (SELECT DISTINCT {slots[j]} AS v FROM __expected_ids) AS e "
            "ON r.v IS NOT DISTINCT FROM e.v"
        ).fetchone()
        if row is not None and int(row[0]):
            what = "pseudonyms" if j < len(expected.pseudonyms) else "shifted dates"
            failures.append(
                f"identifiers: column {column!r} holds {int(row[0])} values that are not the {what} "
                "of any input value under this key"
            )
    on = " AND ".join(f"r.{s} IS NOT DISTINCT FROM e.{s}" for s in slots)
    row = con.execute(
        "SELECT COUNT(*), COALESCE(SUM(r.n), 0) FROM __released_ids AS r "
        f"LEFT JOIN (SELECT {', '.join(slots)}, SUM(n) AS n FROM __expected_ids GROUP BY ALL) AS e ON {on} "
        "WHERE e.n IS NULL OR r.n > e.n"
    ).fetchone()
    assert row is not None
    if int(row[0]):
        failures.append(
            f"identifiers: {int(row[1])} released records have pseudonyms or shifted dates that no input "
            "record of the same values produces (a raw value, another record's date, or a wrong key)"
        )
    total = con.execute("SELECT COALESCE(SUM(n), 0) FROM __released_ids").fetchone()
    checks["identifiers"] = {
        "columns": list(columns),
        "records_checked": int(total[0]) if total else 0,
        "shifts_recomputed": persons,
    }
    for table in ("__expected_ids", "__released_ids", *(f"__raw_{c.column}" for c in expected.pseudonyms)):
        con.execute(f"DROP TABLE IF EXISTS {quote(table)}")
    return failures
