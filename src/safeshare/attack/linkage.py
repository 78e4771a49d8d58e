"""Distance-based one-to-one record linkage of a release to an identified frame.

The distance (Gower 1971, as sdcMicro's record-linkage attack and Anonymeter use it) between a
frame record ``p`` and a released row ``s`` is the mean over the compared columns of:

* a quasi-identifier: 0 when ``s``'s label covers ``p``'s value (at any level of the hierarchy);
  otherwise, for a numeric hierarchy, the gap between the value and the label's range of values
  divided by the column's range (at most 1), and 1 for any other;
* another released column the frame also has: numeric (shifted dates as day numbers):
  ``|x - y| / range`` (the range over both tables, at most 1); other: 0 when equal, else 1; a
  missing value on either side: 1.

So it attacks a perturbed release (a value moved, a date shifted by up to ``max_days``) and a
locally recoded one (labels of different levels in one column) as well as a global one.

**Assignment.** One-to-one: each frame record is named for at most one row and each row gets at
most one frame record, minimizing the summed distance (the linear assignment problem;
``scipy.optimize.linear_sum_assignment``, Crouse 2016, the solver sdcMicro's attack and
``recordlinkage`` use). SciPy is already a dependency; ``recordlinkage`` would add pandas-era pins
and its own indexers for the same solve, and Splink is probabilistic (Fellegi-Sunter weights), not
the minimum-distance assignment, so neither is needed here.

**Blocking and bounded memory.** A full ``n x N`` matrix is never built. The rows are grouped in
*blocks* of equal labels on the blocking QIs (default: every QI), and a block's candidates are the
frame records consistent with those labels (:func:`safeshare.attack.view.consistent_pairs`); blocks
are solved from the fewest candidates up, and a frame record named in one block is no candidate in
the next (so the whole assignment stays one-to-one where a record is consistent with several
blocks, as in a locally recoded release). A block whose cost matrix would exceed ``chunk_cells``
is solved in chunks of rows against its remaining candidates (each chunk optimal, the chunks
greedy in turn). Before anything is computed, the compared pairs are counted; above ``max_pairs``
the linkage is refused with the figure. Ties (equal distances, common in a generalized release)
are broken by a seeded random order of the candidates, never by the frame's order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
import pandas as pd
from scipy.optimize import linear_sum_assignment

from safeshare.attack.stats import Rate
from safeshare.attack.view import QIMap
from safeshare.errors import InputError

#: Largest cost matrix (rows x candidates) of one assignment solve (a 1,000 x 1,000 solve takes
#: 0.1-0.3 s, so an interrupt is answered within about that).
DEFAULT_CHUNK_CELLS = 1_000_000
#: Distances computed in one vectorized step.
PIECE_CELLS = 200_000
#: Most (row, candidate) distances a linkage may compute.
DEFAULT_MAX_PAIRS = 2_000_000_000


@dataclass(frozen=True)
class Column:
    """One compared column: per released row and per frame record, numbers or codes."""

    name: str
    kind: str  # "qi", "numeric" or "categorical"
    row: np.ndarray
    frame: np.ndarray
    scale: float = 1.0
    # a quasi-identifier: per level, the row's label code and the frame's code; interval of a label
    row_levels: tuple[np.ndarray, ...] = ()
    frame_levels: tuple[np.ndarray, ...] = ()
    row_low: np.ndarray | None = None
    row_high: np.ndarray | None = None


def _to_numbers(values: pd.Series, date_format: str | None) -> np.ndarray | None:
    text = values.astype(str).str.strip()
    if date_format is not None:

        def day(v: str) -> float:
            try:
                return float(datetime.strptime(v, date_format).date().toordinal())
            except ValueError:
                return float("nan")

        return np.asarray([day(v) for v in text], dtype=float)
    nums = pd.to_numeric(text, errors="coerce")
    present = text != ""
    if nums[present].isna().any():
        return None
    return np.asarray(nums.to_numpy(dtype=float), dtype=float)


def qi_column(qmap: QIMap, row_labels: np.ndarray, frame_values: pd.Series) -> Column:
    """A quasi-identifier compared through its hierarchy (module docstring)."""
    leaves = qmap.leaf_of(frame_values.astype(object))
    levels = range(qmap.hierarchy.height + 1)
    row_levels = tuple(qmap.label_code(row_labels, lv) for lv in levels)
    frame_levels = tuple(qmap.codes_at(leaves, lv) for lv in levels)
    interval = qmap.cover_interval(row_labels)
    nums = qmap.numeric_leaves
    if interval is None or nums is None:
        return Column(qmap.name, "qi", np.zeros(0), np.zeros(0), 1.0, row_levels, frame_levels)
    x = np.where(leaves >= 0, nums[np.maximum(leaves, 0)], np.nan)
    lo, hi = interval
    span = float(np.nanmax([np.nanmax(nums), np.nanmax(hi)]) - np.nanmin([np.nanmin(nums), np.nanmin(lo)]))
    return Column(
        qmap.name, "qi", np.zeros(0), x, span if span > 0 else 1.0, row_levels, frame_levels, lo, hi
    )


def other_column(
    name: str, row_values: pd.Series, frame_values: pd.Series, date_format: str | None
) -> Column:
    """Another released column the frame has: numeric when both sides read as numbers (or as
    dates in ``date_format``), else categorical."""
    a, b = _to_numbers(row_values, date_format), _to_numbers(frame_values, date_format)
    if a is not None and b is not None:
        both = np.concatenate([a[np.isfinite(a)], b[np.isfinite(b)]])
        span = float(both.max() - both.min()) if both.size else 1.0
        return Column(name, "numeric", a, b, span if span > 0 else 1.0)
    codes, _ = pd.factorize(pd.concat([row_values.astype(str), frame_values.astype(str)], ignore_index=True))
    codes = np.asarray(codes, dtype=np.int64)
    return Column(name, "categorical", codes[: len(row_values)], codes[len(row_values) :])


def distances(columns: Sequence[Column], rows: np.ndarray, cands: np.ndarray) -> np.ndarray:
    """The Gower distance matrix (len(rows) x len(cands)), float64."""
    total = np.zeros((rows.size, cands.size))
    for col in columns:
        if col.kind == "qi":
            covered = np.zeros((rows.size, cands.size), dtype=bool)
            for rl, fl in zip(col.row_levels, col.frame_levels, strict=True):
                r = rl[rows][:, None]
                covered |= (r >= 0) & (r == fl[cands][None, :])
            if col.row_low is not None and col.row_high is not None:
                x = col.frame[cands][None, :]
                gap = np.maximum(
                    np.maximum(col.row_low[rows][:, None] - x, x - col.row_high[rows][:, None]), 0.0
                )
                d = np.where(np.isfinite(gap), np.minimum(gap / col.scale, 1.0), 1.0)
            else:
                d = np.ones((rows.size, cands.size))
            total += np.where(covered, 0.0, d)
        elif col.kind == "numeric":
            diff = np.abs(col.row[rows][:, None] - col.frame[cands][None, :]) / col.scale
            total += np.where(np.isfinite(diff), np.minimum(diff, 1.0), 1.0)
        else:
            total += (col.row[rows][:, None] != col.frame[cands][None, :]).astype(float)
    return total / max(len(columns), 1)


@dataclass(frozen=True)
class Linkage:
    """The distance-based linkage's result."""

    rate: Rate
    linked_rows: int
    blocks: int
    pairs: int
    chunked_blocks: int
    blocking: list[str]
    compared: list[str]

    def to_dict(self) -> dict[str, Any]:
        return {
            "method": "Gower distance, one-to-one assignment (scipy.optimize.linear_sum_assignment), "
            "blocked on the labels of " + (", ".join(self.blocking) if self.blocking else "no column"),
            "compared_columns": self.compared,
            "correct": self.rate.to_dict(),
            "linked_rows": self.linked_rows,
            "blocks": self.blocks,
            "distances_computed": self.pairs,
            "blocks_solved_in_chunks": self.chunked_blocks,
        }


