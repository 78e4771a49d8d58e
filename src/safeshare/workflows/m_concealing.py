"""m-concealing of a chosen release: the glue between the measure and the anonymize workflow.

The measure (:mod:`safeshare.risk.m_concealing`) works on grouped rows; here
the release an :class:`~safeshare.workflows.anonymizer.AnonymizationResult`
describes is grouped through the engine (QIs and knowledge columns),
generalized with the chosen node, its suppressed classes removed, and
measured, for report.json (``m``, ``inverse_m``, ``m_concealing``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from safeshare.data.engines.base import COUNT_COLUMN, Engine
from safeshare.data.schema import Role, Schema
from safeshare.errors import ConfigError, DataError, InputError
from safeshare.risk.knowledge import AdversaryKnowledge
from safeshare.risk.m_concealing import Concealment, measure_frame
from safeshare.workflows.anonymizer import AnonymizationResult


def measure_release(
    result: AnonymizationResult, engine: Engine, knowledge: AdversaryKnowledge, top: int = 10
) -> Concealment:
    """The measure of the release ``result`` describes, suppressed records removed.

    The data is grouped by the QIs and the knowledge columns through the
    engine (the only step that reads records), generalized with the chosen
    node, the suppressed classes are removed, and :func:`measure_frame` is
    applied to the grouped rows.
    """
    if result.node is None:
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
    grouped = engine.grouped_counts([*qis, *knowledge.columns]).copy()
    for qi, h, level in zip(qis, result.table.hierarchies, result.node, strict=True):
        grouped[qi] = grouped[qi].astype(str).map(h.mapping(level))
    for column in knowledge.columns:
        grouped[column] = grouped[column].astype(str)
    suppressed = result.suppressed_tuples() if result.suppressed_records else None
    if suppressed is not None and len(suppressed):
        drop = pd.MultiIndex.from_frame(suppressed[qis].astype(str))
        keys = pd.MultiIndex.from_frame(grouped[qis])
        grouped = grouped[~keys.isin(drop)].reset_index(drop=True)
    return measure_frame(grouped, qis, knowledge, weights=COUNT_COLUMN, top=top)


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
        if role is Role.QUASI:
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
