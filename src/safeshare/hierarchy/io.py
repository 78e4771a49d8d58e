"""Reading and writing hierarchies in ARX's CSV format.

One row per original value, levels separated by ``;`` (ARX's default), no
header: ``value;level1;level2;...;top``. See ARX ``Hierarchy.create(path,
charset, ';')`` and the files under ``examples/adult/hierarchies``.

Files are read with the csv module's quoting rules on the undecoded line ends
(``newline=""``): a quoted ``;``, ``"`` or line break is part of its cell.
Labels end up in the release, so a control character (U+0000-U+001F,
U+007F-U+009F, e.g. NUL, ESC or a CR) in any cell is refused, naming the file,
line and column. Reading streams the file: :func:`read_arx_csv` with ``keep``
holds only the rows whose leaf is in ``keep`` (what a run needs for its data),
however large the file.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Collection, Iterable, Iterator
from pathlib import Path

from safeshare.errors import HierarchyError
from safeshare.hierarchy.hierarchy import Hierarchy, control_character
from safeshare.io import atomic_write_text


def read_arx_csv(
    path: str | Path,
    delimiter: str = ";",
    encoding: str = "utf-8",
    keep: Collection[str] | None = None,
) -> Hierarchy:
    """Read an ARX CSV hierarchy file (all of it, or only the rows whose leaf is in ``keep``).

    Blank lines are ignored and surrounding whitespace is stripped from every
    cell. Every row is checked (depth, control characters) even when it is not
    kept; the consistency of labels (one parent each) is checked on the kept rows.
    Raises :class:`HierarchyError` naming the file when it cannot be read or is
    inconsistent.
    """
    return Hierarchy(read_arx_rows(path, delimiter, encoding, keep), name=str(Path(path)))


def read_arx_rows(
    path: str | Path,
    delimiter: str = ";",
    encoding: str = "utf-8",
    keep: Collection[str] | None = None,
) -> list[list[str]]:
    """The checked rows of an ARX CSV file (only those whose leaf is in ``keep``, when given)."""
    path = Path(path)
    try:
        with path.open(encoding=encoding, newline="") as handle:
            return _collect(iter_arx_rows(handle, str(path), delimiter), str(path), keep)
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        raise HierarchyError(f"cannot read hierarchy {path}: {reason}") from None


def parse_arx_csv(text: str, name: str = "hierarchy", delimiter: str = ";") -> Hierarchy:
    """Parse the text of an ARX CSV hierarchy (the rules of :func:`read_arx_csv`)."""
    return Hierarchy(_collect(iter_arx_rows(io.StringIO(text, newline=""), name, delimiter), name), name=name)


def iter_arx_rows(lines: Iterable[str], name: str, delimiter: str = ";") -> Iterator[tuple[int, list[str]]]:
    """``(line, cells)`` of every non-blank row, cells stripped; ``line`` is where the row starts.

    A leading byte-order mark (files saved as "UTF-8 with BOM" by spreadsheet
    programs) is ignored, so that it does not become part of the first value.
    """
    if len(delimiter) != 1:
        raise HierarchyError(f"{name}: the delimiter must be a single character, got {delimiter!r}")
    reader = csv.reader(_without_bom(lines), delimiter=delimiter)
    start = 1
    try:
        for row in reader:
            cells = [c.strip() for c in row]
            if any(cells):
                if control_character("".join(cells)) is not None:
                    column, code = next((i, k) for i, c in enumerate(cells, 1) if (k := control_character(c)))
                    raise HierarchyError(
                        f"{name} line {start}, column {column}: control character {code} in a label"
                    )
                yield start, cells
            start = reader.line_num + 1
    except csv.Error as exc:
        raise HierarchyError(f"{name} line {reader.line_num}: not a valid CSV hierarchy: {exc}") from None


def _without_bom(lines: Iterable[str]) -> Iterator[str]:
    it = iter(lines)
    for first in it:
        yield first.removeprefix("\ufeff")
        break
    yield from it


def _collect(
    rows: Iterable[tuple[int, list[str]]], name: str, keep: Collection[str] | None = None
) -> list[list[str]]:
    """The rows to keep, after checking that every row has the depth of the first."""
    out = []
    depth = 0
    for line, cells in rows:
        if not depth:
            depth = len(cells)
        elif len(cells) != depth:
            raise HierarchyError(
                f"{name} line {line}: value {cells[0]!r} has {len(cells)} levels, "
                f"expected {depth} like the first row"
            )
        if keep is None or cells[0] in keep:
            out.append(cells)
    if not depth:
        raise HierarchyError(f"{name}: hierarchy file has no rows")
    return out


def format_arx_csv(hierarchy: Hierarchy, delimiter: str = ";") -> str:
    """The ARX CSV text of ``hierarchy``.

    Raises :class:`HierarchyError` for a control character in any cell, the values
    included: :func:`read_arx_csv` refuses such a file, so it is never written.
    """
    for row in hierarchy.rows:
        code = control_character("".join(row))
        if code is not None:
            raise HierarchyError(
                f"{hierarchy.name}: value {row[0]!r} holds the control character {code}; "
                "a hierarchy file may not hold one (it would be refused when read)"
            )
    buf = io.StringIO()
    writer = csv.writer(buf, delimiter=delimiter, lineterminator="\n")
    writer.writerows(hierarchy.rows)
    return buf.getvalue()


def write_arx_csv(hierarchy: Hierarchy, path: str | Path, delimiter: str = ";") -> None:
    """Write ``hierarchy`` to ``path`` atomically in ARX CSV format."""
    atomic_write_text(Path(path), format_arx_csv(hierarchy, delimiter))
