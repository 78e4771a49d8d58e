"""Privacy models: per-class acceptance rules combined with a suppression limit."""

from safeshare.models.base import NodeAssessment, PrivacyCriterion, PrivacyModel
from safeshare.models.k_anonymity import KAnonymity
from safeshare.models.l_diversity import LDiversity
from safeshare.models.t_closeness import TCloseness

__all__ = ["KAnonymity", "LDiversity", "NodeAssessment", "PrivacyCriterion", "PrivacyModel", "TCloseness"]
