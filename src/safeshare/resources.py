"""What the machine can do: the memory a computation may still take, checked before it is taken.

Work whose size follows a parameter rather than the input (``flatten --events``, the depth of
a masking hierarchy, the widths of an interval hierarchy) is estimated first, and refused with
the figures when it cannot fit: :func:`check_memory` raises
:class:`~safeshare.errors.ResourceError` (exit status 2, one line) instead of letting the
process grow until the kernel kills it or a :class:`MemoryError` arrives hours later.

The memory available is the smallest of: the system's available memory (``psutil``), the
room left under the process's address-space limit (``ulimit -v``), and the room left under
its cgroup's limit (containers, ``systemd-run -p MemoryMax=``).
"""

from __future__ import annotations

import contextlib
import os
import resource
from pathlib import Path

import psutil

from safeshare.errors import ResourceError

__all__ = ["available_memory", "check_memory", "format_bytes"]

_CGROUP_FILES = (
    ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),  # cgroup v2
    ("/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.usage_in_bytes"),  # v1
)


def _cgroup_room() -> int | None:
    """Bytes left under the cgroup's memory limit, or None when there is no limit."""
    for limit_file, usage_file in _CGROUP_FILES:
        with contextlib.suppress(OSError, ValueError):
            text = Path(limit_file).read_text().strip()
            if text == "max":
                return None
            limit = int(text)
            if limit >= 1 << 60:  # cgroup v1's "no limit"
                return None
            return max(0, limit - int(Path(usage_file).read_text().strip()))
    return None


def available_memory() -> int:
    """Bytes this process may still allocate (see the module doc)."""
    room = int(psutil.virtual_memory().available)
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft != resource.RLIM_INFINITY:
        room = min(room, max(0, soft - int(psutil.Process(os.getpid()).memory_info().vms)))
    cgroup = _cgroup_room()
    return room if cgroup is None else min(room, cgroup)


def format_bytes(n: float) -> str:
    """``n`` bytes for a message: ``"512 B"``, ``"3.2 MB"``, ``"6.1 GB"``, ``"30,000 TB"``, and
    from a petabyte on ``"2.05e+20 B"`` (computed on the digits: ``n`` may exceed any float)."""
    if n >= 10**15:
        digits = str(int(n))
        return f"{digits[0]}.{digits[1:3]}e+{len(digits) - 1} B"
    for unit, size in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            value = n / size
            return f"{value:.3g} {unit}" if value < 999.5 else f"{value:,.0f} {unit}"
    return f"{int(n)} B"


def check_memory(needed: float, what: str, hint: str = "") -> None:
    """Raise :class:`ResourceError` when ``needed`` bytes exceed :func:`available_memory`.

    ``what`` says what needs them (``"flattening 3 persons x 100,000,000 events"``), ``hint``
    how to ask for less; the message gives both figures.
    """
    available = available_memory()
    if needed > available:
        advice = f"; {hint}" if hint else ""
        raise ResourceError(
            f"{what} needs about {format_bytes(needed)} of memory, more than the "
            f"{format_bytes(available)} available{advice}"
        )
