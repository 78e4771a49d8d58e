"""Tabulation: the one GROUP BY that turns an engine's records into a :class:`FrequencyTable`.

Every workflow (anonymize, sweep, epsilon-safe, the experiments) builds its
table here: the engine groups the records by the quasi-identifiers (and any
sensitive column a privacy model needs), the hierarchies are resolved
(loaded ones as they are, builders run on the column's values) and the
grouped rows are encoded.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import pandas as pd

from safeshare.core.frequency import FrequencyTable
from safeshare.data.engines.base import COUNT_COLUMN, Engine
from safeshare.data.schema import Schema
from safeshare.errors import DataError, InputError
from safeshare.hierarchy.hierarchy import Hierarchy


def resolve_hierarchies(schema: Schema, grouped: pd.DataFrame) -> list[Hierarchy]:
    """The hierarchy of every QI: loaded ones as they are, builders run on the column's values."""
    out = []
    for qi in schema.quasi_identifiers:
        spec = schema.hierarchy_spec(qi)
        if isinstance(spec, Hierarchy):
            out.append(spec)
        else:
            values = sorted(grouped[qi].astype(str).unique())
            out.append(spec.build(values, name=qi))
    return out


def build_frequency_table(
    engine: Engine, schema: Schema, sensitive: Sequence[str] = ()
) -> tuple[FrequencyTable, dict[str, float]]:
    """Group the data by the QIs (and ``sensitive``) and encode it. Returns the table and timings."""
    timings: dict[str, float] = {}
    start = time.perf_counter()
    label = engine.label
    schema.check_columns(engine.columns(), label)
    for column in sensitive:
        if column not in engine.columns():
            raise InputError(f"unknown column {column!r} required by a privacy model")
    grouped = engine.grouped_counts([*schema.quasi_identifiers, *sensitive])
    # After the grouping, which the DuckDB and Spark engines count from: before it, a count was
    # a scan of the whole input of its own (a 1 GB CSV: 3.5 s of CPU; issue 36)
    if engine.n_records() == 0:
        raise DataError(f"{label}: the input has no records")
    schema.check_not_empty(grouped, COUNT_COLUMN, label)
    timings["group_by"] = time.perf_counter() - start
    start = time.perf_counter()
    hierarchies = resolve_hierarchies(schema, grouped)
    table = FrequencyTable.from_grouped(grouped, schema.quasi_identifiers, hierarchies, sensitive)
    timings["encode"] = time.perf_counter() - start
    return table, timings
