"""Hierarchy files are read with CSV quoting, refuse control characters, and are read lazily
(issue 7 item 11): a run keeps only the rows whose leaf occurs in the data."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from safeshare.config import load_config
from safeshare.data.engines.memory import MemoryEngine
from safeshare.errors import HierarchyError
from safeshare.hierarchy.builders import FileBuilder
from safeshare.hierarchy.hierarchy import Hierarchy
from safeshare.hierarchy.io import read_arx_csv, write_arx_csv
from safeshare.workflows.anonymizer import Anonymizer


def test_a_quoted_carriage_return_is_read_as_written(tmp_path: Path) -> None:
    """csv quoting with newline='': the quoted CR is neither a line end nor turned into LF."""
    path = tmp_path / "h.csv"
    path.write_bytes(b'"a;1";"x""y";*\r\nb;"p\rq";*\r\n')
    rows = list(csv.reader(path.open(newline=""), delimiter=";"))
    assert rows[1] == ["b", "p\rq", "*"]  # what the file holds
    with pytest.raises(HierarchyError) as info:
        read_arx_csv(path)  # ... and a CR is a control character: refused, naming line and column
    assert str(info.value) == f"{path} line 2, column 2: control character U+000D in a label"


def test_awkward_labels_round_trip(tmp_path: Path) -> None:
    h = Hierarchy([("a;1", 'x"y', "*"), ("b,2", "p q", "*")])
    write_arx_csv(h, tmp_path / "h.csv")
    assert read_arx_csv(tmp_path / "h.csv").rows == h.rows


@pytest.mark.parametrize(
    ("char", "code"), [("\x00", "0000"), ("\x1b", "001B"), ("\x7f", "007F"), ("\t", "0009")]
)
def test_control_characters_are_refused_with_file_line_and_column(
    tmp_path: Path, char: str, code: str
) -> None:
    path = tmp_path / "h.csv"
    path.write_text(f"a;x;*\n\nb;x;*\nc;y{char}z;*\n")
    with pytest.raises(HierarchyError) as info:
        read_arx_csv(path)
    assert str(info.value) == f"{path} line 4, column 2: control character U+{code} in a label"
    with pytest.raises(HierarchyError, match=r"line 4, column 2: control character"):
        FileBuilder(path).build(["a"], name="g")  # also in rows the data does not need


def test_a_large_file_materializes_only_the_rows_of_the_data(tmp_path: Path) -> None:
    """200,000 rows in the file, 400 distinct values in the data: the run keeps 400 rows."""
    n_file, n_data = 200_000, 400
    with (tmp_path / "id.csv").open("w") as f:
        for i in range(n_file):
            f.write(f"v{i:06d};g{i // 100:04d};g{i // 10_000:02d};*\n")
    step = n_file // n_data
    data = "id,other\n" + "".join(f"v{i * step:06d},{i % 3}\n" for i in range(n_data))
    (tmp_path / "d.csv").write_text(data)
    (tmp_path / "c.yaml").write_text(
        "input: {path: d.csv}\n"
        "attributes:\n  id: {role: quasi, hierarchy: id.csv}\n  other: {role: insensitive}\n"
        "privacy: {k-anonymity: {k: 2}}\n"
    )
    cfg = load_config(tmp_path / "c.yaml")
    spec = cfg.schema.hierarchy_spec("id")
    assert not isinstance(spec, Hierarchy)  # nothing is read at load time beyond a check
    result = Anonymizer(cfg.schema, cfg.privacy, max_suppression=0.0).fit(MemoryEngine(cfg.source))
    (hierarchy,) = result.table.hierarchies
    assert len(hierarchy.leaves) == n_data and hierarchy.height == 3
    assert hierarchy.generalize("v000500", 1) == "g0005"


def test_lazy_reading_still_checks_coverage_and_consistency(tmp_path: Path) -> None:
    path = tmp_path / "h.csv"
    path.write_text("a;x;P\nb;x;Q\nc;y;Q\n")
    builder = FileBuilder(path)
    assert builder.build(["c"], name="g").rows == (("c", "y", "Q"),)
    with pytest.raises(HierarchyError, match="label 'x' at level 1 has two parents"):
        builder.build(["a", "b"], name="g")
    with pytest.raises(HierarchyError, match=r"g: value 'zz' is not in hierarchy file"):
        builder.build(["a", "zz"], name="g")
    path.write_text("a;x;P\nb;P\n")
    with pytest.raises(HierarchyError, match=r"h.csv line 2: value 'b' has 2 levels, expected 3"):
        builder.build(["a"], name="g")  # every row's depth is checked, also rows not kept


def test_missing_hierarchy_file_fails_at_load(tmp_path: Path) -> None:
    (tmp_path / "d.csv").write_text("x\na\n")
    (tmp_path / "c.yaml").write_text(
        "input: {path: d.csv}\nattributes: {x: {role: quasi, hierarchy: nope.csv}}\n"
        "privacy: {k-anonymity: {k: 1}}\n"
    )
    with pytest.raises(HierarchyError, match=r"cannot read hierarchy .*nope.csv"):
        load_config(tmp_path / "c.yaml")
