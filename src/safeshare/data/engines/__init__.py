"""Engines: the only code that reads raw records and writes releases."""

from safeshare.data.engines.base import COUNT_COLUMN, Engine, MixedReleasePlan, ReleasePlan
from safeshare.data.engines.duckdb_engine import DuckDBEngine
from safeshare.data.engines.memory import MemoryEngine, read_frame

__all__ = [
    "COUNT_COLUMN",
    "DuckDBEngine",
    "Engine",
    "MemoryEngine",
    "MixedReleasePlan",
    "ReleasePlan",
    "read_frame",
]
