"""The classifier of the learning task: logistic regression as in thesis §5.3.

Pipeline (scikit-learn), fitted on a training set and applied unchanged to the
test set:

* numeric features: mode imputation (``SimpleImputer(strategy="most_frequent")``,
  the thesis' "value with the most occurrences in their column"), then
  standardization ``z = (x - mean) / std`` (``StandardScaler``);
* categorical features: mode imputation, then one-hot encoding; a test
  category the training set never showed (e.g. a label whose records were
  all suppressed) gets the all-zero indicator vector (``handle_unknown="ignore"``);
* L2-regularized logistic regression, ``min_w  1/2 ||w||^2 + C sum_i log(1 + exp(-y_i x_i.w))``
  with ``C = 1`` (scikit-learn's default), solved with ``newton-cholesky``:
  a deterministic Newton method that suits many records and few (one-hot)
  features; it converges on UCI Adult in a handful of iterations, so no
  randomness and no convergence warning. ``random_state`` is fixed anyway
  for solvers that would use it.

The one-hot design matrix stays sparse, and BLAS runs on one thread while
fitting and predicting. On the sparse pipeline this changes nothing measurable
(``benchmarks/bench_sweep.py``: 0.99x-1.25x). It guards the dense products: on a
busy 2-core machine one dense 32,561 x 175 product took 1.55 s with two BLAS
threads and 0.11 s with one.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd
from sklearn.compose import ColumnTransformer
from sklearn.exceptions import ConvergenceWarning
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler
from threadpoolctl import threadpool_limits  # type: ignore[import-untyped]

from safeshare.errors import InputError
from safeshare.utility.features import FeatureSpec

SOLVERS = ("newton-cholesky", "lbfgs", "liblinear", "newton-cg", "sag", "saga")


@dataclass(frozen=True)
class LogisticRegressionSpec:
    """Parameters of the logistic regression (validated when built).

    Parameters
    ----------
    C: inverse L2 regularization strength (> 0).
    solver: a scikit-learn solver; ``newton-cholesky`` by default (see the module docstring).
    max_iter: iteration cap (>= 1); not reaching convergence is reported, never hidden.
    tol: stopping tolerance (> 0).
    random_state: seed for solvers that shuffle (``sag``, ``saga``, ``liblinear``).
    """

    C: float = 1.0
    solver: str = "newton-cholesky"
    max_iter: int = 1000
    tol: float = 1e-6
    random_state: int = 0

    def __post_init__(self) -> None:
        if not (isinstance(self.C, int | float) and self.C > 0):
            raise InputError(f"classifier C must be > 0, got {self.C!r}")
        if self.solver not in SOLVERS:
            raise InputError(f"unknown solver {self.solver!r}; expected one of {', '.join(SOLVERS)}")
        if isinstance(self.max_iter, bool) or not isinstance(self.max_iter, int) or self.max_iter < 1:
            raise InputError(f"classifier max_iter must be an integer >= 1, got {self.max_iter!r}")
        if not (isinstance(self.tol, int | float) and self.tol > 0):
            raise InputError(f"classifier tol must be > 0, got {self.tol!r}")

    def params(self) -> dict[str, Any]:
        return {"model": "logistic_regression", "penalty": "l2", **asdict(self)}


def build_pipeline(spec: FeatureSpec, classifier: LogisticRegressionSpec) -> Pipeline:
    """The unfitted preprocessing + logistic regression pipeline for ``spec``'s features."""
    parts: list[tuple[str, Any, list[str]]] = []
    if spec.numeric:
        numeric = Pipeline([("impute", SimpleImputer(strategy="most_frequent")), ("scale", StandardScaler())])
        parts.append(("numeric", numeric, list(spec.numeric)))
    if spec.categorical:
        categorical = Pipeline(
            [
                ("impute", SimpleImputer(strategy="most_frequent")),
                ("onehot", OneHotEncoder(handle_unknown="ignore")),
            ]
        )
        parts.append(("categorical", categorical, list(spec.categorical)))
    model = LogisticRegression(
        C=classifier.C,
        solver=classifier.solver,
        max_iter=classifier.max_iter,
        tol=classifier.tol,
        random_state=classifier.random_state,
    )
    return Pipeline([("features", ColumnTransformer(parts, remainder="drop")), ("model", model)])


@dataclass(frozen=True)
class ClassifierScore:
    """Accuracy of a pipeline trained on one training set and applied to the test set.

    Attributes
    ----------
    accuracy: share of test records predicted correctly.
    train_records: records the classifier was trained on.
    test_records: records it was evaluated on.
    classes: the classes of the training set (the only ones it can predict).
    confusion: ``confusion[true][predicted]`` record counts on the test set.
    n_iter: solver iterations.
    converged: whether the solver converged within ``max_iter``.
    """

    accuracy: float
    train_records: int
    test_records: int
    classes: tuple[str, ...]
    confusion: dict[str, dict[str, int]]
    n_iter: int
    converged: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "accuracy": self.accuracy,
            "train_records": self.train_records,
            "test_records": self.test_records,
            "classes": list(self.classes),
            "confusion": self.confusion,
            "n_iter": self.n_iter,
            "converged": self.converged,
        }


def fit_and_score(
    spec: FeatureSpec,
    classifier: LogisticRegressionSpec,
    x_train: pd.DataFrame,
    y_train: pd.Series,
    x_test: pd.DataFrame,
    y_test: pd.Series,
) -> ClassifierScore:
    """Fit the pipeline on the training set and return its accuracy on the test set.

    Raises :class:`InputError` when the training set has fewer than two classes.
    """
    classes: Sequence[str] = sorted(pd.unique(y_train.astype(str)))
    if len(classes) < 2:
        only = repr(classes[0]) if classes else "none"
        raise InputError(
            f"the training set has a single class of {spec.target!r} ({only}); a classifier needs two or more"
        )
    pipeline = build_pipeline(spec, classifier)
    with threadpool_limits(limits=1, user_api="blas"):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ConvergenceWarning)
            pipeline.fit(x_train, y_train.to_numpy(dtype=object))
        predicted = np.asarray(pipeline.predict(x_test), dtype=object)
    converged = not any(issubclass(w.category, ConvergenceWarning) for w in caught)
    truth = y_test.to_numpy(dtype=object)
    accuracy = float(np.mean(predicted == truth)) if truth.size else float("nan")
    labels = sorted(set(classes) | set(truth.tolist()))
    confusion = {t: {p: 0 for p in labels} for t in labels}
    for t, p in zip(truth.tolist(), predicted.tolist(), strict=True):
        confusion[str(t)][str(p)] += 1
    n_iter = int(np.max(pipeline.named_steps["model"].n_iter_))
    return ClassifierScore(
        accuracy=accuracy,
        train_records=len(y_train),
        test_records=len(y_test),
        classes=tuple(classes),
        confusion=confusion,
        n_iter=n_iter,
        converged=converged,
    )
