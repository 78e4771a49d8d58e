"""What an uploaded input file looks like before a project is made of it: :func:`csv_preview`.

The workbench's new-project form shows this first (issue 35): the delimiter Python's
:class:`csv.Sniffer` finds in the first :data:`SAMPLE_BYTES` of the file (one of
:data:`DELIMITERS`; ``,`` when it finds none), a guess whether the first line holds column names,
the first :data:`PREVIEW_ROWS` records split into columns and the column count. A file that is
not CSV text is refused with one line (:class:`~safeshare.errors.InputError`): binary (NUL or
other control bytes), not UTF-8, empty, a Parquet file under another name or a ``.parquet``
file that is not one. Nothing beyond the sample is read, and it runs in a short-lived child of
the workbench (``python -m safeshare.ui.worker --preview``), never in the server.

A preview whose delimiter leaves the file one column while another delimiter splits every
sampled line into the same number of columns (2 or more) carries that as its ``problem``: the
workbench refuses to create the project until the delimiter is corrected (:func:`column_problem`).
"""

from __future__ import annotations

import codecs
import csv
import io
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from safeshare.errors import InputError

#: Bytes of the file the preview reads (and sniffs).
SAMPLE_BYTES = 64 << 10
#: The delimiters the sniffer may find, in the order they are offered.
DELIMITERS = (",", ";", "\t", "|")
#: Records shown.
PREVIEW_ROWS = 10
#: Characters of the sample the sniffer's quote guess sees (:class:`_BoundedSniffer`).
QUOTE_SAMPLE = 8 << 10
#: Lines the column counts of each delimiter are taken over.
COUNT_LINES = 50
#: Suffixes of a Parquet input (:func:`safeshare.data.source.infer_format`).
PARQUET_SUFFIXES = (".parquet", ".pq")
PARQUET_MAGIC = b"PAR1"
#: Control bytes a CSV text may hold (tab, newline, carriage return, form feed).
TEXT_CONTROLS = frozenset(b"\t\n\r\f")


def delimiter_name(delimiter: str) -> str:
    """``tab`` for a tab, else the character quoted (for messages and the page)."""
    return "tab" if delimiter == "\t" else repr(delimiter)


@dataclass(frozen=True)
class CsvPreview:
    """The preview of one input file.

    ``format``: ``csv`` or ``parquet`` (then nothing else is filled: the profile reads its
    columns). ``delimiter`` and ``header``: what the records below were split with (given, else
    ``sniffed`` and ``header_guess``). ``header_row``: the first line's fields when ``header``;
    ``rows``: the first records; ``columns``: the field count of the first line; ``widths``: the
    field counts met in the sample (more than one: ragged lines); ``counts``: the modal field
    count of the sample's lines under each of :data:`DELIMITERS`; ``truncated``: the file is
    longer than the sample; ``problem``: :func:`column_problem`'s line, if any."""

    name: str
    format: str
    delimiter: str | None = None
    sniffed: str | None = None
    header: bool | None = None
    header_guess: bool | None = None
    header_row: list[str] = field(default_factory=list)
    rows: list[list[str]] = field(default_factory=list)
    columns: int = 0
    widths: list[int] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    truncated: bool = False
    problem: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "format": self.format,
            "delimiter": self.delimiter,
            "sniffed": self.sniffed,
            "header": self.header,
            "header_guess": self.header_guess,
            "header_row": self.header_row,
            "rows": self.rows,
            "columns": self.columns,
            "widths": self.widths,
            "counts": self.counts,
            "truncated": self.truncated,
            "problem": self.problem,
        }


