"""The YAML configuration of an anonymization run.

Example (paths are relative to the configuration file)::

    input:
      path: adult.data          # CSV (optionally .gz) or Parquet
      header: false
      names: [age, workclass, ...]
      delimiter: ","
      missing: []               # tokens meaning "missing", e.g. ["?"]
      skip_rows: 0
      ragged: error             # error | pad (pad short rows with empty values)
    default_role: identifying   # unlisted columns: identifying (drop) | insensitive (keep);
                                # without it, every column must be listed
    attributes:
      age: {role: quasi, hierarchy: hierarchies/age.csv}
      zip: {role: quasi, hierarchy: {type: masking}}
      fnlwgt: {role: identifying}
      notes: {role: text}
      capital-gain: {role: sensitive}
      diagnosis: {role: sensitive, hierarchy: hierarchies/icd.csv}   # t-closeness distance
    privacy:
      k-anonymity: {k: 5}
    max_suppression: 0.05
    metric: prec                # prec | dm_star | entropy
    algorithm: ola              # ola | exhaustive | inverse-ola | epsilon-safe | anytime | auto
    max_loss: 0.5               # inverse-ola: largest normalized information loss
    time_limit: 60              # anytime, auto: seconds of search (docs/anytime.md)
    max_evaluations: 20000      # anytime, auto: node evaluations at most
    exact_max_nodes: 500000     # auto: largest lattice searched exactly by OLA
    knowledge: {capital-gain: 0.01}   # report m-concealing of the release (docs/m-concealing.md)
    engine: memory              # memory | duckdb | spark
    spark: {master: "local[2]", app_name: safeshare, executor_memory: 2g, shuffle_partitions: 8}
    duckdb: {memory_limit: 2GB, threads: 2}   # DuckDB engine; default: from the machine
    output: {format: csv, delimiter: ","}

Every error names the file and the key path, on one line.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Annotated, Any, cast

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    WithJsonSchema,
    model_validator,
)
from pydantic_core import PydanticCustomError

from safeshare.config_checks import check_keys, read_yaml
from safeshare.data.engines.base import OutputFormat
from safeshare.data.schema import DEFAULT_ROLES, Attribute, HierarchySpec, Role, Schema
from safeshare.data.source import TableSource
from safeshare.dp.config import DP_KEYS, check_overrides, dp_section, epsilon_safe_params
from safeshare.errors import ConfigError, InputError
from safeshare.hierarchy.builders import FileBuilder, builder_from_spec
from safeshare.metrics.loss import metric_name
from safeshare.models.base import PrivacyModel
from safeshare.models.k_anonymity import KAnonymity, check_k
from safeshare.models.registry import make_model
from safeshare.models.risk import RiskThreshold
from safeshare.models.small_cells import SmallCells
from safeshare.risk.knowledge import parse_knowledge
from safeshare.workflows.algorithms import ALGORITHMS
from safeshare.workflows.spec import AnonymizationSpec

ENGINES = ("memory", "duckdb", "spark")
#: Keys of the ``spark:`` section (checked by the spark engine's ``parse_spark_options``).
SPARK_KEYS = ("master", "app_name", "executor_memory", "driver_memory", "shuffle_partitions")
#: Top-level keys that are known but not read: the reason is the error message.
NOT_READ = {"utility": "not read from the configuration; `safeshare utility` takes its settings from options"}
#: Top-level keys that apply to some algorithms only (``auto`` runs the anytime search above
#: ``exact_max_nodes``, so it takes the anytime budget too).
ALGORITHM_KEYS: dict[str, tuple[str, ...]] = {
    "dp": ("epsilon-safe",),
    "max_loss": ("inverse-ola",),
    "time_limit": ("anytime", "auto"),
    "max_evaluations": ("anytime", "auto"),
    "exact_max_nodes": ("auto",),
}

#: Algorithms that run without a privacy model (Inverse OLA maximizes k).
ALGORITHMS_WITHOUT_PRIVACY = {"inverse-ola"}


@dataclass
class RunConfig:
    """A validated configuration."""

    path: Path
    source: TableSource
    schema: Schema
    privacy: list[PrivacyModel]
    max_suppression: float = 0.0
    metric: str = "prec"
    algorithm: str = "ola"
    engine: str = "memory"
    output_format: OutputFormat | None = None
    output_delimiter: str = ","
    prec_weights: dict[str, float] = field(default_factory=dict)
    max_loss: float | None = None
    #: the anytime search's budget (``None``: its default)
    time_limit: float | None = None
    max_evaluations: int | None = None
    #: ``auto``: the largest lattice searched exactly (``None``: its default)
    exact_max_nodes: int | None = None
    knowledge: dict[str, float] | None = None
    #: The file's ``dp:`` section, its key names checked (epsilon-safe; values checked by :meth:`spec`).
    dp: dict[str, Any] = field(default_factory=dict)
    #: Command-line values of ``dp`` keys (``--beta``, ...), which win over the file's.
    dp_overrides: dict[str, Any] = field(default_factory=dict)
    #: The algorithm-specific top-level keys the file gives (:data:`ALGORITHM_KEYS`).
    algorithm_keys: frozenset[str] = frozenset()
    spark: Any = None  # SparkOptions of the spark engine (safeshare.data.engines.spark_engine)
    #: the DuckDB engine's ``memory_limit`` and ``threads`` as configured (absent: machine defaults)
    duckdb: dict[str, Any] = field(default_factory=dict)
    #: N for the report's risk section; ``None``: the input is the whole population.
    population_size: int | None = None

    @property
    def base_dir(self) -> Path:
        return self.path.parent

    @property
    def release_format(self) -> OutputFormat:
        """The release format: as configured, else the input's format."""
        return self.output_format or ("parquet" if self.engine == "spark" else self.source.fmt)

    def with_overrides(
        self,
        k: int | None = None,
        max_suppression: float | None = None,
        metric: str | None = None,
        algorithm: str | None = None,
        engine: str | None = None,
        max_loss: float | None = None,
        dp: Mapping[str, Any] | None = None,
        duckdb_memory_limit: str | None = None,
        duckdb_threads: int | None = None,
        time_limit: float | None = None,
        max_evaluations: int | None = None,
        exact_max_nodes: int | None = None,
    ) -> RunConfig:
        """A copy with command-line overrides applied (and validated).

        Without a privacy model only Inverse OLA may run; it then maximizes
        k-anonymity from k = 1. ``dp`` maps ``dp`` keys to option values (``None``:
        not given); their values are checked with the file's by :meth:`spec`.
        """
        out = replace(self, privacy=list(self.privacy))
        if dp is not None:
            out.dp_overrides = {**self.dp_overrides, **check_overrides(dp)}
        if k is not None:
            out.privacy = [m for m in out.privacy if not isinstance(m, KAnonymity)]
            out.privacy.insert(0, KAnonymity(check_k(k, "--k")))
        if max_suppression is not None:
            out.max_suppression = _fraction(max_suppression, "--max-suppression")
        if metric is not None:
            out.metric = _metric(metric, "--metric")
        if algorithm is not None:
            out.algorithm = _algorithm(algorithm, "--algorithm")
        if engine is not None:
            out.engine = _engine(engine, "--engine")
        if max_loss is not None:
            out.max_loss = _fraction(max_loss, "--max-loss")
        if time_limit is not None:
            out.time_limit = _seconds(time_limit, "--time-limit")
        if max_evaluations is not None:
            out.max_evaluations = _positive_int(max_evaluations, "--max-evaluations")
        if exact_max_nodes is not None:
            out.exact_max_nodes = _positive_int(exact_max_nodes, "--exact-max-nodes")
        if out.engine == "spark" and out.output_format == "csv":
            raise ConfigError(f"{self.path}: output.format: the spark engine writes Parquet releases only")
        out.duckdb = dict(self.duckdb)
        if duckdb_memory_limit is not None:
            out.duckdb["memory_limit"] = _memory_size(duckdb_memory_limit, "--duckdb-memory-limit")
        if duckdb_threads is not None:
            out.duckdb["threads"] = _positive_int(duckdb_threads, "--duckdb-threads")
        if algorithm is not None:
            why = f"--algorithm {out.algorithm}"
            _check_algorithm_keys(set(self.algorithm_keys), out.algorithm, f"{self.path}:", why)
        if not out.privacy:
            if out.algorithm not in ALGORITHMS_WITHOUT_PRIVACY:
                raise ConfigError(
                    f"{self.path}: privacy: missing; e.g. privacy: {{k-anonymity: {{k: 5}}}} "
                    "(only --algorithm inverse-ola, which maximizes k, runs without one)"
                )
            out.privacy = [KAnonymity(1)]
        return out

    def algorithm_options(self) -> dict[str, Any]:
        """The search strategy's options from the configuration: ``max_loss`` (inverse-ola),
        ``time_limit`` and ``max_evaluations`` (anytime, auto), ``exact_max_nodes`` (auto), the
        :class:`~safeshare.dp.epsilon_safe.EpsilonSafeParams` of ``dp`` and its command-line
        overrides (epsilon-safe)."""
        if self.algorithm == "epsilon-safe":
            return {"params": epsilon_safe_params(self.dp, str(self.path), self.dp_overrides)}
        options = {
            "max_loss": self.max_loss,
            "time_limit": self.time_limit,
            "max_evaluations": self.max_evaluations,
            "exact_max_nodes": self.exact_max_nodes,
        }
        return {key: value for key, value in options.items() if value is not None}

    def spec(self) -> AnonymizationSpec:
        """The run this configuration describes, as one frozen, validated specification.

        Every command builds its :class:`Anonymizer` (or :class:`Sweep`) from it, so
        that no command can drop a setting (``utility`` and ``sweep`` once dropped
        the algorithm's options).
        """
        try:
            return AnonymizationSpec(
                schema=self.schema,
                privacy=tuple(self.privacy),
                max_suppression=self.max_suppression,
                metric=self.metric,
                algorithm=self.algorithm,
                algorithm_options=self.algorithm_options(),
                prec_weights=self.prec_weights,
            )
        except ConfigError as exc:  # say which file (a dp error already does)
            if str(exc).startswith(str(self.path)) or str(exc).startswith("--"):
                raise
            raise ConfigError(f"{self.path}: {exc}") from None


