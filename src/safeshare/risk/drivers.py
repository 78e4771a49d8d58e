"""The classes that drive the risk: class groups by their size in the data ``f`` and in the
population ``F``, with each group's contribution to B.

B (the average re-identification risk, El Emam 2013 §14; Dankar et al. 2012) is
``B = (1/n) Σ_j f_j / F_j``: a group of ``c`` classes of sizes ``(f, F)`` adds ``c·f / F / n`` to
it, and the contributions of all groups sum to B. Without ``F`` (the population's sizes not
known), ``F = f`` is used and the contribution is the group's share of the prosecutor mean
``J/n`` (``c / n``). Sizes and counts only: no quasi-identifier value.

One function for every view: ``safeshare risk estimate``'s risk.json and risk.html, and
report.json's risk section (:mod:`safeshare.risk.report_risk`), which the workbench's Risk screen
shows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np


def risk_drivers(
    sample_sizes: Sequence[int] | np.ndarray,
    population_sizes: Sequence[int] | np.ndarray | None,
    top: int = 15,
) -> list[dict[str, Any]]:
    """Class groups by ``(f, F)``: with ``F``, ordered by their share of B; without, by their
    records' prosecutor risk ``1/f`` (smallest classes first; ``contribution`` is then the
    share of the prosecutor mean ``J/n``, which numerous large classes would otherwise lead)."""
    f = np.asarray(sample_sizes, dtype=np.int64)
    n = int(f.sum())
    F = f if population_sizes is None else np.asarray(population_sizes, dtype=np.int64)
    pairs, inverse = np.unique(np.stack([f, F], axis=1), axis=0, return_inverse=True)
    inverse = inverse.ravel()
    classes = np.bincount(inverse, minlength=len(pairs))
    rows = []
    for (fs, Fs), c in zip(pairs.tolist(), classes.tolist(), strict=True):
        rows.append(
            {
                "f": int(fs),
                "F": None if population_sizes is None else int(Fs),
                "classes": int(c),
                "records": int(c * fs),
                "contribution": c * fs / Fs / n,
            }
        )
    if population_sizes is None:
        rows.sort(key=lambda r: (r["f"], -r["classes"]))
    else:
        rows.sort(key=lambda r: (-r["contribution"], r["f"]))
    return rows[:top]


__all__ = ["risk_drivers"]
