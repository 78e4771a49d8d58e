"""Labels that lie (issue 30, items 1-3): every released label is a true statement about its
record's value.

* item 1: the dates builder nested months under ISO weeks (2022-01-01 -> 2021-W52 -> 2021-12 ->
  2021-Q4 -> 2021): now a tree of true statements, the calendar by default, ISO weeks -> ISO
  years as their own choice, a mix refused;
* item 2: one truth check (:mod:`safeshare.hierarchy.truth`), used by every builder at build
  time, by ``hierarchy check``, and by the verifier on the written release
  (:mod:`safeshare.verify.truth`); property tests for every builder (every label is true of its
  value, and a label of another class is judged false of it);
* item 3: "blank = missing" is one switch (:mod:`safeshare.missing`) in every builder, the
  command line and the workbench; values far beyond a coding bound are reported.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from safeshare.data.engines.base import ReleasePlan
from safeshare.data.engines.duckdb_engine import DuckDBEngine
from safeshare.data.engines.memory import MemoryEngine
from safeshare.data.schema import Attribute, Role, Schema
from safeshare.data.source import TableSource
from safeshare.errors import HierarchyError, VerificationError
from safeshare.hierarchy.builders import (
    CALENDAR_LEVELS,
    WEEK_LEVELS,
    DateBuilder,
    GroupingBuilder,
    IntervalBuilder,
    MaskingBuilder,
    SuppressionBuilder,
    with_data_missing,
)
from safeshare.hierarchy.hierarchy import Hierarchy
from safeshare.hierarchy.truth import (
    DateSemantics,
    FileSemantics,
    check_hierarchy,
    read_period,
    semantics_of,
)
from safeshare.missing import BLANK_HINT, missing_texts, parse_missing, with_blank
from safeshare.models import KAnonymity
from safeshare.verify import expectations_any_level, expectations_for, verify_release
from safeshare.verify.truth import TruthExpectations
from safeshare.workflows.anonymizer import AnonymizationResult, Anonymizer
from safeshare.workflows.publish import write_release
from tests.conftest import ADULT_DIR, run_cli, write_small_adult
from tests.test_input_shape import anonymize, refused, write_csv

DAYS_2022_2023 = [dt.date(2022, 1, 1) + dt.timedelta(days=i) for i in range(730)]


def rows_of(h: Hierarchy) -> dict[str, tuple[str, ...]]:
    return {row[0]: row[1:] for row in h.rows}


def all_true(h: Hierarchy, builder: Any) -> None:
    check = check_hierarchy(h, semantics_of(builder))
    assert check.passed, check.false[:3]
    assert check.unchecked == 0  # a builder's labels are always readable


# =========================================================================== item 1: dates
def test_hierarchy_build_of_every_day_of_2022_and_2023_is_true(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The issue's reproduction: ``hierarchy build --spec '{type: dates, format: "%Y-%m-%d"}'``
    wrote ``2022-01-01;2021-W52;2021-12;2021-Q4;2021;*`` (44 of 730 days in the wrong month)."""
    data = write_csv(tmp_path / "d.csv", ["d"], [[d.isoformat()] for d in DAYS_2022_2023])
    out = tmp_path / "d-hierarchy.csv"
    spec = '{type: dates, format: "%Y-%m-%d"}'
    code, _, stderr = run_cli(
        ["hierarchy", "build", str(data), "--column", "d", "--spec", spec, "--out", str(out)], capsys
    )
    assert code == 0, stderr
    lines = out.read_text().splitlines()
    assert "2022-01-01;2022-01;2022-Q1;2022;*" in lines
    assert "2022-04-01;2022-04;2022-Q2;2022;*" in lines
    assert "2023-01-01;2023-01;2023-Q1;2023;*" in lines
    for line in lines:
        day, month, quarter, year, top = line.split(";")
        d = dt.date.fromisoformat(day)
        assert (month, quarter, year, top) == (
            f"{d:%Y-%m}",
            f"{d.year}-Q{(d.month - 1) // 3 + 1}",
            str(d.year),
            "*",
        )


def test_iso_weeks_go_to_iso_years_on_every_day() -> None:
    h = DateBuilder(levels=["day", "week", "week_year"]).build([d.isoformat() for d in DAYS_2022_2023])
    rows = rows_of(h)
    assert rows["2022-01-01"] == ("2022-01-01", "2021-W52", "2021-W01..2021-W52", "*")
    assert rows["2023-01-01"] == ("2023-01-01", "2022-W52", "2022-W01..2022-W52", "*")
    for d in DAYS_2022_2023:
        year, week, _ = d.isocalendar()
        assert rows[d.isoformat()][1] == f"{year}-W{week:02d}"
    all_true(h, DateBuilder(levels=["day", "week", "week_year"]))


