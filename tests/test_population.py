"""The one Population value (issue 31/33): N, its source, the input as the whole population, n <= N."""

from __future__ import annotations

import pytest

from safeshare.errors import InputError
from safeshare.risk.classes import ClassSizeHistogram
from safeshare.risk.estimators import make_estimator
from safeshare.risk.measures import risk_measures
from safeshare.risk.population import NOT_STATED, WHOLE_INPUT, Population, check_population
from safeshare.risk.report_risk import risk_section


def test_no_size_means_the_input_is_the_population() -> None:
    p = Population.of(None)
    assert p.whole_input and p.size is None and p.source is None
    assert p.resolve(1234) == 1234
    assert p.to_dict(1234) == {"size": 1234, "source": WHOLE_INPUT, "assumed": True}
    p.check(10**9)  # nothing to check: the input is the population


def test_size_with_and_without_source() -> None:
    assert Population.of(1000).source == NOT_STATED
    p = Population.of(1000, "  census 2021 table X ")
    assert not p.whole_input and p.source == "census 2021 table X"
    assert p.to_dict(10) == {"size": 1000, "source": "census 2021 table X", "assumed": False}
    assert p.resolve(999) == 1000


@pytest.mark.parametrize("size", [0, -3, 2.5, True, "100"])
def test_bad_size_refused(size: object) -> None:
    with pytest.raises(InputError, match="population size: expected a positive integer"):
        Population(size)  # type: ignore[arg-type]


def test_source_without_size_refused() -> None:
    with pytest.raises(InputError, match="without a population size"):
        Population(None, "census")


def test_check_says_what_and_where() -> None:
    with pytest.raises(InputError, match=r"^population_size 99 is smaller than the input \(100 people\)$"):
        Population.of(99).check(100, "input", "people", "population_size")
    Population.of(100).check(100)
    with pytest.raises(InputError, match="smaller than the sample"):
        check_population(5, 6)
    check_population(None, 6)


def test_every_former_check_goes_through_population() -> None:
    """The estimators, the exact measures and the report's section refuse n > N with one message."""
    hist = ClassSizeHistogram.from_sizes([3, 2, 1])
    with pytest.raises(InputError, match=r"population size 5 is smaller than the sample \(6 records\)"):
        make_estimator("pitman").fit(hist, 5)
    with pytest.raises(InputError, match=r"population size 5 is smaller than the sample \(6 records\)"):
        risk_measures([3, 2, 1], None, 5)
    with pytest.raises(InputError, match="smaller than the input"):
        risk_section([3, 2, 1], [3, 2], 5)


def test_report_section_n_is_the_input_without_size() -> None:
    doc = risk_section([3, 2, 1], [3, 2], None)
    assert doc["population_size"] == 6
    assert doc["release"]["estimated"] is False
    doc = risk_section([3, 2, 1], [3, 2], 600)
    assert doc["population_size"] == 600 and doc["release"]["estimated"] is True
