"""m-concealing of a chosen release: the glue between the measure and the anonymize workflow.

The measure (:class:`~safeshare.risk.m_concealing.MConcealingMeasure`) works on a
frequency table whose grain holds the knowledge columns. When the search's table
holds them (an m-concealing model), the release an
:class:`~safeshare.workflows.anonymizer.AnonymizationResult` describes is measured
on it directly; otherwise (a top-level ``knowledge:``) a second table of the same
QIs and hierarchies is grouped through the engine with the knowledge columns in
its grain, and the result's released classes carried over. For report.json
(``m``, ``inverse_m``, ``m_concealing``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from safeshare.core.evaluation import Evaluator
from safeshare.core.frequency import FrequencyTable
from safeshare.data.engines.base import Engine
from safeshare.data.schema import Role, Schema
from safeshare.errors import ConfigError, DataError, InputError
from safeshare.risk.knowledge import AdversaryKnowledge
from safeshare.risk.m_concealing import Concealment, MConcealingMeasure
from safeshare.workflows.anonymizer import AnonymizationResult


def measure_release(
    result: AnonymizationResult, engine: Engine, knowledge: AdversaryKnowledge, top: int = 10
) -> Concealment:
    """The measure of the release ``result`` describes, suppressed records removed.

    On the search's frequency table when its grain holds the knowledge columns;
    else on a table of the same QIs grouped through the engine (the only step that
    reads records) with the knowledge columns in its grain, whose rows are
    released when the search's rows of the same QI values are.
    """
    if result.node is None or result.classes is None:
        raise InputError("no node was chosen: there is no release to measure")
    qis = list(result.table.qi_names)
    available = engine.columns()
    for column in knowledge.columns:
        if column not in available:
            raise InputError(f"unknown knowledge column {column!r}")
        if column in qis:
            raise InputError(
                f"knowledge column {column!r} is a quasi-identifier; QIs are always known to the adversary"
            )
    if set(knowledge.columns) <= set(result.table.sensitive_names):
        table, classes, rows = result.table, result.classes, result.released_rows
    else:
        grouped = engine.grouped_counts([*qis, *knowledge.columns])
        table = FrequencyTable.from_grouped(grouped, qis, result.table.hierarchies, knowledge.columns)
        classes = Evaluator(table).classes(result.node)
        rows = _carry_released(result.table.codes, result.released_rows, table.codes)
    released = np.zeros(classes.sizes.shape[0], dtype=bool)
    released[classes.row_class[rows]] = True
    return MConcealingMeasure(table, knowledge).measure(classes, released=released, top=top)


def _carry_released(codes: np.ndarray, released: np.ndarray, other: np.ndarray) -> np.ndarray:
    """Released rows of a table of the same QIs (leaf ``other`` codes), from ``codes`` and ``released``.

    Rows of equal QI leaf codes are in the same class at every node, so they are
    released together.
    """
    keys = pd.MultiIndex.from_arrays(list(codes.T))
    first = ~keys.duplicated()
    at = keys[first].get_indexer(pd.MultiIndex.from_arrays(list(other.T)))
    if (at < 0).any():
        raise DataError("the data changed since the search: a quasi-identifier combination is new")
    out: np.ndarray = released[first][at]
    return out


def report_knowledge(
    top_level: Mapping[str, float] | None, models: Sequence[object]
) -> AdversaryKnowledge | None:
    """The knowledge model whose m goes into report.json.

    The top-level ``knowledge:`` of the configuration (full release,
    ``pi = 1``) when given, else the one of an m-concealing privacy model.
    """
    if top_level is not None:
        return AdversaryKnowledge(top_level)
    for model in models:
        knowledge = getattr(model, "knowledge", None)
        if isinstance(knowledge, AdversaryKnowledge):
            return knowledge
    return None


def knowledge_columns(top_level: Mapping[str, float] | None, models: Sequence[object]) -> list[str]:
    """Every column an adversary model names: the top-level ``knowledge:`` and m-concealing models'."""
    out = list(top_level or {})
    for model in models:
        knowledge = getattr(model, "knowledge", None)
        if isinstance(knowledge, AdversaryKnowledge):
            out.extend(c for c in knowledge.columns if c not in out)
    return out


def check_knowledge_columns(columns: Sequence[str], schema: Schema, available: Sequence[str]) -> None:
    """Raise an :class:`InputError` unless every knowledge column is a released, non-QI input column."""
    for column in columns:
        if column not in available:
            shown = ", ".join(list(available)[:20])
            raise DataError(f"unknown knowledge column {column!r}: the input has columns {shown}")
        role = schema.role(column)
        attr = schema.attributes.get(column)
        if role is Role.QUASI or (attr is not None and attr.is_quasi):  # a shifted date with a hierarchy too
            raise ConfigError(
                f"knowledge column {column!r} is a quasi-identifier; QIs are always known to the adversary"
            )
        if not role.released:
            raise ConfigError(
                f"knowledge column {column!r} has role {role.value} and is not released; "
                "only released columns can be matched by an adversary"
            )


def concealment_report(
    result: AnonymizationResult, engine: Engine, knowledge: AdversaryKnowledge
) -> dict[str, Any]:
    """report.json entries: ``m``, ``inverse_m`` and the details (``m_concealing``) of the release."""
    measured = measure_release(result, engine, knowledge)
    return {"m": measured.m, "inverse_m": measured.inverse_m, "m_concealing": measured.to_dict()}
