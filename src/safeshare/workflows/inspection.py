"""The ``inspect`` use case: equivalence-class statistics of raw data (thesis ch. 3).

Removing names is not enough: on the quasi-identifiers an attacker can
link, most records may be unique. These figures make the point for any table.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from safeshare.data.engines.base import COUNT_COLUMN, Engine
from safeshare.data.schema import check_not_empty
from safeshare.errors import DataError, InputError
from safeshare.risk.measures import records_at_risk

#: The advice when a quasi-identifier is mostly empty (the options of ``safeshare inspect``).
INSPECT_EMPTY_HINT = "check --delimiter, or declare a missing-value token (e.g. --missing '?')"


def class_statistics(engine: Engine, quasi_identifiers: Sequence[str], k: int = 5) -> dict[str, Any]:
    """Class sizes of the raw data on ``quasi_identifiers``.

    A quasi-identifier empty in more than half of the records is refused, as by
    ``anonymize`` (:func:`~safeshare.data.schema.check_not_empty`): a wrong delimiter
    would otherwise give reassuring figures.

    Returns records, classes, uniques (records alone in their class), records
    in classes smaller than ``k`` (and both as percentages), mean/median/max
    class size, and the prosecutor re-identification risk: ``1/|E|`` for a
    record of class ``E``, its maximum and its mean over records (= classes / N).
    """
    qis = list(quasi_identifiers)  # validated by InspectOptions: at least one, none twice
    available = engine.columns()
    for q in qis:
        if q not in available:
            raise InputError(f"unknown column {q!r}: the input has columns {', '.join(available[:20])}")
    grouped = engine.grouped_counts(qis)
    sizes = grouped[COUNT_COLUMN].to_numpy(dtype=np.int64)
    n = int(sizes.sum())
    if n == 0:
        raise DataError("the input has no records")
    check_not_empty(grouped, qis, COUNT_COLUMN, engine.label, INSPECT_EMPTY_HINT, engine.missing)
    uniques = int(records_at_risk(sizes, 2))  # records alone in their class
    below = int(records_at_risk(sizes, k))
    return {
        "quasi_identifiers": qis,
        "k": k,
        "records": n,
        "classes": int(sizes.size),
        "uniques": uniques,
        "uniques_pct": 100.0 * uniques / n,
        "below_k": below,
        "below_k_pct": 100.0 * below / n,
        "mean_class_size": n / sizes.size,
        "median_class_size": float(np.median(sizes)),
        "max_class_size": int(sizes.max()),
        "max_risk": 1.0 / float(sizes.min()),
        "mean_risk": sizes.size / n,
    }


@dataclass(frozen=True)
class Inspection:
    """The result of :func:`inspect`: class statistics of raw data and, when asked, m-concealing.

    ``statistics`` holds the figures of :func:`class_statistics`; ``m_concealing`` the
    measure of :class:`~safeshare.risk.m_concealing.MConcealingMeasure` (``None`` without
    knowledge). :meth:`to_dict` is what ``safeshare inspect --json`` prints.
    """

    source: str
    statistics: Mapping[str, Any]
    m_concealing: Mapping[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        doc = {"data": self.source, **self.statistics}
        if self.m_concealing is not None:
            doc["m_concealing"] = dict(self.m_concealing)
        return doc


def inspect(data: str | Path, **options: Any) -> Inspection:
    """``safeshare inspect DATA --qi A,B``: why removing names is not enough (thesis ch. 3).

    Keywords are the command's options: ``qi`` (columns, a list or a comma text), ``k``
    (records in classes smaller than k are counted; default 5), ``knowledge`` (column ->
    probability an adversary knows it: also measure m-concealing, docs/m-concealing.md),
    and the data-reading options ``delimiter``, ``header``, ``names``, ``missing``,
    ``skip_rows``.
    """
    from safeshare.config.commands import InspectOptions
    from safeshare.config.commands import options as validated
    from safeshare.data.engines.memory import MemoryEngine

    opts = validated(InspectOptions, options)
    engine = MemoryEngine(opts.source(data))
    stats = class_statistics(engine, opts.qi, opts.k)
    measured = None
    if opts.knowledge is not None:
        from safeshare.risk.knowledge import AdversaryKnowledge
        from safeshare.risk.m_concealing import measure_engine

        knowledge = AdversaryKnowledge(opts.knowledge)
        measured = measure_engine(engine, stats["quasi_identifiers"], knowledge, top=5).to_dict()
    return Inspection(Path(data).name, stats, measured)
