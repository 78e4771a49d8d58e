"""A release as its recipient reads it, and which records of another table it is consistent with.

A released quasi-identifier label is a true statement about its record's value: the value lies
under the label in the column's hierarchy. So a person ``p`` of a table (the adversary's
identified frame, or the custodian's input) is *consistent* with a released row ``s`` when, for
every quasi-identifier ``q``, ``s[q]`` is one of the labels of ``p[q]`` at some level of ``q``'s
hierarchy (built, as the release was, by the configuration's builder, here over the table's own
values). A label that occurs at several levels covers the union of their values.

:func:`consistent_pairs` finds every consistent (record, class) pair without comparing all
pairs: the released classes (distinct label tuples) are grouped by the levels their labels can
be at (one level vector for a global release, a few for a locally recoded one, one per round),
and for each level vector the table's records are generalized at it and joined to the classes by
packed integer keys: ``O(records x level vectors)`` time and pairs, whatever the class sizes.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np
import pandas as pd

from safeshare.errors import DataError, HierarchyError, InputError
from safeshare.hierarchy.hierarchy import Hierarchy, HierarchyBuilder


@dataclass(frozen=True)
class QIMap:
    """One quasi-identifier's hierarchy over a table's values: leaf codes at every level."""

    name: str
    hierarchy: Hierarchy

    @classmethod
    def build(cls, name: str, builder: HierarchyBuilder | Hierarchy, values: Sequence[str]) -> QIMap:
        """The configuration's hierarchy for ``values``; values it cannot place are left out
        (they are consistent with no label). A ready hierarchy is used as it is."""
        if isinstance(builder, Hierarchy):
            return cls(name, builder)
        distinct = sorted(set(values))
        try:
            return cls(name, builder.build(distinct, name))
        except HierarchyError:
            pass
        # a file hierarchy without some values: keep the values it has
        keep = [v for v in distinct if _placeable(builder, v, name)]
        if not keep:
            raise InputError(f"{name}: the hierarchy places none of the table's values") from None
        return cls(name, builder.build(keep, name))

    @cached_property
    def levels_of(self) -> dict[str, tuple[int, ...]]:
        """label -> the levels it occurs at."""
        out: dict[str, list[int]] = {}
        for level in range(self.hierarchy.height + 1):
            for label in self.hierarchy.labels(level):
                out.setdefault(label, []).append(level)
        return {k: tuple(v) for k, v in out.items()}

    @cached_property
    def label_rank(self) -> dict[str, int]:
        """label -> the position of its first leaf in the hierarchy (whose leaves are in subtree
        order, so the labels of one level come in the order of their values: ordinal for the
        copula of the per-record risk)."""
        out: dict[str, int] = {}
        for level in range(self.hierarchy.height + 1):
            names = self.hierarchy.labels(level)
            for i, code in enumerate(self.hierarchy.leaf_codes(level).tolist()):
                out.setdefault(names[code], i)
        return out

    def leaf_of(self, values: pd.Series) -> np.ndarray:
        """Leaf index per value (-1: not in the hierarchy)."""
        index = self.hierarchy.leaf_index
        return np.asarray(values.map(index).fillna(-1).to_numpy(), dtype=np.int64)

    def codes_at(self, leaves: np.ndarray, level: int) -> np.ndarray:
        """Label code at ``level`` per leaf index (-1 stays -1)."""
        table = self.hierarchy.leaf_codes(level).astype(np.int64)
        out = np.full(leaves.shape, -1, dtype=np.int64)
        ok = leaves >= 0
        out[ok] = table[leaves[ok]]
        return out

    def label_code(self, labels: np.ndarray, level: int) -> np.ndarray:
        """Code at ``level`` of each label (-1: not a label of that level)."""
        index = {label: i for i, label in enumerate(self.hierarchy.labels(level))}
        return np.asarray(pd.Series(labels, dtype=object).map(index).fillna(-1).to_numpy(), dtype=np.int64)

    @cached_property
    def numeric_leaves(self) -> np.ndarray | None:
        """The leaves as numbers when every leaf is one (else ``None``)."""
        nums = pd.to_numeric(pd.Series(self.hierarchy.leaves, dtype=object), errors="coerce")
        if nums.isna().any():
            return None
        return np.asarray(nums.to_numpy(), dtype=float)

    def cover_interval(self, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """For a numeric hierarchy: the smallest and largest leaf each label covers (at any
        level; NaN for a label the hierarchy does not have); ``None`` otherwise."""
        nums = self.numeric_leaves
        if nums is None:
            return None
        lo: dict[str, float] = {}
        hi: dict[str, float] = {}
        for level in range(self.hierarchy.height + 1):
            codes = self.hierarchy.leaf_codes(level)
            names = self.hierarchy.labels(level)
            mins = np.full(len(names), np.inf)
            maxs = np.full(len(names), -np.inf)
            np.minimum.at(mins, codes, nums)
            np.maximum.at(maxs, codes, nums)
            for i, name in enumerate(names):
                lo[name] = min(lo.get(name, np.inf), mins[i])
                hi[name] = max(hi.get(name, -np.inf), maxs[i])
        s = pd.Series(labels, dtype=object)
        return (
            np.asarray(s.map(lo).astype(float).to_numpy()),
            np.asarray(s.map(hi).astype(float).to_numpy()),
        )


def _placeable(builder: HierarchyBuilder, value: str, name: str) -> bool:
    try:
        builder.build([value], name)
    except HierarchyError:
        return False
    return True


def level_vectors(maps: Sequence[QIMap], labels: pd.DataFrame) -> dict[tuple[int, ...], np.ndarray]:
    """Level vector -> the classes (rows of ``labels``, one column per QI) whose labels all occur
    at it. A class with a label at no level appears under no vector."""
    per_qi = []
    for j, qmap in enumerate(maps):
        levels = qmap.levels_of
        per_qi.append([levels.get(v, ()) for v in labels.iloc[:, j].tolist()])
    out: dict[tuple[int, ...], list[int]] = {}
    signatures: dict[tuple[tuple[int, ...], ...], list[int]] = {}
    for row in range(len(labels)):
        sig = tuple(per_qi[j][row] for j in range(len(maps)))
        signatures.setdefault(sig, []).append(row)
    for sig, rows in signatures.items():
        for vector in itertools.product(*sig):
            out.setdefault(vector, []).extend(rows)
    return {k: np.asarray(v, dtype=np.int64) for k, v in out.items()}


def consistent_pairs(
    maps: Sequence[QIMap], records: pd.DataFrame, labels: pd.DataFrame
) -> tuple[np.ndarray, np.ndarray]:
    """Every (record, class) pair with the record consistent with the class (module docstring).

    ``records``: one raw-value column per QI (in ``maps`` order); ``labels``: the distinct
    released label tuples (the classes), same columns. Returns two aligned int64 arrays
    (record positions, class positions), sorted by record then class, without duplicates.
    """
    if len(maps) != records.shape[1] or len(maps) != labels.shape[1]:
        raise ValueError("one column per quasi-identifier is required")
    leaves = [m.leaf_of(records.iloc[:, j].astype(object)) for j, m in enumerate(maps)]
    found_r: list[np.ndarray] = []
    found_c: list[np.ndarray] = []
    cache: dict[tuple[int, int], np.ndarray] = {}
    for vector, classes in level_vectors(maps, labels).items():
        sizes = [max(maps[j].hierarchy.size(level), 1) for j, level in enumerate(vector)]
        radix = np.ones(len(sizes), dtype=np.int64)
        for j in range(len(sizes) - 2, -1, -1):
            radix[j] = radix[j + 1] * sizes[j + 1]
        rec_key = np.zeros(len(records), dtype=np.int64)
        rec_ok = np.ones(len(records), dtype=bool)
        cls_key = np.zeros(classes.size, dtype=np.int64)
        cls_ok = np.ones(classes.size, dtype=bool)
        for j, level in enumerate(vector):
            codes = cache.get((j, level))
            if codes is None:
                codes = cache[(j, level)] = maps[j].codes_at(leaves[j], level)
            rec_ok &= codes >= 0
            rec_key += np.maximum(codes, 0) * radix[j]
            lab = maps[j].label_code(labels.iloc[classes, j].to_numpy(dtype=object), level)
            cls_ok &= lab >= 0
            cls_key += np.maximum(lab, 0) * radix[j]
        keys, cls = cls_key[cls_ok], classes[cls_ok]
        if keys.size == 0:
            continue
        order = np.argsort(keys, kind="stable")
        keys, cls = keys[order], cls[order]
        pos = np.searchsorted(keys, rec_key)
        pos = np.minimum(pos, keys.size - 1)
        hit = rec_ok & (keys[pos] == rec_key)
        found_r.append(np.flatnonzero(hit))
        found_c.append(cls[pos[hit]])
    if not found_r:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    r = np.concatenate(found_r)
    c = np.concatenate(found_c)
    pair = np.unique(np.column_stack([r, c]), axis=0)
    return pair[:, 0].astype(np.int64), pair[:, 1].astype(np.int64)


def read_release(path: Path, delimiter: str = ",") -> pd.DataFrame:
    """A written release as text, exactly as written (a Parquet file or a Spark directory of
    part files, or a CSV with its header); empty cells stay empty text."""
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: no such release")
    try:
        if path.is_dir() or path.suffix.lower() in (".parquet", ".pq"):
            frame = pd.read_parquet(path)
            frame = frame.astype(object).where(frame.notna(), "")
            return frame.astype(str)
        return pd.read_csv(
            path, dtype=str, keep_default_na=False, na_filter=False, sep=delimiter, encoding="utf-8"
        )
    except (ValueError, UnicodeDecodeError, OSError) as exc:
        raise DataError(f"{path}: cannot be read as a release ({exc})") from None
