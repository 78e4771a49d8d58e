"""Inverse OLA (thesis §4.4) equals an exhaustive search: best achievable k, then least loss.

The references evaluate every node of the lattice and share no code with the
search: the achievable k from a histogram of class sizes (Adult) or by trying
every k (random tables), Prec in exact fractions, DM* and entropy from
:class:`tests.test_ola.BruteForce`.
"""

from __future__ import annotations

import json
import math
from fractions import Fraction
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
from safeshare.data.engines.memory import MemoryEngine
from safeshare.errors import ConfigError
from safeshare.metrics.loss import make_metric
from safeshare.models import KAnonymity, LDiversity, PrivacyCriterion, PrivacyModel
from safeshare.models.m_concealing import MConcealing
from safeshare.search.context import SearchContext
from safeshare.search.inverse_ola import InverseOLA, achievable_k, make_inverse_ola
from safeshare.search.ola import find_minimal_nodes
from safeshare.workflows.anonymizer import Anonymizer
from tests import conftest
from tests.conftest import random_table, write_small_adult
from tests.test_m_concealing import brute_suppressed, random_sensitive_table
from tests.test_ola import BruteForce
from tests.test_sensitive_searches import schema_of

MAX_LOSSES = (0.2, 0.5, 0.8)
LIMITS = (0.0, 0.1, 0.5)


def exact_prec(table: FrequencyTable, node: tuple[int, ...]) -> Fraction:
    terms = [Fraction(lv, h.height) for lv, h in zip(node, table.hierarchies, strict=True) if h.height]
    return sum(terms, Fraction(0)) / len(terms) if terms else Fraction(0)


class AdultReference:
    """k*(n) of every node of Adult for every limit, from the histogram of class sizes."""

    def __init__(self, table: FrequencyTable) -> None:
        self.table = table
        n = table.n_records
        caps = {limit: math.floor(limit * n + 1e-9) for limit in LIMITS}
        self.k: dict[float, dict[tuple[int, ...], int]] = {limit: {} for limit in LIMITS}
        for classes in Evaluator(table).iter_classes():
            sizes, counts = np.unique(classes.sizes[classes.sizes > 0].astype(np.int64), return_counts=True)
            # suppressing every class smaller than sizes[i] suppresses below[i] records
            below = np.concatenate(([0], np.cumsum(sizes * counts)[:-1]))
            for limit, cap in caps.items():
                self.k[limit][classes.node] = int(sizes[below <= cap].max())

    def best(self, max_loss: float, limit: float) -> tuple[int, tuple[int, ...]]:
        within = [
            n for n in self.k[limit] if exact_prec(self.table, n) <= Fraction(max_loss) + Fraction(1, 10**12)
        ]
        top = max(self.k[limit][n] for n in within)
        node = min(
            (n for n in within if self.k[limit][n] == top),
            key=lambda n: (exact_prec(self.table, n), sum(n), n),
        )
        return top, node


@pytest.fixture(scope="module")
def adult_reference(adult_table: FrequencyTable) -> AdultReference:
    return AdultReference(adult_table)


@pytest.fixture(scope="module")
def adult_evaluator(adult_table: FrequencyTable) -> Evaluator:
    return Evaluator(adult_table)


def run_inverse(
    table: FrequencyTable, ev: Evaluator, models: list[object], limit: float, metric: str, max_loss: float
):  # type: ignore[no-untyped-def]
    ctx = SearchContext(table, ev, PrivacyCriterion(models, limit), make_metric(metric, ev))  # type: ignore[arg-type]
    return make_strategy("inverse-ola", {"max_loss": max_loss}).run(ctx)


def check_adult(
    table: FrequencyTable, ev: Evaluator, reference: AdultReference, max_loss: float, limit: float
) -> None:
    """Same k and same node as the brute force; the release's smallest class is exactly k."""
    result = run_inverse(table, ev, [KAnonymity(1)], limit, "prec", max_loss)
    k, node = reference.best(max_loss, limit)
    assert result.extra["k_achieved"] == k
    assert result.node == node
    assert result.criterion is not None and result.criterion.models[0].k == k  # type: ignore[attr-defined]
    classes = ev.classes(node)
    assessment = result.criterion.assess(classes, table)
    assert assessment.qualifies
    assert classes.sizes[assessment.acceptable & (classes.sizes > 0)].min() == k


