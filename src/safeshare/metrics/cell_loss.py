"""Information loss of a written release, cell by cell: comparable across global and local recoding.

The search's metrics (:mod:`safeshare.metrics.loss`, thesis §5.1) score a lattice *node*
before suppression, which is what OLA needs and what a release mixing levels per record
(local recoding, :mod:`safeshare.workflows.local_recoding`) does not have. These are the
definitions ARX uses to *evaluate* an output (its ``aggregates/quality`` models, which handle
local recoding), applied to the records as released: every record ``r`` has, per QI ``i``, a
level ``t_i(r)`` (its node's level; the top ``h_i`` when the record is suppressed) and the
release's classes are the records with identical released values
(:class:`safeshare.core.mixed.MixedRelease`). ``N`` records, ``S`` suppressed.

* **Precision loss** (Sweeney 2002; ARX ``QualityModelColumnOrientedPrecision``): a cell
  loses ``t_i(r) / h_i``, 1 when the record is suppressed; averaged over the records and the
  QIs with ``h_i > 0`` (weights ``w_i`` when given)::

      Prec = sum_i w_i sum_r t_i(r) / h_i  /  (N sum_i w_i)

  For a full-domain release without suppression it equals the search's Prec of the node.
  ARX reads a cell's level from its label (the first level where the text appears); here it
  is the level the record was written at: the same unless a label repeats across levels.
* **Non-uniform entropy** with local recoding (De Waal & Willenborg 1999; the extension of
  Prasser, Bild & Kuhn, "A generic method for assessing the quality of de-identified health
  data", MIE 2016; ARX ``QualityModelColumnOrientedNonUniformEntropy``; thesis §5.1 for one
  level). Per QI, let ``L_0 < ... < L_m`` be the levels present and ``P_j`` the records with
  ``t(r) >= L_j``; with ``c_P(x)`` the records of ``P`` whose value generalizes to ``x``::

      H_i = - sum_r log2( c_{P_0}(v_r) / c_{P_0}(g_{L_0}(v_r)) )                 (r in P_0)
            - sum_{j>=1} sum_{r in P_j} log2( c_{P_j}(g_{L_{j-1}}(v_r)) / c_{P_j}(g_{L_j}(v_r)) )

  i.e. each record pays ``-log2 P[value | label]`` step by step up to its own level, among
  the records generalized at least that far. At one level ``L`` for everyone it is the
  thesis' ``-sum_r log2 P[x_r | g_L(x_r)]`` (the search's entropy of the node). A suppressed
  cell shows one value for everyone (``*``): its level is ``h_i + 1``, one step above the top
  (the same as the top when the top is one label, as in ARX, where suppression writes the top
  ``*``), which adds ARX's suppression term ``-sum_x c_S(x) log2(c_S(x)/S)``.
  Normalized by ``max_i = -sum_r log2(c(v_r) / N)`` (every record at the top); the total is
  ``sum_i H_i`` over ``sum_i max_i``.
* **DM\\*** per record (Bayardo & Agrawal 2005; El Emam et al. 2009; ARX
  ``QualityModelRowOrientedDiscernibility``): a released record costs the size of its class,
  a suppressed one ``N``::

      DM* = sum_{released E} |E|^2 + N * S

  normalized between the input's own value (``sum`` over raw tuples of ``|E|^2``, nothing
  suppressed) and ``N^2``. (The search's DM* counts every class before suppression.)
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from safeshare.core.frequency import FrequencyTable
from safeshare.core.mixed import MixedRelease, raw_tuple_rows
from safeshare.errors import InputError

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class CellLoss:
    """The cell-level information loss of one release (see the module docstring)."""

    records: int
    released: int
    suppressed: int
    prec: float
    prec_per_qi: dict[str, float]
    entropy: float
    entropy_normalized: float
    entropy_per_qi: dict[str, float]
    dm_star: float
    dm_star_normalized: float
    classes: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "records": self.records,
            "released": self.released,
            "suppressed": self.suppressed,
            "classes": self.classes,
            "prec": self.prec,
            "entropy": self.entropy,
            "entropy_normalized": self.entropy_normalized,
            "dm_star": self.dm_star,
            "dm_star_normalized": self.dm_star_normalized,
            "prec_per_qi": dict(self.prec_per_qi),
            "entropy_per_qi": dict(self.entropy_per_qi),
        }


def cell_loss(release: MixedRelease, weights: Mapping[str, float] | None = None) -> CellLoss:
    """The cell-level precision loss, non-uniform entropy and DM* of ``release``."""
    table = release.table
    counts = table.counts.astype(np.float64)
    n = float(table.n_records)
    levels = _record_levels(release)
    names = table.qi_names
    weights = dict(weights or {})
    unknown = set(weights) - set(names)
    if unknown:
        raise InputError(f"prec weight for unknown quasi-identifier {sorted(unknown)[0]!r}")
    prec_per_qi: dict[str, float] = {}
    entropy_per_qi: dict[str, float] = {}
    total_w = 0.0
    weighted = 0.0
    entropy_total, entropy_max = 0.0, 0.0
    for i, (name, h) in enumerate(zip(names, table.hierarchies, strict=True)):
        if h.height > 0:
            p = float(np.dot(counts, np.minimum(levels[:, i], h.height)) / h.height / n)
            prec_per_qi[name] = p
            w = float(weights.get(name, 1.0))
            total_w += w
            weighted += w * p
        else:
            prec_per_qi[name] = 0.0
        loss, top = _entropy(table, i, levels[:, i], counts)
        entropy_per_qi[name] = loss
        entropy_total += loss
        entropy_max += top
    _, sizes = release.classes
    s = float(release.suppressed_records)
    dm = float(np.dot(sizes.astype(np.float64), sizes)) + n * s
    raw = np.bincount(raw_tuple_rows(table), weights=counts)
    dm_min = float(np.dot(raw, raw))
    dm_span = n * n - dm_min
    return CellLoss(
        records=table.n_records,
        released=release.records_out,
        suppressed=release.suppressed_records,
        prec=weighted / total_w if total_w > 0 else 0.0,
        prec_per_qi=prec_per_qi,
        entropy=entropy_total,
        entropy_normalized=entropy_total / entropy_max if entropy_max > 0 else 0.0,
        entropy_per_qi=entropy_per_qi,
        dm_star=dm,
        dm_star_normalized=(dm - dm_min) / dm_span if dm_span > 0 else 0.0,
        classes=int(sizes.shape[0]),
    )


def _record_levels(release: MixedRelease) -> npt.NDArray[np.int64]:
    """``(M, q)`` level of every row's cells: its own where released, ``h_i + 1`` (the single
    value every suppressed cell shows, above the hierarchy's top) where suppressed."""
    table = release.table
    tops = np.array([h.height for h in table.hierarchies], dtype=np.int64)
    levels = release.row_levels.astype(np.int64)
    rows = release.released
    if (levels[rows] < 0).any() or (levels[rows] > tops[None, :]).any():
        raise InputError("a row's level is outside its hierarchy")
    return np.where(rows[:, None], levels, tops[None, :] + 1)


