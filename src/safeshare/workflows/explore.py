"""The solution space of a run, node by node: :class:`LatticeView`.

ARX's "explore results" perspective shows the generalization lattice coloured by what the
search learnt (anonymous, not anonymous, the optimum) with each node's loss; a custodian
compares candidate nodes before choosing one. This module computes those figures from a
fitted run (:class:`~safeshare.workflows.anonymizer.AnonymizationResult`) on its frequency
table, so they are the search's own numbers (the same evaluator, criterion and metric):

* :func:`lattice_view`: every node of a lattice of at most ``max_nodes`` nodes (UCI Adult's
  7,776: about 3 s of CPU), walked with :meth:`Evaluator.iter_classes` (each prefix of class
  ids computed once), and for each node: whether it qualifies (the criterion's
  :meth:`assess`, the search predicate), the records suppressed there, the loss under the
  configured metric and every other one (normalized to [0, 1]), the released classes (count,
  smallest; their sizes are kept for :func:`node_detail`) and the prosecutor risks ``max 1/f``
  and ``J/n``. A larger
  lattice is not walked: only the nodes the search itself evaluated (and the optimum) get
  figures, the others are ``not-checked``.
* :func:`node_detail`: one node's figures with its risk section (the report's
  :func:`~safeshare.risk.report_risk.side`, on that node's released class sizes), computed from
  the class sizes the view keeps.

The Risk screen's figures are not computed here: they are report.json's risk section and the
certificate's (:mod:`safeshare.risk.report_risk`, :mod:`safeshare.workflows.certificate`), the
published release's own.

Everything here is computed from class sizes of *released* classes (suppressed classes are
counted, never described): sizes and counts only, as in the report (docs/security.md).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from safeshare.app_runner import to_json
from safeshare.core.evaluation import Classes
from safeshare.core.lattice import Node
from safeshare.errors import InputError
from safeshare.figures import count, number, percent
from safeshare.hierarchy.hierarchy import Hierarchy
from safeshare.metrics.loss import metrics_for
from safeshare.models.base import NodePrivacyModel
from safeshare.risk.estimators import DEFAULT_ESTIMATOR
from safeshare.risk.report_risk import side
from safeshare.search.result import TIE_BREAK
from safeshare.workflows.anonymizer import AnonymizationResult

#: Lattices up to this many nodes are walked whole (the browser draws up to about 10,000).
MAX_NODES = 10_000
#: Labels of each generalization level kept in the view (the Explore screen's "age: 0:49, 50:99").
LABELS_SHOWN = 3
LABEL_CHARS = 40
#: The node list's filters (:meth:`LatticeView.listed`).
LIST_STATUSES = ("anonymous", "not-anonymous", "all")
#: How each search breaks ties of loss (``safeshare.search.ola.choose_best``, the exhaustive and
#: the anytime searches all order candidates by ``(loss, sum of levels, levels)``).
_LOWEST = TIE_BREAK  # one text of the rule: the report's frontier states the same
TIE_RULES = {
    "ola": _LOWEST,
    "exhaustive": _LOWEST,
    "anytime": _LOWEST,
    "auto": _LOWEST,
    "inverse-ola": "the largest k* first, then " + _LOWEST,
    "node": "the node was given (algorithm: node): no search chose among equals",
}
#: Bins of the class-size histograms (the report's: 1, 2, ..., 10, 11-20, 21-50, ...).
SIZE_EDGES = (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 21, 51, 101, 201, 501, 1001, 2001, 5001, 10001)

Status = Literal["optimum", "anonymous", "not-anonymous", "not-checked"]


def size_histogram(sizes: np.ndarray, counts: np.ndarray | None = None) -> list[dict[str, Any]]:
    """Classes and records by class size in :data:`SIZE_EDGES` bins (``counts``: classes of each
    of ``sizes``, 1 each when ``None``); bins up to 10 are always listed, larger ones when used."""
    sizes = np.asarray(sizes, dtype=np.int64)
    counts = np.ones_like(sizes) if counts is None else np.asarray(counts, dtype=np.int64)
    out = []
    for lo, hi in zip(SIZE_EDGES, [*SIZE_EDGES[1:], None], strict=True):
        mask = sizes >= lo if hi is None else (sizes >= lo) & (sizes < hi)
        classes = int(counts[mask].sum())
        if classes or (hi is not None and hi <= 11):
            label = str(lo) if hi == lo + 1 else (f"{lo}+" if hi is None else f"{lo}-{hi - 1}")
            records = int((sizes[mask] * counts[mask]).sum())
            out.append({"label": label, "low": lo, "classes": classes, "records": records})
    return out


@dataclass(frozen=True)
class NodeFigures:
    """One node of the lattice: its status and figures (``None`` when it was not evaluated)."""

    levels: tuple[int, ...]
    status: Status
    #: whether the run's searches evaluated the node (OLA's, and the trade-off curve's), rather
    #: than settling it by predictive tagging; known when the search memoizes (one privacy model)
    searched: bool
    #: the configured metric, normalized to [0, 1]
    loss: float | None = None
    #: every metric, normalized
    losses: Mapping[str, float] = field(default_factory=dict)
    suppressed: int | None = None
    classes: int | None = None
    min_class_size: int | None = None
    prosecutor_max: float | None = None
    prosecutor_mean: float | None = None

    @property
    def height(self) -> int:
        return sum(self.levels)

    @property
    def key(self) -> str:
        """The node as text: its levels joined by ``,`` (``"2,2,2,0,2,0,0,0,0"``)."""
        return ",".join(map(str, self.levels))

    def to_dict(self) -> dict[str, Any]:
        doc = asdict(self)
        doc["levels"] = list(self.levels)
        doc["losses"] = dict(self.losses)
        return doc

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> NodeFigures:
        values = dict(doc)
        values["levels"] = tuple(values["levels"])
        return cls(**values)


@dataclass
class LatticeView:
    """The lattice of a run with per-node figures (see the module docstring)."""

    quasi_identifiers: tuple[str, ...]
    heights: tuple[int, ...]
    size: int
    #: the metric as minimized (its label: ``prec, weighted (age 2)`` with prec_weights)
    metric: str
    records: int
    max_suppression: float
    #: the chosen node (``None`` when none qualifies)
    optimum: tuple[int, ...] | None
    #: whether every node was evaluated (else only the searched ones)
    complete: bool
    #: N of the risk figures; ``None``: the input is the population (exact risks)
    population_size: int | None
    nodes: list[NodeFigures]
    #: node -> (class sizes, number of classes of each size) of its released classes
    class_sizes: dict[tuple[int, ...], tuple[np.ndarray, np.ndarray]] = field(
        default_factory=dict, repr=False
    )
    #: the search that chose the optimum (``ola``, ``node``, ...): which tie-break it applies
    algorithm: str = ""
    #: the largest number of records that may be suppressed, ``floor(max_suppression * records)``
    #: (``None``: a view written before it was kept; computed from the share then)
    suppression_allowed: int | None = None
    #: the node-wide privacy models (a risk threshold on B, ...): a node within the suppression
    #: limit that fails is failed by one of them
    node_models: tuple[str, ...] = ()
    #: QI -> per level ``{"count": groups, "labels": [the first few]}``: the hierarchy's labels
    #: (level 0, the records' own values, is never listed)
    level_labels: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._index = {n.levels: i for i, n in enumerate(self.nodes)}

    def node(self, levels: Sequence[int] | str) -> NodeFigures:
        """The figures of a node given as levels or as ``"2,2,0,..."`` (:class:`InputError` if unknown)."""
        key = parse_node(levels, len(self.heights)) if isinstance(levels, str) else tuple(levels)
        if len(key) != len(self.heights) or any(
            not 0 <= lv <= h for lv, h in zip(key, self.heights, strict=True)
        ):
            raise InputError(f"node {','.join(map(str, key))}: not in the lattice of heights {self.heights}")
        i = self._index.get(key)
        return (
            self.nodes[i] if i is not None else NodeFigures(levels=key, status="not-checked", searched=False)
        )

    def counts(self) -> dict[str, int]:
        """Nodes per status (the not-checked ones included)."""
        out = {"optimum": 0, "anonymous": 0, "not-anonymous": 0, "not-checked": self.size - len(self.nodes)}
        for n in self.nodes:
            out[n.status] += 1
        return out

    def by_loss(self, limit: int | None = None) -> list[NodeFigures]:
        """Evaluated nodes by increasing loss (ties: fewer suppressed, then the levels)."""
        ranked = sorted(
            (n for n in self.nodes if n.loss is not None),
            key=lambda n: (n.loss, n.suppressed or 0, n.levels),
        )
        return ranked if limit is None else ranked[:limit]

    def listed(self, status: str = "anonymous", limit: int | None = None) -> list[NodeFigures]:
        """:meth:`by_loss` of the nodes of one status: ``anonymous`` (the optimum and every other
        qualifying node), ``not-anonymous``, or ``all``; :class:`InputError` for another. The
        nodes that tie with the optimum (:meth:`ties`) are listed together, the optimum first."""
        if status not in LIST_STATUSES:
            raise InputError(f"status {status[:40]!r}: expected one of {', '.join(LIST_STATUSES)}")
        wanted = {"anonymous": ("optimum", "anonymous"), "not-anonymous": ("not-anonymous",)}.get(status)
        ranked = [n for n in self.by_loss() if wanted is None or n.status in wanted]
        tied = self.ties()
        keys = {t.levels for t in tied}
        first = next((i for i, n in enumerate(ranked) if n.levels in keys), None)
        if first is not None:  # the nodes tied with the optimum together, the optimum first
            rest = [n for n in ranked[first:] if n.levels not in keys]
            ranked = [*ranked[:first], *tied, *rest]
        return ranked if limit is None else ranked[:limit]

    @property
    def allowed(self) -> int:
        """The largest number of records the suppression limit lets go: ``floor(max_suppression * N)``."""
        if self.suppression_allowed is not None:
            return self.suppression_allowed
        return math.floor(self.max_suppression * self.records + 1e-9)

    def ties(self) -> list[NodeFigures]:
        """The qualifying nodes whose loss equals the optimum's (the optimum first, then by
        :meth:`by_loss`), when there are at least two; else ``[]``. Equal: within a relative
        ``1e-9`` (the normalized losses of nodes of equal raw loss differ by rounding only)."""
        if self.optimum is None:
            return []
        best = self.node(self.optimum).loss
        if best is None:
            return []
        tied = [
            n
            for n in self.by_loss()
            if n.status in ("optimum", "anonymous")
            and n.loss is not None
            and math.isclose(n.loss, best, rel_tol=1e-9, abs_tol=1e-12)
        ]
        tied.sort(key=lambda n: n.status != "optimum")
        return tied if len(tied) > 1 else []

    def tie_rule(self) -> str:
        """How the run's search chose among nodes of equal loss, in one sentence."""
        return TIE_RULES.get(self.algorithm, "the node the search returned (its own choice among equals)")

    def why_not(self, node: NodeFigures) -> str | None:
        """Why a node does not qualify, in the figures the view holds (``None`` for a qualifying or
        an unevaluated node): the share of records it would suppress against the limit
        (``needs 78.4% suppressed > 5% allowed``), else the node-wide model that rejects it."""
        if node.status != "not-anonymous" or node.suppressed is None or not self.records:
            return None
        share = node.suppressed / self.records
        if node.suppressed > self.allowed:
            return (
                f"needs {percent(share)} suppressed ({count(node.suppressed)} of {count(self.records)} "
                f"records) > {percent(self.max_suppression)} allowed ({count(self.allowed)})"
            )
        models = ", ".join(self.node_models) or "a node-wide privacy model"
        return (
            f"suppression within the limit ({percent(share)} <= {percent(self.max_suppression)}), "
            f"but rejected by {models}"
        )

    def labels_of(self, levels: Sequence[int]) -> list[dict[str, Any]]:
        """For each quasi-identifier of a node: its level and the hierarchy's labels at that level
        (``{"qi", "level", "count", "labels"}``; ``labels`` empty at level 0, the values as
        they are, and in a view written without labels)."""
        out = []
        for q, level in zip(self.quasi_identifiers, levels, strict=True):
            per_level = self.level_labels.get(q) or []
            entry = per_level[level] if level < len(per_level) else {"count": None, "labels": []}
            out.append({"qi": q, "level": int(level), "count": entry["count"], "labels": entry["labels"]})
        return out

    def label_text(self, levels: Sequence[int]) -> str:
        """The generalized quasi-identifiers of a node in words: ``age: 0:49, 50:99; sex: *``
        (the first labels of each; level 0 left out)."""
        parts = []
        for entry in self.labels_of(levels):
            if entry["level"] == 0:
                continue
            if not entry["labels"]:
                parts.append(f"{entry['qi']} level {entry['level']}")
                continue
            more = (entry["count"] or 0) > len(entry["labels"])
            parts.append(f"{entry['qi']}: {', '.join(entry['labels'])}{', …' if more else ''}")
        return "; ".join(parts) or "no generalization"

    def to_dict(self) -> dict[str, Any]:
        return {
            "quasi_identifiers": list(self.quasi_identifiers),
            "heights": list(self.heights),
            "size": self.size,
            "metric": self.metric,
            "records": self.records,
            "max_suppression": self.max_suppression,
            "optimum": list(self.optimum) if self.optimum is not None else None,
            "complete": self.complete,
            "population_size": self.population_size,
            "counts": self.counts(),
            "algorithm": self.algorithm,
            "suppression_allowed": self.allowed,
            "node_models": list(self.node_models),
            "level_labels": self.level_labels,
            "nodes": [n.to_dict() for n in self.nodes],
        }

    def write(self, directory: Path) -> None:
        """``lattice.json`` (:meth:`to_dict`) and ``lattice-sizes.npz`` (the class sizes) in ``directory``."""
        from safeshare.io import atomic_write, atomic_write_text

        keys = list(self.class_sizes)
        offsets = np.zeros(len(keys) + 1, dtype=np.int64)
        for i, key in enumerate(keys):
            offsets[i + 1] = offsets[i] + self.class_sizes[key][0].size
        sizes = np.concatenate([self.class_sizes[k][0] for k in keys]) if keys else np.zeros(0, np.int64)
        counts = np.concatenate([self.class_sizes[k][1] for k in keys]) if keys else np.zeros(0, np.int64)
        nodes = np.array(keys, dtype=np.int16).reshape(len(keys), len(self.heights))

        def save(path: Path) -> None:
            with open(path, "wb") as fh:
                np.savez_compressed(fh, nodes=nodes, offsets=offsets, sizes=sizes, counts=counts)

        atomic_write(directory / "lattice-sizes.npz", save)
        atomic_write_text(directory / "lattice.json", to_json(self.to_dict(), separators=(",", ":")))

    @classmethod
    def read(cls, directory: Path) -> LatticeView:
        """The view :meth:`write` wrote."""
        doc = json.loads((directory / "lattice.json").read_text(encoding="utf-8"))
        class_sizes: dict[tuple[int, ...], tuple[np.ndarray, np.ndarray]] = {}
        npz = directory / "lattice-sizes.npz"
        if npz.exists():
            with np.load(npz) as data:
                offsets, sizes, counts = data["offsets"], data["sizes"], data["counts"]
                for i, row in enumerate(data["nodes"].tolist()):
                    lo, hi = int(offsets[i]), int(offsets[i + 1])
                    class_sizes[tuple(row)] = (sizes[lo:hi], counts[lo:hi])
        return cls(
            quasi_identifiers=tuple(doc["quasi_identifiers"]),
            heights=tuple(doc["heights"]),
            size=int(doc["size"]),
            metric=doc["metric"],
            records=int(doc["records"]),
            max_suppression=float(doc["max_suppression"]),
            optimum=tuple(doc["optimum"]) if doc["optimum"] is not None else None,
            complete=bool(doc["complete"]),
            population_size=doc["population_size"],
            nodes=[NodeFigures.from_dict(n) for n in doc["nodes"]],
            class_sizes=class_sizes,
            algorithm=str(doc.get("algorithm", "")),
            suppression_allowed=doc.get("suppression_allowed"),
            node_models=tuple(doc.get("node_models", ())),
            level_labels=dict(doc.get("level_labels") or {}),
        )


