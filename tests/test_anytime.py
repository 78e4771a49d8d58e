"""The anytime branch and bound (search/anytime.py): its bound is proven, its node qualifies.

Against the exhaustive search on random tables: ``bound <= optimum <= incumbent``
for every budget, equality and ``optimal`` with no budget; the failing antichain
against brute force; the option checks, configuration keys and report sentence.
"""

from __future__ import annotations

import json
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
from safeshare.core.lattice import Lattice
from safeshare.data.schema import Attribute, Role, Schema
from safeshare.errors import ConfigError
from safeshare.hierarchy.hierarchy import Hierarchy
from safeshare.metrics.loss import make_metric
from safeshare.models import KAnonymity, LDiversity, PrivacyCriterion, PrivacyModel, TCloseness
from safeshare.report.content import describe_search
from safeshare.search.anytime import AnytimeSearch, FailingSet, make_anytime
from safeshare.search.context import SearchContext
from safeshare.search.result import SearchResult
from tests.conftest import random_table, run_cli, write_small_adult
from tests.sensitive_helpers import random_sensitive_table, table_from_frame

METRICS = ["prec", "dm_star", "entropy"]
#: The keys of an anytime search's ``extra`` (the report's fields).
REPORTED = {
    "search",
    "lower_bound",
    "gap",
    "gap_relative",
    "optimal",
    "stop_reason",
    "time_limit",
    "max_evaluations",
    "incumbent_found_at_evaluation",
    "frontier_nodes",
    "popped_nodes",
    "pushed_nodes",
    "skipped_known_failing",
    "failing_antichain",
}


def schema_of(table: FrequencyTable) -> Schema:
    return Schema.from_attributes(
        [Attribute(q, Role.QUASI, h) for q, h in zip(table.qi_names, table.hierarchies, strict=True)]
        + [Attribute(s, Role.SENSITIVE) for s in table.sensitive_names]
    )


def context(table: FrequencyTable, models: list[PrivacyModel], limit: float, metric: str) -> SearchContext:
    ev = Evaluator(table)
    return SearchContext(table, ev, PrivacyCriterion(models, limit), make_metric(metric, ev))


def check_against_exhaustive(
    table: FrequencyTable, models: list[PrivacyModel], limit: float, metric: str, budget: int | None
) -> tuple[SearchResult, SearchResult]:
    exact = make_strategy("exhaustive").run(context(table, models, limit, metric))
    ctx = context(table, models, limit, metric)
    found = AnytimeSearch(time_limit=None, max_evaluations=budget).run(ctx)
    extra = found.extra
    if budget is not None:
        assert found.checked_nodes <= budget
    if found.node is not None:  # a returned node qualifies
        assert ctx.criterion.holds(ctx.evaluator.classes(found.node), table)
        assert found.objective == ctx.metric.value(found.node)
        assert extra["gap"] == pytest.approx(found.objective - extra["lower_bound"])
    if exact.objective is None:
        assert found.node is None
        if extra["stop_reason"] == "no qualifying node":
            assert extra["lower_bound"] is None
    else:
        assert extra["lower_bound"] is not None
        assert extra["lower_bound"] <= exact.objective  # the bound is proven
        if found.objective is not None:
            assert exact.objective <= found.objective
    if extra["optimal"]:
        assert found.objective == exact.objective and extra["gap"] == 0
    assert set(extra) == REPORTED
    if found.objective is not None:  # kills: the relative gap dropped, or 1 (not 0) at a loss of 0
        loss = found.objective
        assert extra["gap_relative"] == (extra["gap"] / loss if loss > 0 else 0.0)
    assert 0 <= extra["skipped_known_failing"] <= extra["popped_nodes"]  # kills: known_failing -= 1
    assert (extra["time_limit"], extra["max_evaluations"]) == (None, budget)
    # kills: evaluations not cached (the progress count would exceed the evaluated nodes)
    assert ctx.ticker.count == found.checked_nodes and found.minimal_nodes == []
    if metric != "dm_star":  # exact keys: every node is pushed once and popped at most once
        assert extra["popped_nodes"] <= extra["pushed_nodes"] <= table.lattice.size
    return exact, found


