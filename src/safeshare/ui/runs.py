"""Runs in child processes: start, observe, cancel (:class:`RunManager`).

A run is a directory ``<project>/runs/<id>/`` holding ``job.json`` (what to do), and, written by
the child (:mod:`safeshare.ui.worker`, a fork of the fork server of :mod:`safeshare.ui.children`
that has imported it once): ``progress.json`` while it runs, its results, and
``state.json`` when it ends. The server keeps only the child's process handle; the
state it reports is read from those files, so a run's figures survive a restart of the server
and the server's memory does not grow with the data.

Cancel sends SIGTERM to the child, which exits as the command line does (143, and one line
saying whether the release had been published before). When the server stops, its running
children are terminated the same way (and killed if they have not exited within a few
seconds). Every child is reaped by a thread of its own as soon as it exits (no zombie
processes), and a run that starts first removes the staging folders of the project's runs
that were killed by SIGKILL (:func:`safeshare.io.recover_stale`).
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from safeshare.app_runner import to_json
from safeshare.ui.children import Child, start_child

#: Kinds of run the worker knows.
KINDS = ("profile", "estimate", "anonymize", "surveil-simulate")


class RunError(Exception):
    """A run cannot be started (another run of the project is active, an unknown kind)."""


@dataclass
class Run:
    id: str
    kind: str
    directory: Path
    process: Child | None
    #: the server sent SIGTERM (Cancel)
    cancelled: bool = False


def new_run_id(now: float | None = None) -> str:
    """A new run's id, ``YYYYMMDD-HHMMSS-mmmrrr``: the local start time to the millisecond
    (``mmm``, decimal) then three random hex digits, so that ids sort in start order (the run
    history, "the latest run" of each screen: :meth:`safeshare.ui.projects.Project.run_ids`).
    With six random digits in place of ``mmmrrr``, two runs started in the same second sorted
    by chance. ``now``: the time (:func:`time.time`) to use."""
    stamp = round((time.time() if now is None else now) * 1000)  # ms: one integer for both parts
    seconds, millis = divmod(stamp, 1000)
    random_digits = secrets.token_hex(2)[:3]
    return time.strftime("%Y%m%d-%H%M%S-", time.localtime(seconds)) + f"{millis:03d}{random_digits}"


def read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


class RunManager:
    """The children of one server (``workdir``: where every file of a job must be)."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self._runs: dict[str, Run] = {}
        self._lock = threading.Lock()

    def start(self, project_dir: Path, kind: str, params: dict[str, Any], run_id: str | None = None) -> str:
        """Start a ``kind`` run of the project; its id (:class:`RunError` when one is active).
        ``run_id``: the id to use (the caller prepared files named after it)."""
        if kind not in KINDS:
            raise RunError(f"unknown run kind {kind!r}; expected one of {', '.join(KINDS)}")
        with self._lock:
            running = self._running(project_dir)
            if running is not None:
                raise RunError(
                    f"run {running.id} ({running.kind}) of this project is still running; cancel it first"
                )
            _recover_killed_runs(project_dir)
            run_id = run_id or new_run_id()
            directory = project_dir / "runs" / run_id
            directory.mkdir(parents=True, mode=0o700)
            job = {
                "kind": kind,
                "project": str(project_dir),
                "workdir": str(self.workdir),
                "params": params,
                "id": run_id,
            }
            (directory / "job.json").write_text(to_json(job) + "\n", encoding="utf-8")
            process = start_child(directory, project_dir, _child_env())
            self._runs[run_id] = Run(run_id, kind, directory, process)
            # Reap the child as soon as it exits (no zombie waits for a page to poll it).
            threading.Thread(target=process.wait, name=f"reap-{run_id}", daemon=True).start()
            return run_id

    def _running(self, project_dir: Path) -> Run | None:
        """The project's run that is still going (its child alive and no ``state.json`` yet: a
        child that wrote it may still be exiting), if any. Called under the lock."""
        for run in self._runs.values():
            ended = (run.directory / "state.json").exists()
            if run.directory.parent.parent == project_dir and self._alive(run) and not ended:
                return run
        return None

    def running(self, project_dir: Path) -> Run | None:
        """The project's run that is still going, if any."""
        with self._lock:
            return self._running(project_dir)

    def retire(self, project_dir: Path, trash: Path) -> None:
        """Move the project's directory to ``trash`` (the caller removes it) unless a run of the
        project is going (:class:`RunError`: nothing is moved); no run can start on it meanwhile
        (one lock), and the server forgets its runs."""
        with self._lock:
            running = self._running(project_dir)
            if running is not None:
                raise RunError(
                    f"run {running.id} ({running.kind}) of this project is still running; "
                    "cancel it (or wait for it to end) first: nothing was deleted"
                )
            project_dir.rename(trash)
            for run_id in [k for k, r in self._runs.items() if r.directory.parent.parent == project_dir]:
                del self._runs[run_id]

    @staticmethod
    def _alive(run: Run) -> bool:
        return run.process is not None and run.process.poll() is None

    def state(self, directory: Path) -> dict[str, Any]:
        """The run's state: ``status`` (running, done, failed, cancelled), ``progress``, ``error``..."""
        run_id = directory.name
        job = read_json(directory / "job.json") or {}
        state: dict[str, Any] | None = read_json(directory / "state.json")
        run = self._runs.get(run_id)
        if state is None:
            if run is not None and self._alive(run):
                state = {"status": "running"}
            else:
                # the child ended without its state (killed), or belongs to an earlier server
                code = run.process.poll() if run is not None and run.process is not None else None
                last = _last_line(directory / "stderr.txt")
                if run is not None and run.cancelled and code in (-signal.SIGTERM, 128 + signal.SIGTERM):
                    # terminated before its handler was installed (while Python started): nothing ran
                    state = {"status": "cancelled", "error": "terminated; nothing was published"}
                    state["exit"] = code
                else:
                    state = {
                        "status": "failed" if run is not None else "unknown",
                        "error": last
                        or (f"the run ended with exit status {code}" if code is not None else None),
                        "exit": code,
                    }
        elif state.get("lattice") == "exploring" and not (run is not None and self._alive(run)):
            # published, then the child ended: its last state (it may have just written it), or,
            # killed (or of a server before this one), without Explore's lattice
            state = read_json(directory / "state.json") or state
        if state.get("lattice") == "exploring" and not (run is not None and self._alive(run)):
            state["lattice"] = "failed"
            state["lattice_error"] = "the lattice for Explore was not finished: the run's process ended"
        state["id"] = run_id
        state["kind"] = job.get("kind")
        state["progress"] = read_json(directory / "progress.json")
        return state

    def cancel(self, directory: Path) -> bool:
        """SIGTERM to the run's child; ``False`` when it is not running."""
        run = self._runs.get(directory.name)
        if run is None or not self._alive(run):
            return False
        assert run.process is not None
        run.cancelled = True
        run.process.send_signal(signal.SIGTERM)
        return True

    def wait(self, directory: Path, timeout: float) -> None:
        """Wait for the run's child to exit (tests, shutdown)."""
        run = self._runs.get(directory.name)
        if run is not None and run.process is not None:
            run.process.wait(timeout)

    def shutdown(self, grace: float = 5.0) -> None:
        """Terminate every running child (SIGTERM, then SIGKILL after ``grace`` seconds)."""
        alive = [r for r in self._runs.values() if self._alive(r)]
        for run in alive:
            assert run.process is not None
            run.process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + grace
        for run in alive:
            assert run.process is not None
            try:
                run.process.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                run.process.kill()
                run.process.wait()


