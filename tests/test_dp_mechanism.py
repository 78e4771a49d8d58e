"""The exponential mechanism: exact log-space probabilities, and draws that follow them (chi-square)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from safeshare.dp.drbg import CryptoRandom
from safeshare.dp.mechanism import ExponentialMechanism
from safeshare.errors import InputError


def empirical_matches(probs: np.ndarray, draws: np.ndarray, min_expected: float = 5.0) -> float:
    """Chi-square goodness of fit, pooling outputs expected fewer than ``min_expected`` times."""
    n = draws.size
    counts = np.bincount(draws, minlength=probs.size)
    expected = probs * n
    big = expected >= min_expected
    obs = np.append(counts[big], counts[~big].sum())
    exp = np.append(expected[big], expected[~big].sum())
    if exp[-1] < min_expected:  # too little mass to pool into its own cell
        obs, exp = obs[:-1], exp[:-1]
        assert counts[~big].sum() <= 3 * max(1.0, expected[~big].sum() * 10)
    return float(stats.chisquare(obs, exp * obs.sum() / exp.sum()).pvalue)


def test_probabilities_are_the_normalized_exponentials() -> None:
    u = np.array([0.0, 1.0, 2.0, -np.inf, 0.5])
    m = ExponentialMechanism(epsilon=1.0, sensitivity=0.5)
    expected = np.exp(u[np.isfinite(u)])  # eps u / (2 Du) = u
    expected /= expected.sum()
    got = m.probabilities(u)
    assert got[3] == 0.0
    assert np.allclose(got[np.isfinite(u)], expected, rtol=1e-12)


def test_huge_utilities_do_not_overflow() -> None:
    # exponents up to 1e6: a naive exp overflows to inf, log-sum-exp does not
    u = np.array([1e6, 1e6 - 1.0, 1e6 - 2.0, 1e6 - 3.0, 0.0, -1e6])
    m = ExponentialMechanism(epsilon=2.0, sensitivity=1.0)
    with np.errstate(over="ignore"):
        assert np.isinf(np.exp(m.scores(u))).any()
    logp = m.log_probabilities(u)
    assert np.all(np.isfinite(logp))
    assert logp[-1] == pytest.approx(-2e6 - math.log(np.exp([0, -1, -2, -3]).sum()), rel=1e-12)
    p = m.probabilities(u)
    assert p.sum() == pytest.approx(1.0) and p[-1] == 0.0  # exp(-2e6) underflows; its log does not


@pytest.mark.parametrize("offset", [0.0, 1e7])
def test_draws_follow_the_exact_probabilities(offset: float) -> None:
    rng = np.random.default_rng(0)  # only to make utilities; the draws use the crypto generator
    u = offset + rng.normal(0.0, 3.0, size=60)
    u[5] = -np.inf  # an excluded output
    m = ExponentialMechanism(epsilon=1.0, sensitivity=1.0)
    probs = m.probabilities(u)
    gen = CryptoRandom(99)
    draws = m.sample_many(u, gen, 20_000)
    assert not (draws == 5).any()
    assert m.sample(u, gen) != 5
    assert empirical_matches(probs, draws) > 1e-4


def test_a_wrong_distribution_is_rejected() -> None:
    """The chi-square check has power: draws from a mis-calibrated mechanism fail it."""
    u = np.linspace(0.0, 3.0, 12)
    right = ExponentialMechanism(1.0, 1.0).probabilities(u)
    wrong = ExponentialMechanism(1.0, 0.8)  # sensitivity 20% too small
    gen = CryptoRandom(3)
    draws = wrong.sample_many(u, gen, 20_000)
    assert empirical_matches(right, draws) < 1e-6


@pytest.mark.parametrize(
    ("eps", "sens"), [(0.0, 1.0), (-1.0, 1.0), (1.0, 0.0), (1.0, math.inf), (math.nan, 1.0)]
)
def test_invalid_parameters(eps: float, sens: float) -> None:
    with pytest.raises(InputError):
        ExponentialMechanism(eps, sens)


def test_no_candidate_is_an_error() -> None:
    with pytest.raises(InputError):
        ExponentialMechanism(1.0, 1.0).log_probabilities([-np.inf, -np.inf])
    with pytest.raises(InputError):
        ExponentialMechanism(1.0, 1.0).log_probabilities([np.nan, 1.0])
