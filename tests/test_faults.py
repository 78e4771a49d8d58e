"""Faults: interrupts, kills, failures while publishing, concurrent runs, and their exit codes.

The promise under test: after a failure or a kill at any moment the output directory holds
the complete previous output or the complete new one (never a mix, never a partial file),
the next run leaves no staging debris, and every failure a user can meet exits with one
line on stderr (2 for a problem the user can fix, 1 otherwise, 128 + signal for a signal).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pandas as pd
import pytest

import safeshare.io as sio
from safeshare.data.engines.base import OutputFormat
from safeshare.data.engines.memory import MemoryEngine
from safeshare.errors import InputError
from safeshare.models import KAnonymity
from safeshare.workflows.anonymizer import AnonymizationResult, Anonymizer
from safeshare.workflows.publish import PublishedRelease
from safeshare.workflows.publish import write_release as _write_release
from safeshare.workflows.release import ReleaseContext
from tests.conftest import ADULT_COLUMNS, ADULT_DIR, run_cli, small_people, write_small_adult

MARKER = sio.MARKER
CSV_SET = {MARKER, "release.csv", "report.html", "report.json"}
PARQUET_SET = {MARKER, "release.parquet", "report.html", "report.json"}


# --------------------------------------------------------------------------- helpers
# the run's warnings that contradict its headline, acknowledged (issue 33): the 40 people's
# sensitive diagnosis and Adult's hours-per-week, released as they are, single out records
ACCEPTED = ("kept-column-identifying",)


def write_release(
    result: AnonymizationResult, engine: MemoryEngine, out: Path, fmt: OutputFormat = "csv"
) -> PublishedRelease:
    """:func:`safeshare.workflows.publish.write_release` with :data:`ACCEPTED` acknowledged."""
    return _write_release(result, engine, out, fmt, context=ReleaseContext(accepted_warnings=ACCEPTED))


def snapshot(out: Path) -> dict[str, str]:
    """Every file of ``out`` (recursively) and the hash of its bytes."""
    return {
        str(p.relative_to(out)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(out.rglob("*"))
        if p.is_file()
    }


def complete_new(out: Path) -> bool:
    """``out`` is one complete, self-consistent output: the marker lists exactly the files,
    report.json names the release, and the release holds the records report.json says."""
    names = {p.name for p in out.iterdir()}
    if names not in (CSV_SET, PARQUET_SET):
        return False
    listed = json.loads((out / MARKER).read_text())["files"]
    report = json.loads((out / "report.json").read_text())
    if set(listed) | {MARKER} != names or report["release"] not in names:
        return False
    release = out / report["release"]
    frame = pd.read_parquet(release) if release.suffix == ".parquet" else pd.read_csv(release, dtype=str)
    return bool(report["verified"]) and len(frame) == report["records_out"]


def state_of(out: Path, old: dict[str, str]) -> str:
    """'old' or 'new'; fails the test on anything else."""
    assert out.is_dir(), f"{out} is missing"
    if snapshot(out) == old:
        return "old"
    assert complete_new(out), f"{out} is neither the previous output nor a complete new one: {snapshot(out)}"
    return "new"


def debris(out: Path) -> list[str]:
    """What is left beside ``out`` apart from ``out`` and its lock file."""
    return sorted(
        p.name
        for p in out.parent.iterdir()
        if p.name.startswith(f".{out.name}.") and not p.name.endswith(".lock")
    )


def one_line(stderr: str) -> str:
    lines = stderr.splitlines()
    assert len(lines) == 1, f"expected one line on stderr, got {stderr!r}"
    return lines[0]


@pytest.fixture()
def small() -> tuple[MemoryEngine, AnonymizationResult, AnonymizationResult]:
    """A 40-record table and two of its anonymizations (k = 4 and k = 8)."""
    engine, schema = small_people()
    return (
        engine,
        Anonymizer(schema, [KAnonymity(4)], max_suppression=0.1).fit(engine),
        Anonymizer(schema, [KAnonymity(8)], max_suppression=0.1).fit(engine),
    )


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Adult (first 3,000 records) with its config, acknowledging :data:`ACCEPTED` too."""
    directory = write_small_adult(tmp_path_factory.mktemp("adult"))
    config = directory / "adult.yaml"
    text = config.read_text()
    line = "accept_warnings: [subgroup-suppressed]"
    assert line in text
    config.write_text(text.replace(line, f"accept_warnings: [subgroup-suppressed, {', '.join(ACCEPTED)}]"))
    return directory


