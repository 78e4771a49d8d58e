"""The Monte Carlo PK forecast against exact values and a person-by-person reference (issue 10)."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from scipy import stats

from safeshare.errors import InputError
from safeshare.surveillance.policies import default_space
from safeshare.surveillance.simulate import (
    VolumeRisk,
    draw_series,
    pk_volume,
    seeded,
    series_risk,
    series_risk_dense,
    series_risk_windows,
    simulate_series,
    upper_quantile,
)


def _tiny_space_population(seed: int = 3, people: int = 400) -> tuple[np.ndarray, object]:
    space = default_space()
    rng = np.random.default_rng(seed)
    pop = np.zeros(space.n_bins, dtype=np.int64)
    bins = rng.choice(space.n_bins, 60, replace=False)  # 60 populated bins, uneven sizes
    pop[bins] = rng.multinomial(people, rng.dirichlet(np.ones(60)))
    return pop, space


def test_everybody_in_one_group_gives_pk_zero_or_one() -> None:
    pop, space = _tiny_space_population()
    top = space.grouping(space.parse("****"))
    assert (pk_volume(pop, top, 11, k=11, sims=50, seed=1) == 0).all()
    assert (pk_volume(pop, top, 10, k=11, sims=50, seed=1) == 1).all()
    assert (pk_volume(pop, top, 0, k=11, sims=5, seed=1) == 0).all()


def test_groups_of_one_person_give_pk_one() -> None:
    space = default_space()
    pop = np.ones(space.n_bins, dtype=np.int64)
    bottom = space.grouping(space.parse("0Ase"))
    assert (pk_volume(pop, bottom, 500, k=2, sims=20, seed=1) == 1).all()
    risk = simulate_series(pop, [5, 0, 7], bottom, k=2, lag=2, sims=10, seed=1)
    np.testing.assert_array_equal(risk.pk, np.tile([1.0, 1.0, 1.0], (10, 1)))
    np.testing.assert_allclose(risk.marketer, 1.0)  # every record is a population unique


def test_mean_pk_equals_the_exact_hypergeometric_expectation() -> None:
    """E[PK_k] = (1/v) sum_g sum_{c<k} c P(X_g = c), X_g ~ Hypergeom(N, F_g, v)."""
    pop, space = _tiny_space_population()
    grouping = space.grouping(space.parse("2B**"))
    v, k, sims = 40, 5, 4000
    sizes = np.bincount(grouping[0], weights=pop, minlength=grouping[1])
    n = int(pop.sum())
    c = np.arange(1, k)
    exact = sum((c * stats.hypergeom.pmf(c, n, int(f), v)).sum() for f in sizes if f > 0) / v
    sample = pk_volume(pop, grouping, v, k=k, sims=sims, seed=7)
    assert 0.05 < exact < 0.95
    assert abs(sample.mean() - exact) < 4 * sample.std() / np.sqrt(sims)


def _reference(pop: np.ndarray, groups: np.ndarray, cases: list[int], k: int, lag: int, sims: int, seed: int):
    """Person by person: shuffle the people, take each period's cases in turn, count groups with dicts."""
    rng = np.random.default_rng(seed)
    people = np.repeat(np.arange(pop.size), pop)
    group_people = Counter(groups[people].tolist())
    pk = np.zeros((sims, len(cases)))
    mk = np.zeros((sims, len(cases)))
    for s in range(sims):
        order = rng.permutation(people)
        diagnosed: list[tuple[int, int]] = []  # (period, group)
        pos = 0
        for t, x in enumerate(cases):
            diagnosed += [(t, int(groups[b])) for b in order[pos : pos + x]]
            pos += x
            window = [g for p, g in diagnosed if p > t - lag]
            sizes = Counter(window)
            pk[s, t] = sum(1 for g in window if sizes[g] < k) / len(window) if window else 0.0
            released = Counter(g for _, g in diagnosed)
            mk[s, t] = (
                sum(f / group_people[g] for g, f in released.items()) / len(diagnosed) if diagnosed else 0.0
            )
    return pk, mk


