"""safeshare: release person-level health data with a measured re-identification risk.

The core (DESIGN.md): a generalization lattice searched with a monotone
predicate, evaluated on a frequency table rather than on raw rows.

>>> from safeshare import Anonymizer, KAnonymity, MemoryEngine, Schema  # doctest: +SKIP
"""

from safeshare.core.evaluation import Classes, Evaluator
from safeshare.core.frequency import FrequencyTable
from safeshare.core.lattice import Lattice, TagStore
from safeshare.data.engines import Engine, MemoryEngine, ReleasePlan
from safeshare.data.schema import Attribute, Role, Schema
from safeshare.data.source import TableSource
from safeshare.errors import ConfigError, DataError, HierarchyError, InputError, VerificationError
from safeshare.hierarchy.hierarchy import Hierarchy
from safeshare.hierarchy.io import read_arx_csv, write_arx_csv
from safeshare.metrics import DMStar, NonUniformEntropy, Prec
from safeshare.models import KAnonymity, PrivacyCriterion, PrivacyModel
from safeshare.search import OLA, ExhaustiveSearch, SearchResult
from safeshare.workflows.anonymizer import AnonymizationResult, Anonymizer

__version__ = "0.1.0"

__all__ = [
    "OLA",
    "AnonymizationResult",
    "Anonymizer",
    "Attribute",
    "Classes",
    "ConfigError",
    "DMStar",
    "DataError",
    "Engine",
    "Evaluator",
    "ExhaustiveSearch",
    "FrequencyTable",
    "Hierarchy",
    "HierarchyError",
    "InputError",
    "KAnonymity",
    "Lattice",
    "MemoryEngine",
    "NonUniformEntropy",
    "Prec",
    "PrivacyCriterion",
    "PrivacyModel",
    "ReleasePlan",
    "Role",
    "Schema",
    "SearchResult",
    "TableSource",
    "TagStore",
    "VerificationError",
    "__version__",
    "read_arx_csv",
    "write_arx_csv",
]
