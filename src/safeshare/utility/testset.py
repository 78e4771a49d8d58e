"""Generalizing the untouched test set with the node chosen on the training set (thesis §5.3).

"Records in the test set should not influence the selection of a
generalization strategy. Furthermore, no suppression is applied to the test
set [...] after a generalization node has been chosen, the test set gets
generalized accordingly" (thesis §5.3). So every test record is kept and each
quasi-identifier value ``v`` is replaced by its label at the node's level,
``g_l(v)`` from the QI's hierarchy.

A test value that the hierarchy does not cover (a country that never appears
in the hierarchy file, a typo) has no label at any level. It is neither
guessed nor silently dropped: it becomes *missing* (``NaN``) and the fitted
pipeline imputes it with the training column's mode, exactly like a ``?`` of
the training data; the values and their record counts are reported
(``test_values_not_in_hierarchy`` in utility.json). Declared missing tokens
are generalized like any other value when the hierarchy covers them (UCI
Adult's hierarchies map ``?`` to ``?`` below the top).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pandas as pd

from safeshare.core.lattice import Node
from safeshare.hierarchy.hierarchy import Hierarchy


@dataclass(frozen=True)
class Uncovered:
    """Test values of one quasi-identifier that its hierarchy does not cover."""

    records: int
    values: dict[str, int] = field(default_factory=dict)

    def to_dict(self, limit: int = 20) -> dict[str, object]:
        shown = dict(sorted(self.values.items(), key=lambda kv: (-kv[1], kv[0]))[:limit])
        return {"records": self.records, "distinct": len(self.values), "values": shown}


def uncovered_values(
    frame: pd.DataFrame, qi_names: Sequence[str], hierarchies: Sequence[Hierarchy]
) -> dict[str, Uncovered]:
    """Per QI, the values of ``frame`` missing from its hierarchy (only QIs that have some)."""
    out: dict[str, Uncovered] = {}
    for qi, h in zip(qi_names, hierarchies, strict=True):
        values = frame[qi].astype(str)
        bad = values[~values.isin(h.leaf_index)]
        if len(bad):
            counts = bad.value_counts()
            out[qi] = Uncovered(len(bad), {str(v): int(c) for v, c in counts.items()})
    return out


def generalize_frame(
    frame: pd.DataFrame,
    qi_names: Sequence[str],
    hierarchies: Sequence[Hierarchy],
    node: Node,
) -> pd.DataFrame:
    """A copy of ``frame`` with every QI replaced by its label at ``node`` (no suppression).

    Values the hierarchy does not cover become ``NaN`` (see the module docstring).
    """
    out = frame.copy()
    for qi, h, level in zip(qi_names, hierarchies, node, strict=True):
        mapping: Mapping[str, str] = h.mapping(level)
        out[qi] = frame[qi].astype(str).map(mapping).astype(object)
    return out
