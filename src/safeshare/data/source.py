"""Where the input data comes from and how to read it.

Values are read as text, exactly as written: nothing is converted to numbers
or to NaN behind the user's back ("NA" may be Namibia). Declared missing-value
tokens (e.g. ``?``) are normalized to the first token so that a hierarchy can
cover them with one row. Surrounding whitespace is stripped (UCI Adult
separates values with ``", "``).

The *shape* of the input is checked before anything is computed on it, because
a wrong delimiter does not fail by itself: it yields one wide column, or rows
padded with empty values, and both would flow into a release unchanged. So:

* a CSV record whose field count differs from the header's (or from
  ``names``) is bad input, naming the physical line (:func:`check_field_counts`),
  unless the source opts in with ``ragged="pad"`` (short records are then
  padded with empty values; long records are always an error);
* duplicate column names, also equal after case-folding and stripping, are
  bad input (:func:`check_unique_names`), checked on the *raw* header, before
  pandas or DuckDB rename them to ``age.1`` / ``age_1``; so is an empty name
  (pandas called it ``Unnamed: 2``, DuckDB ``column2``, and the two engines
  released different files);
* a CSV line longer than :data:`MAX_LINE_BYTES` is bad input naming the line and
  its size, never quoting it (:func:`check_line_sizes`; DuckDB's own error quoted
  the record);
* a CSV that reads as one column while its first lines hold another delimiter the
  same number of times is bad input with the delimiter to set
  (:func:`check_delimiter`);
* a Parquet column of a type that has no text (binary, lists, structs, maps) is bad
  input naming the column and its type (:func:`check_parquet_types`);
* a UTF-8 byte-order mark is not part of the first column's name (pandas and DuckDB
  drop it from the data; the raw header read here drops it too).

Every engine calls the same checks, so the memory, DuckDB and Spark engines give
the same release or the same one-line refusal (issue 30, item 16).
"""

from __future__ import annotations

import contextlib
import csv
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Literal

from safeshare.errors import DataError
from safeshare.missing import missing_texts

#: The longest CSV line (bytes) an input may hold: DuckDB's default ``max_line_size``, the
#: same limit for every engine (:func:`check_line_sizes`).
MAX_LINE_BYTES = 2_000_000

# the csv module refuses fields above 128 KiB by default: the raw header and the exact scans
# must read every line the engines read
csv.field_size_limit(max(csv.field_size_limit(), MAX_LINE_BYTES))

#: Delimiters a single-column CSV is sniffed for (:func:`check_delimiter`).
SNIFFED_DELIMITERS = (";", "\t", "|", ",")
if TYPE_CHECKING:  # numpy and pandas are imported by the functions that use them (start-up)
    import pandas as pd

Format = Literal["csv", "parquet"]
Ragged = Literal["error", "pad"]
RAGGED = ("error", "pad")


def infer_format(path: Path) -> Format:
    """``parquet`` for ``*.parquet``/``*.pq``, otherwise ``csv`` (also for ``.gz`` CSVs)."""
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and suffixes[-1] in (".parquet", ".pq"):
        return "parquet"
    return "csv"


