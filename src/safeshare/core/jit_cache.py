"""The compiled loops' machine code, from numba's on-disk cache, loaded before a search.

The loops of :mod:`safeshare.core._jit` and :mod:`safeshare.search._ola_jit` are compiled
once per machine (``cache=True``, about 6-10 s of CPU) and cached next to their source
(``__pycache__/<module>.<function>-<line>.py311.nbi`` and ``.nbc``; numba keys the cache by
the SHA-256 of the source file, so a copy of the tree with the same content hits it, and a
change to a file invalidates exactly that file's functions). A process that finds them
there still pays two first-call costs: importing numba (about 0.35 s) and, on the first
call of each compiled function and argument types, loading its machine code (the first
load also starts numba's code generator, about 0.2 s; later ones a few milliseconds each).
A one-off ``safeshare anonymize`` used to pay them inside its search (issue 24).

:func:`preload` pays them up front when the search path is imported
(:mod:`safeshare.search.compiled_loops`, which :mod:`safeshare.search.ola` calls; a run starts
it in a thread beside its read of the input, :func:`preload_in_background`), and only when
every function is in the cache: it
loads every cached signature of every function of the given modules (``Dispatcher.compile``
of a signature the cache holds loads it; nothing is compiled). After that the compiled
loops cost nothing more to use, so the evaluator and OLA use them on every table
(:func:`loaded`), not only on the big ones. With a cold cache (a fresh clone, or the first
run after the loops changed) nothing is loaded: small searches keep numpy, which needs no
compilation, and big ones compile where it pays, as before. ``make test`` (whose tests
run the compiled paths) fills the cache.

It reads numba's cache index through numba's own cache objects (``Dispatcher._cache``, a
private attribute); any failure there counts as a cold cache, which only costs speed.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

_state: dict[str, Any] = {"loaded": False, "seconds": 0.0, "cpu_seconds": 0.0, "signatures": 0}


#: the thread of :func:`preload_in_background`, once started
_background: list[threading.Thread] = []
_background_lock = threading.Lock()


def loaded() -> bool:
    """Whether :func:`preload` loaded the compiled loops in this process (once a loading thread,
    :func:`preload_in_background`, has ended: waited for)."""
    wait()
    return bool(_state["loaded"])


def preload_report() -> dict[str, Any]:
    """What :func:`preload` did: ``loaded``, ``seconds`` and ``cpu_seconds`` it took (once per
    process) and ``signatures`` (compiled functions and argument types loaded)."""
    wait()
    return {key: _state[key] for key in ("loaded", "seconds", "cpu_seconds", "signatures")}


def preload_in_background(load: Callable[[], object]) -> None:
    """Run ``load`` (a caller of :func:`preload`) in a daemon thread, once per process and only
    if :func:`preload` has not run: :func:`loaded` and :func:`preload_report` wait for it.
    A failure in the thread (numba missing, say) counts as a cold cache, as in :func:`preload`."""

    def quietly() -> None:
        try:
            load()
        except Exception:  # a cold cache: only speed is lost
            _state["tried"] = True

    with _background_lock:
        if _background or _state.get("tried"):
            return
        thread = threading.Thread(target=quietly, name="safeshare-jit-preload", daemon=True)
        _background.append(thread)
        thread.start()


def loading_in_background() -> bool:
    """Whether :func:`preload_in_background` started a thread in this process."""
    return bool(_background)


def wait() -> None:
    """Wait for the thread of :func:`preload_in_background`, if there is one (not from itself)."""
    for thread in _background:
        if thread is not threading.current_thread():
            thread.join()


def dispatchers(module: ModuleType) -> tuple[Any, ...]:
    """The module's numba dispatchers that numba caches on their own (functions always
    inlined into their callers have no cache entry), each once."""
    from numba.core.dispatcher import Dispatcher

    found = (
        value
        for value in vars(module).values()
        if isinstance(value, Dispatcher)
        and value.targetoptions.get("inline", "never") != "always"
        and value.__module__ == module.__name__
        and getattr(value, "_cache", None) is not None
    )
    return tuple(dict.fromkeys(found))


def _cached_signatures(dispatcher: Any) -> list[Any]:
    """The argument types numba's on-disk cache holds for ``dispatcher`` on this machine's
    CPU, for the function's current source (empty when the cache is cold or stale)."""
    magic = dispatcher.targetctx.codegen().magic_tuple()
    index = dispatcher._cache._cache_file._load_index()
    return [key[0] for key in index if key[1] == magic]


def preload(functions: Sequence[Any]) -> bool:
    """Load the machine code of the compiled ``functions`` (numba dispatchers) from numba's
    on-disk cache, every argument type it holds for them, if it holds every one of them;
    returns whether it did (see the module docstring). Once per process: later calls return
    the first answer."""
    if _state["loaded"] or _state.get("tried"):
        return bool(_state["loaded"])
    _state["tried"] = True
    start, cpu = time.perf_counter(), time.process_time()
    try:
        plan = [(d, _cached_signatures(d)) for d in dict.fromkeys(functions)]
        if not plan or not all(signatures for _, signatures in plan):
            return False
        for dispatcher, signatures in plan:
            for signature in signatures:
                dispatcher.compile(signature)  # in the cache: loaded, not compiled
    except Exception:  # a numba without these internals, an unreadable cache: cold
        return False
    _state.update(
        loaded=True,
        seconds=time.perf_counter() - start,
        cpu_seconds=time.process_time() - cpu,
        signatures=sum(len(signatures) for _, signatures in plan),
    )
    return True
