"""The ``dp:`` section of a configuration file and its command-line overrides.

Example (with ``algorithm: epsilon-safe``)::

    privacy:
      k-anonymity: {k: 50}
    max_suppression: 0.05        # shapes the utility; suppression is not limited
    algorithm: epsilon-safe
    dp:
      beta: 0.75                 # sampling probability
      epsilon_prime: 0.5         # budget of the exponential mechanism
      epsilon: 2.0               # optional; default -ln(1 - beta) + epsilon_prime
      utility: linear            # thesis | linear | safepub
      penalty: 0.04              # penalty factor p (thesis, linear)
      penalty_mode: suppression  # suppression | k-anonymity
      sensitivity: exact         # exact | thesis (NOT differentially private)
      reference_size: 24000      # optional N_ref of the suppression penalty
      seed: 42                   # optional: reproducible (and predictable!) draws
      allow_non_dp: false        # let sensitivity: thesis write a release

Every error names the file and the key path (or the option), on one line.

The configuration layer reads the file's ``dp:`` section once (:func:`dp_section`,
called by :func:`safeshare.config.parse_config`) and turns it, with the
command-line overrides, into the :class:`EpsilonSafeParams` of the run's
:class:`~safeshare.workflows.spec.AnonymizationSpec` (:func:`epsilon_safe_params`,
called by :meth:`safeshare.config.RunConfig.spec`); nothing parses the file again.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from safeshare.config_checks import check_keys
from safeshare.dp.epsilon_safe import EpsilonSafeParams
from safeshare.errors import ConfigError, InputError

DP_KEYS = {
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


def parse_seed(text: str) -> int | str:
    """A command-line seed: an integer when it looks like one, else the text itself."""
    stripped = text.strip()
    if stripped.lstrip("-").isdigit():
        return int(stripped)
    if not stripped:
        raise ConfigError("--seed: expected an integer or a non-empty text")
    return stripped


def dp_section(raw: Mapping[str, Any], where: str) -> dict[str, Any]:
    """The validated-by-name ``dp`` mapping of a configuration (values are checked later)."""
    section = raw.get("dp")
    if section is None:
        return {}
    if not isinstance(section, Mapping):
        raise ConfigError(f"{where}: dp: expected a mapping of epsilon-safe parameters")
    inapplicable = (
        {key: "does not apply to utility: safepub (it has no penalty)" for key in ("penalty", "penalty_mode")}
        if section.get("utility") == "safepub"
        else {}
    )
    check_keys(section, DP_KEYS, f"{where}: dp", inapplicable)
    return dict(section)


def check_overrides(overrides: Mapping[str, Any]) -> dict[str, Any]:
    """The command-line options given (not ``None``), each a known ``dp`` key."""
    for key in overrides:
        if key not in DP_KEYS:
            raise ConfigError(f"unknown epsilon-safe option {key!r}")
    return {key: value for key, value in overrides.items() if value is not None}


def epsilon_safe_params(
    section: Mapping[str, Any], where: str, overrides: Mapping[str, Any] | None = None
) -> EpsilonSafeParams:
    """:class:`EpsilonSafeParams` from the file's checked ``dp`` section (:func:`dp_section`)
    and command-line ``overrides``.

    An invalid value raises :class:`ConfigError` naming the key (``FILE: dp.beta``) or,
    for an override, the option (``--beta``).
    """
    values = dict(section)
    origin = {key: f"{where}: dp.{key}" for key in values}
    for key, value in check_overrides(overrides or {}).items():
        values[key] = value
        origin[key] = DP_KEYS[key]
    for required in ("beta", "epsilon_prime"):
        if required not in values:
            raise ConfigError(
                f"{where}: epsilon-safe needs dp.{required} (or {DP_KEYS[required]} on the command line)"
            )
    for key in ("beta", "epsilon", "epsilon_prime", "penalty"):
        value = values.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
            raise ConfigError(f"{origin[key]}: expected a number, got {value!r}")
    for key in ("utility", "penalty_mode", "sensitivity"):
        value = values.get(key)
        if value is not None and not isinstance(value, str):
            raise ConfigError(f"{origin[key]}: expected a name, got {value!r}")
    if "allow_non_dp" in values and not isinstance(values["allow_non_dp"], bool):
        raise ConfigError(f"{origin['allow_non_dp']}: expected true or false")
    seed = values.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int | str)):
        raise ConfigError(f"{origin['seed']}: expected an integer or a text, got {seed!r}")
    try:
        return EpsilonSafeParams(
            beta=float(values["beta"]),
            epsilon_prime=float(values["epsilon_prime"]),
            epsilon=None if values.get("epsilon") is None else float(values["epsilon"]),
            utility=str(values.get("utility", "thesis")),
            penalty=None if values.get("penalty") is None else float(values["penalty"]),
            penalty_mode=str(values.get("penalty_mode", "suppression")),
            sensitivity=str(values.get("sensitivity", "exact")),
            reference_size=values.get("reference_size"),
            seed=seed,
            allow_non_dp=bool(values.get("allow_non_dp", False)),
        )
    except ConfigError:
        raise
    except InputError as exc:
        message = str(exc)
        name = message.split(":", 1)[0].strip()
        key = {"epsilon_prime": "epsilon_prime", "penalty mode": "penalty_mode"}.get(name, name)
        if key in origin:
            raise ConfigError(f"{origin[key]}: {message.split(':', 1)[1].strip()}") from None
        raise ConfigError(f"{where}: dp: {message}") from None
