"""safeshare: release person-level health data with a measured re-identification risk.

The use cases, one function per command (:mod:`safeshare.api`)::

    import safeshare

    release = safeshare.anonymize("examples/adult/adult.yaml", "out/adult", k=10)

and the building blocks below them (docs/architecture.md): a generalization lattice
searched with a monotone predicate, evaluated on a frequency table rather than on raw rows.

Names are imported on first use (PEP 562), so that ``import safeshare`` and the
command line start without loading numpy, pandas or the compiled kernels.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

__version__ = "0.1.0"

#: public name -> the module that defines it
_EXPORTS: dict[str, str] = {
    # use cases (safeshare.api)
    "anonymize": "safeshare.api",
    "anonymize_dry_run": "safeshare.api",
    "inspect": "safeshare.api",
    "hierarchy_check": "safeshare.api",
    "hierarchy_build": "safeshare.api",
    "flatten": "safeshare.api",
    "utility": "safeshare.api",
    "sweep": "safeshare.api",
    "dp_params": "safeshare.api",
    "dp_experiment": "safeshare.api",
    "Release": "safeshare.api",
    "load_config": "safeshare.config",
    # building blocks
    "Classes": "safeshare.core.evaluation",
    "Evaluator": "safeshare.core.evaluation",
    "FrequencyTable": "safeshare.core.frequency",
    "Lattice": "safeshare.core.lattice",
    "TagStore": "safeshare.core.lattice",
    "Engine": "safeshare.data.engines",
    "MemoryEngine": "safeshare.data.engines",
    "ReleasePlan": "safeshare.data.engines",
    "Attribute": "safeshare.data.schema",
    "Role": "safeshare.data.schema",
    "Schema": "safeshare.data.schema",
    "TableSource": "safeshare.data.source",
    "ConfigError": "safeshare.errors",
    "DataError": "safeshare.errors",
    "HierarchyError": "safeshare.errors",
    "InputError": "safeshare.errors",
    "VerificationError": "safeshare.errors",
    "Hierarchy": "safeshare.hierarchy.hierarchy",
    "read_arx_csv": "safeshare.hierarchy.io",
    "write_arx_csv": "safeshare.hierarchy.io",
    "DMStar": "safeshare.metrics",
    "NonUniformEntropy": "safeshare.metrics",
    "Prec": "safeshare.metrics",
    "KAnonymity": "safeshare.models",
    "PrivacyCriterion": "safeshare.models",
    "PrivacyModel": "safeshare.models",
    "OLA": "safeshare.search",
    "ExhaustiveSearch": "safeshare.search",
    "SearchResult": "safeshare.search",
    "AnonymizationResult": "safeshare.workflows.anonymizer",
    "Anonymizer": "safeshare.workflows.anonymizer",
    "AnonymizationSpec": "safeshare.config.spec",
}

__all__ = sorted([*_EXPORTS, "__version__"])


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'safeshare' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