# --------------------------------------------------------------------------- (b) injected failures
# (step, when): a failure before a step is a failure between it and the one before.
STEPS = [
    ("recover", "before"),
    ("check_replaceable", "before"),
    ("make_stage", "before"),
    ("seal", "before"),
    ("seal", "after"),
    ("exchange", "before"),
    ("exchange", "after"),
    ("_remove_tree", "before"),
    ("release_lock", "after"),
]
FALLBACK_STEPS = [("move_aside", "after"), ("move_into_place", "before"), ("move_into_place", "after")]


class Injected(Exception):
    """The failure injected next to a publishing step."""


def inject(monkeypatch: pytest.MonkeyPatch, name: str, when: str) -> None:
    """Make ``safeshare.io.<name>`` raise before it runs, or after it has done its work."""
    original: Callable[..., object] = getattr(sio, name)

    def step(*args: object, **kwargs: object) -> object:
        if when == "after":
            original(*args, **kwargs)
        raise Injected(f"{when} {name}")

    monkeypatch.setattr(sio, name, step)


@pytest.mark.parametrize("exchange_available", [True, False], ids=["renameat2", "fallback"])
def test_failure_between_publishing_steps(
    small: tuple[MemoryEngine, AnonymizationResult, AnonymizationResult],
    tmp_path: Path,
    exchange_available: bool,
) -> None:
    """A failure between any two steps leaves the complete old or new output; the next run cleans up."""
    engine, old_result, new_result = small
    out = tmp_path / "out"
    write_release(old_result, engine, out, "csv")
    seen = set()
    for name, when in STEPS + (FALLBACK_STEPS if not exchange_available else []):
        old = snapshot(out)
        with pytest.MonkeyPatch.context() as mp:
            if not exchange_available:
                mp.setattr(sio, "exchange", lambda a, b: False)
            inject(mp, name, when)
            with contextlib.suppress(Injected, InputError):
                write_release(new_result, engine, out, "parquet")
        seen.add(state_of(out, old))
        # The next run repairs whatever is left and publishes; nothing but the lock file remains.
        write_release(new_result, engine, out, "csv")
        assert complete_new(out) and {p.name for p in out.iterdir()} == CSV_SET, (name, when)
        assert debris(out) == [], (name, when, debris(out))
    assert seen == {"old", "new"}


def test_kill_between_fallback_renames_is_repaired_by_the_next_run(
    small: tuple[MemoryEngine, AnonymizationResult, AnonymizationResult], tmp_path: Path
) -> None:
    """Killed after the previous output went aside (6a) and before the new one came in (6b)."""
    engine, old_result, _ = small
    out = tmp_path / "out"
    write_release(old_result, engine, out, "csv")
    old = snapshot(out)
    os.rename(out, tmp_path / ".out.old-abc")  # the state a SIGKILL between 6a and 6b leaves
    (tmp_path / ".out.staging-def").mkdir()
    (tmp_path / ".out.staging-def" / "release.csv").write_text("unverified\n")
    sio.recover(out)
    assert snapshot(out) == old and debris(out) == []


def test_different_format_replaces_the_old_release(
    small: tuple[MemoryEngine, AnonymizationResult, AnonymizationResult], tmp_path: Path
) -> None:
    engine, old_result, new_result = small
    out = tmp_path / "out"
    write_release(old_result, engine, out, "csv")
    write_release(new_result, engine, out, "parquet")
    assert {p.name for p in out.iterdir()} == PARQUET_SET