def load_config(path: str | Path) -> RunConfig:
    """Read and validate a configuration file."""
    path = Path(path)
    raw = read_yaml(path)
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{path}: expected a mapping at the top level")
    return parse_config(dict(raw), path)


def parse_config(raw: Mapping[str, Any], path: Path) -> RunConfig:
    """Validate a configuration mapping read from ``path``.

    The shape, types, ranges and defaults are those of :class:`ConfigFile` (pydantic,
    ``extra="forbid"``); its errors become one :class:`ConfigError` line with the key
    path. What needs the data or other files (hierarchies, privacy models, QI names of
    ``prec_weights``) is checked here, after it.
    """
    name = str(path)
    check_keys(raw, TOP_LEVEL_KEYS, f"{name}:", NOT_READ)
    algorithm = _algorithm(raw.get("algorithm", "ola"), f"{name}: algorithm")
    _check_algorithm_keys(set(raw), algorithm, f"{name}:", f"algorithm is {algorithm}")
    try:
        cfg = ConfigFile.model_validate(raw)
    except ValidationError as exc:
        raise _config_error(exc, name) from None
    base = path.parent
    source = _source(cfg.input, base, f"{name}: input")
    schema = _schema(cfg.attributes, base, f"{name}: attributes")
    if cfg.default_role is not None:
        schema.default_role = _default_role(cfg.default_role, f"{name}: default_role")
    privacy = _privacy(raw.get("privacy"), f"{name}: privacy", base)
    not_qi = {
        c: f"not a quasi-identifier (role {a.role.value})"
        for c, a in schema.attributes.items()
        if a.role is not Role.QUASI
    }
    check_keys(cfg.prec_weights, schema.quasi_identifiers, f"{name}: prec_weights", not_qi)
    dp = dp_section(raw, name)  # the one read of the dp section (epsilon-safe)
    return RunConfig(
        path=path,
        source=source,
        schema=schema,
        privacy=privacy,
        max_suppression=cfg.max_suppression,
        metric=cfg.metric,
        algorithm=algorithm,
        engine=cfg.engine,
        output_format=cast(OutputFormat | None, cfg.output.format),
        output_delimiter=cfg.output.delimiter,
        prec_weights=dict(cfg.prec_weights),
        max_loss=cfg.max_loss,
        time_limit=cfg.time_limit,
        max_evaluations=cfg.max_evaluations,
        exact_max_nodes=cfg.exact_max_nodes,
        knowledge=parse_knowledge(raw["knowledge"], f"{name}: knowledge")
        if raw.get("knowledge") is not None
        else None,
        dp=dp,
        algorithm_keys=frozenset(key for key in ALGORITHM_KEYS if key in raw),
        spark=_spark(raw.get("spark"), f"{name}: spark"),
        duckdb=_duckdb_section(raw.get("duckdb"), f"{name}: duckdb"),
        population_size=_population_size(raw.get("population_size"), privacy, f"{name}: population_size"),
    )


