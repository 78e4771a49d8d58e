"""No released value carries a terminal control character (issue 30, the attack run's list).

A value such as ``"\\x1b]0;...\\x07"`` or ``"ok\\x1b[2K"`` in a kept column once reached
``release.csv`` as it was: printed by ``cat`` or ``less -r``, it moves the cursor, rewrites
what was shown or retitles the recipient's terminal, and a NUL makes the file unreadable to
some tools. safeshare refuses, it does not escape: an escaped value (``\\x1b`` as text) would
be a value that is not the record's. Refused are the characters of :data:`PATTERN`: the C0
controls but TAB and LF (a line break inside a quoted CSV field is the format's own), DEL and
the C1 controls (U+0080-U+009F, where U+009B is a one-byte CSI to some terminals). CR is
refused: it returns the cursor and hides what was printed before it.

How the verifier looks (:func:`control_failures`), on the written file:

* a CSV release is scanned as bytes, in chunks (:class:`ControlScan`: ``bytes.translate``,
  a C loop, about as fast as reading the file, in the thread that hashes the file beside the
  verifier's SQL, :mod:`safeshare.verify.file_scan`; the writers end lines with LF only, so any
  other control byte, CR included, is inside a value or a name); only when it finds one are the
  columns' distinct values matched in SQL, to name them;
* a Parquet release (compressed: its bytes say nothing) has the distinct values of its text
  columns matched in SQL (``regexp_matches`` over ``SELECT DISTINCT``), except the
  quasi-identifiers, whose distinct labels the verifier holds already and checks in Python.

A release that holds one fails its check: nothing is published, and the message names the
column, the count and the code point, never the value.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path

import duckdb

from safeshare.io import files_of
from safeshare.verify.sql import literal, quote

#: The characters no released value may hold, as an RE2 class (DuckDB's ``regexp_matches``).
PATTERN = r"[\x00-\x08\x0B-\x1F\x7F-\x9F]"

#: The same characters, for Python's ``re`` (labels held in memory).
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")

#: Single bytes of a control character in UTF-8 (the C1 controls are ``\xc2\x80``-``\xc2\x9f``).
_CONTROL_BYTES = bytes([*range(0x00, 0x09), *range(0x0B, 0x20), 0x7F])
_OTHER_BYTES = bytes(b for b in range(256) if b not in _CONTROL_BYTES)
_C1 = re.compile(rb"\xc2[\x80-\x9f]")

#: DuckDB types whose values are text (the only ones that can hold a control character).
TEXT_TYPES = ("VARCHAR", "BLOB")

#: Bytes read at a time by :func:`csv_holds_control`.
CHUNK = 16 << 20


def text_columns(described: Sequence[tuple[str, str]]) -> list[str]:
    """The columns of ``DESCRIBE``'s ``(name, type)`` rows that hold text."""
    return [name for name, kind in described if str(kind).upper().split("(")[0] in TEXT_TYPES]


class ControlScan:
    """The control-character test of a file's bytes, fed chunk by chunk (:meth:`feed`): a C1
    control split between two chunks is found too."""

    def __init__(self) -> None:
        self._tail = b""

    def feed(self, chunk: bytes) -> bool:
        """Whether the bytes fed so far, ``chunk`` the last, hold a control character."""
        if chunk.translate(None, _OTHER_BYTES):
            return True
        joined = self._tail + chunk[:1] if self._tail else b""
        self._tail = chunk[-1:]
        return bool(_C1.search(joined)) or (b"\xc2" in chunk and _C1.search(chunk) is not None)


def csv_holds_control(path: Path) -> bool:
    """Whether the file's bytes hold a control character other than TAB and LF (in chunks of
    :data:`CHUNK` bytes, :class:`ControlScan`)."""
    for part in files_of(Path(path)):  # a directory of part files too
        test = ControlScan()
        with open(part, "rb") as handle:
            while chunk := handle.read(CHUNK):
                if test.feed(chunk):
                    return True
    return False


def control_failures(
    con: duckdb.DuckDBPyConnection,
    rel: str,
    fmt: str,
    columns: Sequence[str],
    labels: Mapping[str, set[str]],
    holds: bool | None,
) -> list[str]:
    """The failures of the release read as ``rel``: one per column of ``columns`` (its text
    columns) holding a control character. ``labels``: the distinct values of the
    quasi-identifiers, already read by the verifier. ``holds``: a CSV release's byte test, made
    on the bytes the verifier read (:class:`safeshare.verify.file_scan.FileScan`, the test of
    :func:`csv_holds_control` chunk by chunk); ``None`` for Parquet, whose bytes say nothing. A
    CSV release without that test is an error of the caller, not a release without controls."""
    if fmt != "parquet":
        if holds is None:
            raise ValueError("a CSV release's control-character test is missing (FileScan(control=True))")
        if not holds:
            return []
        found = _counted(con, rel, columns)
        if not found:
            return ["the release holds a control character outside its values (in its header)"]
        return found
    out = []
    for qi, values in labels.items():
        bad = [v for v in values if _CONTROL.search(v)]
        if bad:
            out.append(_message(qi, f"{len(bad):,} label(s)", _code(bad[0])))
    return out + _counted(con, rel, [c for c in columns if c not in labels])


def _counted(con: duckdb.DuckDBPyConnection, rel: str, columns: Sequence[str]) -> list[str]:
    """One failure per column whose distinct values hold a control character: per column, its
    distinct values (a columnar read of that column alone in Parquet), the regular expression
    run on those (a column of codes or categories has few; it never runs more often than on
    the records). Measured on 2 million records of 3 such columns: one scan that unpivots the
    columns took 1.3 s more than these per-column reads."""
    pattern = literal(PATTERN)
    out = []
    for column in columns:
        row = con.execute(
            f"SELECT count_if(regexp_matches(v, {pattern})), "
            f"first(regexp_extract(v, {pattern})) FILTER (WHERE regexp_matches(v, {pattern})) "
            f"FROM (SELECT DISTINCT CAST({quote(column)} AS VARCHAR) AS v FROM {rel})"
        ).fetchone()
        if row is not None and row[0]:
            out.append(_message(column, f"{int(row[0]):,} distinct value(s)", _code(row[1] or "")))
    return out


def _code(text: str) -> str:
    found = _CONTROL.search(text or "")
    return f"U+{ord(found.group()):04X}" if found else "a control character"


def _message(column: str, how_many: str, code: str) -> str:
    return (
        f"column {column!r}: {how_many} hold the control character {code} (a terminal would obey it); "
        "remove control characters from the input, or give the column the role text (not released)"
    )


__all__ = ["PATTERN", "ControlScan", "control_failures", "csv_holds_control", "text_columns"]
