"""Utility measured by a classifier (thesis §5.3, §6.1.2).

The accuracy is checked against an independent reimplementation that reads
the WRITTEN release from disk and the hierarchy files with the csv module,
so that a mismatch between the training set and the release, or between the
node and the test-set generalization, cannot go unnoticed.
"""

from __future__ import annotations

import csv
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.compose import ColumnTransformer
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

from safeshare.config import ConfigFile, load_config
from safeshare.data.engines.memory import MemoryEngine
from safeshare.data.schema import Attribute, Role, Schema
from safeshare.errors import DataError, InputError
from safeshare.models import KAnonymity
from safeshare.utility import LogisticRegressionSpec, UtilityTask, heldout_source, read_test_set
from safeshare.utility.features import clean_labels, design_frame, infer_features, missing_tokens
from safeshare.utility.testset import generalize_frame, uncovered_values
from safeshare.utility.thesis import (
    BASELINE_ACCURACY,
    TABLE_6_1,
    TABLE_6_1_K,
    TABLE_6_1_METRICS,
    TABLE_6_1_SUPPRESSION_PCT,
    thesis_accuracy,
)
from safeshare.workflows.anonymizer import Anonymizer
from safeshare.workflows.publish import write_release
from safeshare.workflows.release import ReleaseContext
from tests.conftest import ADULT_DIR, ADULT_QIS, random_hierarchy

NUMERIC = ("capital-gain", "capital-loss", "hours-per-week")


# --------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def adult_config() -> ConfigFile:
    return load_config(ADULT_DIR / "adult.yaml")


@pytest.fixture(scope="module")
def full_task(adult_config: ConfigFile) -> UtilityTask:
    test = read_test_set(heldout_source(adult_config.source, ADULT_DIR / "adult.test", skip_rows=1))
    return UtilityTask(adult_config.schema, MemoryEngine(adult_config.source), test, "income")


@pytest.fixture(scope="module")
def slice_task(adult_config: ConfigFile) -> UtilityTask:
    """The first 4,000 training and 2,000 test records."""
    train = MemoryEngine(adult_config.source)
    train.frame = train.frame.iloc[:4000].reset_index(drop=True)
    test = read_test_set(heldout_source(adult_config.source, ADULT_DIR / "adult.test", skip_rows=1))
    return UtilityTask(adult_config.schema, train, test.iloc[:2000].reset_index(drop=True), "income")


# --------------------------------------------------------------------------- features
def test_adult_features(full_task: UtilityTask) -> None:
    f = full_task.features
    assert f.numeric == NUMERIC
    assert f.categorical == tuple(ADULT_QIS)
    assert "fnlwgt" not in f.features and "education-num" not in f.features and "income" not in f.features
    assert f.missing == frozenset({"", "?"})
    assert full_task.classes == ("<=50K", ">50K")
    assert full_task.train_records == 32561 and full_task.test_records == 16281


