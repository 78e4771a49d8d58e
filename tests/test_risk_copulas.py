"""The copula estimators: synthesis in bounded memory, the checkerboard D-vine, GHK class
probabilities, one seed policy, intervals, interrupts (issue 21)."""

from __future__ import annotations

import itertools
import os
import signal
import threading
import time
from itertools import pairwise
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from safeshare.adult import ADULT_QUASI_IDENTIFIERS
from safeshare.errors import Interrupted
from safeshare.risk import copula
from safeshare.risk import evaluation as ev
from safeshare.risk.classes import SampleTable, radices
from safeshare.risk.estimators import make_estimator
from safeshare.risk.estimators.average import AverageCopulaEstimator
from safeshare.risk.estimators.dvine_copula import DVineCopulaEstimator, max_weight_path
from safeshare.risk.estimators.gaussian_copula import GaussianCopulaEstimator
from safeshare.risk.synthesis import multinomial_rest, streamed_rest, synthetic_risk

ROOT = Path(__file__).resolve().parents[1]


def correlated_table(n: int, seed: int, cards: tuple[int, ...] = (6, 4, 5, 3)) -> SampleTable:
    """A sample of ``n`` records on len(cards) nominal columns with strong, non-monotone dependence."""
    rng = np.random.default_rng(seed)
    m = len(cards)
    codes = np.empty((n, m), dtype=np.int64)
    codes[:, 0] = rng.integers(0, cards[0], n)
    for c in range(1, m):
        perm = rng.permutation(cards[c])
        follow = perm[codes[:, c - 1] % cards[c]]
        noise = rng.integers(0, cards[c], n)
        codes[:, c] = np.where(rng.random(n) < 0.7, follow, noise)
    return SampleTable.from_codes(codes)


# --------------------------------------------------------------------------- synthesis


def test_streamed_synthesis_counts_every_chunk_exactly() -> None:
    """A deterministic 'model' (record i has class i mod K): B* equals the direct count."""
    K, N, n = 7, 1000, 50
    state = {"next": 0}

    def draw(size: int, rng: np.random.Generator) -> np.ndarray:
        codes = (np.arange(state["next"], state["next"] + size) % K).reshape(-1, 1)
        state["next"] += size
        return codes.astype(np.int64)

    weights = np.ones(1, dtype=np.int64)
    rest = streamed_rest(draw, weights, chunk_size=60)
    got = synthetic_risk(draw, rest, weights, (K,), N, n, np.random.default_rng(0), chunk_size=30)
    F = np.bincount(np.arange(N) % K)
    assert pytest.approx(float(np.mean(1 / F[np.arange(n) % K]))) == got.B
    assert got.population_uniques == 0


def _brute_force_B(est: DVineCopulaEstimator | GaussianCopulaEstimator, N: int, n: int, seed: int) -> float:
    """The paper's recipe literally: N records, the first n the sample, class sizes counted."""
    keys = est._codes(N, np.random.default_rng(seed)) @ radices(est._cardinalities)
    _, inverse, counts = np.unique(keys, return_inverse=True, return_counts=True)
    return float(np.mean(1.0 / counts[inverse[:n]]))


@pytest.mark.parametrize("name", ["dvine_copula", "gaussian_copula"])
def test_synthesis_without_the_population_has_the_brute_force_distribution(name: str) -> None:
    """B* from the sample and the multinomial of the other N - n records (class probabilities:
    exact for the d-vine, GHK for the Gaussian) against materializing all N records: the same
    distribution (Welch t-test and Kolmogorov-Smirnov over 120 syntheses each)."""
    table = correlated_table(400, 1)
    N = 4000
    est = make_estimator(name, random_state=0, repetitions=120).fit(table, N)
    assert isinstance(est, DVineCopulaEstimator | GaussianCopulaEstimator)
    fast = np.array(est.B_runs_)
    brute = np.array([_brute_force_B(est, N, table.n, 1000 + s) for s in range(120)])
    assert stats.ttest_ind(fast, brute, equal_var=False).pvalue > 0.01
    assert stats.ks_2samp(fast, brute).pvalue > 0.01


def test_gaussian_ghk_and_streamed_rest_agree() -> None:
    """The Gaussian copula's two ways to count the rest of the population give one distribution."""
    table = correlated_table(300, 2)
    est = GaussianCopulaEstimator(random_state=0, repetitions=1).fit(table, 300)
    weights, cards = est._weights, est._cardinalities
    ghk = multinomial_rest(est.class_probabilities)
    stream = streamed_rest(est._codes, weights, 10_000)
    N = 30_000
    a = [
        synthetic_risk(est._codes, ghk, weights, cards, N, 300, np.random.default_rng(s)).B
        for s in range(150)
    ]
    b = [
        synthetic_risk(est._codes, stream, weights, cards, N, 300, np.random.default_rng(s)).B
        for s in range(150)
    ]
    assert stats.ttest_ind(a, b, equal_var=False).pvalue > 0.01
    assert stats.ks_2samp(a, b).pvalue > 0.01