@given(
    seed=st.integers(0, 2**32 - 1),
    n_qis=st.integers(1, 4),
    n_rows=st.integers(1, 60),
    k=st.integers(1, 6),
    limit=st.sampled_from([0.0, 0.05, 0.1, 0.3, 1.0]),
    metric=st.sampled_from(METRICS),
)
@settings(max_examples=80, deadline=None)
def test_unlimited_budget_reaches_the_exhaustive_optimum(
    seed: int, n_qis: int, n_rows: int, k: int, limit: float, metric: str
) -> None:
    table = random_table(np.random.default_rng(seed), n_qis, n_rows, max_height=4)
    exact, found = check_against_exhaustive(table, [KAnonymity(min(k, table.n_records))], limit, metric, None)
    assert found.objective == exact.objective
    assert found.extra["optimal"] == (exact.node is not None)
    assert found.extra["stop_reason"] == ("optimal" if exact.node is not None else "no qualifying node")
    if exact.node is not None:
        assert found.extra["gap"] == 0 and found.extra["lower_bound"] == exact.objective


@given(
    seed=st.integers(0, 2**32 - 1),
    n_qis=st.integers(2, 5),
    k=st.integers(2, 8),
    limit=st.sampled_from([0.0, 0.05, 0.2]),
    metric=st.sampled_from(METRICS),
    budget=st.integers(1, 12),
)
@settings(max_examples=80, deadline=None)
def test_tiny_budget_returns_a_valid_node_and_bound(
    seed: int, n_qis: int, k: int, limit: float, metric: str, budget: int
) -> None:
    table = random_table(np.random.default_rng(seed), n_qis, 80, max_values=6, max_height=4)
    exact, found = check_against_exhaustive(table, [KAnonymity(k)], limit, metric, budget)
    if exact.node is not None:  # the top qualifies whenever any node does: evaluated first
        assert found.node is not None


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize(
    "models",
    [
        lambda: [LDiversity(2, "entropy")],
        lambda: [KAnonymity(2), TCloseness(0.25)],
        lambda: [LDiversity(2, "recursive", c=3)],
        lambda: [LDiversity(2), LDiversity(2, "entropy")],  # the relaxation reads the table
    ],
    ids=["entropy-l", "k+t-closeness", "recursive-l", "distinct+entropy-l"],
)
@pytest.mark.parametrize("budget", [None, 3, 10])
def test_criteria_not_monotone_with_suppression(seed: int, models: object, budget: int | None) -> None:
    """Failures propagate only through the monotone relaxation; the bound stays proven."""
    rng = np.random.default_rng(900 + seed)
    table = random_sensitive_table(rng, n_qis=3, n_rows=int(rng.integers(20, 120)), n_sensitive=2)
    schema = schema_of(table)
    bound_models = [m.bind(schema) for m in models()]  # type: ignore[operator]
    exact, found = check_against_exhaustive(table, bound_models, 0.1, "prec", budget)
    if budget is None:
        assert found.objective == exact.objective


@given(st.lists(st.integers(0, 3), min_size=1, max_size=4), st.integers(0, 2**32 - 1))
@settings(max_examples=60, deadline=None)
def test_failing_set_agrees_with_brute_force(heights: list[int], seed: int) -> None:
    lattice = Lattice(heights)
    nodes = list(lattice.nodes())
    rng = np.random.default_rng(seed)
    added = [nodes[int(i)] for i in rng.choice(len(nodes), size=int(rng.integers(0, 8)))]
    failing = FailingSet(lattice.n_qis)
    for node in added:
        failing.add(node)
    members = sorted(tuple(int(v) for v in row) for row in failing.members)
    maximal = sorted({a for a in added if not any(a != b and Lattice.leq(a, b) for b in added)})
    assert members == maximal
    for node in nodes:
        above = [a for a in added if Lattice.leq(node, a)]
        assert failing.covers(node) == bool(above)
        dominating = {tuple(int(v) for v in row) for row in failing.dominating(node)}
        assert dominating == {a for a in maximal if Lattice.leq(node, a)}


def test_options_are_checked() -> None:
    assert make_anytime({}).time_limit == 60.0
    assert make_anytime({"max_evaluations": 5}).time_limit is None
    with pytest.raises(ConfigError, match="takes no option 'max_loss'"):
        make_anytime({"max_loss": 0.5})
    with pytest.raises(ConfigError, match="time_limit must be a positive number"):
        make_anytime({"time_limit": 0})
    with pytest.raises(ConfigError, match="max_evaluations must be an integer >= 1"):
        make_anytime({"max_evaluations": 2.5})
    with pytest.raises(ConfigError, match="takes no option 'time_limit'"):
        make_strategy("ola", {"time_limit": 5})