TOKENS = st.sampled_from(["1", "2.5", "-3", "1e3", "abc", "x1", "?", "", "NaN", "inf"])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(TOKENS, min_size=3, max_size=3), min_size=1, max_size=12))
def test_feature_rule(rows: list[list[str]]) -> None:
    """numeric iff every non-missing value is a finite number; QIs always categorical;
    columns with no value ignored (property over random columns)."""
    frame = pd.DataFrame(rows, columns=["a", "b", "q"]).assign(
        y=["u", "v"] * (len(rows) // 2) + ["u"] * (len(rows) % 2)
    )
    h = random_hierarchy(np.random.default_rng(0), 3, 1, "q")
    schema = Schema.from_attributes(
        [Attribute("q", Role.QUASI, h), Attribute("y", Role.INSENSITIVE)], Role.INSENSITIVE
    )
    kinds = {c: _expected_kind(frame, c) for c in ("a", "b", "q")}
    if set(kinds.values()) == {"ignored"}:
        with pytest.raises(InputError, match="no feature column"):
            infer_features(frame, schema, "y", missing_tokens(["?"]))
        return
    spec = infer_features(frame, schema, "y", missing_tokens(["?"]))
    for column, kind in kinds.items():
        got = (
            "numeric"
            if column in spec.numeric
            else "categorical"
            if column in spec.categorical
            else "ignored"
        )
        assert got == kind, (column, list(frame[column]))


def _expected_kind(frame: pd.DataFrame, column: str) -> str:
    present = [v for v in frame[column] if v not in ("", "?")]
    if not present:
        return "ignored"
    if column == "q":
        return "categorical"
    return "numeric" if all(_finite(v) for v in present) else "categorical"


def _finite(v: str) -> bool:
    try:
        return math.isfinite(float(v))
    except ValueError:
        return False


def test_design_frame_missing_and_bad_numbers() -> None:
    frame = pd.DataFrame({"n": ["1", "?", ""], "c": ["a", "?", "b"], "y": ["p", "q", "p"]})
    schema = Schema.from_attributes([Attribute("y", Role.INSENSITIVE)], Role.INSENSITIVE)
    spec = infer_features(frame, schema, "y", missing_tokens(["?"]))
    x = design_frame(frame, spec)
    assert x["n"].tolist()[0] == 1.0 and x["n"].isna().tolist() == [False, True, True]
    assert x["c"].isna().tolist() == [False, True, False]
    with pytest.raises(DataError, match=r"column 'n' is numeric .* record 2 holds 'abc'"):
        design_frame(frame.assign(n=["1", "abc", "2"]), spec, "test.csv")


def test_target_labels() -> None:
    labels = pd.Series([">50K.", "<=50K", "a.b.", "x"])
    assert clean_labels(labels, True).tolist() == [">50K", "<=50K", "a.b", "x"]
    assert clean_labels(labels, False).tolist() == labels.tolist()


# --------------------------------------------------------------------------- test-set generalization
@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), extra=st.lists(st.sampled_from(["zz", "?", "q0"]), max_size=5))
def test_generalize_frame_follows_hierarchy(seed: int, extra: list[str]) -> None:
    rng = np.random.default_rng(seed)
    hs = [random_hierarchy(rng, int(rng.integers(1, 6)), int(rng.integers(1, 4)), f"q{j}") for j in range(2)]
    values = [list(rng.choice(list(h.leaves), size=8)) + extra for h in hs]
    n = max(len(v) for v in values)
    frame = pd.DataFrame({f"q{j}": (v * n)[:n] for j, v in enumerate(values)})
    node = tuple(int(rng.integers(0, h.height + 1)) for h in hs)
    out = generalize_frame(frame, ["q0", "q1"], hs, node)
    uncovered = uncovered_values(frame, ["q0", "q1"], hs)
    for j, h in enumerate(hs):
        col = f"q{j}"
        n_bad = 0
        for original, generalized in zip(frame[col], out[col], strict=True):
            if original in h.leaf_index:
                assert generalized == h.generalize(original, node[j])
            else:
                assert isinstance(generalized, float) and math.isnan(generalized)
                n_bad += 1
        assert (uncovered[col].records if col in uncovered else 0) == n_bad


# --------------------------------------------------------------------------- reproducibility and invariants
def test_reproducible_on_a_slice(adult_config: ConfigFile, slice_task: UtilityTask) -> None:
    anonymizer = Anonymizer(adult_config.schema, [KAnonymity(10)], max_suppression=0.05, metric="entropy")
    result = anonymizer.fit(slice_task.train)
    first = slice_task.evaluate(result)
    # a fresh task on the same data: same training set, same fit, same predictions
    again = UtilityTask(adult_config.schema, slice_task.train, slice_task.test.copy(), "income").evaluate(
        Anonymizer(adult_config.schema, [KAnonymity(10)], max_suppression=0.05, metric="entropy").fit(
            slice_task.train
        )
    )
    assert first.node == again.node
    assert first.accuracy == again.accuracy
    assert first.classifier.confusion == again.classifier.confusion
    assert first.classifier.converged and first.classifier.n_iter >= 1
    assert first.train_records == slice_task.train_records - result.suppressed_records


def test_bottom_node_equals_baseline(adult_config: ConfigFile, slice_task: UtilityTask) -> None:
    """k = 1 without suppression releases the original QIs: the classifier must not change."""
    result = Anonymizer(adult_config.schema, [KAnonymity(1)], max_suppression=0.0, metric="prec").fit(
        slice_task.train
    )
    assert result.node == (0,) * 9
    score = slice_task.evaluate(result)
    assert score.accuracy == slice_task.baseline().accuracy
    assert score.classifier.confusion == slice_task.baseline().confusion


