"""Epsilon-safe lattice anonymization (thesis §4.5.4; Li, Qardaji, Su 2012).

::

    input (N records) --Bernoulli(beta) sample--> sampled data (every column a QI)
        --> utility of EVERY lattice node --> exponential mechanism (epsilon') --> node
        --> generalize, suppress every class smaller than k --> verified release

The release satisfies ``(beta, epsilon, delta)``-differential privacy under
sampling with ``epsilon >= -ln(1 - beta) + epsilon'`` and
``delta = D(k, beta, epsilon - epsilon')`` (:mod:`safeshare.dp.parameters`),
provided that

* every released column is a quasi-identifier (the theorem treats the whole
  tuple as the generalized value; :meth:`EpsilonSafeAnonymizer.check_schema`
  enforces it),
* the generalization hierarchies, hence the lattice and every node's Prec,
  do not depend on the data (hierarchy files, not builders run on the data),
* the node is chosen by an ``epsilon'``-DP mechanism: the utilities of
  :mod:`safeshare.dp.scores` with a correct sensitivity,
* every class with fewer than ``k`` sampled records is suppressed, whatever
  the suppression (the suppression limit only shapes the utility, §4.5.4),
* the adversary is told that records were sampled and a node was drawn
  (§4.5.4, last paragraph).

This module holds the search strategy ``epsilon-safe`` (registered in the one
registry of algorithms, :data:`safeshare.config.algorithms.ALGORITHMS`, like the
searches of ``search/``; its options are :class:`safeshare.dp.config.EpsilonSafeOptions`).
It is a strategy like the others, with one more step: its
:meth:`EpsilonSafeStrategy.prepare` draws the sample, which
:class:`~safeshare.workflows.anonymizer.Anonymizer` calls before it builds the
frequency table, so the search runs on the SAMPLED records and the release is
written from them, on the same path as every other strategy.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from safeshare.core.evaluation import Evaluator
from safeshare.core.frequency import FrequencyTable
from safeshare.core.lattice import Node
from safeshare.core.rollup import scan_lattice
from safeshare.data.engines.base import Engine
from safeshare.data.schema import Schema
from safeshare.dp.drbg import CryptoRandom
from safeshare.dp.mechanism import ExponentialMechanism, sample_index
from safeshare.dp.parameters import DPSParameters, check_beta, dps_parameters, format_log10
from safeshare.dp.sampling import SampleDraw, sample_engine
from safeshare.dp.scores import LatticeData, Utility, make_utility
from safeshare.errors import ConfigError, InputError
from safeshare.hierarchy.hierarchy import Hierarchy
from safeshare.metrics.loss import Prec
from safeshare.models.base import PrivacyCriterion
from safeshare.models.k_anonymity import KAnonymity
from safeshare.search.context import Prepared, SearchContext
from safeshare.search.result import SearchResult

FloatArray = npt.NDArray[np.float64]

NON_DP_WARNING = (
    "WARNING: --sensitivity thesis calibrates the exponential mechanism with the thesis' sensitivity, "
    "which is smaller than the utility's true sensitivity: the choice of node is NOT epsilon'-differentially "
    "private, and the (beta, epsilon, delta) guarantee does not hold"
)

NON_DP_REFUSED = (
    "sensitivity 'thesis' is not differentially private: a release needs allow_non_dp "
    "(--allow-non-dp); use --dry-run to study it"
)


@dataclass(frozen=True)
class EpsilonSafeParams:
    """Parameters of epsilon-safe LA (besides ``k`` and the suppression limit).

    Parameters
    ----------
    beta: sampling probability, in (0, 1).
    epsilon_prime: privacy budget of the node choice (> 0).
    epsilon: the DPS epsilon; default (``None``) the least allowed, ``-ln(1 - beta) + epsilon'``.
    utility: ``thesis`` (1/(Prec + penalty)), ``linear`` (-(Prec + penalty)) or ``safepub``.
    penalty: the penalty factor ``p`` (thesis and linear utilities).
    penalty_mode: ``k-anonymity`` or ``suppression``.
    sensitivity: ``exact`` (default) or ``thesis`` (not DP; see :mod:`safeshare.dp.scores`).
    reference_size: ``N_ref`` of the suppression penalty; default ``round(beta N)``.
    seed: seed of the generator (reproducible runs); ``None``: secret entropy.
    allow_non_dp: let ``sensitivity=thesis`` write a release (it is refused otherwise).
    """

    beta: float
    epsilon_prime: float
    epsilon: float | None = None
    utility: str = "thesis"
    penalty: float | None = None
    penalty_mode: str = "suppression"
    sensitivity: str = "exact"
    reference_size: int | None = None
    seed: int | str | None = None
    allow_non_dp: bool = False

    def __post_init__(self) -> None:
        check_beta(self.beta)
        for name, value in (("epsilon_prime", self.epsilon_prime), ("epsilon", self.epsilon)):
            if value is None and name == "epsilon":
                continue
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
                raise InputError(f"{name}: expected a number > 0, got {value!r}")
            if value <= 0:
                raise InputError(f"{name}: expected a number > 0, got {value!r}")
        rs = self.reference_size
        # The penalty divides by N_ref in float64: above 2**53 it is not even held exactly (and
        # from 1.8e308 on the division raised OverflowError, an internal error).
        if rs is not None and (isinstance(rs, bool) or not isinstance(rs, int) or not 1 <= rs <= 2**53):
            shown = f"{rs!r}" if len(repr(rs)) <= 30 else f"an integer of {len(str(rs))} digits"
            raise InputError(f"reference_size: expected an integer from 1 to 2**53, got {shown}")
        self.make_utility()  # validates utility, penalty, mode, sensitivity

    def make_utility(self) -> Utility:
        penalty = self.penalty if self.utility != "safepub" else None
        return make_utility(self.utility, penalty, self.penalty_mode, self.sensitivity)

    def dps(self, k: int, n_records: int) -> DPSParameters:
        """``(beta, epsilon, delta)`` for ``k`` and an input of ``n_records`` records."""
        epsilon = self.epsilon
        if epsilon is None:
            epsilon = -math.log1p(-self.beta) + self.epsilon_prime
        return dps_parameters(k, self.beta, epsilon, self.epsilon_prime, n_records)


@dataclass
class NodeDistribution:
    """The exponential mechanism's distribution over every node of the lattice.

    Arrays are flat, in the lattice's lexicographic node order
    (:meth:`~safeshare.core.lattice.Lattice.index`).
    """

    table: FrequencyTable
    data: LatticeData
    utility: Utility
    utilities: FloatArray
    log_probabilities: FloatArray
    sensitivity: float
    exact_sensitivity: float
    epsilon_prime: float

    @property
    def probabilities(self) -> FloatArray:
        with np.errstate(under="ignore"):
            return np.exp(self.log_probabilities)

    @property
    def nodes(self) -> npt.NDArray[np.int16]:
        return self.table.lattice.levels_array()

    def node_at(self, index: int) -> Node:
        return self.table.lattice.node_at(index)

    @property
    def effective_epsilon_prime(self) -> float:
        """The epsilon' the choice actually satisfies: ``epsilon' Du_true / Du_used`` (``inf``: none)."""
        if math.isinf(self.exact_sensitivity):
            return math.inf
        return self.epsilon_prime * self.exact_sensitivity / self.sensitivity

    def expectation(self, values: npt.ArrayLike) -> float:
        p = self.probabilities
        return float((p * np.asarray(values, dtype=np.float64).ravel()).sum())

    @property
    def expected_suppressed_fraction(self) -> float:
        return self.expectation(self.data.suppressed_fraction)

    @property
    def probability_within_limit(self) -> float:
        """Probability of drawing a node that needs at most the suppression limit."""
        return self.expectation(self.data.within_limit)

    def probability_good(self, max_prec: float = 0.5) -> float:
        """Probability of a "good" node: Prec below ``max_prec`` and suppression below the limit (§6.2.2)."""
        good = (self.data.prec < max_prec) & (self.data.suppressed_fraction < self.data.max_suppression)
        return self.expectation(good)

    def frame(self) -> pd.DataFrame:
        """One row per node: the level of each QI, utility, probability and what they derive from."""
        levels = self.nodes
        out = pd.DataFrame({name: levels[:, j] for j, name in enumerate(self.table.qi_names)})
        out["utility"] = self.utilities
        out["probability"] = self.probabilities
        out["log_probability"] = self.log_probabilities
        out["prec"] = self.data.prec.ravel()
        out["suppressed_records"] = self.data.suppressed.ravel()
        out["suppressed_fraction"] = self.data.suppressed_fraction.ravel()
        return out

    def summary(self) -> dict[str, Any]:
        p = self.probabilities
        return {
            **self.utility.params(),
            "sensitivity": self.sensitivity,
            "exact_sensitivity": None if math.isinf(self.exact_sensitivity) else self.exact_sensitivity,
            "epsilon_prime": self.epsilon_prime,
            "effective_epsilon_prime": None
            if math.isinf(self.effective_epsilon_prime)
            else self.effective_epsilon_prime,
            "differentially_private": self.utility.differentially_private,
            "nodes": int(p.size),
            "candidate_nodes": int(np.isfinite(self.utilities).sum()),
            "reference_size": self.data.reference_size,
            "k": self.data.k,
            "max_suppression": self.data.max_suppression,
            "records_sampled": self.data.n_sampled,
            "records_before_sampling": self.data.n_input,
            "expected_suppressed_fraction": self.expected_suppressed_fraction,
            "probability_within_suppression_limit": self.probability_within_limit,
            "probability_good_node": self.probability_good(),
            "max_probability": float(p.max()),
        }


def lattice_data(
    table: FrequencyTable,
    k: int,
    max_suppression: float,
    n_input: int,
    beta: float,
    reference_size: int | None = None,
    prec_weights: Mapping[str, float] | None = None,
    evaluator: Evaluator | None = None,
) -> LatticeData:
    """Prec, granularity and suppression of every node of ``table``'s lattice."""
    evaluator = evaluator or Evaluator(table)
    prec_metric = Prec(evaluator, prec_weights)
    prec = np.asarray(prec_metric.node_array(), dtype=np.float64)
    upper = prec_metric.upper
    if upper > 0:
        prec = prec / upper
    parts = [np.arange(h.height + 1) / h.height if h.height else np.zeros(1) for h in table.hierarchies]
    granularity = np.zeros(prec.shape)
    for i, part in enumerate(parts):
        shape = [1] * len(parts)
        shape[i] = part.size
        granularity = granularity + part.reshape(shape)
    # every node's suppression by roll-up (core/rollup.py, tested equal to Evaluator.iter_classes)
    suppressed = scan_lattice(table, (k,)).suppressed[0]
    ref = reference_size if reference_size is not None else max(1, round(beta * n_input))
    return LatticeData(
        prec=prec,
        granularity=granularity,
        suppressed=suppressed,
        n_qis=len(table.qi_names),
        k=k,
        n_sampled=table.n_records,
        n_input=n_input,
        max_suppression=max_suppression,
        reference_size=ref,
    )


