"""Independent check of a surveillance release against every earlier release of its series (issue 37).

A case series is published again and again: each ``safeshare surveil release`` writes one file per
period, the next release re-publishes periods or adds new ones, the schedule changes the policy week
by week, and counts of the same people may be public elsewhere (a county's daily case total). Each
file passes its own checks (:mod:`safeshare.verify.population_bins`); a recipient who keeps every
file can still combine them. This module re-reads what was published -- the new files from disk,
the earlier ones from the series ledger, which records the counts a recipient can compute from each
earlier file -- and looks for what the combination reveals beyond every single file. It shares
nothing with the code that planned the release: the hierarchies are plain data (per dimension and
level, leaf -> label) and the cells are read back from the files by DuckDB.

**Publications.** A publication is one file's records of one period: its *period* (the days it
covers: a day, or a Sunday-Saturday week), and its *cells*: every distinct released tuple (region and
demographic labels) with its count; a cell a file does not hold has count 0 there, in every region
the file speaks for (every region of the population table; a public-totals file speaks for the
regions it lists). Each cell has a *level* per dimension (the policy's; with field suppression, the
level of a suppressed field is the virtual top, "any value"; a county suppressed to its state is the
region's level 1). Cells of one level coarsen to any coarser level by the hierarchies (nested: a
label of level ``a`` is one label of every level ``b >= a``).

**What is checked** (findings that involve at least one new publication; the earlier ones were
checked when they were published):

1. *Windows*: two publications whose periods overlap must nest (a day inside a week); a partial
   overlap is refused, not guessed at.
2. *Intersection*: two publications of overlapping periods whose cells lie at incomparable levels
   (neither at least as coarse as the other in every dimension) place the records they share in
   the intersection of their cells -- a cell finer than either file's policy. Refused, naming the
   intersection cell (each dimension at the finer of the two labels) where both hold records.
3. *Differences*: for a publication ``X`` and a set of other publications ``T`` whose periods are
   disjoint and lie within ``X``'s (including one of the same period: a re-release), coarsened to a
   common level ``J`` at which all are exact, the recipient computes per ``J``-cell
   ``d = X(c) - sum_T T(c)``:

   * when ``T`` covers every day of ``X`` (the same records, if nothing changed), ``d`` counts the
     records one side shows and the other does not -- records reported late, records suppressed in
     one file and not the other, a county's public total minus its released records. ``d`` must be
     0 or at least ``k`` in magnitude: a group of ``1 .. k-1`` records is a small cell no file
     shows (the UK dashboard's recovered counts below 3);
   * when ``T`` leaves days ``R`` of ``X`` uncovered, ``d`` is the count of ``R``'s records in
     ``c`` -- days that no file publishes at that granularity (a "do not share" day inside a week
     published whole). Any ``d != 0`` is refused: it is a count of records of periods not released.

   A publication is *exact* for a ``J``-cell when every one of its cells overlapping it coarsens to
   ``J`` (a cell with a suppressed field is not split by the recipient: it makes the publication
   inexact there, and the combinations at coarser levels are checked instead). ``J`` ranges over the
   levels of the publications of each group of overlapping periods, closed under joins.

What it does not do: derive bounds (a cell count known to lie between two values from overlapping
marginals, Frechet's bounds) or general linear combinations that are not a count of records (the net
change over several days of additions and removals); a recipient with outside knowledge of who was
reported late is outside the model. The checks cover exact derivations by difference, as statistical
agencies' differencing rules do.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

from safeshare.errors import InputError
from safeshare.verify.sql import quote, release_relation

#: The label of every value at a dimension's virtual top level ("any value": a suppressed field).
ANY = "\x00any"

#: A cell's levels (one per dimension, the region first) and labels.
Levels = tuple[int, ...]
Labels = tuple[str, ...]


class SeriesLedgerError(InputError):
    """The series ledger's content cannot be read as publications (exit 2, one line)."""


