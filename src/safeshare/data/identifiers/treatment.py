"""The identifier treatment an engine applies while reading: pseudonyms and shifted dates.

An engine given an :class:`IdentifierTreatment` replaces, in every record it reads, each
``pseudonym`` column by its pseudonym (:mod:`.pseudonym`) and each ``shifted_date`` column
by the date shifted by its person's shift (:mod:`.date_shift`), *before* anything else
sees the records: the frequency table, the hierarchy builders (a shifted date that is a
quasi-identifier is generalized after the shift) and the release all see treated values
only. Missing values (the empty text and the declared missing tokens) stay missing.

The engines do this the same way, so that their releases are the same bytes: the
treatment is computed here, in Python, over **distinct** texts (the values' text as the
engines read them), as mapping tables that the engine joins to the records:

* pseudonym column: distinct value -> pseudonym (:meth:`IdentifierTreatment.pseudonym_map`);
* shifted date: distinct person -> shift in days (:meth:`~IdentifierTreatment.shift_map`),
  distinct date text -> day number (:meth:`~IdentifierTreatment.day_map`), and day number ->
  date text over the range the shifted dates can take (:meth:`~IdentifierTreatment.day_texts`).

The key never enters SQL text or a Spark plan: only these tables do. Values that cannot
be treated raise :class:`UnplacedValue`, which the engine turns into one line naming the
file, the line (or row) and the column (:func:`located`).

**One person, one shift** (issue 30, item 5). A person's shift is a function of the key,
the person's text and ``max_days`` only (:func:`~safeshare.data.identifiers.date_shift.day_shifts`),
whatever the column. So every shifted date of a treatment must have the same ``max_days``
(refused otherwise): two windows gave one person two shifts (1,029 of 3,000 discharges fell
before their admission), and two releases of the same person under one key with two
windows combine: each narrows the true date, and the shifts of one person under two
windows are drawn from the same HMAC words, so they are correlated. The window is the
key's: the ledger records it, and a later release under the same key with another window
is refused when the ledger is kept (``workflows/key_window.py``). Without a ledger, keep one
``max_days`` for a key (or make a new key, which also changes every pseudonym).

**A person column identifies a person** (item 7): the engines count the distinct persons
among the records with a date and refuse a coarse column (:meth:`IdentifierTreatment.check_persons`,
:mod:`.coarse`); the schema refuses a person column that is a quasi-identifier, sensitive or
free text.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from safeshare.data.identifiers.coarse import coarse_limit, is_coarse
from safeshare.data.identifiers.date_shift import (
    ISO_FORMAT,
    check_date_format,
    check_max_days,
    check_one_window,
    check_shift_range,
    day_shifts,
    format_day,
    parse_day,
)
from safeshare.data.identifiers.key import SecretKey
from safeshare.data.identifiers.pseudonym import DEFAULT_LENGTH, check_length, check_no_collision, pseudonyms
from safeshare.errors import ConfigError, DataError

if TYPE_CHECKING:
    from safeshare.data.schema import Schema
    from safeshare.data.source import TableSource


@dataclass(frozen=True)
class PseudonymColumn:
    """A column released as keyed pseudonyms of ``length`` hex digits."""

    name: str
    length: int = DEFAULT_LENGTH

    def __post_init__(self) -> None:
        check_length(self.length, f"column {self.name!r}: length")


@dataclass(frozen=True)
class ShiftedDateColumn:
    """A date column shifted per person (column ``person``) by up to ``max_days`` days."""

    name: str
    person: str
    max_days: int
    date_format: str = ISO_FORMAT

    def __post_init__(self) -> None:
        check_max_days(self.max_days, f"column {self.name!r}: max_days")
        check_date_format(self.date_format, f"column {self.name!r}: date_format")
        if self.person == self.name:
            raise ConfigError(f"column {self.name!r}: person must be another column")


class UnplacedValue(DataError):
    """A value that cannot be treated (a date that is not one, a person that is missing).

    ``column`` and ``value`` say which; ``problem`` is the message without its place,
    which the engine adds with :func:`located`; ``requires``: a column that is not missing
    in the record meant (a missing person matters only where the date is present).
    """

    def __init__(self, column: str, value: str, problem: str, requires: str | None = None) -> None:
        super().__init__(f"column {column!r}: {problem}")
        self.column = column
        self.value = value
        self.problem = problem
        self.requires = requires


def missing_set(missing: Sequence[str]) -> frozenset[str]:
    """The texts that are missing values: the empty text and every declared token."""
    return frozenset([*missing, ""])


@dataclass(frozen=True)
class IdentifierTreatment:
    """What to replace in every record, and the key to do it with (see the module docstring).

    Build it from a schema with :meth:`from_schema`; give it to an engine
    (``MemoryEngine(source, identifiers=treatment)``, ``DuckDBEngine(...)``,
    ``SparkEngine(...)``, ``make_engine(..., identifiers=treatment)``).
    """

    key: SecretKey
    pseudonyms: tuple[PseudonymColumn, ...] = ()
    shifted_dates: tuple[ShiftedDateColumn, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.key, SecretKey):
            raise ConfigError(
                "the identifier treatment needs a SecretKey (safeshare.data.identifiers.load_key)"
            )
        object.__setattr__(self, "pseudonyms", tuple(self.pseudonyms))
        object.__setattr__(self, "shifted_dates", tuple(self.shifted_dates))
        names = self.columns
        for name in names:
            if names.count(name) > 1:
                raise ConfigError(f"column {name!r} is treated twice")
        for shifted in self.shifted_dates:
            if shifted.person in (s.name for s in self.shifted_dates):
                raise ConfigError(f"column {shifted.name!r}: its person {shifted.person!r} is a shifted date")
        check_one_window([(s.name, s.max_days) for s in self.shifted_dates])

    @classmethod
    def from_schema(cls, schema: Schema, key: SecretKey | None) -> IdentifierTreatment | None:
        """The treatment of ``schema``'s ``pseudonym`` and ``shifted_date`` columns; ``None``
        when it has none. A schema with such columns and no key is a :class:`ConfigError`."""
        from safeshare.data.schema import Role

        attrs = schema.attributes.values()
        pseudo = [
            PseudonymColumn(a.name, int(a.length or DEFAULT_LENGTH))
            for a in attrs
            if a.role is Role.PSEUDONYM
        ]
        shifted = [
            ShiftedDateColumn(a.name, str(a.person), int(a.max_days or 0), a.date_format or ISO_FORMAT)
            for a in attrs
            if a.role is Role.SHIFTED_DATE
        ]
        if not pseudo and not shifted:
            return None
        if key is None:
            first = (pseudo or shifted)[0].name
            raise ConfigError(f"column {first!r}: pseudonyms and shifted dates need a key file (key_file:)")
        return cls(key, tuple(pseudo), tuple(shifted))

    @property
    def columns(self) -> list[str]:
        """The treated columns: pseudonyms, then shifted dates."""
        return [c.name for c in self.pseudonyms] + [c.name for c in self.shifted_dates]

    @property
    def person_columns(self) -> list[str]:
        """The columns whose raw text gives the shifts, without repeats."""
        return list(dict.fromkeys(c.person for c in self.shifted_dates))

    @property
    def read_columns(self) -> list[str]:
        """Every column whose raw text the treatment reads: treated columns and persons."""
        return list(dict.fromkeys([*self.columns, *self.person_columns]))

    # ------------------------------------------------------------------ mapping tables
    def pseudonym_map(self, column: PseudonymColumn, values: Sequence[str]) -> list[str]:
        """The pseudonym of each of ``values`` (non-missing texts; see :func:`missing_set`)."""
        return pseudonyms(self.key, values, column.length)

    @staticmethod
    def check_pseudonyms(column: PseudonymColumn, n_values: int, n_pseudonyms: int) -> None:
        """Refuse a column whose distinct values did not all get distinct pseudonyms."""
        check_no_collision(column.name, n_values, n_pseudonyms, column.length)

    def shift_map(
        self, column: ShiftedDateColumn, persons: Sequence[str], missing: Sequence[str]
    ) -> list[int]:
        """The shift in days of each person text (a missing person raises :class:`UnplacedValue`)."""
        absent = missing_set(missing)
        for person in persons:
            if person in absent:
                raise UnplacedValue(
                    column.person,
                    person,
                    f"missing, but it names the person whose dates in {column.name!r} are shifted",
                    requires=column.name,
                )
        return day_shifts(self.key, persons, column.max_days)

    @staticmethod
    def check_persons(column: ShiftedDateColumn, persons: int, records: int) -> None:
        """Refuse a person column with far fewer distinct values (``persons``, among the
        ``records`` whose date in ``column`` is present) than records (:mod:`.coarse`):
        every record of one value gets one shift."""
        if is_coarse(persons, records):
            raise DataError(
                f"column {column.name!r}: its person column {column.person!r} has {persons:,} distinct "
                f"values over {records:,} records with a date (fewer than 2 sqrt(n) = "
                f"{coarse_limit(records):,.0f}): it does not identify one person, and all records of one "
                "value move by the same shift (whoever knows one true date learns them all); choose the "
                "column that identifies the person (a record number)"
            )

    @staticmethod
    def day_map(column: ShiftedDateColumn, values: Sequence[str]) -> list[int]:
        """The day number (proleptic Gregorian ordinal) of each non-missing date text."""
        out = []
        for value in values:
            try:
                out.append(parse_day(value, column.date_format))
            except ValueError:
                example = format_day(738_186, column.date_format)  # 2022-01-31
                raise UnplacedValue(
                    column.name,
                    value,
                    f"{value!r} is not a date in the format {column.date_format!r} (e.g. {example!r}); "
                    "if it marks an unknown date, declare it a missing value (input.missing)",
                ) from None
        return out

    @staticmethod
    def day_range(column: ShiftedDateColumn, first: int, last: int) -> range:
        """The day numbers the shifted dates can take, for dates from ``first`` to ``last``
        (refused when they could leave the years 1000-9999, whatever the shifts)."""
        check_shift_range(column.name, first, last, column.max_days)
        return range(first - column.max_days, last + column.max_days + 1)

    @staticmethod
    def day_texts(column: ShiftedDateColumn, days: Sequence[int]) -> list[str]:
        """The text of each day number in the column's format."""
        return [format_day(d, column.date_format) for d in days]

    def describe(self) -> dict[str, Any]:
        """What the treatment does, for reports: columns and parameters. Neither the key nor its
        fingerprint (which confirms a guessed key offline: it goes to the custodian's ledger only)."""
        return {
            "pseudonyms": [{"column": c.name, "length": c.length} for c in self.pseudonyms],
            "shifted_dates": [
                {"column": c.name, "person": c.person, "max_days": c.max_days, "format": c.date_format}
                for c in self.shifted_dates
            ],
        }


