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
  pandas or DuckDB rename them to ``age.1`` / ``age_1``.
"""

from __future__ import annotations

import contextlib
import csv
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Literal

import numpy as np
import pandas as pd

from safeshare.errors import DataError
from safeshare.missing import missing_texts

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
    for name in names:
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
    text: dict[str, Any] = {"encoding": source.encoding, "newline": ""}
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
            handle = stack.enter_context(open(source.path, encoding=source.encoding, newline=""))
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
