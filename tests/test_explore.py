"""The workbench's use cases: column profiles, the lattice view, the risk comparison, the estimate."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from safeshare.config import load_config
from safeshare.data.engines.factory import make_engine
from safeshare.data.engines.memory import MemoryEngine
from safeshare.data.source import TableSource
from safeshare.errors import InputError
from safeshare.risk.measures import risk_measures
from safeshare.workflows.anonymizer import Anonymizer
from safeshare.workflows.estimate import search_estimate
from safeshare.workflows.explore import (
    LatticeView,
    lattice_view,
    node_detail,
    size_histogram,
)
from safeshare.workflows.profile import profile_table, suggest_role

ROOT = Path(__file__).resolve().parent.parent
ADULT_YAML = ROOT / "examples" / "adult" / "adult.yaml"


@pytest.fixture(scope="module")
def adult_fit():
    cfg = load_config(ADULT_YAML)
    anonymizer = Anonymizer(cfg.spec())
    engine = make_engine(cfg.engine, cfg.source)
    try:
        return anonymizer.fit(engine)
    finally:
        engine.close()


@pytest.fixture(scope="module")
def adult_view(adult_fit):
    return lattice_view(adult_fit)


def test_the_view_walks_every_node_and_agrees_with_the_search_predicate(adult_fit, adult_view) -> None:
    lattice = adult_fit.table.lattice
    assert adult_view.complete and len(adult_view.nodes) == lattice.size == 7776
    counts = adult_view.counts()
    assert counts["optimum"] == 1 and counts["not-checked"] == 0
    assert adult_view.optimum == adult_fit.node
    # every status is the criterion's own verdict on that node, recomputed here node by node
    rng = np.random.default_rng(5)
    for i in rng.choice(len(adult_view.nodes), 300, replace=False):
        node = adult_view.nodes[int(i)]
        classes = adult_fit.evaluator.classes(node.levels)
        holds = adult_fit.criterion.holds(classes, adult_fit.table)
        assert holds == (node.status in ("anonymous", "optimum"))
        assessed = adult_fit.criterion.assess(classes, adult_fit.table)
        assert node.suppressed == assessed.suppressed_records
        assert node.loss == pytest.approx(adult_fit.metric.normalized(node.levels, classes))


def test_the_optimum_has_the_least_loss_of_every_anonymous_node(adult_view) -> None:
    """OLA's node against the whole lattice: no qualifying node has less loss (an exhaustive check)."""
    optimum = adult_view.node(adult_view.optimum)
    anonymous = [n for n in adult_view.nodes if n.status == "anonymous"]
    assert anonymous and min(n.loss for n in anonymous) >= optimum.loss - 1e-12
    assert adult_view.by_loss()[0].loss <= optimum.loss  # the bottom (loss 0) is not anonymous
    assert adult_view.by_loss(1)[0].levels == (0,) * 9


def test_node_detail_is_the_reports_risk_of_that_node(adult_fit, adult_view, tmp_path: Path) -> None:
    adult_view.write(tmp_path)
    again = LatticeView.read(tmp_path)
    assert again.to_dict() == adult_view.to_dict()
    key = ",".join(map(str, adult_fit.node))
    detail = node_detail(again, key)
    released = adult_fit.released_class_sizes
    assert detail["classes"] == released.size and detail["min_class_size"] == released.min()
    assert detail["suppressed"] == adult_fit.suppressed_records
    exact = risk_measures(released, released, int(released.sum()))
    assert detail["risk"]["B"] == pytest.approx(exact.B)
    assert sum(b["classes"] for b in detail["histogram"]) == released.size
    assert sum(b["records"] for b in detail["histogram"]) == released.sum()
    with pytest.raises(InputError, match="not in the lattice"):
        node_detail(again, "9,9,9,9,9,9,9,9,9")
    with pytest.raises(InputError, match="9 levels"):
        node_detail(again, "1,2")


def test_a_large_lattice_is_not_walked(adult_fit) -> None:
    view = lattice_view(adult_fit, max_nodes=50)
    assert not view.complete and len(view.nodes) <= 50
    assert view.counts()["not-checked"] == view.size - len(view.nodes)
    assert view.node(adult_fit.node).status == "optimum"
    unknown = next(n for n in adult_fit.table.lattice.nodes() if n not in {v.levels for v in view.nodes})
    assert view.node(unknown).status == "not-checked" and view.node(unknown).loss is None