def _population_size(value: Any, privacy: Sequence[PrivacyModel], where: str) -> int | None:
    """The report's N: the key, else the risk model's ``population_size`` (they must agree)."""
    from_model = next((m.population_size for m in privacy if isinstance(m, RiskThreshold)), None)
    if value is None:
        return from_model
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"{where}: expected a positive integer (the population's size), got {value!r}")
    if from_model is not None and from_model != value:
        raise ConfigError(f"{where}: {value} differs from privacy.risk.population_size {from_model}")
    return value


_SIZE = re.compile(r"^\s*\d+(\.\d+)?\s*(B|KB|MB|GB|TB|KiB|MiB|GiB|TiB)\s*$", re.IGNORECASE)


def _memory_size(value: Any, where: str) -> str:
    if not isinstance(value, str) or not _SIZE.match(value):
        raise ConfigError(f"{where}: expected a size such as 2GB or 512MB, got {value!r}")
    return value.strip()


def _positive_int(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"{where}: expected an integer >= 1, got {value!r}")
    return value


def _duckdb_section(section: Any, where: str) -> dict[str, Any]:
    """``duckdb: {memory_limit: 2GB, threads: 2}``: the DuckDB engine's resources."""
    if section is None:
        return {}
    if not isinstance(section, Mapping):
        raise ConfigError(f"{where}: expected a mapping with memory_limit and/or threads")
    check_keys(section, {"memory_limit", "threads"}, f"{where}.")
    out: dict[str, Any] = {}
    if section.get("memory_limit") is not None:
        out["memory_limit"] = _memory_size(section["memory_limit"], f"{where}.memory_limit")
    if section.get("threads") is not None:
        out["threads"] = _positive_int(section["threads"], f"{where}.threads")
    return out


