"""The one small interface every estimator of the sample-to-population risk B follows.

sklearn-style: parameters are plain ``__init__`` arguments stored unchanged and
validated in :meth:`RiskEstimator.fit`; ``fit(sample, population_size)`` sets
fitted attributes with a trailing underscore and returns the estimator.

**The estimate contract** (what every consumer may rely on after ``fit``):

* ``B_``: the estimated ``B = (1/n) sum_k 1/F_k`` (Jiang et al. 2022, Eq. 2), always in
  ``[1/N, 1]`` -- or ``None``, meaning *no estimate*: a failed or non-converged fit, a
  numerical warning (SciPy's ``IntegrationWarning``, an overflow), a value outside
  ``[1/N, 1]``. Checked here, once, after the subclass's ``_fit``: no estimator can hand out
  an impossible B. A value within a relative ``1e-9`` of a bound (rounding, e.g.
  ``1.0000000000001`` for an all-unique sample) is that bound;
* ``B_reason_``: why there is no estimate (``None`` when there is one);
* ``B_interval_``: a 95 % interval ``(low, high)`` with ``1/N <= low <= B_ <= high <= 1``
  where the model gives one (see :class:`ClassSizeEstimator`; the copula estimators: over
  their ``R`` syntheses), else ``None``;
* ``population_uniques_``: the estimated number of population-unique people, in ``[0, N]``
  or ``None``; ``population_uniqueness_`` is that number divided by ``N``. Of whom, the class
  attribute ``uniques_scope`` says: ``"population"`` (the population's uniques: Zayatz, Pitman,
  SNB, the hypothesis test, entropy, the copulas) or ``"sample"`` (the sample's records that are
  unique in the population, sdcMicro's ``tau_1 = sum over sample uniques of P(F = 1 | f = 1)``:
  Benedetti-Franconi, whose model has no estimate for the people outside the sample);
* ``n_``, ``N_``, ``sampling_fraction_`` (``n/N``).

``sample`` is a :class:`~safeshare.risk.classes.SampleTable` (the frequency
table) or, for estimators that only need class sizes, a
:class:`~safeshare.risk.classes.ClassSizeHistogram`. An estimator that needs
the table (``requires_table = True``) refuses a histogram.
"""

from __future__ import annotations

import inspect
import math
import warnings
from abc import ABC, abstractmethod
from typing import Any, ClassVar, Self

import numpy as np

from safeshare.errors import InputError
from safeshare.risk.classes import ClassSizeHistogram, SampleTable
from safeshare.risk.population import check_population

Sample = SampleTable | ClassSizeHistogram

#: A value this close (relatively) to 1/N or 1 is taken as that bound: rounding, not a model error.
BOUND_TOLERANCE = 1e-9

#: Warnings that mean the numbers cannot be trusted: they turn the fit into "no estimate".
NUMERIC_WARNINGS: tuple[type[Warning], ...] = (RuntimeWarning,)


class NoEstimate(Exception):
    """Raised inside ``_fit``: the model has no estimate for this sample (the message says why)."""


def numeric_warning_types() -> tuple[type[Warning], ...]:
    from scipy import integrate, optimize

    return (*NUMERIC_WARNINGS, integrate.IntegrationWarning, optimize.OptimizeWarning)


