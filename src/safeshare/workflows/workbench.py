"""The workbench's use cases: everything the browser workbench (``safeshare ui``) asks of the
library, in the application layer, reached as ``safeshare.api.workbench`` (the workbench imports
nothing else of the library but :mod:`safeshare.app_runner`, the errors and the strict YAML reader:
the import-linter contract "The workbench reaches the library through safeshare.api").

The pages and the JSON API hold no logic of their own: ``anonymize`` is
:func:`safeshare.api.anonymize`, the very function ``safeshare anonymize`` calls, so the same
configuration gives the same node, the same verified release bytes and the same report figures;
the Explore screen's figures are :mod:`safeshare.workflows.explore`'s, and the Risk screen's are
the published report.json's (its ``risk`` section and the certificate's ``population``,
``sensitivity`` and ``estimators``: :func:`risk_view`), never recomputed; so are the Utility
screen's (each column before and after, suppression by category, information loss:
:func:`~safeshare.workflows.utility_view.utility_view`).

The functions that read records (:func:`profile`, :func:`estimate`, :func:`anonymize`, the
surveillance ones, :func:`lattice_view`) run in the run's child process
(:mod:`safeshare.ui.worker`), never in the server; the server only calls :func:`check_config`,
:func:`confine_config`, the vocabularies and the readers of what a run wrote (:class:`LatticeView`,
:func:`node_detail`); hierarchies are checked and previewed in a short-lived child too
(:func:`hierarchy_answer`), and so is a new project's input file (:func:`input_preview`: its
first 64 KiB).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from safeshare.app_runner import Monitor
from safeshare.config.vocabulary import (
    METRICS,
    ROLES,
    SMALL_CELL,
    SURVEILLANCE_LAG,
    SURVEILLANCE_QUANTILE,
    SURVEILLANCE_THRESHOLD,
)
from safeshare.errors import InputError
from safeshare.workflows.acknowledgement import WarningMark
from safeshare.workflows.confine import confine_config, confine_config_file, inside
from safeshare.workflows.hierarchy_form import WIZARD_TYPES, wizard_shows
from safeshare.workflows.hierarchy_form import builder_spec as wizard_spec
from safeshare.workflows.hierarchy_form import fields as wizard_fields
from safeshare.workflows.hierarchy_form import form_values as wizard_form
from safeshare.workflows.privacy_form import (
    SHOWN,
    Field,
    ModelForm,
    apply_privacy_form,
    posted_reason,
    privacy_form,
    privacy_notes,
)
from safeshare.workflows.risk_language import measure_sentence
from safeshare.workflows.run_warnings import explanations as warning_explanations
from safeshare.workflows.run_warnings import run_warnings
from safeshare.workflows.utility_view import utility_view

if TYPE_CHECKING:
    from safeshare.workflows.explore import (
        LatticeView,
        NodeFigures,
        lattice_view,
        node_detail,
    )

#: The Explore screen's figures, imported on first use (PEP 562: numpy and the core load then, not
#: when the server starts).
_EXPLORE = ("LatticeView", "NodeFigures", "lattice_view", "node_detail")


def __getattr__(name: str) -> Any:
    if name not in _EXPLORE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module("safeshare.workflows.explore"), name)
    globals()[name] = value
    return value


# --------------------------------------------------------------------------- configuration
def check_config(path: Path, workdir: Path) -> Any:
    """The validated configuration at ``path`` (:class:`InputError` with the key path if not),
    once every file it names is confined under ``workdir`` (before any of them is opened:
    :func:`safeshare.workflows.confine.confine_config_file`)."""
    from safeshare.config import load_config

    confine_config_file(path, workdir)
    return load_config(path)


def node_config(config: Mapping[str, Any], levels: Mapping[str, int]) -> dict[str, Any]:
    """A copy of a configuration that releases exactly the node ``levels`` (QI -> level):
    ``algorithm: node`` with those ``levels:`` (docs/configuration.md), without the keys of
    other algorithms (``max_loss``, ``dp:``, the anytime budget: an error with ``node``) and
    without ``local_recoding`` (which would release more than that node). The workbench's
    "Release this node" runs it as that run's own ``run-<run>.yaml``; the project's
    configuration is not changed (issue 35)."""
    from safeshare.config.algorithms import config_keys

    out = {
        key: value
        for key, value in config.items()
        if key not in ("algorithm", "levels", "local_recoding")
        and "node" in config_keys().get(key, ("node",))
    }
    out["algorithm"] = "node"
    out["levels"] = {str(q): int(level) for q, level in levels.items()}
    return out


def accepted_warnings(config: Mapping[str, Any]) -> list[str]:
    """The codes of a configuration's ``accept_warnings:`` (a list of codes, or one code)."""
    value = config.get("accept_warnings")
    codes = [value] if isinstance(value, str) else value if isinstance(value, list) else []
    return [str(c) for c in codes]


