"""Helpers of the l-diversity and t-closeness tests: tables with sensitive columns, brute force.

The brute-force side never touches the models' code: it expands the frequency
table to one row per record with pandas and groups it.
"""

from __future__ import annotations

import math
import subprocess
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from safeshare.core.evaluation import Evaluator
from safeshare.core.frequency import FrequencyTable
from safeshare.data.engines.base import COUNT_COLUMN
from safeshare.data.schema import Attribute, Role, Schema
from safeshare.hierarchy.hierarchy import Hierarchy
from safeshare.models.base import PrivacyCriterion, PrivacyModel
from safeshare.verify import Expectations
from safeshare.workflows.anonymizer import AnonymizationResult, Anonymizer
from safeshare.workflows.release import release_expectations
from tests.conftest import ADULT_COLUMNS, ADULT_DIR, ADULT_QIS, ROOT, generalized_frame, random_hierarchy

Node = tuple[int, ...]


def table_from_frame(
    frame: pd.DataFrame, qis: Sequence[str], hierarchies: Sequence[Hierarchy], sensitive: Sequence[str]
) -> FrequencyTable:
    """The frequency table of a record-level frame (QIs and sensitive columns in the grain)."""
    names = [*qis, *sensitive]
    grouped = frame[names].astype(str).groupby(names, sort=False).size().reset_index(name=COUNT_COLUMN)
    return FrequencyTable.from_grouped(grouped, list(qis), list(hierarchies), list(sensitive))


def random_frame(
    rng: np.random.Generator,
    n_qis: int,
    n_rows: int,
    n_values: int = 4,
    n_sensitive: int = 1,
    numeric: bool = False,
    max_values: int = 4,
    max_height: int = 2,
) -> tuple[pd.DataFrame, list[str], list[Hierarchy], list[str]]:
    """Random records: QIs with random hierarchies, sensitive columns skewed towards one value."""
    hierarchies, data = [], {}
    for j in range(n_qis):
        h = random_hierarchy(
            rng, int(rng.integers(1, max_values + 1)), int(rng.integers(1, max_height + 1)), f"q{j}"
        )
        hierarchies.append(h)
        data[f"q{j}"] = rng.choice(list(h.leaves), size=n_rows)
    sensitive = []
    for j in range(n_sensitive):
        weights = rng.dirichlet(np.full(n_values, 0.7))
        labels = [str(10 * i + 5) if numeric else f"s{j}v{i}" for i in range(n_values)]
        data[f"s{j}"] = rng.choice(labels, size=n_rows, p=weights)
        sensitive.append(f"s{j}")
    qis = [f"q{j}" for j in range(n_qis)]
    return pd.DataFrame(data), qis, hierarchies, sensitive


def random_sensitive_table(rng: np.random.Generator, **kwargs: Any) -> FrequencyTable:
    frame, qis, hierarchies, sensitive = random_frame(rng, **kwargs)
    return table_from_frame(frame, qis, hierarchies, sensitive)


def records_at(table: FrequencyTable, node: Node) -> pd.DataFrame:
    """One row per record: the generalized QIs and the sensitive values."""
    frame = generalized_frame(table, node)
    for j, name in enumerate(table.sensitive_names):
        labels = np.asarray(table.sensitive_labels[j], dtype=object)
        frame[name] = np.repeat(labels[table.sensitive_codes[:, j]], table.counts)
    return frame


def class_histograms(table: FrequencyTable, node: Node, column: str) -> dict[tuple[str, ...], Counter[str]]:
    """QI tuple -> value counts of ``column``, for every class of ``node`` (pandas, record level)."""
    frame = records_at(table, node)
    return {
        tuple(str(k) for k in key): Counter(group[column])
        for key, group in frame.groupby(list(table.qi_names), sort=False)
    }


def entropy(hist: Counter[str]) -> float:
    n = sum(hist.values())
    return -math.fsum(c / n * math.log(c / n) for c in hist.values())


def recursive_ratio(hist: Counter[str], l: int) -> float:  # noqa: E741
    r = sorted(hist.values(), reverse=True)
    tail = sum(r[l - 1 :])
    return math.inf if tail == 0 else r[0] / tail


def qualifying_nodes(table: FrequencyTable, models: Sequence[PrivacyModel], limit: float) -> set[Node]:
    """Nodes that satisfy the criterion, by evaluating every node."""
    crit = PrivacyCriterion(models, limit)
    return {c.node for c in Evaluator(table).iter_classes() if crit.holds(c, table)}


def fit(
    table: FrequencyTable, models: Sequence[PrivacyModel], limit: float, algorithm: str, metric: str = "prec"
) -> AnonymizationResult:
    """Search ``table`` with ``algorithm``."""
    schema = Schema.from_attributes(
        [Attribute(q, Role.QUASI, h) for q, h in zip(table.qi_names, table.hierarchies, strict=True)]
        + [Attribute(s, Role.SENSITIVE) for s in table.sensitive_names]
    )
    return Anonymizer(
        schema, list(models), max_suppression=limit, metric=metric, algorithm=algorithm
    ).fit_table(table)


def expectations_of(result: AnonymizationResult, columns: Sequence[str]) -> Expectations:
    """What :func:`safeshare.workflows.publish.write_release` asks the verifier to check."""
    return release_expectations(result, columns)


def adult_subset_config(
    directory: Path, n_rows: int, sensitive: Sequence[str], privacy: str, limit: float
) -> Path:
    """An Adult configuration on the first ``n_rows`` records with the given sensitive columns."""
    lines = (ADULT_DIR / "adult.data").read_text().splitlines()[:n_rows]
    (directory / "adult.data").write_text("\n".join(lines) + "\n")
    attributes = [f"  {q}: {{role: quasi, hierarchy: {ADULT_DIR}/hierarchies/{q}.csv}}" for q in ADULT_QIS]
    attributes += ["  fnlwgt: {role: identifying}", "  education-num: {role: identifying}"]
    attributes += [f"  {s}: {{role: sensitive}}" for s in sensitive]
    text = "\n".join(
        [
            "input:",
            "  path: adult.data",
            "  header: false",
            f"  names: [{', '.join(ADULT_COLUMNS)}]",
            "default_role: insensitive",  # the other columns are released unchanged
            "attributes:",
            *attributes,
            f"privacy: {privacy}",
            f"max_suppression: {limit}",
        ]
    )
    path = directory / "adult.yaml"
    path.write_text(text + "\n")
    return path


def run_cli(config: Path, out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    """``safeshare anonymize CONFIG --out OUT`` in a subprocess of this checkout."""
    args = ["anonymize", str(config), "--out", str(out), "--no-tradeoff", "-q", *extra]
    return subprocess.run(
        [sys.executable, "-m", "safeshare", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"},
        check=False,
    )
