"""The anonymization workflow (thesis §4.3; docs/architecture.md, the data flow).

::

    engine --GROUP BY--> FrequencyTable --Evaluator--> lattice search --> node
           <--ReleasePlan-- apply node, suppress failing classes

:class:`Anonymizer` holds the parameters (schema, privacy models, suppression
limit, metric, algorithm), validated when it is built; :meth:`Anonymizer.fit`
reads the data through an engine and returns an :class:`AnonymizationResult`,
which knows the chosen node and can produce the :class:`ReleasePlan` that an
engine applies to every record. Writing, verifying and reporting live in
:mod:`safeshare.workflows.release`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from safeshare.config.algorithms import ALGORITHMS, make_strategy
from safeshare.config.spec import AnonymizationSpec
from safeshare.core.evaluation import Classes, Evaluator
from safeshare.core.frequency import FrequencyTable
from safeshare.core.lattice import Node
from safeshare.core.tabulate import build_frequency_table, resolve_hierarchies
from safeshare.data.engines.base import COUNT_COLUMN, Engine, OutputFormat, ReleasePlan
from safeshare.data.schema import Schema
from safeshare.errors import InputError
from safeshare.metrics.loss import InformationLoss, all_metric_values, make_metric
from safeshare.models.base import NodeAssessment, PrivacyCriterion, PrivacyModel
from safeshare.search.context import Prepared, SearchContext
from safeshare.search.memo import MemoizedCriterion
from safeshare.search.progress import Progress
from safeshare.search.result import SearchResult


@dataclass
class AnonymizationResult:
    """The outcome of :meth:`Anonymizer.fit`.

    Attributes
    ----------
    table: the frequency table the search ran on.
    evaluator: the evaluator (reusable for further searches on the same data).
    criterion: the privacy models with the suppression limit.
    metric: the information loss the search minimized.
    search: the search's own result (checked nodes, minimal nodes, ...).
    node: the chosen node, or ``None`` when no node qualifies.
    classes: the equivalence classes of ``node`` before suppression.
    assessment: which classes are released and how many records are suppressed.
    timings: seconds per phase.
    """

    schema: Schema
    table: FrequencyTable
    evaluator: Evaluator
    criterion: PrivacyCriterion
    metric: InformationLoss
    search: SearchResult
    node: Node | None
    classes: Classes | None
    assessment: NodeAssessment | None
    timings: dict[str, float] = field(default_factory=dict)
    #: what the strategy searched and releases: the input's records, or (epsilon-safe) a sample of
    #: them, with what the preparation adds to the report; ``None`` when the search ran on a given table
    prepared: Prepared | None = field(default=None, repr=False)
    #: node -> records failing the privacy models there, from the search's evaluations
    #: (reused by :func:`tradeoff`: the count does not depend on the suppression limit).
    failing: dict[Node, int] = field(default_factory=dict, repr=False)

    @property
    def found(self) -> bool:
        return self.node is not None

    @property
    def levels(self) -> dict[str, int]:
        """QI -> chosen generalization level."""
        if self.node is None:
            return {}
        return dict(zip(self.table.qi_names, self.node, strict=True))

    @property
    def records_in(self) -> int:
        return self.table.n_records

    @property
    def suppressed_records(self) -> int:
        return self.assessment.suppressed_records if self.assessment else self.records_in

    @property
    def released_class_sizes(self) -> np.ndarray:
        """Sizes of the released (not suppressed) classes."""
        if self.classes is None or self.assessment is None:
            return np.zeros(0, dtype=np.int64)
        keep = self.assessment.acceptable & (self.classes.sizes > 0)
        return self.classes.sizes[keep].astype(np.int64)

    @property
    def min_class_size(self) -> int:
        sizes = self.released_class_sizes
        return int(sizes.min()) if sizes.size else 0

    @property
    def persons(self) -> bool:
        """Whether the run counts people (a person key, issue 32)."""
        return self.table.persons is not None

    @property
    def released_class_people(self) -> np.ndarray:
        """Distinct people of every released class (records without a person key), aligned
        with :attr:`released_class_sizes`."""
        if self.classes is None or self.assessment is None:
            return np.zeros(0, dtype=np.int64)
        keep = self.assessment.acceptable & (self.classes.sizes > 0)
        return self.classes.people[keep].astype(np.int64)

    @property
    def min_class_people(self) -> int:
        """The fewest people of a released class (0 without one)."""
        people = self.released_class_people
        return int(people.min()) if people.size else 0

    def people_figures(self) -> dict[str, Any] | None:
        """The release in people (``None`` without a person key): people in and out, the people
        with a suppressed record and the people wholly suppressed, and their records per person."""
        grain = self.table.persons
        if grain is None:
            return None
        rows = self.released_rows
        kept = grain.people_in_rows(rows)
        per_person = grain.records_per_person()
        return {
            "column": grain.column,
            "people_in": grain.n_people,
            "people_out": kept,
            "people_with_suppressed_records": grain.people_in_rows(~rows),
            "people_suppressed": grain.n_people - kept,
            "records_per_person": {
                "mean": float(per_person.mean()) if per_person.size else 0.0,
                "max": int(per_person.max()) if per_person.size else 0,
                "people_with_several": int((per_person > 1).sum()),
            },
            "min_class_people": self.min_class_people,
            "suppression_unit": "records",
            "profiles": self.profile_figures(),
        }

    def release_k(self) -> int:
        """The k a release's profiles are measured against: the profile model's, else k-anonymity's,
        else 2 (a profile of one person)."""
        ks = {m.name: int(getattr(m, "k", 0) or 0) for m in self.criterion.models}
        k = ks.get("profile-anonymity") or ks.get("k-anonymity") or 0
        return max(k, 2)

    def profile_figures(self) -> dict[str, Any] | None:
        """The released profiles at the chosen node from the search's grain, when the release links
        a person's records by the person key (``None`` otherwise): people, distinct profiles, the
        people whose profile fewer than k share, the people singled out by it, the fewest sharing
        one (issue 32)."""
        grain = self.table.persons
        if (
            grain is None
            or not self.schema.person_released
            or self.classes is None
            or self.assessment is None
        ):
            return None
        released = self.assessment.acceptable & (self.classes.sizes > 0)
        profiles = grain.profiles(self.classes.row_class, counted=released)
        k = self.release_k()
        people = profiles.n_people
        below = profiles.people_below(k)
        singled = profiles.people_below(2)
        return {
            "column": grain.column,
            "k": k,
            "people": people,
            "profiles": int(profiles.sizes.size),
            "below_k": below,
            "below_k_share": below / people if people else 0.0,
            "singled_out": singled,
            "singled_out_share": singled / people if people else 0.0,
            "smallest": profiles.smallest,
            "intervals": list(grain.tag_columns),
        }

    @property
    def released_rows(self) -> np.ndarray:
        """Boolean mask over the frequency table's rows: the rows whose records are released."""
        if self.classes is None or self.assessment is None:
            return np.zeros(self.table.n_rows, dtype=bool)
        return self.assessment.acceptable[self.classes.row_class] & (self.table.counts > 0)

    def generalization(self, examples: int = 5) -> list[dict[str, Any]]:
        """Per QI: chosen level, hierarchy height, and the labels the release holds at that level.

        Labels and their record counts come from the released classes only: a
        label of the hierarchy that no record carries, or whose records are all
        suppressed, is not in the release and must not be in its report.
        ``examples`` lists the most frequent released labels (ties by label).
        """
        if self.node is None:
            return []
        rows = self.released_rows
        weights = self.table.counts[rows]
        out = []
        for j, (qi, h, level) in enumerate(
            zip(self.table.qi_names, self.table.hierarchies, self.node, strict=True)
        ):
            labels = h.labels(level)
            codes = self.table.level_codes(j, level)[rows]
            counts = np.bincount(codes, weights=weights, minlength=len(labels)).astype(np.int64)
            present = np.flatnonzero(counts)
            ranked = sorted(present.tolist(), key=lambda c: (-int(counts[c]), labels[c]))[:examples]
            entry: dict[str, Any] = {
                "qi": qi,
                "level": level,
                "height": h.height,
                "labels": int(present.size),
                "examples": [labels[c] for c in ranked],
                "example_records": [int(counts[c]) for c in ranked],
            }
            if h.warnings:  # what its builder noticed (values far beyond a coding bound); no value shown
                entry["hierarchy_warnings"] = [w.to_dict() for w in h.warnings]
            out.append(entry)
        return out

    def loss_values(self) -> dict[str, float]:
        """Every metric at the chosen node (raw and normalized); the one the search minimized as
        it minimized it (a weighted Prec with its weights, :func:`~safeshare.metrics.loss.metrics_for`)."""
        if self.node is None:
            return {}
        return all_metric_values(self.evaluator, self.node, self.classes, optimized=self.metric)

    @property
    def metric_weights(self) -> dict[str, float]:
        """The per-QI weights of the minimized metric (Prec's ``prec_weights``; empty without)."""
        return {name: float(w) for name, w in getattr(self.metric, "weights", {}).items()}

    def suppressed_tuples(self) -> pd.DataFrame:
        """The generalized QI tuples of the suppressed classes (one column per QI)."""
        assert self.node is not None and self.classes is not None and self.assessment is not None
        rows = ~self.assessment.acceptable[self.classes.row_class]
        labels = self.table.labels_at(self.node)
        return labels[rows].drop_duplicates().reset_index(drop=True)

    def release_plan(
        self, columns: Sequence[str], fmt: OutputFormat = "csv", delimiter: str = ","
    ) -> ReleasePlan:
        """The recipe an engine applies to write the release."""
        if self.node is None:
            stop = self.search.extra.get("stop_reason")
            if self.search.extra.get("search") == "anytime" and stop in ("time_limit", "max_evaluations"):
                raise InputError(
                    f"the anytime search found no qualifying node before its {stop.replace('_', ' ')}; "
                    "raise time_limit or max_evaluations"
                )
            raise InputError("no node satisfies the privacy models within the suppression limit")
        generalization = {
            qi: h.mapping(level)
            for qi, h, level in zip(self.table.qi_names, self.table.hierarchies, self.node, strict=True)
        }
        return ReleasePlan(
            columns=self.schema.released_columns(columns),
            generalization=generalization,
            suppressed=self.suppressed_tuples(),
            format=fmt,
            delimiter=delimiter,
        )

    def summary(self) -> dict[str, Any]:
        """The figures of report.json that describe the search and the chosen node."""
        loss = self.loss_values()
        metric = self.metric.name
        return {
            "found": self.found,
            "node": list(self.node) if self.node is not None else None,
            "levels": self.levels,
            "generalization": self.generalization(),
            "metric": metric,
            "metric_label": self.metric.label,
            "metric_weights": self.metric_weights,
            "information_loss": loss.get(metric),
            "information_loss_normalized": loss.get(f"{metric}_normalized"),
            "loss": loss,
            "records_in": self.records_in,
            "suppressed_records": self.suppressed_records,
            "records_out": self.records_in - self.suppressed_records,
            "min_class_size": self.min_class_size,
            "people": self.people_figures(),
            "equivalence_classes": int(self.released_class_sizes.size),
            "checked_nodes": self.search.checked_nodes,
            "minimal_nodes": self.minimal_node_count(),
            "lattice_size": self.search.lattice_size,
            "algorithm": self.search.algorithm,
            "privacy": self.criterion.params(),
            "privacy_achieved": self.privacy_achieved(),
            **{k: v for k, v in self.search.extra.items() if k not in ("qualifying_nodes",)},
        }

    def minimal_node_count(self) -> int | None:
        """How many minimal qualifying nodes the search compared; ``None`` for a search that finds none.

        A best-first search (criteria not monotone with suppression) and the anytime
        branch and bound walk the loss order and the exponential mechanism of epsilon-safe draws from every
        node: neither computes a minimal frontier, and "0 minimal" would misreport them.
        """
        no_frontier = self.search.extra.get("search") in ("best-first", "anytime")
        if no_frontier or self.search.algorithm == "epsilon-safe":
            return None
        return len(self.search.minimal_nodes)

    def privacy_achieved(self) -> dict[str, Any]:
        """Per model, what the released classes achieve (e.g. the smallest l, the largest t)."""
        if self.classes is None or self.assessment is None:
            return {}
        released = self.assessment.acceptable & (self.classes.sizes > 0)
        out = {m.name: m.achieved(self.classes, self.table, released) for m in self.criterion.models}
        return {name: value for name, value in out.items() if value}


