"""Privacy models: per-class acceptance rules combined with a suppression limit.

Names are imported on first use (PEP 562): the typed registry of their parameters
(:mod:`safeshare.models.registry`) validates a configuration without loading the models.
"""

from importlib import import_module
from typing import Any

_EXPORTS = {
    "KAnonymity": "safeshare.models.k_anonymity",
    "LDiversity": "safeshare.models.l_diversity",
    "NodeAssessment": "safeshare.models.base",
    "PrivacyCriterion": "safeshare.models.base",
    "PrivacyModel": "safeshare.models.base",
    "TCloseness": "safeshare.models.t_closeness",
}

__all__ = ["KAnonymity", "LDiversity", "NodeAssessment", "PrivacyCriterion", "PrivacyModel", "TCloseness"]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'safeshare.models' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value
