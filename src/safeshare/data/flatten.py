"""Flatten longitudinal data to one row per person (thesis §4.2, §3.2, §6.1.3).

Every algorithm in safeshare works on a single table with one row per
individual. Longitudinal data (a persons table ``t0`` and an events table ``t1``
whose rows reference ``t0`` through a foreign key) is reduced to that model as
the thesis does in §4.2 ("Problem definition"): each event table is *joined*
onto the persons table by stacking the events of a person horizontally, in a
total order, so that "the patients table [gets] p x k more fields", padding
"some fields with null values" for persons with fewer events. §3.2 builds the
same pivot table of procedures ("one column per item in the sequence") and
§6.1.3 anonymizes "the first three procedures for a particular admission of
each patient".

For the first ``n_events`` events of each person, in the order given by
``order_by`` (ties, and everything when ``order_by`` is empty, keep the events'
original row order), the event columns are added as ``{prefix}{i}_{column}``
(``i = 1 .. n_events``)::

    persons      events                     flatten(n_events=2)
    id  sex      id  date        code       id  sex  event1_date event1_code event2_date event2_code
    p1  F        p1  2020-03-01  B          p1  F    2020-01-05  A           2020-03-01  B
    p2  M        p1  2020-01-05  A          p2  M
                 p1  2021-07-30  C

Ordering. Order-by values are compared as text by default (code-point order),
which is the right order for ISO 8601 dates and timestamps (``2020-01-05`` <
``2020-03-01``) and for zero-padded codes, but not for numbers ("10" < "9") or
for dates such as ``05/01/2020``: ask for ``order_numeric`` or
``order_dates="%d/%m/%Y"`` (a :func:`~datetime.datetime.strptime` format). A
missing (empty) order-by value sorts after every known one, in both directions.

Three tables (thesis §4.2: "we first want to craft t(1,2), product of joining
t(2) with t(1), and then a final table t(0,1,2)") are flattened innermost
first: :func:`flatten_chain`.

Values are text, as everywhere in safeshare (:mod:`safeshare.data.source`):
keys are matched as text, event values are rendered with
:func:`~safeshare.data.source.text_column`; the persons' columns are returned
unchanged.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from safeshare.data.engines.memory import read_frame
from safeshare.data.source import Format, TableSource, infer_format, text_column
from safeshare.errors import ConfigError, DataError
from safeshare.io import atomic_path, refuse_overwriting
from safeshare.resources import check_memory

__all__ = [
    "DEFAULT_PREFIX",
    "EventSpec",
    "FlattenStats",
    "OrphanPolicy",
    "flatten",
    "flatten_chain",
    "flatten_files",
    "flatten_frame",
    "flatten_many",
]

log = logging.getLogger(__name__)

OrphanPolicy = Literal["error", "drop"]
DEFAULT_PREFIX = "event"

IntArray = npt.NDArray[np.int64]

_SHOWN_COLUMNS = 20

#: Memory of one added cell (an object pointer in the output block, its slot index, the
#: gather's temporary, the writer's copy of its text): an upper bound, docs/longitudinal.md.
BYTES_PER_CELL = 32
#: Memory of one added column (its name in the column index, the CSV writer's state).
BYTES_PER_COLUMN = 2048
#: What the Parquet writer adds per column (an Arrow array and column-chunk metadata each).
PARQUET_BYTES_PER_COLUMN = 16384


def _one_line(value: object) -> str:
    return str(value).replace("\r", "\\r").replace("\n", "\\n")


def _count(n: int, one: str, many: str) -> str:
    """``"1 event"`` / ``"2 events"``."""
    return f"{n} {one if n == 1 else many}"


def _shown(columns: Sequence[object]) -> str:
    """The first few column names, for an error message."""
    names = [_one_line(c) for c in columns]
    if not names:
        return "no columns"
    more = f", ... ({len(names)} in all)" if len(names) > _SHOWN_COLUMNS else ""
    return ", ".join(names[:_SHOWN_COLUMNS]) + more


def _names(value: str | Sequence[str] | None, what: str) -> tuple[str, ...] | None:
    """A tuple of column names; a bare string is one name (not a sequence of letters)."""
    if value is None:
        return None
    items = (value,) if isinstance(value, str) else tuple(value)
    for item in items:
        if not isinstance(item, str):
            raise ConfigError(f"{what}: column names must be text, got {item!r}")
    if len(set(items)) != len(items):
        dup = next(c for c in items if items.count(c) > 1)
        raise ConfigError(f"{what}: column {_one_line(dup)!r} is listed twice")
    return items


@dataclass(frozen=True)
class EventSpec:
    """How to flatten one events table onto a persons table (thesis §4.2).

    Parameters
    ----------
    key: the persons table's key column (one row per value).
    n_events: how many events per person to keep (the thesis' ``k``; §6.1.3 used 3).
    event_key: the events' foreign-key column; defaults to ``key``.
    order_by: event columns defining the order of a person's events; ties
        (and all events when empty) keep their original row order.
    columns: event columns to stack; default all but ``event_key``.
    prefix: output names are ``{prefix}{i}_{column}``; default ``"event"``.
    descending: most recent (largest) first. Ties still keep row order.
    order_numeric: ``True`` to compare every order-by column as a number, or
        the names of the order-by columns to compare numerically.
    order_dates: a ``strptime`` format to compare every (non-numeric)
        order-by column as a date, or a mapping ``column -> format``. ISO 8601
        dates already sort correctly as text.
    missing: the padding value for persons with fewer than ``n_events`` events.
    on_orphans: events whose key matches no person (or is empty): ``"error"``
        (default: a dangling foreign key is usually a sign of the wrong key
        column or of mismatched extracts) or ``"drop"``.

    Raises
    ------
    ConfigError
        When a parameter is impossible (``n_events < 1``, a column listed
        twice, ``descending`` without ``order_by``, ...).
    """

    key: str
    n_events: int
    event_key: str | None = None
    order_by: Sequence[str] = ()
    columns: Sequence[str] | None = None
    prefix: str | None = None
    descending: bool = False
    order_numeric: bool | Sequence[str] = False
    order_dates: str | Mapping[str, str] | None = None
    missing: str = ""
    on_orphans: OrphanPolicy = "error"

    def __post_init__(self) -> None:
        if not isinstance(self.key, str) or not self.key:
            raise ConfigError(f"key must be a column name, got {self.key!r}")
        if self.event_key is not None and (not isinstance(self.event_key, str) or not self.event_key):
            raise ConfigError(f"event_key must be a column name, got {self.event_key!r}")
        n = self.n_events
        if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1:
            raise ConfigError(f"n_events must be a positive integer (events kept per person), got {n!r}")
        object.__setattr__(self, "n_events", int(n))
        order_by = _names(self.order_by, "order_by") or ()
        object.__setattr__(self, "order_by", order_by)
        object.__setattr__(self, "columns", _names(self.columns, "columns"))
        if self.columns is not None and not self.columns:
            raise ConfigError("columns is empty: give at least one event column to stack")
        if self.prefix is not None and not isinstance(self.prefix, str):
            raise ConfigError(f"prefix must be text, got {self.prefix!r}")
        if not isinstance(self.missing, str):
            raise ConfigError(f"missing (the padding value) must be text, got {self.missing!r}")
        if self.on_orphans not in ("error", "drop"):
            raise ConfigError(f"on_orphans must be 'error' or 'drop', got {self.on_orphans!r}")
        if self.descending and not order_by:
            raise ConfigError("descending needs order_by columns (events are otherwise kept in row order)")
        if not isinstance(self.order_numeric, bool):
            numeric = _names(self.order_numeric, "order_numeric") or ()
            object.__setattr__(self, "order_numeric", numeric)
            for column in numeric:
                if column not in order_by:
                    raise ConfigError(f"order_numeric names {column!r}, which is not an order_by column")
        if isinstance(self.order_dates, Mapping):
            dates = dict(self.order_dates)
            object.__setattr__(self, "order_dates", dates)
            for column, fmt in dates.items():
                if column not in order_by:
                    raise ConfigError(f"order_dates names {column!r}, which is not an order_by column")
                if not isinstance(fmt, str) or not fmt:
                    raise ConfigError(f"order_dates: the date format of {column!r} must be text, got {fmt!r}")
                if self.is_numeric(column):
                    raise ConfigError(f"order-by column {column!r} cannot be both numeric and a date")
        elif self.order_dates is not None:
            if not isinstance(self.order_dates, str) or not self.order_dates:
                raise ConfigError(f"order_dates must be a strptime format, got {self.order_dates!r}")
            if self.order_numeric is True:
                raise ConfigError("order_numeric and order_dates cannot both apply to every order-by column")

    @property
    def foreign_key(self) -> str:
        """The events' key column."""
        return self.event_key if self.event_key is not None else self.key

    @property
    def column_prefix(self) -> str:
        return DEFAULT_PREFIX if self.prefix is None else self.prefix

    def is_numeric(self, column: str) -> bool:
        """Whether order-by ``column`` is compared as a number."""
        if isinstance(self.order_numeric, bool):
            return self.order_numeric
        return column in self.order_numeric

    def order_mode(self, column: str) -> tuple[Literal["text", "numeric", "date"], str]:
        """How ``column`` is compared: ``("text", "")``, ``("numeric", "")`` or ``("date", format)``."""
        if self.is_numeric(column):
            return "numeric", ""
        if isinstance(self.order_dates, Mapping):
            if column in self.order_dates:
                return "date", self.order_dates[column]
        elif isinstance(self.order_dates, str):
            return "date", self.order_dates
        return "text", ""

    def stacked_columns(self, event_columns: Sequence[str]) -> tuple[str, ...]:
        """The event columns to stack, given the events table's columns."""
        if self.columns is not None:
            return tuple(self.columns)
        return tuple(c for c in event_columns if c != self.foreign_key)

    def output_names(self, event_columns: Sequence[str]) -> list[str]:
        """The added column names, event 1's columns first, then event 2's, ..."""
        stacked = self.stacked_columns(event_columns)
        prefix = self.column_prefix
        return [f"{prefix}{i}_{c}" for i in range(1, self.n_events + 1) for c in stacked]


@dataclass(frozen=True)
class FlattenStats:
    """What a flattening did, for the CLI's summary line.

    Attributes
    ----------
    persons: rows of the persons table (and of the output).
    events: rows of the events table.
    events_kept: events placed in the output.
    orphans_dropped: events matching no person, dropped (``on_orphans="drop"``).
    persons_without_events: persons padded entirely with the missing value.
    persons_truncated: persons with more than ``n_events`` events (their later
        events are not in the output).
    max_events: the most events of any person (the thesis' ``k`` for a lossless
        flattening).
    columns_added: the stacked column names, in output order.
    """

    persons: int
    events: int
    events_kept: int
    orphans_dropped: int
    persons_without_events: int
    persons_truncated: int
    max_events: int
    columns_added: tuple[str, ...]


def _text(series: pd.Series) -> pd.Series:
    """``series`` as text with missing values as ``""`` (see :func:`text_column`)."""
    if pd.api.types.is_string_dtype(series.dtype):
        return series.fillna("")
    return text_column(series)


def _check_columns(frame: pd.DataFrame, label: str) -> None:
    if len(set(frame.columns)) != len(frame.columns):
        dup = next(c for c in frame.columns if list(frame.columns).count(c) > 1)
        raise DataError(f"{label}: column {_one_line(dup)!r} appears twice")


def _require(frame: pd.DataFrame, column: str, what: str, label: str) -> None:
    if column not in frame.columns:
        raise DataError(
            f"unknown {what} {_one_line(column)!r} in {label}; it has columns {_shown(list(frame.columns))}"
        )


def _refuse_clashes(persons: pd.DataFrame, spec: EventSpec, stacked: Sequence[str], label: str) -> None:
    """Refuse a persons column named like an added one, ``{prefix}{i}_{column}`` (without listing
    the ``n_events * len(stacked)`` added names: they are counted before they are made)."""
    prefix = spec.column_prefix
    for name in persons.columns:
        text = str(name)
        if not text.startswith(prefix):
            continue
        for column in stacked:
            number = text[len(prefix) : -len(column) - 1]
            if (
                text.endswith("_" + column)
                and number.isdigit()
                and str(int(number)) == number
                and 1 <= int(number) <= spec.n_events
            ):
                raise DataError(
                    f"output column {_one_line(name)!r} already exists in {label}; "
                    f"choose another prefix than {spec.column_prefix!r}"
                )


def flatten_memory(n_persons: int, n_events: int, n_columns: int, fmt: Format | None = None) -> int:
    """Bytes a flattening of ``n_persons`` x ``n_events`` events of ``n_columns`` columns may take.

    :data:`BYTES_PER_CELL` for each added cell and :data:`BYTES_PER_COLUMN` for each added
    column, plus :data:`PARQUET_BYTES_PER_COLUMN` when written as ``fmt="parquet"``
    (measured upper bounds, docs/longitudinal.md "Limits"), on top of the inputs.
    """
    columns = n_events * n_columns
    per_column = BYTES_PER_COLUMN + (PARQUET_BYTES_PER_COLUMN if fmt == "parquet" else 0)
    return n_persons * columns * BYTES_PER_CELL + columns * per_column


def check_flatten_memory(
    n_persons: int | None,
    n_events: int,
    n_columns: int,
    max_events: int | None = None,
    fmt: Format | None = None,
) -> None:
    """Refuse (:class:`~safeshare.errors.ResourceError`) a flattening the memory cannot hold,
    before anything of its size is allocated. ``n_persons`` None: before the tables are read
    (the added columns alone must fit); ``max_events``, when known, goes in the hint."""
    columns = f"{n_events * n_columns:,} added columns"
    what = (
        f"flattening {n_events:,} events per person ({columns})"
        if n_persons is None
        else f"flattening {n_persons:,} persons x {n_events:,} events of {n_columns:,} column(s) ({columns})"
    )
    most = f"; no person has more than {max_events:,} events" if max_events is not None else ""
    check_memory(
        flatten_memory(n_persons or 0, n_events, n_columns, fmt),
        what,
        f"ask for fewer events per person (--events, n_events){most}",
    )


def _arrow_text(series: pd.Series) -> Any:
    """A text Series as one pyarrow ``large_string`` array (for hashing lookups)."""
    array = pa.array(series)
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    return array.cast(pa.large_string())


def _person_lookup(persons: pd.DataFrame, spec: EventSpec, label: str) -> tuple[pd.Series, IntArray]:
    """The persons' non-empty keys (text) with the row of each; raises on duplicate keys.

    A person with an empty key is kept (padded) but matches no event; empty
    keys are not duplicates of each other.
    """
    text = _text(persons[spec.key])
    rows = np.flatnonzero((text != "").to_numpy(dtype=bool)).astype(np.int64)
    keys = text.iloc[rows].reset_index(drop=True)
    duplicated = keys.duplicated(keep=False).to_numpy(dtype=bool)
    if duplicated.any():
        first_value = keys.iloc[int(np.flatnonzero(duplicated)[0])]
        at = rows[np.flatnonzero((keys == first_value).to_numpy(dtype=bool))]
        n_values = keys[duplicated].nunique()
        raise DataError(
            f"{label}: key column {_one_line(spec.key)!r} is not unique "
            f"({_count(n_values, 'duplicated value', 'duplicated values')}, "
            f"e.g. {_one_line(first_value)!r} in data rows {at[0] + 1} and {at[1] + 1}); "
            "the persons table needs one row per person"
        )
    return keys, rows


def _match(event_keys: pd.Series, person_keys: pd.Series, person_rows: IntArray) -> IntArray:
    """The persons row of every event, ``-1`` when its key is empty or unknown."""
    found = pc.index_in(_arrow_text(event_keys), value_set=_arrow_text(person_keys))
    index = np.asarray(pc.fill_null(found, -1).to_numpy(zero_copy_only=False), dtype=np.int64)
    if len(person_rows) == 0:
        return np.full(len(index), -1, dtype=np.int64)
    position: IntArray = np.where(index >= 0, person_rows[np.maximum(index, 0)], -1)
    position[(event_keys == "").to_numpy(dtype=bool)] = -1
    return position


def _numbers(text: pd.Series, empty: npt.NDArray[np.bool_]) -> pd.Series:
    """``text`` as floats, NaN where empty or not a number (pyarrow's fast cast, pandas' on failure)."""
    array = _arrow_text(text)
    try:
        array = pc.if_else(pa.array(empty), pa.scalar(None, array.type), array)
        floats = np.asarray(pc.cast(array, pa.float64()).to_numpy(zero_copy_only=False), dtype=np.float64)
        return pd.Series(floats, index=text.index)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return pd.to_numeric(text.where(~empty), errors="coerce")


def _order_codes(
    values: pd.Series, column: str, spec: EventSpec, label: str, rows: IntArray
) -> tuple[IntArray, int]:
    """Integer sort keys of ``values`` in ``[0, size)``: missing last, reversed when descending."""
    mode, fmt = spec.order_mode(column)
    text = _text(values)
    empty = (text == "").to_numpy(dtype=bool)
    comparable: pd.Series
    if mode == "numeric":
        comparable = _numbers(text, empty)
        what = "a value that is not a number"
    elif mode == "date":
        try:
            comparable = pd.to_datetime(text.where(~empty), format=fmt, errors="coerce")
        except (ValueError, TypeError) as exc:
            raise ConfigError(f"order_dates: bad date format {fmt!r} for {column!r}: {exc}") from None
        what = f"a value that does not match the date format {fmt!r}"
    else:
        comparable = text.where(~empty)
    if mode != "text":
        bad = comparable.isna().to_numpy(dtype=bool) & ~empty
        if bad.any():
            at = int(np.flatnonzero(bad)[0])
            raise DataError(
                f"{label}: order-by column {_one_line(column)!r} has {what}: "
                f"{_one_line(text.iloc[at])!r} in data row {rows[at] + 1}"
            )
    codes, uniques = pd.factorize(comparable, sort=True, use_na_sentinel=True)
    out = np.asarray(codes, dtype=np.int64)
    n = len(uniques)
    if spec.descending:
        return np.where(out >= 0, n - 1 - out, n), n + 1
    return np.where(out >= 0, out, n), n + 1


def _stable_order(keys: Sequence[IntArray], sizes: Sequence[int]) -> IntArray:
    """The stable sort order of rows by ``keys`` (most significant first); ties keep row order.

    Keys with values in ``[0, size)`` are packed into one int64 (mixed radix)
    when they fit, which sorts several times faster than ``np.lexsort``.
    """
    span = 1
    for size in sizes:
        span *= max(size, 1)
    if span < 2**62:
        packed = np.zeros(len(keys[0]), dtype=np.int64)
        for key, size in zip(keys, sizes, strict=True):
            packed = packed * max(size, 1) + key
        return np.argsort(packed, kind="stable").astype(np.int64)
    positions = np.arange(len(keys[0]), dtype=np.int64)
    return np.lexsort((positions, *reversed(keys))).astype(np.int64)


def flatten_frame(
    persons: pd.DataFrame,
    events: pd.DataFrame,
    spec: EventSpec,
    *,
    persons_label: str = "the persons table",
    events_label: str = "the events table",
    output_format: Format | None = None,
) -> tuple[pd.DataFrame, FlattenStats]:
    """Flatten ``events`` onto ``persons`` as ``spec`` says; also return what was done.

    The workhorse of :func:`flatten` (thesis §4.2). Vectorized, no Python loop
    over persons or events: keys are matched with a hash lookup; events are
    sorted once, stably, by (person, order keys) packed into one integer, so
    ties keep row order; a person's rank is a cumcount over the sorted
    persons; the pivot is one scatter of the kept events into a persons x
    ``n_events`` array of event rows (the padding value's row where a person
    has fewer) and one gather per stacked column into a single object block.
    1M events take one to two seconds. The memory the output needs is estimated
    first (:func:`check_flatten_memory`) and a flattening that cannot fit is
    refused with the figures (``n_events`` of 100 million for 3 persons once
    ran for minutes and took 6 GB before failing).
    ``persons_label`` and ``events_label`` name the tables in error messages
    (:func:`flatten_files` passes the file names); ``output_format`` (``"parquet"``)
    counts its writer's memory in the estimate.
    """
    _check_columns(persons, persons_label)
    _check_columns(events, events_label)
    _require(persons, spec.key, "key column", persons_label)
    fk = spec.foreign_key
    _require(events, fk, "event key column", events_label)
    for column in spec.order_by:
        _require(events, column, "order-by column", events_label)
    stacked = spec.stacked_columns(list(events.columns))
    for column in stacked:
        _require(events, column, "event column", events_label)
    if not stacked:
        raise DataError(f"{events_label}: no event column to stack besides the key {_one_line(fk)!r}")
    _refuse_clashes(persons, spec, stacked, persons_label)

    person_keys, person_rows = _person_lookup(persons, spec, persons_label)
    n_persons = len(persons)
    event_keys = _text(events[fk])
    position = _match(event_keys, person_keys, person_rows)
    orphan = position < 0
    n_orphans = int(orphan.sum())
    if n_orphans and spec.on_orphans == "error":
        at = int(np.flatnonzero(orphan)[0])
        value = event_keys.iloc[at]
        shown = "an empty key" if value == "" else f"{_one_line(value)!r}"
        raise DataError(
            f"{events_label}: {_count(n_orphans, 'event references', 'events reference')} "
            f"no person of {persons_label} "
            f"(column {_one_line(fk)!r}), e.g. {shown} in data row {at + 1}; "
            "check the key columns, or drop them with --orphans drop (on_orphans='drop')"
        )
    if n_orphans:
        log.info("%s: dropped %d events that reference no person", events_label, n_orphans)

    rows = np.flatnonzero(~orphan).astype(np.int64)
    keys = [position[rows]]
    sizes = [n_persons]
    for column in spec.order_by:
        values = events[column] if n_orphans == 0 else events[column].iloc[rows]
        codes, size = _order_codes(values, column, spec, events_label, rows)
        keys.append(codes)
        sizes.append(size)
    order = _stable_order(keys, sizes)
    person = keys[0][order]
    rows = rows[order]

    n = len(rows)
    if n:
        starts = np.flatnonzero(np.r_[True, person[1:] != person[:-1]])
        counts = np.diff(np.r_[starts, n])
        rank = np.arange(n, dtype=np.int64) - np.repeat(starts, counts)
    else:
        counts = np.zeros(0, dtype=np.int64)
        rank = np.zeros(0, dtype=np.int64)
    max_events = int(counts.max()) if len(counts) else 0
    check_flatten_memory(n_persons, spec.n_events, len(stacked), max_events, output_format)
    keep = rank < spec.n_events
    # slots[p, i]: the events row of person p's (i+1)-th event; len(events) points at the padding value.
    n_rows = len(events)
    slots = np.full((n_persons, spec.n_events), n_rows, dtype=np.int64)
    slots[person[keep], rank[keep]] = rows[keep]
    # One object block for every added column (event i's columns at i * S + j): a column of a
    # block costs its name, not a pandas column of its own (7.5 kB and 170 us each as str columns).
    block = np.empty((n_persons, spec.n_events, len(stacked)), dtype=object)
    for j, column in enumerate(stacked):
        texts = np.empty(n_rows + 1, dtype=object)
        texts[:n_rows] = _text(events[column]).to_numpy(dtype=object)
        texts[n_rows] = spec.missing
        block[:, :, j] = texts[slots]
    del slots
    names = spec.output_names(list(events.columns))
    flat = block.reshape(n_persons, len(names))
    new = pd.DataFrame(flat, columns=names, index=pd.RangeIndex(n_persons), dtype=object, copy=False)
    result = pd.concat([persons.reset_index(drop=True), new], axis=1)
    result.index = persons.index

    stats = FlattenStats(
        persons=n_persons,
        events=len(events),
        events_kept=int(keep.sum()),
        orphans_dropped=n_orphans,
        persons_without_events=n_persons - len(counts),
        persons_truncated=int((counts > spec.n_events).sum()),
        max_events=max_events,
        columns_added=tuple(names),
    )
    return result, stats


def flatten(
    persons: pd.DataFrame,
    events: pd.DataFrame,
    *,
    key: str,
    event_key: str | None = None,
    order_by: Sequence[str] = (),
    n_events: int,
    columns: Sequence[str] | None = None,
    prefix: str | None = None,
    descending: bool = False,
    order_numeric: bool | Sequence[str] = False,
    order_dates: str | Mapping[str, str] | None = None,
    missing: str = "",
    on_orphans: OrphanPolicy = "error",
) -> pd.DataFrame:
    """Join ``events`` onto ``persons``, stacking each person's first events horizontally (thesis §4.2).

    Returns the persons table (every row, in its order and with its index,
    every column unchanged) followed by ``{prefix}{i}_{column}`` for
    ``i = 1 .. n_events`` and each event column (event 1's columns first),
    padded with ``missing`` for persons with fewer events. The parameters are
    those of :class:`EventSpec`.

    Raises
    ------
    ConfigError
        An impossible parameter (e.g. ``n_events < 1``).
    DataError
        An unknown column (key, event key, order-by, stacked), duplicate
        person keys, events referencing no person (unless
        ``on_orphans="drop"``), an order-by value that is not a number or
        does not match the date format, an output column that already exists.
    """
    spec = EventSpec(
        key=key,
        n_events=n_events,
        event_key=event_key,
        order_by=order_by,
        columns=columns,
        prefix=prefix,
        descending=descending,
        order_numeric=order_numeric,
        order_dates=order_dates,
        missing=missing,
        on_orphans=on_orphans,
    )
    return flatten_frame(persons, events, spec)[0]


def _as_spec(spec: EventSpec | Mapping[str, Any], where: str) -> EventSpec:
    if isinstance(spec, EventSpec):
        return spec
    try:
        return EventSpec(**dict(spec))
    except TypeError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def flatten_many(
    persons: pd.DataFrame, steps: Sequence[tuple[pd.DataFrame, EventSpec | Mapping[str, Any]]]
) -> pd.DataFrame:
    """Join several event tables onto ``persons``, one after the other (thesis §4.2).

    ``steps`` is a list of ``(events, spec)`` with ``spec`` an :class:`EventSpec`
    or a mapping of its fields. Each table is flattened onto the result of the
    previous ones, so its columns come after theirs; give each a distinct
    ``prefix`` (e.g. ``"dx"`` and ``"proc"``). Every spec's ``key`` is a column of
    ``persons``.
    """
    result = persons
    for i, (events, raw) in enumerate(steps, start=1):
        spec = _as_spec(raw, f"event table {i}")
        result, _ = flatten_frame(result, events, spec, events_label=f"event table {i}")
    return result


def flatten_chain(
    tables: Sequence[pd.DataFrame], specs: Sequence[EventSpec | Mapping[str, Any]]
) -> pd.DataFrame:
    """Flatten a chain ``t0 <- t1 <- t2 <- ...`` of foreign keys, innermost first (thesis §4.2).

    ``tables[i + 1]`` references ``tables[i]`` as ``specs[i]`` says (its ``key``
    is a column of ``tables[i]``, its ``event_key`` a column of
    ``tables[i + 1]``). With three tables this is the thesis' recipe: first
    ``t(1,2)`` = ``t2`` joined onto ``t1``, then ``t(0,1,2)`` = ``t(1,2)`` joined
    onto ``t0``. The outer step's column names nest the prefixes, e.g.
    ``adm1_proc2_icd9_code`` (2nd procedure of the 1st admission).
    """
    if len(tables) < 2 or len(specs) != len(tables) - 1:
        raise ConfigError(
            f"flatten_chain needs n tables and n - 1 specs (n >= 2), got {len(tables)} and {len(specs)}"
        )
    result = tables[-1]
    for i in range(len(specs) - 1, -1, -1):
        spec = _as_spec(specs[i], f"spec {i + 1}")
        result, _ = flatten_frame(
            tables[i], result, spec, persons_label=f"table t{i}", events_label=f"table t{i + 1}"
        )
    return result


def flatten_files(
    persons: TableSource,
    events: TableSource,
    *,
    key: str,
    n_events: int,
    out: Path,
    event_key: str | None = None,
    order_by: Sequence[str] = (),
    columns: Sequence[str] | None = None,
    prefix: str | None = None,
    descending: bool = False,
    order_numeric: bool | Sequence[str] = False,
    order_dates: str | Mapping[str, str] | None = None,
    missing: str = "",
    on_orphans: OrphanPolicy = "error",
    fmt: Format | None = None,
    delimiter: str = ",",
    phase: Callable[[str], AbstractContextManager[None]] | None = None,
) -> FlattenStats:
    """Read two tables, flatten ``events`` onto ``persons`` and write the result atomically.

    The function behind ``safeshare flatten PERSONS EVENTS --key id --order-by date
    --events 3 --out flat.csv`` (thesis §4.2); the flattening parameters are those of
    :func:`flatten` / :class:`EventSpec` and are validated before any file is
    read. Both tables are read as text with
    :func:`~safeshare.data.engines.memory.read_frame`, and error messages name
    the files. ``fmt`` defaults to the format of ``out``'s extension
    (``.parquet`` / ``.pq``, otherwise CSV, written with ``delimiter``).
    Nothing is written when an error is raised, and an ``out`` that is one of the
    inputs (also through a link) is refused before anything is read
    (:func:`~safeshare.io.refuse_overwriting`); so is a flattening whose added
    columns cannot fit in memory (:func:`check_flatten_memory`, again with the
    persons counted once they are read). ``phase(name)``, when given, wraps each phase (the
    command line shows it on stderr, when it is a terminal). Returns what was done
    (:class:`FlattenStats`) for a summary line.
    """
    spec = EventSpec(
        key=key,
        n_events=n_events,
        event_key=event_key,
        order_by=order_by,
        columns=columns,
        prefix=prefix,
        descending=descending,
        order_numeric=order_numeric,
        order_dates=order_dates,
        missing=missing,
        on_orphans=on_orphans,
    )
    out = Path(out)
    fmt = infer_format(out) if fmt is None else fmt
    if fmt not in ("csv", "parquet"):
        raise ConfigError(f"unsupported output format {fmt!r} (csv or parquet)")
    if not isinstance(delimiter, str) or len(delimiter) != 1:
        raise ConfigError(f"the output delimiter must be one character, got {delimiter!r}")
    refuse_overwriting(out, [persons.path, events.path], "the output")
    # Before reading: the added columns alone (without a single person) must fit.
    check_flatten_memory(None, spec.n_events, len(spec.columns or ()) or 1, fmt=fmt)
    if phase is None:
        phase = lambda name: nullcontext()  # noqa: E731
    with phase(f"reading {Path(persons.path).name} and {Path(events.path).name}"):
        persons_frame = read_frame(persons)
        events_frame = read_frame(events)
    shape = f"{len(persons_frame):,} persons x {spec.n_events:,} events"
    with phase(f"flattening {shape}"):
        result, stats = flatten_frame(
            persons_frame,
            events_frame,
            spec,
            persons_label=str(persons.path),
            events_label=str(events.path),
            output_format=fmt,
        )
    del persons_frame, events_frame
    writing = f"writing {out.name} ({result.shape[0]:,} rows, {result.shape[1]:,} columns)"
    with phase(writing), atomic_path(out) as tmp:
        if fmt == "parquet":
            result.to_parquet(tmp, index=False)
        else:
            result.to_csv(tmp, index=False, sep=delimiter)
    return stats
