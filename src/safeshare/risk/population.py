"""The population a release is a sample of: its size ``N``, where that number comes from, and
whether the input is taken as the whole population (issue 31's one ``Population`` value; issue 33:
"N with its source").

Every risk figure of a release rests on ``N`` (Jiang et al., PLoS ONE 17(6):e0269097, 2022, §2.2:
``A = J/N``; ``B = (1/n) sum_k 1/F_k`` with ``F_k`` estimated from the sample's class sizes and
``N``). Two facts about ``N`` decide what a privacy officer can read into them:

* **where it comes from** (``source``): a census table, a registry count, a guess. The paper's
  sensitivity analysis (§3.3) finds that an ``N`` larger than the true one underestimates B and
  advises erring on a smaller ``N``; :mod:`safeshare.risk.sensitivity` shows how far B moves;
* **whether it was given at all**: without ``N`` the input *is* the population (``whole_input``):
  ``N = n`` and every population class size is known exactly (``F = f``).

:meth:`Population.of` is the one place deciding "no N means the input is the population";
:meth:`Population.check` the one check ``n <= N`` (a sample cannot hold more people than its
population), with one message.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from safeshare.errors import InputError

#: The source shown for an ``N`` given without one (``population_size:``, ``--population-size``).
NOT_STATED = "not stated"

#: The source of the ``N`` of a run without one: the input is the whole population.
WHOLE_INPUT = "the input, taken as the whole population"


@dataclass(frozen=True)
class Population:
    """``N`` (``size``; ``None``: not given, the input is the population), its ``source`` (``None``
    when not given), and ``whole_input`` (no ``N`` was given)."""

    size: int | None = None
    source: str | None = None

    def __post_init__(self) -> None:
        size = self.size
        if size is not None and (isinstance(size, bool) or not isinstance(size, int) or size < 1):
            raise InputError(f"population size: expected a positive integer, got {size!r}")
        if self.source is not None and (not isinstance(self.source, str) or not self.source.strip()):
            raise InputError(f"population source: expected a non-empty text, got {self.source!r}")
        if size is None and self.source is not None:
            raise InputError("population source: given without a population size")

    @classmethod
    def of(cls, size: int | None, source: str | None = None) -> Population:
        """The population of a run: ``size`` with ``source`` (``None``: :data:`NOT_STATED`), or,
        without a size, the input as the whole population."""
        if size is None:
            return cls(None, None)
        return cls(int(size), source.strip() if isinstance(source, str) and source.strip() else NOT_STATED)

    @property
    def whole_input(self) -> bool:
        """No ``N`` was given: the input is the whole population (``N = n``, risks exact)."""
        return self.size is None

    def resolve(self, n_input: int) -> int:
        """The ``N`` used for an input of ``n_input`` people (records when one per person): the
        given size (checked, :meth:`check`), else ``n_input``."""
        if self.size is None:
            return int(n_input)
        self.check(n_input, "input")
        return self.size

    def check(
        self, n_sample: int, what: str = "sample", unit: str = "records", key: str = "population size"
    ) -> None:
        """Refuse a sample of more people than the population: ``n_sample <= N`` (nothing to check
        when the input is the population). ``what``, ``unit``: how the sample is named in the
        message (``input``, ``people``); ``key``: how ``N`` is named (an option, a key)."""
        if self.size is not None and self.size < int(n_sample):
            raise InputError(f"{key} {self.size:,} is smaller than the {what} ({int(n_sample):,} {unit})")

    @property
    def shown_source(self) -> str:
        """Where ``N`` comes from, in words (the input, for a run without ``N``)."""
        return WHOLE_INPUT if self.source is None else self.source

    def to_dict(self, n_input: int | None = None) -> dict[str, Any]:
        """report.json's ``{size, source, assumed}``: ``assumed`` when no ``N`` was given (``size``
        is then ``n_input``, the input's people or records)."""
        return {
            "size": self.size if self.size is not None else n_input,
            "source": self.shown_source,
            "assumed": self.whole_input,
        }


def check_population(
    N: int | None, n_sample: int, what: str = "sample", unit: str = "records", key: str = "population size"
) -> None:
    """:meth:`Population.check` of a bare ``N`` (``None``: nothing to check)."""
    Population.of(N).check(n_sample, what, unit, key)


__all__ = ["NOT_STATED", "WHOLE_INPUT", "Population", "check_population"]