def test_series_agrees_with_person_by_person_reference() -> None:
    pop, space = _tiny_space_population(people=300)
    node = space.parse("3C*e")
    grouping = space.grouping(node)
    cases, k, lag, sims = [6, 0, 14, 9, 25, 3], 5, 2, 1500
    ref_pk, ref_mk = _reference(pop, grouping[0], cases, k, lag, sims, seed=11)
    got = simulate_series(pop, cases, grouping, k=k, lag=lag, sims=sims, seed=12)
    for t in range(len(cases)):
        for ours, ref in ((got.pk[:, t], ref_pk[:, t]), (got.marketer[:, t], ref_mk[:, t])):
            if np.ptp(ref) == 0 and np.ptp(ours) == 0:
                assert ours[0] == pytest.approx(ref[0])
                continue
            assert stats.ks_2samp(ours, ref).pvalue > 1e-3, t
            se = np.sqrt(ours.var() / sims + ref.var() / sims)
            assert abs(ours.mean() - ref.mean()) < 4.5 * se + 1e-3
            q_ours = np.quantile(ours, [0.025, 0.5, 0.975])
            q_ref = np.quantile(ref, [0.025, 0.5, 0.975])
            assert np.all(np.abs(q_ours - q_ref) <= 0.1 + 1e-9), (t, q_ours, q_ref)
    assert got.window_cases.tolist() == [6, 6, 14, 23, 34, 28]


def test_common_random_numbers_make_pk_monotone_per_draw() -> None:
    pop, space = _tiny_space_population()
    vr = VolumeRisk(pop, 30, 200, seeded(5))
    draw = draw_series(pop, [10, 5, 20], 100, seeded(6))
    nodes = space.policies()
    pks = {n: vr.pk(space.grouping(n), 11, key=n) for n in nodes}
    series = {n: series_risk(draw, space.grouping(n), 11, 2).pk for n in nodes[::7]}
    for a in nodes:
        for b in space.lattice.successors(a):
            assert (pks[b] <= pks[a]).all(), (a, b)
    for a in series:
        for b in series:
            if space.lattice.leq(a, b):
                assert (series[b] <= series[a] + 1e-12).all()


def test_rolled_up_group_counts_equal_record_by_record_counts() -> None:
    """The two exact paths of VolumeRisk.pk: cached roll-up of group counts, and per-record groups."""
    pop, space = _tiny_space_population()
    cached = VolumeRisk(pop, 50, 30, seeded(9))
    fresh = VolumeRisk(pop, 50, 30, seeded(9))
    assert (fresh.records >= 0).all() and fresh.records.shape == (30, 50)
    np.testing.assert_array_equal(np.sort(fresh.records, axis=1), fresh.records)  # bins in order
    for code in ["1Bse", "2B*e", "2C**", "4***"]:  # each rolled up from the previous
        node = space.parse(code)
        counts = cached.group_counts(space.grouping(node), key=node)
        rolled = np.where(counts < 11, counts, 0).sum(axis=1) / 50
        np.testing.assert_array_equal(rolled, fresh.pk_records(space.grouping(node), 11))
        np.testing.assert_array_equal(rolled, cached.pk(space.grouping(node), 11, key=node))
        assert counts.sum() == 30 * 50


