"""The ``inspect`` use case: equivalence-class statistics of raw data (thesis ch. 3).

Removing names is not enough: on the quasi-identifiers an attacker can
link, most records may be unique. These figures make the point for any table.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from safeshare.errors import DataError, InputError

if TYPE_CHECKING:  # numpy, pandas and the engines load once the options are valid (start-up)
    import numpy as np

    from safeshare.data.engines.base import Engine

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
    import numpy as np

    from safeshare.data.engines.base import COUNT_COLUMN
    from safeshare.data.schema import check_not_empty
    from safeshare.risk.measures import records_at_risk

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


def person_statistics(
    engine: Engine, quasi_identifiers: Sequence[str], person: str, k: int = 5
) -> dict[str, Any]:
    """The class statistics in people (issue 32): with ``person`` the column identifying each
    record's person, a class holds ``people(E)`` distinct people; a person is exposed through
    their most exposed class (the one with the fewest people). Returns the people, their rows
    per person, the people alone in a class of theirs, the people with a class of fewer than ``k``
    people, and the prosecutor risk per person (``1 / people`` of their most exposed class): its
    maximum and mean over people."""
    import numpy as np
    import pandas as pd

    from safeshare.core.tabulate import check_person_values
    from safeshare.data.engines.base import COUNT_COLUMN

    qis = list(quasi_identifiers)
    if person not in engine.columns():
        raise InputError(
            f"--person: unknown column {person!r}: the input has columns {', '.join(engine.columns()[:20])}"
        )
    if person in qis:
        raise InputError(f"--person: {person!r} is a quasi-identifier; the person key identifies a person")
    grain = engine.grouped_counts([*qis, person])
    check_person_values(grain, person, engine.label, engine.missing)
    cls = grain.groupby(qis, sort=False, dropna=False).ngroup().to_numpy()
    persons, n_people = pd.factorize(grain[person].astype(str))
    pairs = pd.DataFrame({"c": cls, "p": persons}).drop_duplicates()
    people = np.bincount(pairs["c"].to_numpy(), minlength=int(cls.max()) + 1)
    exposure = pairs.assign(f=people[pairs["c"].to_numpy()]).groupby("p")["f"].min().to_numpy()
    rows = np.bincount(persons, weights=grain[COUNT_COLUMN].to_numpy(np.float64), minlength=len(n_people))
    alone = int((exposure == 1).sum())
    below = int((exposure < k).sum())
    total = int(exposure.size)
    return {
        "column": person,
        "people": total,
        "rows_per_person": rows_per_person(rows),
        "people_alone": alone,
        "people_alone_pct": 100.0 * alone / total,
        "people_below_k": below,
        "people_below_k_pct": 100.0 * below / total,
        "smallest_class_people": int(people[people > 0].min()),
        "max_risk": 1.0 / float(exposure.min()),
        "mean_risk": float((1.0 / exposure).mean()),
    }


def rows_per_person(rows: np.ndarray) -> dict[str, Any]:
    """Rows per person: mean, median, largest, and the people with several rows."""
    import numpy as np

    return {
        "mean": float(rows.mean()),
        "median": float(np.median(rows)),
        "max": int(rows.max()),
        "people_with_several": int((rows > 1).sum()),
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
    #: with ``person``: the figures in people (:func:`person_statistics`)
    people: Mapping[str, Any] | None = None
    #: without ``person``: the columns that look like a person identifier and repeat, each with its
    #: rows per person (issue 32: :mod:`safeshare.data.person_key`)
    repeated_persons: tuple[Mapping[str, Any], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        doc = {"data": self.source, **self.statistics}
        if self.m_concealing is not None:
            doc["m_concealing"] = dict(self.m_concealing)
        doc["people"] = dict(self.people) if self.people is not None else None
        doc["repeated_persons"] = [dict(r) for r in self.repeated_persons]
        return doc


def inspect(data: str | Path, **options: Any) -> Inspection:
    """``safeshare inspect DATA --qi A,B``: why removing names is not enough (thesis ch. 3).

    Keywords are the command's options: ``qi`` (columns, a list or a comma text), ``k``
    (records in classes smaller than k are counted; default 5), ``knowledge`` (column ->
    probability an adversary knows it: also measure m-concealing, docs/m-concealing.md),
    ``person`` (the column identifying each record's person: the figures in people too; without
    it, a column that looks like one and repeats is reported with its rows per person), and the
    data-reading options ``delimiter``, ``header``, ``names``, ``missing``,
    ``skip_rows``.
    """
    from safeshare.config.commands import InspectOptions
    from safeshare.config.commands import options as validated

    opts = validated(InspectOptions, options)
    source = opts.source(data)
    source.check_readable()  # before the engine (pandas) is imported

    from safeshare.data.engines.memory import MemoryEngine

    engine = MemoryEngine(source)
    stats = class_statistics(engine, opts.qi, opts.k)
    people = person_statistics(engine, opts.qi, opts.person, opts.k) if opts.person is not None else None
    repeated = () if opts.person is not None else tuple(_repeated(engine, opts.qi))
    measured = None
    if opts.knowledge is not None:
        from safeshare.risk.knowledge import AdversaryKnowledge
        from safeshare.risk.m_concealing import measure_engine

        knowledge = AdversaryKnowledge(opts.knowledge)
        measured = measure_engine(engine, stats["quasi_identifiers"], knowledge, top=5).to_dict()
    return Inspection(Path(data).name, stats, measured, people, repeated)


def _repeated(engine: Engine, quasi_identifiers: Sequence[str]) -> list[dict[str, Any]]:
    """The columns (not quasi-identifiers) that look like a person identifier and repeat, with
    their rows per person."""
    import numpy as np

    from safeshare.data.engines.base import COUNT_COLUMN
    from safeshare.data.person_key import repeated_persons

    roles: dict[str, str | None] = {
        c: ("quasi" if c in quasi_identifiers else None) for c in engine.columns()
    }
    out = []
    for found in repeated_persons(engine, roles):
        counts = engine.grouped_counts([found.column])[COUNT_COLUMN].to_numpy(np.float64)
        out.append({**found.to_dict(), "rows_per_person": rows_per_person(counts)})
    return out