def accept_warnings(config: Mapping[str, Any], codes: Sequence[str]) -> dict[str, Any]:
    """A copy of ``config`` whose ``accept_warnings:`` lists ``codes`` (each a
    :class:`~safeshare.warning_codes.WarningCode`, once, in the given order; the key is removed
    when there is none): the custodian's acknowledgement of warnings that contradict the
    certificate's headline (docs/report.md, "Acknowledged warnings"). An unknown code is an
    :class:`InputError` naming the key; the whole configuration is validated by the run."""
    from safeshare.warning_codes import warning_codes

    out = dict(config)
    try:
        seen = list(warning_codes(codes))
    except ValueError as exc:
        raise InputError(f"accept_warnings: {exc}") from None
    if seen:
        out["accept_warnings"] = seen
    else:
        out.pop("accept_warnings", None)
    return out


def algorithms() -> list[str]:
    """The names ``algorithm:`` accepts."""
    from safeshare.config.algorithms import ALGORITHMS

    return list(ALGORITHMS)


def metrics() -> list[str]:
    """The names ``metric:`` accepts (:data:`safeshare.config.vocabulary.METRICS`)."""
    return list(METRICS)


def roles() -> list[str]:
    """The roles the Data screen sets: the vocabulary's (:data:`~safeshare.config.vocabulary.ROLES`),
    the keyed ones (pseudonym, shifted_date) with their options and the project's key
    (:func:`identifier_spec`, :func:`ensure_key`; issue 35)."""
    return list(ROLES)


#: The key file the workbench writes into a project's folder for its keyed roles.
KEY_FILE = "key.hex"
#: The largest date shift the Data screen proposes for a new shifted date (days).
DEFAULT_MAX_DAYS = 180


def identifier_spec(
    column: str,
    role: str,
    previous: Mapping[str, Any],
    form: Mapping[str, Any],
    columns: Sequence[str],
) -> dict[str, Any]:
    """The ``attributes:`` entry of ``column`` with a keyed ``role`` from the Data screen's fields
    ``person-COLUMN``, ``max_days-COLUMN`` and ``date_format-COLUMN`` (a field not posted keeps
    the previous value). A pseudonym keeps its ``length``; a shifted date needs the column of the
    person whose dates share one shift (another column of the input) and the largest shift in
    days. :class:`InputError` naming the column."""
    spec: dict[str, Any] = {"role": role}
    if role == "pseudonym":
        if previous.get("length") is not None:
            spec["length"] = previous["length"]
        return spec

    def posted(name: str) -> str:
        value = form.get(f"{name}-{column}")
        return str(previous.get(name) or "") if value is None else " ".join(str(value).split())

    person = posted("person")
    if not person:
        raise InputError(f"{column}: a shifted date needs the column of its person (person-{column})")
    if person not in columns or person == column:
        raise InputError(f"{column}: person {person!r} is not another column of the input")
    days = posted("max_days") or str(DEFAULT_MAX_DAYS)
    if not days.isdigit() or int(days) < 1:
        raise InputError(f"{column}: max_days: expected a whole number of days >= 1, got {days[:20]!r}")
    spec.update(person=person, max_days=int(days))
    if posted("date_format"):
        spec["date_format"] = posted("date_format")
    return spec