def test_rectangle_probabilities_match_exact_normal_probabilities() -> None:
    """GHK against the exact bivariate normal (Owen's T) and scipy's trivariate CDF; cells sum to 1."""
    rng = np.random.default_rng(0)
    points = stats.qmc.Sobol(3, scramble=True, seed=rng).random(1024)
    R2 = np.array([[1.0, 0.7], [0.7, 1.0]])
    lower = np.array([[-0.5, -np.inf], [0.2, -1.0], [-np.inf, 1.5]])
    upper = np.array([[0.4, 0.3], [1.7, 0.0], [np.inf, np.inf]])
    got = copula.rectangle_probabilities(lower, upper, R2, points[:, :2])

    def bvn(h: float, k: float) -> float:
        h, k = np.clip(h, -38, 38), np.clip(k, -38, 38)
        return float(copula.bvn_cdf(np.array([h]), np.array([k]), 0.7)[0])

    for row, (lo, hi) in enumerate(zip(lower, upper, strict=True)):
        want = bvn(hi[0], hi[1]) - bvn(lo[0], hi[1]) - bvn(hi[0], lo[1]) + bvn(lo[0], lo[1])
        assert got[row] == pytest.approx(want, rel=5e-3, abs=1e-6)
    R3 = np.array([[1.0, 0.5, -0.3], [0.5, 1.0, 0.2], [-0.3, 0.2, 1.0]])
    mvn = stats.multivariate_normal(np.zeros(3), R3)
    lo3, hi3 = np.array([-0.3, -1.2, 0.1]), np.array([0.9, 0.4, 2.0])
    want3 = mvn.cdf(hi3, lower_limit=lo3, rng=np.random.default_rng(1))
    got3 = copula.rectangle_probabilities(lo3[None], hi3[None], R3, points)[0]
    assert got3 == pytest.approx(want3, rel=1e-2)
    # every cell of a 3 x 3 x 2 grid: the probabilities add up to one
    cuts = [
        np.array([-np.inf, -0.4, 0.6, np.inf]),
        np.array([-np.inf, 0.0, 1.0, np.inf]),
        np.array([-np.inf, 0.3, np.inf]),
    ]
    cells = np.array(list(itertools.product(range(3), range(3), range(2))))
    lo = np.column_stack([cuts[c][cells[:, c]] for c in range(3)])
    hi = np.column_stack([cuts[c][cells[:, c] + 1] for c in range(3)])
    total = copula.rectangle_probabilities(lo, hi, R3, points).sum()
    assert total == pytest.approx(1.0, abs=2e-3)


# --------------------------------------------------------------------------- the checkerboard D-vine


def _all_classes(cards: tuple[int, ...]) -> np.ndarray:
    return np.array(list(itertools.product(*[range(k) for k in cards])), dtype=np.int64)


def test_dvine_reproduces_each_adjacent_pairs_contingency_table() -> None:
    """The vine's mass sums to one and its adjacent pairs' margins are the sample's tables exactly."""
    table = correlated_table(500, 3)
    est = DVineCopulaEstimator(random_state=0, repetitions=1).fit(table, 5000)
    classes = _all_classes(table.cardinalities)
    p = est.class_probabilities(classes, np.random.default_rng(0))
    assert p.sum() == pytest.approx(1.0)
    for a, b in pairwise(est.order_):
        ka, kb = table.cardinalities[a], table.cardinalities[b]
        model = np.bincount(classes[:, a] * kb + classes[:, b], weights=p, minlength=ka * kb).reshape(ka, kb)
        np.testing.assert_allclose(model, copula.pair_counts(table, a, b) / table.n, atol=1e-12)


def test_dvine_is_invariant_to_category_labels_and_column_order() -> None:
    """Relabelling categories and reordering columns permutes the class probabilities, nothing else."""
    table = correlated_table(600, 4)
    rng = np.random.default_rng(9)
    perms = [rng.permutation(k) for k in table.cardinalities]
    cols = [2, 0, 3, 1]
    per_record = table.records()
    relabelled = np.column_stack([perms[c][per_record[:, c]] for c in range(per_record.shape[1])])[:, cols]
    other = SampleTable.from_codes(relabelled)
    a = DVineCopulaEstimator(random_state=0, repetitions=1).fit(table, 6000)
    b = DVineCopulaEstimator(random_state=0, repetitions=1).fit(other, 6000)
    classes = _all_classes(table.cardinalities)
    mapped = np.column_stack([perms[c][classes[:, c]] for c in range(classes.shape[1])])[:, cols]
    np.testing.assert_allclose(
        a.class_probabilities(classes, rng), b.class_probabilities(mapped, rng), rtol=1e-12, atol=1e-15
    )


