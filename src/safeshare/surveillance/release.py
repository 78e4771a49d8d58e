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

import contextlib
import csv
import os
import time
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pandas as pd

from safeshare.app_runner import to_json
from safeshare.config.vocabulary import SMALL_CELL
from safeshare.core.lattice import Node
from safeshare.data.engines.base import COUNT_COLUMN, Engine, MixedReleasePlan, OutputFormat, ReleasePlan
from safeshare.errors import DataError, InputError, VerificationError
from safeshare.io import OutputDirectory, atomic_write_text, sha256_file
from safeshare.surveillance.cdc import SOURCE as CDC_SOURCE
from safeshare.surveillance.cdc import SUBPOPULATION, CdcRules, Unit, apply_rules, check_population
from safeshare.surveillance.inputs import Population, _read_csv
from safeshare.surveillance.policies import PolicySpace
from safeshare.surveillance.search import DO_NOT_SHARE
from safeshare.surveillance.series import (
    PeriodState,
    Published,
    SeriesConflict,
    SeriesContext,
    admissible,
    conflict_message,
    remedy,
    series_hierarchy,
)
from safeshare.surveillance.simulate import check_k
from safeshare.verify import Expectations, Verification, verify_release
from safeshare.verify.cdc_rules import suppressed_fields
from safeshare.verify.series import (
    Publication,
    SeriesFinding,
    SeriesHierarchy,
    check_series,
    read_publication,
)

#: The series ledger's file name in a release folder (:mod:`safeshare.workflows.series_ledger`).
SERIES_LEDGER = "series.jsonl"

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
    #: what the series check made of the period (custodian only): frozen, coarsened, withheld, held back
    series: list[str] = field(default_factory=list)


@dataclass
class SurveillanceRelease:
    """The periods of a release: every period with records (:attr:`periods`, the custodian's view) and
    the files published (:attr:`released`, the only ones ``release.json`` describes)."""

    out_dir: Path
    k: int = SMALL_CELL
    weekly: bool = False
    columns: list[str] = field(default_factory=list)
    engine: str = "memory"
    format: str = "csv"
    periods: list[PeriodRelease] = field(default_factory=list)
    #: the release's number in its series and the ledger published beside it (None: no series)
    series: dict[str, Any] | None = None
    #: the per-release log of a CDC-style rule set (None: population-bin suppression)
    rules: dict[str, Any] | None = None
    #: seconds of the run's parts (not published): ``series_check`` (reading back and checking)
    timings: dict[str, float] = field(default_factory=dict)

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
            **({"series": self.series} if self.series is not None else {}),
            **({"rules": self.rules} if self.rules is not None else {}),
        }

    def to_dict(self) -> dict[str, Any]:
        """What ``--json`` prints and the Python API compares: :meth:`published_doc` (release.json),
        never the custodian's counts of the records kept back."""
        return self.published_doc()

    def lines(self) -> list[str]:
        """The terminal's view of a release (the custodian's: it counts the records kept back too)."""
        lines = [f"{p.period}  {p.policy:>12}  {p.records_out} records -> {p.file}" for p in self.released]
        lines += [f"{p.period}  series check: {action}" for p in self.periods for action in p.series]
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
    withheld: Collection[tuple[str, ...]] = (),
) -> tuple[ReleasePlan, int, int]:
    """The period's plan, its records and the records it keeps (see the module docstring);
    ``withheld``: released tuples ``(region, labels...)`` kept back as well (the series' complementary
    suppression, :mod:`safeshare.surveillance.series`)."""
    space = population.space
    kept = in_period & (_bin_people(population, tuples, node) >= k)
    if withheld:
        kept &= ~np.isin(_released_keys(space, tuples, node), np.array(sorted(map("\x1f".join, withheld))))
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


def _bin_people(population: Population, tuples: _Tuples, node: Node) -> np.ndarray:
    """The people of each tuple's population bin (its region, its generalized group) under ``node``."""
    space = population.space
    grouping, n_groups = space.grouping(node)
    bins_people = np.stack(
        [np.bincount(grouping, weights=row, minlength=n_groups) for row in population.counts]
    ).astype(np.int64)
    people: np.ndarray = bins_people[tuples.region, grouping[space.bin_index(tuples.leaves)]]
    return people


