"""Privacy models: per-class acceptance rules combined with a suppression limit."""

from safeshare.models.base import NodeAssessment, PrivacyCriterion, PrivacyModel
from safeshare.models.k_anonymity import KAnonymity

__all__ = ["KAnonymity", "NodeAssessment", "PrivacyCriterion", "PrivacyModel"]
