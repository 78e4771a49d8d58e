"""The threshold of a release context, its source and its measure; the average-vs-maximum sentence."""

from __future__ import annotations

import pytest

from safeshare.errors import InputError
from safeshare.risk.thresholds import (
    derive_threshold,
    maximum_class_size,
    risk_kind_sentence,
    threshold_measure,
)


@pytest.mark.parametrize(("invasiveness", "value"), [("low", 0.09), ("medium", 0.075), ("high", 0.05)])
def test_public_ladder(invasiveness: str, value: float) -> None:
    t = derive_threshold("public", invasiveness)
    assert t.value == value and t.measure == "maximum"
    assert "Information and Privacy Commissioner of Ontario" in t.source
    assert ("Policy 0070" in t.source) == (invasiveness == "low")
    assert str(maximum_class_size(value)) in t.note


def test_non_public_is_an_average() -> None:
    t = derive_threshold("non-public", "medium")
    assert t.value == 0.075 and t.measure == "average"
    assert "context" in t.note


def test_unknown_context_refused() -> None:
    with pytest.raises(InputError, match="release model"):
        derive_threshold("open", "low")
    with pytest.raises(InputError, match="invasiveness"):
        derive_threshold("public", "extreme")


@pytest.mark.parametrize("t", [0.09, 0.075, 0.05, 0.2, 1 / 3, 0.1, 1.0, 0.011])
def test_maximum_class_size_is_the_least_k(t: float) -> None:
    k = maximum_class_size(t)
    assert 1 / k <= t + 1e-12
    assert k == 1 or 1 / (k - 1) > t + 1e-12


def test_maximum_class_sizes_of_the_ladder() -> None:
    assert [maximum_class_size(v) for v in (0.09, 0.075, 0.05)] == [12, 14, 20]


def test_sentence_for_a_maximum_figure_applied_to_B() -> None:
    s = risk_kind_sentence("B", 0.09)
    assert s.startswith("B is an average risk")
    assert "EMA / Health Canada" in s and "maximum risk" in s and ">= 12" in s
    assert "applied to an average" in s
    assert threshold_measure(0.09)[0] == "maximum"


def test_sentence_for_a_custodian_figure() -> None:
    s = risk_kind_sentence("B", 0.2)
    assert "custodian's threshold" in s and "maximum" not in s
    assert threshold_measure(0.2) == ("unknown", "the custodian's")
    assert "maximum risk" in risk_kind_sentence("record", 0.09)
