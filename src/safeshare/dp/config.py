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


#: What stands in for a missing ``beta`` or ``epsilon_prime`` while the section's other keys are
#: validated in the same pass (:func:`dp_problems`); never used for a run.
_STAND_INS: dict[str, float] = {"beta": 0.5, "epsilon_prime": 1.0}
#: The keys whose combination the section checks as a whole.
_COMBINED = ("utility", "penalty", "penalty_mode", "sensitivity", "allow_non_dp")


def dp_problems(section: Any, options: Mapping[str, str] | None = None, release: bool = True) -> list[str]:
    """Every problem of epsilon-safe's ``dp:`` section at once (issue 30, item 18: they were
    told one failed run at a time): a missing ``beta`` or ``epsilon_prime``, every key whose
    value is refused, and the combination (a penalty factor for the thesis and linear
    utilities, ``sensitivity: thesis`` with the thesis utility only, and, for a ``release``,
    ``allow_non_dp`` beside it). ``options`` maps key paths given as command-line options
    (``dp.beta``) to the option (``--beta``), which then names the problem."""
    from pydantic import ValidationError

    from safeshare.config_checks import validation_errors
    from safeshare.dp.epsilon_safe import NON_DP_REFUSED

    if section is None:
        section = {}
    if not isinstance(section, Mapping):
        return ["dp: expected a mapping of epsilon-safe's parameters (beta, epsilon_prime, ...)"]
    named = {
        key.removeprefix("dp."): option for key, option in (options or {}).items() if key.startswith("dp.")
    }
    problems: list[str] = [
        f"dp.{key} (or {DP_OPTIONS[key]}): missing" for key in ("beta", "epsilon_prime") if key not in section
    ]

    def validate(given: Mapping[str, Any]) -> list[tuple[str, str]]:
        try:
            EpsilonSafeOptions.model_validate(given)
        except ValidationError as exc:
            keys = [
                str(e["loc"][0]) if e["loc"] else str((e.get("ctx") or {}).get("key") or "")
                for e in exc.errors(include_url=False)
            ]
            lines = validation_errors(exc, "dp", {"": EpsilonSafeOptions}, named)
            return [(key, str(line)) for key, line in zip(keys, lines, strict=True)]
        return []

    found = validate({**{k: v for k, v in _STAND_INS.items() if k not in section}, **section})
    if found and not any(key in _COMBINED for key, _ in found):  # the combination on its own
        found += validate({**_STAND_INS, **{k: section[k] for k in _COMBINED if k in section}})
    problems += [line for _, line in found if line not in problems]
    thesis = section.get("sensitivity") == "thesis" and not section.get("allow_non_dp")
    if release and thesis and not any(key in ("sensitivity", "allow_non_dp") for key, _ in found):
        problems.append(f"{named.get('sensitivity', 'dp.sensitivity')}: {NON_DP_REFUSED}")
    return list(dict.fromkeys(problems))
