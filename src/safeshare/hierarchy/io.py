"""Reading and writing hierarchies in ARX's CSV format.

One row per original value, levels separated by ``;`` (ARX's default), no
header: ``value;level1;level2;...;top``. See ARX ``Hierarchy.create(path,
charset, ';')`` and the files under ``examples/adult/hierarchies``.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

from safeshare.errors import HierarchyError
from safeshare.hierarchy.hierarchy import Hierarchy
from safeshare.io import atomic_write_text


def read_arx_csv(path: str | Path, delimiter: str = ";", encoding: str = "utf-8") -> Hierarchy:
    """Read an ARX CSV hierarchy file.

    Blank lines are ignored and surrounding whitespace is stripped from every
    cell. Raises :class:`HierarchyError` naming the file when it cannot be read
    or is inconsistent.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding=encoding)
    except (OSError, UnicodeDecodeError) as exc:
        raise HierarchyError(f"cannot read hierarchy {path}: {exc}") from None
    return parse_arx_csv(text, name=str(path), delimiter=delimiter)


def parse_arx_csv(text: str, name: str = "hierarchy", delimiter: str = ";") -> Hierarchy:
    """Parse the text of an ARX CSV hierarchy.

    A leading byte-order mark (files saved as "UTF-8 with BOM" by spreadsheet
    programs) is ignored, so that it does not become part of the first value.
    """
    if len(delimiter) != 1:
        raise HierarchyError(f"{name}: the delimiter must be a single character, got {delimiter!r}")
    rows = []
    try:
        for row in csv.reader(io.StringIO(text.removeprefix("\ufeff")), delimiter=delimiter):
            cells = [c.strip() for c in row]
            if not any(cells):
                continue
            rows.append(cells)
    except csv.Error as exc:
        raise HierarchyError(f"{name}: not a valid CSV hierarchy: {exc}") from None
    if not rows:
        raise HierarchyError(f"{name}: hierarchy file has no rows")
    return Hierarchy(rows, name=name)


def format_arx_csv(hierarchy: Hierarchy, delimiter: str = ";") -> str:
    """The ARX CSV text of ``hierarchy``."""
    buf = io.StringIO()
    writer = csv.writer(buf, delimiter=delimiter, lineterminator="\n")
    writer.writerows(hierarchy.rows)
    return buf.getvalue()


def write_arx_csv(hierarchy: Hierarchy, path: str | Path, delimiter: str = ";") -> None:
    """Write ``hierarchy`` to ``path`` atomically in ARX CSV format."""
    atomic_write_text(Path(path), format_arx_csv(hierarchy, delimiter))
