"""Every class-size estimator at the chosen node, their spread, the measured caveats, and the
recommended estimator used by the report's risk section (issue 33)."""

from __future__ import annotations

import numpy as np
import pytest

from safeshare.risk.classes import ClassSizeHistogram
from safeshare.risk.estimators import DEFAULT_ESTIMATOR, choice, make_estimator
from safeshare.risk.release_risk import histogram_estimators
from safeshare.risk.report_risk import risk_section
from safeshare.risk.sensitivity import ReleasedClasses
from safeshare.risk.spread import estimator_spread, recommended_estimator


def test_spread_is_every_estimator_fitted_directly() -> None:
    sizes = np.random.default_rng(5).geometric(0.3, size=300)
    N = 30 * int(sizes.sum())
    threshold = 0.02
    doc = estimator_spread(ReleasedClasses.of(sizes), N, threshold, "pitman")
    fraction = sizes.sum() / N
    assert doc["band"] == choice.band(fraction) == "<0.1"
    values = {}
    for row in doc["rows"]:
        name = row["estimator"]
        fitted = make_estimator(name, n_bootstrap=0).fit(ClassSizeHistogram.from_sizes(sizes), N)
        assert row["B"] == (None if fitted.B_ is None else pytest.approx(fitted.B_, rel=1e-12)), name
        assert row["caveat"] == choice.caveat(name, fraction)
        assert row["above_threshold"] == (fitted.B_ is not None and threshold < fitted.B_)
        if fitted.B_ is not None:
            values[name] = fitted.B_
    assert [r["estimator"] for r in doc["rows"]] == histogram_estimators()
    assert doc["min"] == pytest.approx(min(values.values())) and doc["max"] == pytest.approx(
        max(values.values())
    )
    assert doc["above_threshold"] == [n for n, v in values.items() if v > threshold]
    assert doc["recommended"] == choice.default_estimator(fraction, histogram_estimators())
    assert any(r["caveat"] for r in doc["rows"])  # at a small fraction our evaluation warns of some


def test_recommended_is_choice_default() -> None:
    for n, N in ((10, 1000), (300, 1000), (900, 1000), (1000, 1000)):
        assert recommended_estimator(n, N) == choice.default_estimator(n / N, histogram_estimators())
    assert recommended_estimator(0, 1000) == DEFAULT_ESTIMATOR


def test_report_section_uses_the_recommended_estimator(monkeypatch: pytest.MonkeyPatch) -> None:
    """The report's risk section asks choice.default_estimator at the input's n/N (not a constant)."""
    seen: list[float] = []

    def fake(fraction: float, candidates: object = None) -> str:
        seen.append(fraction)
        return "zayatz"

    monkeypatch.setattr(choice, "default_estimator", fake)
    doc = risk_section([3, 2, 1, 4], [3, 4], 100)
    assert doc["estimator"] == "zayatz" and set(doc["release"]["B_estimate"]) == {"zayatz"}
    # asked at the input's n/N (twice: the section's estimator, and the input's estimators' "recommended")
    assert seen and all(fraction == pytest.approx(10 / 100) for fraction in seen)
    assert risk_section([3, 2, 1, 4], [3, 4], 100, estimator="pitman")["estimator"] == "pitman"
