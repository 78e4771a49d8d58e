"""ARX 3.9 beside safeshare: use an existing ARX build and drive its ``ArxBench`` driver.

safeshare builds no other project: the comparison runs when ``$SAFESHARE_ARX_CLASSPATH``
names the ``classpath.txt`` of an existing ARX 3.9 build (arx-deidentifier/arx, Apache-2.0)
with the ``ArxBench`` driver on it, and says so in one line when it is not given. This
module checks that build and ``java``, and talks to the driver:

* :class:`ArxServer`: ``ArxBench serve CSV HIERDIR QIS`` in a warm JVM; one request line
  ``"k suppression metric"`` in, one JSON line out (``time_ms``: ``ARXResult.getTime()``,
  FLASH's traversal plus building the result lattice; ``anonymize_ms``: the whole
  ``ARXAnonymizer.anonymize`` call, encoding included; ``checked``; ``levels`` in QI
  order; ``loss``: ARX's own score of the optimum). ``quit`` ends it cleanly.
* :func:`run_measured`: any command (ARX's one-shot ``anonymize``, or safeshare's CLI) as a
  child process: wall seconds from spawn to exit and the peak resident memory of its
  process tree, sampled every 50 ms with psutil.

Where ARX is absent (the variable not set, no classpath file, a missing entry in it, or no ``java``),
:func:`locate` raises :class:`ArxUnavailable` with one line saying so, and
:func:`locate_or_say` prints that line and returns ``None``: the benchmarks then print
their own figures alone and never fail for that reason.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import queue
import resource
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import psutil

ROOT = Path(__file__).resolve().parent.parent
#: environment variable naming the classpath.txt of an existing ARX build (ARX's jars and ArxBench)
ENV = "SAFESHARE_ARX_CLASSPATH"
HINT = f"set {ENV} to the classpath.txt of an ARX 3.9 build with the ArxBench driver"
_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """In the child, before exec (Linux): be killed when this benchmark's process dies, so
    that an interrupted or killed benchmark leaves no JVM searching on (elsewhere: nothing)."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


class ArxUnavailable(Exception):
    """ARX or java cannot be used here; the message is the one line the benchmarks print."""


class ArxTimeout(Exception):
    """ARX gave no answer within the time allowed (the JVM has been stopped)."""


@dataclass(frozen=True)
class Arx:
    """A usable ARX build: the ``java`` executable and the class path of ARX plus ``ArxBench``."""

    java: str
    classpath: str

    def command(self, *args: str, heap: str = "4g") -> list[str]:
        """``java -Xmx<heap> -cp CP ArxBench ARGS...``."""
        return [self.java, f"-Xmx{heap}", "-cp", self.classpath, "ArxBench", *args]


def locate(environ: Mapping[str, str] | None = None) -> Arx:
    """The ARX build named by ``$SAFESHARE_ARX_CLASSPATH``, and java.

    Raises :class:`ArxUnavailable` naming what is missing (the variable itself included:
    nothing is looked for elsewhere, and nothing is built).
    """
    env = os.environ if environ is None else environ
    if not env.get(ENV):
        raise ArxUnavailable(f"ARX comparison skipped: {ENV} is not set ({HINT})")
    path = Path(env[ENV])
    if not path.is_file():
        raise ArxUnavailable(f"ARX not found ({path} does not exist): {HINT}")
    classpath = path.read_text(encoding="utf-8").strip()
    absent = [entry for entry in classpath.split(os.pathsep) if entry and not Path(entry).exists()]
    if not classpath or absent:
        what = absent[0] if absent else f"empty {path}"
        raise ArxUnavailable(f"ARX not usable ({what} missing): {HINT}")
    home = env.get("JAVA_HOME")
    java = str(Path(home) / "bin" / "java") if home and (Path(home) / "bin" / "java").is_file() else None
    java = java or shutil.which("java", path=env.get("PATH"))
    if java is None:
        raise ArxUnavailable("ARX not usable: no `java` on PATH (ARX needs Java 17+)")
    return Arx(java, classpath)


def locate_or_say(environ: Mapping[str, str] | None = None) -> Arx | None:
    """:func:`locate`, or ``None`` after printing the one line saying why ARX is left out."""
    try:
        return locate(environ)
    except ArxUnavailable as exc:
        print(f"{exc}; safeshare's figures alone", flush=True)
        return None


def _lines(stream: IO[str], sink: queue.Queue[str | None]) -> None:
    for line in stream:
        sink.put(line)
    sink.put(None)


