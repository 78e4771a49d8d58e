"""The child process of a run: ``python -m safeshare.ui.worker RUN_DIR``.

The server never reads records: every run (profile, estimate, anonymize, surveillance) is this
process, started by :mod:`safeshare.ui.runs`, so a 10-million-row DuckDB run's memory is the
child's and the server stays small. The worker reads ``RUN_DIR/job.json`` (``kind``,
``project``, ``params``), calls the use case through :mod:`safeshare.api.workbench` with a
:class:`FileMonitor` that writes ``progress.json`` (phase, nodes checked of the total, notes),
writes the results into ``RUN_DIR`` and finally ``state.json``. An ``anonymize`` run writes
``state.json`` twice: ``done`` with ``lattice: exploring`` as soon as its release is published
and verified (what a person waits for), then, after Explore's lattice, ``lattice: ready`` (or
``cancelled`` / ``failed`` with ``lattice_error``: the release stays published and verified).
The server's one-off requests
are short-lived children too (:data:`REQUESTS`): ``--hierarchy`` checks and previews a hierarchy,
``--preview`` previews a new project's input file (its first 64 KiB).

Signals and exit statuses are the command line's (:func:`safeshare.app_runner.run_guarded`, one
guard and one table for both): SIGTERM (the workbench's Cancel) and SIGINT raise
:class:`~safeshare.errors.Interrupted` in the main thread, which unwinds through the output
directory's clean-up (staging removed, nothing published) and exits 143 (130); bad input
exits 2 with one line, a failed verification or an internal error 1.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from safeshare.app_runner import WORKBENCH_VOICE, run_guarded, to_json
from safeshare.errors import InputError

#: progress.json is rewritten at most this often (seconds)
PROGRESS_EVERY = 0.2


def write_json(path: Path, doc: Any) -> None:
    """``doc`` as JSON at ``path`` (:func:`safeshare.app_runner.to_json`: NaN and infinities as
    ``null``), replaced atomically (a reader never sees half a file)."""
    from safeshare.io import atomic_write_text

    atomic_write_text(path, to_json(doc) + "\n")


class FileMonitor:
    """A :class:`~safeshare.app_runner.Monitor` that writes ``progress.json`` for the server."""

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


def run_job(
    run_dir: Path,
    job: dict[str, Any],
    monitor: FileMonitor,
    published: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Execute one job; return what goes into ``state.json`` besides the status.

    ``published(state)``: called by an ``anonymize`` job once its release is published and
    verified, before Explore's lattice is evaluated (issue 35: the person waits for the release,
    not for the lattice, so a workbench run costs what the command line's does)."""
    from safeshare.api import workbench

    kind = job["kind"]
    project = Path(job["project"])
    if not job.get("workdir"):
        raise InputError(f"{run_dir / 'job.json'}: no workdir (every file a job names is confined under it)")
    workdir = Path(job["workdir"])  # every file the job names is confined under it (again)
    params = job.get("params", {})
    if kind == "profile":
        workbench.confine_config({"input": params["input"]}, project, workdir)
        with monitor.phase("profiling the columns"):
            data, values = workbench.profile(params["input"], project, int(params.get("values_limit", 5000)))
        write_json(project / "values.json", values)
        write_json(project / "profile.json", data.to_dict())
        return {"records": data.records}
    if kind == "estimate":
        estimate = workbench.estimate(project / params["config"], workdir, monitor)
        write_json(run_dir / "estimate.json", {**estimate.to_dict(), "sentence": estimate.sentence()})
        return {"lattice_size": estimate.lattice_size}
    if kind == "anonymize":
        done = workbench.anonymize(project / params["config"], run_dir / "out", workdir, monitor)
        report = done.report
        state = {"verified": bool(report.get("verified")), "release": report.get("release")}
        if published is not None:
            published(state)
        with monitor.progress("exploring the lattice", min(done.fit.table.lattice.size, 10_000)) as update:
            view = workbench.lattice_view(done.fit, done.population_size, progress=update)
        view.write(run_dir)
        # the Risk screen shows report.json's risk section (workbench.risk_view): nothing more here
        return state
    if kind == "surveil-simulate":
        for key in ("population", "cases"):
            workbench.inside(params[key], workdir, key)
        doc = workbench.surveillance_simulate(params, monitor)
        write_json(run_dir / "surveillance.json", doc)
        return {}
    raise InputError(f"unknown job kind {kind!r}")


