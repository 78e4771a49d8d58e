"""The child process of a run: ``python -m safeshare.ui.worker RUN_DIR``.

The server never reads records: every run (profile, estimate, anonymize, surveillance) is this
process, started by :mod:`safeshare.ui.runs`, so a 10-million-row DuckDB run's memory is the
child's and the server stays small. The worker reads ``RUN_DIR/job.json`` (``kind``,
``project``, ``params``), calls the use case through :mod:`safeshare.ui.services` with a
:class:`FileMonitor` that writes ``progress.json`` (phase, nodes checked of the total, notes),
writes the results into ``RUN_DIR`` and finally ``state.json``.

Signals behave as in the command line: SIGTERM (the workbench's Cancel) and SIGINT raise
:class:`~safeshare.errors.Interrupted` in the main thread, which unwinds through the output
directory's clean-up (staging removed, nothing published) and exits 143 (130); bad input
exits 2 with one line, a failed verification or an internal error 1.
"""

from __future__ import annotations

import json
import signal
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from safeshare.errors import InputError, Interrupted, SafeshareError, VerificationError

#: progress.json is rewritten at most this often (seconds)
PROGRESS_EVERY = 0.2


def write_json(path: Path, doc: Any) -> None:
    """``doc`` as JSON at ``path``, replaced atomically (a reader never sees half a file)."""
    from safeshare.io import atomic_write_text

    atomic_write_text(path, json.dumps(doc, default=_json_default) + "\n")


def _json_default(obj: object) -> object:
    import numpy as np

    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.floating):
        return float(obj)
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, Path | set | frozenset | tuple):
        return str(obj) if isinstance(obj, Path) else list(obj)
    raise TypeError(f"not JSON serializable: {type(obj).__name__}")