def ensure_key(directory: Path, config: dict[str, Any]) -> bool:
    """Give ``config`` (a project's, in ``directory``) a key for its keyed roles: without a
    ``key_file:`` one is written (:data:`KEY_FILE`, 32 random bytes from the operating system, mode
    0600: :func:`~safeshare.data.identifiers.key.write_new_key`) and named. A key already named is
    kept (replacing it would change every pseudonym); a project without keyed roles is left alone.
    Returns whether a key was written. The key is never shown, served or copied into a run's
    output; its fingerprint goes to a ledger only."""
    attributes = config.get("attributes") or {}
    keyed = any(
        isinstance(a, Mapping) and a.get("role") in ("pseudonym", "shifted_date") for a in attributes.values()
    )
    if not keyed or config.get("key_file"):
        return False
    from safeshare.data.identifiers.key import write_new_key

    path = directory / KEY_FILE
    if not path.exists():
        write_new_key(path)
    config["key_file"] = KEY_FILE
    return True


# --------------------------------------------------------------------------- a new project's input
def input_delimiters() -> list[str]:
    """The delimiters the new-project preview sniffs and offers
    (:data:`~safeshare.workflows.csv_preview.DELIMITERS`)."""
    from safeshare.workflows.csv_preview import DELIMITERS

    return list(DELIMITERS)


def input_preview(
    path: Path, name: str | None = None, delimiter: str | None = None, header: bool | None = None
) -> dict[str, Any]:
    """The preview of an input file before a project is made of it
    (:func:`~safeshare.workflows.csv_preview.csv_preview`: the sniffed delimiter, a header guess,
    the first records split into columns; :class:`InputError` when it is not CSV text or Parquet).
    Reads the file's first 64 KiB only, in the workbench's ``--preview`` child."""
    from safeshare.workflows.csv_preview import csv_preview

    return csv_preview(path, name, delimiter, header).to_dict()


def builder_types() -> list[str]:
    """The ``type:`` names of the hierarchy builders that build from the data (docs/hierarchies.md)."""
    from safeshare.hierarchy.builders import BUILDERS

    return [name for name in BUILDERS if name != "file"]


# --------------------------------------------------------------------------- data
def source(input_section: Mapping[str, Any], base_dir: Path) -> Any:
    """The :class:`~safeshare.data.source.TableSource` of a configuration's ``input:`` section."""
    from safeshare.data.source import TableSource

    path = Path(str(input_section["path"]))
    names = input_section.get("names")
    return TableSource(
        path=path if path.is_absolute() else base_dir / path,
        delimiter=str(input_section.get("delimiter", ",")),
        header=bool(input_section.get("header", True)),
        names=tuple(str(n) for n in names) if names else None,
        missing=tuple(str(m) for m in input_section.get("missing", []) or []),
        skip_rows=int(input_section.get("skip_rows", 0)),
    )


def profile(
    input_section: Mapping[str, Any], base_dir: Path, values_limit: int
) -> tuple[Any, dict[str, Any]]:
    """The :class:`~safeshare.workflows.profile.DataProfile` of the input (read in place by DuckDB)
    and each column's distinct values with their records (``{value: count}``, sorted by value) when
    there are at most ``values_limit`` (hierarchy previews and the wizard's record counts)."""
    from safeshare.data.engines.factory import make_engine
    from safeshare.workflows.profile import column_counts, profile_table

    src = source(input_section, base_dir)
    engine = make_engine("duckdb", src)
    try:
        data = profile_table(engine, src.missing)
        values = {c: column_counts(engine, c, values_limit) for c in engine.columns()}
    finally:
        engine.close()
    return data, values


def hierarchy_preview(
    spec: Mapping[str, Any] | str,
    base_dir: Path,
    values: Sequence[str],
    name: str,
    workdir: Path,
    missing: Sequence[str] = (),
) -> Any:
    """The :class:`~safeshare.hierarchy.hierarchy.Hierarchy` a configuration's ``hierarchy:`` entry
    (a file path or a builder mapping) gives for ``values``, the input's declared ``missing``
    values kept as they are (:mod:`safeshare.missing`), as a run builds it; every label checked
    true of its value. Its files are confined under ``workdir`` first."""
    from safeshare.hierarchy.builders import FileBuilder, builder_from_spec, with_data_missing

    confine_config({"attributes": {name: {"hierarchy": spec}}}, base_dir, workdir)

    if isinstance(spec, str):
        return FileBuilder(path=base_dir / spec).build(list(values), name=name)
    builder = builder_from_spec(dict(spec), base_dir, f"attributes.{name}.hierarchy")
    return with_data_missing(builder, missing).build(list(values), name=name)