def _recover_killed_runs(project_dir: Path) -> None:
    """Remove the staging folders that runs of the project killed by SIGKILL left in their run
    folders (``runs/<run>/.out.staging-*``): each run publishes into its own ``out``, so no
    later run would meet them. :func:`safeshare.io.recover_stale`, under each ``out``'s lock
    (a live run's folders are left alone)."""
    from safeshare.io import recover_stale

    runs = project_dir / "runs"
    for directory in runs.iterdir() if runs.is_dir() else []:
        if directory.is_dir() and not directory.is_symlink():
            recover_stale(directory)


#: How long the server waits for a hierarchy to be checked in its child, seconds.
HIERARCHY_TIMEOUT = 300.0


async def _ask_child(
    flag: str, request: dict[str, Any], timeout: float, slow: str, failed: str
) -> dict[str, Any]:
    """Send ``request`` to a short-lived child (``python -m safeshare.ui.worker FLAG``) and
    return its JSON answer; :class:`InputError` with the answer's ``error``, with ``slow`` after
    ``timeout`` seconds (the child is killed), or ``failed`` with the child's last line when it
    answered nothing readable.

    Awaited, so the server's event loop serves every other request meanwhile, and the reading
    takes the child's memory; the child is killed when the request goes away too."""
    import anyio
    from anyio.abc import ByteReceiveStream

    from safeshare.errors import InputError
    from safeshare.ui.children import hierarchy_in_fork

    if flag == "--hierarchy":  # a fork of the fork server, where there is one
        try:
            forked = await hierarchy_in_fork(to_json(request), timeout)
        except TimeoutError:
            raise InputError(slow) from None
        if forked is not None:
            data, code = forked
            if data is None:
                raise InputError(f"{failed} (exit {code})")
            return _answer(data, failed)

    chunks: dict[str, bytes] = {"out": b"", "err": b""}

    async def drain(stream: ByteReceiveStream | None, key: str) -> None:
        if stream is not None:
            async for chunk in stream:
                chunks[key] += chunk

    command = [sys.executable, "-m", "safeshare.ui.worker", flag]
    async with await anyio.open_process(command, env=_child_env()) as process:
        try:
            with anyio.fail_after(timeout):
                async with anyio.create_task_group() as group:
                    group.start_soon(drain, process.stdout, "out")
                    group.start_soon(drain, process.stderr, "err")
                    assert process.stdin is not None
                    await process.stdin.send(to_json(request).encode("utf-8"))
                    await process.stdin.aclose()
                    await process.wait()
        except TimeoutError:
            raise InputError(slow) from None
        finally:
            if process.returncode is None:
                process.kill()
    try:
        json.loads(chunks["out"])
    except ValueError:
        last = chunks["err"].decode("utf-8", "replace").strip().splitlines()[-1:]
        raise InputError(f"{failed} ({last[0] if last else f'exit {process.returncode}'})") from None
    return _answer(chunks["out"], failed)


