"""Privacy models by configuration name.

The ``privacy`` map of a configuration file names models and their
parameters, e.g. ``privacy: {k-anonymity: {k: 5}}``. Each entry is turned into
a :class:`PrivacyModel` by the factory registered here under that name.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping
from typing import Any

from safeshare.config_checks import check_keys
from safeshare.errors import ConfigError, InputError
from safeshare.models.base import PrivacyModel
from safeshare.models.k_anonymity import KAnonymity, check_k
from safeshare.models.l_diversity import from_config as _l_diversity
from safeshare.models.m_concealing import MConcealing
from safeshare.models.risk import DEFAULT_THRESHOLD, RiskThreshold
from safeshare.models.small_cells import DEFAULT_MIN_SIZE, SmallCells
from safeshare.models.t_closeness import from_config as _t_closeness
from safeshare.risk.estimators import DEFAULT_ESTIMATOR
from safeshare.risk.knowledge import is_number, parse_knowledge
from safeshare.risk.release_risk import MEASURES, USES

ModelFactory = Callable[[Mapping[str, Any], str], PrivacyModel]


def _k_anonymity(params: Mapping[str, Any], where: str) -> PrivacyModel:
    check_keys(params, {"k"}, where)
    if "k" not in params:
        raise ConfigError(f"{where}: missing k")
    return KAnonymity(check_k(params["k"], f"{where}.k"))


def _m_concealing(params: Mapping[str, Any], where: str) -> PrivacyModel:
    check_keys(params, {"m", "knowledge", "inclusion_probability"}, where)
    if "m" not in params:
        raise ConfigError(f"{where}: missing m (the largest re-identification probability, e.g. 0.1)")
    m = params["m"]
    if not is_number(m) or not 0.0 < float(m) <= 1.0:
        raise ConfigError(f"{where}.m: expected a number in (0, 1], got {m!r}")
    if "knowledge" not in params:
        raise ConfigError(f"{where}: missing knowledge, e.g. knowledge: {{capital-gain: 0.01}}")
    knowledge = parse_knowledge(params["knowledge"], f"{where}.knowledge")
    pi = params.get("inclusion_probability", 1.0)
    if not is_number(pi) or not 0.0 < float(pi) <= 1.0:
        raise ConfigError(f"{where}.inclusion_probability: expected a number in (0, 1], got {pi!r}")
    return MConcealing(float(m), knowledge, float(pi))


def _risk(params: Mapping[str, Any], where: str) -> PrivacyModel:
    check_keys(params, {"measure", "threshold", "estimator", "population_size", "use"}, where)
    measure = params.get("measure", "B")
    if measure not in MEASURES:
        raise ConfigError(f"{where}.measure: expected one of {', '.join(MEASURES)}, got {measure!r}")
    if "threshold" not in params and measure != "B":
        raise ConfigError(f"{where}: missing threshold (the largest tolerated {MEASURES[measure]})")
    threshold = params.get("threshold", DEFAULT_THRESHOLD)
    if not is_number(threshold) or not 0.0 < float(threshold) <= 1.0:
        raise ConfigError(f"{where}.threshold: expected a number in (0, 1], got {threshold!r}")
    estimator = params.get("estimator", DEFAULT_ESTIMATOR)
    if not isinstance(estimator, str):
        raise ConfigError(f"{where}.estimator: expected an estimator's name, got {estimator!r}")
    population = params.get("population_size")
    if population is not None and (
        isinstance(population, bool) or not isinstance(population, int) or population < 1
    ):
        raise ConfigError(f"{where}.population_size: expected a positive integer, got {population!r}")
    use = params.get("use", "estimate")
    if use not in USES:
        raise ConfigError(f"{where}.use: expected one of {', '.join(USES)}, got {use!r}")
    if use == "upper" and measure == "uniques":
        raise ConfigError(f"{where}.use: upper needs an interval, which measure uniques does not have")
    try:
        return RiskThreshold(float(threshold), str(measure), estimator, population, str(use))
    except InputError as exc:
        raise ConfigError(f"{where}.estimator: {exc}") from None


def _small_cells(params: Mapping[str, Any], where: str) -> PrivacyModel:
    check_keys(params, {"population", "min_size", "delimiter"}, where)
    population = params.get("population")
    if not isinstance(population, str) or not population:
        raise ConfigError(f"{where}: missing population (a CSV file with a header naming the QIs)")
    min_size = params.get("min_size", DEFAULT_MIN_SIZE)
    if isinstance(min_size, bool) or not isinstance(min_size, int) or min_size < 1:
        raise ConfigError(f"{where}.min_size: expected a positive integer, got {min_size!r}")
    delimiter = params.get("delimiter", ",")
    if not isinstance(delimiter, str) or len(delimiter) != 1:
        raise ConfigError(f"{where}.delimiter: expected one character, got {delimiter!r}")
    return SmallCells(population, min_size, delimiter)


MODEL_FACTORIES: dict[str, ModelFactory] = {
    "k-anonymity": _k_anonymity,
    "m-concealing": _m_concealing,
    "l-diversity": _l_diversity,
    "t-closeness": _t_closeness,
    "risk": _risk,
    "small-cells": _small_cells,
}

ALIASES = {
    "k_anonymity": "k-anonymity",
    "kanonymity": "k-anonymity",
    "m_concealing": "m-concealing",
    "l_diversity": "l-diversity",
    "t_closeness": "t-closeness",
    "small_cells": "small-cells",
}


def make_model(name: str, params: Mapping[str, Any] | None, where: str = "privacy") -> PrivacyModel:
    """The privacy model called ``name`` with ``params``."""
    if not isinstance(name, str):
        raise ConfigError(f"{where}.{name}: expected a privacy model's name, got {name!r}")
    key = ALIASES.get(name.strip().lower(), name.strip().lower())
    factory = MODEL_FACTORIES.get(key)
    if factory is None:
        close = difflib.get_close_matches(key, list(MODEL_FACTORIES), n=1)
        known = ", ".join(sorted(MODEL_FACTORIES))
        hint = f"did you mean {close[0]!r}?" if close else f"expected one of {known}"
        raise ConfigError(f"{where}: unknown privacy model {name!r}; {hint}")
    if params is None:
        params = {}
    if not isinstance(params, Mapping):
        raise ConfigError(f"{where}.{name}: expected a mapping of parameters, got {params!r}")
    return factory(params, f"{where}.{name}")
