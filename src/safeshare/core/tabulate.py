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
from safeshare.hierarchy.builders import with_data_missing
from safeshare.hierarchy.hierarchy import Hierarchy
from safeshare.hierarchy.truth import FileSemantics, refuse_false


def resolve_hierarchies(
    schema: Schema, grouped: pd.DataFrame, missing: Sequence[str] = ()
) -> list[Hierarchy]:
    """The hierarchy of every QI: loaded ones as they are, builders run on the column's values,
    keeping the input's declared ``missing`` values as they are (:mod:`safeshare.missing`); every
    builder checks that its labels are true of their values (:mod:`safeshare.hierarchy.truth`)."""
    out = []
    for qi in schema.quasi_identifiers:
        spec = schema.hierarchy_spec(qi)
        values = sorted(grouped[qi].astype(str).unique())
        if isinstance(spec, Hierarchy):  # given loaded (the Python API): its rows of the data, judged
            refuse_false(spec, FileSemantics(), qi, frozenset(values))
            out.append(spec)
        else:
            out.append(with_data_missing(spec, missing).build(values, name=qi))
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
    schema.check_not_empty(grouped, COUNT_COLUMN, label, engine.missing)
    timings["group_by"] = time.perf_counter() - start
    start = time.perf_counter()
    hierarchies = resolve_hierarchies(schema, grouped, engine.missing)
    table = FrequencyTable.from_grouped(grouped, schema.quasi_identifiers, hierarchies, sensitive)
    timings["encode"] = time.perf_counter() - start
    return table, timings
