"""Synthetic-population estimation of B (Jiang et al. 2022, §2.5), streamed in chunks.

A fitted generative model of the quasi-identifiers draws a synthetic
population ``D_p`` of ``N`` records, and a simple random sample ``D_s`` of
``n`` records is taken from it; then ``B* = (1/n) sum_{k in D_s} 1/F*_k`` where
``F*_k`` is record ``k``'s class size in ``D_p``.

Records are drawn independently, so any fixed set of ``n`` rows of ``D_p`` is
a simple random sample of it: ``D_s`` is the first ``n`` rows. The population
is generated in chunks of packed int64 keys (one per record); each chunk is
reduced to its distinct keys and counts at once, so memory stays at a few
chunk sizes plus the distinct keys (the paper's Ontario case, N = 13.4
million, fits in well under 2 GB).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

DEFAULT_CHUNK = 1_000_000

KeySampler = Callable[[int, np.random.Generator], np.ndarray]
"""``sampler(size, rng)``: ``size`` packed int64 keys of synthetic records."""


@dataclass(frozen=True)
class SyntheticRisk:
    B: float
    population_uniques: int
    population_classes: int


def synthetic_risk(
    sampler: KeySampler,
    population_size: int,
    sample_size: int,
    rng: np.random.Generator,
    chunk_size: int = DEFAULT_CHUNK,
) -> SyntheticRisk:
    """B* of a synthetic population of ``population_size`` drawn by ``sampler``."""
    if not 1 <= sample_size <= population_size:
        raise ValueError("need 1 <= n <= N")
    chunk_size = max(int(chunk_size), sample_size)  # the first chunk holds the whole synthetic sample
    keys_parts: list[np.ndarray] = []
    count_parts: list[np.ndarray] = []
    sample_keys: np.ndarray | None = None
    done = 0
    while done < population_size:
        size = min(chunk_size, population_size - done)
        keys = sampler(size, rng)
        if sample_keys is None:
            sample_keys = keys[:sample_size].copy()
        u, c = np.unique(keys, return_counts=True)
        keys_parts.append(u)
        count_parts.append(c)
        done += size
        if len(keys_parts) >= 8:  # merge now and then so the parts never outgrow the distinct keys
            merged_keys, merged_counts = _merge(keys_parts, count_parts)
            keys_parts, count_parts = [merged_keys], [merged_counts]
    pop_keys, pop_counts = _merge(keys_parts, count_parts)
    assert sample_keys is not None
    F = pop_counts[np.searchsorted(pop_keys, sample_keys)]
    return SyntheticRisk(
        B=float(np.mean(1.0 / F)),
        population_uniques=int((pop_counts == 1).sum()),
        population_classes=int(pop_keys.size),
    )


def _merge(keys: list[np.ndarray], counts: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    if len(keys) == 1:
        return keys[0], counts[0]
    allk = np.concatenate(keys)
    u, inv = np.unique(allk, return_inverse=True)
    return u, np.bincount(inv, weights=np.concatenate(counts), minlength=u.size).astype(np.int64)
