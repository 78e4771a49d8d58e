"""The ``risk`` privacy model: estimated B / A / population uniques at most a threshold.

The search result must equal a brute-force optimum over the whole lattice (class sizes from
pandas on the generalized records, not from the evaluator), and the verifier must recompute
the risk from the written file and catch a tampered release.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from safeshare.config.algorithms import make_strategy
from safeshare.core.evaluation import Evaluator
from safeshare.core.frequency import FrequencyTable
from safeshare.data.engines.base import ReleasePlan
from safeshare.data.engines.memory import MemoryEngine
from safeshare.data.schema import Attribute, Role, Schema
from safeshare.errors import ConfigError, InputError, VerificationError
from safeshare.hierarchy.hierarchy import Hierarchy
from safeshare.metrics.loss import make_metric
from safeshare.models import KAnonymity, PrivacyCriterion
from safeshare.models.registry import make_model
from safeshare.models.risk import RiskThreshold
from safeshare.risk import release_risk as release_risk_module
from safeshare.risk.classes import ClassSizeHistogram
from safeshare.risk.estimators import ESTIMATORS, make_estimator
from safeshare.risk.estimators.base import RiskEstimator
from safeshare.risk.release_risk import check_estimator, histogram_estimators, release_risk
from safeshare.search.context import SearchContext
from safeshare.verify import expectations_for, verify_release
from safeshare.workflows.anonymizer import Anonymizer
from safeshare.workflows.publish import write_release
from tests.conftest import TamperingEngine, examples, generalized_frame, random_table
from tests.test_ola import BruteForce


def brute_value(sizes: np.ndarray, N: int, measure: str, estimator: str) -> float:
    if sizes.size == 0:
        return 0.0
    if measure == "A":
        return sizes.size / N
    fitted = make_estimator(estimator).fit(ClassSizeHistogram.from_sizes(sizes), N)
    value = fitted.B_ if measure == "B" else fitted.population_uniqueness_
    return float("nan") if value is None else float(value)


def brute_optimum(
    table: FrequencyTable, k: int, model: RiskThreshold, limit: float, metric: str
) -> tuple[set[tuple[int, ...]], float | None]:
    cap = math.floor(limit * table.n_records + 1e-9)
    N = model.population(table)
    brute = BruteForce(table, (1,))
    qualifying = set()
    for node in table.lattice.nodes():
        frame = generalized_frame(table, node)
        sizes = frame.groupby(list(table.qi_names)).size().to_numpy(dtype=np.int64)
        released = sizes[sizes >= k]
        if sizes[sizes < k].sum() > cap:
            continue
        value = brute_value(released, N, model.measure, model.estimator)
        if not math.isnan(value) and value <= model.threshold + 1e-9:
            qualifying.add(node)
    best = min((brute.loss(metric, n) for n in qualifying), default=None)
    return qualifying, best


@given(
    seed=st.integers(0, 2**32 - 1),
    measure=st.sampled_from(["B", "A", "uniques"]),
    threshold=st.sampled_from([0.05, 0.15, 0.4]),
    k=st.sampled_from([None, 2, 3]),
    limit=st.sampled_from([0.0, 0.1, 0.3]),
    metric=st.sampled_from(["prec", "dm_star", "entropy"]),
    estimator=st.sampled_from(["pitman", "dankar", "benedetti_franconi"]),
    factor=st.sampled_from([1, 3, 20]),
)
@settings(max_examples=examples(40, 12), deadline=None)
def test_ola_with_risk_equals_exhaustive_on_random_tables(
    seed: int,
    measure: str,
    threshold: float,
    k: int | None,
    limit: float,
    metric: str,
    estimator: str,
    factor: int,
) -> None:
    rng = np.random.default_rng(seed)
    table = random_table(rng, int(rng.integers(1, 4)), int(rng.integers(5, 80)))
    if measure == "uniques" and estimator == "benedetti_franconi":
        estimator = "pitman"
    model = RiskThreshold(threshold, measure, estimator, table.n_records * factor)
    models: list[object] = [model] if k is None else [KAnonymity(min(k, table.n_records)), model]
    ev = Evaluator(table)
    ctx = SearchContext(table, ev, PrivacyCriterion(models, limit), make_metric(metric, ev))  # type: ignore[arg-type]
    result = make_strategy("ola").run(ctx)
    qualifying, best = brute_optimum(table, k or 1, model, limit, metric)
    if best is None:
        assert result.node is None
        return
    assert result.node in qualifying
    assert result.objective == pytest.approx(best, rel=1e-12, abs=1e-9)
    if not (measure == "A" and limit == 0.0):
        assert result.extra["search"] == "best-first"


def test_a_is_monotone_without_suppression_only() -> None:
    a = PrivacyCriterion([RiskThreshold(0.1, "A")], 0.0)
    assert a.monotone
    assert not PrivacyCriterion([RiskThreshold(0.1, "A")], 0.05).monotone
    assert not PrivacyCriterion([RiskThreshold(0.1, "B")], 0.0).monotone


def test_node_rejection_holds_at_no_limit() -> None:
    """A node the risk model rejects does not qualify even when everything may be suppressed."""
    rng = np.random.default_rng(3)
    table = random_table(rng, 2, 40)
    ev = Evaluator(table)
    bottom = tuple(0 for _ in table.qi_names)
    classes = ev.classes(bottom)
    tight = RiskThreshold(1.0 / (table.n_records + 1), "A")
    criterion = PrivacyCriterion([KAnonymity(1), tight], 1.0)
    assert not criterion.holds(classes, table)
    assert not criterion.assess(classes, table).qualifies
    assert criterion.failing_count(classes, table) == table.n_records + 1
    loose = PrivacyCriterion([tight], 1.0)
    assert not loose.holds(classes, table)


def test_release_risk_limits() -> None:
    assert release_risk([], 100) == 0.0
    assert release_risk([0, 0], 100) == 0.0
    assert release_risk([2, 3, 0, 5], 100, "A") == pytest.approx(3 / 100)
    with pytest.raises(InputError, match="needs the frequency table"):
        release_risk([2, 3], 100, "B", "gaussian_copula")
    with pytest.raises(InputError, match="risk measure"):
        release_risk([2, 3], 100, "C")


def test_release_risk_passes_the_estimator_parameters() -> None:
    """``params`` reach the estimator: the hypothesis test's ``alpha`` changes B."""
    sizes = [1, 1, 1, 2, 2, 3, 5, 1, 1, 4]
    hist = ClassSizeHistogram.from_sizes(sizes)
    for alpha in (0.05, 0.5):
        expected = make_estimator("hypothesis_test", alpha=alpha).fit(hist, 100).B_
        assert release_risk(sizes, 100, "B", "hypothesis_test", {"alpha": alpha}) == expected
    assert release_risk(sizes, 100, "B", "hypothesis_test", {"alpha": 0.5}) != pytest.approx(
        release_risk(sizes, 100, "B", "hypothesis_test")
    )


