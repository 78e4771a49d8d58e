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


#: The longest line of a written CSV release the verifier reads (DuckDB's default, 2 MB, is the
#: inputs' limit; a release of a Parquet input may join several long values on one line, and
#: DuckDB's error for a longer line quoted the record).
MAX_RELEASE_LINE = 1 << 28


def release_relation(path: Path, fmt: str, delimiter: str) -> str:
    """DuckDB's relation over the written release at ``path``: a Parquet file as written, a
    CSV file as text (every column VARCHAR, the header's names, ``delimiter``, ``"`` quoting
    as the csv module writes it) with a short record an error, not padded."""
    p = literal(str(path))
    if fmt == "parquet":
        return f"read_parquet({p})"
    return (
        f"read_csv({p}, all_varchar=true, header=true, delim={literal(delimiter)}, "
        f"quote='\"', escape='\"', null_padding=false, max_line_size={MAX_RELEASE_LINE})"
    )
