"""Tests of the Hierarchy class and the ARX CSV reader/writer."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from safeshare.errors import HierarchyError, InputError
from safeshare.hierarchy.hierarchy import Hierarchy
from safeshare.hierarchy.io import format_arx_csv, parse_arx_csv, read_arx_csv, write_arx_csv

ADULT = Path(__file__).resolve().parents[1] / "examples" / "adult" / "hierarchies"

# Interleaved on purpose: the leaves of one subtree are not adjacent in the input.
AGE_ROWS = [
    ("25", "20-29", "<50", "*"),
    ("52", "50-59", ">=50", "*"),
    ("21", "20-29", "<50", "*"),
    ("47", "40-49", "<50", "*"),
    ("58", "50-59", ">=50", "*"),
]


@pytest.fixture
def age() -> Hierarchy:
    return Hierarchy(AGE_ROWS, name="age")


# =========================================================================== shape and lookup
class TestShape:
    def test_height_leaves_and_rows(self, age: Hierarchy) -> None:
        assert age.height == 3
        assert age.name == "age"
        assert sorted(age.leaves) == ["21", "25", "47", "52", "58"]
        assert set(age.rows) == set(AGE_ROWS)
        assert repr(age) == "Hierarchy('age', values=5, height=3)"

    def test_leaves_are_reordered_by_subtree(self, age: Hierarchy) -> None:
        # First-appearance order of the subtrees, stable within a subtree.
        assert age.leaves == ("25", "21", "47", "52", "58")
        for level in range(age.height + 1):
            labels = [row[level] for row in age.rows]
            # Every label's leaves form one contiguous block.
            for label in set(labels):
                idx = [i for i, x in enumerate(labels) if x == label]
                assert idx == list(range(idx[0], idx[-1] + 1))

    def test_labels_size_and_codes(self, age: Hierarchy) -> None:
        assert age.labels(0) == age.leaves
        assert age.labels(1) == ("20-29", "40-49", "50-59")
        assert age.labels(2) == ("<50", ">=50")
        assert age.labels(3) == ("*",)
        assert [age.size(level) for level in range(4)] == [5, 3, 2, 1]
        assert age.leaf_codes(1).tolist() == [0, 0, 1, 2, 2]
        assert age.leaf_codes(2).tolist() == [0, 0, 0, 1, 1]
        assert age.leaf_codes(3).dtype == np.int32
        for level in range(age.height + 1):
            codes = age.leaf_codes(level)
            assert all(np.diff(codes) >= 0)  # monotone across leaves
            assert [age.labels(level)[c] for c in codes] == [row[level] for row in age.rows]

    def test_mapping_and_generalize(self, age: Hierarchy) -> None:
        assert age.mapping(1) == {"25": "20-29", "21": "20-29", "47": "40-49", "52": "50-59", "58": "50-59"}
        assert age.mapping(0) == {v: v for v in age.leaves}
        assert age.generalize("47", 2) == "<50"
        assert age.generalize("47", 0) == "47"
        assert age.leaf_index["52"] == 3

    def test_generalize_unknown_value(self, age: Hierarchy) -> None:
        with pytest.raises(HierarchyError, match="age: value '99' is not in the hierarchy"):
            age.generalize("99", 1)

    @pytest.mark.parametrize("level", [-1, 4])
    def test_level_out_of_range(self, age: Hierarchy, level: int) -> None:
        with pytest.raises(HierarchyError, match=rf"age: level {level} outside 0\.\.3"):
            age.labels(level)
        with pytest.raises(HierarchyError, match="outside"):
            age.generalize("25", level)

    def test_height_zero(self) -> None:
        h = Hierarchy([("a",), ("b",)])
        assert h.height == 0
        assert h.size(0) == 2

    def test_values_become_strings(self) -> None:
        h = Hierarchy([(1, 10), (2, 10)])  # type: ignore[list-item]
        assert h.rows == (("1", "10"), ("2", "10"))

    def test_equality_ignores_row_order_and_name(self, age: Hierarchy) -> None:
        other = Hierarchy(list(reversed(AGE_ROWS)), name="other")
        assert other == age
        assert hash(other) == hash(age)
        assert age != Hierarchy(AGE_ROWS[:4])
        assert age != "age"


# =========================================================================== validation
class TestValidation:
    def test_empty(self) -> None:
        with pytest.raises(HierarchyError, match="h: hierarchy is empty"):
            Hierarchy([], name="h")

    def test_empty_rows(self) -> None:
        with pytest.raises(HierarchyError, match="h: hierarchy rows must not be empty"):
            Hierarchy([(), ()], name="h")

    def test_unequal_depth_names_row_and_value(self) -> None:
        rows = [("a", "x", "*"), ("b", "x", "*"), ("c", "*")]
        with pytest.raises(HierarchyError, match=r"h: row 3 \(value 'c'\) has 2 levels, expected 3"):
            Hierarchy(rows, name="h")

    def test_duplicate_value(self) -> None:
        rows = [("a", "x"), ("b", "x"), ("a", "y")]
        with pytest.raises(HierarchyError, match=r"h: value 'a' appears twice \(rows 1 and 3\)"):
            Hierarchy(rows, name="h")

    def test_label_with_two_parents(self) -> None:
        rows = [("a", "x", "P"), ("b", "x", "Q")]
        with pytest.raises(
            HierarchyError, match=r"h: label 'x' at level 1 has two parents at level 2: 'P' and 'Q'"
        ):
            Hierarchy(rows, name="h")

    def test_same_label_at_different_levels_is_fine(self) -> None:
        # Parents are checked level by level: "x" is a value and a level-1 label.
        Hierarchy([("x", "x", "*"), ("y", "x", "*")])

    def test_errors_are_input_errors(self) -> None:
        with pytest.raises(InputError):
            Hierarchy([("a", "x"), ("a", "x")])


# =========================================================================== subsets
class TestSubsets:
    def test_missing_values(self, age: Hierarchy) -> None:
        assert age.missing_values(["25", "99", "25", "3", "47"]) == ["3", "99"]
        assert age.missing_values([]) == []

    def test_restricted_to(self, age: Hierarchy) -> None:
        sub = age.restricted_to(["58", "21", "58"])
        assert sub.rows == (("21", "20-29", "<50", "*"), ("58", "50-59", ">=50", "*"))
        assert sub.height == age.height
        assert sub.name == "age"
        assert sub.labels(1) == ("20-29", "50-59")

    def test_restricted_to_unknown_value(self, age: Hierarchy) -> None:
        with pytest.raises(HierarchyError, match="age: value '99' is not in the hierarchy"):
            age.restricted_to(["21", "99"])

    def test_restricted_to_nothing(self, age: Hierarchy) -> None:
        with pytest.raises(HierarchyError, match="empty"):
            age.restricted_to([])


# =========================================================================== ARX CSV
class TestArxCsv:
    def test_round_trip(self, tmp_path: Path, age: Hierarchy) -> None:
        path = tmp_path / "sub" / "age.csv"
        write_arx_csv(age, path)
        first = read_arx_csv(path)
        assert first == age
        assert first.rows == age.rows
        assert first.name == str(path)
        write_arx_csv(first, path)
        assert read_arx_csv(path).rows == age.rows
        assert (
            path.read_text()
            == "25;20-29;<50;*\n21;20-29;<50;*\n47;40-49;<50;*\n52;50-59;>=50;*\n58;50-59;>=50;*\n"
        )

    def test_round_trip_with_awkward_labels(self, tmp_path: Path) -> None:
        h = Hierarchy([("a;b", 'say "hi"', "*"), ("Machine-op,inspct", "x", "*"), ("?", "?", "*")])
        write_arx_csv(h, tmp_path / "h.csv")
        assert read_arx_csv(tmp_path / "h.csv") == h
        write_arx_csv(h, tmp_path / "c.csv", delimiter=",")
        assert read_arx_csv(tmp_path / "c.csv", delimiter=",") == h

    def test_write_replaces_existing_file(self, tmp_path: Path, age: Hierarchy) -> None:
        path = tmp_path / "h.csv"
        path.write_text("old;*\n")
        write_arx_csv(age, path)
        assert read_arx_csv(path) == age
        assert [p.name for p in tmp_path.iterdir()] == ["h.csv"]  # no temporary file left

    def test_format(self) -> None:
        assert format_arx_csv(Hierarchy([("a", "*"), ("b", "*")])) == "a;*\nb;*\n"
        assert format_arx_csv(Hierarchy([("a", "*")]), delimiter="\t") == "a\t*\n"

    def test_parse_strips_cells_and_skips_blank_lines(self) -> None:
        h = parse_arx_csv("\n a ; x ;*\r\n\n;;\nb;x;*\n\n")
        assert h.rows == (("a", "x", "*"), ("b", "x", "*"))

    def test_parse_ignores_byte_order_mark(self, tmp_path: Path) -> None:
        path = tmp_path / "bom.csv"
        path.write_bytes("\ufeffFemale;*\nMale;*\n".encode())
        assert read_arx_csv(path).leaves == ("Female", "Male")

    def test_parse_errors(self) -> None:
        with pytest.raises(HierarchyError, match="h: hierarchy file has no rows"):
            parse_arx_csv("\n  \n", name="h")
        with pytest.raises(HierarchyError, match=r"h line 2: value 'b' has 2 levels, expected 3"):
            parse_arx_csv("a;x;*\nb;*\n", name="h")
        with pytest.raises(HierarchyError, match="h: the delimiter must be a single character"):
            parse_arx_csv("a;*\n", name="h", delimiter=";;")

    def test_parse_error_from_csv_module(self) -> None:
        import csv

        limit = csv.field_size_limit()
        with pytest.raises(HierarchyError, match="h line 1: not a valid CSV hierarchy"):
            parse_arx_csv("a;" + "x" * (limit + 1) + "\n", name="h")

    def test_read_missing_file(self, tmp_path: Path) -> None:
        with pytest.raises(HierarchyError, match=r"cannot read hierarchy .*nope.csv"):
            read_arx_csv(tmp_path / "nope.csv")

    def test_read_undecodable_file(self, tmp_path: Path) -> None:
        path = tmp_path / "latin1.csv"
        path.write_bytes("Côte;*\n".encode("latin-1"))
        with pytest.raises(HierarchyError, match="cannot read hierarchy"):
            read_arx_csv(path)
        assert read_arx_csv(path, encoding="latin-1").leaves == ("Côte",)

    def test_inconsistent_file_names_the_file(self, tmp_path: Path) -> None:
        path = tmp_path / "bad.csv"
        path.write_text("a;x;P\nb;x;Q\n")
        with pytest.raises(HierarchyError, match=r"bad.csv: label 'x' at level 1 has two parents"):
            read_arx_csv(path)


# =========================================================================== UCI Adult
ADULT_HEIGHTS = {
    "age": 2,
    "education": 2,
    "marital-status": 2,
    "native-country": 3,
    "occupation": 2,
    "race": 1,
    "relationship": 1,
    "sex": 1,
    "workclass": 2,
}


def test_adult_hierarchy_files_are_all_tested() -> None:
    assert sorted(p.stem for p in ADULT.glob("*.csv")) == sorted(ADULT_HEIGHTS)


@pytest.mark.parametrize(("name", "height"), sorted(ADULT_HEIGHTS.items()))
def test_adult_hierarchies(name: str, height: int) -> None:
    h = read_arx_csv(ADULT / f"{name}.csv")
    assert h.height == height
    lines = [line for line in (ADULT / f"{name}.csv").read_text().splitlines() if line.strip()]
    assert len(h.leaves) == len(lines)
    assert parse_arx_csv(format_arx_csv(h)) == h


def test_adult_details() -> None:
    age = read_arx_csv(ADULT / "age.csv")
    assert age.leaves == tuple(str(a) for a in range(100))
    assert age.generalize("37", 1) == "30:39"
    assert age.labels(2) == ("0:49", "50:99")
    country = read_arx_csv(ADULT / "native-country.csv")
    assert country.generalize("Peru", 1) == "South-America"
    assert country.generalize("Peru", 3) == "World"
    workclass = read_arx_csv(ADULT / "workclass.csv")
    assert workclass.generalize("?", 1) == "?"
    assert read_arx_csv(ADULT / "sex.csv").labels(1) == ("*",)
