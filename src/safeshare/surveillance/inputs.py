"""Readers of the surveillance inputs, validated with one-line errors naming file, line and column.

Formats (docs/surveillance.md has examples; examples/surveillance/ has synthetic files):

* **Population** (:func:`read_population`), long CSV, one row per region and
  demographic bin, US Census PCT12-style single-year ages::

      region,age,race,sex,ethnicity,count
      99001,0,white,female,non-hispanic,113

  Columns are the policy space's dimension names plus ``region`` and ``count``;
  values must be leaf labels of the hierarchies (default: ages ``0``..``100``,
  ``100`` = 100 and over; races ``white, black, aian, asian, nhpi, other,
  multiple``; sexes ``female, male``; ``hispanic, non-hispanic``). Absent bins
  count 0; a bin listed twice is an error. The region totals are the row sums.
* **Case series, long** (:func:`read_case_series`): ``region,date,new_cases``,
  ISO dates, per region strictly increasing with one constant step (1 day for
  daily, 7 for weekly series), counts >= 0.
* **Case series, JHU CSSE** (:func:`read_jhu_series`): the US time-series layout
  (``UID,...,FIPS,Admin2,...,Combined_Key,1/22/20,1/23/20,...``), cumulative
  confirmed per county. New cases are the day-to-day differences, so the series
  starts on the second date; a decrease (a correction) is refused.
* **Forecasts** (:func:`read_forecasts`): the COVID-19 Forecast Hub long layout
  ``forecast_date,target,target_end_date,location,type,quantile,value``; only
  targets ``N wk ahead inc case`` are kept; ``type`` is ``point`` or
  ``quantile`` (``quantile`` in [0, 1], empty or ``NA`` for points).
* **Case records** (:func:`read_case_records`): person level,
  ``region,date,age,race,sex,ethnicity`` plus any further columns.

Counts larger than the population (more cases than people) are checked where
both are known (:func:`check_cases_fit`, :func:`check_forecasts_fit`). A header naming
one column twice (also after stripping and case-folding: ``count`` and `` Count``) is
refused: which of the two would be read is a guess. Whole counts above
:data:`MAX_COUNT` (more people than live on Earth) are refused too, before any
arithmetic can overflow.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pandas as pd

from safeshare.errors import DataError
from safeshare.surveillance.policies import PolicySpace

IntArray = npt.NDArray[np.int64]
DateArray = npt.NDArray[np.datetime64]


#: The largest whole count (people in a bin or a region, cases of a period) accepted: ten billion.
MAX_COUNT = 10**10


def _header(path: Path) -> list[str]:
    """The header's column names, as the csv module reads them (empty for an empty file)."""
    try:
        with path.open(newline="", encoding="utf-8") as fh:
            return next(csv.reader(fh), [])
    except (OSError, UnicodeDecodeError, csv.Error):
        return []  # pandas reports the problem with its own words below


def _check_header(path: Path, names: Sequence[str]) -> None:
    """Refuse a column named twice, also after stripping and case-folding (``count`` and ``Count``)."""
    seen: dict[str, int] = {}
    for i, name in enumerate(names):
        key = str(name).strip().casefold()
        if key in seen:
            j = seen[key]
            raise DataError(
                f"{path}:1: column {str(name).strip()!r} ({i + 1}) has the name of column "
                f"{str(names[j]).strip()!r} ({j + 1}); every column needs its own name"
            )
        seen[key] = i


