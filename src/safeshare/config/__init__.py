"""The specifications of the use cases: what a run is told to do, validated once.

* :mod:`safeshare.config.file`: the configuration of an anonymization run (the YAML file,
  its overrides), one frozen pydantic model :class:`ConfigFile`; :func:`load_config`.
* :mod:`safeshare.config.algorithms`: the one registry of search strategies with their
  typed options (:data:`ALGORITHMS`).
* :mod:`safeshare.config.spec`: :class:`AnonymizationSpec`, the frozen input of an
  :class:`~safeshare.workflows.anonymizer.Anonymizer` (built by :meth:`ConfigFile.spec`
  or from Python).
* :mod:`safeshare.config.commands`: the specifications of the other commands (their
  options as one frozen model each).

Privacy models' parameters are typed in :mod:`safeshare.models.registry`, epsilon-safe's
in :mod:`safeshare.dp.config`, the value types and the one error format in
:mod:`safeshare.config_checks`. docs/config.schema.json is :func:`config_json_schema`.
"""

from importlib import import_module
from typing import Any

_NAMES = (
    "ENGINES",
    "OVERRIDES",
    "AttributeSection",
    "ConfigFile",
    "DuckDBSection",
    "InputSection",
    "OutputSection",
    "SparkSection",
    "config_json_schema",
    "load_config",
    "named_files",
    "parse_config",
)

__all__ = list(_NAMES)


def __getattr__(name: str) -> Any:
    """The names of :mod:`safeshare.config.file`, imported on first use (PEP 562): the registry
    of algorithms (:mod:`safeshare.config.algorithms`) is importable without the rest."""
    if name not in _NAMES:
        raise AttributeError(f"module 'safeshare.config' has no attribute {name!r}")
    value = getattr(import_module("safeshare.config.file"), name)
    globals()[name] = value
    return value
