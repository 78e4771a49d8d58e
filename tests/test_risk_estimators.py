"""Estimators of B at the limits their models pin down, and against exact B on Adult."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from safeshare.adult import ADULT_COLUMNS
from safeshare.errors import InputError
from safeshare.risk import copula
from safeshare.risk.classes import ClassSizeHistogram, SampleTable
from safeshare.risk.estimators import ESTIMATORS, estimator_names, make_estimator
from safeshare.risk.estimators.benedetti_franconi import individual_risk
from safeshare.risk.estimators.entropy import expected_inverse_binomial
from safeshare.risk.estimators.snb import snb_expected_c1_c2
from safeshare.risk.measures import class_sizes, risk_measures

ROOT = Path(__file__).resolve().parents[1]
COLS = list(ADULT_COLUMNS)
HISTOGRAM_ONLY = ["benedetti_franconi", "hypothesis_test", "zayatz", "pitman", "snb", "dankar"]
SYNTHETIC = ["gaussian_copula", "dvine_copula", "average"]


def test_registry_names() -> None:
    assert estimator_names()[:6] == [
        "entropy",
        "hypothesis_test",
        "benedetti_franconi",
        "gaussian_copula",
        "dvine_copula",
        "average",
    ]
    assert set(estimator_names()) == set(ESTIMATORS) >= {"pitman", "zayatz", "snb", "dankar"}
    with pytest.raises(InputError, match="unknown estimator"):
        make_estimator("nope")
    with pytest.raises(InputError, match="frequency table"):
        make_estimator("entropy").fit(ClassSizeHistogram.from_sizes([1, 2]), 10)
    with pytest.raises(InputError, match="smaller than the sample"):
        make_estimator("zayatz").fit(ClassSizeHistogram.from_sizes([5]), 4)
    with pytest.raises(InputError, match="correlation"):
        make_estimator("gaussian_copula", correlation="pearson").fit(_table([[0], [1]]), 4)


def _table(rows: list[list[int]]) -> SampleTable:
    return SampleTable.from_codes(np.array(rows))


@pytest.mark.parametrize("name", ["benedetti_franconi", "hypothesis_test", "zayatz"])
def test_sampling_fraction_one_gives_exact_B(name: str) -> None:
    sizes = [1, 1, 2, 3, 3, 7]
    hist = ClassSizeHistogram.from_sizes(sizes)
    exact = risk_measures(sizes, population_size=hist.n).B
    assert pytest.approx(exact) == make_estimator(name).fit(hist, hist.n).B_


@pytest.mark.parametrize("name", ["benedetti_franconi", "hypothesis_test"])
def test_sampling_fraction_near_one_is_near_exact(name: str) -> None:
    sizes = [1, 1, 2, 3, 3, 7] * 50
    hist = ClassSizeHistogram.from_sizes(sizes)
    exact = risk_measures(sizes, population_size=hist.n).B
    assert exact is not None
    est = make_estimator(name).fit(hist, int(hist.n / 0.99)).B_
    assert est == pytest.approx(exact, rel=0.06)


def test_every_record_unique_in_the_population() -> None:
    hist = ClassSizeHistogram.from_sizes([1] * 200)
    for name in ("benedetti_franconi", "hypothesis_test", "zayatz"):
        assert pytest.approx(1.0) == make_estimator(name).fit(hist, 200).B_


def test_one_class_gives_one_over_N() -> None:
    table = _table([[0, 0]] * 300)
    N = 3000
    for name in ["entropy", *SYNTHETIC]:
        assert pytest.approx(1 / N) == make_estimator(name, random_state=1, chunk_size=1000).fit(table, N).B_
    # Benedetti-Franconi: r = p/(f - (1-p)) with p = f/F^ = n/N, i.e. about 1/N
    assert pytest.approx(1 / N, rel=0.01) == make_estimator("benedetti_franconi").fit(table, N).B_
    # Zayatz takes the sample's class sizes as the population's: F = n
    assert pytest.approx(1 / 300) == make_estimator("zayatz").fit(table, N).B_


def test_unique_values_single_qi_copulas_match_the_multinomial_model() -> None:
    """One QI with n distinct values and N = n: every model draws F = 1 + Bin(N-1, 1/n)."""
    n = 2000
    table = _table([[i] for i in range(n)])
    model = float(expected_inverse_binomial(np.array([1 / n]), n)[0])  # 1 - (1 - 1/n)^n
    assert model == pytest.approx(1 - (1 - 1 / n) ** n)
    assert pytest.approx(model) == make_estimator("entropy").fit(table, n).B_
    for name in SYNTHETIC:
        est = make_estimator(name, random_state=3, repetitions=3).fit(table, n).B_
        assert est == pytest.approx(model, abs=0.02)


def test_benedetti_franconi_closed_forms_are_the_negative_binomial_expectation() -> None:
    for f in (1, 2, 3, 5):
        for p in (0.1, 0.5):
            exact = individual_risk(f, p, "exact")
            x = np.arange(20000)
            direct = float((stats.nbinom.pmf(x, f, p) / (f + x)).sum())
            assert exact == pytest.approx(direct, rel=1e-9)
            if f <= 2:
                assert individual_risk(f, p) == pytest.approx(direct, rel=1e-9)
    assert individual_risk(1, 0.1) == pytest.approx(0.255843, abs=1e-6)  # REFERENCE.md C, sdcMicro
    assert individual_risk(3, 0.1) == pytest.approx(0.047619, abs=1e-6)


def test_benedetti_franconi_population_uniques_are_sdcmicros_tau1() -> None:
    """Issue 30, item 14: the estimated population uniques are sdcMicro's tau_1, the sum over the
    sample uniques of the model's P(F = 1 | f = 1), not the sample's unique count."""
    sizes = [1] * 40 + [2] * 10 + [3] * 5 + [7]
    hist = ClassSizeHistogram.from_sizes(sizes)
    n = hist.n  # 82
    for N, want in ((10 * n, 4.0), (4 * n, 10.0), (n, 40.0)):
        est = make_estimator("benedetti_franconi").fit(hist, N)
        p = n / N  # sdcMicro's p = f / F^ with weights N/n
        tau1 = 40 * float(stats.nbinom.pmf(0, 1, p))  # P(F - 1 = 0) under F - 1 ~ NegBin(1, p)
        assert est.population_uniques_ == pytest.approx(tau1, rel=1e-12) == want
        assert est.population_uniques_ < 40 or n == N  # not the sample's 40 uniques
    assert ESTIMATORS["benedetti_franconi"].uniques_scope == "sample"
    assert {ESTIMATORS[name].uniques_scope for name in HISTOGRAM_ONLY if name != "benedetti_franconi"} == {
        "population"
    }
    # the sample is the population: tau_1 is the exact count of the sample's records unique in it
    exact = risk_measures(sizes, population_size=n).population_uniques_in_sample
    assert make_estimator("benedetti_franconi").fit(hist, n).population_uniques_ == exact == 40


def test_the_uniques_measure_refuses_an_estimator_of_the_samples_uniques() -> None:
    from safeshare.models.risk import RiskThreshold
    from safeshare.risk.release_risk import release_risk

    with pytest.raises(InputError, match=r"benedetti_franconi.*sample's records.*use one of dankar"):
        RiskThreshold(0.1, "uniques", "benedetti_franconi")
    with pytest.raises(InputError, match="not the population's share"):
        release_risk([1, 1, 2], 30, "uniques", "benedetti_franconi")
    assert release_risk([1, 1, 2], 30, "B", "benedetti_franconi") > 0  # B is what it estimates


def test_snb_moments_equal_direct_sums() -> None:
    a, b, pi, K = 0.7, 0.3, 0.2, 1000.0
    F = np.arange(1, 5000)
    prior = stats.nbinom.pmf(F - 1, a, b)
    c1 = K * float((prior * stats.binom.pmf(1, F, pi)).sum())
    c2 = K * float((prior * stats.binom.pmf(2, F, pi)).sum())
    assert snb_expected_c1_c2(K, a, b, pi) == pytest.approx((c1, c2), rel=1e-8)


def test_bvn_cdf_matches_scipy() -> None:
    h = np.array([-1.2, 0.5, 2.0, -0.3, 0.0])
    k = np.array([0.4, -1.0, 1.5, -2.2, 0.7])
    for rho in (-0.8, -0.1, 0.0, 0.45, 0.95):
        want = [
            stats.multivariate_normal(cov=[[1, rho], [rho, 1]]).cdf([x, y]) for x, y in zip(h, k, strict=True)
        ]
        assert copula.bvn_cdf(h, k, rho) == pytest.approx(want, abs=1e-7)


def test_mi_matched_correlation_recovers_a_latent_gaussian() -> None:
    rng = np.random.default_rng(7)
    rho = 0.6
    z = rng.multivariate_normal([0, 0], [[1, rho], [rho, 1]], size=20000)
    codes = np.column_stack([np.digitize(z[:, 0], [-1, 0, 0.8]), np.digitize(z[:, 1], [-0.5, 0.3, 1.2, 2])])
    table = SampleTable.from_codes(codes)
    assert copula.mi_matched_correlation(table)[0, 1] == pytest.approx(rho, abs=0.03)
    independent = SampleTable.from_codes(rng.integers(0, 4, size=(20000, 2)))
    assert abs(copula.mi_matched_correlation(independent)[0, 1]) < 0.03


@pytest.fixture(scope="module")
def adult() -> pd.DataFrame:
    opts = {"header": None, "names": COLS, "skipinitialspace": True, "dtype": str}
    train = pd.read_csv(ROOT / "examples/adult/adult.data", **opts)
    test = pd.read_csv(ROOT / "examples/adult/adult.test", skiprows=1, **opts)
    return pd.concat([train, test], ignore_index=True)


@pytest.mark.parametrize(("qi", "fraction"), [(["age", "sex", "race", "marital-status"], 0.3)])
def test_estimators_against_exact_B_on_adult(adult: pd.DataFrame, qi: list[str], fraction: float) -> None:
    """Adult (N = 48,842) as the population; a fixed-seed sample; the paper's ordering holds."""
    sample = adult.sample(frac=fraction, random_state=1)
    f, F = class_sizes(sample, qi, adult)
    exact = risk_measures(f, F, len(adult)).B
    assert exact is not None
    table = SampleTable.from_frame(sample, qi)
    est = {n: make_estimator(n, random_state=0).fit(table, len(adult)).B_ for n in estimator_names()}
    for name in SYNTHETIC:
        assert est[name] == pytest.approx(exact, abs=0.01), name
    assert est["entropy"] > exact  # the paper: entropy overestimates
    assert est["benedetti_franconi"] < exact  # the paper: Benedetti-Franconi underestimates