def _released_keys(space: PolicySpace, tuples: _Tuples, node: Node) -> np.ndarray:
    """Each tuple's released ``region`` and labels under ``node``, joined by U+001F (one text key)."""
    parts = [tuples.raw["region"].to_numpy(dtype=object)]
    for dim, level, leaf in zip(space.dimensions, node, tuples.leaves, strict=True):
        parts.append(np.asarray(dim.levels[level].groups, dtype=object)[leaf])
    keys: np.ndarray = np.array(
        ["\x1f".join(map(str, row)) for row in zip(*parts, strict=True)], dtype=object
    )
    return keys


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


#: A released cell (region and labels) and its records.
Cell = tuple[tuple[str, ...], int]


@dataclass
class _Written:
    """A period as written this round: its outcome, its file's publication, what produced it."""

    period: PeriodRelease
    published: Published | None
    signature: tuple[Any, ...]
    #: a CDC-style release's suppressed fields per column (computed from the written file)
    fields: dict[str, int] = field(default_factory=dict)

    @property
    def publication(self) -> Publication | None:
        return None if self.published is None else self.published.publication


def _signature(state: PeriodState) -> tuple[Any, ...]:
    return (state.node, frozenset(state.withheld), state.frozen, state.held)


def release_cases(
    population: Population,
    engine: Engine,
    schedule: WeeklyPolicies | Node,
    out_dir: Path,
    k: int = SMALL_CELL,
    weekly: bool = False,
    keep: list[str] | None = None,
    records_path: str = "case records",
    fmt: OutputFormat = "csv",
    custodian_log: Path | None = None,
    series: SeriesContext | None = None,
    rules: CdcRules | None = None,
) -> SurveillanceRelease:
    """Write, verify and publish one release file per period with records released (see the module
    docstring).

    ``engine`` reads the case records; ``schedule`` is the weekly schedule or one policy for every
    week; ``fmt`` is the release files' format (``csv`` or ``parquet``). A period that is not shared or
    whose records are all suppressed gets no file, and ``release.json`` names only the files written:
    nothing published tells of records not released. ``custodian_log`` (a file outside ``out_dir``)
    receives every period's records in, out and suppressed, after the folder is published.

    ``series``: the earlier releases of the series (:mod:`safeshare.surveillance.series`): the
    written files are checked against them by :func:`safeshare.verify.series.check_series` before
    anything is published; a finding refuses the release (:class:`SeriesConflict`, the cell named) or,
    with ``on_conflict`` ``suppress`` / ``coarsen``, withholds more until the verifier finds nothing;
    the context then stages the series ledger into the folder, published with the release.

    ``rules``: a CDC public-use-style rule set (:mod:`safeshare.surveillance.cdc`) instead of the
    population-bin suppression: fields are suppressed (``NA``), checked by
    :mod:`safeshare.verify.cdc_rules` on every file, and the per-release log (``rules_log.md``, and
    ``rules`` in release.json) names each rule, its threshold and source, and the fields suppressed."""
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
    if rules is not None:
        check_population(population, rules)  # the rule set's needs, before any record is read
    tuples = _distinct_tuples(engine, population, records_path)
    if not isinstance(schedule, WeeklyPolicies):
        schedule = constant_schedule(schedule, np.unique(tuples.day))
    periods = _week_start(tuples.day) if weekly else tuples.day
    for value, day in zip(tuples.raw["date"], tuples.day, strict=True):
        if not schedule.policy_on(day)[0]:
            where = _line_of(records_path, "date", value)
            raise DataError(f"{where}: column 'date': {day} is in no week of the schedule")
    columns = ["region", "date", *space.names, *keep]
    job = _Job(population, engine, tuples, k, weekly, columns, fmt, _population_rows(population), rules)
    states: list[PeriodState] = []
    for period in np.unique(periods):
        in_period = periods == period
        _, node = schedule.policy_on(period if not weekly else tuples.day[in_period].min())
        first = int(np.datetime64(period, "D").astype(np.int64))
        state = PeriodState(str(period), (first, first + (6 if weekly else 0)), node, node)
        job.masks[state.label] = in_period
        states.append(state)
    result = SurveillanceRelease(Path(out_dir), k, weekly, columns, engine.name, fmt)
    if series is not None and series.stage_ledger is not None:
        result.series = {"release": series.seq, "ledger": SERIES_LEDGER}
    output = OutputDirectory(Path(out_dir))
    with output as stage, contextlib.closing(job):
        written = _release_rounds(job, states, stage, series)
        result.periods = [w.period for w in written]
        result.timings["series_check"] = job.series_seconds
        if rules is not None:
            result.rules = rules_doc(rules, {w.period.file: w.fields for w in written if w.period.file})
            (stage / "rules_log.md").write_text(rules_log_markdown(result.rules), encoding="utf-8")
        (stage / "release.json").write_text(to_json(result.published_doc(), indent=2) + "\n")
        if series is not None and series.stage_ledger is not None:
            series.stage_ledger(stage, [w.published for w in written if w.published is not None])
        output.publish()
    if custodian_log is not None:
        atomic_write_text(Path(custodian_log), to_json(result.custodian_doc(), indent=2) + "\n")
    return result


