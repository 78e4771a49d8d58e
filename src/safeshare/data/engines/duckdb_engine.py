"""The DuckDB engine: files larger than memory, read in place, and SQL sources.

Same contract as :class:`~safeshare.data.engines.memory.MemoryEngine`, down to
the text of every value, but nothing is ever loaded into pandas whole: the two
raw-row steps are SQL statements that DuckDB streams through with bounded
memory (``memory_limit``, spilling to ``temp_directory``,
``preserve_insertion_order=false``).

SQL strategy
------------
**Scan.** Every statement reads the input through one scan:

* CSV (also gzip) with ``read_csv`` and nothing left to sniffing: every
  column ``VARCHAR`` (named ``c0 .. cN``, aliased afterwards),
  ``header=false`` with ``skip`` covering the skipped lines and the header
  line, ``quote='"'``, ``escape='"'``, the source's delimiter and encoding.
  Column names and count come from the first line, read by pandas with the
  memory engine's own options, so both engines name columns identically.
  Column names are read from the raw header line (duplicates refused before
  DuckDB or pandas rename them). A record whose field count is not the
  header's is an error (``null_padding=false``); DuckDB's error is then
  replaced by the exact line of :func:`safeshare.data.source.first_ragged_record`.
  With ``ragged: pad`` (or when that scan finds no bad record: DuckDB also
  refuses lines of spaces/tabs only, which pandas skips as blank)
  ``null_padding=true`` pads short rows as pandas does; ``nullstr`` is a
  sentinel so that only *padded* fields are NULL, which lets the scan drop
  lines of spaces/tabs only (DuckDB skips empty lines itself).
* Parquet with ``read_parquet``, columns in their own types.
* A SQL source (:meth:`DuckDBEngine.from_sql`): the query or table, typed.

**Keys and text.** Each column has a *key*, what it is grouped and joined on
(its raw value, or its text for types whose equality is not equality of text:
``0.0 = -0.0`` for doubles), and three normalization steps from the key to the
memory engine's text, one projection level each (levels, not one nested
expression, so that DuckDB computes each step once):

1. text: CSV ``COALESCE(x, '')`` (plus pandas' ``skipinitialspace`` reading
   of ``  "quoted"`` fields); typed columns by type, as
   :func:`safeshare.data.source.text_column`: integers as digits, ``DOUBLE`` as
   Python's shortest ``repr`` (DuckDB's ``CAST(x AS VARCHAR)`` prints the same
   digits: ``1e-05``, ``1e+16``, ``0.1``; checked on 400k random doubles),
   ``NaN`` as missing, ``FLOAT`` widened to ``DOUBLE`` first (as
   ``repr(float(v))``), booleans ``true``/``false``, NULL ``''``;
2. strip every character for which ``str.isspace()`` holds (pandas'
   ``str.strip``), with fast paths (:func:`strip_expression`; DuckDB's
   ``trim(x, chars)`` costs ~1.5 us a value); skipped for numeric, boolean and
   date types;
3. missing tokens and ``''`` -> the first token.

This per-value work is costly (~0.1 us a value), so it is done on *distinct*
keys wherever possible.

**grouped_counts**: one pass over every record, ``GROUP BY`` the keys (typed,
cheap to hash) into a small temporary table of distinct key tuples with their
counts; then the normalization of those tuples only, and ``SUM`` of the counts
``GROUP BY`` the text. ``ORDER BY ALL`` makes the frequency table (hence every
float sum computed on it) reproducible. The distinct-key table is kept for
:meth:`~DuckDBEngine.write_release`. After :meth:`~DuckDBEngine.expect_release`, when the
release will be written grouped (below), that one pass groups by the keys of every released
column, and the grouped release's distinct rows come from that table: the input is read
once for the frequency table and the release (10 million records: 0.5 s less). A CSV input
without a single quote is grouped on its lines first, each distinct line split once
(:meth:`DuckDBEngine._distinct_lines`; the same distinct records, 2.1 s instead of 5.3 s).

**write_release** is one ``COPY (SELECT ...) TO <tmp>`` statement. Each
quasi-identifier is ``LEFT JOIN``-ed on its key to a small ``key -> (label,
code)`` table, built from its distinct keys (their text looked up in the
plan's mapping, registered as an Arrow table; an unmapped value gives NULL as
``Series.map`` gives NaN). The suppressed classes are removed by an ``ANTI
JOIN`` on one BIGINT per record, the labels' codes in mixed radix (on the
labels themselves if that could overflow). Other columns are normalized per
record. Every join has a tiny build side, so the joins stream; the rows
are then sorted (``ORDER BY`` the released columns: a quasi-identifier by its
label's code, numbered in code point order of the labels, the others by text
in the binary collation, NULL first; consecutive quasi-identifiers on one BIGINT of
their codes in mixed radix, see :func:`_sort_keys`), which is the memory engine's order
(:func:`~safeshare.data.engines.memory.release_order`), and written in that
order (``preserve_insertion_order`` on for the ``COPY``); DuckDB's sort spills
to ``temp_directory`` past ``memory_limit``. When the records repeat (the first 2**18
hold at most half as many distinct released rows as records, by a HyperLogLog estimate:
:meth:`DuckDBEngine._few_distinct`), the records are first grouped on the keys of the
released columns, and only the distinct rows are labelled, sorted and then repeated for
their records (``unnest(range(n))``): the same rows in the same order, but a sort of the
distinct rows instead of every record (:func:`_grouped_rows`, into a temporary table on
every thread, then :func:`_repeated_rows` written on one thread, or for Parquet repeated and
written by pyarrow, :func:`write_repeated_parquet`, faster than DuckDB's writer; 10 million
resampled Adult records: 29,096 rows to sort). The labels are VARCHAR (an ENUM
column's Parquet statistics vary from run to run). The target is written through
:func:`safeshare.io.atomic_path`. For a CSV release each row is formatted in
SQL into one text column exactly as ``DataFrame.to_csv`` writes it (Python's
:mod:`csv` minimal quoting: a field is quoted when it holds the delimiter, the
quote or a line-terminator character; a record of one empty field is written
``""``) and DuckDB writes that column with quoting disabled, the header being
the column's name. (DuckDB's own CSV quoting differs: it quotes empty strings,
``#``, ``\\r``.)

Known differences with the memory engine:

* ``BLOB``, ``TIME``, ``INTERVAL`` and nested types: DuckDB's ``CAST`` text.
  (Timestamps agree: the memory engine renders each value as DuckDB's ``CAST``,
  :func:`safeshare.data.source.timestamp_text`; a time-zone aware one in UTC on both.)
* ``UBIGINT`` values above ``2**63-1``: digits here; the memory engine's
  ``astype("Int64")`` wraps them around (``2**64-1`` becomes ``-1``).
* CSV: errors where pandas reads something: mixed line endings (``\\n`` and
  ``\\r\\n`` in one file), a quoted field holding the delimiter after two or
  more spaces (``a,  "x,y"``), more names than fields (pandas pads the missing
  columns with ``''``). A line holding only a quoted blank value (``"  "``) is
  skipped here, kept by pandas (unquoted, both skip it). Paths with glob
  characters (``*?[``) are patterns to DuckDB.
"""

from __future__ import annotations

import codecs
import contextlib
import copy
import csv
import dataclasses
import functools
import io
import itertools
import math
import os
import re
import shutil
import tempfile
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import numpy.typing as npt
import pandas as pd
import psutil
import pyarrow as pa

from safeshare.data.engines.base import COUNT_COLUMN, Engine, MixedReleasePlan, ReleasePlan
from safeshare.data.identifiers.coarse import is_coarse
from safeshare.data.identifiers.treatment import IdentifierTreatment, UnplacedValue, located, missing_set
from safeshare.data.source import (
    TableSource,
    check_delimiter,
    check_line_sizes,
    check_parquet_types,
    check_unique_names,
    first_ragged_record,
    parquet_names,
    ragged_message,
    raw_header,
)
from safeshare.errors import DataError, InputError
from safeshare.io import atomic_path
from safeshare.resources import DUCKDB_MEMORY_MB, duckdb_memory_mb

#: Every character that ``str.strip()`` (hence pandas' ``Series.str.strip``) removes, i.e.
#: ``"".join(filter(str.isspace, map(chr, range(0x110000))))`` (checked by the tests).
WHITESPACE = (
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680"
    "\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)

#: ``nullstr`` of the CSV scan: a value no real file holds, so that only padded fields are NULL.
_NULL_SENTINEL = "\ue000safeshare-padded\ue001"

#: The delimiter of a CSV input's lines scan (:meth:`DuckDBEngine._distinct_lines`): U+0001, a
#: control character, so a line holding it is refused by that scan and the field scan reads it.
LINE_DELIMITER = "\x01"

#: Python codec name -> DuckDB ``read_csv`` encoding (the ones DuckDB has built in).
_ENCODINGS = {
    "utf-8": "utf-8",
    "ascii": "utf-8",
    "utf-8-sig": "utf-8",
    "iso8859-1": "latin-1",
    "utf-16": "utf-16",
}

_INTEGER_TYPES = {
    "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT",
    "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT", "UHUGEINT",
}  # fmt: skip

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_$]*(\.[A-Za-z_][A-Za-z0-9_$]*){0,2}$")

#: two or more spaces, then a quoted field: DuckDB reads a quoted field after one space itself
_SPACED_QUOTED = r'^  +"((?:[^"]|"")*)" *$'

_counter = itertools.count()

#: Optimizers that would reorder the release's joins or swap their build and probe sides.
_KEEP_JOINS_AS_WRITTEN = ("join_order", "build_side_probe_side")


def quote_identifier(name: str) -> str:
    """``name`` as a SQL identifier."""
    return '"' + name.replace('"', '""') + '"'


def quote_literal(text: str) -> str:
    """``text`` as a SQL string literal."""
    return "'" + text.replace("'", "''") + "'"


def text_expression(column_sql: str, duckdb_type: str) -> str:
    """SQL rendering a typed column as text like :func:`safeshare.data.source.text_column`.

    NULL becomes ``''``; the result is neither stripped nor missing-normalized.
    """
    t = duckdb_type.upper()
    c = column_sql
    if t == "BOOLEAN":
        return f"CASE WHEN {c} IS NULL THEN '' WHEN {c} THEN 'true' ELSE 'false' END"
    if t in ("DOUBLE", "FLOAT", "REAL"):
        d = f"CAST({c} AS DOUBLE)"
        return f"CASE WHEN {c} IS NULL OR isnan({d}) THEN '' ELSE CAST({d} AS VARCHAR) END"
    if t == "VARCHAR":
        return f"COALESCE({c}, '')"
    if t == "TIMESTAMP WITH TIME ZONE":  # UTC, not the session's time zone: the machine's
        return f"COALESCE(CAST(timezone('UTC', {c}) AS VARCHAR) || '+00', '')"
    return f"COALESCE(CAST({c} AS VARCHAR), '')"


