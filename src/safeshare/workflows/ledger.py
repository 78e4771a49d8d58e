"""The release ledger: one hash-chained JSON line per published release (issue 20).

A custodian must be able to say, years later, what was released, from what, under which
settings and by whose approval, and to show that the record was not edited since. The
ledger is a file of JSON lines, one per release, appended after the release is published
(:func:`append_entry`), each holding:

* ``seq`` (1, 2, ...), ``time`` (UTC, ISO 8601), ``safeshare_version``, ``approved_by`` and
  ``run_by`` (the operating-system user);
* ``files``: ``{role, path, sha256, bytes}`` of the input file(s), the configuration, every
  hierarchy file and every released file (``role``: ``input``, ``config``, ``hierarchy``,
  ``release``, ``report``...), paths relative to the ledger's directory;
* whatever the caller adds: the chosen node, the risk figures, the verifier's result
  (:func:`release_entry` builds the usual entry from explicit parameters);
* ``prev_sha256``: the SHA-256 of the previous line's bytes (64 zeros for the first), so
  that the lines form a hash chain; and ``entry_sha256``: the SHA-256 of the entry's own
  canonical JSON without this field.

Every line is canonical JSON (keys sorted, no spaces, ASCII), so that a line re-serializes
to exactly its bytes. :func:`verify_ledger` re-reads every line and checks, in order, that
it is canonical JSON, that ``seq`` counts, that ``prev_sha256`` is the hash of the line
before and ``entry_sha256`` the hash of the entry: a change of any byte of any line breaks
one of these at that line (a change to the last line's values breaks its own hash, its
formatting the canonical form). Then, where the files are still there, their SHA-256: a
path recorded again by a later entry (a release replaced in the same output directory) is
checked against the latest entry only; a missing file is reported, not counted as a break.
The result names the first broken entry.

What the chain proves: that the ledger and the files are as recorded, unless someone
rewrote the ledger from the changed line to its end, recomputing every hash. Keep a copy of
the last line's hash elsewhere (it is printed by ``safeshare ledger verify``) to rule that out.

Appending is atomic and serialized: under an exclusive ``flock`` on ``.NAME.lock`` beside
the ledger, the whole ledger plus the new line is written to a temporary file in the same
directory, fsynced and renamed over the ledger (then the directory is fsynced). A reader
sees the old ledger or the new one, never a partial line, and two concurrent appends give
two whole entries, one after the other.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import getpass
import hashlib
import json
import os
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from safeshare.errors import InputError
from safeshare.io import files_of, sha256_file

GENESIS = "0" * 64

#: How long an append waits for another one to finish before giving up, seconds.
LOCK_TIMEOUT = 60.0

#: Keys every entry has (besides whatever the caller adds).
REQUIRED = ("seq", "time", "safeshare_version", "approved_by", "files", "prev_sha256", "entry_sha256")


class LedgerError(InputError):
    """The ledger cannot be appended to (locked, unreadable, its last line not a whole entry). Exit 2."""


def canonical(entry: Mapping[str, Any]) -> str:
    """The one text of ``entry``: JSON with sorted keys, no spaces, ASCII only, no NaN."""
    return json.dumps(entry, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def entry_hash(entry: Mapping[str, Any]) -> str:
    """SHA-256 of the entry's canonical JSON without its ``entry_sha256``."""
    return _sha256(canonical({k: v for k, v in entry.items() if k != "entry_sha256"}))


def file_records(role: str, paths: Sequence[Path], ledger: Path) -> list[dict[str, Any]]:
    """``{role, path, sha256, bytes}`` of every file of ``paths`` (directories expanded),
    the path relative to the ledger's directory."""
    base = Path(ledger).absolute().parent
    out = []
    for given in paths:
        for path in files_of(Path(given)):
            try:
                size = path.stat().st_size
                digest = sha256_file(path)
            except OSError as exc:
                raise LedgerError(f"cannot hash {path}: {exc.strerror or exc}") from None
            out.append(
                {
                    "role": role,
                    "path": os.path.relpath(path.absolute(), base),
                    "sha256": digest,
                    "bytes": size,
                }
            )
    return out