def test_foreign_directory_is_never_replaced(
    small: tuple[MemoryEngine, AnonymizationResult, AnonymizationResult], tmp_path: Path
) -> None:
    """A non-empty directory safeshare did not write, or a file added to its output, is refused."""
    engine, result, _ = small
    out = tmp_path / "out"
    out.mkdir()
    (out / "data.csv").write_text("the input\n")
    with pytest.raises(InputError, match=r"refusing to replace .*not a safeshare output"):
        write_release(result, engine, out)
    assert [p.name for p in out.iterdir()] == ["data.csv"]
    (out / "data.csv").unlink()
    write_release(result, engine, out)  # an empty directory is fine
    (out / "notes.txt").write_text("mine\n")
    with pytest.raises(InputError, match=r"'notes\.txt', which safeshare did not write"):
        write_release(result, engine, out)
    assert (out / "notes.txt").read_text() == "mine\n"
    assert debris(out) == []


def test_report_json_directory_in_the_way(
    small: tuple[MemoryEngine, AnonymizationResult, AnonymizationResult], tmp_path: Path
) -> None:
    """The issue's reproduction: a directory named report.json in the out dir (not ours) is refused
    before anything moves, so no new release.csv can land beside old reports."""
    engine, result, _ = small
    out = tmp_path / "out"
    (out / "report.json").mkdir(parents=True)
    with pytest.raises(InputError, match="refusing to replace"):
        write_release(result, engine, out)
    assert [p.name for p in out.iterdir()] == ["report.json"]


