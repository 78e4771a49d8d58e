"""The exponential mechanism, sampled stably in log space (thesis §4.5.3; McSherry & Talwar 2007).

Given a utility ``u(o)`` for every output ``o`` of a data-independent set and
its global sensitivity ``Du`` (the largest change of any ``u(o)`` between
neighbouring datasets), the mechanism outputs ``o`` with probability

.. math::

    P(o) = \\frac{\\exp(\\epsilon' u(o) / (2 \\Delta u))}{\\sum_{o'} \\exp(\\epsilon' u(o') / (2 \\Delta u))},

which is ``epsilon'``-differentially private. The exponents can be far beyond
the float range (the thesis needed arbitrary-precision integers, §6.2.2);
here ``s(o) = epsilon' u(o) / (2 Du)`` is normalized in log space,
``log P(o) = s(o) - logsumexp(s)``, so no value overflows and every
probability, even ``1e-400``, is reported exactly as a logarithm.

Sampling uses the inverse CDF: one uniform ``U`` in ``[0, 1)`` from the
cryptographic generator (53 random bits), and the output is the first ``o``
whose cumulative probability exceeds ``U``. Outputs of probability 0
(utility ``-inf``: excluded from the candidate set) are never drawn. The
realized probabilities differ from the exact ones by at most the float
rounding of the cumulative sum and the ``2^-53`` grid of ``U`` (about
``1e-16`` absolute per output): outputs with exact probability below that may
be drawn with probability 0 or ``2^-53``, which adds at most
``|O| 2^-53 e^{epsilon'}`` (about ``1e-12`` for 7,776 nodes) to delta.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy.special import logsumexp

from safeshare.dp.drbg import CryptoRandom
from safeshare.errors import InputError

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class ExponentialMechanism:
    """``P(o) ∝ exp(epsilon' u(o) / (2 Du))``.

    Parameters
    ----------
    epsilon: ``epsilon'``, the privacy budget of the choice (> 0).
    sensitivity: ``Du``, the global sensitivity of the utility (> 0).
    """

    epsilon: float
    sensitivity: float

    def __post_init__(self) -> None:
        for name, value in (("epsilon_prime", self.epsilon), ("sensitivity", self.sensitivity)):
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
                raise InputError(f"{name}: expected a finite number > 0, got {value!r}")
            if value <= 0:
                raise InputError(f"{name}: expected a number > 0, got {value!r}")

    def scores(self, utilities: npt.ArrayLike) -> FloatArray:
        """``s(o) = epsilon' u(o) / (2 Du)``; ``-inf`` utilities stay ``-inf`` (excluded outputs)."""
        u = np.asarray(utilities, dtype=np.float64)
        if np.isnan(u).any() or np.isposinf(u).any():
            raise InputError("utilities must be finite (or -inf for excluded outputs)")
        return u * (self.epsilon / (2.0 * self.sensitivity))

    def log_probabilities(self, utilities: npt.ArrayLike) -> FloatArray:
        """``log P(o)``, normalized with log-sum-exp (no overflow, no underflow to -inf)."""
        s = self.scores(utilities)
        if not np.isfinite(s).any():
            raise InputError("the exponential mechanism needs at least one output of finite utility")
        return s - float(logsumexp(s))

    def probabilities(self, utilities: npt.ArrayLike) -> FloatArray:
        """``P(o)`` (values below ~1e-308 become 0 here; use :meth:`log_probabilities`)."""
        with np.errstate(under="ignore"):
            return np.exp(self.log_probabilities(utilities))

    def sample(self, utilities: npt.ArrayLike, rng: CryptoRandom) -> int:
        """Draw an output index (flat index into ``utilities``) by the inverse CDF."""
        return sample_index(self.probabilities(utilities).ravel(), rng)

    def sample_many(self, utilities: npt.ArrayLike, rng: CryptoRandom, size: int) -> npt.NDArray[np.int64]:
        """``size`` independent draws (for tests and simulations)."""
        return sample_indices(self.probabilities(utilities).ravel(), rng, size)


def sample_indices(probabilities: FloatArray, rng: CryptoRandom, size: int) -> npt.NDArray[np.int64]:
    """Inverse-CDF draws from normalized ``probabilities``, one crypto uniform each."""
    cdf = np.cumsum(probabilities)
    u = rng.uniform(size) * float(cdf[-1])
    index = np.searchsorted(cdf, u, side="right").astype(np.int64)
    # guard against u landing on the rounding slack at the very end of the CDF
    last = int(np.flatnonzero(probabilities > 0)[-1])
    return np.minimum(index, last)


def sample_index(probabilities: FloatArray, rng: CryptoRandom) -> int:
    """One inverse-CDF draw from normalized ``probabilities``."""
    return int(sample_indices(probabilities, rng, 1)[0])