def release_entry(
    ledger: Path,
    files: Mapping[str, Sequence[Path]],
    approved_by: str,
    *,
    node: Sequence[int] | None = None,
    levels: Mapping[str, int] | None = None,
    risk: Mapping[str, Any] | None = None,
    verification: Mapping[str, Any] | None = None,
    version: str | None = None,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The usual entry of a published release (everything but the chain fields).

    ``files``: role -> paths (``input``, ``config``, ``hierarchy``, ``release``, ``report``);
    ``node``/``levels``: the chosen generalization; ``risk``: the risk figures;
    ``verification``: the verifier's result (``Verification.to_dict()``); ``extra``: more
    keys (engine, seeds, key fingerprint...).
    """
    if not isinstance(approved_by, str) or not approved_by.strip():
        raise InputError(
            "approved_by: say who approved the release (e.g. --approved-by 'J. Doe, privacy officer')"
        )
    if version is None:
        from safeshare import __version__ as version
    entry: dict[str, Any] = {
        "time": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "safeshare_version": version,
        "approved_by": approved_by.strip(),
        "run_by": _user(),
        "files": [record for role, paths in files.items() for record in file_records(role, paths, ledger)],
    }
    if node is not None:
        entry["node"] = [int(level) for level in node]
    if levels is not None:
        entry["levels"] = {str(k): int(v) for k, v in levels.items()}
    if risk is not None:
        entry["risk"] = dict(risk)
    if verification is not None:
        entry["verification"] = dict(verification)
    for key, value in (extra or {}).items():
        entry.setdefault(key, value)
    return entry


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"


@contextlib.contextmanager
def _locked(ledger: Path, timeout: float) -> Iterator[None]:
    lock = ledger.parent / f".{ledger.name}.lock"
    fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    holder = os.pread(fd, 64, 0).decode("ascii", "replace").strip()
                    raise LedgerError(
                        f"ledger {ledger}: another safeshare run (pid {holder or '?'}) has held it for "
                        f"{timeout:g} s; try again when it has finished"
                    ) from None
                time.sleep(0.02)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
        yield
    finally:
        os.close(fd)  # releases the flock


def _last_line(data: bytes, ledger: Path) -> tuple[int, str]:
    """``(seq, SHA-256 of the last line)`` of a ledger's bytes; ``(0, GENESIS)`` when empty."""
    if not data:
        return 0, GENESIS
    if not data.endswith(b"\n"):
        raise LedgerError(
            f"ledger {ledger}: its last line is incomplete; run: safeshare ledger verify {ledger}"
        )
    last = data[:-1].rsplit(b"\n", 1)[-1]
    try:
        entry = json.loads(last.decode("ascii"))
        seq = int(entry["seq"])
    except (UnicodeDecodeError, ValueError, KeyError, TypeError):
        raise LedgerError(
            f"ledger {ledger}: its last line is not a ledger entry; run: safeshare ledger verify {ledger}"
        ) from None
    return seq, hashlib.sha256(last).hexdigest()


def append_entry(ledger: Path, entry: Mapping[str, Any], timeout: float = LOCK_TIMEOUT) -> dict[str, Any]:
    """Append ``entry`` to the ledger at ``ledger`` (created if missing); the entry as written.

    ``seq``, ``prev_sha256`` and ``entry_sha256`` are set here, under the lock (see the
    module docstring); the other required keys must be in ``entry``.
    """
    ledger = Path(ledger)
    missing = [k for k in REQUIRED if k not in entry and k not in ("seq", "prev_sha256", "entry_sha256")]
    if missing:
        raise InputError(f"ledger entry: missing {', '.join(missing)}")
    if not ledger.parent.is_dir():
        raise LedgerError(f"ledger {ledger}: directory {ledger.parent} does not exist")
    with _locked(ledger, timeout):
        try:
            data = ledger.read_bytes() if ledger.exists() else b""
        except OSError as exc:
            raise LedgerError(f"cannot read ledger {ledger}: {exc.strerror or exc}") from None
        seq, previous = _last_line(data, ledger)
        written = {k: v for k, v in entry.items() if k not in ("seq", "prev_sha256", "entry_sha256")}
        written.update(seq=seq + 1, prev_sha256=previous)
        try:
            written["entry_sha256"] = entry_hash(written)
            line = canonical(written) + "\n"
        except (TypeError, ValueError) as exc:
            raise InputError(f"ledger entry: not JSON ({exc})") from None
        _replace(ledger, data + line.encode("ascii"))
    return written


def _replace(ledger: Path, content: bytes) -> None:
    """Write ``content`` to a temporary file beside ``ledger``, fsync, rename over it, fsync the directory."""
    fd, tmp = tempfile.mkstemp(prefix=f".{ledger.name}.", suffix=".tmp", dir=ledger.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(content)
            handle.flush()
            os.fsync(handle.fileno())
        if ledger.exists():
            os.chmod(tmp, ledger.stat().st_mode & 0o777)
        os.replace(tmp, ledger)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    directory = os.open(ledger.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)


@dataclass
class LedgerVerification:
    """The outcome of :func:`verify_ledger`: ``ok``, or the first broken entry and why."""

    path: Path
    entries: int
    ok: bool
    broken_entry: int | None = None
    problem: str | None = None
    files_checked: int = 0
    files_missing: list[str] = field(default_factory=list)
    head_sha256: str | None = None

    def summary(self) -> str:
        """One line for the terminal."""
        if not self.ok:
            return f"ledger {self.path}: entry {self.broken_entry} is broken: {self.problem}"
        missing = f", {len(self.files_missing)} missing (not checked)" if self.files_missing else ""
        return (
            f"ledger {self.path}: {self.entries} entries, the hash chain holds; {self.files_checked} files "
            f"match their SHA-256{missing}; last line's SHA-256 {self.head_sha256}"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "entries": self.entries,
            "ok": self.ok,
            "broken_entry": self.broken_entry,
            "problem": self.problem,
            "files_checked": self.files_checked,
            "files_missing": list(self.files_missing),
            "head_sha256": self.head_sha256,
        }


def verify_ledger(path: Path) -> LedgerVerification:
    """Re-read every entry of the ledger at ``path``: the chain, then the files still there."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise InputError(f"ledger {path}: no such file") from None
    except OSError as exc:
        raise InputError(f"cannot read ledger {path}: {exc.strerror or exc}") from None
    lines = data.split(b"\n")
    complete = lines[:-1]  # the bytes after the last newline: an incomplete line (or nothing)
    entries: list[dict[str, Any]] = []
    previous = GENESIS

    def broken(seq: int, problem: str) -> LedgerVerification:
        return LedgerVerification(path, len(complete) + (1 if lines[-1] else 0), False, seq, problem)

    for seq, raw in enumerate(complete, start=1):
        try:
            text = raw.decode("ascii")
            entry = json.loads(text)
        except (UnicodeDecodeError, ValueError):
            return broken(seq, "not a JSON line")
        if not isinstance(entry, dict):
            return broken(seq, "not a JSON object")
        absent = [k for k in REQUIRED if k not in entry]
        if absent:
            return broken(seq, f"no {absent[0]}")
        try:
            if canonical(entry) != text:
                return broken(seq, "its bytes differ from the entry's canonical JSON (edited)")
        except ValueError:
            return broken(seq, "not canonical JSON")
        if entry["seq"] != seq:
            return broken(seq, f"seq is {entry['seq']!r}, expected {seq}")
        if entry["prev_sha256"] != previous:
            return broken(
                seq, "prev_sha256 is not the SHA-256 of the line before (a line was changed or removed)"
            )
        if entry["entry_sha256"] != entry_hash(entry):
            return broken(seq, "entry_sha256 is not the SHA-256 of the entry (its content was changed)")
        if not isinstance(entry["files"], list):
            return broken(seq, "files is not a list")
        previous = hashlib.sha256(raw).hexdigest()
        entries.append(entry)
    if lines[-1]:
        return broken(len(complete) + 1, "an incomplete last line (no newline)")
    return _check_files(path, entries, previous)


def _check_files(path: Path, entries: list[dict[str, Any]], head: str) -> LedgerVerification:
    base = path.absolute().parent
    latest: dict[str, int] = {}
    for seq, entry in enumerate(entries, start=1):
        for record in entry["files"]:
            if isinstance(record, dict) and isinstance(record.get("path"), str):
                latest[record["path"]] = seq
    checked, missing = 0, []
    for seq, entry in enumerate(entries, start=1):
        for record in entry["files"]:
            if not isinstance(record, dict) or not {"path", "sha256"} <= record.keys():
                return LedgerVerification(
                    path, len(entries), False, seq, "a file record without path and sha256"
                )
            name = str(record["path"])
            if latest[name] != seq:
                continue  # replaced by a later release: checked against that entry
            file = base / name
            if not file.is_file():
                missing.append(name)
                continue
            if sha256_file(file) != record["sha256"]:
                return LedgerVerification(
                    path,
                    len(entries),
                    False,
                    seq,
                    f"file {name} ({record.get('role', 'file')}) changed since",
                )
            checked += 1
    return LedgerVerification(
        path, len(entries), True, files_checked=checked, files_missing=missing, head_sha256=head
    )
