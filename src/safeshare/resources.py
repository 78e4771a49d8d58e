"""What the machine and the installed package provide: the memory a computation may still take,
checked before it is taken, and the data files shipped inside the package.

Work whose size follows a parameter rather than the input (``flatten --events``, the depth of
a masking hierarchy, the widths of an interval hierarchy) is estimated first, and refused with
the figures when it cannot fit: :func:`check_memory` raises
:class:`~safeshare.errors.ResourceError` (exit status 2, one line) instead of letting the
process grow until the kernel kills it or a :class:`MemoryError` arrives hours later.

The memory available is the smallest of: the system's available memory (``psutil``), the
room left under the process's address-space limit (``ulimit -v``), and the room left under
its cgroup's limit (containers, ``systemd-run -p MemoryMax=``).

Data kept as a file rather than as code (the estimators' measured accuracy,
``risk/estimators/measured_accuracy.json``, written by ``tools/risk_accuracy.py``) is read with
:func:`read_json_resource` from the installed package (``importlib.resources``: a wheel, an
editable install or a zip), and written with :func:`resource_json`. JSON has no NaN or infinity:
in these files a float that is not finite is the string ``"nan"``, ``"inf"`` or ``"-inf"``, read
back as the float; and an array is read as a tuple (the data is read-only).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import resource
from importlib import resources as package_files
from pathlib import Path
from typing import Any

import psutil

from safeshare.errors import ResourceError

__all__ = [
    "DUCKDB_MEMORY_MB",
    "available_memory",
    "check_memory",
    "duckdb_memory_limit",
    "duckdb_memory_mb",
    "format_bytes",
    "read_json_resource",
    "resource_json",
]

#: The bounds, MB, of DuckDB's memory limit when none is configured: a quarter of the machine's
#: memory within them (:func:`duckdb_memory_mb`). The DuckDB engine's default
#: (:func:`safeshare.data.engines.duckdb_engine.machine_defaults`) and the limit of every reader of a
#: written release (the verifier's grouping of its rows, the disclosure check, the before / after).
#: The cap keeps the process under 1 GB: its peak resident memory is about the limit plus 350 MB
#: (the interpreter with pandas, pyarrow and DuckDB loaded, ~230 MB, and DuckDB's allocations
#: outside its buffer pool). Spilling costs little CPU: 5M rows (docs/benchmarks.md) take
#: 16.6-17.4 s of user time with any limit from 512 MB to 2 GB, while the peak goes from 0.85 GB
#: to 2.3 GB.
DUCKDB_MEMORY_MB = (256, 512)


def duckdb_memory_mb(total_bytes: int | None = None) -> int:
    """DuckDB's memory limit, MB, when none is configured: a quarter of this machine's memory (or
    of ``total_bytes``) within :data:`DUCKDB_MEMORY_MB`."""
    total = int(psutil.virtual_memory().total) if total_bytes is None else total_bytes
    low, high = DUCKDB_MEMORY_MB
    return max(low, min(high, total // 2**20 // 4))


def duckdb_memory_limit(total_bytes: int | None = None) -> str:
    """:func:`duckdb_memory_mb` as DuckDB's setting (``"488MB"``)."""
    return f"{duckdb_memory_mb(total_bytes)}MB"


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


# --------------------------------------------------------------------------- data files of the package
_NON_FINITE = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}


def _encoded(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, dict):
        return {str(k): _encoded(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_encoded(v) for v in value]
    if isinstance(value, str) and value in _NON_FINITE:
        raise ValueError(f"the text {value!r} would be read back as a float")
    if value is None or isinstance(value, str | bool | int | float):
        return value
    raise TypeError(f"not a value of a data file: {type(value).__name__}")


def _decoded(value: Any) -> Any:
    if isinstance(value, str):
        return _NON_FINITE.get(value, value)
    if isinstance(value, dict):
        return {k: _decoded(v) for k, v in value.items()}
    if isinstance(value, list):
        return tuple(_decoded(v) for v in value)
    return value


def resource_json(doc: Any) -> str:
    """``doc`` as the text of a data file of the package (module doc: non-finite floats as
    ``"nan"``, ``"inf"``, ``"-inf"``), indented, keys in their order, ending with a newline."""
    return json.dumps(_encoded(doc), indent=1, ensure_ascii=False, allow_nan=False) + "\n"


def read_json_resource(package: str, name: str) -> Any:
    """The data file ``name`` of ``package`` (e.g. ``"safeshare.risk.estimators"``), decoded as
    :func:`resource_json` wrote it."""
    text = package_files.files(package).joinpath(name).read_text(encoding="utf-8")
    return _decoded(json.loads(text))
