"""Singling out, linkability and attribute inference as residual risks (Giomi, Boenisch, Wehmeyer &
Tasnádi, "A Unified Framework for Quantifying Privacy Risk in Synthetic Data", PoPETs 2023(2);
the Article 29 Working Party's three criteria; implemented from the paper, compared with the
``anonymeter`` package in tests/test_attack_residual.py).

Each attack uses the release to make guesses about *target* records. It is run three times: on
targets drawn from the released people's records (the *attack*), on targets drawn from control
records of the same population that are not in the release (the *control*), and as random
guessing (the *baseline*). The control measures what the release teaches about anyone of the
population (what statistics may disclose); only the excess over it is the risk of being in the
release: ``R = (r_attack - r_control) / (1 - r_control)`` with Wilson intervals
(:class:`safeshare.attack.stats.Residual`). An attack no better than the baseline says nothing.

A released row and a target record are compared as in :mod:`safeshare.attack.linkage`: a
quasi-identifier's label matches a value it covers; the other columns as values.

* **Singling out** (multivariate): a query is the conjunction of the values of ``n_cols`` random
  columns of a random released row (a numeric value: ``>= v`` above the column's median, else
  ``<= v``), kept when it matches exactly one released row. It succeeds on a set of targets when it
  matches exactly one of them. The attack and control target sets have the same size (the larger
  one subsampled), since singling out depends on it. Baseline: queries of random released values.
* **Singling out** (univariate, ``n_cols = 1``, Anonymeter's other mode): the same with one
  column, so a kept query is a value that one released row alone has: a rare category or label,
  or the column's extreme (``>= max`` above the median, ``<= min`` below it), as Anonymeter's
  ``univariate`` queries are (values seen once, and the minimum and maximum of a numeric column).
* **Linkability**: the compared columns are split in two; a target is linked when its nearest
  released row on the first half and on the second half is the same row (ties broken at random,
  seeded). Baseline: two random rows.
* **Inference** of a ``secret`` column from the others: the secret of the target's nearest
  released row is the guess; right when equal (a label: when it covers the target's value; a
  number: within 5 % of it). Baseline: the secret of a random row.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from safeshare.attack.linkage import Column, distances
from safeshare.attack.stats import Rate, Residual

#: Targets attacked in each of the three runs (Anonymeter's default is 500).
DEFAULT_TARGETS = 1000
#: Distance matrix cells computed at once by the nearest-neighbour searches.
_CHUNK = 500_000


@dataclass(frozen=True)
class Side:
    """The released rows and one target set, as compared columns (target = the ``frame`` side)."""

    columns: tuple[Column, ...]
    n_rows: int
    n_targets: int


def _nearest(side: Side, cols: Sequence[int], targets: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Per target, the nearest released row on ``cols`` (ties at random)."""
    columns = [side.columns[i] for i in cols]
    out = np.empty(targets.size, dtype=np.int64)
    rows = np.arange(side.n_rows)
    step = max(1, _CHUNK // max(side.n_rows, 1))
    for lo in range(0, targets.size, step):
        part = targets[lo : lo + step]
        d = distances(columns, rows, part).T  # targets x rows
        d += rng.random(d.shape) * 1e-9
        out[lo : lo + step] = np.argmin(d, axis=1)
    return out


def _matches(col: Column, row: int, which: np.ndarray, on_rows: bool, median: float | None) -> np.ndarray:
    """Which records (released rows when ``on_rows``, else targets) satisfy the condition of
    ``col`` at released row ``row``."""
    if col.kind == "qi":
        if on_rows:
            return _same_label(col, row, which)
        hit = np.zeros(which.size, dtype=bool)
        for rl, fl in zip(col.row_levels, col.frame_levels, strict=True):
            code = rl[row]
            if code >= 0:
                hit |= fl[which] == code
        return hit
    values = col.row[which] if on_rows else col.frame[which]
    v = col.row[row]
    if col.kind == "numeric" and median is not None:
        return np.asarray(values >= v if v > median else values <= v)
    return np.asarray(values == v)


def _equality_codes(col: Column) -> np.ndarray | None:
    """Per released row, a code equal for rows a condition on ``col`` cannot tell apart (a label:
    its codes at every level; a category: its code); ``None`` for a numeric column."""
    if col.kind == "qi":
        return np.asarray(np.unique(np.column_stack(col.row_levels), axis=0, return_inverse=True)[1].ravel())
    if col.kind == "categorical":
        return np.asarray(col.row)
    return None


def _same_label(col: Column, row: int, which: np.ndarray) -> np.ndarray:
    hit = np.ones(which.size, dtype=bool)
    for rl in col.row_levels:
        hit &= rl[which] == rl[row]
    return hit


def singling_out(
    side: Side,
    attack: np.ndarray,
    control: np.ndarray,
    n_queries: int,
    n_cols: int,
    rng: np.random.Generator,
) -> Residual:
    """Singling out with queries of ``n_cols`` columns (module docstring: multivariate, or
    univariate with ``n_cols = 1``); ``attack``/``control``: target positions."""
    size = min(attack.size, control.size)
    attack = rng.choice(attack, size, replace=False) if attack.size > size else attack
    control = rng.choice(control, size, replace=False) if control.size > size else control
    k = min(n_cols, len(side.columns))
    medians = [float(np.nanmedian(c.row)) if c.kind == "numeric" else None for c in side.columns]
    # a condition of equality (a label, a category) codes the released rows once; a query's rows
    # are those of its row's group on its equality columns, then filtered by its numeric ones
    equal = [_equality_codes(c) for c in side.columns]
    groups: dict[tuple[int, ...], np.ndarray] = {}
    queries: list[tuple[int, tuple[int, ...]]] = []
    seen: set[tuple[int, tuple[int, ...]]] = set()
    attempts = 0
    while len(queries) < n_queries and attempts < 20 * n_queries:
        attempts += 1
        row = int(rng.integers(side.n_rows))
        cols = tuple(sorted(rng.choice(len(side.columns), k, replace=False).tolist()))
        eq = tuple(c for c in cols if equal[c] is not None)
        if eq:
            group = groups.get(eq)
            if group is None:
                stacked = np.column_stack([equal[c] for c in eq])
                group = groups[eq] = np.unique(stacked, axis=0, return_inverse=True)[1].ravel()
            rows = np.flatnonzero(group == group[row])
        else:
            rows = np.arange(side.n_rows)
        for c in cols:
            if equal[c] is None and rows.size > 1:
                rows = rows[_matches(side.columns[c], row, rows, True, medians[c])]
        if rows.size == 1:
            key = (int(rows[0]), cols)
            if key not in seen:
                seen.add(key)
                queries.append((row, cols))

    def successes(targets: np.ndarray, qs: Sequence[tuple[int, tuple[int, ...]]]) -> int:
        count = 0
        for row, cols in qs:
            mask = np.ones(targets.size, dtype=bool)
            for c in cols:
                mask &= _matches(side.columns[c], row, targets, False, medians[c])
            count += int(mask.sum() == 1)
        return count

    # baseline: every condition from an independent random row (random released values)
    baseline = 0
    for _ in range(len(queries)):
        cols = tuple(sorted(rng.choice(len(side.columns), k, replace=False).tolist()))
        mask = np.ones(attack.size, dtype=bool)
        for c in cols:
            mask &= _matches(side.columns[c], int(rng.integers(side.n_rows)), attack, False, medians[c])
        baseline += int(mask.sum() == 1)
    n = len(queries)
    return Residual(
        Rate(successes(attack, queries), n), Rate(successes(control, queries), n), Rate(baseline, n)
    )


def linkability(
    side: Side,
    attack: np.ndarray,
    control: np.ndarray,
    split: tuple[Sequence[int], Sequence[int]],
    rng: np.random.Generator,
) -> Residual:
    """The linkability attack (module docstring)."""

    def links(targets: np.ndarray) -> int:
        a = _nearest(side, split[0], targets, rng)
        b = _nearest(side, split[1], targets, rng)
        return int((a == b).sum())

    n = attack.size
    base = int((rng.integers(side.n_rows, size=n) == rng.integers(side.n_rows, size=n)).sum())
    return Residual(Rate(links(attack), n), Rate(links(control), control.size), Rate(base, n))


def _guess_right(col: Column, rows: np.ndarray, targets: np.ndarray) -> np.ndarray:
    if col.kind == "qi":
        hit = np.zeros(rows.size, dtype=bool)
        for rl, fl in zip(col.row_levels, col.frame_levels, strict=True):
            hit |= (rl[rows] >= 0) & (rl[rows] == fl[targets])
        return hit
    if col.kind == "numeric":
        guess, truth = col.row[rows], col.frame[targets]
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.asarray(np.abs(guess - truth) <= 0.05 * np.abs(truth))
    return np.asarray(col.row[rows] == col.frame[targets])


def inference(
    side: Side, attack: np.ndarray, control: np.ndarray, secret: int, rng: np.random.Generator
) -> Residual:
    """Inference of column ``secret`` from the others (module docstring)."""
    aux = [i for i in range(len(side.columns)) if i != secret]
    col = side.columns[secret]

    def right(targets: np.ndarray) -> int:
        nearest = _nearest(side, aux, targets, rng)
        return int(_guess_right(col, nearest, targets).sum())

    random_rows = rng.integers(side.n_rows, size=attack.size)
    base = int(_guess_right(col, random_rows, attack).sum())
    return Residual(
        Rate(right(attack), attack.size), Rate(right(control), control.size), Rate(base, attack.size)
    )


def to_dict(name: str, residual: Residual, extra: dict[str, Any]) -> dict[str, Any]:
    return {"attack": name, **extra, **residual.to_dict()}