def day_number(text: str) -> int:
    """Days since 1970-01-01 of a ``YYYY-MM-DD`` date."""
    return (dt.date.fromisoformat(text) - dt.date(1970, 1, 1)).days


def day_text(day: int) -> str:
    return (dt.date(1970, 1, 1) + dt.timedelta(days=day)).isoformat()


@dataclass
class SeriesHierarchy:
    """The dimensions of a release (the region first), each with its levels, finest first, as
    plain data: ``levels[d][a]`` maps every leaf to its label at level ``a``. Level
    ``len(levels[d])`` is the virtual top, where every leaf is :data:`ANY`."""

    names: tuple[str, ...]
    levels: tuple[tuple[Mapping[str, str], ...], ...]
    _up: dict[tuple[int, int, int], dict[str, str]] = field(default_factory=dict, repr=False)
    _labels: dict[tuple[int, int], frozenset[str]] = field(default_factory=dict, repr=False)

    def top(self, d: int) -> int:
        return len(self.levels[d])

    def labels(self, d: int, a: int) -> frozenset[str]:
        """The labels of level ``a`` of dimension ``d``."""
        key = (d, a)
        if key not in self._labels:
            self._labels[key] = (
                frozenset([ANY]) if a >= self.top(d) else frozenset(self.levels[d][a].values())
            )
        return self._labels[key]

    def coarsen(self, d: int, a: int, b: int, label: str) -> str:
        """The label at level ``b >= a`` of the values labelled ``label`` at level ``a``."""
        if b >= self.top(d):
            return ANY
        if a == b:
            return label
        key = (d, a, b)
        table = self._up.get(key)
        if table is None:
            table = {}
            for leaf, fine in self.levels[d][a].items():
                coarse = self.levels[d][b][leaf]
                if table.setdefault(fine, coarse) != coarse:
                    raise InputError(
                        f"hierarchy of {self.names[d]!r}: label {fine!r} of level {a} lies in two labels "
                        f"of level {b} ({table[fine]!r}, {coarse!r}); the levels must nest"
                    )
            self._up[key] = table
        try:
            return table[label]
        except KeyError:
            raise InputError(f"{self.names[d]!r}: {label!r} is not a label of level {a}") from None

    def coarsen_cell(self, levels: Levels, labels: Labels, to: Levels) -> Labels:
        return tuple(
            self.coarsen(d, a, b, label)
            for d, (a, b, label) in enumerate(zip(levels, to, labels, strict=True))
        )

    def show(self, labels: Labels) -> str:
        """``region 99001, age 35-39, race *, ...`` (a suppressed field: NA)."""
        return ", ".join(
            f"{name} {'NA' if label == ANY else label}"
            for name, label in zip(self.names, labels, strict=True)
        )


@dataclass
class Publication:
    """One period of one published file (see the module docstring)."""

    name: str
    first_day: int
    last_day: int
    cells: dict[Levels, dict[Labels, int]]
    regions: frozenset[str] | None = None
    new: bool = False
    #: published elsewhere (a public case count): never re-published, only subtracted from
    external: bool = False

    @property
    def span(self) -> tuple[int, int]:
        return self.first_day, self.last_day

    def key(self) -> tuple[Any, ...]:
        """Identical content (period, regions, cells): one publication for the recipient."""
        cells = tuple(sorted((lv, tuple(sorted(c.items()))) for lv, c in self.cells.items()))
        regions = None if self.regions is None else tuple(sorted(self.regions))
        return (self.first_day, self.last_day, regions, cells)

    def days(self) -> str:
        if self.first_day == self.last_day:
            return day_text(self.first_day)
        return f"{day_text(self.first_day)} .. {day_text(self.last_day)}"