@dataclass(frozen=True)
class TableSource:
    """A CSV or Parquet file and the options to read it.

    Parameters
    ----------
    path: the file.
    format: ``csv`` or ``parquet``; inferred from the extension when ``None``.
    delimiter: CSV field separator.
    header: whether the first (non-skipped) CSV line holds column names.
    names: column names; required when ``header`` is false, otherwise they
        replace the header's names.
    missing: tokens meaning "missing" (e.g. ``["?"]``); normalized to the first.
    skip_rows: lines to skip at the top of a CSV (e.g. 1 for ``adult.test``).
    encoding: text encoding of a CSV.
    ragged: ``error`` (default): a CSV record with a field count other than the
        header's (or the names') is bad input; ``pad``: short records are
        padded with empty values (records with too many fields stay an error).
    table: a Spark SQL table name (``input: {table: db.claims}``) read by the spark
        engine only; ``path`` is then the name, for messages, and the columns are
        typed as in a Parquet file.
    """

    path: Path
    format: Format | None = None
    delimiter: str = ","
    header: bool = True
    names: tuple[str, ...] | None = None
    missing: tuple[str, ...] = ()
    skip_rows: int = 0
    encoding: str = "utf-8"
    ragged: Ragged = "error"
    table: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "path", Path(self.path))
        if self.table is not None:
            object.__setattr__(self, "format", "parquet")
        if self.format is None:
            object.__setattr__(self, "format", infer_format(self.path))
        if self.format not in ("csv", "parquet"):
            raise DataError(f"{self.path}: unsupported format {self.format!r} (csv or parquet)")
        if not self.header and not self.names and self.format == "csv":
            raise DataError(f"{self.path}: a CSV without header needs 'names'")
        if len(self.delimiter) != 1:
            raise DataError(f"{self.path}: the delimiter must be one character, got {self.delimiter!r}")
        if self.skip_rows < 0:
            raise DataError(f"{self.path}: skip_rows must be >= 0")
        if self.ragged not in RAGGED:
            raise DataError(f"{self.path}: ragged must be 'error' or 'pad', got {self.ragged!r}")
        if self.names is not None:
            check_unique_names(self.names, f"{self.path}: names")

    @property
    def fmt(self) -> Format:
        assert self.format is not None
        return self.format

    def pandas_csv_options(self) -> dict[str, Any]:
        """The options with which every engine has pandas read this CSV: all text, nothing
        turned into NaN, blank lines skipped, spaces after delimiters dropped."""
        return {
            "sep": self.delimiter,
            "skiprows": self.skip_rows,
            "dtype": str,
            "keep_default_na": False,
            "na_filter": False,
            "skipinitialspace": True,
            "encoding": self.encoding,
            "skip_blank_lines": True,
            "engine": "c",
        }

    def check_readable(self) -> None:
        if self.table is not None:
            raise DataError(f"input.table {self.table}: a Spark SQL table is read by --engine spark only")
        if not self.path.exists():
            raise DataError(f"cannot read {self.path}: no such file")
        if not self.path.is_file():
            raise DataError(f"cannot read {self.path}: not a file")


def check_unique_names(names: Sequence[str], where: str) -> None:
    """Raise :class:`DataError` for a name that occurs twice, also after stripping and case-folding.

    Run on the raw header: pandas and DuckDB rename a duplicate (``age.1``,
    ``age_1``), and a renamed copy has no role in the configuration, so it
    would otherwise be released as it is.
    """
    seen: dict[str, str] = {}
    for position, name in enumerate(names, 1):
        if not str(name).strip():
            raise DataError(f"{where}: column {position} has an empty name; every column needs its own name")
        key = str(name).strip().casefold()
        if key in seen:
            same = repr(seen[key]) if seen[key] == str(name) else f"{seen[key]!r} (also {str(name)!r})"
            raise DataError(f"{where}: duplicate column name {same}; every column needs its own name")
        seen[key] = str(name)


def expected_fields(source: TableSource) -> str:
    """Where the expected field count comes from, for messages."""
    return "the names'" if source.names else "the header's"


def ragged_message(source: TableSource, line: int, found: int, expected: int) -> str:
    """The one-line error for a record of ``found`` fields where ``expected`` were due."""
    hint = "check input.delimiter" + (", or set input.ragged: pad" if found < expected else " and quoting")
    return (
        f"{source.path} line {line}: {found} fields, expected {expected} ({expected_fields(source)}); {hint}"
    )


@contextlib.contextmanager
def open_text(source: TableSource) -> Iterator[IO[str]]:
    """The CSV as text, decompressed by extension as pandas does (gz, bz2, xz, zip), newlines kept."""
    import bz2
    import gzip
    import io
    import lzma
    import zipfile

    suffix = source.path.suffix.lower()
    # a UTF-8 byte-order mark is not text of the first line (pandas and DuckDB drop it too)
    utf8 = source.encoding.lower().replace("_", "-") in ("utf-8", "utf8")
    text: dict[str, Any] = {"encoding": "utf-8-sig" if utf8 else source.encoding, "newline": ""}
    with contextlib.ExitStack() as stack:
        handle: IO[str]
        if suffix == ".gz":
            handle = stack.enter_context(gzip.open(source.path, "rt", **text))
        elif suffix == ".bz2":
            handle = stack.enter_context(bz2.open(source.path, "rt", **text))
        elif suffix == ".xz":
            handle = stack.enter_context(lzma.open(source.path, "rt", **text))
        elif suffix == ".zip":
            archive = stack.enter_context(zipfile.ZipFile(source.path))
            members = archive.namelist()
            raw = stack.enter_context(archive.open(members[0])) if members else io.BytesIO()
            handle = stack.enter_context(io.TextIOWrapper(raw, **text))
        else:
            handle = stack.enter_context(open(source.path, **text))
        yield handle


