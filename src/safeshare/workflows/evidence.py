"""The evidence a privacy officer signs: what a release assumes, guarantees and consists of.

:func:`build_evidence` gathers, from explicit parameters, one plain typed structure
(:class:`Evidence`) that the report renders (HTML, JSON) and the ledger can record:

* the **attack models** in plain words (:class:`AttackModel`): the prosecutor, who knows
  that a person is in the release and that person's quasi-identifiers; the journalist, who
  knows a person's quasi-identifiers from a population register but not whether the person
  is in the release; the marketer, who matches the whole release against such a register.
  For each, how success is measured and what this release guarantees against it, with its
  figure;
* the **threshold** with its source (:class:`Threshold`): 0.09 is the figure of the
  European Medicines Agency (Policy 0070 and its external guidance) and Health Canada (Public
  Release of Clinical Information) for public release, and the one data custodians commonly
  use (Jiang et al., PLoS ONE 17(6):e0269097, 2022, refs. 42-49); any other value is the
  custodian's, with the reason they give (``threshold_reason``);
* the **quasi-identifier inventory**: each QI with the hierarchy used, the chosen level and
  the labels the release holds, in full;
* what the **verifier re-checked** on the written file, each check by name with its
  requirement (:class:`VerifierCheck`);
* the **SHA-256** of the configuration and every released file (:class:`FileDigest`; paths
  relative to ``base``, never absolute). The input file(s) and the hierarchy files are named
  but their SHA-256 and size are **not published** (:data:`UNPUBLISHED_DIGESTS`, issue 30):
  with every other byte of the input known (a recipient holds the released records), its
  hash let a suppressed record's diagnosis be found by hashing each candidate, and a
  hierarchy built from the data (``hierarchy build DATA``) lists every value, also those only
  suppressed records carry. Their digests are in the custodian's ledger
  (:mod:`safeshare.workflows.ledger`), which ties the signed report to its input;
* the software version, the engine, the seeds that were given, and the identifier columns
  when identifiers were pseudonymized or dates shifted (never the key or its fingerprint).

Everything is a parameter (no dependency on the run's result object), so that the report,
the ledger or a script can build it from what they hold.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import duckdb

from safeshare.figures import compared, number, percent
from safeshare.io import files_of, sha256_file
from safeshare.paths import shown_path
from safeshare.verify import Expectations, Verification
from safeshare.verify.sql import quote, release_relation

#: The public-release threshold of EMA Policy 0070 and Health Canada (on the re-identification
#: probability; a smallest class of 11 records gives 1/11 = 0.0909).
PUBLIC_RELEASE_THRESHOLD = 0.09

PUBLIC_RELEASE_SOURCE = (
    "0.09 is the threshold for the public release of clinical data used by the European Medicines "
    "Agency (Policy 0070 and its external guidance, v1.4, 2018) and Health Canada (Guidance document on "
    "Public Release of Clinical Information, 2019), and the one data custodians commonly use "
    "(Jiang et al., PLoS ONE 17(6):e0269097, 2022, refs. 42-49)"
)


@dataclass(frozen=True)
class AttackModel:
    """One adversary: what they know, how their success is measured, what the release bounds."""

    name: str
    adversary: str
    measure: str
    guarantee: str
    value: float | None = None
    bounded: bool = False


@dataclass(frozen=True)
class Threshold:
    """The risk threshold of the release and where it comes from."""

    value: float
    measure: str
    source: str
    reason: str | None = None
    public_release_figure: bool = False


@dataclass(frozen=True)
class QuasiIdentifierEvidence:
    """One quasi-identifier: its hierarchy, the chosen level, and every released label.

    ``records_per_level``: for a locally recoded release, the released records at each level
    (``level`` is then the global node's, at which most records are); empty for a release at
    one node, where every record is at ``level``."""

    name: str
    hierarchy: str
    level: int
    height: int
    labels: tuple[str, ...]
    records_per_level: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class VerifierCheck:
    """One check the independent verifier ran on the written release."""

    name: str
    requirement: str
    passed: bool


#: Roles of files whose SHA-256 and size a published report leaves out (see the module docstring):
#: their bytes depend on records that were not released. The ledger records them.
UNPUBLISHED_DIGESTS = ("input", "hierarchy")


@dataclass(frozen=True)
class FileDigest:
    """A file of the release's evidence: its role, path (relative), SHA-256 and size; ``None``
    for a file whose digest is not published (:data:`UNPUBLISHED_DIGESTS`)."""

    role: str
    path: str
    sha256: str | None
    bytes: int | None

    @classmethod
    def of(cls, role: str, path: Path, shown: str, sha256: str | None = None) -> FileDigest:
        """The digest of the file at ``path``, named ``shown``; only the name for an unpublished
        role. ``sha256``: the file's digest when its bytes were read already (the verifier's
        read of the release, :mod:`safeshare.verify.file_scan`), else the file is read here."""
        if role in UNPUBLISHED_DIGESTS:
            return cls(role, shown, None, None)
        return cls(role, shown, sha256 or sha256_file(path), path.stat().st_size)


@dataclass(frozen=True)
class Evidence:
    """The evidence section of a release (see the module docstring)."""

    attack_models: tuple[AttackModel, ...]
    threshold: Threshold | None
    quasi_identifiers: tuple[QuasiIdentifierEvidence, ...]
    verifier_checks: tuple[VerifierCheck, ...]
    verified: bool
    files: tuple[FileDigest, ...]
    software_version: str
    engine: str
    seeds: Mapping[str, int | None] = field(default_factory=dict)
    identifiers: Mapping[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data (the report's ``evidence`` section): lists, not tuples, so that
        the :class:`~safeshare.workflows.result.Release`'s report equals report.json read back."""
        return cast(dict[str, Any], _plain(dataclasses.asdict(self)))


