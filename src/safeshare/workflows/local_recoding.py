"""Local recoding on the lattice: release the records the global optimum suppresses (issue 25).

Full-domain generalization (:class:`~safeshare.workflows.anonymizer.Anonymizer`, thesis §4.3)
writes every record at one node and suppresses the classes that fail the privacy models.
Local recoding, as ARX implements it (``ARXResult.optimizeIterative(handle, gsFactor,
maxIterations, adaptionFactor)`` and ``optimizeIterativeFast(handle, records)``, since ARX
3.7; each round is ``ARXResult.optimize``/``optimizeFast`` on the output's outliers), anonymizes
those suppressed records *again*, as a data set of their own::

    round 0: the optimal node n_0 of all N records; S_0 = the records it suppresses
    round r: the same search (same models, metric, algorithm) on the records S_{r-1} only,
             with their own suppression budget floor(s |S_{r-1}|); its optimal node n_r is
             applied to them: those it releases are written at n_r, the rest form S_r
    stop when a round releases nothing, no node qualifies for S_{r-1}, fewer than k records
    are left, or after ``rounds`` rounds.

The release then mixes nodes record by record; the assignment is per distinct raw QI tuple
(every record of one tuple lies in one class at every node, hence shares its fate), so an
engine applies it with one mapping table (:class:`~safeshare.data.engines.base.MixedReleasePlan`).
The suppressed records at the end are a subset of ``S_0``: the total never exceeds the
configured limit ``floor(s N)``.

Where this differs from ARX, deliberately:

* **The classes of the release are the records with identical released values**, and every
  model is checked on them over the whole input after each round
  (:func:`safeshare.models.mixed.assess_mixed`). A round's class whose labels coincide with an
  earlier round's class merges with it. The per-class models keep holding under a merge
  (k: the class grows; distinct, entropy and recursive l-diversity are monotone under the
  union of classes, Machanavajjhala et al. 2007; t-closeness: the EMD to a fixed distribution
  is convex; m-concealing: every indistinguishable set grows), but a round's search judged
  t-closeness against *its records'* distribution, not the whole input's, and a node-level
  model (the risk threshold) depends on all released classes. So: the round's records in a
  class that fails on the whole input go back to the suppressed (the earlier part of the class
  is then as it was, and passed), and if a node-level model rejects the merged release, the
  round is dropped and recoding stops. ARX checks each round's classes on the round's subset
  only.
* A risk threshold without a population size takes the whole input as the population in every
  round (ARX projects its models on the subset).
* ``gsFactor`` and its adaption do not exist here: the metric is the configured one (the
  search's metric is computed before suppression, thesis §5.1), the suppression budget of a
  round is the configured fraction of its records (ARX's default ``optimize`` behaviour), and a
  round limit (``rounds``) bounds the work. ``optimizeIterativeFast(records)`` (a fixed
  fraction of records per round) is not offered.
* Algorithms: the searches of :mod:`safeshare.search` that return a qualifying node of the
  configured criterion (``ola``, ``exhaustive``, ``anytime``, ``auto``); ``inverse-ola`` changes
  the criterion and ``epsilon-safe`` samples records, so neither is supported. Small-cell
  suppression is refused (:func:`safeshare.models.mixed.check_supported`).

Known limit of the model (as in ARX): an adversary who knows the algorithm learns that a
record written at a later round's node was suppressed by the earlier ones (a "minimality"
inference, Wong et al., VLDB 2007); the guarantee is the configured models' on the released
classes, nothing more.

Information loss: :mod:`safeshare.metrics.cell_loss` scores the global and the mixed release
with the same cell-level definitions (ARX's evaluation models), so the gain is one number.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd

from safeshare.config.algorithms import local_recoding_algorithms
from safeshare.config.file import DEFAULT_ROUNDS
from safeshare.config.spec import AnonymizationSpec
from safeshare.core.frequency import FrequencyTable
from safeshare.core.lattice import Node
from safeshare.core.mixed import LabelSpace, MixedRelease
from safeshare.data.engines.base import Engine, MixedReleasePlan, OutputFormat
from safeshare.errors import InputError
from safeshare.metrics.cell_loss import CellLoss, cell_loss
from safeshare.models.base import PrivacyModel
from safeshare.models.k_anonymity import KAnonymity
from safeshare.models.mixed import MixedAssessment, assess_mixed, check_supported
from safeshare.models.risk import RiskThreshold
from safeshare.numerics import suppression_limit
from safeshare.search.progress import Progress
from safeshare.workflows.anonymizer import AnonymizationResult, Anonymizer

#: Algorithms whose result is a qualifying node of the configured criterion (the registry's
#: ``Algorithm.local_recoding``).
SUPPORTED_ALGORITHMS = local_recoding_algorithms()

#: Why the rounds stopped (``LocalRecodingResult.stop_reason``).
STOP_REASONS = {
    "nothing_suppressed": "no record is suppressed",
    "too_few": "fewer records are suppressed than the smallest class the models accept",
    "no_node": "no node qualifies for the suppressed records",
    "no_gain": "the last round released no record",
    "node_model": "a node-level model rejected the merged release of the last round (dropped)",
    "rounds": "the round limit was reached",
    "no_global_node": "no node qualifies for the input",
}


@dataclass(frozen=True)
class RecodingRound:
    """One round: the node its search chose and what it released.

    Attributes
    ----------
    number: 0 for the global optimum, then 1, 2, ...
    node: the node the round's search chose (applied to the records it searched).
    levels: QI -> level of ``node``.
    records_searched: the records the round searched (``N``, then the suppressed ones).
    suppression_limit: the round's own budget, ``floor(s * records_searched)``.
    released: records this round released (after the merged-class check).
    returned: records the round's search released but the merged-class check put back
        among the suppressed (their class, merged with an earlier round's, failed a model).
    suppressed_after: records suppressed after the round.
    checked_nodes: nodes the round's search evaluated.
    seconds: CPU seconds of the round (search and checks).
    """

    number: int
    node: Node
    levels: dict[str, int]
    records_searched: int
    suppression_limit: int
    released: int
    returned: int
    suppressed_after: int
    checked_nodes: int
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "round": self.number,
            "node": list(self.node),
            "levels": dict(self.levels),
            "records_searched": self.records_searched,
            "suppression_limit": self.suppression_limit,
            "released": self.released,
            "returned": self.returned,
            "suppressed_after": self.suppressed_after,
            "checked_nodes": self.checked_nodes,
            "seconds": round(self.seconds, 6),
        }


@dataclass
class LocalRecodingResult:
    """The outcome of :func:`local_recoding`.

    Attributes
    ----------
    global_result: the global optimum (round 0), as :meth:`Anonymizer.fit` returns it.
    release: the final mixed release (per frequency-table row: levels, released or not).
    rounds: every round, the global one first.
    stop_reason: a key of :data:`STOP_REASONS`.
    assessment: every model's verdict on the final release's classes (all pass).
    """

    global_result: AnonymizationResult
    release: MixedRelease
    rounds: list[RecodingRound]
    stop_reason: str
    assessment: MixedAssessment
    timings: dict[str, float] = field(default_factory=dict)
    #: per-QI weights of the cell-level precision (the spec's Prec weights)
    prec_weights: Mapping[str, float] = field(default_factory=dict)

    @property
    def table(self) -> FrequencyTable:
        return self.global_result.table

    @property
    def found(self) -> bool:
        return self.global_result.found

    @property
    def records_in(self) -> int:
        return self.table.n_records

    @property
    def suppressed_records(self) -> int:
        return self.release.suppressed_records

    @property
    def records_out(self) -> int:
        return self.release.records_out

    @property
    def max_suppression(self) -> float:
        return self.global_result.criterion.max_suppression

    @property
    def released_class_sizes(self) -> np.ndarray:
        return self.release.classes[1]

    @cached_property
    def global_loss(self) -> CellLoss:
        """Cell-level loss of the global optimum's release (the baseline)."""
        g = self.global_result
        assert g.node is not None
        return cell_loss(
            MixedRelease.at_node(g.table, g.node, g.released_rows, self.release.space),
            self._weights,
        )

    @cached_property
    def mixed_loss(self) -> CellLoss:
        """Cell-level loss of the locally recoded release."""
        return cell_loss(self.release, self._weights)

    @property
    def _weights(self) -> Mapping[str, float]:
        return self.prec_weights

    def release_plan(
        self, columns: Sequence[str], fmt: OutputFormat = "csv", delimiter: str = ","
    ) -> MixedReleasePlan:
        """The recipe an engine applies (:meth:`Engine.write_mixed_release`): one row per
        released distinct raw QI tuple, its raw values and its labels."""
        table = self.table
        rows = np.flatnonzero(self.release.released)
        _, first = np.unique(table.codes[rows], axis=0, return_index=True)
        rows = rows[np.sort(first)]
        labels = self.release.labels()
        qis = list(table.qi_names)
        keys = pd.DataFrame(
            {
                qi: np.asarray(h.leaves, dtype=object)[table.codes[rows, j]]
                for j, (qi, h) in enumerate(zip(qis, table.hierarchies, strict=True))
            }
        )
        released = pd.DataFrame({qi: np.asarray(labels[j], dtype=object)[rows] for j, qi in enumerate(qis)})
        return MixedReleasePlan(
            columns=self.global_result.schema.released_columns(list(columns)),
            quasi_identifiers=qis,
            keys=keys,
            labels=released,
            format=fmt,
            delimiter=delimiter,
            extra={"local_recoding_rounds": len(self.rounds) - 1},
        )

    def generalization(self, examples: int = 5) -> list[dict[str, Any]]:
        """Per QI: the records released at each level and the released labels (from released
        records only, as :meth:`AnonymizationResult.generalization`)."""
        table = self.table
        rows = np.flatnonzero(self.release.released)
        weights = table.counts[rows]
        ids = self.release.label_ids()[rows]
        out = []
        for j, (qi, h) in enumerate(zip(table.qi_names, table.hierarchies, strict=True)):
            levels = self.release.row_levels[rows, j]
            per_level = np.bincount(levels, weights=weights, minlength=h.height + 1).astype(np.int64)
            counts = np.bincount(ids[:, j], weights=weights, minlength=self.release.space.size(j)).astype(
                np.int64
            )
            present = np.flatnonzero(counts)
            texts = self.release.space.labels[j]
            ranked = sorted(present.tolist(), key=lambda c: (-int(counts[c]), texts[c]))[:examples]
            entry: dict[str, Any] = {
                "qi": qi,
                "height": h.height,
                "records_per_level": {int(lv): int(c) for lv, c in enumerate(per_level) if c},
                "labels": int(present.size),
                "examples": [texts[c] for c in ranked],
                "example_records": [int(counts[c]) for c in ranked],
            }
            if h.warnings:  # as AnonymizationResult.generalization
                entry["hierarchy_warnings"] = [w.to_dict() for w in h.warnings]
            out.append(entry)
        return out

    def summary(self) -> dict[str, Any]:
        """The figures a report shows: rounds (node and records released each), the loss of the
        global and the mixed release, and the final counts."""
        sizes = self.released_class_sizes
        return {
            "local_recoding": True,
            "rounds": [r.to_dict() for r in self.rounds],
            "stop_reason": self.stop_reason,
            "stop": STOP_REASONS[self.stop_reason],
            "records_in": self.records_in,
            "records_out": self.records_out,
            "suppressed_records": self.suppressed_records,
            "suppression_limit": suppression_limit(self.max_suppression, self.records_in),
            "equivalence_classes": int(sizes.size),
            "min_class_size": int(sizes.min()) if sizes.size else 0,
            "loss_global": self.global_loss.to_dict(),
            "loss_mixed": self.mixed_loss.to_dict(),
            "generalization": self.generalization(),
        }


class LocalRecoding:
    """Local recoding (module docstring): the global optimum, then rounds on its suppressed records.

    Parameters
    ----------
    spec: the run's :class:`AnonymizationSpec` (models, suppression limit, metric, algorithm).
    rounds: the most rounds after the global one (``>= 1``; default :data:`DEFAULT_ROUNDS`).
    """

    def __init__(self, spec: AnonymizationSpec, rounds: int = DEFAULT_ROUNDS) -> None:
        if not isinstance(spec, AnonymizationSpec):
            raise TypeError("LocalRecoding(spec): expected an AnonymizationSpec")
        if isinstance(rounds, bool) or not isinstance(rounds, int) or rounds < 1:
            raise InputError(f"local recoding rounds: expected an integer >= 1, got {rounds!r}")
        if spec.algorithm not in SUPPORTED_ALGORITHMS:
            raise InputError(
                f"local recoding does not support the {spec.algorithm!r} algorithm; "
                f"use one of {', '.join(SUPPORTED_ALGORITHMS)}"
            )
        check_supported(spec.privacy)
        self.spec = spec
        self.rounds = rounds
        self.anonymizer = Anonymizer(spec)
        self._round: tuple[int, Anonymizer] | None = None

    def fit(
        self, engine: Engine, table: FrequencyTable | None = None, progress: Progress | None = None
    ) -> LocalRecodingResult:
        """Read the data through ``engine`` (or use ``table``), find the global optimum, recode."""
        start = time.process_time()
        base = self.anonymizer.fit(engine, table, progress=progress)
        return self.recode(base, progress=progress, seconds=time.process_time() - start)

    def fit_table(self, table: FrequencyTable, progress: Progress | None = None) -> LocalRecodingResult:
        """The global optimum on ``table``, then the rounds."""
        start = time.process_time()
        base = self.anonymizer.fit_table(table, progress=progress)
        return self.recode(base, progress=progress, seconds=time.process_time() - start)

    def recode(
        self, base: AnonymizationResult, progress: Progress | None = None, seconds: float = 0.0
    ) -> LocalRecodingResult:
        """The rounds after the global optimum ``base`` (an :meth:`Anonymizer.fit` result of this
        spec; ``seconds``: the CPU time it took, reported as round 0's)."""
        start = time.process_time() - seconds
        table = base.table
        space = LabelSpace.of(table.hierarchies)
        models = base.criterion.models
        if base.node is None:
            empty = MixedRelease(
                table,
                np.zeros((table.n_rows, len(table.qi_names)), np.int16),
                np.zeros(table.n_rows, bool),
                space,
            )
            return LocalRecodingResult(
                base,
                empty,
                [],
                "no_global_node",
                MixedAssessment(np.zeros(0, bool), True),
                dict(base.timings),
                dict(self.spec.prec_weights),
            )
        release = MixedRelease.at_node(table, base.node, base.released_rows, space)
        assessment = assess_mixed(models, release)
        if not assessment.passes:  # the merged-class check must agree with the search's assessment
            raise RuntimeError("the global optimum fails the merged-class check: please report this")
        rounds = [
            RecodingRound(
                number=0,
                node=base.node,
                levels=base.levels,
                records_searched=table.n_records,
                suppression_limit=base.criterion.suppression_limit(table.n_records),
                released=release.records_out,
                returned=0,
                suppressed_after=release.suppressed_records,
                checked_nodes=base.search.checked_nodes,
                seconds=time.process_time() - start,
            )
        ]
        smallest = max([m.k for m in models if isinstance(m, KAnonymity)], default=1)
        stop = "rounds"
        for number in range(1, self.rounds + 1):
            start = time.process_time()
            pending = ~release.released & (table.counts > 0)
            n_pending = int(table.counts[pending].sum())
            if n_pending == 0:
                stop = "nothing_suppressed"
                break
            if n_pending < smallest:
                stop = "too_few"
                break
            subset_rows = np.flatnonzero(pending)
            subset = _subset(table, subset_rows)
            found = self._round_anonymizer(table).fit_table(subset, progress=progress)
            if found.node is None:
                stop = "no_node"
                break
            candidate = np.zeros(table.n_rows, dtype=bool)
            candidate[subset_rows[found.released_rows]] = True
            searched = int(table.counts[candidate].sum())
            levels = release.row_levels.copy()
            levels[candidate] = np.asarray(found.node, dtype=np.int16)
            merged, kept = _merge(models, table, levels, release.released, candidate, space)
            if merged is None:
                stop = "node_model"
                break
            released_now = int(table.counts[kept].sum())
            release, assessment = merged
            rounds.append(
                RecodingRound(
                    number=number,
                    node=found.node,
                    levels=found.levels,
                    records_searched=n_pending,
                    suppression_limit=found.criterion.suppression_limit(n_pending),
                    released=released_now,
                    returned=searched - released_now,
                    suppressed_after=release.suppressed_records,
                    checked_nodes=found.search.checked_nodes,
                    seconds=time.process_time() - start,
                )
            )
            if released_now == 0:
                stop = "no_gain"
                break
        if release.suppressed_records > rounds[0].suppressed_after:  # the invariant of the method
            raise RuntimeError("local recoding suppressed more records than the global optimum")
        timings = dict(base.timings)
        timings["local_recoding"] = sum(r.seconds for r in rounds[1:])
        return LocalRecodingResult(
            base, release, rounds, stop, assessment, timings, dict(self.spec.prec_weights)
        )

    def _round_anonymizer(self, table: FrequencyTable) -> Anonymizer:
        """The search of a round: the spec's models, a risk threshold's population pinned to
        the whole input (it is the population whatever the round searches)."""
        if self._round is not None and self._round[0] == table.n_records:
            return self._round[1]
        privacy: list[PrivacyModel] = []
        for m in self.spec.privacy:
            if isinstance(m, RiskThreshold) and m.population_size is None:
                pinned = copy.copy(m)
                pinned.population_size = table.n_records
                privacy.append(pinned)
            else:
                privacy.append(m)
        anonymizer = Anonymizer(replace(self.spec, privacy=tuple(privacy)))
        self._round = (table.n_records, anonymizer)
        return anonymizer


def _subset(table: FrequencyTable, rows: np.ndarray) -> FrequencyTable:
    """The frequency table of ``rows`` only, with the same hierarchies (hence the same lattice
    and labels) and sensitive columns."""
    sensitive = table.sensitive_codes
    if sensitive.shape[0] == table.n_rows:
        sensitive = np.ascontiguousarray(sensitive[rows])
    return FrequencyTable(
        qi_names=table.qi_names,
        hierarchies=table.hierarchies,
        codes=np.ascontiguousarray(table.codes[rows]),
        counts=table.counts[rows].copy(),
        sensitive_names=table.sensitive_names,
        sensitive_codes=sensitive,
        sensitive_labels=table.sensitive_labels,
    )


def _merge(
    models: Sequence[PrivacyModel],
    table: FrequencyTable,
    levels: np.ndarray,
    released: np.ndarray,
    candidate: np.ndarray,
    space: LabelSpace,
) -> tuple[tuple[MixedRelease, MixedAssessment] | None, np.ndarray]:
    """Add the ``candidate`` rows (at ``levels``) to the ``released`` ones and check every model
    on the merged classes. Candidate rows in a failing class go back (the class is then as it
    was before the round, and passed). ``(None, kept)`` when a node-level model rejects the
    result: the round is dropped."""
    kept = candidate.copy()
    while True:
        release = MixedRelease(table, levels, released | kept, space)
        assessment = assess_mixed(models, release)
        if assessment.acceptable.all():
            break
        row_class = release.classes[0]
        failing = np.zeros(table.n_rows, dtype=bool)
        in_class = row_class >= 0
        failing[in_class] = ~assessment.acceptable[row_class[in_class]]
        back = failing & kept
        if not back.any():  # an earlier round's class fails alone: never, since each passed
            raise RuntimeError("an earlier round's class fails the merged-class check: please report this")
        kept &= ~back
    if not assessment.node_acceptable:
        return None, np.zeros_like(kept)
    return (release, assessment), kept


def local_recoding(
    spec: AnonymizationSpec,
    engine: Engine | None = None,
    *,
    table: FrequencyTable | None = None,
    rounds: int = DEFAULT_ROUNDS,
    progress: Progress | None = None,
) -> LocalRecodingResult:
    """The library entry point: the global optimum of ``spec`` on ``engine``'s data (or
    ``table``), then up to ``rounds`` rounds of local recoding (module docstring)::

        result = local_recoding(spec, MemoryEngine(frame), rounds=10)
        result.rounds                  # node and records released each round
        result.global_loss, result.mixed_loss   # cell-level Prec, entropy, DM*
        publish_local_recoding(result, engine, out_dir)   # written, verified, published
    """
    recoder = LocalRecoding(spec, rounds)
    if table is not None:
        return recoder.fit_table(table, progress=progress)
    if engine is None:
        raise InputError("local_recoding needs an engine or a frequency table")
    return recoder.fit(engine, progress=progress)


__all__ = [
    "DEFAULT_ROUNDS",
    "STOP_REASONS",
    "SUPPORTED_ALGORITHMS",
    "LocalRecoding",
    "LocalRecodingResult",
    "RecodingRound",
    "local_recoding",
]
