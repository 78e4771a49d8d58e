"""The configuration of an anonymization run: one frozen pydantic model, :class:`ConfigFile`.

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
    person: mrn                 # the column identifying each record's person: k, risk and
                                # suppression counted in people (default: the shifted dates' person)
    attributes:
      age: {role: quasi, hierarchy: hierarchies/age.csv}
      zip: {role: quasi, hierarchy: {type: masking}}
      fnlwgt: {role: identifying}
      notes: {role: text}
      capital-gain: {role: sensitive}
      diagnosis: {role: sensitive, hierarchy: hierarchies/icd.csv}   # t-closeness distance
      mrn: {role: pseudonym, length: 16}        # HMAC-SHA256 under key_file, 16 hex digits
      admitted: {role: shifted_date, person: mrn, max_days: 180}      # per-person shift
      discharged: {role: shifted_date, person: mrn, max_days: 180,
                   hierarchy: {type: dates, levels: [month, year]}}  # a QI, shifted first
    key_file: release.key       # >= 64 random hex digits, mode 0600 (never shown; fingerprint: ledger only)
    privacy:
      k-anonymity: {k: 5}
      l-diversity: {l: 2, columns: [diagnosis]}   # some sensitive columns only (default: all)
    max_suppression: 5%         # a fraction (0.05) or a percent (5%)
    metric: prec                # prec | dm_star | entropy
    algorithm: ola              # ola | exhaustive | inverse-ola | anytime | auto | node | epsilon-safe
    max_loss: 0.5               # inverse-ola: largest normalized information loss
    time_limit: 60              # anytime, auto: seconds of search (docs/anytime.md)
    max_evaluations: 20000      # anytime, auto: node evaluations at most
    exact_max_nodes: 500000     # auto: largest lattice searched exactly by OLA
    levels: {age: 1, sex: 0}    # node: the one node to release (every QI), if it qualifies
    dp: {beta: 0.75, epsilon_prime: 0.5}   # epsilon-safe (docs/differential-privacy.md)
    local_recoding: {rounds: 100}   # release what the optimal node suppresses, in rounds
                                    # (docs/anonymization.md; `true` alone: the default rounds)
    knowledge: {capital-gain: 0.01}   # report m-concealing of the release (docs/m-concealing.md)
    population: {size: 1000000, source: "census 2021, table X"}   # N of the risk figures and where
                                # it comes from (default: the input is the population);
                                # population_size: 1000000 alone is N without a stated source
    engine: memory              # memory | duckdb | spark
    spark: {master: "local[2]", app_name: safeshare, executor_memory: 2g, shuffle_partitions: 8}
    duckdb: {memory_limit: 2GB, threads: 2}   # DuckDB engine; default: from the machine
    output: {format: csv, delimiter: ","}
    threshold_reason: "..."     # why the risk threshold is what it is (the report's evidence)
    purpose: "..."              # what the release is for (the report's cover)
    ledger: releases.jsonl      # append every published release (hash chain; docs/report.md)
    approved_by: "J. Doe, privacy officer"   # required with ledger (--approved-by)
    governance: {recipient: ..., release_model: non-public, ...}   # the certificate's context
                                # and its coverage table (safeshare.config.governance)
    accept_warnings: [subgroup-suppressed]   # warnings that contradict the headline, acknowledged
                                # (--accept-warning; safeshare.workflows.acknowledgement)

One model, validated once: :func:`load_config` reads the YAML (safely,
:func:`safeshare.config_checks.read_yaml`), applies the overrides (the options of
``safeshare anonymize`` or Python keywords, by the same names: ``k``,
``max_suppression``, ``beta``, ``spark_master``...) to the mapping, and validates the
whole. Every error is one line naming the file and the key path (or the option that gave
the value). The frozen :class:`ConfigFile` then gives the run's objects: its
:attr:`~ConfigFile.source`, :attr:`~ConfigFile.schema`, :attr:`~ConfigFile.privacy` and
:meth:`~ConfigFile.spec`. docs/config.schema.json is its JSON Schema.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from functools import cached_property
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Annotated, Any, cast

from pydantic import (
    BeforeValidator,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    WithJsonSchema,
    model_validator,
)

from safeshare.app_runner import to_json
from safeshare.config.algorithms import ALGORITHMS, algorithm, config_keys, local_recoding_algorithms
from safeshare.config.attack import AttackSection, attack_section
from safeshare.config.governance import GovernanceSection, governance_section
from safeshare.config.vocabulary import (
    DEFAULT_ROLES,
    METRICS,
    ROLES,
    metric_name,
    model_name,
    unknown_metric,
)
from safeshare.config_checks import (
    Count,
    Flag,
    Fraction,
    MemorySize,
    Number,
    PositiveInt,
    Seconds,
    Section,
    Text,
    UnitInterval,
    check_keys,
    check_text,
    checked,
    choice,
    read_yaml,
    refuse,
    validation_error,
)
from safeshare.dp.config import DP_OPTIONS, EpsilonSafeOptions
from safeshare.errors import ConfigError, InputError
from safeshare.models.registry import ModelParams, model_params
from safeshare.paths import written_path
from safeshare.warning_codes import WarningCode, warning_codes

if TYPE_CHECKING:
    from safeshare.config.spec import AnonymizationSpec
    from safeshare.data.engines.base import OutputFormat
    from safeshare.data.identifiers import IdentifierTreatment
    from safeshare.data.schema import HierarchySpec, Schema
    from safeshare.data.source import TableSource
    from safeshare.models.base import PrivacyModel
    from safeshare.risk.population import Population

# Validating a configuration imports no data, model or search module (a mistake is reported
# in a fraction of a second): what builds the run's objects (the input, the schema with its
# hierarchies, the models, the spec) imports them when it is first used.
ENGINES = ("memory", "duckdb", "spark")
#: Top-level keys that are known but not read: the reason is the error message.
NOT_READ = {"utility": "not read from the configuration; `safeshare utility` takes its settings from options"}

#: The overrides :func:`load_config` accepts (the options of ``safeshare anonymize`` by their
#: Python names), each with the key path it sets in the configuration.
OVERRIDES: dict[str, tuple[str, ...]] = {
    "k": ("privacy", "k-anonymity", "k"),
    "max_suppression": ("max_suppression",),
    "metric": ("metric",),
    "algorithm": ("algorithm",),
    "engine": ("engine",),
    "max_loss": ("max_loss",),
    "time_limit": ("time_limit",),
    "max_evaluations": ("max_evaluations",),
    "exact_max_nodes": ("exact_max_nodes",),
    "population_size": ("population_size",),
    "population_source": ("population", "source"),
    "person": ("person",),
    "duckdb_memory_limit": ("duckdb", "memory_limit"),
    "duckdb_threads": ("duckdb", "threads"),
    "spark_master": ("spark", "master"),
    "local_recoding": ("local_recoding",),
    "rounds": ("local_recoding", "rounds"),
    "key_file": ("key_file",),
    "ledger": ("ledger",),
    "approved_by": ("approved_by",),
    "threshold_reason": ("threshold_reason",),
    "purpose": ("purpose",),
    "attack_frame": ("attack", "frame"),
    "accept_warnings": ("accept_warnings",),
    **{("utility_function" if key == "utility" else key): ("dp", key) for key in DP_OPTIONS},
}


#: Overrides that are paths: relative to the working directory (in the file: to the file's directory).
PATH_OVERRIDES = frozenset({"key_file", "ledger", "attack_frame"})


#: Overrides whose option is spelled otherwise than their keyword: one code per option, repeatable.
OPTION_SPELLING = {"accept_warnings": "--accept-warning"}


def option_name(keyword: str) -> str:
    """The command-line option of an override keyword (``max_suppression`` -> ``--max-suppression``)."""
    return OPTION_SPELLING.get(keyword, "--" + keyword.replace("_", "-"))


# ------------------------------------------------------------------ sections
def _accepted_codes(value: Any) -> tuple[str, ...]:
    """``accept_warnings:``: one code or a list of codes, each a known warning code, once each."""
    if value is None:
        return ()
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list | tuple):
        raise refuse("expected a warning code or a list of them, e.g. accept_warnings: [subgroup-suppressed]")
    try:
        return warning_codes(items)
    except ValueError as exc:
        raise refuse(str(exc)) from None


#: Round limit of local recoding when none is given: in practice "until no record more can be
#: released" (every round that continues releases at least one class, hence at least k records).
DEFAULT_ROUNDS = 100


class LocalRecodingSection(Section):
    """``local_recoding:``: after the optimal node, rounds on the records it suppresses
    (workflows/local_recoding.py; docs/anonymization.md, "Local recoding"). ``true`` alone is
    ``{}`` (the default round limit), ``false`` is off."""

    rounds: PositiveInt = DEFAULT_ROUNDS


def _local_recoding(value: Any) -> Any:
    if value is True:
        return {}
    if value is False or value is None:
        return None
    if not isinstance(value, Mapping):
        raise refuse("expected true, false or a mapping such as {rounds: 10}")
    return value


def _ragged(value: Any, where: str) -> str:
    return choice("error", "pad")(value, where)


class PopulationSection(Section):
    """``population:``, the population the input was drawn from (issue 33): ``size`` (N of the
    risk figures) and ``source``, where that number comes from (e.g. "census 2021, table X"; the
    certificate shows it beside N). :attr:`ConfigFile.population` gives the run's
    :class:`~safeshare.risk.population.Population`."""

    size: PositiveInt
    source: Annotated[str | None, checked(check_text, allow_none=True)] = None


class InputSection(Section):
    """``input:``: the data file and how to read it (a text alone is the path)."""

    path: Annotated[str | None, checked(check_text, allow_none=True)] = None
    #: A Spark SQL table instead of a file (``--engine spark``).
    table: Annotated[str | None, checked(check_text, allow_none=True)] = None
    format: Annotated[
        str | None,
        checked(choice("csv", "parquet"), allow_none=True),
        WithJsonSchema({"enum": ["csv", "parquet"]}),
    ] = None
    delimiter: Text = ","
    header: Flag = True
    names: Annotated[
        list[str] | None,
        BeforeValidator(lambda v: _names(v)),
        WithJsonSchema({"type": "array", "items": {"type": "string"}}),
    ] = None
    missing: Annotated[
        list[Text],
        BeforeValidator(lambda v: _tokens(v)),
        WithJsonSchema({"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]}),
    ] = Field(default_factory=list)
    skip_rows: Count = 0
    encoding: Text = "utf-8"
    ragged: Annotated[str, checked(_ragged), WithJsonSchema({"enum": ["error", "pad"]})] = "error"


def _names(value: Any) -> Any:
    if not isinstance(value, list) or not all(isinstance(n, str) for n in value):
        raise refuse("expected a list of column names")
    return value


def _tokens(value: Any) -> Any:
    if not isinstance(value, list | str):
        raise refuse("expected a list of tokens")
    return [value] if isinstance(value, str) else value


def _hierarchy_shape(value: Any, where: str) -> Any:
    if not isinstance(value, str | Mapping):
        raise ConfigError(f"{where}: expected a file path or a builder mapping with 'type'")
    return dict(value) if isinstance(value, Mapping) else value


def _builder_schema() -> dict[str, Any]:
    """JSON Schema of a hierarchy: a file, or a builder mapping (``type`` and its keys)."""
    from safeshare.hierarchy.builders import BUILDERS, builder_keys

    builders = [
        {
            "type": "object",
            "properties": {"type": {"const": kind}, **{key: {} for key in builder_keys(kind)}},
            "required": ["type"],
            "additionalProperties": False,
        }
        for kind in BUILDERS
    ]
    return {"anyOf": [{"type": "string"}, *builders]}


class AttributeSection(Section):
    """One column of ``attributes:`` (a text alone is the role)."""

    role: Annotated[
        str,
        checked(lambda v, w: _role(v, w)),
        WithJsonSchema({"enum": list(ROLES)}),
    ]
    hierarchy: Annotated[
        str | dict[str, Any] | None,
        checked(_hierarchy_shape),
        # the builders' keys are added by config_json_schema (hierarchy/ is not imported here)
        WithJsonSchema({"anyOf": [{"type": "string"}, {"type": "object"}]}),
    ] = None
    #: ``pseudonym``: hex digits of the pseudonym (16 to 64, default 16)
    length: PositiveInt | None = None
    #: ``shifted_date``: the column that identifies the person whose dates share one shift
    person: Annotated[str | None, checked(check_text, allow_none=True)] = None
    #: ``shifted_date``: the largest shift in days (the shift is in [-max_days, max_days] \\ {0})
    max_days: PositiveInt | None = None
    #: ``shifted_date``: the dates' strptime format (default ISO, %Y-%m-%d)
    date_format: Annotated[str | None, checked(check_text, allow_none=True)] = None

    @model_validator(mode="before")
    @classmethod
    def _role_alone(cls, value: Any) -> Any:
        if isinstance(value, str):
            return {"role": value}
        if not isinstance(value, Mapping) or "role" not in value:
            raise refuse("expected a mapping with a role")
        return value


def _role(value: Any, where: str) -> str:
    return check_text(value, where)


def _output_delimiter(value: Any, where: str) -> str:
    """One character that cannot be confused with a quote or a line end."""
    text = check_text(value, where)
    if len(text) != 1 or text in {'"', "\n", "\r"}:
        raise ConfigError(f"{where}: expected one character other than a quote or a line end, got {text!r}")
    return text


def _output_format(value: Any, where: str) -> str:
    if value not in ("csv", "parquet"):
        raise ConfigError(f"{where}: expected csv or parquet, got {value!r}")
    return str(value)


class OutputSection(Section):
    """``output:``: the release's format and delimiter."""

    format: Annotated[
        str | None, checked(_output_format, allow_none=True), WithJsonSchema({"enum": ["csv", "parquet"]})
    ] = None
    delimiter: Annotated[
        str, checked(_output_delimiter), WithJsonSchema({"type": "string", "minLength": 1, "maxLength": 1})
    ] = ","