def _plain(value: Any) -> Any:
    """``value`` with every tuple a list, in mappings and lists alike (what JSON reads back)."""
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return value


# ------------------------------------------------------------------ helpers for callers
def describe_hierarchy(spec: Any, base: Path | None = None) -> str:
    """A hierarchy or builder in words: a file by its path (relative to ``base``), a builder by
    its type and parameters, a table by its size."""
    path = getattr(spec, "path", None)
    if getattr(spec, "type_name", None) == "file" and path is not None:
        return f"file {_relative(Path(path), base)}"
    rows = getattr(spec, "rows", None)
    if rows is not None and not dataclasses.is_dataclass(spec):
        return f"table of {len(rows)} values, {getattr(spec, 'height', '?')} levels above them"
    if dataclasses.is_dataclass(spec):
        params = []
        for f in dataclasses.fields(spec):
            if not f.init:
                continue
            value = getattr(spec, f.name)
            shown = ", ".join(map(str, value)) if isinstance(value, list | tuple) else str(value)
            params.append(f"{f.name}: {shown}")
        return f"{getattr(spec, 'type_name', type(spec).__name__)} ({'; '.join(params)})"
    return type(spec).__name__


def hierarchy_files(specs: Mapping[str, Any]) -> list[Path]:
    """The files of the hierarchies read from files (``FileBuilder``), for their SHA-256."""
    out = []
    for spec in specs.values():
        if getattr(spec, "type_name", None) == "file" and getattr(spec, "path", None) is not None:
            out.append(Path(spec.path))
    return list(dict.fromkeys(out))


def released_labels(
    release: Path, fmt: str, columns: Sequence[str], delimiter: str = ","
) -> dict[str, list[str]]:
    """Every distinct value of each of ``columns`` in the written release, in code point order
    (DuckDB SQL over the file: only what was released). One scan of the release: its distinct
    tuples of ``columns`` (at most its classes), then each column's values among those."""
    rel = release_relation(Path(release), fmt, delimiter)
    columns = list(dict.fromkeys(columns))
    if not columns:
        return {}
    names = [quote(column) for column in columns]
    con = duckdb.connect()
    try:
        text = ", ".join(f"COALESCE(CAST({q} AS VARCHAR), '') AS {q}" for q in names)
        con.execute(
            f"CREATE TEMP TABLE labels AS SELECT {text} FROM (SELECT DISTINCT {', '.join(names)} FROM {rel})"
        )
        out = {}
        for column, q in zip(columns, names, strict=True):
            rows = con.execute(f"SELECT DISTINCT {q} FROM labels").fetchall()
            out[column] = sorted(str(r[0]) for r in rows)
        return out
    finally:
        con.close()


def _relative(path: Path, base: Path | None) -> str:
    """A file as the evidence names it: inside the configuration's folder by its relative path,
    else by its name (:func:`safeshare.paths.shown_path`)."""
    return shown_path(path, base)