@dataclass
class _Job:
    """What every period of a release shares."""

    population: Population
    engine: Engine
    tuples: _Tuples
    k: int
    weekly: bool
    columns: list[str]
    fmt: OutputFormat
    rows: dict[str, list[Any]]
    rules: CdcRules | None = None
    masks: dict[str, np.ndarray] = field(default_factory=dict)
    #: seconds spent reading back the publications and checking them against the series
    series_seconds: float = 0.0

    def close(self) -> None:
        if "con" in self.__dict__:
            self.__dict__.pop("con").close()

    @cached_property
    def hierarchy(self) -> SeriesHierarchy:
        return series_hierarchy(self.population)

    @cached_property
    def con(self) -> duckdb.DuckDBPyConnection:
        """One connection for reading back this release's publications (closed by release_cases)."""
        con = duckdb.connect()
        con.execute("SET threads TO 1")
        return con


#: Rounds of remedies before a release is refused as not converging (each round removes detail).
MAX_ROUNDS = 10_000


def _release_rounds(
    job: _Job, states: list[PeriodState], stage: Path, series: SeriesContext | None
) -> list[_Written]:
    """Write and verify every period; with a series, check it and apply remedies until it passes."""
    written: dict[str, _Written] = {}
    by_name: dict[str, PeriodState] = {}
    for _round in range(MAX_ROUNDS):
        for state in states:
            old = written.get(state.label)
            if old is not None and old.signature == _signature(state):
                continue
            if old is not None and old.period.file is not None:
                (stage / old.period.file).unlink(missing_ok=True)
            written[state.label] = _write_period(job, state, stage)
            pub = written[state.label].publication
            if pub is not None:
                by_name[pub.name] = state
        if series is None:
            break
        new = [w.publication for w in written.values() if w.publication is not None]
        started = time.perf_counter()
        findings = check_series([*series.history, *new], job.hierarchy, job.k)
        job.series_seconds += time.perf_counter() - started
        if not findings:
            break
        if series.on_conflict == "refuse":
            raise SeriesConflict(conflict_message(findings))
        changed: set[str] = set()
        for finding in findings:
            state = by_name[finding.publication]
            if state.label in changed:
                continue  # one remedy per period and round: the next round's check decides
            current = written[state.label].publication

            def step(s: PeriodState, f: SeriesFinding) -> Node | None:
                return _coarsen_step(job, s, f)

            def cells(s: PeriodState, f: SeriesFinding, pub: Publication | None = current) -> list[Cell]:
                return _cells_in(job, pub, f)

            if remedy(state, finding, series, job.population.space, step, cells):
                changed.add(state.label)
        if not changed:
            raise SeriesConflict(conflict_message(findings))
    else:
        raise SeriesConflict(f"the series' remedies did not converge in {MAX_ROUNDS} rounds")
    return [written[s.label] for s in states]