def node_distribution(
    table: FrequencyTable,
    k: int,
    max_suppression: float,
    params: EpsilonSafeParams,
    n_input: int,
    prec_weights: Mapping[str, float] | None = None,
    evaluator: Evaluator | None = None,
) -> NodeDistribution:
    """The mechanism's distribution over the lattice of ``table`` (the SAMPLED data)."""
    data = lattice_data(
        table, k, max_suppression, n_input, params.beta, params.reference_size, prec_weights, evaluator
    )
    utility = params.make_utility()
    values = utility.values(data)
    sensitivity = utility.sensitivity(data)
    mechanism = ExponentialMechanism(params.epsilon_prime, sensitivity)
    return NodeDistribution(
        table=table,
        data=data,
        utility=utility,
        utilities=values.ravel(),
        log_probabilities=mechanism.log_probabilities(values).ravel(),
        sensitivity=sensitivity,
        exact_sensitivity=utility.exact_sensitivity(data),
        epsilon_prime=params.epsilon_prime,
    )


def single_k(criterion: PrivacyCriterion) -> int:
    """The k of the one k-anonymity model epsilon-safe anonymization supports (thesis §4.5.4).

    The k itself was validated by :class:`KAnonymity`; this checks only that it is alone.
    """
    ks = [m.k for m in criterion.models if isinstance(m, KAnonymity)]
    got = _models_got([m.name for m in criterion.models])
    if got is not None or len(ks) != 1:
        raise ConfigError(f"privacy: epsilon-safe anonymization supports exactly one privacy model, {got}")
    return ks[0]