def parse_node(text: str, q: int) -> tuple[int, ...]:
    """``"2,0,1"`` -> ``(2, 0, 1)``, checked to have ``q`` levels."""
    parts = text.split(",")
    if len(parts) != q or not all(p.strip().isdigit() for p in parts):
        raise InputError(f"node {text!r}: expected {q} levels joined by ','")
    return tuple(int(p) for p in parts)


def _figures(
    result: AnonymizationResult,
    classes: Classes,
    metrics: Mapping[str, Any],
    searched: bool,
) -> tuple[NodeFigures, tuple[np.ndarray, np.ndarray]]:
    node = classes.node
    assessment = result.criterion.assess(classes, result.table)
    keep = assessment.acceptable & (classes.sizes > 0)
    released = classes.sizes[keep].astype(np.int64)
    sizes, counts = np.unique(released, return_counts=True)
    if node == result.node:
        status: Status = "optimum"
    else:
        status = "anonymous" if assessment.qualifies else "not-anonymous"
    n_out = int(released.sum())
    figures = NodeFigures(
        levels=tuple(int(v) for v in node),
        status=status,
        searched=searched,
        loss=float(result.metric.normalized(node, classes)),
        losses={name: float(m.normalized(node, classes)) for name, m in metrics.items()},
        suppressed=int(assessment.suppressed_records),
        classes=int(released.size),
        min_class_size=int(released.min()) if released.size else 0,
        prosecutor_max=float(1.0 / released.min()) if released.size else 0.0,
        prosecutor_mean=float(released.size / n_out) if n_out else 0.0,
    )
    return figures, (sizes.astype(np.int64), counts.astype(np.int64))