def test_a_configuration_asking_for_weeks_under_months_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The old default chain ``[week, month, quarter, year]`` cannot be built true: refused with
    one line saying why and what to choose, before any data is read."""
    write_csv(tmp_path / "a.csv", ["d", "sex"], [["2022-01-01", "F"], ["2022-01-02", "M"]])
    config = tmp_path / "c.yaml"
    config.write_text(
        "input: {path: a.csv}\nattributes:\n"
        "  d: {role: quasi, hierarchy: {type: dates, levels: [week, month, quarter, year]}}\n"
        "  sex: {role: insensitive}\nprivacy: {k-anonymity: {k: 1}}\n"
    )
    out = tmp_path / "out"
    code, _, stderr = anonymize(config, out, "memory", capsys)
    refused(
        code, stderr, out, "attributes.d.hierarchy", "weeks do not nest in months", "[day, week, week_year]"
    )


def old_mixed_hierarchy(days: list[dt.date]) -> Hierarchy:
    """What main's default dates builder wrote: ISO week, then the month, quarter and year of the
    week's Thursday."""
    rows = []
    for d in days:
        year, week, _ = d.isocalendar()
        thursday = dt.date.fromisocalendar(year, week, 4)
        rows.append(
            (
                d.isoformat(),
                f"{year}-W{week:02d}",
                f"{thursday:%Y-%m}",
                f"{thursday.year}-Q{(thursday.month - 1) // 3 + 1}",
                str(thursday.year),
                "*",
            )
        )
    return Hierarchy(rows, "admitted")


def test_the_truth_check_finds_every_lie_of_the_old_builder() -> None:
    """The old hierarchy is a valid hierarchy (a function at every level) whose labels lie: the
    truth check, which reads labels apart from the builder, finds the 44 wrong months, 16 wrong
    quarters and 3 wrong years of 2022-2023, and nothing else."""
    check = check_hierarchy(old_mixed_hierarchy(DAYS_2022_2023), DateSemantics())
    by_level: dict[int, set[str]] = {}
    for false in check.false:
        by_level.setdefault(false.level, set()).add(false.value)
    assert {level: len(values) for level, values in by_level.items()} == {2: 44, 3: 16, 4: 3}
    assert by_level[4] == {"2022-01-01", "2022-01-02", "2023-01-01"}
    assert check.unchecked == 0
    # and the same hierarchy as an ARX CSV file: its labels read as calendar periods
    assert len(check_hierarchy(old_mixed_hierarchy(DAYS_2022_2023), FileSemantics()).false) == 44 + 16 + 3


