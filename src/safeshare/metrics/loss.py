"""Information loss metrics (thesis §5.1).

All three are computed *before suppression*, so they are monotone along the
lattice (never decrease when a QI is generalized), which OLA needs to keep
only the k-minimal nodes (thesis §4.3.2, §5.1). Suppression is bounded by the
suppression limit instead.

* **Prec** (Sweeney 2002): ``Prec(n) = sum_i w_i * l_i / h_i / sum_i w_i`` over
  the QIs with ``h_i > 0`` (all ``w_i = 1`` by default). 0 at the bottom, 1 at
  the top; it depends on the node only.
* **DM*** (El Emam et al. 2009): ``DM*(n) = sum_E |E|^2`` over the equivalence
  classes of the node. Also reported minus its value at the bottom node, as in
  the thesis' Fig. 6.1.
* **Non-uniform entropy** (De Waal & Willenborg 1999):
  ``H(n) = - sum_records sum_i log2 P[x_i | r_i]`` with
  ``P[a | a'] = count(a) / count(a')`` estimated from column counts, i.e. per QI
  ``- sum_v c(v) log2(c(v) / c(g_l(v)))``. It depends only on the marginals.

``normalized`` maps a value to [0, 1] between the bottom and the top node.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Mapping
from fractions import Fraction

import numpy as np

from safeshare.config import vocabulary
from safeshare.core.evaluation import Classes, Evaluator
from safeshare.core.lattice import Node
from safeshare.errors import InputError


class InformationLoss(ABC):
    """A monotone information loss metric, bound to an :class:`Evaluator`."""

    name: str = "loss"
    #: Whether the value needs the node's equivalence classes.
    needs_classes: bool = False

    def __init__(self, evaluator: Evaluator) -> None:
        self.evaluator = evaluator
        self._lower: float | None = None
        self._upper: float | None = None

    @abstractmethod
    def value(self, node: Node, classes: Classes | None = None) -> float:
        """The metric at ``node`` (``classes`` may be passed to avoid re-evaluation)."""

    @property
    def label(self) -> str:
        """The metric as every view names it: its name, and its parameters when it has any
        (a weighted Prec says so: its figures are not those of the unweighted one)."""
        return self.name

    @property
    def lower(self) -> float:
        """The value at the bottom node (the least possible)."""
        if self._lower is None:
            self._lower = self.value(self.evaluator.lattice.bottom)
        return self._lower

    @property
    def upper(self) -> float:
        """The value at the top node (the largest possible)."""
        if self._upper is None:
            self._upper = self.value(self.evaluator.lattice.top)
        return self._upper

    def node_array(self) -> np.ndarray | None:
        """The value at every node as an array indexed by the node, when it
        depends on the node alone (``None`` when it needs the classes)."""
        return None

    def normalized(self, node: Node, classes: Classes | None = None) -> float:
        """``(value - lower) / (upper - lower)``, in [0, 1] (0 when the range is empty)."""
        return self.normalize(self.value(node, classes))

    def normalize(self, value: float) -> float:
        span = self.upper - self.lower
        if span <= 0:
            return 0.0
        return min(1.0, max(0.0, (value - self.lower) / span))


class Prec(InformationLoss):
    """Sweeney's precision loss, optionally weighted per QI (thesis §5.1, §6.1.3)."""

    name = "prec"

    def __init__(self, evaluator: Evaluator, weights: Mapping[str, float] | None = None) -> None:
        super().__init__(evaluator)
        names = evaluator.table.qi_names
        weights = dict(weights or {})
        unknown = set(weights) - set(names)
        if unknown:
            raise InputError(f"prec weight for unknown quasi-identifier {sorted(unknown)[0]!r}")
        self.weights = weights
        """The configured per-QI weights (unlisted QIs weigh 1)."""
        self._heights = [h.height for h in evaluator.table.hierarchies]
        self._weights = [Fraction(weights.get(n, 1.0)) for n in names]
        if any(w < 0 for w in self._weights):
            raise InputError("prec weights must be >= 0")
        self._total = sum(
            (w for w, h in zip(self._weights, self._heights, strict=True) if h > 0), Fraction(0)
        )
        # Exact arithmetic on integers: Prec(n) = sum_i c_i l_i / d with c_i = w_i / h_i * d / total
        # over a common denominator d, so that c_i and d are integers. Python's int / int is
        # correctly rounded, hence equal to float(Fraction(...)) of the exact value.
        parts = [w / h if h > 0 else Fraction(0) for w, h in zip(self._weights, self._heights, strict=True)]
        scale = math.lcm(1, *(f.denominator for f in parts))
        self._coefficients = [int(f * scale) for f in parts]
        total = self._total * scale
        self._denominator = total.numerator
        self._coefficients = [c * total.denominator for c in self._coefficients]

    @property
    def label(self) -> str:
        """``prec``, or ``prec, weighted (age 2, sex 0.5)`` with configured weights."""
        if not self.weights:
            return self.name
        return f"{self.name}, weighted ({weights_text(self.weights)})"

    def value(self, node: Node, classes: Classes | None = None) -> float:
        if self._total == 0:
            return 0.0
        numerator = sum(c * lv for c, lv in zip(self._coefficients, node, strict=True))
        return numerator / self._denominator

    @property
    def lower(self) -> float:
        return 0.0

    def node_array(self) -> np.ndarray:
        """Every node's value, equal to :meth:`value` (exact integer numerators when they fit 2**53)."""
        if self._total == 0:
            return np.zeros(tuple(h + 1 for h in self._heights))
        largest = sum(c * h for c, h in zip(self._coefficients, self._heights, strict=True))
        if largest < 2**53 and self._denominator < 2**53:
            parts = [
                np.arange(h + 1, dtype=np.float64) * c
                for c, h in zip(self._coefficients, self._heights, strict=True)
            ]
            return _outer_sum(parts) / float(self._denominator)
        out = np.empty(tuple(h + 1 for h in self._heights))
        for node in np.ndindex(*out.shape):
            out[node] = self.value(node)
        return out