def _hierarchy_maps(directory: Path) -> dict[str, list[list[str]]]:
    out = {}
    for qi in ADULT_QIS:
        with (directory / f"{qi}.csv").open(newline="") as fh:
            out[qi] = [[c.strip() for c in row] for row in csv.reader(fh, delimiter=";") if row]
    return out


def test_accuracy_equals_independent_pipeline_on_written_release(
    adult_config: ConfigFile, slice_task: UtilityTask, tmp_path: Path
) -> None:
    """Reference: train on release.csv as written and verified, generalize the test set from
    the hierarchy files with plain Python, fit the thesis' pipeline written out here."""
    result = Anonymizer(adult_config.schema, [KAnonymity(5)], max_suppression=0.05, metric="dm_star").fit(
        slice_task.train
    )
    # the run's warnings that contradict its headline, acknowledged (issue 33)
    acknowledged = ReleaseContext(accepted_warnings=("kept-column-identifying", "subgroup-suppressed"))
    published = write_release(result, slice_task.train, tmp_path / "rel", context=acknowledged)
    score = slice_task.evaluate(result)

    release = pd.read_csv(published.release, dtype=str, keep_default_na=False)
    assert len(release) == score.train_records
    levels = published.report["levels"]
    rows = _hierarchy_maps(ADULT_DIR / "hierarchies")
    test = slice_task.test.copy()
    for qi in ADULT_QIS:
        mapping = {r[0]: r[levels[qi]] for r in rows[qi]}
        test[qi] = [mapping[v] for v in test[qi]]

    def prep(frame: pd.DataFrame) -> pd.DataFrame:
        x = pd.DataFrame({c: pd.to_numeric(frame[c]).astype(float) for c in NUMERIC})
        for qi in ADULT_QIS:
            x[qi] = frame[qi].astype(object).where(frame[qi] != "?", np.nan)
        return x

    pipe = Pipeline(
        [
            (
                "prep",
                ColumnTransformer(
                    [
                        (
                            "n",
                            Pipeline(
                                [("i", SimpleImputer(strategy="most_frequent")), ("s", StandardScaler())]
                            ),
                            list(NUMERIC),
                        ),
                        (
                            "c",
                            Pipeline(
                                [
                                    ("i", SimpleImputer(strategy="most_frequent")),
                                    ("o", OneHotEncoder(handle_unknown="ignore")),
                                ]
                            ),
                            ADULT_QIS,
                        ),
                    ]
                ),
            ),
            ("lr", LogisticRegression(solver="newton-cholesky", C=1.0, tol=1e-6, max_iter=1000)),
        ]
    )
    pipe.fit(prep(release), release["income"].to_numpy(dtype=object))
    truth = test["income"].str.rstrip(".").to_numpy(dtype=object)
    reference = float(np.mean(pipe.predict(prep(test)) == truth))
    assert score.accuracy == pytest.approx(reference, abs=1e-12)
    # unseen categories: generalized test values absent from the release, per column
    for qi in ADULT_QIS:
        seen = set(release[qi]) - {"?"}
        n = int(sum(1 for v in test[qi] if v != "?" and v not in seen))
        assert score.test_unseen_categories.get(qi, 0) == n


def test_values_outside_the_hierarchy_are_imputed_and_reported(
    adult_config: ConfigFile, slice_task: UtilityTask
) -> None:
    test = slice_task.test.copy()
    test.loc[:9, "native-country"] = "Atlantis"
    test.loc[10:12, "native-country"] = "Utopia"
    task = UtilityTask(adult_config.schema, slice_task.train, test, "income")
    result = Anonymizer(adult_config.schema, [KAnonymity(5)], max_suppression=0.05, metric="prec").fit(
        slice_task.train
    )
    score = task.evaluate(result)
    report = score.test_values_not_in_hierarchy["native-country"]
    assert report.records == 13 and report.values == {"Atlantis": 10, "Utopia": 3}
    assert set(score.test_values_not_in_hierarchy) == {"native-country"}
    assert 0.7 < score.accuracy <= 1.0


