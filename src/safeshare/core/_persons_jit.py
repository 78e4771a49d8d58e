"""The compiled loop behind :meth:`safeshare.core.persons.PersonGrain.people_per_slot` (numba,
imported on first use, compiled once per machine and cached on disk)."""

from __future__ import annotations

from typing import Any

import numba
import numpy as np


@numba.njit(cache=True, nogil=True)
def count_first_per_class(cls: Any, persons: Any, out: Any) -> None:  # pragma: no cover - compiled
    """``out[c] +=`` the distinct persons among the pairs of class ``c``, for pairs sorted by
    person: a class counts a person when it did not count them last (one pass, no sort)."""
    last = np.full(out.shape[0], -1, dtype=np.int64)
    for i in range(cls.shape[0]):
        c = cls[i]
        p = persons[i]
        if last[c] != p:
            last[c] = p
            out[c] += 1
