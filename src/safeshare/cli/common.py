"""What several command groups parse the same way: comma lists, and a data file's reading
options (``--delimiter``, ``--header``, ``--names``, ``--missing``, ``--skip-rows``)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from safeshare.data.source import TableSource
from safeshare.options import DATA_DELIMITER_HELP

# The reading options of a data file, declared once for every command that reads one
# (pass them on to :func:`data_source`).
DelimiterOption = Annotated[str, typer.Option("--delimiter", help=DATA_DELIMITER_HELP)]
HeaderOption = Annotated[bool, typer.Option("--header/--no-header")]
NamesOption = Annotated[str | None, typer.Option("--names", help="Column names of a headerless CSV.")]
MissingOption = Annotated[str | None, typer.Option("--missing", help="Comma-separated missing-value tokens.")]
SkipRowsOption = Annotated[int, typer.Option("--skip-rows")]


def csv_list(value: str | None) -> list[str]:
    """``"a, b,,c"`` -> ``["a", "b", "c"]``; nothing for ``None`` or an empty text."""
    return [v.strip() for v in value.split(",") if v.strip()] if value else []


def data_source(
    path: Path,
    delimiter: str = ",",
    header: bool = True,
    names: str | None = None,
    missing: str | None = None,
    skip_rows: int = 0,
) -> TableSource:
    """The :class:`TableSource` of a data file given on the command line (comma lists parsed)."""
    return TableSource(
        path,
        delimiter=delimiter,
        header=header,
        names=tuple(csv_list(names)) or None,
        missing=tuple(csv_list(missing)),
        skip_rows=skip_rows,
    )
