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
from safeshare.data.identifiers.coarse import coarse_limit, is_coarse
from safeshare.data.schema import Role, Schema
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
    person = schema.person
    if person is None:
        grouped = engine.grouped_counts([*schema.quasi_identifiers, *sensitive])
    else:
        tags = profile_date_columns(schema)
        grain = [*schema.quasi_identifiers, *sensitive]
        grouped = engine.grouped_counts([*grain, *[c for c in (person, *tags) if c not in grain]])
        check_person_values(grouped, person, label, engine.missing)
    # After the grouping, which the DuckDB and Spark engines count from: before it, a count was
    # a scan of the whole input of its own (a 1 GB CSV: 3.5 s of CPU; issue 36)
    if engine.n_records() == 0:
        raise DataError(f"{label}: the input has no records")
    schema.check_not_empty(grouped, COUNT_COLUMN, label, engine.missing)
    timings["group_by"] = time.perf_counter() - start
    start = time.perf_counter()
    hierarchies = resolve_hierarchies(schema, grouped, engine.missing)
    if person is None:
        table = FrequencyTable.from_grouped(grouped, schema.quasi_identifiers, hierarchies, sensitive)
    else:
        formats = {c: str(schema.attributes[c].date_format) for c in tags}
        table = FrequencyTable.from_person_grain(
            grouped, schema.quasi_identifiers, hierarchies, sensitive, person, tags, formats
        )
    timings["encode"] = time.perf_counter() - start
    return table, timings


def profile_date_columns(schema: Schema) -> list[str]:
    """The kept shifted dates whose intervals enter a person's profile: released as they are (no
    hierarchy), shifted by the person key's shift, in a release whose person key is linkable
    (:attr:`Schema.person_released`). The intervals between a person's dates survive the shift."""
    if schema.person is None or not schema.person_released:
        return []
    return [
        name
        for name, attr in schema.attributes.items()
        if attr.role is Role.SHIFTED_DATE and attr.hierarchy is None and attr.person == schema.person
    ]


def check_person_values(grouped: pd.DataFrame, person: str, label: str, missing: Sequence[str] = ()) -> None:
    """Refuse a person key that is missing in some records (an unknown person cannot be counted:
    counted as a new person, it would inflate every class) or that is too coarse to identify a
    person (fewer distinct values than ``2 sqrt(n)``: :mod:`safeshare.data.identifiers.coarse`)."""
    values = grouped[person].astype(str)
    blank = values.str.strip().eq("") | values.isin([str(m) for m in missing])
    if bool(blank.any()):
        n = int(grouped.loc[blank, COUNT_COLUMN].sum())
        raise DataError(
            f"{label}: person column {person!r} is empty or missing in {n:,} record(s): every record "
            "needs its person to be counted; fill it in, or remove those records"
        )
    records = int(grouped[COUNT_COLUMN].sum())
    distinct = int(values.nunique())
    if is_coarse(distinct, records):
        raise DataError(
            f"{label}: person column {person!r} has {distinct:,} distinct values over {records:,} records "
            f"(fewer than 2 sqrt(n) = {coarse_limit(records):,.0f}): it does not identify a person"
        )
