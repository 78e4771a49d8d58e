"""Microaggregation of numeric quasi-identifiers: MDAV and optimal univariate (issue 25).

Microaggregation replaces each value by the mean of a group of at least ``k`` similar
records, so that the aggregated columns take at most ``n / k`` distinct values, each shared
by at least ``k`` records (Domingo-Ferrer & Mateo-Sanz, "Practical data-oriented
microaggregation for statistical disclosure control", IEEE TKDE 14(1), 2002; sdcMicro's
``microaggregation``, ARX's microaggregation functions). It keeps the numbers numeric where
a hierarchy would turn them into intervals.

* **MDAV**, maximum distance to average vector (Domingo-Ferrer & Torra, "Ordinal, continuous
  and heterogeneous k-anonymity through microaggregation", DMKD 11(2), 2005), on the columns
  standardized to mean 0 and variance 1::

      while at least 3k records remain:
          c = their centroid; r = the record farthest from c; group r and its k-1 nearest
          s = the record farthest from r among those left; group s and its k-1 nearest
      if at least 2k remain: r = the farthest from their centroid; group r and its k-1 nearest
      the rest (k .. 2k-1 records) is the last group

  Every group has exactly ``k`` records except the last, which has ``k .. 2k - 1``. Ties go to
  the first record in input order (distances are compared exactly; the nearest are taken by
  a stable sort), so the grouping is deterministic. Cost: about ``3 n^2 p / (4k)`` operations.
* **Optimal univariate** (Hansen & Mukherjee, "A polynomial algorithm for optimal univariate
  microaggregation", IEEE TKDE 15(4), 2003): for one column, some optimal partition groups
  consecutive values of the sorted column, each group of ``k .. 2k - 1`` records; it is the
  shortest path from node 0 to node n of the graph with an arc ``i -> j`` for ``k <= j - i <=
  2k - 1`` weighted by the SSE of sorted values ``i .. j-1``::

      B(0) = 0,   B(j) = min_{k <= j - i <= 2k - 1} B(i) + SSE(i, j)

  computed in ``O(n k)`` after the sort, with ``SSE(i, j)`` from prefix sums of the centered
  values (ties: the shortest last group).

Information loss (both): ``SSE / SST`` with ``SSE = sum_g sum_{x in g} ||x - x_g||^2`` and
``SST = sum_x ||x - mean||^2`` on the standardized columns (for one column the ratio does not
depend on the scale), computed on the values as released (after ``decimals`` rounding), in
[0, 1]; 0 leaves the data as it is.

The aggregated columns alone are k-anonymous (each released value is shared by a whole group;
groups with equal means merge). Released with the other quasi-identifiers, the classes of the
whole tuple may be smaller: :func:`k_anonymity_check` measures them, and the aggregated
columns can then enter the lattice search as quasi-identifiers of their own (docs/anonymization.md,
"Microaggregation"), whose release the independent verifier re-checks.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from safeshare.errors import InputError

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

METHODS = ("mdav", "optimal")

#: The most records a run accepts.
MAX_RECORDS = 2_000_000

#: The most distance operations MDAV may need (``3 n^2 p / 4k``): about ten minutes on a loaded
#: 2-core machine (Adult's age and hours-per-week, 3.2e8 operations, took 8.4 s CPU). Above it the
#: run is refused with the figure, not started.
MAX_MDAV_OPERATIONS = 2 * 10**10


def mdav(x: FloatArray, k: int) -> IntArray:
    """Group ids (``0 ..``) of the rows of ``x`` (``n x p``, already standardized) by MDAV."""
    n = x.shape[0]
    _check_k(k, n)
    groups = np.full(n, -1, dtype=np.int64)
    remaining = np.arange(n)
    points = x.copy()  # the remaining rows, compacted as groups leave
    next_group = 0

    def distances(center: FloatArray) -> FloatArray:
        d: FloatArray = ((points - center) ** 2).sum(axis=1)
        return d

    def take(center: FloatArray) -> None:
        nonlocal remaining, points, next_group
        chosen = _nearest(distances(center), k)
        groups[remaining[chosen]] = next_group
        next_group += 1
        keep = np.ones(remaining.shape[0], dtype=bool)
        keep[chosen] = False
        remaining, points = remaining[keep], points[keep]

    def farthest(center: FloatArray) -> int:
        return int(remaining[int(np.argmax(distances(center)))])

    while remaining.shape[0] >= 3 * k:
        r = farthest(points.mean(axis=0))
        take(x[r])
        s = farthest(x[r])
        take(x[s])
    if remaining.shape[0] >= 2 * k:
        r = farthest(points.mean(axis=0))
        take(x[r])
    if remaining.shape[0]:
        groups[remaining] = next_group
    return groups


def _nearest(d: FloatArray, k: int) -> IntArray:
    """Positions of the ``k`` smallest of ``d``, ties to the first positions: the first ``k`` of a
    stable sort, in ``O(n)`` (a partition instead of the sort)."""
    if d.shape[0] <= k:
        return np.arange(d.shape[0])
    kth = np.partition(d, k - 1)[k - 1]
    below = np.flatnonzero(d < kth)
    equal = np.flatnonzero(d == kth)[: k - below.shape[0]]
    return np.concatenate([below, equal])


def optimal_univariate(values: FloatArray, k: int) -> IntArray:
    """Group ids of ``values`` by Hansen-Mukherjee's shortest path (module docstring)."""
    n = values.shape[0]
    _check_k(k, n)
    order = np.argsort(values, kind="stable")
    sorted_values = values[order] - float(values.mean())  # centered: exact-ish prefix sums
    s1 = np.concatenate(([0.0], np.cumsum(sorted_values))).tolist()
    s2 = np.concatenate(([0.0], np.cumsum(sorted_values * sorted_values))).tolist()
    inf = math.inf
    best = [inf] * (n + 1)
    back = [0] * (n + 1)
    best[0] = 0.0
    for j in range(k, n + 1):
        lowest, arg = inf, -1
        for i in range(max(0, j - 2 * k + 1), j - k + 1):
            if best[i] == inf:
                continue
            m = j - i
            total = s1[j] - s1[i]
            cost = best[i] + max(0.0, (s2[j] - s2[i]) - total * total / m)
            if cost <= lowest:  # ties: the largest i (the shortest last group)
                lowest, arg = cost, i
        best[j], back[j] = lowest, arg
    if best[n] == inf:  # pragma: no cover - n >= k always has a path
        raise InputError(f"no grouping of {n} values into groups of {k} to {2 * k - 1}")
    cuts = []
    j = n
    while j > 0:
        cuts.append((back[j], j))
        j = back[j]
    groups_sorted = np.empty(n, dtype=np.int64)
    for g, (i, j) in enumerate(reversed(cuts)):
        groups_sorted[i:j] = g
    groups = np.empty(n, dtype=np.int64)
    groups[order] = groups_sorted
    return groups


