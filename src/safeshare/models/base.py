"""Privacy models and the suppression-limit criterion built from them.

A privacy model says, for every equivalence class of a node, whether the
class is acceptable (e.g. k-anonymity: ``|E| >= k``). Records of unacceptable
classes are suppressed (removed from the release). A node *qualifies* when
the suppressed records are at most ``max_suppression * N`` (thesis §4.3.1;
ARX's suppression limit).

A model is *monotone* when, for every suppression limit, a qualifying node's
generalizations qualify too; then predictive tagging applies (thesis §4.3.2).
k-anonymity and distinct l-diversity are monotone: merging classes never
creates a failing class from passing ones, nor increases the records in
failing classes. Models with only the generalization property (entropy
l-diversity, t-closeness) are monotone without suppression only.

A :class:`NodePrivacyModel` judges the released records of a node as a whole
(e.g. "the estimated re-identification risk B of the release is at most
0.09", :mod:`safeshare.models.risk`): it rejects no single class, and a node it
rejects qualifies at no suppression limit.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from safeshare.core.evaluation import Classes, Evaluator
from safeshare.core.frequency import FrequencyTable
from safeshare.core.lattice import Node
from safeshare.errors import InputError
from safeshare.numerics import suppression_limit

if TYPE_CHECKING:
    from safeshare.data.schema import Schema

BoolArray = npt.NDArray[np.bool_]


class PrivacyModel(ABC):
    """A per-class acceptance rule."""

    #: Short name used in configs and reports (e.g. ``k-anonymity``).
    name: str = "model"
    #: Monotone along generalization for every suppression limit.
    monotone_with_suppression: bool = True
    #: Monotone along generalization when nothing may be suppressed.
    monotone_without_suppression: bool = True
    #: The rule counts records, not people (a distribution or an estimate over records): refused
    #: when the input holds several records per person (issue 32; :meth:`PrivacyCriterion.validate`).
    counts_records: bool = False

    @abstractmethod
    def acceptable(self, classes: Classes, table: FrequencyTable) -> BoolArray:
        """Boolean per class slot of ``classes.sizes``: whether the class may be released."""

    def class_size_floor(self) -> int | None:
        """``t`` when the model rejects exactly the classes of fewer than ``t`` records (``k`` for
        k-anonymity): its failing records are then :meth:`Evaluator.records_below`'s count,
        which needs no class table. ``None`` (the default) for any other rule. With a person key
        the floor is in people, and the criterion counts from the class table instead."""
        return None

    def failing_records(self, classes: Classes, table: FrequencyTable) -> int:
        """Records in the classes this model rejects."""
        sizes = classes.sizes
        return int((sizes * ~self.acceptable(classes, table)).sum())

    def validate(self, table: FrequencyTable) -> None:  # noqa: B027 - optional hook
        """Raise :class:`InputError` if the model cannot apply to ``table``."""

    @property
    def sensitive_columns(self) -> tuple[str, ...]:
        """Sensitive columns whose values the model needs in the frequency table."""
        return ()

    @abstractmethod
    def params(self) -> dict[str, Any]:
        """The model's parameters, for reports."""

    def bind(self, schema: Schema) -> PrivacyModel:
        """The model applied to ``schema`` (e.g. to its sensitive columns); by default itself."""
        return self

    def achieved(self, classes: Classes, table: FrequencyTable, released: BoolArray) -> dict[str, Any]:
        """What the ``released`` classes achieve, for reports (default: nothing to add)."""
        return {}

    def verification_params(self, table: FrequencyTable) -> dict[str, Any]:
        """What the independent verifier needs to re-check the model (default: :meth:`params`).

        Facts about the input that the release alone cannot show (e.g. the
        input's distribution of a sensitive column for t-closeness) go here.
        """
        return self.params()

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.params().items())
        return f"{type(self).__name__}({args})"


class NodePrivacyModel(PrivacyModel):
    """A rule on a node's released records as a whole, not class by class.

    :class:`PrivacyCriterion` first lets the per-class models decide which
    classes are released, then asks :meth:`node_acceptable` about those. Such a
    model suppresses nothing itself (:meth:`acceptable` accepts every class).
    """

    def acceptable(self, classes: Classes, table: FrequencyTable) -> BoolArray:
        return np.ones(classes.sizes.shape[0], dtype=bool)

    @abstractmethod
    def node_acceptable(self, classes: Classes, table: FrequencyTable, released: BoolArray) -> bool:
        """Whether the node may be published, given ``released`` (per class slot) by the other models."""


@dataclass(frozen=True)
class NodeAssessment:
    """How a node fares against the privacy models."""

    qualifies: bool
    suppressed_records: int
    acceptable: BoolArray


