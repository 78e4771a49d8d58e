"""Information loss metrics (thesis §5.1): values, normalization, monotonicity."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from safeshare.core.evaluation import Evaluator
from safeshare.core.frequency import FrequencyTable
from safeshare.data.engines.base import COUNT_COLUMN
from safeshare.errors import InputError
from safeshare.hierarchy.hierarchy import Hierarchy
from safeshare.metrics.loss import (
    DMStar,
    NonUniformEntropy,
    Prec,
    all_metric_values,
    make_metric,
    metric_name,
)
from tests.conftest import examples, generalized_frame, random_table


@pytest.fixture()
def tiny() -> FrequencyTable:
    age = Hierarchy([("20", "20-29", "*"), ("25", "20-29", "*"), ("31", "30-39", "*")], "age")
    sex = Hierarchy([("F", "*"), ("M", "*")], "sex")
    frame = pd.DataFrame({"age": ["20", "20", "25", "31", "31", "31"], "sex": ["F", "F", "M", "M", "M", "F"]})
    grouped = frame.groupby(["age", "sex"]).size().reset_index(name=COUNT_COLUMN)
    return FrequencyTable.from_grouped(grouped, ["age", "sex"], [age, sex])


def test_prec_values(tiny: FrequencyTable) -> None:
    prec = Prec(Evaluator(tiny))
    assert prec.value((0, 0)) == 0.0
    assert prec.value((1, 0)) == pytest.approx(0.25)  # (1/2 + 0/1) / 2
    assert prec.value((2, 1)) == 1.0
    weighted = Prec(Evaluator(tiny), {"age": 3.0})
    assert weighted.value((1, 0)) == pytest.approx(1.5 / 4)  # (3 * 1/2 + 0) / (3 + 1)
    assert weighted.value((0, 1)) == pytest.approx(1 / 4)
    with pytest.raises(InputError):
        Prec(Evaluator(tiny), {"nope": 1.0})


def test_dm_star_values(tiny: FrequencyTable) -> None:
    dm = DMStar(Evaluator(tiny))
    # bottom classes: (20,F)x2, (25,M)x1, (31,M)x2, (31,F)x1 -> 4 + 1 + 4 + 1
    assert dm.value((0, 0)) == 10
    # age level 1: (20-29,F)x2, (20-29,M)x1, (30-39,M)x2, (30-39,F)x1 -> 10; sex suppressed: 3^2 + 3^2
    assert dm.value((1, 0)) == 10
    assert dm.value((1, 1)) == 18
    assert dm.value((2, 1)) == 36
    assert dm.normalized((1, 1)) == pytest.approx((18 - 10) / (36 - 10))
    values = all_metric_values(Evaluator(tiny), (1, 1))
    assert values["dm_star_minus_bottom"] == 8


def test_entropy_values(tiny: FrequencyTable) -> None:
    ent = NonUniformEntropy(Evaluator(tiny))
    assert ent.value((0, 0)) == 0.0
    # age level 1: 20 (2 of 3 in 20-29), 25 (1 of 3), 31 (3 of 3)
    expected = -(2 * math.log2(2 / 3) + 1 * math.log2(1 / 3) + 3 * math.log2(1))
    assert ent.value((1, 0)) == pytest.approx(expected)
    # sex suppressed: F 3 of 6, M 3 of 6
    assert ent.value((0, 1)) == pytest.approx(6.0)


def row_entropy(table: FrequencyTable, node: tuple[int, ...]) -> float:
    """-sum_i sum_j log2 P[x_ij | r_ij] computed record by record (thesis §5.1)."""
    original = generalized_frame(table, (0,) * len(node))
    released = generalized_frame(table, node)
    total = 0.0
    for col in table.qi_names:
        joint = pd.DataFrame({"x": original[col], "r": released[col]})
        count_x = joint.groupby("x")["x"].transform("size")
        count_r = joint.groupby("r")["r"].transform("size")
        total += float(-(np.log2(count_x / count_r)).sum())
    return total


@given(st.integers(0, 2**32 - 1), st.integers(1, 3), st.integers(1, 50))
@settings(max_examples=examples(40, 15), deadline=None)
def test_metrics_are_monotone_and_match_definitions(seed: int, n_qis: int, n_rows: int) -> None:
    table = random_table(np.random.default_rng(seed), n_qis, n_rows)
    ev = Evaluator(table)
    metrics = [make_metric(name, ev) for name in ("prec", "dm_star", "entropy")]
    values = {node: [m.value(node) for m in metrics] for node in table.lattice.nodes()}
    for node, vals in values.items():
        assert vals[2] == pytest.approx(row_entropy(table, node), abs=1e-9)
        for succ in table.lattice.successors(node):
            for before, after in zip(vals, values[succ], strict=True):
                assert after >= before - 1e-9  # never decreases along generalization
        for m in metrics:
            assert 0.0 <= m.normalized(node) <= 1.0
    for m in metrics:
        assert m.normalized(table.lattice.bottom) == 0.0
        assert m.value(table.lattice.top) == pytest.approx(m.upper)


def test_node_arrays_match_values(adult_table: FrequencyTable) -> None:
    ev = Evaluator(adult_table)
    for m in (Prec(ev), NonUniformEntropy(ev)):
        arr = m.node_array()
        for node in [adult_table.lattice.bottom, adult_table.lattice.top, (1, 0, 2, 1, 0, 1, 0, 1, 2)]:
            assert arr[node] == pytest.approx(m.value(node))
    assert DMStar(ev).node_array() is None


def test_unknown_metric() -> None:
    with pytest.raises(InputError, match="unknown metric"):
        make_metric("precision-ish", None)  # type: ignore[arg-type]


def test_passed_classes_are_used_not_re_evaluated(tiny: FrequencyTable) -> None:
    """``classes`` of the node spares its evaluation (normalized, all_metric_values)."""
    ev = Evaluator(tiny)
    dm = DMStar(ev)
    classes = ev.classes((1, 1))
    assert (dm.lower, dm.upper) == (10, 36)
    before = ev.evaluations
    assert dm.normalized((1, 1), classes) == pytest.approx(8 / 26)
    assert ev.evaluations == before
    before = ev.evaluations
    values = all_metric_values(ev, (1, 1), classes)
    # the bottom (twice) and the top for DM*'s range; the node itself is not evaluated again
    assert ev.evaluations - before == 3
    assert values == all_metric_values(Evaluator(tiny), (1, 1))
    assert values["prec_normalized"] == values["prec"] == 0.75
    assert values["dm_star_normalized"] == pytest.approx(8 / 26)
    assert values["entropy_normalized"] == pytest.approx(values["entropy"] / NonUniformEntropy(ev).upper)
    # classes of another node are not used
    assert all_metric_values(ev, (1, 1), ev.classes((1, 0))) == values


@pytest.mark.parametrize(
    "weights",
    [
        None,
        {"age": 0.0, "sex": 0.0},  # no weight: Prec is 0 everywhere
        {"age": 0.1, "sex": 0.3},  # floats whose exact fractions overflow 2**53: the exact loop
        {"age": 2.0, "sex": 0.5},
    ],
)
def test_prec_node_array_equals_value_at_every_node(
    tiny: FrequencyTable, weights: dict[str, float] | None
) -> None:
    prec = Prec(Evaluator(tiny), weights)
    arr = prec.node_array()
    assert arr.shape == (3, 2)
    w = {q: Fraction((weights or {}).get(q, 1.0)) for q in ("age", "sex")}
    total = w["age"] + w["sex"]
    for node in np.ndindex(*arr.shape):
        assert arr[node] == prec.value(node), node
        # the exact weighted mean, correctly rounded
        exact = (w["age"] * Fraction(node[0], 2) + w["sex"] * Fraction(node[1], 1)) / total if total else 0
        assert prec.value(node) == float(exact), node
    assert prec.value((2, 1)) == (0.0 if weights and not any(weights.values()) else 1.0)


def test_prec_node_array_with_a_qi_of_height_zero() -> None:
    """A QI that cannot be generalized (height 0) adds no term and no division by its height."""
    age = Hierarchy([("20", "*"), ("25", "*")], "age")
    flat = Hierarchy([("x",)], "flat")
    frame = pd.DataFrame({"age": ["20", "25"], "flat": ["x", "x"]})
    grouped = frame.groupby(["age", "flat"]).size().reset_index(name=COUNT_COLUMN)
    table = FrequencyTable.from_grouped(grouped, ["age", "flat"], [age, flat])
    prec = Prec(Evaluator(table))
    assert prec.node_array().tolist() == [[0.0], [1.0]]
    assert [prec.value((0, 0)), prec.value((1, 0))] == [0.0, 1.0]


def test_metric_names_weights_and_the_classes_of_another_node(tiny: FrequencyTable) -> None:
    ev = Evaluator(tiny)
    assert [metric_name(n) for n in (" DM* ", "DMStar", "dm-star", "Precision", "ENTROPY")] == [
        "dm_star",
        "dm_star",
        "dm_star",
        "prec",
        "entropy",
    ]
    weighted = make_metric("prec", ev, {"age": 3.0})
    assert weighted.value((1, 0)) == pytest.approx(1.5 / 4)  # the weights reach Prec
    with pytest.raises(InputError, match="prec metric only"):
        make_metric("dm_star", ev, {"age": 3.0})
    dm = DMStar(ev)
    assert dm.value((1, 1), ev.classes((1, 0))) == 18  # classes of another node are not used
    entropy = NonUniformEntropy(ev)
    # level 0 of a QI loses nothing: the loss of (0, 1) is the second QI's part alone
    assert entropy.value((0, 0)) == 0.0
    assert entropy.value((0, 1)) == pytest.approx(entropy.value((1, 1)) - entropy.value((1, 0)))
    # normalize clamps to [0, 1] a value outside the range of the lattice
    assert (dm.normalize(100.0), dm.normalize(0.0), dm.normalize(23.0)) == (1.0, 0.0, 0.5)
