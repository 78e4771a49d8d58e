"""Shared fixtures: the bundled UCI Adult data and random small datasets."""

from __future__ import annotations

import math
import os
import resource
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from safeshare import adult
from safeshare.core.frequency import FrequencyTable
from safeshare.data.engines.base import COUNT_COLUMN, ReleasePlan
from safeshare.data.engines.memory import MemoryEngine
from safeshare.data.schema import Attribute, Role, Schema
from safeshare.data.source import TableSource
from safeshare.hierarchy.hierarchy import Hierarchy
from safeshare.hierarchy.io import read_arx_csv

ROOT = Path(__file__).resolve().parent.parent
#: ``SAFESHARE_TEST_CPU=FILE``: append ``CPU seconds <TAB> wall seconds <TAB> machine CPU seconds
#: <TAB> test id`` per test to FILE (setup, call and teardown; CPU of the worker and of the child
#: processes it waited for), the profile of `make test` on a loaded machine, where ``--durations``
#: (wall time) measures the load (docs/testing.md, "Test time"). Each xdist worker appends its own
#: lines. The machine's CPU (every process's, from /proc/stat) counts what the worker never waits
#: for, Chromium and Spark's JVM: it is the test's own with one worker on a quiet machine
#: (``PYTEST_WORKERS=1``), and includes the other worker's with two.
_CPU_LOG = os.environ.get("SAFESHARE_TEST_CPU")


#: ``make test-all`` sets ``SAFESHARE_TEST_ALL=1``: every property test draws its full examples
EXHAUSTIVE = os.environ.get("SAFESHARE_TEST_ALL") == "1"


def examples(full: int, quick: int) -> int:
    """The examples a property test draws: ``full`` under ``make test-all``, ``quick`` under
    ``make test`` (the representative suite; issue 36: at most 10 minutes on 2 cores). The same
    property is checked in both; only the number of random tables differs."""
    return full if EXHAUSTIVE else quick


