"""Re-identification risk measures (thesis §5.2; docs/architecture.md, "Where each concept lives").

Measures on classes, class-size histograms or the frequency table; the
privacy criteria of :mod:`safeshare.models` are thin adapters over them.
"""

from safeshare.risk.knowledge import AdversaryKnowledge, parse_knowledge
from safeshare.risk.m_concealing import (
    Concealment,
    MConcealingMeasure,
    measure_engine,
)

__all__ = [
    "AdversaryKnowledge",
    "Concealment",
    "MConcealingMeasure",
    "measure_engine",
    "parse_knowledge",
]