@dataclass(frozen=True)
class SeriesFinding:
    """What a combination of publications reveals.

    ``kind``: ``windows``, ``intersection`` or ``difference``; ``publication``: the new publication
    involved (by name); ``role``: how it enters -- ``same`` (it re-publishes a period published
    before, or is compared with a publication of its own period), ``total`` (its period holds the
    others') or ``part`` (it is one of the parts subtracted from an earlier or public total);
    ``others``: the publications it is combined with; ``message``: one line naming the cell."""

    kind: str
    publication: str
    role: str
    others: tuple[str, ...]
    message: str
    levels: Levels | None = None  # intersection: the join the new publication must reach
    cell: Labels | None = None  # difference: the revealing cell, at level ``at``
    at: Levels | None = None
    value: int = 0  # difference: the records the others show beyond the new publication


def _leq(a: Levels, b: Levels) -> bool:
    return all(x <= y for x, y in zip(a, b, strict=True))


def _join(a: Levels, b: Levels) -> Levels:
    return tuple(max(x, y) for x, y in zip(a, b, strict=True))


def _distinct(publications: Iterable[Publication]) -> list[Publication]:
    """Publications of identical content merged: new only when no earlier one had that content."""
    seen: dict[tuple[Any, ...], Publication] = {}
    for pub in publications:
        key = pub.key()
        if key in seen:
            first = seen[key]
            if first.new and not pub.new:
                seen[key] = pub
        else:
            seen[key] = pub
    return list(seen.values())


def check_series(
    publications: Sequence[Publication], hierarchy: SeriesHierarchy, k: int, limit: int = 20
) -> list[SeriesFinding]:
    """Every finding (at most ``limit``) of the publications, new and earlier (module docstring)."""
    pubs = _distinct(publications)
    if not any(p.new for p in pubs):
        return []
    spans = sorted({p.span for p in pubs}, key=lambda s: (s[0], -s[1]))
    by_span: dict[tuple[int, int], list[Publication]] = {}
    for p in pubs:
        by_span.setdefault(p.span, []).append(p)
    parent: dict[tuple[int, int], tuple[int, int] | None] = {}
    stack: list[tuple[int, int]] = []
    findings: list[SeriesFinding] = []
    for span in spans:
        while stack and stack[-1][1] < span[0]:
            stack.pop()
        if stack and span[1] > stack[-1][1]:
            # a partial overlap (even of earlier publications only): the checks below assume nesting
            here, there = by_span[span], by_span[stack[-1]]
            new = next((p for p in here + there if p.new), here[0])
            other = there[0] if new in here else here[0]
            findings.append(
                SeriesFinding(
                    "windows",
                    new.name,
                    "same",
                    (other.name,),
                    f"{new.name} ({new.days()}) and {other.name} ({other.days()}) overlap without one "
                    "period holding the other; such windows cannot be checked, so they are refused",
                )
            )
            continue
        parent[span] = stack[-1] if stack else None
        stack.append(span)
    if findings:
        return findings[:limit]
    children: dict[tuple[int, int] | None, list[tuple[int, int]]] = {}
    for span, up in parent.items():
        children.setdefault(up, []).append(span)
    for root in children.get(None, []):
        nodes = _subtree(root, children)
        group = [p for s in nodes for p in by_span[s]]
        if len(group) < 2 or not any(p.new for p in group):
            continue
        findings.extend(_intersections(group, hierarchy))
        if len(findings) >= limit:
            break
        findings.extend(_differences(root, nodes, children, by_span, hierarchy, k, limit - len(findings)))
        if len(findings) >= limit:
            break
    return findings[:limit]


def _subtree(root: tuple[int, int], children: Mapping[Any, list[tuple[int, int]]]) -> list[tuple[int, int]]:
    out, todo = [], [root]
    while todo:
        span = todo.pop()
        out.append(span)
        todo.extend(children.get(span, []))
    return out