def _answer(data: bytes, failed: str) -> dict[str, Any]:
    """A child's JSON answer, or :class:`InputError` with its ``error`` (or ``failed``)."""
    from safeshare.errors import InputError

    try:
        answer = json.loads(data)
    except ValueError:
        raise InputError(failed) from None
    if not isinstance(answer, dict):
        raise InputError(failed)
    if answer.get("error"):
        raise InputError(str(answer["error"]))
    return answer


async def hierarchy_in_child(
    request: dict[str, Any], timeout: float = HIERARCHY_TIMEOUT
) -> dict[str, Any] | None:
    """Check and preview a hierarchy in a short-lived child (``python -m safeshare.ui.worker
    --hierarchy``; :func:`safeshare.ui.worker.check_hierarchy`): its levels and value -> label
    mapping (``{levels, mapping, values}``), ``None`` when there was nothing to check,
    :class:`InputError` with the child's one line otherwise.

    Awaited, so the server's event loop serves every other request meanwhile, and the file's
    parsing takes the child's memory; the child is killed after ``timeout`` seconds or when
    the request goes away."""
    slow = (
        f"checking the hierarchy took longer than {timeout:g} s; build it with a builder, "
        "or give the file in a configuration (the run reads it)"
    )
    answer = await _ask_child("--hierarchy", request, timeout, slow, "the hierarchy could not be checked")
    return answer if isinstance(answer.get("levels"), list) else None


#: How long the server waits for a new project's input file to be previewed, seconds.
PREVIEW_TIMEOUT = 60.0


async def preview_in_child(request: dict[str, Any], timeout: float = PREVIEW_TIMEOUT) -> dict[str, Any]:
    """Preview a new project's input file in a short-lived child (``python -m
    safeshare.ui.worker --preview``; :func:`safeshare.ui.worker.preview_input`): the sniffed
    delimiter, the header guess, the first records; :class:`InputError` with the child's one
    line when the file is not CSV text (nor Parquet). The server reads none of the file."""
    slow = f"previewing the file took longer than {timeout:g} s"
    return await _ask_child("--preview", request, timeout, slow, "the file could not be previewed")


def _child_env() -> dict[str, str]:
    """The server's environment, with the source tree the server runs from first on the path."""
    env = dict(os.environ)
    package_root = str(Path(__file__).resolve().parents[2])
    paths = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    if package_root not in paths:
        env["PYTHONPATH"] = os.pathsep.join([package_root, *paths])
    return env


def _last_line(path: Path) -> str | None:
    try:
        lines = [
            line for line in path.read_text(encoding="utf-8", errors="replace").splitlines() if line.strip()
        ]
    except OSError:
        return None
    return lines[-1] if lines else None


__all__ = ["KINDS", "Run", "RunError", "RunManager", "hierarchy_in_child", "preview_in_child", "read_json"]