def test_size_histogram_bins() -> None:
    bins = size_histogram(np.array([1, 1, 5, 12, 700]))
    by = {b["label"]: b for b in bins}
    assert by["1"]["classes"] == 2 and by["11-20"]["records"] == 12 and by["501-1000"]["classes"] == 1
    assert sum(b["records"] for b in bins) == 719


def test_search_estimate(adult_fit) -> None:
    cfg = load_config(ADULT_YAML)
    engine = make_engine("memory", cfg.source)
    estimate = search_estimate(Anonymizer(cfg.spec()), engine)
    assert estimate.lattice_size == 7776 and estimate.records == 32561
    assert estimate.distinct_rows == adult_fit.table.n_rows
    assert "lattice of 7,776 nodes" in estimate.sentence()


@pytest.mark.parametrize(
    ("name", "distinct", "n", "role", "flagged"),
    [
        ("patientID", 3, 100, "identifying", True),
        ("e-mail", 3, 100, "identifying", True),
        ("fnlwgt", 950, 1000, "identifying", True),
        ("date_of_birth", 50, 1000, "quasi", False),
        ("ZipCode", 50, 1000, "quasi", False),
        ("income", 2, 1000, "insensitive", False),
        ("tiny", 5, 5, "insensitive", False),  # unique, but too few values to call it an identifier
    ],
)
def test_suggested_roles(name: str, distinct: int, n: int, role: str, flagged: bool) -> None:
    suggested, reason, flag = suggest_role(name, distinct, n)
    assert (suggested, flag) == (role, flagged), reason


def test_profile_counts_distinct_missing_and_uniqueness(tmp_path: Path) -> None:
    frame = pd.DataFrame(
        {"id": [f"p{i}" for i in range(40)], "sex": ["F", "M"] * 20, "zip": ["?"] * 10 + ["12"] * 29 + ["13"]}
    )
    path = tmp_path / "d.csv"
    frame.to_csv(path, index=False)
    for engine in (MemoryEngine(TableSource(path)), make_engine("duckdb", TableSource(path))):
        profile = profile_table(engine, ["?"])
        assert profile.records == 40
        ident, sex, zip_ = (profile.column(c) for c in ("id", "sex", "zip"))
        assert (ident.distinct, ident.singletons, ident.uniqueness, ident.suggested_role) == (
            40,
            40,
            1.0,
            "identifying",
        )
        assert (sex.distinct, sex.missing, sex.suggested_role) == (2, 0, "quasi")
        assert (zip_.distinct, zip_.missing, zip_.singletons, zip_.suggested_role) == (2, 10, 1, "quasi")
        engine.close()


# --------------------------------------------------------------------------- issue 35: Explore in words
def test_ties_at_the_optimums_loss_are_the_qualifying_nodes_of_equal_loss(adult_fit, adult_view) -> None:
    """Adult's optimum 2,2,2,0,2,0,0,0,0 shares its loss with three other anonymous nodes (issue
    35: "three nodes tie at the optimum's loss without a flag"); recounted over every node, and
    the search's choice among them is the stated rule (the lower node, then lexicographic)."""
    best = adult_view.node(adult_view.optimum).loss
    recount = [
        n.levels
        for n in adult_view.nodes
        if n.status in ("optimum", "anonymous") and abs(n.loss - best) <= 1e-9 * best
    ]
    ties = adult_view.ties()
    assert len(ties) == len(recount) == 4
    assert {n.levels for n in ties} == set(recount)
    assert ties[0].levels == adult_fit.node and ties[0].status == "optimum"
    assert min(recount, key=lambda levels: (sum(levels), levels)) == adult_fit.node
    assert adult_view.algorithm == "ola"
    assert "lower node" in adult_view.tie_rule() and "lexicographic" in adult_view.tie_rule()