def link(
    columns: Sequence[Column],
    block_of_row: np.ndarray,
    cand_rec: np.ndarray,
    cand_block: np.ndarray,
    n_frame: int,
    truth_in_frame: np.ndarray,
    scored: np.ndarray,
    rng: np.random.Generator,
    blocking: Sequence[str],
    chunk_cells: int = DEFAULT_CHUNK_CELLS,
    max_pairs: int = DEFAULT_MAX_PAIRS,
    progress: Callable[[int], None] | None = None,
) -> Linkage:
    """Link every released row to at most one frame record (module docstring).

    ``block_of_row``: each row's block; ``cand_rec``/``cand_block``: the (frame record, block)
    candidate pairs; ``truth_in_frame``: per row, its person's frame record (``-1``: not there).
    """
    n_blocks = int(block_of_row.max()) + 1 if block_of_row.size else 0
    order = np.argsort(cand_block, kind="stable")
    rec_sorted = cand_rec[order]
    starts = np.searchsorted(cand_block[order], np.arange(n_blocks + 1))
    n_cands = np.diff(starts)
    rows_per_block = np.bincount(block_of_row, minlength=n_blocks)
    pairs = int(np.sum(rows_per_block.astype(np.int64) * n_cands))
    if pairs > max_pairs:
        raise InputError(
            f"the linkage would compute {pairs:,} distances ({len(block_of_row):,} released rows against "
            f"{n_frame:,} frame records in {n_blocks:,} blocks), more than --max-pairs {max_pairs:,}: "
            "block on more quasi-identifiers (--block) or attack a sample of the frame"
        )
    row_order = np.argsort(block_of_row, kind="stable")
    row_starts = np.searchsorted(block_of_row[row_order], np.arange(n_blocks + 1))
    taken = np.zeros(n_frame, dtype=bool)
    linked = np.full(block_of_row.size, -1, dtype=np.int64)
    chunked = 0
    done = 0
    for b in np.argsort(n_cands, kind="stable"):
        rows = row_order[row_starts[b] : row_starts[b + 1]]
        cands = rec_sorted[starts[b] : starts[b + 1]]
        cands = cands[~taken[cands]]
        if rows.size and cands.size:
            cands = rng.permutation(cands)
            step = max(1, chunk_cells // cands.size)
            if step < rows.size:
                chunked += 1
            for lo in range(0, rows.size, step):
                part = rows[lo : lo + step]
                free = cands[~taken[cands]]
                if free.size == 0:
                    break
                cost = np.empty((part.size, free.size))
                piece = max(1, PIECE_CELLS // part.size)  # short vectorized steps: an interrupt is answered
                for j in range(0, free.size, piece):
                    cost[:, j : j + piece] = distances(columns, part, free[j : j + piece])
                r_idx, c_idx = linear_sum_assignment(cost)
                linked[part[r_idx]] = free[c_idx]
                taken[free[c_idx]] = True
        done += rows.size
        if progress is not None:
            progress(done)
    s = np.flatnonzero(scored)
    correct = (truth_in_frame[s] >= 0) & (linked[s] == truth_in_frame[s])
    return Linkage(
        rate=Rate(int(correct.sum()), int(s.size)),
        linked_rows=int((linked[s] >= 0).sum()),
        blocks=n_blocks,
        pairs=pairs,
        chunked_blocks=chunked,
        blocking=list(blocking),
        compared=[c.name for c in columns],
    )