def missing_tokens(text: str, blank: bool) -> list[str]:
    """The input's ``missing`` list from the workbench's field (comma-separated tokens) and its
    "Blank cells are missing values" box (:mod:`safeshare.missing`)."""
    from safeshare.missing import parse_missing, with_blank

    return list(with_blank(parse_missing(text), blank))


#: Labels of each level a preview shows, and the characters shown of each.
PREVIEW_LABELS = 40
PREVIEW_CHARS = 200


#: Values the value -> label table of a hierarchy's page shows (in the hierarchy's order).
MAPPING_ROWS = 200


def hierarchy_answer(
    spec: Mapping[str, Any] | str,
    base_dir: Path,
    values: Sequence[str] | None,
    name: str,
    workdir: Path,
    missing: Sequence[str] = (),
    counts: Mapping[str, int] | None = None,
) -> dict[str, Any] | None:
    """Check a hierarchy entry and describe it: its ``levels`` (``{level, count, labels}``, the
    first :data:`PREVIEW_LABELS` labels of each) and its ``mapping``, the value -> label table of
    the first :data:`MAPPING_ROWS` values (``[value, label at level 1, ...]``; issue 35: a person
    sees what each value becomes, as the dates builder's "2022-01-01 -> 2021" would have been
    seen), with ``values`` the number of values in all. With the column's ``counts`` (records per
    value, the profile's), ``records`` gives the records of each mapping row and each level's
    ``records`` those of its labels shown (the sum over the values under a label). Built for the
    column's ``values`` (:func:`hierarchy_preview`), or, when the values are not known, a file
    read whole (a builder cannot be checked without values: ``None``). Runs in a child process
    (:mod:`safeshare.ui.worker` ``--hierarchy``), never in the server: a large file is parsed
    where its memory and time block nothing."""
    from safeshare.hierarchy.builders import FileBuilder, builder_from_spec

    if values is not None:
        hierarchy = hierarchy_preview(spec, base_dir, values, name, workdir, missing)
    else:
        confine_config({"attributes": {name: {"hierarchy": spec}}}, base_dir, workdir)
        if isinstance(spec, str):
            hierarchy = FileBuilder(path=base_dir / spec).load()
        elif spec.get("type") == "file":
            builder = builder_from_spec(dict(spec), base_dir, f"attributes.{name}.hierarchy")
            hierarchy = cast("FileBuilder", builder).load()
        else:
            return None
    levels = [
        {
            "level": level,
            "count": len(labels),
            "labels": [label[:PREVIEW_CHARS] for label in labels[:PREVIEW_LABELS]],
        }
        for level, labels in ((lv, list(hierarchy.labels(lv))) for lv in range(hierarchy.height + 1))
    ]
    rows = hierarchy.rows
    mapping = [[cell[:PREVIEW_CHARS] for cell in row] for row in rows[:MAPPING_ROWS]]
    answer: dict[str, Any] = {"levels": levels, "mapping": mapping, "values": len(rows)}
    if counts is not None:  # the records of each value, and of each label at every level
        answer["records"] = [int(counts.get(row[0], 0)) for row in rows[:MAPPING_ROWS]]
        for entry in levels:
            per_label: dict[str, int] = {}
            for row in rows:
                label = row[entry["level"]]
                per_label[label] = per_label.get(label, 0) + int(counts.get(row[0], 0))
            shown = list(hierarchy.labels(entry["level"]))[:PREVIEW_LABELS]
            entry["records"] = [per_label.get(label, 0) for label in shown]
    return answer


# --------------------------------------------------------------------------- runs (child process)
def estimate(config: Path, workdir: Path, monitor: Monitor) -> Any:
    """The lattice size and the search's cost (:func:`~safeshare.workflows.estimate.search_estimate`)."""
    from safeshare.data.engines.factory import make_engine
    from safeshare.workflows.anonymizer import Anonymizer
    from safeshare.workflows.estimate import search_estimate

    cfg = check_config(config, workdir)
    anonymizer = Anonymizer(cfg.spec())
    with monitor.phase(f"reading {cfg.source.path.name}"):
        engine = make_engine(cfg.engine, cfg.source, cfg.spark, cfg.duckdb)
    try:
        with monitor.phase("building the frequency table"):
            return search_estimate(anonymizer, engine)
    finally:
        engine.close()