# ------------------------------------------------------------------ the informed adversary
def informed_knowledge(informed: Mapping[str, Any]) -> str:
    """What the informed adversary knows beyond the quasi-identifiers, in words."""
    known = [
        f"the true {d['column']} (released within {d['max_days']} days of it)"
        for d in informed.get("dates", [])
    ]
    known += [f"{p['column']} (a coarse pseudonym)" for p in informed.get("coarse_pseudonyms", [])]
    return " and ".join(known)


def informed_figures(informed: Mapping[str, Any]) -> str:
    """The informed adversary's figures in words: records singled out, and the fewest candidates."""
    records = int(informed.get("records") or 0)
    singled = int(informed.get("singled_out") or 0)
    fewest = int(informed.get("smallest_candidates") or 0)
    share = f" ({percent(singled / records)})" if records else ""
    text = f"up to {singled:,} of {records:,} released records{share} can be singled out"
    if informed.get("dates"):
        expected = float(informed["singled_out_expected"])
        text += f" (on average over the true dates the release allows, {number(expected)})"
    if not singled:
        text = "no record can be singled out"
    if fewest >= 2:
        text += f"; no record's prosecutor risk exceeds 1/{fewest} = {number(1 / fewest)} against them"
    below = informed.get("below_k")
    if below and informed.get("k"):
        text += f"; {int(below):,} records keep fewer than {int(informed['k'])} candidates"
    return text


# ------------------------------------------------------------------ the builder
def build_evidence(
    *,
    expected: Expectations,
    verification: Verification,
    hierarchies: Mapping[str, str],
    heights: Mapping[str, int],
    levels: Mapping[str, int],
    labels: Mapping[str, Sequence[str]],
    files: Mapping[str, Sequence[Path]],
    version: str,
    engine: str,
    records_per_level: Mapping[str, Mapping[int, int]] | None = None,
    base: Path | None = None,
    population_size: int | None = None,
    risk_estimate: float | None = None,
    threshold_reason: str | None = None,
    seeds: Mapping[str, int | None] | None = None,
    identifiers: Mapping[str, Any] | None = None,
    informed: Mapping[str, Any] | None = None,
) -> Evidence:
    """The evidence of a verified release.

    ``expected`` and ``verification``: what the verifier was told (from the configuration)
    and found; ``hierarchies``: QI -> the hierarchy in words (:func:`describe_hierarchy`);
    ``heights``/``levels``: QI -> hierarchy height and chosen level; ``records_per_level``: QI ->
    level -> released records, for a locally recoded release; ``labels``: QI -> the
    released labels (:func:`released_labels`); ``files``: role (``input``, ``config``,
    ``hierarchy``, ``release``, ``report``) -> paths, hashed here (named only, for the roles of
    :data:`UNPUBLISHED_DIGESTS`); ``population_size``: N
    assumed by the risk figures (``None``: the input is the population); ``risk_estimate``:
    the release's estimated B (or the configured measure) when computed;
    ``threshold_reason``: the custodian's reason for the threshold; ``seeds``: the seeds
    given; ``identifiers``: the identifier treatment (``IdentifierTreatment.describe()``:
    columns and their parameters, never the key or its fingerprint); ``informed``: the informed
    adversary's figures (:class:`~safeshare.verify.informed.InformedAdversary`), who also knows the
    kept shifted dates and the coarse pseudonyms: a fourth attack model, and the prosecutor's
    per-record bound qualified where it fails against them.
    """
    qis = list(expected.quasi_identifiers)
    risk = expected.models.get("risk")
    k = int(expected.k)
    return Evidence(
        attack_models=_attack_models(verification, qis, risk, k, population_size, risk_estimate, informed),
        threshold=threshold_of(risk, k, threshold_reason),
        quasi_identifiers=tuple(
            QuasiIdentifierEvidence(
                q,
                hierarchies.get(q, "?"),
                int(levels[q]),
                int(heights[q]),
                tuple(labels.get(q, ())),
                {str(lv): int(n) for lv, n in sorted((records_per_level or {}).get(q, {}).items())},
            )
            for q in qis
        ),
        verifier_checks=_checks(expected, verification),
        verified=verification.passed,
        files=tuple(
            FileDigest.of(role, path, _relative(path, base))
            for role, paths in files.items()
            for given in paths
            for path in files_of(Path(given))
        ),
        software_version=version,
        engine=engine,
        seeds=dict(seeds or {}),
        identifiers=dict(identifiers) if identifiers is not None else None,
    )


