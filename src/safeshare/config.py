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
    algorithm: ola              # ola | exhaustive | inverse-ola
    max_loss: 0.5               # inverse-ola: largest normalized information loss
    knowledge: {capital-gain: 0.01}   # report m-concealing of the release (docs/m-concealing.md)
    engine: memory              # memory | duckdb
    duckdb: {memory_limit: 2GB, threads: 2}   # DuckDB engine; default: from the machine
    output: {format: csv, delimiter: ","}

Every error names the file and the key path, on one line.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, cast

from safeshare.config_checks import check_keys, read_yaml
from safeshare.data.engines.base import OutputFormat
from safeshare.data.schema import DEFAULT_ROLES, Attribute, HierarchySpec, Role, Schema
from safeshare.data.source import TableSource
from safeshare.dp.config import dp_section
from safeshare.errors import ConfigError, InputError
from safeshare.hierarchy.builders import FileBuilder, builder_from_spec
from safeshare.metrics.loss import metric_name
from safeshare.models.base import PrivacyModel
from safeshare.models.k_anonymity import KAnonymity
from safeshare.models.registry import make_model
from safeshare.risk.knowledge import parse_knowledge
from safeshare.workflows.algorithms import ALGORITHMS
from safeshare.workflows.spec import AnonymizationSpec

ENGINES = ("memory", "duckdb")
TOP_LEVEL_KEYS = {
    "input",
    "attributes",
    "privacy",
    "max_suppression",
    "metric",
    "algorithm",
    "engine",
    "output",
    "prec_weights",
    "knowledge",
    "duckdb",
    "dp",
    "max_loss",
    "default_role",
}
INPUT_KEYS = {"path", "format", "delimiter", "header", "names", "missing", "skip_rows", "encoding", "ragged"}
OUTPUT_KEYS = {"format", "delimiter"}
ATTRIBUTE_KEYS = {"role", "hierarchy"}
#: Top-level keys that are known but not read: the reason is the error message.
NOT_READ = {"utility": "not read from the configuration; `safeshare utility` takes its settings from options"}
#: Top-level keys that apply to one algorithm only.
ALGORITHM_KEYS = {"dp": "epsilon-safe", "max_loss": "inverse-ola"}

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
    raw: dict[str, Any] = field(default_factory=dict)
    max_loss: float | None = None
    knowledge: dict[str, float] | None = None
    #: the DuckDB engine's ``memory_limit`` and ``threads`` as configured (absent: machine defaults)
    duckdb: dict[str, Any] = field(default_factory=dict)

    @property
    def base_dir(self) -> Path:
        return self.path.parent

    @property
    def release_format(self) -> OutputFormat:
        """The release format: as configured, else the input's format."""
        return self.output_format or self.source.fmt

    def with_overrides(
        self,
        k: int | None = None,
        max_suppression: float | None = None,
        metric: str | None = None,
        algorithm: str | None = None,
        engine: str | None = None,
        max_loss: float | None = None,
        duckdb_memory_limit: str | None = None,
        duckdb_threads: int | None = None,
    ) -> RunConfig:
        """A copy with command-line overrides applied (and validated).

        Without a privacy model only Inverse OLA may run; it then maximizes
        k-anonymity from k = 1.
        """
        out = replace(self, privacy=list(self.privacy))
        if k is not None:
            if isinstance(k, bool) or not isinstance(k, int) or k < 1:
                raise ConfigError(f"--k: expected an integer >= 1, got {k!r}")
            out.privacy = [m for m in out.privacy if not isinstance(m, KAnonymity)]
            out.privacy.insert(0, KAnonymity(k))
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
        out.duckdb = dict(self.duckdb)
        if duckdb_memory_limit is not None:
            out.duckdb["memory_limit"] = _memory_size(duckdb_memory_limit, "--duckdb-memory-limit")
        if duckdb_threads is not None:
            out.duckdb["threads"] = _threads(duckdb_threads, "--duckdb-threads")
        if algorithm is not None:
            given = {key for key in ALGORITHM_KEYS if key in self.raw}
            _check_algorithm_keys(given, out.algorithm, f"{self.path}:", f"--algorithm {out.algorithm}")
        if not out.privacy:
            if out.algorithm not in ALGORITHMS_WITHOUT_PRIVACY:
                raise ConfigError(
                    f"{self.path}: privacy: missing; e.g. privacy: {{k-anonymity: {{k: 5}}}} "
                    "(only --algorithm inverse-ola, which maximizes k, runs without one)"
                )
            out.privacy = [KAnonymity(1)]
        return out

    def algorithm_options(self) -> dict[str, Any]:
        """The search strategy's options from the configuration (``max_loss``)."""
        return {"max_loss": self.max_loss} if self.max_loss is not None else {}

    def spec(self) -> AnonymizationSpec:
        """The run this configuration describes, as one frozen, validated specification.

        Every command builds its :class:`Anonymizer` (or :class:`Sweep`) from it, so
        that no command can drop a setting (``utility`` and ``sweep`` once dropped
        the algorithm's options).
        """
        return AnonymizationSpec(
            schema=self.schema,
            privacy=tuple(self.privacy),
            max_suppression=self.max_suppression,
            metric=self.metric,
            algorithm=self.algorithm,
            algorithm_options=self.algorithm_options(),
            prec_weights=self.prec_weights,
        )