class DMStar(InformationLoss):
    """DM* = sum of squared class sizes, before suppression (El Emam et al. 2009)."""

    name = "dm_star"
    needs_classes = True

    def value(self, node: Node, classes: Classes | None = None) -> float:
        if classes is None or classes.node != node:
            classes = self.evaluator.classes(node)
        return float(classes.dm_star)


class NonUniformEntropy(InformationLoss):
    """Non-uniform entropy ``-sum_records sum_i log2 P[x_i | r_i]`` (thesis §5.1)."""

    name = "entropy"

    def __init__(self, evaluator: Evaluator) -> None:
        super().__init__(evaluator)
        table = evaluator.table
        self._per_level: list[list[float]] = []
        for i, h in enumerate(table.hierarchies):
            leaf = table.marginal(i, 0).astype(np.float64)
            # parent code (at level l) of every level-0 code
            first_leaf = np.zeros(h.size(0), dtype=np.int64)
            first_leaf[h.leaf_codes(0)] = np.arange(len(h.leaves))
            values = []
            for level in range(h.height + 1):
                up = table.marginal(i, level).astype(np.float64)
                parent = h.leaf_codes(level)[first_leaf]
                nz = leaf > 0
                values.append(float(-(leaf[nz] * np.log2(leaf[nz] / up[parent[nz]])).sum()))
            self._per_level.append(values)

    def value(self, node: Node, classes: Classes | None = None) -> float:
        return math.fsum(self._per_level[i][lv] for i, lv in enumerate(node))

    def node_array(self) -> np.ndarray:
        return _outer_sum([np.asarray(v, dtype=np.float64) for v in self._per_level])


def _outer_sum(parts: list[np.ndarray]) -> np.ndarray:
    """``out[l_1, ..., l_q] = sum_i parts[i][l_i]`` by broadcasting."""
    q = len(parts)
    out = np.zeros(tuple(len(p) for p in parts), dtype=np.float64)
    for i, p in enumerate(parts):
        shape = [1] * q
        shape[i] = len(p)
        out += p.reshape(shape)
    return out


#: The class of every metric of the vocabulary, by its name (the names and their order are
#: :data:`safeshare.config.vocabulary.METRICS`: tests/test_vocabulary.py checks that they agree).
METRICS: dict[str, type[InformationLoss]] = {cls.name: cls for cls in (Prec, DMStar, NonUniformEntropy)}


def metric_name(name: str) -> str:
    """Canonical metric name (:func:`safeshare.config.vocabulary.metric_name`: the aliases of the
    configuration file too), or :class:`InputError` listing the choices."""
    key = vocabulary.metric_name(name) if isinstance(name, str) else None
    if key is None:
        raise InputError(vocabulary.unknown_metric(name))
    return key


def make_metric(
    name: str, evaluator: Evaluator, weights: Mapping[str, float] | None = None
) -> InformationLoss:
    """Instantiate the metric called ``name`` on ``evaluator``."""
    key = metric_name(name)
    if key == "prec":
        return Prec(evaluator, weights)
    if weights:
        raise InputError("per-QI weights are supported by the prec metric only")
    return METRICS[key](evaluator)


def weights_text(weights: Mapping[str, float]) -> str:
    """``age 2, sex 0.5``: per-QI weights as the labels of every view write them."""
    return ", ".join(f"{name} {float(w):g}" for name, w in weights.items())


def metrics_for(optimized: InformationLoss) -> dict[str, InformationLoss]:
    """Every metric of :data:`METRICS` on ``optimized``'s evaluator, with ``optimized`` itself
    under its own name: the metric a search minimized (a weighted Prec) is reported as it was
    minimized, never replaced by its unweighted namesake (issue 30, item 13)."""
    evaluator = optimized.evaluator
    return {key: optimized if key == optimized.name else make_metric(key, evaluator) for key in METRICS}


def all_metric_values(
    evaluator: Evaluator,
    node: Node,
    classes: Classes | None = None,
    optimized: InformationLoss | None = None,
) -> dict[str, float]:
    """Every metric's raw and normalized value at ``node`` (for reports).

    ``optimized``: the metric the search minimized; its value stands under its name (a weighted
    Prec's, not the unweighted one's: :func:`metrics_for`).
    """
    out: dict[str, float] = {}
    classes = classes if classes is not None and classes.node == node else evaluator.classes(node)
    metrics = (
        metrics_for(optimized) if optimized is not None else {k: make_metric(k, evaluator) for k in METRICS}
    )
    for key, m in metrics.items():
        v = m.value(node, classes)
        out[key] = v
        out[f"{key}_normalized"] = m.normalize(v)
    dm = make_metric("dm_star", evaluator)
    out["dm_star_minus_bottom"] = out["dm_star"] - dm.lower
    return out
