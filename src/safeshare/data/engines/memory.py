"""The in-memory engine: pandas DataFrames (the default engine)."""

from __future__ import annotations

import errno
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from safeshare.data.engines.base import COUNT_COLUMN, Engine, MixedReleasePlan, ReleasePlan
from safeshare.data.identifiers.treatment import IdentifierTreatment, UnplacedValue, located, missing_set
from safeshare.data.source import (
    TableSource,
    check_field_counts,
    check_unique_names,
    first_ragged_record,
    normalize_missing,
    parquet_names,
    ragged_message,
    raw_header,
    text_column,
)
from safeshare.errors import DataError
from safeshare.io import atomic_path


def read_frame(source: TableSource) -> pd.DataFrame:
    """Read ``source`` into a DataFrame of text columns (see :mod:`safeshare.data.source`).

    The shape checks of :mod:`safeshare.data.source` run here, so every command
    that reads through this engine (anonymize, inspect, hierarchy) gets them:
    duplicate names on the raw header or Parquet schema, and (unless
    ``ragged="pad"``) records whose field count is not the header's.
    """
    source.check_readable()
    if source.fmt == "parquet":
        check_unique_names(parquet_names(source), str(source.path))
    elif source.header and not source.names:
        check_unique_names(raw_header(source), str(source.path))
    try:
        if source.fmt == "parquet":
            # Nullable dtypes keep integer and boolean columns with nulls as integers and
            # booleans (not float64 / object), so that they render like DuckDB's CAST.
            frame = pd.read_parquet(source.path, dtype_backend="numpy_nullable")
            frame = frame.apply(parquet_text_column)
            if source.names:
                if len(source.names) != frame.shape[1]:
                    raise DataError(
                        f"{source.path}: {len(source.names)} names given for {frame.shape[1]} columns"
                    )
                frame.columns = list(source.names)
        else:
            with warnings.catch_warnings():
                # A line with more fields than the header (or the names) would be silently
                # truncated, or its first fields turned into an index: make it an error.
                warnings.simplefilter("error", pd.errors.ParserWarning)
                frame = pd.read_csv(
                    source.path,
                    header=0 if source.header else None,
                    names=list(source.names) if source.names else None,
                    index_col=False,
                    **source.pandas_csv_options(),
                )
    except (DataError, MemoryError):
        raise  # running out of memory is not bad input: the CLI suggests the DuckDB engine
    except (pd.errors.ParserWarning, pd.errors.ParserError) as exc:
        _raise_ragged(source)
        if isinstance(exc, pd.errors.ParserError):
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise DataError(f"cannot read {source.path}: {first}") from None
        expected = "the names given" if source.names else "the header"
        raise DataError(
            f"{source.path}: some lines have more fields than {expected} (delimiter {source.delimiter!r})"
        ) from None
    except FileNotFoundError:
        raise DataError(f"cannot read {source.path}: no such file") from None
    except pd.errors.EmptyDataError:
        raise DataError(f"{source.path}: the file is empty (no header, no records)") from None
    except (UnicodeDecodeError, OSError, ValueError) as exc:
        if isinstance(exc, OSError) and exc.errno == errno.ENOMEM:
            raise MemoryError(str(exc)) from None
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise DataError(f"cannot read {source.path}: {first}") from None
    except Exception as exc:  # pyarrow raises its own error types
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise DataError(f"cannot read {source.path}: {first}") from None
    frame.columns = [str(c).strip() for c in frame.columns]
    if len(set(frame.columns)) != len(frame.columns):
        raise DataError(f"{source.path}: duplicate column names")
    if source.names and source.header and len(source.names) != frame.shape[1]:
        raise DataError(f"{source.path}: {len(source.names)} names given for {frame.shape[1]} columns")
    if source.fmt == "csv" and source.ragged == "error":
        check_field_counts(source, frame.shape[1])
    frame = frame.apply(lambda col: col.str.strip())
    return normalize_missing(frame, source.missing)


def parquet_text_column(series: pd.Series) -> pd.Series:
    """:func:`~safeshare.data.source.text_column` (the DuckDB engine's ``CAST(x AS VARCHAR)``),
    cast by Arrow for integer, boolean and string columns: the same text, 5-10 times faster
    than pandas (at 5 million rows, rendering the columns was most of reading the file).
    Other types (floats: Arrow writes ``1.0`` as ``1``; uint64; categories) go through
    ``text_column``."""
    dtype = series.dtype
    fast = (
        pd.api.types.is_bool_dtype(dtype)
        or (pd.api.types.is_string_dtype(dtype) and not isinstance(dtype, pd.CategoricalDtype))
        or pd.api.types.is_signed_integer_dtype(dtype)
        or (pd.api.types.is_unsigned_integer_dtype(dtype) and np.dtype(dtype.type).itemsize < 8)
    )
    if not fast:
        return text_column(series)
    try:
        array = pa.array(series, from_pandas=True)
    except (pa.ArrowInvalid, pa.ArrowTypeError):  # e.g. an object column of mixed values
        return text_column(series)
    kind = array.type
    if not (
        pa.types.is_string(kind)
        or pa.types.is_large_string(kind)
        or pa.types.is_integer(kind)
        or pa.types.is_boolean(kind)
    ):
        return text_column(series)  # bytes, mixed objects that Arrow coerced: pandas' rendering
    out: pd.Series = pc.cast(array, pa.string()).to_pandas().fillna("")
    out.index = series.index
    out.name = series.name
    return out