def needs_strip(duckdb_type: str) -> bool:
    """Whether the text of a column of this type can have surrounding whitespace."""
    t = duckdb_type.upper()
    return not (
        t in _INTEGER_TYPES
        or t in ("BOOLEAN", "DOUBLE", "FLOAT", "REAL", "DATE")
        or t.startswith("DECIMAL")
        or t.startswith("TIMESTAMP")
    )


def _not_whitespace_ranges() -> list[tuple[int, int]]:
    """Code point ranges above 32 holding no whitespace character."""
    out, low = [], 33
    for cp in [*sorted(ord(c) for c in WHITESPACE if ord(c) > 32), 0x110000]:
        if cp > low:
            out.append((low, cp - 1))
        low = cp + 1
    return out


def strip_expression(x: str) -> str:
    """SQL for ``x.strip()`` (``x`` a column reference, not NULL), with fast paths.

    ``trim(x, <unicode whitespace>)`` costs about 1.5 us a value, far more
    than testing the first and last characters with ``ord``. So: ``x`` as is
    when both are printable ASCII; ``substr(x, 2)`` when only one leading space
    must go (", "-separated files); ``x`` again when neither is whitespace
    (comparisons on code point ranges: long ``IN`` lists become joins and
    constant lists slow the planner down); ``trim`` otherwise. A whitespace
    code point never combines with a neighbour into one character, so the
    tests are exact. ``ord('')`` is -1.
    """
    first, last, second = f"ord({x})", f"ord({x}[-1])", f"ord({x}[2])"

    def printable(o: str) -> str:
        return f"{o} BETWEEN 33 AND 126"

    def not_ws(o: str) -> str:
        return "(" + " OR ".join(f"{o} BETWEEN {a} AND {b}" for a, b in _not_whitespace_ranges()) + ")"

    return (
        f"CASE WHEN {printable(first)} AND {printable(last)} THEN {x} "
        f"WHEN {first} = 32 AND {printable(second)} AND {printable(last)} THEN substr({x}, 2) "
        f"WHEN {not_ws(first)} AND {not_ws(last)} THEN {x} "
        f"ELSE trim({x}, {quote_literal(WHITESPACE)}) END"
    )


def missing_expression(x: str, missing: Sequence[str]) -> str:
    """Missing tokens (and ``''``) -> the first token, as :func:`normalize_missing`."""
    tokens = ", ".join(quote_literal(t) for t in dict.fromkeys([*missing, ""]))
    return f"CASE WHEN {x} IN ({tokens}) THEN {quote_literal(missing[0])} ELSE {x} END"


def unquote_spaced(x: str) -> str:
    """Read ``  "a ""b"" "`` as pandas' ``skipinitialspace`` does: ``a "b"``.

    DuckDB reads a quoted field after one space, but after several it keeps
    the spaces and the quotes. The cheap ``contains`` test keeps the regular
    expression off ordinary values.

    Only after two or more spaces: a value read from a quoted field cannot be told from one
    read after spaces, so a quoted field whose text starts with one space and a quote (the
    text `` "a"``, which pandas writes quoted, its quotes doubled) is left as DuckDB read it,
    as pandas does (with two or more spaces there, the engines still differ:
    ``tests/test_engines.py``).
    """
    pattern = quote_literal(_SPACED_QUOTED)
    return (
        f"CASE WHEN contains({x}, '\"') AND regexp_matches({x}, {pattern}) "
        f"THEN replace(regexp_extract({x}, {pattern}, 1), '\"\"', '\"') ELSE {x} END"
    )


#: DuckDB types of a typed input (Parquet, SQL) that keep their type in a Parquet release when the
#: column is released verbatim: signed integers, DOUBLE and FLOAT, BOOLEAN, DATE, TIMESTAMP without time
#: zone in microseconds (the Arrow types of :func:`safeshare.data.source.kept_type`).
KEPT_TYPES = re.compile(r"(BIG|SMALL|TINY)?INT(EGER)?|DOUBLE|FLOAT|BOOLEAN|DATE|TIMESTAMP")


def one_line(exc: BaseException) -> str:
    """The useful part of a (multi-line) DuckDB or parser error, on one line."""
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    if not lines:
        return type(exc).__name__
    first = re.sub(r"^(Invalid Input|IO|Conversion|Binder|Parser|Invalid) Error: ", "", lines[0])
    if "state machine reached an invalid state" in first:
        return "the CSV parser failed: not RFC 4180 CSV with these options (e.g. mixed line endings)"
    detail = ""
    for ln in lines[1:]:
        if ln.startswith(("Original Line", "Possible", "LINE ", "^", "*")) or "=" in ln:
            continue
        detail = ln
        break
    text = f"{first}: {detail}" if detail and detail not in first else first
    return text if len(text) <= 300 else text[:297] + "..."


def csv_special_characters(delimiter: str) -> str:
    """Characters that make ``DataFrame.to_csv`` quote a field (Python's ``QUOTE_MINIMAL``)."""
    return "".join(dict.fromkeys(delimiter + '"' + os.linesep))


def csv_header(columns: Sequence[str], delimiter: str) -> str:
    """The header line ``DataFrame.to_csv`` writes (without the line terminator)."""
    buf = io.StringIO()
    csv.writer(buf, delimiter=delimiter, quotechar='"', lineterminator="\n").writerow(list(columns))
    return buf.getvalue()[:-1]


def csv_field(x: str, delimiter: str) -> str:
    """SQL formatting one text value (maybe NULL) as a minimally quoted CSV field."""
    special = " OR ".join(f"contains({x}, {quote_literal(ch)})" for ch in csv_special_characters(delimiter))
    quoted = "'\"' || replace(" + x + ", '\"', '\"\"') || '\"'"
    return f"CASE WHEN {x} IS NULL THEN '' WHEN {special} THEN {quoted} ELSE {x} END"


def _csv_text(x: str) -> str:
    return unquote_spaced(f"COALESCE({x}, '')")


def exact_key(duckdb_type: str) -> bool:
    """Whether DuckDB's equality of values of this type is equality of their text.

    Not for floating point (``0.0 = -0.0``, rendered differently) nor, e.g.,
    ``INTERVAL`` (``'1 month' = '30 days'``): those are grouped and joined on
    their text instead.
    """
    t = duckdb_type.upper()
    return t in _INTEGER_TYPES or t in ("VARCHAR", "BOOLEAN", "DATE", "TIMESTAMP") or t.startswith("DECIMAL")


SQL = Callable[[str], str]
"""SQL built around the SQL of a value."""


def _same(x: str) -> str:
    return x


def _coalesced(x: str) -> str:
    return f"COALESCE({x}, '')"


@dataclass(frozen=True)
class _Column:
    """One input column: its name, how the scan reads it, how it becomes text.

    ``key`` (SQL over the raw value) is what the column is grouped and joined
    on: the raw value itself when equal values always have equal text,
    otherwise the text. ``steps`` turn the key into the released text, one
    projection level each: text rendering, stripping, missing-token
    normalization.
    """

    name: str
    raw: str
    key: SQL
    steps: tuple[SQL, SQL, SQL]
    #: the DuckDB type a Parquet release keeps when the column is released verbatim
    #: (:data:`KEPT_TYPES`, as :func:`safeshare.data.source.kept_type`), else ``None``: text
    kept: str | None = None

    def key_sql(self) -> str:
        return self.key(self.raw)


def machine_defaults(total_bytes: int | None = None, cpus: int | None = None) -> tuple[str, int]:
    """DuckDB's memory limit and thread count when none is configured, from this machine
    (or from ``total_bytes`` of memory and ``cpus`` logical CPUs): a quarter of its memory,
    between 256 MB and 512 MB (:data:`safeshare.resources.DUCKDB_MEMORY_MB`, which says why;
    beyond the limit DuckDB spills to ``temp_directory``, so peak memory depends neither on the
    machine's load nor on the data's size), and one thread per CPU, at most 8."""
    memory_mb = duckdb_memory_mb(total_bytes)
    cpu_count = (psutil.cpu_count(logical=True) or 1) if cpus is None else cpus
    threads = max(1, min(8, cpu_count))
    return f"{memory_mb}MB", threads


#: bytes of memory limit a record the release's ``COPY`` is given (see :func:`release_memory_mb`)
RELEASE_BYTES_PER_RECORD = 24


