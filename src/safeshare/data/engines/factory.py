"""The engine factory: an engine by its configured name (``engine: memory | duckdb | spark``).

Outside :mod:`safeshare.cli` so that workflows and experiments can build
engines without importing the command line.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from safeshare.data.engines.base import Engine
from safeshare.errors import OutOfMemory

#: How a configuration selects the DuckDB engine (for :func:`make_engine`'s ``switch``).
CONFIG_SWITCH = "engine: duckdb in the configuration"

if TYPE_CHECKING:
    from safeshare.data.identifiers.treatment import IdentifierTreatment


def make_engine(
    name: str,
    source: Any,
    spark: Any = None,
    duckdb: Mapping[str, Any] | None = None,
    *,
    identifiers: IdentifierTreatment | None = None,
    switch: str | None = None,
) -> Engine:
    """The engine called ``name`` reading ``source``; ``spark``: the spark engine's SparkOptions;
    ``duckdb``: the DuckDB engine's ``memory_limit`` and ``threads`` (machine defaults otherwise);
    ``identifiers``: pseudonyms and shifted dates applied while reading (every engine).

    When the memory engine runs out of memory reading the input, :class:`OutOfMemory` says so
    and advises the DuckDB engine, selected as ``switch`` says (``"--engine duckdb"`` for a
    command with that option, :data:`CONFIG_SWITCH` for a configuration; None names no
    way): the advice names only a way the caller offers.
    """
    if name == "spark":
        from safeshare.data.engines.spark_engine import SparkEngine

        return SparkEngine(source, spark, identifiers=identifiers)
    if name == "duckdb":
        from safeshare.data.engines.duckdb_engine import DuckDBEngine

        return DuckDBEngine(source, **dict(duckdb or {}), identifiers=identifiers)
    from safeshare.data.engines.memory import MemoryEngine

    try:
        return MemoryEngine(source, identifiers=identifiers)
    except MemoryError:
        path = getattr(source, "path", "the input")
        how = f" ({switch})" if switch else ""
        raise OutOfMemory(
            f"memory ran out reading {path}: the memory engine holds the whole input; "
            f"try the DuckDB engine{how}, which reads it in place"
        ) from None