def test_report_sentence_states_the_claim() -> None:
    base = {"algorithm": "anytime", "search": "anytime", "checked_nodes": 10, "lattice_size": 100}
    proven = {**base, "information_loss": 0.5, "lower_bound": 0.5, "gap": 0.0, "optimal": True}
    assert "proven optimal" in describe_search(proven)
    open_gap = {
        **base,
        "information_loss": 0.5,
        "lower_bound": 0.25,
        "gap": 0.25,
        "gap_relative": 0.5,
        "optimal": False,
        "stop_reason": "time_limit",
    }
    text = describe_search(open_gap)
    assert "best found, loss 0.5, optimum >= 0.25, gap 0.25 (50% of the loss)" in text
    assert "proven optimal" not in text and "time limit" in text


def test_cli_anytime_release_reports_bound(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    directory = write_small_adult(tmp_path, n_train=800)
    out = tmp_path / "out"
    code, stdout, stderr = run_cli(
        [
            "anonymize",
            str(directory / "adult.yaml"),
            "--out",
            str(out),
            "--algorithm",
            "anytime",
            "--max-evaluations",
            "4",
            # the run's warnings that contradict its headline, acknowledged (issue 33)
            "--accept-warning",
            "kept-column-identifying",
        ],
        capsys,
    )
    assert code == 0, stderr
    report = json.loads((out / "report.json").read_text())
    assert report["algorithm"] == "anytime" and report["checked_nodes"] <= 4
    assert report["lower_bound"] <= report["information_loss"]
    assert report["gap"] == pytest.approx(report["information_loss"] - report["lower_bound"])
    assert report["minimal_nodes"] is None
    curve = report["tradeoff"]  # one anytime search per limit: bounds, not claims of optimality
    assert curve and all(p["lower_bound"] <= p["information_loss"] for p in curve if p["found"])
    assert all(p["optimal"] == (p["lower_bound"] == p["information_loss"]) for p in curve if p["found"])
    assert ("proven optimal" in stdout) == report["optimal"]
    code, _, stderr = run_cli(
        ["anonymize", str(directory / "adult.yaml"), "--out", str(tmp_path / "o2"), "--time-limit", "5"],
        capsys,
    )
    assert code == 2 and "takes no option 'time_limit'" in stderr


@pytest.mark.slow
def test_kdd_18_qis_node_and_bound_within_an_evaluation_budget() -> None:
    """Census-Income KDD, 18 QIs (19,906,560 nodes), Prec, k = 5, 5 %: a qualifying node and a
    proven bound after 1,000 evaluations (an evaluation budget: tests never assert wall time)."""
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_anytime.py"
    spec = importlib.util.spec_from_file_location("bench_anytime", path)
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    if not bench.DATA.exists():
        pytest.skip(f"Census-Income (KDD) not found at {bench.DATA}")
    table = bench.table_for(bench.load(bench.DATA), 18)
    assert table.lattice.size >= 10**7
    ctx = context(table, [KAnonymity(5)], 0.05, "prec")
    found = AnytimeSearch(time_limit=None, max_evaluations=1000).run(ctx)
    assert found.node is not None and found.checked_nodes <= 1000
    assert ctx.criterion.holds(ctx.evaluator.classes(found.node), table)
    extra = found.extra
    assert 0 < extra["lower_bound"] <= found.objective
    assert extra["optimal"] == (extra["gap"] == 0)


# ------------------------------------------------------------------ found by mutation testing (issue 13)
def chain_table(height: int) -> FrequencyTable:
    """One QI of 2**height values, one record each, merged pairwise at every level: at level j
    every class has 2**j records (a chain lattice 0 < 1 < ... < height)."""
    leaves = [f"v{i}" for i in range(2**height)]
    rows = [[v] + [f"g{j}_{i >> j}" for j in range(1, height)] + ["*"] for i, v in enumerate(leaves)]
    hierarchy = Hierarchy(rows, name="q")
    frame = pd.DataFrame({"q": leaves, "s": ["x"] * len(leaves)})
    return table_from_frame(frame, ["q"], [hierarchy], ["s"])


def test_seed_descends_from_the_top_to_a_minimal_node() -> None:
    """Before the main loop the top is evaluated and the search walks down through qualifying
    predecessors to a minimal node: with k = 4 on the chain of height 4 that is the top, levels
    3 and 2 (qualifying) and 1 (failing), 4 evaluations, and the node (2,) is optimal."""
    table = chain_table(4)
    ctx = context(table, [KAnonymity(4)], 0.0, "prec")
    found = AnytimeSearch(time_limit=None, max_evaluations=4).run(ctx)
    # kills: no descent (`while True` -> `while False`), or a descent that stops after one step
    assert (found.node, found.checked_nodes) == ((2,), 4)
    assert (
        found.extra["stop_reason"] == "max_evaluations" and found.extra["incumbent_found_at_evaluation"] == 3
    )
    full = AnytimeSearch(time_limit=None, max_evaluations=None).run(
        context(table, [KAnonymity(4)], 0.0, "prec")
    )
    assert (full.node, full.extra["optimal"]) == ((2,), True)
    # the main loop: the bottom is popped, known to fail below (1,), so (2,) is pushed over the
    # failing box; its key 1/2 is the incumbent's loss: optimal. kills: popped, pushed miscounted
    extra = full.extra
    assert (extra["popped_nodes"], extra["pushed_nodes"], extra["skipped_known_failing"]) == (1, 2, 1)
    assert (full.checked_nodes, extra["frontier_nodes"]) == (4, 0)
    # kills: a failure of a monotone criterion not recorded in the failing antichain
    assert full.extra["failing_antichain"] == 1


def test_a_time_limit_stops_the_search_after_the_first_evaluation() -> None:
    """A deadline already past when the top has been evaluated: one evaluation, the top returned,
    the bound of the untouched frontier (the bottom's loss, 0) and the stop reason reported."""
    table = chain_table(3)
    ctx = context(table, [KAnonymity(2)], 0.0, "prec")
    found = AnytimeSearch(time_limit=1e-9, max_evaluations=None).run(ctx)  # no wall-clock assertion
    # kills: the time limit not passed to the run; the stop reason's text
    assert (found.node, found.checked_nodes) == ((3,), 1)
    extra = found.extra
    assert (extra["stop_reason"], extra["time_limit"], extra["optimal"]) == ("time_limit", 1e-9, False)
    assert (extra["lower_bound"], extra["gap"], extra["gap_relative"]) == (0.0, 1.0, 1.0)
    assert found.elapsed_s >= 0  # kills: perf_counter() + start (elapsed_s would be huge, not a time)
    assert found.elapsed_s < 3600


def test_dm_star_bound_of_the_bottom_is_n_squared_over_its_classes() -> None:
    """DM* keys: ``ceil(N^2 / c)`` with ``c`` the bottom's possible classes (Cauchy-Schwarz).
    With one evaluation (the top) the bound is the bottom's key."""
    table = random_table(np.random.default_rng(5), 2, 40, max_values=4, max_height=2)
    ctx = context(table, [KAnonymity(2)], 0.0, "dm_star")
    found = AnytimeSearch(time_limit=None, max_evaluations=1).run(ctx)
    n = table.n_records
    classes = min(table.n_rows, math.prod(int(np.count_nonzero(table.marginal(i, 0))) for i in range(2)))
    # kills: -(+(N**2) // c) (a negative key: a true but useless bound)
    assert found.extra["lower_bound"] == math.ceil(n * n / classes) > 0
    assert found.objective == n * n  # the top: one class


def test_failing_set_grows_past_its_initial_capacity_and_keeps_an_antichain() -> None:
    failing = FailingSet(2)
    for i in range(21):  # 21 incomparable nodes: the array grows past its 16 initial rows
        failing.add((i, 20 - i))
    # kills: the grown array not kept (`self._arr = grown` -> None)
    assert len(failing) == 21 and failing.covers((5, 15)) and not failing.covers((5, 16))
    two = FailingSet(2)
    two.add((2, 0))
    two.add((0, 2))
    two.add((1, 0))  # below (2, 0) only: already known
    # kills: "below a member" tested as "below every member" (all(axis=None))
    assert sorted(tuple(int(v) for v in row) for row in two.members) == [(0, 2), (2, 0)]


def test_identical_records_prove_the_dm_star_optimum_with_one_evaluation() -> None:
    """One distinct QI tuple: every node has one class, DM* = N^2 everywhere, and the bottom's key
    is ``ceil(N^2 / 1)``: the top's loss is proven optimal although the budget stopped the descent."""
    frame = pd.DataFrame({"q": ["a"] * 6, "s": ["x"] * 6})
    h = Hierarchy([["a", "A", "*"], ["b", "A", "*"]], name="q")
    table = table_from_frame(frame, ["q"], [h], ["s"])
    found = AnytimeSearch(time_limit=None, max_evaluations=1).run(
        context(table, [KAnonymity(2)], 0.0, "dm_star")
    )
    extra = found.extra
    # kills: max(cap, 2) in the key (N^2 / 2); the stop reason kept at max_evaluations when optimal
    assert (found.objective, extra["lower_bound"], extra["gap"]) == (36.0, 36.0, 0.0)
    assert (extra["optimal"], extra["stop_reason"], found.checked_nodes) == (True, "optimal", 1)


def test_no_qualifying_node_is_reported_as_such() -> None:
    """3-diversity with one sensitive value: no class passes anywhere, no node, and the search says so."""
    table = chain_table(2)
    model = LDiversity(3).bind(schema_of(table))
    found = AnytimeSearch(time_limit=None, max_evaluations=None).run(context(table, [model], 0.0, "prec"))
    # kills: the stop reason "optimal" (or None, or another text) without any incumbent
    assert (found.node, found.extra["stop_reason"], found.extra["lower_bound"]) == (
        None,
        "no qualifying node",
        None,
    )
    assert found.extra["optimal"] is False and found.extra["gap"] is None


def test_a_generous_time_limit_reaches_the_optimum() -> None:
    """A time limit far above the search's needs changes nothing (no wall-clock assertion: the
    deadline is an hour away). kills: the deadline computed as start - time_limit."""
    table = chain_table(4)
    found = AnytimeSearch(time_limit=3600.0, max_evaluations=None).run(
        context(table, [KAnonymity(4)], 0.0, "prec")
    )
    assert (found.node, found.extra["stop_reason"], found.extra["time_limit"]) == ((2,), "optimal", 3600.0)


@pytest.mark.parametrize("time_limit", [float("inf"), float("nan"), -1.0, 0.0, True, "5"])
def test_time_limit_must_be_finite_and_positive(time_limit: float) -> None:
    # kills: `or` -> `and` between the type tests, or between the type test and the finiteness test
    with pytest.raises(ConfigError, match="time_limit must be a positive number of seconds"):
        AnytimeSearch(time_limit=time_limit)


def test_dm_star_class_cap_is_the_product_of_the_values_present_at_the_levels() -> None:
    """The bound ``c`` of a node's classes behind its DM* key: at most the distinct QI tuples, at
    most the product over the QIs of the values present at the node's levels (module docstring)."""
    from safeshare.search.anytime import _Keys

    table = random_table(np.random.default_rng(11), 3, 60, max_values=5, max_height=3)
    ctx = context(table, [KAnonymity(2)], 0.0, "dm_star")
    keys = _Keys(ctx.metric, ctx)
    below_rows = 0
    for node in table.lattice.nodes():
        present = [int(np.count_nonzero(table.marginal(i, level))) for i, level in enumerate(node)]
        # kills: the product started at 2 (a weaker bound)
        assert keys.class_cap(node) == min(table.n_rows, math.prod(present))
        below_rows += math.prod(present) < table.n_rows
    assert below_rows > 0  # the product decides at some nodes


@pytest.mark.parametrize("metric", ["prec", "entropy"])
@pytest.mark.parametrize("seed", range(6))
def test_k_anonymity_with_a_node_metric_is_counted_without_class_tables(
    seed: int, metric: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 36: with k-anonymity alone and a metric of the node alone (Prec, entropy) the search
    asks the predicate as OLA does (the count of the records under k), never the class table, and
    still reaches the exhaustive optimum."""
    table = random_table(np.random.default_rng(100 + seed), 4, 80, max_height=3)
    exact = make_strategy("exhaustive").run(context(table, [KAnonymity(3)], 0.1, metric))
    ctx = context(table, [KAnonymity(3)], 0.1, metric)

    def no_classes(node: object) -> None:
        raise AssertionError(f"class table built for {node}")

    monkeypatch.setattr(ctx.evaluator, "classes", no_classes)
    found = AnytimeSearch(time_limit=None).run(ctx)
    assert found.objective == exact.objective
    assert found.extra["optimal"] == (exact.node is not None)
    assert found.checked_nodes == ctx.ticker.count > 0