def test_only_class_size_estimators_are_offered_for_a_release() -> None:
    names = histogram_estimators()
    assert names == sorted(n for n, cls in ESTIMATORS.items() if not cls.requires_table)
    assert "pitman" in names and "zayatz" in names
    assert not {"gaussian_copula", "dvine_copula", "average", "entropy"} & set(names)
    with pytest.raises(InputError, match=r"use one of benedetti_franconi, dankar, .*zayatz$"):
        check_estimator("entropy")


@pytest.mark.parametrize("measure", ["B", "uniques"])
@pytest.mark.parametrize("estimate", [-math.inf, math.inf, math.nan, -8.282e-07, 1.5, 1e-12])
def test_release_risk_without_a_valid_estimate_is_nan(
    monkeypatch: pytest.MonkeyPatch, measure: str, estimate: float
) -> None:
    """An estimator whose model gives a value that is not a possible B (not finite, negative,
    above 1, below 1/N) has no estimate: ``nan``, which no threshold accepts (``-inf`` or a
    negative B would pass every one). The check is the estimators' base class, so it holds
    for any estimator."""

    class Broken(RiskEstimator):
        name = "broken"

        def _fit(self, sample: object, hist: ClassSizeHistogram, N: int) -> None:
            self.B_ = estimate
            self.population_uniques_ = estimate * N

    if measure == "uniques" and 0 <= estimate <= 1:
        return  # a share of population uniques may be that small (only B has the floor 1/N)
    monkeypatch.setattr(release_risk_module, "make_estimator", lambda name, **params: Broken())
    assert math.isnan(release_risk([1, 2], 100, measure))
    value = release_risk_module.release_risk_estimate([1, 2], 100, measure)
    assert value.value is None and value.reason


