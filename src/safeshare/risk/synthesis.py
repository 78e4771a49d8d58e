"""Synthetic-population estimation of B (Jiang et al. 2022, §2.5) in memory independent of N.

A fitted generative model of the quasi-identifiers draws a synthetic
population ``D_p`` of ``N`` records independently, and a simple random sample
``D_s`` of ``n`` of them is taken; then ``B* = (1/n) sum_{k in D_s} 1/F*_k``
with ``F*_k`` record ``k``'s class size in ``D_p``.

The records are independent and identically distributed, so ``D_s`` may be
the first ``n`` records of ``D_p``, and the other ``N - n`` records matter
only through how many of them fall in each class of ``D_s``. With ``f*_j``
the size of class ``j`` of ``D_s`` (``J*`` classes) and ``G_j`` the number of
the other records in class ``j``::

    F*_j = f*_j + G_j,        B* = (1/n) sum_j f*_j / F*_j,
    (G_1, ..., G_J*, rest) ~ Multinomial(N - n; p_1, ..., p_J*, 1 - sum_j p_j)

where ``p_j`` is the model's probability of class ``j``. So only ``D_s`` is
drawn record by record (``n`` records, in chunks), and ``G`` is either

* drawn from that multinomial when the model gives its class probabilities
  (:func:`multinomial_rest`; the d-vine exactly, the Gaussian copula by the
  GHK simulator): time independent of ``N``; or
* counted by streaming the ``N - n`` other records through in chunks and
  keeping only the counts of ``D_s``'s classes (:func:`streamed_rest`; exact
  for any model that can draw records): time ``O(N)``.

Either way the synthetic population is never materialized: memory is a few
chunks plus ``n`` packed keys, whatever ``N`` (10^9 included). Each chunk is a
few vectorized numpy calls, so an interrupt (``Interrupted``, raised by the
command line's signal handler between bytecodes) is answered within one chunk.

Population uniques: ``D_s`` is a simple random sample of ``D_p``'s records,
so ``N x (share of D_s records whose class is unique in D_p)`` is an unbiased
estimate of the number of population uniques of ``D_p``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

DEFAULT_CHUNK = 1_000_000

RecordSampler = Callable[[int, np.random.Generator], np.ndarray]
"""``draw(size, rng)``: ``size`` synthetic records as category codes (size x m, int64)."""

RestCounter = Callable[[np.ndarray, np.ndarray, int, np.random.Generator], np.ndarray]
"""``rest(codes, keys, size, rng)``: how many of ``size`` further synthetic records fall in each of the
classes ``codes`` (J x m; packed ``keys``, sorted): the ``G_j`` of the module docstring."""

ClassProbabilities = Callable[[np.ndarray, np.random.Generator], np.ndarray]
"""``probabilities(codes, rng)``: the model's probability of each class (J x m codes); ``rng`` for
models that estimate it by simulation."""


@dataclass(frozen=True)
class SyntheticRisk:
    """One synthesis: ``B*`` and the estimated population uniques of the synthetic population."""

    B: float
    population_uniques: float


def decode(keys: np.ndarray, weights: np.ndarray, cardinalities: tuple[int, ...]) -> np.ndarray:
    """Category codes of packed keys (the inverse of ``codes @ weights``)."""
    out = np.empty((keys.size, weights.size), dtype=np.int64)
    for c, (w, k) in enumerate(zip(weights, cardinalities, strict=True)):
        out[:, c] = (keys // w) % max(k, 1)
    return out


def synthetic_risk(
    draw: RecordSampler,
    rest: RestCounter,
    weights: np.ndarray,
    cardinalities: tuple[int, ...],
    population_size: int,
    sample_size: int,
    rng: np.random.Generator,
    chunk_size: int = DEFAULT_CHUNK,
) -> SyntheticRisk:
    """``B*`` of one synthetic population of ``population_size`` records and its sample of
    ``sample_size`` (module docstring)."""
    if not 1 <= sample_size <= population_size:
        raise ValueError("need 1 <= n <= N")
    parts = []
    done = 0
    while done < sample_size:
        size = min(chunk_size, sample_size - done)
        parts.append(np.asarray(draw(size, rng) @ weights, dtype=np.int64))
        done += size
    keys, f = np.unique(np.concatenate(parts), return_counts=True)
    del parts
    G = rest(decode(keys, weights, cardinalities), keys, population_size - sample_size, rng)
    F = f + G
    return SyntheticRisk(
        B=float(np.sum(f / F) / sample_size),
        population_uniques=float(population_size * np.sum(F == 1) / sample_size),
    )


def multinomial_rest(probabilities: ClassProbabilities) -> RestCounter:
    """``G ~ Multinomial(size; p_1..p_J, rest)`` from the model's class probabilities."""

    def rest(codes: np.ndarray, keys: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
        p = np.clip(np.asarray(probabilities(codes, rng), dtype=float), 0.0, 1.0)
        total = float(p.sum())
        if total > 1.0:  # estimated probabilities of classes covering (nearly) everything
            p = p / total
        return np.asarray(rng.multinomial(size, np.append(p, max(0.0, 1.0 - p.sum())))[:-1], dtype=np.int64)

    return rest


def streamed_rest(draw: RecordSampler, weights: np.ndarray, chunk_size: int = DEFAULT_CHUNK) -> RestCounter:
    """``G`` counted by drawing the other records in chunks (only ``D_s``'s classes are kept)."""

    def rest(codes: np.ndarray, keys: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
        counts = np.zeros(keys.size, dtype=np.int64)
        done = 0
        while done < size:
            step = min(chunk_size, size - done)
            drawn = np.asarray(draw(step, rng) @ weights, dtype=np.int64)
            at = np.minimum(np.searchsorted(keys, drawn), keys.size - 1)
            hit = keys[at] == drawn
            counts += np.bincount(at[hit], minlength=keys.size)
            done += step
        return counts

    return rest
