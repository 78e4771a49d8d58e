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

Everything an append needs is checked **before the release is published** (issue 30, item 9):
:func:`check_ledger` before any data is read, and :class:`LedgerAppend` around the
publication itself, which takes the lock, re-reads the chain and writes the new ledger to its
temporary file *before* the output directory is swapped in, so that only the final rename
comes after it. Refused, with one line: a ledger that is a symbolic link's target is used
through its real path (replacing the link by a file would fork the chain: the old chain stays
at the target, a new one starts at the link), one with other hard links, a ledger that is not
a regular file, whose directory is missing or not writable, whose chain is broken (a truncated
last line, an edited entry), that is one of the run's inputs (the data, the configuration, a
hierarchy, the key) or lies inside the output directory (which the next release replaces;
its lock file there would also make the next run refuse ``--out`` for good).

Reading is bounded: a ledger that is not a regular file (``/dev/zero``, a FIFO) is refused, a
line longer than :data:`MAX_LINE_BYTES` or nested deeper than :data:`MAX_DEPTH` is a broken
entry, never read whole or parsed.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import getpass
import hashlib
import json
import os
import re
import stat
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from safeshare.errors import InputError
from safeshare.io import files_of, same_file, sha256_file

GENESIS = "0" * 64

#: How long an append waits for another one to finish before giving up, seconds.
LOCK_TIMEOUT = 60.0

#: Keys every entry has (besides whatever the caller adds).
REQUIRED = ("seq", "time", "safeshare_version", "approved_by", "files", "prev_sha256", "entry_sha256")

#: The longest line a ledger may hold, in bytes. An entry is a release's files (a Spark release:
#: one record of about 150 bytes per part file), its figures and its warnings: a few kilobytes.
MAX_LINE_BYTES = 16 << 20

#: The deepest nesting of arrays and objects in an entry (safeshare writes 3 levels).
MAX_DEPTH = 32


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