@pytest.mark.parametrize(("max_loss", "limit"), [(0.2, 0.5), (0.5, 0.1), (0.8, 0.0)])
def test_adult_sample_equals_exhaustive(
    adult_table: FrequencyTable,
    adult_evaluator: Evaluator,
    adult_reference: AdultReference,
    max_loss: float,
    limit: float,
) -> None:
    check_adult(adult_table, adult_evaluator, adult_reference, max_loss, limit)


@pytest.mark.slow
@pytest.mark.parametrize("max_loss", MAX_LOSSES)
@pytest.mark.parametrize("limit", LIMITS)
def test_adult_grid_equals_exhaustive(
    adult_table: FrequencyTable,
    adult_evaluator: Evaluator,
    adult_reference: AdultReference,
    max_loss: float,
    limit: float,
) -> None:
    """The thesis' Table 6.2 grid (max loss x suppression) on UCI Adult with Prec."""
    check_adult(adult_table, adult_evaluator, adult_reference, max_loss, limit)


def test_k_floor_from_the_configuration(
    adult_table: FrequencyTable, adult_evaluator: Evaluator, adult_reference: AdultReference
) -> None:
    k, _ = adult_reference.best(0.5, 0.1)
    assert (
        run_inverse(adult_table, adult_evaluator, [KAnonymity(k)], 0.1, "prec", 0.5).extra["k_achieved"] == k
    )
    none = run_inverse(adult_table, adult_evaluator, [KAnonymity(k + 1)], 0.1, "prec", 0.5)
    assert none.node is None and none.criterion is None and none.extra["k_achieved"] is None
    assert "achieves k >=" in none.extra["reason"]


def naive_k_star(sizes: list[int], n: int, cap: int) -> int:
    """Try every k from N down: the first with suppressed <= cap and something released."""
    for k in range(n, 0, -1):
        suppressed = sum(s for s in sizes if s < k)
        if suppressed <= cap and suppressed < n:
            return k
    return 0


def normalized(brute: BruteForce, metric: str, node: tuple[int, ...]) -> float:
    lattice = brute.table.lattice
    lo, hi = brute.loss(metric, lattice.bottom), brute.loss(metric, lattice.top)
    return 0.0 if hi <= lo else min(1.0, max(0.0, (brute.loss(metric, node) - lo) / (hi - lo)))


@given(
    seed=st.integers(0, 2**32 - 1),
    n_qis=st.integers(1, 4),
    n_rows=st.integers(1, 60),
    limit=st.sampled_from([0.0, 0.05, 0.1, 0.3, 0.5, 1.0]),
    max_loss=st.sampled_from([0.0, 0.2, 0.5, 0.8, 1.0]),
    metric=st.sampled_from(["prec", "dm_star", "entropy"]),
    floor=st.sampled_from([1, 1, 2, 4]),
)
@settings(max_examples=80, deadline=None)
def test_random_tables_equal_exhaustive(
    seed: int, n_qis: int, n_rows: int, limit: float, max_loss: float, metric: str, floor: int
) -> None:
    table = random_table(np.random.default_rng(seed), n_qis, n_rows)
    brute = BruteForce(table, (1,))
    floor = min(floor, table.n_records)
    n = table.n_records
    cap = math.floor(limit * n + 1e-9)
    k_of = {}
    for classes in Evaluator(table).iter_classes():
        sizes = [int(s) for s in classes.sizes if s > 0]
        k_of[classes.node] = naive_k_star(sizes, n, cap)
    within = [node for node in k_of if normalized(brute, metric, node) <= max_loss + 1e-12]
    best_k = max(k_of[node] for node in within)
    ev = Evaluator(table)
    result = run_inverse(table, ev, [KAnonymity(floor)], limit, metric, max_loss)
    if best_k < floor:
        assert result.node is None
        return
    assert result.extra["k_achieved"] == best_k
    least = min(brute.loss(metric, node) for node in within if k_of[node] == best_k)
    assert result.node in within and k_of[result.node] == best_k
    assert brute.loss(metric, result.node) == pytest.approx(least, rel=1e-12, abs=1e-9)