class ArxServer:
    """``ArxBench serve`` in a warm JVM: :meth:`search` sends one request and returns ARX's answer.

    Use as a context manager; leaving it sends ``quit`` and waits for the JVM to end
    (it is killed if it does not within ``grace`` seconds).
    """

    def __init__(
        self,
        arx: Arx,
        csv: Path,
        hierarchies: Path,
        qis: Sequence[str],
        heap: str = "4g",
        ready_timeout: float = 120.0,
        grace: float = 10.0,
    ) -> None:
        self.grace = grace
        self._proc = subprocess.Popen(
            arx.command("serve", str(csv), str(hierarchies), ",".join(qis), heap=heap),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            preexec_fn=_die_with_parent,
        )
        assert self._proc.stdout is not None and self._proc.stderr is not None
        self._out: queue.Queue[str | None] = queue.Queue()
        self._err: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=_lines, args=(self._proc.stdout, self._out), daemon=True).start()
        threading.Thread(target=_lines, args=(self._proc.stderr, self._err), daemon=True).start()
        ready = self._answer(ready_timeout)
        if not ready.get("ready"):
            self.close()
            raise RuntimeError(f"ArxBench serve did not start: {ready}")

    def _stderr(self) -> str:
        lines = []
        while True:
            try:
                line = self._err.get_nowait()
            except queue.Empty:
                break
            if line is not None:
                lines.append(line.rstrip())
        return " | ".join(lines[-5:])

    def _answer(self, timeout: float | None) -> dict[str, Any]:
        try:
            line = self._out.get(timeout=timeout)
        except queue.Empty:
            self.kill()
            raise ArxTimeout(f"no answer from ARX within {timeout:.0f} s") from None
        if line is None:
            self._proc.wait()
            raise RuntimeError(f"ArxBench ended (exit {self._proc.returncode}): {self._stderr()}")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def search(self, k: int, suppression: float, metric: str, timeout: float | None = None) -> dict[str, Any]:
        """ARX's FLASH search for k-anonymity with at most ``suppression`` of the records removed.

        ``metric``: prec | dm_star | entropy. Raises :class:`ArxTimeout` (and stops the JVM)
        when there is no answer within ``timeout`` seconds.
        """
        assert self._proc.stdin is not None
        self._proc.stdin.write(f"{k} {suppression!r} {metric}\n")
        self._proc.stdin.flush()
        return self._answer(timeout)

    @property
    def returncode(self) -> int | None:
        """The JVM's exit status, ``None`` while it runs."""
        return self._proc.poll()

    def kill(self) -> None:
        if self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()

    def close(self) -> None:
        if self._proc.poll() is None:
            try:
                assert self._proc.stdin is not None
                self._proc.stdin.write("quit\n")
                self._proc.stdin.close()
                self._proc.wait(timeout=self.grace)
            except (OSError, subprocess.TimeoutExpired):
                self.kill()

    def __enter__(self) -> ArxServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass(frozen=True)
class Measured:
    """One child process: exit status, wall seconds (spawn to exit), peak RSS of its tree, output.

    ``cpu_s``: the CPU seconds (user + system, all threads) of the process and the children
    it waited for; on a loaded machine, wall time above it is time spent waiting for a core.
    """

    returncode: int | None
    wall_s: float
    peak_mb: float
    cpu_s: float
    stdout: str
    stderr: str
    timed_out: bool = False


def _tree_rss(proc: psutil.Process) -> int:
    total = 0
    for p in [proc, *proc.children(recursive=True)]:
        with contextlib.suppress(psutil.Error):
            total += p.memory_info().rss
    return total


def run_measured(
    command: Sequence[str], timeout: float | None = None, interval: float = 0.05, cwd: Path | None = None
) -> Measured:
    """Run ``command``; wall time from spawn to exit, peak RSS of the process and its children."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.Popen(
        list(command),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=cwd,
        preexec_fn=_die_with_parent,
    )
    out: list[str] = []
    err: list[str] = []
    assert proc.stdout is not None and proc.stderr is not None
    readers = [
        threading.Thread(target=lambda: out.append(proc.stdout.read()), daemon=True),  # type: ignore[union-attr]
        threading.Thread(target=lambda: err.append(proc.stderr.read()), daemon=True),  # type: ignore[union-attr]
    ]
    for r in readers:
        r.start()
    watched = psutil.Process(proc.pid)
    peak = 0
    timed_out = False
    while proc.poll() is None:
        with contextlib.suppress(psutil.Error):
            peak = max(peak, _tree_rss(watched))
        if timeout is not None and time.perf_counter() - start > timeout:
            timed_out = True
            for child in watched.children(recursive=True):
                child.kill()
            proc.kill()
            break
        time.sleep(interval)
    proc.wait()
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    for r in readers:
        r.join()
    return Measured(proc.returncode, wall, peak / 2**20, cpu, "".join(out), "".join(err), timed_out)


def last_json(text: str) -> dict[str, Any]:
    """The last line of ``text`` that is a JSON object (ArxBench's answer)."""
    for line in reversed(text.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            answer: dict[str, Any] = json.loads(line)
            return answer
    raise ValueError(f"no JSON line in ArxBench's output: {text[-300:]!r}")


def write_data_csv(rows: Any, columns: Sequence[str], path: Path) -> Path:
    """Write ``rows`` (a pandas DataFrame) as the ``,``-separated CSV with a header that ArxBench reads.

    ArxBench splits lines on ``,`` without quoting, so a value holding ``,`` or a line
    break is refused (ValueError) rather than silently shifting columns.
    """
    frame = rows[list(columns)].astype(str)
    for column in columns:
        bad = frame[column].str.contains(r"[,\r\n]", regex=True)
        if bool(bad.any()):
            raise ValueError(f"{column}: value {frame[column][bad].iloc[0]!r} holds ',' or a line break")
    frame.to_csv(path, index=False, header=True, sep=",", quoting=3, lineterminator="\n")  # QUOTE_NONE
    return path


def export_hierarchies(hierarchies: Mapping[str, Any], directory: Path) -> Path:
    """Write each QI's :class:`~safeshare.hierarchy.hierarchy.Hierarchy` as ``directory/QI.csv``.

    ARX's format, read by ``Hierarchy.create(path, UTF-8, ';')``: one row per value,
    ``value;level1;...;top`` (:func:`safeshare.hierarchy.io.write_arx_csv`).
    """
    from safeshare.hierarchy.io import write_arx_csv

    directory.mkdir(parents=True, exist_ok=True)
    for name, hierarchy in hierarchies.items():
        write_arx_csv(hierarchy, directory / f"{name}.csv")
    return directory
