"""Utility measured by a classifier (thesis §5.3, §6.1.2).

* :mod:`~safeshare.utility.features`: which released columns are features, numeric or categorical;
* :mod:`~safeshare.utility.classifier`: the logistic regression pipeline and its accuracy;
* :mod:`~safeshare.utility.testset`: generalizing the test set with the chosen node;
* :mod:`~safeshare.utility.task`: :class:`UtilityTask`, training on releases and scoring;
* :mod:`~safeshare.utility.thesis`: the thesis' reference figures (Table 6.1).
"""

from safeshare.utility.classifier import ClassifierScore, LogisticRegressionSpec
from safeshare.utility.features import DEFAULT_MISSING, FeatureSpec
from safeshare.utility.task import UtilityScore, UtilityTask, heldout_source, read_test_set, utility_document

__all__ = [
    "DEFAULT_MISSING",
    "ClassifierScore",
    "FeatureSpec",
    "LogisticRegressionSpec",
    "UtilityScore",
    "UtilityTask",
    "heldout_source",
    "read_test_set",
    "utility_document",
]
