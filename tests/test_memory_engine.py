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
