"""The per-record risk (risk/record_risk.py) and the ``record`` measure of the risk privacy model."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from safeshare.config.algorithms import make_strategy
from safeshare.core.evaluation import Evaluator
from safeshare.metrics.loss import make_metric
from safeshare.models.base import PrivacyCriterion
from safeshare.models.risk import RecordRiskThreshold
from safeshare.risk.record_risk import (
    class_size_record_risk,
    copula_record_risk,
    expected_inverse_shifted_binomial,
    smallest_safe_class,
)
from safeshare.search.context import SearchContext
from tests.conftest import examples, generalized_frame, random_table
from tests.test_ola import BruteForce


# (p below 1e-12: scipy's binomial pmf, the oracle, overflows near the smallest floats)
@given(f=st.integers(1, 60), m=st.integers(0, 3000), p=st.one_of(st.just(0.0), st.floats(1e-12, 1.0)))
@settings(max_examples=150, deadline=None)
def test_quadrature_equals_the_direct_sum(f: int, m: int, p: float) -> None:
    y = np.arange(m + 1)
    direct = float((stats.binom.pmf(y, m, p) / (f + y)).sum())
    got = float(expected_inverse_shifted_binomial(np.array([f]), m, np.array([p]))[0])
    assert got == pytest.approx(direct, rel=1e-9, abs=1e-14)


def test_class_size_risk_decreases_and_the_floor_is_the_smallest_safe_size() -> None:
    for p in (0.01, 0.1, 0.5, 1.0):
        r = class_size_record_risk(np.arange(1, 400), p)
        assert (np.diff(r) < 0).all()
        for t in (0.5, 0.09, 0.02):
            f = smallest_safe_class(t, p)
            assert class_size_record_risk(np.array([f]), p)[0] <= t + 1e-12
            if f > 1:
                assert class_size_record_risk(np.array([f - 1]), p)[0] > t
    assert smallest_safe_class(0.2, 1.0) == 5  # 1/f <= 0.2


def brute_optimum(table, model: RecordRiskThreshold, limit: float, metric: str):  # type: ignore[no-untyped-def]
    cap = math.floor(limit * table.n_records + 1e-9)
    p = model.sampling_fraction(table.n_records)
    brute = BruteForce(table, (1,))
    qualifying = set()
    for node in table.lattice.nodes():
        sizes = generalized_frame(table, node).groupby(list(table.qi_names)).size().to_numpy()
        risk = class_size_record_risk(sizes, p)  # the rule written directly: per record, no floor
        if sizes[risk > model.threshold + 1e-12].sum() <= cap:
            qualifying.add(node)
    best = min((brute.loss(metric, n) for n in qualifying), default=None)
    return qualifying, best


@given(
    seed=st.integers(0, 2**32 - 1),
    threshold=st.sampled_from([0.5, 0.2, 0.09, 0.03]),
    limit=st.sampled_from([0.0, 0.1, 0.3]),
    metric=st.sampled_from(["prec", "dm_star", "entropy"]),
    factor=st.sampled_from([None, 2, 10]),
)
@settings(max_examples=examples(40, 15), deadline=None)
def test_record_model_search_equals_exhaustive_search(
    seed: int, threshold: float, limit: float, metric: str, factor: int | None
) -> None:
    rng = np.random.default_rng(seed)
    table = random_table(rng, int(rng.integers(1, 4)), int(rng.integers(5, 120)))
    model = RecordRiskThreshold(threshold, None if factor is None else table.n_records * factor)
    assert model.monotone_with_suppression and model.monotone_without_suppression
    ev = Evaluator(table)
    try:
        model.validate(table)
    except Exception:
        return  # the threshold needs classes larger than the input: refused up front
    ctx = SearchContext(table, ev, PrivacyCriterion([model], limit), make_metric(metric, ev))
    result = make_strategy("ola").run(ctx)
    qualifying, best = brute_optimum(table, model, limit, metric)
    if best is None:
        assert result.node is None
        return
    assert result.node in qualifying
    assert result.objective == pytest.approx(best, rel=1e-12, abs=1e-9)


@pytest.mark.slow  # make test-all: a statistical check on Adult (issue 36)
def test_copula_record_risk_predicts_population_uniqueness_on_adult() -> None:
    """Rocher et al.'s per-record uniqueness, fitted on a 10 % sample, ranks the sample's
    population uniques first (AUC well above chance; the study is tools/attack_study.py)."""
    import pandas as pd
    from sklearn.metrics import roc_auc_score

    from safeshare.risk.classes import SampleTable
    from tests.conftest import ADULT_COLUMNS, ADULT_DIR

    pop = pd.read_csv(
        ADULT_DIR / "adult.data", header=None, names=ADULT_COLUMNS, skipinitialspace=True, dtype=str
    )
    qi = ["age", "sex", "race", "marital-status", "education"]
    sample = pop.sample(frac=0.1, random_state=5)
    F = pop.groupby(qi).size().rename("F")
    table = SampleTable.from_frame(sample, qi)
    fitted = copula_record_risk(table, len(pop), random_state=1)
    keys = pd.MultiIndex.from_arrays(
        [[table.categories[c][k] for k in table.codes[:, c]] for c in range(len(qi))]
    )
    truth = (F.reindex(keys).to_numpy() == 1).repeat(table.counts)
    score = fitted.uniqueness.repeat(table.counts)
    assert roc_auc_score(truth, score) >= 0.9
    # kappa is a probability, at most 1/f and at least 1/(f + N - n)
    f = table.counts
    assert (fitted.correctness <= 1 / f + 1e-12).all()
    assert (fitted.correctness >= 1 / (f + len(pop) - table.n) - 1e-12).all()