def test_config_shape_is_validated() -> None:
    model = make_model("risk", {"threshold": 0.09, "estimator": "dankar", "population_size": 1000})
    assert isinstance(model, RiskThreshold)
    assert model.params() == {
        "measure": "B",
        "threshold": 0.09,
        "estimator": "dankar",
        "population_size": 1000,
    }
    default = make_model("risk", {})
    assert isinstance(default, RiskThreshold) and default.threshold == 0.09 and default.estimator == "pitman"
    for params, match in [
        ({"measure": "A"}, "missing threshold"),
        ({"measure": "C", "threshold": 0.1}, "measure"),
        ({"threshold": 0}, "threshold"),
        ({"threshold": 0.1, "estimator": "average"}, "needs the frequency table"),
        ({"threshold": 0.1, "estimator": "nope"}, "unknown estimator"),
        ({"population_size": -3}, "population_size"),
        ({"thresold": 0.1}, "thresold"),
    ]:
        with pytest.raises(ConfigError, match=match):
            make_model("risk", params)


def test_population_smaller_than_input_is_refused() -> None:
    table = random_table(np.random.default_rng(0), 2, 30)
    with pytest.raises(InputError, match="smaller than the input"):
        RiskThreshold(0.1, population_size=10).validate(table)


# ----------------------------------------------------------------------------- verification
@pytest.fixture()
def clinic() -> tuple[MemoryEngine, Schema]:
    age = Hierarchy([(str(a), f"{a // 10 * 10}s", "*") for a in range(20, 60)], "age")
    frame = pd.DataFrame(
        {
            "age": [str(20 + (i * 7) % 30) for i in range(80)],
            "diagnosis": [["flu", "cold"][i % 2] for i in range(80)],
        }
    )
    schema = Schema.from_attributes(
        [Attribute("age", Role.QUASI, age), Attribute("diagnosis", Role.SENSITIVE)]
    )
    return MemoryEngine(frame), schema


def to_a_new_class(frame: pd.DataFrame, plan: ReleasePlan) -> pd.DataFrame:
    """A :class:`TamperingEngine` edit: one record moves into a class of its own (a valid label)."""
    present = set(frame["age"])
    spare = next(a for a in ["20s", "30s", "40s", "50s", *map(str, range(20, 60))] if a not in present)
    frame.loc[0, "age"] = spare
    return frame


def test_release_with_risk_is_verified_and_tampering_caught(
    clinic: tuple[MemoryEngine, Schema], tmp_path: Path
) -> None:
    engine, schema = clinic
    model = RiskThreshold(3 / 80, "A")  # at most 3 classes among 80 people: the decades 20s, 30s, 40s
    result = Anonymizer(schema, [model], max_suppression=0.0).fit(engine)
    assert result.found
    published = write_release(result, engine, tmp_path / "ok")
    assert published.verification.passed
    release = pd.read_csv(published.release, dtype=str)
    assert release.groupby("age").ngroups == 3
    out = tmp_path / "bad"
    with pytest.raises(VerificationError, match="risk"):
        write_release(result, TamperingEngine(engine, to_a_new_class), out)
    assert not out.exists()


def test_verifier_recomputes_b_from_the_file(tmp_path: Path) -> None:
    path = tmp_path / "r.csv"
    ages = ["a"] * 6 + ["b"] * 3 + ["c", "d", "e"]
    pd.DataFrame({"q": ages}).to_csv(path, index=False)
    sizes = np.array([6, 3, 1, 1, 1])
    b = release_risk(sizes, 100, "B", "pitman")

    def run(measure: str, threshold: float, estimator: str = "pitman") -> list[str]:
        expected = expectations_for(
            columns=["q"],
            quasi_identifiers=["q"],
            hierarchy_rows={"q": [(v, "*") for v in "abcde"]},
            levels={"q": 0},
            records_in=12,
            max_suppression=0.0,
            models={
                "risk": {
                    "measure": measure,
                    "threshold": threshold,
                    "estimator": estimator,
                    "population_size": 100,
                }
            },
        )
        return verify_release(path, "csv", expected).failures

    assert 0 < b < 1
    assert run("B", b + 1e-6) == []
    failures = run("B", b - 1e-3)
    assert len(failures) == 1 and "above the threshold" in failures[0]
    assert run("A", 0.05) == []
    assert "A = 0.05" in run("A", 0.049)[0]
    assert "needs the frequency table" in run("B", 0.5, "entropy")[0]


