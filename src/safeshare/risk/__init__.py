"""Re-identification risk measures (thesis §5.2; DESIGN.md ``risk/``)."""

from safeshare.risk.m_concealing import (
    AdversaryKnowledge,
    Concealment,
    MConcealingMeasure,
    measure_frame,
    parse_knowledge,
)

__all__ = [
    "AdversaryKnowledge",
    "Concealment",
    "MConcealingMeasure",
    "measure_frame",
    "parse_knowledge",
]