@given(
    seed=st.integers(0, 2**32 - 1),
    limit=st.sampled_from([0.0, 0.1, 0.3]),
    max_loss=st.sampled_from([0.3, 0.6, 1.0]),
    m=st.sampled_from([0.2, 0.34, 0.5]),
    p=st.sampled_from([0.0, 0.3]),
)
@settings(max_examples=30, deadline=None)
def test_with_m_concealing_equals_exhaustive(
    seed: int, limit: float, max_loss: float, m: float, p: float
) -> None:
    """k* respects m-concealing (its rejected classes are suppressed too), with and without suppression."""
    rng = np.random.default_rng(seed)
    table = random_sensitive_table(rng, int(rng.integers(1, 4)), int(rng.integers(1, 25)), 2)
    concealing = MConcealing(m, {"s0": p, "s1": 0.5})
    n = table.n_records
    cap = math.floor(limit * n + 1e-9)
    brute = BruteForce(table, (1,))

    def k_star(node: tuple[int, ...]) -> int:
        for k in range(n, 0, -1):
            suppressed = brute_suppressed(table, node, [KAnonymity(k), concealing])
            if suppressed <= cap and suppressed < n:
                return k
        return 0

    within = [node for node in table.lattice.nodes() if normalized(brute, "prec", node) <= max_loss + 1e-12]
    k_of = {node: k_star(node) for node in within}
    best_k = max(k_of.values())
    result = run_inverse(table, Evaluator(table), [concealing], limit, "prec", max_loss)
    if best_k == 0:
        assert result.node is None
        return
    assert result.extra["k_achieved"] == best_k
    least = min(brute.loss("prec", node) for node in within if k_of[node] == best_k)
    assert k_of[result.node] == best_k
    assert brute.loss("prec", result.node) == pytest.approx(least)
    assert ("search" in result.extra) == (limit > 0)  # best-first only when not monotone


def test_achievable_k_edge_cases() -> None:
    from safeshare.core.evaluation import Classes

    def classes(sizes: list[float]) -> Classes:
        return Classes(
            (0,), np.asarray(sizes, dtype=np.float64), int(sum(sizes)), np.zeros(1, dtype=np.int64)
        )

    table = random_table(np.random.default_rng(0), 1, 3)
    assert achievable_k(classes([3, 0, 5, 2]), table, [], 0) == 2
    assert achievable_k(classes([3, 0, 5, 2]), table, [], 2) == 3
    assert achievable_k(classes([3, 0, 5, 2]), table, [], 4) == 3
    assert achievable_k(classes([3, 0, 5, 2]), table, [], 5) == 5
    assert achievable_k(classes([3, 0, 5, 2]), table, [], 10) == 5  # something is always released
    assert achievable_k(classes([2, 2, 7]), table, [], 3) == 2  # ties: both 2s go together
    assert achievable_k(classes([2, 2, 7]), table, [], 4) == 7


def test_options_are_validated() -> None:
    with pytest.raises(ConfigError, match="needs max_loss"):
        make_inverse_ola({})
    with pytest.raises(ConfigError, match="no option 'k'"):
        make_inverse_ola({"max_loss": 0.5, "k": 3})
    with pytest.raises(ConfigError, match=r"max_loss: expected a number in \[0, 1\]"):
        InverseOLA(1.5)
    with pytest.raises(ConfigError, match="takes no option 'max_loss'"):
        make_strategy("ola", {"max_loss": 0.5})
    assert make_inverse_ola({"max_loss": 0.5}).max_loss == 0.5


