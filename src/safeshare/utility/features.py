"""Features of the learning task: which released columns feed the classifier, and how (thesis §5.3).

The thesis trains a logistic regression on the released columns of UCI Adult
(§5.3, "Learning task"): "numerical features are normalized by subtracting
their mean and dividing by the standard deviation. Missing values (present in
the training set) are filled with the value with the most occurrences in
their column. Finally, categorical values are transformed to a one-hot
encoding".

Which column is which, stated once and applied to every training set of a
task (the original data and each release):

* **features** = the released columns (identifying and free-text columns are
  never released) minus the target;
* **categorical**: every quasi-identifier (a generalized label such as
  ``20:29`` is a category, even at level 0 where the value still parses as a
  number) and every other column with a value that does not parse as a number;
* **numeric**: a non-QI column whose non-missing values all parse as finite
  numbers, on the original training data;
* **missing**: the empty string and the task's missing tokens (``?`` by
  default, plus the configuration's ``input.missing``); they become ``NaN`` and
  the pipeline imputes them with the training column's mode;
* a column with no non-missing value in the training data carries no
  information and is ignored (reported).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from safeshare.data.schema import Schema
from safeshare.errors import DataError, InputError

#: Missing tokens of the learning task when none are given (UCI Adult writes ``?``).
DEFAULT_MISSING: tuple[str, ...] = ("?",)


@dataclass(frozen=True)
class FeatureSpec:
    """The columns of a learning task and their treatment.

    Attributes
    ----------
    target: the predicted column.
    numeric: standardized numeric features.
    categorical: one-hot encoded features (every quasi-identifier is one).
    ignored: released columns without any non-missing training value.
    missing: tokens read as missing (always including the empty string).
    """

    target: str
    numeric: tuple[str, ...]
    categorical: tuple[str, ...]
    ignored: tuple[str, ...]
    missing: frozenset[str]

    @property
    def features(self) -> tuple[str, ...]:
        return self.numeric + self.categorical

    def to_dict(self) -> dict[str, list[str]]:
        return {
            "numeric": list(self.numeric),
            "categorical": list(self.categorical),
            "ignored": list(self.ignored),
            "missing_tokens": sorted(self.missing),
        }


def missing_tokens(*groups: Iterable[str]) -> frozenset[str]:
    """The union of the given token groups and the empty string."""
    out = {""}
    for group in groups:
        out.update(str(t) for t in group)
    return frozenset(out)


def _parses_as_number(values: pd.Series) -> pd.Series:
    numbers = pd.to_numeric(values, errors="coerce")
    return pd.Series(np.isfinite(numbers.to_numpy(dtype=np.float64, na_value=np.nan)), index=values.index)


def infer_features(frame: pd.DataFrame, schema: Schema, target: str, missing: frozenset[str]) -> FeatureSpec:
    """Classify the released columns of the original training ``frame`` (see the module docstring).

    Raises :class:`InputError` when the target is not a released, non-QI
    column of ``frame`` or when no feature is left.
    """
    columns = list(frame.columns)
    if target not in columns:
        raise InputError(f"unknown target column {target!r}: the data has columns {', '.join(columns)}")
    role = schema.role(target)
    if not role.released:
        raise InputError(
            f"target column {target!r} has role {role.value!r} and is not released; "
            "predict a sensitive or insensitive column"
        )
    if target in schema.quasi_identifiers:  # a quasi column, or a shifted date with a hierarchy
        raise InputError(
            f"target column {target!r} is a quasi-identifier (it would be generalized); "
            "predict a sensitive or insensitive column"
        )
    qis = set(schema.quasi_identifiers)
    numeric: list[str] = []
    categorical: list[str] = []
    ignored: list[str] = []
    for column in schema.released_columns(columns):
        if column == target:
            continue
        values = frame[column].astype(str)
        present = values[~values.isin(missing)]
        if present.empty:
            ignored.append(column)
        elif column in qis or not bool(_parses_as_number(present).all()):
            categorical.append(column)
        else:
            numeric.append(column)
    if not numeric and not categorical:
        raise InputError(f"no feature column left to predict {target!r} from")
    return FeatureSpec(target, tuple(numeric), tuple(categorical), tuple(ignored), missing)


def design_frame(frame: pd.DataFrame, spec: FeatureSpec, source: str = "the data") -> pd.DataFrame:
    """The feature columns of ``frame`` ready for the pipeline: floats for numerics,
    objects for categoricals, ``NaN`` for missing values.

    Raises :class:`DataError` naming ``source``, the column and the value when
    a numeric feature holds a value that is not a number.
    """
    out: dict[str, pd.Series] = {}
    for column in spec.numeric:
        values = frame[column].astype(object).where(frame[column].notna(), "").astype(str)
        is_missing = values.isin(spec.missing)
        numbers = pd.to_numeric(values.where(~is_missing, None), errors="coerce").astype(np.float64)
        bad = ~is_missing & ~np.isfinite(numbers.to_numpy(na_value=np.nan))
        if bool(bad.any()):
            first = int(np.flatnonzero(bad.to_numpy())[0])
            raise DataError(
                f"{source}: column {column!r} is numeric in the training data but record {first + 1} "
                f"holds {values.iloc[first]!r}"
            )
        out[column] = numbers
    for column in spec.categorical:
        raw = frame[column]
        values = raw.astype(object).where(raw.notna(), "").astype(str).astype(object)
        out[column] = values.where(~values.isin(spec.missing), np.nan)
    return pd.DataFrame(out, index=frame.index)


def clean_labels(values: pd.Series, strip_dot: bool) -> pd.Series:
    """Target labels as text, with one trailing ``.`` removed when ``strip_dot``
    (``adult.test`` writes ``>50K.`` where ``adult.data`` writes ``>50K``)."""
    labels = values.astype(str).str.strip()
    if strip_dot:
        labels = labels.where(~labels.str.endswith("."), labels.str[:-1])
    return labels.astype(object)


def check_test_labels(train_classes: Sequence[str], test_labels: pd.Series, source: str) -> None:
    """Every test label must be a class the classifier can predict."""
    known = set(train_classes)
    unknown = sorted(set(test_labels) - known)
    if unknown:
        shown = ", ".join(repr(c) for c in sorted(known))
        hint = ""
        if unknown[0].endswith(".") and unknown[0][:-1] in known:
            hint = "; UCI Adult's adult.test ends its labels with '.': use --strip-target-dot"
        raise InputError(
            f"{source}: target label {unknown[0]!r} is not a class of the training data ({shown}){hint}"
        )
