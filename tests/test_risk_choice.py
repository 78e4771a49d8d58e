"""The default estimator per sampling-fraction band and its caveats (risk/estimators/choice.py),
on a hand-made accuracy table (the rule) and on the measured one (what the command line gets)."""

from __future__ import annotations

import math
from typing import Any

import pytest

from safeshare.errors import InputError
from safeshare.risk.estimators import ESTIMATORS, choice, measured


def _stats(
    points: int, within: float, mae: float, median: float = 0.0, rel: float = 0.0, failed: int = 0
) -> dict[str, Any]:
    return {
        "points": points,
        "failed": failed,
        "within": within,
        "median_abs_error": mae,
        "median_error": median,
        "median_relative_error": rel,
        "relative_points": points,
    }


def _entry(
    adult: dict[str, Any], kdd: dict[str, Any], german: dict[str, Any], pooled: dict[str, Any]
) -> dict[str, Any]:
    return {"datasets": {"adult": adult, "kdd": kdd, "german": german}, "pooled": pooled}


@pytest.fixture
def table(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    good = _stats(100, 0.99, 0.001)
    low = _stats(100, 0.90, 0.02, median=0.02)
    acc: dict[str, Any] = {
        # best pooled, but one dataset is poor: the worst dataset decides
        "steady": {
            b: _entry(good, _stats(100, 0.95, 0.002), _stats(100, 0.93, 0.004), good) for b in choice.BANDS
        },
        "uneven": {
            b: _entry(good, good, _stats(100, 0.80, 0.02, median=0.03, rel=0.05), good) for b in choice.BANDS
        },
        # same worst share as steady below 0.1, larger worst median |error|: loses the tie
        "tied": {b: _entry(good, _stats(100, 0.93, 0.009), good, good) for b in choice.BANDS},
        # overestimates by 25 % at every band; fails on a fifth of its points above 0.5
        "biased": {
            b: _entry(low, low, low, _stats(300, 0.90, 0.02, median=0.02, rel=0.25)) for b in choice.BANDS
        },
        "failing": {
            b: _entry(_stats(100, 1.0, 0.0, failed=30), good, good, _stats(300, 1.0, 0.0, failed=30))
            for b in choice.BANDS
        },
    }
    monkeypatch.setattr(choice, "ACCURACY", acc)
    return acc


def test_band_edges() -> None:
    assert choice.band(0.01) == "<0.1" and choice.band(0.0999) == "<0.1"
    assert choice.band(0.1) == "0.1-0.5" and choice.band(0.5) == "0.1-0.5"
    assert choice.band(0.5001) == ">0.5" and choice.band(1.0) == ">0.5"
    for bad in (0.0, -0.2, 1.2, math.nan):
        with pytest.raises(InputError, match="sampling fraction"):
            choice.band(bad)


def test_the_worst_dataset_decides_and_ties_go_to_the_smaller_error(table: dict[str, Any]) -> None:
    ranking = choice.ranking(0.3)
    # steady: worst 93 %, 0.004; tied: worst 93 %, 0.009; biased 90 %; uneven 80 %; a point
    # without an estimate is a miss: failing's adult share is 1.0 x 70/100 = 70 %
    assert ranking == ["steady", "tied", "biased", "uneven", "failing"]
    assert choice.default_estimator(0.3) == "steady"


def test_a_dataset_without_points_is_left_out_of_the_worst_case(table: dict[str, Any]) -> None:
    for entry in table["uneven"].values():
        entry["datasets"]["german"] = _stats(0, 0.0, math.nan)
    assert choice.ranking(0.3)[0] == "uneven"  # 99 % on the two datasets it was evaluated on
    assert choice.caveat("uneven", 0.3) is None


def test_the_default_can_be_restricted_to_estimators_that_need_no_table(table: dict[str, Any]) -> None:
    assert choice.default_estimator(0.3, candidates=("uneven", "biased")) == "biased"
    with pytest.raises(InputError, match="no evaluated estimator"):
        choice.default_estimator(0.3, candidates=("not_evaluated",))


def test_caveats_name_the_bias_the_evaluation_shows(table: dict[str, Any]) -> None:
    assert choice.caveat("steady", 0.05) is None
    text = choice.caveat("biased", 0.7)
    assert text is not None and "overestimated B by about 25%" in text and "above 0.5" in text
    text = choice.caveat("failing", 0.05)
    assert text is not None and "no estimate on 10%" in text and "below 0.1" in text
    text = choice.caveat("uneven", 0.2)
    assert text is not None and "German credit" in text and "80%" in text and "+0.030" in text
    assert choice.caveat("never_evaluated", 0.2) is None
    for name in table:
        for f in (0.05, 0.3, 0.9):
            line = choice.caveat(name, f)
            assert line is None or "\n" not in line


# --------------------------------------------------------------------------- the measured table


def test_the_measured_table_covers_every_registered_estimator_in_every_band() -> None:
    acc = measured.ACCURACY
    assert set(acc) == set(ESTIMATORS)
    for name, bands in acc.items():
        assert set(bands) == set(choice.BANDS), name
        for entry in bands.values():
            assert set(entry["datasets"]) == set(choice.DATASET_NAMES)
            evaluated = [s for s in entry["datasets"].values() if s["points"] > 0]
            assert len(evaluated) >= 2 and entry["pooled"]["points"] == sum(s["points"] for s in evaluated)
            for stats in (*evaluated, entry["pooled"]):
                assert 0.0 <= stats["within"] <= 1.0
            if name in ("gaussian_copula", "dvine_copula", "average"):
                lo, hi = entry["relative_error_quantiles"]
                assert lo < 0.0 < hi


@pytest.mark.parametrize("fraction", [0.02, 0.3, 0.8])
def test_the_measured_default_is_a_registered_estimator(fraction: float) -> None:
    name = choice.default_estimator(fraction)
    assert name in ESTIMATORS
    histogram_only = [n for n in ESTIMATORS if not ESTIMATORS[n].requires_table]
    assert not ESTIMATORS[choice.default_estimator(fraction, candidates=histogram_only)].requires_table
