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
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import pandas as pd

from safeshare.errors import InputError

if TYPE_CHECKING:
    from safeshare.data.identifiers.treatment import IdentifierTreatment

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


@dataclass
class MixedReleasePlan:
    """What to write when every raw quasi-identifier tuple has its own generalization.

    Local recoding (:mod:`safeshare.workflows.local_recoding`) releases records at several
    lattice nodes: the released labels of a record depend on its whole raw QI tuple, not on
    each value alone, so the recipe is a mapping table joined on the raw QI values.

    Attributes
    ----------
    columns: output columns in order.
    quasi_identifiers: the QI columns, in the order of ``keys`` and ``labels``.
    keys: one row per released distinct raw QI tuple: the raw text of each QI (as the
        engine reads it), no duplicate tuple.
    labels: aligned with ``keys``: the released label of each QI.
    format: ``csv`` or ``parquet``.
    delimiter: field separator of a CSV release.
    extra: engine-independent annotations.

    A record whose raw QI tuple is not in ``keys`` is **not written** (suppressed): nothing
    is released unless the plan names it.
    """

    columns: list[str]
    quasi_identifiers: list[str]
    keys: pd.DataFrame
    labels: pd.DataFrame
    format: OutputFormat = "csv"
    delimiter: str = ","
    extra: dict[str, object] = field(default_factory=dict)

    def __post_init__(self) -> None:
        qis = list(self.quasi_identifiers)
        if not qis:
            raise ValueError("a mixed release plan needs at least one quasi-identifier")
        for name, frame in (("keys", self.keys), ("labels", self.labels)):
            if list(frame.columns) != qis:
                raise ValueError(f"the plan's {name} must have the columns {qis}, got {list(frame.columns)}")
        if len(self.keys) != len(self.labels):
            raise ValueError("the plan's keys and labels differ in length")
        if self.keys.duplicated().any():
            raise ValueError("the plan lists a raw quasi-identifier tuple twice")


class Engine(ABC):
    """Reads records and writes releases; see the module docstring."""

    name: str = "engine"
    #: how errors name the input (a path, a table); engines that read a file set it
    label: str = "the input"
    #: pseudonyms and shifted dates applied to every record as it is read (``None``: none);
    #: :meth:`grouped_counts` and :meth:`write_release` see the treated values only.
    identifiers: IdentifierTreatment | None = None

    @property
    def missing(self) -> tuple[str, ...]:
        """The input's declared missing-value tokens as read (:mod:`safeshare.missing`): what every
        hierarchy builder keeps as it is; none by default."""
        return tuple(getattr(self, "_missing", ()))

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

    def write_mixed_release(self, plan: MixedReleasePlan, target: Path) -> int:
        """Write the release of ``plan`` (labels per raw QI tuple) to ``target``; return the rows
        written. Same row order and text as :meth:`write_release`. Engines that cannot refuse
        with :class:`~safeshare.errors.InputError` (a choice of the run, not a fault)."""
        raise InputError(
            f"the {self.name} engine cannot write a locally recoded release; use the memory or duckdb engine"
        )

    def raw_grouped_batches(
        self, columns: Sequence[str], batch_rows: int = 1_000_000
    ) -> Iterator[pd.DataFrame]:
        """The input's distinct tuples of ``columns`` as read, *before* the identifier treatment,
        with their counts (``__count__``), in frames of at most ``batch_rows`` rows: what the
        verifier recomputes pseudonyms and shifted dates from (:mod:`safeshare.verify.identifiers`).
        An engine without a treatment reads no other values than :meth:`grouped_counts`."""
        if self.identifiers is not None:
            raise NotImplementedError(f"the {self.name} engine does not keep the raw values it treats")
        grouped = self.grouped_counts(columns)
        for start in range(0, max(len(grouped), 1), batch_rows):
            yield grouped.iloc[start : start + batch_rows].reset_index(drop=True)

    def expect_release(self, columns: Sequence[str]) -> None:  # noqa: B027 - optional hook
        """Say, before the first :meth:`grouped_counts`, that a release of ``columns`` will
        follow. An engine may then group the records by these columns in its one pass over
        the input, so that :meth:`write_release` does not read the input again. A hint: every
        result, and every byte written, is the same with or without it; none by default."""

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