def lattice_view(
    result: AnonymizationResult,
    population_size: int | None = None,
    max_nodes: int = MAX_NODES,
    progress: Callable[[int], None] | None = None,
) -> LatticeView:
    """The :class:`LatticeView` of a fitted run (see the module docstring).

    ``progress(done)`` is called every 256 nodes evaluated.
    """
    if max_nodes < 1:
        raise InputError(f"max_nodes: expected at least 1, got {max_nodes}")
    table, evaluator = result.table, result.evaluator
    lattice = table.lattice
    searched: set[Node] = set(result.failing)
    metrics = metrics_for(result.metric)  # the optimized metric as minimized (weights included)
    complete = lattice.size <= max_nodes
    figures: list[NodeFigures] = []
    sizes: dict[tuple[int, ...], tuple[np.ndarray, np.ndarray]] = {}

    def add(classes: Classes) -> None:
        fig, pairs = _figures(result, classes, metrics, classes.node in searched)
        figures.append(fig)
        sizes[fig.levels] = pairs
        if progress is not None and len(figures) % 256 == 0:
            progress(len(figures))

    if complete:
        for classes in evaluator.iter_classes():
            add(classes)
    else:
        wanted: list[Node] = []
        for node in (result.node, lattice.bottom, *sorted(searched)):
            if node is not None and node not in wanted:
                wanted.append(node)
        for node in wanted[:max_nodes]:
            add(evaluator.classes(node))
    figures.sort(key=lambda n: (n.height, n.levels))
    if progress is not None:
        progress(len(figures))
    return LatticeView(
        quasi_identifiers=tuple(table.qi_names),
        heights=tuple(lattice.heights),
        size=lattice.size,
        metric=result.metric.label,
        records=table.n_records,
        max_suppression=result.criterion.max_suppression,
        optimum=tuple(result.node) if result.node is not None else None,
        complete=complete,
        population_size=population_size,
        nodes=figures,
        class_sizes=sizes,
        algorithm=str(result.search.algorithm),
        suppression_allowed=int(result.criterion.suppression_limit(table.n_records)),
        node_models=tuple(_described(m) for m in result.criterion.models if isinstance(m, NodePrivacyModel)),
        level_labels={
            name: hierarchy_labels(hierarchy)
            for name, hierarchy in zip(table.qi_names, table.hierarchies, strict=True)
        },
    )


