"""The release step: each period's incoming case records under that week's policy (issue 10).

For every period (a day, or a Sunday-Saturday week with ``weekly``) that has records:

1. the policy is the one of the week holding the period (a schedule from ``surveil select``,
   or one policy for every week); "do not share" writes nothing for the period;
2. each record's demographics are replaced by their labels at the policy's levels
   (``5-year`` ages as ``35-39``, race ``white-or-black``, ``*`` for a suppressed dimension);
3. a record whose *population bin* — the people of its region in its generalized group — holds
   fewer than ``k`` people is suppressed (dropped): such a group is rare in the population
   itself, so a record in it is close to unique whatever the case volume;
4. only ``region``, ``date`` (the week's first day for weekly releases) and the dimensions are
   written, plus the columns named in ``keep``: other columns (a case id) may identify people.

Privacy by default, as ``anonymize``: every file is written into a staging directory, re-read
and checked by :func:`verify_period_file` (computed from the written text and the population
table alone, not from the arrays that produced the file), and the directory is published by
:class:`safeshare.io.OutputDirectory` (lock, stage, one atomic swap): ``OUT`` is the complete
previous release or the complete new one. A failed check publishes nothing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from safeshare.core.lattice import Node
from safeshare.errors import DataError, InputError, VerificationError
from safeshare.io import OutputDirectory
from safeshare.surveillance.inputs import CaseRecords, Population, _read_csv
from safeshare.surveillance.policies import PolicySpace
from safeshare.surveillance.search import DO_NOT_SHARE


@dataclass(frozen=True)
class WeeklyPolicies:
    """The policy (None: do not share) of each Sunday-Saturday week starting on ``week_starts[i]``."""

    week_starts: np.ndarray  # datetime64[D], increasing
    policies: list[Node | None]

    def policy_on(self, day: np.datetime64) -> tuple[bool, Node | None]:
        """(covered, policy) of the week holding ``day``."""
        i = int(np.searchsorted(self.week_starts, day, side="right")) - 1
        if i < 0 or day >= self.week_starts[i] + np.timedelta64(7, "D"):
            return False, None
        return True, self.policies[i]


def read_schedule(path: Path | str, space: PolicySpace) -> WeeklyPolicies:
    """Read ``week_start,...,policy`` (``surveil select``'s schedule.csv); one-line errors with the line."""
    frame = _read_csv(path, ["week_start", "policy"])
    starts: list[np.datetime64] = []
    policies: list[Node | None] = []
    for i, (start, code) in enumerate(zip(frame["week_start"], frame["policy"], strict=True)):
        where = f"{path}:{i + 2}"
        try:
            day = np.datetime64(pd.Timestamp(str(start).strip()).date(), "D")
        except ValueError:
            raise DataError(f"{where}: column 'week_start': {start!r} is not a YYYY-MM-DD date") from None
        if int((day.astype(np.int64) + 4) % 7) != 0:  # 1970-01-01 was a Thursday
            raise DataError(f"{where}: column 'week_start': {start} is not a Sunday")
        if starts and day <= starts[-1]:
            raise DataError(f"{where}: column 'week_start': {start} is not after the previous week")
        code = str(code).strip()
        try:
            policies.append(None if code == DO_NOT_SHARE else space.parse(code))
        except InputError as exc:
            raise DataError(f"{where}: column 'policy': {exc}") from None
        starts.append(day)
    if not starts:
        raise DataError(f"{path}: no weeks in the schedule")
    return WeeklyPolicies(np.array(starts, dtype="datetime64[D]"), policies)


def constant_schedule(policy: Node, days: np.ndarray) -> WeeklyPolicies:
    """One policy for every week that holds one of ``days``."""
    sundays = np.unique(_week_start(days))
    return WeeklyPolicies(sundays, [policy] * len(sundays))


def _week_start(days: np.ndarray) -> np.ndarray:
    """The Sunday on or before each day (1970-01-01 was a Thursday)."""
    d = days.astype("datetime64[D]")
    out: np.ndarray = d - ((d.astype(np.int64) + 4) % 7).astype("timedelta64[D]")
    return out


@dataclass
class PeriodRelease:
    period: str
    policy: str
    file: str | None
    records_in: int
    records_out: int
    suppressed: int


@dataclass
class SurveillanceRelease:
    out_dir: Path
    periods: list[PeriodRelease] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "periods": [vars(p) for p in self.periods],
            "records_in": sum(p.records_in for p in self.periods),
            "records_out": sum(p.records_out for p in self.periods),
            "suppressed": sum(p.suppressed for p in self.periods),
            "verified": True,
        }


def _labels(space: PolicySpace, node: Node, records: CaseRecords, rows: np.ndarray) -> dict[str, np.ndarray]:
    """The label of each record (rows) at the policy's level, per dimension."""
    out = {}
    for dim, level in zip(space.dimensions, node, strict=True):
        leaf = {label: i for i, label in enumerate(dim.leaves)}
        idx = records.frame[dim.name].str.strip().map(leaf).to_numpy()[rows].astype(np.int64)
        out[dim.name] = np.asarray(dim.levels[level].groups, dtype=object)[idx]
    return out


def population_of_labels(population: Population, node: Node) -> pd.DataFrame:
    """People per region and generalized group, computed from the labels (not the bin groupings):
    the verifier's own view of the population bins."""
    space = population.space
    grids = np.unravel_index(np.arange(space.n_bins), space.shape)
    cols: dict[str, Any] = {}
    for dim, level, leaf in zip(space.dimensions, node, grids, strict=True):
        cols[dim.name] = np.asarray(dim.levels[level].groups, dtype=object)[leaf]
    frames = []
    for r, region in enumerate(population.regions):
        frames.append(pd.DataFrame({"region": region, **cols, "people": population.counts[r]}))
    table = pd.concat(frames, ignore_index=True)
    grouped: pd.DataFrame = table.groupby(["region", *space.names], as_index=False)[["people"]].sum()
    return grouped


