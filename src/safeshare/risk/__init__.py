"""Re-identification risk measures (thesis §5.2; docs/architecture.md, "Where each concept lives").

Measures on classes, class-size histograms or the frequency table; the
privacy criteria of :mod:`safeshare.models` are thin adapters over them.

The names below are imported on first use (PEP 562), so that importing one module of the
package (the verifier's :mod:`safeshare.risk.release_risk`, the options' estimator names) does
not import m-concealing's measure and, with it, the core.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from safeshare.risk.knowledge import AdversaryKnowledge, parse_knowledge
    from safeshare.risk.m_concealing import Concealment, MConcealingMeasure, measure_engine

#: public name -> the module that defines it
_EXPORTS = {
    "AdversaryKnowledge": "safeshare.risk.knowledge",
    "parse_knowledge": "safeshare.risk.knowledge",
    "Concealment": "safeshare.risk.m_concealing",
    "MConcealingMeasure": "safeshare.risk.m_concealing",
    "measure_engine": "safeshare.risk.m_concealing",
}

__all__ = [
    "AdversaryKnowledge",
    "Concealment",
    "MConcealingMeasure",
    "measure_engine",
    "parse_knowledge",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'safeshare.risk' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value
