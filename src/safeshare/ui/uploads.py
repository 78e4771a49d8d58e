"""Uploads written only where they belong: a streaming ``multipart/form-data`` reader.

Starlette's own form parser spools file parts to the system's temporary directory; person-level
data must not leave the work directory, so the workbench parses the request body itself
(python-multipart's streaming parser) and writes every file part straight into a private
folder of the project (``.incoming-<random>/``), from where the caller moves it into place.

* Every file name is checked before a byte is written (:func:`~safeshare.ui.projects.check_name`:
  no directory part, no ``..``, no control character, no leading dot): ``../../etc/passwd`` is
  refused with 400, not cleaned up into something else.
* The body is limited (``max_bytes``, 413 beyond it) and so are the number of parts and the size
  of a text field; on any refusal the partial files are removed.
"""

from __future__ import annotations

import secrets
import shutil
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from safeshare.errors import InputError
from safeshare.ui.projects import check_name

MAX_FIELD_BYTES = 1 << 20
MAX_PARTS = 200


class UploadError(InputError):
    """An upload refused; ``status`` is the HTTP status to answer with."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


@dataclass
class SavedFile:
    field: str
    name: str
    path: Path
    size: int


@dataclass
class Upload:
    """The parsed form: text fields (a list per name) and the saved files, in a private folder."""

    folder: Path
    fields: dict[str, list[str]] = field(default_factory=dict)
    files: list[SavedFile] = field(default_factory=list)

    def value(self, name: str, default: str = "") -> str:
        values = self.fields.get(name)
        return values[0] if values else default

    def files_of(self, name: str) -> list[SavedFile]:
        return [f for f in self.files if f.field == name and f.size > 0]

    def discard(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


def _disposition(value: bytes) -> dict[str, str]:
    from python_multipart.multipart import parse_options_header

    _, options = parse_options_header(value)
    return {k.decode("latin-1"): v.decode("utf-8", "replace") for k, v in options.items()}


async def read_upload(
    content_type: str, body: AsyncIterator[bytes], destination: Path, max_bytes: int
) -> Upload:
    """Parse a ``multipart/form-data`` body into ``destination/.incoming-<random>/``."""
    from python_multipart.multipart import MultipartParser, parse_options_header

    kind, options = parse_options_header(content_type)
    boundary = options.get(b"boundary")
    if kind != b"multipart/form-data" or not boundary:
        raise UploadError("expected a multipart/form-data upload", 400)
    folder = destination / f".incoming-{secrets.token_hex(6)}"
    folder.mkdir(mode=0o700, parents=True)
    upload = Upload(folder)
    state: dict[str, Any] = {
        "headers": {},
        "field": b"",
        "value": b"",
        "file": None,
        "buf": bytearray(),
        "parts": 0,
    }

    def on_header_field(data: bytes, start: int, end: int) -> None:
        state["field"] += data[start:end]

    def on_header_value(data: bytes, start: int, end: int) -> None:
        state["value"] += data[start:end]

    def on_header_end() -> None:
        state["headers"][state["field"].decode("latin-1").lower()] = state["value"]
        state["field"], state["value"] = b"", b""

    def on_part_begin() -> None:
        state["headers"], state["buf"], state["file"] = {}, bytearray(), None
        state["parts"] += 1
        if state["parts"] > MAX_PARTS:
            raise UploadError(f"more than {MAX_PARTS} parts in one upload", 400)

    def on_headers_finished() -> None:
        disposition = _disposition(state["headers"].get("content-disposition", b""))
        state["name"] = disposition.get("name", "")
        filename = disposition.get("filename")
        if filename is not None:
            if filename == "":  # an empty file input
                state["file"], state["saved"] = None, None
                state["skip"] = True
                return
            check_name(filename, "upload name")
            if any(f.name == filename for f in upload.files):
                raise UploadError(f"upload name {filename!r} given twice", 400)
            path = folder / filename
            handle: IO[bytes] = open(path, "xb")  # noqa: SIM115 - closed in on_part_end
            state["file"], state["skip"] = handle, False
            state["saved"] = SavedFile(state["name"], filename, path, 0)
        else:
            state["file"], state["skip"] = None, False
            state["saved"] = None

    def on_part_data(data: bytes, start: int, end: int) -> None:
        chunk = data[start:end]
        if state.get("skip"):
            return
        if state["file"] is not None:
            state["file"].write(chunk)
            state["saved"].size += len(chunk)
        else:
            state["buf"] += chunk
            if len(state["buf"]) > MAX_FIELD_BYTES:
                raise UploadError(
                    f"form field {state['name']!r} is larger than {MAX_FIELD_BYTES:,} bytes", 413
                )

    def on_part_end() -> None:
        if state["file"] is not None:
            state["file"].close()
            upload.files.append(state["saved"])
            state["file"] = None
        elif not state.get("skip"):
            upload.fields.setdefault(state["name"], []).append(state["buf"].decode("utf-8", "replace"))

    parser = MultipartParser(
        boundary,
        {
            "on_part_begin": on_part_begin,
            "on_part_data": on_part_data,
            "on_part_end": on_part_end,
            "on_header_field": on_header_field,
            "on_header_value": on_header_value,
            "on_header_end": on_header_end,
            "on_headers_finished": on_headers_finished,
        },
    )
    from python_multipart.exceptions import FormParserError

    received = 0
    try:
        async for chunk in body:
            received += len(chunk)
            if received > max_bytes:
                raise UploadError(f"upload larger than the limit of {max_bytes:,} bytes", 413)
            parser.write(chunk)
        parser.finalize()
    except FormParserError:  # a body that is not the multipart/form-data it says it is
        if state.get("file") is not None:
            state["file"].close()
        upload.discard()
        raise UploadError("the upload is not a valid multipart/form-data body", 400) from None
    except BaseException:
        if state.get("file") is not None:
            state["file"].close()
        upload.discard()
        raise
    return upload


__all__ = ["SavedFile", "Upload", "UploadError", "read_upload"]