def test_memoized_criterion_agrees_across_limits() -> None:
    from safeshare.search.memo import MemoizedCriterion

    table = random_table(np.random.default_rng(11), 2, 60)
    ev = Evaluator(table)
    models = [KAnonymity(2), RiskThreshold(0.3, "A", population_size=120)]
    failing: dict[tuple[int, ...], int] = {}
    for limit in (0.0, 0.2, 1.0):
        plain = PrivacyCriterion(models, limit)
        memo = MemoizedCriterion(models, limit, failing)
        for classes in ev.iter_classes():
            assert memo.holds(classes, table) == plain.holds(classes, table), (limit, classes.node)


def test_inverse_ola_refuses_the_risk_model() -> None:
    table = random_table(np.random.default_rng(2), 2, 30)
    ev = Evaluator(table)
    ctx = SearchContext(table, ev, PrivacyCriterion([RiskThreshold(0.5, "A")], 0.0), make_metric("prec", ev))
    with pytest.raises(ConfigError, match="inverse-ola does not support"):
        make_strategy("inverse-ola", {"max_loss": 0.5}).run(ctx)


def test_cli_risk_model_release_is_verified(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from tests.conftest import run_cli

    ages = [str(20 + (i * 7) % 30) for i in range(80)]
    pd.DataFrame({"age": ages, "dx": ["x"] * 80}).to_csv(tmp_path / "d.csv", index=False)
    (tmp_path / "age.csv").write_text("\n".join(f"{a};{a // 10 * 10}s;*" for a in range(20, 60)) + "\n")
    (tmp_path / "c.yaml").write_text(
        "input: {path: d.csv}\n"
        "attributes: {age: {role: quasi, hierarchy: age.csv}, dx: {role: insensitive}}\n"
        "privacy: {risk: {measure: B, threshold: 0.09, estimator: pitman, population_size: 8000}}\n"
    )
    code, _, err = run_cli(
        ["anonymize", str(tmp_path / "c.yaml"), "--out", str(tmp_path / "out"), "--quiet"], capsys
    )
    assert code == 0, err
    doc = json.loads((tmp_path / "out" / "report.json").read_text())
    assert doc["verification"]["passed"]
    achieved = doc["privacy_achieved"]["risk"]["B"]
    assert achieved <= 0.09
    assert doc["risk"]["population_size"] == 8000  # the report's risk section uses the model's N
    assert doc["privacy"]["models"]["risk"] == {
        "measure": "B",
        "threshold": 0.09,
        "estimator": "pitman",
        "population_size": 8000,
    }
    # how many nodes needed an estimate: report.json, report.html and the terminal say it alike
    estimates = doc["risk_estimates"]
    assert estimates["nodes_estimated"] == estimates["fitted"] + estimates["cached"] >= 1
    assert estimates["nodes_estimated"] + estimates["bound_rejections"] == doc["exact_checks"]
    sentence = f"{estimates['nodes_estimated']:,} needed a risk estimate"
    assert sentence in (tmp_path / "out" / "report.html").read_text()
    code, out, err = run_cli(["anonymize", str(tmp_path / "c.yaml"), "--out", str(tmp_path / "o2")], capsys)
    assert code == 0, err
    assert "needed a risk estimate" in " ".join(out.split())


def test_config_population_sizes_must_agree(tmp_path: Path) -> None:
    from safeshare.config import parse_config

    pd.DataFrame({"age": ["20", "21"]}).to_csv(tmp_path / "d.csv", index=False)
    (tmp_path / "age.csv").write_text("20;*\n21;*\n")
    raw = {
        "input": {"path": "d.csv"},
        "attributes": {"age": {"role": "quasi", "hierarchy": "age.csv"}},
        "privacy": {"risk": {"population_size": 8000}},
        "population_size": 9000,
    }
    with pytest.raises(ConfigError, match=r"9000 differs from privacy\.risk\.population_size 8000"):
        parse_config(raw, tmp_path / "c.yaml")
    raw["population_size"] = 8000
    assert parse_config(raw, tmp_path / "c.yaml").population_size == 8000
    del raw["population_size"]
    assert parse_config(raw, tmp_path / "c.yaml").population_size == 8000
