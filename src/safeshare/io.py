"""Atomic file output and the publishing protocol of an output directory.

Single files (a hierarchy, a flattened table) are written to a temporary file
beside the target and renamed over it with :func:`os.replace`, which is atomic
on POSIX: a reader sees either the old file or the complete new one. Before any
input is read, a command that writes one file refuses an output that is one of
its inputs (:func:`refuse_overwriting`): ``hierarchy build --out data.csv``
once replaced the data it was built from.

An output *directory* (a release with its reports, a dry-run distribution) is
published as one unit by :class:`OutputDirectory`, so that after a failure or a
kill at any moment ``OUT`` holds either the complete previous output or the
complete new one, never a mix (a new release.csv beside old reports, or a
stale release.csv beside a new release.parquet). The protocol, for
``OUT = PARENT/NAME``:

1. **lock**: take an exclusive, non-blocking ``flock`` on ``PARENT/.NAME.lock``
   (the file stays; the kernel drops the lock when the process dies). A second
   run into the same ``OUT`` stops at once with a one-line error naming the
   first (its pid), so two runs never interleave.
2. **recover**: holding the lock, no other run is alive for ``OUT``, so every
   ``.NAME.staging-*`` and ``.NAME.old-*`` left by a killed run is debris: an
   old output set aside by step 6b is renamed back if ``OUT`` is missing, and
   everything else is removed (staging dirs may hold unverified releases).
   Then the same for every other ``NAME2`` of ``PARENT`` with such folders whose lock is
   free (:func:`recover_stale`: what a SIGKILL left for another output).
3. **check**: ``OUT`` may be missing, an empty directory, or a previous
   safeshare output: a directory with the marker file ``.safeshare-output``
   (JSON: the names safeshare wrote) and nothing else. Anything else is
   refused with one line, so safeshare never deletes a file it did not
   write (an input kept inside ``OUT`` included).
4. **stage**: the caller writes the complete new output into a private
   directory ``PARENT/.NAME.staging-XXXX`` (mode 0700) and verifies it there.
5. **seal**: the marker is written last, every file and the directory are
   fsynced, and the directory gets the permissions of the old ``OUT``.
6. **swap**: one ``renameat2(RENAME_EXCHANGE)`` swaps the staged directory and
   ``OUT`` atomically (a plain ``rename`` when there is no ``OUT`` yet). Where
   the exchange is unavailable: (6a) rename ``OUT`` aside to ``.NAME.old-XXXX``,
   (6b) rename the staged directory to ``OUT``; an exception between the two
   renames the old one back at once, a kill is repaired by step 2 of the next run.
7. **discard**: the previous output (after an exchange it sits at the staging
   path and is first renamed to ``.NAME.old-XXXX``, so that a ``.staging-*``
   directory only ever holds an unpublished output) is removed and the lock
   released.

SIGINT and SIGTERM are held back (:func:`signals_deferred`) during step 6 and
while a staging directory is removed, so an interrupt can neither split the
swap from its bookkeeping nor leave a half-removed staging directory behind;
the pending signal is delivered right after. :func:`published_paths` tells the
command line whether an interrupt came before or after the swap.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import glob
import hashlib
import json
import os
import re
import shutil
import signal
import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType

from safeshare.errors import InputError

MARKER = ".safeshare-output"
"""The file that marks a directory as a safeshare output (JSON: ``{"files": [...]}``)."""

_AT_FDCWD = -100
_RENAME_EXCHANGE = 2

_published: list[Path] = []


class OutputError(InputError):
    """An output directory cannot be written (permissions, disk full, not ours, locked). Exit status 2."""


def published_paths() -> list[Path]:
    """The output directories swapped into place by this process (for the interrupt message)."""
    return list(_published)


def interrupt_message(signum: int) -> str:
    """What an interrupt left behind, in one line: whether an output was published before it
    came (:func:`published_paths`). The command line and the workbench say the same."""
    what = "interrupted" if signum == signal.SIGINT else "terminated"
    published = published_paths()
    if published:
        return f"{what} after the new output was published to {published[-1]}"
    return f"{what}; nothing was published"


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextmanager
def atomic_path(target: Path) -> Iterator[Path]:
    """Yield a temporary path next to ``target``; rename it over ``target`` on success.

    On an exception the temporary file is removed and ``target`` is untouched.
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        if tmp_path.exists():
            os.chmod(tmp_path, 0o666 & ~_umask())
        os.replace(tmp_path, target)
    except BaseException:
        tmp_path.unlink(missing_ok=True)
        raise