def _records(source: TableSource) -> Iterator[tuple[int, list[str]]]:
    """``(first physical line, fields)`` of every non-blank record after ``skip_rows``.

    The :mod:`csv` module with pandas' reading rules (quote ``"``, doubled
    quotes, spaces after the delimiter skipped); blank lines and lines of
    spaces/tabs only are skipped, as pandas skips them.
    """
    with open_text(source) as handle:
        for _ in range(source.skip_rows):
            if not handle.readline():
                return
        reader = csv.reader(handle, delimiter=source.delimiter, quotechar='"', skipinitialspace=True)
        end = source.skip_rows
        for fields in reader:
            start, end = end + 1, source.skip_rows + reader.line_num
            if not fields or (len(fields) == 1 and not fields[0].strip(" \t")):
                continue
            yield start, fields


def raw_header(source: TableSource) -> list[str]:
    """The names on the header line, exactly as written (stripped), before any renaming."""
    try:
        for _, fields in _records(source):
            return [f.strip() for f in fields]
    except (csv.Error, UnicodeDecodeError, OSError, ValueError, EOFError) as exc:
        raise DataError(f"cannot read {source.path}: {exc}") from None
    raise DataError(f"{source.path}: the file is empty (no header, no records)")


def first_ragged_record(source: TableSource, expected: int) -> tuple[int, int] | None:
    """``(physical line, field count)`` of the first record without ``expected`` fields, or ``None``.

    The header line counts as a record. A full pass over the file: run it only
    to confirm and locate a suspected bad record (see :func:`check_field_counts`).
    """
    try:
        for line, fields in _records(source):
            if len(fields) != expected:
                return line, len(fields)
    except (csv.Error, UnicodeDecodeError, OSError, ValueError, EOFError):
        return None  # the reader itself reports unreadable files
    return None


def check_field_counts(source: TableSource, expected: int) -> None:
    """Raise :class:`DataError` naming the first record whose field count is not ``expected``.

    pandas pads short records silently, so their count is checked separately:
    first by pyarrow's CSV parser reading only the first column (multi-threaded,
    about a fifth of pandas' reading time on UCI Adult), and only when that
    flags something (or cannot parse the file) by the exact, slower scan of
    :func:`first_ragged_record`, whose verdict decides (pyarrow does not skip
    the space after a delimiter, so ``a, "x,y"`` is a false alarm there).
    """
    if _arrow_counts_ok(source, expected):
        return
    bad = first_ragged_record(source, expected)
    if bad is not None:
        raise DataError(ragged_message(source, bad[0], bad[1], expected))


def _arrow_counts_ok(source: TableSource, expected: int) -> bool:
    import pyarrow as pa
    import pyarrow.csv as pacsv

    names = [f"c{i}" for i in range(expected)]
    try:
        pacsv.read_csv(
            source.path,
            read_options=pacsv.ReadOptions(
                column_names=names, skip_rows=source.skip_rows, encoding=source.encoding
            ),
            parse_options=pacsv.ParseOptions(
                delimiter=source.delimiter,
                quote_char='"',
                double_quote=True,
                escape_char=False,
                newlines_in_values=True,
                ignore_empty_lines=True,
            ),
            convert_options=pacsv.ConvertOptions(include_columns=names[:1], column_types={"c0": pa.string()}),
        )
    except Exception:  # any failure: the exact scan decides
        return False
    return True


def _open_bytes(source: TableSource) -> IO[bytes]:
    """The CSV's bytes, decompressed by extension like :func:`open_text`."""
    import bz2
    import gzip
    import lzma

    suffix = source.path.suffix.lower()
    opener: Any = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}.get(suffix, open)
    handle: IO[bytes] = opener(source.path, "rb")
    return handle