def _interrupted(run_dir: Path, line: str | None) -> dict[str, Any]:
    """The state of a run ended by a signal, in the command line's words
    (:func:`safeshare.app_runner.outcome`'s ``line``): "cancelled; nothing was published", or, when
    Cancel came after the release was published (while the lattice was explored), "cancelled after
    the new output was published to ..." with the release's verification, so that the Run screen
    says what the Release screen offers."""
    from safeshare.io import published_paths

    state: dict[str, Any] = {"status": "cancelled", "error": line}
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
    (:func:`safeshare.workflows.workbench.hierarchy_answer`) for the server, which sends ``request``
    (``spec``, ``base``, ``workdir``, ``column``, ``values``) on stdin and reads the answer,
    ``{"levels": [...], "mapping": [...], "values": n}`` (``{"levels": null}``: a builder without
    the values) or ``{"error": "one line"}``, from stdout. The server never parses
    a hierarchy itself (issue 30, item 12): a file of hundreds of megabytes takes this
    process's memory and time, not the server's."""
    from safeshare.api import workbench

    try:
        answer = workbench.hierarchy_answer(
            request["spec"],
            Path(request["base"]),
            request.get("values"),
            str(request["column"]),
            Path(request["workdir"]),
            [str(m) for m in request.get("missing") or []],
            request.get("counts"),
        )
    except InputError as exc:
        return {"error": " ".join(str(exc).split())}
    except UnicodeDecodeError as exc:
        return {"error": f"the hierarchy file is not UTF-8 text ({exc.reason} at byte {exc.start})"}
    except MemoryError:
        return {"error": "memory ran out while the hierarchy was read; build it with a builder instead"}
    return answer if answer is not None else {"levels": None}


def preview_input(request: dict[str, Any]) -> dict[str, Any]:
    """``python -m safeshare.ui.worker --preview``: a new project's input file previewed
    (:func:`safeshare.workflows.workbench.input_preview`: its first 64 KiB) for the server, which
    sends ``request`` (``path``, ``workdir``, ``name``, ``delimiter``, ``header``) on stdin and reads
    the preview or ``{"error": "one line"}`` from stdout. The file must be under ``workdir``."""
    from safeshare.api import workbench

    try:
        path = workbench.inside(str(request["path"]), Path(request["workdir"]), "input file")
        header = request.get("header")
        return workbench.input_preview(
            path,
            str(request.get("name") or path.name),
            request.get("delimiter"),
            header if isinstance(header, bool) else None,
        )
    except InputError as exc:
        return {"error": " ".join(str(exc).split())}
    except MemoryError:
        return {"error": "memory ran out while the file was previewed"}


#: The one-off requests of the server: flag -> the function that answers one.
REQUESTS: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "--hierarchy": check_hierarchy,
    "--preview": preview_input,
}


def main(argv: list[str] | None = None) -> int:
    """Run the job of ``RUN_DIR``; the exit status is the command line's."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) == 1 and args[0] in REQUESTS:
        answer = REQUESTS[args[0]](json.loads(sys.stdin.buffer.read()))
        sys.stdout.write(to_json(answer) + "\n")
        return 0
    if len(args) != 1:
        sys.stderr.write("usage: python -m safeshare.ui.worker RUN_DIR | --hierarchy | --preview\n")
        return 2
    run_dir = Path(args[0])
    job = json.loads((run_dir / "job.json").read_text(encoding="utf-8"))
    state: dict[str, Any] = {"status": "running"}
    #: the state written when the release was published, while the lattice is still explored
    early: dict[str, Any] = {}

    def published(figures: dict[str, Any]) -> None:
        early.update(figures, status="done", exit=0, lattice="exploring")
        write_json(run_dir / "state.json", early)

    def work() -> None:
        monitor = FileMonitor(run_dir / "progress.json")
        try:
            state.update(run_job(run_dir, job, monitor, published))
        except InputError as exc:
            # a release refused until its contradicting warnings are acknowledged (the
            # certificate issue's AcknowledgementRequired carries their codes): the Run screen
            # offers a box for each
            codes = getattr(exc, "codes", None)
            if codes:
                state["acknowledge"] = [str(c) for c in codes]
            raise
        state["status"] = "done"
        monitor.state.update(phase="finished", done=None, total=None)
        write_json(run_dir / "progress.json", monitor.state)

    # the command line's signal guard and exit statuses; an internal error's traceback goes to
    # the run's stderr.txt (debug), the workbench says "cancelled" for its Cancel (SIGTERM)
    result = run_guarded(work, WORKBENCH_VOICE, debug=True)
    if early:  # the release was published: the run is done whatever became of the lattice
        state = dict(early)
        if result.kind == "ok":
            state["lattice"] = "ready"
        else:
            state["lattice"] = "cancelled" if result.kind == "interrupted" else "failed"
            state["lattice_error"] = f"the lattice for Explore was not finished: {result.line}"
    elif result.kind == "interrupted":
        state.update(_interrupted(run_dir, result.line))
        state["exit"] = result.status
    elif result.kind != "ok":
        state.update(status="failed", error=result.line, exit=result.status)
    else:
        state["exit"] = result.status
    write_json(run_dir / "state.json", state)
    line = state.get("error") or state.get("lattice_error")
    if line:
        sys.stderr.write(line + "\n")
    return result.status


if __name__ == "__main__":
    sys.exit(main())