def _described(model: NodePrivacyModel) -> str:
    """A node-wide model in the words of :meth:`LatticeView.why_not`: a risk threshold with its
    measure and bound (``the risk threshold B <= 0.05``), another by its name."""
    threshold, measure = getattr(model, "threshold", None), getattr(model, "measure", None)
    if isinstance(threshold, float) and isinstance(measure, str):
        return f"the risk threshold {measure} <= {number(threshold)}"
    return model.name


def hierarchy_labels(hierarchy: Hierarchy, first: int = LABELS_SHOWN) -> list[dict[str, Any]]:
    """Per level of a hierarchy: how many groups it has and its ``first`` labels (each at most
    :data:`LABEL_CHARS` characters). Level 0 lists none: its labels are the records' own values,
    never shown on the Explore screen (the Data screen's hierarchy preview is where a custodian
    reads the scheme); the levels above are the generalization scheme's groups."""
    out: list[dict[str, Any]] = []
    for level in range(hierarchy.height + 1):
        labels = list(hierarchy.labels(level))
        shown = [] if level == 0 else [label[:LABEL_CHARS] for label in labels[:first]]
        out.append({"count": len(labels), "labels": shown})
    return out


def node_detail(view: LatticeView, levels: Sequence[int] | str) -> dict[str, Any]:
    """One node's figures, its generalization in the hierarchies' labels
    (:meth:`LatticeView.labels_of`), why it does not qualify (:meth:`LatticeView.why_not`), whether
    it ties with the optimum's loss (with the search's tie-break), and the histogram of its
    released class sizes and their risk
    (:func:`~safeshare.risk.report_risk.side`,
    the report's risk section for that node: same N, exact where the input is the population)."""
    figures = view.node(levels)
    doc = figures.to_dict()
    doc["quasi_identifiers"] = list(view.quasi_identifiers)
    doc["records"] = view.records
    doc["generalization"] = view.labels_of(figures.levels)
    doc["why_not"] = view.why_not(figures)
    ties = view.ties()
    doc["tie"] = any(n.levels == figures.levels for n in ties)
    doc["tie_rule"] = view.tie_rule() if doc["tie"] else None
    pairs = view.class_sizes.get(figures.levels)
    if pairs is None:
        doc["risk"], doc["histogram"] = None, []
        return doc
    doc["histogram"] = size_histogram(pairs[0], pairs[1])
    released = np.repeat(pairs[0], pairs[1])
    exact = view.population_size is None
    n = view.records if exact else int(view.population_size or 0)
    doc["risk"] = side(released, n, exact) if released.size else None
    return doc


__all__ = [
    "DEFAULT_ESTIMATOR",
    "LIST_STATUSES",
    "MAX_NODES",
    "TIE_RULES",
    "LatticeView",
    "NodeFigures",
    "hierarchy_labels",
    "lattice_view",
    "node_detail",
    "parse_node",
    "size_histogram",
]
