"""No released value carries a terminal control character (issue 30, the attack run's list).

A value such as ``"\\x1b]0;...\\x07"`` or ``"ok\\rFAKE"`` in a kept column once reached
``release.csv`` as it was: printed by ``cat`` or ``less -r``, it moves the cursor, rewrites
what was shown or retitles the recipient's terminal, and a NUL makes the file unreadable to
some tools. safeshare refuses, it does not escape: an escaped value (``\\x1b`` as text) would
be a value that is not the record's. The verifier reads every text column of the written
release (in the same scan as its classes: :func:`aggregates`) and fails the release when a
value holds one of :data:`PATTERN`'s characters: C0 controls but TAB and LF (a line break
inside a quoted CSV field is the format's own), DEL and the C1 controls (U+0080-U+009F, where
U+009B is a one-byte CSI to some terminals). CR is refused: it returns the cursor and hides
what was printed before it. Nothing is published then; the message names the column, the
count and the character, never the value.
"""

from __future__ import annotations

from collections.abc import Sequence

import duckdb

from safeshare.verify.sql import literal, quote

#: The characters no released value may hold, as an RE2 class (DuckDB's ``regexp_matches``).
PATTERN = r"[\x00-\x08\x0B-\x1F\x7F-\x9F]"

#: DuckDB types whose values are text (the only ones that can hold a control character).
TEXT_TYPES = ("VARCHAR", "BLOB")


def text_columns(described: Sequence[tuple[str, str]]) -> list[str]:
    """The columns of ``DESCRIBE``'s ``(name, type)`` rows that hold text."""
    return [name for name, kind in described if str(kind).upper().split("(")[0] in TEXT_TYPES]


def aggregates(columns: Sequence[str]) -> list[str]:
    """One SQL aggregate per column: the count of its values that hold a control character."""
    pattern = literal(PATTERN)
    return [
        f"SUM(CASE WHEN regexp_matches(CAST({quote(c)} AS VARCHAR), {pattern}) THEN 1 ELSE 0 END)"
        for c in columns
    ]


def failures(
    con: duckdb.DuckDBPyConnection, rel: str, columns: Sequence[str], counts: Sequence[int | None]
) -> list[str]:
    """A failure message for each column whose count of :func:`aggregates` is not zero, naming
    the first such character by its code point (one more query, for those columns only)."""
    out = []
    pattern = literal(PATTERN)
    for column, count in zip(columns, counts, strict=True):
        n = int(count or 0)
        if not n:
            continue
        q = quote(column)
        row = con.execute(
            f"SELECT regexp_extract(CAST({q} AS VARCHAR), {pattern}) FROM {rel} "
            f"WHERE regexp_matches(CAST({q} AS VARCHAR), {pattern}) LIMIT 1"
        ).fetchone()
        code = f"U+{ord(row[0][0]):04X}" if row and row[0] else "a control character"
        out.append(
            f"column {column!r}: {n:,} value(s) hold the control character {code} (a terminal would "
            "obey it); remove control characters from the input, or give the column the role text "
            "(not released)"
        )
    return out


__all__ = ["PATTERN", "aggregates", "failures", "text_columns"]
