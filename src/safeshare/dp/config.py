"""The ``dp:`` section of a configuration: epsilon-safe's options, typed and validated once.

Example (with ``algorithm: epsilon-safe``)::

    privacy:
      k-anonymity: {k: 50}
    max_suppression: 0.05        # shapes the utility; suppression is not limited
    algorithm: epsilon-safe
    dp:
      beta: 0.75                 # sampling probability, in (0, 1)
      epsilon_prime: 0.5         # budget of the exponential mechanism (> 0)
      epsilon: 2.0               # optional; default -ln(1 - beta) + epsilon_prime
      utility: linear            # thesis | linear | safepub
      penalty: 0.04              # penalty factor p (thesis, linear)
      penalty_mode: suppression  # suppression | k-anonymity
      sensitivity: exact         # exact | thesis (NOT differentially private)
      reference_size: 24000      # optional N_ref of the suppression penalty
      seed: 42                   # optional integer: reproducible (and predictable!) draws
      allow_non_dp: false        # let sensitivity: thesis write a release

:class:`EpsilonSafeOptions` is the pydantic model of this section and the typed options of
the ``epsilon-safe`` strategy in the registry of algorithms
(:data:`safeshare.config.algorithms.ALGORITHMS`): the file's section, the command-line
options (``--beta``, ...) and Python keywords (``beta=0.5``) build the same model, and
:meth:`EpsilonSafeOptions.params` the :class:`~safeshare.dp.epsilon_safe.EpsilonSafeParams`
of the run.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import WithJsonSchema, model_validator

from safeshare.config_checks import (
    Flag,
    PositiveNumber,
    Section,
    checked,
    choice,
    refuse,
)
from safeshare.errors import ConfigError, InputError

if TYPE_CHECKING:
    from safeshare.dp.epsilon_safe import EpsilonSafeParams

#: The command-line option of each key (the option of ``safeshare anonymize``).
DP_OPTIONS = {
    "beta": "--beta",
    "epsilon": "--epsilon",
    "epsilon_prime": "--epsilon-prime",
    "utility": "--utility-function",
    "penalty": "--penalty",
    "penalty_mode": "--penalty-mode",
    "sensitivity": "--sensitivity",
    "reference_size": "--reference-size",
    "seed": "--seed",
    "allow_non_dp": "--allow-non-dp",
}
UTILITIES = ("thesis", "linear", "safepub")
PENALTY_MODES = ("suppression", "k-anonymity")
SENSITIVITIES = ("exact", "thesis")


def _beta(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 < float(value) < 1.0:
        raise ConfigError(f"{where}: expected a sampling probability in (0, 1), got {value!r}")
    return float(value)


def _seed(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigError(f"{where}: expected an integer >= 0, got {value!r}")
    return value


def _penalty(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= float(value) < float("inf"):
        raise ConfigError(f"{where}: expected a number >= 0, got {value!r}")
    return float(value)


def _reference_size(value: Any, where: str) -> int:
    """``N_ref`` of the suppression penalty: an integer from 1 to 2**53 (exact as a float)."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 2**53:
        shown = (
            f"an integer of {len(str(value))} digits"
            if isinstance(value, int) and value > 10**20
            else repr(value)
        )
        raise ConfigError(f"{where}: expected an integer from 1 to 2**53, got {shown}")
    return value


ReferenceSize = Annotated[
    int, checked(_reference_size), WithJsonSchema({"type": "integer", "minimum": 1, "maximum": 2**53})
]


class EpsilonSafeOptions(Section):
    """Epsilon-safe lattice anonymization's parameters (thesis §4.5.4; see the module docstring)."""

    beta: Annotated[
        float,
        checked(_beta),
        WithJsonSchema({"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1}),
    ]
    epsilon_prime: PositiveNumber
    epsilon: PositiveNumber | None = None
    utility: Annotated[str, checked(choice(*UTILITIES)), WithJsonSchema({"enum": list(UTILITIES)})] = "thesis"
    penalty: Annotated[
        float | None, checked(_penalty, allow_none=True), WithJsonSchema({"type": "number", "minimum": 0})
    ] = None
    penalty_mode: Annotated[
        str, checked(choice(*PENALTY_MODES)), WithJsonSchema({"enum": list(PENALTY_MODES)})
    ] = "suppression"
    sensitivity: Annotated[
        str, checked(choice(*SENSITIVITIES)), WithJsonSchema({"enum": list(SENSITIVITIES)})
    ] = "exact"
    reference_size: ReferenceSize | None = None
    seed: Annotated[
        int | None, checked(_seed, allow_none=True), WithJsonSchema({"type": "integer", "minimum": 0})
    ] = None
    allow_non_dp: Flag = False

    @model_validator(mode="before")
    @classmethod
    def _shape(cls, data: Any) -> Any:
        """Python's ``{"params": EpsilonSafeParams(...)}``; what SafePub does not take; required keys."""
        if not isinstance(data, Mapping):
            return data
        if "params" in data:
            from safeshare.dp.epsilon_safe import EpsilonSafeParams

            params = data["params"]
            if not isinstance(params, EpsilonSafeParams) or len(data) != 1:
                raise refuse(
                    "algorithm 'epsilon-safe' needs its parameters: "
                    "algorithm_options={'params': EpsilonSafeParams(...)} or the keys of the dp section"
                )
            return {key: value for key, value in vars(params).items() if value is not None}
        if data.get("utility") == "safepub":
            for key in ("penalty", "penalty_mode"):
                if key in data:
                    raise refuse("does not apply to utility: safepub (it has no penalty)", key=key)
        for required in ("beta", "epsilon_prime"):
            if required not in data:
                raise refuse(
                    f"epsilon-safe needs dp.{required} (or {DP_OPTIONS[required]} on the command line)"
                )
        return data

    @model_validator(mode="after")
    def _consistent(self) -> EpsilonSafeOptions:
        """The combination (a penalty for the thesis and linear utilities, the thesis' sensitivity
        for the thesis utility only) is checked by building the parameters."""
        try:
            self.params()
        except InputError as exc:
            message = str(exc)
            key = "penalty" if "penalty" in message else "sensitivity" if "sensitivity" in message else None
            raise refuse(message.split(": ", 1)[-1] if key else message, key=key) from None
        return self

    def params(self) -> EpsilonSafeParams:
        """The parameters of the run (:class:`~safeshare.dp.epsilon_safe.EpsilonSafeParams`)."""
        from safeshare.dp.epsilon_safe import EpsilonSafeParams

        return EpsilonSafeParams(
            beta=self.beta,
            epsilon_prime=self.epsilon_prime,
            epsilon=self.epsilon,
            utility=self.utility,
            penalty=self.penalty,
            penalty_mode=self.penalty_mode,
            sensitivity=self.sensitivity,
            reference_size=self.reference_size,
            seed=self.seed,
            allow_non_dp=self.allow_non_dp,
        )