def same_file(a: Path, b: Path) -> bool:
    """Whether ``a`` and ``b`` name one file: the same resolved path (symbolic links, ``..``,
    relative or absolute), or the same device and inode (hard links, bind mounts)."""
    if Path(os.path.realpath(a)) == Path(os.path.realpath(b)):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist (yet): not the same file
        return False


def refuse_overwriting(out_path: Path, inputs: Iterable[Path], what: str = "--out") -> None:
    """Raise :class:`OutputError` when writing ``out_path`` would replace one of ``inputs``.

    For the commands that write a single file (``hierarchy build``, ``flatten``), called
    before any input is read: the output is written atomically (:func:`atomic_path`), which
    would replace an input whole. ``what`` names the output in the message (the option).
    Files are compared by :func:`same_file`. An output *directory* is guarded instead by
    :class:`OutputDirectory` (it never replaces a directory holding files it did not write).
    """
    for source in inputs:
        if same_file(Path(out_path), Path(source)):
            raise OutputError(
                f"{what} {out_path} is the input {source}: refusing to overwrite an input; "
                "choose another output file"
            )


def atomic_write_text(target: Path, text: str, encoding: str = "utf-8") -> None:
    """Write ``text`` to ``target`` atomically."""
    with atomic_path(target) as tmp:
        tmp.write_text(text, encoding=encoding)


def atomic_write(target: Path, writer: Callable[[Path], None]) -> None:
    """Call ``writer(tmp_path)`` and atomically move the result to ``target``."""
    with atomic_path(target) as tmp:
        writer(tmp)


# --------------------------------------------------------------------------- signals
@contextmanager
def signals_deferred() -> Iterator[None]:
    """Hold SIGINT and SIGTERM back for the duration of the block (main thread only).

    The Python-level handlers are replaced by one that only records the signal; when the
    block ends the previous handlers come back and each recorded signal is raised again,
    so it takes its usual effect (an exception, or the default action) right after the
    block. (A ``pthread_sigmask`` of the main thread would not do: the kernel may deliver
    the signal to another thread, such as one of DuckDB's, and Python then runs the
    handler in the main thread at once.)
    """
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []

    def hold(signum: int, frame: object) -> None:
        caught.append(signum)

    previous: dict[signal.Signals, signal._HANDLER] = {}
    try:
        for signum in (signal.SIGINT, signal.SIGTERM):  # installed inside the try: restored even
            previous[signum] = signal.signal(signum, hold)  # if a signal lands between the installs
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old if old is not None else signal.SIG_DFL)
        for held in dict.fromkeys(caught):
            signal.raise_signal(held)


def _remove_tree(path: Path) -> None:
    """Remove ``path`` (a directory, a file or nothing) without being cut short by an interrupt."""
    with signals_deferred():
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()


# --------------------------------------------------------------------------- the protocol's steps
def _lock_path(out_dir: Path) -> Path:
    return out_dir.parent / f".{out_dir.name}.lock"


