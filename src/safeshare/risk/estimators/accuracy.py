"""Placeholder (replaced once the evaluations are in)."""

from __future__ import annotations


def prediction_interval(
    name: str, B: float, mc: tuple[float, float] | None, sampling_fraction: float, N: int
) -> tuple[float, float] | None:
    return mc