def _contains(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return a[0] <= b[0] and b[1] <= a[1]


def _intersections(group: list[Publication], hierarchy: SeriesHierarchy) -> list[SeriesFinding]:
    """Rule 2: overlapping publications whose cells' levels are incomparable."""
    out = []
    for i, p in enumerate(group):
        for q in group[i + 1 :]:
            if not (p.new or q.new) or not (_contains(p.span, q.span) or _contains(q.span, p.span)):
                continue
            new, old = (p, q) if p.new else (q, p)
            found = _intersection_cell(new, old, hierarchy)
            if found is None:
                continue
            levels, cell, n_new, n_old = found
            days = new.days() if _contains(old.span, new.span) else old.days()
            out.append(
                SeriesFinding(
                    "intersection",
                    new.name,
                    "same"
                    if new.span == old.span
                    else ("total" if _contains(new.span, old.span) else "part"),
                    (old.name,),
                    f"{new.name} and {old.name} both publish {days} at incomparable generalizations: "
                    f"together they place up to {min(n_new, n_old)} record(s) in the cell "
                    f"{hierarchy.show(cell)}, finer than either file",
                    levels,
                )
            )
    return out


def _intersection_cell(
    new: Publication, old: Publication, hierarchy: SeriesHierarchy
) -> tuple[Levels, Labels, int, int] | None:
    """The first cell (sorted) where a cell of ``new`` and one of ``old`` at incomparable levels
    overlap, both holding records: (the join of their levels, the intersection, the two counts)."""
    best: tuple[Labels, Levels, Labels, int, int] | None = None
    for a, cells_a in new.cells.items():
        for b, cells_b in old.cells.items():
            if _leq(a, b) or _leq(b, a):
                continue
            m = _join(a, b)
            index: dict[Labels, list[tuple[Labels, int]]] = {}
            for labels, n in cells_b.items():
                index.setdefault(hierarchy.coarsen_cell(b, labels, m), []).append((labels, n))
            for labels, n in cells_a.items():
                for other, n_other in index.get(hierarchy.coarsen_cell(a, labels, m), []):
                    meet = tuple(
                        x if la <= lb else y for x, y, la, lb in zip(labels, other, a, b, strict=True)
                    )
                    if best is None or meet < best[0]:
                        best = (meet, m, meet, n, n_other)
    if best is None:
        return None
    return best[1], best[2], best[3], best[4]


@dataclass
class _AtJ:
    """One publication's counts at a common level ``J``: exact cells and where it is not exact."""

    pub: Publication
    counts: dict[Labels, int]
    masks: dict[Levels, set[Labels]]

    def exact(self, cell: Labels, hierarchy: SeriesHierarchy, j: Levels) -> bool:
        regions = self.pub.regions
        if regions is not None and (j[0] != 0 or cell[0] not in regions):
            return False
        return all(hierarchy.coarsen_cell(j, cell, m) not in labels for m, labels in self.masks.items())


def _at(pub: Publication, j: Levels, hierarchy: SeriesHierarchy) -> _AtJ:
    counts: dict[Labels, int] = {}
    masks: dict[Levels, set[Labels]] = {}
    for levels, cells in pub.cells.items():
        if _leq(levels, j):
            for labels, n in cells.items():
                key = hierarchy.coarsen_cell(levels, labels, j)
                counts[key] = counts.get(key, 0) + n
        else:
            m = _join(levels, j)
            masks.setdefault(m, set()).update(hierarchy.coarsen_cell(levels, labels, m) for labels in cells)
    return _AtJ(pub, counts, masks)


def _closure(levels: set[Levels]) -> list[Levels]:
    out = set(levels)
    while True:
        more = {_join(a, b) for a in out for b in out} - out
        if not more:
            return sorted(out, key=lambda lv: (sum(lv), lv))
        out |= more


#: A tiling's key: (records, covers every day of its period, the kinds of publication it holds).
_Key = tuple[int, bool, int]

#: The kinds of publication, as bits: of this release, of an earlier one, published elsewhere.
NEW, OLD, EXT = 1, 2, 4


def _kind(pub: Publication) -> int:
    return EXT if pub.external else NEW if pub.new else OLD


def _counts(kinds: int) -> bool:
    """A combination is checked when it holds a new publication, and public totals only with this
    release's files (the totals are the counts public as of this release: beside an earlier file they
    differ by the records reported since, which the totals' own revisions publish)."""
    return bool(kinds & NEW) and not (kinds & EXT and kinds & OLD)


def _differences(
    root: tuple[int, int],
    nodes: list[tuple[int, int]],
    children: Mapping[Any, list[tuple[int, int]]],
    by_span: Mapping[tuple[int, int], list[Publication]],
    hierarchy: SeriesHierarchy,
    k: int,
    limit: int,
) -> list[SeriesFinding]:
    """Rule 3, on one group of overlapping periods (a root period and the periods inside it)."""
    group = [p for s in nodes for p in by_span[s]]
    covered = {s: sum(c[1] - c[0] + 1 for c in children.get(s, [])) == s[1] - s[0] + 1 for s in nodes}
    out: list[SeriesFinding] = []
    reported: set[tuple[str, str]] = set()
    for j in _closure({lv for p in group for lv in p.cells}):
        at = {id(p): _at(p, j, hierarchy) for p in group}
        universe = sorted({c for a in at.values() for c, n in a.counts.items() if n})
        for cell in universe:
            values: dict[tuple[int, int], list[tuple[int, Publication]]] = {}
            for p in group:
                a = at[id(p)]
                if a.exact(cell, hierarchy, j):
                    values.setdefault(p.span, []).append((a.counts.get(cell, 0), p))
            if sum(len(v) for v in values.values()) < 2:
                continue
            # the earlier files, then the public totals, each beside this release's files (_counts)
            # beside public totals only complete comparisons count: the days with a public count of 0
            # hold none of a week's records, which narrows nothing that the totals do not publish
            branches = [(_only(values, OLD), False), (_only(values, EXT), True)]
            for branch, complete_only in branches:
                if sum(len(v) for v in branch.values()) < 2:
                    continue
                for total, parts, d, complete in _derive(root, children, covered, branch, k):
                    if complete_only and not complete:
                        continue
                    new = total if total.new else next(p for p in parts if p.new)
                    role = _role(new, total, parts)
                    if (new.name, role) in reported:
                        continue
                    reported.add((new.name, role))
                    out.append(
                        _difference_finding(hierarchy, j, cell, total, parts, d, complete, role, new, k)
                    )
                    if len(out) >= limit:
                        return out
    return out


def _only(
    values: Mapping[tuple[int, int], list[tuple[int, Publication]]], kind: int
) -> dict[tuple[int, int], list[tuple[int, Publication]]]:
    """The values of this release's publications and of one other kind (earlier, or public totals)."""
    out: dict[tuple[int, int], list[tuple[int, Publication]]] = {}
    for span, vs in values.items():
        kept = [(v, p) for v, p in vs if _kind(p) in (NEW, kind)]
        if kept:
            out[span] = kept
    return out


def _derive(
    root: tuple[int, int],
    children: Mapping[Any, list[tuple[int, int]]],
    covered: Mapping[tuple[int, int], bool],
    values: Mapping[tuple[int, int], list[tuple[int, Publication]]],
    k: int,
) -> Iterable[tuple[Publication, tuple[Publication, ...], int, bool]]:
    """The revealing differences of one cell: (total, parts, difference, parts cover the total)."""
    memo: dict[tuple[int, int], dict[_Key, tuple[Publication, ...]]] = {}

    def combos(span: tuple[int, int]) -> dict[_Key, tuple[Publication, ...]]:
        # maximal tilings by the child periods: a tiling of every child that has one (a child
        # without any exact publication stays uncovered), at least one child tiled
        states: dict[_Key, tuple[Publication, ...]] = {(0, covered[span], 0): ()}
        tiled = False
        for child in children.get(span, []):
            tiles = tilings(child)
            if not tiles:
                states = {(t, False, n): w for (t, _c, n), w in states.items()}
                continue
            tiled = True
            nxt: dict[_Key, tuple[Publication, ...]] = {}
            for (total, complete, kinds), witness in states.items():
                for (t, t_complete, t_kinds), t_witness in tiles.items():
                    nxt.setdefault((total + t, complete and t_complete, kinds | t_kinds), witness + t_witness)
            states = nxt
        return states if tiled else {}

    def tilings(span: tuple[int, int]) -> dict[_Key, tuple[Publication, ...]]:
        if span not in memo:
            out: dict[_Key, tuple[Publication, ...]] = {
                (v, True, _kind(p)): (p,) for v, p in values.get(span, [])
            }
            for key, witness in combos(span).items():
                out.setdefault(key, witness)
            memo[span] = out
        return memo[span]

    todo = [root]
    while todo:
        span = todo.pop()
        todo.extend(children.get(span, []))
        own = values.get(span, [])
        if not own:
            continue
        inner = combos(span)
        for v, pub in own:
            # an earlier publication is only compared with combinations holding a new one
            candidates: list[tuple[int, bool, int, tuple[Publication, ...]]]
            candidates = [(w, True, _kind(q), (q,)) for w, q in own if q is not pub and (pub.new or q.new)]
            candidates += [(t, c, n, wit) for (t, c, n), wit in inner.items() if pub.new or n & NEW]
            for t, complete, kinds, witness in candidates:
                if not _counts(kinds | _kind(pub)):
                    continue
                d = v - t
                if (complete and 0 < abs(d) < k) or (not complete and d != 0):
                    yield pub, witness, d, complete


def _role(new: Publication, total: Publication, parts: tuple[Publication, ...]) -> str:
    """How the new publication enters a revealing combination (what would remedy it)."""
    others = [p for p in (total, *parts) if p is not new]
    if any(p.external for p in others):
        return "part"  # a part of a public total: only withholding more of it helps
    if all(p.span == new.span for p in others):
        return "same"
    return "total" if new is total else "part"


def _difference_finding(
    hierarchy: SeriesHierarchy,
    j: Levels,
    cell: Labels,
    total: Publication,
    parts: tuple[Publication, ...],
    d: int,
    complete: bool,
    role: str,
    new: Publication,
    k: int,
) -> SeriesFinding:
    shown = hierarchy.show(cell)
    others = tuple(p.name for p in (total, *parts) if p is not new)
    part_text = " + ".join(f"{p.name}" for p in parts)
    if complete:
        why = (
            f"a difference of {abs(d)} record(s), fewer than k = {k}, that no file shows "
            f"(records added, removed or suppressed between them)"
        )
    else:
        why = (
            f"{d} record(s) on {_uncovered(total, parts)}, days that no file publishes at this "
            "generalization (not shared, or no file)"
        )
    message = f"cell {shown} of {total.days()}: {total.name} minus {part_text} reveals {why}"
    # the value seen from the new publication's side: what the others hold beyond it
    return SeriesFinding(
        "difference", new.name, role, others, message, None, cell, j, -d if new is total else d
    )


def _uncovered(total: Publication, parts: tuple[Publication, ...]) -> str:
    """The days of ``total``'s period that no part covers, as ranges."""
    days = [
        d
        for d in range(total.first_day, total.last_day + 1)
        if not any(p.first_day <= d <= p.last_day for p in parts)
    ]
    ranges: list[list[int]] = []
    for d in days:
        if ranges and ranges[-1][1] == d - 1:
            ranges[-1][1] = d
        else:
            ranges.append([d, d])
    return ", ".join(day_text(a) if a == b else f"{day_text(a)} .. {day_text(b)}" for a, b in ranges)


# ----------------------------------------------------------------------------------------- reading
def levels_of(
    hierarchy: SeriesHierarchy, labels: Labels, admissible: Sequence[Sequence[int]], na: str | None
) -> tuple[Levels, Labels]:
    """A released tuple's level in every dimension (a suppressed field: the virtual top) and its
    labels (a suppressed field as :data:`ANY`); ``InputError`` for a value of no admissible level."""
    levels, out = [], []
    for d, label in enumerate(labels):
        if na is not None and label == na:
            levels.append(hierarchy.top(d))
            out.append(ANY)
            continue
        for a in admissible[d]:
            if label in hierarchy.labels(d, a):
                levels.append(a)
                out.append(label)
                break
        else:
            raise InputError(f"{hierarchy.names[d]!r} value {label!r} is not a label of its published level")
    return tuple(levels), tuple(out)


def read_publication(
    path: Path,
    fmt: str,
    *,
    name: str,
    first_day: int,
    last_day: int,
    hierarchy: SeriesHierarchy,
    admissible: Sequence[Sequence[int]],
    na: str | None = None,
    delimiter: str = ",",
    con: duckdb.DuckDBPyConnection | None = None,
) -> Publication:
    """A new publication, its cells counted from the written file by DuckDB (``GROUP BY`` the
    region and the dimensions, as text); ``con``: a connection to reuse (one per file otherwise)."""
    own = con is None
    db = duckdb.connect() if con is None else con
    try:
        if own:
            db.execute("SET threads TO 1")
        rel = release_relation(Path(path), fmt, delimiter)
        select = ", ".join(f"CAST({quote(c)} AS VARCHAR)" for c in hierarchy.names)
        rows = db.execute(f"SELECT {select}, COUNT(*) FROM {rel} GROUP BY ALL").fetchall()
    finally:
        if own:
            db.close()
    cells: dict[Levels, dict[Labels, int]] = {}
    for row in rows:
        raw = tuple("" if v is None else str(v) for v in row[:-1])
        levels, labels = levels_of(hierarchy, raw, admissible, na)
        bucket = cells.setdefault(levels, {})
        bucket[labels] = bucket.get(labels, 0) + int(row[-1])
    return Publication(name, first_day, last_day, cells, None, True)


def publication_record(
    pub: Publication, admissible: Sequence[Sequence[int]], na: str | None
) -> dict[str, Any]:
    """The ledger's record of a publication: its period, how to read its labels and its cells
    (``[labels..., count]``, a suppressed field as ``na``), sorted."""
    rows = []
    for cells in pub.cells.values():
        for labels, n in cells.items():
            rows.append([*(na if label == ANY else label for label in labels), int(n)])
    rows.sort(key=lambda r: [str(x) for x in r])
    return {
        "first_day": day_text(pub.first_day),
        "last_day": day_text(pub.last_day),
        "admissible": [list(a) for a in admissible],
        "na": na,
        "regions": None if pub.regions is None else sorted(pub.regions),
        "cells": rows,
    }


def publication_from_record(
    name: str, record: Mapping[str, Any], hierarchy: SeriesHierarchy, where: str
) -> Publication:
    """A publication from its ledger record (:func:`publication_record`); ``SeriesLedgerError``
    naming ``where`` for anything malformed."""
    try:
        first, last = day_number(str(record["first_day"])), day_number(str(record["last_day"]))
        admissible = [[int(a) for a in dim] for dim in record["admissible"]]
        na = record["na"]
        regions = record["regions"]
        rows = record["cells"]
        if na is not None and not isinstance(na, str):
            raise TypeError("na")
        if len(admissible) != len(hierarchy.names) or not isinstance(rows, list):
            raise ValueError("dimensions")
        cells: dict[Levels, dict[Labels, int]] = {}
        for row in rows:
            if not isinstance(row, list) or len(row) != len(hierarchy.names) + 1:
                raise ValueError("a cell")
            count = row[-1]
            if not isinstance(count, int) or isinstance(count, bool) or count < 0:
                raise ValueError("a count")
            levels, labels = levels_of(hierarchy, tuple(str(x) for x in row[:-1]), admissible, na)
            bucket = cells.setdefault(levels, {})
            bucket[labels] = bucket.get(labels, 0) + count
        if first > last:
            raise ValueError("period")
        region_set = None if regions is None else frozenset(str(r) for r in regions)
    except (KeyError, TypeError, ValueError, InputError) as exc:
        raise SeriesLedgerError(f"{where}: not a publication record ({exc})") from None
    return Publication(name, first, last, cells, region_set, False)