def _raise_ragged(source: TableSource) -> None:
    """After pandas refused a record: the one-line error naming it, if the exact scan finds it."""
    expected = len(source.names) if source.names else len(raw_header(source))
    bad = first_ragged_record(source, expected)
    if bad is not None:
        raise DataError(ragged_message(source, bad[0], bad[1], expected)) from None


class MemoryEngine(Engine):
    """Holds the whole input as a pandas DataFrame of text columns.

    Parameters
    ----------
    data: a :class:`TableSource` to read, or a DataFrame (its values are
        rendered as text like the DuckDB engine does).
    missing: missing-value tokens, for a DataFrame input.
    identifiers: pseudonyms and shifted dates to apply to every record as it is read
        (:mod:`safeshare.data.identifiers.treatment`); the raw text of the columns it reads
        is kept apart for the verifier (:meth:`raw_grouped_batches`).
    """

    name = "memory"

    def __init__(
        self,
        data: TableSource | pd.DataFrame,
        missing: Sequence[str] = (),
        identifiers: IdentifierTreatment | None = None,
    ) -> None:
        if isinstance(data, pd.DataFrame):
            frame = data.copy()
            frame.columns = [str(c) for c in frame.columns]
            frame = normalize_missing(frame.apply(text_column), tuple(missing))
            self.label = "DataFrame"
            self._missing = tuple(missing)
        else:
            frame = read_frame(data)
            self.label = str(data.path)
            self._missing = tuple(data.missing)
        self.frame: pd.DataFrame = frame.reset_index(drop=True)
        self._raw: pd.DataFrame | None = None
        if identifiers is not None:
            self._treat(identifiers, None if isinstance(data, pd.DataFrame) else data)

    def _treat(self, treatment: IdentifierTreatment, source: TableSource | None) -> None:
        """Replace the treated columns by their pseudonyms and shifted dates (module
        :mod:`~safeshare.data.identifiers.treatment`); keep the raw text of what it reads."""
        columns = self.columns()
        for column in treatment.read_columns:
            if column not in columns:
                raise DataError(f"{self.label}: unknown column {column!r}")
        raw = self.frame[treatment.read_columns].copy()
        absent = missing_set(self._missing)
        frame = self.frame.copy()
        try:
            for shifted in treatment.shifted_dates:
                dates, persons = raw[shifted.name], raw[shifted.person]
                present = ~dates.isin(absent)
                unique_persons = pd.unique(persons[present])
                shifts = treatment.shift_map(shifted, list(unique_persons), self._missing)
                treatment.check_persons(shifted, len(unique_persons), int(present.sum()))
                unique_dates = pd.unique(dates[present])
                days = dict(zip(unique_dates, treatment.day_map(shifted, list(unique_dates)), strict=True))
                out = dates.copy()
                if days:
                    treatment.day_range(shifted, min(days.values()), max(days.values()))
                    moved = dates[present].map(days).astype("int64") + persons[present].map(
                        dict(zip(unique_persons, shifts, strict=True))
                    ).astype("int64")
                    targets = np.unique(moved.to_numpy()).tolist()
                    texts = dict(zip(targets, treatment.day_texts(shifted, targets), strict=True))
                    out[present] = moved.map(texts)
                frame[shifted.name] = out
            for pseudonym in treatment.pseudonyms:
                values = raw[pseudonym.name]
                present = ~values.isin(absent)
                unique = pd.unique(values[present])
                hashed = treatment.pseudonym_map(pseudonym, list(unique))
                treatment.check_pseudonyms(pseudonym, len(unique), len(set(hashed)))
                out = values.copy()
                out[present] = values[present].map(dict(zip(unique, hashed, strict=True)))
                frame[pseudonym.name] = out
        except UnplacedValue as exc:
            raise located(
                exc, self.label, columns, source, self._missing, row=_first_row(raw, exc, absent)
            ) from None
        self.frame = frame
        self._raw = raw
        self.identifiers = treatment

    def raw_grouped_batches(
        self, columns: Sequence[str], batch_rows: int = 1_000_000
    ) -> Iterator[pd.DataFrame]:
        """The input's distinct tuples of ``columns`` before the identifier treatment, with counts."""
        if self._raw is None:
            yield from super().raw_grouped_batches(columns, batch_rows)
            return
        cols = list(dict.fromkeys(columns))
        frame = pd.concat([self._raw, self.frame.drop(columns=list(self._raw.columns))], axis=1)[cols]
        grouped = frame.groupby(cols, sort=True, dropna=False).size().reset_index(name=COUNT_COLUMN)
        grouped[COUNT_COLUMN] = grouped[COUNT_COLUMN].astype("int64")
        for start in range(0, max(len(grouped), 1), batch_rows):
            yield grouped.iloc[start : start + batch_rows].reset_index(drop=True)

    def columns(self) -> list[str]:
        return list(self.frame.columns)

    def n_records(self) -> int:
        return len(self.frame)

    def grouped_counts(self, columns: Sequence[str]) -> pd.DataFrame:
        """The distinct tuples of ``columns`` in order of first appearance, with counts. The last
        grouping is kept: asked again for some of its columns (the verifier's truth check asks for
        the quasi-identifiers after the search grouped them with the sensitive columns), the
        answer is regrouped from it, in the same order, without reading the records again."""
        cols = list(columns)
        if not cols:
            return pd.DataFrame({COUNT_COLUMN: [len(self.frame)]})
        last: tuple[pd.DataFrame, tuple[str, ...], pd.DataFrame] | None = getattr(self, "_last_grouped", None)
        if last is not None and last[0] is self.frame and set(cols) <= set(last[1]):
            grouped = last[2].groupby(cols, sort=False, dropna=False)[COUNT_COLUMN].sum()
            out = grouped.reset_index(name=COUNT_COLUMN)
        else:
            out = self.frame.groupby(cols, sort=False, dropna=False).size().reset_index(name=COUNT_COLUMN)
            self._last_grouped = (self.frame, tuple(cols), out.copy())
        out[COUNT_COLUMN] = out[COUNT_COLUMN].astype("int64")
        return out

    def generalized_frame(self, plan: ReleasePlan) -> pd.DataFrame:
        """The release as a DataFrame (generalized, suppressed records removed), in release order.

        The rows are sorted (:func:`release_order`) so that the release is the
        same bytes whatever the order of the input records, and that order
        cannot be read back from it.
        """
        out = self.frame[plan.columns].copy()
        for qi, mapping in plan.generalization.items():
            out[qi] = out[qi].map(mapping)
        qis = plan.quasi_identifiers
        if len(plan.suppressed):
            drop = pd.MultiIndex.from_frame(plan.suppressed[qis].astype(str))
            keys = pd.MultiIndex.from_frame(out[qis])
            out = out[~keys.isin(drop)]
        return release_order(out)

    def write_release(self, plan: ReleasePlan, target: Path) -> int:
        out = self.generalized_frame(plan)
        with atomic_path(target) as tmp:
            if plan.format == "parquet":
                out.to_parquet(tmp, index=False)
            else:
                out.to_csv(tmp, index=False, sep=plan.delimiter)
        return len(out)

    # ------------------------------------------------------------------ local recoding
    def mixed_frame(self, plan: MixedReleasePlan) -> pd.DataFrame:
        """The release of a :class:`MixedReleasePlan` as a DataFrame, in release order: each
        record's raw QI tuple looked up in the plan's keys; a tuple not listed is not written."""
        qis = plan.quasi_identifiers
        keys: pd.Index
        records: pd.Index
        if len(qis) == 1:
            keys = pd.Index(plan.keys[qis[0]].astype(str))
            records = pd.Index(self.frame[qis[0]])
        else:
            keys = pd.MultiIndex.from_frame(plan.keys[qis].astype(str))
            records = pd.MultiIndex.from_frame(self.frame[qis])
        position = keys.get_indexer(records)
        keep = position >= 0
        out = self.frame.loc[keep, plan.columns].copy()
        at = position[keep]
        for qi in qis:
            if qi in out.columns:
                out[qi] = plan.labels[qi].astype(str).to_numpy()[at]
        return release_order(out.reset_index(drop=True))

    def write_mixed_release(self, plan: MixedReleasePlan, target: Path) -> int:
        out = self.mixed_frame(plan)
        with atomic_path(target) as tmp:
            if plan.format == "parquet":
                out.to_parquet(tmp, index=False)
            else:
                out.to_csv(tmp, index=False, sep=plan.delimiter)
        return len(out)