# --------------------------------------------------------------------------- (d) the lock
@contextlib.contextmanager
def held_lock(out: Path, pid: int) -> Iterator[None]:
    """Hold the lock of ``out`` as another run would (flock conflicts across open file descriptions)."""
    fd = os.open(out.parent / f".{out.name}.lock", os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.ftruncate(fd, 0)
        os.write(fd, f"{pid}\n".encode())
        yield
    finally:
        os.close(fd)


def test_second_run_into_a_locked_out_dir_is_refused(
    workdir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    live_stage = tmp_path / ".out.staging-live"  # the staging dir of the run holding the lock
    live_stage.mkdir()
    with held_lock(out, 4242):
        code, _, stderr = run_cli(["anonymize", str(workdir / "adult.yaml"), "--out", str(out), "-q"], capsys)
    assert code == 2
    line = one_line(stderr)
    assert "another safeshare run (pid 4242) is writing to" in line and str(out) in line
    assert not out.exists()
    assert live_stage.is_dir(), "a live run's staging directory was removed"
    # Once the lock is free, the same leftover is debris and the next run removes it.
    code, _, stderr = run_cli(["anonymize", str(workdir / "adult.yaml"), "--out", str(out), "-q"], capsys)
    assert code == 0, stderr
    assert complete_new(out) and debris(out) == []


def test_foreign_or_locked_out_dir_is_refused_before_the_data_is_read(
    workdir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The out dir is checked first: with an unreadable input AND a bad --out, the error names --out."""
    config = tmp_path / "adult.yaml"
    config.write_text((workdir / "adult.yaml").read_text().replace("path: adult.data", "path: missing.csv"))
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    code, _, stderr = run_cli(["anonymize", str(config), "--out", str(foreign), "-q"], capsys)
    assert code == 2 and "missing.csv" not in stderr and str(foreign) in one_line(stderr)
    assert [p.name for p in foreign.iterdir()] == ["notes.txt"]
    locked = tmp_path / "locked"
    with held_lock(locked, 4242):
        code, _, stderr = run_cli(["anonymize", str(config), "--out", str(locked), "-q"], capsys)
    assert code == 2 and "pid 4242" in one_line(stderr) and "missing.csv" not in stderr
    # With a usable --out the same config fails on its input, as before.
    code, _, stderr = run_cli(["anonymize", str(config), "--out", str(tmp_path / "ok"), "-q"], capsys)
    assert code == 2 and "missing.csv" in one_line(stderr)


# --------------------------------------------------------------------------- (e) exit codes
@contextlib.contextmanager
def tmpfs(where: Path, options: str) -> Iterator[Path]:
    """A real tmpfs mounted at ``where`` (root only; skipped elsewhere)."""
    where.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(where)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {done.stderr.decode().strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def anonymize(workdir: Path, out: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str]:
    code, _, stderr = run_cli(
        ["anonymize", str(workdir / "adult.yaml"), "--out", str(out), "-q", *extra], capsys
    )
    return code, stderr


@pytest.mark.parametrize("engine", ["memory", "duckdb"])
def test_disk_full_is_exit_2_one_line(
    workdir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], engine: str
) -> None:
    with tmpfs(tmp_path / "full", "size=96k") as disk:
        out = disk / "out"
        code, stderr = anonymize(workdir, out, capsys, "--engine", engine)
        assert code == 2, stderr
        line = one_line(stderr)
        assert "No space left on device" in line, line
        assert engine == "duckdb" or str(out) in line, line  # DuckDB names the file it was writing
        assert "internal error" not in line
        assert not out.exists() and debris(out) == []


def test_disk_full_injected(
    workdir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same without root: ENOSPC raised where the release is written."""

    def full(self: object, plan: object, target: Path) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(target))

    monkeypatch.setattr(MemoryEngine, "write_release", full)
    out = tmp_path / "out"
    code, stderr = anonymize(workdir, out, capsys)
    assert code == 2
    line = one_line(stderr)
    assert line.startswith(f"error: cannot write the outputs to {out}: No space left on device"), line
    assert ".staging-" not in line and not out.exists() and debris(out) == []


def test_read_only_out_dir(workdir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with tmpfs(tmp_path / "ro", "ro,size=64k") as disk:
        code, stderr = anonymize(workdir, disk / "out", capsys)
    assert code == 2
    line = one_line(stderr)
    assert "Read-only file system" in line and str(disk / "out") in line, line


def test_read_only_out_dir_injected(
    workdir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def read_only(out_dir: Path) -> Path:
        raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(out_dir.parent))

    monkeypatch.setattr(sio, "make_stage", read_only)
    out = tmp_path / "out"
    code, stderr = anonymize(workdir, out, capsys)
    assert code == 2
    assert "Read-only file system" in one_line(stderr)


def test_out_dir_on_another_device(workdir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An out dir that is a mount point cannot be swapped: refused before the run writes anything."""
    with tmpfs(tmp_path / "mnt", "size=1m") as mount:
        code, stderr = anonymize(workdir, mount, capsys)
        assert code == 2
        assert "is a mount point" in one_line(stderr)
        assert list(mount.iterdir()) == []


def test_cross_device_injected(
    small: tuple[MemoryEngine, AnonymizationResult, AnonymizationResult],
    workdir: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    out = tmp_path / "out"
    assert anonymize(workdir, out, capsys)[0] == 0
    old = snapshot(out)

    def exdev(a: Path, b: Path) -> bool:
        raise OSError(errno.EXDEV, os.strerror(errno.EXDEV), str(b))

    monkeypatch.setattr(sio, "exchange", exdev)
    code, stderr = anonymize(workdir, out, capsys, "--k", "10")
    assert code == 2
    line = one_line(stderr)
    assert "Invalid cross-device link" in line and "one file system" in line, line
    assert snapshot(out) == old and debris(out) == []


def test_bad_output_delimiter(workdir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "bad.yaml"
    text = (
        (workdir / "adult.yaml")
        .read_text()
        .replace("output: {format: csv}", 'output: {format: csv, delimiter: "ab"}')
    )
    config.write_text(text.replace("path: adult.data", f"path: {workdir / 'adult.data'}"))
    code, _, stderr = run_cli(["anonymize", str(config), "--out", str(tmp_path / "out")], capsys)
    assert code == 2
    line = one_line(stderr)
    assert "output.delimiter" in line and "'ab'" in line, line


@pytest.mark.parametrize("exc", [MemoryError(), OSError(errno.ENOMEM, os.strerror(errno.ENOMEM))])
def test_out_of_memory_while_reading(
    workdir: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    exc: BaseException,
) -> None:
    def no_memory(*args: object, **kwargs: object) -> object:
        raise exc

    monkeypatch.setattr(pd, "read_csv", no_memory)
    code, stderr = anonymize(workdir, tmp_path / "out", capsys)
    assert code == 1
    line = one_line(stderr)
    assert "memory ran out" in line and "--engine duckdb" in line and "internal error" not in line, line


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--qi", "age,age"], "--qi: column 'age' is given twice"),
        (["--qi", "age,sex", "--knowledge", "age=0.1"], "--knowledge: column 'age' is a quasi-identifier"),
    ],
)
def test_inspect_input_errors(capsys: pytest.CaptureFixture[str], extra: list[str], message: str) -> None:
    args = ["inspect", str(ADULT_DIR / "adult.data"), "--no-header", "--names", ",".join(ADULT_COLUMNS)]
    code, _, stderr = run_cli([*args, *extra], capsys)
    assert code == 2
    assert message in one_line(stderr)


# --------------------------------------------------------------------------- (a) interrupts
def start_full_adult(out: Path, *extra: str) -> subprocess.Popen[str]:
    """``python -m safeshare anonymize`` on the whole Adult data set (a run of a few seconds)."""
    cmd = [sys.executable, "-m", "safeshare", "anonymize", str(ADULT_DIR / "adult.yaml"), "--out", str(out)]
    return subprocess.Popen(
        [*cmd, "-q", "--no-tradeoff", *extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def wait_for_staging(proc: subprocess.Popen[str], out: Path, timeout: float = 120.0) -> None:
    """Return as soon as the run's staging directory exists (the run is then surely mid-way)."""
    deadline = time.monotonic() + timeout
    while not list(out.parent.glob(f".{out.name}.staging-*")):
        assert proc.poll() is None, f"the run ended before staging: {proc.communicate()}"
        assert time.monotonic() < deadline, "no staging directory appeared"
        time.sleep(0.002)


@pytest.mark.parametrize(
    "signum, code, word, engine",
    [
        (signal.SIGINT, 130, "interrupted", "memory"),
        (signal.SIGTERM, 143, "terminated", "memory"),
        (signal.SIGINT, 130, "interrupted", "duckdb"),  # DuckDB turns it into "Query interrupted"
    ],
)
def test_signal_while_staging(tmp_path: Path, signum: int, code: int, word: str, engine: str) -> None:
    """A real signal to a real process: exit 128 + signal, one line, nothing published, no staging."""
    out = tmp_path / "out"
    previous = None

    def prepare() -> None:
        if out.exists():
            shutil.rmtree(out)
        if signum == signal.SIGTERM:  # over a previous output, which must stay as it was
            out.mkdir()
            (out / "release.csv").write_text("age\n*\n")
            (out / "report.json").write_text("{}\n")
            (out / MARKER).write_text(json.dumps({"files": ["release.csv", "report.json"]}))

    prepare()
    if signum == signal.SIGTERM:
        previous = snapshot(out)
    # On a loaded machine this process may be descheduled between seeing the staging directory
    # and sending the signal, long enough for the run to publish and exit 0: that attempt proves
    # nothing either way, so it is repeated (a few times at most; one must catch the run staging).
    for _attempt in range(5):
        proc = start_full_adult(out, "--engine", engine)
        wait_for_staging(proc, out)
        proc.send_signal(signum)
        stdout, stderr = proc.communicate(timeout=120)
        if proc.returncode != 0:
            break
        prepare()
    assert proc.returncode == code, stderr
    assert one_line(stderr) == f"{word}; nothing was published"
    assert stdout == ""
    if previous is None:
        assert not out.exists()
    else:
        assert snapshot(out) == previous
    assert debris(out) == []


# --------------------------------------------------------------------------- (c) SIGKILL at random moments
@pytest.mark.slow
def test_sigkill_at_random_moments(tmp_path: Path) -> None:
    """40 SIGKILLs at random moments of a multi-second run into an out dir that holds a previous
    output (CSV); the new runs write Parquet with another k. After each kill the out dir is the
    complete old output or a complete new one; a final run succeeds and leaves no debris."""
    config = tmp_path / "adult.yaml"
    text = (ADULT_DIR / "adult.yaml").read_text().replace("hierarchies/", f"{ADULT_DIR}/hierarchies/")
    config.write_text(text.replace("path: adult.data", f"path: {ADULT_DIR / 'adult.data'}"))
    parquet = tmp_path / "adult-parquet.yaml"
    parquet.write_text(config.read_text().replace("output: {format: csv}", "output: {format: parquet}"))
    out = tmp_path / "out"
    base = [sys.executable, "-m", "safeshare", "anonymize"]
    first = subprocess.run(
        [*base, str(config), "--out", str(out), "-q", "--no-tradeoff"], capture_output=True
    )
    assert first.returncode == 0, first.stderr
    old = snapshot(out)
    rng = random.Random(7)
    started = time.monotonic()
    timed = subprocess.run([*base, str(parquet), "--out", str(tmp_path / "timed"), "-q", "--no-tradeoff"])
    assert timed.returncode == 0
    run_time = time.monotonic() - started
    outcomes = []
    for i in range(40):
        proc = subprocess.Popen(
            [*base, str(parquet), "--out", str(out), "-q", "--no-tradeoff", "--k", "10"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        if i % 2:  # half of the kills inside the staging / publishing window, which is short
            wait_for_staging(proc, out)
            time.sleep(rng.uniform(0.0, 1.5))
        else:
            time.sleep(rng.uniform(0.0, 1.1 * run_time))
        proc.kill()
        proc.wait()
        state = state_of(out, old)
        if state == "new":
            old = snapshot(out)  # a later kill may leave this one
        outcomes.append(state)
    final = subprocess.run(
        [*base, str(parquet), "--out", str(out), "-q", "--no-tradeoff", "--k", "10"], capture_output=True
    )
    assert final.returncode == 0, final.stderr
    assert complete_new(out) and {p.name for p in out.iterdir()} == PARQUET_SET
    assert debris(out) == []
    assert len(outcomes) == 40 and set(outcomes) == {"old", "new"}, outcomes  # both moments were hit


def test_signal_during_the_swap_is_delivered_after_it() -> None:
    """A SIGTERM inside the deferred block (the swap) takes effect only once the block is done."""

    class Got(Exception):
        pass

    def handler(signum: int, frame: object) -> None:
        raise Got

    previous = signal.signal(signal.SIGTERM, handler)
    finished = False
    try:
        with pytest.raises(Got), sio.signals_deferred():
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.05)
            finished = True
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert finished


def test_signal_right_after_the_stage_is_made_leaves_no_stage(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A signal delivered between creating the staging directory and owning it (the process
    preempted right after mkdtemp) must not leave the directory behind."""

    class Stop(Exception):
        pass

    def raise_stop(signum: int, frame: object) -> None:
        raise Stop

    made = sio.make_stage

    def make_then_signal(out_dir: Path) -> Path:
        stage = made(out_dir)
        os.kill(os.getpid(), signal.SIGTERM)  # the handler runs at the next bytecode boundary
        return stage

    monkeypatch.setattr(sio, "make_stage", make_then_signal)
    previous = signal.signal(signal.SIGTERM, raise_stop)
    try:
        with pytest.raises(Stop), sio.OutputDirectory(tmp_path / "out"):
            pytest.fail("the block must not run")
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert sorted(p.name for p in tmp_path.iterdir()) == [".out.lock"]


# --------------------------------------------------------------------------- (h) SIGKILL debris
_KILLED_WRITER = """
import sys, time
from pathlib import Path
from safeshare.io import OutputDirectory
with OutputDirectory(Path(sys.argv[1])) as stage:
    (stage / "release.csv").write_text("unverified\\n")
    print(stage, flush=True)
    time.sleep(600)
"""


def test_staging_folders_of_runs_killed_by_sigkill_are_removed_by_the_next_run(
    workdir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A SIGKILL leaves the run's staging folder (an unverified release) beside its --out, and on
    main only the next run into the same --out removed it. Now any run into the same folder
    removes the staging folders of dead runs, under their own locks: a live run's stays."""
    parent = tmp_path / "releases"
    parent.mkdir()
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent / "src")}
    writer = subprocess.Popen(
        [sys.executable, "-c", _KILLED_WRITER, str(parent / "monday")],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert writer.stdout is not None
        stage = Path(writer.stdout.readline().strip())
        assert stage.is_dir() and stage.name.startswith(".monday.staging-")
        assert anonymize(workdir, parent / "tuesday", capsys)[0] == 0
        assert (stage / "release.csv").is_file()  # alive: its lock is held, its stage is left alone
    finally:
        writer.kill()
        writer.wait()
    assert anonymize(workdir, parent / "wednesday", capsys)[0] == 0
    assert not stage.exists()
    assert sorted(p.name for p in parent.iterdir() if not p.name.endswith(".lock")) == [
        "tuesday",
        "wednesday",
    ]
    assert sio.recover_stale(parent) == []  # nothing left to recover