def test_why_a_node_is_not_anonymous_in_its_own_figures(adult_view) -> None:
    """Issue 35: a non-anonymous node said "suppressed 25,535 ... smallest 5" without "needs 78 %
    > 5 %". Each non-anonymous node's reason is its share against the limit, floor(5% x 32,561)."""
    assert adult_view.allowed == 1628 == int(0.05 * 32561)
    bottom = adult_view.node((0,) * 9)
    assert adult_view.why_not(bottom) == (
        "needs 78.4% suppressed (25,535 of 32,561 records) > 5% allowed (1,628)"
    )
    for node in adult_view.nodes:
        reason = adult_view.why_not(node)
        if node.status == "not-anonymous":
            # k-anonymity alone: a node fails only by needing more suppression than allowed
            assert node.suppressed > adult_view.allowed and reason.startswith("needs ")
        else:
            assert reason is None


def test_levels_are_shown_in_the_hierarchys_labels(adult_fit, adult_view) -> None:
    """Issue 35: "age level 2" becomes "age: 0:49, 50:99" (the hierarchy's labels at that level);
    level 0, the records' own values, lists none."""
    assert adult_view.label_text(adult_fit.node).startswith("age: 0:49, 50:99; workclass: ")
    for q, hierarchy in zip(adult_fit.table.qi_names, adult_fit.table.hierarchies, strict=True):
        levels = adult_view.level_labels[q]
        assert len(levels) == hierarchy.height + 1 and levels[0]["labels"] == []
        for level in range(1, hierarchy.height + 1):
            assert levels[level]["count"] == hierarchy.size(level)
            assert levels[level]["labels"] == list(hierarchy.labels(level))[:3]
    detail = node_detail(adult_view, adult_fit.node)
    assert [g["level"] for g in detail["generalization"]] == list(adult_fit.node)
    assert detail["tie"] is True and "lower node" in detail["tie_rule"]
    assert node_detail(adult_view, (0,) * 9)["why_not"].startswith("needs 78.4%")


def test_the_node_list_filters_by_status(adult_view) -> None:
    counts = adult_view.counts()
    anonymous = adult_view.listed()
    assert len(anonymous) == counts["optimum"] + counts["anonymous"] == 1926
    assert {n.status for n in anonymous} == {"optimum", "anonymous"}
    assert anonymous[0].levels == adult_view.optimum  # least loss first
    assert {n.status for n in adult_view.listed("not-anonymous")} == {"not-anonymous"}
    assert len(adult_view.listed("all")) == 7776 and len(adult_view.listed("all", 5)) == 5
    with pytest.raises(InputError, match="status 'bogus'"):
        adult_view.listed("bogus")


def test_the_diagram_opens_with_the_optimum_in_its_window(adult_view) -> None:
    """Issue 35: Adult's SVG was 10,512 px wide in an 849 px frame with the optimum at x = 1,036,
    outside it. The SVG is now a window (viewBox) of at most 840 x 600 px onto the drawing,
    centred on the optimum; one tab stop (the optimum), every node focusable."""
    import re

    from safeshare.ui.hasse import WINDOW, hasse_svg

    svg = hasse_svg(adult_view)
    head = re.search(r"<svg [^>]*>", svg).group(0)
    x, y, w, h = map(float, re.search(r'viewBox="([^"]+)"', head).group(1).split())
    full_w, _ = map(float, re.search(r'data-full="([^"]+)"', head).group(1).split())
    assert full_w > 10_000 and w <= WINDOW[0] and h <= WINDOW[1]
    assert re.search(r' width="(\d+)"', head).group(1) == f"{w:.0f}"
    optimum = re.search(r'<circle cx="([\d.]+)" cy="([\d.]+)"[^>]*data-testid="optimum"', svg)
    cx, cy = float(optimum.group(1)), float(optimum.group(2))
    assert x <= cx <= x + w and y <= cy <= y + h
    assert abs(cx - (x + w / 2)) < 1 or x == 0 or x + w == full_w  # centred unless at an edge
    assert svg.count('tabindex="0"') == 1 and svg.count('tabindex="-1"') == 7775
    assert re.search(r'<circle [^>]*tabindex="0"[^>]*data-testid="optimum"', svg)
    assert svg.count(" tie") == 4  # the class of the four tied nodes
