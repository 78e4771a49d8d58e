"""Exact risk measures against a direct, row-by-row computation."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from safeshare.errors import DataError, InputError
from safeshare.risk.classes import ClassSizeHistogram, SampleTable, pack
from safeshare.risk.measures import class_sizes, exact_B, risk_measures


def _rowwise(sample: list[tuple[int, ...]], population: list[tuple[int, ...]], threshold: float) -> dict:
    n, N = len(sample), len(population)
    f = [sum(1 for t in sample if t == r) for r in sample]
    F = [sum(1 for t in population if t == r) for r in sample]
    return {
        "A": len(set(sample)) / N,
        "B": sum(1 / x for x in F) / n,
        "prosecutor_max": max(1 / x for x in f),
        "prosecutor_mean": sum(1 / x for x in f) / n,
        "prosecutor_share": sum(1 for x in f if 1 / x > threshold) / n,
        "journalist_max": max(1 / x for x in F),
        "journalist_share": sum(1 for x in F if 1 / x > threshold) / n,
        "pk3": sum(1 for x in f if x < 3) / n,
        "uniques": sum(1 for x in F if x == 1),
    }


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 2), st.integers(0, 3)), min_size=1, max_size=40),
    st.data(),
    st.sampled_from([0.09, 0.2, 0.5]),
)
def test_measures_equal_rowwise(
    population: list[tuple[int, int]], data: st.DataObject, threshold: float
) -> None:
    idx = data.draw(st.lists(st.integers(0, len(population) - 1), min_size=1, unique=True))
    sample = [population[i] for i in idx]
    s_frame = pd.DataFrame(sample, columns=["a", "b"])
    p_frame = pd.DataFrame(population, columns=["a", "b"])
    f, F = class_sizes(s_frame, ["a", "b"], p_frame)
    got = risk_measures(f, F, population_size=len(population), threshold=threshold, pk=(3,))
    want = _rowwise(sample, population, threshold)
    assert pytest.approx(want["A"]) == got.A
    assert pytest.approx(want["B"]) == got.B
    assert got.marketer == pytest.approx(want["B"])
    assert got.prosecutor_max == pytest.approx(want["prosecutor_max"])
    assert got.prosecutor_mean == pytest.approx(want["prosecutor_mean"])
    assert got.prosecutor_share_above == pytest.approx(want["prosecutor_share"])
    assert got.journalist_max == pytest.approx(want["journalist_max"])
    assert got.journalist_share_above == pytest.approx(want["journalist_share"])
    assert got.pk[3] == pytest.approx(want["pk3"])
    # the packed-key path gives the same B
    codes_s = np.array(sample, dtype=np.int64)
    codes_p = np.array(population, dtype=np.int64)
    assert exact_B(pack(codes_s, (3, 4)), pack(codes_p, (3, 4))) == pytest.approx(want["B"])


def test_sample_is_population_gives_B_equal_prosecutor_mean() -> None:
    got = risk_measures([1, 2, 5], population_size=8)
    assert pytest.approx(3 / 8) == got.B
    assert pytest.approx(3 / 8) == got.A
    assert got.journalist_max == 1.0


def test_without_population_only_sample_measures() -> None:
    got = risk_measures([1, 1, 4])
    assert got.B is None and got.A is None
    assert got.prosecutor_mean == pytest.approx(3 / 6)
    assert got.marketer == pytest.approx(3 / 6)


def test_bad_inputs_raise_one_line_errors() -> None:
    with pytest.raises(InputError):
        risk_measures([])
    with pytest.raises(InputError):
        risk_measures([0, 2])
    with pytest.raises(InputError, match="smaller than the sample"):
        risk_measures([3, 2], population_size=4)
    with pytest.raises(DataError, match="not drawn"):
        risk_measures([3], [2], population_size=10)
    with pytest.raises(DataError, match="population has no record"):
        class_sizes(pd.DataFrame({"a": ["x"]}), ["a"], pd.DataFrame({"a": ["y"]}))


def test_table_and_histogram() -> None:
    frame = pd.DataFrame({"age": ["10", "9", "10", "100"], "sex": ["f", "m", "f", "f"]})
    table = SampleTable.from_frame(frame, ["age", "sex"])
    assert table.categories[0] == ("9", "10", "100")  # numeric order
    assert table.n == 4 and table.n_classes == 3
    hist = table.histogram()
    assert hist.count(1) == 2 and hist.count(2) == 1 and hist.n == 4
    assert ClassSizeHistogram.from_sizes([2, 1, 1]).n_classes == 3
    with pytest.raises(InputError, match="unknown quasi-identifier"):
        SampleTable.from_frame(frame, ["zip"])


def test_pk_share_and_marketer_risk_are_the_measures_definitions() -> None:
    """PK_k and the marketer risk: one definition, vectorized along an axis, used by risk_measures
    and by the surveillance forecast."""
    import numpy as np

    from safeshare.risk.measures import marketer_risk, pk_share, records_at_risk, risk_measures

    f = np.array([1, 2, 10, 11, 30])
    F = np.array([3, 2, 40, 11, 100])
    assert int(records_at_risk(f, 11)) == 13 and float(pk_share(f, 11)) == 13 / 54
    assert float(marketer_risk(f, F)) == pytest.approx((1 / 3 + 1 + 10 / 40 + 1 + 30 / 100) / 54)
    m = risk_measures(f, F, population_size=156, pk=(11,))
    assert m.pk[11] == float(pk_share(f, 11)) and m.marketer == float(marketer_risk(f, F))
    # empty classes count for nothing, no records gives 0, a small dtype stays exact, along an axis
    assert float(pk_share(np.array([0, 0]), 11)) == 0.0 and float(marketer_risk(np.zeros(2), F[:2])) == 0.0
    small = np.array([[200, 3], [0, 250]], dtype=np.uint8)
    np.testing.assert_array_equal(records_at_risk(small, 11, axis=0), [0, 3])
    np.testing.assert_array_equal(records_at_risk(small, 1000, axis=1), [203, 250])
    np.testing.assert_allclose(pk_share(small, 11, axis=1), [3 / 203, 0.0])
    np.testing.assert_allclose(
        marketer_risk(small, np.array([400, 300]), axis=1), [(0.5 + 0.01) / 203, (250 / 300) / 250]
    )
