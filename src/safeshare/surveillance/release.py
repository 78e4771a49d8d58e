"""The release step: each period's incoming case records under that week's policy (issue 10).

For every period (a day, or a Sunday-Saturday week with ``weekly``) that has records:

1. the policy is the one of the week holding the period (a schedule from ``surveil select``,
   or one policy for every week); "do not share" writes nothing for the period;
2. each record's demographics are replaced by their labels at the policy's levels
   (``5-year`` ages as ``35-39``, race ``white-or-black``, ``*`` for a suppressed dimension);
3. a record whose *population bin* -- the people of its region in its generalized group -- holds
   fewer than ``k`` people is suppressed (dropped): such a group is rare in the population
   itself, so a record in it is close to unique whatever the case volume;
4. only ``region``, ``date`` (the week's first day for weekly releases) and the dimensions are
   written, plus the columns named in ``keep``: other columns (a case id) may identify people.

Through the same machinery as ``anonymize`` (no second writer): the records are read by an
:class:`~safeshare.data.engines.base.Engine` (memory or DuckDB, CSV or Parquet), which returns
only the distinct ``(region, date, demographics)`` tuples with their counts; from those, each
period gets a :class:`~safeshare.data.engines.base.ReleasePlan` whose generalization maps every
column's raw values to its released labels (``region`` unchanged; ``date`` to the period's label,
or to :data:`OTHER_PERIOD` for the records of other periods) and whose suppressed tuples are the
generalized tuples of other periods and of small population bins. ``Engine.write_release`` writes
the period's file (CSV or Parquet, rows in release order: the same bytes from either engine), which
is then re-read by :func:`safeshare.verify.verify_release` (columns allowed, labels of the policy's
levels, the date, no record added) with its ``population-bins`` check
(:mod:`safeshare.verify.population_bins`, computed from the file and the population table alone),
and the directory is published by :class:`safeshare.io.OutputDirectory` (lock, stage, one atomic
swap): ``OUT`` is the complete previous release or the complete new one. A failed check publishes
nothing.

What is published says nothing about records it does not release (issue 18): a period that is not
shared, or whose records are all suppressed, gets no file, and ``release.json`` lists only the files
written (period, policy, records in the file). The records received, suppressed and kept back per
period go, if asked for, to a custodian-only log outside the published folder.
"""

from __future__ import annotations

import csv
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from safeshare.app_runner import to_json
from safeshare.core.lattice import Node
from safeshare.data.engines.base import COUNT_COLUMN, Engine, OutputFormat, ReleasePlan
from safeshare.errors import DataError, InputError, VerificationError
from safeshare.io import OutputDirectory, atomic_write_text
from safeshare.surveillance.inputs import Population, _read_csv
from safeshare.surveillance.policies import PolicySpace
from safeshare.surveillance.search import DO_NOT_SHARE
from safeshare.surveillance.simulate import check_k
from safeshare.verify import Expectations, Verification, verify_release

#: The ``date`` label of the records of other periods in a period's plan (all suppressed, never written).
OTHER_PERIOD = "(another period)"


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
    """The periods of a release: every period with records (:attr:`periods`, the custodian's view) and
    the files published (:attr:`released`, the only ones ``release.json`` describes)."""

    out_dir: Path
    k: int = 11
    weekly: bool = False
    columns: list[str] = field(default_factory=list)
    engine: str = "memory"
    format: str = "csv"
    periods: list[PeriodRelease] = field(default_factory=list)

    @property
    def released(self) -> list[PeriodRelease]:
        """The periods with a published file (at least one record released)."""
        return [p for p in self.periods if p.file is not None]

    def published_doc(self) -> dict[str, Any]:
        """``release.json``: what was released, and nothing about what was not (issue 18 item 3): no
        "do not share" period, no period whose records were all suppressed, no count of records kept
        back (neither per period nor in total)."""
        return {
            "k": self.k,
            "weekly": self.weekly,
            "columns": self.columns,
            "engine": self.engine,
            "format": self.format,
            "files": [
                {"file": p.file, "period": p.period, "policy": p.policy, "records": p.records_out}
                for p in self.released
            ],
            "records": sum(p.records_out for p in self.released),
            "verified": True,
        }

    def to_dict(self) -> dict[str, Any]:
        """What ``--json`` prints and the Python API compares: :meth:`published_doc` (release.json),
        never the custodian's counts of the records kept back."""
        return self.published_doc()

    def lines(self) -> list[str]:
        """The terminal's view of a release (the custodian's: it counts the records kept back too)."""
        lines = [f"{p.period}  {p.policy:>12}  {p.records_out} records -> {p.file}" for p in self.released]
        doc = self.custodian_doc()
        lines.append(
            f"{doc['records_out']} of {doc['records_in']} records released in {len(self.released)} "
            f"file(s) ({doc['records_in'] - doc['records_out']} suppressed or not shared), every file "
            f"verified -> {self.out_dir}"
        )
        return lines

    def custodian_doc(self) -> dict[str, Any]:
        """The custodian-only log (never published): every period with records, shared or not, with
        the records received, released and suppressed."""
        return {
            "note": "CUSTODIAN ONLY: describes records that were not released; do not publish this file",
            "k": self.k,
            "weekly": self.weekly,
            "periods": [vars(p) for p in self.periods],
            "records_in": sum(p.records_in for p in self.periods),
            "records_out": sum(p.records_out for p in self.periods),
            "suppressed": sum(p.suppressed for p in self.periods),
        }


