"""One read of a written release's bytes, beside the verifier's SQL: the SHA-256 of each of its
files (the evidence's digests) and, for a CSV release, whether a control character is among
them (:func:`safeshare.verify.control.csv_holds_control`'s test, chunk by chunk).

The verifier's DuckDB scan of the file and this read run at the same time (:class:`FileScan`
starts a thread): DuckDB and :mod:`hashlib` release the GIL while they work, so on a CSV
release of 10 million records (0.99 GB) the hash (0.9 s) and the byte test (0.4 s) no longer
come after the scan but beside it; and the evidence takes the digests from here instead of
reading the file again (:class:`~safeshare.workflows.evidence.FileDigest`).

What the digests are of: the bytes this thread read from the staged file, which nothing writes
after the writer closed it; the publication moves the file, it does not change it.
"""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

from safeshare.io import files_of
from safeshare.verify.control import ControlScan

#: Bytes read at a time: small enough that a stop request is seen within milliseconds.
CHUNK = 4 << 20


class ScanStopped(Exception):
    """The scan was stopped before it ended (the verification was interrupted)."""


@dataclass
class ScanResult:
    """What :class:`FileScan` read: ``digests``, the SHA-256 (hex) of each file of the release
    by its path; ``holds_control``, whether a CSV release's bytes hold a control character
    (``None`` when not looked for: a Parquet release's bytes are compressed)."""

    digests: dict[Path, str] = field(default_factory=dict)
    holds_control: bool | None = None


class FileScan:
    """Read every file of the release at ``path`` once, in a thread started on entering the
    ``with`` block: each file's SHA-256 and, with ``control``, the control-character test.
    :meth:`result` waits for it; leaving the block (an error, Ctrl-C) stops the thread at its
    next chunk and waits for it, so no thread outlives the verification."""

    def __init__(self, path: Path, control: bool) -> None:
        self.path = Path(path)
        self.control = control
        self._stop = threading.Event()
        self._result: ScanResult | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="safeshare-file-scan", daemon=True)

    def __enter__(self) -> FileScan:
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._thread.join()

    def result(self) -> ScanResult:
        """The scan's result, once it has read every file (an error of the read is raised here)."""
        self._thread.join()
        if self._error is not None:
            raise self._error
        assert self._result is not None
        return self._result

    def _run(self) -> None:
        try:
            self._result = self._scan()
        except BaseException as exc:  # handed to the caller by result()
            self._error = exc

    def _scan(self) -> ScanResult:
        found = ScanResult(holds_control=False if self.control else None)
        for part in files_of(self.path):
            digest = hashlib.sha256()
            test = ControlScan() if self.control and not found.holds_control else None
            with open(part, "rb") as handle:
                while chunk := handle.read(CHUNK):
                    if self._stop.is_set():
                        raise ScanStopped(str(part))
                    digest.update(chunk)
                    if test is not None and test.feed(chunk):
                        found.holds_control, test = True, None
            found.digests[part] = digest.hexdigest()
        return found


__all__ = ["CHUNK", "FileScan", "ScanResult", "ScanStopped"]