class DuckDBSection(Section):
    """``duckdb:``: the DuckDB engine's resources (default: from the machine)."""

    memory_limit: MemorySize | None = None
    threads: PositiveInt | None = None


def _master(value: Any, where: str) -> str:
    from safeshare.data.engines.spark_engine import check_master  # no pyspark import

    return check_master(check_text(value, where), where)


def _spark_size(value: Any, where: str) -> str:
    import re

    text = check_text(value, where)
    if not re.fullmatch(r"\d+[kmgt]?", text.lower()):
        raise ConfigError(f"{where}: expected a size such as 2g or 512m, got {value!r}")
    return text


class SparkSection(Section):
    """``spark:``: how to reach Spark (``--engine spark``, docs/engines.md)."""

    master: Annotated[
        str,
        checked(_master),
        WithJsonSchema({"type": "string", "pattern": r"^(local(\[(\d+|\*)\])?|spark://.+:\d+)$"}),
    ] = "local[2]"
    app_name: Text = "safeshare"
    executor_memory: Annotated[str | None, checked(_spark_size, allow_none=True)] = None
    driver_memory: Annotated[str | None, checked(_spark_size, allow_none=True)] = None
    shuffle_partitions: PositiveInt = 8


def _mapping_or_empty(message: str) -> BeforeValidator:
    def validate(value: Any) -> Any:
        if value is not None and not isinstance(value, Mapping):
            raise refuse(message)
        return value or {}

    return BeforeValidator(validate)


