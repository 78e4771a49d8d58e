"""When a column is too coarse to identify a person: far fewer distinct values than records.

Two rules of issue 30 rest on the same test, defined once here:

* a ``person`` column (the one whose value gives the date shift) must identify one person.
  ``person: sex`` moved every woman's dates by the same number of days: whoever knew one
  woman's true date learnt every woman's. Such a column is refused (item 7);
* a ``pseudonym`` of a coarse column *is* that column: ``zip`` with 4 codes gives 4
  pseudonyms, and their frequencies (or a guess among 4) tell which is which. The
  disclosure check treats it as the column itself, known to the adversary (item 4).

**The rule.** A column with ``d`` distinct (non-missing) values over ``n`` records is
*coarse* when ``d < 2 sqrt(n)`` (:data:`COARSE_FACTOR` = 2). The test separates the two
kinds of column by how ``d`` grows with ``n``: an attribute (sex, age, a postcode, a ward)
has a bounded number of values, so ``d / sqrt(n) -> 0`` as the data grows; an identifier of
people has ``d = n / r`` for ``r`` records per person on average, which stays above
``2 sqrt(n)`` as long as ``n > 4 r^2``. Examples at ``n = 3,000`` (``2 sqrt(n) = 110``):
sex (2 values), 4 postcodes and ages 20-79 (60) are coarse; a record number of 1,500
people with 2 visits each is not. What it refuses wrongly: a small cohort with many records
per person (fewer than ``4 r^2`` records, e.g. 100 people with 100 tests each, where
``d = 100 < 200``); such a table is too small to release with per-person dates anyway
(k-anonymity counts its classes in records of very few people).
"""

from __future__ import annotations

import math

#: A column is coarse when its distinct values are fewer than this many times sqrt(records).
COARSE_FACTOR = 2.0


def coarse_limit(records: int) -> float:
    """``2 sqrt(records)``: a column with fewer distinct values than this is coarse."""
    return COARSE_FACTOR * math.sqrt(max(int(records), 0))


def is_coarse(distinct: int, records: int) -> bool:
    """Whether ``distinct`` values over ``records`` records are far fewer than the records
    (``distinct < 2 sqrt(records)``, see the module docstring). No records: not coarse."""
    return records > 0 and distinct < coarse_limit(records)