def _write_period(job: _Job, state: PeriodState, stage: Path) -> _Written:
    """One period's file (planned, or an earlier file re-published), verified, and its publication."""
    space = job.population.space
    in_period = job.masks[state.label]
    records_in = int(job.tuples.counts[in_period].sum())
    signature = _signature(state)
    if state.node is None and state.frozen is None:
        return _Written(PeriodRelease(state.label, DO_NOT_SHARE, None, records_in, 0, 0), None, signature)
    if state.held:
        code = space.format(state.node) if state.node is not None else DO_NOT_SHARE
        period = PeriodRelease(state.label, code, None, records_in, 0, records_in, list(state.actions))
        return _Written(period, None, signature)
    planned: int | None
    if state.frozen is not None:
        name, node = state.frozen.file, space.parse(state.frozen.policy)
        fmt: OutputFormat = "parquet" if name.endswith(".parquet") else "csv"
        (stage / name).write_bytes(state.frozen.path.read_bytes())
        if sha256_file(stage / name) != state.frozen.sha256:
            raise SeriesConflict(f"{state.frozen.path}: it is not the file the series ledger recorded")
        planned = None
    else:
        assert state.node is not None
        node, fmt = state.node, job.fmt
        name = f"release_{'week_' if job.weekly else ''}{state.label}.{job.fmt}"
        if job.rules is not None:
            planned = _write_cdc_file(job, state, stage / name)
        else:
            plan, records_in, planned = plan_period(
                job.population,
                job.tuples,
                in_period,
                node,
                state.label,
                job.k,
                job.columns,
                job.fmt,
                state.withheld,
            )
            if planned:
                written = job.engine.write_release(plan, stage / name)
                if written != planned:
                    raise VerificationError(
                        f"the release {name}: {written} records written, {planned} planned"
                    )
        if planned == 0:
            # every record suppressed: no (empty) file, whose name would tell that records came in
            period = PeriodRelease(
                state.label, space.format(node), None, records_in, 0, records_in, list(state.actions)
            )
            return _Written(period, None, signature)
    columns = job.columns if state.frozen is None else _columns_of(stage / name, fmt)
    rules = job.rules
    if rules is not None:
        check = verify_cdc_period(
            stage / name, fmt, job.population, node, rules, columns, state.label, records_in, job.rows
        )
    else:
        check = verify_period(
            stage / name, fmt, job.population, node, job.k, columns, state.label, records_in, job.rows
        )
    failures = list(check.failures)
    if planned is not None and check.records_out != planned:
        failures.append(f"{check.records_out} records read back, {planned} planned")
    if failures:
        raise VerificationError(
            f"the release {name} failed its independent privacy check: " + "; ".join(failures)
        )
    out = check.records_out
    period = PeriodRelease(
        state.label, space.format(node), name, records_in, out, records_in - out, list(state.actions)
    )
    na = None if rules is None else rules.na
    levels = admissible(node, fields=rules is not None)
    started = time.perf_counter()
    pub = read_publication(
        stage / name,
        fmt,
        name=f"{name} (this release)",
        first_day=state.span[0],
        last_day=state.span[1],
        hierarchy=job.hierarchy,
        admissible=levels,
        na=na,
        con=job.con,
    )
    job.series_seconds += time.perf_counter() - started
    fields = (
        {}
        if rules is None
        else suppressed_fields(stage / name, fmt, ["region", "date", *space.names], rules.na)
    )
    return _Written(period, Published(pub, name, space.format(node), levels, na), signature, fields)


def _write_cdc_file(job: _Job, state: PeriodState, target: Path) -> int:
    """One period under the CDC-style rule set: fields suppressed by :func:`apply_rules`, written as a
    mixed plan (labels per raw tuple) to ``target``; the records written (0: no file)."""
    rules, node = job.rules, state.node
    assert rules is not None and node is not None
    space = job.population.space
    tuples, in_period = job.tuples, job.masks[state.label]
    rows = np.flatnonzero(in_period)
    units: dict[tuple[str, ...], Unit] = {}
    owner = []
    for i in rows:
        labels = tuple(
            str(dim.levels[level].groups[int(leaf[i])])
            for dim, level, leaf in zip(space.dimensions, node, tuples.leaves, strict=True)
        )
        key = (str(tuples.raw["region"].iloc[i]), *labels)
        unit = units.get(key)
        if unit is None:
            unit = units[key] = Unit(key[0], labels, 0)
        unit.n += int(tuples.counts[i])
        owner.append(unit)
    apply_rules(list(units.values()), job.population, node, rules)
    qis = ["region", "date", *space.names]
    keys, out = [], []
    for i, unit in zip(rows, owner, strict=True):
        if unit.dropped:
            continue
        keys.append([tuples.raw[q].iloc[i] for q in qis])
        released = unit.released(rules)
        out.append([released[0], state.label, *released[1:]])
    planned = int(sum(u.n for u in units.values() if not u.dropped))
    if planned == 0:
        return 0
    plan = MixedReleasePlan(
        columns=job.columns,
        quasi_identifiers=qis,
        keys=pd.DataFrame(keys, columns=qis),
        labels=pd.DataFrame(out, columns=qis),
        format=job.fmt,
    )
    written = job.engine.write_mixed_release(plan, target)
    if written != planned:
        raise VerificationError(f"the release {target.name}: {written} records written, {planned} planned")
    return planned


