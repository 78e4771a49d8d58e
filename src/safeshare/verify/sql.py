"""The SQL text the verifier's checks share: quoted names and literals, and the relation that
reads a written release.

Only the verifier and the release's evidence use these; the engines quote with their own
functions (:mod:`safeshare.data.engines.duckdb_engine`), so the check of a release shares no
code with what wrote it.
"""

from __future__ import annotations

from pathlib import Path


def quote(name: str) -> str:
    """``name`` as a SQL identifier: in double quotes, a double quote doubled."""
    return '"' + name.replace('"', '""') + '"'


def literal(text: str) -> str:
    """``text`` as a SQL string literal: in single quotes, a single quote doubled."""
    return "'" + text.replace("'", "''") + "'"


#: The longest line (bytes) of a written CSV release the verifier reads: 16 x the inputs' limit
#: (DuckDB's default, 2 MB, :data:`safeshare.data.source.MAX_LINE_BYTES`), so a release of a
#: Parquet input may join several long values on one line. DuckDB's CSV reader holds two buffers
#: of at least this size per thread, and reads a file smaller than its buffer as one block: with
#: 256 MiB (the limit until 2026-12-03) its default buffer (16 x the line) took a 941 MiB release
#: as one block, over the disclosure check's memory limit (an out-of-memory error on every CSV
#: release of 10 million rows) and 1.36 GB of peak memory in the verifier. The buffer is set to
#: the line, so each reader of a release holds at most 2 x threads x 32 MiB. A longer line is a
#: failure of the verifier (:func:`too_long_a_line`), stated without the line.
MAX_RELEASE_LINE = 1 << 25


def release_relation(path: Path, fmt: str, delimiter: str) -> str:
    """DuckDB's relation over the written release at ``path``: a Parquet file as written, a
    CSV file as text (every column VARCHAR, the header's names, ``delimiter``, ``"`` quoting
    as the csv module writes it) with a short record an error, not padded, and lines up to
    :data:`MAX_RELEASE_LINE` bytes read through buffers of that size."""
    p = literal(str(path))
    if fmt == "parquet":
        return f"read_parquet({p})"
    return (
        f"read_csv({p}, all_varchar=true, header=true, delim={literal(delimiter)}, "
        f"quote='\"', escape='\"', null_padding=false, max_line_size={MAX_RELEASE_LINE}, "
        f"buffer_size={MAX_RELEASE_LINE})"
    )


def too_long_a_line(error: Exception) -> str | None:
    """The verifier's failure for DuckDB's error on a release line longer than
    :data:`MAX_RELEASE_LINE` (that error quotes the line: never shown), else ``None``."""
    if "Maximum line size of" not in str(error):
        return None
    return (
        f"a line of the written release is longer than {MAX_RELEASE_LINE:,} bytes, the longest the "
        "verifier reads, so the release cannot be checked (the line is not shown); release the long "
        "columns in a Parquet release, or leave them out"
    )


#: The column of records of each distinct row of a release, in the verifier's table of them
#: (:attr:`safeshare.verify.Verification.rows`), which the disclosure check reads instead of the file.
ROW_RECORDS = "__safeshare_records"
