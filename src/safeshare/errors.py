"""Exceptions that the command line turns into exit statuses.

Every problem a user can fix (a wrong column name, a value missing from a
hierarchy, an impossible parameter) raises :class:`InputError` or one of its
subclasses, with a one-line message that says what is wrong and where. The CLI
prints that line to stderr and exits with status 2; anything else is an
internal error (status 1).
"""

from __future__ import annotations


class SafeshareError(Exception):
    """Base class of all errors raised deliberately by safeshare."""


class InputError(SafeshareError, ValueError):
    """Bad input: data, configuration, hierarchy or parameter. Exit status 2."""


class HierarchyError(InputError):
    """A generalization hierarchy is inconsistent or does not cover the data."""


class ConfigError(InputError):
    """The configuration file or a command-line option is invalid."""


class AcknowledgementRequired(InputError):
    """A release whose warnings contradict its headline, not acknowledged: not published (issue 33).

    ``codes`` are the warning codes to acknowledge (``accept_warnings:``, ``--accept-warning``;
    :mod:`safeshare.workflows.acknowledgement`). Exit status 2.
    """

    def __init__(self, message: str, codes: list[str] | tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.codes = list(codes)

    def __reduce__(self) -> tuple[type[AcknowledgementRequired], tuple[str, list[str]]]:
        # picklable with its codes (a multiprocessing pool re-raises it in the parent)
        return (type(self), (str(self), self.codes))


class DataError(InputError):
    """The input data cannot be read or does not match the schema."""


class ResourceError(InputError):
    """The work asked for needs more memory than the machine has: refused before it is allocated.

    Raised by :func:`safeshare.resources.check_memory` with the estimate and what is
    available (a parameter such as ``flatten --events`` sized the work). Exit status 2.
    """


class OutOfMemory(SafeshareError):
    """Memory ran out while the work ran; the message says what to try, if anything.

    Raised where the remedy is known (the memory engine reading an input: the DuckDB
    engine reads it in place); a bare :class:`MemoryError` elsewhere gets a message that
    suggests no option. Exit status 1.
    """


class VerificationError(SafeshareError):
    """A written release failed its independent privacy check.

    This is never the user's fault: it means the search and the verifier
    disagree, so nothing is published and the CLI exits with status 1.
    """


class Interrupted(BaseException):
    """SIGINT or SIGTERM, raised by the command line's signal handlers.

    A :class:`BaseException`, like :class:`KeyboardInterrupt`, so that no
    ``except Exception`` on the way swallows it and every ``finally`` (the
    removal of a staging directory) runs; but not a KeyboardInterrupt, which
    Typer turns into a return value. The CLI exits with 128 + the signal number.
    """

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum
