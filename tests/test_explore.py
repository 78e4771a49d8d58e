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
    risk_comparison,
    size_histogram,
)
from safeshare.workflows.profile import profile_table, suggest_role
from safeshare.workflows.release import input_class_sizes

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


def test_risk_comparison_exact_and_every_estimator(adult_fit) -> None:
    inputs = input_class_sizes(adult_fit)
    released = adult_fit.released_class_sizes
    rc = risk_comparison(inputs, released, None)
    assert rc.exact and rc.population_size == inputs.sum()
    assert rc.input is not None and rc.release is not None
    assert rc.input.exact_B == pytest.approx(inputs.size / inputs.sum())
    assert rc.release.exact_B == pytest.approx(released.size / released.sum())
    assert set(rc.input.estimates) == set(rc.estimators) and len(rc.estimators) >= 5
    # with the whole population sampled, a consistent estimator gives the exact B
    assert rc.input.estimates["pitman"] == pytest.approx(rc.input.exact_B, rel=1e-6)
    shares = [d["B_share"] for d in rc.release.drivers]
    assert sum(shares) == pytest.approx(1.0)
    estimated = risk_comparison(inputs, released, 10 * int(inputs.sum()), estimators=("pitman",))
    assert not estimated.exact and estimated.release is not None and estimated.release.exact_B is None
    with pytest.raises(InputError, match="smaller than the input"):
        risk_comparison(inputs, released, 10)


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