def population_of_labels(population: Population, node: Node) -> pd.DataFrame:
    """People per region and generalized group, computed from the labels (not the bin groupings)."""
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


def _population_rows(population: Population) -> dict[str, list[Any]]:
    """The population table as plain columns (region, leaf labels, people), populated bins only."""
    space = population.space
    regions, bins = np.nonzero(population.counts)
    leaves = np.unravel_index(bins, space.shape)
    out: dict[str, list[Any]] = {"region": [population.regions[r] for r in regions]}
    for dim, leaf in zip(space.dimensions, leaves, strict=True):
        out[dim.name] = [dim.leaves[i] for i in leaf]
    out["people"] = population.counts[regions, bins].tolist()
    return out


def verify_period(
    path: Path,
    fmt: OutputFormat,
    population: Population,
    node: Node,
    k: int,
    columns: list[str],
    period: str,
    records_in: int,
    population_rows: dict[str, list[Any]] | None = None,
) -> Verification:
    """The shared verifier on one written period file, stated from the options and the policy alone:
    exactly ``columns``; ``region`` a region of the population table, ``date`` the period's label,
    every dimension a label of the policy's level; no more records than the period's ``records_in``;
    and the ``population-bins`` check (every record's population bin at least ``k`` people)."""
    space = population.space
    allowed: dict[str, set[str]] = {"region": set(population.regions), "date": {period}}
    labels: dict[str, dict[str, str]] = {}
    for dim, level in zip(space.dimensions, node, strict=True):
        allowed[dim.name] = set(dim.levels[level].groups)
        labels[dim.name] = {leaf: dim.levels[level].groups[i] for i, leaf in enumerate(dim.leaves)}
    rows = population_rows if population_rows is not None else _population_rows(population)
    expected = Expectations(
        columns=columns,
        quasi_identifiers=["region", "date", *space.names],
        allowed_labels=allowed,
        records_in=records_in,
        max_suppression=1.0,  # population-bin suppression has no limit: it is checked record by record
        k=1,
        models={"population-bins": {"k": k, "region": "region", "labels": labels, "population": rows}},
    )
    return verify_release(path, fmt, expected)


def _line_of(path: str, column: str, value: str | None) -> str:
    """``file:LINE`` of the first CSV record whose ``column`` holds ``value`` (stripped), for an error
    message (the engines return distinct values, not lines); ``file`` alone when not found."""
    try:
        with open(path, newline="", encoding="utf-8") as fh:
            reader = csv.reader(fh)
            header = [h.strip() for h in next(reader)]
            j = header.index(column)
            for row in reader:
                if j < len(row) and row[j].strip() == (value or ""):
                    return f"{path}:{reader.line_num}"
    except (OSError, UnicodeDecodeError, StopIteration, ValueError, csv.Error):
        pass
    return path


@dataclass(frozen=True)
class _Tuples:
    """The distinct raw ``(region, date, demographics)`` tuples of the records, parsed."""

    raw: pd.DataFrame  # text columns region, date, dimensions (as the engine read them)
    counts: np.ndarray  # records per tuple
    region: np.ndarray  # row of the population table
    day: np.ndarray  # datetime64[D]
    leaves: list[np.ndarray]  # leaf index per dimension


