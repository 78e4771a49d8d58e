"""Profile anonymity: every person's linked records shared by at least k people (issue 32).

When a release links a person's records (the person key kept or pseudonymized), an adversary
who knows a person's records sees more than one class: the person's **profile**, the multiset
of the classes of their records with multiplicities (and, for kept shifted dates under the
person's shift, the days between their dates; :mod:`safeshare.core.persons`). Class-level
k-anonymity says nothing about it: 44.8 % of the people tested more than once in a k = 5
release had a combination of classes nobody else had (issue 32).

**The model.** ``profile-anonymity: {k: K}``: at the node, every person's profile over **all**
their records is shared by at least ``K`` people,

    ``|{q : P_n(q) = P_n(p)}| >= K`` for every person ``p``,

the patient-level k-anonymity of Tamersoy, Loukides, Nergiz, Saygin and Malin (2012) for
longitudinal EMRs (the adversary knows a patient's whole record). It implies k^m-anonymity
(Terrovitis, Mamoulis, Kalnis 2008) for every ``m``: the ``K`` people sharing ``p``'s profile
hold every sub-multiset of it. It also implies k-anonymity in people with the same ``K``: the
``K`` people sharing the profile of any person of a class all have a record in that class.

**Monotone under generalization (with or without suppression).** Let ``n <= n'`` (``n'``
generalizes ``n``). Every class of ``n`` lies in exactly one class of ``n'``: a map ``phi``. A
person's profile at ``n'`` is the image of their profile at ``n``: ``P_{n'}(p) = phi(P_n(p))``
(multiplicities added, tags unchanged). So ``P_n(p) = P_n(q)`` implies ``P_{n'}(p) = P_{n'}(q)``:
the partition of people by profile at ``n'`` is coarser than at ``n``, every profile class at
``n'`` is a union of profile classes at ``n``, and the smallest one can only grow. The rule does
not depend on which classes are suppressed, so it is monotone for every suppression limit, and
OLA's predictive tagging is exact for it (tests/test_persons.py checks OLA against the
exhaustive search, and the monotonicity with hypothesis).

**Why over all records, and why it bounds the release.** Suppression removes whole classes; two
people with equal profiles at ``n`` have the same records in the same classes, so they lose the
same ones: their released profiles are equal too. Every released profile is therefore shared by
at least as many people as its full profile, hence by ``K``. Counting only the released records
would be exact but not monotone (a class released at ``n'`` but suppressed at ``n`` can tell
apart two people that ``n`` merged), so the search could not tag.
The verifier re-checks the released profiles on the written file
(:func:`safeshare.verify.profiles.check_profile_anonymity`), by the released person key.

The alternative is stated beside it (docs/longitudinal.md): **release without linkage**, the
person key dropped (role ``identifying``), so that no profile is visible and k-anonymity in
people bounds each record's class.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

import numpy as np

from safeshare.core.evaluation import Classes
from safeshare.core.frequency import FrequencyTable
from safeshare.errors import ConfigError, InputError
from safeshare.models.base import BoolArray, NodePrivacyModel
from safeshare.models.k_anonymity import check_k

if TYPE_CHECKING:
    from safeshare.data.schema import Schema


class ProfileAnonymity(NodePrivacyModel):
    """Every person's profile (module docstring) is shared by at least ``k`` people.

    Parameters
    ----------
    k: the fewest people sharing a profile, ``1 <= k <= people``.
    """

    name = "profile-anonymity"
    monotone_with_suppression = True
    monotone_without_suppression = True

    def __init__(self, k: int) -> None:
        self.k = check_k(k)
        #: what the verifier re-checks, from the schema (:meth:`bind`)
        self._links: tuple[str, ...] = ()
        self._dates: dict[str, dict[str, str]] = {}

    def bind(self, schema: Schema) -> ProfileAnonymity:
        """A copy that knows the release's person key, which must be linkable in the release (a
        pseudonym or kept), and the kept shifted dates whose intervals the profiles hold."""
        from safeshare.core.tabulate import profile_date_columns

        if schema.person is None:
            raise ConfigError(
                "privacy.profile-anonymity: the model bounds the profiles of people: give the person key "
                "(person: COLUMN)"
            )
        if not schema.person_released:
            raise ConfigError(
                f"privacy.profile-anonymity: the person key {schema.person!r} is not in the release (role "
                "identifying), so no person's records are linked in it: k-anonymity in people bounds each "
                "record already; drop the model, or release the key as a pseudonym"
            )
        out = copy.copy(self)
        out._links = (schema.person,)
        dates = {c: str(schema.attributes[c].date_format) for c in profile_date_columns(schema)}
        out._dates = {schema.person: dates} if dates else {}
        return out

    def validate(self, table: FrequencyTable) -> None:
        if table.persons is None:
            raise InputError("profile-anonymity needs a person key (person: COLUMN)")
        if self.k > table.n_people:
            raise InputError(
                f"profile-anonymity: k = {self.k} exceeds the number of people ({table.n_people:,})"
            )

    def node_acceptable(self, classes: Classes, table: FrequencyTable, released: BoolArray) -> bool:
        grain = table.persons
        if grain is None:
            raise InputError("profile-anonymity needs a person key (person: COLUMN)")
        used = classes.sizes > 0
        if used.any() and float(classes.people[used].min()) < self.k:
            return False  # a class of fewer than k people: some profile is shared by fewer
        return grain.profiles(classes.row_class).smallest >= self.k

    def achieved(self, classes: Classes, table: FrequencyTable, released: BoolArray) -> dict[str, Any]:
        """The released profiles (suppressed classes left out): the fewest people sharing one, and
        the people whose profile fewer than ``k`` share."""
        grain = table.persons
        if grain is None:
            return {}
        profiles = grain.profiles(classes.row_class, counted=np.asarray(released, dtype=bool))
        return {
            "smallest_profile": profiles.smallest,
            "people_below_k": profiles.people_below(self.k),
            "people": profiles.n_people,
        }

    def verification_params(self, table: FrequencyTable) -> dict[str, Any]:
        return {"k": self.k, "links": list(self._links), "dates": self._dates}

    def params(self) -> dict[str, Any]:
        return {"k": self.k}