def first_long_line(source: TableSource, limit: int = MAX_LINE_BYTES) -> tuple[int, int] | None:
    """``(physical line, bytes)`` of the first line longer than ``limit`` bytes (its line end not
    counted), or ``None``. One pass over the bytes in chunks (memory: a chunk); an uncompressed
    file no larger than ``limit`` is not read."""
    compressed = source.path.suffix.lower() in (".gz", ".bz2", ".xz", ".zip")
    if source.path.suffix.lower() == ".zip":
        return None  # read by pandas only; DuckDB refuses zip inputs itself
    if not compressed and source.path.stat().st_size <= limit:
        return None
    if not compressed and _every_window_has_a_line_end(source.path, limit):
        return None
    import numpy as np

    line, length = 1, 0
    chunk = 1 << 24
    with _open_bytes(source) as handle:
        while True:
            block = handle.read(chunk)
            if not block:
                break
            ends = np.flatnonzero(np.frombuffer(block, dtype=np.uint8) == 10)
            if ends.size == 0:
                length += len(block)
                if length > limit:
                    return line, _line_length(handle, length)
                continue
            first = length + int(ends[0])
            gaps = np.diff(ends) - 1
            if first > limit:
                return line, first
            if gaps.size and int(gaps.max()) > limit:
                at = int(np.flatnonzero(gaps > limit)[0])
                return line + at + 1, int(gaps[at])
            line += int(ends.size)
            length = len(block) - int(ends[-1]) - 1
            if length > limit:
                return line, _line_length(handle, length)
    return (line, length) if length > limit else None


