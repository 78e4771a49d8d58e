"""Which re-identification risk threshold a release context calls for, where it comes from, and
what it bounds: an *average* risk or a *maximum* risk (issue 33).

**Average vs maximum.** B (Jiang et al., PLoS ONE 17(6):e0269097, 2022, Eq. 2) is an average:
``B = (1/n) sum_k 1/F_k``, the expected share of the release's records an adversary matches
correctly to their person. The public-release figures of the standards bound the *maximum* risk,
``max_k 1/F_k`` (the least protected record): a maximum of 0.09 needs every class to hold at
least 12 people (1/11 = 0.0909 > 0.09). An average of 0.09 allows many singletons beside large
classes. Comparing B with a maximum-risk figure is stricter than nothing, but it is not what the
standard asks: :func:`risk_kind_sentence` says so, in one sentence, wherever a threshold is shown
beside B (the headline and the certificate).

**The derivation** (:func:`derive_threshold`, from the release model and the invasiveness of the
data):

* ``public`` (open data; an attack is taken as certain): the Ontario IPC's *De-identification
  Guidelines for Structured Data* (2016, updated and expanded October 2025), step "determine an
  acceptable re-identification risk threshold": 0.09 (low invasion of privacy, about classes of
  11), 0.075 (medium, about 15), 0.05 (high, about 20), on the maximum risk. The 0.09 is also
  the European Medicines Agency's (Policy 0070, external guidance v1.4, 2018) and Health
  Canada's (Guidance document on Public Release of Clinical Information, 2019) for the public
  release of clinical reports, cited by Jiang et al. §1 (refs. 42-49);
* ``non-public`` (a recipient bound by an agreement, with security controls): the IPC
  guidelines measure the *average* risk there, and weigh it with the context (the probability
  of an attack given the recipient's controls, motives and capacity). The threshold values are
  the same invasiveness ladder, but the measure is the average: B can be compared with them
  directly. The context factor (at most 1) is **not** applied here: taking an attack as certain
  is the conservative reading, which a custodian may relax with a documented context
  assessment (``threshold_reason``). The guideline's text was not at hand when this was written
  (the values come from its summaries): check the cited step before relying on it.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from safeshare.errors import InputError

RELEASE_MODELS = ("public", "non-public")
INVASIVENESS = ("low", "medium", "high")

#: The IPC ladder by invasion of privacy: threshold and the class size whose 1/size is about it.
IPC_LADDER: dict[str, tuple[float, int]] = {"low": (0.09, 11), "medium": (0.075, 15), "high": (0.05, 20)}

IPC_SOURCE = (
    "Information and Privacy Commissioner of Ontario, De-identification Guidelines for Structured Data "
    "(2016; updated and expanded October 2025), step 'determine an acceptable re-identification risk "
    "threshold'"
)
EMA_HC_SOURCE = (
    "European Medicines Agency Policy 0070 (external guidance v1.4, 2018) and Health Canada, Guidance "
    "document on Public Release of Clinical Information (2019)"
)

MEASURES = ("maximum", "average")


@dataclass(frozen=True)
class DerivedThreshold:
    """A threshold, its source and the measure it is set for (``maximum`` or ``average``)."""

    value: float
    source: str
    measure: str
    release_model: str
    invasiveness: str
    note: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def derive_threshold(release_model: str, invasiveness: str = "low") -> DerivedThreshold:
    """The risk threshold of a release context (module docstring): ``release_model`` ``public`` or
    ``non-public``, ``invasiveness`` ``low``, ``medium`` or ``high`` (how invasive a
    re-identification would be: the sensitivity of the data, the harm)."""
    if release_model not in RELEASE_MODELS:
        raise InputError(f"release model: expected one of {', '.join(RELEASE_MODELS)}, got {release_model!r}")
    if invasiveness not in INVASIVENESS:
        raise InputError(f"invasiveness: expected one of {', '.join(INVASIVENESS)}, got {invasiveness!r}")
    value, size = IPC_LADDER[invasiveness]
    if release_model == "public":
        source = IPC_SOURCE + (f"; the same 0.09 as {EMA_HC_SOURCE}" if invasiveness == "low" else "")
        note = (
            f"set for the maximum risk: every class of at least {maximum_class_size(value)} people "
            f"(about {size} in the guideline's rounding)"
        )
        return DerivedThreshold(value, source, "maximum", release_model, invasiveness, note)
    note = (
        "set for the average risk of a non-public release; the context factor (probability of an "
        "attack given the recipient's controls) is not applied: an attack is taken as certain"
    )
    return DerivedThreshold(value, IPC_SOURCE, "average", release_model, invasiveness, note)


def maximum_class_size(threshold: float) -> int:
    """The smallest class size ``k`` with ``1/k <= threshold``: what a *maximum* risk of
    ``threshold`` requires of every class (0.09 -> 12, 0.075 -> 14, 0.05 -> 20)."""
    if not 0 < threshold <= 1:
        raise InputError(f"threshold: expected a probability in (0, 1], got {threshold}")
    k = math.ceil(1 / threshold - 1e-12)
    return k if 1 / k <= threshold + 1e-12 else k + 1


def threshold_measure(value: float) -> tuple[str, str]:
    """The measure a threshold value is set for by the standards, and its source: the public-release
    figures (0.09, 0.075, 0.05: :func:`derive_threshold` ``public``) bound the maximum risk; any
    other value is the custodian's, of unknown measure (``unknown``)."""
    for invasiveness, (figure, _) in IPC_LADDER.items():
        if math.isclose(value, figure, rel_tol=0, abs_tol=1e-12):
            derived = derive_threshold("public", invasiveness)
            return derived.measure, derived.source
    return "unknown", "the custodian's"


def risk_kind_sentence(measure: str, threshold: float) -> str:
    """The one sentence stated beside a threshold compared with a risk ``measure`` (``B``, ``A``,
    ``uniques``; ``record`` for the largest per-record risk): what the measure is and what the
    threshold is set for. Used by the headline and the certificate."""
    if measure == "record":
        return (
            f"the largest per-record risk is a maximum risk; {_shown(threshold)} is compared with the "
            "least protected record"
        )
    kind = {
        "B": "B is an average risk (the expected share of released records matched to their person)",
        "A": "A = J/N is an average over the population (the share of people matched correctly to a record)",
        "uniques": "the share of population uniques is an average over the population",
    }.get(measure, f"{measure} is an average risk")
    set_for, _ = threshold_measure(threshold)
    if set_for == "maximum":
        who = (
            "EMA / Health Canada and the Ontario IPC" if math.isclose(threshold, 0.09) else "the Ontario IPC"
        )
        return (
            f"{kind}; {_shown(threshold)} is set by {who} for the maximum risk (a maximum of "
            f"{_shown(threshold)} needs every class >= {maximum_class_size(threshold)}); here it is applied "
            "to an average, which allows smaller classes beside large ones"
        )
    return f"{kind}; {_shown(threshold)} is the custodian's threshold, applied to that average"


def _shown(value: float) -> str:
    return f"{value:g}"


__all__ = [
    "INVASIVENESS",
    "IPC_LADDER",
    "RELEASE_MODELS",
    "DerivedThreshold",
    "derive_threshold",
    "maximum_class_size",
    "risk_kind_sentence",
    "threshold_measure",
]
