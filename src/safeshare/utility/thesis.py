"""Reference figures of the thesis' UCI Adult experiments, for side-by-side comparison.

Thesis §6.1.2: "On the original dataset, the classification accuracy of the
model is 0.8519", and Table 6.1 (accuracy of the logistic regression trained
on the anonymized training set; OLA with k in {25, 100}, max_sup in
{0, 10, 50} %, three information loss metrics). These numbers are quoted from
the thesis text; they are never used to compute anything, only printed next
to ours.

The comparison is meaningful only for the thesis' setting: UCI Adult, target
``income``, the nine quasi-identifiers of §5.3 with the hierarchies of
appendix B (:data:`ADULT_QUASI_IDENTIFIERS`).
"""

from __future__ import annotations

from collections.abc import Iterable

from safeshare import adult

#: Accuracy of the classifier trained on the original UCI Adult training set.
BASELINE_ACCURACY = 0.8519

#: Table 6.1: (k, max_sup in percent, metric) -> accuracy.
TABLE_6_1: dict[tuple[int, float, str], float] = {
    (25, 0.0, "prec"): 0.802,
    (25, 0.0, "dm_star"): 0.8227,
    (25, 0.0, "entropy"): 0.8227,
    (25, 10.0, "prec"): 0.8057,
    (25, 10.0, "dm_star"): 0.8155,
    (25, 10.0, "entropy"): 0.8426,
    (25, 50.0, "prec"): 0.8456,
    (25, 50.0, "dm_star"): 0.8226,
    (25, 50.0, "entropy"): 0.8432,
    (100, 0.0, "prec"): 0.802,
    (100, 0.0, "dm_star"): 0.8215,
    (100, 0.0, "entropy"): 0.8052,
    (100, 10.0, "prec"): 0.8058,
    (100, 10.0, "dm_star"): 0.8136,
    (100, 10.0, "entropy"): 0.8136,
    (100, 50.0, "prec"): 0.8315,
    (100, 50.0, "dm_star"): 0.8049,
    (100, 50.0, "entropy"): 0.8255,
}

#: The grid of Table 6.1.
TABLE_6_1_K = (25, 100)
TABLE_6_1_SUPPRESSION_PCT = (0.0, 10.0, 50.0)
TABLE_6_1_METRICS = ("prec", "dm_star", "entropy")

#: The grid of Fig. 6.1 (thesis §6.1.1).
FIGURE_6_1_K = (5, 25, 100)
FIGURE_6_1_SUPPRESSION_PCT = (0.0, 1.0, 5.0, 10.0, 20.0, 50.0)

#: The quasi-identifiers of the thesis' Adult experiments (§5.3), with this project's column names.
ADULT_QUASI_IDENTIFIERS = frozenset(adult.ADULT_QUASI_IDENTIFIERS)


def thesis_accuracy(k: int, max_suppression_pct: float, metric: str) -> float | None:
    """Table 6.1's accuracy for this configuration, or ``None`` when it is not in the table."""
    return TABLE_6_1.get((int(k), float(max_suppression_pct), metric))


def is_thesis_setting(quasi_identifiers: Iterable[str], target: str | None) -> bool:
    """Whether a run has the thesis' Adult setting (its nine QIs, target ``income``)."""
    return frozenset(quasi_identifiers) == ADULT_QUASI_IDENTIFIERS and target == "income"
