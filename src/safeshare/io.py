"""Atomic file output.

A release, a report or a hierarchy is first written to a temporary file in
the destination directory and then renamed over the target with
:func:`os.replace`, which is atomic on POSIX: a reader sees either the old file
or the complete new one, never a partial write.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path


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


def atomic_write_text(target: Path, text: str, encoding: str = "utf-8") -> None:
    """Write ``text`` to ``target`` atomically."""
    with atomic_path(target) as tmp:
        tmp.write_text(text, encoding=encoding)


def atomic_write(target: Path, writer: Callable[[Path], None]) -> None:
    """Call ``writer(tmp_path)`` and atomically move the result to ``target``."""
    with atomic_path(target) as tmp:
        writer(tmp)


@contextmanager
def staging_directory(out_dir: Path) -> Iterator[Path]:
    """A private directory beside ``out_dir`` in which outputs are prepared.

    Nothing appears in ``out_dir`` until :func:`publish` moves the staged files
    there; the staging directory is always removed on exit.
    """
    out_dir = Path(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.staging-", dir=out_dir.parent))
    try:
        yield stage
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def publish(stage: Path, out_dir: Path) -> list[Path]:
    """Move every file of ``stage`` into ``out_dir`` (each rename is atomic)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    moved = []
    for src in sorted(stage.iterdir()):
        dst = out_dir / src.name
        if src.is_dir():
            if dst.exists():
                shutil.rmtree(dst)
            os.replace(src, dst)
        else:
            os.replace(src, dst)
        moved.append(dst)
    return moved
