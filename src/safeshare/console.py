"""Console helpers shared by the command line and the long-running workflows.

They live outside :mod:`safeshare.cli` so that no library module imports the CLI
(the import-linter contract in pyproject.toml): ``out`` for results on stdout,
``err`` for progress and warnings on stderr, :func:`phase` for a spinner.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console

err = Console(stderr=True, highlight=False)
out = Console(highlight=False)


@contextmanager
def phase(label: str, quiet: bool) -> Iterator[None]:
    """Show a spinner with ``label`` on stderr while a phase runs."""
    if quiet or not err.is_terminal:
        yield
        return
    with err.status(label, spinner="dots"):
        yield