def _sample(path: Path, name: str) -> tuple[bytes, bool]:
    """The first :data:`SAMPLE_BYTES` of the file's content (decompressed by suffix, as the
    engines read it) and whether there is more."""
    import bz2
    import gzip
    import lzma
    import zipfile

    suffix = path.suffix.lower()
    try:
        if suffix == ".zip":
            with zipfile.ZipFile(path) as archive:
                members = archive.namelist()
                if not members:
                    raise InputError(f"{name}: an empty zip archive: no records")
                with archive.open(members[0]) as handle:
                    raw = handle.read(SAMPLE_BYTES + 1)
        else:
            opener: Any = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}.get(suffix, open)
            with opener(path, "rb") as handle:
                raw = handle.read(SAMPLE_BYTES + 1)
    except (OSError, EOFError, lzma.LZMAError, zipfile.BadZipFile) as exc:
        kind = {".gz": "gzip", ".bz2": "bzip2", ".xz": "xz", ".zip": "zip"}.get(suffix)
        if kind is None:
            raise InputError(f"{name}: cannot be read ({exc.__class__.__name__})") from None
        raise InputError(f"{name}: not a {kind} file, as its name says ({exc})") from None
    return raw[:SAMPLE_BYTES], len(raw) > SAMPLE_BYTES


def _text(raw: bytes, truncated: bool, name: str) -> str:
    """The sample as text; :class:`InputError` when it is not CSV text."""
    if raw.startswith(PARQUET_MAGIC):
        raise InputError(f"{name}: a Parquet file; give it the suffix .parquet")
    if b"\x00" in raw:
        raise InputError(f"{name}: a binary file (it holds NUL bytes), not CSV text")
    controls = sum(1 for byte in raw if byte < 0x20 and byte not in TEXT_CONTROLS)
    if controls > max(8, len(raw) // 100):
        raise InputError(
            f"{name}: a binary file ({controls:,} control bytes in its first {len(raw):,}), not CSV text"
        )
    decoder = codecs.getincrementaldecoder("utf-8")()
    try:  # a character cut at the sample's end is not an error (final only when the file ended)
        text = decoder.decode(raw, final=not truncated)
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{name}: not UTF-8 text (byte {exc.start:,} is not UTF-8); save it as UTF-8, or name its "
            "encoding as input.encoding in a configuration"
        ) from None
    text = text.removeprefix("\ufeff")
    if truncated and "\n" in text:
        text = text[: text.rindex("\n") + 1]  # the last line, cut by the sample, is left out
    if not text.strip():
        raise InputError(f"{name}: empty: the file holds no records")
    return text


class _Dialect(csv.excel):
    skipinitialspace = True  # as every engine reads (TableSource.pandas_csv_options)


def _dialect(delimiter: str) -> type[csv.Dialect]:
    return type("Dialect", (_Dialect,), {"delimiter": delimiter})


def _rows(text: str, delimiter: str, limit: int) -> list[list[str]]:
    """The first ``limit`` non-blank records of ``text`` (blank lines skipped, as read)."""
    found: list[list[str]] = []
    try:
        for row in csv.reader(io.StringIO(text, newline=""), _dialect(delimiter)):
            if row and (len(row) > 1 or row[0].strip()):
                found.append(row)
                if len(found) >= limit:
                    break
    except csv.Error:
        pass  # an unterminated quote at the sample's end: the records before it
    return found


class _BoundedSniffer(csv.Sniffer):
    """:class:`csv.Sniffer` whose quote guess (a regular expression that takes time quadratic in
    the sample on lines with an unmatched quote: 15 s on 64 KiB) sees the first
    :data:`QUOTE_SAMPLE` characters only; the delimiter's frequencies are counted on the whole
    sample."""

    def _guess_quote_and_delimiter(self, data: str, delimiters: str | None) -> Any:
        return super()._guess_quote_and_delimiter(data[:QUOTE_SAMPLE], delimiters)  # type: ignore[misc]


def sniff(text: str) -> str:
    """The delimiter :class:`csv.Sniffer` finds in ``text``, one of :data:`DELIMITERS`; ``,``
    when it finds none."""
    try:
        found = _BoundedSniffer().sniff(text, delimiters="".join(DELIMITERS)).delimiter
    except csv.Error:
        return ","
    return found if found in DELIMITERS else ","


class _FixedSniffer(csv.Sniffer):
    """A sniffer whose dialect is given: :meth:`csv.Sniffer.has_header` with our delimiter (it
    would sniff one of its own, from any character)."""

    def __init__(self, delimiter: str) -> None:
        super().__init__()
        self.delimiter = delimiter

    def sniff(self, sample: str, delimiters: str | None = None) -> type[csv.Dialect]:
        return _dialect(self.delimiter)


