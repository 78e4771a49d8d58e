"""The engine boundary: the only code that touches raw rows (docs/architecture.md).

Everything between reading and writing runs on the frequency table, whose
size is the number of distinct quasi-identifier combinations, not the number
of records. An engine therefore does exactly two jobs on the raw data:

1. :meth:`Engine.grouped_counts`: a ``GROUP BY`` over some columns, returning
   each distinct value tuple with its record count;
2. :meth:`Engine.write_release`: apply a chosen generalization and suppression
   (a :class:`ReleasePlan`) to every record and write the result.

Three implementations: :class:`~safeshare.data.engines.memory.MemoryEngine`
(pandas, the default), :class:`~safeshare.data.engines.duckdb.DuckDBEngine`
(files larger than memory, Parquet/CSV read in place) and
:class:`~safeshare.data.engines.spark_engine.SparkEngine` (Spark SQL on a cluster).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import pandas as pd

COUNT_COLUMN = "__count__"

OutputFormat = Literal["csv", "parquet"]


@dataclass
class ReleasePlan:
    """What to write: the recipe an engine applies to every record.

    Attributes
    ----------
    columns: output columns in order (identifying and text columns removed).
    generalization: for each quasi-identifier, original value -> released label.
    suppressed: generalized quasi-identifier tuples (one column per QI, values
        are released labels) whose records are removed from the release.
    format: ``csv`` or ``parquet``.
    delimiter: field separator of a CSV release.
    extra: engine-independent annotations (e.g. the algorithm that chose the node).
    """

    columns: list[str]
    generalization: dict[str, dict[str, str]]
    suppressed: pd.DataFrame
    format: OutputFormat = "csv"
    delimiter: str = ","
    extra: dict[str, object] = field(default_factory=dict)

    @property
    def quasi_identifiers(self) -> list[str]:
        return list(self.generalization)


class Engine(ABC):
    """Reads records and writes releases; see the module docstring."""

    name: str = "engine"

    @abstractmethod
    def columns(self) -> list[str]:
        """Column names of the input, in order."""

    @abstractmethod
    def n_records(self) -> int:
        """Number of records of the input."""

    @abstractmethod
    def grouped_counts(self, columns: Sequence[str]) -> pd.DataFrame:
        """Distinct value tuples of ``columns`` (as text) with a ``__count__`` column."""

    @abstractmethod
    def write_release(self, plan: ReleasePlan, target: Path) -> int:
        """Write the release described by ``plan`` to ``target``; return the rows written."""

    def settings(self) -> dict[str, object]:
        """Resource settings in force (memory limit, threads), for the report; none by default."""
        return {}

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release resources (connections, temporary files)."""

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far, in MB (0 where the OS does not say)."""
    try:
        import resource
    except ImportError:  # pragma: no cover - not on Windows
        return 0.0
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
