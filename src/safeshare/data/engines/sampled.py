"""Engines restricted to a subset of their records (record sampling, thesis §4.5.2).

Epsilon-safe LA keeps each record independently with probability ``beta``
BEFORE anything else looks at the data: records that are not sampled are
not in the frequency table the search sees, and not in the release. The
engine boundary is therefore the natural place to apply the sample.

Interface for engines (:class:`SupportsSampling`): ``sampled(keep)`` returns
an engine over the records whose position in the engine's record order is
``True`` in ``keep`` (a boolean array of length ``n_records()``). The record
order must be stable: the order in which the source is read (file order for
CSV and Parquet). An engine that cannot honour that must not implement it.

* :class:`~safeshare.data.engines.memory.MemoryEngine` is supported here by
  the wrapper :class:`SampledMemoryEngine` (no change to ``memory.py``).
* :class:`~safeshare.data.engines.duckdb_engine.DuckDBEngine` implements
  ``sampled(keep)`` for Parquet files: a ``SEMI JOIN`` of the scan with the
  kept positions on ``file_row_number``. CSV files have no stable row number
  in DuckDB, so it refuses them. :func:`restrict_engine` dispatches to it.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt
import pandas as pd

from safeshare.data.engines.base import Engine
from safeshare.data.engines.memory import MemoryEngine
from safeshare.errors import InputError


@runtime_checkable
class SupportsSampling(Protocol):
    """An engine that can restrict itself to a subset of its records."""

    def sampled(self, keep: npt.NDArray[np.bool_]) -> Engine: ...


class SampledMemoryEngine(MemoryEngine):
    """A :class:`MemoryEngine` over the records of ``base`` where ``keep`` is True.

    It shares nothing mutable with ``base``: its frame is a new DataFrame, so
    the records that were not sampled can never reach a release written by it.
    """

    def __init__(self, base: MemoryEngine, keep: npt.NDArray[np.bool_]) -> None:
        keep = np.asarray(keep)
        if keep.dtype != np.bool_ or keep.shape != (base.n_records(),):
            raise InputError(
                f"sampling mask: expected {base.n_records()} booleans, got {keep.dtype} of shape {keep.shape}"
            )
        self.frame: pd.DataFrame = base.frame.loc[keep].reset_index(drop=True)
        self.label = base.label
        self.source_records = base.n_records()
        # the identifier treatment was applied to every record of base: keep it, and its raw values
        self._missing = base._missing
        self.kept_types = base.kept_types
        self.identifiers = base.identifiers
        self._raw = None if base._raw is None else base._raw.loc[keep].reset_index(drop=True)


def restrict_engine(engine: Engine, keep: npt.NDArray[np.bool_]) -> Engine:
    """``engine`` restricted to the records where ``keep`` is True (see the module docstring)."""
    if isinstance(engine, SupportsSampling):
        return engine.sampled(keep)
    if isinstance(engine, MemoryEngine):
        return SampledMemoryEngine(engine, keep)
    raise InputError(
        f"the {getattr(engine, 'name', type(engine).__name__)} engine cannot sample records; "
        "use the memory engine for epsilon-safe anonymization"
    )