def _spark(value: Any, where: str) -> Any:
    from safeshare.data.engines.spark_engine import parse_spark_options  # no pyspark import

    return parse_spark_options(value, where)


def _algorithm(value: Any, where: str) -> str:
    """A search strategy's name (:data:`ALGORITHMS`), with a "did you mean" for a typo."""
    name = _text(value, where)
    if name not in ALGORITHMS:
        close = difflib.get_close_matches(name, list(ALGORITHMS), n=1)
        hint = f"did you mean {close[0]!r}?" if close else f"expected one of {', '.join(ALGORITHMS)}"
        raise ConfigError(f"{where}: unknown algorithm {name!r}; {hint}")
    return name


def _check_algorithm_keys(given: set[str], algorithm: str, where: str, why: str) -> None:
    """Refuse top-level options of an algorithm other than ``algorithm`` (``why`` says what selected it)."""
    check_keys(
        {key: None for key in given if key in ALGORITHM_KEYS},
        ALGORITHM_KEYS,
        where,
        {
            key: f"applies to algorithm: {' or '.join(owners)} only ({why})"
            for key, owners in ALGORITHM_KEYS.items()
            if algorithm not in owners
        },
    )


def _text(value: Any, where: str) -> str:
    """A configuration value that must be text (YAML reads ``1`` and ``null`` as other types)."""
    if not isinstance(value, str):
        shown = "null" if value is None else repr(value)
        raise ConfigError(f'{where}: expected a text, got {shown} (quote it: "...")')
    return value


