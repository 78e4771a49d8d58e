"""Every privacy model judged on the classes of a release that mixes generalization levels.

A locally recoded release (:class:`safeshare.core.mixed.MixedRelease`) has no single node:
its classes are the records with identical released values, and a class may join rows
written at different nodes (a round-2 class whose labels coincide with a round-1 class).
The per-class models survive such a merge when each part passed against the *same* reference
(k-anonymity: the class grows; l-diversity in its three variants is monotone under the union
of classes, Machanavajjhala et al. 2007; t-closeness: the EMD to a fixed distribution is
convex; m-concealing: every indistinguishable set grows). But a round's search judges its
classes on its own records (t-closeness against their distribution), and a node-level model
(the risk threshold) depends on every released class. So the models are checked here on the
merged classes, over the whole frequency table:

* per-class models whose verdict depends on a class's records only (k-anonymity,
  l-diversity, t-closeness) through :meth:`PrivacyModel.acceptable` on
  :meth:`MixedRelease.as_classes`;
* m-concealing directly from its definition (thesis formula 5.1) on the merged classes,
  since its measure evaluates one node: ``m(i) = pi * sum_q P(q) / |{j in E(i): x_c(j) =
  x_c(i), c in q}|``, the empty state's set being the class ``E(i)`` itself;
* node-level models (:class:`NodePrivacyModel`, the risk threshold) on all released classes.

Small-cell suppression is refused: the population group of a class whose labels come from
several nodes (the same text may cover different leaves at different levels) is not defined.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from safeshare.core.mixed import MixedRelease
from safeshare.errors import InputError
from safeshare.models.base import BoolArray, NodePrivacyModel, PrivacyModel
from safeshare.models.m_concealing import MConcealing
from safeshare.models.small_cells import SmallCells
from safeshare.numerics import TOLERANCE


def check_supported(models: Sequence[PrivacyModel]) -> None:
    """Raise :class:`InputError` for a model that cannot be judged on mixed classes."""
    for m in models:
        if isinstance(m, SmallCells):
            raise InputError(
                "local recoding does not support small-cells: a class mixing generalization levels "
                "has no defined population group"
            )


@dataclass(frozen=True)
class MixedAssessment:
    """The verdict of every model on a mixed release.

    ``acceptable[c]``: released class ``c`` satisfies every per-class model;
    ``node_acceptable``: the node-level models accept the release (judged with the classes as
    they are, failing ones included).
    """

    acceptable: BoolArray
    node_acceptable: bool

    @property
    def passes(self) -> bool:
        return bool(self.acceptable.all()) and self.node_acceptable


def assess_mixed(models: Sequence[PrivacyModel], release: MixedRelease) -> MixedAssessment:
    """Judge ``release``'s released classes with every model (see the module docstring)."""
    check_supported(models)
    table = release.table
    classes = release.as_classes()
    n = classes.sizes.shape[0] - 1  # the last slot holds the rows that are not released
    ok = np.ones(n + 1, dtype=bool)
    for m in models:
        if isinstance(m, NodePrivacyModel):
            continue
        if isinstance(m, MConcealing):
            ok[:n] &= _m_concealing_acceptable(m, release)
        else:
            ok &= m.acceptable(classes, table)
    released = np.zeros(n + 1, dtype=bool)
    released[:n] = True
    node_ok = all(
        m.node_acceptable(classes, table, released) for m in models if isinstance(m, NodePrivacyModel)
    )
    return MixedAssessment(acceptable=ok[:n].copy(), node_acceptable=bool(node_ok))


def _m_concealing_acceptable(model: MConcealing, release: MixedRelease) -> BoolArray:
    """Per released class: every record has ``m(i) <= m`` (formula 5.1 on the merged classes)."""
    table = release.table
    row_class, sizes = release.classes
    rows = np.flatnonzero(row_class >= 0)
    cls = row_class[rows]
    counts = table.counts[rows].astype(np.float64)
    knowledge = model.knowledge
    positions = [table.sensitive_index(c) for c in knowledge.columns]
    value = np.zeros(rows.shape[0], dtype=np.float64)
    for state in knowledge.states:
        if not state.known:
            value += state.probability / sizes[cls]
            continue
        key = np.column_stack(
            [cls, *(table.sensitive_codes[rows, positions[i]].astype(np.int64) for i in state.known)]
        )
        _, inverse = np.unique(key, axis=0, return_inverse=True)
        inverse = inverse.ravel()
        group = np.bincount(inverse, weights=counts)
        value += state.probability / group[inverse]
    value *= knowledge.inclusion_probability
    failing = np.bincount(cls, weights=value > model.m + TOLERANCE, minlength=sizes.shape[0]) > 0
    return ~failing


__all__ = ["MixedAssessment", "assess_mixed", "check_supported"]
