"""Uploads waiting for their preview to be confirmed: :class:`PendingStore`.

The home page's upload first shows a preview (the sniffed delimiter, a header guess, the first
records: :func:`safeshare.api.workbench.input_preview`) and makes a project only on "Create
project" (issue 35). Until then the uploaded file waits in
``<workdir>/safeshare-projects/.pending/<id>/`` (mode 0700) beside ``pending.json`` (the name
given, the file's name, or the path of a file picked under the work directory, and when it
came). Nothing there is ever served: the preview page shows the child's preview only. A pending
upload is removed on Cancel, when its project is created, and after :data:`PENDING_SECONDS`
(swept whenever the home page or a preview is opened, and when the server starts).
"""

from __future__ import annotations

import json
import re
import secrets
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from safeshare.app_runner import to_json
from safeshare.errors import InputError
from safeshare.ui.projects import check_name
from safeshare.ui.uploads import SavedFile

#: How long an upload waits for "Create project", seconds.
PENDING_SECONDS = 3600
PENDING_ID = re.compile(r"^[0-9a-f]{16}$")


@dataclass(frozen=True)
class Pending:
    """One upload waiting for its preview to be confirmed."""

    directory: Path
    meta: dict[str, Any]

    @property
    def id(self) -> str:
        return self.directory.name

    @property
    def name(self) -> str:
        """The project's name the form gave."""
        return str(self.meta.get("name") or "")

    @property
    def file(self) -> Path | None:
        """The uploaded file, when the input was uploaded (not picked under the work directory)."""
        name = self.meta.get("file")
        return self.directory / check_name(str(name)) if name else None

    @property
    def picked(self) -> str | None:
        """The path of the file picked under the work directory, when it was picked."""
        path = self.meta.get("path")
        return str(path) if path else None

    @property
    def label(self) -> str:
        """What the page calls the input: the upload's name or the picked path."""
        return str(self.meta.get("file") or self.meta.get("path") or "")


class PendingStore:
    """The pending uploads of one work directory (``root``: ``safeshare-projects/.pending``)."""

    def __init__(self, root: Path, seconds: float = PENDING_SECONDS) -> None:
        self.root = root
        self.seconds = seconds

    def add(self, name: str, upload: SavedFile | None = None, picked: str | None = None) -> Pending:
        """Keep ``upload`` (moved here) or the ``picked`` path for a preview; the pending upload."""
        self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
        directory = self.root / secrets.token_hex(8)
        directory.mkdir(mode=0o700)
        meta: dict[str, Any] = {"name": name.strip()[:100], "created": time.time()}
        try:
            if upload is not None:
                shutil.move(str(upload.path), directory / check_name(upload.name))
                meta["file"] = upload.name
            else:
                meta["path"] = picked
            (directory / "pending.json").write_text(to_json(meta) + "\n", encoding="utf-8")
        except BaseException:
            shutil.rmtree(directory, ignore_errors=True)
            raise
        return Pending(directory, meta)

    def get(self, pending_id: str) -> Pending:
        """The pending upload ``pending_id``; :class:`InputError` when there is none (any more)."""
        gone = InputError(
            f"upload {pending_id[:40]!r}: no such upload waiting (it was created, cancelled, or "
            f"removed after {self.seconds / 60:g} minutes): upload the file again"
        )
        if not PENDING_ID.match(pending_id):
            raise gone
        directory = self.root / pending_id
        try:
            meta = json.loads((directory / "pending.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            raise gone from None
        if not isinstance(meta, dict) or self._expired(meta):
            self.remove(pending_id)
            raise gone
        return Pending(directory, meta)

    def remove(self, pending_id: str) -> None:
        if PENDING_ID.match(pending_id):
            shutil.rmtree(self.root / pending_id, ignore_errors=True)

    def _expired(self, meta: dict[str, Any], now: float | None = None) -> bool:
        created = meta.get("created")
        if not isinstance(created, int | float):
            return True
        return ((time.time() if now is None else now) - float(created)) > self.seconds

    def sweep(self, now: float | None = None) -> list[str]:
        """Remove the pending uploads older than :attr:`seconds` (and any unreadable one older
        than that by its folder's time); their ids."""
        if not self.root.is_dir():
            return []
        removed = []
        moment = time.time() if now is None else now
        for directory in self.root.iterdir():
            if not directory.is_dir() or directory.is_symlink():
                continue
            try:
                meta = json.loads((directory / "pending.json").read_text(encoding="utf-8"))
            except (OSError, ValueError):
                meta = {"created": directory.stat().st_mtime}
            if not isinstance(meta, dict) or self._expired(meta, moment):
                shutil.rmtree(directory, ignore_errors=True)
                removed.append(directory.name)
        return removed


__all__ = ["PENDING_SECONDS", "Pending", "PendingStore"]