def acquire_lock(out_dir: Path) -> int:
    """Step 1: an exclusive lock on ``.NAME.lock`` beside ``out_dir``; its file descriptor."""
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(_lock_path(out_dir), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(fd, 64, 0).decode("ascii", "replace").strip()
        os.close(fd)
        who = f"pid {holder}" if holder.isdigit() else "another process"
        raise OutputError(
            f"another safeshare run ({who}) is writing to {out_dir}; "
            "wait for it to end or choose another --out"
        ) from None
    except BaseException:
        os.close(fd)
        raise
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
    return fd


def release_lock(fd: int) -> None:
    """Step 7 (end): release the lock; the lock file stays for the next run."""
    with contextlib.suppress(OSError):
        os.ftruncate(fd, 0)
    os.close(fd)  # closing the only descriptor releases the flock


def recover(out_dir: Path) -> None:
    """Step 2: repair or remove what a killed run left beside ``out_dir`` (call with the lock
    held), then what killed runs left for the other outputs of the same folder
    (:func:`recover_stale`)."""
    parent = out_dir.parent
    _restore(out_dir)  # killed between steps 6a and 6b: the old output comes back
    for debris in [*parent.glob(f".{out_dir.name}.old-*"), *parent.glob(f".{out_dir.name}.staging-*")]:
        _remove_tree(debris)
    recover_stale(parent, skip=out_dir.name)


#: ``.NAME.staging-XXXXXXXX`` and ``.NAME.old-XXXXXXXX`` (``tempfile.mkdtemp``'s 8 characters).
_DEBRIS = re.compile(r"^\.(?P<name>.+)\.(?:staging|old)-[a-z0-9_]{8}$")


def recover_stale(parent: Path, skip: str | None = None) -> list[str]:
    """Recover what runs killed by SIGKILL (which nothing can clean up at the time) left in
    ``parent`` for any output ``NAME`` but ``skip``: its ``.NAME.staging-*`` folders (unverified
    releases, perhaps) and ``.NAME.old-*`` ones. The names of the outputs recovered.

    Safely: for each ``NAME`` with such a folder (a real directory, not a link), NAME's lock is
    tried without waiting. Held, a run is writing NAME and its folders are left alone; free,
    no live process owns them (the kernel drops a dead process's ``flock``, whatever its pid
    became), and they are recovered under the lock exactly as NAME's own next run would
    (:func:`recover`: an old output set aside comes back if NAME is missing, the rest is
    removed). Nothing else in ``parent`` is touched."""
    parent = Path(parent)
    try:
        entries = list(os.scandir(parent))
    except OSError:
        return []
    names = sorted(
        {
            match.group("name")
            for entry in entries
            if (match := _DEBRIS.match(entry.name)) is not None
            and match.group("name") != skip
            and entry.is_dir(follow_symlinks=False)
        }
    )
    recovered = []
    for name in names:
        out_dir = Path(parent) / name
        try:
            fd = acquire_lock(out_dir)
        except (OutputError, OSError):  # a live run holds it, or its lock cannot be made here
            continue
        try:
            _restore(out_dir)
            pattern = glob.escape(name)
            debris = [*parent.glob(f".{pattern}.old-*"), *parent.glob(f".{pattern}.staging-*")]
            for path in debris:
                _remove_tree(path)
            recovered.append(name)
        except OSError:  # another output's trouble is not this run's: left for its own next run
            continue
        finally:
            release_lock(fd)
    return recovered


def _restore(out_dir: Path) -> None:
    """Rename the newest ``.NAME.old-*`` back to ``out_dir`` if ``out_dir`` is missing."""
    if os.path.lexists(out_dir):
        return
    olds = sorted(out_dir.parent.glob(f".{out_dir.name}.old-*"), key=lambda p: p.stat().st_mtime)
    if olds:
        os.rename(olds[-1], out_dir)


def _marker_files(out_dir: Path) -> list[str] | None:
    """The names listed in ``out_dir``'s marker, or None when it has no readable marker."""
    try:
        doc = json.loads((out_dir / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    files = doc.get("files") if isinstance(doc, dict) else None
    if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
        return None
    return files


def check_replaceable(out_dir: Path) -> None:
    """Step 3: refuse an ``out_dir`` that holds anything safeshare did not write."""
    if not os.path.lexists(out_dir):
        return
    if not out_dir.is_dir():
        raise OutputError(f"output path {out_dir} exists and is not a directory")
    if os.path.ismount(out_dir):
        raise OutputError(
            f"--out {out_dir} is a mount point; safeshare replaces the whole output directory, "
            "so give a directory inside it"
        )
    names = sorted(p.name for p in out_dir.iterdir())
    if not names:
        return
    listed = _marker_files(out_dir)
    if listed is None:
        raise OutputError(
            f"refusing to replace {out_dir}: it is not empty and is not a safeshare output "
            f"(no {MARKER}); choose a new or empty --out directory"
        )
    foreign = [n for n in names if n != MARKER and n not in listed]
    if foreign:
        raise OutputError(
            f"refusing to replace {out_dir}: it holds {foreign[0]!r}, which safeshare did not write; "
            "move it away or choose another --out directory"
        )


def make_stage(out_dir: Path) -> Path:
    """Step 4: the private staging directory ``.NAME.staging-XXXX`` beside ``out_dir``."""
    return Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.staging-", dir=out_dir.parent))


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | (os.O_DIRECTORY if path.is_dir() else 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def seal(stage: Path, out_dir: Path) -> None:
    """Step 5: write the marker, make everything durable, give the directory its final mode."""
    names = sorted(p.name for p in stage.iterdir() if p.name != MARKER)
    marker = stage / MARKER
    marker.write_text(json.dumps({"safeshare_output": 1, "files": names}) + "\n", encoding="utf-8")
    os.chmod(marker, 0o666 & ~_umask())
    for path in stage.rglob("*"):
        if path.is_file() and not path.is_symlink():
            _fsync(path)
    _fsync(stage)
    mode = out_dir.stat().st_mode & 0o7777 if out_dir.is_dir() else 0o777 & ~_umask()
    os.chmod(stage, mode)


def exchange(a: Path, b: Path) -> bool:
    """Step 6: swap two directories atomically (Linux ``renameat2``); False where unsupported."""
    renameat2 = getattr(_libc(), "renameat2", None)
    if renameat2 is None:
        return False
    if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP):
        return False  # an old kernel or a file system without RENAME_EXCHANGE
    raise OSError(code, os.strerror(code), str(b))


def _libc() -> ctypes.CDLL | None:
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


def move_aside(out_dir: Path) -> Path:
    """Step 6a (fallback): rename the previous output to ``.NAME.old-XXXX``; its new path."""
    old = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.old-", dir=out_dir.parent))
    os.rename(out_dir, old)  # replaces the empty placeholder directory
    return old


def _renamed_old(path: Path, out_dir: Path) -> Path:
    """Step 7 (exchange): rename ``path`` to ``.NAME.old-XXXX``; ``path`` itself if that fails."""
    old = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.old-", dir=out_dir.parent))
    try:
        os.rename(path, old)  # replaces the empty placeholder directory
    except OSError:
        with contextlib.suppress(OSError):
            old.rmdir()
        return path
    return old


def move_into_place(stage: Path, out_dir: Path) -> None:
    """Step 6b (and the first publication): rename the staged directory to ``out_dir``."""
    os.rename(stage, out_dir)


def _sync_parent(out_dir: Path) -> None:
    with contextlib.suppress(OSError):
        _fsync(out_dir.parent)


# --------------------------------------------------------------------------- the protocol
class OutputDirectory:
    """Stage a complete output directory and publish it in one atomic swap (see the module doc).

    ``with OutputDirectory(out) as stage: ...write into stage...; ...publish()``; leaving the
    block without :meth:`publish` (or with an exception) removes the staging directory and
    leaves ``out`` as it was. :class:`OSError` from the steps becomes a one-line
    :class:`OutputError` naming ``out``.
    """

    def __init__(self, out_dir: Path) -> None:
        out_dir = Path(out_dir)
        # Resolve the parent (and a symlinked OUT) so that the siblings live beside the real directory.
        self.out_dir = Path(os.path.realpath(out_dir)) if out_dir.is_symlink() else out_dir.absolute()
        self.stage: Path | None = None
        self._lock: int | None = None
        self._published = False

    def __enter__(self) -> Path:
        with self._mapped():
            self._lock = acquire_lock(self.out_dir)
            try:
                recover(self.out_dir)
                check_replaceable(self.out_dir)
                with signals_deferred():  # no interrupt between creating the stage and owning it
                    stage = self.stage = make_stage(self.out_dir)
            except BaseException:
                # __exit__ does not run when __enter__ raises: clean up here (an interrupt
                # delivered right after the stage was made lands in this branch).
                if self.stage is not None:
                    _remove_tree(self.stage)
                    self.stage = None
                release_lock(self._lock)
                self._lock = None
                raise
        return stage

    def preflight(self) -> None:
        """Steps 1-3 without staging, then the lock is released: a run that would be refused
        at the end (a foreign or locked ``OUT``, an unwritable parent) is refused before it
        reads any data. The real lock is taken again by ``with``; this check only saves time."""
        with self._mapped():
            fd = acquire_lock(self.out_dir)
            try:
                recover(self.out_dir)
                check_replaceable(self.out_dir)
                if not os.access(self.out_dir.parent, os.W_OK | os.X_OK):
                    raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(self.out_dir.parent))
            finally:
                release_lock(fd)

    def publish(self) -> None:
        """Seal the staged directory and swap it into place (steps 5-7)."""
        assert self.stage is not None and self._lock is not None, "publish() outside the with block"
        stage, out_dir = self.stage, self.out_dir
        with self._mapped():
            seal(stage, out_dir)
            with signals_deferred():
                if not os.path.lexists(out_dir):
                    move_into_place(stage, out_dir)
                    previous = None
                elif exchange(stage, out_dir):
                    # The staging path now holds the previous output: rename it to an old-*
                    # name, so that a .staging-* directory only ever holds an unpublished one.
                    previous = _renamed_old(stage, out_dir)
                else:
                    try:
                        previous = move_aside(out_dir)
                        move_into_place(stage, out_dir)
                    except BaseException:
                        _restore(out_dir)  # the previous output goes back at once
                        raise
                self._published = True
                _published.append(out_dir)
                _sync_parent(out_dir)
            if previous is not None:
                _remove_tree(previous)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            if self.stage is not None and not self._published:
                _remove_tree(self.stage)
        finally:
            if self._lock is not None:
                release_lock(self._lock)
                self._lock = None
        if isinstance(exc, OSError) and not isinstance(exc, InputError):
            raise self._error(exc) from None

    @contextmanager
    def _mapped(self) -> Iterator[None]:
        try:
            yield
        except OSError as exc:
            raise self._error(exc) from None

    def _error(self, exc: OSError) -> OutputError:
        """One line naming the output directory and the reason (disk full, read-only, ...)."""
        reason = exc.strerror or str(exc) or type(exc).__name__
        where = Path(exc.filename) if isinstance(exc.filename, str) else None
        inside = where is not None and self.stage is not None and where.is_relative_to(self.stage)
        detail = f" ({where})" if where is not None and not inside and where != self.out_dir else ""
        hint = {
            errno.ENOSPC: "; free some space or choose another --out",
            errno.EDQUOT: "; free some space or choose another --out",
            errno.EROFS: "; choose a writable --out",
            errno.EACCES: "; choose a writable --out",
            errno.EPERM: "; choose a writable --out",
            errno.EXDEV: "; --out and its parent directory must be on one file system",
            errno.EBUSY: "; --out must not be a mount point",
        }.get(exc.errno or 0, "")
        return OutputError(f"cannot write the outputs to {self.out_dir}: {reason}{detail}{hint}")


# --------------------------------------------------------------------------- one call
def publish_directory(
    out_dir: Path,
    write: Callable[[Path], None],
    verify: Callable[[Path], None] | None = None,
) -> Path:
    """Publish a command's whole output folder through :class:`OutputDirectory` in one call.

    ``write(stage)`` writes every file of the new output into the private staging
    directory; ``verify(stage)``, when given, re-checks what was written (raise to refuse:
    nothing is published); then the stage is sealed and swapped in atomically, under the
    lock. A foreign, locked or unwritable ``out_dir`` is refused before ``write`` runs.
    Returns ``out_dir``. Every command that writes a directory publishes this way::

        def write(stage: Path) -> None:
            atomic_write_text(stage / "result.json", text)
            plot(stage / "figure.png")

        publish_directory(out, write)
    """
    output = OutputDirectory(out_dir)
    output.preflight()
    with output as stage:
        write(stage)
        if verify is not None:
            verify(stage)
        output.publish()
    return Path(out_dir)


# --------------------------------------------------------------------------- digests
#: Bytes read at a time when hashing a file (memory stays bounded whatever its size).
HASH_CHUNK = 1 << 20


def sha256_file(path: Path) -> str:
    """The SHA-256 of the file at ``path``, in hex, read in chunks of :data:`HASH_CHUNK` bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(HASH_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def files_of(path: Path) -> list[Path]:
    """``path`` itself when it is a file; every file under it, sorted, when it is a directory
    (a Spark release is a directory of part files). Symbolic links are not followed."""
    path = Path(path)
    if path.is_dir() and not path.is_symlink():
        return sorted(p for p in path.rglob("*") if p.is_file() and not p.is_symlink())
    return [path]