def release_memory_mb(records: int, total_bytes: int | None = None) -> int:
    """The default memory limit, MB, for writing a release of ``records`` records.

    The release's ``COPY`` (joins, sort) needs pinned memory that grows with the records:
    at 5M rows 100 MB fails and 256 MB succeeds, at 100M rows 512 MB fails ("failed to
    pin block") and 2 GB succeeds (docs/benchmarks.md). So the default limit is raised to
    ``records x 24`` bytes, within the old cap: a quarter of the memory, at most 2 GB,
    and never below the :func:`machine_defaults` limit::

        max(default, min(records * 24 B, max(256 MB, min(2 GB, RAM / 4))))
    """
    total = int(psutil.virtual_memory().total) if total_bytes is None else total_bytes
    default_mb = int(machine_defaults(total, 1)[0].removesuffix("MB"))
    cap_mb = max(DUCKDB_MEMORY_MB[0], min(2048, total // 2**20 // 4))
    return max(default_mb, min(cap_mb, -(-records * RELEASE_BYTES_PER_RECORD // 10**6)))


#: Packed codes stay below this (a BIGINT, with room for the arithmetic)
_PACKED_LIMIT = 2**62


def _mixed_radix(codes: Sequence[tuple[str, int]]) -> tuple[list[int], str]:
    """``(weights, sql)``: the integer ``sum_j COALESCE(code_j, 0) * weight_j`` of codes
    ``code_j`` in ``1 .. radix_j - 1`` (NULL as 0) in mixed radix, the first most significant,
    so that the integers compare as the code tuples do. ``codes``: ``(SQL expression, radix)``
    pairs; the product of the radices must stay below :data:`_PACKED_LIMIT`."""
    weights = [1] * len(codes)
    for j in range(len(codes) - 2, -1, -1):
        weights[j] = weights[j + 1] * codes[j + 1][1]
    sql = " + ".join(f"COALESCE({expr}, 0) * {w}" for (expr, _), w in zip(codes, weights, strict=True))
    return weights, sql


def _sort_keys(out_idx: Sequence[int], qi_code: Mapping[int, tuple[str, int]]) -> list[str]:
    """The release's ``ORDER BY`` keys: the released columns left to right, a quasi-identifier
    by its label's code (``qi_code[i]``: its SQL expression, 1 .. radix - 1, NULL when
    unmapped, and the radix), another column by its text in the binary collation.

    Consecutive quasi-identifiers are packed into one BIGINT (:func:`_mixed_radix`): the same
    order as the codes one by one, NULL first, and a sort on one 8-byte key instead of one per
    column (the sort is most of the release's cost on big tables). A run is cut before its
    radices' product would reach :data:`_PACKED_LIMIT`.
    """
    keys: list[str] = []
    run: list[tuple[str, int]] = []

    def flush() -> None:
        if run:
            keys.append(f"({_mixed_radix(run)[1]})::BIGINT")
            run.clear()

    for i in out_idx:
        code = qi_code.get(i)
        if code is None:
            flush()
            keys.append(f'__src.__v{i} COLLATE "binary"')
            continue
        if math.prod(radix for _, radix in run) * code[1] >= _PACKED_LIMIT:
            flush()
        run.append(code)
    flush()
    return keys


class DuckDBEngine(Engine):
    """Reads CSV/Parquet in place (or a SQL relation) and writes releases with DuckDB.

    Parameters
    ----------
    source: the CSV (plain or gzip) or Parquet file to read.
    memory_limit: DuckDB's memory limit (e.g. ``"2GB"``); beyond it, operators spill.
        Default: :func:`machine_defaults`.
    threads: DuckDB worker threads. Default: :func:`machine_defaults`.
    temp_directory: where DuckDB spills; by default a private temporary
        directory, removed by :meth:`close`.

    See the module docstring for the SQL and for the (few, type-related)
    differences with the memory engine.
    """

    name = "duckdb"
    _finalizer: weakref.finalize[Any, Any] | None

    def __init__(
        self,
        source: TableSource,
        memory_limit: str | None = None,
        threads: int | None = None,
        temp_directory: str | Path | None = None,
        identifiers: IdentifierTreatment | None = None,
    ) -> None:
        default_memory, default_threads = machine_defaults()
        self._setup(str(source.path), source.missing)
        self._default_memory = memory_limit is None
        memory_limit = default_memory if memory_limit is None else memory_limit
        threads = default_threads if threads is None else threads
        self.source: TableSource | None = source
        self._owns_connection = True
        self._own_temp: Path | None = None
        if temp_directory is None:
            self._own_temp = Path(tempfile.mkdtemp(prefix="safeshare-duckdb-"))
            temp_directory = self._own_temp
        try:
            self.con = duckdb.connect(
                config={
                    "memory_limit": memory_limit,
                    "threads": int(threads),
                    "temp_directory": str(temp_directory),
                    "preserve_insertion_order": False,
                }
            )
        except duckdb.Error as exc:
            if self._own_temp is not None:
                shutil.rmtree(self._own_temp, ignore_errors=True)
            raise DataError(f"cannot configure DuckDB: {one_line(exc)}") from None
        self._finalizer = weakref.finalize(self, _cleanup, self.con, self._own_temp)
        try:
            source.check_readable()
            if source.fmt == "parquet":
                self._init_parquet(source)
            else:
                self._init_csv(source)
            if identifiers is not None:
                self._treat(identifiers)
        except BaseException:
            self.close()
            raise

    def _setup(self, label: str, missing: Sequence[str]) -> None:
        self.label = label
        self._default_memory = False  # True: no memory_limit given, write_release may raise it
        self._missing: tuple[str, ...] = tuple(missing)
        self._closed = False
        self._parallel = True
        self._pad = False
        self._n_fields = 0
        self._n_records: int | None = None
        self._finalizer = None
        self._columns: list[_Column] = []
        self._scan: Callable[[], str] = lambda: ""
        self._groups: tuple[frozenset[int], str] | None = None
        #: the columns of the release to come (expect_release), grouped on in the first pass
        self._release_idx: tuple[int, ...] = ()
        self._few: dict[str, bool] = {}  # _few_distinct's answers, by key expression
        #: a CSV input's scan of its lines, one column each (see _distinct_lines), and its field scan
        self._csv_lines: Callable[[], str] | None = None
        self._csv_fields: Callable[[], str] | None = None
        self._uid = f"{os.getpid()}_{next(_counter)}"
        self._registered: list[str] = []
        #: with an identifier treatment: the columns and scan as read, before it (see _treat)
        self._raw_columns: list[_Column] = []
        self._source_scan: Callable[[], str] = lambda: ""
        self._treated: dict[int, str] = {}  # column index -> SQL of its treated text over __t
        self._treatment_joins: list[str] = []
        self._treatment_reads: list[int] = []
        self._temp_tables: list[str] = []
        self._restore_optimizers: str | None = None
        #: the memory limit the release's COPY ran with, when it was raised above the connection's
        self._release_memory_limit: str | None = None

    def settings(self) -> dict[str, object]:
        """DuckDB's memory limit and threads as DuckDB reports them, and the limit the release was
        written with (``release_memory_limit``: raised for large releases, see
        :func:`release_memory_mb`; otherwise the connection's)."""
        sql = "SELECT current_setting('memory_limit'), current_setting('threads')"
        (row,) = self.con.execute(sql).fetchall()  # fetch all: an open result would block the connection
        limit = str(row[0])
        return {
            "memory_limit": limit,
            "release_memory_limit": self._release_memory_limit or limit,
            "threads": int(row[1]),
        }

    @classmethod
    def from_sql(
        cls,
        con: duckdb.DuckDBPyConnection,
        relation: str,
        missing: Sequence[str] = (),
        strip: bool = False,
        memory_limit: str | None = None,
        threads: int | None = None,
        temp_directory: str | Path | None = None,
        identifiers: IdentifierTreatment | None = None,
    ) -> DuckDBEngine:
        """An engine over a table/view name or a ``SELECT`` query of an open connection.

        Column types are rendered as text like Parquet columns and, like the
        values of a DataFrame given to :class:`MemoryEngine`, are not stripped
        of surrounding whitespace unless ``strip`` is true. The connection
        stays the caller's: :meth:`close` does not close it, its settings are
        changed only for the options given here, and the temporary objects
        the engine creates get unique names and are dropped by :meth:`close`
        (``preserve_insertion_order`` is switched on for the release's
        ``COPY`` and restored). The relation is re-read by the calls: it must
        not change between :meth:`grouped_counts` and :meth:`write_release`
        (if it does, the independent verification of the release fails).
        """
        self = cls.__new__(cls)
        text = relation.strip().rstrip(";").strip()
        is_name = bool(_IDENTIFIER.match(text)) and text.upper() not in ("SELECT", "WITH", "FROM", "VALUES")
        self._setup(f"table {text}" if is_name else "SQL query", missing)
        self.source = None
        self._owns_connection = False
        self._own_temp = None
        self.con = con
        if not text:
            raise DataError("empty SQL relation")
        relation_sql = text if is_name else f"({text})"
        try:
            for key, value in (("memory_limit", memory_limit), ("threads", threads)):
                if value is not None:
                    con.execute(f"SET {key} = {quote_literal(str(value))}")
            if temp_directory is not None:
                con.execute(f"SET temp_directory = {quote_literal(str(temp_directory))}")
            described = con.execute(f"DESCRIBE SELECT * FROM {relation_sql}").fetchall()
        except duckdb.Error as exc:
            raise DataError(f"cannot read {self.label}: {one_line(exc)}") from None
        names = [str(r[0]) for r in described]
        self._typed_columns(names, names, [str(r[1]) for r in described], strip=strip)
        self._scan = lambda: f"SELECT * FROM {relation_sql}"
        if identifiers is not None:
            try:
                self._treat(identifiers)
            except BaseException:
                self.close()
                raise
        return self

    # ------------------------------------------------------------------ reading

    def _set_columns(
        self, names: Sequence[str], columns: Sequence[tuple[str, SQL, tuple[SQL, SQL, SQL]]]
    ) -> None:
        cols = [str(c).strip() for c in names]
        if len(set(cols)) != len(cols):
            raise DataError(f"{self.label}: duplicate column names")
        self._columns = [
            _Column(n, raw, key, steps) for n, (raw, key, steps) in zip(cols, columns, strict=True)
        ]

    def _typed_columns(
        self, names: Sequence[str], originals: Sequence[str], types: Sequence[str], strip: bool = True
    ) -> None:
        """Columns of a typed relation (Parquet, SQL), rendered by type."""
        missing = self._missing_step()
        columns: list[tuple[str, SQL, tuple[SQL, SQL, SQL]]] = []
        for original, typ in zip(originals, types, strict=True):
            text: SQL = functools.partial(text_expression, duckdb_type=typ)
            stripped = strip_expression if strip and needs_strip(typ) else _same
            if exact_key(typ):
                columns.append((quote_identifier(original), _same, (text, stripped, missing)))
            else:
                columns.append((quote_identifier(original), text, (_same, stripped, missing)))
        self._set_columns(names, columns)
        self._columns = [
            dataclasses.replace(c, kept=t.strip().upper()) if KEPT_TYPES.fullmatch(t.strip().upper()) else c
            for c, t in zip(self._columns, types, strict=True)
        ]

    def _missing_step(self) -> SQL:
        return functools.partial(missing_expression, missing=self._missing) if self._missing else _same

    def _init_parquet(self, source: TableSource) -> None:
        if source.path.stat().st_size == 0:
            raise DataError(f"{source.path}: the file is empty")
        scan = f"read_parquet({quote_literal(str(source.path))})"
        try:
            described = self.con.execute(f"DESCRIBE SELECT * FROM {scan}").fetchall()
        except duckdb.Error as exc:
            raise DataError(f"cannot read {source.path}: {one_line(exc)}") from None
        originals = [str(r[0]) for r in described]
        check_unique_names(parquet_names(source), str(source.path))
        check_parquet_types(source)
        if source.names and len(source.names) != len(originals):
            raise DataError(f"{source.path}: {len(source.names)} names given for {len(originals)} columns")
        self._typed_columns(source.names or originals, originals, [str(r[1]) for r in described])
        self._scan = lambda: f"SELECT * FROM {scan}"

    def _init_csv(self, source: TableSource) -> None:
        encoding = self._duckdb_encoding(source)
        check_line_sizes(source)  # before DuckDB, whose own error quotes the record
        n_fields, header_names = self._probe_csv(source)
        check_delimiter(source, len(source.names) if source.names else n_fields)
        self._n_fields = n_fields
        self._pad = source.ragged == "pad"
        if source.names and len(source.names) != n_fields:
            if not (self._pad and n_fields < len(source.names)):
                bad = first_ragged_record(source, len(source.names))
                if bad is not None:
                    raise DataError(ragged_message(source, bad[0], bad[1], len(source.names)))
                raise DataError(f"{source.path}: {len(source.names)} names given for {n_fields} columns")
            n_fields = self._n_fields = len(source.names)
        raws = [f"c{i}" for i in range(n_fields)]
        steps = (_csv_text, strip_expression, self._missing_step())
        self._set_columns(source.names or header_names, [(r, _same, steps) for r in raws])
        columns_struct = "{" + ", ".join(f"'{r}': 'VARCHAR'" for r in raws) + "}"
        skip = source.skip_rows + (1 if source.header else 0)
        # A line of spaces/tabs only (pandas skips it): one non-empty field, every other one padded (NULL).
        blanks = quote_literal("".join(c for c in " \t" if c != source.delimiter))
        blank = " AND ".join([f"{r} IS NULL" for r in raws[1:]] + ["c0 <> ''", f"trim(c0, {blanks}) = ''"])
        path, delim = quote_literal(str(source.path)), quote_literal(source.delimiter)

        def scan() -> str:
            # Without padding no field is NULL (the null string is the sentinel), so a line of
            # blanks cannot read as several fields: it is the field count error that turns padding
            # on (_field_count_error). The filter is then needed only for a one-column file; on
            # every other it cost about 15 % of a scan (10M records: 0.5-1 s), evaluated per record.
            where = f" WHERE NOT ({blank})" if self._pad or n_fields == 1 else ""
            return (
                f"SELECT * FROM read_csv({path}, header=false, auto_detect=false, columns={columns_struct}, "
                f"delim={delim}, quote='\"', escape='\"', skip={skip}, "
                f"null_padding={'true' if self._pad else 'false'}, "
                f"nullstr={quote_literal(_NULL_SENTINEL)}, encoding={quote_literal(encoding)}, "
                f"compression='auto', parallel={'true' if self._parallel else 'false'}){where}"
            )

        self._scan = scan
        plain_utf8 = codecs.lookup(source.encoding).name == "utf-8"  # not ASCII or UTF-8 with a BOM
        if plain_utf8 and source.path.suffix.lower() not in (".gz", ".bz2", ".zst", ".xz", ".zip"):
            self._csv_fields = scan

            def lines() -> str:
                return (
                    f"SELECT line FROM read_csv({path}, header=false, auto_detect=false, "
                    f"columns={{'line': 'VARCHAR'}}, delim={quote_literal(LINE_DELIMITER)}, quote='', "
                    f"escape='', skip={skip}, null_padding=false, encoding='utf-8', compression='none', "
                    f"parallel={'true' if self._parallel else 'false'})"
                )

            self._csv_lines = lines

    @staticmethod
    def _duckdb_encoding(source: TableSource) -> str:
        try:
            name = codecs.lookup(source.encoding).name
        except LookupError:
            raise DataError(f"{source.path}: unknown encoding {source.encoding!r}") from None
        if name not in _ENCODINGS:
            raise DataError(
                f"{source.path}: encoding {source.encoding!r} is not supported by the duckdb engine "
                "(utf-8, latin-1, utf-16)"
            )
        return _ENCODINGS[name]

    @staticmethod
    def _probe_csv(source: TableSource) -> tuple[int, list[str]]:
        """Field count of the first record and (with a header) the column names, as written.

        Read with the csv module by :func:`raw_header`, with pandas' rules, so
        both engines name columns identically; duplicates are refused here,
        before anything renames them.
        """
        try:
            fields = raw_header(source)
        except DataError:
            raise
        except Exception as exc:  # decoding and decompression errors
            raise DataError(f"cannot read {source.path}: {one_line(exc)}") from None
        if source.header and not source.names:
            check_unique_names(fields, str(source.path))
        return len(fields), fields if source.header else []

    def _text(
        self,
        relation: str,
        keys: dict[int, str],
        keep: Sequence[str] = (),
        columns: Sequence[_Column] | None = None,
    ) -> str:
        """``relation`` -> columns ``__v{i}``, the text of column ``i`` whose key is ``keys[i]``.

        One projection level per normalization step; ``keep`` (column names of
        ``relation``) are passed through. ``columns``: the column definitions (default:
        the engine's; the raw ones, before the identifier treatment, where it reads those).
        """
        cols = self._columns if columns is None else columns
        sql, refs = relation, dict(keys)
        for level in range(3):
            exprs = [f"{cols[i].steps[level](ref)} AS __v{i}" for i, ref in refs.items()]
            sql = f"SELECT {', '.join([*exprs, *keep])} FROM ({sql})"
            refs = {i: f"__v{i}" for i in refs}
        return sql

    def _index(self, column: str) -> int:
        for i, c in enumerate(self._columns):
            if c.name == column:
                return i
        raise DataError(f"{self.label}: unknown column {column!r}")

    def _run(self, make_sql: Callable[[str], str], action: str = "cannot read") -> duckdb.DuckDBPyConnection:
        """Execute ``make_sql(scan)``, turning DuckDB errors into :class:`DataError`.

        DuckDB's parallel CSV scanner cannot pad short rows when quoted fields
        hold line breaks; it says so, and the statement is rerun with a serial scan.
        """
        if self._closed:
            raise RuntimeError("the DuckDB engine is closed")
        while True:
            try:
                return self.con.execute(make_sql(self._scan()))
            except duckdb.Error as exc:
                if self._parallel and self.source is not None and "parallel=false" in str(exc):
                    self._parallel = False
                    continue
                if self._field_count_error(exc):
                    continue
                raise DataError(f"{action} {self.label}: {one_line(exc)}") from None

    def _joins_as_written_sql(self) -> str:
        """The ``disabled_optimizers`` value that keeps joins as written: every record probes
        the small hash tables on the right. DuckDB cannot estimate a CSV scan's size and, left
        to itself, may build a hash table of all the records (out of memory at a million)."""
        optimizers = self._setting("disabled_optimizers")
        return quote_literal(
            ",".join(dict.fromkeys([*filter(None, optimizers.split(",")), *_KEEP_JOINS_AS_WRITTEN]))
        )

    def _joins_as_written(self) -> contextlib.AbstractContextManager[None]:
        """For the duration of the block: joins as written (:meth:`_joins_as_written_sql`)."""
        return self._temporarily("disabled_optimizers", self._joins_as_written_sql())

    def _field_count_error(self, exc: duckdb.Error) -> bool:
        """On DuckDB's "Expected Number of Columns" error: raise the one-line error naming the
        record, found by the exact scan; if that finds none (DuckDB also counts lines of
        spaces/tabs only, which pandas skips), switch to padding and return ``True`` to rerun."""
        source = self.source
        if source is None or source.fmt != "csv" or "Expected Number of Columns" not in str(exc):
            return False
        bad = first_ragged_record(source, self._n_fields)
        if bad is not None:
            raise DataError(ragged_message(source, bad[0], bad[1], self._n_fields)) from None
        if self._pad:
            return False
        self._pad = True
        return True

    def expect_release(self, columns: Sequence[str]) -> None:
        """The released columns (:meth:`Engine.expect_release`): the first pass over the
        records (:meth:`_distinct_keys`) groups by their keys too when the release will be
        written grouped (:meth:`_few_distinct`, the same decision as :meth:`write_release`'s)."""
        self._release_idx = tuple(sorted({self._index(c) for c in columns}))

    def _distinct_keys(self, indices: Sequence[int]) -> str:
        """A temporary table of the distinct key tuples of ``indices`` (``__k{i}``) with counts ``__n``.

        The one pass over every record of :meth:`grouped_counts`; kept (the
        last one) so that :meth:`write_release` finds the quasi-identifiers'
        distinct values without reading the input again. With :meth:`expect_release`,
        grouped by the released columns' keys too when the release will be written grouped:
        :meth:`write_release` then takes the distinct released rows from this table.
        """
        wanted = frozenset(indices)
        if self._groups is not None and wanted <= self._groups[0]:
            return self._groups[1]
        release = frozenset(self._release_idx)
        try:
            lines = self._distinct_lines()
        except duckdb.Error as exc:  # as _run says it
            raise DataError(f"cannot read {self.label}: {one_line(exc)}") from None
        if lines is not None and self._release_idx:
            # few distinct lines (its sample): few distinct released rows, which are functions of
            # the lines; the choice is of speed only (_few_distinct), so the field sample is spared
            self._few.setdefault(self._few_key(self._release_idx), True)
        if self._groups is None and wanted <= release and self._few_distinct_idx(self._release_idx):
            wanted = release
        self._drop_groups()
        name = f"__safeshare_groups_{self._uid}"
        keys = ", ".join(f"{self._columns[i].key_sql()} AS __k{i}" for i in sorted(wanted))
        if lines is not None:  # the same fields, each distinct line once with its records
            try:
                fields = ", ".join(f"__p[{i + 1}] AS c{i}" for i in range(self._n_fields))
                parts = f"SELECT string_split(line, {lines[1]}) AS __p, __n FROM {lines[0]}"
                split = f"SELECT {fields}, __n AS __w FROM ({parts})"
                self.con.execute(
                    f"CREATE TEMP TABLE {name} AS SELECT {keys}, CAST(SUM(__w) AS BIGINT) AS __n "
                    f"FROM ({split}) GROUP BY ALL"
                )
            except duckdb.Error as exc:
                raise DataError(f"cannot read {self.label}: {one_line(exc)}") from None
            finally:
                self.con.execute(f"DROP TABLE IF EXISTS {lines[0]}")
        else:
            self._run(
                lambda scan: (
                    f"CREATE TEMP TABLE {name} AS SELECT {keys}, COUNT(*) AS __n FROM ({scan}) GROUP BY ALL"
                )
            )
        self._groups = (wanted, name)
        return name

    #: lines of the input looked at before its distinct lines are grouped (:meth:`_distinct_lines`)
    LINES_SAMPLE = 1 << 18

    def _distinct_lines(self) -> tuple[str, str] | None:
        """The first pass over a CSV input from its distinct lines: a temporary table of each
        distinct line (``line``) with its records (``__n``) and the delimiter's SQL literal, or
        ``None`` when the file does not allow it (then its records are parsed, as before).

        Where a file holds no ``"``, CSV has nothing left to interpret: each line is one record
        and its fields the text between the delimiters, so grouping the lines, then splitting
        each distinct line, gives the field scan's distinct records (10 million records of 15
        columns: 0.8 s, where grouping the parsed fields took 4.5 s; issue 36). Taken only for
        the input's own scan (no identifier treatment, no sample, no padding of short records),
        UTF-8 and uncompressed, two columns or more, when the first :data:`LINES_SAMPLE` lines
        hold no ``"`` and at most half as many distinct lines as lines (grouping millions of
        distinct long lines costs more than parsing them), and then only when no distinct line
        holds a ``"``, a CR or the field scan's NULL text (:data:`_NULL_SENTINEL`) and every one
        splits into the file's field count. An empty line
        is skipped, as the field scan skips it; any other line that does not split so (a line
        of blanks, a short record) sends the pass to the field scan, with its errors and its
        padding. The lines reader's delimiter is a control character (U+0001): a line holding
        it is refused by that reader, and the field scan takes over."""
        if self._closed:
            raise RuntimeError("the DuckDB engine is closed")
        if (
            self._csv_lines is None
            or self._scan is not self._csv_fields
            or self._pad
            or self._n_fields < 2
            or self.source is None
            or len(self.source.delimiter) != 1
            or self.source.delimiter in ('"', LINE_DELIMITER)
        ):
            return None
        lines = self._csv_lines()
        name = f"__safeshare_lines_{self._uid}"
        delimiter = quote_literal(self.source.delimiter)
        taken = False
        try:
            with self._temporarily("preserve_insertion_order", "true"):  # the first lines, always
                row = _single_row(
                    self._read_lines(
                        "SELECT approx_count_distinct(line), COUNT(*), bool_or(contains(line, '\"')) "
                        f"FROM (SELECT line FROM ({lines}) LIMIT {self.LINES_SAMPLE})"
                    )
                )
            if row is None or bool(row[2]) or 2 * int(row[0] or 0) > int(row[1]):
                return None
            self._read_lines(
                f"CREATE TEMP TABLE {name} AS SELECT line, COUNT(*) AS __n FROM ({lines}) "
                "WHERE line IS NOT NULL GROUP BY line"
            )
            bad = _single_row(
                self.con.execute(
                    f"SELECT COALESCE(count_if(contains(line, '\"') OR contains(line, chr(13)) "
                    f"OR contains(line, {quote_literal(_NULL_SENTINEL)}) "  # the field scan's NULL
                    f"OR len(string_split(line, {delimiter})) <> {self._n_fields}), 0) FROM {name}"
                )
            )
            taken = bad is not None and int(bad[0]) == 0
        except duckdb.InvalidInputException:  # a \x01 in a line, not UTF-8: the field scan says
            return None
        finally:
            if not taken:
                self.con.execute(f"DROP TABLE IF EXISTS {name}")
        return (name, delimiter) if taken else None

    def _read_lines(self, sql: str) -> duckdb.DuckDBPyConnection:
        """Run ``sql``, a statement over :meth:`_distinct_lines`'s scan of the input's lines (one
        place, so that every read of the input is :meth:`_run`'s or this)."""
        return self.con.execute(sql)

    def _drop_groups(self) -> None:
        if self._groups is not None:
            name, self._groups = self._groups[1], None
            with contextlib.suppress(duckdb.Error):
                self.con.execute(f"DROP TABLE IF EXISTS {name}")

    # ------------------------------------------------------------------ identifiers
    def _treat(self, treatment: IdentifierTreatment) -> None:
        """Build the treatment's mapping tables, then read every record through them.

        From here on :meth:`_scan` is :meth:`_treated_scan`: the input's scan with each
        treated column replaced by its treated text (a VARCHAR column under the same
        name), so that :meth:`grouped_counts`, :meth:`n_records` and :meth:`write_release`
        see treated values only. The raw columns and scan stay for
        :meth:`raw_grouped_batches`. The tables are temporary tables of the connection,
        built in Python over distinct texts (:mod:`safeshare.data.identifiers.treatment`):
        the key never appears in SQL.
        """
        names = self.columns()
        for column in treatment.read_columns:
            self._index(column)
        self._raw_columns = list(self._columns)
        self._source_scan = self._scan
        absent = ", ".join(quote_literal(t) for t in sorted(missing_set(self._missing)))
        uid = f"{self._uid}_{next(_counter)}"
        treated: dict[int, str] = {}
        joins: list[str] = []
        try:
            for j, shifted in enumerate(treatment.shifted_dates):
                d, p = self._index(shifted.name), self._index(shifted.person)
                persons = self._table(f"__safeshare_shift_{uid}_{j}", "v VARCHAR, s INTEGER")
                n_persons = 0
                for chunk in self._distinct_texts(p, present=d, skip_missing=False):
                    shifts = treatment.shift_map(shifted, chunk, self._missing)
                    n_persons += len(chunk)
                    self._insert(
                        persons, {"v": pa.array(chunk, pa.string()), "s": pa.array(shifts, pa.int32())}
                    )
                if is_coarse(n_persons, self._records_at_most()):  # else no count can make it coarse
                    treatment.check_persons(shifted, n_persons, self._present_count(d))
                dates = self._table(f"__safeshare_days_{uid}_{j}", "v VARCHAR, o INTEGER")
                first, last = None, None
                for chunk in self._distinct_texts(d):
                    days = treatment.day_map(shifted, chunk)
                    first = min([*days, *([first] if first is not None else [])])
                    last = max([*days, *([last] if last is not None else [])])
                    self._insert(dates, {"v": pa.array(chunk, pa.string()), "o": pa.array(days, pa.int32())})
                texts = self._table(f"__safeshare_dates_{uid}_{j}", "o INTEGER, t VARCHAR")
                if first is not None and last is not None:
                    span = list(treatment.day_range(shifted, first, last))
                    text = treatment.day_texts(shifted, span)
                    self._insert(texts, {"o": pa.array(span, pa.int32()), "t": pa.array(text, pa.string())})
                joins += [
                    f"LEFT JOIN {persons} AS __sp{j} ON __sp{j}.v = __t.__v{p}",
                    f"LEFT JOIN {dates} AS __sd{j} ON __sd{j}.v = __t.__v{d}",
                    f"LEFT JOIN {texts} AS __st{j} ON __st{j}.o = __sd{j}.o + __sp{j}.s",
                ]
                treated[d] = f"CASE WHEN __t.__v{d} IN ({absent}) THEN __t.__v{d} ELSE __st{j}.t END"
            for j, pseudonym in enumerate(treatment.pseudonyms):
                i = self._index(pseudonym.name)
                table = self._table(f"__safeshare_pseudonyms_{uid}_{j}", "v VARCHAR, h VARCHAR")
                for chunk in self._distinct_texts(i):
                    hashed = treatment.pseudonym_map(pseudonym, chunk)
                    self._insert(
                        table, {"v": pa.array(chunk, pa.string()), "h": pa.array(hashed, pa.string())}
                    )
                row = _single_row(self.con.execute(f"SELECT COUNT(*), COUNT(DISTINCT h) FROM {table}"))
                assert row is not None
                treatment.check_pseudonyms(pseudonym, int(row[0]), int(row[1]))
                joins.append(f"LEFT JOIN {table} AS __ip{j} ON __ip{j}.v = __t.__v{i}")
                treated[i] = f"CASE WHEN __t.__v{i} IN ({absent}) THEN __t.__v{i} ELSE __ip{j}.h END"
        except UnplacedValue as exc:
            raise located(exc, self.label, names, self.source, self._missing) from None
        self._treated = treated
        self._treatment_reads = sorted({*treated, *(self._index(c) for c in treatment.person_columns)})
        self._treatment_joins = joins
        self._columns = [
            _Column(c.name, c.raw, _same, (_coalesced, _same, _same)) if i in treated else c
            for i, c in enumerate(self._raw_columns)
        ]
        self._drop_groups()
        # every statement now joins the mapping tables: keep those joins as written, from here on
        # (a caller's connection gets its setting back at close)
        self._restore_optimizers = self._setting("disabled_optimizers")
        self.con.execute(f"SET disabled_optimizers = {self._joins_as_written_sql()}")
        self._scan = self._treated_scan
        self.identifiers = treatment

    def _treated_scan(self) -> str:
        """The input's scan with the treated columns replaced (see :meth:`_treat`)."""
        raw = self._raw_columns
        reads = self._treatment_reads
        keys = ", ".join(f"{raw[i].key_sql()} AS __k{i}" for i in reads)
        keyed = f"SELECT *, {keys} FROM ({self._source_scan()})"
        text = self._text(keyed, {i: f"__k{i}" for i in reads}, keep=[c.raw for c in raw], columns=raw)
        select = ", ".join(
            f"{self._treated[i]} AS {c.raw}" if i in self._treated else f"__t.{c.raw} AS {c.raw}"
            for i, c in enumerate(raw)
        )
        return f"SELECT {select} FROM ({text}) AS __t {' '.join(self._treatment_joins)}"

    def _table(self, name: str, columns: str) -> str:
        """A new temporary table, dropped by :meth:`close`."""
        self.con.execute(f"CREATE TEMP TABLE {name} ({columns})")
        self._temp_tables.append(name)
        return name

    def _insert(self, table: str, columns: dict[str, pa.Array]) -> None:
        name = f"__safeshare_rows_{self._uid}_{next(_counter)}"
        self.con.register(name, pa.table(columns))
        try:
            self.con.execute(f"INSERT INTO {table} SELECT * FROM {name}")
        finally:
            self.con.unregister(name)

    def _distinct_texts(
        self, i: int, present: int | None = None, skip_missing: bool = True, batch: int = 1_000_000
    ) -> Iterator[list[str]]:
        """The distinct texts of raw column ``i`` (without missing ones when ``skip_missing``),
        over the records where raw column ``present`` is not missing, in lists of ``batch``.

        Held once as Arrow text (a few bytes a value) while the batches are treated."""
        raw = self._raw_columns
        wanted = [i] if present is None else sorted({i, present})
        absent = ", ".join(quote_literal(t) for t in sorted(missing_set(self._missing)))
        conditions = ([f"__v{i} NOT IN ({absent})"] if skip_missing else []) + (
            [f"__v{present} NOT IN ({absent})"] if present is not None else []
        )
        where = f" WHERE {' AND '.join(conditions)}" if conditions else ""

        def sql(scan: str) -> str:
            keys = ", ".join(f"{raw[k].key_sql()} AS __k{k}" for k in wanted)
            text = self._text(
                f"SELECT DISTINCT {keys} FROM ({scan})", {k: f"__k{k}" for k in wanted}, columns=raw
            )
            return f"SELECT DISTINCT __v{i} FROM ({text}){where}"

        values = self._materialized(lambda: sql(self._source_scan())).column(0)
        for start in range(0, len(values), batch):
            yield [str(v) for v in values.slice(start, batch).to_pylist()]

    def _records_at_most(self) -> int:
        """An upper bound on the input's records without reading them: an uncompressed CSV file
        holds at most one record per byte; otherwise (compressed, Parquet, a relation) unknown."""
        source = self.source
        if source is not None and source.table is None and source.fmt == "csv":
            path = Path(source.path)
            if path.suffix.lower() not in (".gz", ".bz2", ".zst", ".xz", ".zip") and path.is_file():
                return path.stat().st_size
        return 1 << 62

    def _present_count(self, i: int) -> int:
        """The records whose raw column ``i`` is not missing (grouped on its key first, so that
        only its distinct values are turned into text)."""
        raw = self._raw_columns
        absent = ", ".join(quote_literal(t) for t in sorted(missing_set(self._missing)))

        def sql(scan: str) -> str:
            grouped = f"SELECT {raw[i].key_sql()} AS __k{i}, COUNT(*) AS __n FROM ({scan}) GROUP BY 1"
            text = self._text(grouped, {i: f"__k{i}"}, keep=["__n"], columns=raw)
            return f"SELECT COALESCE(SUM(__n), 0) FROM ({text}) WHERE __v{i} NOT IN ({absent})"

        return int(self._materialized(lambda: sql(self._source_scan())).column(0)[0].as_py())

    def _materialized(self, make_sql: Callable[[], str]) -> pa.Table:
        """The result of a query over the input as an Arrow table: stored by :meth:`_run` (its
        error handling) in a temporary table first, then read once as Arrow."""
        name = f"__safeshare_result_{self._uid}_{next(_counter)}"
        self._run(lambda _: f"CREATE TEMP TABLE {name} AS {make_sql()}")
        try:
            return self.con.sql(f"SELECT * FROM {name}").to_arrow_table()
        finally:
            self.con.execute(f"DROP TABLE IF EXISTS {name}")

    def raw_grouped_batches(
        self, columns: Sequence[str], batch_rows: int = 1_000_000
    ) -> Iterator[pd.DataFrame]:
        """The input's distinct tuples of ``columns`` before the identifier treatment, with counts."""
        if self.identifiers is None:
            yield from super().raw_grouped_batches(columns, batch_rows)
            return
        raw = self._raw_columns
        indices = list(dict.fromkeys(self._index(c) for c in columns))

        def sql(scan: str) -> str:
            keys = ", ".join(f"{raw[i].key_sql()} AS __k{i}" for i in indices)
            distinct = f"SELECT {keys}, COUNT(*) AS __n FROM ({scan}) GROUP BY ALL"
            text = self._text(distinct, {i: f"__k{i}" for i in indices}, keep=["__n"], columns=raw)
            outs = ", ".join(f"__v{i} AS {quote_identifier(raw[i].name)}" for i in indices)
            return (
                f"SELECT {outs}, CAST(SUM(__n) AS BIGINT) AS {quote_identifier(COUNT_COLUMN)} "
                f"FROM ({text}) GROUP BY ALL"
            )

        table = self._materialized(lambda: sql(self._source_scan()))
        if table.num_rows == 0:
            yield table.to_pandas()
            return
        for chunk in table.to_batches(max_chunksize=batch_rows):
            yield chunk.to_pandas()

    # ------------------------------------------------------------------ Engine API

    def columns(self) -> list[str]:
        return [c.name for c in self._columns]

    def n_records(self) -> int:
        if self._n_records is None:
            counted = f"SELECT COALESCE(SUM(__n), 0) FROM {self._groups[1]}" if self._groups else None
            row = _single_row(self._run(lambda scan: counted or f"SELECT COUNT(*) FROM ({scan})"))
            assert row is not None
            self._n_records = int(row[0])
        return self._n_records

    def grouped_counts(self, columns: Sequence[str]) -> pd.DataFrame:
        """Two aggregations: by key over every record, then by text over the distinct key tuples."""
        indices = list(dict.fromkeys(self._index(c) for c in columns))
        if not indices:
            return pd.DataFrame({COUNT_COLUMN: [self.n_records()]}, dtype="int64")
        groups = self._distinct_keys(indices)
        text = self._text(f"SELECT * FROM {groups}", {i: f"__k{i}" for i in indices}, keep=["__n"])
        outs = ", ".join(f"__v{i} AS {quote_identifier(self._columns[i].name)}" for i in indices)
        frame = self._run(
            lambda _: (
                f"SELECT {outs}, CAST(SUM(__n) AS BIGINT) AS {quote_identifier(COUNT_COLUMN)} "
                f"FROM ({text}) GROUP BY ALL ORDER BY ALL"
            )
        ).df()
        frame[COUNT_COLUMN] = frame[COUNT_COLUMN].astype("int64")
        return frame

    def write_release(self, plan: ReleasePlan, target: Path) -> int:
        """One ``COPY`` joining every record to its class's labels (see the module docstring)."""
        out_idx = [self._index(c) for c in plan.columns]
        qis = plan.quasi_identifiers
        qi_idx = [self._index(qi) for qi in qis]
        uid = f"{self._uid}_{next(_counter)}"
        registered: list[str] = []
        created: list[str] = []  # temporary tables, dropped at the end

        def register(name: str, text: dict[str, list[str]], ints: dict[str, list[int]] | None = None) -> str:
            columns = {k: pa.array(v, pa.string()) for k, v in text.items()}
            columns.update({k: pa.array(v, pa.int64()) for k, v in (ints or {}).items()})
            self.con.register(name, pa.table(columns))
            registered.append(name)
            return name

        try:
            values = {i: f"__src.__v{i}" for i in out_idx}
            fields = {i: csv_field(f"__src.__v{i}", plan.delimiter) for i in out_idx}
            joins, codes, groups = [], [], self._distinct_keys(qi_idx) if qis else ""
            for j, (qi, i) in enumerate(zip(qis, qi_idx, strict=True)):
                # key -> (label, code) over the QI's distinct keys: the key's text looked up in the mapping
                mapping = plan.generalization[qi]
                codes.append({label: n + 1 for n, label in enumerate(sorted(set(mapping.values())))})
                name = register(
                    f"__safeshare_map_{uid}_{j}",
                    {"v": list(mapping), "label": list(mapping.values())},
                    {"code": [codes[j][label] for label in mapping.values()]},
                )
                text = self._text(f"SELECT DISTINCT __k{i} FROM {groups}", {i: f"__k{i}"}, keep=[f"__k{i}"])
                field = csv_field("m.label", plan.delimiter)  # the label as a CSV field, once per key
                # VARCHAR, not ENUM, even for Parquet: DuckDB writes an ENUM column's row-group statistics
                # from its dictionary or its values depending on the run, so the bytes would vary
                values[i] = f"__m{j}.label"
                labels = f"SELECT t.__k{i} AS k, m.label, m.code, {field} AS field FROM ({text}) AS t"
                labels += f" LEFT JOIN {name} AS m ON t.__v{i} = m.v"
                joins.append(f"LEFT JOIN ({labels}) AS __m{j} ON __src.__k{i} IS NOT DISTINCT FROM __m{j}.k")
                fields[i] = f"__m{j}.field"
            if len(plan.suppressed) and qis:
                joins.append(self._suppression(plan, codes, register, f"__safeshare_suppressed_{uid}"))
            if plan.format == "parquet":
                self._typed_values(values, qi_idx)
            out = [values[i] for i in out_idx]
            select, names, options = _release_select(
                plan.format, plan.columns, plan.delimiter, out, [fields[i] for i in out_idx]
            )
            join = " ".join(joins)
            # The release's row order: sorted by the released columns, left to right, by code point,
            # NULL first, as MemoryEngine.generalized_frame sorts. A quasi-identifier sorts on its
            # label's code, numbered in Python's (code point) order of the labels, NULL when unmapped;
            # other columns on their text in the binary collation (UTF-8 bytes: code point order),
            # whatever the connection's default_collation.
            qi_code = {i: (f"__m{j}.code", len(codes[j]) + 1) for j, i in enumerate(qi_idx)}
            keys = _sort_keys(out_idx, qi_code)
            order = ", ".join(f"{key} ASC NULLS FIRST" for key in keys)
            order_by = f" ORDER BY {order}" if order else ""
            text_idx = [i for i in dict.fromkeys(out_idx) if i not in qi_idx]
            qi_keys = [f"{self._columns[i].key_sql()} AS __k{i}" for i in qi_idx]
            text_keys = [f"{self._columns[i].key_sql()} AS __k{i}" for i in text_idx]

            rows_table = f"__safeshare_rows_{uid}"

            def rows_sql(scan: str) -> str:
                """The grouped release's distinct rows, labelled and sorted, into a temporary table:
                grouped from the first pass's table when it holds every released column's key
                (:meth:`expect_release`), from the records otherwise."""
                released = {*qi_idx, *text_idx}
                if released and self._groups is not None and released <= self._groups[0]:
                    keys = [f"__k{i}" for i in sorted(released)]
                    count = "__n" if released == self._groups[0] else "CAST(SUM(__n) AS BIGINT)"
                    by = "" if released == self._groups[0] else " GROUP BY ALL"
                    rows = f"SELECT {', '.join(keys)}, {count} AS {_N} FROM {self._groups[1]}{by}"
                else:
                    rows = f"SELECT {', '.join([*qi_keys, *text_keys, f'COUNT(*) AS {_N}'])} FROM ({scan})"
                    rows += " GROUP BY ALL" if released else ""
                ordered = _grouped_rows(
                    rows,
                    lambda rows: self._text(
                        rows, {i: f"__k{i}" for i in text_idx}, keep=[*(f"__k{i}" for i in qi_idx), _N]
                    ),
                    select,
                    join,
                    order_by,
                )
                return f"CREATE TEMP TABLE {rows_table} AS {ordered}"

            def sql(scan: str, tmp: Path, grouped: bool) -> str:
                target_sql = quote_literal(str(tmp))
                if grouped:
                    query = _repeated_rows(rows_table, names)
                else:
                    keyed = f"SELECT {', '.join(['*', *qi_keys])} FROM ({scan})"
                    source = self._text(
                        keyed,
                        {i: self._columns[i].key_sql() for i in text_idx},
                        keep=[f"__k{i}" for i in qi_idx],
                    )
                    query = f"SELECT {select} FROM ({source}) AS __src {join}{order_by}"
                return f"COPY ({query}) TO {target_sql} ({options})"

            release_memory: contextlib.AbstractContextManager[None] = contextlib.nullcontext()
            if self._default_memory:  # the default limit, raised for large releases
                limit = f"{release_memory_mb(self.n_records())}MB"
                release_memory = self._temporarily("memory_limit", quote_literal(limit))
            with (
                release_memory,
                self._joins_as_written(),
                # the COPY writes the rows in the ORDER BY's order only with this on (the sort
                # itself spills to temp_directory past memory_limit: still out of core)
                self._temporarily("preserve_insertion_order", "true"),
                atomic_path(Path(target)) as tmp,
            ):
                if self._default_memory:
                    self._release_memory_limit = self._setting("memory_limit")  # as DuckDB reports it
                grouped = self._few_distinct_idx(sorted({*qi_idx, *text_idx}))
                if grouped:  # the grouping, labelling and sort of the distinct rows on every thread
                    self._run(rows_sql, action="cannot write the release of")
                    created.append(rows_table)
                # grouped: the rows repeated and written on one thread. They come from a few sorted
                # distinct rows; two threads keeping their order cost twice the CPU (10M rows: 9.0
                # against 4.1 s) and more wall time on two cores, and the bytes would depend on the
                # CPU count (row groups)
                if grouped and plan.format == "parquet":  # repeated by pyarrow (write_repeated_parquet)
                    return write_repeated_parquet(self._grouped_table(rows_table, names), tmp)
                one_thread = self._temporarily("threads", "1") if grouped else contextlib.nullcontext()
                with one_thread:  # the row read before the setting is restored (same connection)
                    row = _single_row(
                        self._run(lambda scan: sql(scan, tmp, grouped), action="cannot write the release of")
                    )
            assert row is not None
            return int(row[0])
        finally:
            for table in created:
                with contextlib.suppress(duckdb.Error):
                    self.con.execute(f"DROP TABLE IF EXISTS {table}")
            for name in registered:
                with contextlib.suppress(duckdb.Error):
                    self.con.unregister(name)

    def _grouped_table(self, table: str, names: Sequence[str]) -> pa.Table:
        """The grouped release's distinct rows (``table``, :func:`_grouped_rows`, in its insertion
        order) as Arrow: the released columns ``names`` (SQL) and their records ``__safeshare_n``
        last."""
        try:
            return self.con.sql(f"SELECT {', '.join([*names, _N])} FROM {table}").to_arrow_table()
        except duckdb.Error as exc:
            raise DataError(f"cannot write the release of {self.label}: {one_line(exc)}") from None

    def _typed_values(self, values: dict[int, str], qi_idx: Sequence[int]) -> None:
        """In ``values`` (column index -> SQL of its released text), each column released
        verbatim whose type is kept (:data:`KEPT_TYPES`) becomes its text read back as that type,
        the missing text NULL (the inverse of its rendering: the same value; issue 30, item 16)."""
        empty = quote_literal(self._missing[0] if self._missing else "")
        for i, v in values.items():
            kept = self._columns[i].kept
            if kept is not None and i not in qi_idx and i not in self._treated:
                values[i] = f"(CASE WHEN {v} = {empty} THEN NULL ELSE TRY_CAST({v} AS {kept}) END)"

    #: records looked at by :meth:`_few_distinct` (a choice of speed, not of bytes: 2**20 took
    #: 0.77 s of a 10-million-record CSV input with insertion order kept, 2**18 0.18 s, and both
    #: found the same 29,000 distinct rows there)
    DISTINCT_SAMPLE = 1 << 18

    def _few_distinct_idx(self, indices: Sequence[int]) -> bool:
        """:meth:`_few_distinct` of the keys of columns ``indices`` (``__k{i}``)."""
        return self._few_distinct(
            [f"{self._columns[i].key_sql()} AS __k{i}" for i in indices], [f"__k{i}" for i in indices]
        )

    def _few_key(self, indices: Sequence[int]) -> str:
        """The key under which :meth:`_few_distinct` keeps its answer for columns ``indices``."""
        return ", ".join(f"{self._columns[i].key_sql()} AS __k{i}" for i in indices)

    def _few_distinct(self, key_cols: Sequence[str], names: Sequence[str]) -> bool:
        """Whether the release is written grouped (:func:`_grouped_rows`): when the first
        :data:`DISTINCT_SAMPLE` records hold at most half as many distinct released rows
        (HyperLogLog's estimate of the distinct hashes of their keys) as records. Grouping
        then sorts far fewer rows than there are records; on mostly distinct records it would
        add a hash aggregate to the sort. Either way the same rows in the same order; the
        first records in the scan's order (``preserve_insertion_order`` on for the query) and
        an estimate that depends only on them, so the choice, hence the bytes, are the same
        from run to run. Asked with the same keys again (the first pass of
        :meth:`expect_release`, then the release), the first answer."""
        if not key_cols:
            return True
        keys = ", ".join(key_cols)
        if keys in self._few:  # asked once for the frequency table and once for the release
            return self._few[keys]
        with self._temporarily("preserve_insertion_order", "true"):  # the first records, always
            row = _single_row(
                self._run(
                    lambda scan: (
                        f"SELECT approx_count_distinct(hash({', '.join(names)})), COUNT(*) FROM "
                        f"(SELECT {keys} FROM ({scan}) LIMIT {self.DISTINCT_SAMPLE})"
                    )
                )
            )
        assert row is not None
        distinct, seen = int(row[0] or 0), int(row[1])
        self._few[keys] = 2 * distinct <= seen
        return self._few[keys]

    def _setting(self, name: str) -> str:
        row = _single_row(self.con.execute(f"SELECT current_setting({quote_literal(name)})"))
        return "" if row is None or row[0] is None else str(row[0])

    @contextlib.contextmanager
    def _temporarily(self, name: str, value_sql: str) -> Iterator[None]:
        """``SET name = value`` for the duration of the block (the connection may be the caller's)."""
        old = self._setting(name)
        self.con.execute(f"SET {name} = {value_sql}")
        try:
            yield
        finally:
            with contextlib.suppress(duckdb.Error):
                self.con.execute(f"SET {name} = {quote_literal(old)}")

    @staticmethod
    def _suppression(
        plan: ReleasePlan,
        codes: list[dict[str, int]],
        register: Callable[[str, dict[str, list[str]], dict[str, list[int]] | None], str],
        name: str,
    ) -> str:
        """The ``ANTI JOIN`` removing the records of the suppressed classes.

        A class is identified by one integer, its labels' codes (1.., 0 for an
        unmapped value) in mixed radix, so the join hashes one BIGINT a record
        rather than one string per quasi-identifier; when the codes could
        overflow, the join is on the labels themselves.
        """
        qis = plan.quasi_identifiers
        sup = plan.suppressed[qis].astype(str)
        radices = [len(table) + 1 for table in codes]
        if math.prod(radices) >= _PACKED_LIMIT:
            register(name, {f"s{j}": list(sup[q]) for j, q in enumerate(qis)}, None)
            cond = " AND ".join(f"__m{j}.label = __sup.s{j}" for j in range(len(qis)))
            return f"ANTI JOIN {name} AS __sup ON {cond}"
        weights, packed = _mixed_radix([(f"__m{j}.code", r) for j, r in enumerate(radices)])
        classes = [
            sum(table[label] * w for table, label, w in zip(codes, row, weights, strict=True))
            for row in sup.itertuples(index=False)
            if all(label in table for table, label in zip(codes, row, strict=True))  # else no record has it
        ]
        register(name, {}, {"c": classes})
        return f"ANTI JOIN {name} AS __sup ON ({packed}) = __sup.c"

    def sampled(self, keep: npt.NDArray[np.bool_]) -> DuckDBEngine:
        """This engine restricted to the records at the positions where ``keep`` is True.

        Record sampling (epsilon-safe LA, thesis §4.5.2; see
        :mod:`safeshare.data.engines.sampled`) needs a stable record order:
        here the row number of a Parquet file (``file_row_number``), so the
        sample is a ``SEMI JOIN`` of the scan with the kept positions
        (registered as an Arrow column) and the data is still never loaded
        whole. CSV files are refused: DuckDB's CSV reader has no row number,
        and its parallel scan has no order to number.

        The returned engine shares this engine's connection (close it before
        this one); it holds the sampled records only, for the frequency table
        and the release alike.
        """
        keep = np.asarray(keep)
        if self.source is None or self.source.fmt != "parquet":
            raise InputError(
                f"the duckdb engine samples records of Parquet files only ({self.label} is not one): "
                "convert it to Parquet or use the memory engine"
            )
        if keep.dtype != np.bool_ or keep.shape != (self.n_records(),):
            raise InputError(
                f"sampling mask: expected {self.n_records()} booleans, got {keep.dtype} of shape {keep.shape}"
            )
        path = quote_literal(str(self.source.path))
        if any(c.raw == quote_identifier("file_row_number") for c in self._columns):
            raise InputError(f"{self.label}: a column named file_row_number prevents record sampling")
        clone = copy.copy(self)
        clone._uid = f"{os.getpid()}_{next(_counter)}"
        clone._owns_connection = False
        clone._finalizer = None
        clone._closed = False
        clone._groups = None
        clone._n_records = int(keep.sum())
        name = f"__safeshare_keep_{clone._uid}"
        self.con.register(name, pa.table({"p": pa.array(np.flatnonzero(keep), pa.int64())}))
        clone._registered = [name]
        clone._temp_tables = []  # the treatment's tables stay this engine's (dropped by its close)

        def sampled_scan() -> str:
            return (
                "SELECT __s.* EXCLUDE (file_row_number) "
                f"FROM read_parquet({path}, file_row_number=true) AS __s "
                f"SEMI JOIN {name} AS __keep ON __s.file_row_number = __keep.p"
            )

        if self.identifiers is not None:
            clone._source_scan = sampled_scan
            clone._scan = clone._treated_scan
        else:
            clone._scan = sampled_scan
        return clone

    # ------------------------------------------------------------------ local recoding
    def write_mixed_release(self, plan: MixedReleasePlan, target: Path) -> int:
        """One ``COPY`` joining every record, on its raw QI tuple, to its released labels.

        A locally recoded release (:class:`MixedReleasePlan`) gives each distinct raw QI
        tuple its own labels. The distinct key tuples of the QIs (the table kept by
        :meth:`grouped_counts`, or one pass) are turned into text, joined (inner) to the plan's
        ``keys`` registered as an Arrow table, giving per key tuple the labels, their sort
        codes and CSV fields; every record then joins that small table on its QI keys (``IS
        NOT DISTINCT FROM``; inner, so a tuple the plan does not list is not written). The
        rest is :meth:`write_release`'s: the same row order (a QI by its label's code, numbered
        in code point order of all its labels), the same CSV text, the same settings.
        """
        out_idx = [self._index(c) for c in plan.columns]
        qis = plan.quasi_identifiers
        qi_idx = [self._index(qi) for qi in qis]
        uid = f"{self._uid}_{next(_counter)}"
        name = f"__safeshare_mixed_{uid}"
        keys = plan.keys[qis].astype(str)
        labels = plan.labels[qis].astype(str)
        codes = [{label: n + 1 for n, label in enumerate(sorted(set(labels[qi])))} for qi in qis]
        columns: dict[str, pa.Array] = {}
        for j, qi in enumerate(qis):
            columns[f"v{j}"] = pa.array(keys[qi].tolist(), pa.string())
            columns[f"l{j}"] = pa.array(labels[qi].tolist(), pa.string())
            columns[f"c{j}"] = pa.array([codes[j][v] for v in labels[qi]], pa.int64())
        self.con.register(name, pa.table(columns))
        try:
            groups = self._distinct_keys(qi_idx)
            distinct = f"SELECT DISTINCT {', '.join(f'__k{i}' for i in qi_idx)} FROM {groups}"
            text = self._text(distinct, {i: f"__k{i}" for i in qi_idx}, keep=[f"__k{i}" for i in qi_idx])
            picks = ", ".join(
                f"t.__k{i} AS k{j}, a.l{j}, a.c{j}, {csv_field(f'a.l{j}', plan.delimiter)} AS f{j}"
                for j, i in enumerate(qi_idx)
            )
            on = " AND ".join(f"t.__v{i} = a.v{j}" for j, i in enumerate(qi_idx))
            mapped = f"SELECT {picks} FROM ({text}) AS t JOIN {name} AS a ON {on}"
            cond = " AND ".join(f"__src.__k{i} IS NOT DISTINCT FROM __mx.k{j}" for j, i in enumerate(qi_idx))
            join = f"JOIN ({mapped}) AS __mx ON {cond}"
            values = {i: f"__src.__v{i}" for i in out_idx}
            fields = {i: csv_field(f"__src.__v{i}", plan.delimiter) for i in out_idx}
            for j, i in enumerate(qi_idx):
                values[i], fields[i] = f"__mx.l{j}", f"__mx.f{j}"
            if plan.format == "parquet":
                self._typed_values(values, qi_idx)
            out = [values[i] for i in out_idx]
            select, _, options = _release_select(
                plan.format, plan.columns, plan.delimiter, out, [fields[i] for i in out_idx]
            )
            qi_code = {i: (f"__mx.c{j}", len(codes[j]) + 1) for j, i in enumerate(qi_idx)}
            order = ", ".join(f"{key} ASC NULLS FIRST" for key in _sort_keys(out_idx, qi_code))
            order_by = f" ORDER BY {order}" if order else ""
            text_idx = {i: self._columns[i].key_sql() for i in dict.fromkeys(out_idx) if i not in qi_idx}
            key_cols = [f"{self._columns[i].key_sql()} AS __k{i}" for i in qi_idx]

            def sql(scan: str, tmp: Path) -> str:
                keyed = f"SELECT {', '.join(['*', *key_cols])} FROM ({scan})"
                source = self._text(keyed, text_idx, keep=[f"__k{i}" for i in qi_idx])
                query = f"SELECT {select} FROM ({source}) AS __src {join}{order_by}"
                return f"COPY ({query}) TO {quote_literal(str(tmp))} ({options})"

            release_memory: contextlib.AbstractContextManager[None] = contextlib.nullcontext()
            if self._default_memory:
                limit = f"{release_memory_mb(self.n_records())}MB"
                release_memory = self._temporarily("memory_limit", quote_literal(limit))
            with (
                release_memory,
                self._joins_as_written(),
                self._temporarily("preserve_insertion_order", "true"),
                atomic_path(Path(target)) as tmp,
            ):
                copied = self._run(lambda scan: sql(scan, tmp), action="cannot write the release of")
                row = _single_row(copied)
            assert row is not None
            return int(row[0])
        finally:
            with contextlib.suppress(duckdb.Error):
                self.con.unregister(name)

    def close(self) -> None:
        if getattr(self, "_closed", True):
            return
        self._drop_groups()
        for name in self._registered:
            with contextlib.suppress(duckdb.Error):
                self.con.unregister(name)
        for name in self._temp_tables:
            with contextlib.suppress(duckdb.Error):
                self.con.execute(f"DROP TABLE IF EXISTS {name}")
        if self._temp_tables and self._restore_optimizers is not None:
            with contextlib.suppress(duckdb.Error):
                self.con.execute(f"SET disabled_optimizers = {quote_literal(self._restore_optimizers)}")
        self._closed = True
        if self._finalizer is not None:
            self._finalizer()


#: the record count of a distinct released row in the release's SQL
_N = "__safeshare_n"


def _release_select(
    fmt: str, columns: Sequence[str], delimiter: str, values: Sequence[str], fields: Sequence[str]
) -> tuple[str, list[str], str]:
    """The release's ``SELECT`` list, its output column names (SQL) and the ``COPY`` options.

    Parquet: each released column's value (``values``) under its name. CSV: one text column,
    the record's line (``fields``, each a CSV field, joined by the delimiter) under the header
    line as its name, written with quoting off (see the module docstring)."""
    if fmt == "parquet":
        names = [quote_identifier(c) for c in columns]
        select = ", ".join(f"{v} AS {n}" for v, n in zip(values, names, strict=True))
        return select, names, "FORMAT parquet, COMPRESSION snappy"
    line = f" || {quote_literal(delimiter)} || ".join(fields) or "''"
    if len(fields) <= 1:  # the csv module writes a record of one empty field as ""
        line = f"CASE WHEN {line} = '' THEN '\"\"' ELSE {line} END"
    names = [quote_identifier(csv_header(columns, delimiter))]
    return f"{line} AS {names[0]}", names, "FORMAT csv, HEADER true, QUOTE '', ESCAPE '', COMPRESSION 'none'"


def _grouped_rows(grouped: str, text: Callable[[str], str], select: str, join: str, order_by: str) -> str:
    """The grouped release's distinct rows: ``grouped``, the records grouped on the keys of
    everything released (``__k{i}``) with their count ``__safeshare_n``; each distinct row
    labelled (``text`` turns the grouped relation into ``__src``'s columns, ``join`` adds the
    labels) and the distinct rows sorted (``order_by``). :func:`_repeated_rows` then repeats
    each as many times as it has records.

    The rows and their order are those of sorting every record: records with the same keys
    have the same released values, and rows with equal sort keys are equal, so their order
    among themselves does not show. But the sort is over the distinct released rows only
    (29,096 for 10 million resampled Adult records) instead of every record, and the labels and
    text are computed once a distinct row."""
    return f"SELECT {select}, __src.{_N} AS {_N} FROM ({text(grouped)}) AS __src {join}{order_by}"


def _repeated_rows(table: str, columns: Sequence[str]) -> str:
    """The rows of ``table`` (:func:`_grouped_rows`, in its insertion order) each repeated
    ``__safeshare_n`` times (``unnest(range(n))``, which keeps the order), as ``columns``
    (SQL names).

    Each column is written ``CASE WHEN i >= 0 THEN column END`` (``i`` the repeat's number,
    never negative), which is the column: DuckDB's Parquet writer marks a column REQUIRED
    when the statistics of what it writes show no NULL, which a table's do and a scan's of
    the input do not; the ``CASE`` gives every column the "may be NULL" statistics of the
    ungrouped release's, so both write the same schema whatever the data
    (``tests/test_determinism.py``)."""
    repeated = f"SELECT *, unnest(range({_N})) AS __safeshare_i FROM {table}"
    select = ", ".join(f"CASE WHEN __safeshare_i >= 0 THEN {c} END AS {c}" for c in columns)
    return f"SELECT {select} FROM ({repeated})"


#: Rows per row group of a Parquet release written by :func:`write_repeated_parquet`: DuckDB's
#: default ``ROW_GROUP_SIZE``, which the ungrouped release's ``COPY`` writes.
PARQUET_ROW_GROUP = 122_880


def write_repeated_parquet(rows: pa.Table, target: Path, row_group: int = PARQUET_ROW_GROUP) -> int:
    """Write the grouped release to ``target`` as Parquet: each of ``rows`` (the distinct released
    rows, sorted, their records in the last column) repeated for its records, in order; the
    number of rows written.

    What :func:`_repeated_rows` gives DuckDB's ``COPY``, written by pyarrow: one row group of
    ``row_group`` rows at a time, each taken from the few distinct rows (``searchsorted`` of the
    row numbers in the cumulative counts), so memory is one row group whatever the records. A
    text column is dictionary-encoded once, on the distinct rows (:func:`_encoded_once`), and
    each row group takes its codes, so the writer copies and hashes no string; the other
    columns are taken as they are and encoded by the writer. For 10 million resampled Adult
    records DuckDB's ``COPY`` of :func:`_repeated_rows` took 7.4-8.1 s on one thread in a slow
    period of the host, pyarrow taking the strings 4.2-4.4 s, taking the codes 2.2 s
    (docs/benchmarks.md, issue 36). The file is a function of the rows alone: the same bytes
    whatever the thread count or the input's order. Every column may be NULL (as in the
    ungrouped release's file) and keeps its type (a string view as string): the file's schema
    holds no dictionary type (``store_schema=False``), so it reads back as the ungrouped one.
    """
    counts = np.asarray(rows.column(rows.num_columns - 1).to_numpy(zero_copy_only=False), dtype=np.int64)
    values = rows.drop_columns([rows.column_names[-1]])
    fields = [
        pa.field(f.name, pa.string() if pa.types.is_string_view(f.type) else f.type, nullable=True)
        for f in values.schema
    ]
    values = values.cast(pa.schema(fields))
    columns = [_encoded_once(values.column(i).combine_chunks()) for i in range(values.num_columns)]
    schema = pa.schema(
        [pa.field(f.name, c.type, nullable=True) for f, c in zip(fields, columns, strict=True)]
    )
    ends = np.cumsum(counts)
    total = int(ends[-1]) if len(ends) else 0
    import pyarrow.parquet as pq  # only this writer needs it

    with pq.ParquetWriter(str(target), schema, compression="snappy", store_schema=False) as writer:
        if not total:
            writer.write_table(pa.Table.from_arrays([c.slice(0, 0) for c in columns], schema=schema))
        for start in range(0, total, row_group):
            numbers = np.arange(start, min(start + row_group, total), dtype=np.int64)
            which = pa.array(np.searchsorted(ends, numbers, side="right"))
            taken = [_taken(c, which) for c in columns]
            writer.write_table(pa.Table.from_arrays(taken, schema=schema), row_group_size=row_group)
    return total


def _encoded_once(column: pa.Array) -> pa.Array:
    """A text column of the distinct rows as a dictionary array (its distinct values in order
    of first appearance, a NULL a NULL code); any other column as it is."""
    if (
        pa.types.is_string(column.type)
        or pa.types.is_large_string(column.type)
        or pa.types.is_binary(column.type)
    ):
        encoded = column.dictionary_encode()
        return pa.DictionaryArray.from_arrays(encoded.indices.cast(pa.int32()), encoded.dictionary)
    return column


def _taken(column: pa.Array, which: pa.Array) -> pa.Array:
    """The rows ``which`` of ``column``: a dictionary array's codes only, its dictionary shared."""
    if isinstance(column, pa.DictionaryArray):
        return pa.DictionaryArray.from_arrays(column.indices.take(which), column.dictionary)
    return column.take(which)


def _single_row(cursor: duckdb.DuckDBPyConnection) -> tuple[Any, ...] | None:
    """The one row of a statement's result, read to the end: DuckDB refuses further work
    on a connection (e.g. ``register``) while a result is still open."""
    rows = cursor.fetchall()
    return rows[0] if rows else None


def _cleanup(con: duckdb.DuckDBPyConnection, temp: Path | None) -> None:
    """Close an owned connection and remove the private spill directory."""
    try:
        con.close()
    finally:
        if temp is not None:
            shutil.rmtree(temp, ignore_errors=True)