def _attack_models(
    verification: Verification,
    qis: Sequence[str],
    risk: Mapping[str, Any] | None,
    k: int,
    population_size: int | None,
    risk_estimate: float | None,
    informed: Mapping[str, Any] | None = None,
) -> tuple[AttackModel, ...]:
    known = ", ".join(qis)
    smallest, n_out, classes = (
        verification.min_class_size,
        verification.records_out,
        verification.equivalence_classes,
    )
    # issue 32: with a person key the verifier counted the people of every class on the file; a
    # class of 6 records of 5 people gives each of them 1/5, so the bound and its figure are in people
    persons = (getattr(verification, "checks", None) or {}).get("persons")
    in_people = isinstance(persons, Mapping) and persons.get("min_class_people") is not None
    fewest = int(persons["min_class_people"]) if in_people and isinstance(persons, Mapping) else smallest
    unit, whose = ("people", "person's") if in_people else ("records", "record's")
    worst = 1 / fewest if fewest else None
    register = f"a population register of N = {population_size:,}" if population_size else "the input itself"
    average = ""
    if risk is not None:
        threshold = float(risk["threshold"])
        shown, limit = (
            compared(risk_estimate, threshold) if risk_estimate is not None else ("", number(threshold))
        )
        estimate = f"; this release: {shown}" if risk_estimate is not None else ""
        average = (
            f"{risk.get('measure', 'B')} <= {limit} "
            f"({risk.get('estimator') or 'exact'}, N = {risk.get('population_size')}{estimate})"
        )

    holds = informed is None or bool(informed.get("bound_holds"))
    if k >= 2:
        prosecutor_bound = (
            f"every released class holds at least k = {k} {unit}, so no {whose} risk exceeds "
            f"1/{k} = {number(1 / k)}; the smallest released class holds {fewest} {unit}"
        )
        if not holds:
            prosecutor_bound += " (for this adversary only: not for the informed prosecutor, below)"
    elif smallest:
        prosecutor_bound = (
            f"not bounded for each {'person' if in_people else 'record'} (no k-anonymity): the smallest "
            f"released class holds {fewest} {unit if in_people else 'record(s)'}, so some {whose} risk is "
            f"{number(1 / fewest)}; the threshold bounds an average"
        )
    else:
        prosecutor_bound = "the release holds no record"
    prosecutor = AttackModel(
        "prosecutor",
        f"knows that a given person is in the release, and knows that person's {known}",
        "the chance of picking out the person's records: 1 / the people of the person's released class"
        if in_people
        else "the chance of picking out the person's record: 1 / the size of the person's released class",
        prosecutor_bound,
        worst,
        k >= 2,
    )

    if average:
        journalist_bound = f"the average over the released records is bounded: {average}"
    elif k >= 2:
        journalist_bound = (
            f"at most 1/{k}: a person's class in the population is at least their released class"
        )
        if not holds:
            journalist_bound += (
                " (for this adversary only: not for one who also knows the informed prosecutor's)"
            )
    else:
        journalist_bound = "not bounded by the configured models"
    journalist = AttackModel(
        "journalist",
        f"knows a person's {known} from {register}, but not whether the person is in the release",
        "the chance that a released record matching the person is theirs: 1 / the size of the person's "
        "class in the population; averaged over the released records, this is B",
        journalist_bound,
        risk_estimate if average else (1 / k if k >= 2 else None),
        bool(average) or k >= 2,
    )

    share = classes / n_out if n_out and population_size is None else None
    if average:
        marketer_bound = f"bounded by the threshold: {average}"
    else:
        marketer_bound = (
            f"not bounded by a threshold; {classes:,} classes over {n_out:,} released records"
            + (f" = {number(share)}" if share is not None else "")
        )
    marketer = AttackModel(
        "marketer",
        f"matches every released record at once against {register}, which holds the {known}",
        "the expected share of released records re-identified: (1/n) x the sum over classes of f/F, "
        "which is B; J/n (classes over records) when the input is the population",
        marketer_bound,
        risk_estimate if average else share,
        bool(average),
    )
    if informed is None:
        return prosecutor, journalist, marketer
    fewest = int(informed.get("smallest_candidates") or 0)
    if holds:
        guarantee = (
            f"every record keeps at least {fewest} candidates whatever the shifts, so the bound 1/{k} holds "
            "against this adversary too"
        )
    elif k >= 2:
        guarantee = f"not bounded at 1/{k}: {informed_figures(informed)}"
    else:
        guarantee = f"not bounded per record: {informed_figures(informed)}"
    informed_prosecutor = AttackModel(
        "informed prosecutor",
        f"knows that a given person is in the release, that person's {known}, "
        f"and {informed_knowledge(informed)}",
        "the chance of picking out the person's record: 1 / the number of released records of the person's "
        "class whose dates are within max_days of the person's true dates (with the same intervals between "
        "them), for the most unfavourable true dates the release allows",
        guarantee,
        1 / fewest if fewest else None,
        holds and k >= 2,
    )
    return prosecutor, journalist, marketer, informed_prosecutor