def _cpu_seconds() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _machine_cpu_seconds() -> float:
    """The CPU time every process of the machine has used (``/proc/stat``: all but idle and
    iowait), or NaN where there is no /proc."""
    try:
        with open("/proc/stat", encoding="ascii") as stat:
            fields = [int(v) for v in stat.readline().split()[1:9]]
    except (OSError, ValueError):
        return math.nan
    return (sum(fields) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    if not _CPU_LOG:
        yield
        return
    cpu, wall, machine = _cpu_seconds(), time.perf_counter(), _machine_cpu_seconds()
    yield
    spent = (_cpu_seconds() - cpu, time.perf_counter() - wall, _machine_cpu_seconds() - machine)
    line = "\t".join(f"{v:.3f}" for v in spent) + f"\t{item.nodeid}\n"
    with open(_CPU_LOG, "a", encoding="utf-8") as log:
        log.write(line)


#: The test files that take longest (wall seconds on 2 cores, measured with ``SAFESHARE_TEST_CPU``
#: under ``make test``; docs/testing.md "Test time"), longest first. ``make test`` hands whole files
#: to its workers in collection order (``--dist loadfile --no-loadscope-reorder``); these come first,
#: so that no worker is left alone with a long file at the end (xdist's own order, by the number of
#: tests, put the one-test browser walk last). The other files follow in their usual order.
LONGEST_FILES = (
    "test_risk_outputs.py",
    "test_ui.py",
    "test_determinism.py",
    "test_attack.py",
    "test_spark_engine.py",
    "test_api.py",
    "test_ui_risk.py",
    "test_ui_a11y.py",
    "test_ui_explore.py",
    "test_risk_intervals.py",
    "test_faults.py",
    "test_ui_walk.py",
    "test_l_diversity.py",
    "test_doc_snippets.py",
    "test_release_evidence.py",
    "test_persons.py",
    "test_surveillance_series.py",
    "test_local_release.py",
    "test_risk_cli.py",
    "test_t_closeness.py",
    "test_release_attack.py",
    "test_risk_evaluation.py",
    "test_ui_browser.py",
    "test_ui_projects.py",
    "test_risk_copulas.py",
    "test_ledger.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The files of :data:`LONGEST_FILES` first, longest first; the order within a file is kept."""
    rank = {name: i for i, name in enumerate(LONGEST_FILES)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))


ADULT_DIR = ROOT / "examples" / "adult"
ADULT_COLUMNS = list(adult.ADULT_COLUMNS)
ADULT_QIS = list(adult.ADULT_QUASI_IDENTIFIERS)


@pytest.fixture(scope="session")
def adult_engine() -> MemoryEngine:
    return MemoryEngine(TableSource(ADULT_DIR / "adult.data", header=False, names=tuple(ADULT_COLUMNS)))


@pytest.fixture(scope="session")
def adult_hierarchies() -> list[Hierarchy]:
    return [read_arx_csv(ADULT_DIR / "hierarchies" / f"{q}.csv") for q in ADULT_QIS]


@pytest.fixture(scope="session")
def adult_table(adult_engine: MemoryEngine, adult_hierarchies: list[Hierarchy]) -> FrequencyTable:
    grouped = adult_engine.grouped_counts(ADULT_QIS)
    return FrequencyTable.from_grouped(grouped, ADULT_QIS, adult_hierarchies)


def random_hierarchy(rng: np.random.Generator, n_values: int, height: int, name: str) -> Hierarchy:
    """A random consistent hierarchy over values v0..v{n-1} with ``height`` levels above them."""
    labels = [f"{name}{i}" for i in range(n_values)]
    rows = [[label] for label in labels]
    current = labels
    for level in range(1, height + 1):
        if level == height:
            parent = {c: "*" for c in current}
        else:
            n_groups = max(1, int(rng.integers(1, max(2, len(current)))))
            parent = {c: f"{name}L{level}g{int(rng.integers(0, n_groups))}" for c in current}
        for row in rows:
            row.append(parent[row[-1]])
        current = sorted(set(parent.values()))
    return Hierarchy(rows, name=name)


def random_table(
    rng: np.random.Generator, n_qis: int, n_rows: int, max_values: int = 5, max_height: int = 3
) -> FrequencyTable:
    """A random frequency table with random hierarchies."""
    hierarchies, columns = [], {}
    for j in range(n_qis):
        n_values = int(rng.integers(1, max_values + 1))
        height = int(rng.integers(1, max_height + 1))
        h = random_hierarchy(rng, n_values, height, f"q{j}")
        hierarchies.append(h)
        columns[f"q{j}"] = rng.choice(list(h.leaves), size=n_rows)
    frame = pd.DataFrame(columns)
    names = list(columns)
    grouped = frame.groupby(names, sort=False).size().reset_index(name=COUNT_COLUMN)
    return FrequencyTable.from_grouped(grouped, names, hierarchies)


def generalized_frame(table: FrequencyTable, node: tuple[int, ...]) -> pd.DataFrame:
    """Row-level generalized records of ``table`` at ``node`` (for brute-force references)."""
    labels = table.labels_at(node)
    return labels.loc[labels.index.repeat(table.counts)].reset_index(drop=True)


def write_small_adult(directory: Path, n_train: int = 3000, n_test: int = 0) -> Path:
    """The first ``n_train`` records of adult.data (and ``n_test`` of adult.test, after its
    comment line) with adult.yaml pointing at the bundled hierarchies; returns ``directory``."""
    lines = (ADULT_DIR / "adult.data").read_text().splitlines()[:n_train]
    (directory / "adult.data").write_text("\n".join(lines) + "\n")
    if n_test:
        test_lines = (ADULT_DIR / "adult.test").read_text().splitlines()[: n_test + 1]
        (directory / "adult.test").write_text("\n".join(test_lines) + "\n")
    text = (ADULT_DIR / "adult.yaml").read_text().replace("hierarchies/", f"{ADULT_DIR}/hierarchies/")
    (directory / "adult.yaml").write_text(text)
    return directory


#: What the small samples of Adult raise that contradicts their headline (issue 33): on a few
#: thousand records the kept sensitive columns (hours-per-week, capital-gain) single records out,
#: and small categories are suppressed.
SMALL_ADULT_ACCEPTED = ("kept-column-identifying", "subgroup-suppressed")


def acknowledge(config: Path, codes: tuple[str, ...] = SMALL_ADULT_ACCEPTED) -> Path:
    """Rewrite the configuration file ``config`` so that its ``accept_warnings:`` lists ``codes``
    (the run's warnings that contradict its headline, acknowledged; issue 33); returns it."""
    lines = [ln for ln in config.read_text().splitlines() if not ln.startswith("accept_warnings:")]
    config.write_text("\n".join([*lines, f"accept_warnings: [{', '.join(codes)}]"]) + "\n")
    return config


def run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """``safeshare ARGS`` in-process: ``(exit status, stdout, stderr)``."""
    from safeshare.cli import main

    code = main(args)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def small_people() -> tuple[MemoryEngine, Schema]:
    """40 people (name, age, zip, diagnosis) with age and zip hierarchies: a table small enough
    to anonymize in milliseconds, with an identifier to drop and a sensitive column to keep."""
    age = Hierarchy([(str(a), f"{a // 10 * 10}s", "*") for a in range(20, 60)], "age")
    zipc = Hierarchy([(z, z[:3] + "**", "*") for z in ["12345", "12346", "12399", "54321", "54322"]], "zip")
    frame = pd.DataFrame(
        {
            "name": [f"p{i}" for i in range(40)],
            "age": [str(20 + (i * 7) % 40) for i in range(40)],
            "zip": [["12345", "12346", "12399", "54321", "54322"][i % 5] for i in range(40)],
            "diagnosis": [["flu", "cold", "asthma"][i % 3] for i in range(40)],
        }
    )
    schema = Schema.from_attributes(
        [
            Attribute("name", Role.IDENTIFYING),
            Attribute("age", Role.QUASI, age),
            Attribute("zip", Role.QUASI, zipc),
            Attribute("diagnosis", Role.SENSITIVE),
        ]
    )
    return MemoryEngine(frame), schema


class TamperingEngine(MemoryEngine):
    """Writes the release as the memory engine does, then rewrites the CSV through ``edit``:
    a broken engine, whose release the independent verifier must refuse."""

    def __init__(self, base: MemoryEngine, edit: Callable[[pd.DataFrame, ReleasePlan], pd.DataFrame]) -> None:
        self.frame = base.frame
        self.label = "tampered"
        self.edit = edit

    def write_release(self, plan: ReleasePlan, target: Path) -> int:
        n = super().write_release(plan, target)
        frame = pd.read_csv(target, dtype=str, keep_default_na=False)
        self.edit(frame, plan).to_csv(target, index=False)
        return n


def first_record(column: str, value: str) -> Callable[[pd.DataFrame, ReleasePlan], pd.DataFrame]:
    """A :class:`TamperingEngine` edit: the first released record's ``column`` becomes ``value``."""

    def edit(frame: pd.DataFrame, plan: ReleasePlan) -> pd.DataFrame:
        frame.loc[0, column] = value
        return frame

    return edit


def comparable_report(report: dict[str, Any]) -> dict[str, Any]:
    """report.json without what measures one run (times, the creation time, the peak memory)
    and with the released files named without their output directory, so that two runs of
    one configuration into two directories (the CLI and the API) compare equal."""
    from safeshare.workflows.result import MEASUREMENT_KEYS

    doc = {key: value for key, value in report.items() if key not in MEASUREMENT_KEYS}
    doc["engine_settings"] = {k: v for k, v in doc["engine_settings"].items() if k != "peak_rss_mb"}
    if doc.get("evidence") is not None:
        files = [
            {**f, "path": Path(f["path"]).name} if f["role"] == "release" else f
            for f in doc["evidence"]["files"]
        ]
        doc["evidence"] = {**doc["evidence"], "files": files}
    return doc