def _output_delimiter(value: Any, where: str) -> str:
    """One character that cannot be confused with a quote or a line end."""
    text = _text(value, where)
    if len(text) != 1 or text in {'"', "\n", "\r"}:
        raise ConfigError(f"{where}: expected one character other than a quote or a line end, got {text!r}")
    return text


def _seconds(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < float(value) < float("inf"):
        raise ConfigError(f"{where}: expected a positive number of seconds, got {value!r}")
    return float(value)


def _fraction(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(f"{where}: expected a number in [0, 1], got {value!r}")
    if not 0.0 <= float(value) <= 1.0:
        raise ConfigError(f"{where}: expected a fraction in [0, 1], got {value!r}")
    return float(value)


def _metric(value: Any, where: str) -> str:
    try:
        return metric_name(str(value))
    except InputError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def _engine(value: Any, where: str) -> str:
    if value not in ENGINES:
        raise ConfigError(f"{where}: expected one of {', '.join(ENGINES)}, got {value!r}")
    return str(value)


def _source(spec: InputSection, base: Path, where: str) -> TableSource:
    if spec.table is not None:  # a Spark SQL table (--engine spark)
        others = sorted(k for k in spec.model_fields_set if k not in ("table", "missing"))
        if others:
            raise ConfigError(f"{where}.{others[0]}: not used with 'table' (a Spark SQL table)")
        return TableSource(path=Path(spec.table), table=spec.table, missing=tuple(spec.missing))
    if spec.path is None:
        raise ConfigError(f"{where}: expected a mapping with at least 'path' (or 'table')")
    path = Path(spec.path)
    try:
        return TableSource(
            path=path if path.is_absolute() else (base / path).resolve(),
            format=cast(Any, spec.format),
            delimiter=spec.delimiter,
            header=spec.header,
            names=tuple(spec.names) if spec.names else None,
            missing=tuple(spec.missing),
            skip_rows=spec.skip_rows,
            encoding=spec.encoding,
            ragged=cast(Any, spec.ragged),
        )
    except InputError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def _default_role(value: Any, where: str) -> Role:
    """``default_role``: what unlisted columns are (identifying = drop, insensitive = keep)."""
    role = Role.parse(value) if isinstance(value, str) and value.strip().lower() in DEFAULT_ROLES else None
    if role is None:
        raise ConfigError(
            f"{where}: expected identifying (drop unlisted columns) or insensitive (keep them), got {value!r}"
        )
    return role


def _hierarchy(spec: Any, base: Path, where: str) -> HierarchySpec:
    if isinstance(spec, str):
        # Read lazily: a run keeps only the file's rows for the values in its data.
        p = Path(spec)
        builder = FileBuilder(p if p.is_absolute() else base / p)
        builder.check_readable()
        return builder
    if isinstance(spec, Mapping):
        return cast(HierarchySpec, builder_from_spec(spec, base, where))
    raise ConfigError(f"{where}: expected a file path or a builder mapping with 'type'")


def _schema(spec: Mapping[str, AttributeSection], base: Path, where: str) -> Schema:
    attrs = []
    for column, entry in spec.items():
        here = f"{where}.{column}"
        role = Role.parse(entry.role, column)
        given = "hierarchy" in entry.model_fields_set
        hierarchy = None
        if role is Role.QUASI:
            if not given:
                raise ConfigError(f"{here}: a quasi-identifier needs a hierarchy")
            hierarchy = _hierarchy(entry.hierarchy, base, f"{here}.hierarchy")
        elif role is Role.SENSITIVE and given:  # for t-closeness' hierarchical distance
            hierarchy = _hierarchy(entry.hierarchy, base, f"{here}.hierarchy")
        attrs.append(Attribute(column, role, hierarchy))
    return Schema.from_attributes(attrs)


def _privacy(spec: Any, where: str, base: Path) -> list[PrivacyModel]:
    if spec is None:
        return []  # allowed for Inverse OLA only; checked by RunConfig.with_overrides
    if not isinstance(spec, Mapping) or not spec:
        raise ConfigError(f"{where}: expected a mapping of model -> parameters")
    models = [make_model(str(name), params, where) for name, params in spec.items()]
    for model in models:  # a population file is relative to the configuration, like hierarchies
        if isinstance(model, SmallCells) and not model.population.is_absolute():
            model.population = base / model.population
    return models


# ------------------------------------------------------------------ the schema (pydantic)
_HERE = "\x00"  # placeholder key path: the error translator puts the real one in front


def _checked(check: Callable[[Any, str], Any], allow_none: bool = False) -> BeforeValidator:
    """A pydantic validator from one of the checks above (``check(value, where)`` raises
    ``ConfigError("WHERE: message")``), so that each message is written once."""

    def validate(value: Any) -> Any:
        if value is None and allow_none:
            return None
        try:
            return check(value, _HERE)
        except ConfigError as exc:
            message = str(exc).removeprefix(f"{_HERE}: ").removeprefix(f"{_HERE}").strip()
            raise PydanticCustomError("safeshare", "{message}", {"message": message}) from None

    return BeforeValidator(validate)


def _shape(
    test: Callable[[Any], bool], message: str, convert: Callable[[Any], Any] = lambda v: v
) -> BeforeValidator:
    """A pydantic validator that refuses a value failing ``test`` with ``message``."""

    def validate(value: Any) -> Any:
        if not test(value):
            raise PydanticCustomError("safeshare", "{message}", {"message": message})
        return convert(value)

    return BeforeValidator(validate)


def _name_key(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise ConfigError(f'{where}: expected a name as key, got {value!r} (quote it: "...")')
    return value


def _flag(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{where}: expected true or false")
    return value


def _skip_rows(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigError(f"{where}: expected an integer >= 0")
    return value


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(f"{where}: expected a number, got {value!r}")
    return float(value)


def _output_format(value: Any, where: str) -> str:
    if value not in ("csv", "parquet"):
        raise ConfigError(f"{where}: expected csv or parquet, got {value!r}")
    return str(value)


def _hierarchy_shape(value: Any, where: str) -> Any:
    if not isinstance(value, str | Mapping):
        raise ConfigError(f"{where}: expected a file path or a builder mapping with 'type'")
    return value


def _checked_default_role(value: Any, where: str) -> str:
    _default_role(value, where)
    return str(value)


Text = Annotated[str, _checked(_text)]
_FRACTION_SCHEMA = {"type": "number", "minimum": 0.0, "maximum": 1.0}
Fraction = Annotated[float, _checked(_fraction), WithJsonSchema(_FRACTION_SCHEMA)]
#: An open mapping validated by its owner (privacy models, hierarchy builders, dp, knowledge).
Open = Annotated[Any, WithJsonSchema({"type": "object"})]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class InputSection(_Section):
    """``input:``: the data file and how to read it (a text alone is the path)."""

    path: Annotated[str | None, _checked(_text, allow_none=True)] = None
    #: A Spark SQL table instead of a file (``--engine spark``).
    table: Annotated[str | None, _checked(_text, allow_none=True)] = None
    format: Annotated[str | None, _checked(_text)] = None
    delimiter: Text = ","
    header: Annotated[bool, _checked(_flag)] = True
    names: Annotated[
        list[str] | None,
        _shape(
            lambda v: isinstance(v, list) and all(isinstance(n, str) for n in v),
            "expected a list of column names",
        ),
    ] = None
    missing: Annotated[
        list[Text],
        _shape(
            lambda v: isinstance(v, list | str),
            "expected a list of tokens",
            lambda v: [v] if isinstance(v, str) else v,
        ),
    ] = []
    skip_rows: Annotated[int, _checked(_skip_rows), WithJsonSchema({"type": "integer", "minimum": 0})] = 0
    encoding: Text = "utf-8"
    ragged: Annotated[str, _checked(_text), WithJsonSchema({"enum": ["error", "pad"]})] = "error"


class AttributeSection(_Section):
    """One column of ``attributes:`` (a text alone is the role)."""

    role: Annotated[str, _checked(_text), WithJsonSchema({"enum": [r.value for r in Role]})]
    hierarchy: Annotated[
        str | dict[str, Any] | None,
        _checked(_hierarchy_shape),
        WithJsonSchema({"anyOf": [{"type": "string"}, {"type": "object", "required": ["type"]}]}),
    ] = None

    @model_validator(mode="before")
    @classmethod
    def _role_alone(cls, value: Any) -> Any:
        if isinstance(value, str):
            return {"role": value}
        if not isinstance(value, Mapping) or "role" not in value:
            raise PydanticCustomError("safeshare", "expected a mapping with a role")
        return value


class OutputSection(_Section):
    """``output:``: the release's format and delimiter."""

    format: Annotated[str | None, _checked(_output_format), WithJsonSchema({"enum": ["csv", "parquet"]})] = (
        None
    )
    delimiter: Annotated[
        str, _checked(_output_delimiter), WithJsonSchema({"type": "string", "minLength": 1, "maxLength": 1})
    ] = ","


def _mapping_or_empty(message: str) -> BeforeValidator:
    return _shape(lambda v: v is None or isinstance(v, Mapping), message, lambda v: v or {})


class ConfigFile(_Section):
    """A configuration file (docs/configuration.md); published as docs/config.schema.json."""

    model_config = ConfigDict(
        extra="forbid",
        strict=True,
        title="safeshare configuration",
        json_schema_extra={"required": ["input", "attributes"]},
    )

    algorithm: Annotated[str, _checked(_algorithm)] = "ola"
    input: Annotated[
        InputSection,
        _shape(
            lambda v: isinstance(v, str) or (isinstance(v, Mapping) and ("path" in v or "table" in v)),
            "expected a mapping with at least 'path' (or 'table')",
            lambda v: {"path": v} if isinstance(v, str) else v,
        ),
    ] = Field(default=None, validate_default=True)
    attributes: Annotated[
        dict[Annotated[str, _checked(_name_key)], AttributeSection],
        _shape(lambda v: isinstance(v, Mapping) and bool(v), "expected a mapping of column -> {role: ...}"),
    ] = Field(default=None, validate_default=True)
    default_role: Annotated[str | None, _checked(_checked_default_role, allow_none=True)] = None
    privacy: Open = None
    output: Annotated[OutputSection, _mapping_or_empty("expected a mapping, e.g. output: {format: csv}")] = (
        OutputSection()
    )
    prec_weights: Annotated[
        dict[str, Annotated[float, _checked(_number)]],
        _mapping_or_empty("expected a mapping of quasi-identifier -> number"),
    ] = {}
    dp: Annotated[Any, WithJsonSchema({"type": "object", "properties": {key: {} for key in DP_KEYS}})] = None
    max_suppression: Fraction = 0.0
    metric: Annotated[str, _checked(_metric), WithJsonSchema({"enum": ["prec", "dm_star", "entropy"]})] = (
        "prec"
    )
    engine: Annotated[str, _checked(_engine), WithJsonSchema({"enum": list(ENGINES)})] = "memory"
    spark: Annotated[
        Any,
        WithJsonSchema(
            {
                "type": "object",
                "properties": {key: {} for key in SPARK_KEYS},
            }
        ),
    ] = None
    duckdb: Annotated[
        Any,
        WithJsonSchema(
            {
                "type": "object",
                "properties": {
                    "memory_limit": {"type": "string"},
                    "threads": {"type": "integer", "minimum": 1},
                },
                "additionalProperties": False,
            }
        ),
    ] = None
    max_loss: Annotated[
        float | None,
        _checked(_fraction, allow_none=True),
        WithJsonSchema({"anyOf": [_FRACTION_SCHEMA, {"type": "null"}]}),
    ] = None
    time_limit: Annotated[
        float | None,
        _checked(_seconds, allow_none=True),
        WithJsonSchema({"anyOf": [{"type": "number", "exclusiveMinimum": 0}, {"type": "null"}]}),
    ] = None
    max_evaluations: Annotated[
        int | None,
        _checked(_positive_int, allow_none=True),
        WithJsonSchema({"anyOf": [{"type": "integer", "minimum": 1}, {"type": "null"}]}),
    ] = None
    exact_max_nodes: Annotated[
        int | None,
        _checked(_positive_int, allow_none=True),
        WithJsonSchema({"anyOf": [{"type": "integer", "minimum": 1}, {"type": "null"}]}),
    ] = None
    knowledge: Annotated[
        Any, WithJsonSchema({"type": "object", "additionalProperties": {"type": "number"}})
    ] = None
    #: N for the report's risk section (checked by :func:`_population_size`).
    population_size: Annotated[Any, WithJsonSchema({"type": "integer", "minimum": 1})] = None


TOP_LEVEL_KEYS = set(ConfigFile.model_fields)
INPUT_KEYS = set(InputSection.model_fields)
OUTPUT_KEYS = set(OutputSection.model_fields)
ATTRIBUTE_KEYS = set(AttributeSection.model_fields)
#: The sections whose unknown keys are reported with their known keys (``extra="forbid"``).
_SECTIONS: dict[str, type[BaseModel]] = {"input": InputSection, "output": OutputSection}


def _config_error(exc: ValidationError, name: str) -> ConfigError:
    """The first validation error as one line: ``FILE: key.path[0]: message``."""
    error = exc.errors(include_url=False)[0]
    loc = list(error["loc"])
    parts: list[str] = []
    for i, part in enumerate(loc):
        if part == "[key]":
            continue
        key = i + 1 < len(loc) and loc[i + 1] == "[key]"
        parts.append(f"[{part}]" if isinstance(part, int) and not key else f".{part}")
    where = "".join(parts).lstrip(".")
    if error["type"] == "extra_forbidden":
        parent = where.rsplit(".", 1)[0] if "." in where else ""
        known = _SECTIONS.get(parent) or (
            AttributeSection if parent.startswith("attributes.") else ConfigFile
        )
        try:
            check_keys(
                {loc[-1]: None}, set(known.model_fields), f"{name}: {parent}" if parent else f"{name}:"
            )
        except ConfigError as unknown:
            return unknown
    return ConfigError(f"{name}: {where}: {error['msg']}")


def config_json_schema() -> str:
    """The JSON Schema of a configuration file, for editors (docs/config.schema.json).

    Generated from :class:`ConfigFile`, with the short forms (``input: data.csv``,
    ``column: quasi``) added.
    """
    schema = ConfigFile.model_json_schema()
    props = schema["properties"]
    props["input"] = {"anyOf": [{"type": "string"}, {"$ref": "#/$defs/InputSection"}]}
    props["attributes"]["additionalProperties"] = {
        "anyOf": [{"type": "string"}, {"$ref": "#/$defs/AttributeSection"}]
    }
    props["attributes"].pop("default", None)
    return json.dumps(schema, indent=2) + "\n"