def _every_window_has_a_line_end(path: Path, limit: int) -> bool:
    """Whether each of the file's consecutive windows of ``w = ceil(limit / 2)`` bytes (the last,
    shorter one aside) holds a line end: then no line is longer than ``limit`` bytes.

    A line of more than ``limit`` bytes is a run of ``n > limit >= 2w - 1`` bytes without
    ``\n`` from some offset ``p``, and holds the window ``[jw, jw + w)`` with ``jw`` the first
    multiple of ``w`` from ``p``: ``jw <= p + w - 1``, so ``jw + w <= p + 2w - 1 <= p + n``. So
    every window holding a line end rules such a line out, and the search for the first line end
    of each window reads a page or two of it, not the file (a memory map: 1 GB of CSV in a few
    milliseconds, against a second for the exact scan of :func:`first_long_line`, which runs
    only when a window has none)."""
    import mmap

    width = max(1, -(-limit // 2))
    try:
        with open(path, "rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as view:
            size = len(view)
            return all(
                view.find(b"\n", start, start + width) >= 0 for start in range(0, size - width + 1, width)
            )
    except (OSError, ValueError):  # not a regular file (a pipe, a FIFO): the exact scan decides
        return False


def _line_length(handle: IO[bytes], so_far: int) -> int:
    """The length of the line being read: ``so_far`` bytes plus the rest up to its end."""
    while True:
        block = handle.read(1 << 24)
        if not block:
            return so_far
        end = block.find(b"\n")
        if end >= 0:
            return so_far + end
        so_far += len(block)


def long_line_message(source: TableSource, line: int, size: int, limit: int = MAX_LINE_BYTES) -> str:
    """The one-line refusal of a line longer than ``limit`` (its content is never quoted)."""
    return (
        f"{source.path} line {line}: {size:,} bytes, longer than the {limit:,} bytes a line may hold "
        "(a wrong delimiter or quoting, or a value to drop or shorten before release)"
    )


def check_line_sizes(source: TableSource, limit: int = MAX_LINE_BYTES) -> None:
    """Raise :class:`DataError` naming the first CSV line longer than ``limit`` bytes."""
    found = first_long_line(source, limit)
    if found is not None:
        raise DataError(long_line_message(source, found[0], found[1], limit))


def sniffed_delimiter(source: TableSource, lines: int = 20) -> tuple[str, int] | None:
    """For a CSV that reads as one column: another delimiter of :data:`SNIFFED_DELIMITERS` that
    occurs the same number of times (at least once) on each of its first ``lines`` records, with
    the field count it would give; ``None`` when there is none (a true single-column file)."""
    try:
        records = []
        with open_text(source) as handle:
            for _ in range(source.skip_rows):
                handle.readline()
            for text in handle:
                if text.strip(" \t\r\n"):
                    records.append(text.rstrip("\r\n"))
                if len(records) >= lines:
                    break
    except (UnicodeDecodeError, OSError, ValueError, EOFError):
        return None
    if not records:
        return None
    for candidate in SNIFFED_DELIMITERS:
        if candidate == source.delimiter:
            continue
        counts = {
            len(next(csv.reader([r], delimiter=candidate, quotechar='"', skipinitialspace=True), [])) - 1
            for r in records
        }
        if len(counts) == 1 and (n := counts.pop()) >= 1:
            return candidate, n + 1
    return None


def check_delimiter(source: TableSource, n_columns: int) -> None:
    """Raise :class:`DataError` when a CSV reads as one column but its first lines are split the
    same way by another delimiter (``;``, tab, ``|``): read with the wrong one, the whole record
    would be one value. (The configuration's "reads as a single column" check saw only runs that
    name several columns; ``inspect``, ``risk``, ``hierarchy build`` and a configuration naming
    one column read the file as one column without a word.)"""
    if source.fmt != "csv" or n_columns != 1:
        return
    found = sniffed_delimiter(source)
    if found is not None:
        shown = "\\t" if found[0] == "\t" else found[0]
        raise DataError(
            f"{source.path} reads as a single column with delimiter {source.delimiter!r}, but its lines "
            f"hold {shown!r} the same number of times ({found[1]} columns): set input.delimiter: "
            f"{shown!r} (--delimiter {shown!r})"
        )


def _untextual(kind: Any) -> str | None:
    """How to name an Arrow type that has no text a release could hold (``None``: it has one)."""
    import pyarrow as pa

    checks = (
        (pa.types.is_binary, "binary"),
        (pa.types.is_large_binary, "binary"),
        (pa.types.is_fixed_size_binary, "fixed-size binary"),
        (pa.types.is_list, "list"),
        (pa.types.is_large_list, "list"),
        (pa.types.is_fixed_size_list, "list"),
        (pa.types.is_struct, "struct"),
        (pa.types.is_map, "map"),
        (pa.types.is_union, "union"),
    )
    for check, name in checks:
        if check(kind):
            return name
    if pa.types.is_dictionary(kind):
        return _untextual(kind.value_type)
    return None


def check_parquet_types(source: TableSource) -> None:
    """Raise :class:`DataError` naming the first Parquet column whose type has no text value
    (binary, list, struct, map, union): pandas rendered bytes as ``b'...'`` or failed to decode
    them, DuckDB as escapes or not at all, so the engines disagreed; drop or convert it first."""
    import pyarrow.parquet as pq

    try:
        schema = pq.read_schema(source.path)
    except Exception as exc:  # pyarrow raises its own error types
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise DataError(f"cannot read {source.path}: {first}") from None
    for field in schema:
        kind = _untextual(field.type)
        if kind is not None:
            raise DataError(
                f"{source.path}: column {field.name!r} has Parquet type {field.type} ({kind}), which has no "
                "text to release; drop it from the file or convert it to text first"
            )


def kept_type(kind: Any) -> bool:
    """Whether a column of Arrow type ``kind`` keeps its type in a Parquet release when it is
    released verbatim (a sensitive or insensitive column; issue 30, item 16): signed integers,
    32- and 64-bit floating-point numbers, booleans, dates and microsecond timestamps without a
    time zone, whose text (as every engine renders it, :func:`text_column`) reads back as the
    same value, and which the memory, DuckDB and Spark engines all read and write as that type.
    Everything else is text: generalized quasi-identifiers (labels), strings, pseudonyms and
    shifted dates, decimals, unsigned integers and other timestamps (Spark reads an unsigned
    64-bit integer as a decimal and writes every timestamp in microseconds)."""
    import pyarrow as pa

    return bool(
        pa.types.is_signed_integer(kind)
        or pa.types.is_float32(kind)
        or pa.types.is_float64(kind)
        or pa.types.is_boolean(kind)
        or pa.types.is_date32(kind)
        or (pa.types.is_timestamp(kind) and kind.tz is None and kind.unit == "us")
    )


def parquet_kept_types(source: TableSource) -> dict[str, Any]:
    """Column name (after ``names``) -> Arrow type, for the columns of a Parquet ``source`` that
    keep their type in a Parquet release (:func:`kept_type`)."""
    import pyarrow.parquet as pq

    schema = pq.read_schema(source.path)
    names = list(source.names) if source.names else [str(n).strip() for n in schema.names]
    return {name: field.type for name, field in zip(names, schema, strict=True) if kept_type(field.type)}


def typed_values(texts: pd.Series, kind: Any, missing_text: str) -> Any:
    """The Arrow array of type ``kind`` whose values the engine's ``texts`` render (the inverse of
    :func:`text_column` for a :func:`kept_type`); ``missing_text`` (the first missing token, or
    ``''``), is null."""
    import pyarrow as pa
    import pyarrow.compute as pc

    array = pa.array(texts.astype(object).to_numpy(), pa.string(), from_pandas=True)
    array = pc.if_else(pc.equal(array, missing_text), pa.scalar(None, pa.string()), array)
    return pc.cast(array, kind)


def parquet_names(source: TableSource) -> list[str]:
    """The column names of a Parquet file's schema, as stored (before any renaming)."""
    import pyarrow.parquet as pq

    try:
        return list(pq.read_schema(source.path).names)
    except Exception as exc:  # pyarrow raises its own error types
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise DataError(f"cannot read {source.path}: {first}") from None


def text_column(series: pd.Series) -> pd.Series:
    """Render a column as text the way the DuckDB engine does (``CAST(x AS VARCHAR)``).

    Integers as digits, floats with Python's shortest repr, booleans as
    ``true``/``false``, timestamps by :func:`timestamp_text`, missing as the
    empty string.
    """
    import pandas as pd

    if pd.api.types.is_datetime64_any_dtype(series) and not isinstance(series.dtype, pd.ArrowDtype):
        out = timestamp_text(series)
    elif pd.api.types.is_bool_dtype(series):
        out = series.map({True: "true", False: "false"})
    elif pd.api.types.is_integer_dtype(series):
        out = series.astype("Int64").astype("string")
    elif pd.api.types.is_float_dtype(series):
        out = series.map(lambda v: "" if pd.isna(v) else repr(float(v)))
    else:
        out = series.astype("string")
    return out.fillna("").astype(object).map(str)


_PER_SECOND = {"s": 1, "ms": 10**3, "us": 10**6, "ns": 10**9}


def timestamp_text(series: pd.Series) -> pd.Series:
    """Timestamps as DuckDB's ``CAST(x AS VARCHAR)`` writes each *value*, missing as ``<NA>``.

    ``YYYY-MM-DD HH:MM:SS``, then a point and the fraction of a second without its
    trailing zeros when it is not zero (``09:18:48.12``); a time-zone aware
    timestamp is the UTC time followed by ``+00`` (the DuckDB engine renders
    ``timezone('UTC', x)``, so neither depends on the machine's time zone). Each
    value's text depends on that value only: pandas' own rendering pads every value
    to the column's precision and drops ``00:00:00`` when every value is at
    midnight, so the text of a record would depend on the other records (and a
    Parquet timestamp column of dates was released by one engine and refused by
    the other's ``dates`` hierarchy).
    """
    import numpy as np
    import pandas as pd

    utc = getattr(series.dtype, "tz", None) is not None
    values = series.dt.tz_convert("UTC").dt.tz_localize(None) if utc else series
    stamps = values.to_numpy()
    unit, _ = np.datetime_data(stamps.dtype)
    per_second = _PER_SECOND.get(unit)
    if per_second is None:  # another unit (minutes, days): numpy's cast to seconds is exact
        stamps, unit, per_second = stamps.astype("datetime64[s]"), "s", 1
    missing = np.isnat(stamps)
    ticks = np.where(missing, 0, stamps.view(np.int64))
    seconds = np.floor_divide(ticks, per_second)
    fraction = ticks - seconds * per_second
    text = np.char.replace(np.datetime_as_string(seconds.astype("datetime64[s]"), unit="s"), "T", " ")
    if per_second > 1:
        digits = len(str(per_second)) - 1
        decimals = np.char.rstrip(np.char.zfill(fraction.astype(str), digits), "0")
        text = np.where(fraction > 0, np.char.add(np.char.add(text, "."), decimals), text)
    if utc:
        text = np.char.add(text, "+00")
    out = pd.Series(text.astype(object), index=series.index, name=series.name, dtype="string")
    return out.mask(missing)


def normalize_missing(frame: pd.DataFrame, missing: tuple[str, ...]) -> pd.DataFrame:
    """Replace every declared missing token (and the empty string) by the first token
    (:func:`safeshare.missing.missing_texts`)."""
    if not missing:
        return frame
    canonical = missing[0]
    tokens = missing_texts(missing)
    out: pd.DataFrame = frame.apply(lambda col: col.where(~col.isin(tokens), canonical))
    return out