# ----------------------------------------------------------------------------- command line
@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The Adult config on the first 3,000 records, with and without a privacy model."""
    d = write_small_adult(tmp_path_factory.mktemp("adult_inverse"))
    text = (d / "adult.yaml").read_text()
    (d / "noprivacy.yaml").write_text(text.replace("privacy:\n  k-anonymity: {k: 5}\n", ""))
    assert "privacy" not in (d / "noprivacy.yaml").read_text().split("attributes:")[1].split("max_supp")[0]
    return d


def run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code, _, err = conftest.run_cli(args, capsys)
    return code, err


def test_cli_inverse_ola_reports_and_verifies_k_achieved(
    workdir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    args = ["anonymize", str(workdir / "noprivacy.yaml"), "--algorithm", "inverse-ola", "--max-loss", "0.5"]
    # the run's warnings that contradict its headline, acknowledged (issue 33)
    args += ["--accept-warning", "kept-column-identifying"]
    code, err = run_cli([*args, "--max-suppression", "0.1", "--out", str(out), "-q", "--no-tradeoff"], capsys)
    assert code == 0, err
    report = json.loads((out / "report.json").read_text())
    k = report["k_achieved"]
    assert report["verified"] and report["algorithm"] == "inverse-ola" and report["max_loss"] == 0.5
    assert report["privacy"]["models"] == {"k-anonymity": {"k": k}} and report["k"] == k
    assert report["min_class_size"] == k == report["verification"]["min_class_size"]
    assert report["information_loss_normalized"] <= 0.5
    release = pd.read_csv(out / "release.csv", dtype=str, keep_default_na=False)
    assert release.groupby(list(report["levels"])).size().min() == k
    assert 3000 - len(release) <= 300
    assert f"largest achievable k = {k:,}" in (out / "report.html").read_text()


def test_cli_inverse_ola_input_errors(
    workdir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cases = [
        (["anonymize", str(workdir / "noprivacy.yaml")], "privacy: missing"),
        (["anonymize", str(workdir / "noprivacy.yaml"), "--algorithm", "inverse-ola"], "needs max_loss"),
        (["anonymize", str(workdir / "adult.yaml"), "--max-loss", "0.5"], "takes no option 'max_loss'"),
        (
            ["anonymize", str(workdir / "adult.yaml"), "--algorithm", "inverse-ola", "--max-loss", "1.5"],
            "--max-loss: expected a fraction",
        ),
    ]
    for args, message in cases:
        out = tmp_path / "o"
        code, err = run_cli([*args, "--out", str(out)], capsys)
        assert code == 2 and message in err and len(err.strip().splitlines()) == 1, (args, err)
        assert not out.exists()


def test_config_max_loss_key(workdir: Path, tmp_path: Path) -> None:
    from safeshare.config import load_config

    path = tmp_path / "c.yaml"
    text = (workdir / "adult.yaml").read_text().replace("path: adult.data", f"path: {workdir / 'adult.data'}")
    path.write_text(text.replace("algorithm: ola", "algorithm: inverse-ola\nmax_loss: 0.8"))
    cfg = load_config(path).with_overrides()
    assert cfg.algorithm == "inverse-ola" and cfg.algorithm_options() == {"max_loss": 0.8}
    result = Anonymizer(
        cfg.schema,
        cfg.privacy,
        max_suppression=cfg.max_suppression,
        metric="prec",
        algorithm=cfg.algorithm,
        algorithm_options=cfg.algorithm_options(),
    ).fit(MemoryEngine(cfg.source))
    assert result.search.extra["k_achieved"] >= 5  # the configured k = 5 is a floor
    path.write_text(text.replace("algorithm: ola", "algorithm: inverse-ola\nmax_loss: 2"))
    with pytest.raises(ConfigError, match="max_loss: expected a fraction"):
        load_config(path)


# ----------------------------------------------------------------------------- the search's economy
def brute_k_star(
    ev: Evaluator, table: FrequencyTable, node: tuple[int, ...], models: list[PrivacyModel], cap: int
) -> int:
    """k*(node) by trying every k from N down, with the classes ``models`` reject always suppressed."""
    classes = ev.classes(node)
    sizes = classes.sizes
    ok = sizes > 0
    for model in models:
        ok &= model.acceptable(classes, table)
    n = table.n_records
    for k in range(n, 0, -1):
        suppressed = int(sizes[(sizes > 0) & (~ok | (sizes < k))].sum())
        if suppressed <= cap and suppressed < n:
            return k
    return 0


def reference_inverse(ctx: SearchContext, max_loss: float, relaxed: list[PrivacyModel]) -> dict[str, object]:
    """Inverse OLA as its module docstring states it, from brute-force k* and losses: the node,
    k and the checks of the predictive-tagging search (monotone criteria) or of the best-first
    search on the relaxation's upper bound ``relaxed`` (the others)."""
    table, lattice, metric, criterion = ctx.table, ctx.lattice, ctx.metric, ctx.criterion
    ev = Evaluator(table)
    cap = math.floor(criterion.max_suppression * table.n_records + 1e-9)
    floor = max([m.k for m in criterion.models if isinstance(m, KAnonymity)], default=1)
    others = [m for m in criterion.models if not isinstance(m, KAnonymity)]
    brute = BruteForce(table, (1,))
    name = metric.name

    def within(n: tuple[int, ...]) -> bool:
        return normalized(brute, name, n) <= max_loss + 1e-12

    def k_star(n: tuple[int, ...]) -> int:
        return brute_k_star(ev, table, n, others, cap)

    if PrivacyCriterion([KAnonymity(1), *others], criterion.max_suppression).monotone:
        maximal, loss_checks, _ = find_minimal_nodes(lattice, within, monotone=False, guide=ctx.guide)
        best_k = max(k_star(n) for n in maximal)
        tops = [n for n in maximal if k_star(n) == best_k]
        k_checks = 0
        k_nodes = set(maximal)  # the nodes whose k* is computed (once each: progress counts them)

        def k_at(n: tuple[int, ...]) -> int:
            k_nodes.add(n)
            return k_star(n)

        if best_k >= floor:  # OLA below the maximal nodes of k* = K*, or on the whole lattice
            below = sum(math.prod(v + 1 for v in top) for top in tops)
            boxes = [lattice.top] if below >= lattice.size else tops
            for top in boxes:
                sub = Lattice(top)
                guide = ctx.guide[tuple(slice(0, v + 1) for v in top)]
                k_checks += find_minimal_nodes(sub, lambda n: k_at(n) >= best_k, guide=guide)[1]
        candidates = [n for n in lattice.nodes() if within(n) and k_star(n) == best_k]
        node = min(candidates, key=lambda n: (metric.value(n), sum(n), n)) if best_k >= floor else None
        checked = loss_checks + len(maximal) + k_checks
        return {
            "node": node,
            "k": best_k if node else None,
            "checked": checked,
            "loss_checks": loss_checks,
            "best_maximal_nodes": len(tops) if best_k >= floor else None,
            "ticks": loss_checks + len(k_nodes),
        }
    bounds = []
    for n in lattice.nodes():
        upper = brute_k_star(ev, table, n, relaxed, cap)
        if within(n) and upper >= floor:
            bounds.append((-upper, metric.value(n), sum(n), n))
    bounds.sort()
    best = None
    visits = 0
    for bound in bounds:
        if best is not None and bound >= best:
            break
        visits += 1
        key = (-k_star(bound[3]), *bound[1:])
        if key[0] < 0 and (best is None or key < best):
            best = key
    found = best is not None and -best[0] >= floor
    return {
        "node": best[3] if found else None,
        "k": -best[0] if found else None,
        "checked": len(bounds) + visits,
    }


