"""How a run is run, whichever front end starts it: the plumbing the command line
(:mod:`safeshare.cli`) and the workbench's worker process (:mod:`safeshare.ui.worker`) share,
and that the use cases report and write through.

* :func:`signal_guard`: while a run works, SIGINT and SIGTERM raise
  :class:`~safeshare.errors.Interrupted` in the main thread, so an interrupt unwinds through the
  same clean-up as an error (the staging directory removed, nothing published) and is answered as
  soon as the interpreter runs again (within a second on every long loop: ``tests/test_faults.py``,
  ``tests/test_risk_outputs.py``); SIGTERM would otherwise end the process at once.
* :func:`outcome`: the one table from an exception to an exit status and one line for the person:

  ============================================  ======  ===========================================
  exception                                     status  line
  ============================================  ======  ===========================================
  none                                          0       none
  :class:`~safeshare.errors.InputError`         2       ``error: <what and where>``
  (configuration, data, option, resources)
  :class:`OSError` (a file that cannot be       2       ``error: <file>: <reason>``
  read or written: permissions, disk full)
  :class:`~safeshare.errors.VerificationError`  1       ``error: <what>; nothing was written``
  other :class:`~safeshare.errors.SafeshareError`  1    ``error: <what>``
  :class:`MemoryError`                          1       ``error: memory ran out before the <run>
                                                        finished``
  DuckDB's ``OutOfMemoryException``             1       ``error: DuckDB's memory limit was reached
                                                        ... (<its first line>); raise ...``
  :class:`~safeshare.errors.Interrupted`,       128 +   ``interrupted; nothing was published``
  :class:`KeyboardInterrupt`                    signum  (or ``... after the new output was
                                                        published to <dir>``)
  anything else                                 1       ``internal error: <type>: <message>``
  ============================================  ======  ===========================================

  A front end words an interrupt and a run its own way (:class:`Voice`: the workbench's Cancel is
  SIGTERM, which it calls ``cancelled``); the statuses are the same.
* :func:`to_json`: the one JSON encoder of everything safeshare writes or prints as JSON
  (report.json, risk.json, release.json, the workbench's files, ``--json``). It writes standard
  JSON (RFC 8259) only: a float that is not a number or not finite (NaN, an estimate that does not
  exist; +-inf) is written as ``null`` -- never as the bare ``NaN`` / ``Infinity`` that
  :func:`json.dumps` writes by default and that strict readers (browsers, ``jq``) refuse.
* :class:`Monitor`: the one progress protocol of the use cases (phases, notes, progress counts);
  :data:`SILENT` says nothing (the Python API's default).
"""

from __future__ import annotations

import datetime
import json
import math
import signal
import sys
import threading
import traceback
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any, Protocol

from safeshare.errors import InputError, Interrupted, SafeshareError, VerificationError

__all__ = [
    "CLI_VOICE",
    "SILENT",
    "WORKBENCH_VOICE",
    "Monitor",
    "Outcome",
    "Silent",
    "Voice",
    "json_ready",
    "outcome",
    "run_guarded",
    "signal_guard",
    "to_json",
]


# --------------------------------------------------------------------------- signals
@contextmanager
def signal_guard() -> Iterator[list[int]]:
    """SIGINT and SIGTERM raise :class:`Interrupted` while the block runs; the previous handlers
    are restored after it. Yields the list of the signals received, so that a caller can tell an
    interrupt that a library turned into its own error (DuckDB: "Query interrupted") from an error.

    Outside the main thread (where Python cannot install handlers) it does nothing.
    """
    received: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield received
        return

    def handler(signum: int, frame: object) -> None:
        received.append(signum)
        raise Interrupted(signum)

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield received
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


# --------------------------------------------------------------------------- exit statuses
@dataclass(frozen=True)
class Voice:
    """How a front end words what :func:`outcome` reports: the word for each interrupting signal
    and what it calls a run."""

    signals: Mapping[int, str] = field(
        default_factory=lambda: {signal.SIGINT: "interrupted", signal.SIGTERM: "terminated"}
    )
    run: str = "command"


