"""Independent verification of a written release.

The release is re-read from disk and its privacy guarantees re-checked with
DuckDB SQL over the file itself: no frequency table, no evaluator, no lattice,
nothing shared with the code that chose the node. A release is published only
when every check passes (see :mod:`safeshare.workflows.release`).

Checks:

* the release has exactly the expected columns, derived from the
  *configuration's roles* applied to the input's header
  (:func:`allowed_release_columns`), never from the plan being checked: a
  column the configuration does not allow (identifying, text, unlisted
  without ``default_role: insensitive``, a renamed duplicate such as
  ``age.1``) fails the release;
* every quasi-identifier value is a label of its hierarchy at the chosen level;
* every equivalence class (``GROUP BY`` the quasi-identifiers) holds at least
  ``k`` records;

  (the file is scanned once for all of these: one ``GROUP BY`` of the quasi-identifiers
  into a temporary table of classes and sizes, from which the record count, the labels
  and the class sizes are read; at 5 million rows a scan per check was two thirds of
  the run; asked to keep the release's distinct rows, that scan groups every column and the
  classes are summed from them, which the disclosure check then reads instead of the file:
  ``keep_rows`` of :func:`verify_release`);
* the number of suppressed records, ``N_in - N_out``, is within the limit
  ``floor(max_suppression * N_in)``;
* privacy models over sensitive columns (l-diversity, t-closeness,
  m-concealing), the risk threshold, small-cell suppression and the surveillance releases'
  population-bin suppression and CDC-style rule set are re-checked by the functions listed in
  :data:`EXTRA_CHECKS` (:mod:`safeshare.verify.sensitive`, :mod:`safeshare.verify.m_concealing`,
  :mod:`safeshare.verify.risk`, :mod:`safeshare.verify.small_cells`,
  :mod:`safeshare.verify.population_bins`, :mod:`safeshare.verify.cdc_rules`): one
  explicit table, filled by no import side effect. A model without an entry is
  refused, never trusted;
* no value of any text column holds a terminal control character
  (:mod:`safeshare.verify.control`: refused, not escaped; a CSV release's bytes are scanned, a
  Parquet release's text columns counted in SQL);
* pseudonyms and shifted dates (:mod:`safeshare.verify.identifiers`), when the
  expectations carry them (:func:`with_identifiers`): recomputed from the key for every
  released record. Without them, a column with an identifier role is not allowed in the
  release at all (:func:`allowed_release_columns`), so such a release cannot pass unchecked;
* the truth of every label (:mod:`safeshare.verify.truth`), when the expectations carry the
  input's values (:attr:`Expectations.truth`): every released label is true of the value of the
  records it stands for, per distinct (value, label) pair, and every released class is a set of
  input records its labels are true of;
* with a person key (:attr:`Expectations.persons`, issue 32): every released class holds at
  least ``k`` distinct people, counted from the input's (QI tuple, person) tuples mapped by the
  configured hierarchies (:mod:`safeshare.verify.persons`), and on the file when it keeps the key;
* when a person's records are linkable in the release (:attr:`Expectations.links`): their
  profiles measured on the file, and with the profile model every profile shared by at least
  ``k`` people (:mod:`safeshare.verify.profiles`).
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from safeshare.numerics import suppression_limit
from safeshare.resources import duckdb_memory_limit
from safeshare.verify import control
from safeshare.verify.cdc_rules import check_cdc_rules
from safeshare.verify.csv_lines import distinct_rows
from safeshare.verify.file_scan import FileScan
from safeshare.verify.identifiers import IdentifierExpectations, check_identifiers
from safeshare.verify.m_concealing import check_m_concealing
from safeshare.verify.persons import PersonExpectations, check_persons
from safeshare.verify.population_bins import check_population_bins
from safeshare.verify.profiles import LinkExpectations, check_profile_anonymity, check_profiles
from safeshare.verify.risk import check_risk, risk_figures
from safeshare.verify.sensitive import check_l_diversity, check_t_closeness, t_closeness_figures
from safeshare.verify.small_cells import check_small_cells
from safeshare.verify.sql import ROW_RECORDS, quote, release_relation, too_long_a_line
from safeshare.verify.truth import TruthExpectations, check_truth

#: Roles whose columns appear in a release (generalized or unchanged); every other column is dropped.
RELEASED_ROLES = frozenset({"quasi", "sensitive", "insensitive"})

#: Roles whose columns are released transformed by a key: allowed only with their check.
IDENTIFIER_ROLES = frozenset({"pseudonym", "shifted_date"})


def allowed_release_columns(
    header: Sequence[str], roles: Mapping[str, str], default_role: str | None, identifiers: bool = False
) -> list[str]:
    """The release's columns, in input order, from the configuration alone.

    ``header``: the input's column names as read; ``roles``: column -> role
    name as configured; ``default_role``: the role of unlisted columns
    (``None``: they have none, hence are not allowed). Plain strings, so that
    this module depends on nothing of the search or of the release plan.
    ``identifiers``: whether ``pseudonym`` and ``shifted_date`` columns are allowed
    (only when the verifier re-checks them: :func:`with_identifiers`).
    """
    allowed = RELEASED_ROLES | IDENTIFIER_ROLES if identifiers else RELEASED_ROLES
    return [c for c in header if str(roles.get(c, default_role)) in allowed]


@dataclass
class Expectations:
    """What the release must satisfy, stated independently of the search."""

    columns: list[str]
    quasi_identifiers: list[str]
    allowed_labels: dict[str, set[str]]
    records_in: int
    max_suppression: float
    k: int = 1
    models: dict[str, dict[str, Any]] = field(default_factory=dict)
    delimiter: str = ","
    #: pseudonyms and shifted dates to recompute from the key (:mod:`safeshare.verify.identifiers`)
    identifiers: IdentifierExpectations | None = None
    #: the allowed labels are every level's (a locally recoded release: :func:`expectations_any_level`)
    any_level: bool = False
    #: the labels' truth against the input's values (:mod:`safeshare.verify.truth`; ``None``: not checked)
    truth: TruthExpectations | None = None
    #: the people of every class, with a person key (:mod:`safeshare.verify.persons`; ``None``: none)
    persons: PersonExpectations | None = None
    #: the columns linking a person's records in the release (:mod:`safeshare.verify.profiles`)
    links: LinkExpectations | None = None


@dataclass
class Verification:
    """The outcome of :func:`verify_release`."""

    passed: bool
    records_out: int
    suppressed_records: int
    min_class_size: int
    equivalence_classes: int
    failures: list[str]
    checks: dict[str, Any]
    #: every distinct value of each quasi-identifier in the file, in code point order (a null as
    #: ""), as the verifier read them from its one scan: the evidence's released labels, without
    #: a scan of its own (not in :meth:`to_dict`: report.json gives them in its evidence)
    labels: dict[str, list[str]] = field(default_factory=dict)
    #: the release's distinct rows, every column as read, with their records (column
    #: :data:`~safeshare.verify.sql.ROW_RECORDS`), from the same scan, when asked for and no more
    #: than asked (:func:`verify_release`'s ``keep_rows``), else ``None``: the disclosure
    #: check's input, without a scan of its own (not in :meth:`to_dict`)
    rows: pa.Table | None = None
    #: the SHA-256 (hex) of each file of the release, by its path, from the read of its bytes
    #: beside the verifier's SQL (:mod:`safeshare.verify.file_scan`): the evidence's digests,
    #: without a read of their own (not in :meth:`to_dict`)
    digests: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "passed": self.passed,
            "records_out": self.records_out,
            "suppressed_records": self.suppressed_records,
            "min_class_size": self.min_class_size,
            "equivalence_classes": self.equivalence_classes,
            "failures": self.failures,
            "checks": self.checks,
        }


#: Checks of further privacy models: name -> f(connection, relation SQL, QI column SQL, params)
#: returning a list of failure messages (empty when the model holds).
ExtraCheck = Callable[[duckdb.DuckDBPyConnection, str, str, Mapping[str, Any]], list[str]]

#: Every independent check of a privacy model beyond k-anonymity, in one explicit table: a new
#: criterion adds its SQL re-check here (and nowhere else).
EXTRA_CHECKS: dict[str, ExtraCheck] = {
    "l-diversity": check_l_diversity,
    "t-closeness": check_t_closeness,
    "m-concealing": check_m_concealing,
    "risk": check_risk,
    "small-cells": check_small_cells,
    "profile-anonymity": check_profile_anonymity,  # linked records (issue 32)
    "population-bins": check_population_bins,  # surveillance releases (issue 10)
    "cdc-rules": check_cdc_rules,  # surveillance releases under a CDC-style rule set (issue 37)
}


#: Models whose re-check has a figure worth reporting (the achieved value, recomputed on the file):
#: name -> f(connection, relation, QI SQL, params) -> ``{..., "value": float | None}``.
MODEL_FIGURES: dict[
    str, Callable[[duckdb.DuckDBPyConnection, str, str, Mapping[str, Any]], dict[str, Any]]
] = {
    "risk": risk_figures,
    "t-closeness": t_closeness_figures,
}


def judge_release(
    expected: Expectations,
    columns: Sequence[str],
    records_out: int,
    labels: Mapping[str, set[str]],
    min_size: int,
    failures: list[str],
    checks: dict[str, Any],
) -> int:
    """Judge what a verifier read from a written release; the suppressed record count.

    ``columns`` are the file's, ``records_out`` its record count, ``labels`` the distinct
    text of each quasi-identifier present and ``min_size`` the smallest class (the
    ``GROUP BY`` of those columns). Failures are appended to ``failures``. Every verifier
    (DuckDB here, Spark in :mod:`safeshare.verify.spark`) reads the file its own way and
    judges it here, against the same expectations.
    """
    checks["columns"] = list(columns)
    allowed = set(expected.columns)
    extra = [c for c in columns if c not in allowed]
    if extra:
        failures.append(f"release column {extra[0]!r} is not allowed by the configuration's roles")
    elif list(columns) != list(expected.columns):
        failures.append(f"release columns {list(columns)} differ from the expected {expected.columns}")
    qis = [q for q in expected.quasi_identifiers if q in columns]
    suppressed = expected.records_in - records_out
    limit = suppression_limit(expected.max_suppression, expected.records_in)
    checks["suppression_limit"] = limit
    if suppressed < 0:
        failures.append(f"the release has more records ({records_out}) than the input")
    elif suppressed > limit:
        failures.append(f"{suppressed} records suppressed, more than the limit {limit}")
    if len(qis) != len(expected.quasi_identifiers):
        failures.append("a quasi-identifier column is missing from the release")
    for qi in qis:
        bad = sorted(labels[qi] - expected.allowed_labels[qi])
        if bad:
            where = "any level of its hierarchy" if expected.any_level else "its chosen level"
            failures.append(f"column {qi!r} has value {bad[0]!r}, not a label of {where}")
    if records_out and qis and min_size < expected.k:
        failures.append(f"an equivalence class has {min_size} records, fewer than k = {expected.k}")
    return suppressed


def verify_release(path: Path, fmt: str, expected: Expectations, keep_rows: int = 0) -> Verification:
    """Re-read the release at ``path`` and check it against ``expected``. A CSV release with a
    line longer than the verifier reads fails, the line not shown
    (:func:`~safeshare.verify.sql.too_long_a_line`).

    ``keep_rows`` > 0: the one scan of the file groups every column, the classes are summed from
    those distinct rows, and they are returned (:attr:`Verification.rows`) when there are no more
    than ``keep_rows`` of them (that grouping may hold as many rows as records: it runs within
    the machine's DuckDB memory limit, :func:`safeshare.resources.duckdb_memory_limit`, as the
    disclosure check does, spilling to a private directory)."""
    with (
        tempfile.TemporaryDirectory(prefix="safeshare-verify-") as spill,
        FileScan(Path(path), control=fmt != "parquet") as scan,
    ):
        con = duckdb.connect(config={"threads": 2, "temp_directory": spill})
        try:
            verification = _verify(con, path, fmt, expected, keep_rows, scan)
            verification.digests = {str(p): d for p, d in scan.result().digests.items()}
            return verification
        except duckdb.InvalidInputException as error:
            failure = too_long_a_line(error)
            if failure is None:
                raise
            return Verification(
                passed=False,
                records_out=0,
                suppressed_records=0,
                min_class_size=0,
                equivalence_classes=0,
                failures=[failure],
                checks={},
            )
        finally:
            con.close()


def _verify(
    con: duckdb.DuckDBPyConnection,
    path: Path,
    fmt: str,
    expected: Expectations,
    keep_rows: int,
    scan: FileScan,
) -> Verification:
    """:func:`verify_release` on the open connection ``con``; ``scan``: the read of the file's
    bytes running beside it (its control-character test is taken from there)."""
    rel = release_relation(Path(path), fmt, expected.delimiter)
    failures: list[str] = []
    checks: dict[str, Any] = {}
    described = [(str(r[0]), str(r[1])) for r in con.execute(f"DESCRIBE SELECT * FROM {rel}").fetchall()]
    columns = [name for name, _ in described]
    qis = [q for q in expected.quasi_identifiers if q in columns]
    # One scan of the file: the equivalence classes (GROUP BY the QIs, as text) with their
    # sizes. Records, labels, class sizes and suppression are all read from this aggregate.
    labels: dict[str, set[str]] = {}
    min_size, n_classes = 0, 0
    rows: pa.Table | None = None
    if qis:
        aliases = [f"q{i}" for i in range(len(qis))]
        select = ", ".join(f"CAST({quote(q)} AS VARCHAR) AS {a}" for q, a in zip(qis, aliases, strict=True))
        by = ", ".join(str(i + 1) for i in range(len(qis)))
        source, count = rel, "COUNT(*)"
        con.execute(f"SET memory_limit = '{duckdb_memory_limit()}'")
        # an unquoted CSV release: its distinct rows from its distinct lines (verify/csv_lines.py)
        from_lines = fmt != "parquet" and distinct_rows(
            con, Path(path), expected.delimiter, columns, "release_rows", ROW_RECORDS
        )
        if not from_lines and keep_rows > 0 and ROW_RECORDS not in columns:
            every = ", ".join(quote(c) for c in columns)  # every column's distinct rows, then the classes
            con.execute(
                f"CREATE TEMP TABLE release_rows AS SELECT {every}, COUNT(*) AS {ROW_RECORDS} FROM {rel} "
                "GROUP BY ALL"
            )
        con.execute("RESET memory_limit")
        if from_lines or (keep_rows > 0 and ROW_RECORDS not in columns):
            source, count = "release_rows", f"CAST(SUM({ROW_RECORDS}) AS BIGINT)"
            (distinct,) = con.execute("SELECT COUNT(*) FROM release_rows").fetchall()[0]
            if keep_rows > 0 and int(distinct) <= keep_rows:
                rows = con.sql("SELECT * FROM release_rows").to_arrow_table()
        con.execute(
            f"CREATE TEMP TABLE release_classes AS SELECT {select}, {count} AS n FROM {source} GROUP BY {by}"
        )
        row = con.execute(
            "SELECT COALESCE(SUM(n), 0), COALESCE(MIN(n), 0), COUNT(*) FROM release_classes"
        ).fetchone()
        assert row is not None
        records_out, min_size, n_classes = int(row[0]), int(row[1]), int(row[2])
        for qi, alias in zip(qis, aliases, strict=True):
            labels[qi] = {
                "" if r[0] is None else str(r[0])
                for r in con.execute(f"SELECT DISTINCT {alias} FROM release_classes").fetchall()
            }
    else:
        records_out = int(con.execute(f"SELECT COUNT(*) FROM {rel}").fetchone()[0])  # type: ignore[index]
    suppressed = judge_release(expected, columns, records_out, labels, min_size, failures, checks)
    # no terminal control character in any value (verify/control.py: CSV bytes, Parquet SQL)
    holds = scan.result().holds_control
    failures.extend(control.control_failures(con, rel, fmt, control.text_columns(described), labels, holds))
    if expected.identifiers is not None:
        failures.extend(check_identifiers(con, rel, expected.identifiers, checks))
    if expected.truth is not None and records_out and qis:
        failures.extend(check_truth(con, qis, "release_classes", expected.truth, checks))
    if expected.persons is not None and records_out and qis:
        failures.extend(check_persons(con, rel, qis, "release_classes", expected.persons, checks))
    if expected.links is not None and expected.links.columns and records_out and qis:
        group = ", ".join(f"CAST({quote(q)} AS VARCHAR)" for q in qis)
        failures.extend(check_profiles(con, rel, group, expected.links, checks))
    if records_out and qis:
        group = ", ".join(f"CAST({quote(q)} AS VARCHAR)" for q in qis)
        for name, params in expected.models.items():
            check = EXTRA_CHECKS.get(name)
            if check is None:
                if name != "k-anonymity":
                    failures.append(f"no independent check for privacy model {name!r}")
                continue
            figures = MODEL_FIGURES.get(name)
            # scalar parameters only (a model's reference data, e.g. t-closeness', stays out)
            scalars = {
                k: v for k, v in params.items() if v is None or isinstance(v, bool | int | float | str)
            }
            record: dict[str, Any] = {"params": scalars}
            if figures is not None:  # the re-checked figure itself (the report shows it)
                doc = figures(con, rel, group, params)
                found, record["value"] = list(doc["failures"]), doc.get("value")
            else:
                found = check(con, rel, group, params)
            failures.extend(found)
            checks.setdefault("models", {})[name] = {**record, "passed": not found}
    return Verification(
        passed=not failures,
        records_out=records_out,
        suppressed_records=suppressed,
        min_class_size=min_size,
        equivalence_classes=n_classes,
        failures=failures,
        checks=checks,
        labels={qi: sorted(values) for qi, values in labels.items()},
        rows=rows,
    )


def expectations_for(
    columns: Sequence[str],
    quasi_identifiers: Sequence[str],
    hierarchy_rows: Mapping[str, Sequence[Sequence[str]]],
    levels: Mapping[str, int],
    records_in: int,
    max_suppression: float,
    models: Mapping[str, Mapping[str, Any]],
    delimiter: str = ",",
) -> Expectations:
    """Build :class:`Expectations` from plain data (hierarchy rows, levels, model parameters)."""
    allowed = {qi: {str(row[levels[qi]]) for row in hierarchy_rows[qi]} for qi in quasi_identifiers}
    k = int(models.get("k-anonymity", {}).get("k", 1))
    return Expectations(
        columns=list(columns),
        quasi_identifiers=list(quasi_identifiers),
        allowed_labels=allowed,
        records_in=records_in,
        max_suppression=max_suppression,
        k=k,
        models={name: dict(p) for name, p in models.items()},
        delimiter=delimiter,
    )


def expectations_any_level(
    columns: Sequence[str],
    quasi_identifiers: Sequence[str],
    hierarchy_rows: Mapping[str, Sequence[Sequence[str]]],
    records_in: int,
    max_suppression: float,
    models: Mapping[str, Mapping[str, Any]],
    delimiter: str = ",",
) -> Expectations:
    """:class:`Expectations` of a release that mixes generalization levels per record (local
    recoding, :mod:`safeshare.workflows.local_recoding`).

    Every QI value must be a label of the QI's configured hierarchy at *some* level (the
    labels come from the hierarchies, never from the plan that chose the levels); the classes
    are the records with identical released values, as for any release, so k-anonymity and
    every model of :data:`EXTRA_CHECKS` are re-checked on them by :func:`verify_release`
    unchanged, and so is the suppression limit over the whole input.
    """
    allowed = {qi: {str(label) for row in hierarchy_rows[qi] for label in row} for qi in quasi_identifiers}
    k = int(models.get("k-anonymity", {}).get("k", 1))
    return Expectations(
        columns=list(columns),
        quasi_identifiers=list(quasi_identifiers),
        allowed_labels=allowed,
        records_in=records_in,
        max_suppression=max_suppression,
        k=k,
        models={name: dict(p) for name, p in models.items()},
        delimiter=delimiter,
        any_level=True,
    )


def with_identifiers(
    expected: Expectations,
    header: Sequence[str],
    roles: Mapping[str, str],
    default_role: str | None,
    identifiers: IdentifierExpectations | None,
) -> Expectations:
    """``expected`` with its pseudonym and shifted-date columns allowed and re-checked.

    The columns are recomputed from the configuration's roles with the identifier roles
    allowed, and ``identifiers`` (built from the configuration and the key:
    :meth:`IdentifierExpectations.from_schema`) is attached; ``None`` leaves ``expected``
    as it is (no identifier column is then allowed in the release).
    """
    if identifiers is None:
        return expected
    columns = allowed_release_columns(header, roles, default_role, identifiers=True)
    treated = {c for c in header if str(roles.get(c, default_role)) in IDENTIFIER_ROLES}
    if treated != set(identifiers.columns):
        missing = sorted(treated ^ set(identifiers.columns))
        raise ValueError(f"the identifier checks and the roles disagree on column {missing[0]!r}")
    return replace(expected, columns=columns, identifiers=identifiers)
