"""A CSV release's distinct rows from its distinct lines, where the file has no quoting.

The verifier groups the written release on every column (the classes, the labels, the rows the
disclosure check reads). Parsing a CSV file into its columns is most of that cost: for the
10-million-record release of ``bench_scale.py`` (0.99 GB, 13 text columns) DuckDB's reader took
4.4 s on two threads to group every column, and 0.8 s to group the file's lines, read as one
column each (issue 36).

Where the file holds no ``"`` at all, CSV has nothing left to interpret: every line is one
record and its fields are the text between the delimiters, so grouping the lines and then
splitting each distinct line is the same as parsing every record and grouping the fields. This
module takes that way only when the file itself shows it may, from what it reads, never from
what the writer says (:func:`distinct_rows`):

* no distinct line holds ``"`` (a quoted field, an escaped quote) or a CR;
* no line is empty (DuckDB's parser skips a blank line; the lines reader reads it as NULL);
* every distinct line splits into as many fields as the header has names, and the header line
  itself, unquoted, splits into exactly the column names DuckDB's parser reads (a BOM, a
  duplicate or empty name, which that parser rewrites, fails this);
* the lines reader accepts the file (UTF-8, no line over the verifier's limit, no ``\\x01``:
  its delimiter, a control character the verifier refuses anyway).

Otherwise nothing is built and the verifier parses the file as before. An empty field is NULL,
as DuckDB's parser reads it (``all_varchar``: no other text is NULL).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import duckdb

from safeshare.verify.sql import MAX_RELEASE_LINE, literal, quote

#: The lines reader's delimiter: a control character, which no verified release holds.
LINE_DELIMITER = "\x01"


def header_fields(path: Path, delimiter: str) -> list[str] | None:
    """The header line of the CSV file at ``path`` split at ``delimiter``, or ``None`` when it
    cannot be read that way (no line end within the verifier's limit, not UTF-8, a ``"`` or a
    CR in it)."""
    with open(path, "rb") as handle:
        first = handle.readline(MAX_RELEASE_LINE + 1)
    if not first.endswith(b"\n") or b'"' in first or b"\r" in first:
        return None
    try:
        return first[:-1].decode("utf-8").split(delimiter)
    except UnicodeDecodeError:
        return None


def distinct_rows(
    con: duckdb.DuckDBPyConnection,
    path: Path,
    delimiter: str,
    columns: Sequence[str],
    table: str,
    records: str,
) -> bool:
    """Create the temporary table ``table``: the CSV release's distinct rows (``columns``, text,
    an empty field NULL) with their records in column ``records``, from the file's distinct
    lines; whether it did (see the module docstring: when the file shows it may). ``columns``:
    the file's column names as DuckDB's parser read its header."""
    path = Path(path)
    if len(delimiter) != 1 or delimiter in ('"', "\r", "\n", LINE_DELIMITER) or not path.is_file():
        return False
    if records in columns:
        return False
    if header_fields(path, delimiter) != list(columns):
        return False
    lines = (
        f"read_csv({literal(str(path))}, columns={{'line': 'VARCHAR'}}, delim={literal(LINE_DELIMITER)}, "
        "quote='', escape='', header=true, auto_detect=false, null_padding=false, "
        f"max_line_size={MAX_RELEASE_LINE}, buffer_size={MAX_RELEASE_LINE})"
    )
    try:
        con.execute(
            f"CREATE TEMP TABLE __release_lines AS SELECT line, COUNT(*) AS n FROM {lines} GROUP BY line"
        )
    except duckdb.InvalidInputException:  # not UTF-8, a line too long, a \x01: parsed as before
        return False
    try:
        d = literal(delimiter)
        row = con.execute(
            "SELECT COALESCE(count_if(line IS NULL OR contains(line, '\"') OR contains(line, chr(13)) "
            f"OR len(string_split(line, {d})) <> {len(columns)}), 0) FROM __release_lines"
        ).fetchone()
        if row is None or int(row[0]) != 0:
            return False
        fields = ", ".join(f"NULLIF(parts[{i + 1}], '') AS {quote(c)}" for i, c in enumerate(columns))
        con.execute(
            f"CREATE TEMP TABLE {table} AS SELECT {fields}, n AS {quote(records)} "
            f"FROM (SELECT string_split(line, {d}) AS parts, n FROM __release_lines)"
        )
        return True
    finally:
        con.execute("DROP TABLE IF EXISTS __release_lines")


__all__ = ["LINE_DELIMITER", "distinct_rows", "header_fields"]
