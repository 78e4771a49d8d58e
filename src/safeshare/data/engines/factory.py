"""The engine factory: an engine by its configured name (``engine: memory | duckdb | spark``).

Outside :mod:`safeshare.cli` so that workflows and experiments can build
engines without importing the command line.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from safeshare.data.engines.base import Engine


def make_engine(name: str, source: Any, spark: Any = None, duckdb: Mapping[str, Any] | None = None) -> Engine:
    """The engine called ``name`` reading ``source``; ``spark``: the spark engine's SparkOptions;
    ``duckdb``: the DuckDB engine's ``memory_limit`` and ``threads`` (machine defaults otherwise)."""
    if name == "spark":
        from safeshare.data.engines.spark_engine import SparkEngine

        return SparkEngine(source, spark)
    if name == "duckdb":
        from safeshare.data.engines.duckdb_engine import DuckDBEngine

        return DuckDBEngine(source, **dict(duckdb or {}))
    from safeshare.data.engines.memory import MemoryEngine

    return MemoryEngine(source)