def verify_period_file(
    path: Path,
    population: Population,
    node: Node,
    k: int,
    columns: list[str],
    dates: tuple[str, str],
    expected_rows: int,
) -> list[str]:
    """Independent re-check of one written release file; the list of failures (empty: passed).

    Re-reads the file as text and checks: the columns (nothing else is released), every label at
    the policy's level of its dimension, every date within the period, every record's population
    bin (people of its region with its generalized labels) at least ``k``, and the row count."""
    space = population.space
    failures: list[str] = []
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    if list(frame.columns) != columns:
        return [f"{path.name}: columns {list(frame.columns)}, expected {columns}"]
    if len(frame) != expected_rows:
        failures.append(f"{path.name}: {len(frame)} records, expected {expected_rows}")
    for dim, level in zip(space.dimensions, node, strict=True):
        allowed = set(dim.levels[level].groups)
        bad = ~frame[dim.name].isin(allowed)
        if bad.any():
            failures.append(
                f"{path.name}:{int(np.flatnonzero(bad.to_numpy())[0]) + 2}: {dim.name} "
                f"{frame[dim.name][bad].iloc[0]!r} is not a label of level {dim.levels[level].code!r}"
            )
    outside = (frame["date"] < dates[0]) | (frame["date"] > dates[1])
    if outside.any():
        failures.append(
            f"{path.name}: date {frame['date'][outside].iloc[0]!r} outside {dates[0]}..{dates[1]}"
        )
    if failures:
        return failures
    people = population_of_labels(population, node)
    merged = frame.merge(people, on=["region", *space.names], how="left")
    small = merged["people"].fillna(0) < k
    if small.any():
        row = merged[small].iloc[0]
        failures.append(
            f"{path.name}: a record of region {row['region']} in a population bin of "
            f"{int(0 if pd.isna(row['people']) else row['people'])} people (< k = {k})"
        )
    return failures


def release_cases(
    population: Population,
    records: CaseRecords,
    schedule: WeeklyPolicies,
    out_dir: Path,
    k: int = 11,
    weekly: bool = False,
    keep: list[str] | None = None,
    records_path: str = "case records",
) -> SurveillanceRelease:
    """Write, verify and publish one release file per period (see the module docstring)."""
    if k < 1:
        raise InputError(f"--k: k must be >= 1, got {k}")
    space = population.space
    keep = keep or []
    for col in keep:
        if col not in records.frame.columns:
            raise InputError(f"--keep: {records_path} has no column {col!r}")
        if col in ("region", "date", *space.names):
            raise InputError(f"--keep: {col!r} is always released")
    regions = records.frame["region"].str.strip().to_numpy(dtype=str)
    region_row = {r: i for i, r in enumerate(population.regions)}
    for i, region in enumerate(regions):
        if region not in region_row:
            raise DataError(
                f"{records_path}:{i + 2}: column 'region': {region!r} is not in the population table"
            )
    periods = _week_start(records.dates) if weekly else records.dates.astype("datetime64[D]")
    for i, day in enumerate(records.dates):
        if not schedule.policy_on(day)[0]:
            raise DataError(f"{records_path}:{i + 2}: column 'date': {day} is in no week of the schedule")
    columns = ["region", "date", *space.names, *keep]
    result = SurveillanceRelease(Path(out_dir))
    output = OutputDirectory(Path(out_dir))
    with output as stage:
        for period in np.unique(periods):
            rows = np.flatnonzero(periods == period)
            _, node = schedule.policy_on(period if not weekly else records.dates[rows[0]])
            label = str(period)
            if node is None:
                result.periods.append(PeriodRelease(label, DO_NOT_SHARE, None, rows.size, 0, 0))
                continue
            grouping, n_groups = space.grouping(node)
            bins_people = np.zeros((len(population.regions), n_groups), dtype=np.int64)
            for r in range(len(population.regions)):
                bins_people[r] = np.bincount(grouping, weights=population.counts[r], minlength=n_groups)
            region_idx = np.array([region_row[x] for x in regions[rows]], dtype=np.int64)
            people = bins_people[region_idx, grouping[records.bins[rows]]]
            kept = rows[people >= k]
            labels = _labels(space, node, records, kept)
            frame = pd.DataFrame(
                {
                    "region": regions[kept],
                    "date": np.full(kept.size, label) if weekly else records.dates[kept].astype(str),
                    **labels,
                    **{c: records.frame[c].to_numpy()[kept] for c in keep},
                }
            )
            name = f"release_{'week_' if weekly else ''}{label}.csv"
            frame.to_csv(stage / name, index=False, lineterminator="\n")
            last = str(period + np.timedelta64(6 if weekly else 0, "D"))
            failures = verify_period_file(
                stage / name, population, node, k, columns, (label, last), kept.size
            )
            if failures:
                raise VerificationError(
                    "a written release failed its independent privacy check: " + "; ".join(failures)
                )
            code = space.format(node)
            result.periods.append(
                PeriodRelease(label, code, name, rows.size, kept.size, rows.size - kept.size)
            )
        doc = {"k": k, "weekly": weekly, "columns": columns, **result.to_dict()}
        (stage / "release.json").write_text(json.dumps(doc, indent=2) + "\n")
        output.publish()
    return result