class RiskEstimator(ABC):
    """Base class: estimates B from a sample and the population size N only."""

    name: ClassVar[str]
    requires_table: ClassVar[bool] = False
    #: whose uniques ``population_uniques_`` counts: the population's, or the sample's records
    #: that are population unique (see the module docstring)
    uniques_scope: ClassVar[str] = "population"

    B_: float | None
    B_reason_: str | None
    B_interval_: tuple[float, float] | None
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
        if isinstance(population_size, bool) or not isinstance(population_size, int | np.integer):
            raise InputError(f"population size: expected an integer, got {population_size!r}")
        population_size = int(population_size)
        check_population(population_size, n)
        self._validate()
        self.n_ = n
        self.N_ = population_size
        self.sampling_fraction_ = n / population_size
        self.B_ = None
        self.B_reason_ = None
        self.B_interval_ = None
        self.population_uniques_ = None
        reason = self._run(sample, hist, population_size)
        self._check(reason)
        return self

    def _run(self, sample: Sample, hist: ClassSizeHistogram, N: int) -> str | None:
        """Call ``_fit``; the reason there is no estimate when it fails or warns."""
        numeric = numeric_warning_types()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                self._fit(sample, hist, N)
            except NoEstimate as exc:
                return str(exc)
            except (ArithmeticError, np.linalg.LinAlgError) as exc:
                return f"numerical failure in the {self.name} fit ({type(exc).__name__}: {exc})"
        reason = None
        for w in caught:
            if issubclass(w.category, numeric):
                if reason is None:
                    text = " ".join(str(w.message).split())
                    reason = f"numerical warning in the {self.name} fit ({w.category.__name__}: {text})"
            else:  # not about the numbers: passed on unchanged
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        return reason

    def _check(self, reason: str | None) -> None:
        """Enforce the contract on what ``_fit`` set (see the module docstring)."""
        N = self.N_
        lo, hi = 1.0 / N, 1.0
        value = self.B_
        if reason is None:
            if value is None:
                reason = self.B_reason_ or f"the {self.name} model gave no value"
            elif not math.isfinite(value):
                reason = f"the {self.name} model gave a non-finite value ({value})"
            elif lo * (1 - BOUND_TOLERANCE) <= value < lo:
                value = lo
            elif hi < value <= hi * (1 + BOUND_TOLERANCE):
                value = hi
            elif not lo <= value <= hi:
                reason = f"the {self.name} model gave B = {value:.6g}, outside [1/N, 1] = [{lo:.3g}, 1]"
        if reason is not None or value is None:
            self.B_, self.B_reason_, self.B_interval_ = None, reason, None
        else:
            self.B_, self.B_reason_ = float(value), None
            self.B_interval_ = self._checked_interval(float(value), lo, hi)
        u = self.population_uniques_
        if u is not None and (not math.isfinite(u) or not 0 <= u <= N * (1 + BOUND_TOLERANCE)):
            self.population_uniques_ = None
        elif u is not None:
            self.population_uniques_ = float(min(u, N))

    def _checked_interval(self, value: float, lo: float, hi: float) -> tuple[float, float] | None:
        interval = self.B_interval_
        if interval is None:
            return None
        a, b = (float(x) for x in interval)
        if not (math.isfinite(a) and math.isfinite(b)):
            return None
        return (min(max(a, lo), value), max(min(b, hi), value))

    @property
    def population_uniqueness_(self) -> float | None:
        u = self.population_uniques_
        return None if u is None else u / self.N_

    def _validate(self) -> None:  # noqa: B027 - optional hook
        """Check the ``__init__`` parameters (raise InputError)."""

    @abstractmethod
    def _fit(self, sample: Sample, hist: ClassSizeHistogram, N: int) -> None:
        """Set ``B_`` (and ``population_uniques_``, ``B_interval_`` when the model gives them);
        raise :class:`NoEstimate` when it has none."""


Z95 = 1.959963984540054
"""The standard normal's 97.5 % quantile: a two-sided 95 % interval."""


def log_scale_interval(B: float, var_log: float) -> tuple[float, float]:
    """The 95 % interval ``B exp(±1.96 s)`` for a variance ``s^2`` of ``ln B`` (it stays in
    ``(0, inf)`` and is right-skewed for a small B; :meth:`RiskEstimator.fit` clips it to
    ``[1/N, 1]``)."""
    spread = math.exp(Z95 * math.sqrt(var_log))
    return (B / spread, B * spread)


def bootstrap_log_variance(draws: list[float]) -> float | None:
    """``Var(ln B^*)`` of bootstrap estimates (``None`` with fewer than two)."""
    if len(draws) < 2:
        return None
    return float(np.var(np.log(draws), ddof=1))


def check_seed(value: object, what: str = "random_state") -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
        raise InputError(f"{what}: expected a non-negative integer or None, got {value!r}")


def check_positive_int(value: object, what: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InputError(f"{what}: expected a positive integer, got {value!r}")


def check_non_negative_int(value: object, what: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InputError(f"{what}: expected a non-negative integer, got {value!r}")
