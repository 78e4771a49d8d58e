"""The adversary's knowledge model of m-concealing (thesis §5.2).

Each knowledge column ``c`` is known with probability ``p_c``, independently of
the others; a *knowledge state* is the subset of columns known. Validated here
once, for the configuration (``knowledge:``, ``m-concealing`` models) and the
command line (``--knowledge COLUMN=P,...``); the measure is
:mod:`safeshare.risk.m_concealing`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from functools import cached_property
from itertools import product
from typing import Any, NamedTuple

import numpy as np

from safeshare.errors import ConfigError, InputError

#: Largest number of knowledge columns: the measure sums over ``2^|K|`` states.
MAX_KNOWLEDGE_COLUMNS = 10


class KnowledgeState(NamedTuple):
    """A subset of the knowledge columns (their positions) and its probability ``P(q)``."""

    known: tuple[int, ...]
    probability: float


def is_number(value: Any) -> bool:
    return isinstance(value, int | float | np.integer | np.floating) and not isinstance(value, bool)


class AdversaryKnowledge:
    """What an adversary may know beyond the QIs, and how likely it is (thesis §5.2).

    Parameters
    ----------
    probabilities: knowledge column -> probability ``p_c`` in [0, 1] that the
        adversary knows the whole column.
    inclusion_probability: ``pi`` in (0, 1], the probability that a person of
        the population is in the release (1 for a full release).
    """

    def __init__(self, probabilities: Mapping[str, float], inclusion_probability: float = 1.0) -> None:
        if not isinstance(probabilities, Mapping):
            raise InputError(f"knowledge: expected a mapping of column -> probability, got {probabilities!r}")
        if len(probabilities) > MAX_KNOWLEDGE_COLUMNS:
            raise InputError(
                f"knowledge: {len(probabilities)} columns, at most {MAX_KNOWLEDGE_COLUMNS} are supported "
                f"(the measure sums over 2^columns knowledge states)"
            )
        columns, probs = [], []
        for column, p in probabilities.items():
            if not isinstance(column, str) or not column:
                raise InputError(f"knowledge: column names must be non-empty strings, got {column!r}")
            if not is_number(p) or not 0.0 <= float(p) <= 1.0:
                raise InputError(f"knowledge.{column}: expected a probability in [0, 1], got {p!r}")
            columns.append(column)
            probs.append(float(p))
        if not is_number(inclusion_probability) or not 0.0 < float(inclusion_probability) <= 1.0:
            raise InputError(
                f"inclusion_probability: expected a number in (0, 1], got {inclusion_probability!r}"
            )
        self.columns: tuple[str, ...] = tuple(columns)
        self.probabilities: tuple[float, ...] = tuple(probs)
        self.inclusion_probability = float(inclusion_probability)

    @cached_property
    def states(self) -> tuple[KnowledgeState, ...]:
        """Every knowledge state of non-zero probability, the empty state first.

        ``P(q) = prod_{c in q} p_c * prod_{c not in q} (1 - p_c)``; the
        probabilities of all ``2^|K|`` states sum to 1.
        """
        out = []
        for bits in product((False, True), repeat=len(self.columns)):
            prob = math.prod(p if b else 1.0 - p for p, b in zip(self.probabilities, bits, strict=True))
            if prob > 0.0:
                out.append(KnowledgeState(tuple(i for i, b in enumerate(bits) if b), prob))
        return tuple(sorted(out, key=lambda s: (len(s.known), s.known)))

    def as_dict(self) -> dict[str, float]:
        return dict(zip(self.columns, self.probabilities, strict=True))

    def __repr__(self) -> str:
        return f"AdversaryKnowledge({self.as_dict()!r}, inclusion_probability={self.inclusion_probability})"


def parse_knowledge(value: Any, where: str) -> dict[str, float]:
    """Validate a ``{COLUMN: probability}`` mapping from a configuration (``where`` names the key)."""
    if not isinstance(value, Mapping):
        raise ConfigError(
            f"{where}: expected a mapping of column -> probability, e.g. {{capital-gain: 0.01}}"
        )
    out: dict[str, float] = {}
    for column, p in value.items():
        if not isinstance(column, str):
            raise ConfigError(f'{where}.{column}: expected a name as key, got {column!r} (quote it: "...")')
        if not is_number(p) or not 0.0 <= float(p) <= 1.0:
            raise ConfigError(f"{where}.{column}: expected a probability in [0, 1], got {p!r}")
        out[str(column)] = float(p)
    if len(out) > MAX_KNOWLEDGE_COLUMNS:
        raise ConfigError(f"{where}: {len(out)} columns, at most {MAX_KNOWLEDGE_COLUMNS} are supported")
    return out


def parse_knowledge_option(text: str, option: str = "--knowledge") -> dict[str, float]:
    """``COLUMN=PROBABILITY,...`` from the command line."""
    out: dict[str, float] = {}
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        column, sep, value = part.rpartition("=")
        try:
            p = float(value)
        except ValueError:
            p = -1.0
        if not sep or not column.strip() or not 0.0 <= p <= 1.0:
            raise InputError(
                f"{option}: expected COLUMN=PROBABILITY[,...] with probabilities in [0, 1], got {part!r}"
            )
        out[column.strip()] = p
    if not out:
        raise InputError(f"{option}: expected COLUMN=PROBABILITY[,...]")
    return parse_knowledge(out, option)