def threshold_of(risk: Mapping[str, Any] | None, k: int, reason: str | None) -> Threshold | None:
    """The threshold of a release and its source: the risk model's, else 1/k (k >= 2), else ``None``."""
    reason = reason.strip() if isinstance(reason, str) and reason.strip() else None
    if risk is not None:
        value, measure = (
            float(risk["threshold"]),
            f"{risk.get('measure', 'B')} (average re-identification risk)",
        )
    elif k >= 2:
        value, measure = 1 / k, f"maximum prosecutor risk 1/k, k = {k}"
    else:
        return None
    public = math.isclose(value, PUBLIC_RELEASE_THRESHOLD, rel_tol=0, abs_tol=1e-12)
    if public:
        source = PUBLIC_RELEASE_SOURCE
    elif reason:
        source = "chosen by the custodian"
    else:
        source = "chosen by the custodian, who gave no reason (threshold_reason)"
    if not public and risk is None:
        source += f"; for comparison, {PUBLIC_RELEASE_SOURCE} (a maximum risk of 0.09 needs k >= 12)"
    return Threshold(value, measure, source, reason, public)


def _params(params: Mapping[str, Any]) -> str:
    """The scalar and short-list parameters of a model, in words (reference data left out)."""
    shown = []
    for key, value in params.items():
        if isinstance(value, bool | int | float | str):
            shown.append(f"{key} = {value}")
        elif isinstance(value, list | tuple) and len(value) <= 10 and all(isinstance(v, str) for v in value):
            shown.append(f"{key} = {', '.join(value)}")
    return "; ".join(shown)


def _checks(expected: Expectations, verification: Verification) -> tuple[VerifierCheck, ...]:
    failures = list(verification.failures)

    def held(*prefixes: str) -> bool:
        return not any(f.startswith(prefixes) for f in failures)

    qis = ", ".join(expected.quasi_identifiers)
    limit = verification.checks.get("suppression_limit")
    out = [
        VerifierCheck(
            "columns",
            "the release has exactly the columns the configuration's roles allow: "
            + ", ".join(expected.columns),
            held("release column"),
        ),
        VerifierCheck(
            "labels",
            f"every value of {qis} is a label of its hierarchy at the chosen level",
            held("column ", "a quasi-identifier column"),
        ),
        VerifierCheck(
            "k-anonymity",
            f"every equivalence class ({qis}) holds at least k = {expected.k} records",
            held("an equivalence class"),
        ),
        VerifierCheck(
            "suppression",
            f"at most {limit} of the {expected.records_in:,} input records suppressed "
            f"(max_suppression {number(expected.max_suppression, 6)})",
            held("the release has more records") and not any("suppressed, more than" in f for f in failures),
        ),
    ]
    for name, params in expected.models.items():
        if name == "k-anonymity":
            continue
        out.append(VerifierCheck(name, _params(params) or name, held(f"{name}:", "no independent check")))
    persons = expected.persons
    if persons is not None:  # issue 32: k counted in people
        on_file = ", and on the file by the released key" if persons.released else ""
        out.append(
            VerifierCheck(
                "people",
                f"every released class holds at least k = {persons.k} distinct people ({persons.column}), "
                f"counted from the input's records mapped by the configured hierarchies{on_file}",
                held("people:"),
            )
        )
    links = expected.links
    if links is not None and links.columns:
        out.append(
            VerifierCheck(
                "linked records",
                f"the profiles of the people linked by {', '.join(links.columns)} measured on the file "
                f"(people whose profile fewer than {links.k} people share); a measure, not a check",
                True,
            )
        )
    ids = expected.identifiers
    if ids is not None:
        pseudo = ", ".join(c.column for c in ids.pseudonyms) or "none"
        shifted = ", ".join(c.column for c in ids.shifted_dates) or "none"
        out.append(
            VerifierCheck(
                "identifiers",
                f"pseudonyms ({pseudo}) and shifted dates ({shifted}) recomputed from the key for every "
                "released record; no raw identifier released",
                held("identifiers:"),
            )
        )
    return tuple(out)