def verify_cdc_period(
    path: Path,
    fmt: OutputFormat,
    population: Population,
    node: Node,
    rules: CdcRules,
    columns: list[str],
    period: str,
    records_in: int,
    population_rows: dict[str, list[Any]],
) -> Verification:
    """The shared verifier on one file of a CDC-style release, stated from the options and the policy
    alone: exactly ``columns``; the region a county of the population table, a state of it (two
    digits) or the token; ``date`` the period; every dimension a label of the policy's level or the
    token; no more records than the period has; and every rule (:mod:`safeshare.verify.cdc_rules`)."""
    space = population.space
    states = {r[:2] for r in population.regions}
    allowed: dict[str, set[str]] = {"region": {*population.regions, *states, rules.na}, "date": {period}}
    labels: dict[str, dict[str, str]] = {}
    for dim, level in zip(space.dimensions, node, strict=True):
        allowed[dim.name] = {*dim.levels[level].groups, rules.na}
        labels[dim.name] = {leaf: dim.levels[level].groups[i] for i, leaf in enumerate(dim.leaves)}
    params = {
        **rules.params(),
        "region": "region",
        "dims": list(SUBPOPULATION),
        "labels": {d: labels[d] for d in SUBPOPULATION},
        "population": population_rows,
    }
    expected = Expectations(
        columns=columns,
        quasi_identifiers=["region", "date", *space.names],
        allowed_labels=allowed,
        records_in=records_in,
        max_suppression=1.0,  # a record is dropped only when rule #6 leaves no field to suppress
        k=1,
        models={"cdc-rules": params},
    )
    return verify_release(path, fmt, expected)


def rules_doc(rules: CdcRules, files: Mapping[str, Mapping[str, int]]) -> dict[str, Any]:
    """The per-release log of a CDC-style release (release.json's ``rules``, ``rules_log.md``): the
    rule set, its rules with thresholds and sources, every file checked (each rule re-made on the
    written file: 0 violations, or nothing is published) and its suppressed fields per column."""
    return {
        "name": rules.name,
        "source": CDC_SOURCE,
        "rules": rules.table(),
        "files": {name: {"violations": 0, "suppressed_fields": dict(f)} for name, f in sorted(files.items())},
    }


def rules_log_markdown(doc: Mapping[str, Any]) -> str:
    """``rules_log.md``: :func:`rules_doc` as a page."""
    lines = [f"# Rule set {doc['name']}: per-release log", "", f"Thresholds from {doc['source']}.", ""]
    lines += ["| rule | what | threshold | source |", "|---|---|---|---|"]
    for r in doc["rules"]:
        threshold = (
            ""
            if r["threshold"] is None
            else f"{r['threshold']:,}"
            if isinstance(r["threshold"], int)
            else str(r["threshold"])
        )
        lines.append(f"| {r['rule']} | {r['what']} | {threshold} | {r['source']} |")
    lines += [
        "",
        "Every rule re-checked on every written file by the independent verifier (0 violations):",
        "",
    ]
    for name, f in doc["files"].items():
        fields = f["suppressed_fields"]
        shown = ", ".join(f"{c} {n}" for c, n in fields.items() if c != "records")
        lines.append(f"* `{name}`: {fields['records']} records; fields suppressed (NA): {shown}")
    return "\n".join(lines) + "\n"


def _columns_of(path: Path, fmt: OutputFormat) -> list[str]:
    """The columns of an earlier release file (re-published as it was)."""
    if fmt == "parquet":
        return [str(c) for c in pd.read_parquet(path).columns]
    with open(path, newline="", encoding="utf-8") as fh:
        return next(csv.reader(fh))


def _cells_in(
    job: _Job, pub: Publication | None, finding: SeriesFinding
) -> list[tuple[tuple[str, ...], int]]:
    """The publication's cells inside the finding's revealing cell, fewest records first."""
    if pub is None or finding.cell is None or finding.at is None:
        return []
    out = []
    for levels, cells in pub.cells.items():
        for labels, n in cells.items():
            if job.hierarchy.coarsen_cell(levels, labels, finding.at) == finding.cell:
                out.append((labels, n))
    return sorted(out, key=lambda c: (c[1], c[0]))


def _coarsen_step(job: _Job, state: PeriodState, finding: SeriesFinding) -> Node | None:
    """The next coarser policy of a period that is part of a total: of the policies one step up, the
    one that suppresses fewest of the period's records in the revealing cell's region, then least Prec."""
    if state.node is None:
        return None
    space = job.population.space
    ups = space.lattice.successors(state.node)
    if not ups:
        return None
    in_period = job.masks[state.label]
    if finding.cell is not None:
        region = finding.cell[0]
        in_period = in_period & (job.tuples.raw["region"].to_numpy(dtype=object) == region)

    def cost(node: Node) -> tuple[int, float, Node]:
        lost = in_period & (_bin_people(job.population, job.tuples, node) < job.k)
        return int(job.tuples.counts[lost].sum()), space.precision_loss(node), node

    return min(ups, key=cost)
