"""Information loss metrics (thesis §5.1) and utility measures."""

from safeshare.metrics.loss import (
    METRICS,
    DMStar,
    InformationLoss,
    NonUniformEntropy,
    Prec,
    make_metric,
    metric_name,
)

__all__ = [
    "METRICS",
    "DMStar",
    "InformationLoss",
    "NonUniformEntropy",
    "Prec",
    "make_metric",
    "metric_name",
]
