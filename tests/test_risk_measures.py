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


# ---------------------------------------------------------------- boundaries and contracts (issue 13)
# Written for mutants of ``make mutation`` (target ``surveillance``) that the tests above let
# through; ``# kills:`` names them.


@pytest.mark.parametrize("k", [1, 2, 5, 11])
def test_pk_at_class_sizes_k_minus_one_k_and_k_plus_one(k: int) -> None:
    """Classes of k - 1, k and k + 1 records: only the first is at risk (PK_k counts f < k)."""
    from safeshare.risk.measures import pk_share, records_at_risk

    sizes = [k - 1, k, k + 1] if k > 1 else [k, k + 1]
    at_risk = sum(f for f in sizes if f < k)  # a plain loop over the class sizes
    assert at_risk == (k - 1)
    assert int(records_at_risk(np.array(sizes), k)) == at_risk
    assert float(pk_share(np.array(sizes), k)) == at_risk / sum(sizes)
    assert float(pk_share(np.array(sizes), k + 1)) == sum(f for f in sizes if f < k + 1) / sum(sizes)
    got = risk_measures(sizes, pk=(k, k + 1))
    assert got.pk == {k: at_risk / sum(sizes), k + 1: (at_risk + k) / sum(sizes)}


def test_records_at_risk_keeps_the_dtype_of_the_sizes() -> None:
    """The documented promise (no widening sums on the Monte Carlo arrays)."""
    from safeshare.risk.measures import records_at_risk

    for dtype in (np.uint8, np.uint16, np.uint32, np.int64):
        sizes = np.array([[3, 10], [0, 120]], dtype=dtype)
        # kills: `small.sum(..., dtype=sizes.dtype)` -> `dtype=None` (uint8 sums widen to uint64)
        got = records_at_risk(sizes, 11, axis=0)
        assert got.dtype == dtype and got.tolist() == [3, 10]
        assert records_at_risk(sizes, 11).dtype == dtype and int(records_at_risk(sizes, 11)) == 13


def test_marketer_risk_ignores_classes_without_people() -> None:
    """F = 0 (no people, hence no records) counts for nothing, whatever memory np.divide would leave."""
    from safeshare.risk.measures import marketer_risk

    for n in (3, 8, 64, 200):
        f = np.zeros(n)
        F = np.zeros(n)
        f[1], F[1] = 2, 4  # one class: 2 of its 4 people released
        f[-1], F[-1] = 1, 1
        junk = np.full(n, 7.5)  # a freed buffer of the same size, which a fresh np.empty may reuse
        del junk
        # kills: np.divide without `out=np.zeros(...)` (the slots where F = 0 left uninitialized)
        assert float(marketer_risk(f, F)) == (2 / 4 + 1 / 1) / 3
        rows = np.stack([f, 2 * f])  # row 2: (4/8 + 2/2) / 6
        junk = np.full(2 * n, -3.0)
        del junk
        np.testing.assert_array_equal(marketer_risk(rows, np.stack([F, 2 * F]), axis=1), [0.5, 0.25])


def test_threshold_is_a_probability_in_zero_one() -> None:
    """threshold in (0, 1]: 1 is accepted (nothing is above it), 0 and anything above 1 refused."""
    got = risk_measures([1, 2, 4], [2, 2, 8], population_size=20, threshold=1)
    assert got.threshold == 1 and got.prosecutor_share_above == 0 and got.journalist_share_above == 0
    tiny = risk_measures([1, 2, 4], [2, 2, 8], population_size=20, threshold=1e-12)
    assert tiny.prosecutor_share_above == 1 and tiny.journalist_share_above == 1
    # the share above the threshold is strict: 1/f = 0.5 is not above 0.5
    assert risk_measures([1, 2, 4], threshold=0.5).prosecutor_share_above == 1 / 7
    # kills: `threshold <= 1` -> `<= 2`
    for bad in (0, -0.1, 1 + 1e-9, 1.5, 2):
        with pytest.raises(InputError, match=r"threshold: expected a probability in \(0, 1\]"):
            risk_measures([1, 2], threshold=bad)


