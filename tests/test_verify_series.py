"""The series verifier (:mod:`safeshare.verify.series`, issue 37) on publications built by hand: its
differences against a brute-force enumeration written here from the rule's statement, and each rule
on a case whose answer is known."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from safeshare.errors import InputError
from safeshare.verify.series import (
    ANY,
    Publication,
    SeriesHierarchy,
    SeriesLedgerError,
    check_series,
    day_number,
    publication_from_record,
    publication_record,
)

AGES = [str(a) for a in range(10)]
H = SeriesHierarchy(
    ("region", "age"),
    (
        ({"r1": "r1", "r2": "r2"},),
        ({a: a for a in AGES}, {a: "0-4" if int(a) < 5 else "5-9" for a in AGES}, dict.fromkeys(AGES, "*")),
    ),
)
D = day_number("2020-08-02")  # a Sunday


def pub(
    name: str, first: int, last: int, levels: tuple[int, ...], cells: dict, new: bool = False
) -> Publication:
    return Publication(name, first, last, {levels: cells}, None, new)


# ------------------------------------------------------------------------------------ brute force
def brute_force(pubs: list[Publication], k: int) -> bool:
    """Rule 3 as stated (module docstring), one cell at one level, enumerated: for each publication X
    and each family T of the others, pairwise disjoint, within X, to which no other publication within X
    can be added disjointly, with a new publication among X and T: d = X - sum T must be 0 or at least
    k when T covers X, and 0 when it does not."""
    for x in pubs:
        inside = [p for p in pubs if p is not x and x.first_day <= p.first_day and p.last_day <= x.last_day]
        for size in range(1, len(inside) + 1):
            for family in itertools.combinations(inside, size):
                if any(not (a.last_day < b.first_day or b.last_day < a.first_day)
                       for a, b in itertools.combinations(family, 2)):  # fmt: skip
                    continue
                if any(
                    all(p.last_day < q.first_day or q.last_day < p.first_day for q in family)
                    for p in inside
                    if p not in family
                ):
                    continue  # not maximal
                if not (x.new or any(p.new for p in family)):
                    continue
                d = _count(x) - sum(_count(p) for p in family)
                covered = sum(p.last_day - p.first_day + 1 for p in family) == x.last_day - x.first_day + 1
                if (covered and 0 < abs(d) < k) or (not covered and d != 0):
                    return True
    return False


def _count(p: Publication) -> int:
    return sum(next(iter(p.cells.values())).values())


@st.composite
def series(draw: st.DrawFn) -> list[Publication]:
    """A week and its days, each with 0-2 publications of one cell (counts 0..14), some new."""
    spans = [(D, D + 6)] + [(D + i, D + i) for i in range(7)]
    pubs = []
    for first, last in spans:
        counts = draw(st.lists(st.integers(0, 14), max_size=2, unique=True))
        for n in counts:
            new = draw(st.booleans())
            cells = {("r1", "0-4"): n} if n else {}
            pubs.append(pub(f"{first}-{last}:{n}", first, last, (0, 1), cells, new))
    return pubs


@settings(max_examples=300, deadline=None)
@given(series(), st.sampled_from([2, 5, 11]))
def test_differences_equal_the_brute_force(pubs: list[Publication], k: int) -> None:
    findings = check_series(pubs, H, k, limit=1000)
    assert all(f.kind == "difference" for f in findings)
    assert bool(findings) == brute_force(pubs, k)


# ------------------------------------------------------------------------------------ each rule
@given(st.integers(0, 30), st.integers(-30, 30), st.sampled_from([5, 11]))
def test_a_re_release_differs_by_zero_or_at_least_k(n: int, d: int, k: int) -> None:
    old = pub("old", D, D, (0, 1), {("r1", "0-4"): n, ("r2", "5-9"): 3})
    if n + d < 0:
        return
    new = pub("new", D, D, (0, 1), {("r1", "0-4"): n + d, ("r2", "5-9"): 3}, new=True)
    findings = check_series([old, new], H, k)
    assert bool(findings) == (0 < abs(d) < k)
    if findings:
        assert findings[0].role == "same" and "cell region r1, age 0-4 of 2020-08-02" in findings[0].message
        assert findings[0].cell == ("r1", "0-4") and abs(findings[0].value) == abs(d)
    # an identical re-release is no new publication at all
    assert check_series([old, pub("again", D, D, (0, 1), dict(old.cells[(0, 1)]), new=True)], H, k) == []


def test_finer_differences_are_found_at_the_finer_common_level() -> None:
    """A re-release at the same fine policy: the difference is seen per single age (0-4 would hide it:
    +1 at age 3, -1 at age 4)."""
    old = pub("old", D, D, (0, 0), {("r1", "3"): 4, ("r1", "4"): 6})
    new = pub("new", D, D, (0, 0), {("r1", "3"): 5, ("r1", "4"): 5}, new=True)
    findings = check_series([old, new], H, 11)
    assert findings and findings[0].cell == ("r1", "3") and findings[0].at == (0, 0)


def test_a_suppressed_field_makes_a_publication_inexact_below_its_level() -> None:
    """A cell with its age suppressed (any value) cannot be split by age: at single ages the file is
    not exact where that cell lies, and the comparison is made where it is (age at its top)."""
    old = pub("old", D, D, (0, 0), {("r1", "3"): 4})
    new = Publication("new", D, D, {(0, 3): {("r1", ANY): 4}}, None, True)
    assert check_series([old, new], H, 11) == []  # 4 = 4 at the top: nothing revealed
    newer = Publication("newer", D, D, {(0, 3): {("r1", ANY): 5}}, None, True)
    findings = check_series([old, newer], H, 11)
    assert findings and findings[0].at == (0, 3) and "age NA" in findings[0].message


def test_public_totals_are_compared_with_this_release_only() -> None:
    total = Publication("total", D, D, {(0, 3): {("r1", ANY): 7}}, frozenset({"r1"}), False, external=True)
    old = pub("old", D, D, (0, 1), {("r1", "0-4"): 5})  # an earlier file, from before 2 late records
    assert check_series([total, old], H, 11) == []
    assert check_series([total, old, pub("new", D, D, (0, 1), {("r1", "0-4"): 5}, True)], H, 11) == []
    new = pub("new", D, D, (0, 1), {("r1", "0-4"): 6}, True)
    findings = check_series([total, new], H, 11)
    assert findings[0].role == "part" and findings[0].value == 1
    # a region the totals do not list is not compared
    other = pub("new", D, D, (0, 1), {("r1", "0-4"): 7, ("r2", "0-4"): 3}, True)
    assert check_series([total, other], H, 11) == []


def test_windows_that_overlap_without_nesting_are_refused() -> None:
    a = pub("a", D, D + 6, (0, 1), {("r1", "0-4"): 5})
    b = pub("b", D + 3, D + 9, (0, 1), {("r1", "0-4"): 5}, True)
    findings = check_series([a, b], H, 11)
    assert [f.kind for f in findings] == ["windows"] and "overlap without one period holding the other" in (
        findings[0].message
    )


def test_incomparable_levels_name_the_intersection() -> None:
    h = SeriesHierarchy(("region", "age", "sex"), (*H.levels, ({"f": "f", "m": "m"}, {"f": "*", "m": "*"})))
    a = pub("a", D, D, (0, 0, 1), {("r1", "3", "*"): 2})
    b = pub("b", D, D, (0, 1, 0), {("r1", "0-4", "f"): 1, ("r1", "5-9", "m"): 4}, True)
    findings = check_series([a, b], h, 11)
    assert findings[0].kind == "intersection" and findings[0].levels == (0, 1, 1)
    assert "up to 1 record(s) in the cell region r1, age 3, sex f" in findings[0].message
    # comparable levels (b coarser in both): no intersection
    c = pub("c", D, D, (0, 1, 1), {("r1", "0-4", "*"): 2}, True)
    assert check_series([a, c], h, 11) == []


def test_a_week_over_unpublished_days_reveals_them() -> None:
    days = [pub(f"d{i}", D + i, D + i, (0, 0), {("r1", "3"): 1}) for i in range(5)]
    week = pub("week", D, D + 6, (0, 1), {("r1", "0-4"): 5}, True)
    assert check_series([*days, week], H, 11) == []  # days 6, 7 have no record in the week
    week = pub("week", D, D + 6, (0, 1), {("r1", "0-4"): 6}, True)
    findings = check_series([*days, week], H, 11)
    assert findings[0].role == "total" and "1 record(s) on 2020-08-07 .. 2020-08-08" in findings[0].message


def test_ledger_records_round_trip_and_malformed_ones_are_refused() -> None:
    p = Publication("p", D, D + 6, {(0, 1): {("r1", "0-4"): 3}, (0, 3): {("r2", ANY): 2}}, None, True)
    record = publication_record(p, [[0], [1]], "NA")
    back = publication_from_record("q", record, H, "here")
    assert back.key() == p.key() and not back.new
    for broken in (
        {**record, "first_day": "2020-13-01"},
        {**record, "cells": [["r1", "0-4", -1]]},
        {**record, "cells": [["r1", "0-4", True]]},
        {**record, "cells": [["r1", "0-4"]]},
        {**record, "cells": [["r1", "99", 1]]},
        {**record, "admissible": [[0]]},
        {k: v for k, v in record.items() if k != "cells"},
    ):
        with pytest.raises(SeriesLedgerError, match="here: not a publication record"):
            publication_from_record("q", broken, H, "here")


def test_levels_that_do_not_nest_are_refused() -> None:
    h = SeriesHierarchy(("region", "age"), (({"r1": "r1"},), ({"1": "a", "2": "a"}, {"1": "x", "2": "y"})))
    with pytest.raises(InputError, match="lies in two labels"):
        h.coarsen(1, 0, 1, "a")
