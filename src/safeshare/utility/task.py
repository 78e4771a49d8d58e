"""Utility measured by a classifier: the learning task of thesis §5.3 (results in §6.1.2, Table 6.1).

The anonymization runs on the training set only; a classifier is trained on
the *release* (generalized, suppressed records removed, identifying columns
dropped) and evaluated on the untouched test set generalized with the same
node, without suppression (:mod:`safeshare.utility.testset`). The reference
points are the same classifier trained on the original training data
(``baseline_accuracy``; thesis: 0.8519 on UCI Adult) and the majority class
of the original training data (``majority_accuracy``).

::

    task = UtilityTask(schema, MemoryEngine(train_source), test_frame, target="income")
    result = Anonymizer(schema, [KAnonymity(25)], 0.1, "entropy").fit(task.train)
    task.evaluate(result).accuracy      # e.g. 0.83
    task.baseline().accuracy            # e.g. 0.854

What the accuracy means, and does not mean: it measures how well one
classifier, fitted to this release, predicts one column of records that were
not in it. It is not a property of the release alone (another model or
target can rank releases differently), it says nothing about the privacy of
the release, and the test records themselves are *not* anonymized (thesis
§5.3: "learning algorithms are to be trained on anonymized data, but run on
non-anonymous data").
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import pandas as pd

from safeshare.core.frequency import FrequencyTable
from safeshare.core.lattice import Node
from safeshare.data.engines.base import ReleasePlan
from safeshare.data.engines.memory import MemoryEngine, read_frame
from safeshare.data.schema import Schema
from safeshare.data.source import TableSource
from safeshare.errors import DataError, InputError, VerificationError
from safeshare.hierarchy.builders import FileBuilder
from safeshare.hierarchy.hierarchy import Hierarchy
from safeshare.models.base import PrivacyCriterion
from safeshare.utility.classifier import ClassifierScore, LogisticRegressionSpec, fit_and_score
from safeshare.utility.features import (
    DEFAULT_MISSING,
    FeatureSpec,
    check_test_labels,
    clean_labels,
    design_frame,
    infer_features,
    missing_tokens,
)
from safeshare.utility.testset import Uncovered, generalize_frame, uncovered_values


class AnonymizationResult(Protocol):
    """What a utility task reads of an anonymization.

    :class:`safeshare.workflows.anonymizer.AnonymizationResult` satisfies it; a
    Protocol so that this package does not import the workflow that uses it.
    """

    @property
    def node(self) -> Node | None: ...
    @property
    def table(self) -> FrequencyTable: ...
    @property
    def criterion(self) -> PrivacyCriterion: ...
    @property
    def levels(self) -> dict[str, int]: ...
    @property
    def records_in(self) -> int: ...
    @property
    def suppressed_records(self) -> int: ...
    def release_plan(self, columns: Sequence[str]) -> ReleasePlan: ...
    def summary(self) -> dict[str, Any]: ...


def heldout_source(train: TableSource, path: str | Path, skip_rows: int = 0) -> TableSource:
    """The test file, read with the training input's options (names, header, delimiter,
    missing tokens, encoding) and its own ``skip_rows``; the format follows its extension."""
    if isinstance(skip_rows, bool) or not isinstance(skip_rows, int) or skip_rows < 0:
        raise InputError(f"--test-skip-rows: expected an integer >= 0, got {skip_rows!r}")
    return replace(train, path=Path(path), skip_rows=skip_rows, format=None)


def read_test_set(source: TableSource) -> pd.DataFrame:
    """Read the test file like the training data (text columns, missing tokens normalized).

    Raises :class:`DataError` when its lines have more fields than the
    configured names (pandas would silently turn the extra leading fields
    into a row index).
    """
    frame = read_frame(source)
    if not isinstance(frame.index, pd.RangeIndex):
        raise DataError(
            f"{source.path}: lines have more fields than the {frame.shape[1]} configured column names"
        )
    return frame


@dataclass(frozen=True)
class UtilityScore:
    """The classifier's accuracy on the test set after training on one release.

    Attributes
    ----------
    accuracy: share of test records predicted correctly.
    node: the release's node (also used to generalize the test set).
    levels: QI -> level of ``node``.
    classifier: the fitted classifier's figures (confusion matrix, iterations, ...).
    train_records: records of the release (= training records - suppressed).
    suppressed_records: training records removed by suppression.
    test_unseen_categories: per categorical feature, test records whose value
        (after generalization) never occurs in the release (all-zero one-hot).
    test_values_not_in_hierarchy: per QI, test values its hierarchy does not cover
        (imputed with the mode; see :mod:`safeshare.utility.testset`).
    elapsed_s: seconds to build the training set and to fit and score.
    """

    accuracy: float
    node: Node
    levels: dict[str, int]
    classifier: ClassifierScore
    train_records: int
    suppressed_records: int
    test_unseen_categories: dict[str, int]
    test_values_not_in_hierarchy: dict[str, Uncovered]
    elapsed_s: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "accuracy": self.accuracy,
            "node": list(self.node),
            "levels": self.levels,
            "train_records": self.train_records,
            "suppressed_records": self.suppressed_records,
            "classifier": self.classifier.to_dict(),
            "test_unseen_categories": self.test_unseen_categories,
            "test_values_not_in_hierarchy": {
                q: u.to_dict() for q, u in self.test_values_not_in_hierarchy.items()
            },
        }


class UtilityTask:
    """Classification accuracy of releases of one training set on one test set (thesis §5.3).

    Parameters
    ----------
    schema: column roles and QI hierarchies (those of the anonymization).
    train: the original training data (the releases are built from it).
    test: the test set as read (text columns, the same columns as ``train``).
    target: the predicted column: released and not a quasi-identifier.
    missing: tokens read as missing by the classifier, in addition to the
        empty string (default ``?``); imputed with the training mode.
    strip_target_dot: remove one trailing ``.`` from target labels (UCI
        Adult's test file writes ``>50K.``).
    classifier: the logistic regression's parameters.
    test_label: how errors name the test set (e.g. its path).

    Training records without a target value cannot be learned from and are
    left out of every fit (counted in ``train_records_missing_target``); a
    test record without one cannot be scored and is an error.

    Raises :class:`InputError` (exit status 2 on the command line) when the
    target is unknown, not released or a QI, has fewer than two classes in the
    training data, when a test label is not a training class, or when the test
    set's columns differ from the training set's.
    """

    def __init__(
        self,
        schema: Schema,
        train: MemoryEngine,
        test: pd.DataFrame,
        target: str,
        missing: Iterable[str] = DEFAULT_MISSING,
        strip_target_dot: bool = True,
        classifier: LogisticRegressionSpec | None = None,
        test_label: str = "the test set",
    ) -> None:
        self.schema = schema
        self.train = train
        self.target = target
        self.strip_target_dot = bool(strip_target_dot)
        self.classifier = classifier or LogisticRegressionSpec()
        self.test_label = test_label
        train_columns = train.columns()
        test_columns = [str(c) for c in test.columns]
        if sorted(test_columns) != sorted(train_columns):
            extra = [c for c in test_columns if c not in train_columns]
            absent = [c for c in train_columns if c not in test_columns]
            what = f"has column {extra[0]!r} not in" if extra else f"lacks column {absent[0]!r} of"
            raise DataError(f"{test_label} {what} the training data (columns must be the same)")
        if test.empty:
            raise DataError(f"{test_label}: no records")
        self.features: FeatureSpec = infer_features(train.frame, schema, target, missing_tokens(missing))
        self._train_labels = clean_labels(train.frame[target], self.strip_target_dot)
        known = ~self._train_labels.isin(self.features.missing)
        classes = sorted(pd.unique(self._train_labels[known]))
        if len(classes) < 2:
            only = repr(classes[0]) if classes else "none"
            raise InputError(
                f"target column {target!r} has a single class in the training data ({only}); "
                "a classifier needs two or more"
            )
        self.classes: tuple[str, ...] = tuple(str(c) for c in classes)
        self.train_missing_target = int((~known).sum())
        labels = clean_labels(test[target], self.strip_target_dot)
        unlabeled = np.flatnonzero(labels.isin(self.features.missing).to_numpy())
        if unlabeled.size:
            raise DataError(
                f"{test_label}: record {int(unlabeled[0]) + 1} has no value for the target {target!r} "
                f"({unlabeled.size} such record(s)); every test record must be labeled "
                "(a comment or header line? see --test-skip-rows)"
            )
        self.test = test.reset_index(drop=True)
        self.y_test = labels.reset_index(drop=True)
        check_test_labels(self.classes, self.y_test, test_label)
        # the original test features (baseline) are parsed now so that bad values fail early
        self._x_test_original = design_frame(self.test, self.features, test_label)
        self._qi_names = schema.quasi_identifiers
        self._x_test_at: dict[Node, tuple[pd.DataFrame, dict[str, Uncovered]]] = {}
        self._scores: dict[tuple[Node, tuple[tuple[str, ...], ...]], ClassifierScore] = {}
        self._baseline: ClassifierScore | None = None

    # ------------------------------------------------------------------ reference points
    @property
    def train_records(self) -> int:
        return self.train.n_records()

    @property
    def test_records(self) -> int:
        return len(self.y_test)

    def baseline(self) -> ClassifierScore:
        """The classifier trained on the original training data (released columns, no
        generalization, no suppression) and tested on the original test set."""
        if self._baseline is None:
            frame = self.train.frame
            y, keep = self._labels(frame)
            x = design_frame(frame.loc[keep.to_numpy()], self.features, "the training data")
            self._baseline = fit_and_score(
                self.features, self.classifier, x, y, self._x_test_original, self.y_test
            )
        return self._baseline

    def majority_accuracy(self) -> float:
        """Accuracy of always predicting the most frequent class of the original training data."""
        y, _ = self._labels(self.train.frame)
        counts = y.value_counts()
        top = sorted(counts[counts == counts.max()].index)[0]
        return float((self.y_test == top).mean())

    # ------------------------------------------------------------------ releases
    def evaluate(self, result: AnonymizationResult) -> UtilityScore:
        """Train on the release of ``result`` and score on the test set generalized with its node.

        ``result`` must come from an anonymization of :attr:`train` with this
        task's schema. Results with the same node and the same suppressed
        classes share one fit.
        """
        if result.node is None:
            raise InputError("no node satisfies the privacy models within the suppression limit")
        start = time.perf_counter()
        plan = result.release_plan(self.train.columns())
        release = self.train.generalized_frame(plan)
        self._check_release(result, release)
        node = result.node
        x_test, uncovered = self._test_at(node, result)
        built = time.perf_counter() - start
        key = (node, tuple(sorted(map(tuple, plan.suppressed.astype(str).itertuples(index=False)))))
        y, keep = self._labels(release)
        x_train = design_frame(release.loc[keep.to_numpy()], self.features, "the release")
        score = self._scores.get(key)
        if score is None:
            score = fit_and_score(self.features, self.classifier, x_train, y, x_test, self.y_test)
            self._scores[key] = score
        unseen = {}
        for column in self.features.categorical:
            seen = set(x_train[column].dropna())
            test_values = x_test[column]
            n = int((test_values.notna() & ~test_values.isin(seen)).sum())
            if n:
                unseen[column] = n
        return UtilityScore(
            accuracy=score.accuracy,
            node=node,
            levels=result.levels,
            classifier=score,
            train_records=len(release),
            suppressed_records=result.suppressed_records,
            test_unseen_categories=unseen,
            test_values_not_in_hierarchy=uncovered,
            elapsed_s={"build": built, "fit_score": time.perf_counter() - start - built},
        )

    def describe(self) -> dict[str, Any]:
        """The task's settings and reference points, for utility.json and sweep.json."""
        baseline = self.baseline()
        return {
            "target": self.target,
            "classes": list(self.classes),
            "features": self.features.to_dict(),
            "strip_target_dot": self.strip_target_dot,
            "classifier": self.classifier.params(),
            "train_records": self.train_records,
            "test_records": self.test_records,
            "train_records_missing_target": self.train_missing_target,
            "baseline_accuracy": baseline.accuracy,
            "baseline": baseline.to_dict(),
            "majority_accuracy": self.majority_accuracy(),
        }

    # ------------------------------------------------------------------ internal
    def _labels(self, frame: pd.DataFrame) -> tuple[pd.Series, pd.Series]:
        labels = clean_labels(frame[self.target], self.strip_target_dot)
        keep = ~labels.isin(self.features.missing)
        return labels[keep].reset_index(drop=True), keep

    def _test_hierarchy(self, name: str, fitted: Hierarchy) -> Hierarchy:
        """The hierarchy that generalizes the test set: a hierarchy file is read lazily for the
        training values only, so its rows for the test values are read here too (same labels)."""
        spec = self.schema.hierarchy_spec(name)
        if not isinstance(spec, FileBuilder):
            return fitted
        values = set(fitted.leaves) | set(self.test[name].astype(str).unique())
        return spec.load(keep=values)

    def _test_at(self, node: Node, result: AnonymizationResult) -> tuple[pd.DataFrame, dict[str, Uncovered]]:
        hit = self._x_test_at.get(node)
        if hit is None:
            names = list(result.table.qi_names)
            if names != list(self._qi_names):
                raise InputError("the anonymization's quasi-identifiers differ from the task's schema")
            hierarchies = [
                self._test_hierarchy(n, h) for n, h in zip(names, result.table.hierarchies, strict=True)
            ]
            uncovered = uncovered_values(self.test, names, hierarchies)
            generalized = generalize_frame(self.test, names, hierarchies, node)
            hit = (design_frame(generalized, self.features, self.test_label), uncovered)
            self._x_test_at[node] = hit
        return hit

    def _check_release(self, result: AnonymizationResult, release: pd.DataFrame) -> None:
        """The training set must be the release the search promised (records, k)."""
        expected = result.records_in - result.suppressed_records
        if len(release) != expected:
            raise VerificationError(
                f"the training release has {len(release)} records, the search expected {expected}"
            )
        ks = [int(getattr(m, "k", 1)) for m in result.criterion.models if m.name == "k-anonymity"]
        if ks and len(release):
            smallest = int(release.groupby(list(self._qi_names), sort=False).size().min())
            if smallest < max(ks):
                raise VerificationError(
                    f"the training release has a class of {smallest} records, fewer than k = {max(ks)}"
                )


def utility_document(
    task: UtilityTask, result: AnonymizationResult, score: UtilityScore, extra: Mapping[str, Any]
) -> dict[str, Any]:
    """The content of utility.json: accuracy, references, the node and the search's figures."""
    summary = result.summary()
    doc: dict[str, Any] = {
        "accuracy": score.accuracy,
        **task.describe(),
        "accuracy_minus_baseline": score.accuracy - task.baseline().accuracy,
        "node": list(score.node),
        "levels": score.levels,
        "metric": summary["metric"],
        "information_loss": summary["information_loss"],
        "information_loss_normalized": summary["information_loss_normalized"],
        "loss": summary["loss"],
        "privacy": summary["privacy"],
        "max_suppression": result.criterion.max_suppression,
        "records_in": result.records_in,
        "suppressed_records": score.suppressed_records,
        "release_records": score.train_records,
        "min_class_size": summary["min_class_size"],
        "equivalence_classes": summary["equivalence_classes"],
        "checked_nodes": summary["checked_nodes"],
        "lattice_size": summary["lattice_size"],
        "algorithm": summary["algorithm"],
        "release_classifier": score.classifier.to_dict(),
        "test_unseen_categories": score.test_unseen_categories,
        "test_values_not_in_hierarchy": {
            q: u.to_dict() for q, u in score.test_values_not_in_hierarchy.items()
        },
    }
    for key, value in extra.items():
        doc.setdefault(key, value)
    return doc
