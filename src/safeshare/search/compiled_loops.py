"""The compiled loops of the search and the evaluator, loaded from numba's on-disk cache once
per process (:mod:`safeshare.core.jit_cache`): when the search path is imported, or, started
by a run before it reads its input (:func:`load_in_background`), in a thread beside the read.

Importing numba and loading the loops' machine code takes about 0.75 s of CPU in a fresh
process (issue 36: 0.95 s of a 6.6 s ``safeshare anonymize`` of 10 million records, before its
first pass over the input began). The first pass is DuckDB's, which releases the GIL while it
reads, so a thread loading the loops meanwhile costs the run nothing it would not pay anyway.
Whoever needs to know whether they are loaded (:func:`safeshare.core.jit_cache.loaded`: the
evaluator's and OLA's choice of the compiled paths) waits for that thread, so a search takes
the same paths, and finds the same node, as when the loading came first.

A process that forks (the workbench's fork server, :mod:`safeshare.ui.children`) imports the
search path without starting a thread: it loads the loops itself, single-threaded, before its
first fork.
"""

from __future__ import annotations

from safeshare.core import jit_cache


def load() -> bool:
    """Numba and the compiled loops' machine code, loaded if numba's on-disk cache holds them
    (:func:`safeshare.core.jit_cache.preload`), and the compiled recursion's call of the
    predicate compiled (:func:`safeshare.search._ola_jit.warm`): the first search of a process
    then pays no first-call cost. Whether they were loaded (once per process)."""
    from safeshare.core import _jit
    from safeshare.search import _ola_jit

    loaded = jit_cache.preload([*_jit.EVALUATION, *jit_cache.dispatchers(_ola_jit)])
    if loaded:
        _ola_jit.warm()  # the predicate's way out of the compiled code, which numba cannot cache
    return loaded


def load_in_background() -> None:
    """Start :func:`load` in a thread (once per process; nothing if it ran already)."""
    jit_cache.preload_in_background(load)


def ensure_loading() -> None:
    """:func:`load` now, unless a thread is loading the loops already (then nothing: who needs
    them waits for it, :func:`safeshare.core.jit_cache.loaded`)."""
    if not jit_cache.loading_in_background():
        load()


__all__ = ["ensure_loading", "load", "load_in_background"]