def test_dvine_draws_follow_its_class_probabilities() -> None:
    """Chi-square goodness of fit of 200,000 drawn records to the vine's own mass function."""
    table = correlated_table(300, 5, cards=(4, 3, 5))
    est = DVineCopulaEstimator(random_state=0, repetitions=1).fit(table, 3000)
    classes = _all_classes(table.cardinalities)
    p = est.class_probabilities(classes, np.random.default_rng(0))
    keys = est._codes(200_000, np.random.default_rng(1)) @ radices(table.cardinalities)
    observed = np.bincount(keys, minlength=classes.shape[0])
    assert observed[p == 0].sum() == 0
    expected = p[p > 0] * observed.sum()
    assert stats.chisquare(observed[p > 0], expected).pvalue > 0.001


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 7).flatmap(lambda m: st.lists(st.floats(0, 1), min_size=m * m, max_size=m * m)))
def test_max_weight_path_is_optimal(values: list[float]) -> None:
    m = round(len(values) ** 0.5)
    w = np.array(values).reshape(m, m)
    w = (w + w.T) / 2

    def total(path: list[int] | tuple[int, ...]) -> float:
        return float(sum(w[a, b] for a, b in pairwise(path)))

    path = max_weight_path(w)
    assert sorted(path) == list(range(m))
    assert total(path) == pytest.approx(max(total(p) for p in itertools.permutations(range(m))))


# --------------------------------------------------------------------------- seeds and intervals


def test_average_is_the_mean_of_the_two_estimates_it_prints() -> None:
    table = correlated_table(800, 6)
    N = 20_000
    for seed in (0, 17):
        avg = make_estimator("average", random_state=seed).fit(table, N)
        g = make_estimator("gaussian_copula", random_state=seed).fit(table, N)
        v = make_estimator("dvine_copula", random_state=seed).fit(table, N)
        assert avg.B_ == (g.B_ + v.B_) / 2
        assert isinstance(avg, AverageCopulaEstimator)
        assert avg.gaussian_.B_runs_ == g.B_runs_ and avg.dvine_.B_runs_ == v.B_runs_
        assert isinstance(g, GaussianCopulaEstimator) and isinstance(v, DVineCopulaEstimator)
        assert AverageCopulaEstimator.from_fitted(g, v).B_ == avg.B_


@pytest.mark.parametrize("name", ["gaussian_copula", "dvine_copula", "average"])
def test_a_seed_reproduces_every_synthesis(name: str) -> None:
    """One seed, the same R syntheses: in a fresh estimator, on either path of the rest of the
    population (class probabilities at N = 10^7, streamed at N = 3,000) and after other fits
    have drawn from numpy's global state; another seed gives other syntheses."""
    table = correlated_table(600, 11)
    for N in (3_000, 10**7):
        first = make_estimator(name, random_state=42, repetitions=4).fit(table, N)
        np.random.seed(7)
        np.random.random(100)
        make_estimator(name, random_state=5, repetitions=2).fit(table, N)
        again = make_estimator(name, random_state=42, repetitions=4).fit(table, N)
        assert again.B_runs_ == first.B_runs_  # type: ignore[attr-defined]
        assert again.B_ == first.B_ and again.B_interval_ == first.B_interval_  # type: ignore[attr-defined]
        other = make_estimator(name, random_state=43, repetitions=4).fit(table, N)
        assert other.B_runs_ != first.B_runs_  # type: ignore[attr-defined]


@pytest.mark.parametrize("name", ["gaussian_copula", "dvine_copula", "average"])
def test_estimate_is_the_mean_of_R_syntheses_with_its_monte_carlo_interval(name: str) -> None:
    table = correlated_table(500, 7)
    est = make_estimator(name, random_state=3, repetitions=12).fit(table, 10_000)
    runs = np.array(est.B_runs_)  # type: ignore[attr-defined]
    assert runs.size == 12 and np.unique(runs).size > 1  # independent syntheses
    assert pytest.approx(runs.mean()) == est.B_
    lo, hi = est.B_mc_interval_  # type: ignore[attr-defined]
    assert lo < est.B_ < hi
    assert lo >= 1 / 10_000 and hi <= 1.0
    single = make_estimator(name, random_state=3, repetitions=1).fit(table, 10_000)
    assert single.B_mc_interval_ is None  # type: ignore[attr-defined]