def _metric(value: Any, where: str) -> str:
    name = metric_name(check_text(value, where))
    if name is None:
        raise ConfigError(f"{where}: {unknown_metric(value)}")
    return name


def _default_role(value: Any, where: str) -> str:
    """``default_role``: what unlisted columns are (identifying = drop, insensitive = keep)."""
    if isinstance(value, str) and value.strip().lower() in DEFAULT_ROLES:
        return value.strip().lower()
    raise ConfigError(
        f"{where}: expected identifying (drop unlisted columns) or insensitive (keep them), got {value!r}"
    )


def _privacy(value: Any, where: str) -> dict[str, ModelParams]:
    if not isinstance(value, Mapping) or not value:
        raise ConfigError(f"{where}: expected a mapping of model -> parameters")
    out: dict[str, ModelParams] = {}
    for name, params in value.items():
        validated = model_params(name, params, where)
        key = next(k for k, cls in _registered() if type(validated) is cls)
        out[key] = validated
    return out


def _registered() -> list[tuple[str, type[ModelParams]]]:
    from safeshare.models.registry import PRIVACY_MODELS

    return list(PRIVACY_MODELS.items())


def _name_key(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise ConfigError(f'{where}: expected a name as key, got {value!r} (quote it: "...")')
    return value


class ConfigFile(Section):
    """A configuration file (docs/configuration.md); published as docs/config.schema.json."""

    model_config = ConfigDict(
        extra="forbid",
        strict=True,
        frozen=True,
        defer_build=True,
        title="safeshare configuration",
        json_schema_extra={"required": ["input", "attributes"]},
    )

    input: Annotated[
        InputSection,
        BeforeValidator(lambda v: _input(v)),
    ] = Field(default=None, validate_default=True)
    attributes: Annotated[
        dict[Annotated[str, checked(_name_key)], AttributeSection],
        BeforeValidator(lambda v: _attributes(v)),
    ] = Field(default=None, validate_default=True)
    default_role: Annotated[
        str | None,
        checked(_default_role, allow_none=True),
        WithJsonSchema({"enum": list(DEFAULT_ROLES)}),
    ] = None
    #: the column identifying the person of every record (issue 32): k, risk and suppression are
    #: counted in people; default: the one ``person`` column of the shifted dates, if any
    person: Annotated[str | None, checked(check_text, allow_none=True)] = None
    #: ``privacy:``, each model's validated parameters (:attr:`privacy` gives the models)
    privacy_params: Annotated[
        dict[str, ModelParams] | None,
        checked(_privacy, allow_none=True),
        WithJsonSchema({"type": "object"}),  # replaced by the registry's (config_json_schema)
    ] = Field(default=None, alias="privacy")
    max_suppression: Fraction = 0.0
    metric: Annotated[str, checked(_metric), WithJsonSchema({"enum": list(METRICS)})] = "prec"
    algorithm: Annotated[
        str, checked(lambda v, w: _algorithm(v, w)), WithJsonSchema({"enum": list(ALGORITHMS)})
    ] = "ola"
    max_loss: UnitInterval | None = None
    time_limit: Seconds | None = None
    max_evaluations: PositiveInt | None = None
    exact_max_nodes: PositiveInt | None = None
    levels: dict[str, Count] | None = None
    dp: EpsilonSafeOptions | None = None
    #: ``local_recoding:`` (issue 25): ``None`` is off
    local_recoding: Annotated[LocalRecodingSection | None, BeforeValidator(_local_recoding)] = None
    knowledge: Annotated[
        dict[str, float] | None,
        checked(lambda v, w: _knowledge(v, w), allow_none=True),
        WithJsonSchema(
            {"type": "object", "additionalProperties": {"type": "number", "minimum": 0, "maximum": 1}}
        ),
    ] = None
    #: ``population_size:``, N of the report's risk section (:attr:`population_size` gives the N used)
    population_size_key: PositiveInt | None = Field(default=None, alias="population_size")
    #: ``population: {size, source}`` (issue 33; with ``population_size:`` too: refused)
    population_section: Annotated[
        PopulationSection | None,
        _mapping_or_empty("expected a mapping such as population: {size: 1000000, source: 'census 2021'}"),
    ] = Field(default=None, alias="population")
    prec_weights: Annotated[
        dict[str, Number], _mapping_or_empty("expected a mapping of quasi-identifier -> number")
    ] = Field(default_factory=dict)
    engine: Annotated[str, checked(choice(*ENGINES)), WithJsonSchema({"enum": list(ENGINES)})] = "memory"
    spark_section: Annotated[
        SparkSection, _mapping_or_empty("expected a mapping, e.g. spark: {master: 'local[2]'}")
    ] = Field(default=SparkSection(), alias="spark")
    duckdb_section: Annotated[
        DuckDBSection, _mapping_or_empty("expected a mapping with memory_limit and/or threads")
    ] = Field(default=DuckDBSection(), alias="duckdb")
    output: Annotated[OutputSection, _mapping_or_empty("expected a mapping, e.g. output: {format: csv}")] = (
        OutputSection()
    )
    #: The secret key of pseudonyms and shifted dates: a file of hex digits (at least 64), mode 0600.
    #: Never shown; its fingerprint is written to the ledger only (it confirms a guessed key).
    key_file: Annotated[str | None, checked(check_text, allow_none=True)] = None
    #: Why the risk threshold is what it is (shown in the report's evidence beside the threshold).
    threshold_reason: Annotated[str | None, checked(check_text, allow_none=True)] = None
    #: What the release is for (the report's cover: what a privacy officer signs).
    purpose: Annotated[str | None, checked(check_text, allow_none=True)] = None
    #: A release ledger (JSON lines, a hash chain) that every published release is appended to.
    ledger: Annotated[str | None, checked(check_text, allow_none=True)] = None
    #: Who approved the release (the report's cover and the ledger entry; required with ``ledger``).
    approved_by: Annotated[str | None, checked(check_text, allow_none=True)] = None
    #: ``attack:`` (issue 34): attack the written release with an identified frame; ``None`` is off
    attack: Annotated[AttackSection | None, BeforeValidator(attack_section)] = None
    #: ``governance:`` (issue 33): recipient, release model, threat model, review, reviewers
    governance: Annotated[GovernanceSection | None, BeforeValidator(governance_section)] = None
    #: ``accept_warnings:`` (issue 33): the warning codes that contradict the headline and that the
    #: custodian acknowledges (:mod:`safeshare.workflows.acknowledgement`); one code or a list
    accept_warnings: Annotated[
        tuple[str, ...],
        BeforeValidator(_accepted_codes),
        WithJsonSchema(
            {
                "oneOf": [
                    {"enum": [c.value for c in WarningCode]},
                    {"type": "array", "items": {"enum": [c.value for c in WarningCode]}},
                ]
            }
        ),
    ] = ()

    _path: Path = PrivateAttr(default=Path("config.yaml"))
    _raw: dict[str, Any] = PrivateAttr(default_factory=dict)
    _overrides: dict[str, Any] = PrivateAttr(default_factory=dict)
    _release: bool = PrivateAttr(default=True)

    @model_validator(mode="before")
    @classmethod
    def _applicable(cls, data: Any, info: ValidationInfo) -> Any:
        """Keys of another algorithm than the run's, and what does not combine, are errors."""
        if not isinstance(data, Mapping):
            return data
        options: Mapping[str, str] = (info.context or {}).get("options", {})
        name = data.get("algorithm", "ola")
        if not isinstance(name, str) or name not in ALGORITHMS:
            return data  # the algorithm's own error
        why = f"--algorithm {name}" if "algorithm" in options else f"algorithm is {name}"
        for key, owners in config_keys().items():
            if key in data and name not in owners:
                if key in options or any(path.startswith(f"{key}.") for path in options):
                    option = options.get(key) or next(
                        o for p, o in options.items() if p.startswith(f"{key}.")
                    )
                    raise refuse(
                        f"{option} applies to --algorithm {' or '.join(owners)} only: "
                        f"algorithm {name!r} takes no option {key!r}"
                        if key != "dp"
                        else f"{option} applies to --algorithm {' or '.join(owners)} only ({why})"
                    )
                raise refuse(f"applies to algorithm: {' or '.join(owners)} only ({why})", key=key)
        return data

    @model_validator(mode="after")
    def _combined(self) -> ConfigFile:
        """What the algorithm requires of the other settings."""
        entry = ALGORITHMS[self.algorithm]
        if entry.section == "dp" and self.knowledge is not None:
            raise refuse(
                f"not supported with algorithm {self.algorithm} "
                "(every released column is a quasi-identifier)",
                key="knowledge",
            )
        if self.privacy_params is None and entry.needs_privacy:
            raise refuse(
                "missing; e.g. privacy: {k-anonymity: {k: 5}} "
                "(only --algorithm inverse-ola, which maximizes k, runs without one)",
                key="privacy",
            )
        if entry.metrics is not None and self.metric not in entry.metrics:
            raise refuse(
                f"algorithm {self.algorithm} scores nodes by {' or '.join(entry.metrics)}", key="metric"
            )
        if self.local_recoding is not None:
            _check_local_recoding(self)
        return self

    # -------------------------------------------------------------- the run's objects
    @property
    def path(self) -> Path:
        """The configuration file (relative paths in it are relative to its directory)."""
        return self._path

    @property
    def base_dir(self) -> Path:
        return self._path.parent

    @cached_property
    def source(self) -> TableSource:
        """The input, as a :class:`TableSource`."""
        from safeshare.data.source import TableSource

        where = f"{self._path}: input"
        spec = self.input
        if spec.table is not None:  # a Spark SQL table (--engine spark)
            others = sorted(k for k in spec.model_fields_set if k not in ("table", "missing"))
            if others:
                raise ConfigError(f"{where}.{others[0]}: not used with 'table' (a Spark SQL table)")
            return TableSource(path=Path(spec.table), table=spec.table, missing=tuple(spec.missing))
        assert spec.path is not None
        path = Path(spec.path)
        try:
            return TableSource(
                path=path if path.is_absolute() else (self.base_dir / path).resolve(),
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

    @cached_property
    def schema(self) -> Schema:  # type: ignore[override]  # (pydantic v1's deprecated schema())
        """The role of every column and the QIs' hierarchies (files are checked here, read lazily)."""
        from safeshare.data.schema import Attribute, Role, Schema

        where = f"{self._path}: attributes"
        attrs = []
        for column, entry in self.attributes.items():
            here = f"{where}.{column}"
            role = Role.parse(entry.role, column)
            given = "hierarchy" in entry.model_fields_set
            hierarchy = None
            if role is Role.QUASI:
                if not given:
                    raise ConfigError(f"{here}: a quasi-identifier needs a hierarchy")
                hierarchy = self._hierarchy(entry.hierarchy, f"{here}.hierarchy")
            elif role in (Role.SENSITIVE, Role.SHIFTED_DATE) and given:
                # sensitive: t-closeness' hierarchical distance; a shifted date: a quasi-identifier,
                # generalized after the shift
                hierarchy = self._hierarchy(entry.hierarchy, f"{here}.hierarchy")
            elif given:
                raise ConfigError(f"{here}.hierarchy: a column of role {role.value} has no hierarchy")
            try:
                attrs.append(
                    Attribute(
                        column,
                        role,
                        hierarchy,
                        length=entry.length,
                        person=entry.person,
                        max_days=entry.max_days,
                        date_format=entry.date_format,
                    )
                )
            except ConfigError as exc:  # "column 'x': ..." -> the file and the key path
                raise ConfigError(f"{here}: {str(exc).removeprefix(f'column {column!r}: ')}") from None
        try:
            schema = Schema.from_attributes(attrs)
        except ConfigError as exc:  # "column 'x': ..." -> the file and the key path
            named = re.match(r"column '([^']*)': ", str(exc))
            if named is None:
                raise ConfigError(f"{where}: {exc}") from None
            raise ConfigError(f"{where}.{named.group(1)}: {str(exc)[named.end() :]}") from None
        if self.default_role is not None:
            schema.default_role = Role.parse(self.default_role)
        person = self.person if self.person is not None else schema.shifted_person()
        if person is not None:
            try:
                schema = Schema(schema.attributes, schema.default_role, person)
            except ConfigError as exc:
                raise ConfigError(f"{self._path}: {exc}") from None
        return schema

    def _hierarchy(self, spec: Any, where: str) -> HierarchySpec:
        from safeshare.hierarchy.builders import FileBuilder, builder_from_spec

        if isinstance(spec, str):
            # Read lazily: a run keeps only the file's rows for the values in its data.
            p = Path(spec)
            builder = FileBuilder(p if p.is_absolute() else self.base_dir / p)
            builder.check_readable()
            return builder
        return cast("HierarchySpec", builder_from_spec(spec, self.base_dir, where))

    @cached_property
    def identifiers(self) -> IdentifierTreatment | None:
        """The treatment of the ``pseudonym`` and ``shifted_date`` columns, with the key read
        from ``key_file`` (relative to the configuration); ``None`` without such columns."""
        from safeshare.data.identifiers import IdentifierTreatment, load_key

        if not self.schema.identifier_columns:
            return None
        if self.key_file is None:
            first = self.schema.identifier_columns[0]
            raise ConfigError(
                f"{self._path}: attributes.{first}: pseudonyms and shifted dates need a key: add "
                "key_file: PATH (or --key-file; make one with: openssl rand -hex 32 > release.key; "
                "chmod 600 release.key)"
            )
        path = self.key_path
        assert path is not None
        try:
            key = load_key(path)
            return IdentifierTreatment.from_schema(self.schema, key)
        except ConfigError as exc:
            raise ConfigError(f"{self._path}: key_file: {exc}") from None

    @property
    def key_path(self) -> Path | None:
        """The key file (relative to the configuration's directory), if any."""
        if self.key_file is None:
            return None
        path = Path(self.key_file)
        return path if path.is_absolute() else self.base_dir / path

    @property
    def ledger_path(self) -> Path | None:
        """The release ledger (relative to the configuration's directory), if any."""
        if self.ledger is None:
            return None
        path = Path(self.ledger)
        return path if path.is_absolute() else self.base_dir / path

    @cached_property
    def privacy(self) -> tuple[PrivacyModel, ...]:
        """The configured privacy models (Inverse OLA without one: k-anonymity from k = 1)."""
        if self.privacy_params is None:
            from safeshare.models.k_anonymity import KAnonymity

            return (KAnonymity(1),)
        out = []
        for name, params in self.privacy_params.items():
            try:
                out.append(params.build(self.base_dir))
            except ConfigError as exc:
                raise ConfigError(f"{self._path}: privacy.{name}.{exc}") from None
        return tuple(out)

    @property
    def release_format(self) -> OutputFormat:
        """The release format: as configured, else the input's format."""
        fmt = self.output.format or ("parquet" if self.engine == "spark" else self.source.fmt)
        return cast("OutputFormat", fmt)

    @property
    def output_delimiter(self) -> str:
        return self.output.delimiter

    @property
    def spark(self) -> Any:
        """The spark engine's SparkOptions (no pyspark import)."""
        from safeshare.data.engines.spark_engine import SparkOptions

        s = self.spark_section
        return SparkOptions(s.master, s.app_name, s.executor_memory, s.shuffle_partitions, s.driver_memory)

    @property
    def duckdb(self) -> dict[str, Any]:
        """The DuckDB engine's ``memory_limit`` and ``threads`` as configured (absent: machine defaults)."""
        return self.duckdb_section.model_dump(exclude_none=True)

    @property
    def population_size(self) -> int | None:
        """N of the report's risk section: ``population_size``, else the risk model's (they agree);
        ``None``: the input is the whole population."""
        risk = [m for m in self.privacy if m.name == "risk"]
        from_model = getattr(risk[0], "population_size", None) if risk else None
        if self.population_section is not None:
            return self.population_section.size
        return self.population_size_key if self.population_size_key is not None else from_model

    @property
    def population(self) -> Population:
        """The run's population (:class:`~safeshare.risk.population.Population`): N
        (:attr:`population_size`) and its source (``population.source``; "not stated" for an N
        given as ``population_size:`` or by the risk model)."""
        from safeshare.risk.population import Population

        section = self.population_section
        return Population.of(self.population_size, section.source if section is not None else None)

    def algorithm_options(self) -> dict[str, Any]:
        """The search strategy's options from the configuration (epsilon-safe: ``{"params": ...}``)."""
        entry = ALGORITHMS[self.algorithm]
        if entry.section == "dp":
            assert self.dp is not None
            return {"params": self.dp.params()}
        values = {key: getattr(self, key, None) for key in entry.options().model_fields}
        return {key: value for key, value in values.items() if value is not None}

    def spec(self) -> AnonymizationSpec:
        """The run this configuration describes, as one frozen, validated specification."""
        from safeshare.config.spec import AnonymizationSpec

        try:
            return AnonymizationSpec(
                schema=self.schema,
                privacy=self.privacy,
                max_suppression=self.max_suppression,
                metric=self.metric,
                algorithm=self.algorithm,
                algorithm_options=self.algorithm_options(),
                prec_weights=self.prec_weights,
            )
        except ConfigError as exc:  # say which file
            if str(exc).startswith(str(self._path)) or str(exc).startswith("--"):
                raise
            raise ConfigError(f"{self._path}: {exc}") from None

    def settings(self) -> dict[str, Any]:
        """Every setting of the run, defaults filled in (report.json's ``provenance.settings``);
        paths as written in the file when they stay inside its folder, any other (absolute, or
        climbing out with ``..``) by its name only (:func:`safeshare.paths.shown_path`)."""
        # the key file is named nowhere, and the key's fingerprint (which confirms a guessed key)
        # goes to the custodian's ledger only (issue 30)
        doc = self.model_dump(mode="json", by_alias=True, exclude={"privacy_params", "key_file"})
        doc["population_size"] = self.population_size  # the N used (the key, or privacy.risk's)
        doc["key_file"] = None if self.identifiers is None else "given (not shown)"
        doc["privacy"] = {name: m.model_dump(mode="json") for name, m in (self.privacy_params or {}).items()}
        return cast(dict[str, Any], _portable(doc, self.base_dir))

    def with_overrides(self, **overrides: Any) -> ConfigFile:
        """A new configuration: the file's mapping with these overrides (added to the ones it
        was loaded with), validated again as a whole. The file is not read again."""
        return parse_config(self._raw, self._path, self._release, **{**self._overrides, **overrides})


def check_key(key: str, value: Any) -> Any:
    """``value`` of the top-level ``key`` validated by the configuration's own field (its type and
    its checks, the messages of a whole file's), for a form that sets one key at a time (the
    workbench's Privacy screen); :class:`ConfigError` ``key: what is wrong``."""
    from pydantic import TypeAdapter

    field = next((f for name, f in ConfigFile.model_fields.items() if (f.alias or name) == key), None)
    if field is None:
        raise ConfigError(f"{key}: unknown key")
    annotation: Any = Annotated[(field.annotation, *field.metadata)] if field.metadata else field.annotation
    try:
        return TypeAdapter(annotation).validate_python(value)
    except ValidationError as exc:
        message = exc.errors()[0]["msg"].removeprefix("Value error, ")
        raise ConfigError(f"{key}: {message}") from None


def _check_local_recoding(cfg: ConfigFile) -> None:
    """What local recoding does not combine with, refused before any data is read."""
    why = None
    if not ALGORITHMS[cfg.algorithm].local_recoding:
        why = (
            f"not supported with algorithm {cfg.algorithm} "
            f"(local recoding runs {', '.join(local_recoding_algorithms())})"
        )
    elif cfg.engine == "spark":
        why = "the spark engine does not write locally recoded releases (use engine memory or duckdb)"
    elif cfg.knowledge is not None:
        why = "the m-concealing report (knowledge:) is not computed for a locally recoded release"
    elif "small-cells" in (cfg.privacy_params or {}):
        why = "not supported with small-cells (a class mixing levels has no defined population group)"
    elif any(a.role in ("pseudonym", "shifted_date") for a in cfg.attributes.values()):
        why = "not yet supported with pseudonym or shifted_date columns (their re-check is not wired)"
    if why is not None:
        raise refuse(why, key="local_recoding")


#: Keys whose text values are file paths (relative to the configuration's folder): the input,
#: a hierarchy file, a builder's file, the ledger, small-cells' population table.
PATH_KEYS = frozenset({"path", "file", "hierarchy", "ledger", "population", "frame", "control"})


def _portable(value: Any, base: Path, key: str | None = None) -> Any:
    """Paths as a report shows them (a report never shows the custodian's directories): a path
    key's text by :func:`~safeshare.paths.written_path` (inside the folder as written, else by
    name), any other absolute path by its name only."""
    if isinstance(value, dict):
        return {k: _portable(v, base, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_portable(v, base, key) for v in value]
    if isinstance(value, str) and key in PATH_KEYS and value:
        return written_path(value, base)
    if isinstance(value, str) and os.path.isabs(value) and len(value) > 1:
        return PurePath(value).name
    return value


def _input(value: Any) -> Any:
    if isinstance(value, str):
        return {"path": value}
    if not isinstance(value, Mapping) or ("path" not in value and "table" not in value):
        raise refuse("expected a mapping with at least 'path' (or 'table')")
    return value


def _attributes(value: Any) -> Any:
    if not isinstance(value, Mapping) or not value:
        raise refuse("expected a mapping of column -> {role: ...}")
    return value


def _knowledge(value: Any, where: str) -> dict[str, float]:
    from safeshare.risk.knowledge import parse_knowledge

    return parse_knowledge(value, where)


def _algorithm(value: Any, where: str) -> str:
    algorithm(value, where)
    return str(value)


TOP_LEVEL_KEYS = {field.alias or name for name, field in ConfigFile.model_fields.items()}
#: The sections whose unknown keys are reported with their known keys (``extra="forbid"``).
_SECTIONS: dict[str, type[Section]] = {
    "": ConfigFile,
    "input": InputSection,
    "output": OutputSection,
    "duckdb": DuckDBSection,
    "spark": SparkSection,
    "dp": EpsilonSafeOptions,
    "local_recoding": LocalRecodingSection,
    "attack": AttackSection,
    "governance": GovernanceSection,
}


def _set(raw: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    """Set ``raw[path[0]]...[path[-1]] = value``, copying the mappings on the way."""
    here = raw
    for key in path[:-1]:
        child = here.get(key)
        child = dict(child) if isinstance(child, Mapping) else {}
        here[key] = child
        here = child
    here[path[-1]] = value


def _with_overrides(
    raw: Mapping[str, Any], overrides: Mapping[str, Any]
) -> tuple[dict[str, Any], dict[str, str]]:
    """``raw`` with the overrides set at their key paths, and key path -> option name."""
    out = dict(raw)
    options: dict[str, str] = {}
    # --rounds last: it needs --local-recoding (or the file's local_recoding:) to be on
    # --population-source after --population-size: it moves N into population: {size, source}
    last = ("rounds", "population_source")
    for keyword, value in sorted(overrides.items(), key=lambda item: (item[0] in last, item[0] == last[1])):
        if keyword not in OVERRIDES:
            close = [k for k in OVERRIDES if k.replace("_", "") == keyword.replace("_", "")]
            hint = f"; did you mean {close[0]!r}?" if close else f"; expected one of {', '.join(OVERRIDES)}"
            raise ConfigError(f"unknown option {keyword!r}{hint}")
        if value is None:
            continue
        if keyword in PATH_OVERRIDES:  # a path given as an option is relative to where it is given
            value = str(Path(str(value)).absolute())
        path = OVERRIDES[keyword]
        if keyword == "k":  # replaces the k-anonymity model, whatever its spelling
            privacy = raw.get("privacy")
            models = {
                name: params
                for name, params in (privacy.items() if isinstance(privacy, Mapping) else [])
                if not (isinstance(name, str) and model_name(name) == "k-anonymity")
            }
            out["privacy"] = {"k-anonymity": {"k": value}, **models}
        elif keyword == "population_size" and isinstance(out.get("population"), Mapping):
            path = ("population", "size")  # the file's population: {size, source}: its size replaced
            _set(out, path, value)
        elif keyword == "population_source" and "population" not in out:
            size = out.pop("population_size", None)  # N given as population_size (or --population-size)
            if size is None:
                raise ConfigError(
                    f"{option_name(keyword)}: says where N comes from: give N too (--population-size, "
                    "or population: {size: ..., source: ...} in the configuration)"
                )
            out["population"] = {"size": size, "source": value}
            if "population_size" in options:
                options["population.size"] = options.pop("population_size")
        elif keyword == "accept_warnings":  # the option's codes are added to the file's
            given = out.get(keyword)
            kept = [given] if isinstance(given, str) else list(given) if isinstance(given, list) else []
            more = [value] if isinstance(value, str) else list(value)
            out[keyword] = kept + [c for c in more if c not in kept]
        elif keyword == "local_recoding" and value is True and isinstance(out.get(keyword), Mapping):
            pass  # the file's rounds stay
        elif keyword == "rounds" and out.get("local_recoding") in (None, False):
            raise ConfigError(
                f"{option_name(keyword)}: applies to local recoding only "
                "(--local-recoding, or local_recoding: in the configuration)"
            )
        else:
            _set(out, path, value)
        options[".".join(path)] = option_name(keyword)
    dp = out.get("dp")
    if options.get("dp.utility") and isinstance(dp, Mapping) and dp.get("utility") == "safepub":
        # the command line chose SafePub's score, which has no penalty: the file's penalty
        # settings belonged to the file's utility (a penalty given as an option is still refused)
        unused = {"penalty", "penalty_mode"} - {key.removeprefix("dp.") for key in options}
        out["dp"] = {k: v for k, v in dp.items() if k not in unused}
    return out, options


def parse_config(raw: Mapping[str, Any], path: Path, release: bool = True, **overrides: Any) -> ConfigFile:
    """Validate a configuration mapping read from ``path``, with ``overrides``; ``release``:
    the run writes a release (epsilon-safe's non-DP calibration is refused then; ``False``
    for ``--dry-run``)."""
    name = str(path)
    check_keys(raw, TOP_LEVEL_KEYS, f"{name}:", NOT_READ)
    merged, options = _with_overrides(raw, overrides)
    if merged.get("algorithm") == "epsilon-safe":
        _check_epsilon_safe(merged, options, path, release)
    try:
        cfg = ConfigFile.model_validate(merged, context={"options": options})
    except ValidationError as exc:
        raise _config_error(exc, name, options) from None
    cfg._path = path
    cfg._raw = dict(raw)
    cfg._release = release
    cfg._overrides = {key: value for key, value in overrides.items() if value is not None}
    # what needs the files: hierarchies, the input's options, the QI names of prec_weights
    cfg.source  # noqa: B018
    schema = cfg.schema
    cfg.privacy  # noqa: B018
    not_qi = {
        c: f"not a quasi-identifier (role {a.role.value})"
        for c, a in schema.attributes.items()
        if not a.is_quasi
    }
    check_keys(cfg.prec_weights, schema.quasi_identifiers, f"{name}: prec_weights", not_qi)
    if cfg.levels is not None:
        check_keys(cfg.levels, schema.quasi_identifiers, f"{name}: levels", not_qi)
        missing = [q for q in schema.quasi_identifiers if q not in cfg.levels]
        if missing:
            raise ConfigError(
                f"{name}: levels: missing the level of {', '.join(missing)} (one per quasi-identifier)"
            )
    _check_population_size(cfg)
    _check_identifiers(cfg)
    _check_person(cfg, schema)
    if cfg.ledger is not None and (cfg.approved_by is None or not cfg.approved_by.strip()):
        raise ConfigError(
            f"{name}: ledger: a ledger entry names who approved the release: add approved_by: "
            "(or --approved-by 'J. Doe, privacy officer')"
        )
    if cfg.engine == "spark" and cfg.output.format == "csv":
        raise ConfigError(f"{name}: output.format: the spark engine writes Parquet releases only")
    return cfg


#: What stands in for a section epsilon-safe's requirements have already reported, while the rest
#: of the configuration is validated in the same pass (:func:`_check_epsilon_safe`).
_EPSILON_SAFE_STAND_INS: dict[str, Any] = {
    "dp": {"beta": 0.5, "epsilon_prime": 1.0, "utility": "safepub"},
    "privacy": {"k-anonymity": {"k": 2}},
    "metric": "prec",
}


def _check_epsilon_safe(
    merged: Mapping[str, Any], options: Mapping[str, str], path: Path, release: bool
) -> None:
    """Every requirement of epsilon-safe anonymization, checked on the configuration before any
    data is read and told in one message (issue 30, item 18: beta, then the penalty factor after
    seconds of work, then the roles, then the hierarchies, one failed run at a time): the ``dp:``
    section (:func:`safeshare.dp.config.dp_problems`), one privacy model (k-anonymity), the Prec
    metric, no ``knowledge:`` nor local recoding, every released column a quasi-identifier with a
    hierarchy file (:func:`safeshare.dp.epsilon_safe.requirement_problems`). Nothing is raised
    when they are met: the configuration's own validation follows, and reports anything else."""
    from safeshare.dp.config import dp_problems
    from safeshare.dp.epsilon_safe import requirement_problems, requirements_message

    problems = dp_problems(merged.get("dp"), options, release)
    rest = {**merged, "dp": _EPSILON_SAFE_STAND_INS["dp"]}
    privacy = merged.get("privacy")
    models: list[str] | None = list(privacy) if isinstance(privacy, Mapping) else None
    if privacy is None:
        problems.append("privacy: exactly one privacy model, k-anonymity (got none)")
        rest["privacy"] = _EPSILON_SAFE_STAND_INS["privacy"]
    metric = merged.get("metric", "prec")
    if isinstance(metric, str) and metric_name(metric) != "prec":
        problems.append(f"metric: algorithm epsilon-safe scores nodes by prec (thesis 4.5.4), not {metric!r}")
        rest["metric"] = _EPSILON_SAFE_STAND_INS["metric"]
    if merged.get("knowledge") is not None:
        problems.append(
            "knowledge: not supported with algorithm epsilon-safe (every released column is a QI)"
        )
        rest.pop("knowledge")
    if merged.get("local_recoding") not in (None, False):
        problems.append("local_recoding: not supported with algorithm epsilon-safe (it draws one node)")
        rest.pop("local_recoding")
    if merged.get("person") is not None:  # issue 32 (a shifted date's person: told by _check_person)
        problems.append(
            "person: algorithm epsilon-safe samples records, not people: its guarantee would not hold "
            "for a person with several records; use another algorithm"
        )
        rest.pop("person")
    try:
        cfg = ConfigFile.model_validate(rest, context={"options": options})
        cfg._path = path
        problems += requirement_problems(cfg.schema, models)  # hierarchy files opened, no data read
    except ValidationError as exc:
        if not problems:
            return  # the configuration's own validation reports it
        problems.append(str(_config_error(exc, f"{path}", options)).removeprefix(f"{path}: "))
    except InputError as exc:  # a hierarchy file that cannot be read, a bad role, ...
        if not problems:
            return
        problems.append(str(exc).removeprefix(f"{path}: "))
    if problems:
        raise ConfigError(requirements_message(problems, f"{path}: "))


def _check_population_size(cfg: ConfigFile) -> None:
    from_model = next((getattr(m, "population_size", None) for m in cfg.privacy if m.name == "risk"), None)
    given = cfg.population_size_key
    section = cfg.population_section
    if section is not None and given is not None:
        raise ConfigError(
            f"{cfg.path}: population_size: given with population: {{size, source}}; keep one "
            "(population.size is N, population.source where it comes from)"
        )
    if section is not None:
        if from_model is not None and from_model != section.size:
            raise ConfigError(
                f"{cfg.path}: population.size: {section.size} differs from privacy.risk.population_size "
                f"{from_model}"
            )
        return
    if given is not None and from_model is not None and from_model != given:
        raise ConfigError(
            f"{cfg.path}: population_size: {given} differs from privacy.risk.population_size {from_model}"
        )


def _check_person(cfg: ConfigFile, schema: Schema) -> None:
    """What a person key (issue 32) does not combine with, refused before any data is read."""
    if schema.person is None:
        return
    where = f"{cfg.path}: person" if cfg.person is not None else f"{cfg.path}: attributes"
    implied = "" if cfg.person is not None else f" (the shifted dates' person {schema.person!r})"
    if ALGORITHMS[cfg.algorithm].section == "dp":
        raise ConfigError(
            f"{where}: algorithm {cfg.algorithm} samples records, not people{implied}: its guarantee "
            "would not hold for a person with several records; use another algorithm"
        )
    if cfg.local_recoding is not None:
        raise ConfigError(f"{where}: local recoding does not count people yet{implied}")


def _check_identifiers(cfg: ConfigFile) -> None:
    """Pseudonyms and shifted dates need a key file (read now: a bad key is refused before any
    data is read); a key file without such columns is a mistake."""
    if cfg.schema.identifier_columns:
        cfg.identifiers  # noqa: B018
    elif cfg.key_file is not None:
        raise ConfigError(
            f"{cfg.path}: key_file: no column has the role pseudonym or shifted_date, so no key is used"
        )


def _config_error(exc: ValidationError, name: str, options: Mapping[str, str]) -> ConfigError:
    """The first validation error as one line, naming the file and key path (or the option)."""
    sections: dict[str, type[Section]] = dict(_SECTIONS)
    error = exc.errors(include_url=False)[0]
    loc = [str(p) for p in error["loc"] if p != "[key]"]
    if len(loc) >= 2 and loc[0] == "attributes":
        sections[".".join(loc[:2])] = AttributeSection
    return validation_error(exc, f"{name}:", sections, options)


def named_files(raw: Mapping[str, Any], base_dir: Path) -> list[tuple[str, Path]]:
    """Every file a configuration mapping names, as ``(key path, path)``: ``input`` (or
    ``input.path``), each ``attributes.<column>.hierarchy`` that is a file, the files of a
    hierarchy builder (``path``, ``file``: :func:`~safeshare.hierarchy.builders.builder_files`),
    the files of a privacy model (:data:`~safeshare.models.registry.FILE_KEYS`), ``key_file``
    and ``ledger``; relative paths are joined to ``base_dir`` (the configuration's folder).

    Read from the mapping as it is, valid or not, and before any of these files is opened, so
    that a caller can confine them (the workbench: under ``--workdir``, issue 30 item 11). A
    value that is not a text names no file here (the loader refuses it)."""
    from safeshare.hierarchy.builders import builder_files
    from safeshare.models.registry import FILE_KEYS

    base = Path(base_dir)
    out: list[tuple[str, Path]] = []

    def add(where: str, value: Any) -> None:
        if isinstance(value, str) and value:
            path = Path(value)
            out.append((where, path if path.is_absolute() else base / path))

    source = raw.get("input")
    if isinstance(source, Mapping):
        add("input.path", source.get("path"))
    else:
        add("input", source)
    attributes = raw.get("attributes")
    for column, spec in attributes.items() if isinstance(attributes, Mapping) else []:
        hierarchy = spec.get("hierarchy") if isinstance(spec, Mapping) else None
        where = f"attributes.{column}.hierarchy"
        if isinstance(hierarchy, Mapping):
            out.extend((where, path) for path in builder_files(hierarchy, base))
        else:
            add(where, hierarchy)
    privacy = raw.get("privacy")
    for name, params in privacy.items() if isinstance(privacy, Mapping) else []:
        for key in FILE_KEYS:
            if isinstance(params, Mapping):
                add(f"privacy.{name}.{key}", params.get(key))
    add("key_file", raw.get("key_file"))
    add("ledger", raw.get("ledger"))
    return out


def load_config(path: str | Path, release: bool = True, **overrides: Any) -> ConfigFile:
    """Read and validate a configuration file, with overrides by option name (``k=10``,
    ``max_suppression="5%"``, ``algorithm="epsilon-safe"``, ``beta=0.5``, ``spark_master=...``);
    ``release=False`` for a run that writes no release (``--dry-run``)."""
    path = Path(path)
    raw = read_yaml(path)
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{path}: expected a mapping at the top level")
    return parse_config(dict(raw), path, release, **overrides)


def config_json_schema() -> str:
    """The JSON Schema of a configuration file, for editors (docs/config.schema.json).

    Generated from :class:`ConfigFile` and the registries (privacy models, algorithms,
    hierarchy builders), with the short forms (``input: data.csv``, ``column: quasi``).
    """
    schema = ConfigFile.model_json_schema()
    props = schema["properties"]
    props["input"] = {"anyOf": [{"type": "string"}, {"$ref": "#/$defs/InputSection"}]}
    props["attributes"] = {
        "type": "object",
        "additionalProperties": {"anyOf": [{"type": "string"}, {"$ref": "#/$defs/AttributeSection"}]},
    }
    from safeshare.models.registry import privacy_json_schema

    schema["$defs"]["AttributeSection"]["properties"]["hierarchy"] = _builder_schema()
    # local_recoding: true (the default rounds) | false (off) | {rounds: N}
    props["local_recoding"] = {"anyOf": [{"type": "boolean"}, {"$ref": "#/$defs/LocalRecodingSection"}]}
    privacy = privacy_json_schema()
    schema["$defs"].update(privacy.pop("$defs"))
    schema["$defs"]["Privacy"] = privacy
    props["privacy"] = {"$ref": "#/$defs/Privacy"}
    return to_json(schema, indent=2) + "\n"
