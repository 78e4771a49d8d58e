"""The frozen specification of an anonymization run: :class:`AnonymizationSpec`.

One value says everything a run needs to choose a node: the schema, the
privacy models, the suppression limit, the loss metric, the algorithm and its
options, the Prec weights. It is built once, from a configuration file
(:meth:`safeshare.config.ConfigFile.spec`) or from Python, validated here and
nowhere else, and passed whole (``Anonymizer(spec)``, ``Sweep(spec, grid)``);
a variation of a run is ``dataclasses.replace(spec, max_suppression=0.1)``,
validated again on construction. The algorithm and its options are checked against
the one registry of algorithms (:data:`safeshare.config.algorithms.ALGORITHMS`): the
options become the algorithm's typed options model (:attr:`AnonymizationSpec.options`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from pydantic import BaseModel

from safeshare.config.algorithms import algorithm, algorithm_options
from safeshare.data.schema import Schema
from safeshare.errors import ConfigError
from safeshare.metrics.loss import metric_name
from safeshare.models.base import PrivacyCriterion, PrivacyModel


def _frozen(mapping: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return MappingProxyType(dict(mapping or {}))


@dataclass(frozen=True)
class AnonymizationSpec:
    """What to anonymize and how (thesis §4.3): the whole input of :class:`Anonymizer`.

    Attributes
    ----------
    schema: the role of every column and the QIs' hierarchies.
    privacy: the privacy models (e.g. ``(KAnonymity(5),)``).
    max_suppression: the largest fraction of records that may be suppressed, in [0, 1].
    metric: ``prec``, ``dm_star`` or ``entropy`` (thesis §5.1); aliases are normalized.
    algorithm: a name of :data:`safeshare.config.algorithms.ALGORITHMS`.
    algorithm_options: the algorithm's own parameters (e.g. ``{"max_loss": 0.5}``;
        epsilon-safe: ``{"params": EpsilonSafeParams(...)}``).
    prec_weights: optional per-QI weights of the Prec metric.
    """

    schema: Schema
    privacy: tuple[PrivacyModel, ...]
    max_suppression: float = 0.0
    metric: str = "prec"
    algorithm: str = "ola"
    algorithm_options: Mapping[str, Any] = field(default_factory=dict)
    prec_weights: Mapping[str, float] = field(default_factory=dict)
    #: the algorithm's validated options (its pydantic model in the registry)
    options: BaseModel = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if isinstance(self.privacy, PrivacyModel) or not isinstance(self.privacy, Sequence):
            raise ConfigError(f"privacy: expected a sequence of privacy models, got {self.privacy!r}")
        object.__setattr__(self, "privacy", tuple(self.privacy))
        object.__setattr__(self, "metric", metric_name(self.metric))
        object.__setattr__(self, "algorithm_options", _frozen(self.algorithm_options))
        object.__setattr__(self, "prec_weights", _frozen(self.prec_weights))
        criterion = self.criterion()  # binds the models to the schema; checks the suppression limit
        object.__setattr__(self, "max_suppression", float(self.max_suppression))
        entry = algorithm(self.algorithm)
        object.__setattr__(self, "options", algorithm_options(self.algorithm, self.algorithm_options))
        if entry.metrics is not None and self.metric not in entry.metrics:
            raise ConfigError(
                f"metric: algorithm {self.algorithm} scores nodes by {' or '.join(entry.metrics)}"
            )
        if entry.check is not None:
            entry.check(criterion)
        if self.prec_weights and self.metric != "prec":
            raise ConfigError("prec_weights apply to the prec metric only")

    def criterion(self) -> PrivacyCriterion:
        """The search predicate: the models, bound to the schema, with the suppression limit."""
        return PrivacyCriterion([m.bind(self.schema) for m in self.privacy], self.max_suppression)