def test_majority_and_baseline_on_adult(full_task: UtilityTask) -> None:
    """Thesis §6.1.2: 0.8519 on the original data; ours must be within [0.84, 0.86]."""
    baseline = full_task.baseline()
    assert 0.84 <= baseline.accuracy <= 0.86, baseline.accuracy
    assert baseline.converged and baseline.train_records == 32561 and baseline.test_records == 16281
    labels = pd.read_csv(ADULT_DIR / "adult.test", skiprows=1, header=None, skipinitialspace=True)[14]
    assert full_task.majority_accuracy() == pytest.approx(float((labels == "<=50K.").mean()))
    assert abs(baseline.accuracy - BASELINE_ACCURACY) < 0.01


# --------------------------------------------------------------------------- bad input
def test_bad_tasks(adult_config: ConfigFile, slice_task: UtilityTask) -> None:
    schema, train, test = adult_config.schema, slice_task.train, slice_task.test
    cases: list[tuple[str, dict[str, object], str]] = [
        ("incme", {}, "unknown target column 'incme'"),
        ("fnlwgt", {}, "role 'identifying' and is not released"),
        ("age", {}, "is a quasi-identifier"),
        ("income", {"strip_target_dot": False}, r"target label '<=50K\.' is not a class"),
    ]
    for target, options, message in cases:
        with pytest.raises(InputError, match=message):
            UtilityTask(schema, train, test, target, **options)  # type: ignore[arg-type]
    with pytest.raises(DataError, match="lacks column 'income'"):
        UtilityTask(schema, train, test.drop(columns=["income"]), "income")
    with pytest.raises(DataError, match="has column 'extra'"):
        UtilityTask(schema, train, test.assign(extra="1"), "income")
    one_class = MemoryEngine(train.frame[train.frame["income"] == "<=50K"].reset_index(drop=True))
    with pytest.raises(InputError, match="single class"):
        UtilityTask(schema, one_class, test, "income")
    with pytest.raises(DataError, match="'hours-per-week' is numeric"):
        UtilityTask(schema, train, test.assign(**{"hours-per-week": "forty"}), "income")
    with pytest.raises(InputError, match="solver"):
        LogisticRegressionSpec(solver="magic")
    with pytest.raises(InputError, match="skip"):
        heldout_source(adult_config.source, ADULT_DIR / "adult.test", skip_rows=-1)


def test_test_file_with_more_fields_than_names(adult_config: ConfigFile, tmp_path: Path) -> None:
    bad = tmp_path / "wide.test"
    lines = (ADULT_DIR / "adult.test").read_text().splitlines()[1:20]
    bad.write_text("\n".join(f"{line}, extra" for line in lines) + "\n")
    with pytest.raises(DataError, match=r"wide.test line 1: 16 fields, expected 15"):
        read_test_set(replace(adult_config.source, path=bad))


# --------------------------------------------------------------------------- Table 6.1 (slow)
@pytest.mark.slow
def test_table_6_1_grid_all_above_080(adult_config: ConfigFile, full_task: UtilityTask) -> None:
    """Thesis Table 6.1: every accuracy of the grid stays above 0.80 (printed next to the thesis')."""
    from safeshare.core.evaluation import Evaluator
    from safeshare.workflows.anonymizer import build_frequency_table

    table, _ = build_frequency_table(full_task.train, adult_config.schema)
    evaluator = Evaluator(table)
    lines = [f"{'k':>4} {'sup%':>5} {'metric':>8} {'ours':>7} {'thesis':>7}"]
    accuracies = {}
    for k in TABLE_6_1_K:
        for pct in TABLE_6_1_SUPPRESSION_PCT:
            for metric in TABLE_6_1_METRICS:
                result = Anonymizer(
                    adult_config.schema, [KAnonymity(k)], max_suppression=pct / 100, metric=metric
                ).fit_table(table, evaluator=evaluator)
                score = full_task.evaluate(result)
                assert score.classifier.converged
                accuracies[(k, pct, metric)] = score.accuracy
                theirs = thesis_accuracy(k, pct, metric)
                lines.append(f"{k:>4} {pct:>5g} {metric:>8} {score.accuracy:>7.4f} {theirs:>7.4f}")
    print("\n" + "\n".join(lines))
    assert set(accuracies) == set(TABLE_6_1)
    assert min(accuracies.values()) >= 0.80, accuracies