#: The command line's words.
CLI_VOICE = Voice()
#: The workbench's: its Cancel button sends SIGTERM.
WORKBENCH_VOICE = Voice({signal.SIGINT: "interrupted", signal.SIGTERM: "cancelled"}, "run")


@dataclass(frozen=True)
class Outcome:
    """How a run ended: its exit status, the one line that says why (``None`` on success), and
    whether it ``failed`` (bad input, an error) or was ``interrupted`` (``ok``: neither)."""

    status: int
    line: str | None = None
    kind: str = "ok"


def _duckdb_out_of_memory(exc: BaseException) -> bool:
    """Whether ``exc`` is DuckDB's out-of-memory error (by its class, without importing DuckDB)."""
    kind = type(exc)
    return kind.__name__ == "OutOfMemoryException" and kind.__module__.lstrip("_").startswith("duckdb")


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _interrupt_line(signum: int, voice: Voice) -> str:
    """What an interrupt left behind: whether this process had published an output before it."""
    from safeshare.io import published_paths

    what = voice.signals.get(signum, f"stopped by signal {signum}")
    published = published_paths()
    if published:
        return f"{what} after the new output was published to {published[-1]}"
    return f"{what}; nothing was published"


def outcome(exc: BaseException | None, voice: Voice = CLI_VOICE, debug: bool = False) -> Outcome:
    """The exit status and the line of a run that ended with ``exc`` (``None``: success); the table
    of the module doc. With ``debug``, an internal error's traceback goes to stderr (and the line
    does not suggest ``SAFESHARE_DEBUG``)."""
    if exc is None:
        return Outcome(0)
    if isinstance(exc, Interrupted):
        return Outcome(128 + exc.signum, _interrupt_line(exc.signum, voice), "interrupted")
    if isinstance(exc, KeyboardInterrupt):
        return Outcome(128 + signal.SIGINT, _interrupt_line(signal.SIGINT, voice), "interrupted")
    if isinstance(exc, InputError):
        return Outcome(2, _one_line(f"error: {exc}"), "failed")
    if isinstance(exc, VerificationError):
        return Outcome(1, _one_line(f"error: {exc}; nothing was written"), "failed")
    if isinstance(exc, SafeshareError):
        return Outcome(1, _one_line(f"error: {exc}"), "failed")
    if isinstance(exc, MemoryError):  # where the remedy is known, the library raises OutOfMemory with it
        return Outcome(1, f"error: memory ran out before the {voice.run} finished", "failed")
    if _duckdb_out_of_memory(exc):  # its first line says how much it asked for and had; no data
        said = str(exc).strip().splitlines()[0] if str(exc).strip() else "Out of Memory Error"
        return Outcome(
            1,
            _one_line(
                f"error: DuckDB's memory limit was reached before the {voice.run} finished ({said}); "
                "raise duckdb.memory_limit (--duckdb-memory-limit) or lower duckdb.threads; nothing was "
                "published"
            ),
            "failed",
        )
    if isinstance(exc, OSError):  # a file the user named cannot be read or written
        where = f"{exc.filename}: " if exc.filename else ""
        return Outcome(2, _one_line(f"error: {where}{exc.strerror or exc}"), "failed")
    if debug:
        traceback.print_exception(exc)
        return Outcome(1, _one_line(f"internal error: {type(exc).__name__}: {exc}"), "failed")
    hint = " (set SAFESHARE_DEBUG=1 for a traceback)"
    return Outcome(1, _one_line(f"internal error: {type(exc).__name__}: {exc}") + hint, "failed")


def run_guarded(fn: Callable[[], int | None], voice: Voice = CLI_VOICE, debug: bool = False) -> Outcome:
    """Run ``fn`` under :func:`signal_guard` and return how it ended: the exit status ``fn``
    returns (``None``: 0), or the :func:`outcome` of what it raised. Only :class:`SystemExit`
    and the errors that are neither an :class:`Exception` nor an interrupt propagate."""
    with signal_guard() as received:
        try:
            try:
                status = fn()
            except Exception:
                if received:  # a library turned the interrupt into its own error (DuckDB)
                    raise Interrupted(received[-1]) from None
                raise
        except (Exception, Interrupted, KeyboardInterrupt) as exc:
            return outcome(exc, voice, debug)
    return Outcome(status or 0)


