"""Privacy models by configuration name: one registry of typed parameters.

The ``privacy`` map of a configuration file names models and their parameters, e.g.
``privacy: {k-anonymity: {k: 5}, l-diversity: {l: 3, columns: [diagnosis]}}``. Each name
is registered in :data:`PRIVACY_MODELS` with a frozen pydantic model of its parameters
(:class:`ModelParams`): it validates them once (types, ranges, choices, unknown keys with a
"did you mean"; every message names the key path) and :meth:`ModelParams.build` makes the
:class:`~safeshare.models.base.PrivacyModel`. The JSON Schema of every entry is part of
docs/config.schema.json. A new model is one file and one line here (docs/architecture.md).
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import ValidationError, WithJsonSchema, model_validator

from safeshare.config import vocabulary
from safeshare.config_checks import (
    PositiveInt,
    Probability,
    Section,
    Text,
    checked,
    choice,
    refuse,
    validation_error,
)
from safeshare.errors import ConfigError, InputError
from safeshare.models.vocabulary import DEFAULT_MIN_SIZE, DISTANCES, VARIANTS

if TYPE_CHECKING:
    from safeshare.models.base import PrivacyModel

# The registry validates a configuration without loading the models, the numerical core or
# the risk estimators: each model is imported by its build(), and what the parameters borrow
# from the risk package (the measures' names, the default estimator and threshold, the
# knowledge parser) when a configuration uses it.


#: Parameters of a privacy model that name a file (relative to the configuration): small-cells'
#: ``population``. :func:`safeshare.config.file.named_files` lists them with every other path.
FILE_KEYS = ("population",)


class ModelParams(Section):
    """The parameters of one privacy model, as a configuration gives them."""

    def build(self, base_dir: Path) -> PrivacyModel:
        """The model these parameters describe (``base_dir``: the configuration's directory)."""
        raise NotImplementedError


#: A list of sensitive columns the model applies to (default: every sensitive column).
Columns = Annotated[
    list[str] | None,
    checked(
        lambda value, where: _columns(value, where),
        allow_none=True,
    ),
    WithJsonSchema({"type": "array", "items": {"type": "string"}, "minItems": 1}),
]


def _columns(value: Any, where: str) -> list[str]:
    if not isinstance(value, list) or not value or not all(isinstance(c, str) and c for c in value):
        raise ConfigError(f"{where}: expected a non-empty list of sensitive column names, got {value!r}")
    return list(value)


class KAnonymityParams(ModelParams):
    """``k-anonymity: {k: 5}``: every released class holds at least k records (thesis §4.1)."""

    k: PositiveInt

    def build(self, base_dir: Path) -> PrivacyModel:
        from safeshare.models.k_anonymity import KAnonymity

        return KAnonymity(self.k)


class ProfileAnonymityParams(ModelParams):
    """``profile-anonymity: {k: 5}``: every person's linked records (their profile: the multiset of
    their classes) are shared by at least k people (issue 32; docs/longitudinal.md)."""

    k: PositiveInt

    def build(self, base_dir: Path) -> PrivacyModel:
        from safeshare.models.profile import ProfileAnonymity

        return ProfileAnonymity(self.k)


class LDiversityParams(ModelParams):
    """``l-diversity: {l: 3, variant: distinct|entropy|recursive, c: 2, columns: [...]}``."""

    l: Annotated[float, WithJsonSchema({"type": "number", "minimum": 1})]  # noqa: E741
    variant: Annotated[
        str, checked(choice(*VARIANTS)), WithJsonSchema({"enum": list(VARIANTS), "default": "distinct"})
    ] = "distinct"
    c: Annotated[float | None, WithJsonSchema({"type": "number", "exclusiveMinimum": 0})] = None
    columns: Columns = None

    @model_validator(mode="before")
    @classmethod
    def _by_variant(cls, data: Any) -> Any:
        """``c`` applies to the recursive variant only; ``l`` is an integer except for entropy."""
        if not isinstance(data, Mapping):
            return data
        variant = data.get("variant", "distinct")
        if variant not in VARIANTS:
            return data  # the variant's own error
        if "c" in data and variant != "recursive":
            raise refuse(f"applies to variant: recursive only, not {variant}", key="c")
        out = dict(data)
        if "l" in data:
            l = data["l"]  # noqa: E741
            if variant == "entropy":
                if not _finite(l) or float(l) < 1:
                    raise refuse(f"expected a number >= 1, got {l!r}", key="l")
            elif isinstance(l, bool) or not isinstance(l, int) or l < 1:
                raise refuse(f"expected an integer >= 1, got {l!r}", key="l")
            out["l"] = float(l)
        if variant == "recursive":
            if "c" not in data:
                raise refuse("missing c (recursive (c,l)-diversity: r1 < c (r_l + ... + r_m))")
            c = data["c"]
            if not _finite(c) or float(c) <= 0:
                raise refuse(f"expected a number > 0, got {c!r}", key="c")
            out["c"] = float(c)
        return out

    def build(self, base_dir: Path) -> PrivacyModel:
        from safeshare.models.l_diversity import LDiversity

        return LDiversity(self.l, self.variant, self.c, self.columns)


def _finite(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, int | float) and math.isfinite(float(value))


def _distance(value: Any, where: str) -> str | dict[str, str]:
    if isinstance(value, Mapping):
        out: dict[str, str] = {}
        for column, kind in value.items():
            if not isinstance(column, str):
                raise ConfigError(f"{where}.{column}: expected a column name, got {column!r}")
            if kind not in DISTANCES:
                raise ConfigError(f"{where}.{column}: expected one of {', '.join(DISTANCES)}, got {kind!r}")
            out[column] = str(kind)
        return out
    if value not in DISTANCES:
        raise ConfigError(
            f"{where}: expected one of {', '.join(DISTANCES)} or a mapping column -> distance, got {value!r}"
        )
    return str(value)


class TClosenessParams(ModelParams):
    """``t-closeness: {t: 0.2, distance: equal|ordered|hierarchical|{column: distance}, columns: [...]}``."""

    t: Annotated[
        float, checked(lambda v, w: _t(v, w)), WithJsonSchema({"type": "number", "minimum": 0, "maximum": 1})
    ]
    distance: Annotated[
        str | dict[str, str] | None,
        checked(_distance, allow_none=True),
        WithJsonSchema(
            {
                "anyOf": [
                    {"enum": list(DISTANCES)},
                    {"type": "object", "additionalProperties": {"enum": list(DISTANCES)}},
                ]
            }
        ),
    ] = None
    columns: Columns = None

    def build(self, base_dir: Path) -> PrivacyModel:
        from safeshare.models.t_closeness import TCloseness

        return TCloseness(self.t, self.distance, self.columns)


def _t(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 <= float(value) <= 1.0:
        raise ConfigError(f"{where}: expected a number in [0, 1], got {value!r}")
    return float(value)


def _knowledge(value: Any, where: str) -> dict[str, float]:
    from safeshare.risk.knowledge import parse_knowledge

    return parse_knowledge(value, where)


Knowledge = Annotated[
    dict[str, float],
    checked(_knowledge),
    WithJsonSchema(
        {"type": "object", "additionalProperties": {"type": "number", "minimum": 0, "maximum": 1}}
    ),
]


class MConcealingParams(ModelParams):
    """``m-concealing: {m: 0.1, knowledge: {COLUMN: probability}, inclusion_probability: 1}`` (§5.2)."""

    m: Probability
    knowledge: Knowledge
    inclusion_probability: Probability = 1.0

    @model_validator(mode="before")
    @classmethod
    def _required(cls, data: Any) -> Any:
        if isinstance(data, Mapping):
            if "m" not in data:
                raise refuse("missing m (the largest re-identification probability, e.g. 0.1)")
            if "knowledge" not in data:
                raise refuse("missing knowledge, e.g. knowledge: {capital-gain: 0.01}")
        return data

    def build(self, base_dir: Path) -> PrivacyModel:
        from safeshare.models.m_concealing import MConcealing

        return MConcealing(self.m, self.knowledge, self.inclusion_probability)


class RiskParams(ModelParams):
    """``risk: {measure: B|A|uniques|record, threshold: 0.09, estimator: NAME, population_size: N,
    use: estimate|upper}`` (``record``: every released record's risk, threshold and N only)."""

    measure: Annotated[
        str, checked(lambda v, w: _measure(v, w)), WithJsonSchema({"type": "string", "default": "B"})
    ] = "B"
    #: the largest tolerated value (default: the paper's 0.09 for B)
    threshold: Probability | None = None
    #: an estimator of B (default: the risk package's DEFAULT_ESTIMATOR)
    estimator: Text | None = None
    population_size: PositiveInt | None = None
    #: what the threshold bounds: the estimate, or the upper end of its 95 % interval
    use: Annotated[
        str, checked(lambda v, w: _use(v, w)), WithJsonSchema({"type": "string", "default": "estimate"})
    ] = "estimate"

    @model_validator(mode="after")
    def _threshold(self) -> RiskParams:
        if self.threshold is None and self.measure not in ("B", "record"):
            from safeshare.risk.release_risk import MEASURES

            raise refuse(f"missing threshold (the largest tolerated {MEASURES[self.measure]})")
        if self.use == "upper" and self.measure == "uniques":
            raise refuse("upper needs an interval, which measure uniques does not have", key="use")
        return self

    def build(self, base_dir: Path) -> PrivacyModel:
        from safeshare.models.risk import RiskThreshold
        from safeshare.risk.estimators import DEFAULT_ESTIMATOR
        from safeshare.risk.measures import DEFAULT_THRESHOLD

        threshold = self.threshold if self.threshold is not None else DEFAULT_THRESHOLD
        if self.measure == "record":
            from safeshare.models.risk import RecordRiskThreshold

            if self.estimator is not None or self.use != "estimate":
                raise ConfigError("measure: record takes threshold and population_size only")
            return RecordRiskThreshold(threshold, self.population_size)
        estimator = self.estimator if self.estimator is not None else DEFAULT_ESTIMATOR
        try:
            return RiskThreshold(threshold, self.measure, estimator, self.population_size, self.use)
        except InputError as exc:
            raise ConfigError(f"estimator: {exc}") from None


def _measure(value: Any, where: str) -> str:
    from safeshare.risk.release_risk import MEASURES

    return choice(*MEASURES)(value, where)


def _use(value: Any, where: str) -> str:
    from safeshare.risk.release_risk import USES

    return choice(*USES)(value, where)


def _delimiter(value: Any, where: str) -> str:
    if not isinstance(value, str) or len(value) != 1:
        raise ConfigError(f"{where}: expected one character, got {value!r}")
    return value


class SmallCellsParams(ModelParams):
    """``small-cells: {population: FILE.csv, min_size: 11, delimiter: ","}``."""

    population: Annotated[str, checked(lambda v, w: _population(v, w))]
    min_size: PositiveInt = DEFAULT_MIN_SIZE
    delimiter: Annotated[
        str, checked(_delimiter), WithJsonSchema({"type": "string", "minLength": 1, "maxLength": 1})
    ] = ","

    @model_validator(mode="before")
    @classmethod
    def _required(cls, data: Any) -> Any:
        if isinstance(data, Mapping) and "population" not in data:
            raise refuse("missing population (a CSV file with a header naming the QIs)")
        return data

    def build(self, base_dir: Path) -> PrivacyModel:
        from safeshare.models.small_cells import SmallCells

        path = Path(self.population)  # relative to the configuration, like hierarchies
        return SmallCells(path if path.is_absolute() else base_dir / path, self.min_size, self.delimiter)


def _population(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise ConfigError(f"{where}: expected a CSV file with a header naming the QIs, got {value!r}")
    return value


#: Every privacy model a configuration may name, with the pydantic model of its parameters.
PRIVACY_MODELS: dict[str, type[ModelParams]] = {
    "k-anonymity": KAnonymityParams,
    "m-concealing": MConcealingParams,
    "l-diversity": LDiversityParams,
    "t-closeness": TClosenessParams,
    "risk": RiskParams,
    "small-cells": SmallCellsParams,
    "profile-anonymity": ProfileAnonymityParams,
}

#: Other spellings of a model's name (the vocabulary's: :data:`safeshare.config.vocabulary.MODEL_ALIASES`).
ALIASES = vocabulary.MODEL_ALIASES


def model_name(name: Any, where: str = "privacy") -> str:
    """The registered name of ``name`` (aliases resolved), with a "did you mean" for a typo."""
    if not isinstance(name, str):
        raise ConfigError(f"{where}.{name}: expected a privacy model's name, got {name!r}")
    key = vocabulary.model_name(name) or name.strip().lower()
    if key not in PRIVACY_MODELS:
        close = difflib.get_close_matches(key, list(PRIVACY_MODELS), n=1)
        known = ", ".join(sorted(PRIVACY_MODELS))
        hint = f"did you mean {close[0]!r}?" if close else f"expected one of {known}"
        raise ConfigError(f"{where}: unknown privacy model {name!r}; {hint}")
    return key


def model_params(name: str, params: Any, where: str = "privacy") -> ModelParams:
    """The validated parameters of the model ``name`` (errors name ``where.name.key``)."""
    key = model_name(name, where)
    here = f"{where}.{name}"
    if params is None:
        params = {}
    if not isinstance(params, Mapping):
        raise ConfigError(f"{here}: expected a mapping of parameters, got {params!r}")
    cls = PRIVACY_MODELS[key]
    try:
        return cls.model_validate(dict(params))
    except ValidationError as exc:
        raise validation_error(exc, here, {"": cls}) from None


def make_model(
    name: str, params: Mapping[str, Any] | None, where: str = "privacy", base_dir: Path | None = None
) -> PrivacyModel:
    """The privacy model called ``name`` with ``params`` (relative paths from ``base_dir``)."""
    validated = model_params(name, params, where)
    try:
        return validated.build(base_dir if base_dir is not None else Path.cwd())
    except ConfigError as exc:
        raise ConfigError(f"{where}.{name}.{exc}") from None


def privacy_json_schema() -> dict[str, Any]:
    """The JSON Schema of a configuration's ``privacy:`` map (one entry per registered model)."""
    defs: dict[str, Any] = {}
    properties: dict[str, Any] = {}
    from safeshare.risk.release_risk import MEASURES, USES

    for name, cls in PRIVACY_MODELS.items():
        schema = cls.model_json_schema(ref_template="#/$defs/{model}")
        defs.update(schema.pop("$defs", {}))
        defs[cls.__name__] = schema
        properties[name] = {"$ref": f"#/$defs/{cls.__name__}"}
    defs["RiskParams"]["properties"]["measure"] = {"enum": list(MEASURES), "default": "B", "title": "Measure"}
    defs["RiskParams"]["properties"]["use"] = {"enum": list(USES), "default": "estimate", "title": "Use"}
    return {
        "type": "object",
        "properties": properties,
        "additionalProperties": False,
        "minProperties": 1,
        "$defs": defs,
    }


__all__ = [
    "ALIASES",
    "PRIVACY_MODELS",
    "KAnonymityParams",
    "LDiversityParams",
    "MConcealingParams",
    "ModelParams",
    "ProfileAnonymityParams",
    "RiskParams",
    "SmallCellsParams",
    "TClosenessParams",
    "make_model",
    "model_name",
    "model_params",
    "privacy_json_schema",
]
