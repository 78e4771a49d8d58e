"""Epsilon-safe lattice anonymization end to end (thesis §4.5.4): sample, search, suppress.

The calculus, the mechanism and the ``epsilon-safe`` search strategy live in
:mod:`safeshare.dp`; this workflow draws the Bernoulli sample, builds the
frequency table of the sampled records and runs the strategy through
:class:`~safeshare.workflows.anonymizer.Anonymizer`.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from safeshare.core.tabulate import build_frequency_table
from safeshare.data.engines.base import Engine
from safeshare.dp.drbg import CryptoRandom
from safeshare.dp.epsilon_safe import (
    NON_DP_WARNING,
    EpsilonSafeParams,
    EpsilonSafeStrategy,
    NodeDistribution,
    node_distribution,
    single_k,
)
from safeshare.dp.parameters import DPSParameters, format_log10
from safeshare.dp.sampling import SampleDraw, sample_engine
from safeshare.errors import ConfigError, InputError
from safeshare.hierarchy.hierarchy import Hierarchy
from safeshare.workflows.anonymizer import AnonymizationResult, Anonymizer
from safeshare.workflows.spec import AnonymizationSpec

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

    def report(self) -> dict[str, Any]:
        """Extra report.json entries (the search's own figures are in ``result.summary()``)."""
        return {**self.draw.summary(), "suppression_limit_enforced": False}


@dataclass
class EpsilonSafeDryRun:
    """What :meth:`EpsilonSafeAnonymizer.dry_run` returns: the distribution, no node drawn."""

    distribution: NodeDistribution
    draw: SampleDraw
    dps: DPSParameters

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
    :class:`EpsilonSafeParams` (built by :meth:`safeshare.config.RunConfig.spec` from the
    ``dp:`` section and the command line). The sample is added at run time.
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
        self._refuse_release = (
            not self.params.make_utility().differentially_private and not self.params.allow_non_dp
        )

    def check_schema(self, columns: Sequence[str]) -> None:
        """Every released column must be a QI with a data-independent hierarchy (thesis §4.5.2)."""
        self.schema.check_columns(columns)
        qis = set(self.schema.quasi_identifiers)
        for column in self.schema.released_columns(columns):
            if column not in qis:
                role = self.schema.role(column)
                raise ConfigError(
                    f"epsilon-safe anonymization treats every released column as a quasi-identifier "
                    f"(thesis 4.5.2): column {column!r} has role {role.value}; give it role quasi with a "
                    "hierarchy, or role identifying to drop it"
                )
        for qi in self.schema.quasi_identifiers:
            spec = self.schema.hierarchy_spec(qi)
            if not isinstance(spec, Hierarchy) and not getattr(spec, "data_independent", False):
                raise ConfigError(
                    f"epsilon-safe anonymization needs data-independent hierarchies: column {qi!r} uses a "
                    "builder, whose levels depend on the data; give it a hierarchy file"
                )

    def _sample(self, engine: Engine) -> tuple[Engine, SampleDraw, DPSParameters, CryptoRandom]:
        self.check_schema(engine.columns())
        n_input = engine.n_records()
        if n_input < self.k:
            raise InputError(f"k = {self.k} exceeds the number of records ({n_input})")
        dps = self.params.dps(self.k, n_input)  # fails early on impossible parameters
        rng = CryptoRandom(self.params.seed)
        sampled, draw = sample_engine(engine, self.params.beta, rng)
        if draw.records_sampled < self.k:
            raise InputError(
                f"only {draw.records_sampled} of {n_input} records were sampled "
                f"(beta = {self.params.beta:g}), fewer than k = {self.k}"
            )
        return sampled, draw, dps, rng

    def dry_run(self, engine: Engine) -> EpsilonSafeDryRun:
        """Sample and compute the distribution over every node, without drawing one."""
        sampled, draw, dps, _ = self._sample(engine)
        table, _ = build_frequency_table(sampled, self.schema)
        dist = node_distribution(
            table, self.k, self.max_suppression, self.params, draw.records_in, self.prec_weights or None
        )
        return EpsilonSafeDryRun(dist, draw, dps)

    def fit(self, engine: Engine) -> EpsilonSafeResult:
        """Sample, draw a node, and prepare the release of the sampled records."""
        if self._refuse_release:
            raise ConfigError(
                "sensitivity 'thesis' is not differentially private: a release needs allow_non_dp "
                "(--allow-non-dp); use --dry-run to study it"
            )
        start = time.perf_counter()
        sampled, draw, dps, rng = self._sample(engine)
        timings = {"sample": time.perf_counter() - start}
        options: dict[str, Any] = {
            **self.spec.algorithm_options,
            "records_before_sampling": draw.records_in,
            "generator": rng.stream("mechanism"),
        }
        if self.prec_weights:
            options["prec_weights"] = self.prec_weights
        spec = dataclasses.replace(self.spec, metric="prec", algorithm_options=options)
        anonymizer = Anonymizer(spec)
        result = anonymizer.fit(sampled)
        result.timings = {**timings, **result.timings}
        strategy = anonymizer.strategy
        assert isinstance(strategy, EpsilonSafeStrategy) and strategy.distribution is not None
        return EpsilonSafeResult(result, sampled, draw, dps, strategy.distribution, result.timings)