INVERSE_CASES = {
    # name: (models, limit, the relaxation of the models other than k-anonymity, built by hand)
    "k": (lambda schema: [KAnonymity(2)], 0.1, []),
    "k-no-suppression": (lambda schema: [KAnonymity(1)], 0.0, []),
    "m-concealing": (lambda schema: [MConcealing(0.5, {"s0": 0.5})], 0.2, [KAnonymity(2)]),
    "k+distinct-l+m": (
        lambda schema: [KAnonymity(2), LDiversity(2).bind(schema), MConcealing(0.34, {"s1": 0.3})],
        0.3,
        [LDiversity(2), KAnonymity(3)],
    ),
    "entropy-l-of-1": (lambda schema: [LDiversity(1, "entropy").bind(schema)], 0.1, [KAnonymity(1)]),
}


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("case", list(INVERSE_CASES))
@pytest.mark.parametrize(("max_loss", "metric"), [(0.0, "prec"), (0.3, "dm_star"), (0.6, "entropy")])
def test_inverse_ola_equals_its_reference_check_for_check(
    seed: int, case: str, max_loss: float, metric: str
) -> None:
    """The node, k* and the number of checked nodes of both searches (predictive tagging, best-first)."""
    rng = np.random.default_rng(40 + seed)
    table = random_sensitive_table(rng, 4, int(rng.integers(20, 60)), 2)
    make_models, limit, relaxed = INVERSE_CASES[case]
    schema = schema_of(table)
    relaxed = [m.bind(schema) if isinstance(m, LDiversity) else m for m in relaxed]
    ev = Evaluator(table)
    ctx = SearchContext(table, ev, PrivacyCriterion(make_models(schema), limit), make_metric(metric, ev))
    result = make_strategy("inverse-ola", {"max_loss": max_loss}).run(ctx)
    want = reference_inverse(ctx, max_loss, relaxed)
    assert (result.node, result.extra["k_achieved"]) == (want["node"], want["k"])
    assert result.checked_nodes == want["checked"]
    assert result.extra["k_floor"] == max(
        [m.k for m in ctx.criterion.models if isinstance(m, KAnonymity)], default=1
    )
    if "loss_checks" not in want:  # kills: the search's name in the report
        assert result.extra["search"] == "best-first"
    if "loss_checks" in want:
        extra = result.extra
        assert extra["loss_checks"] == want["loss_checks"]
        k_checks = extra.get("k_checks", 0)
        assert result.checked_nodes == extra["loss_checks"] + extra["maximal_nodes"] + k_checks
        assert extra.get("best_maximal_nodes") == want["best_maximal_nodes"]
        assert ctx.ticker.count == want["ticks"]  # kills: progress=None in the loss search


