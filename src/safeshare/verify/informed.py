"""The informed adversary: the quasi-identifiers, plus true dates and coarse pseudonyms (issue 30).

k-anonymity bounds what an adversary learns from the quasi-identifiers (QIs). Two kinds of
released column tell an adversary more, and this module measures how much, on the
**written release**, with no key and nothing of an unreleased record:

* a **kept shifted date** (role ``shifted_date`` without a hierarchy): the released date
  ``d'`` is the true date ``d`` moved by the person's secret shift, at most ``N = max_days``
  days. An adversary who knows a person's true date ``d`` (an admission they witnessed, a
  date in a registry) knows that the person's record has a released date in ``[d - N, d + N]``.
  With ``N = 30`` kept exact, such an adversary singled out 571 of 2,948 records (19.4 %) of a
  release certified "k = 5 ... no record's prosecutor risk exceeds 0.2";
* a **coarse pseudonym** (:mod:`safeshare.data.identifiers.coarse`: fewer distinct released
  values than ``2 sqrt(n)``): a pseudonym of ``zip`` with 4 codes is the column itself, since
  the frequencies of 4 pseudonyms (or a guess among 4) tell which is which. The adversary is
  taken to know it exactly.

**What is measured.** The adversary knows the target's QIs, the value of every coarse
pseudonym, and the true date of every kept shifted date. The *candidates* of a target
record ``r`` are the released records that the adversary cannot tell apart from ``r``: the
records of ``r``'s QI class (and equal coarse pseudonyms) whose dates are compatible with
the target's true dates. A person's dates share one shift (one ``person`` column, one
``max_days``), so the adversary also knows the exact intervals between them (the length of a
stay): a compatible record has the same intervals and missing dates, and its first present
date ``a_x`` (the *anchor*) lies within ``N`` days of the target's true anchor ``D``:
``|a_x - D| <= N``. The true ``D`` is unknown here (finding it needs the key), but it lies
in ``[a_r - N, a_r + N]``; so, for each record, over every ``D`` of that interval:

* ``m_r = min_D n(D)``, the fewest candidates the adversary can be left with
  (``n(D)``: the records of ``r``'s group whose anchor is within ``N`` of ``D``). Then no
  record's prosecutor risk exceeds ``1 / min_r m_r`` against this adversary, whatever the
  shifts: the certificate states a per-record bound only when ``min_r m_r >= k``;
* *singled out*: ``m_r = 1``, i.e. for some true date the record is its only candidate:
  ``r`` is the only record at its anchor and some ``D`` of its interval is more than ``N``
  days from every other anchor of its group;
* *expected singled out*: the share of the ``2N + 1`` days of the interval for which
  ``r`` is alone, summed over the records: the number of records singled out on average
  over the true dates the release allows (what an adversary achieves when the shift, unknown
  to them and to this check, is uniform).

These figures depend on the release and ``N`` only, not on the key: publishing them says
nothing about the shifts (the count for the true dates, which the key would give, would).
The adversary is granted the interval ``[d' - N, d' + N]`` whole (that the shift is never 0
removes one day of ``2N + 1``; not counted). Kept shifted dates of *another* person column
(their own shift) are taken as known exactly: the figures are then pessimistic
(:attr:`InformedAdversary.pessimistic`).

**How.** One ``GROUP BY`` of the released table (``group``, the anchor, a count) in DuckDB,
then, per group, the sorted anchors with their counts: ``n(D)`` is a difference of prefix
sums; its minimum over an interval is reached at the interval's left end or where a record
leaves the window (``D = a_i + N + 1``), so ``m_r`` is a range minimum over those points
(a sparse table, built in slices of at most 2^20 points: memory bounded whatever the
release's size), and the singled-out figures need only each anchor's neighbours.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import duckdb
import numpy as np
import pandas as pd

from safeshare.data.identifiers.coarse import coarse_limit, is_coarse
from safeshare.verify.sql import literal, quote

#: Points of one slice of the range-minimum table (its memory: this many x log2 of them, int64).
SLICE_POINTS = 1 << 20


@dataclass(frozen=True)
class KeptShiftedDate:
    """A shifted date released as it is: its column, person column, window and format."""

    column: str
    person: str
    max_days: int
    date_format: str = "%Y-%m-%d"


@dataclass(frozen=True)
class InformedAdversary:
    """What the informed adversary achieves on a release (see the module docstring).

    ``dates``: the kept shifted dates they know (``{column, max_days}``); ``coarse_pseudonyms``:
    ``{column, distinct, records}`` of the pseudonyms taken as the column itself; ``records``:
    released records; ``smallest_candidates``: ``min_r m_r`` (0 for an empty release);
    ``singled_out``: records with ``m_r = 1``; ``singled_out_expected``: on average over the
    true dates; ``below_k``: records with ``m_r < k`` (``None`` without k); ``pessimistic``:
    dates of several persons (those of all but the first person taken as known exactly).
    """

    quasi_identifiers: tuple[str, ...]
    dates: tuple[dict[str, Any], ...]
    coarse_pseudonyms: tuple[dict[str, Any], ...]
    records: int
    smallest_candidates: int
    singled_out: int
    singled_out_expected: float
    k: int | None
    below_k: int | None
    pessimistic: bool = False

    @property
    def known(self) -> tuple[str, ...]:
        """The columns the adversary knows beyond the QIs."""
        return tuple(d["column"] for d in self.dates) + tuple(p["column"] for p in self.coarse_pseudonyms)

    @property
    def bound_holds(self) -> bool:
        """Whether every record keeps at least k candidates against this adversary."""
        return self.k is not None and self.records > 0 and self.smallest_candidates >= self.k

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["known"] = list(self.known)
        out["bound_holds"] = self.bound_holds
        for key in ("quasi_identifiers", "dates", "coarse_pseudonyms"):
            out[key] = list(out[key])
        return out


def coarse_pseudonyms(
    con: duckdb.DuckDBPyConnection, table: str, columns: Sequence[str], missing: Sequence[str]
) -> list[dict[str, Any]]:
    """``{column, distinct, records, limit}`` of each pseudonym column of ``table`` (text columns
    and a count ``w``) that is coarse on the released records (``distinct < 2 sqrt(records)``)."""
    absent = ", ".join(literal(t) for t in dict.fromkeys([*missing, ""]))
    out = []
    for column in columns:
        row = con.execute(
            f"SELECT COUNT(DISTINCT {quote(column)}), COALESCE(SUM(w), 0) FROM {table} "
            f"WHERE {quote(column)} NOT IN ({absent})"
        ).fetchone()
        assert row is not None
        distinct, records = int(row[0]), int(row[1])
        if is_coarse(distinct, records):
            out.append(
                {
                    "column": column,
                    "distinct": distinct,
                    "records": records,
                    "limit": round(coarse_limit(records), 1),
                }
            )
    return out


def informed_adversary(
    con: duckdb.DuckDBPyConnection,
    table: str,
    quasi_identifiers: Sequence[str],
    dates: Sequence[KeptShiftedDate],
    pseudonyms: Sequence[dict[str, Any]],
    missing: Sequence[str] = (),
    k: int | None = None,
) -> InformedAdversary:
    """The informed adversary on ``table``: the released distinct rows as text with a count
    ``w`` (the disclosure check's ``released`` table); ``dates``: the kept shifted dates;
    ``pseudonyms``: the coarse pseudonyms (:func:`coarse_pseudonyms`)."""
    absent = frozenset([*missing, ""])
    persons = list(dict.fromkeys(d.person for d in dates))
    anchor_dates = [d for d in dates if persons and d.person == persons[0]]
    windows = {d.max_days for d in anchor_dates}
    if len(windows) > 1:
        raise ValueError(f"the shifted dates of {persons[0]!r} have several max_days: {sorted(windows)}")
    window = windows.pop() if windows else 0
    days = []
    for j, d in enumerate(dates):  # each date column's distinct texts -> day numbers, in Python
        name = f"__days_{j}"
        texts = [str(r[0]) for r in con.execute(f"SELECT DISTINCT {quote(d.column)} FROM {table}").fetchall()]
        present = [t for t in texts if t not in absent]
        parsed = pd.DataFrame(
            {
                "v": pd.Series(present, dtype=object),
                "d": pd.array([_day(t, d.date_format) for t in present], "Int64"),
            }
        )
        con.register("__parsed_days", parsed)
        try:
            con.execute(
                f"CREATE OR REPLACE TEMP TABLE {name} AS SELECT CAST(v AS VARCHAR) AS v, d FROM __parsed_days"
            )
        finally:
            con.unregister("__parsed_days")
        days.append(name)
    joins = " ".join(
        f"LEFT JOIN {name} AS j{i} ON r.{quote(d.column)} = j{i}.v"
        for i, (d, name) in enumerate(zip(dates, days, strict=True))
    )
    day = [f"j{i}.d" for i in range(len(dates))]
    anchored = [day[i] for i, d in enumerate(dates) if d in anchor_dates]
    anchor = f"COALESCE({', '.join(anchored)})" if anchored else "NULL"
    group = [f"r.{quote(q)}" for q in quasi_identifiers] + [f"r.{quote(p['column'])}" for p in pseudonyms]
    group += [f"{day[i]} - {anchor}" for i, d in enumerate(dates) if d in anchor_dates]  # the intervals
    group += [day[i] for i, d in enumerate(dates) if d not in anchor_dates]  # other persons: exact
    keys = [f"g{i}" for i in range(len(group))]
    selected = ", ".join(
        [*(f"{g} AS {key}" for g, key in zip(group, keys, strict=True)), f"COALESCE({anchor}, 0) AS a", "r.w"]
    )
    rank = f"DENSE_RANK() OVER (ORDER BY {', '.join(keys)})" if keys else "1"
    rows = f"SELECT {selected} FROM {table} AS r {joins}"
    grouped = f"SELECT {', '.join([*keys, 'a'])}, SUM(w) AS w FROM ({rows}) GROUP BY ALL"
    result = con.execute(f"SELECT {rank} AS c, a, w FROM ({grouped}) ORDER BY c, a").fetchnumpy()
    for name in days:
        con.execute(f"DROP TABLE IF EXISTS {name}")
    c = np.asarray(result["c"], dtype=np.int64)
    a = np.asarray(result["a"], dtype=np.int64)
    w = np.asarray(result["w"], dtype=np.int64)
    figures = candidate_figures(c, a, w, window, k)
    return InformedAdversary(
        quasi_identifiers=tuple(quasi_identifiers),
        dates=tuple({"column": d.column, "person": d.person, "max_days": d.max_days} for d in dates),
        coarse_pseudonyms=tuple(dict(p) for p in pseudonyms),
        records=int(w.sum()),
        k=k,
        pessimistic=len(persons) > 1,
        **figures,
    )


def _day(text: str, fmt: str) -> int | None:
    try:
        return dt.datetime.strptime(text, fmt).toordinal()
    except ValueError:
        return None  # not a date of the format (the identifier check refuses such a release)


def candidate_figures(
    groups: np.ndarray, anchors: np.ndarray, weights: np.ndarray, window: int, k: int | None
) -> dict[str, Any]:
    """``smallest_candidates``, ``singled_out``, ``singled_out_expected`` and ``below_k`` of
    distinct rows ``(group, anchor)`` (sorted, as ``informed_adversary`` fetches them) with
    their record counts ``weights`` and the window ``N`` (see the module docstring)."""
    if groups.size == 0:
        return {
            "smallest_candidates": 0,
            "singled_out": 0,
            "singled_out_expected": 0.0,
            "below_k": 0 if k else None,
        }
    n = int(window)
    lo_anchor = int(anchors.min())
    stride = int(anchors.max()) - lo_anchor + 4 * n + 4  # groups never share a window
    key = (groups - groups.min()) * stride + (anchors - lo_anchor) + 2 * n + 2
    if np.any(np.diff(key) <= 0):
        raise ValueError("the rows must be distinct and sorted by group and anchor")
    cumulative = np.concatenate([[0], np.cumsum(weights)])

    def within(centre: np.ndarray) -> np.ndarray:  # n(D): records whose anchor is within N of D
        upper = np.searchsorted(key, centre + n, side="right")
        lower = np.searchsorted(key, centre - n, side="left")
        return np.asarray(cumulative[upper] - cumulative[lower], dtype=np.int64)

    points = np.unique(np.concatenate([key - n, key + n + 1]))
    counts = within(points)
    first = np.searchsorted(points, key - n, side="left")
    last = np.searchsorted(points, key + n, side="right") - 1
    fewest = _range_minimum(counts, first, last)
    # singled out: alone at its anchor, and some D of its interval is > N from every other anchor
    same_prev = np.concatenate([[False], groups[1:] == groups[:-1]])
    same_next = np.concatenate([groups[:-1] == groups[1:], [False]])
    far = np.int64(1) << 60
    prev = np.where(same_prev, np.concatenate([[0], anchors[:-1]]), -far)
    nxt = np.where(same_next, np.concatenate([anchors[1:], [0]]), far)
    left = np.maximum(anchors - n, prev + n + 1)
    right = np.minimum(anchors + n, nxt - n - 1)
    uncovered = np.where(weights == 1, np.maximum(right - left + 1, 0), 0)
    singled = uncovered > 0
    if not np.array_equal(singled, fewest == 1):  # the two computations must agree
        raise AssertionError("singled-out records disagree with the fewest candidates")
    return {
        "smallest_candidates": int(fewest.min()),
        "singled_out": int(weights[singled].sum()),
        "singled_out_expected": float(uncovered.sum() / (2 * n + 1)),
        "below_k": int(weights[fewest < k].sum()) if k is not None else None,
    }


def _range_minimum(values: np.ndarray, first: np.ndarray, last: np.ndarray) -> np.ndarray:
    """``min(values[first[i] : last[i] + 1])`` for each ``i`` (``first <= last``, both
    non-decreasing): a sparse table, built over slices of at most :data:`SLICE_POINTS` points."""
    out = np.empty(first.size, dtype=np.int64)
    start = 0
    while start < first.size:
        base = int(first[start])
        stop = int(np.searchsorted(last, base + SLICE_POINTS - 1, side="right"))
        stop = max(stop, start + 1)  # one window never exceeds a slice (at most 4N + 2 points)
        top = int(last[stop - 1]) + 1
        table = [values[base:top]]
        widths = last[start:stop] - first[start:stop] + 1
        level = 0
        while (2 << level) <= int(widths.max()):
            half = 1 << level
            previous = table[-1]
            table.append(np.minimum(previous[:-half], previous[half:]))
            level += 1
        lo = first[start:stop] - base
        hi = last[start:stop] - base
        step = np.floor(np.log2(widths)).astype(np.int64)
        result = np.empty(stop - start, dtype=np.int64)
        for j in np.unique(step):
            pick = step == j
            row = table[int(j)]
            result[pick] = np.minimum(row[lo[pick]], row[hi[pick] - (1 << int(j)) + 1])
        out[start:stop] = result
        start = stop
    return out