def test_a_lying_builder_is_refused_at_build_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every builder's hierarchy is checked before it is returned: a builder that wrote the old
    labels is refused, one line naming the column, the value and the label."""
    original = DateBuilder._labeller

    def lying(self: DateBuilder, level: str) -> Callable[[dt.date], str]:
        if level == "year":
            return lambda d: str(d.isocalendar()[0])  # the ISO year, written as a calendar year
        return original(self, level)

    monkeypatch.setattr(DateBuilder, "_labeller", lying)
    with pytest.raises(HierarchyError) as info:
        DateBuilder(levels=["day", "year"]).build([d.isoformat() for d in DAYS_2022_2023], name="admitted")
    assert (
        str(info.value)
        == "admitted: label '2021' (level 2) is not true of value '2022-01-01' (3 labels are false)"
    )


# =========================================================================== item 2: property tests
@st.composite
def interval_specs(draw: st.DrawFn) -> tuple[IntervalBuilder, list[str]]:
    """A random intervals builder (nested widths, origin, label pattern, coding) and values."""
    decimal = draw(st.booleans())
    base = Fraction(draw(st.sampled_from([1, 2, 5, 10]))) / (
        draw(st.sampled_from([2, 4, 10])) if decimal else 1
    )
    factors = draw(st.lists(st.sampled_from([1, 2, 3, 5]), min_size=0, max_size=3))
    widths = [base]
    for f in factors:
        if f > 1:
            widths.append(widths[-1] * f)
    origin = draw(st.integers(-20, 20))
    label = draw(
        st.sampled_from(
            [None, "{low}-{high}", "[{low}, {end})", "{low}:{high}", "{low} to {end}", "{low}..{high}"]
        )
    )
    coding: dict[str, float] | None = None
    old: dict[str, float] = {}
    mode = draw(st.sampled_from(["none", "coding", "old"]))
    bottom, top = sorted(draw(st.lists(st.integers(-50, 150), min_size=2, max_size=2, unique=True)))
    bounds = {k: v for k, v in (("bottom", bottom), ("top", top)) if draw(st.booleans())}
    if mode == "coding" and bounds:
        coding = {k: float(v) for k, v in bounds.items()}
    elif mode == "old":
        old = {f"{k}_coding": float(v) for k, v in bounds.items()}
    numbers = draw(st.lists(st.integers(-100, 200), min_size=1, max_size=30))
    scale = draw(st.sampled_from([1, 4])) if decimal else 1
    values = [str(Fraction(n, scale)) if scale == 1 else repr(n / scale) for n in numbers]
    builder = IntervalBuilder(
        widths=[float(w) for w in widths],
        origin=origin,
        label=label,
        coding=coding,
        **old,  # type: ignore[arg-type]
    )
    return builder, values


@settings(max_examples=150, deadline=None)
@given(interval_specs())
def test_every_interval_label_is_true_of_its_value(spec: tuple[IntervalBuilder, list[str]]) -> None:
    builder, values = spec
    h = builder.build(values, name="x")
    all_true(h, builder)
    judge = semantics_of(builder).judge(h.leaves)
    # not vacuous: the labels of one level are disjoint, so another class's label is false of a value
    for level in range(1, h.height + 1):
        mapping = h.mapping(level)
        labels = set(mapping.values()) - {builder.top}
        for value, label in mapping.items():
            for other in sorted(labels - {label})[:5]:
                assert judge(value, other) is False, (value, label, other)


@st.composite
def date_specs(draw: st.DrawFn) -> tuple[DateBuilder, list[str]]:
    chain = draw(st.sampled_from([CALENDAR_LEVELS, WEEK_LEVELS]))
    chosen = draw(st.sets(st.sampled_from(chain), min_size=1))
    levels = [level for level in chain if level in chosen]
    fmt = draw(st.sampled_from(["%Y-%m-%d", "%d/%m/%Y", "%Y%m%d", "%d.%m.%Y %H:%M", "%Y-%m-%d %H:%M:%S"]))
    days = draw(st.lists(st.dates(dt.date(1800, 1, 1), dt.date(2200, 12, 31)), min_size=1, max_size=30))
    stamps = [
        dt.datetime.combine(d, dt.time(draw(st.integers(0, 23)), draw(st.integers(0, 59)))) for d in days
    ]
    builder = DateBuilder(levels=levels, format=fmt, week_start=draw(st.sampled_from(["monday", "sunday"])))
    return builder, [s.strftime(fmt) for s in stamps]


@settings(max_examples=150, deadline=None)
@given(date_specs())
def test_every_date_label_is_true_of_its_date(spec: tuple[DateBuilder, list[str]]) -> None:
    builder, values = spec
    h = builder.build(values, name="d")
    all_true(h, builder)
    judge = semantics_of(builder).judge(h.leaves)
    for row in h.rows:
        day = dt.datetime.strptime(row[0], builder.format).date()
        for label in row[1:-1]:
            period = read_period(label)
            assert period is not None and period.contains(Fraction(day.toordinal())), (row, label)
            # the period just before the label's first day is not true of the date
            first = dt.date.fromordinal(int(period.low))  # type: ignore[arg-type]
            if first > dt.date(1800, 1, 1):
                earlier = (first - dt.timedelta(days=1)).strftime(builder.format)
                assert judge(earlier, label) is False, (earlier, label)


@st.composite
def masking_specs(draw: st.DrawFn) -> tuple[MaskingBuilder, list[str]]:
    alphabet = st.sampled_from("0123456789ABEZ.-")
    values = draw(st.lists(st.text(alphabet, min_size=1, max_size=8), min_size=1, max_size=25))
    pad = draw(st.sampled_from([None, "_", "0"]))
    builder = MaskingBuilder(
        char=draw(st.sampled_from(["*", "x", "#"])),
        max_masked=draw(st.sampled_from([None, 1, 2, 5])),
        align=draw(st.sampled_from(["right", "left"])),
        pad=pad,
        pad_side=draw(st.sampled_from([None, "start", "end"])) if pad else None,
    )
    return builder, values


@settings(max_examples=150, deadline=None)
@given(masking_specs())
def test_every_masked_label_shows_its_value(spec: tuple[MaskingBuilder, list[str]]) -> None:
    builder, values = spec
    h = builder.build(values, name="code")
    all_true(h, builder)
    judge = semantics_of(builder).judge(h.leaves)
    # not vacuous: a value that differs in a shown character is not described by the label
    for row in h.rows:
        value = row[0]
        for label in row[1:]:
            shown = label.rstrip(builder.char) if builder.align == "right" else label.lstrip(builder.char)
            if label == builder.top or not shown or len(value) != len(label):
                continue
            at = 0 if builder.align == "right" else len(value) - 1
            changed = value[:at] + ("Q" if value[at] != "Q" else "R") + value[at + 1 :]
            assert judge(changed, label) is False, (changed, label)


@st.composite
def grouping_specs(draw: st.DrawFn) -> tuple[GroupingBuilder, list[str]]:
    values = draw(st.lists(st.sampled_from([f"v{i}" for i in range(12)]), min_size=1, max_size=30))
    domain = sorted(set(values))
    levels: list[dict[str, list[str]]] = []
    below = domain
    for depth in range(draw(st.integers(1, 3))):
        groups: dict[str, list[str]] = {}
        for member in below:
            groups.setdefault(f"L{depth + 1}g{draw(st.integers(0, 3))}", []).append(member)
        levels.append(groups)
        below = sorted(groups)
    return GroupingBuilder(levels=levels), values


@settings(max_examples=100, deadline=None)
@given(grouping_specs())
def test_every_group_holds_its_values(spec: tuple[GroupingBuilder, list[str]]) -> None:
    builder, values = spec
    h = builder.build(values, name="g")
    all_true(h, builder)
    judge = semantics_of(builder).judge(h.leaves)
    for level in range(1, h.height):
        mapping = h.mapping(level)
        for value in mapping:
            for other_label in set(mapping.values()) - {mapping[value]}:
                assert judge(value, other_label) is False


@settings(max_examples=50, deadline=None)
@given(
    st.lists(st.text(st.characters(min_codepoint=33, max_codepoint=126), min_size=1, max_size=5), min_size=1)
)
def test_suppression_claims_nothing_but_the_top(values: list[str]) -> None:
    builder = SuppressionBuilder()
    all_true(builder.build(values, name="s"), builder)
    assert semantics_of(builder).judge(values)(values[0], "F") is (values[0] == "F")


@settings(max_examples=100, deadline=None)
@given(
    low=st.integers(-1000, 1000),
    width=st.integers(1, 100),
    x=st.integers(-1200, 1200),
    form=st.sampled_from(["{a}-{b}", "{a}:{b}", "[{a}, {e})", "[{a}, {e}[", "{a}..{b}", "[{a}, {b}]"]),
)
def test_file_interval_labels_are_read_as_written(low: int, width: int, x: int, form: str) -> None:
    label = form.format(a=low, b=low + width - 1, e=low + width)
    assert FileSemantics().judge([str(x)])(str(x), label) is (low <= x < low + width)


@pytest.mark.parametrize(
    ("label", "inside", "outside"),
    [
        ("<18", "17.9", "18"),
        (">=90", "90", "89.99"),
        ("90+", "138", "89"),
        ("2021-12", "2021-12-31", "2022-01-01"),
        ("2021-Q4", "2021-10-01", "2021-09-30"),
        ("2021", "2021-06-15 12:00:00", "2022-01-01 00:00:00+00"),
        ("2021-W52", "2022-01-02", "2022-01-03"),
        ("2020-2029", "2029-12-31", "2030-01-01"),
        ("2021-01-03..2021-01-09", "2021-01-09", "2021-01-10"),
    ],
)
def test_file_labels_that_read_as_intervals_or_periods_are_judged(
    label: str, inside: str, outside: str
) -> None:
    judge = FileSemantics().judge([inside, outside])
    assert judge(inside, label) is True
    assert judge(outside, label) is False
    assert judge("Divorced", "Had-Spouse") is None  # a file's own category: cannot be checked


# =========================================================================== item 2: the three users
def test_hierarchy_check_refuses_a_false_file_and_says_what_it_cannot_check(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "age.csv"
    bad.write_text("37;30-39;*\n45;30-39;*\n")
    code, _, stderr = run_cli(["hierarchy", "check", str(bad)], capsys)
    assert code == 2 and stderr.strip() == "error: age.csv: label '30-39' (level 1) is not true of value '45'"
    data = write_csv(tmp_path / "d.csv", ["age"], [["37"], ["45"]])
    code, _, stderr = run_cli(
        ["hierarchy", "check", str(bad), "--data", str(data), "--column", "age"], capsys
    )
    assert code == 2 and "'30-39' (level 1) is not true of value '45'" in stderr
    code, out, stderr = run_cli(
        ["hierarchy", "check", str(ADULT_DIR / "hierarchies" / "education.csv"), "--json"], capsys
    )
    doc = json.loads(out)
    assert code == 0 and doc["truth"]["unchecked"] == doc["truth"]["pairs"] == 32
    assert "32 of 32 labels could not be checked" in doc["warnings"][0]
    code, out, _ = run_cli(
        ["hierarchy", "check", str(ADULT_DIR / "hierarchies" / "age.csv"), "--json"], capsys
    )
    assert code == 0 and json.loads(out)["truth"] == {
        "semantics": "file",
        "pairs": 200,
        "true": 200,
        "false": 0,
        "unchecked": 0,
    }


def test_a_configured_file_with_a_false_label_is_refused_before_the_search(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_csv(tmp_path / "a.csv", ["age", "sex"], [["37", "F"], ["45", "M"], ["37", "M"]])
    (tmp_path / "age.csv").write_text("37;30-39;*\n45;30-39;*\n")
    config = tmp_path / "c.yaml"
    config.write_text(
        "input: {path: a.csv}\nattributes:\n  age: {role: quasi, hierarchy: age.csv}\n"
        "  sex: {role: insensitive}\nprivacy: {k-anonymity: {k: 1}}\n"
    )
    out = tmp_path / "out"
    code, _, stderr = anonymize(config, out, "duckdb", capsys)
    refused(code, stderr, out, "age: label '30-39' (level 1) is not true of value '45'")


def test_a_loaded_hierarchy_with_a_false_label_is_refused_before_the_search(tmp_path: Path) -> None:
    """The Python API takes loaded hierarchies: they are judged on the data's values too."""
    frame = pd.DataFrame({"age": ["37", "45", "37", "45"], "s": list("abcd")})
    lying = Hierarchy([("37", "30-39", "*"), ("45", "30-39", "*"), ("99", "0-9", "*")], "age")
    schema = Schema.from_attributes([Attribute("age", Role.QUASI, lying)], Role.INSENSITIVE)
    with pytest.raises(HierarchyError, match=r"^age: label '30-39' \(level 1\) is not true of value '45'$"):
        Anonymizer(schema, [KAnonymity(1)]).fit(MemoryEngine(frame))
    # the row of 99 is not the data's: a code list may hold rows for absent values
    fine = Hierarchy([("37", "30-39", "*"), ("45", "40-49", "*"), ("99", "0-9", "*")], "age")
    schema = Schema.from_attributes([Attribute("age", Role.QUASI, fine)], Role.INSENSITIVE)
    assert Anonymizer(schema, [KAnonymity(1)]).fit(MemoryEngine(frame)).found