class Anonymizer:
    """Find the optimal full-domain generalization of a table (thesis §4.3).

    Built from one :class:`~safeshare.config.spec.AnonymizationSpec`, passed
    whole: ``Anonymizer(spec)``. The short form of the Python API,
    ``Anonymizer(schema, [KAnonymity(5)], max_suppression=0.05, metric="entropy")``,
    builds that spec from the schema, the models and keyword options (the
    fields of :class:`AnonymizationSpec`).
    """

    def __init__(
        self, spec: AnonymizationSpec | Schema, privacy: Sequence[PrivacyModel] | None = None, **options: Any
    ) -> None:
        if isinstance(spec, AnonymizationSpec):
            if privacy is not None or options:
                raise TypeError("Anonymizer(spec) takes nothing else: use dataclasses.replace(spec, ...)")
        elif privacy is None:
            raise TypeError("Anonymizer(schema, privacy, **options) needs the privacy models")
        else:
            spec = AnonymizationSpec(spec, tuple(privacy), **options)
        self.spec = spec
        # Models over sensitive attributes learn the schema's sensitive columns here.
        self.criterion = spec.criterion()
        self.strategy = make_strategy(spec.algorithm, spec.options)

    @property
    def schema(self) -> Schema:
        return self.spec.schema

    @property
    def metric_name(self) -> str:
        return self.spec.metric

    @property
    def algorithm(self) -> str:
        return self.spec.algorithm

    @property
    def prepares(self) -> bool:
        """Whether the strategy prepares its records before the search (epsilon-safe samples)."""
        return hasattr(self.strategy, "prepare")

    def prepare(self, engine: Engine) -> Prepared:
        """The records the strategy searches and releases: ``engine``'s, unless the strategy
        prepares them (epsilon-safe draws its Bernoulli sample here, thesis §4.5.4)."""
        hook = getattr(self.strategy, "prepare", None)
        if hook is None:
            return Prepared(engine)
        prepared: Prepared = hook(engine, self.schema, self.criterion)
        return prepared

    def fit(
        self, engine: Engine, table: FrequencyTable | None = None, progress: Progress | None = None
    ) -> AnonymizationResult:
        """Prepare the records (:meth:`prepare`), read them through ``engine`` (or use a
        ``table`` of the prepared records) and search."""
        timings: dict[str, float] = {}
        start = time.perf_counter()
        prepared = self.prepare(engine) if table is None else Prepared(engine)
        if prepared.engine is not engine:
            timings["prepare"] = time.perf_counter() - start
        if table is None:
            table, t = build_frequency_table(prepared.engine, self.schema, self.criterion.sensitive_columns)
            timings.update(t)
        result = self.fit_table(table, timings, progress=progress)
        result.prepared = prepared
        return result

    def fit_table(
        self,
        table: FrequencyTable,
        timings: dict[str, float] | None = None,
        evaluator: Evaluator | None = None,
        progress: Progress | None = None,
        failing: dict[Node, int] | None = None,
    ) -> AnonymizationResult:
        """Search on a frequency table (reusing ``evaluator`` when given).

        ``progress(checked)`` is called every few nodes checked (see
        :mod:`safeshare.search.progress`). ``failing`` (node -> records failing
        the models) memoizes the predicate across searches with other
        suppression limits on the same table (:func:`tradeoff`).
        """
        timings = dict(timings or {})
        self.criterion.validate(table)
        start = time.perf_counter()
        evaluator = evaluator or Evaluator(table)
        metric = make_metric(self.spec.metric, evaluator, dict(self.spec.prec_weights) or None)
        criterion: PrivacyCriterion = self.criterion
        if failing is not None or len(self.criterion.models) == 1:
            # one model: counting the failing records costs what the plain predicate costs
            failing = {} if failing is None else failing
            criterion = MemoizedCriterion(self.criterion.models, self.criterion.max_suppression, failing)
        ctx = SearchContext(
            table=table, evaluator=evaluator, criterion=criterion, metric=metric, progress=progress
        )
        result = self.strategy.run(ctx)
        ctx.ticker.done()
        timings["search"] = time.perf_counter() - start
        criterion = result.criterion or self.criterion
        node = result.node
        classes = evaluator.classes(node) if node is not None else None
        assessment = criterion.assess(classes, table) if classes is not None else None
        return AnonymizationResult(
            schema=self.schema,
            table=table,
            evaluator=evaluator,
            criterion=criterion,
            metric=metric,
            search=result,
            node=node,
            classes=classes,
            assessment=assessment,
            timings=timings,
            failing={} if failing is None else failing,
        )