def _check_k(k: int, n: int) -> None:
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
        raise InputError(f"microaggregation k: expected an integer >= 1, got {k!r}")
    if n < k:
        raise InputError(f"microaggregation needs at least k = {k} records, got {n}")


@dataclass(frozen=True)
class KAnonymityCheck:
    """Classes of a released frame on its quasi-identifiers (:func:`k_anonymity_check`)."""

    k: int
    classes: int
    min_class_size: int
    records_in_small_classes: int

    @property
    def passes(self) -> bool:
        return self.records_in_small_classes == 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "k": self.k,
            "classes": self.classes,
            "min_class_size": self.min_class_size,
            "records_in_small_classes": self.records_in_small_classes,
            "passes": self.passes,
        }


def k_anonymity_check(frame: pd.DataFrame, quasi_identifiers: Sequence[str], k: int) -> KAnonymityCheck:
    """The classes of ``frame`` by identical values of ``quasi_identifiers`` and those below ``k``."""
    sizes = frame.groupby(list(quasi_identifiers), sort=False, dropna=False).size().to_numpy()
    return KAnonymityCheck(
        k=k,
        classes=int(sizes.shape[0]),
        min_class_size=int(sizes.min()) if sizes.size else 0,
        records_in_small_classes=int(sizes[sizes < k].sum()),
    )


@dataclass(frozen=True)
class Microaggregation:
    """The outcome of :func:`microaggregate`.

    Attributes
    ----------
    method: ``mdav`` or ``optimal``.
    columns: the aggregated columns.
    k: the smallest group size.
    groups: ``(n,)`` group of every record (input order).
    group_sizes: ``(g,)`` records per group.
    values: ``(n, p)`` the released numbers (group means, rounded to ``decimals``).
    sse, sst: within-group and total sums of squares of the released values, on standardized
        columns (module docstring); ``information_loss = sse / sst``.
    decimals: the rounding of the released values (``None``: none).
    """

    method: str
    columns: tuple[str, ...]
    k: int
    groups: IntArray
    group_sizes: IntArray
    values: FloatArray
    sse: float
    sst: float
    decimals: int | None

    @property
    def information_loss(self) -> float:
        """``SSE / SST`` in [0, 1] (SSE <= SST holds exactly; the two float sums can differ by an
        ulp the other way, as for one group, where they are the same sum in another order)."""
        return min(self.sse / self.sst, 1.0) if self.sst > 0 else 0.0

    def released_text(self) -> dict[str, list[str]]:
        """Per column, the text of every record's released number (``37``, ``37.25``)."""
        return {c: [_text(v) for v in self.values[:, j]] for j, c in enumerate(self.columns)}

    def apply(self, frame: pd.DataFrame) -> pd.DataFrame:
        """``frame`` (the one aggregated, same rows and order) with the columns replaced by their text."""
        if len(frame) != self.values.shape[0]:
            raise InputError(
                f"the frame has {len(frame)} records, the microaggregation {self.values.shape[0]}"
            )
        out = frame.copy()
        for column, text in self.released_text().items():
            out[column] = text
        return out

    def summary(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "columns": list(self.columns),
            "k": self.k,
            "groups": int(self.group_sizes.shape[0]),
            "smallest_group": int(self.group_sizes.min()),
            "largest_group": int(self.group_sizes.max()),
            "sse": self.sse,
            "sst": self.sst,
            "sse_sst": self.information_loss,
            "decimals": self.decimals,
        }


