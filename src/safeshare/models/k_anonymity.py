"""k-anonymity (Sweeney 2002; thesis §2.4).

Every equivalence class of the release holds at least ``k`` records:
class ``E`` is acceptable iff ``|E| >= k``.

With a person key (issue 32; :mod:`safeshare.core.persons`) the unit is the person: class ``E``
is acceptable iff it holds at least ``k`` **distinct people**, ``people(E) >= k``. A class of 5
records of 3 people fails k = 5 (each of the 3 has prosecutor risk 1/3). Monotone as in records:
a merged class holds the union of its parts' people.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from safeshare.core.evaluation import Classes
from safeshare.core.frequency import FrequencyTable
from safeshare.errors import ConfigError, InputError
from safeshare.models.base import BoolArray, PrivacyModel


def check_k(k: object, where: str | None = None) -> int:
    """The one validation of a k (an integer >= 1, not a bool), as a Python ``int``.

    ``where`` names the configuration key or option (``privacy.k-anonymity.k``,
    ``--k``): the error is then a :class:`ConfigError` ``"WHERE: expected an integer
    >= 1, got X"``; without it (the Python API) an :class:`InputError`.
    Whether k fits the data (``k <= N``) is :meth:`KAnonymity.validate`'s concern.
    """
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
        if where is None:
            raise InputError(f"k must be an integer >= 1, got {k!r}")
        raise ConfigError(f"{where}: expected an integer >= 1, got {k!r}")
    return int(k)


class KAnonymity(PrivacyModel):
    """``|E| >= k`` for every released class.

    Parameters
    ----------
    k: the smallest class size, ``1 <= k <= N``.
    """

    name = "k-anonymity"

    def __init__(self, k: int) -> None:
        self.k = check_k(k)

    def acceptable(self, classes: Classes, table: FrequencyTable) -> BoolArray:
        return classes.people >= self.k

    def failing_records(self, classes: Classes, table: FrequencyTable) -> int:
        if classes.persons is not None:
            return int((classes.sizes * (classes.people < self.k)).sum())
        return classes.records_in_classes_smaller_than(self.k)

    def class_size_floor(self) -> int:
        return self.k

    def validate(self, table: FrequencyTable) -> None:
        if table.persons is not None:
            if self.k > table.n_people:
                raise InputError(f"k = {self.k} exceeds the number of people ({table.n_people:,})")
        elif self.k > table.n_records:
            raise InputError(f"k = {self.k} exceeds the number of records ({table.n_records})")

    def params(self) -> dict[str, Any]:
        return {"k": self.k}
