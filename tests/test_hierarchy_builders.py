"""Tests of the hierarchy builders (safeshare.hierarchy.builders)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import itertools
import re
from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from safeshare.data.schema import HierarchyBuilder
from safeshare.errors import ConfigError, HierarchyError, InputError
from safeshare.hierarchy.builders import (
    BUILDERS,
    CALENDAR_LEVELS,
    WEEK_LEVELS,
    DateBuilder,
    FileBuilder,
    GroupingBuilder,
    IntervalBuilder,
    MaskingBuilder,
    SuppressionBuilder,
    builder_from_spec,
)
from safeshare.hierarchy.hierarchy import Hierarchy
from safeshare.hierarchy.io import read_arx_csv, write_arx_csv
from safeshare.hierarchy.truth import check_hierarchy, semantics_of

ADULT = Path(__file__).resolve().parents[1] / "examples" / "adult" / "hierarchies"


def rows_of(h: Hierarchy) -> dict[str, tuple[str, ...]]:
    """Value -> its generalizations (level 1 .. top)."""
    return {row[0]: row[1:] for row in h.rows}


def check_structure(h: Hierarchy, values: Sequence[str]) -> None:
    """The contract of every builder: leaves = distinct values, equal depth, a function at every level."""
    assert sorted(h.leaves) == sorted(set(values))
    assert len({len(row) for row in h.rows}) == 1
    for level in range(h.height):
        parent: dict[str, str] = {}
        for row in h.rows:
            assert parent.setdefault(row[level], row[level + 1]) == row[level + 1]
    # The result survives a fresh validation.
    assert Hierarchy(h.rows) == h


# =========================================================================== intervals
class TestIntervals:
    def test_nested_widths_exact(self) -> None:
        h = IntervalBuilder(widths=[5, 10, 20]).build(["37", "39", "21", "-3", "40"], name="age")
        assert h.name == "age"
        assert h.height == 4
        assert rows_of(h) == {
            "-3": ("-5--1", "-10--1", "-20--1", "*"),
            "21": ("20-24", "20-29", "20-39", "*"),
            "37": ("35-39", "30-39", "20-39", "*"),
            "39": ("35-39", "30-39", "20-39", "*"),
            "40": ("40-44", "40-49", "40-59", "*"),
        }

    def test_reproduces_adult_age_hierarchy(self) -> None:
        """Thesis appendix B, age: [0,9] -> 0:9, {0:9 .. 40:49} -> 0:49."""
        built = IntervalBuilder(widths=[10, 50], label="{low}:{high}", top=None).build(
            [str(a) for a in range(100)]
        )
        assert built == read_arx_csv(ADULT / "age.csv")

    def test_non_integer_data_uses_half_open_labels(self) -> None:
        h = IntervalBuilder(widths=[2.5, 5]).build(["37", "39.5", "35"])
        assert rows_of(h) == {
            "35": ("[35, 37.5)", "[35, 40)", "*"),
            "37": ("[35, 37.5)", "[35, 40)", "*"),
            "39.5": ("[37.5, 40)", "[35, 40)", "*"),
        }

    def test_one_non_integer_value_switches_the_default_label(self) -> None:
        h = IntervalBuilder(widths=[10]).build(["37", "38.5"])
        assert h.generalize("37", 1) == "[30, 40)"

    def test_integral_floats_count_as_integers(self) -> None:
        h = IntervalBuilder(widths=[10.0]).build(["39.0", "39"])
        assert rows_of(h) == {"39": ("30-39", "*"), "39.0": ("30-39", "*")}

    def test_custom_label_fields(self) -> None:
        h = IntervalBuilder(widths=[10], label="[{low}, {end})|{high}").build(["37"])
        assert h.generalize("37", 1) == "[30, 40)|39"

    def test_origin_shifts_boundaries(self) -> None:
        h = IntervalBuilder(widths=[5, 10], origin=3).build(["37", "2", "3"])
        assert rows_of(h) == {
            "2": ("-2-2", "-7-2", "*"),
            "3": ("3-7", "3-12", "*"),
            "37": ("33-37", "33-42", "*"),
        }

    def test_top_and_bottom_coding(self) -> None:
        h = IntervalBuilder(widths=[5, 10, 20], bottom_coding=18, top_coding=90).build(
            ["17", "18", "37", "85", "90", "104"]
        )
        assert rows_of(h) == {
            "17": ("<18", "<18", "<18", "*"),
            "18": ("18-19", "18-19", "18-19", "*"),
            "37": ("35-39", "30-39", "20-39", "*"),
            "85": ("85-89", "80-89", "80-89", "*"),
            "90": ("90+", "90+", "90+", "*"),
            "104": ("90+", "90+", "90+", "*"),
        }

    def test_top_null_drops_the_top_level(self) -> None:
        h = IntervalBuilder(widths=[10, 20], top=None).build(["5", "25"])
        assert h.height == 2
        assert h.labels(2) == ("0-19", "20-39")

    def test_custom_top(self) -> None:
        h = IntervalBuilder(widths=[10], top="Age").build(["5"])
        assert h.rows == (("5", "0-9", "Age"),)

    def test_missing_tokens_map_to_themselves(self) -> None:
        h = IntervalBuilder(widths=[5, 10], missing=["?"]).build(["?", "7", "?"])
        assert rows_of(h) == {"7": ("5-9", "0-9", "*"), "?": ("?", "?", "*")}

    def test_empty_string_is_refused_by_default(self) -> None:
        # an empty cell is what a wrong delimiter or a padded row gives (issue 7): never a value by default
        with pytest.raises(HierarchyError, match="empty value"):
            IntervalBuilder(widths=[5]).build(["", "7"])

    def test_empty_string_declared_missing(self) -> None:
        h = IntervalBuilder(widths=[5], missing=[""]).build(["", "7"])
        assert rows_of(h)[""] == ("", "*")

    def test_numeric_missing_token_wins_over_its_number(self) -> None:
        h = IntervalBuilder(widths=[10], missing=["-1"]).build(["-1", "15"])
        assert rows_of(h) == {"-1": ("-1", "*"), "15": ("10-19", "*")}

    def test_leaves_are_exact_input_strings(self) -> None:
        h = IntervalBuilder(widths=[10]).build([" 39", "039", "39", "3.9e1"])
        assert set(h.leaves) == {" 39", "039", "39", "3.9e1"}
        assert set(h.labels(1)) == {"30-39"}

    def test_duplicates_and_order_do_not_matter(self) -> None:
        b = IntervalBuilder(widths=[5, 10])
        one = b.build(["1", "12", "7", "1", "12"])
        two = b.build(["7", "12", "1"])
        assert one.rows == two.rows

    def test_decimal_widths_nest_exactly(self) -> None:
        h = IntervalBuilder(widths=[0.1, 0.3, 0.6]).build(["0.25", "0.35", "0.55"])
        assert rows_of(h) == {
            "0.25": ("[0.2, 0.3)", "[0, 0.3)", "[0, 0.6)", "*"),
            "0.35": ("[0.3, 0.4)", "[0.3, 0.6)", "[0, 0.6)", "*"),
            "0.55": ("[0.5, 0.6)", "[0.3, 0.6)", "[0, 0.6)", "*"),
        }

    def test_numbers_may_come_as_strings_from_yaml(self) -> None:
        b = IntervalBuilder(widths=["5", "10"], origin="1")  # type: ignore[list-item, arg-type]
        assert b.widths == (5, 10)
        assert b.origin == 1

    @pytest.mark.parametrize("bad", ["abc", "nan", "inf", "1/2", "12,5", "--1"])
    def test_non_numeric_value_is_named(self, bad: str) -> None:
        with pytest.raises(HierarchyError, match=re.escape(repr(bad))) as info:
            IntervalBuilder(widths=[5]).build(["1", bad], name="age")
        assert str(info.value).startswith("age: value")
        assert "missing" in str(info.value)

    def test_empty_string_is_an_error_when_missing_is_empty(self) -> None:
        with pytest.raises(HierarchyError, match=r"empty value .* declare it with missing"):
            IntervalBuilder(widths=[5], missing=[]).build(["", "7"])

    @pytest.mark.parametrize(
        ("widths", "message"),
        [
            ([5, 12], r"widths \[5, 12\] do not nest: 12 is not a multiple of 5"),
            ([10, 5], r"widths \[10, 5\] must increase strictly \(5 follows 10\)"),
            ([5, 5], r"must increase strictly"),
            ([0, 5], r"every width must be positive, got 0"),
            ([-5], r"every width must be positive, got -5"),
            ([], r"at least one interval width"),
            (5, r"widths must be a list"),
            ("5, 10", r"widths must be a list"),
            ([True], r"widths must be a number, got True"),
            (["x"], r"widths must be a number, got 'x'"),
            ([float("inf")], r"finite"),
            ([0.1, 0.25], r"0.25 is not a multiple of 0.1"),
        ],
    )
    def test_bad_widths(self, widths: object, message: str) -> None:
        with pytest.raises(ConfigError, match=message):
            IntervalBuilder(widths=widths)  # type: ignore[arg-type]

    def test_bad_coding_bounds(self) -> None:
        with pytest.raises(ConfigError, match=r"bottom_coding \(90\) must be below top_coding \(18\)"):
            IntervalBuilder(widths=[5], bottom_coding=90, top_coding=18)
        with pytest.raises(ConfigError, match="top_coding must be a number"):
            IntervalBuilder(widths=[5], top_coding="old")  # type: ignore[arg-type]

    @pytest.mark.parametrize(
        ("label", "message"),
        [("{low}-{hi}", "not a valid pattern"), ("{low", "not a valid pattern"), ("band", "must contain")],
    )
    def test_bad_label(self, label: str, message: str) -> None:
        with pytest.raises(ConfigError, match=message):
            IntervalBuilder(widths=[5], label=label)

    def test_label_that_merges_intervals(self) -> None:
        with pytest.raises(
            HierarchyError, match="same label '<10' at level 1; make the label differ from the"
        ):
            IntervalBuilder(widths=[10], label="<{low}", bottom_coding=10).build(["5", "15"])
        with pytest.raises(HierarchyError, match="make the label show \\{low\\} in full"):
            IntervalBuilder(widths=[0.5], label="{low:.0f}").build(["0.1", "0.6"])

    def test_label_format_that_cannot_show_a_bound(self) -> None:
        with pytest.raises(HierarchyError, match=r"label '\{low:d\}' cannot show the interval \[2.5, 5\)"):
            IntervalBuilder(widths=[2.5], label="{low:d}").build(["3"])

    def test_missing_token_colliding_with_a_label(self) -> None:
        with pytest.raises(HierarchyError, match="missing-value token '0-9' is also the label"):
            IntervalBuilder(widths=[10], missing=["0-9"]).build(["0-9", "5"])

    def test_no_values(self) -> None:
        with pytest.raises(HierarchyError, match="no values"):
            IntervalBuilder(widths=[5]).build([], name="age")

    def test_is_frozen_and_hashable(self) -> None:
        b = IntervalBuilder(widths=[5, 10])
        with pytest.raises(dataclasses.FrozenInstanceError):
            b.origin = 3  # type: ignore[misc]
        assert b == IntervalBuilder(widths=(5, 10))
        assert hash(b) == hash(IntervalBuilder(widths=(5, 10)))


_BOUNDS = re.compile(r"^(-?[0-9.]+)\|(-?[0-9.]+)$")


@st.composite
def nested_widths(draw: st.DrawFn) -> list[Fraction]:
    base = Fraction(draw(st.integers(1, 20)), draw(st.sampled_from([1, 2, 4, 10])))
    widths = [base]
    for factor in draw(st.lists(st.integers(2, 5), max_size=3)):
        widths.append(widths[-1] * factor)
    return widths


def _num(q: Fraction) -> int | float:
    return q.numerator if q.denominator == 1 else float(q)


@settings(max_examples=60, deadline=None)
@given(
    values=st.lists(
        st.one_of(st.integers(-1000, 1000).map(str), st.decimals(-1000, 1000, places=2).map(str)),
        min_size=1,
        max_size=25,
    ),
    widths=nested_widths(),
    origin=st.integers(-50, 50),
)
def test_intervals_property(values: list[str], widths: list[Fraction], origin: int) -> None:
    builder = IntervalBuilder(widths=[_num(w) for w in widths], origin=origin, label="{low}|{end}")
    h = builder.build(values)
    check_structure(h, values)
    assert h.height == len(widths) + 1
    for value, labels in rows_of(h).items():
        x = Fraction(value)
        bounds = []
        for label in labels[:-1]:
            match = _BOUNDS.match(label)
            assert match, label
            low, end = Fraction(match[1]), Fraction(match[2])
            assert low <= x < end  # the value lies in each of its intervals
            assert (low - origin) % (end - low) == 0  # boundaries are origin + i * width
            bounds.append((low, end))
        assert [end - low for low, end in bounds] == widths
        for (low1, end1), (low2, end2) in itertools.pairwise(bounds):
            assert low2 <= low1 and end1 <= end2  # level j+1 contains level j
        assert labels[-1] == "*"


@settings(max_examples=40, deadline=None)
@given(
    values=st.lists(st.integers(-200, 200).map(str), min_size=1, max_size=25),
    widths=nested_widths(),
    coding=st.tuples(st.integers(-100, 0), st.integers(1, 100)),
)
def test_intervals_with_coding_property(
    values: list[str], widths: list[Fraction], coding: tuple[int, int]
) -> None:
    bottom, top = coding
    h = IntervalBuilder(widths=[_num(w) for w in widths], bottom_coding=bottom, top_coding=top).build(values)
    check_structure(h, values)
    for value, labels in rows_of(h).items():
        x = int(value)
        if x < bottom:
            assert set(labels[:-1]) == {f"<{bottom}"}
        elif x >= top:
            assert set(labels[:-1]) == {f"{top}+"}
        else:
            assert not any(label.endswith("+") or label.startswith("<") for label in labels)


class TestTopAndBottomCoding:
    """``coding: {top: t, bottom: b}``: a level of exact values with coded tails (issue 25)."""

    def test_coded_level_then_intervals(self) -> None:
        h = IntervalBuilder(widths=[5, 10, 20], coding={"top": 90, "bottom": 18}).build(
            ["17", "18", "37", "85", "90", "104"]
        )
        assert h.height == 5
        assert rows_of(h) == {
            "17": ("<18", "<18", "<18", "<18", "*"),
            "18": ("18", "18-19", "18-19", "18-19", "*"),
            "37": ("37", "35-39", "30-39", "20-39", "*"),
            "85": ("85", "85-89", "80-89", "80-89", "*"),
            "90": (">=90", ">=90", ">=90", ">=90", "*"),
            "104": (">=90", ">=90", ">=90", ">=90", "*"),
        }

    def test_coding_alone_is_a_transformation(self) -> None:
        h = IntervalBuilder(widths=[], coding={"top": 90}, missing=["?"]).build(["5", "89", "90", "95", "?"])
        assert rows_of(h) == {
            "5": ("5", "*"),
            "89": ("89", "*"),
            "90": (">=90", "*"),
            "95": (">=90", "*"),
            "?": ("?", "*"),
        }
        bottom = IntervalBuilder(widths=[], coding={"bottom": 0.5}, top=None).build(["0.25", "0.5", "2"])
        assert rows_of(bottom) == {"0.25": ("<0.5",), "0.5": ("0.5",), "2": ("2",)}

    def test_from_a_configuration(self, tmp_path: Path) -> None:
        spec = {"type": "intervals", "widths": [10], "coding": {"top": 90, "bottom": 18}}
        builder = builder_from_spec(spec, tmp_path)
        assert isinstance(builder, IntervalBuilder) and builder.coding == {"bottom": 18, "top": 90}
        assert rows_of(builder.build(["12", "45", "97"]))["97"] == (">=90", ">=90", "*")
        assert hash(builder) == hash(IntervalBuilder(widths=[10], coding={"bottom": 18, "top": 90}))

    @pytest.mark.parametrize(
        ("params", "message"),
        [
            ({"widths": [10], "coding": {"top": 90, "bottom": 90}}, r"coding.bottom \(90\) must be below"),
            ({"widths": [10], "coding": {"above": 90}}, "unknown key 'above'"),
            ({"widths": [10], "coding": {}}, "coding needs top, bottom or both"),
            ({"widths": [10], "coding": [90]}, "coding must be a mapping"),
            ({"widths": [10], "coding": {"top": "old"}}, "coding.top must be a number"),
            ({"widths": [10], "coding": {"top": 90}, "top_coding": 90}, "coding replaces bottom_coding"),
            ({"widths": []}, "widths must list at least one"),
        ],
    )
    def test_bad_coding_is_refused(self, params: dict[str, object], message: str) -> None:
        with pytest.raises(ConfigError, match=message):
            IntervalBuilder(**params)  # type: ignore[arg-type]


@settings(max_examples=40, deadline=None)
@given(
    values=st.lists(st.integers(-200, 200).map(str), min_size=1, max_size=25),
    widths=nested_widths(),
    coding=st.tuples(st.integers(-100, 0), st.integers(1, 100)),
)
def test_coded_level_property(values: list[str], widths: list[Fraction], coding: tuple[int, int]) -> None:
    bottom, top = coding
    h = IntervalBuilder(widths=[_num(w) for w in widths], coding={"top": top, "bottom": bottom}).build(values)
    check_structure(h, values)
    for value, labels in rows_of(h).items():
        x = int(value)
        if x < bottom:
            assert set(labels[:-1]) == {f"<{bottom}"}
        elif x >= top:
            assert set(labels[:-1]) == {f">={top}"}
        else:
            assert labels[0] == value
            assert not any(label.startswith((">=", "<")) for label in labels)


# =========================================================================== grouping
MARITAL_LEVELS = [
    {
        "Has-Spouse": ["Married-civ-spouse", "Married-AF-spouse", "Married-spouse-absent"],
        "Had-Spouse": ["Divorced", "Separated", "Widowed"],
        "No-Spouse": ["Never-married"],
    },
    {"Human": ["Has-Spouse", "Had-Spouse", "No-Spouse"]},
]


class TestGrouping:
    def test_exact_output(self) -> None:
        b = GroupingBuilder(
            levels=[
                {"Married": ["Married-civ-spouse", "Married-AF-spouse"], "Single": ["Never-married"]},
                {"Any": ["Married", "Single"]},
            ]
        )
        h = b.build(["Never-married", "Married-AF-spouse", "Married-civ-spouse"], name="marital")
        assert h.rows == (
            ("Married-civ-spouse", "Married", "Any", "*"),
            ("Married-AF-spouse", "Married", "Any", "*"),
            ("Never-married", "Single", "Any", "*"),
        )

    def test_reproduces_adult_marital_status(self) -> None:
        """Thesis appendix B, UCI Adult marital status."""
        built = GroupingBuilder(levels=MARITAL_LEVELS, top=None).build(
            read_arx_csv(ADULT / "marital-status.csv").leaves
        )
        assert built == read_arx_csv(ADULT / "marital-status.csv")

    def test_groups_may_list_values_absent_from_the_data(self) -> None:
        h = GroupingBuilder(levels=MARITAL_LEVELS).build(["Divorced"])
        assert h.rows == (("Divorced", "Had-Spouse", "Human", "*"),)

    def test_single_member_may_be_a_scalar(self) -> None:
        h = GroupingBuilder(levels=[{"Private": "Private", "Gov": ["State-gov", "Local-gov"]}]).build(
            ["Private", "State-gov"]
        )
        assert rows_of(h) == {"Private": ("Private", "*"), "State-gov": ("Gov", "*")}

    def test_numbers_in_yaml_become_text(self) -> None:
        h = GroupingBuilder(levels=[{1: [10, 11], 2: [20]}]).build(["10", "20"])  # type: ignore[dict-item, list-item]
        assert rows_of(h) == {"10": ("1", "*"), "20": ("2", "*")}

    def test_leaves_in_config_order(self) -> None:
        h = GroupingBuilder(levels=[{"B": ["z", "y"], "A": ["x"]}]).build(["x", "y", "z"])
        assert h.leaves == ("z", "y", "x")

    def test_value_not_covered(self) -> None:
        with pytest.raises(HierarchyError, match=r"marital: value 'Widowed' is in no group of levels\[0\]"):
            GroupingBuilder(levels=[{"Single": ["Never-married"]}]).build(
                ["Never-married", "Widowed"], "marital"
            )
        with pytest.raises(HierarchyError, match=r"\(2 values are in no group\)"):
            GroupingBuilder(levels=[{"Single": ["Never-married"]}]).build(["a", "b"])

    def test_label_under_two_groups(self) -> None:
        with pytest.raises(
            ConfigError, match=r"levels\[0\]: 'Divorced' is listed under two groups, 'A' and 'B'"
        ):
            GroupingBuilder(levels=[{"A": ["Divorced"], "B": ["Widowed", "Divorced"]}])
        with pytest.raises(ConfigError, match=r"'x' is listed twice under group 'A'"):
            GroupingBuilder(levels=[{"A": ["x", "x"]}])

    def test_member_missing_from_level_below(self) -> None:
        with pytest.raises(
            ConfigError,
            match=r"levels\[1\]: group 'Any' lists 'Maried', which is not a group of levels\[0\] "
            r"\(groups there: 'Married', 'Single'\)",
        ):
            GroupingBuilder(levels=[{"Married": ["a"], "Single": ["b"]}, {"Any": ["Maried", "Single"]}])

    def test_label_left_out_of_the_next_level(self) -> None:
        with pytest.raises(ConfigError, match=r"levels\[1\]: group 'Single' of levels\[0\] is in no group"):
            GroupingBuilder(levels=[{"Married": ["a"], "Single": ["b"]}, {"Any": ["Married"]}])

    @pytest.mark.parametrize(
        ("levels", "message"),
        [
            ([], "at least one level"),
            ({"A": ["x"]}, "levels must be a list"),
            ("A", "levels must be a list"),
            ([{}], r"levels\[0\] must be a non-empty mapping"),
            ([["x"]], r"levels\[0\] must be a non-empty mapping"),
            ([{"A": []}], "group 'A' has no members"),
            ([{"A": None}], "group 'A' has no members|must be a list"),
            ([{"A": {"x": 1}}], "must be a list"),
            ([{"A": [["x"]]}], "must be a string"),
        ],
    )
    def test_bad_levels(self, levels: object, message: str) -> None:
        with pytest.raises(ConfigError, match=message):
            GroupingBuilder(levels=levels)  # type: ignore[arg-type]

    def test_from_file(self, tmp_path: Path) -> None:
        (tmp_path / "groups.yaml").write_text(
            "levels:\n"
            "  - {Married: [Married-civ-spouse], Single: [Never-married]}\n"
            "  - {Any: [Married, Single]}\n"
        )
        b = builder_from_spec({"type": "grouping", "file": "groups.yaml", "top": None}, tmp_path)
        assert isinstance(b, GroupingBuilder)
        assert b.build(["Never-married"]).rows == (("Never-married", "Single", "Any"),)

    def test_from_file_with_a_bare_list(self, tmp_path: Path) -> None:
        (tmp_path / "g.yaml").write_text("- {A: [x, y]}\n")
        b = builder_from_spec({"type": "grouping", "file": str(tmp_path / "g.yaml")}, Path("/"))
        assert b.build(["x"]).rows == (("x", "A", "*"),)

    def test_file_errors(self, tmp_path: Path) -> None:
        with pytest.raises(ConfigError, match=r"^attr: cannot read grouping file .*nope.yaml"):
            builder_from_spec({"type": "grouping", "file": "nope.yaml"}, tmp_path, "attr")
        (tmp_path / "bad.yaml").write_text("levels: [{A: [x]}]\nextra: 1\n")
        with pytest.raises(ConfigError, match="single key 'levels'"):
            builder_from_spec({"type": "grouping", "file": "bad.yaml"}, tmp_path)
        (tmp_path / "dup.yaml").write_text("- {A: [x], B: [x]}\n")
        with pytest.raises(ConfigError, match=r"dup.yaml: levels\[0\]: 'x' is listed under two groups"):
            builder_from_spec({"type": "grouping", "file": "dup.yaml"}, tmp_path)
        (tmp_path / "syntax.yaml").write_text("- {A: [x\n")
        with pytest.raises(ConfigError, match=r"syntax.yaml line 2: ") as info:
            builder_from_spec({"type": "grouping", "file": "syntax.yaml"}, tmp_path)
        assert "\n" not in str(info.value)
        with pytest.raises(ConfigError, match="either levels or file"):
            builder_from_spec({"type": "grouping", "file": "dup.yaml", "levels": [{"A": ["x"]}]}, tmp_path)
        with pytest.raises(ConfigError, match="needs the key 'levels'"):
            builder_from_spec({"type": "grouping"}, tmp_path)

    def test_hashable_and_immutable(self) -> None:
        b = GroupingBuilder(levels=MARITAL_LEVELS)
        assert hash(b) == hash(GroupingBuilder(levels=MARITAL_LEVELS))
        assert b == GroupingBuilder(levels=MARITAL_LEVELS)
        with pytest.raises(TypeError):
            b.levels[0]["New"] = ("x",)  # type: ignore[index]


# =========================================================================== masking
class TestMasking:
    def test_zip_codes(self) -> None:
        h = MaskingBuilder().build(["12345", "12399"], name="zip")
        assert rows_of(h) == {
            "12345": ("1234*", "123**", "12***", "1****", "*****", "*"),
            "12399": ("1239*", "123**", "12***", "1****", "*****", "*"),
        }

    def test_max_masked_char_and_top(self) -> None:
        h = MaskingBuilder(char="#", max_masked=2, top="ZIP").build(["12345"])
        assert h.rows == (("12345", "1234#", "123##", "ZIP"),)

    def test_max_masked_beyond_length_is_capped(self) -> None:
        assert MaskingBuilder(max_masked=9).build(["12"]).height == 3

    def test_mask_from_the_left(self) -> None:
        h = MaskingBuilder(align="left", max_masked=3, top=None).build(["12345"])
        assert h.rows == (("12345", "*2345", "**345", "***45"),)

    def test_unequal_lengths_without_pad(self) -> None:
        h = MaskingBuilder().build(["12", "123"])
        assert rows_of(h) == {"12": ("1*", "**", "**", "*"), "123": ("12*", "1**", "***", "*")}

    def test_pad_at_the_masked_end_groups_prefixes(self) -> None:
        h = MaskingBuilder(pad="_").build(["E11", "E119", "E12"])
        assert rows_of(h) == {
            "E11": ("E11*", "E1**", "E***", "****", "*"),
            "E119": ("E11*", "E1**", "E***", "****", "*"),
            "E12": ("E12*", "E1**", "E***", "****", "*"),
        }

    def test_pad_shows_when_not_masked(self) -> None:
        h = MaskingBuilder(pad="_", max_masked=1).build(["E1", "E119"])
        assert rows_of(h)["E1"] == ("E1_*", "*")

    def test_pad_at_the_start_for_lost_leading_zeros(self) -> None:
        h = MaskingBuilder(pad="0", pad_side="start", max_masked=2).build(["2134", "02135"])
        assert rows_of(h) == {"2134": ("0213*", "021**", "*"), "02135": ("0213*", "021**", "*")}

    def test_left_alignment_pads_at_the_start(self) -> None:
        h = MaskingBuilder(align="left", pad="_", top=None).build(["5", "15"])
        assert rows_of(h) == {"5": ("*5", "**"), "15": ("*5", "**")}

    def test_no_redundant_top(self) -> None:
        h = MaskingBuilder().build(["1", "2"])
        assert h.rows == (("1", "*"), ("2", "*"))
        assert MaskingBuilder(top="ANY").build(["1"]).rows == (("1", "*", "ANY"),)

    def test_missing(self) -> None:
        h = MaskingBuilder(missing=["?", ""], pad="0").build(["?", "123", ""])
        assert rows_of(h) == {
            "?": ("?", "?", "?", "*"),
            "123": ("12*", "1**", "***", "*"),
            "": ("", "", "", "*"),
        }

    def test_missing_token_colliding_with_a_mask(self) -> None:
        with pytest.raises(HierarchyError, match="missing-value token '1\\*'"):
            MaskingBuilder(missing=["1*"]).build(["1*", "12"])

    @pytest.mark.parametrize(
        ("params", "message"),
        [
            ({"char": "**"}, "char must be a single character"),
            ({"char": ""}, "char must not be empty"),
            ({"max_masked": 0}, "max_masked must be at least 1"),
            ({"max_masked": True}, "max_masked must be a whole number"),
            ({"max_masked": 2.5}, "max_masked must be a whole number"),
            ({"align": "centre"}, "align must be one of right, left"),
            ({"pad": "00"}, "pad must be a single character"),
            ({"pad_side": "start"}, "pad_side needs pad"),
            ({"pad": "0", "pad_side": "middle"}, "pad_side must be one of start, end"),
            ({"top": ["*"]}, "top must be a string"),
            ({"missing": 5}, "missing must be a list"),
        ],
    )
    def test_bad_parameters(self, params: dict[str, object], message: str) -> None:
        with pytest.raises(ConfigError, match=message):
            MaskingBuilder(**params)  # type: ignore[arg-type]


@settings(max_examples=60, deadline=None)
@given(
    values=st.lists(st.text(alphabet="0123456789", min_size=1, max_size=7), min_size=1, max_size=20),
    pad=st.sampled_from([None, "0", "_"]),
    align=st.sampled_from(["right", "left"]),
    max_masked=st.one_of(st.none(), st.integers(1, 8)),
)
def test_masking_property(values: list[str], pad: str | None, align: str, max_masked: int | None) -> None:
    h = MaskingBuilder(pad=pad, align=align, max_masked=max_masked).build(values)
    check_structure(h, values)
    longest = max(len(v) for v in values)
    depth = longest if max_masked is None else min(max_masked, longest)
    assert h.height in (depth, depth + 1)
    assert set(h.labels(h.height)) == {"*"}
    for value, labels in rows_of(h).items():
        text = (
            value
            if pad is None
            else (value + pad * longest)[:longest]
            if align == "right"
            else (pad * longest + value)[-longest:]
        )
        for level, label in enumerate(labels[:depth], start=1):
            masked = min(level, len(text))
            assert len(label) == len(text)
            assert label.count("*") == masked
            if align == "right":
                assert label == text[: len(text) - masked] + "*" * masked
            else:
                assert label == "*" * masked + text[masked:]


@settings(max_examples=60, deadline=None)
@given(values=st.lists(st.text(alphabet="0123456789", min_size=5, max_size=5), min_size=1, max_size=20))
def test_masking_equal_length_codes_property(values: list[str]) -> None:
    h = MaskingBuilder().build(values)
    check_structure(h, values)
    assert h.height == 6
    for value, labels in rows_of(h).items():
        for level, label in enumerate(labels[:-1], start=1):
            assert label == value[: 5 - level] + "*" * level


# =========================================================================== dates
class TestDates:
    def test_default_levels_are_the_calendar(self) -> None:
        h = DateBuilder().build(["2021-01-20", "2021-01-01", "2021-03-31", "2022-01-01"], name="admission")
        assert rows_of(h) == {
            "2021-01-20": ("2021-01", "2021-Q1", "2021", "*"),
            "2021-01-01": ("2021-01", "2021-Q1", "2021", "*"),
            "2021-03-31": ("2021-03", "2021-Q1", "2021", "*"),
            # issue 30: the old default (weeks, then months) labelled it 2021-12 and 2021
            "2022-01-01": ("2022-01", "2022-Q1", "2022", "*"),
        }

    def test_iso_weeks_nest_in_iso_years(self) -> None:
        h = DateBuilder(levels=["week", "week_year"]).build(
            ["2021-01-20", "2021-01-01", "2022-01-01", "2020-12-31"]
        )
        assert rows_of(h) == {
            "2021-01-20": ("2021-W03", "2021-W01..2021-W52", "*"),
            # A Friday in ISO week 2020-W53: ISO year 2020, labelled by its weeks, never "2020".
            "2021-01-01": ("2020-W53", "2020-W01..2020-W53", "*"),
            "2020-12-31": ("2020-W53", "2020-W01..2020-W53", "*"),
            "2022-01-01": ("2021-W52", "2021-W01..2021-W52", "*"),
        }

    def test_sunday_weeks_follow_mmwr_years(self) -> None:
        h = DateBuilder(levels=["week", "week_year"], week_start="sunday").build(
            ["2019-12-29", "2021-01-02", "2021-01-03", "2021-01-09"]
        )
        assert rows_of(h) == {
            # MMWR week 1 of 2020 began on Sunday 2019-12-29; MMWR 2020 ended on 2021-01-02.
            "2019-12-29": ("2019-12-29..2020-01-04", "2019-12-29..2021-01-02", "*"),
            # MMWR week 53 of 2020 ended on Saturday 2021-01-02.
            "2021-01-02": ("2020-12-27..2021-01-02", "2019-12-29..2021-01-02", "*"),
            "2021-01-03": ("2021-01-03..2021-01-09", "2021-01-03..2022-01-01", "*"),
            "2021-01-09": ("2021-01-03..2021-01-09", "2021-01-03..2022-01-01", "*"),
        }

    @pytest.mark.parametrize(
        "levels",
        [
            ["week", "month", "quarter", "year"],  # the old default
            ["week", "month"],
            ["day", "week", "year"],
            ["week_year", "decade"],
            ["week", "quarter"],
        ],
    )
    def test_weeks_and_calendar_levels_are_refused(self, levels: list[str]) -> None:
        """issue 30: a week is in no one month or calendar year, so no hierarchy holds both."""
        with pytest.raises(ConfigError, match="weeks do not nest in months, quarters or years"):
            DateBuilder(levels=levels)
        with pytest.raises(
            ConfigError, match=r"choose calendar levels .* or week levels \[day, week, week_year\]"
        ):
            builder_from_spec({"type": "dates", "levels": levels}, Path("."), "attributes.d.hierarchy")

    def test_without_weeks_the_calendar_is_used(self) -> None:
        h = DateBuilder(levels=["month", "quarter", "year", "decade"]).build(["2021-01-01", "2019-12-31"])
        assert rows_of(h) == {
            "2021-01-01": ("2021-01", "2021-Q1", "2021", "2020-2029", "*"),
            "2019-12-31": ("2019-12", "2019-Q4", "2019", "2010-2019", "*"),
        }

    def test_day_level_and_custom_format(self) -> None:
        h = DateBuilder(levels=["day", "month"], format="%d/%m/%Y %H:%M", top=None).build(
            ["05/01/2021 13:45", "05/01/2021 08:00", "31/12/2020 23:59"]
        )
        assert rows_of(h) == {
            "05/01/2021 13:45": ("2021-01-05", "2021-01"),
            "05/01/2021 08:00": ("2021-01-05", "2021-01"),
            "31/12/2020 23:59": ("2020-12-31", "2020-12"),
        }

    def test_levels_are_case_insensitive(self) -> None:
        assert DateBuilder(levels=["Month", " YEAR"]).levels == ("month", "year")

    def test_missing(self) -> None:
        h = DateBuilder(levels=["year"], missing=["unknown"]).build(["unknown", "2020-02-29"], name="d")
        assert rows_of(h) == {"unknown": ("unknown", "*"), "2020-02-29": ("2020", "*")}
        # The blank cell is a missing value only when declared (issue 30: one switch, safeshare.missing).
        for builder in (DateBuilder(levels=["year"], missing=["unknown"]), DateBuilder(levels=["year"])):
            with pytest.raises(HierarchyError, match=r"d: the empty value .* input.missing: \[''\]"):
                builder.build(["", "2020-02-29"], name="d")
        h = DateBuilder(levels=["year"], missing=[""]).build(["", "2020-02-29"])
        assert rows_of(h)[""] == ("", "*")

    def test_chronological_leaf_order(self) -> None:
        h = DateBuilder(levels=["year"], format="%d.%m.%Y").build(["02.01.2020", "01.02.2020", "01.01.2020"])
        assert h.leaves == ("01.01.2020", "02.01.2020", "01.02.2020")

    @pytest.mark.parametrize("bad", ["2021-13-01", "2021-02-30", "20210101", "yesterday"])
    def test_unparseable_date(self, bad: str) -> None:
        with pytest.raises(
            HierarchyError, match=re.escape(f"dob: value {bad!r} is not a date in the format")
        ):
            DateBuilder().build(["2021-01-01", bad], name="dob")
        with pytest.raises(HierarchyError, match=re.escape("'%Y-%m-%d' (e.g. '2021-01-31')")):
            DateBuilder().build([bad])

    def test_date_at_the_edge_of_the_calendar(self) -> None:
        with pytest.raises(HierarchyError, match="too close"):
            DateBuilder(levels=["week"], week_start="sunday").build(["0001-01-01"])
        with pytest.raises(HierarchyError, match="too close"):
            DateBuilder(levels=["week_year"], week_start="sunday").build(["9999-12-31"])

    @pytest.mark.parametrize(
        ("params", "message"),
        [
            (
                {"levels": ["month", "fortnight"]},
                "unknown date level 'fortnight'; expected some of day, week",
            ),
            ({"levels": ["year", "month"]}, r"levels \['year', 'month'\] must go from fine to coarse"),
            ({"levels": ["month", "month"]}, "without repeats"),
            ({"levels": []}, "at least one of"),
            ({"levels": "month"}, "levels must be a list"),
            ({"format": "YYYY-MM-DD"}, "is not a strptime format"),
            ({"format": ""}, "format must not be empty"),
            ({"week_start": "saturday"}, "week_start must be one of monday, sunday"),
        ],
    )
    def test_bad_parameters(self, params: dict[str, object], message: str) -> None:
        with pytest.raises(ConfigError, match=message):
            DateBuilder(**params)  # type: ignore[arg-type]


@st.composite
def date_levels(draw: st.DrawFn) -> list[str]:
    """A sub-sequence of one chain: the calendar or the weeks (issue 30: never a mix)."""
    chain = draw(st.sampled_from([CALENDAR_LEVELS, WEEK_LEVELS]))
    chosen = draw(st.sets(st.sampled_from(chain), min_size=1))
    return [level for level in chain if level in chosen]


@settings(max_examples=60, deadline=None)
@given(
    dates=st.lists(st.dates(dt.date(1900, 1, 1), dt.date(2100, 12, 31)), min_size=1, max_size=40),
    levels=date_levels(),
    week_start=st.sampled_from(["monday", "sunday"]),
)
def test_dates_property(dates: list[dt.date], levels: list[str], week_start: str) -> None:
    values = [d.isoformat() for d in dates]
    h = DateBuilder(levels=levels, week_start=week_start).build(values)
    check_structure(h, values)
    assert h.height == len(levels) + 1
    for value, labels in rows_of(h).items():
        day = dt.date.fromisoformat(value)
        by_level = dict(zip(levels, labels, strict=False))
        first = day - dt.timedelta(days=(day.weekday() + 1) % 7)  # its Sunday
        if "week" in levels:
            if week_start == "monday":
                year, week, _ = day.isocalendar()
                assert by_level["week"] == f"{year:04d}-W{week:02d}"
            else:
                assert by_level["week"] == f"{first}..{first + dt.timedelta(days=6)}"
        if "week_year" in levels:
            if week_start == "monday":
                year = day.isocalendar()[0]
                assert by_level["week_year"].startswith(f"{year:04d}-W01..{year:04d}-W5")
            else:
                start, end = (dt.date.fromisoformat(t) for t in by_level["week_year"].split(".."))
                assert start <= day <= end and start.weekday() == 6 and end.weekday() == 5
                # the MMWR year of the date (its week's Wednesday's) is the one the range spans
                assert (first + dt.timedelta(days=3)).year == (start + dt.timedelta(days=3)).year
        # The calendar levels are the date's own month, quarter, year and decade.
        if "month" in levels:
            assert by_level["month"] == value[:7]
        if "quarter" in levels:
            assert by_level["quarter"] == f"{value[:4]}-Q{(day.month - 1) // 3 + 1}"
        if "year" in levels:
            assert by_level["year"] == value[:4]
        if "decade" in levels:
            assert by_level["decade"] == f"{day.year // 10 * 10:04d}-{day.year // 10 * 10 + 9:04d}"
        if "day" in levels:
            assert by_level["day"] == value


@settings(max_examples=30, deadline=None)
@given(
    start=st.dates(dt.date(1990, 1, 1), dt.date(2050, 1, 1)), week_start=st.sampled_from(["monday", "sunday"])
)
def test_whole_weeks_map_consistently(start: dt.date, week_start: str) -> None:
    """Every day of a run of 400 days; each week has one week-year, and it holds all its days."""
    values = [(start + dt.timedelta(days=i)).isoformat() for i in range(400)]
    h = DateBuilder(levels=["week", "week_year"], week_start=week_start).build(values)
    check_structure(h, values)
    weeks: dict[str, set[tuple[str, ...]]] = {}
    for labels in rows_of(h).values():
        weeks.setdefault(labels[0], set()).add(labels[1:])
    assert all(len(up) == 1 for up in weeks.values())


def test_every_day_of_2022_and_2023_gets_its_own_month_and_year() -> None:
    """issue 30, item 1: the default dates builder nested months under ISO weeks, so 44 of the 730
    days of 2022-2023 got the wrong month and 3 the wrong year (2022-01-01 -> 2021-12, 2021)."""
    days = [dt.date(2022, 1, 1) + dt.timedelta(days=i) for i in range(730)]
    h = DateBuilder().build([d.isoformat() for d in days], name="admitted")
    rows = rows_of(h)
    for day in days:
        month, quarter, year, _ = rows[day.isoformat()]
        assert (month, quarter, year) == (
            f"{day.year}-{day.month:02d}",
            f"{day.year}-Q{(day.month - 1) // 3 + 1}",
            str(day.year),
        ), day
    # and the truth check, which reads the labels apart from the builder, finds nothing false
    assert check_hierarchy(h, semantics_of(DateBuilder())).passed


# =========================================================================== suppression and file
class TestSuppressionAndFile:
    def test_suppression(self) -> None:
        h = SuppressionBuilder().build(["Male", "Female", "Male"], name="sex")
        assert h.rows == (("Female", "*"), ("Male", "*"))
        assert SuppressionBuilder(top="Sex").build(["Male"]).rows == (("Male", "Sex"),)

    def test_suppression_errors(self) -> None:
        with pytest.raises(HierarchyError, match="no values"):
            SuppressionBuilder().build([])
        with pytest.raises(ConfigError, match="top must not be empty"):
            SuppressionBuilder(top="")

    def test_file_spec_with_delimiter(self, tmp_path: Path) -> None:
        (tmp_path / "h.csv").write_text("a,x,*\nb,x,*\nc,y,*\n")
        b = builder_from_spec({"type": "file", "path": "h.csv", "delimiter": ","}, tmp_path)
        assert isinstance(b, FileBuilder)
        assert b.path == tmp_path / "h.csv"
        assert b.build(["a", "c", "a"], name="col").rows == (("a", "x", "*"), ("c", "y", "*"))
        assert len(b.load().leaves) == 3

    def test_file_spec_adult(self) -> None:
        b = builder_from_spec({"type": "file", "path": "hierarchies/age.csv"}, ADULT.parent)
        assert b.build(["3", "55"]).rows == (("3", "0:9", "0:49"), ("55", "50:59", "50:99"))

    def test_file_value_not_covered(self, tmp_path: Path) -> None:
        (tmp_path / "h.csv").write_text("a;*\n")
        b = builder_from_spec({"type": "file", "path": "h.csv"}, tmp_path)
        with pytest.raises(
            HierarchyError, match=r"col: value 'b' is not in hierarchy file .*h.csv \(2 values"
        ):
            b.build(["a", "b", "c"], name="col")

    def test_file_errors(self, tmp_path: Path) -> None:
        with pytest.raises(ConfigError, match=r"^q: hierarchy file .*nope.csv does not exist"):
            builder_from_spec({"type": "file", "path": "nope.csv"}, tmp_path, "q")
        with pytest.raises(ConfigError, match="delimiter must be a single character"):
            builder_from_spec({"type": "file", "path": "x.csv", "delimiter": ";;"}, tmp_path)
        with pytest.raises(ConfigError, match="unknown encoding 'klingon'"):
            FileBuilder(path="x.csv", encoding="klingon")
        with pytest.raises(ConfigError, match="needs the key 'path'"):
            builder_from_spec({"type": "file"}, tmp_path)


# =========================================================================== spec and registry
class TestSpec:
    def test_registry_has_every_type(self) -> None:
        assert set(BUILDERS) == {"intervals", "grouping", "masking", "dates", "suppression", "file"}
        for name, cls in BUILDERS.items():
            assert cls.type_name == name

    @pytest.mark.parametrize(
        ("spec", "cls", "value"),
        [
            ({"type": "intervals", "widths": [5, 10, 20], "top": None}, IntervalBuilder, "7"),
            ({"type": " Intervals ", "widths": [5]}, IntervalBuilder, "7"),
            ({"type": "grouping", "levels": [{"A": ["x"]}]}, GroupingBuilder, "x"),
            ({"type": "masking", "max_masked": 2}, MaskingBuilder, "123"),
            (
                {"type": "dates", "levels": ["month", "year"], "week_start": "sunday"},
                DateBuilder,
                "2021-05-06",
            ),
            ({"type": "suppression"}, SuppressionBuilder, "x"),
        ],
    )
    def test_builds_each_type(self, spec: dict[str, object], cls: type, value: str) -> None:
        builder = builder_from_spec(spec, Path("."), "attributes.x.hierarchy")
        assert isinstance(builder, cls)
        check_structure(builder.build([value]), [value])

    def test_intervals_spec_normalizes_yaml(self) -> None:
        b = builder_from_spec({"type": "intervals", "widths": [5, 10, 20], "top": None}, Path("."))
        assert b == IntervalBuilder(widths=(5, 10, 20), top=None)

    @pytest.mark.parametrize(
        ("spec", "message"),
        [
            (
                {"type": "histogram"},
                r"^where: unknown hierarchy type 'histogram'; expected one of intervals, ",
            ),
            ({"widths": [5]}, r"^where: missing key 'type'"),
            (["intervals"], r"^where: expected a mapping with a 'type' key"),
            (
                {"type": "intervals", "width": [5]},
                r"^where.width: unknown key; did you mean 'widths'\?$",
            ),
            ({"type": "intervals"}, r"^where: hierarchy type 'intervals' needs the key 'widths'"),
            ({"type": "intervals", "widths": [5, 12]}, r"^where: widths \[5, 12\] do not nest"),
            ({"type": "masking", "type_name": "x"}, r"^where.type_name: unknown key; did you mean 'type'\?$"),
            ({"type": "suppression", "top": None}, r"^where: top must be a string"),
            ({"type": "dates", "levels": ["eon"]}, r"^where: unknown date level 'eon'"),
        ],
    )
    def test_spec_errors(self, spec: object, message: str) -> None:
        with pytest.raises(ConfigError, match=message) as info:
            builder_from_spec(spec, Path("."), "where")  # type: ignore[arg-type]
        assert "\n" not in str(info.value)
        assert isinstance(info.value, InputError)

    def test_builder_hierarchy_round_trips_through_arx_csv(self, tmp_path: Path) -> None:
        h = DateBuilder(week_start="sunday").build(["2021-01-02", "2021-01-03"])
        write_arx_csv(h, tmp_path / "d.csv")
        assert read_arx_csv(tmp_path / "d.csv") == h


ALL_BUILDERS: list[tuple[object, list[str]]] = [
    (IntervalBuilder(widths=[5, 10], missing=["?"]), ["12", "3", "?", "12", "47.5", "-8"]),
    (GroupingBuilder(levels=MARITAL_LEVELS), ["Divorced", "Widowed", "Divorced", "Never-married"]),
    (MaskingBuilder(), ["12345", "123", "12345", "99"]),
    (DateBuilder(), ["2021-01-01", "2020-12-31", "2021-01-01", "2024-02-29"]),
    (SuppressionBuilder(), ["a", "b", "a"]),
]


@pytest.mark.parametrize(("builder", "values"), ALL_BUILDERS, ids=lambda x: type(x).__name__)
def test_every_builder_contract(builder: HierarchyBuilder, values: list[str]) -> None:
    h = builder.build(values, name="col")
    check_structure(h, values)
    assert h.name == "col"
    again = builder.build(list(reversed(values)), name="col")
    assert again.rows == h.rows  # deterministic, whatever the input order
    assert hash(builder) == hash(builder)