def located(
    error: UnplacedValue,
    label: str,
    columns: Sequence[str],
    source: TableSource | None = None,
    missing: Sequence[str] = (),
    row: int | None = None,
) -> DataError:
    """``error`` as one line naming where the value is: the CSV line or the Parquet row of
    the record, found by position when ``row`` (0-based, in the engine's record order) is
    given, else by value; just the input when none can be found.

    Finding the line is a scan of the file, done only on this error path.
    """
    try:
        where = _find(error, columns, source, missing, row)
    except Exception:  # locating is a courtesy: the error itself stands without it
        where = ""
    place = f"{label} {where}" if where else label
    return DataError(f"{place}, column {error.column!r}: {error.problem}")


def _find(
    error: UnplacedValue,
    columns: Sequence[str],
    source: TableSource | None,
    missing: Sequence[str],
    row: int | None,
) -> str:
    if source is None or source.table is not None or error.column not in columns:
        return "" if row is None else f"row {row + 1}"
    index = list(columns).index(error.column)
    need = (
        list(columns).index(error.requires)
        if error.requires is not None and error.requires in columns
        else None
    )
    absent = missing_set(missing)
    if source.fmt == "parquet":
        return f"row {row + 1}" if row is not None else _find_parquet_row(error, source, index, need, missing)
    from safeshare.data.source import _records

    def text(fields: list[str], i: int) -> str:
        s = fields[i].strip() if i < len(fields) else ""
        return (missing[0] if missing else "") if s in absent else s

    records = _records(source)
    if source.header:
        next(records, None)
    for n, (line, fields) in enumerate(records):
        if row is not None:
            if n == row:
                return f"line {line}"
        elif text(fields, index) == error.value and (need is None or text(fields, need) not in absent):
            return f"line {line}"
    return ""


def _find_parquet_row(
    error: UnplacedValue, source: TableSource, index: int, need: int | None, missing: Sequence[str]
) -> str:
    import pyarrow.parquet as pq

    absent = missing_set(missing)
    names = pq.read_schema(source.path).names
    wanted = [names[index]] + ([names[need]] if need is not None else [])
    table = pq.read_table(source.path, columns=wanted)
    values = table.column(0).to_pylist()
    required = table.column(1).to_pylist() if need is not None else [None] * len(values)

    def text(v: object) -> str:
        s = "" if v is None else str(v).strip()
        return (missing[0] if missing else "") if s in absent else s

    for n, (v, r) in enumerate(zip(values, required, strict=True)):
        if text(v) == error.value and (need is None or text(r) not in absent):
            return f"row {n + 1}"
    return ""