def test_achievable_k_is_zero_when_every_class_is_rejected() -> None:
    """Suppressing every record releases nothing: no k is achievable, even within the limit."""
    table = random_sensitive_table(np.random.default_rng(3), 2, 20, 2)
    classes = Evaluator(table).classes(table.lattice.bottom)
    strict = MConcealing(0.01, {"s0": 1.0})  # every class of fewer than 100 records fails
    n = table.n_records
    assert not strict.acceptable(classes, table)[classes.sizes > 0].any()
    # kills: `return 0` -> `return 1` when no class is accepted
    assert achievable_k(classes, table, [strict], n) == 0
    assert achievable_k(classes, table, [strict], n - 1) == 0
    assert achievable_k(classes, table, [], n) == int(classes.sizes.max())


def test_best_first_inverse_ola_keeps_the_configured_k_as_a_floor() -> None:
    """Best-first path (m-concealing with suppression): the only node within max_loss = 0 (the
    bottom) achieves k* = 2 although its upper bound reaches the configured k = 3: no release."""
    rng = np.random.default_rng(93)
    table = random_sensitive_table(rng, int(rng.integers(1, 4)), int(rng.integers(5, 40)), 2)
    concealing = MConcealing(0.5, {"s0": 0.5})
    cap = math.floor(0.3 * table.n_records + 1e-9)
    ev = Evaluator(table)
    assert brute_k_star(ev, table, table.lattice.bottom, [concealing], cap) == 2
    assert brute_k_star(ev, table, table.lattice.bottom, [KAnonymity(2)], cap) >= 3  # the relaxation's bound
    ctx = SearchContext(
        table, ev, PrivacyCriterion([KAnonymity(3), concealing], 0.3), make_metric("prec", ev)
    )
    result = make_strategy("inverse-ola", {"max_loss": 0.0}).run(ctx)
    # kills: `node is None or best_k < floor` -> `and` (the node would be released with k* = 2 < 3)
    assert result.extra["search"] == "best-first"
    assert (result.node, result.extra["k_achieved"], result.criterion) == (None, None, None)
    floor_two = PrivacyCriterion([KAnonymity(2), concealing], 0.3)
    two = make_strategy("inverse-ola", {"max_loss": 0.0}).run(SearchContext(table, ev, floor_two, ctx.metric))
    assert (two.node, two.extra["k_achieved"]) == (table.lattice.bottom, 2)


def test_best_first_inverse_ola_reports_its_progress() -> None:
    """The best-first path (criteria not monotone with suppression) ticks the run's progress
    count once per checked node, as the other searches do: a progress bar does not sit at 0."""
    rng = np.random.default_rng(5)
    table = random_sensitive_table(rng, 2, 30, 2)
    ev = Evaluator(table)
    reports: list[int] = []
    criterion = PrivacyCriterion([KAnonymity(2), MConcealing(0.5, {"s0": 0.5})], 0.3)
    ctx = SearchContext(table, ev, criterion, make_metric("prec", ev), progress=reports.append)
    result = make_strategy("inverse-ola", {"max_loss": 1.0}).run(ctx)
    assert result.extra["search"] == "best-first"
    assert result.checked_nodes > 0
    assert ctx.ticker.count == result.checked_nodes