def tradeoff(
    anonymizer: Anonymizer,
    result: AnonymizationResult,
    limits: Sequence[float] = (0.0, 0.01, 0.05, 0.1, 0.2, 0.5),
) -> list[dict[str, Any]]:
    """Information loss of the optimal node for several suppression limits (thesis Fig. 6.1).

    Every search runs on the main search's table and evaluator and shares one
    memo of the records failing the models at each node (a node qualifies at
    limit ``s`` iff that count is at most ``floor(s N)``, hence at every larger
    limit too): a node is evaluated once for the whole curve, and the nodes
    the main search evaluated are not evaluated again. With the anytime search
    each limit gets the whole budget, and each point carries its proven
    ``lower_bound`` and ``optimal`` flag (its node is the best found).
    """
    out: list[dict[str, Any]] = []
    failing = result.failing  # the main search's evaluations, then every curve search's
    for limit in sorted({*limits, anonymizer.criterion.max_suppression}):
        other = Anonymizer(replace(anonymizer.spec, max_suppression=limit))
        r = other.fit_table(result.table, evaluator=result.evaluator, failing=failing)
        # the anytime search: a best-found node, optimal only when proven
        bound: dict[str, Any] = {
            key: r.search.extra[key] for key in ("lower_bound", "optimal") if key in r.search.extra
        }
        out.append(
            {
                "max_suppression": limit,
                "found": r.found,
                "levels": r.levels,
                "information_loss": r.metric.value(r.node, r.classes) if r.node is not None else None,
                "information_loss_normalized": r.metric.normalized(r.node, r.classes)
                if r.node is not None
                else None,
                "suppressed_records": r.suppressed_records,
                "chosen": limit == anonymizer.criterion.max_suppression,
                **({"k_achieved": r.search.extra["k_achieved"]} if "k_achieved" in r.search.extra else {}),
                **bound,
            }
        )
    return out


__all__ = [
    "ALGORITHMS",
    "COUNT_COLUMN",
    "AnonymizationResult",
    "AnonymizationSpec",
    "Anonymizer",
    "build_frequency_table",
    "resolve_hierarchies",
    "tradeoff",
]