def test_class_sizes_without_a_population() -> None:
    frame = pd.DataFrame({"a": ["x", "y", "x", "x", "z"], "b": [1, 2, 1, 1, 2]})
    # kills: the sample's column read as "F" when no population is given
    f, F = class_sizes(frame, ["a", "b"])
    assert F is None and f.dtype == np.int64 and sorted(f.tolist()) == [1, 1, 3]
    f, F = class_sizes(frame, ["a", "b"], pd.concat([frame, frame.iloc[:2]]))
    assert F is not None and f.dtype == np.int64 and F.dtype == np.int64
    assert sorted(zip(f.tolist(), F.tolist(), strict=True)) == [(1, 1), (1, 2), (3, 4)]
    with pytest.raises(InputError, match="unknown quasi-identifier 'c' in the data"):
        class_sizes(frame, ["c"])
    with pytest.raises(InputError, match="unknown quasi-identifier 'b' in the population"):
        class_sizes(frame, ["a", "b"], frame[["a"]])


def test_report_dict_keys_and_values() -> None:
    """to_dict is the report's contract: its keys and values, with and without a population."""
    # f = (1, 2, 4), F = (2, 2, 8), N = 20: worked by hand
    got = risk_measures([1, 2, 4], [2, 2, 8], population_size=20, threshold=0.3, pk=(2, 5))
    # kills: renamed keys ("n", "mean", "share_above_threshold", "pk"), journalist always None
    assert got.to_dict() == {
        "n": 7,
        "classes": 3,
        "population_size": 20,
        "threshold": 0.3,
        "A": 3 / 20,
        "B": pytest.approx((1 / 2 + 2 / 2 + 4 / 8) / 7),
        "prosecutor": {"max": 1.0, "mean": 3 / 7, "share_above_threshold": 3 / 7},
        "journalist": {
            "max": 0.5,
            "mean": pytest.approx(2 / 7),
            "share_above_threshold": 3 / 7,
        },
        "marketer": pytest.approx(2 / 7),
        "sample_uniques": 1,
        "population_uniques_in_sample": 0,
        "pk": {"2": 1 / 7, "5": 1.0},
    }
    alone = risk_measures([1, 3], pk=(2,)).to_dict()
    assert alone == {
        "n": 4,
        "classes": 2,
        "population_size": None,
        "threshold": 0.09,
        "A": None,
        "B": None,
        "prosecutor": {"max": 1.0, "mean": 0.5, "share_above_threshold": 1.0},
        "journalist": None,
        "marketer": 0.5,
        "sample_uniques": 1,
        "population_uniques_in_sample": None,
        "pk": {"2": 0.25},
    }


def test_a_sample_class_missing_from_the_population_is_named() -> None:
    sample = pd.DataFrame({"a": ["x", "y"], "b": ["1", "2"]})
    population = pd.DataFrame({"a": ["x", "y"], "b": ["1", "3"]})
    # kills: the values of the missing class dropped from the message
    with pytest.raises(DataError) as err:
        class_sizes(sample, ["a", "b"], population)
    assert str(err.value) == "the population has no record with a='y', b='2', which the sample has"


def test_exact_B_refuses_a_key_between_two_population_keys() -> None:
    population = np.array([1, 2, 2, 4])
    assert exact_B(np.array([1, 4, 2]), population) == pytest.approx((1 + 1 + 1 / 2) / 3)
    # kills: `or` -> `and` (a missing key inside the population's range went unnoticed)
    with pytest.raises(DataError, match="not in the population"):
        exact_B(np.array([1, 3]), population)
    with pytest.raises(DataError, match="not in the population"):
        exact_B(np.array([5]), population)
    with pytest.raises(DataError, match="not in the population"):
        exact_B(np.array([0]), population)


def test_marketer_risk_without_records_is_zero_along_an_axis() -> None:
    """Rows without records (n = 0) get 0, whatever memory np.divide would leave."""
    from safeshare.risk.measures import marketer_risk

    for rows in (2, 5, 40, 100):
        f = np.zeros((rows, 3))
        f[0] = [1, 0, 2]
        F = np.array([2.0, 5.0, 4.0])
        junk = np.full(rows, 9.0)  # a freed buffer of the output's size, which np.empty may reuse
        del junk
        # kills: the last np.divide without `out=np.zeros(...)`
        got = marketer_risk(f, F, axis=1)
        assert got.tolist() == [(1 / 2 + 2 / 4) / 3] + [0.0] * (rows - 1)