def _distinct_tuples(engine: Engine, population: Population, records_path: str) -> _Tuples:
    """The engine's ``GROUP BY`` of the records, validated value by value (one-line errors)."""
    space = population.space
    cols = ["region", "date", *space.names]
    missing = [c for c in cols if c not in engine.columns()]
    if missing:
        raise DataError(f"{records_path}:1: missing column(s) {missing}; the header is {engine.columns()}")
    grouped = engine.grouped_counts(cols)
    raw = grouped[cols].astype(object).where(grouped[cols].notna(), None)

    def bad(column: str, value: Any, why: str) -> DataError:
        where = _line_of(records_path, column, value)
        return DataError(f"{where}: column {column!r}: {value!r} {why}")

    region_row = {r: i for i, r in enumerate(population.regions)}
    region = np.empty(len(raw), dtype=np.int64)
    for i, value in enumerate(raw["region"]):
        if value not in region_row:
            raise bad("region", value, "is not in the population table")
        region[i] = region_row[value]
    dates = pd.to_datetime(raw["date"], format="%Y-%m-%d", errors="coerce")
    if dates.isna().any():
        raise bad("date", raw["date"][dates.isna()].iloc[0], "is not a YYYY-MM-DD date")
    leaves = []
    for dim in space.dimensions:
        index = {label: i for i, label in enumerate(dim.leaves)}
        idx = np.empty(len(raw), dtype=np.int64)
        for i, value in enumerate(raw[dim.name]):
            if value not in index:
                shown = ", ".join(dim.leaves[:8]) + (", ..." if len(dim.leaves) > 8 else "")
                raise bad(dim.name, value, f"is not a label of {dim.name} ({shown})")
            idx[i] = index[value]
        leaves.append(idx)
    counts = grouped[COUNT_COLUMN].to_numpy(dtype=np.int64)
    # nobody is a case twice: more records than people means a wrong population table or region
    per_region = np.bincount(region, weights=counts, minlength=len(population.regions))
    people = population.counts.sum(axis=1)
    over = np.flatnonzero(per_region > people)
    if over.size:
        r = int(over[0])
        raise DataError(
            f"{records_path}: region {population.regions[r]!r} has {int(per_region[r]):,} case records "
            f"but only {int(people[r]):,} people in the population table"
        )
    return _Tuples(raw, counts, region, dates.to_numpy().astype("datetime64[D]"), leaves)


def plan_period(
    population: Population,
    tuples: _Tuples,
    in_period: np.ndarray,
    node: Node,
    label: str,
    k: int,
    columns: list[str],
    fmt: OutputFormat,
) -> tuple[ReleasePlan, int, int]:
    """The period's plan, its records and the records it keeps (see the module docstring)."""
    space = population.space
    grouping, n_groups = space.grouping(node)
    bins_people = np.stack(
        [np.bincount(grouping, weights=row, minlength=n_groups) for row in population.counts]
    ).astype(np.int64)
    group = grouping[space.bin_index(tuples.leaves)]
    people = bins_people[tuples.region, group]
    kept = in_period & (people >= k)
    raw = tuples.raw
    generalization: dict[str, dict[str, str]] = {
        "region": {v: v for v in pd.unique(raw["region"])},
        "date": {},
    }
    for value, inside in zip(raw["date"], in_period, strict=True):
        generalization["date"][value] = label if inside else OTHER_PERIOD  # in_period is the date's
    released: dict[str, np.ndarray] = {
        "region": raw["region"].to_numpy(dtype=object),
        "date": np.where(in_period, label, OTHER_PERIOD).astype(object),
    }
    for dim, level, leaf in zip(space.dimensions, node, tuples.leaves, strict=True):
        labels = np.asarray(dim.levels[level].groups, dtype=object)
        generalization[dim.name] = {dim.leaves[i]: str(labels[i]) for i in range(len(dim.leaves))}
        released[dim.name] = labels[leaf]
    qis = ["region", "date", *space.names]
    suppressed = pd.DataFrame({q: released[q][~kept] for q in qis}).drop_duplicates(ignore_index=True)
    plan = ReleasePlan(columns=columns, generalization=generalization, suppressed=suppressed, format=fmt)
    return plan, int(tuples.counts[in_period].sum()), int(tuples.counts[kept].sum())


