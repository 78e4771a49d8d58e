"""Sensitivities of the utilities, checked by brute force on neighbouring datasets (thesis §4.5.3-4.5.4).

For random small datasets D and every neighbour D' (one record added or
removed), every node's utility may move by at most the sensitivity the
mechanism is calibrated with. The thesis' own calibration fails this check.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from safeshare.core.frequency import FrequencyTable
from safeshare.data.engines.base import COUNT_COLUMN
from safeshare.dp.epsilon_safe import lattice_data
from safeshare.dp.scores import LatticeData, make_utility
from safeshare.errors import InputError
from safeshare.hierarchy.hierarchy import Hierarchy
from tests.conftest import examples, random_hierarchy


def table_of(frame: pd.DataFrame, hierarchies: list[Hierarchy]) -> FrequencyTable:
    names = list(frame.columns)
    grouped = frame.groupby(names, sort=False).size().reset_index(name=COUNT_COLUMN)
    return FrequencyTable.from_grouped(grouped, names, hierarchies)


def data_of(
    frame: pd.DataFrame, hierarchies: list[Hierarchy], k: int, n_input: int, ref: int, max_sup: float
) -> LatticeData:
    return lattice_data(table_of(frame, hierarchies), k, max_sup, n_input, 1.0 - 1e-9, ref)


UTILITY_SPECS = [
    ("thesis", 0.5, "k-anonymity"),
    ("thesis", 0.05, "suppression"),
    ("linear", 0.5, "k-anonymity"),
    ("linear", 0.05, "suppression"),
    ("safepub", None, "suppression"),
]


@given(
    st.integers(0, 2**32 - 1),
    st.integers(1, 3),
    st.integers(3, 40),
    st.integers(1, 6),
    st.sampled_from([0.0, 0.05, 0.2]),
)
@settings(max_examples=examples(35, 12), deadline=None)
def test_no_neighbour_moves_a_utility_by_more_than_its_sensitivity(
    seed: int, n_qis: int, n_rows: int, k: int, max_sup: float
) -> None:
    rng = np.random.default_rng(seed)
    hierarchies = [
        random_hierarchy(rng, int(rng.integers(1, 5)), int(rng.integers(1, 3)), f"q{j}") for j in range(n_qis)
    ]
    frame = pd.DataFrame(
        {f"q{j}": rng.choice(list(h.leaves), size=n_rows) for j, h in enumerate(hierarchies)}
    )
    ref = 50  # a public constant of the suppression penalty
    base = data_of(frame, hierarchies, k, n_rows, ref, max_sup)
    neighbours: list[tuple[LatticeData, bool]] = []
    for i in range(min(n_rows, 6)):  # remove a record: it was sampled
        smaller = frame.drop(index=frame.index[i])
        if len(smaller):
            neighbours.append((data_of(smaller, hierarchies, k, n_rows - 1, ref, max_sup), True))
    for _ in range(6):  # add a record (sampled), possibly with new values
        extra = pd.DataFrame({f"q{j}": [rng.choice(list(h.leaves))] for j, h in enumerate(hierarchies)})
        bigger = pd.concat([frame, extra], ignore_index=True)
        neighbours.append((data_of(bigger, hierarchies, k, n_rows + 1, ref, max_sup), True))
    # SafePub counts records that were not sampled: add one to the input only
    neighbours.append((data_of(frame, hierarchies, k, n_rows + 1, ref, max_sup), False))
    for name, penalty, mode in UTILITY_SPECS:
        u = make_utility(name, penalty, mode)
        sens = u.sensitivity(base)
        assert sens == pytest.approx(u.exact_sensitivity(base))
        v0 = u.values(base)
        for other, sampled in neighbours:
            if not sampled and name != "safepub":
                continue  # the others see only the sample
            v1 = u.values(other)
            assert np.array_equal(np.isfinite(v0), np.isfinite(v1))  # candidates are data-independent
            finite = np.isfinite(v0)
            assert np.abs(v0[finite] - v1[finite]).max() <= sens * (1 + 1e-9), (name, mode)


def two_qi_hierarchies() -> list[Hierarchy]:
    return [Hierarchy([("a", "*"), ("b", "*")], "x"), Hierarchy([("c", "*"), ("d", "*")], "y")]


def test_suppression_moves_by_k_minus_1_and_the_thesis_calibration_is_exceeded() -> None:
    """At node (1, 0) (normalized Prec 0.5 = P_min) every class has exactly k records; removing one
    record suppresses k - 1 records. The inverse utility then moves by 1/P - 1/(P + Dpen), far more
    than the thesis' sensitivity (p, or p x one record's percentage)."""
    k, h = 5, two_qi_hierarchies()
    frame = pd.DataFrame({"x": ["a", "b"] * 5, "y": ["c"] * 5 + ["d"] * 5})
    d = data_of(frame, h, k, 10, 10, 0.0)
    d2 = data_of(frame.iloc[1:], h, k, 9, 10, 0.0)
    node = (1, 0)
    assert d.prec[node] == 0.5
    assert d.suppressed[node] == 0 and d2.suppressed[node] == k - 1  # the lemma's bound, attained
    for mode, thesis_sens in (("k-anonymity", 0.5), ("suppression", 0.5 * 100 / 10)):
        exact = make_utility("thesis", 0.5, mode)
        observed = abs(exact.values(d)[node] - exact.values(d2)[node])
        assert observed == pytest.approx(exact.sensitivity(d))  # the bound is tight
        faithful = make_utility("thesis", 0.5, mode, "thesis")
        assert faithful.sensitivity(d) == pytest.approx(thesis_sens)
        if mode == "k-anonymity":
            assert observed > faithful.sensitivity(d)  # 1.0 > 0.5: not epsilon'-DP
        assert not faithful.differentially_private and exact.differentially_private
    # in suppression mode the penalty itself moves by k - 1 records' percentage, not one record's
    lin = make_utility("linear", 0.5, "suppression")
    observed = abs(lin.values(d)[node] - lin.values(d2)[node])
    assert observed == pytest.approx(0.5 * 100 * (k - 1) / 10)
    assert observed > 0.5 * 100 / 10


def test_bottom_node_handling() -> None:
    h = two_qi_hierarchies()
    frame = pd.DataFrame({"x": ["a"] * 6, "y": ["c"] * 6})  # the bottom is k-anonymous for k <= 6
    d = data_of(frame, h, 3, 6, 6, 0.0)
    exact = make_utility("thesis", 0.5, "k-anonymity")
    assert exact.values(d)[0, 0] == -np.inf  # excluded: 1/(0 + pen) is unbounded
    assert np.isfinite(exact.values(d)[1:, :]).all() and np.isfinite(exact.values(d)[0, 1])
    with pytest.raises(InputError, match="infinite"):
        make_utility("thesis", 0.5, "k-anonymity", "thesis").values(d)
    assert np.isfinite(make_utility("linear", 0.5, "k-anonymity").values(d)).all()
    assert make_utility("thesis", 0.5, "k-anonymity", "thesis").exact_sensitivity(d) == np.inf


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (("thesis", None, "suppression"), "needs a penalty"),
        (("linear", -1.0, "suppression"), "penalty"),
        (("thesis", 0.1, "bogus"), "penalty mode"),
        (("magic", 0.1, "suppression"), "unknown utility"),
        (("linear", 0.1, "suppression", "thesis"), "thesis utility only"),
        (("thesis", 0.1, "suppression", "loose"), "sensitivity"),
    ],
)
def test_invalid_utilities(args: tuple, match: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(InputError, match=match):
        make_utility(*args)
