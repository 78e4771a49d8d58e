"""Record sampling with the SHAKE-256 generator: statistically Bernoulli(beta), independent, reproducible.

Every statistical test uses a fixed seed, so the suite is deterministic; the
thresholds (p-values > 1e-4) would reject a biased or correlated generator.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from safeshare.data.engines.memory import MemoryEngine
from safeshare.data.engines.sampled import SampledMemoryEngine, restrict_engine
from safeshare.dp.drbg import CryptoRandom, bernoulli_probability, bernoulli_threshold
from safeshare.dp.sampling import draw_sample, sample_engine
from safeshare.errors import InputError


def test_known_answer_of_the_construction() -> None:
    """The stream is SHAKE-256(key || 0x02 || counter) with the documented key derivation."""
    key = hashlib.shake_256(b"safeshare/drbg/v1\x00" + b"int:42").digest(32)
    sub = hashlib.shake_256(key + b"\x01" + b"sampling").digest(32)
    block = hashlib.shake_256(sub + b"\x02" + (0).to_bytes(16, "little")).digest(1 << 16)
    expected = [int.from_bytes(block[8 * i : 8 * i + 8], "little") for i in range(4)]
    got = CryptoRandom(42).stream("sampling").uint64(4)
    assert [int(v) for v in got] == expected


def test_stream_is_continuous_across_calls_and_blocks() -> None:
    a = CryptoRandom("x").uint64(20_000)  # crosses a 64 KiB block boundary
    b = CryptoRandom("x")
    parts = np.concatenate([b.uint64(n) for n in (1, 7, 8191, 3, 11_798)])
    assert np.array_equal(a, parts)


def test_bits_are_uniform() -> None:
    x = CryptoRandom(1).uint64(200_000)
    bits = ((x[:, None] >> np.arange(64, dtype=np.uint64)) & np.uint64(1)).sum(axis=0)
    p = [stats.binomtest(int(c), 200_000, 0.5).pvalue for c in bits]
    assert min(p) > 1e-4 / 64  # Bonferroni over 64 bits
    u = CryptoRandom(2).uniform(100_000)
    assert u.min() >= 0.0 and u.max() < 1.0
    assert stats.kstest(u, "uniform").pvalue > 1e-4


@pytest.mark.parametrize("beta", [0.01, 0.3, 0.75, 0.9])
def test_inclusion_frequency_is_beta(beta: float) -> None:
    draw = draw_sample(300_000, beta, CryptoRandom(7))
    assert stats.binomtest(draw.records_sampled, 300_000, beta).pvalue > 1e-4
    assert draw.beta_exact == beta  # beta >= 2^-12: the threshold floor(beta 2^64) is exact


def test_inclusion_is_independent_of_position_and_of_neighbours() -> None:
    beta, n = 0.4, 400_000
    keep = draw_sample(n, beta, CryptoRandom(11)).keep
    # position: the rate is the same in 100 consecutive blocks (chi-square homogeneity)
    blocks = keep.reshape(100, -1)
    table = np.stack([blocks.sum(axis=1), (~blocks).sum(axis=1)], axis=1)
    assert stats.chi2_contingency(table).pvalue > 1e-4
    # neighbours: record i and record i + lag are independent
    for lag in (1, 2, 7, 64):
        a, b = keep[:-lag], keep[lag:]
        counts = np.array([[np.sum(a & b), np.sum(a & ~b)], [np.sum(~a & b), np.sum(~a & ~b)]])
        assert stats.chi2_contingency(counts).pvalue > 1e-4, lag


def test_same_seed_same_sample_other_seed_other_sample() -> None:
    a = draw_sample(50_000, 0.5, CryptoRandom(123)).keep
    assert np.array_equal(a, draw_sample(50_000, 0.5, CryptoRandom(123)).keep)
    b = draw_sample(50_000, 0.5, CryptoRandom(124)).keep
    c = draw_sample(50_000, 0.5, CryptoRandom("123")).keep  # text and integer seeds differ
    for other in (b, c):
        agree = int((a == other).sum())  # independent draws agree with probability 1/2
        assert stats.binomtest(agree, 50_000, 0.5).pvalue > 1e-4
    # the mechanism's stream is independent of the sampling stream
    rng = CryptoRandom(5)
    assert not np.array_equal(rng.stream("sampling").uint64(8), rng.stream("mechanism").uint64(8))


def test_unseeded_draws_differ_and_hide_their_seed() -> None:
    a, b = CryptoRandom(), CryptoRandom()
    assert not a.seeded and a.seed is None
    assert not np.array_equal(a.uint64(4), b.uint64(4))
    draw = draw_sample(100, 0.5, CryptoRandom())
    assert "seed" not in draw.summary()
    assert draw_sample(100, 0.5, CryptoRandom(9)).summary()["seed"] == 9


def test_threshold_is_exact() -> None:
    assert bernoulli_threshold(0.75) == 3 << 62
    assert bernoulli_probability(0.75) == 0.75
    assert bernoulli_threshold(1.0) == 1 << 64
    with pytest.raises(InputError):
        bernoulli_threshold(1.5)
    with pytest.raises(InputError):
        draw_sample(10, 0.0, CryptoRandom(1))


def test_sampled_engine_holds_only_the_sampled_records() -> None:
    frame = pd.DataFrame({"a": [str(i) for i in range(1000)], "b": ["x", "y"] * 500})
    engine = MemoryEngine(frame)
    sampled, draw = sample_engine(engine, 0.3, CryptoRandom(4))
    assert isinstance(sampled, SampledMemoryEngine)
    assert sampled.n_records() == draw.records_sampled
    assert list(sampled.frame["a"]) == [str(i) for i in np.flatnonzero(draw.keep)]
    counts = sampled.grouped_counts(["b"])
    assert int(counts["__count__"].sum()) == draw.records_sampled
    with pytest.raises(InputError):
        restrict_engine(engine, np.ones(5, dtype=bool))

    class Other:
        name = "spark"

    with pytest.raises(InputError, match="cannot sample"):
        restrict_engine(Other(), draw.keep)  # type: ignore[arg-type]


def test_duckdb_engine_samples_parquet_rows_by_position(tmp_path: Path) -> None:
    from safeshare.data.engines.duckdb_engine import DuckDBEngine
    from safeshare.data.source import TableSource

    frame = pd.DataFrame({"a": [str(i) for i in range(5000)], "b": ["x", "y", "z", "w", "v"] * 1000})
    frame.to_parquet(tmp_path / "t.parquet", index=False, row_group_size=700)  # several row groups
    engine = DuckDBEngine(TableSource(tmp_path / "t.parquet"))
    try:
        sampled, draw = sample_engine(engine, 0.3, CryptoRandom(9))
        assert isinstance(sampled, DuckDBEngine) and sampled.n_records() == draw.records_sampled
        kept = sampled.grouped_counts(["a"])
        assert sorted(kept["a"].astype(int)) == list(np.flatnonzero(draw.keep))
        memory = SampledMemoryEngine(MemoryEngine(frame), draw.keep).grouped_counts(["b"])
        duck = sampled.grouped_counts(["b"])
        assert dict(zip(duck["b"], duck["__count__"], strict=True)) == dict(
            zip(memory["b"], memory["__count__"], strict=True)
        )
        sampled.close()
        assert engine.n_records() == 5000  # the base engine is untouched
        with pytest.raises(InputError, match="booleans"):
            engine.sampled(np.ones(3, dtype=bool))
    finally:
        engine.close()
    (tmp_path / "t.csv").write_text(frame.to_csv(index=False))
    csv_engine = DuckDBEngine(TableSource(tmp_path / "t.csv"))
    try:
        with pytest.raises(InputError, match="Parquet files only"):
            sample_engine(csv_engine, 0.5, CryptoRandom(1))
    finally:
        csv_engine.close()