def _models_got(models: Sequence[str]) -> str | None:
    """``None`` for exactly one privacy model, k-anonymity (thesis §4.5.4); else what to say."""
    if list(models) == ["k-anonymity"]:
        return None
    others = [m for m in models if m != "k-anonymity"]
    return "k-anonymity" + (f" (got {', '.join(others)})" if others else " (got none)" if not models else "")


def model_problem(models: Sequence[str]) -> str | None:
    """What is wrong with the privacy models of an epsilon-safe run (``None``: nothing)."""
    got = _models_got(models)
    return None if got is None else f"privacy: exactly one privacy model, {got}"


def requirement_problems(
    schema: Schema, models: Sequence[str] | None = None, columns: Sequence[str] | None = None
) -> list[str]:
    """Every requirement of epsilon-safe anonymization that ``schema`` (and the privacy
    ``models``, by name) does not meet, at once (issue 30, item 18; thesis §4.5.2):

    * exactly one privacy model, k-anonymity (when ``models`` are given);
    * every released column a quasi-identifier: the columns of ``columns`` (the input's), or,
      before the input is read, every listed column and ``default_role`` (which must not
      release unlisted columns unchanged);
    * every quasi-identifier's hierarchy data-independent: a hierarchy file (or a given
      :class:`Hierarchy`), never a builder run on the data. A *file* is all this can check:
      a file written by ``safeshare hierarchy build`` from the same data passes, and is not
      data-independent (docs/differential-privacy.md).
    """
    problems: list[str] = []
    if models is not None:
        problem = model_problem(models)
        if problem is not None:
            problems.append(problem)
    qis = set(schema.quasi_identifiers)
    if columns is None:
        released = [c for c, a in schema.attributes.items() if a.role.released]
        default = schema.default_role
        if default is not None and default.released:
            problems.append(
                f"default_role: {default.value} releases every unlisted column unchanged, and each released "
                "column must be a quasi-identifier; use default_role: identifying"
            )
    else:
        released = schema.released_columns(columns)
    not_qi = [c for c in released if c not in qis]
    if not_qi:
        shown = ", ".join(f"column {c!r} has role {schema.role(c).value}" for c in not_qi)
        problems.append(
            f"every released column a quasi-identifier (thesis 4.5.2: the theorem treats the whole "
            f"record as the generalized value): {shown}; give each role quasi with a hierarchy file, "
            "or role identifying to drop it"
        )
    built = [
        qi
        for qi in schema.quasi_identifiers
        if not isinstance(spec := schema.hierarchy_spec(qi), Hierarchy)
        and not getattr(spec, "data_independent", False)
    ]
    if built:
        problems.append(
            f"data-independent hierarchies: {', '.join(f'column {q!r}' for q in built)} "
            f"use{'s' if len(built) == 1 else ''} a builder, whose levels depend on the data; "
            "give each a hierarchy file"
        )
    return problems


