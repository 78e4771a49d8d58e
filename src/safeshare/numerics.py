"""Numerical conventions shared by the search, the measures and the verifier, defined once.

* :data:`TOLERANCE`: a value within ``1e-9`` of a bound counts as on the bound
  (floating-point rounding of sums of probabilities, entropies, distances);
  the search and the independent verifier apply the same convention.
* :func:`suppression_limit`: the number of records a fraction ``s`` of ``N``
  allows, ``floor(s N + TOLERANCE)`` (so that ``0.05 * 20 = 1.0000000000000002``
  or ``0.999...`` both mean one record).
"""

from __future__ import annotations

import math

#: Slack of every comparison of a computed value with a bound (m, l, t, suppression).
TOLERANCE = 1e-9


def suppression_limit(max_suppression: float, n_records: int) -> int:
    """Most records that may be suppressed: ``floor(max_suppression * n_records + TOLERANCE)``."""
    return math.floor(max_suppression * n_records + TOLERANCE)