@dataclass
class Anonymized:
    """What :func:`anonymize` returns: report.json as written, the fitted search and the
    configured N (for the lattice view)."""

    report: dict[str, Any]
    fit: Any
    population_size: int | None


def anonymize(config: Path, out: Path, workdir: Path, monitor: Monitor) -> Anonymized:
    """``safeshare anonymize CONFIG --out OUT``: :func:`safeshare.api.anonymize` itself (search,
    write, verify, publish atomically), so the page's release is the command's, byte for byte.
    Every file the configuration names is confined under ``workdir`` first."""
    from safeshare.workflows.anonymize import anonymize as anonymize_use_case

    population_size = check_config(config, workdir).population_size
    release = anonymize_use_case(config, out, monitor=monitor)
    return Anonymized(report=release.report, fit=release.fit, population_size=population_size)


#: The certificate's keys the Risk screen shows beside report.json's risk section.
RISK_CERTIFICATE_KEYS = ("population", "sensitivity", "estimators", "risk_kind")


def risk_view(report: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The Risk screen's figures: report.json's ``risk`` section as published (input and release
    side by side, each with its ``drivers``; the input's ``estimators``) and the certificate's
    :data:`RISK_CERTIFICATE_KEYS` (N and its source, B at N/2, N and 2N, every estimator's B of
    the release with its caveat), plus the records and suppressed records of the release, the
    headline as a ``verdict`` and the class sizes as ``bins`` of prosecutor risk
    (:mod:`safeshare.workflows.risk_language`). One
    result, many views: nothing here is computed, so the screen equals the report, for every run
    kind (a locally recoded release's final records and B, an epsilon-safe release's exact risk,
    a person key's people). ``None`` when the run published no report with a risk section."""
    if not report or not isinstance(report.get("risk"), Mapping):
        return None
    found = report.get("certificate")
    certificate: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    from safeshare.workflows.risk_language import risk_bins, verdict

    histogram = report.get("class_size_histogram")
    return {
        "risk": dict(report["risk"]),
        "verdict": verdict(report),
        "bins": risk_bins(histogram if isinstance(histogram, list) else []),
        "certificate": {key: certificate.get(key) for key in RISK_CERTIFICATE_KEYS},
        "records_in": report.get("records_in"),
        "records_out": report.get("records_out"),
        "suppressed_records": report.get("suppressed_records"),
    }


# --------------------------------------------------------------------------- surveillance
#: The Surveillance screen's Monte Carlo runs: fewer than the paper's 1,000
#: (:data:`~safeshare.config.vocabulary.SURVEILLANCE_SIMULATIONS`) so that a screen answers in
#: seconds; the commands keep the paper's.
WORKBENCH_SIMULATIONS = 200


def surveillance_defaults() -> dict[str, int | float]:
    """The Surveillance screen's defaults: the vocabulary's (k, lag, threshold, quantile), seed 0
    and :data:`WORKBENCH_SIMULATIONS`; the form shows them and the handler reads an empty field
    as them."""
    return {
        "k": SMALL_CELL,
        "lag": SURVEILLANCE_LAG,
        "simulations": WORKBENCH_SIMULATIONS,
        "seed": 0,
        "threshold": SURVEILLANCE_THRESHOLD,
        "quantile": SURVEILLANCE_QUANTILE,
    }


def surveillance_simulate(settings: Mapping[str, Any], monitor: Monitor) -> dict[str, Any]:
    """``safeshare surveil simulate --compare`` and ``surveil search`` for one region of a population
    table and its case series (docs/surveillance.md), as one document: the PK_k band of each policy
    over the periods (all policies on the same draws), and the least coarse acceptable policy for
    each case volume. Both are :func:`safeshare.api.surveil_simulate` and
    :func:`safeshare.api.surveil_search` themselves, with the same validation (a volume of 0, a
    volume no region can hold, a bad k or lag: the command's one-line error).

    ``settings``: ``population`` and ``cases`` (CSV paths), ``layout`` (long or jhu), ``region``
    (default: the table's first), ``policies`` (codes), ``k``, ``lag``, ``simulations``, ``seed``,
    ``threshold``, ``quantile``, ``volumes``.
    """
    from safeshare.surveillance.inputs import read_case_series, read_jhu_series, read_population
    from safeshare.surveillance.policies import load_space
    from safeshare.workflows.surveil import surveil_search, surveil_simulate

    given = {**surveillance_defaults(), **{key: v for key, v in settings.items() if v is not None}}
    k, lag = int(given["k"]), int(given["lag"])
    sims, seed = int(given["simulations"]), int(given["seed"])
    threshold, quantile = float(given["threshold"]), float(given["quantile"])
    layout = settings.get("layout", "long")
    if layout not in ("long", "jhu"):
        raise InputError(f"layout: 'long' or 'jhu', got {layout!r}")
    population, cases = Path(settings["population"]), Path(settings["cases"])
    region = str(settings.get("region") or "")
    if not region:  # the table's first region
        region = next(iter(read_population(population, load_space(None)).regions))
    codes = list(settings.get("policies") or []) or ["1C*e"]
    with monitor.phase(f"forecasting PK{k} for {len(codes)} policies ({sims:,} simulations)"):
        simulation = surveil_simulate(
            population_table=population,
            region=region,
            cases=cases,
            policy=codes[0],
            k=k,
            lag=lag,
            simulations=sims,
            seed=seed,
            layout=layout,
            compare=codes[1:],
            plots=False,
        )
    frame = (
        simulation.bands if simulation.bands is not None else simulation.pk.assign(policy=simulation.policy)
    )
    bands = [
        {
            "policy": policy,
            "mean": [float(v) for v in group["mean"]],
            "lower": [float(v) for v in group["lower"]],
            "upper": [float(v) for v in group["upper"]],
        }
        for policy, group in frame.groupby("policy", sort=False)
    ]
    volumes = [int(v) for v in settings.get("volumes") or []]
    policies: list[dict[str, Any]] = []
    if volumes:
        with monitor.phase(f"searching policies for {len(volumes)} volumes"):
            search = surveil_search(
                population_table=population,
                regions=[region],
                volumes=volumes,
                k=k,
                threshold=threshold,
                quantile=quantile,
                simulations=sims,
                seed=seed,
                plots=False,
            )
        policies = [
            {key: row[key] for key in ("volume", "best", "acceptable", "checked")}
            for row in search.to_dict()["volumes"]
        ]
        for row in policies:
            row["policy"] = row.pop("best")
    every = (read_case_series if layout == "long" else read_jhu_series)(cases)
    if region not in every:
        raise InputError(f"region {region!r}: no case series in {cases.name}")
    series = every[region]
    return {
        "region": region,
        "k": k,
        "lag": lag,
        "simulations": sims,
        "seed": seed,
        "periods": [str(d) for d in series.dates],
        "cases": [int(c) for c in series.cases],
        "bands": bands,
        "policies": policies,
        "threshold": threshold,
        "quantile": quantile,
    }


__all__ = [
    "KEY_FILE",
    "SHOWN",
    "WIZARD_TYPES",
    "Anonymized",
    "Field",
    "LatticeView",
    "ModelForm",
    "Monitor",
    "NodeFigures",
    "WarningMark",
    "accept_warnings",
    "accepted_warnings",
    "algorithms",
    "anonymize",
    "apply_privacy_form",
    "builder_types",
    "check_config",
    "confine_config",
    "confine_config_file",
    "ensure_key",
    "estimate",
    "hierarchy_answer",
    "hierarchy_preview",
    "identifier_spec",
    "inside",
    "lattice_view",
    "measure_sentence",
    "metrics",
    "missing_tokens",
    "node_config",
    "node_detail",
    "posted_reason",
    "privacy_form",
    "privacy_notes",
    "profile",
    "risk_view",
    "roles",
    "run_warnings",
    "source",
    "surveillance_defaults",
    "surveillance_simulate",
    "utility_view",
    "warning_explanations",
    "wizard_fields",
    "wizard_form",
    "wizard_shows",
    "wizard_spec",
]