def _entropy(
    table: FrequencyTable, i: int, t: npt.NDArray[np.int64], counts: FloatArray
) -> tuple[float, float]:
    """``(H_i, max_i)`` of QI ``i`` for row levels ``t`` (module docstring, MIE 2016)."""
    h = table.hierarchies[i]
    leaf = table.codes[:, i].astype(np.int64)
    root = np.zeros(len(h.leaves), dtype=np.int64)  # level h + 1: what a suppressed cell shows

    def codes(level: int) -> npt.NDArray[np.int64]:
        return root if level > h.height else h.leaf_codes(level).astype(np.int64)

    present = counts > 0
    loss = 0.0
    previous: int | None = None
    for level in sorted(set(t[present].tolist())):
        member = present & (t >= level)
        weight = counts * member
        below = leaf if previous is None else codes(previous)[leaf]
        above = codes(level)[leaf]
        c_below = np.bincount(below, weights=weight, minlength=int(below.max()) + 1)
        c_above = np.bincount(above, weights=weight, minlength=int(above.max()) + 1)
        rows = np.flatnonzero(member)
        loss -= math.fsum((counts[rows] * np.log2(c_below[below[rows]] / c_above[above[rows]])).tolist())
        previous = level
    c_leaf = np.bincount(leaf, weights=counts, minlength=int(leaf.max()) + 1 if leaf.size else 0)
    rows = np.flatnonzero(present)
    n = float(counts.sum())
    top = -math.fsum((counts[rows] * np.log2(c_leaf[leaf[rows]] / n)).tolist())
    return loss + 0.0, top + 0.0


__all__ = ["CellLoss", "cell_loss"]
