"""The in-memory reader: text in, nothing silently lost."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from safeshare.data.engines.memory import MemoryEngine, read_frame
from safeshare.data.source import TableSource
from safeshare.errors import DataError


def test_values_are_text_and_whitespace_is_stripped(tmp_path: Path) -> None:
    path = tmp_path / "d.csv"
    path.write_text("country, age\nNA, 007\n ?,1.50\n")
    frame = read_frame(TableSource(path, missing=("?",)))
    assert frame.to_dict("list") == {"country": ["NA", "?"], "age": ["007", "1.50"]}


@pytest.mark.parametrize("kw", [{}, {"header": False, "names": ("x", "y")}])
def test_lines_with_surplus_fields_are_an_error(tmp_path: Path, kw: dict[str, object]) -> None:
    path = tmp_path / "d.csv"
    path.write_text("a,b\n1,2,3\n4,5,6\n")
    with pytest.raises(DataError) as info:
        read_frame(TableSource(path, **kw))  # type: ignore[arg-type]
    assert str(path) in str(info.value) and "\n" not in str(info.value)


def test_dataframe_input_is_rendered_like_duckdb() -> None:
    frame = pd.DataFrame({"i": [1, 2], "f": [0.5, None], "b": [True, False], "s": ["x", None]})
    engine = MemoryEngine(frame, missing=("?",))
    assert engine.frame.to_dict("list") == {
        "i": ["1", "2"],
        "f": ["0.5", "?"],
        "b": ["true", "false"],
        "s": ["x", "?"],
    }


@pytest.mark.parametrize(
    "series",
    [
        pd.Series([1, -2, None, 2**62], dtype="Int64"),
        pd.Series([0, 255, 7], dtype="uint8"),
        pd.Series([5, 0], dtype="uint64"),
        pd.Series([True, None, False], dtype="boolean"),
        pd.Series([True, False]),
        pd.Series(["a", None, " b ", "é", ""], dtype="string"),
        pd.Series(["x", "y", "x"], dtype="category"),
        pd.Series([1.0, None, 0.1, 1e20], dtype="Float64"),
        pd.Series(["a", 1, None], dtype=object),
        pd.Series([b"ab", None], dtype=object),
        pd.Series(["a", None], dtype=object),
    ],
)
def test_parquet_text_column_is_text_column(series: pd.Series) -> None:
    """The Arrow cast used when reading Parquet renders exactly what text_column renders."""
    from safeshare.data.engines.memory import parquet_text_column
    from safeshare.data.source import text_column

    series.name = "v"
    got, want = parquet_text_column(series), text_column(series)
    assert got.tolist() == want.tolist() and got.dtype == want.dtype and got.name == want.name
    assert got.index.equals(want.index)
