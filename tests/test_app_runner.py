"""The plumbing the command line and the workbench share (safeshare/app_runner.py, issue 31): one
JSON encoder that never writes a bare NaN or Infinity (null instead), one exception -> exit-status
table with one signal guard, used by both front ends."""

from __future__ import annotations

import json
import math
import os
import re
import signal
import threading
import time
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pytest

from safeshare.app_runner import (
    CLI_VOICE,
    SILENT,
    WORKBENCH_VOICE,
    Monitor,
    outcome,
    run_guarded,
    signal_guard,
    to_json,
)
from safeshare.errors import (
    ConfigError,
    DataError,
    InputError,
    Interrupted,
    OutOfMemory,
    ResourceError,
    VerificationError,
)

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def nothing_published_yet(monkeypatch: pytest.MonkeyPatch) -> None:
    """The interrupt line says what this process published: earlier tests of the session did."""
    import safeshare.io

    monkeypatch.setattr(safeshare.io, "_published", [])


def strict_loads(text: str) -> Any:
    """JSON as a strict reader (a browser, jq) reads it: NaN, Infinity and -Infinity refused."""

    def refuse(constant: str) -> None:
        raise AssertionError(f"bare {constant} in JSON output: {text[:200]}")

    return json.loads(text, parse_constant=refuse)


HINT = "(set SAFESHARE_DEBUG=1 for a traceback)"
NON_FINITE = [math.nan, math.inf, -math.inf, np.float64("nan"), np.float32("inf"), np.float64("-inf")]


@pytest.mark.parametrize("value", NON_FINITE, ids=repr)
def test_a_non_finite_number_is_written_as_null_wherever_it_is(value: float) -> None:
    doc = {
        "top": value,
        "list": [1.0, value],
        "nested": {"deeper": [{"x": value}]},
        "tuple": (value, 2),
        "array": np.array([0.5, value]),
        np.int64(7): value,
    }
    text = to_json(doc, indent=2)
    back = strict_loads(text)
    assert back == {
        "top": None,
        "list": [1.0, None],
        "nested": {"deeper": [{"x": None}]},
        "tuple": [None, 2],
        "array": [0.5, None],
        "7": None,
    }


def test_numpy_values_paths_dates_and_sets_are_written_as_json_values() -> None:
    import datetime

    doc = {
        "int": np.int64(3),
        "bool": np.bool_(True),
        "float": np.float32(0.5),
        "path": Path("out") / "report.json",
        "date": datetime.date(2022, 1, 1),
        "set": {"a"},
        "plain": [1, "x", None, True, 2.5],
    }
    assert strict_loads(to_json(doc)) == {
        "int": 3,
        "bool": True,
        "float": 0.5,
        "path": str(Path("out") / "report.json"),
        "date": "2022-01-01",
        "set": ["a"],
        "plain": [1, "x", None, True, 2.5],
    }
    with pytest.raises(TypeError, match="not JSON serializable: object"):
        to_json({"x": object()})


def test_the_encoder_writes_what_json_dumps_writes_for_plain_documents() -> None:
    """Byte for byte (outputs keep their bytes): separators, indent, key order, escapes."""
    doc = {"b": [1, 2.5, "é", None, True], "a": {"k": -0.0, "z": 1e-300}, "": ""}
    for kwargs in ({}, {"indent": 2}, {"separators": (",", ":")}, {"sort_keys": True}):
        assert to_json(doc, **kwargs) == json.dumps(doc, **kwargs)  # type: ignore[arg-type]


def test_every_json_output_goes_through_the_one_encoder() -> None:
    """No module of the library calls json.dumps but the encoder itself, the ledger's canonical form
    (a hash input that refuses NaN: allow_nan=False) and the output marker (names and a version)."""
    allowed = {"app_runner.py", "workflows/ledger.py", "io.py", "resources.py"}
    offenders = []
    for path in sorted((ROOT / "src" / "safeshare").rglob("*.py")):
        rel = path.relative_to(ROOT / "src" / "safeshare").as_posix()
        if rel not in allowed and re.search(r"\bjson\.dumps?\(", path.read_text(encoding="utf-8")):
            offenders.append(rel)
    assert offenders == []


def test_the_command_lines_json_has_no_bare_nan(capsys: pytest.CaptureFixture[str]) -> None:
    from safeshare.cli.common import emit

    emit({"B": math.nan, "interval": [np.float64("inf"), 0.1]}, True, False, lambda: None)
    assert strict_loads(capsys.readouterr().out) == {"B": None, "interval": [None, 0.1]}


def test_the_workbenchs_files_have_no_bare_nan(tmp_path: Path) -> None:
    from safeshare.ui.worker import write_json

    write_json(tmp_path / "risk.json", {"B": np.float64("nan"), "rows": [{"A": math.inf}]})
    assert strict_loads((tmp_path / "risk.json").read_text()) == {"B": None, "rows": [{"A": None}]}