def verified_truth(
    tmp_path: Path, release: pd.DataFrame, labels: dict[str, tuple[str, ...]], counts: dict[str, int]
):
    path = tmp_path / "r.csv"
    release.to_csv(path, index=False)
    expected = expectations_for(
        columns=list(release.columns),
        quasi_identifiers=["d"],
        hierarchy_rows={"d": [(v, *lab) for v, lab in labels.items()]},
        levels={"d": 1},
        records_in=sum(counts.values()),
        max_suppression=0.0,
        models={"k-anonymity": {"k": 1}},
    )
    expected.truth = TruthExpectations(
        semantics={"d": DateSemantics()},
        labels={"d": {v: (lab[0],) for v, lab in labels.items()}},
        input_classes=lambda: pd.DataFrame({"d": list(counts), "__count__": list(counts.values())}),
    )
    return verify_release(path, "csv", expected)


def test_the_verifier_refuses_a_label_false_of_its_records(tmp_path: Path) -> None:
    """The verifier's own check, on a written file: 19 admissions of 2022-01-01 labelled 2021."""
    counts = {"2022-01-01": 19, "2022-01-03": 5}
    labels = {"2022-01-01": ("2021", "*"), "2022-01-03": ("2022", "*")}
    release = pd.DataFrame({"d": ["2021"] * 19 + ["2022"] * 5})
    v = verified_truth(tmp_path, release, labels, counts)
    assert not v.passed
    assert v.failures[0] == "column 'd': label '2021' is not true of value '2022-01-01' (19 released records)"
    assert v.checks["truth"]["columns"]["d"] == {"semantics": "dates", "pairs": 2, "false": 1, "unchecked": 0}
    # the true labels pass; a record written with another record's (true) label does not
    labels["2022-01-01"] = ("2022", "*")
    assert verified_truth(tmp_path, pd.DataFrame({"d": ["2022"] * 24}), labels, counts).passed
    labels["2021-12-31"] = ("2021", "*")
    v = verified_truth(
        tmp_path, pd.DataFrame({"d": ["2022"] * 20 + ["2021"] * 5}), labels, {**counts, "2021-12-31": 1}
    )
    assert not v.passed and "4 released records in 1 classes are not input records" in v.failures[-1]


