"""The run's child processes, started from a fork server that has imported the worker once.

A run's child used to be a fresh interpreter (``python -m safeshare.ui.worker RUN_DIR``) that
imported the search, the engines and the verifier before it read a record: 1.3-1.5 s of CPU per
run (numba, pandas, scipy, the compiled loops' cache), paid by every click of Run. Here the first
run starts a **fork server** (:mod:`multiprocessing`'s ``forkserver``: a separate, single-threaded
process that imports :data:`PRELOAD` once) and each run is a fork of it: the same worker
(:func:`safeshare.ui.worker.main`), its signals and exit statuses, its ``stderr.txt`` and its
working directory, without the imports.

The fork server is started by the workbench's server, never forked from it (the server has
threads), and is used only where the platform has one (Linux, macOS); elsewhere, or with
``SAFESHARE_UI_CHILD=spawn`` in the environment, each run is a fresh interpreter as before.
:class:`Child` gives both the one interface the :class:`~safeshare.ui.runs.RunManager` uses
(``pid``, ``poll``, ``send_signal``, ``wait``, ``kill``), so cancel, shutdown and reaping are the
same code.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import subprocess
import sys
import threading
from multiprocessing.context import BaseContext
from pathlib import Path
from typing import Any, Protocol

#: What the fork server imports once (the heavy imports of an anonymize run).
PRELOAD = (
    "safeshare.ui.worker",
    "safeshare.api",
    "safeshare.workflows.workbench",
    "safeshare.workflows.anonymize",
    "safeshare.search.ola",
    "safeshare.data.engines.duckdb_engine",
    "safeshare.data.engines.memory",
    "safeshare.verify",
)

_LOCK = threading.Lock()
_CONTEXT: list[BaseContext | None] = []


class Child(Protocol):
    """A run's child process, as the run manager sees it."""

    @property
    def pid(self) -> int: ...

    def poll(self) -> int | None: ...

    def send_signal(self, sig: int) -> None: ...

    def wait(self, timeout: float | None = None) -> int: ...

    def kill(self) -> None: ...


class ForkedChild:
    """A fork of the fork server (:class:`multiprocessing.Process`) as a :class:`Child`: its exit
    status is the worker's (a signal: its negative number, as :class:`subprocess.Popen` says)."""

    def __init__(self, process: Any) -> None:
        self._process = process

    @property
    def pid(self) -> int:
        return int(self._process.pid)

    def poll(self) -> int | None:
        code = self._process.exitcode
        return None if code is None else int(code)

    def send_signal(self, sig: int) -> None:
        if self._process.exitcode is None:
            with contextlib.suppress(ProcessLookupError):  # it has just ended
                os.kill(self.pid, sig)

    def wait(self, timeout: float | None = None) -> int:
        self._process.join(timeout)
        code = self._process.exitcode
        if code is None:
            raise subprocess.TimeoutExpired(f"run child {self.pid}", timeout or 0)
        return int(code)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


def _context() -> BaseContext | None:
    """The fork server's context, made once (``None``: no fork server here, or it is switched off)."""
    with _LOCK:
        if not _CONTEXT:
            wanted = os.environ.get("SAFESHARE_UI_CHILD", "forkserver")
            if wanted != "forkserver" or "forkserver" not in multiprocessing.get_all_start_methods():
                _CONTEXT.append(None)
            else:
                context = multiprocessing.get_context("forkserver")
                context.set_forkserver_preload(list(PRELOAD))
                _CONTEXT.append(context)
        return _CONTEXT[0]


def _run_in_fork(directory: str, cwd: str) -> None:
    """The forked child: stdin and stdout on ``/dev/null``, stderr into the run's ``stderr.txt``,
    the project's folder as the working directory, then the worker; its status is the exit's."""
    devnull = os.open(os.devnull, os.O_RDWR)
    err = os.open(Path(directory) / "stderr.txt", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    for fd, target in ((devnull, 0), (devnull, 1), (err, 2)):
        os.dup2(fd, target)
    os.close(devnull)
    os.close(err)
    os.chdir(cwd)
    from safeshare.ui import worker

    sys.exit(worker.main([directory]))


def start_child(directory: Path, cwd: Path, env: dict[str, str]) -> Child:
    """The worker for the run folder ``directory``, in ``cwd``: a fork of the fork server, or,
    without one, ``python -m safeshare.ui.worker DIRECTORY`` with ``env``."""
    context = _context()
    if context is None:
        with open(directory / "stderr.txt", "wb") as stderr:
            return subprocess.Popen(
                [sys.executable, "-m", "safeshare.ui.worker", str(directory)],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=stderr,
                cwd=cwd,
                env=env,
            )
    (directory / "stderr.txt").touch(mode=0o600)
    process = context.Process(  # type: ignore[attr-defined]
        target=_run_in_fork, args=(str(directory), str(cwd)), name=f"safeshare-run-{directory.name}"
    )
    process.start()
    return ForkedChild(process)


def _hierarchy_in_fork(writer: Any, request: str) -> None:
    """The forked hierarchy check: :func:`safeshare.ui.worker.check_hierarchy` of ``request``
    (JSON), its answer sent back as JSON bytes; stdout and stderr on ``/dev/null``."""
    devnull = os.open(os.devnull, os.O_RDWR)
    for target in (0, 1, 2):
        os.dup2(devnull, target)
    os.close(devnull)
    import json

    from safeshare.app_runner import to_json
    from safeshare.ui import worker

    writer.send_bytes(to_json(worker.check_hierarchy(json.loads(request))).encode("utf-8"))
    writer.close()


async def hierarchy_in_fork(request: str, timeout: float) -> tuple[bytes | None, int | None] | None:
    """A hierarchy check in a fork of the fork server: the answer's bytes (``None``: the child
    ended without one) and the child's exit status; ``None`` when there is no fork server (the
    caller starts an interpreter). :class:`TimeoutError` after ``timeout`` seconds; the child is
    killed then, and when the awaiting request goes away."""
    import anyio

    context = _context()
    if context is None:
        return None
    reader, writer = context.Pipe(duplex=False)
    process = context.Process(  # type: ignore[attr-defined]
        target=_hierarchy_in_fork, args=(writer, request), name="safeshare-hierarchy"
    )
    process.start()
    writer.close()

    def receive() -> bytes | None:
        if not reader.poll(timeout):
            raise TimeoutError
        try:
            return bytes(reader.recv_bytes())
        except EOFError:  # the child ended without an answer
            return None

    try:
        data = await anyio.to_thread.run_sync(receive, abandon_on_cancel=True)
    finally:
        if process.exitcode is None:
            process.join(0.5)
        if process.exitcode is None:
            process.kill()
        reader.close()
    await anyio.to_thread.run_sync(process.join, 5.0)
    return data, process.exitcode


__all__ = ["PRELOAD", "Child", "ForkedChild", "hierarchy_in_fork", "start_child"]