# --------------------------------------------------------------------------- exit statuses
@pytest.mark.parametrize(
    ("exc", "status", "line"),
    [
        (None, 0, None),
        (InputError("bad"), 2, "error: bad"),
        (ConfigError("a.yaml: k: expected\n an integer"), 2, "error: a.yaml: k: expected an integer"),
        (DataError("no rows"), 2, "error: no rows"),
        (ResourceError("too big"), 2, "error: too big"),
        (OSError(28, "No space left on device", "out/x"), 2, "error: out/x: No space left on device"),
        (VerificationError("class of 3"), 1, "error: class of 3; nothing was written"),
        (OutOfMemory("memory ran out reading d.csv; try --engine duckdb"), 1, None),
        (MemoryError(), 1, "error: memory ran out before the command finished"),
        (
            duckdb.OutOfMemoryException(
                "Out of Memory Error: could not allocate block of size 941.1 MiB\n\nLINE 1"
            ),
            1,
            "error: DuckDB's memory limit was reached before the command finished (Out of Memory Error: "
            "could not allocate block of size 941.1 MiB); raise duckdb.memory_limit (--duckdb-memory-limit) "
            "or lower duckdb.threads; nothing was published",
        ),
        (Interrupted(signal.SIGINT), 130, "interrupted; nothing was published"),
        (Interrupted(signal.SIGTERM), 143, "terminated; nothing was published"),
        (KeyboardInterrupt(), 130, "interrupted; nothing was published"),
        (
            ZeroDivisionError("x"),
            1,
            "internal error: ZeroDivisionError: x (set SAFESHARE_DEBUG=1 for a traceback)",
        ),
    ],
)
def test_the_exit_status_table(exc: BaseException | None, status: int, line: str | None) -> None:
    result = outcome(exc)
    assert result.status == status
    if line is not None or exc is None:
        assert result.line == line
    else:
        assert result.line is not None and result.line.startswith("error: memory ran out reading")
    assert result.line is None or "\n" not in result.line


def test_an_interrupt_after_the_swap_says_where_the_output_was_published(tmp_path: Path) -> None:
    from safeshare.io import OutputDirectory

    output = OutputDirectory(tmp_path / "out")
    with output as stage:
        (stage / "a.txt").write_text("a")
        output.publish()
    line = outcome(Interrupted(signal.SIGTERM)).line
    assert line == f"terminated after the new output was published to {tmp_path / 'out'}"


def test_the_workbench_words_the_same_statuses_its_own_way() -> None:
    cancelled = outcome(Interrupted(signal.SIGTERM), WORKBENCH_VOICE)
    assert (cancelled.status, cancelled.line, cancelled.kind) == (
        143,
        "cancelled; nothing was published",
        "interrupted",
    )
    assert outcome(MemoryError(), WORKBENCH_VOICE).line == "error: memory ran out before the run finished"
    for exc in (InputError("x"), VerificationError("y"), ValueError("z")):
        assert outcome(exc, WORKBENCH_VOICE).status == outcome(exc, CLI_VOICE).status


def test_run_guarded_returns_the_status_of_the_function_and_of_what_it_raised() -> None:
    assert run_guarded(lambda: None).status == 0
    assert run_guarded(lambda: 1).line is None and run_guarded(lambda: 1).status == 1

    def bad() -> None:
        raise InputError("--k: expected an integer >= 1, got 0")

    assert run_guarded(bad).status == 2


def test_a_signal_is_answered_by_the_guard_and_previous_handlers_come_back() -> None:
    """SIGTERM (and SIGINT) during a long loop ends it with 143 (130) and one line; the handlers in
    place before the guard are restored after it."""
    before = signal.getsignal(signal.SIGTERM)

    def endless() -> None:
        threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGTERM)).start()
        while True:
            time.sleep(0.01)

    result = run_guarded(endless)
    assert (result.status, result.line, result.kind) == (
        143,
        "terminated; nothing was published",
        "interrupted",
    )
    assert signal.getsignal(signal.SIGTERM) is before

    def interrupted_library() -> None:
        """A library that turns the interrupt into its own error (DuckDB: "Query interrupted")."""
        try:
            threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT)).start()
            while True:
                time.sleep(0.01)
        except Interrupted:
            raise RuntimeError("Query interrupted") from None

    assert run_guarded(interrupted_library).status == 130
    with signal_guard() as received:
        assert received == []


def test_the_worker_and_the_command_line_give_one_status_and_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same bad input through both front ends: exit 2 and the same one line (the workbench
    stores it in state.json)."""
    from safeshare.cli import main as cli_main
    from safeshare.ui.worker import main as worker_main

    config = tmp_path / "bad.yaml"
    config.write_text("input: {path: d.csv}\nattributes: {x: quasi}\nmetirc: prec\n")
    run = tmp_path / "run"
    run.mkdir()
    project = tmp_path / "project"
    project.mkdir()
    (project / "bad.yaml").write_text(config.read_text())
    (run / "job.json").write_text(
        json.dumps(
            {
                "kind": "estimate",
                "project": str(project),
                "workdir": str(tmp_path),
                "params": {"config": "bad.yaml"},
            }
        )
    )
    assert worker_main([str(run)]) == 2
    state = json.loads((run / "state.json").read_text())
    capsys.readouterr()
    assert cli_main(["anonymize", str(project / "bad.yaml"), "--out", str(tmp_path / "o")]) == 2
    cli_line = capsys.readouterr().err.strip()
    assert state["status"] == "failed" and state["exit"] == 2
    assert state["error"] == cli_line and "metirc: unknown key" in cli_line


def test_the_silent_monitor_is_a_monitor() -> None:
    monitor: Monitor = SILENT
    with monitor.phase("x"), monitor.progress("y", 3) as update:
        assert update is None
    assert monitor.wants_estimates is False
