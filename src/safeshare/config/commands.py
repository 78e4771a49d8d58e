"""The specifications of the commands that take no configuration file: their options, typed.

Each command's options (``safeshare inspect --qi ... --k ...``) and the keywords of its
Python function (:func:`safeshare.api.inspect`) build the same frozen pydantic model,
validated once; every error names the option (``--k: expected an integer >= 1, got 0``).
The options that read a data file are one model, :class:`DataOptions`, shared by every
command that reads one (docs/cli.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, BeforeValidator, Field, ValidationError, WithJsonSchema, model_validator

from safeshare.config_checks import (
    Count,
    Flag,
    PositiveInt,
    Probability,
    Section,
    Text,
    TextList,
    checked,
    choice,
    comma_list,
    option_error,
    refuse,
)
from safeshare.data.source import TableSource
from safeshare.errors import ConfigError
from safeshare.missing import parse_missing

M = TypeVar("M", bound=BaseModel)

#: ``--missing``: a comma-separated text in which an empty item is the blank cell (``--missing ''``
#: declares blanks missing; :func:`safeshare.missing.parse_missing`), or a list.
MissingTokens = Annotated[
    list[Text],
    BeforeValidator(lambda v: list(parse_missing(v)) if isinstance(v, str) else v),
    WithJsonSchema({"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]}),
]


def options(model: type[M], values: Mapping[str, Any]) -> M:
    """``model`` validated from keyword ``values`` (``None``: not given); errors name the option."""
    try:
        return model.model_validate({key: value for key, value in values.items() if value is not None})
    except ValidationError as exc:
        raise option_error(exc) from None


class DataOptions(Section):
    """How to read a data file given on the command line (the same options in every command)."""

    delimiter: Text = ","
    header: Flag = True
    names: TextList | None = None
    missing: MissingTokens = Field(default_factory=list)
    skip_rows: Count = 0

    def source(self, path: str | Path) -> TableSource:
        """The :class:`TableSource` of ``path`` read with these options."""
        return TableSource(
            Path(path),
            delimiter=self.delimiter,
            header=self.header,
            names=tuple(self.names) if self.names else None,
            missing=tuple(self.missing),
            skip_rows=self.skip_rows,
        )


#: The keywords of :class:`DataOptions`, for the use cases that take them.
DATA_KEYWORDS = tuple(DataOptions.model_fields)


def _unique(value: Any, where: str) -> list[str]:
    """Columns (comma text or list): at least one, none twice."""
    items = comma_list(value)
    if not isinstance(items, list) or not items or not all(isinstance(v, str) and v for v in items):
        raise ConfigError(f"{where}: give at least one column")
    twice = next((q for i, q in enumerate(items) if q in items[:i]), None)
    if twice is not None:
        raise ConfigError(f"{where}: column {twice!r} is given twice")
    return list(items)


Columns = Annotated[list[str], checked(_unique)]


def _knowledge(value: Any, where: str) -> dict[str, float]:
    from safeshare.risk.knowledge import parse_knowledge, parse_knowledge_option

    if isinstance(value, str):
        return parse_knowledge_option(value, where)
    return parse_knowledge(value, where)


class InspectOptions(DataOptions):
    """``safeshare inspect``: equivalence classes of raw data (thesis ch. 3)."""

    qi: Columns
    k: PositiveInt = 5
    knowledge: Annotated[dict[str, float] | None, checked(_knowledge, allow_none=True)] = None
    #: the column identifying each record's person (issue 32): the figures in people
    person: Text | None = None


class HierarchyCheckOptions(DataOptions):
    """``safeshare hierarchy check``: a hierarchy file, optionally against a data column."""

    hierarchy_delimiter: Text = ";"
    data: Path | None = None
    column: Text | None = None

    @model_validator(mode="after")
    def _column(self) -> HierarchyCheckOptions:
        if self.data is not None and not self.column:
            raise refuse("required with --data", key="column")
        return self


def _builder_spec(value: Any, where: str) -> dict[str, Any]:
    """``--spec``: a builder as YAML text (``{type: intervals, widths: [5, 10]}``) or a mapping.

    Text is parsed by the configuration's loader (:func:`~safeshare.config_checks.parse_yaml`:
    no aliases, no duplicate keys, at most 1 MiB, no integer beyond a float)."""
    from safeshare.config_checks import parse_yaml

    parsed = parse_yaml(value, where, "hierarchy spec") if isinstance(value, str) else value
    if not isinstance(parsed, Mapping):
        raise ConfigError(f"{where}: expected a mapping such as '{{type: intervals, widths: [5, 10]}}'")
    return dict(parsed)


class HierarchyBuildOptions(DataOptions):
    """``safeshare hierarchy build``: a hierarchy for a column, written as an ARX CSV file."""

    column: Text
    spec: Annotated[dict[str, Any], checked(_builder_spec)]
    out: Path


class FlattenOptions(DataOptions):
    """``safeshare flatten``: the first n events of each person, side by side (thesis §4.2)."""

    key: Text
    events: PositiveInt
    out: Path
    event_key: Text | None = None
    order_by: TextList = Field(default_factory=list)
    order_numeric: Flag = False
    order_dates: Text | None = None
    columns: TextList | None = None
    prefix: Text | None = None
    descending: Flag = False
    pad: str = ""
    orphans: Annotated[str, checked(choice("error", "drop"))] = "error"


__all__ = [
    "DATA_KEYWORDS",
    "DataOptions",
    "FlattenOptions",
    "HierarchyBuildOptions",
    "HierarchyCheckOptions",
    "InspectOptions",
    "options",
]


class LearningOptions(Section):
    """The classifier task of ``utility`` and ``sweep --utility`` (thesis §5.3)."""

    test: Path | None = None
    target: Text | None = None
    test_skip_rows: Count = 0
    #: tokens the classifier reads as missing (default ``?``; the configuration's are added)
    missing: TextList | None = None
    strip_target_dot: Flag = True


class UtilityOptions(LearningOptions):
    """``safeshare utility``: accuracy of a classifier trained on the release."""

    test: Path
    target: Text
    out: Path


def _ks(value: Any, where: str) -> list[int]:
    items = comma_list(value)
    if not isinstance(items, list) or not items:
        raise ConfigError(f"{where}: expected a comma-separated list such as '5,25,100', got {value!r}")
    out = []
    for item in items:
        try:
            k = int(item) if isinstance(item, str) else item
        except ValueError:
            raise ConfigError(f"{where}: expected integers >= 1, got {item!r}") from None
        from safeshare.config_checks import check_positive_int

        out.append(check_positive_int(k, where))
    return out


def _limits(value: Any, where: str) -> list[float]:
    from safeshare.config_checks import parse_fractions

    return parse_fractions(value, where)


def _metrics(value: Any, where: str) -> list[str]:
    from safeshare.config.file import _metric

    items = comma_list(value)
    if not isinstance(items, list) or not items or not all(items):
        raise ConfigError(f"{where}: expected a comma-separated list such as 'prec,entropy', got {value!r}")
    return [_metric(item, where) for item in items]


class SweepOptions(LearningOptions):
    """``safeshare sweep``: OLA over a grid of k x suppression limit x metric (thesis §6.1)."""

    out: Path
    k: Annotated[list[int], checked(_ks)] = Field(default_factory=lambda: [5, 25, 100])
    max_suppression: Annotated[list[float], checked(_limits)] = Field(
        default_factory=lambda: [0.0, 0.01, 0.05, 0.1, 0.2, 0.5]
    )
    metric: Annotated[list[str], checked(_metrics)] = Field(
        default_factory=lambda: ["prec", "dm_star", "entropy"]
    )
    utility: Flag = False
    compare_thesis: Flag | None = None
    write_releases: Flag = False
    plots: Flag = True

    @model_validator(mode="after")
    def _task(self) -> SweepOptions:
        if self.utility and (self.test is None or self.target is None):
            raise refuse("--utility needs --test TEST_FILE and --target COLUMN", key=None)
        if not self.utility and (self.test is not None or self.target is not None):
            raise refuse("--test and --target are used with --utility only", key=None)
        return self


def _seed(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigError(f"{where}: expected an integer >= 0, got {value!r}")
    return value


#: A seed: an integer >= 0 in every command (``--seed``).
Seed = Annotated[int, checked(_seed)]


class DPExperimentOptions(Section):
    """``safeshare dp experiment``: thesis §6.2.2-6.2.3."""

    out: Path
    config: Path | None = None
    simulations: PositiveInt = 10
    seed: Seed = 2024


def _open_unit(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 < float(value) < 1.0:
        raise ConfigError(f"{where}: expected a number in (0, 1), got {value!r}")
    return float(value)


def _non_negative(value: Any, where: str) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not 0.0 <= float(value) < float("inf")
    ):
        raise ConfigError(f"{where}: expected a number >= 0, got {value!r}")
    return float(value)


class DPParamsOptions(Section):
    """``safeshare dp params``: delta = D(k, beta, epsilon - epsilon'), or the parameter left out."""

    k: PositiveInt | None = None
    beta: Annotated[float | None, checked(_open_unit, allow_none=True)] = None
    epsilon: Annotated[float | None, checked(_non_negative, allow_none=True)] = None
    epsilon_prime: Annotated[float | None, checked(_non_negative, allow_none=True)] = None
    delta: Annotated[float | None, checked(_open_unit, allow_none=True)] = None
    n: PositiveInt | None = None
    grid: Flag = False

    @model_validator(mode="after")
    def _n(self) -> DPParamsOptions:
        if not self.grid and self.n is None:
            raise refuse("the number of records of the input is required", key="n")
        return self


def _estimators(value: Any, where: str) -> list[str]:
    """``default``, ``all``, or estimator names (a comma text or a list), none unknown."""
    from safeshare.risk.estimators import DEFAULT_ESTIMATOR, estimator_names

    known = estimator_names()
    if value in ("default", ["default"]):
        return [DEFAULT_ESTIMATOR]
    if value in ("all", ["all"]):
        return known
    items = comma_list(value)
    if not isinstance(items, list) or not items or not all(isinstance(v, str) and v for v in items):
        raise ConfigError(f"{where}: expected an estimator's name, a comma list of names, or all")
    for name in items:
        if name not in known:
            raise ConfigError(f"{where}: unknown estimator {name!r} (one of {', '.join(known)})")
    return list(dict.fromkeys(items))


Estimators = Annotated[list[str], checked(_estimators)]
Correlation = Annotated[str, checked(choice("mi", "rank"))]


class RiskOptions(DataOptions):
    """``safeshare risk``: the exact measures and the estimates of B of a sample (Jiang et al. 2022)."""

    qi: Columns
    population_size: PositiveInt
    estimator: Estimators = Field(default_factory=lambda: ["default"], validate_default=True)
    #: whether ``estimator`` was ``all`` (an unaffordable copula is then "no estimate", not refused)
    every_estimator: Flag = False
    population: Path | None = None
    data_is_population: Flag = False
    seed: Seed = 0
    #: synthetic populations per copula estimate (Monte Carlo runs)
    simulations: PositiveInt = 1
    correlation: Correlation = "mi"
    #: class resamples of the class-size estimators' intervals (None: their default)
    bootstrap: Count | None = None
    threshold: Probability = 0.09
    max_synthetic_records: PositiveInt | None = None
    #: the column identifying each record's person (issue 32): n, N and the measures in people
    person: Text | None = None

    @model_validator(mode="before")
    @classmethod
    def _all(cls, data: Any) -> Any:
        if isinstance(data, Mapping) and data.get("estimator") in ("all", ["all"]):
            return {**data, "every_estimator": True}
        return data

    @model_validator(mode="after")
    def _population(self) -> RiskOptions:
        if self.data_is_population and self.population is not None:
            raise refuse("excludes --population", key="data_is_population")
        return self


class RiskEvaluateOptions(DataOptions):
    """``safeshare risk evaluate``: the estimators' evaluation on a population (§2.8)."""

    qi: Columns
    out: Path
    #: study points (each a Monte Carlo draw of QIs, a sampling fraction and a sample)
    simulations: PositiveInt = 300
    seed: Seed = 0
    jobs: PositiveInt = 1
    estimator: Estimators = Field(default_factory=lambda: ["all"], validate_default=True)
    population_size_error: Annotated[list[float], checked(lambda v, w: _fractions(v, w))] = Field(
        default_factory=lambda: [0.1, 0.2, 0.3]
    )
    sensitivity_estimator: Text = "average"
    correlation: Correlation = "mi"
    plots: Flag = True


def _fractions(value: Any, where: str) -> list[float]:
    """``--population-size-error``: numbers (a comma text or a list; empty: none)."""
    items = comma_list(value)
    if not isinstance(items, list):
        raise ConfigError(f"{where}: expected comma-separated numbers, got {value!r}")
    out = []
    for item in items:
        try:
            out.append(float(item))
        except (TypeError, ValueError):
            raise ConfigError(f"{where}: expected comma-separated numbers, got {item!r}") from None
    return out


def _columns_or_none(value: Any, where: str) -> list[str]:
    """A comma list of columns, possibly empty (``--block ''``: no blocking)."""
    items = comma_list(value)
    if isinstance(items, str):
        items = [items] if items else []
    if not isinstance(items, list) or not all(isinstance(v, str) and v for v in items):
        raise ConfigError(f"{where}: expected column names, comma separated")
    return list(items)


class AttackOptions(DataOptions):
    """``safeshare attack``: re-identification attacks on a release with an identified frame
    (the reading options are the frame's and the control's)."""

    #: the column linking the frame to the configuration's input (None: the frame is the input)
    id: Text | None = None
    #: records of the population not in the release (the residual risks' control set)
    control: Path | None = None
    seed: Seed = 0
    #: the record-risk threshold (the share of records above it is counted)
    threshold: Probability = 0.09
    #: QIs whose labels block the distance linkage (None: every QI)
    block: Annotated[list[str] | None, checked(_columns_or_none, allow_none=True)] = None
    max_pairs: PositiveInt = 2_000_000_000
    #: targets of each residual-risk attack
    targets: PositiveInt = 1000
    #: the secret column of the inference attack (None: the first sensitive column the frame has)
    secret: Text | None = None
    #: N of the estimates (None: the configuration's population_size, else the frame's records)
    population_size: PositiveInt | None = None
