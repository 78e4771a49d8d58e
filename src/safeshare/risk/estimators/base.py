"""The one small interface every estimator of the sample-to-population risk B follows.

sklearn-style: parameters are plain ``__init__`` arguments stored unchanged and
validated in :meth:`RiskEstimator.fit`; ``fit(sample, population_size)`` sets
fitted attributes with a trailing underscore and returns the estimator:

* ``B_``: the estimated ``B = (1/n) sum_k 1/F_k`` (Jiang et al. 2022, Eq. 2);
* ``population_uniques_``: the estimated number of population-unique people
  (``None`` when the model does not give one); ``population_uniqueness_`` is
  that number divided by ``N``;
* ``n_``, ``N_``, ``sampling_fraction_`` (``n/N``).

``sample`` is a :class:`~safeshare.risk.classes.SampleTable` (the frequency
table) or, for estimators that only need class sizes, a
:class:`~safeshare.risk.classes.ClassSizeHistogram`. An estimator that needs
the table (``requires_table = True``) refuses a histogram.
"""

from __future__ import annotations

import inspect
from abc import ABC, abstractmethod
from typing import Any, ClassVar, Self

from safeshare.errors import InputError
from safeshare.risk.classes import ClassSizeHistogram, SampleTable

Sample = SampleTable | ClassSizeHistogram


class RiskEstimator(ABC):
    """Base class: estimates B from a sample and the population size N only."""

    name: ClassVar[str]
    requires_table: ClassVar[bool] = False

    B_: float
    population_uniques_: float | None
    n_: int
    N_: int
    sampling_fraction_: float

    def get_params(self) -> dict[str, Any]:
        """The ``__init__`` parameters and their current values."""
        names = [p for p in inspect.signature(type(self).__init__).parameters if p != "self"]
        return {p: getattr(self, p) for p in names}

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"

    def fit(self, sample: Sample, population_size: int) -> Self:
        """Estimate B for ``sample`` drawn from a population of ``population_size`` people."""
        if self.requires_table and not isinstance(sample, SampleTable):
            raise InputError(f"estimator {self.name!r} needs the sample's frequency table, not a histogram")
        hist = sample.histogram() if isinstance(sample, SampleTable) else sample
        n = hist.n
        if isinstance(population_size, bool) or not isinstance(population_size, int):
            raise InputError(f"population size: expected an integer, got {population_size!r}")
        if population_size < n:
            raise InputError(f"population size {population_size} is smaller than the sample ({n} records)")
        self._validate()
        self.n_ = n
        self.N_ = population_size
        self.sampling_fraction_ = n / population_size
        self.population_uniques_ = None
        self._fit(sample, hist, population_size)
        return self

    @property
    def population_uniqueness_(self) -> float | None:
        u = self.population_uniques_
        return None if u is None else u / self.N_

    def _validate(self) -> None:  # noqa: B027 - optional hook
        """Check the ``__init__`` parameters (raise InputError)."""

    @abstractmethod
    def _fit(self, sample: Sample, hist: ClassSizeHistogram, N: int) -> None:
        """Set ``B_`` (and ``population_uniques_`` when the model gives it)."""


def check_seed(value: object, what: str = "random_state") -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
        raise InputError(f"{what}: expected a non-negative integer or None, got {value!r}")


def check_positive_int(value: object, what: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InputError(f"{what}: expected a positive integer, got {value!r}")