def test_every_false_value_of_a_label_is_counted_in_its_line(tmp_path: Path) -> None:
    """Two values labelled falsely with the same label: one line, the value with the most
    records first, and how many such values there are."""
    counts = {"2022-01-01": 19, "2022-01-02": 3, "2021-12-31": 2}
    labels = {"2022-01-01": ("2021", "*"), "2022-01-02": ("2021", "*"), "2021-12-31": ("2021", "*")}
    v = verified_truth(tmp_path, pd.DataFrame({"d": ["2021"] * 24}), labels, counts)
    assert v.failures[0] == (
        "column 'd': label '2021' is not true of value '2022-01-01' (19 released records; 2 such values)"
    )
    assert v.checks["truth"]["columns"]["d"]["false"] == 2


def verified_any_level(
    tmp_path: Path, release: list[str], rows: dict[str, tuple[str, ...]], counts: dict[str, int]
):
    """A locally recoded release of one date column ``d`` (labels of any level of ``rows``: the
    value's day, month, year, ``*``), verified with its truth check."""
    path = tmp_path / "r.csv"
    pd.DataFrame({"d": release}).to_csv(path, index=False)
    expected = expectations_any_level(
        ["d"],
        ["d"],
        {"d": [(v, *labels) for v, labels in rows.items()]},
        sum(counts.values()),
        0.05,
        {"k-anonymity": {"k": 1}},
    )
    expected.truth = TruthExpectations(
        semantics={"d": DateSemantics()},
        labels={"d": {v: (v, *labels) for v, labels in rows.items()}},
        input_classes=lambda: pd.DataFrame({"d": list(counts), "__count__": list(counts.values())}),
        any_level=True,
    )
    return verify_release(path, "csv", expected)