class PrivacyCriterion:
    """All privacy models at once, with a suppression limit: the search predicate.

    Parameters
    ----------
    models: the privacy models; a class is released only if every model accepts it.
    max_suppression: the largest fraction of records that may be suppressed, in [0, 1].
    """

    def __init__(self, models: Sequence[PrivacyModel], max_suppression: float) -> None:
        if not models:
            raise InputError("at least one privacy model is required")
        if not (isinstance(max_suppression, int | float) and 0.0 <= max_suppression <= 1.0):
            raise InputError(f"max_suppression must be in [0, 1], got {max_suppression!r}")
        self.models = tuple(models)
        self.max_suppression = float(max_suppression)
        # Cheap models (no sensitive columns) first, so that holds() can stop early.
        self._check_order = tuple(sorted(self.models, key=lambda m: bool(m.sensitive_columns)))
        self._node_models = tuple(m for m in self.models if isinstance(m, NodePrivacyModel))
        #: a single class-size floor (k-anonymity alone): the predicate is a count
        self._floor = self.models[0].class_size_floor() if len(self.models) == 1 else None

    @property
    def monotone(self) -> bool:
        """Whether predictive tagging is exact for this criterion."""
        if self.max_suppression == 0.0:
            return all(m.monotone_without_suppression for m in self.models)
        return all(m.monotone_with_suppression for m in self.models)

    def suppression_limit(self, n_records: int) -> int:
        """Largest number of records that may be suppressed: ``floor(max_suppression * N)``."""
        return suppression_limit(self.max_suppression, n_records)

    @property
    def sensitive_columns(self) -> tuple[str, ...]:
        out: list[str] = []
        for m in self.models:
            out.extend(c for c in m.sensitive_columns if c not in out)
        return tuple(out)

    def validate(self, table: FrequencyTable) -> None:
        for m in self.models:
            if m.counts_records and table.persons is not None and table.n_people < table.n_records:
                raise InputError(
                    f"{m.name} counts records, and the input holds several records per person "
                    f"({table.n_people:,} people, {table.n_records:,} records, by {table.persons.column!r}): "
                    "it is not yet defined in people; k-anonymity, distinct l-diversity and "
                    "profile-anonymity count people"
                )
            m.validate(table)

    def assess(self, classes: Classes, table: FrequencyTable) -> NodeAssessment:
        ok = self.models[0].acceptable(classes, table)
        for m in self.models[1:]:
            ok = ok & m.acceptable(classes, table)
        suppressed = int((classes.sizes * ~ok).sum())
        qualifies = suppressed <= self.suppression_limit(classes.n_records)
        if qualifies:
            qualifies = all(m.node_acceptable(classes, table, ok) for m in self._node_models)
        return NodeAssessment(qualifies=qualifies, suppressed_records=suppressed, acceptable=ok)

    def failing_count(self, classes: Classes, table: FrequencyTable) -> int:
        """Records the per-class models suppress at the node, or ``n_records + 1`` when a
        node-level model rejects it: the node qualifies iff this is within the limit, at every limit."""
        if len(self.models) == 1 and not self._node_models:
            return int(self.models[0].failing_records(classes, table))
        ok = self.models[0].acceptable(classes, table)
        for m in self.models[1:]:
            ok = ok & m.acceptable(classes, table)
        if not all(m.node_acceptable(classes, table, ok) for m in self._node_models):
            return classes.n_records + 1
        return int((classes.sizes * ~ok).sum())

    def failing_at(self, evaluator: Evaluator, node: Node) -> int:
        """:meth:`failing_count` of the node's classes, for k-anonymity alone counted by
        :meth:`Evaluator.records_below` without building the class table (the same integer)."""
        if self._floor is not None and evaluator.table.persons is None:
            return evaluator.records_below(node, self._floor)
        return self.failing_count(evaluator.classes(node), evaluator.table)

    def holds_at(self, evaluator: Evaluator, node: Node) -> bool:
        """:meth:`holds` at ``node`` (the search predicate), for k-anonymity alone from
        :meth:`Evaluator.records_below`'s count without building the class table."""
        if self._floor is not None and evaluator.table.persons is None:  # records: a count
            return evaluator.records_below(node, self._floor) <= self.suppression_limit(
                evaluator.table.n_records
            )
        return self.holds(evaluator.classes(node), evaluator.table)

    def holds(self, classes: Classes, table: FrequencyTable) -> bool:
        """Whether the node of ``classes`` qualifies (the search predicate)."""
        limit = self.suppression_limit(classes.n_records)
        if len(self.models) == 1 and not self._node_models:
            return self.models[0].failing_records(classes, table) <= limit
        ok: BoolArray | None = None
        for m in self._check_order:
            if isinstance(m, NodePrivacyModel):
                continue
            accepted = m.acceptable(classes, table)
            ok = accepted if ok is None else ok & accepted
            if int((classes.sizes * ~ok).sum()) > limit:
                return False
        released = np.ones(classes.sizes.shape[0], dtype=bool) if ok is None else ok
        return all(m.node_acceptable(classes, table, released) for m in self._node_models)

    def params(self) -> dict[str, Any]:
        return {
            "models": {m.name: m.params() for m in self.models},
            "max_suppression": self.max_suppression,
        }
