"""Epsilon-safe lattice anonymization end to end (thesis §4.5.4): sample, search, suppress.

The calculus, the mechanism and the ``epsilon-safe`` search strategy live in
:mod:`safeshare.dp`; this workflow draws the Bernoulli sample, builds the
frequency table of the sampled records and runs the strategy through
:class:`~safeshare.workflows.anonymizer.Anonymizer`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from safeshare.config.spec import AnonymizationSpec
from safeshare.core.tabulate import build_frequency_table
from safeshare.data.engines.base import Engine
from safeshare.dp.epsilon_safe import (
    NON_DP_WARNING,
    EpsilonSafeParams,
    EpsilonSafeStrategy,
    NodeDistribution,
    check_epsilon_safe_schema,
    node_distribution,
    single_k,
)
from safeshare.dp.parameters import DPSParameters, format_log10
from safeshare.dp.sampling import SampleDraw
from safeshare.errors import ConfigError
from safeshare.workflows.anonymizer import AnonymizationResult, Anonymizer

__all__ = [
    "NON_DP_WARNING",
    "EpsilonSafeAnonymizer",
    "EpsilonSafeDryRun",
    "EpsilonSafeParams",
    "EpsilonSafeResult",
]


@dataclass
class EpsilonSafeResult:
    """What :meth:`EpsilonSafeAnonymizer.fit` returns."""

    result: AnonymizationResult
    engine: Engine
    draw: SampleDraw
    dps: DPSParameters
    distribution: NodeDistribution
    timings: dict[str, float] = field(default_factory=dict)


@dataclass
class EpsilonSafeDryRun:
    """What :meth:`EpsilonSafeAnonymizer.dry_run` returns: the distribution, no node drawn."""

    distribution: NodeDistribution
    draw: SampleDraw
    dps: DPSParameters
    #: where ``distribution.csv`` and ``distribution.json`` were published (when they were)
    path: Path | None = None

    def document(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "not_for_release": "computed from the (sampled) data: NOT differentially private; "
            "for the data custodian only",
            **self.distribution.summary(),
            "beta": self.dps.beta,
            "epsilon": self.dps.epsilon,
            "delta": self.dps.delta,
            "log10_delta": self.dps.log10_delta,
            "delta_scientific": format_log10(self.dps.log10_delta),
            "gamma": self.dps.gamma,
            "epsilon_min": self.dps.epsilon_min,
            **self.draw.summary(),
        }
        if not self.distribution.utility.differentially_private:
            doc["warning"] = NON_DP_WARNING
        return doc


class EpsilonSafeAnonymizer:
    """Epsilon-safe LA end to end: sample, search on the sample, choose a node, suppress.

    ``spec`` is an :class:`AnonymizationSpec` with ``algorithm="epsilon-safe"``, already
    validated: its schema (every released column must be a QI), its one k-anonymity model
    (every class smaller than k is suppressed), its suppression limit (which shapes the
    utility, not enforced), its Prec weights, and ``algorithm_options["params"]``, the
    :class:`EpsilonSafeParams`. :meth:`fit` is :meth:`Anonymizer.fit` (the strategy draws
    the sample in its ``prepare`` step, as every strategy that prepares its records);
    :meth:`dry_run` computes the distribution without drawing a node.
    """

    def __init__(self, spec: AnonymizationSpec) -> None:
        if spec.algorithm != "epsilon-safe":
            raise ConfigError(f"EpsilonSafeAnonymizer runs algorithm epsilon-safe, not {spec.algorithm!r}")
        self.spec = spec
        self.schema = spec.schema
        self.criterion = spec.criterion()
        self.k = single_k(self.criterion)
        self.params: EpsilonSafeParams = spec.algorithm_options["params"]
        self.max_suppression = spec.max_suppression
        self.prec_weights = dict(spec.prec_weights)

    def check_schema(self, columns: Sequence[str]) -> None:
        """Every released column must be a QI with a data-independent hierarchy (thesis §4.5.2)."""
        check_epsilon_safe_schema(self.schema, columns)

    def dry_run(self, engine: Engine) -> EpsilonSafeDryRun:
        """Sample and compute the distribution over every node, without drawing one."""
        strategy = EpsilonSafeStrategy(self.params)
        prepared = strategy.prepare(engine, self.schema, self.criterion)
        assert strategy.draw is not None and strategy.records_before_sampling is not None
        dps = self.params.dps(self.k, strategy.records_before_sampling)
        table, _ = build_frequency_table(prepared.engine, self.schema)
        dist = node_distribution(
            table,
            self.k,
            self.max_suppression,
            self.params,
            strategy.draw.records_in,
            self.prec_weights or None,
        )
        return EpsilonSafeDryRun(dist, strategy.draw, dps)

    def fit(self, engine: Engine) -> EpsilonSafeResult:
        """Sample, draw a node, and prepare the release of the sampled records."""
        anonymizer = Anonymizer(self.spec)
        result = anonymizer.fit(engine)
        strategy = anonymizer.strategy
        assert isinstance(strategy, EpsilonSafeStrategy) and strategy.distribution is not None
        assert strategy.draw is not None and result.prepared is not None
        assert strategy.records_before_sampling is not None
        dps = self.params.dps(self.k, strategy.records_before_sampling)
        return EpsilonSafeResult(
            result, result.prepared.engine, strategy.draw, dps, strategy.distribution, result.timings
        )