def file_records(
    role: str, paths: Sequence[Path], ledger: Path, moved: tuple[Path, Path] | None = None
) -> list[dict[str, Any]]:
    """``{role, path, sha256, bytes}`` of every file of ``paths`` (directories expanded),
    the path relative to the ledger's directory.

    ``moved``: ``(stage, out_dir)``: a file under ``stage`` (a staged release, hashed before it
    is published) is recorded at its path under ``out_dir``, where the publication puts it."""
    base = Path(ledger).absolute().parent
    out = []
    for given in paths:
        for path in files_of(Path(given)):
            try:
                size = path.stat().st_size
                digest = sha256_file(path)
            except OSError as exc:
                raise LedgerError(f"cannot hash {path}: {exc.strerror or exc}") from None
            shown = path.absolute()
            if moved is not None and shown.is_relative_to(moved[0].absolute()):
                shown = moved[1].absolute() / shown.relative_to(moved[0].absolute())
            out.append(
                {
                    "role": role,
                    "path": os.path.relpath(shown, base),
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
    moved: tuple[Path, Path] | None = None,
) -> dict[str, Any]:
    """The usual entry of a published release (everything but the chain fields).

    ``files``: role -> paths (``input``, ``config``, ``hierarchy``, ``release``, ``report``);
    ``node``/``levels``: the chosen generalization; ``risk``: the risk figures;
    ``verification``: the verifier's result (``Verification.to_dict()``); ``extra``: more
    keys (engine, seeds, key fingerprint...); ``moved``: ``(stage, out_dir)`` when the
    release is still staged (:func:`file_records`).
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
        "files": [
            record for role, paths in files.items() for record in file_records(role, paths, ledger, moved)
        ],
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


# --------------------------------------------------------------------------- where the ledger is
def ledger_target(ledger: Path) -> Path:
    """The file the ledger at ``ledger`` is, its symbolic links resolved (:class:`LedgerError`
    when it cannot be a ledger).

    Appending replaces the ledger by a new file (a rename): through a link that would replace
    the link and leave the chain at its target, two ledgers from then on. So the real path is
    used, for the lock, the replacement and the paths the entries record; a ledger with
    other hard links (the same fork, by another name) and one that is not a regular file are
    refused, and so is a missing directory."""
    ledger = Path(ledger)
    real = Path(os.path.realpath(ledger))
    if not real.parent.is_dir():
        raise LedgerError(f"ledger {ledger}: directory {real.parent} does not exist")
    try:
        info = os.stat(real)
    except FileNotFoundError:
        return real  # a new ledger
    except OSError as exc:
        raise LedgerError(f"ledger {ledger}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(info.st_mode):
        kind = "a directory" if stat.S_ISDIR(info.st_mode) else "not a regular file"
        raise LedgerError(f"ledger {ledger}: {kind}; a ledger is a file of JSON lines")
    if info.st_nlink > 1:
        raise LedgerError(
            f"ledger {ledger}: the file has {info.st_nlink} hard links; an append replaces the file, so "
            "the other names would keep the old chain (a forked ledger): keep one name"
        )
    return real


def check_ledger(
    ledger: Path,
    *,
    protected: Mapping[str, Sequence[Path]] | None = None,
    out_dir: Path | None = None,
    timeout: float = LOCK_TIMEOUT,
) -> Path:
    """Check, before any data is read, everything an append to ``ledger`` will need; its real path.

    ``protected``: what -> files the ledger may not be (the input, the configuration, the
    hierarchies, the key: an append would replace them); ``out_dir``: the output directory the
    ledger may not be in (the next release replaces it). Then, under the lock: the chain holds
    (a truncated or edited line is refused here, not after the release was published) and the
    directory takes a new file (the append writes one). :class:`LedgerError` names the problem;
    :class:`LedgerAppend` checks it all again, under the lock, before the release is published.
    """
    real = _check_place(ledger, protected, out_dir)
    with _locked(real, timeout):
        _chain_head(_read(real), real)
        try:
            fd, probe = tempfile.mkstemp(prefix=f".{real.name}.", suffix=".tmp", dir=real.parent)
        except OSError as exc:
            raise LedgerError(
                f"ledger {ledger}: cannot write in {real.parent}: {exc.strerror or exc}; "
                "choose a writable folder for the ledger"
            ) from None
        os.close(fd)
        os.unlink(probe)
    return real


def _check_place(ledger: Path, protected: Mapping[str, Sequence[Path]] | None, out_dir: Path | None) -> Path:
    real = ledger_target(ledger)
    for what, paths in (protected or {}).items():
        for path in paths:
            if same_file(real, Path(path)):
                raise LedgerError(
                    f"ledger {ledger} is the {what} {path}: appending would replace it; "
                    "give the ledger a file of its own"
                )
    if out_dir is not None:
        out = Path(os.path.realpath(out_dir))
        if real == out or real.is_relative_to(out):
            raise LedgerError(
                f"ledger {ledger} is inside the output directory {out_dir}, which every release "
                "replaces as a whole; keep the ledger outside it"
            )
    return real


@contextlib.contextmanager
def _locked(ledger: Path, timeout: float) -> Iterator[None]:
    lock = ledger.parent / f".{ledger.name}.lock"
    try:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        raise LedgerError(
            f"ledger {ledger}: cannot create its lock file {lock}: {exc.strerror or exc}; "
            "choose a writable folder for the ledger"
        ) from None
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


def _read(ledger: Path) -> bytes:
    """The bytes of the (regular) ledger file, or nothing when it does not exist yet."""
    try:
        info = os.stat(ledger)
    except FileNotFoundError:
        return b""
    except OSError as exc:
        raise LedgerError(f"cannot read ledger {ledger}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(info.st_mode):
        raise LedgerError(f"ledger {ledger}: not a regular file")
    try:
        return ledger.read_bytes()
    except OSError as exc:
        raise LedgerError(f"cannot read ledger {ledger}: {exc.strerror or exc}") from None


def _chain_head(data: bytes, ledger: Path) -> tuple[int, str]:
    """``(seq, SHA-256 of the last line)`` of a ledger's bytes whose chain holds; ``(0, GENESIS)``
    when empty. :class:`LedgerError` when it does not: nothing is appended to a broken ledger."""
    if not data:
        return 0, GENESIS
    if not data.endswith(b"\n"):
        raise LedgerError(
            f"ledger {ledger}: its last line is incomplete; run: safeshare ledger verify {ledger}"
        )
    lines = data[:-1].split(b"\n")
    previous = GENESIS
    for seq, raw in enumerate(lines, start=1):
        problem, _ = _check_line(raw, seq, previous)
        if problem is not None:
            last = " (its last line is not a ledger entry)" if seq == len(lines) else ""
            raise LedgerError(
                f"ledger {ledger}: entry {seq} is broken{last}: {problem}; "
                f"run: safeshare ledger verify {ledger}"
            )
        previous = hashlib.sha256(raw).hexdigest()
    return len(lines), previous


class LedgerAppend:
    """One append, in steps around the publication of the release it records::

        with LedgerAppend(ledger, protected=..., out_dir=...) as append:  # lock, checks, chain
            append.prepare(entry)   # the new ledger in a temporary file beside it, fsynced
            ...publish the release...
            append.commit()         # renamed over the ledger; the entry as written

    Everything that can fail (the place, the chain, the directory, the disk) fails in
    ``with`` or :meth:`prepare`, before the release is published; leaving the block without
    :meth:`commit` removes the temporary file and leaves the ledger as it was.
    """

    def __init__(
        self,
        ledger: Path,
        *,
        protected: Mapping[str, Sequence[Path]] | None = None,
        out_dir: Path | None = None,
        timeout: float = LOCK_TIMEOUT,
    ) -> None:
        self.given = Path(ledger)
        self.path = _check_place(self.given, protected, out_dir)
        self._timeout = timeout
        self._lock: contextlib.AbstractContextManager[None] | None = None
        self._data = b""
        self._head = (0, GENESIS)
        self._tmp: Path | None = None
        self._written: dict[str, Any] | None = None

    def __enter__(self) -> LedgerAppend:
        self._lock = _locked(self.path, self._timeout)
        self._lock.__enter__()
        try:
            self._data = _read(self.path)
            self._head = _chain_head(self._data, self.path)
        except BaseException:
            self._lock.__exit__(None, None, None)
            self._lock = None
            raise
        return self

    def prepare(self, entry: Mapping[str, Any]) -> dict[str, Any]:
        """Chain ``entry`` (``seq``, ``prev_sha256``, ``entry_sha256`` set here) and write the
        whole new ledger to a temporary file beside it; the entry as it will be written."""
        assert self._lock is not None, "prepare() outside the with block"
        missing = [k for k in REQUIRED if k not in entry and k not in ("seq", "prev_sha256", "entry_sha256")]
        if missing:
            raise InputError(f"ledger entry: missing {', '.join(missing)}")
        seq, previous = self._head
        written = {k: v for k, v in entry.items() if k not in ("seq", "prev_sha256", "entry_sha256")}
        written.update(seq=seq + 1, prev_sha256=previous)
        try:
            written["entry_sha256"] = entry_hash(written)
            line = canonical(written) + "\n"
        except (TypeError, ValueError) as exc:
            raise InputError(f"ledger entry: not JSON ({exc})") from None
        self._discard()
        self._tmp = _write_beside(self.path, self._data + line.encode("ascii"))
        self._written = written
        return written

    def commit(self) -> dict[str, Any]:
        """Rename the prepared ledger over the ledger (then fsync the directory); the entry."""
        assert self._tmp is not None and self._written is not None, "commit() before prepare()"
        try:
            os.replace(self._tmp, self.path)
        except OSError as exc:
            raise LedgerError(f"cannot replace ledger {self.given}: {exc.strerror or exc}") from None
        self._tmp = None
        _fsync_directory(self.path.parent)
        return self._written

    def _discard(self) -> None:
        if self._tmp is not None:
            self._tmp.unlink(missing_ok=True)
            self._tmp = None

    def __exit__(self, *exc: object) -> None:
        try:
            self._discard()
        finally:
            if self._lock is not None:
                self._lock.__exit__(None, None, None)
                self._lock = None


def append_entry(ledger: Path, entry: Mapping[str, Any], timeout: float = LOCK_TIMEOUT) -> dict[str, Any]:
    """Append ``entry`` to the ledger at ``ledger`` (created if missing); the entry as written.

    ``seq``, ``prev_sha256`` and ``entry_sha256`` are set here, under the lock (see the
    module docstring); the other required keys must be in ``entry``. A release's append goes
    through :class:`LedgerAppend` instead, prepared before the release is published.
    """
    missing = [k for k in REQUIRED if k not in entry and k not in ("seq", "prev_sha256", "entry_sha256")]
    if missing:
        raise InputError(f"ledger entry: missing {', '.join(missing)}")
    with LedgerAppend(ledger, timeout=timeout) as append:
        append.prepare(entry)
        return append.commit()


def _write_beside(ledger: Path, content: bytes) -> Path:
    """``content`` in a new temporary file beside ``ledger`` (its mode), fsynced; its path."""
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{ledger.name}.", suffix=".tmp", dir=ledger.parent)
    except OSError as exc:
        raise LedgerError(
            f"ledger {ledger}: cannot write in {ledger.parent}: {exc.strerror or exc}; "
            "choose a writable folder for the ledger"
        ) from None
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(content)
            handle.flush()
            os.fsync(handle.fileno())
        if ledger.exists():
            os.chmod(tmp, ledger.stat().st_mode & 0o777)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise LedgerError(f"cannot write ledger {ledger}: {exc.strerror or exc}") from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return Path(tmp)


def _fsync_directory(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


# --------------------------------------------------------------------------- reading
#: A JSON string (skipped) or a bracket: what :func:`_depth` counts.
_STRING_OR_BRACKET = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]')


def _depth(raw: bytes) -> int:
    """The deepest nesting of arrays and objects in the JSON text ``raw`` (strings skipped)."""
    depth = deepest = 0
    for match in _STRING_OR_BRACKET.finditer(raw):
        token = match.group()
        if token in (b"[", b"{"):
            depth += 1
            deepest = max(deepest, depth)
            if deepest > MAX_DEPTH:
                break
        elif token in (b"]", b"}"):
            depth -= 1
    return deepest


def _check_line(raw: bytes, seq: int, previous: str) -> tuple[str | None, dict[str, Any] | None]:
    """``(problem, entry)`` of line ``seq`` given the previous line's hash: ``problem`` is
    ``None`` when the line is a whole entry of the chain."""
    if len(raw) > MAX_LINE_BYTES:
        return f"a line longer than {MAX_LINE_BYTES:,} bytes (not an entry safeshare wrote)", None
    if _depth(raw) > MAX_DEPTH:
        return f"nested deeper than {MAX_DEPTH} levels (not an entry safeshare wrote)", None
    try:
        text = raw.decode("ascii")
        entry = json.loads(text)
    except (UnicodeDecodeError, ValueError, RecursionError):
        return "not a JSON line", None
    if not isinstance(entry, dict):
        return "not a JSON object", None
    absent = [k for k in REQUIRED if k not in entry]
    if absent:
        return f"no {absent[0]}", None
    try:
        if canonical(entry) != text:
            return "its bytes differ from the entry's canonical JSON (edited)", None
        own = entry_hash(entry)
    except (ValueError, TypeError, RecursionError):
        return "not canonical JSON", None
    if entry["seq"] != seq:
        return f"seq is {entry['seq']!r}, expected {seq}", None
    if entry["prev_sha256"] != previous:
        return "prev_sha256 is not the SHA-256 of the line before (a line was changed or removed)", None
    if entry["entry_sha256"] != own:
        return "entry_sha256 is not the SHA-256 of the entry (its content was changed)", None
    if not isinstance(entry["files"], list):
        return "files is not a list", None
    return None, entry


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
    """Re-read every entry of the ledger at ``path``: the chain, then the files still there.

    The file is read a line at a time, each line at most :data:`MAX_LINE_BYTES` (a longer
    one is a broken entry, not read further); a ledger that is not a regular file is refused
    (:class:`InputError`), so ``/dev/zero`` or a FIFO is never read. A symbolic link is followed
    to the ledger it names (the entries' paths are relative to that file's directory)."""
    given = Path(path)
    real = Path(os.path.realpath(given))
    try:
        info = os.stat(real)
    except FileNotFoundError:
        raise InputError(f"ledger {given}: no such file") from None
    except OSError as exc:
        raise InputError(f"cannot read ledger {given}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(info.st_mode):
        kind = "a directory" if stat.S_ISDIR(info.st_mode) else "not a regular file"
        raise InputError(f"ledger {given}: {kind}; a ledger is a file of JSON lines")
    entries: list[dict[str, Any]] = []
    previous = GENESIS
    try:
        handle = open(real, "rb")  # noqa: SIM115 - closed below
    except OSError as exc:
        raise InputError(f"cannot read ledger {given}: {exc.strerror or exc}") from None
    with handle:
        seq = 0
        while True:
            try:
                raw = handle.readline(MAX_LINE_BYTES + 2)
            except OSError as exc:
                raise InputError(f"cannot read ledger {given}: {exc.strerror or exc}") from None
            if not raw:
                break
            seq += 1
            if not raw.endswith(b"\n"):
                if len(raw) > MAX_LINE_BYTES:
                    long = f"a line longer than {MAX_LINE_BYTES:,} bytes (not an entry safeshare wrote)"
                    return LedgerVerification(given, _count_lines(handle, seq - 1), False, seq, long)
                return LedgerVerification(given, seq, False, seq, "an incomplete last line (no newline)")
            problem, entry = _check_line(raw[:-1], seq, previous)
            if entry is None:
                return LedgerVerification(given, _count_lines(handle, seq), False, seq, problem)
            previous = hashlib.sha256(raw[:-1]).hexdigest()
            entries.append(entry)
    return _check_files(given, real, entries, previous)


def _count_lines(handle: Any, seen: int) -> int:
    """``seen`` plus the lines left in ``handle`` (read in bounded chunks)."""
    count, last = seen, b"\n"
    while chunk := handle.read(1 << 20):
        count += chunk.count(b"\n")
        last = chunk[-1:]
    return count + (1 if last != b"\n" else 0)


def _check_files(path: Path, real: Path, entries: list[dict[str, Any]], head: str) -> LedgerVerification:
    base = real.parent
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
            if latest.get(name, seq) != seq:
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
