"""Exact matching on the generalized quasi-identifiers: the attack behind B.

For every released row ``s``, the adversary generalizes his identified frame through the
release's hierarchies and takes the frame records consistent with ``s``'s labels, ``M(s)``
(:func:`safeshare.attack.view.consistent_pairs`); he names one of them, uniformly at random
(seeded). He is right when he names ``s``'s person, which happens with probability
``[t(s) in M(s)] / |M(s)|``: the person is in ``M(s)`` whenever he is in the frame, since labels are
true. So the expected success rate is

    E = (1/n) sum_s [t(s) in frame] / |M(s)|

and, when the frame is the whole population (``M(s)`` is then ``s``'s population class),
``E = (1/n) sum_s 1/F_s = B`` exactly (Jiang et al. 2022, Eq. 2). The measured rate is the share
of correct guesses, with its Wilson 95 % interval; it is a sum of independent Bernoulli draws of
mean ``E``, so the interval covers ``E`` with about 95 % probability (a binomial's variance bounds
this Poisson-binomial's). Rows whose truth is unscored (:mod:`safeshare.attack.truth`) are left
out of both.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from safeshare.attack.stats import Rate


@dataclass(frozen=True)
class ExactMatch:
    """The exact-matching attack's result."""

    rate: Rate
    expected: float
    #: released rows with at least one consistent frame record
    matched_rows: int
    #: per scored row: the number of consistent frame records |M(s)| (for the per-record risk)
    candidates: np.ndarray

    def to_dict(self) -> dict[str, Any]:
        return {
            "method": "exact matching on the generalized quasi-identifiers, uniform choice among matches",
            "correct": self.rate.to_dict(),
            "expected_rate": self.expected,
            "rows_with_a_match": self.matched_rows,
        }


def exact_match(
    class_of_row: np.ndarray,
    frame_rec: np.ndarray,
    frame_cls: np.ndarray,
    truth_in_frame: np.ndarray,
    scored: np.ndarray,
    rng: np.random.Generator,
) -> ExactMatch:
    """Attack every scored row.

    ``class_of_row``: the QI class of each released row; ``frame_rec``/``frame_cls``: the
    consistent (frame record, class) pairs, sorted by class after this call's own sort;
    ``truth_in_frame``: per row, the frame record that is its person (``-1``: not in the frame);
    ``scored``: the rows the truth decided.
    """
    n_classes = int(class_of_row.max()) + 1 if class_of_row.size else 0
    order = np.argsort(frame_cls, kind="stable")
    rec_sorted, cls_sorted = frame_rec[order], frame_cls[order]
    starts = np.searchsorted(cls_sorted, np.arange(n_classes + 1))
    sizes = np.diff(starts)
    rows = np.flatnonzero(scored)
    m = sizes[class_of_row[rows]]
    has = m > 0
    # the guess: a uniform position within the row's class of candidates
    guess_pos = starts[class_of_row[rows]] + np.floor(rng.random(rows.size) * np.maximum(m, 1)).astype(
        np.int64
    )
    guess = np.where(has, rec_sorted[np.minimum(guess_pos, max(rec_sorted.size - 1, 0))], -1)
    truth = truth_in_frame[rows]
    correct = has & (truth >= 0) & (guess == truth)
    # the true person is in M(s) whenever he is in the frame (labels are true); checked, not assumed
    width = int(max(rec_sorted.max(initial=-1), truth.max(initial=-1))) + 2
    pair_keys = np.sort(cls_sorted * width + rec_sorted)
    want = class_of_row[rows] * width + np.maximum(truth, 0)
    pos = np.minimum(np.searchsorted(pair_keys, want), max(pair_keys.size - 1, 0))
    in_m = (
        (truth >= 0) & has & (pair_keys[pos] == want) if pair_keys.size else np.zeros(rows.size, dtype=bool)
    )
    expected = float(np.sum(np.where(in_m, 1.0 / np.maximum(m, 1), 0.0)) / max(rows.size, 1))
    return ExactMatch(
        rate=Rate(int(correct.sum()), int(rows.size)),
        expected=expected,
        matched_rows=int(has.sum()),
        candidates=m,
    )
