"""Microaggregation (issue 25): MDAV and optimal univariate microaggregation.

MDAV's grouping is compared with a plain-Python implementation of the published steps
(Domingo-Ferrer & Torra 2005) and its SSE with a pandas groupby; the univariate optimum with
a brute force over every partition of small inputs (not only the contiguous ones that
Hansen & Mukherjee's theorem allows).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from safeshare.data.engines.memory import MemoryEngine
from safeshare.data.microaggregation import k_anonymity_check, mdav, microaggregate, optimal_univariate
from safeshare.data.schema import Attribute, Role, Schema
from safeshare.errors import InputError
from safeshare.hierarchy.builders import SuppressionBuilder
from safeshare.hierarchy.hierarchy import Hierarchy
from safeshare.models import KAnonymity
from safeshare.workflows.anonymizer import Anonymizer
from safeshare.workflows.publish import write_release
from tests.conftest import ADULT_DIR, examples

# --------------------------------------------------------------------------- references


def reference_mdav(x: np.ndarray, k: int) -> list[int]:
    """MDAV step by step with Python lists (first index wins ties; nearest: stable by distance)."""
    n = len(x)
    remaining = list(range(n))
    groups = [-1] * n
    label = 0

    def dist(i: int, c: np.ndarray) -> float:
        return float(((x[i] - c) ** 2).sum())

    def farthest(c: np.ndarray) -> int:
        best, arg = -1.0, -1
        for i in remaining:
            d = dist(i, c)
            if d > best:
                best, arg = d, i
        return arg

    def group_around(c: np.ndarray) -> None:
        nonlocal label, remaining
        ranked = sorted(remaining, key=lambda i: (dist(i, c), remaining.index(i)))[:k]
        for i in ranked:
            groups[i] = label
        label += 1
        remaining = [i for i in remaining if i not in ranked]

    while len(remaining) >= 3 * k:
        r = farthest(x[remaining].mean(axis=0))
        group_around(x[r].copy())
        s = farthest(x[r])
        group_around(x[s].copy())
    if len(remaining) >= 2 * k:
        r = farthest(x[remaining].mean(axis=0))
        group_around(x[r].copy())
    for i in remaining:
        groups[i] = label
    return groups


def groupby_sse(z: np.ndarray, groups: np.ndarray) -> float:
    frame = pd.DataFrame(z)
    frame["g"] = groups
    means = frame.groupby("g").transform("mean")
    return float(((frame.drop(columns="g") - means) ** 2).to_numpy().sum())


def partitions(items: list[int]):  # type: ignore[no-untyped-def]
    """Every set partition of ``items``."""
    if not items:
        yield []
        return
    first, rest = items[0], items[1:]
    for smaller in partitions(rest):
        for i in range(len(smaller)):
            yield [*smaller[:i], [first, *smaller[i]], *smaller[i + 1 :]]
        yield [[first], *smaller]


def brute_force_sse(values: np.ndarray, k: int) -> float:
    best = math.inf
    for blocks in partitions(list(range(len(values)))):
        if all(len(b) >= k for b in blocks):
            best = min(best, sum(float(((values[b] - values[b].mean()) ** 2).sum()) for b in blocks))
    return best


# --------------------------------------------------------------------------- MDAV


@settings(max_examples=examples(80, 25), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**31 - 1), st.integers(1, 6), st.integers(1, 3))
@example(3887, 1, 1)  # one record: its standard deviation is 0 (the test divided by it)
def test_mdav_groups_and_sse(seed: int, k: int, p: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(k, 90))
    raw = rng.normal(size=(n, p)) * rng.uniform(0.5, 50, size=p) + rng.uniform(-100, 100, size=p)
    frame = pd.DataFrame({f"c{j}": raw[:, j] for j in range(p)})
    result = microaggregate(frame, list(frame.columns), k)
    sizes = np.sort(result.group_sizes)
    assert sizes.min() >= k
    assert (sizes[:-1] == k).all() and k <= sizes[-1] <= max(k, 2 * k - 1)  # one last group of k..2k-1
    assert sizes.sum() == n and result.groups.max() + 1 == len(sizes)
    scale = raw.std(axis=0)
    scale[scale == 0] = 1.0  # a constant column (e.g. one record) is not scaled, as the module does
    z = (raw - raw.mean(axis=0)) / scale
    assert result.groups.tolist() == reference_mdav(z, k)
    assert result.sse == pytest.approx(groupby_sse(z, result.groups), rel=1e-9, abs=1e-9)
    assert result.sst == pytest.approx(float(((z - z.mean(axis=0)) ** 2).sum()), rel=1e-9)
    assert 0.0 <= result.information_loss <= 1.0
    # the released values are the group means, in original units
    means = frame.groupby(result.groups).transform("mean").to_numpy()
    assert np.allclose(result.values, means)
    # the aggregated columns alone are k-anonymous
    released = result.apply(frame)
    assert k_anonymity_check(released, list(frame.columns), k).passes


def test_mdav_is_deterministic_with_ties() -> None:
    x = np.array([[0.0], [0.0], [1.0], [1.0], [0.0], [1.0], [2.0], [2.0]])
    first = mdav(x, 2)
    assert first.tolist() == mdav(x.copy(), 2).tolist() == reference_mdav(x, 2)
    assert sorted(np.bincount(first).tolist()) == [2, 2, 2, 2]


def test_k_equal_to_one_changes_nothing() -> None:
    frame = pd.DataFrame({"a": ["3", "1", "2.5"]})
    result = microaggregate(frame, ["a"], 1)
    assert result.sse == 0.0 and result.apply(frame)["a"].tolist() == ["3", "1", "2.5"]


# --------------------------------------------------------------------------- optimal univariate


@settings(max_examples=examples(60, 20), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.integers(-20, 20), min_size=1, max_size=8), st.integers(1, 4))
def test_optimal_univariate_against_brute_force(values: list[int], k: int) -> None:
    x = np.asarray(values, dtype=np.float64)
    if len(x) < k:
        with pytest.raises(InputError, match="at least k"):
            optimal_univariate(x, k)
        return
    groups = optimal_univariate(x, k)
    sizes = np.bincount(groups)
    assert sizes.min() >= k and sizes.max() <= max(k, 2 * k - 1)
    order = np.argsort(x, kind="stable")
    assert (np.diff(groups[order]) >= 0).all()  # consecutive in sorted order
    ours = groupby_sse(x[:, None], groups)
    assert ours == pytest.approx(brute_force_sse(x, k), abs=1e-9)
    result = microaggregate(pd.DataFrame({"x": values}), ["x"], k, method="optimal")
    assert result.groups.tolist() == groups.tolist()


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**31 - 1), st.integers(2, 6))
def test_optimal_is_never_worse_than_mdav(seed: int, k: int) -> None:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({"x": rng.gamma(2.0, 10.0, size=int(rng.integers(k, 300)))})
    optimal = microaggregate(frame, ["x"], k, method="optimal")
    assert optimal.sse <= microaggregate(frame, ["x"], k, method="mdav").sse + 1e-9


def test_adult_age_optimal_in_linear_time() -> None:
    frame = pd.read_csv(ADULT_DIR / "adult.data", header=None, usecols=[0], names=["age"])
    result = microaggregate(frame, ["age"], 5, method="optimal")
    assert result.group_sizes.min() >= 5 and result.group_sizes.max() <= 9
    assert 0.0 < result.information_loss < 0.01  # 73 distinct ages, 32,561 records: little is lost
    assert result.summary()["sse_sst"] == result.information_loss


# --------------------------------------------------------------------------- release with the other QIs


def test_released_with_the_other_quasi_identifiers_and_verified(tmp_path: Path) -> None:
    """Age microaggregated (k = 5), then released with sex and race: the check on the released
    values finds small classes, the lattice search suppresses or generalizes them, and the
    written release passes the independent verifier (k on the released values)."""
    names = [
        "age", "workclass", "fnlwgt", "education", "education-num", "marital-status", "occupation",
        "relationship", "race", "sex", "capital-gain", "capital-loss", "hours-per-week", "native-country",
        "income",
    ]  # fmt: skip
    frame = pd.read_csv(ADULT_DIR / "adult.data", header=None, names=names, dtype=str, skipinitialspace=True)
    frame = frame[["age", "sex", "race", "income"]].head(3000)
    result = microaggregate(frame, ["age"], 5, method="optimal", decimals=1)
    released = result.apply(frame)
    assert k_anonymity_check(released, ["age"], 5).passes
    together = k_anonymity_check(released, ["age", "sex", "race"], 5)
    assert not together.passes and together.min_class_size < 5
    sex = Hierarchy([("Male", "*"), ("Female", "*")], "sex")
    race = Hierarchy([(r, "*") for r in sorted(frame["race"].unique())], "race")
    schema = Schema.from_attributes(
        [
            Attribute("age", Role.QUASI, SuppressionBuilder()),
            Attribute("sex", Role.QUASI, sex),
            Attribute("race", Role.QUASI, race),
            Attribute("income", Role.INSENSITIVE),
        ]
    )
    engine = MemoryEngine(released)
    anonymized = Anonymizer(schema, [KAnonymity(5)], max_suppression=0.05).fit(engine)
    published = write_release(anonymized, engine, tmp_path / "out", html=False)
    assert published.verification.passed
    out = pd.read_csv(published.release, dtype=str, keep_default_na=False)
    assert out.groupby(["age", "sex", "race"]).size().min() >= 5
    ages = set(out["age"]) - {"*"}
    assert ages <= set(released["age"])  # aggregated values, never a raw age that was not a mean


# --------------------------------------------------------------------------- refusals


def test_bad_input_is_refused_in_one_line() -> None:
    frame = pd.DataFrame({"a": ["1", "2", "x", "4"], "b": ["1", "2", "3", "4"]})
    with pytest.raises(InputError, match=r"column 'a' has the value 'x' \(record 3\), not a finite number"):
        microaggregate(frame, ["a"], 2)
    with pytest.raises(InputError, match="at least k = 5"):
        microaggregate(frame, ["b"], 5)
    with pytest.raises(InputError, match="univariate"):
        microaggregate(frame, ["a", "b"], 2, method="optimal")
    with pytest.raises(InputError, match="method"):
        microaggregate(frame, ["b"], 2, method="kmeans")
    with pytest.raises(InputError, match="unknown column"):
        microaggregate(frame, ["c"], 2)
    for bad in (0, True, 2.0):
        with pytest.raises(InputError, match="k"):
            microaggregate(frame, ["b"], bad)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="decimals"):
        microaggregate(frame, ["b"], 2, decimals=-1)


def test_partitions_helper_counts_bell_numbers() -> None:
    assert [sum(1 for _ in partitions(list(range(n)))) for n in range(6)] == [1, 1, 2, 5, 15, 52]


def test_work_beyond_the_bounds_is_refused_with_its_figure(monkeypatch: pytest.MonkeyPatch) -> None:
    import safeshare.data.microaggregation as micro

    frame = pd.DataFrame({"a": [str(i) for i in range(100)], "b": ["1"] * 100})
    monkeypatch.setattr(micro, "MAX_MDAV_OPERATIONS", 1000)
    figure = r"MDAV on 100 records and 2 column\(s\) with k = 5 needs about 3.0e\+03"
    with pytest.raises(InputError, match=figure):
        microaggregate(frame, ["a", "b"], 5)
    # the univariate optimum is not bound by MDAV's cost
    assert microaggregate(frame, ["a"], 5, method="optimal").group_sizes.min() >= 5
    monkeypatch.setattr(micro, "MAX_RECORDS", 50)
    with pytest.raises(InputError, match="100 records refused: at most 50"):
        microaggregate(frame, ["a"], 5, method="optimal")