class FileMonitor:
    """A :class:`~safeshare.ui.services.Monitor` that writes ``progress.json`` for the server."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.state: dict[str, Any] = {"phase": "starting", "done": None, "total": None, "notes": []}
        self._last = 0.0
        self._write(force=True)

    def _write(self, force: bool = False) -> None:
        now = time.monotonic()
        if force or now - self._last >= PROGRESS_EVERY:
            self._last = now
            write_json(self.path, self.state)

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        self.state.update(phase=name, done=None, total=None)
        self._write(force=True)
        yield

    def note(self, message: str) -> None:
        self.state["notes"] = [*self.state["notes"], message][-20:]
        self._write(force=True)

    @contextmanager
    def progress(self, what: str, total: int) -> Iterator[Callable[[int], None] | None]:
        self.state.update(phase=what, done=0, total=int(total))
        self._write(force=True)

        def update(done: int) -> None:
            self.state["done"] = int(done)
            self._write()

        yield update
        self._write(force=True)

    @property
    def wants_estimates(self) -> bool:
        return True


@contextmanager
def signals_raise() -> Iterator[list[int]]:
    """SIGINT and SIGTERM raise :class:`Interrupted` while the block runs (as the command line)."""
    received: list[int] = []

    def handler(signum: int, frame: object) -> None:
        received.append(signum)
        raise Interrupted(signum)

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield received
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def run_job(run_dir: Path, job: dict[str, Any], monitor: FileMonitor) -> dict[str, Any]:
    """Execute one job; return what goes into ``state.json`` besides the status."""
    from safeshare.ui import services
    from safeshare.ui.confine import confine_config, inside

    kind = job["kind"]
    project = Path(job["project"])
    workdir = Path(job["workdir"])  # every file the job names is confined under it (again)
    params = job.get("params", {})
    if kind == "profile":
        confine_config({"input": params["input"]}, project, workdir)
        with monitor.phase("profiling the columns"):
            data, values = services.profile(params["input"], project, int(params.get("values_limit", 5000)))
        write_json(project / "values.json", values)
        write_json(project / "profile.json", data.to_dict())
        return {"records": data.records}
    if kind == "estimate":
        estimate = services.estimate(project / params["config"], workdir, monitor)
        write_json(run_dir / "estimate.json", {**estimate.to_dict(), "sentence": estimate.sentence()})
        return {"lattice_size": estimate.lattice_size}
    if kind == "anonymize":
        from safeshare.workflows.explore import lattice_view, risk_comparison

        done = services.anonymize(project / params["config"], run_dir / "out", workdir, monitor)
        report = done.report
        state = {"verified": bool(report.get("verified")), "release": report.get("release")}
        with monitor.progress("exploring the lattice", min(done.fit.table.lattice.size, 10_000)) as update:
            view = lattice_view(done.fit, done.population_size, progress=update)
        view.write(run_dir)
        with monitor.phase("comparing the risk estimators"):
            comparison = risk_comparison(
                done.input_sizes, done.fit.released_class_sizes, done.population_size
            )
        write_json(run_dir / "risk.json", comparison.to_dict())
        return state
    if kind == "surveil-simulate":
        for key in ("population", "cases"):
            inside(params[key], workdir, key)
        doc = services.surveillance_simulate(params, monitor)
        write_json(run_dir / "surveillance.json", doc)
        return {}
    raise InputError(f"unknown job kind {kind!r}")


def _interrupted(run_dir: Path, signum: int) -> dict[str, Any]:
    """The state of a run ended by a signal, in the command line's words: "terminated; nothing
    was published", or, when Cancel came after the release was published (while the lattice was
    explored), "terminated after the new output was published to ..." with the release's
    verification, so that the Run screen says what the Release screen offers."""
    from safeshare.io import interrupt_message, published_paths

    state: dict[str, Any] = {"status": "cancelled", "error": interrupt_message(signum)}
    state["published"] = bool(published_paths())
    if state["published"]:
        report = _read_report(run_dir / "out" / "report.json")
        state.update(verified=bool(report.get("verified")), release=report.get("release"))
    return state


def _read_report(path: Path) -> dict[str, Any]:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


def check_hierarchy(request: dict[str, Any]) -> dict[str, Any]:
    """``python -m safeshare.ui.worker --hierarchy``: one hierarchy checked and previewed
    (:func:`safeshare.ui.services.hierarchy_levels`) for the server, which sends ``request``
    (``spec``, ``base``, ``workdir``, ``column``, ``values``) on stdin and reads the answer,
    ``{"levels": [...]}`` or ``{"error": "one line"}``, from stdout. The server never parses
    a hierarchy itself (issue 30, item 12): a file of hundreds of megabytes takes this
    process's memory and time, not the server's."""
    from safeshare.ui import services

    try:
        levels = services.hierarchy_levels(
            request["spec"],
            Path(request["base"]),
            request.get("values"),
            str(request["column"]),
            Path(request["workdir"]),
            [str(m) for m in request.get("missing") or []],
        )
    except InputError as exc:
        return {"error": " ".join(str(exc).split())}
    except UnicodeDecodeError as exc:
        return {"error": f"the hierarchy file is not UTF-8 text ({exc.reason} at byte {exc.start})"}
    except MemoryError:
        return {"error": "memory ran out while the hierarchy was read; build it with a builder instead"}
    return {"levels": levels}


def main(argv: list[str] | None = None) -> int:
    """Run the job of ``RUN_DIR``; the exit status is the command line's."""
    args = sys.argv[1:] if argv is None else argv
    if args == ["--hierarchy"]:
        answer = check_hierarchy(json.loads(sys.stdin.buffer.read()))
        sys.stdout.write(json.dumps(answer) + "\n")
        return 0
    if len(args) != 1:
        sys.stderr.write("usage: python -m safeshare.ui.worker RUN_DIR | --hierarchy\n")
        return 2
    run_dir = Path(args[0])
    job = json.loads((run_dir / "job.json").read_text(encoding="utf-8"))
    state: dict[str, Any] = {"status": "running"}
    code = 0
    with signals_raise() as received:
        try:
            try:
                monitor = FileMonitor(run_dir / "progress.json")
                state.update(run_job(run_dir, job, monitor))
                state["status"] = "done"
                monitor.state.update(phase="finished", done=None, total=None)
                write_json(run_dir / "progress.json", monitor.state)
            except Exception:
                if received:  # a library turned the interrupt into its own error (DuckDB)
                    raise Interrupted(received[-1]) from None
                raise
        except Interrupted as exc:
            code = 128 + exc.signum
            state.update(_interrupted(run_dir, exc.signum))
        except KeyboardInterrupt:
            code = 130
            state.update(_interrupted(run_dir, signal.SIGINT))
        except InputError as exc:
            code = 2
            state.update(status="failed", error=" ".join(f"error: {exc}".split()))
        except VerificationError as exc:
            code = 1
            state.update(status="failed", error=" ".join(f"error: {exc}; nothing was written".split()))
        except SafeshareError as exc:
            code = 1
            state.update(status="failed", error=" ".join(f"error: {exc}".split()))
        except MemoryError:
            code = 1
            state.update(status="failed", error="error: memory ran out before the run finished")
        except OSError as exc:
            code = 2
            where = f"{exc.filename}: " if exc.filename else ""
            state.update(status="failed", error=f"error: {where}{exc.strerror or exc}")
        except Exception as exc:
            traceback.print_exc()
            code = 1
            state.update(status="failed", error=f"internal error: {type(exc).__name__}: {exc}")
        state["exit"] = code
        write_json(run_dir / "state.json", state)
    if state.get("error"):
        sys.stderr.write(state["error"] + "\n")
    return code


if __name__ == "__main__":
    sys.exit(main())