def guess_header(text: str, delimiter: str) -> bool:
    """:meth:`csv.Sniffer.has_header` under ``delimiter``: whether the first line looks like
    column names (its fields differ in type or length from the column's other values)."""
    try:
        return bool(_FixedSniffer(delimiter).has_header(text))
    except (csv.Error, StopIteration, ValueError):
        return True


def _modal_counts(text: str) -> dict[str, int]:
    """The most common field count of the sample's first :data:`COUNT_LINES` records under each
    delimiter, and whether every record has it (``-1``: not every one)."""
    counts: dict[str, int] = {}
    for delimiter in DELIMITERS:
        widths = [len(r) for r in _rows(text, delimiter, COUNT_LINES)]
        if not widths:
            continue
        width, times = Counter(widths).most_common(1)[0]
        counts[delimiter] = width if times == len(widths) else -width
    return counts


def column_problem(delimiter: str, columns: int, counts: dict[str, int]) -> str | None:
    """The line that refuses ``delimiter``: it leaves the file one column while another delimiter
    gives every sampled record the same 2 or more columns (``counts``: :func:`_modal_counts`)."""
    if columns != 1:
        return None
    others = [(n, d) for d, n in counts.items() if d != delimiter and n >= 2]
    if not others:
        return None
    n, best = max(others)
    return (
        f"with the delimiter {delimiter_name(delimiter)} the file is one column, with "
        f"{delimiter_name(best)} it has {n}: choose the delimiter {delimiter_name(best)}"
    )


def csv_preview(
    path: Path, name: str | None = None, delimiter: str | None = None, header: bool | None = None
) -> CsvPreview:
    """The preview of the input file ``path`` (``name``: what messages call it, the upload's
    name). ``delimiter`` / ``header``: the reader's settings to split with (``None``: sniffed,
    guessed). :class:`InputError` with one line when the file is not CSV text or Parquet."""
    name = name or path.name
    if delimiter is not None and (len(delimiter) != 1 or delimiter in '"\r\n\x00'):
        raise InputError(f"delimiter {delimiter!r}: expected one character, such as , ; | or a tab")
    if path.suffix.lower() in PARQUET_SUFFIXES:
        try:
            with path.open("rb") as handle:
                head = handle.read(4)
        except OSError as exc:
            raise InputError(f"{name}: cannot be read ({exc.__class__.__name__})") from None
        if head != PARQUET_MAGIC:
            raise InputError(f"{name}: not a Parquet file (it does not start with PAR1), as its name says")
        return CsvPreview(name=name, format="parquet")
    raw, truncated = _sample(path, name)
    text = _text(raw, truncated, name)
    sniffed = sniff(text)
    used = delimiter if delimiter is not None else sniffed
    header_guess = guess_header(text, used)
    has_header = header_guess if header is None else header
    rows = _rows(text, used, PREVIEW_ROWS + 1)
    if not rows:
        raise InputError(f"{name}: the file holds no records")
    counts = _modal_counts(text)
    widths = sorted({len(r) for r in _rows(text, used, COUNT_LINES)})
    header_row = rows[0] if has_header else []
    records = rows[1:] if has_header else rows[:PREVIEW_ROWS]
    if has_header and not records:
        names = len(rows[0])
        raise InputError(f"{name}: only a header line ({names} name{'s' if names != 1 else ''}), no records")
    columns = len(rows[0])
    return CsvPreview(
        name=name,
        format="csv",
        delimiter=used,
        sniffed=sniffed,
        header=has_header,
        header_guess=header_guess,
        header_row=header_row,
        rows=records[:PREVIEW_ROWS],
        columns=columns,
        widths=widths,
        counts=counts,
        truncated=truncated,
        problem=column_problem(used, columns, counts),
    )


__all__ = [
    "DELIMITERS",
    "SAMPLE_BYTES",
    "CsvPreview",
    "column_problem",
    "csv_preview",
    "delimiter_name",
    "sniff",
]