def check_epsilon_safe_schema(schema: Schema, columns: Sequence[str]) -> None:
    """Every released column must be a QI with a data-independent hierarchy (thesis §4.5.2);
    every unmet requirement in one message (:func:`requirement_problems`)."""
    schema.check_columns(columns)
    problems = requirement_problems(schema, None, columns)
    if problems:
        raise ConfigError(requirements_message(problems))


def requirements_message(problems: Sequence[str], where: str = "") -> str:
    """One line: ``WHERE algorithm epsilon-safe needs: (1) ...; (2) ...``."""
    listed = "; ".join(f"({i}) {p}" for i, p in enumerate(problems, 1))
    return f"{where}algorithm epsilon-safe needs (thesis 4.5): {listed}"


class EpsilonSafeStrategy:
    """The ``epsilon-safe`` search strategy: sample the records, draw a node with the
    exponential mechanism.

    :meth:`prepare` draws the Bernoulli sample (it is called by
    :class:`~safeshare.workflows.anonymizer.Anonymizer` before the frequency table is
    built, as for every strategy that prepares its records); :meth:`run` then runs on
    the frequency table of the SAMPLED records.
    """

    name = "epsilon-safe"

    def __init__(self, params: EpsilonSafeParams) -> None:
        self.params = params
        #: set by :meth:`prepare`
        self.records_before_sampling: int | None = None
        self.generator: CryptoRandom | None = None
        self.draw: SampleDraw | None = None
        self.distribution: NodeDistribution | None = None

    def prepare(self, engine: Engine, schema: Schema, criterion: PrivacyCriterion) -> Prepared:
        """Check the schema and draw the Bernoulli(beta) sample of ``engine``'s records."""
        check_epsilon_safe_schema(schema, engine.columns())
        k = single_k(criterion)
        n_input = engine.n_records()
        if n_input < k:
            raise InputError(f"k = {k} exceeds the number of records ({n_input})")
        self.params.dps(k, n_input)  # fails early on impossible parameters
        rng = CryptoRandom(self.params.seed)
        sampled, draw = sample_engine(engine, self.params.beta, rng)
        if draw.records_sampled < k:
            raise InputError(
                f"only {draw.records_sampled} of {n_input} records were sampled "
                f"(beta = {self.params.beta:g}), fewer than k = {k}"
            )
        self.records_before_sampling = n_input
        self.generator = rng.stream("mechanism")
        self.draw = draw
        # the suppression limit shapes the utility; every class smaller than k is suppressed
        report = {"k": k, "max_suppression": criterion.max_suppression, **draw.summary()}
        return Prepared(engine=sampled, sampled=True, report={**report, "suppression_limit_enforced": False})

    def run(self, ctx: SearchContext) -> SearchResult:
        if self.records_before_sampling is None or self.generator is None:
            raise ConfigError(_NEEDS_SAMPLE)
        if not self.params.make_utility().differentially_private and not self.params.allow_non_dp:
            raise ConfigError(NON_DP_REFUSED)  # a release; the dry run studies it without run()
        start = time.perf_counter()
        k = single_k(ctx.criterion)
        if not isinstance(ctx.metric, Prec):
            raise ConfigError(f"epsilon-safe scores nodes by Prec (thesis 4.5.4), not {ctx.metric.name}")
        dps = self.params.dps(k, self.records_before_sampling)
        dist = node_distribution(
            ctx.table,
            k,
            ctx.criterion.max_suppression,
            self.params,
            self.records_before_sampling,
            ctx.metric.weights or None,  # the run's Prec weights
            ctx.evaluator,
        )
        self.distribution = dist
        index = sample_index(dist.probabilities, self.generator)
        node = dist.node_at(index)
        extra: dict[str, Any] = {
            "beta": self.params.beta,
            "epsilon": dps.epsilon,
            "epsilon_prime": self.params.epsilon_prime,
            "delta": dps.delta,
            "log10_delta": dps.log10_delta,
            "delta_scientific": format_log10(dps.log10_delta),
            "utility": dist.utility.name,
            "node_utility": float(dist.utilities[index]),
            "node_probability": float(dist.probabilities[index]),
            "node_log_probability": float(dist.log_probabilities[index]),
            "node_suppressed_records": int(dist.data.suppressed.ravel()[index]),
            "differential_privacy": {
                "definition": "(beta, epsilon, delta)-differential privacy under sampling "
                "(Li, Qardaji, Su 2012; thesis 4.5.2)",
                "gamma": dps.gamma,
                "epsilon_min": dps.epsilon_min,
                "delta_n_argmax": dps.n_argmax,
                **dist.summary(),
            },
        }
        if self.generator.seed is not None:
            extra["seed"] = self.generator.seed
        if not dist.utility.differentially_private:
            extra["warning"] = NON_DP_WARNING
        return SearchResult(
            algorithm=self.name,
            node=node,
            objective=float(dist.utilities[index]),
            minimal_nodes=[],
            checked_nodes=ctx.table.lattice.size,
            lattice_size=ctx.table.lattice.size,
            elapsed_s=time.perf_counter() - start,
            extra=extra,
            # every class smaller than k is suppressed, whatever it takes (thesis 4.5.4)
            criterion=PrivacyCriterion([KAnonymity(k)], 1.0),
        )


_NEEDS_SAMPLE = (
    "algorithm 'epsilon-safe' samples the records before the search: run it through "
    "safeshare.workflows.anonymizer.Anonymizer (or `safeshare anonymize --algorithm epsilon-safe`), "
    "which calls its prepare() first"
)