@pytest.mark.parametrize("n", [2, 7, 50])
def test_pitman_on_an_all_unique_sample_does_not_overflow(n: int) -> None:
    """theta -> infinity for an all-unique sample: no fit (B nan), never an OverflowError."""
    est = make_estimator("pitman").fit(ClassSizeHistogram.from_sizes([1] * n), n)
    assert np.isnan(est.B_) or 0.0 < est.B_ <= 1.0 + 1e-9


def test_a_pitman_fit_kept_for_its_histogram_is_the_fit_computed_afresh() -> None:
    """Issue 36: the fit of a histogram (which does not depend on N) is kept for the next B of the
    same histogram; kept or not, the fit and a refusal are the same."""
    from safeshare.risk.estimators import pitman
    from safeshare.risk.estimators.base import NoEstimate

    rng = np.random.default_rng(36)
    for _ in range(20):
        hist = ClassSizeHistogram.from_sizes(rng.integers(1, 12, size=int(rng.integers(5, 200))))
        try:
            fresh = pitman._pitman_fit(hist, None)
        except NoEstimate as exc:
            for _ in range(2):
                with pytest.raises(NoEstimate, match=str(exc)):
                    pitman.pitman_fit(hist)
            continue
        assert pitman.pitman_fit(hist) == fresh == pitman.pitman_fit(hist)
        assert pitman.pitman_fit(ClassSizeHistogram(hist.sizes.copy(), hist.classes.copy())) == fresh
    unique = ClassSizeHistogram.from_sizes([1, 1, 1])  # every class unique: no maximum
    for _ in range(2):
        with pytest.raises(NoEstimate, match="every sample class is unique"):
            pitman.pitman_fit(unique)
    for i in range(pitman._FIT_CACHE_SIZE + 6):  # the oldest kept fits make way
        pitman.pitman_fit(ClassSizeHistogram.from_sizes([1, 2, 2, 3 + i]))
    assert len(pitman._FITS) == pitman._FIT_CACHE_SIZE
    # B at two N from one kept fit is what two fresh estimators give
    hist = ClassSizeHistogram.from_sizes([1, 1, 2, 3, 3, 5, 8, 1, 2])
    pitman._FITS.clear()
    a = make_estimator("pitman", n_bootstrap=0).fit(hist, 1000).B_
    b = make_estimator("pitman", n_bootstrap=0).fit(hist, 5000).B_
    pitman._FITS.clear()
    assert b == make_estimator("pitman", n_bootstrap=0).fit(hist, 5000).B_
    assert a == make_estimator("pitman", n_bootstrap=0).fit(hist, 1000).B_
