"""How a use case tells its caller what it is doing: :class:`Monitor`.

A use case (``anonymize``, ``sweep``, ...) never prints. It announces its phases, its
estimates and its progress to a monitor; the command line passes one that draws on
stderr (:mod:`safeshare.cli.common`), the Python API the silent :data:`SILENT`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Protocol


class Monitor(Protocol):
    """What a use case reports while it runs (every method may do nothing)."""

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