def test_a_locally_recoded_release_is_judged_label_by_label(tmp_path: Path) -> None:
    """Labels of several levels: every released label a value may take is judged (not only its
    first), each label's records against the input records it is true of."""
    counts = {"2022-01-01": 19, "2022-01-03": 5, "2021-12-31": 2}
    rows = {
        "2022-01-01": ("2022-01", "2022", "*"),
        "2022-01-03": ("2022-01", "2022", "*"),
        "2021-12-31": ("2021-12", "2021", "*"),
    }
    # months for some, the year for others (no month 2022-01 released): all true, all counted
    v = verified_any_level(tmp_path, ["2022"] * 24 + ["2021-12"] * 2, rows, counts)
    assert v.passed, v.failures
    assert v.checks["truth"]["columns"]["d"]["pairs"] == 3 and v.checks["truth"]["passed"]
    # an input value the configuration gives no label (its one record suppressed): no pair of its own
    v = verified_any_level(tmp_path, ["2022"] * 24 + ["2021-12"] * 2, rows, {**counts, "2022-02-01": 1})
    assert v.passed, v.failures
    assert v.checks["truth"]["columns"]["d"]["pairs"] == 3
    v = verified_any_level(tmp_path, ["2022-01"] * 10 + ["2022"] * 14 + ["*"] * 2, rows, counts)
    assert v.passed, v.failures
    # more records of a label than input records it is true of
    v = verified_any_level(tmp_path, ["2022"] * 25 + ["2021"], rows, counts)
    assert v.failures == ["column 'd': 1 released records carry labels that fewer input records are true of"]
    # a false label the configuration allowed (2022-01-01's year written 2021)
    rows["2022-01-01"] = ("2022-01", "2021", "*")
    rows["2022-01-03"] = ("2022-01", "2021", "*")
    v = verified_any_level(tmp_path, ["2022-01"] * 24 + ["2021"] * 2, rows, counts)
    assert v.failures == [
        "column 'd': label '2021' is not true of value '2022-01-01' (19 input records; 2 such values)"
    ]


def relabel(value: str, label: str) -> Callable[..., ReleasePlan]:
    """An ``AnonymizationResult.release_plan`` that writes ``value``'s records with ``label``
    (another allowed label): a broken plan, or engine, whose release the verifier must refuse."""
    original = AnonymizationResult.release_plan

    def plan(self: AnonymizationResult, *args: Any, **kwargs: Any) -> ReleasePlan:
        out = original(self, *args, **kwargs)
        qi = next(q for q, m in out.generalization.items() if value in m)
        assert label in out.generalization[qi].values()
        out.generalization[qi][value] = label
        return out

    return plan


def admissions(n: int = 400) -> pd.DataFrame:
    days = [dt.date(2021, 12, 1) + dt.timedelta(days=i % 60) for i in range(n)]
    return pd.DataFrame(
        {"admitted": [d.isoformat() for d in days], "ward": [["A", "B"][i % 2] for i in range(n)]}
    )


