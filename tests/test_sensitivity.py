"""The sensitivity band of B to N and the N at which B crosses the threshold (issue 33)."""

from __future__ import annotations

import numpy as np
import pytest

from safeshare.errors import InputError
from safeshare.risk.classes import ClassSizeHistogram
from safeshare.risk.estimators import make_estimator
from safeshare.risk.sensitivity import CROSSING_PRECISION, ReleasedClasses, b_at, crossing, sensitivity


def _sizes(seed: int = 0, classes: int = 400, p: float = 0.15) -> np.ndarray:
    return np.random.default_rng(seed).geometric(p, size=classes)


def _direct(sizes: np.ndarray, N: int, name: str) -> float | None:
    """B of the class sizes straight from the estimator class (not through safeshare.risk)."""
    fitted = make_estimator(name, n_bootstrap=0).fit(ClassSizeHistogram.from_sizes(sizes), N)
    return fitted.B_


@pytest.mark.parametrize("name", ["pitman", "zayatz", "dankar"])
def test_band_is_the_estimator_at_half_N_and_double_N(name: str) -> None:
    sizes = _sizes()
    classes = ReleasedClasses.of(sizes)
    N = 20 * classes.n
    band = sensitivity(classes, N, name, 0.09)
    assert band["B_at_half_N"] == pytest.approx(_direct(sizes, round(N / 2), name), rel=1e-12)
    assert band["B_at_N"] == pytest.approx(_direct(sizes, N, name), rel=1e-12)
    assert band["B_at_double_N"] == pytest.approx(_direct(sizes, 2 * N, name), rel=1e-12)
    assert band["B_at_half_N"] >= band["B_at_N"] >= band["B_at_double_N"]  # a larger N, a smaller B


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_band_monotone(seed: int) -> None:
    classes = ReleasedClasses.of(_sizes(seed, p=0.3))
    values = [b_at(classes, N, "pitman").B for N in (classes.n, 2 * classes.n, 5 * classes.n, 50 * classes.n)]
    assert all(v is not None for v in values)
    assert values == sorted(values, reverse=True)  # type: ignore[type-var]


@pytest.mark.parametrize("threshold", [0.05, 0.09, 0.2])
def test_crossing_is_where_B_equals_the_threshold(threshold: float) -> None:
    sizes = _sizes(3, classes=600, p=0.4)
    classes = ReleasedClasses.of(sizes)
    N = 4 * classes.n
    found = crossing(classes, N, "pitman", threshold)
    lo, hi = found["range"]
    if found["N"] is None:
        pytest.fail(f"no crossing in [{lo}, {hi}]: B(lo)={_direct(sizes, lo, 'pitman')}")
    at = found["N"]
    assert lo < at <= hi
    assert _direct(sizes, at, "pitman") <= threshold + 1e-9
    below = max(lo, int(at / (1 + 2 * CROSSING_PRECISION)) - 1)
    assert _direct(sizes, below, "pitman") > threshold  # just below the crossing B is above it
    assert found["B"] == pytest.approx(threshold, rel=1e-2)
    assert f"{at:,}" in found["text"]


def test_no_crossing_said_so() -> None:
    classes = ReleasedClasses.of([50] * 40)  # large classes: B small for every N
    found = crossing(classes, 10 * classes.n, "pitman", 0.09)
    assert found["N"] is None
    assert found["text"].startswith(f"never within [{classes.n:,}, {1000 * classes.n:,}]")
    classes = ReleasedClasses.of([1] * 40)  # all unique at N = n: B = 1
    found = crossing(classes, classes.n, "pitman", 1e-9)
    assert found["N"] is None and "B > " in found["text"]


def test_whole_input_has_no_half_N() -> None:
    """Without a given N the input is the population (N = n): N/2 is below the sample."""
    sizes = _sizes()
    classes = ReleasedClasses.of(sizes)
    band = sensitivity(classes, classes.n, "pitman", 0.09)
    assert band["B_at_half_N"] is None
    assert "smaller than the release" in band["points"][0]["reason"]
    assert band["B_at_N"] == pytest.approx(len(sizes) / sizes.sum(), rel=1e-9)  # exact at N = n: J/n


def test_person_key_counts_people_not_pairs() -> None:
    """150 people in classes of 200 person-class pairs: n <= N is checked in people (the bug of a
    previous release: 'population size smaller than the sample' from the pairs); B has an estimate
    from N = the pairs on, as in the report's risk section."""
    sizes = np.array([20] * 10)  # 200 pairs
    classes = ReleasedClasses.of(sizes, n=150, unit="people")
    assert classes.smallest_N == 200
    point = b_at(classes, 160, "pitman")
    assert point.B is None and "person-class pairs" in (point.reason or "")
    assert "smaller than" not in (point.reason or "")
    point = b_at(classes, 120, "pitman")
    assert point.B is None and "(150 people)" in (point.reason or "")
    band = sensitivity(classes, 1000, "pitman", 0.09)
    assert band["unit"] == "people" and band["B_at_N"] == pytest.approx(_direct(sizes, 1000, "pitman"))
    assert band["crossing"]["range"][0] == 200


def test_more_people_than_pairs_refused() -> None:
    with pytest.raises(InputError, match="classes holding"):
        ReleasedClasses.of([2, 2], n=5, unit="people")