def load_config(path: str | Path) -> RunConfig:
    """Read and validate a configuration file."""
    path = Path(path)
    raw = read_yaml(path)
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{path}: expected a mapping at the top level")
    return parse_config(dict(raw), path)


def parse_config(raw: Mapping[str, Any], path: Path) -> RunConfig:
    """Validate a configuration mapping read from ``path``."""
    name = str(path)
    check_keys(raw, TOP_LEVEL_KEYS, f"{name}:", NOT_READ)
    algorithm = _algorithm(raw.get("algorithm", "ola"), f"{name}: algorithm")
    _check_algorithm_keys(set(raw), algorithm, f"{name}:", f"algorithm is {algorithm}")
    base = path.parent
    source = _source(raw.get("input"), base, f"{name}: input")
    schema = _schema(raw.get("attributes"), base, f"{name}: attributes")
    if raw.get("default_role") is not None:
        schema.default_role = _default_role(raw["default_role"], f"{name}: default_role")
    privacy = _privacy(raw.get("privacy"), f"{name}: privacy")
    output = raw.get("output") or {}
    if not isinstance(output, Mapping):
        raise ConfigError(f"{name}: output: expected a mapping, e.g. output: {{format: csv}}")
    check_keys(output, OUTPUT_KEYS, f"{name}: output")
    fmt = output.get("format")
    if fmt is not None and fmt not in ("csv", "parquet"):
        raise ConfigError(f"{name}: output.format: expected csv or parquet, got {fmt!r}")
    weights = raw.get("prec_weights") or {}
    if not isinstance(weights, Mapping):
        raise ConfigError(f"{name}: prec_weights: expected a mapping of quasi-identifier -> number")
    not_qi = {
        c: f"not a quasi-identifier (role {a.role.value})"
        for c, a in schema.attributes.items()
        if a.role is not Role.QUASI
    }
    check_keys(weights, schema.quasi_identifiers, f"{name}: prec_weights", not_qi)
    for column, weight in weights.items():
        if isinstance(weight, bool) or not isinstance(weight, int | float):
            raise ConfigError(f"{name}: prec_weights.{column}: expected a number, got {weight!r}")
    if algorithm == "epsilon-safe":
        dp_section(raw, name)
    return RunConfig(
        path=path,
        source=source,
        schema=schema,
        privacy=privacy,
        max_suppression=_fraction(raw.get("max_suppression", 0.0), f"{name}: max_suppression"),
        metric=_metric(raw.get("metric", "prec"), f"{name}: metric"),
        algorithm=algorithm,
        engine=_engine(raw.get("engine", "memory"), f"{name}: engine"),
        output_format=cast(OutputFormat | None, fmt),
        output_delimiter=_output_delimiter(output.get("delimiter", ","), f"{name}: output.delimiter"),
        prec_weights={str(k): float(v) for k, v in weights.items()},
        raw=dict(raw),
        max_loss=_fraction(raw["max_loss"], f"{name}: max_loss") if raw.get("max_loss") is not None else None,
        knowledge=parse_knowledge(raw["knowledge"], f"{name}: knowledge")
        if raw.get("knowledge") is not None
        else None,
        duckdb=_duckdb_section(raw.get("duckdb"), f"{name}: duckdb"),
    )