def _read_csv(path: Path | str, required: Sequence[str]) -> pd.DataFrame:
    """All cells as strings; the header must name every required column (any order), each once."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: no such file")
    _check_header(path, _header(path))
    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False, skipinitialspace=True)
    except (pd.errors.ParserError, UnicodeDecodeError, pd.errors.EmptyDataError) as exc:
        raise DataError(f"{path}: not a readable CSV file ({' '.join(str(exc).split())})") from None
    frame.columns = [str(c).strip() for c in frame.columns]
    missing = [c for c in required if c not in frame.columns]
    if missing:
        raise DataError(f"{path}:1: missing column(s) {missing}; the header is {list(frame.columns)}")
    return frame


def _where(path: Path | str, frame: pd.DataFrame, row: int, column: str) -> str:
    """``file:line: column NAME (N)`` of data row ``row`` (0-based; line 1 is the header)."""
    return f"{path}:{row + 2}: column {column!r} ({list(frame.columns).index(column) + 1})"


def _first(mask: npt.NDArray[np.bool_]) -> int | None:
    hits = np.flatnonzero(mask)
    return int(hits[0]) if hits.size else None


def _ints(path: Path | str, frame: pd.DataFrame, column: str, minimum: int = 0) -> IntArray:
    """Whole numbers in ``[minimum, MAX_COUNT]`` (checked on the text: no overflow on the way)."""
    values = frame[column].str.strip()
    bad = _first(~values.str.fullmatch(r"[+-]?\d+").to_numpy(dtype=bool))
    if bad is not None:
        raise DataError(f"{_where(path, frame, bad, column)}: {values.iloc[bad]!r} is not a whole number")
    digits = values.str.lstrip("+-").str.lstrip("0").str.len().to_numpy()
    huge = digits > len(str(MAX_COUNT))  # refused on the text, before int64 could overflow
    if huge.any():
        out = np.where(values.str.startswith("-").to_numpy(dtype=bool), -MAX_COUNT - 1, MAX_COUNT + 1)
        out[~huge] = values[~huge].astype(np.int64).to_numpy()
    else:
        out = np.asarray(values.astype(np.int64).to_numpy(), dtype=np.int64)
    bad = _first((out < minimum) | (out > MAX_COUNT))
    if bad is not None:
        why = (
            f"is below {minimum}"
            if out[bad] < minimum
            else f"is larger than {MAX_COUNT:,} (the people on Earth)"
        )
        raise DataError(f"{_where(path, frame, bad, column)}: {values.iloc[bad]} {why}")
    return out


def _dates(path: Path | str, frame: pd.DataFrame, column: str) -> DateArray:
    values = frame[column].str.strip()
    parsed = pd.to_datetime(values, format="%Y-%m-%d", errors="coerce")
    bad = _first(parsed.isna().to_numpy())
    if bad is not None:
        raise DataError(f"{_where(path, frame, bad, column)}: {values.iloc[bad]!r} is not a YYYY-MM-DD date")
    return parsed.to_numpy().astype("datetime64[D]")


def _regions(path: Path | str, frame: pd.DataFrame, column: str = "region") -> npt.NDArray[np.str_]:
    values = frame[column].str.strip()
    bad = _first((values == "").to_numpy())
    if bad is not None:
        raise DataError(f"{_where(path, frame, bad, column)}: empty region")
    return values.to_numpy(dtype=str)


def _leaf_indices(path: Path | str, frame: pd.DataFrame, space: PolicySpace) -> list[IntArray]:
    out = []
    for dim in space.dimensions:
        codes = {label: i for i, label in enumerate(dim.leaves)}
        values = frame[dim.name].str.strip()
        idx = values.map(codes)
        bad = _first(idx.isna().to_numpy())
        if bad is not None:
            shown = ", ".join(dim.leaves[:8]) + (", ..." if len(dim.leaves) > 8 else "")
            raise DataError(
                f"{_where(path, frame, bad, dim.name)}: {values.iloc[bad]!r} "
                f"is not a label of {dim.name} ({shown})"
            )
        out.append(np.asarray(idx.to_numpy(dtype=np.int64), dtype=np.int64))
    return out


@dataclass(frozen=True)
class Population:
    """People per region and fine bin of a policy space (``counts[r, b]``)."""

    space: PolicySpace
    regions: tuple[str, ...]
    counts: IntArray

    def region_index(self, region: str) -> int:
        try:
            return self.regions.index(region)
        except ValueError:
            raise DataError(f"region {region!r} is not in the population table") from None

    def of(self, region: str) -> IntArray:
        """The fine-bin counts of one region."""
        row: IntArray = self.counts[self.region_index(region)]
        return row

    @property
    def totals(self) -> dict[str, int]:
        return {r: int(c) for r, c in zip(self.regions, self.counts.sum(axis=1), strict=True)}


def read_population(path: Path | str, space: PolicySpace) -> Population:
    """Read the long population table (see the module docstring)."""
    frame = _read_csv(path, ["region", *space.names, "count"])
    regions = _regions(path, frame)
    counts = _ints(path, frame, "count")
    bins = space.bin_index(_leaf_indices(path, frame, space))
    names, region_idx = np.unique(regions, return_inverse=True)
    key = region_idx.astype(np.int64) * space.n_bins + bins
    order = np.argsort(key, kind="stable")
    dup = np.flatnonzero(key[order][1:] == key[order][:-1])
    if dup.size:
        row = int(max(order[dup[0]], order[dup[0] + 1]))
        first = int(min(order[dup[0]], order[dup[0] + 1]))
        raise DataError(f"{path}:{row + 2}: the region and bin of line {first + 2} again")
    table = np.bincount(key, weights=counts, minlength=len(names) * space.n_bins)
    table = np.rint(table).astype(np.int64).reshape(len(names), space.n_bins)
    big = _first(table.sum(axis=1) > MAX_COUNT)
    if big is not None:
        raise DataError(f"{path}: region {str(names[big])!r} has more than {MAX_COUNT:,} people")
    # keep the regions in order of first appearance
    first_seen = np.unique(region_idx, return_index=True)[1]
    keep = np.argsort(first_seen)
    return Population(space, tuple(str(names[i]) for i in keep), table[keep])


@dataclass(frozen=True)
class CaseSeries:
    """New cases per period of one region (``dates[i]`` is the period's first day)."""

    region: str
    dates: DateArray
    cases: IntArray

    @property
    def step_days(self) -> int:
        return int((self.dates[1] - self.dates[0]).astype(int)) if len(self.dates) > 1 else 1


def _series_from(
    path: Path | str,
    frame: pd.DataFrame,
    regions: npt.NDArray[np.str_],
    dates: DateArray,
    cases: IntArray,
    date_column: str,
) -> dict[str, CaseSeries]:
    out: dict[str, CaseSeries] = {}
    for region in dict.fromkeys(regions.tolist()):
        rows = np.flatnonzero(regions == region)
        d = dates[rows]
        if len(d) > 1:
            gaps = np.diff(d).astype(np.int64)
            bad = _first(gaps <= 0)
            if bad is not None:
                raise DataError(
                    f"{_where(path, frame, int(rows[bad + 1]), date_column)}: {d[bad + 1]} is not after "
                    f"{d[bad]} (dates of region {region!r} must increase)"
                )
            bad = _first(gaps != gaps[0])
            if bad is not None:
                raise DataError(
                    f"{_where(path, frame, int(rows[bad + 1]), date_column)}: {d[bad + 1]} is "
                    f"{gaps[bad]} days after the previous date, but the series of {region!r} "
                    f"steps {gaps[0]} days"
                )
        out[region] = CaseSeries(region, d, cases[rows])
    return out


def read_case_series(path: Path | str) -> dict[str, CaseSeries]:
    """Read the long layout ``region,date,new_cases``."""
    frame = _read_csv(path, ["region", "date", "new_cases"])
    regions = _regions(path, frame)
    dates = _dates(path, frame, "date")
    cases = _ints(path, frame, "new_cases")
    return _series_from(path, frame, regions, dates, cases, "date")


_JHU_DATE = re.compile(r"^\d{1,2}/\d{1,2}/\d{2}$")


def read_jhu_series(path: Path | str) -> dict[str, CaseSeries]:
    """Read the JHU CSSE US time-series layout (cumulative confirmed, one row per county).

    Regions are 5-digit FIPS codes (``47037.0`` -> ``47037``)."""
    frame = _read_csv(path, ["FIPS"])
    date_cols = [c for c in frame.columns if _JHU_DATE.match(c)]
    if len(date_cols) < 2:
        raise DataError(f"{path}:1: fewer than two M/D/YY date columns")
    parsed = pd.to_datetime(pd.Series(date_cols), format="%m/%d/%y").to_numpy().astype("datetime64[D]")
    if (np.diff(parsed).astype(np.int64) != 1).any():
        bad = int(np.flatnonzero(np.diff(parsed).astype(np.int64) != 1)[0]) + 1
        raise DataError(f"{path}:1: column {date_cols[bad]!r} is not the day after {date_cols[bad - 1]!r}")
    fips = frame["FIPS"].str.strip()
    ok = fips.str.fullmatch(r"\d{1,5}(\.0+)?").to_numpy(dtype=bool)
    bad_row = _first(~ok)
    if bad_row is not None:
        raise DataError(
            f"{_where(path, frame, bad_row, 'FIPS')}: {fips.iloc[bad_row]!r} is not a county FIPS code"
        )
    regions = fips.str.replace(r"\.0+$", "", regex=True).str.zfill(5).to_numpy(dtype=str)
    cumulative = np.stack([_ints(path, frame, c) for c in date_cols], axis=1)
    new = np.diff(cumulative, axis=1)
    if (new < 0).any():
        r, c = (int(x[0]) for x in np.nonzero(new < 0))
        raise DataError(
            f"{_where(path, frame, r, date_cols[c + 1])}: cumulative count {cumulative[r, c + 1]} "
            f"is below the previous day's {cumulative[r, c]} "
            "(a correction; fix the series or use the long layout)"
        )
    out: dict[str, CaseSeries] = {}
    for r, region in enumerate(regions):
        if region in out:
            raise DataError(f"{_where(path, frame, r, 'FIPS')}: county {region} appears twice")
        out[str(region)] = CaseSeries(str(region), parsed[1:], new[r])
    return out


_TARGET = re.compile(r"^(\d+) wk ahead inc case$")


def read_forecasts(path: Path | str) -> pd.DataFrame:
    """Read Forecast Hub incident-case forecasts.

    Returns columns ``forecast_date, horizon, target_end_date, location, type,
    quantile, value, line`` (dates as ``datetime64``, ``quantile`` NaN for points, ``line`` the
    file's line). Refused with file, line and column: a value that is not a finite count (``inf``,
    ``nan``, negative), and the same forecast twice (same dates, location, type and quantile)."""
    cols = ["forecast_date", "target", "target_end_date", "location", "type", "quantile", "value"]
    frame = _read_csv(path, cols)
    target = frame["target"].str.strip()
    horizon = target.str.extract(_TARGET)[0]
    keep = horizon.notna().to_numpy()
    frame = frame.loc[keep].reset_index(drop=False)
    line_of = frame["index"].to_numpy()

    def where(row: int, column: str) -> str:
        return f"{path}:{int(line_of[row]) + 2}: column {column!r} ({cols.index(column) + 1})"

    fdate = pd.to_datetime(frame["forecast_date"].str.strip(), format="%Y-%m-%d", errors="coerce")
    edate = pd.to_datetime(frame["target_end_date"].str.strip(), format="%Y-%m-%d", errors="coerce")
    for name, parsed in (("forecast_date", fdate), ("target_end_date", edate)):
        bad = _first(parsed.isna().to_numpy())
        if bad is not None:
            raise DataError(f"{where(bad, name)}: {frame[name].iloc[bad]!r} is not a YYYY-MM-DD date")
    kind = frame["type"].str.strip()
    bad = _first(~kind.isin(["point", "quantile"]).to_numpy())
    if bad is not None:
        raise DataError(f"{where(bad, 'type')}: {kind.iloc[bad]!r} is neither 'point' nor 'quantile'")
    qtext = frame["quantile"].str.strip()
    quant = pd.to_numeric(qtext.where(~qtext.isin(["", "NA", "NaN"])), errors="coerce").to_numpy(dtype=float)
    is_q = (kind == "quantile").to_numpy()
    bad = _first(is_q & ~((quant >= 0) & (quant <= 1)))
    if bad is not None:
        raise DataError(f"{where(bad, 'quantile')}: {qtext.iloc[bad]!r} is not a quantile level in [0, 1]")
    value = pd.to_numeric(frame["value"].str.strip(), errors="coerce").to_numpy(dtype=float)
    bad = _first(~((value >= 0) & (value <= MAX_COUNT)))  # NaN and inf fail too
    if bad is not None:
        raise DataError(
            f"{where(bad, 'value')}: {frame['value'].iloc[bad]!r} is not a count in [0, {MAX_COUNT:,}]"
        )
    loc = frame["location"].str.strip()
    out = pd.DataFrame(
        {
            "forecast_date": fdate.to_numpy().astype("datetime64[D]"),
            "horizon": horizon[keep].astype(int).to_numpy(),
            "target_end_date": edate.to_numpy().astype("datetime64[D]"),
            "location": loc.to_numpy(dtype=str),
            "type": kind.to_numpy(dtype=str),
            "quantile": np.where(is_q, quant, np.nan),
            "value": value,
            "line": line_of.astype(np.int64) + 2,
        }
    )
    # the same forecast twice (even with the same value) is refused: which one counts is a guess
    key = ["forecast_date", "horizon", "target_end_date", "location", "type", "quantile"]
    bad = _first(out.duplicated(subset=key).to_numpy())
    if bad is not None:
        keys = out[key].fillna({"quantile": -1.0})
        earlier = _first((keys.iloc[:bad] == keys.iloc[bad]).all(axis=1).to_numpy())
        lines = out["line"].to_numpy()
        raise DataError(
            f"{path}:{int(lines[bad])}: the forecast of line {int(lines[earlier or 0])} "
            "again (the same forecast_date, target, target_end_date, location, type and quantile); "
            "each forecast must appear once"
        )
    return out


def check_forecasts_fit(forecasts: pd.DataFrame, population: Population, where: str = "forecasts") -> None:
    """Refuse a forecast of more new cases than the people of its region (regions of the population
    table only: other locations are never used), naming the file's line and the ``value`` column."""
    totals = population.totals
    people = forecasts["location"].map(totals)
    over = (forecasts["value"] > people).to_numpy(dtype=bool)  # NaN people (another location): False
    bad = _first(over)
    if bad is not None:
        row = forecasts.iloc[bad]
        raise DataError(
            f"{where}:{int(row['line'])}: column 'value' (7): {row['value']:g} new cases forecast for "
            f"region {row['location']!r}, which has only {totals[row['location']]:,} people"
        )


@dataclass(frozen=True)
class CaseRecords:
    """Person-level case records with their fine bin (under the policy space)."""

    frame: pd.DataFrame
    dates: DateArray
    bins: IntArray


def read_case_records(path: Path | str, space: PolicySpace) -> CaseRecords:
    """Read person-level records ``region,date,<dimensions>`` (+ other columns kept as they are)."""
    frame = _read_csv(path, ["region", "date", *space.names])
    _regions(path, frame)
    dates = _dates(path, frame, "date")
    bins = space.bin_index(_leaf_indices(path, frame, space))
    return CaseRecords(frame, dates, bins)


def check_cases_fit(series: CaseSeries, population: Population, where: str = "case series") -> None:
    """Refuse a series whose cases exceed the region's people (nobody is infected twice)."""
    total = population.totals[series.region] if series.region in population.regions else None
    if total is None:
        raise DataError(f"{where}: region {series.region!r} is not in the population table")
    cum = np.cumsum(series.cases)
    bad = _first(cum > total)
    if bad is not None:
        raise DataError(
            f"{where}: region {series.region!r} on {series.dates[bad]}: {int(cum[bad])} cases so far "
            f"but only {total} people"
        )