@pytest.mark.parametrize(("code", "lag"), [("3C*e", 1), ("2Bse", 3), ("****", 5)])
def test_window_loop_equals_dense_counts(code: str, lag: int) -> None:
    pop, space = _tiny_space_population(people=300)
    draw = draw_series(pop, [4, 0, 0, 12, 30, 1, 0, 22], 40, seeded(8))
    a = series_risk_windows(draw, space.grouping(space.parse(code)), 5, lag)
    b = series_risk_dense(draw, space.grouping(space.parse(code)), 5, lag)
    c = series_risk(draw, space.grouping(space.parse(code)), 5, lag)  # one of the two
    np.testing.assert_array_equal(c.pk, a.pk if code != "****" else b.pk)
    np.testing.assert_allclose(a.pk, b.pk, rtol=0, atol=1e-12)
    np.testing.assert_allclose(a.marketer, b.marketer, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(a.window_cases, b.window_cases)


def test_seeded_runs_are_reproducible_and_seeds_matter() -> None:
    pop, space = _tiny_space_population()
    g = space.grouping(space.parse("4B**"))
    a = simulate_series(pop, [20, 30], g, sims=50, seed=3).pk
    b = simulate_series(pop, [20, 30], g, sims=50, seed=3).pk
    c = simulate_series(pop, [20, 30], g, sims=50, seed=4).pk
    assert 0 < a.mean() < 1
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def test_bad_parameters() -> None:
    pop, space = _tiny_space_population(people=100)
    g = space.grouping(space.parse("****"))
    with pytest.raises(InputError, match="101 cases but only 100 people"):
        simulate_series(pop, [50, 51], g, sims=2)
    with pytest.raises(InputError, match="period 2: negative"):
        simulate_series(pop, [5, -1], g, sims=2)
    with pytest.raises(InputError, match="lagging window"):
        simulate_series(pop, [5], g, lag=0, sims=2)


def test_upper_quantile_is_numpys_linear_quantile() -> None:
    rng = np.random.default_rng(4)
    for n in (1, 2, 7, 1000):
        x = rng.integers(0, 30, n) / 30
        for q in (0.0, 0.025, 0.5, 0.975, 0.99, 1.0):
            assert upper_quantile(x, q) == np.quantile(x, q), (n, q)


def test_group_counts_of_any_cached_parent_and_any_dtype() -> None:
    """Roll-ups from whichever finer policy is cached equal counts computed from the bins directly,
    for volumes stored in uint8, uint16 and uint32."""
    pop, space = _tiny_space_population(people=80_000)
    for volume in (40, 300, 70_000):
        vr = VolumeRisk(pop, volume, 6, seeded(volume))
        assert vr.bin_counts.sum(axis=1).tolist() == [volume] * 6
        for code in ["0Ase", "1Bse", "1C*e", "3***", "****", "*A*e", "2Cs*"]:
            node = space.parse(code)
            direct = VolumeRisk(pop, volume, 6, seeded(volume)).group_counts(space.grouping(node))
            np.testing.assert_array_equal(vr.group_counts(space.grouping(node), key=node), direct)
            np.testing.assert_array_equal(
                vr.pk(space.grouping(node), 11, key=node), vr.pk_records(space.grouping(node), 11)
            )


@pytest.mark.parametrize(("code", "lag"), [("0Ase", 2), ("3C*e", 1), ("****", 3)])
def test_series_paths_equal_the_shared_risk_measures(code: str, lag: int) -> None:
    """Both series paths give, per simulation and period, exactly risk.measures' PK_k of the window's
    class sizes and marketer risk of the cumulative release's class sizes (one definition)."""
    from safeshare.risk.measures import marketer_risk, pk_share

    pop, space = _tiny_space_population(people=300)
    cases = [3, 0, 9, 15, 1, 20]
    draw = draw_series(pop, cases, 12, seeded(5))
    grouping = space.grouping(space.parse(code))
    group_of_bin = np.asarray(grouping[0])[draw.populated]
    people = np.bincount(group_of_bin, weights=draw.population, minlength=grouping[1])
    ends = np.cumsum(cases)
    for risk in (series_risk_windows(draw, grouping, 5, lag), series_risk_dense(draw, grouping, 5, lag)):
        for s in range(12):
            groups = group_of_bin[draw.order[s]]
            for t in range(len(cases)):
                first = ends[t - lag] if t >= lag else 0
                window = np.bincount(groups[first : ends[t]], minlength=grouping[1])
                released = np.bincount(groups[: ends[t]], minlength=grouping[1])
                assert risk.pk[s, t] == pytest.approx(float(pk_share(window, 5)), abs=1e-12)
                assert risk.marketer[s, t] == pytest.approx(float(marketer_risk(released, people)), abs=1e-12)


def test_volume_pk_is_the_shared_pk_share() -> None:
    from safeshare.risk.measures import pk_share

    pop, space = _tiny_space_population()
    vr = VolumeRisk(pop, 37, 25, seeded(2))
    for code in ("0Ase", "2B*e", "****"):
        grouping = space.grouping(space.parse(code))
        group_of_bin = np.asarray(grouping[0])[np.flatnonzero(pop > 0)]
        for s in range(25):
            sizes = np.bincount(group_of_bin, weights=vr.bin_counts[s], minlength=grouping[1]).astype(int)
            assert vr.pk(grouping, 11)[s] == pytest.approx(float(pk_share(sizes, 11)), abs=1e-12)