def _first_row(raw: pd.DataFrame, error: UnplacedValue, absent: frozenset[str]) -> int | None:
    """The first record (0-based) holding the value ``error`` is about (for its line number)."""
    hits = raw[error.column] == error.value
    if error.requires is not None:  # a missing person matters only where the date is present
        hits &= ~raw[error.requires].isin(absent)
    found = np.flatnonzero(hits.to_numpy())
    return int(found[0]) if found.size else None


def release_order(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame``'s rows sorted by its columns, left to right: the order of every release.

    Values compare by code point (Python's ``str`` order, which is the UTF-8
    byte order of DuckDB's binary collation), missing values (NaN, an
    unmapped label) first, as the DuckDB engine's ``ORDER BY ... NULLS
    FIRST``. Rows that tie are equal in every released column, so their
    relative order cannot show in the output. Columns are taken by position,
    so duplicate names cannot make the sort ambiguous.
    """
    if frame.empty or frame.shape[1] == 0:
        return frame.reset_index(drop=True)
    # factorize(sort=True) numbers the distinct values in sorted order, NaN as -1 (first)
    codes = [pd.factorize(frame.iloc[:, j], sort=True)[0] for j in range(frame.shape[1])]
    order = np.lexsort(codes[::-1])  # the last key is the primary one; stable
    return frame.iloc[order].reset_index(drop=True)
