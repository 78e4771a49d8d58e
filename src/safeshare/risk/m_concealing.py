"""m-concealing: re-identification under uncertain adversary knowledge (thesis §5.2, formula 5.1).

k-anonymity assumes that an adversary knows the quasi-identifiers (QIs) and
nothing else. m-concealing lets each further column ``c`` of a set ``K`` (the
*knowledge columns*, typically sensitive attributes that may leak) be known
with a probability ``p_c``, independently of the others. A *knowledge state*
is the subset ``q`` of ``K`` the adversary knows; its probability is

    P(q) = prod_{c in q} p_c * prod_{c in K \\ q} (1 - p_c).

An adversary in state ``q`` guesses uniformly among the records that share
record ``i``'s generalized QIs *and* its values of the columns in ``q``, so
record ``i`` is re-identified with probability (formula 5.1)

    m(i) = pi * sum_{q subset K} P(q) / | { j : QI(j) = QI(i) and x_c(j) = x_c(i) for all c in q } |

where ``pi`` is the probability that a person is included in the release (1
for a full release; the thesis allows a sampling fraction). A release is
*m-concealing* when ``m(i) <= m`` for every record. The report gives the
largest value, ``m``, and ``1/m``, which reads like ``k``: the number of
records that "hide" the most exposed one (thesis §6.1.4). With every
``p_c = 0`` and ``pi = 1``, ``m(i) = 1/|E(i)|`` and ``1/m`` is the smallest class
size, i.e. k-anonymity (thesis §5.2).

Assumptions (thesis §5.2): a column is known entirely or not at all, columns
are known independently, and the adversary guesses uniformly within the
records it cannot tell apart (no inference from correlations).

Computation on the frequency table. The table's grain is the QIs plus the
knowledge columns, so the records of one row are identical on everything
that matters. For a node, the class sizes of the QIs alone come from the
shared :class:`~safeshare.core.evaluation.Evaluator`; for every knowledge state
``q != {}`` with ``P(q) > 0`` a second evaluator treats the columns of ``q`` as
extra QIs that are never generalized (hierarchies of height 0), and gives the
sizes of the classes on "generalized QIs + columns of q" with the same
bincount machinery (and prefix caching) as the main one. ``m(i)`` is then a
weighted sum of ``2^|K|`` gathered arrays, one pass each, and a class's
maximum is taken with ``bincount``: no loop over records or classes.

Values within :data:`TOLERANCE` of ``m`` count as ``m`` (floating-point
rounding of the sum); the independent verifier uses the same convention.

Roles (a criterion is a thin adapter over a measure): the knowledge model is
:mod:`safeshare.risk.knowledge`, the measure is here, on a frequency table only
(the ``knowledge:`` columns of a report that are not in the search's grain are
put in the grain of a second table of the same QIs; a file as it is becomes a
table whose QIs are never generalized, :func:`measure_engine`), the predicate
is :class:`safeshare.models.m_concealing.MConcealing`, the independent SQL
re-check is :mod:`safeshare.verify.m_concealing`, and the report glue
(measuring a chosen release) is :mod:`safeshare.workflows.m_concealing`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from safeshare.core.evaluation import Classes, Evaluator
from safeshare.core.frequency import FrequencyTable
from safeshare.errors import InputError
from safeshare.hierarchy.hierarchy import Hierarchy
from safeshare.numerics import TOLERANCE
from safeshare.risk.knowledge import AdversaryKnowledge

if TYPE_CHECKING:
    from safeshare.data.engines.base import Engine

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

#: A record whose value is at most ``m + TOLERANCE`` satisfies m-concealing.
#: Margin that keeps the bound shortcuts of :meth:`MConcealingMeasure.acceptable`
#: on the safe side of floating-point rounding.
_MARGIN = 1e-12
_AUX_CACHE_BYTES = 64 * 2**20


@dataclass(frozen=True)
class Concealment:
    """The m-concealing measure of a release (thesis §5.2, §6.1.4).

    Attributes
    ----------
    m: the largest re-identification probability of any released record
        (0 when nothing is released).
    inverse_m: ``1/m``, comparable with k (``None`` when nothing is released).
    records: released records.
    records_at_max: records whose value is ``m`` (within :data:`TOLERANCE`).
    mean: the average value over records: the expected share of records an
        adversary drawn from the knowledge model re-identifies.
    knowledge: the knowledge probabilities.
    inclusion_probability: ``pi``.
    top: the records that drive ``m``: groups of identical records by
        decreasing value, with their generalized QIs, known values, value,
        records, and QI class size.
    """

    m: float
    inverse_m: float | None
    records: int
    records_at_max: int
    mean: float
    knowledge: dict[str, float]
    inclusion_probability: float
    top: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "m": self.m,
            "inverse_m": self.inverse_m,
            "records": self.records,
            "records_at_max": self.records_at_max,
            "mean": self.mean,
            "knowledge": dict(self.knowledge),
            "inclusion_probability": self.inclusion_probability,
            "top": list(self.top),
        }


def _summarize(
    values: FloatArray, weights: FloatArray, knowledge: AdversaryKnowledge, top_rows: list[dict[str, Any]]
) -> Concealment:
    records = round(float(weights.sum()))
    if records == 0:
        return Concealment(0.0, None, 0, 0, 0.0, knowledge.as_dict(), knowledge.inclusion_probability, [])
    m = float(values.max())
    at_max = round(float(weights[values >= m - TOLERANCE].sum()))
    mean = float((values * weights).sum() / weights.sum())
    return Concealment(
        m=m,
        inverse_m=1.0 / m,
        records=records,
        records_at_max=at_max,
        mean=mean,
        knowledge=knowledge.as_dict(),
        inclusion_probability=knowledge.inclusion_probability,
        top=top_rows,
    )


def _identity_hierarchy(labels: Sequence[str], name: str) -> Hierarchy:
    """A hierarchy of height 0: the column is never generalized."""
    return Hierarchy([(label,) for label in labels], name=name)


class MConcealingMeasure:
    """Per-record values ``m(i)`` of every lattice node, on a frequency table.

    Parameters
    ----------
    table: a frequency table whose grain includes the knowledge columns
        (``sensitive_names``).
    knowledge: the adversary model.

    Raises :class:`InputError` when a knowledge column is missing from the
    table's grain or is a quasi-identifier (QIs are always known).
    """

    def __init__(self, table: FrequencyTable, knowledge: AdversaryKnowledge) -> None:
        for column in knowledge.columns:
            if column in table.qi_names:
                raise InputError(
                    f"knowledge column {column!r} is a quasi-identifier; "
                    "QIs are always known to the adversary"
                )
            if column not in table.sensitive_names:
                raise InputError(f"knowledge column {column!r} is not in the frequency table's columns")
        self.table = table
        self.knowledge = knowledge
        self._positions = [table.sensitive_index(c) for c in knowledge.columns]
        states = knowledge.states
        self._p_empty = next((s.probability for s in states if not s.known), 0.0)
        self._states = [s for s in states if s.known]
        self._aux: dict[tuple[int, ...], Evaluator] = {}
        self._last: tuple[tuple[tuple[int, ...], float], BoolArray, BoolArray] | None = None

    # ------------------------------------------------------------ the values
    def _aux_evaluator(self, known: tuple[int, ...]) -> Evaluator:
        """Evaluator of the table with the columns of ``known`` as never-generalized QIs."""
        hit = self._aux.get(known)
        if hit is not None:
            return hit
        table = self.table
        names, hierarchies, codes = list(table.qi_names), list(table.hierarchies), [table.codes]
        for i in known:
            column = self.knowledge.columns[i]
            pos = self._positions[i]
            labels = table.sensitive_labels[pos]
            h = _identity_hierarchy(labels, column)
            index = h.leaf_index
            remap = np.array([index[label] for label in labels], dtype=np.int32)
            names.append(column)
            hierarchies.append(h)
            codes.append(remap[table.sensitive_codes[:, pos]][:, None])
        aux = FrequencyTable(
            qi_names=tuple(names),
            hierarchies=tuple(hierarchies),
            codes=np.ascontiguousarray(np.hstack(codes), dtype=np.int32),
            counts=table.counts,
        )
        ev = Evaluator(aux, cache_bytes=_AUX_CACHE_BYTES, leaf_cache=4)
        self._aux[known] = ev
        return ev

    def row_values(self, classes: Classes) -> FloatArray:
        """``m(i)`` of the records of every frequency-table row at ``classes.node`` (formula 5.1)."""
        node = classes.node
        acc = np.zeros(self.table.n_rows, dtype=np.float64)
        if self._p_empty > 0.0:
            acc += self._p_empty / classes.sizes[classes.row_class]
        for state in self._states:
            aux = self._aux_evaluator(state.known).classes(node + (0,) * len(state.known))
            acc += state.probability / aux.sizes[aux.row_class]
        return acc * self.knowledge.inclusion_probability

    def class_maxima(self, classes: Classes) -> FloatArray:
        """The largest ``m(i)`` in every class slot (0 for unused slots)."""
        out = np.zeros(classes.sizes.shape[0], dtype=np.float64)
        np.maximum.at(out, classes.row_class, self.row_values(classes))
        return out

    def acceptable(self, classes: Classes, m: float) -> BoolArray:
        """Per class slot: every record of the class has ``m(i) <= m``."""
        return self._decide(classes, m)[0]

    def failing_rows(self, classes: Classes, m: float) -> BoolArray:
        """Per frequency-table row: its records have ``m(i) > m`` (they fail at every specialization too)."""
        return self._decide(classes, m)[1]

    def _decide(self, classes: Classes, m: float) -> tuple[BoolArray, BoolArray]:
        """``(acceptable class slots, failing rows)`` at ``classes.node``; the last answer is cached.

        Shortcut (exact): since every state's class is within the QI class and
        the ``P(q)`` sum to 1, ``pi / |E| <= m(i) <= pi * (P({}) / |E| + 1 - P({}))``.
        When every class is decided by these bounds, the knowledge states are
        not evaluated.
        """
        key = (classes.node, m)
        if self._last is not None and self._last[0] == key:
            return self._last[1], self._last[2]
        sizes = classes.sizes
        used = sizes > 0
        pi = self.knowledge.inclusion_probability
        limit = m + TOLERANCE
        safe = np.where(used, sizes, 1.0)
        sure_fail = used & (pi / safe > limit + _MARGIN)
        sure_pass = used & (pi * (self._p_empty / safe + (1.0 - self._p_empty)) <= limit - _MARGIN)
        if not (used & ~sure_fail & ~sure_pass).any():
            ok, rows = sure_pass, sure_fail[classes.row_class]
        else:
            rows = self.row_values(classes) > limit
            failing = np.bincount(classes.row_class, weights=rows, minlength=sizes.shape[0]) > 0
            ok = used & ~failing
        self._last = (key, ok, rows)
        return ok, rows

    # ------------------------------------------------------------ reporting
    def measure(self, classes: Classes, released: BoolArray | None = None, top: int = 10) -> Concealment:
        """The measure of the release of ``classes.node`` (``released``: class slots kept).

        ``top`` lists the distinct released records (generalized QIs and known
        values) of the largest ``m(i)``, with how many records share them.
        """
        values = self.row_values(classes)
        weights = self.table.counts.astype(np.float64)
        keep = np.ones(self.table.n_rows, dtype=bool) if released is None else released[classes.row_class]
        node = classes.node
        everything = tuple(range(len(self.knowledge.columns)))
        if everything:
            full = self._aux_evaluator(everything).classes(node + (0,) * len(everything))
            tuple_id, tuple_size = full.row_class, full.sizes
        else:
            tuple_id, tuple_size = classes.row_class, classes.sizes
        rows = np.flatnonzero(keep)
        top_rows: list[dict[str, Any]] = []
        seen: set[int] = set()
        for r in rows[np.lexsort((rows, -values[rows]))]:
            t = int(tuple_id[r])
            if t in seen:
                continue
            seen.add(t)
            top_rows.append(self._describe(classes, int(r), float(values[r]), int(tuple_size[t])))
            if len(top_rows) >= top:
                break
        return _summarize(values[keep], weights[keep], self.knowledge, top_rows)

    def _describe(self, classes: Classes, row: int, value: float, records: int) -> dict[str, Any]:
        table, node = self.table, classes.node
        qis = {}
        for j, (name, h) in enumerate(zip(table.qi_names, table.hierarchies, strict=True)):
            qis[name] = h.labels(node[j])[int(h.leaf_codes(node[j])[table.codes[row, j]])]
        known = {
            c: table.sensitive_labels[p][int(table.sensitive_codes[row, p])]
            for c, p in zip(self.knowledge.columns, self._positions, strict=True)
        }
        return {
            "value": value,
            "inverse": 1.0 / value,
            "records": records,
            "class_size": int(classes.sizes[classes.row_class[row]]),
            "quasi_identifiers": qis,
            "known": known,
        }


# ---------------------------------------------------------------- a table as it is
def table_as_is(
    grouped: pd.DataFrame, quasi_identifiers: Sequence[str], knowledge: AdversaryKnowledge
) -> FrequencyTable:
    """Grouped records (an engine's ``grouped_counts`` of the QIs and the knowledge columns) as a
    frequency table whose QIs are never generalized: values are compared as they are (as text)."""
    hierarchies = [_identity_hierarchy(sorted(grouped[q].astype(str).unique()), q) for q in quasi_identifiers]
    return FrequencyTable.from_grouped(grouped, quasi_identifiers, hierarchies, knowledge.columns)


def measure_engine(
    engine: Engine, quasi_identifiers: Sequence[str], knowledge: AdversaryKnowledge, top: int = 10
) -> Concealment:
    """The measure of a table as it is (e.g. a written release), grouped through ``engine``.

    The knowledge columns are put in the grain of a frequency table
    (:func:`table_as_is`) and measured with :class:`MConcealingMeasure` at its
    bottom node: the one implementation of formula 5.1 besides the verifier's SQL.
    """
    from safeshare.data.engines.base import COUNT_COLUMN

    available = engine.columns()
    for column in knowledge.columns:
        if column in quasi_identifiers:
            raise InputError(
                f"--knowledge: column {column!r} is a quasi-identifier; QIs are always known to the adversary"
            )
    for column in [*quasi_identifiers, *knowledge.columns]:
        if column not in available:
            raise InputError(f"unknown column {column!r}: the input has columns {', '.join(available[:20])}")
    grouped = engine.grouped_counts([*quasi_identifiers, *knowledge.columns])
    if len(grouped) == 0 or int(grouped[COUNT_COLUMN].sum()) == 0:
        return _summarize(np.zeros(0), np.zeros(0), knowledge, [])
    table = table_as_is(grouped, quasi_identifiers, knowledge)
    classes = Evaluator(table).classes((0,) * len(table.qi_names))
    return MConcealingMeasure(table, knowledge).measure(classes, top=top)
