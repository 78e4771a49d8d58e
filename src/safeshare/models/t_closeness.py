"""t-closeness with the Earth Mover's Distance (Li, Li, Venkatasubramanian 2007; thesis §2.4).

l-diversity counts values but ignores how much an adversary *learns*: a class
whose values are all "some stomach disease" is 3-diverse and still reveals a
stomach problem, and a class that is 50% HIV-positive when the population is
1% positive is diverse but damning. t-closeness bounds what the class
reveals beyond the whole table: the distribution ``P_E`` of a sensitive
attribute in class ``E`` must be within distance ``t`` of its distribution
``Q`` in the whole input,

    ``D[P_E, Q] <= t``   for every released class ``E``.

``D`` is the Earth Mover's Distance: the least work, mass times ground
distance, to turn ``P_E`` into ``Q``. Three ground distances, chosen per
sensitive attribute (Li et al. 2007, §4.2-4.3), all normalized to ``[0, 1]``:

* **equal** (categorical values): every two values are at distance 1;
  ``D = 1/2 sum_i |p_i - q_i|`` (total variation).
* **ordered** (numbers): the values are sorted, ``v_1 < ... < v_m``, and
  ``v_i, v_j`` are at distance ``|i - j| / (m - 1)``; with ``r_i = p_i - q_i``,
  ``D = 1/(m - 1) sum_{i=1}^{m} |r_1 + ... + r_i|``.
* **hierarchical** (values with a generalization hierarchy of height ``H``):
  two values are at distance ``level(v_i, v_j) / H``, the height of their
  lowest common ancestor. Li et al. compute it bottom-up: the *extra* of a
  node ``N`` is ``sum of r_i`` over its leaves, and
  ``D = sum over internal N of height(N)/H * min(pos_extra(N), neg_extra(N))``,
  with ``pos``/``neg_extra`` the sums of the positive/negative extras of
  ``N``'s children. Since ``min(pos, neg) = (sum_C |extra(C)| - |extra(N)|) / 2``
  and the root's extra is 0, the sum telescopes to
  ``D = 1/H sum_{j=0}^{H-1} TV_j``: the mean over the levels below the root of
  the total variation between ``P_E`` and ``Q`` generalized to level ``j``.
  This is what is computed (the verifier uses Li et al.'s form). A hierarchy
  whose top level has several labels gets a virtual root above it.

When a sensitive attribute has a hierarchy in the configuration the distance
is hierarchical; otherwise it is ordered when every value is a number and
equal otherwise; ``distance`` overrides the choice. For ``ordered``, values
are compared as numbers (``"1"`` and ``"1.0"`` are the same position).

``Q`` is the distribution over *all input records*, as in ARX: it does not
depend on the node or on which classes are suppressed, so the condition is a
per-class rule like k-anonymity. A checker that takes ``Q`` from the release
itself (such as pycanon) agrees when nothing is suppressed, and may report a
slightly different ``t`` otherwise (docs/privacy-models.md).

Monotonicity: the EMD is convex in ``P_E`` (it is the optimum of a linear
program whose constraints are linear in ``P_E``), so a merged class
``P = a P_1 + (1 - a) P_2`` has ``D[P, Q] <= max(D[P_1, Q], D[P_2, Q])``: the
*generalization property*, hence monotone without suppression. With
suppression a passing class merged with a failing one can fail, so the model
is not monotone there: the OLA strategy then runs the exact best-first search
(:mod:`safeshare.search.best_first`). The model has no monotone relaxation of
its own (a single record can be close to ``Q``); a k-anonymity model in the
same criterion is the relaxation that prunes the search.

Every distance is computed for all classes at once from the (class, value)
pairs of :func:`~safeshare.models.sensitive.class_value_counts`, in time
linear in the number of pairs.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from safeshare.core.evaluation import Classes
from safeshare.core.frequency import FrequencyTable
from safeshare.errors import ConfigError, HierarchyError, InputError
from safeshare.hierarchy.hierarchy import Hierarchy
from safeshare.models.base import BoolArray
from safeshare.models.sensitive import (
    ClassValueCounts,
    FloatArray,
    Int64Array,
    SensitiveAttributeModel,
    SensitiveRows,
    class_value_counts,
)
from safeshare.models.vocabulary import DISTANCES
from safeshare.numerics import TOLERANCE

if TYPE_CHECKING:
    from safeshare.data.schema import HierarchySpec, Schema

_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


def parse_number(label: str) -> float | None:
    """``label`` as a finite number, or ``None`` (plain decimal/scientific notation only)."""
    if not _NUMBER.fullmatch(label):
        return None
    value = float(label)
    return value if math.isfinite(value) else None


@dataclass(frozen=True)
class SensitiveDistribution:
    """One sensitive column, prepared for the distance.

    Attributes
    ----------
    column: the column name.
    distance: ``equal``, ``ordered`` or ``hierarchical``.
    rows: the frequency table merged per (QI tuple, value position).
    n_values: number of value positions (ordered: distinct numbers).
    reference: ``Q`` over the value positions (the input's distribution).
    levels: equal/hierarchical: for each level ``j`` below the root, the
        node of every value position at level ``j`` (non-decreasing).
    level_reference: ``Q`` summed per node of each level.
    hierarchy: the hierarchy (hierarchical distance only).
    """

    column: str
    distance: str
    rows: SensitiveRows
    n_values: int
    reference: FloatArray
    levels: tuple[Int64Array, ...] = ()
    level_reference: tuple[FloatArray, ...] = ()
    hierarchy: Hierarchy | None = None


class TCloseness(SensitiveAttributeModel):
    """Every class's distribution of every sensitive attribute within EMD ``t`` of the input's.

    Parameters
    ----------
    t: the largest Earth Mover's Distance, in ``[0, 1]``.
    distance: ``None`` (chosen per column, see the module docstring), one of
        ``equal``/``ordered``/``hierarchical`` for every column, or a mapping
        column -> distance (columns not named are chosen automatically).
    columns: the sensitive columns (default: every sensitive column).
    hierarchies: hierarchies (or builders) of sensitive columns, for the
        hierarchical distance; :meth:`bind` takes them from the schema.
    """

    name = "t-closeness"
    counts_records = True  # the distributions weigh records (issue 32)
    monotone_with_suppression = False
    monotone_without_suppression = True
    achieved_summary = ("max", "EMD to the input's distribution per class (largest over released classes)")

    def __init__(
        self,
        t: float,
        distance: str | Mapping[str, str] | None = None,
        columns: Sequence[str] | None = None,
        hierarchies: Mapping[str, HierarchySpec] | None = None,
    ) -> None:
        if (
            not isinstance(t, int | float | np.integer | np.floating)
            or isinstance(t, bool)
            or not 0.0 <= float(t) <= 1.0
        ):
            raise InputError(f"t-closeness: t must be a number in [0, 1], got {t!r}")
        if distance is not None:
            kinds = [distance] if isinstance(distance, str) else list(distance.values())
            for kind in kinds:
                if kind not in DISTANCES:
                    raise InputError(
                        f"t-closeness: distance must be one of {', '.join(DISTANCES)}, got {kind!r}"
                    )
        super().__init__(columns)
        self.t = float(t)
        self.distance = distance if isinstance(distance, str | None) else dict(distance)
        self.hierarchies: dict[str, HierarchySpec] = dict(hierarchies or {})

    # --------------------------------------------------------------- binding
    def bind(self, schema: Schema) -> TCloseness:
        out = super().bind(schema)
        assert isinstance(out, TCloseness)
        if out is self:
            out = TCloseness(self.t, self.distance, self.columns, self.hierarchies)
        hierarchies = dict(self.hierarchies)
        for column in out.columns or ():
            attr = schema.attributes.get(column)
            if column not in hierarchies and attr is not None and attr.hierarchy is not None:
                hierarchies[column] = attr.hierarchy
        out.hierarchies = hierarchies
        if isinstance(self.distance, dict):
            unknown = sorted(set(self.distance) - set(out.columns or ()))
            if unknown:
                raise ConfigError(f"privacy.t-closeness.distance: {unknown[0]!r} is not a sensitive column")
        return out

    def distance_of(self, column: str, labels: Sequence[str]) -> str:
        """The ground distance used for ``column`` whose values are ``labels``."""
        if isinstance(self.distance, str):
            return self.distance
        if isinstance(self.distance, dict) and column in self.distance:
            return self.distance[column]
        if column in self.hierarchies:
            return "hierarchical"
        if labels and all(parse_number(v) is not None for v in labels):
            return "ordered"
        return "equal"

    # ----------------------------------------------------------- preparation
    def prepare(self, table: FrequencyTable) -> dict[str, SensitiveDistribution]:
        return {c: self._prepare_column(table, c) for c in self.columns_of(table)}

    def _prepare_column(self, table: FrequencyTable, column: str) -> SensitiveDistribution:
        j = table.sensitive_index(column)
        labels = table.sensitive_labels[j]
        codes = table.sensitive_codes[:, j].astype(np.int64)
        counts = table.counts.astype(np.float64)
        n = float(table.n_records)
        kind = self.distance_of(column, labels)
        if kind == "ordered":
            numbers = [parse_number(v) for v in labels]
            bad = [v for v, x in zip(labels, numbers, strict=True) if x is None]
            if bad:
                raise InputError(
                    f"t-closeness: the ordered distance needs numbers, but column {column!r} "
                    f"has the value {bad[0]!r}"
                )
            distinct, position = np.unique(np.asarray(numbers, dtype=np.float64), return_inverse=True)
            values = position.astype(np.int64).ravel()[codes]
            m = int(distinct.shape[0])
            q = np.bincount(values, weights=counts, minlength=m) / n
            return SensitiveDistribution(column, kind, SensitiveRows.of(table, values, m), m, q)
        if kind == "hierarchical":
            hierarchy = self._hierarchy(column, labels)
            index = hierarchy.leaf_index
            leaf = np.array([index[v] for v in labels], dtype=np.int64)
            values = leaf[codes]
            m = len(hierarchy.leaves)
            top = hierarchy.height if hierarchy.size(hierarchy.height) == 1 else hierarchy.height + 1
            levels = tuple(hierarchy.leaf_codes(level).astype(np.int64) for level in range(top))
        else:
            values = codes
            m = len(labels)
            levels = (np.arange(m, dtype=np.int64),)
            hierarchy = None
        q = np.bincount(values, weights=counts, minlength=m) / n
        level_q = tuple(
            cast(FloatArray, np.bincount(lv, weights=q, minlength=int(lv.max()) + 1)) for lv in levels
        )
        return SensitiveDistribution(
            column, kind, SensitiveRows.of(table, values, m), m, q, levels, level_q, hierarchy
        )

    def _hierarchy(self, column: str, labels: Sequence[str]) -> Hierarchy:
        spec = self.hierarchies.get(column)
        if spec is None:
            raise ConfigError(
                f"t-closeness: the hierarchical distance for column {column!r} needs a hierarchy "
                f"(attributes.{column}.hierarchy)"
            )
        hierarchy = spec if isinstance(spec, Hierarchy) else spec.build(list(labels), name=column)
        missing = hierarchy.missing_values(labels)
        if missing:
            raise HierarchyError(
                f"value {missing[0]!r} of sensitive column {column!r} is missing from hierarchy "
                f"{hierarchy.name} ({len(missing)} such value(s))"
            )
        return hierarchy

    # ----------------------------------------------------------------- model
    def acceptable(self, classes: Classes, table: FrequencyTable) -> BoolArray:
        ok = np.ones(classes.sizes.shape[0], dtype=bool)
        for d in self.measure(classes, table).values():
            ok &= d <= self.t + TOLERANCE
        return ok

    def measure(self, classes: Classes, table: FrequencyTable) -> dict[str, FloatArray]:
        """Per sensitive column, the EMD between every class slot's distribution and the input's."""
        out: dict[str, FloatArray] = {}
        prepared: dict[str, SensitiveDistribution] = self.prepared(table)
        for column in self.columns_of(table):
            dist = prepared[column]
            pairs = class_value_counts(classes, dist.rows)
            if dist.distance == "ordered":
                d = ordered_emd(pairs, classes.sizes, dist.reference)
            else:
                d = tree_emd(pairs, classes.sizes, dist.levels, dist.level_reference)
            d[classes.sizes == 0] = 0.0
            out[column] = d
        return out

    def params(self) -> dict[str, Any]:
        out: dict[str, Any] = {"t": self.t}
        if self.distance is not None:
            out["distance"] = self.distance
        out.update(super().params())
        return out

    def achieved(self, classes: Classes, table: FrequencyTable, released: BoolArray) -> dict[str, Any]:
        return {**super().achieved(classes, table, released), "distance": self.distances(table)}

    def distances(self, table: FrequencyTable) -> dict[str, str]:
        """Column -> the ground distance used on ``table``."""
        prepared: dict[str, SensitiveDistribution] = self.prepared(table)
        return {c: prepared[c].distance for c in self.columns_of(table)}

    def verification_params(self, table: FrequencyTable) -> dict[str, Any]:
        """``t`` and, per column, the distance, the input's value counts and the hierarchy rows."""
        prepared: dict[str, SensitiveDistribution] = self.prepared(table)
        columns: dict[str, Any] = {}
        for column in self.columns_of(table):
            j = table.sensitive_index(column)
            counts = np.bincount(
                table.sensitive_codes[:, j], weights=table.counts, minlength=len(table.sensitive_labels[j])
            )
            entry: dict[str, Any] = {
                "distance": prepared[column].distance,
                "reference": {
                    label: int(c) for label, c in zip(table.sensitive_labels[j], counts, strict=True) if c
                },
            }
            hierarchy = prepared[column].hierarchy
            if hierarchy is not None:
                entry["hierarchy"] = [list(row) for row in hierarchy.rows]
            columns[column] = entry
        return {"t": self.t, "columns": columns}


def ordered_emd(pairs: ClassValueCounts, sizes: FloatArray, reference: FloatArray) -> FloatArray:
    """EMD with the ordered distance, per class slot: ``1/(m-1) sum_i |F_P(i) - F_Q(i)|``.

    ``F`` are cumulative distributions over the ``m`` sorted values. Between
    two values ``s < e`` present in a class (or from the last one to ``m``),
    ``F_P`` is constant, ``a``, so the pair at ``s`` contributes
    ``sum_{i=s}^{e-1} |a - F_Q(i)|``. ``F_Q`` is non-decreasing: with
    ``t = clip(first i where F_Q(i) >= a, s, e)`` and ``G(r) = sum_{i<r} F_Q(i)``
    the sum is ``a (t - s) - (G(t) - G(s)) + (G(e) - G(t)) - a (e - t)``. Before
    the first value ``F_P = 0``, which adds ``G(first)``.
    """
    m = int(reference.shape[0])
    out = np.zeros(pairs.n_slots, dtype=np.float64)
    if m <= 1 or pairs.n_pairs == 0:
        return out
    fq = np.cumsum(reference)
    g = np.concatenate(([0.0], np.cumsum(fq)))
    cls, s, count = pairs.cls, pairs.value, pairs.count
    starts = pairs.class_starts()
    # Running count within each class: at every class start, take off the previous class's total.
    running = np.cumsum(count)
    local = count.copy()
    local[starts[1:]] -= np.diff(running[starts[1:] - 1], prepend=0.0)
    a = np.cumsum(local) / sizes[cls]
    e = np.empty_like(s)
    e[:-1] = s[1:]
    e[-1] = m
    e[starts[1:] - 1] = m
    t = np.searchsorted(fq, a, side="left")
    np.clip(t, s, e, out=t)
    seg = a * (2 * t - s - e) + g[s] + g[e] - 2.0 * g[t]
    total = np.bincount(cls, weights=seg, minlength=pairs.n_slots)
    total[cls[starts]] += g[s[starts]]
    out[:] = total / (m - 1)
    return out


def tree_emd(
    pairs: ClassValueCounts,
    sizes: FloatArray,
    levels: Sequence[Int64Array],
    level_reference: Sequence[FloatArray],
) -> FloatArray:
    """EMD with the hierarchical distance (equal distance: one level), per class slot.

    ``D = 1/H sum_{j<H} TV_j`` with
    ``TV_j = 1/2 sum_N |P(N) - Q(N)| = 1/2 (sum_{N present} (|P(N) - Q(N)| - Q(N)) + 1)``
    over the nodes ``N`` of level ``j`` (``P(N) = 0`` for nodes absent from the class).
    """
    n_slots = pairs.n_slots
    total = np.zeros(n_slots, dtype=np.float64)
    if pairs.n_pairs == 0:
        return total
    p = pairs.count / sizes[pairs.cls]
    for node_of, q in zip(levels, level_reference, strict=True):
        node = node_of[pairs.value]
        change = np.empty(pairs.n_pairs, dtype=bool)
        change[0] = True
        change[1:] = (pairs.cls[1:] != pairs.cls[:-1]) | (node[1:] != node[:-1])
        starts = np.flatnonzero(change)
        pn = np.add.reduceat(p, starts)
        qn = q[node[starts]]
        term = np.abs(pn - qn) - qn
        total += 0.5 * (np.bincount(pairs.cls[starts], weights=term, minlength=n_slots) + 1.0)
    return total / len(levels)