_SIZE = re.compile(r"^\s*\d+(\.\d+)?\s*(B|KB|MB|GB|TB|KiB|MiB|GiB|TiB)\s*$", re.IGNORECASE)


def _memory_size(value: Any, where: str) -> str:
    if not isinstance(value, str) or not _SIZE.match(value):
        raise ConfigError(f"{where}: expected a size such as 2GB or 512MB, got {value!r}")
    return value.strip()


def _threads(value: Any, where: str) -> int:
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
        out["threads"] = _threads(section["threads"], f"{where}.threads")
    return out


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
            key: f"applies to algorithm: {owner} only ({why})"
            for key, owner in ALGORITHM_KEYS.items()
            if owner != algorithm
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


def _source(spec: Any, base: Path, where: str) -> TableSource:
    if isinstance(spec, str):
        spec = {"path": spec}
    if not isinstance(spec, Mapping) or "path" not in spec:
        raise ConfigError(f"{where}: expected a mapping with at least 'path'")
    check_keys(spec, INPUT_KEYS, where)
    for key in ("path", "format", "delimiter", "encoding", "ragged"):
        if key in spec:
            _text(spec[key], f"{where}.{key}")
    names = spec.get("names")
    if names is not None and (not isinstance(names, list) or not all(isinstance(n, str) for n in names)):
        raise ConfigError(f"{where}.names: expected a list of column names")
    missing = spec.get("missing", [])
    if isinstance(missing, str):
        missing = [missing]
    if not isinstance(missing, list):
        raise ConfigError(f"{where}.missing: expected a list of tokens")
    for i, token in enumerate(missing):
        _text(token, f"{where}.missing[{i}]")
    header = spec.get("header", True)
    if not isinstance(header, bool):
        raise ConfigError(f"{where}.header: expected true or false")
    skip = spec.get("skip_rows", 0)
    if isinstance(skip, bool) or not isinstance(skip, int) or skip < 0:
        raise ConfigError(f"{where}.skip_rows: expected an integer >= 0")
    try:
        return TableSource(
            path=(base / str(spec["path"])).resolve()
            if not Path(str(spec["path"])).is_absolute()
            else Path(str(spec["path"])),
            format=spec.get("format"),
            delimiter=str(spec.get("delimiter", ",")),
            header=header,
            names=tuple(names) if names else None,
            missing=tuple(str(m) for m in missing),
            skip_rows=skip,
            encoding=str(spec.get("encoding", "utf-8")),
            ragged=spec.get("ragged", "error"),
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


def _schema(spec: Any, base: Path, where: str) -> Schema:
    if not isinstance(spec, Mapping) or not spec:
        raise ConfigError(f"{where}: expected a mapping of column -> {{role: ...}}")
    attrs = []
    for column, entry in spec.items():
        here = f"{where}.{column}"
        if not isinstance(column, str):
            raise ConfigError(f'{here}: expected a name as key, got {column!r} (quote it: "...")')
        if isinstance(entry, str):
            entry = {"role": entry}
        if not isinstance(entry, Mapping) or "role" not in entry:
            raise ConfigError(f"{here}: expected a mapping with a role")
        check_keys(entry, ATTRIBUTE_KEYS, here)
        role = Role.parse(_text(entry["role"], f"{here}.role"), column)
        hierarchy = None
        if role is Role.QUASI:
            if "hierarchy" not in entry:
                raise ConfigError(f"{here}: a quasi-identifier needs a hierarchy")
            hierarchy = _hierarchy(entry["hierarchy"], base, f"{here}.hierarchy")
        elif role is Role.SENSITIVE and "hierarchy" in entry:  # for t-closeness' hierarchical distance
            hierarchy = _hierarchy(entry["hierarchy"], base, f"{here}.hierarchy")
        attrs.append(Attribute(str(column), role, hierarchy))
    return Schema.from_attributes(attrs)


def _privacy(spec: Any, where: str) -> list[PrivacyModel]:
    if spec is None:
        return []  # allowed for Inverse OLA only; checked by RunConfig.with_overrides
    if not isinstance(spec, Mapping) or not spec:
        raise ConfigError(f"{where}: expected a mapping of model -> parameters")
    return [make_model(str(name), params, where) for name, params in spec.items()]
