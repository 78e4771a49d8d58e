"""Record sampling with probability beta (thesis §4.5.2; Li, Qardaji, Su 2012).

Differential privacy under sampling relies on the adversary's uncertainty
about which records were sampled: every record of the input is kept
independently with probability ``beta`` (a Bernoulli, or Poisson, sample;
NOT a fixed-size sample), using the cryptographic generator of
:mod:`safeshare.dp.drbg`. Record ``i`` (in the engine's record order) is kept
iff the ``i``-th 64-bit integer of the ``"sampling"`` stream is below
``floor(beta 2^64)``, so the keep probability is exactly
``floor(beta 2^64) / 2^64`` (equal to ``beta`` for ``beta >= 2^-12``).

The sample is drawn before the frequency table is built: records that are not
sampled never reach the search, the evaluator or the release (they count as
suppressed in SafePub's scores, see :mod:`safeshare.dp.scores`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from safeshare.data.engines.base import Engine
from safeshare.data.engines.sampled import restrict_engine
from safeshare.dp.drbg import CryptoRandom, bernoulli_probability
from safeshare.dp.parameters import check_beta


@dataclass(frozen=True)
class SampleDraw:
    """One Bernoulli sample of the records.

    Attributes
    ----------
    keep: one boolean per input record (True: sampled).
    beta: the requested probability; ``beta_exact`` the one applied.
    seed: the seed, when one was given (never the secret entropy).
    """

    keep: npt.NDArray[np.bool_]
    beta: float
    beta_exact: float
    seed: int | str | None

    @property
    def records_in(self) -> int:
        return int(self.keep.shape[0])

    @property
    def records_sampled(self) -> int:
        return int(self.keep.sum())

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "beta": self.beta,
            "records_before_sampling": self.records_in,
            "records_sampled": self.records_sampled,
            "records_not_sampled": self.records_in - self.records_sampled,
            "sampling_generator": "SHAKE-256 counter mode (safeshare.dp.drbg)",
        }
        if self.seed is not None:
            out["seed"] = self.seed
        return out


def draw_sample(n_records: int, beta: float, rng: CryptoRandom) -> SampleDraw:
    """Keep each of ``n_records`` records independently with probability ``beta``."""
    beta = check_beta(beta)
    keep = rng.stream("sampling").bernoulli(n_records, beta)
    return SampleDraw(keep=keep, beta=beta, beta_exact=bernoulli_probability(beta), seed=rng.seed)


def sample_engine(engine: Engine, beta: float, rng: CryptoRandom) -> tuple[Engine, SampleDraw]:
    """The engine restricted to a Bernoulli(``beta``) sample of its records, and the draw."""
    draw = draw_sample(engine.n_records(), beta, rng)
    return restrict_engine(engine, draw.keep), draw
