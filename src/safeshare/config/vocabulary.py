"""safeshare's vocabulary, defined once (issue 31): the roles of a column, the loss metrics and
their aliases, the surveillance defaults; the warning codes are :mod:`safeshare.warning_codes`'s.

Every other module imports its words from here: the configuration file and the Python
specification (:class:`~safeshare.config.spec.AnonymizationSpec`) accept exactly the same metric
names (``tests/test_vocabulary.py``), the command line's and the workbench's surveillance defaults
are the use cases' own, and a word changed here changes everywhere.

This module imports nothing but the standard library and :mod:`safeshare.warning_codes`, so every
layer may read it (pyproject.toml: the layers contract's one exception, ``-> config.vocabulary``).

Roles (thesis §4.1.1, §5.3; ARX's attribute types): :data:`ROLES`, with :data:`ROLE_ALIASES`.
Privacy models (docs/privacy-models.md): :data:`PRIVACY_MODELS`, with :data:`MODEL_ALIASES`.

Loss metrics (thesis §5.1): ``prec`` (Sweeney's precision), ``dm_star`` (the discernibility
metric DM*, ``sum_E |E|^2``), ``entropy`` (non-uniform entropy, NUE:
``- sum_r sum_j log2 Pr[x_rj | g(x_rj)]``). :data:`METRIC_ALIASES` maps the other spellings:
``precision``, ``dm*``, ``dmstar``, ``dm-star``, ``nue``.

Surveillance (Brown et al., *Dynamic case reporting policies*, /work/shared/papers/
dynamic-case-reporting-policy.txt): the PK_k risk with ``k = 11`` (:data:`SMALL_CELL`, "a typical
group size incorporated into guidance issued at the state and federal level ... the group size
applied to CDC's COVID-19 Public Use Data with Geography"), a policy acceptable when the upper end
of the 95 % range (quantile 0.975) of 1,000 simulated PK_11 is at most 0.01, a 1-day lagging
window. The same 11 is small-cells' smallest releasable population group and CDC's
``KANON_LEVEL``.
"""

from __future__ import annotations

from safeshare.warning_codes import WarningCode

# --------------------------------------------------------------------------- roles
#: The roles of a column (:class:`safeshare.data.schema.Role` has these values, in this order).
ROLES = ("identifying", "quasi", "sensitive", "insensitive", "text", "pseudonym", "shifted_date")
#: Other spellings of a role, and the role they mean.
ROLE_ALIASES = {
    "quasi-identifying": "quasi",
    "quasi_identifying": "quasi",
    "quasi-identifier": "quasi",
    "qi": "quasi",
    "identifier": "identifying",
    "free-text": "text",
    "shifted-date": "shifted_date",
}
#: What unlisted columns may be (``default_role:``): dropped (identifying) or kept (insensitive).
DEFAULT_ROLES = ("identifying", "insensitive")


def role_name(value: str) -> str | None:
    """The role ``value`` names (aliases resolved, case and spaces ignored), or ``None``."""
    key = value.strip().lower()
    key = ROLE_ALIASES.get(key, key)
    return key if key in ROLES else None


# --------------------------------------------------------------------------- privacy models
#: The privacy models a configuration may name (:data:`safeshare.models.registry.PRIVACY_MODELS`
#: types their parameters, in this order).
PRIVACY_MODELS = (
    "k-anonymity",
    "m-concealing",
    "l-diversity",
    "t-closeness",
    "risk",
    "small-cells",
    "profile-anonymity",
)
#: Other spellings of a privacy model's name: its words joined by ``_`` (``k_anonymity``), and
#: ``kanonymity``.
MODEL_ALIASES = {
    **{name.replace("-", "_"): name for name in PRIVACY_MODELS if "-" in name},
    "kanonymity": "k-anonymity",
}


def model_name(value: str) -> str | None:
    """The privacy model ``value`` names (aliases resolved, case and spaces ignored), or ``None``."""
    key = value.strip().lower()
    key = MODEL_ALIASES.get(key, key)
    return key if key in PRIVACY_MODELS else None


# --------------------------------------------------------------------------- metrics
#: The loss metrics a search may minimize (thesis §5.1), by their canonical names.
METRICS = ("prec", "dm_star", "entropy")
#: Other spellings of a metric, and the metric they mean: the configuration file and the Python
#: specification read this one table.
METRIC_ALIASES = {
    "precision": "prec",
    "dm*": "dm_star",
    "dmstar": "dm_star",
    "dm-star": "dm_star",
    "nue": "entropy",
}


def metric_name(value: str) -> str | None:
    """The metric ``value`` names (aliases resolved, case and spaces ignored), or ``None``."""
    key = value.strip().lower()
    key = METRIC_ALIASES.get(key, key)
    return key if key in METRICS else None


def unknown_metric(value: object) -> str:
    """The one message for a metric that is not one: ``unknown metric 'x'; expected one of ...``."""
    return f"unknown metric {value!r}; expected one of {', '.join(METRICS)}"


# --------------------------------------------------------------------------- surveillance
#: The small-cell size k: PK_k counts the records in groups of fewer than k; small-cells' smallest
#: released population group; CDC's KANON_LEVEL (the paper: "we choose a k of 11").
SMALL_CELL = 11
#: The largest acceptable PK_k (the paper's "PK11 threshold of 0.01").
SURVEILLANCE_THRESHOLD = 0.01
#: The quantile of the simulated PK_k compared with the threshold (the upper end of the 95 % range).
SURVEILLANCE_QUANTILE = 0.975
#: Monte Carlo runs per policy, region and volume (the paper's 1,000).
SURVEILLANCE_SIMULATIONS = 1000
#: The lagging window in periods (a record is at risk in the last L releases; the paper's daily 1).
SURVEILLANCE_LAG = 1

__all__ = [
    "DEFAULT_ROLES",
    "METRICS",
    "METRIC_ALIASES",
    "MODEL_ALIASES",
    "PRIVACY_MODELS",
    "ROLES",
    "ROLE_ALIASES",
    "SMALL_CELL",
    "SURVEILLANCE_LAG",
    "SURVEILLANCE_QUANTILE",
    "SURVEILLANCE_SIMULATIONS",
    "SURVEILLANCE_THRESHOLD",
    "WarningCode",
    "metric_name",
    "model_name",
    "role_name",
    "unknown_metric",
]
