"""``algorithm: node`` (search/fixed.py): one chosen node, released only if it qualifies.

The node strategy must agree with the exhaustive search node by node (it qualifies exactly
when the exhaustive search's predicate holds there), release the same bytes as OLA when given
OLA's optimum, and refuse in one line what cannot be released or read.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from safeshare import api
from safeshare.config import load_config
from safeshare.core.evaluation import Evaluator
from safeshare.core.frequency import FrequencyTable
from safeshare.errors import ConfigError, InputError
from safeshare.metrics.loss import make_metric
from safeshare.models.base import PrivacyCriterion
from safeshare.models.k_anonymity import KAnonymity
from safeshare.search.context import SearchContext
from safeshare.search.fixed import FixedNode
from tests.conftest import ADULT_DIR, run_cli

LEVELS = (
    "{age: 2, workclass: 1, education: 1, marital-status: 1, occupation: 1, relationship: 1, "
    "race: 1, sex: 0, native-country: 1}"
)


def node_config(tmp_path: Path, levels: str = LEVELS, algorithm: str = "node") -> Path:
    text = (ADULT_DIR / "adult.yaml").read_text()
    text = text.replace("path: adult.data", f"path: {ADULT_DIR / 'adult.data'}")
    text = text.replace("hierarchy: hierarchies/", f"hierarchy: {ADULT_DIR / 'hierarchies'}/")
    text = text.replace("algorithm: ola", f"algorithm: {algorithm}\nlevels: {levels}")
    path = tmp_path / "node.yaml"
    path.write_text(text)
    return path


def test_the_node_agrees_with_the_predicate_everywhere(adult_table: FrequencyTable) -> None:
    """At 60 random nodes of Adult's lattice, the strategy qualifies the node exactly when
    k-anonymity with 5% suppression holds there, and returns that node with its loss."""
    evaluator = Evaluator(adult_table)
    criterion = PrivacyCriterion([KAnonymity(5)], max_suppression=0.05)
    metric = make_metric("prec", evaluator)
    ctx = SearchContext(adult_table, evaluator, criterion, metric)
    rng = np.random.default_rng(7)
    heights = [h.height for h in adult_table.hierarchies]
    seen = {True: 0, False: 0}
    for _ in range(60):
        node = tuple(int(rng.integers(0, h + 1)) for h in heights)
        result = FixedNode(dict(zip(adult_table.qi_names, node, strict=True))).run(ctx)
        holds = criterion.holds(evaluator.classes(node), adult_table)
        seen[holds] += 1
        assert result.checked_nodes == 1
        assert result.node == (node if holds else None)
        assert result.objective == (pytest.approx(metric.value(node)) if holds else None)
    assert seen[True] > 5 and seen[False] > 5  # both branches exercised


def test_given_olas_optimum_it_releases_olas_bytes(tmp_path: Path) -> None:
    optimum = api.anonymize(ADULT_DIR / "adult.yaml", tmp_path / "ola")
    levels = "{" + ", ".join(f"{q}: {lv}" for q, lv in optimum.report["levels"].items()) + "}"
    chosen = api.anonymize(node_config(tmp_path, levels), tmp_path / "node")
    assert chosen.verified and chosen.report["levels"] == optimum.report["levels"]
    assert (tmp_path / "node" / "release.csv").read_bytes() == (tmp_path / "ola" / "release.csv").read_bytes()


def test_a_coarser_node_is_released_and_verified(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # the run's warnings that contradict its headline, acknowledged (issue 33): a kept sensitive
    # column singles out more than 5 % of the records released at this coarser node
    args = ["anonymize", str(node_config(tmp_path)), "--out", str(tmp_path / "out"), "-q"]
    code, _, stderr = run_cli([*args, "--accept-warning", "kept-column-identifying"], capsys)
    assert code == 0, stderr
    report = (tmp_path / "out" / "report.json").read_text()
    assert '"algorithm": "node"' in report and '"passed": true' in report


def test_a_node_that_does_not_qualify_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    zeros = (
        "{"
        + ", ".join(f"{q}: 0" for q in load_config(ADULT_DIR / "adult.yaml").schema.quasi_identifiers)
        + "}"
    )
    out = tmp_path / "out"
    code, _, stderr = run_cli(["anonymize", str(node_config(tmp_path, zeros)), "--out", str(out)], capsys)
    assert code == 2 and "does not satisfy the privacy models" in stderr and "age=0" in stderr
    assert not out.exists()


@pytest.mark.parametrize(
    ("levels", "algorithm", "error", "message"),
    [
        (LEVELS.replace("age: 2, ", ""), "node", ConfigError, "levels: missing the level of age"),
        (LEVELS.replace("sex: 0", "sex: 0, fnlwgt: 1"), "node", ConfigError, "fnlwgt"),
        (LEVELS.replace("age: 2", "age: -1"), "node", ConfigError, "levels.age"),
        (LEVELS.replace("age: 2", "age: 9"), "node", InputError, "levels.age: expected 0..2, got 9"),
        (LEVELS, "ola", ConfigError, "levels: applies to algorithm: node only"),
    ],
    ids=["missing", "not a QI", "negative", "above the height", "other algorithm"],
)
def test_bad_levels_are_one_line(
    tmp_path: Path, levels: str, algorithm: str, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message.replace(".", r"\.")):
        api.anonymize(node_config(tmp_path, levels, algorithm), tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_levels_are_required(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="algorithm 'node' needs levels"):
        api.anonymize(ADULT_DIR / "adult.yaml", tmp_path / "out", algorithm="node")
    assert not (tmp_path / "out").exists()