# --------------------------------------------------------------------------- bounded and interruptible


@pytest.mark.parametrize("name", ["gaussian_copula", "dvine_copula", "average"])
def test_a_billion_people_need_no_billion_records(name: str) -> None:
    """N = 10^9 (and 10^12): the estimate comes from the synthetic sample's classes and their
    probabilities, never from N records (this would need 8 GB per 10^9 keys)."""
    table = correlated_table(1000, 8)
    for N in (10**9, 10**12):
        est = make_estimator(name, random_state=0, repetitions=2).fit(table, N)
        # 360 possible classes: each about N/360 people, so B is about (classes drawn) / N
        assert 1 / N <= est.B_ <= 400 / N


def _long_streamed_synthesis() -> None:
    """10^10 records streamed (hours)."""
    est = GaussianCopulaEstimator(random_state=0, repetitions=1).fit(correlated_table(300, 9), 300)
    rest = streamed_rest(est._codes, est._weights)
    synthetic_risk(est._codes, rest, est._weights, est._cardinalities, 10**10, 300, np.random.default_rng(0))


def _long_dvine_sample() -> None:
    """A synthetic sample of 10^9 records drawn from the d-vine (minutes)."""
    est = DVineCopulaEstimator(random_state=0, repetitions=1).fit(correlated_table(300, 9), 300)
    rest = multinomial_rest(est.class_probabilities)
    synthetic_risk(
        est._codes, rest, est._weights, est._cardinalities, 10**10, 10**9, np.random.default_rng(0)
    )


def _long_ghk() -> None:
    """GHK probabilities of 400,000 cells (a minute or more)."""
    rng = np.random.default_rng(0)
    m = 8
    corr = copula.nearest_correlation(np.full((m, m), 0.5) + 0.5 * np.eye(m))
    lower = rng.normal(-0.5, 0.5, (400_000, m))
    copula.adaptive_rectangle_probabilities(lower, lower + 0.3, corr, rng)


def _long_mi_fit() -> None:
    """The MI fit of pairs of 900-category columns (a bisection over 810,000 cells per step),
    again and again for up to two minutes: one fit takes about 0.5 s on a quiet machine, as long
    as the test waits before its SIGINT, which then came after the work (and killed the run)."""
    rng = np.random.default_rng(0)
    x = rng.integers(0, 900, 20_000)
    codes = np.column_stack([x, (x + rng.integers(0, 30, x.size)) % 900, rng.integers(0, 900, x.size)])
    table = SampleTable.from_codes(codes)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        copula.mi_matched_correlation(table)


@pytest.mark.parametrize("job", [_long_streamed_synthesis, _long_dvine_sample, _long_ghk, _long_mi_fit])
def test_sigint_during_long_copula_work_is_answered(job: object) -> None:
    """A real SIGINT, with the command line's handler, during each long loop of the copula
    estimators: Interrupted is raised after at most one step of that loop (each is a few vectorized
    calls). The latency is printed (docs/risk.md); the jobs themselves would run for minutes."""
    from safeshare.app_runner import signal_guard

    assert callable(job)
    sent: list[float] = []

    def fire() -> None:
        sent.append(time.monotonic())
        os.kill(os.getpid(), signal.SIGINT)

    timer = threading.Timer(0.5, fire)
    with signal_guard(), pytest.raises(Interrupted):
        timer.start()
        job()
    timer.join()
    print(f"{job.__name__}: interrupt answered {time.monotonic() - sent[0]:.3f} s after SIGINT")


def test_gaussian_pair_copula_variant() -> None:
    """``pair_copulas="gaussian"``: the first tree holds the MI-matched correlations, the higher trees
    are fitted, and its syntheses (streamed) have the brute-force distribution."""
    table = correlated_table(400, 10, cards=(4, 3, 5))
    N = 4000
    est = DVineCopulaEstimator(pair_copulas="gaussian", random_state=0, repetitions=60).fit(table, N)
    assert est.vine_ is not None and est.vine_.trunc_lvl == 2
    corr = copula.mi_matched_correlation(table)
    for e, (a, b) in enumerate(pairwise(est.order_)):
        assert float(est.vine_.get_pair_copula(0, e).parameters[0, 0]) == pytest.approx(corr[a, b])
    brute = np.array([_brute_force_B(est, N, table.n, 1000 + s) for s in range(60)])
    assert stats.ks_2samp(est.B_runs_, brute).pvalue > 0.01


# --------------------------------------------------------------------------- interval coverage on Adult