def microaggregate(
    frame: pd.DataFrame,
    columns: Sequence[str],
    k: int,
    method: str = "mdav",
    decimals: int | None = None,
) -> Microaggregation:
    """Microaggregate the numeric ``columns`` of ``frame`` into groups of at least ``k`` records.

    ``method``: ``mdav`` (any number of columns, standardized) or ``optimal`` (one column,
    Hansen-Mukherjee). ``decimals``: round the released means (``None``: the exact means).
    Every value must be a finite number (text such as ``"39"`` or ``"39.5"`` is read as one);
    anything else is refused, naming the column and the value.
    """
    if method not in METHODS:
        raise InputError(f"microaggregation method: expected one of {', '.join(METHODS)}, got {method!r}")
    columns = tuple(columns)
    if not columns:
        raise InputError("microaggregation needs at least one column")
    if len(set(columns)) != len(columns):
        raise InputError("microaggregation: a column is named twice")
    if method == "optimal" and len(columns) != 1:
        raise InputError(f"optimal microaggregation is univariate: one column, got {len(columns)}")
    if decimals is not None and (isinstance(decimals, bool) or not isinstance(decimals, int) or decimals < 0):
        raise InputError(f"microaggregation decimals: expected an integer >= 0, got {decimals!r}")
    n = len(frame)
    if n > MAX_RECORDS:
        raise InputError(f"microaggregation of {n:,} records refused: at most {MAX_RECORDS:,}")
    _check_k(k, n)
    operations = mdav_operations(n, len(columns), int(k))
    if method == "mdav" and operations > MAX_MDAV_OPERATIONS:
        raise InputError(
            f"MDAV on {n:,} records and {len(columns)} column(s) with k = {k} needs about {operations:.1e} "
            f"distance operations, more than {MAX_MDAV_OPERATIONS:.0e}: use a larger k, fewer records, "
            "or method='optimal' for one column"
        )
    raw = np.column_stack([_numbers(frame, c) for c in columns]) if n else np.zeros((0, len(columns)))
    mean = raw.mean(axis=0)
    scale = raw.std(axis=0)
    scale[scale == 0] = 1.0
    z = (raw - mean) / scale
    groups = mdav(z, int(k)) if method == "mdav" else optimal_univariate(raw[:, 0], int(k))
    n_groups = int(groups.max()) + 1
    sizes = np.bincount(groups, minlength=n_groups).astype(np.int64)
    sums = np.stack(
        [np.bincount(groups, weights=raw[:, j], minlength=n_groups) for j in range(raw.shape[1])], 1
    )
    means = sums / sizes[:, None]
    values = means[groups]
    if decimals is not None:
        values = np.round(values, decimals)
    released = (values - mean) / scale
    sse = float(((z - released) ** 2).sum())
    sst = float((z**2).sum())
    return Microaggregation(method, columns, int(k), groups, sizes, values, sse, sst, decimals)


def mdav_operations(n: int, p: int, k: int) -> float:
    """About how many squared-distance terms MDAV computes: ``3 n^2 p / (4k)`` (three passes
    over the remaining records per pair of groups)."""
    return 3.0 * n * n * p / (4.0 * k)


def _numbers(frame: pd.DataFrame, column: str) -> FloatArray:
    if column not in frame.columns:
        raise InputError(f"microaggregation: unknown column {column!r}")
    series = frame[column]
    numbers = pd.to_numeric(series, errors="coerce").to_numpy(dtype=np.float64)
    bad = ~np.isfinite(numbers)
    if bad.any():
        first = int(np.flatnonzero(bad)[0])
        raise InputError(
            f"microaggregation: column {column!r} has the value {series.iloc[first]!r} "
            f"(record {first + 1}), not a finite number"
        )
    return numbers


def _text(value: float) -> str:
    """The shortest text that reads back as ``value`` (``37`` for ``37.0``)."""
    if value == int(value) and abs(value) < 2**53:
        return str(int(value))
    return repr(float(value))


__all__ = [
    "MAX_MDAV_OPERATIONS",
    "MAX_RECORDS",
    "METHODS",
    "KAnonymityCheck",
    "Microaggregation",
    "k_anonymity_check",
    "mdav",
    "mdav_operations",
    "microaggregate",
    "optimal_univariate",
]