# --------------------------------------------------------------------------- JSON
def json_ready(value: Any) -> Any:
    """``value`` made of JSON's types only (what :func:`to_json` writes): numpy integers, floats,
    booleans and arrays as Python numbers, booleans and lists; a non-finite float as ``None``; a
    path as its text; a date or a time as its text (``str``); a tuple, set or frozenset as a list;
    a mapping's numpy-integer keys as integers. Anything else raises :class:`TypeError`."""
    if value is None or isinstance(value, str | int):  # bool is an int; json writes their subclasses
        return value
    if isinstance(value, float):  # numpy.float64 is a float
        number = float(value)
        return number if math.isfinite(number) else None
    if isinstance(value, Mapping):
        return {_key(k): json_ready(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [json_ready(v) for v in value]
    if isinstance(value, PurePath):
        return str(value)
    if isinstance(value, datetime.date | datetime.time):
        return str(value)
    numpy = sys.modules.get("numpy")  # a numpy value implies numpy is imported: never import it here
    if numpy is not None:
        if isinstance(value, numpy.bool_):
            return bool(value)
        if isinstance(value, numpy.integer):
            return int(value)
        if isinstance(value, numpy.floating):
            number = float(value)
            return number if math.isfinite(number) else None
        if isinstance(value, numpy.ndarray):
            return [json_ready(v) for v in value.tolist()]
    raise TypeError(f"not JSON serializable: {type(value).__name__}")


def _key(key: Any) -> Any:
    """A mapping key as :func:`json.dumps` takes it (its own conversion of keys is kept)."""
    if key is None or isinstance(key, str | bool | int | float):
        return key
    ready = json_ready(key)
    if isinstance(ready, list):
        raise TypeError(f"not a JSON key: {type(key).__name__}")
    return ready


def to_json(
    doc: Any,
    *,
    indent: int | None = None,
    separators: tuple[str, str] | None = None,
    sort_keys: bool = False,
) -> str:
    """``doc`` as standard JSON text (see :func:`json_ready`; no trailing newline). A NaN or an
    infinity is ``null``: :func:`json.dumps` runs with ``allow_nan=False``, so one that escaped
    :func:`json_ready` would raise instead of being written."""
    return json.dumps(
        json_ready(doc), indent=indent, separators=separators, sort_keys=sort_keys, allow_nan=False
    )


# --------------------------------------------------------------------------- progress
class Monitor(Protocol):
    """What a use case reports while it runs (every method may do nothing). A use case never
    prints: the command line passes a monitor that draws on stderr (``safeshare.cli.common``),
    the workbench one that writes ``progress.json`` (``safeshare.ui.worker``), the Python API
    :data:`SILENT`."""

    def phase(self, name: str) -> AbstractContextManager[None]:
        """A context manager around one phase (``with monitor.phase("reading"): ...``)."""
        ...

    def note(self, message: str) -> None:
        """A line of information (an estimate of the work ahead, a warning)."""
        ...

    def progress(self, what: str, total: int) -> AbstractContextManager[Callable[[int], None] | None]:
        """A context manager yielding ``update(done)`` for a count up to ``total`` (or ``None``)."""
        ...

    @property
    def wants_estimates(self) -> bool:
        """Whether estimates that cost a little work (timing one node) are worth computing."""
        ...


class Silent:
    """The monitor of the Python API: says nothing."""

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        yield

    def note(self, message: str) -> None:
        return None

    @contextmanager
    def progress(self, what: str, total: int) -> Iterator[Callable[[int], None] | None]:
        yield None

    @property
    def wants_estimates(self) -> bool:
        return False


SILENT = Silent()