ADULT_POOL = list(ADULT_QUASI_IDENTIFIERS)


@pytest.fixture(scope="module")
def adult_population() -> ev.Population:
    from safeshare.adult import ADULT_COLUMNS

    opts = {"header": None, "names": list(ADULT_COLUMNS), "skipinitialspace": True, "dtype": str}
    adult = ROOT / "examples" / "adult"
    frame = pd.concat(
        [pd.read_csv(adult / "adult.data", **opts), pd.read_csv(adult / "adult.test", skiprows=1, **opts)],
        ignore_index=True,
    )
    return ev.Population.from_frame(frame, ADULT_POOL)


def _coverage(population: ev.Population, fraction: float, samples: int, name: str, seed: int) -> float:
    """Share of ``samples`` study points whose estimate's ``B_interval_`` holds the exact B. Each
    point draws its quasi-identifiers as the evaluation does (a random number of them, a random
    subset of the pool) and a simple random sample at ``fraction``, from a seed the evaluations
    behind the interval never used."""
    N, m = population.size, len(population.columns)
    hits = 0
    for s in range(samples):
        rng = np.random.default_rng([seed, s])
        qis = tuple(sorted(int(q) for q in rng.choice(m, size=int(rng.integers(1, m + 1)), replace=False)))
        rows = np.sort(rng.choice(N, round(fraction * N), replace=False))
        est = make_estimator(name, random_state=s).fit(ev.sample_table(population, qis, rows), N)
        lo, hi = est.B_interval_  # type: ignore[attr-defined]
        hits += lo <= ev.exact_B(population, qis, rows) <= hi
    return hits / samples


@pytest.mark.slow  # make test-all: a coverage study on Adult (issue 36)
def test_average_interval_covers_the_true_B_on_adult(adult_population: ev.Population) -> None:
    """Adult (N = 48,842) as the population, 50 samples at f = 0.1 on random quasi-identifier sets:
    the 95 % interval of ``average`` holds the exact B in at least 90 % of them."""
    coverage = _coverage(adult_population, 0.1, 50, "average", seed=2024)
    print(f"average, Adult, f = 0.1: the interval held the true B in {coverage:.0%} of 50 samples")
    assert coverage >= 0.9


@pytest.mark.slow
@pytest.mark.parametrize("name", ["gaussian_copula", "dvine_copula", "average"])
@pytest.mark.parametrize("fraction", [0.05, 0.5])
def test_interval_coverage_on_adult(adult_population: ev.Population, name: str, fraction: float) -> None:
    assert _coverage(adult_population, fraction, 50, name, seed=2025) >= 0.9


# --------------------------------------------------------------------------- the command line, real signals


@pytest.mark.parametrize(
    ("name", "sig", "status"),
    [("average", signal.SIGINT, 130), ("dvine_copula", signal.SIGTERM, 143)],
)
def test_a_signal_during_a_copula_estimate_ends_the_command(
    tmp_path: Path, name: str, sig: signal.Signals, status: int
) -> None:
    """``safeshare risk`` on 2,000 Adult records (9 QIs, N = 10^8) with 100 syntheses (10^5 for the
    d-vine, whose syntheses are cheaper; hours either way;
    allowed past the default ``--max-synthetic-records``, within the memory):
    the signal, sent while the estimator runs, ends the process with 128 + its number and no
    output. The latency is printed (docs/risk.md)."""

    lines = (ROOT / "examples" / "adult" / "adult.data").read_text().splitlines()[:2000]
    data = tmp_path / "sample.csv"
    data.write_text("\n".join(lines) + "\n")
    from safeshare.adult import ADULT_COLUMNS
    from tests.test_risk_outputs import _start_on_a_terminal, _wait_for

    out = tmp_path / "out"
    proc, master = _start_on_a_terminal(
        [str(data), "--no-header",
         "--names", ",".join(ADULT_COLUMNS), "--qi", ",".join(ADULT_POOL),
         "--population-size", str(10**8), "--estimator", name,
         "--simulations", str(100 if name == "average" else 100_000),
         "--max-synthetic-records", str(10**15),
         "--out", str(out)],
    )  # fmt: skip
    try:
        _wait_for(master, proc, f"estimating B with {name}")  # on a terminal the phases show
        time.sleep(1.0)  # past the fit (2,000 records), inside the syntheses
        sent = time.monotonic()
        proc.send_signal(sig)
        proc.wait(timeout=60)
        latency = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(master)
    assert proc.returncode == status
    assert not (out / "risk.json").exists()
    print(f"{name}: exit {proc.returncode} {latency:.3f} s after {sig.name}")
