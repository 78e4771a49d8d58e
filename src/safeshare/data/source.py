"""Where the input data comes from and how to read it.

Values are read as text, exactly as written: nothing is converted to numbers
or to NaN behind the user's back ("NA" may be Namibia). Declared missing-value
tokens (e.g. ``?``) are normalized to the first token so that a hierarchy can
cover them with one row. Surrounding whitespace is stripped (UCI Adult
separates values with ``", "``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import pandas as pd

from safeshare.errors import DataError

Format = Literal["csv", "parquet"]


def infer_format(path: Path) -> Format:
    """``parquet`` for ``*.parquet``/``*.pq``, otherwise ``csv`` (also for ``.gz`` CSVs)."""
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and suffixes[-1] in (".parquet", ".pq"):
        return "parquet"
    return "csv"


@dataclass(frozen=True)
class TableSource:
    """A CSV or Parquet file and the options to read it.

    Parameters
    ----------
    path: the file.
    format: ``csv`` or ``parquet``; inferred from the extension when ``None``.
    delimiter: CSV field separator.
    header: whether the first (non-skipped) CSV line holds column names.
    names: column names; required when ``header`` is false, otherwise they
        replace the header's names.
    missing: tokens meaning "missing" (e.g. ``["?"]``); normalized to the first.
    skip_rows: lines to skip at the top of a CSV (e.g. 1 for ``adult.test``).
    encoding: text encoding of a CSV.
    """

    path: Path
    format: Format | None = None
    delimiter: str = ","
    header: bool = True
    names: tuple[str, ...] | None = None
    missing: tuple[str, ...] = ()
    skip_rows: int = 0
    encoding: str = "utf-8"

    def __post_init__(self) -> None:
        object.__setattr__(self, "path", Path(self.path))
        if self.format is None:
            object.__setattr__(self, "format", infer_format(self.path))
        if self.format not in ("csv", "parquet"):
            raise DataError(f"{self.path}: unsupported format {self.format!r} (csv or parquet)")
        if not self.header and not self.names and self.format == "csv":
            raise DataError(f"{self.path}: a CSV without header needs 'names'")
        if len(self.delimiter) != 1:
            raise DataError(f"{self.path}: the delimiter must be one character, got {self.delimiter!r}")
        if self.skip_rows < 0:
            raise DataError(f"{self.path}: skip_rows must be >= 0")
        if self.names is not None and len(set(self.names)) != len(self.names):
            raise DataError(f"{self.path}: duplicate column names in 'names'")

    @property
    def fmt(self) -> Format:
        assert self.format is not None
        return self.format

    def pandas_csv_options(self) -> dict[str, Any]:
        """The options with which every engine has pandas read this CSV: all text, nothing
        turned into NaN, blank lines skipped, spaces after delimiters dropped."""
        return {
            "sep": self.delimiter,
            "skiprows": self.skip_rows,
            "dtype": str,
            "keep_default_na": False,
            "na_filter": False,
            "skipinitialspace": True,
            "encoding": self.encoding,
            "skip_blank_lines": True,
            "engine": "c",
        }

    def check_readable(self) -> None:
        if not self.path.exists():
            raise DataError(f"cannot read {self.path}: no such file")
        if not self.path.is_file():
            raise DataError(f"cannot read {self.path}: not a file")


def text_column(series: pd.Series) -> pd.Series:
    """Render a column as text the way the DuckDB engine does (``CAST(x AS VARCHAR)``).

    Integers as digits, floats with Python's shortest repr, booleans as
    ``true``/``false``, missing as the empty string.
    """
    if pd.api.types.is_bool_dtype(series):
        out = series.map({True: "true", False: "false"})
    elif pd.api.types.is_integer_dtype(series):
        out = series.astype("Int64").astype("string")
    elif pd.api.types.is_float_dtype(series):
        out = series.map(lambda v: "" if pd.isna(v) else repr(float(v)))
    else:
        out = series.astype("string")
    return out.fillna("").astype(object).map(str)


def normalize_missing(frame: pd.DataFrame, missing: tuple[str, ...]) -> pd.DataFrame:
    """Replace every declared missing token (and the empty string) by the first token."""
    if not missing:
        return frame
    canonical = missing[0]
    tokens = set(missing) | {""}
    out: pd.DataFrame = frame.apply(lambda col: col.where(~col.isin(tokens), canonical))
    return out
