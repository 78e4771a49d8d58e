"""The minimal frontier and its ties at the optimum (issue 33): report.json's ``frontier``
against a brute force over the whole Adult lattice that shares no code with the search
(:class:`tests.test_ola.BruteForce`), and every view (terminal, report.html) showing it."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from safeshare import api
from safeshare.core.frequency import FrequencyTable
from safeshare.report.content import frontier_sentence
from safeshare.search.result import TIE_BREAK
from safeshare.workflows.frontier import LISTED, is_tie
from tests.conftest import ADULT_DIR
from tests.test_ola import BruteForce

ADULT_YAML = ADULT_DIR / "adult.yaml"


@pytest.fixture(scope="module")
def brute(adult_table: FrequencyTable) -> BruteForce:
    return BruteForce(adult_table, (5,))


@pytest.fixture(scope="module")
def report() -> dict[str, object]:
    """The demo's report.json content (k = 5, 5 % suppression, Prec), not written."""
    return json.loads(json.dumps(api.anonymize(ADULT_YAML).report))


def test_the_frontier_is_the_brute_force_minimal_set_with_its_losses_and_suppression(
    report: dict[str, object], brute: BruteForce
) -> None:
    frontier = report["frontier"]
    assert isinstance(frontier, dict)
    qualifying = brute.qualifying(5, 0.05)
    minimal = brute.minimal(qualifying)
    assert frontier["count"] == len(minimal) == report["minimal_nodes"]
    # best first by the stated rule, computed here from the brute force's losses
    expected = sorted(minimal, key=lambda n: (brute.loss("prec", n), sum(n), n))[:LISTED]
    listed = [tuple(n["node"]) for n in frontier["nodes"]]
    assert listed == expected
    optimum = brute.loss("prec", expected[0])
    for row in frontier["nodes"]:
        node = tuple(row["node"])
        assert row["loss"] == pytest.approx(brute.loss("prec", node), rel=1e-12)
        assert row["suppressed_records"] == brute.suppressed[5][node]
        assert row["tie"] == math.isclose(brute.loss("prec", node), optimum, rel_tol=1e-9)
        assert row["chosen"] == (list(node) == report["node"])
    assert sum(r["chosen"] for r in frontier["nodes"]) == 1
    assert frontier["tie_break"] == TIE_BREAK


def test_adult_has_three_ties_one_suppressing_fewer_records(report: dict[str, object]) -> None:
    frontier = report["frontier"]
    assert isinstance(frontier, dict)
    ties = [n for n in frontier["nodes"] if n["tie"] and not n["chosen"]]
    chosen = next(n for n in frontier["nodes"] if n["chosen"])
    assert frontier["ties"] == len(ties) == 3
    assert chosen["suppressed_records"] == report["suppressed_records"] == 1581
    assert min(n["suppressed_records"] for n in ties) == 1182
    sentence = frontier_sentence(frontier)
    assert sentence is not None and "3 others share" in sentence and "1,182" in sentence
    assert TIE_BREAK in sentence


def test_a_search_without_frontier_reports_none(tmp_path: Path) -> None:
    release = api.anonymize(ADULT_YAML, algorithm="anytime")
    assert release.report["frontier"] is None
    assert frontier_sentence(None) is None


def test_is_tie_is_relative() -> None:
    assert is_tie(0.4444444444444444, 0.44444444444444453)
    assert not is_tie(0.4444, 0.4445)
    assert is_tie(1e12, 1e12 + 1)  # DM* sums: one unit in 10^12 is a sum's order, not a loss


def test_the_terminal_and_the_html_show_the_ties(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from safeshare.cli import app

    out = tmp_path / "o"
    result = CliRunner().invoke(app, ["anonymize", str(ADULT_YAML), "--out", str(out)])
    assert result.exit_code == 0, result.output
    doc = json.loads((out / "report.json").read_text())
    html = (out / "report.html").read_text()
    assert 'id="minimal-nodes"' in html
    for row in doc["frontier"]["nodes"]:
        if row["tie"]:
            assert f"{row['suppressed_records']:,}" in html
    assert "minimal nodes" in result.output