def check_custodian_log(log: Path | None, out_dir: Path) -> None:
    """The custodian log describes unreleased records, so it must lie outside the published folder."""
    if log is None:
        return
    out = Path(os.path.realpath(out_dir))
    where = Path(os.path.realpath(log))
    if where == out or where.is_relative_to(out):
        raise InputError(
            f"--custodian-log {log}: it lies inside the published folder {out_dir}; "
            "it describes records that are not released, so write it elsewhere"
        )
    if where.is_dir():
        raise InputError(f"--custodian-log {log}: is a directory; give a file name")


def release_cases(
    population: Population,
    engine: Engine,
    schedule: WeeklyPolicies | Node,
    out_dir: Path,
    k: int = 11,
    weekly: bool = False,
    keep: list[str] | None = None,
    records_path: str = "case records",
    fmt: OutputFormat = "csv",
    custodian_log: Path | None = None,
) -> SurveillanceRelease:
    """Write, verify and publish one release file per period with records released (see the module
    docstring).

    ``engine`` reads the case records; ``schedule`` is the weekly schedule or one policy for every
    week; ``fmt`` is the release files' format (``csv`` or ``parquet``). A period that is not shared or
    whose records are all suppressed gets no file, and ``release.json`` names only the files written:
    nothing published tells of records not released. ``custodian_log`` (a file outside ``out_dir``)
    receives every period's records in, out and suppressed, after the folder is published."""
    check_k(k)
    check_custodian_log(custodian_log, out_dir)
    if fmt not in ("csv", "parquet"):
        raise InputError(f"--format: csv or parquet, got {fmt!r}")
    space = population.space
    keep = keep or []
    if len(set(keep)) != len(keep):
        raise InputError(f"--keep: a column is named twice ({', '.join(keep)})")
    for col in keep:
        if col not in engine.columns():
            raise InputError(f"--keep: {records_path} has no column {col!r}")
        if col in ("region", "date", *space.names):
            raise InputError(f"--keep: {col!r} is always released")
    tuples = _distinct_tuples(engine, population, records_path)
    if not isinstance(schedule, WeeklyPolicies):
        schedule = constant_schedule(schedule, np.unique(tuples.day))
    periods = _week_start(tuples.day) if weekly else tuples.day
    for value, day in zip(tuples.raw["date"], tuples.day, strict=True):
        if not schedule.policy_on(day)[0]:
            where = _line_of(records_path, "date", value)
            raise DataError(f"{where}: column 'date': {day} is in no week of the schedule")
    columns = ["region", "date", *space.names, *keep]
    rows = _population_rows(population)
    result = SurveillanceRelease(Path(out_dir), k, weekly, columns, engine.name, fmt)
    output = OutputDirectory(Path(out_dir))
    with output as stage:
        for period in np.unique(periods):
            in_period = periods == period
            _, node = schedule.policy_on(period if not weekly else tuples.day[in_period].min())
            label = str(period)
            records_in = int(tuples.counts[in_period].sum())
            if node is None:
                result.periods.append(PeriodRelease(label, DO_NOT_SHARE, None, records_in, 0, 0))
                continue
            plan, records_in, records_out = plan_period(
                population, tuples, in_period, node, label, k, columns, fmt
            )
            if records_out == 0:
                # every record suppressed: no (empty) file, whose name would tell that records came in
                result.periods.append(
                    PeriodRelease(label, space.format(node), None, records_in, 0, records_in)
                )
                continue
            name = f"release_{'week_' if weekly else ''}{label}.{fmt}"
            written = engine.write_release(plan, stage / name)
            check = verify_period(stage / name, fmt, population, node, k, columns, label, records_in, rows)
            failures = list(check.failures)
            if written != records_out or check.records_out != records_out:
                failures.append(
                    f"{written} records written, {check.records_out} read back, {records_out} planned"
                )
            if failures:
                raise VerificationError(
                    f"the release {name} failed its independent privacy check: " + "; ".join(failures)
                )
            code = space.format(node)
            result.periods.append(
                PeriodRelease(label, code, name, records_in, records_out, records_in - records_out)
            )
        (stage / "release.json").write_text(to_json(result.published_doc(), indent=2) + "\n")
        output.publish()
    if custodian_log is not None:
        atomic_write_text(Path(custodian_log), to_json(result.custodian_doc(), indent=2) + "\n")
    return result