@pytest.mark.parametrize("engine", ["memory", "duckdb"])
def test_a_release_with_a_record_labelled_falsely_is_not_published(
    engine: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The verifier judges the written file, whatever wrote it: records of 2022-01-01 written as
    2021-12 (a label the hierarchy has, true of other records) are refused, nothing published."""
    path = tmp_path / "a.csv"
    admissions().to_csv(path, index=False)
    schema = Schema.from_attributes(
        [Attribute("admitted", Role.QUASI, DateBuilder(levels=["month", "year"]))], Role.INSENSITIVE
    )
    source = TableSource(path)
    with MemoryEngine(source) if engine == "memory" else DuckDBEngine(source) as eng:
        anonymizer = Anonymizer(
            schema, [KAnonymity(2)], algorithm="node", algorithm_options={"levels": {"admitted": 1}}
        )
        result = anonymizer.fit(eng)
        published = write_release(result, eng, tmp_path / "good")
        truth = published.report["verification"]["checks"]["truth"]
        assert truth["passed"] and truth["columns"]["admitted"]["pairs"] == 60
        monkeypatch.setattr(AnonymizationResult, "release_plan", relabel("2022-01-01", "2021-12"))
        out = tmp_path / "out"
        with pytest.raises(VerificationError, match="records in 1 classes are not input records"):
            write_release(result, eng, out)
    assert not out.exists()


def test_the_report_says_what_the_truth_check_did(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    directory = write_small_adult(tmp_path, n_train=2000)
    args = ["anonymize", str(directory / "adult.yaml"), "--out", str(tmp_path / "out"), "--no-tradeoff", "-q"]
    # the run's warnings that contradict its headline, acknowledged (issue 33)
    code, _, stderr = run_cli([*args, "--accept-warning", "kept-column-identifying"], capsys)
    assert code == 0, stderr
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    truth = report["verification"]["checks"]["truth"]
    assert truth["passed"] and set(truth["columns"]) == set(report["levels"])
    age = truth["columns"]["age"]  # Adult's age file: intervals "30:39", all judged
    assert age["semantics"] == "file" and age["pairs"] > 0 and age["false"] == age["unchecked"] == 0
    assert all(c["false"] == 0 for c in truth["columns"].values())
    # a file's own categories ("Had-Spouse") are said to be unchecked where they are released
    if report["levels"]["marital-status"] in (1, 2):
        assert truth["columns"]["marital-status"]["unchecked"] == truth["columns"]["marital-status"]["pairs"]


# =========================================================================== item 3: blank cells
def test_the_switch() -> None:
    assert parse_missing("") == ("",)
    assert parse_missing("?, NA,") == ("?", "NA", "")
    assert parse_missing(None) == ()
    assert parse_missing(["?", ""]) == ("?", "")
    assert with_blank(("?",), True) == ("?", "") and with_blank(("?", ""), False) == ("?",)
    assert missing_texts(()) == frozenset() and missing_texts(("?",)) == {"?", ""}


BLANK_SPECS = {
    "intervals": ("{type: intervals, widths: [10, 20]}", "age", ["30", "", "45"], ""),
    "masking": ("{type: masking}", "zip", ["12345", "", "12399"], ""),
    "dates": ("{type: dates}", "d", ["2022-01-01", "", "2023-05-06"], ""),
    "grouping": ("{type: grouping, levels: [{A: [a], B: [b]}]}", "g", ["a", "", "b"], ""),
    "suppression": ("{type: suppression}", "sex", ["F", "", "M"], "*"),
}


@pytest.mark.parametrize("kind", list(BLANK_SPECS))
def test_blank_is_missing_is_one_switch_for_every_builder(
    kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``hierarchy build --missing ''`` was refused (the comma list dropped the empty token and the
    builders had their own, different, defaults): one switch now, the same for every builder."""
    spec, column, values, level1 = BLANK_SPECS[kind]
    data = write_csv(tmp_path / "d.csv", [column, "x"], [[v, "1"] for v in values])
    out = tmp_path / "h.csv"
    args = ["hierarchy", "build", str(data), "--column", column, "--spec", spec, "--out", str(out)]
    code, _, stderr = run_cli(args, capsys)
    assert code == 2 and stderr.strip().endswith(
        BLANK_HINT + " (or declare it with missing: [''] in this builder only)"
    )
    assert len(stderr.strip().splitlines()) == 1 and not out.exists()
    code, _, stderr = run_cli([*args, "--missing", ""], capsys)
    assert code == 0, stderr
    blank = next(
        line for line in out.read_text().splitlines() if line.startswith(";") or line.startswith('""')
    )
    assert blank.split(";")[1] in (level1, '""')
    assert blank.split(";")[-1] == "*"


def test_the_input_declaration_reaches_every_builder() -> None:
    for builder in (IntervalBuilder(widths=[10]), MaskingBuilder(), DateBuilder(), SuppressionBuilder()):
        assert with_data_missing(builder, ("?", "")).missing[-2:] == ("?", "")  # type: ignore[attr-defined]
    grouping = GroupingBuilder(levels=[{"A": ["a"]}])
    h = with_data_missing(grouping, ("?",)).build(["a", "?"], name="g")
    assert rows_of(h)["?"] == ("?", "*")


def test_a_numeric_quasi_identifier_with_blanks_is_released_with_the_switch(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    body = [[("" if i % 7 == 0 else str(20 + i % 50)), ["F", "M"][i % 2]] for i in range(200)]
    write_csv(tmp_path / "a.csv", ["age", "sex"], body)
    config = tmp_path / "c.yaml"
    text = (
        "input: {{path: a.csv{missing}}}\nattributes:\n"
        "  age: {{role: quasi, hierarchy: {{type: intervals, widths: [10, 20]}}}}\n"
        "  sex: {{role: insensitive}}\nprivacy: {{k-anonymity: {{k: 2}}}}\n"
    )
    config.write_text(text.format(missing=""))
    out = tmp_path / "out"
    code, _, stderr = anonymize(config, out, "duckdb", capsys)
    refused(code, stderr, out, "age: the empty value occurs", "input.missing: ['']")
    config.write_text(text.format(missing=", missing: ['']"))
    for engine in ("memory", "duckdb"):
        code, _, stderr = anonymize(config, tmp_path / engine, engine, capsys)
        assert code == 0, stderr
        release = pd.read_csv(tmp_path / engine / "release.csv", dtype=str, keep_default_na=False)
        assert (release["age"] == "").sum() == 29  # blank below the top: still blank, not a number


def test_implausible_values_are_said_not_absorbed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Age 138 was top-coded as >=90 without a word: the build output names it, the run's
    warnings say it (without the value: they are published)."""
    body = [[str(20 + i % 70), ["F", "M"][i % 2]] for i in range(300)] + [["138", "F"], ["95", "M"]]
    data = write_csv(tmp_path / "a.csv", ["age", "sex"], body)
    spec = "{type: intervals, widths: [5, 10, 20], coding: {top: 90}}"
    code, _, stderr = run_cli(
        [
            "hierarchy",
            "build",
            str(data),
            "--column",
            "age",
            "--spec",
            spec,
            "--out",
            str(tmp_path / "h.csv"),
        ],
        capsys,
    )
    assert code == 0
    assert (
        "warning: age: 1 value of the data lies far above the top coding (more than 20 beyond 90)" in stderr
    )
    assert "(values: 138)" in stderr and "95" not in stderr
    config = tmp_path / "c.yaml"
    config.write_text(
        f"input: {{path: a.csv}}\nattributes:\n  age: {{role: quasi, hierarchy: {spec}}}\n"
        "  sex: {role: insensitive}\nprivacy: {k-anonymity: {k: 2}}\n"
    )
    code, _, stderr = anonymize(config, tmp_path / "out", "memory", capsys)
    assert code == 0, stderr
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    found = [w for w in report["warnings"] if w["code"] == "implausible-values"]
    assert len(found) == 1 and found[0]["columns"] == ["age"]
    assert "released as '>=90'" in found[0]["message"] and '"138"' not in json.dumps(report)
    assert "<code>implausible-values</code>" in (tmp_path / "out" / "report.html").read_text()


def test_no_warning_for_values_near_the_bound() -> None:
    h = IntervalBuilder(widths=[5, 10, 20], coding={"top": 90}).build(
        [str(a) for a in range(17, 110)], name="age"
    )
    assert h.warnings == ()
    h = IntervalBuilder(widths=[5], coding={"bottom": 18}).build(["17", "3", "40"], name="age")
    assert [w.values for w in h.warnings] == [("3",)] and "below the bottom coding" in h.warnings[0].message


def test_a_mostly_blank_quasi_identifier_declared_blank_is_missing_on_purpose(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Declared missing values pass the mostly-empty check: with the blank itself declared too."""
    body = [[("" if i % 3 else str(20 + i % 50)), ["F", "M"][i % 2]] for i in range(120)]
    data = write_csv(tmp_path / "a.csv", ["age", "sex"], body)
    code, _, stderr = run_cli(["inspect", str(data), "--qi", "age,sex"], capsys)
    assert code == 2 and "empty in 80 of 120 records" in stderr
    code, _, stderr = run_cli(["inspect", str(data), "--qi", "age,sex", "--missing", ""], capsys)
    assert code == 0, stderr
