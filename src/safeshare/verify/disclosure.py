"""Disclosure warnings that look beyond the configured privacy model (issue 20).

A release can satisfy its model and still disclose: k-anonymity bounds what an adversary
learns from the quasi-identifiers the configuration names, not from the columns it keeps
as they are, nor about the sensitive values of a class. These checks read the **written
release** (DuckDB SQL over the file, as :mod:`safeshare.verify` does), hence only released
records, and return structured warnings ``{code, columns, value, message}``. They never
fail a release: they tell the custodian what to look at before publishing.

The codes are :class:`safeshare.warning_codes.WarningCode`'s (one spelling, kebab-case):

* ``kept-column-identifying``: a kept column (insensitive or sensitive) whose values,
  alone or with the released quasi-identifiers, single out more than 5 % of the released
  records. Measured as the records unique on ``(QIs, column)`` that are not already unique
  on the QIs alone (so a risk-only release with unique classes does not flag every
  column), over the released records; the message also gives the share unique on the
  column alone. An adversary who knows such a column (a follow-up time, a lab value, a
  count) re-identifies those records whatever the QIs' generalization: make it a
  quasi-identifier with a hierarchy, or drop it.
* ``homogeneous-classes``: per sensitive column, the released classes (``GROUP BY`` the
  QIs) in which every record has the same value, missing values aside: knowing a person's
  QIs then reveals that value (attribute disclosure; Machanavajjhala et al.'s
  homogeneity attack, which l-diversity prevents). ``value``: the share of released
  records in such classes. Reported whether or not l-diversity was configured; the message
  names the commonest such values with their share of all released records, since
  learning a value that 90 % of people have tells an adversary less than learning a rare one.
* ``singleton-classes``: released classes of a single record. Only a release without
  k-anonymity (a risk-only release: ``risk: {threshold: ...}`` bounds an average) can hold
  them; each such record's prosecutor risk is 1. ``value``: the share of released records
  in them.
* ``coarse-pseudonym``: a pseudonym column with fewer distinct released values than
  ``2 sqrt(n)`` (:mod:`safeshare.data.identifiers.coarse`): a pseudonym of ``zip`` with 4
  codes is the column itself (issue 30). It is then also checked as a kept column, and the
  informed adversary knows it. ``value``: its distinct values over the released records.
* ``shifted-date-identifying`` (with kept shifted dates) or ``coarse-pseudonym-identifying``
  (with coarse pseudonyms only): the **informed adversary** of :mod:`safeshare.verify.informed`,
  who knows the QIs, the coarse pseudonyms and each kept shifted date within ``max_days`` of
  the released one, leaves some records fewer than k candidates (or, without k, singles some
  out). ``value``: the share of released records with fewer than k candidates (without k:
  singled out), whatever the shifts. The message gives the records singled out, on average
  over the true dates the release allows too. :func:`disclosure_check` also returns the
  adversary's figures, from which the headline and the evidence state a per-record bound only
  where it holds against this adversary.

Bounded: one ``GROUP BY`` of the release on the columns read (run by DuckDB with a memory
limit, spilling to a private temporary directory) gives its distinct rows with their counts;
every figure is then a sum of counts over those rows, so the cost is one scan of the release
whatever its size (10 million released Adult records: 29,096 distinct rows). In a publication
that scan is the verifier's: it groups every column of the file and hands on the distinct rows
when there are few enough (:attr:`safeshare.verify.Verification.rows`), and the check sums them
instead of reading the file again (a 1 GB CSV release: one scan of it, about 2 s, saved).
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from safeshare.resources import duckdb_memory_limit
from safeshare.verify.informed import (
    InformedAdversary,
    KeptShiftedDate,
    coarse_pseudonyms,
    informed_adversary,
)
from safeshare.verify.sql import ROW_RECORDS, literal, quote, release_relation
from safeshare.warning_codes import WarningCode, warning_code

#: ``kept-column-identifying`` fires above this share of released records made unique.
UNIQUE_SHARE = 0.05

#: The largest number of example values a ``homogeneous-classes`` message names.
EXAMPLES = 3


@dataclass(frozen=True)
class DisclosureWarning:
    """One warning: a code, the columns concerned, its figure (a share of released records)
    and one sentence for the custodian."""

    code: str
    columns: tuple[str, ...]
    value: float
    message: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "code", warning_code(self.code))

    def to_dict(self) -> dict[str, Any]:
        return {
            "code": str(self.code),
            "columns": list(self.columns),
            "value": self.value,
            "message": self.message,
        }


@dataclass(frozen=True)
class Disclosure:
    """The outcome of :func:`disclosure_check`: the warnings, and the informed adversary's
    figures when the release has kept shifted dates or coarse pseudonyms (else ``None``)."""

    warnings: list[DisclosureWarning]
    adversary: InformedAdversary | None = None
    #: value -> released records of each kept column with at most ``value_counts`` distinct
    #: released values (the text as the warnings read it, a missing value as ``""``), from the
    #: same scan of the release: the before / after's *after*, without a scan of its own
    counts: dict[str, dict[str, int]] = field(default_factory=dict)


def _share(part: int, whole: int) -> str:
    return f"{part:,} of {whole:,} released records ({part / whole:.1%})"


def disclosure_warnings(
    release: Path,
    fmt: str,
    quasi_identifiers: Sequence[str],
    kept_columns: Sequence[str] = (),
    sensitive_columns: Sequence[str] = (),
    delimiter: str = ",",
    missing: Sequence[str] = (),
    unique_share: float = UNIQUE_SHARE,
    memory_limit: str | None = None,
    shifted_dates: Sequence[KeptShiftedDate] = (),
    pseudonyms: Sequence[str] = (),
    k: int | None = None,
) -> list[DisclosureWarning]:
    """The disclosure warnings of the release at ``release`` (:func:`disclosure_check`'s)."""
    return disclosure_check(
        release,
        fmt,
        quasi_identifiers,
        kept_columns,
        sensitive_columns,
        delimiter,
        missing,
        unique_share,
        memory_limit,
        shifted_dates,
        pseudonyms,
        k,
    ).warnings


def disclosure_check(
    release: Path,
    fmt: str,
    quasi_identifiers: Sequence[str],
    kept_columns: Sequence[str] = (),
    sensitive_columns: Sequence[str] = (),
    delimiter: str = ",",
    missing: Sequence[str] = (),
    unique_share: float = UNIQUE_SHARE,
    memory_limit: str | None = None,
    shifted_dates: Sequence[KeptShiftedDate] = (),
    pseudonyms: Sequence[str] = (),
    k: int | None = None,
    value_counts: int = 0,
    rows: pa.Table | None = None,
) -> Disclosure:
    """The disclosure warnings of the release at ``release`` (see the module docstring), and
    the informed adversary's figures.

    ``quasi_identifiers``: the released QI columns (the classes); ``kept_columns``: the
    columns released as they are that an adversary might know (the configuration's
    insensitive and sensitive columns); ``sensitive_columns``: those whose values a class
    may disclose; ``missing``: the missing-value tokens (a class whose only value is missing
    discloses nothing); ``shifted_dates``: the shifted dates released as they are (no
    hierarchy); ``pseudonyms``: the released pseudonym columns (the coarse ones are the
    column itself); ``k``: the release's k-anonymity (``None`` without); ``value_counts``: the
    most distinct values a kept column may have for its counts to be returned
    (:attr:`Disclosure.counts`; 0: none are); ``rows``: the release's distinct rows with their
    records (:data:`~safeshare.verify.sql.ROW_RECORDS`), as the verifier read them from the file
    (:attr:`safeshare.verify.Verification.rows`), read instead of the file when they hold every
    column the warnings read.
    """
    if not 0 < unique_share < 1:
        raise ValueError(f"unique_share must be in (0, 1), got {unique_share!r}")
    with tempfile.TemporaryDirectory(prefix="safeshare-disclosure-") as spill:
        limit = duckdb_memory_limit() if memory_limit is None else memory_limit
        con = duckdb.connect(config={"memory_limit": limit, "threads": 2, "temp_directory": spill})
        read = _columns_read(quasi_identifiers, kept_columns, sensitive_columns, shifted_dates, pseudonyms)
        if rows is not None and {*read, ROW_RECORDS} <= set(rows.column_names):
            con.register("__safeshare_release_rows", rows)
            source, count = "__safeshare_release_rows", f"CAST(SUM({ROW_RECORDS}) AS BIGINT)"
        else:
            source, count = release_relation(Path(release), fmt, delimiter), "COUNT(*)"
        try:
            return _check(
                con,
                source,
                count,
                list(quasi_identifiers),
                list(kept_columns),
                list(sensitive_columns),
                tuple(missing),
                unique_share,
                list(shifted_dates),
                list(pseudonyms),
                k,
                value_counts,
            )
        finally:
            con.close()


def _columns_read(
    qis: Sequence[str],
    kept: Sequence[str],
    sensitive: Sequence[str],
    shifted: Sequence[KeptShiftedDate],
    pseudonyms: Sequence[str],
) -> list[str]:
    """The release's columns the warnings read, each once, in this order."""
    return list(dict.fromkeys([*qis, *kept, *sensitive, *(d.column for d in shifted), *pseudonyms]))


def _check(
    con: duckdb.DuckDBPyConnection,
    rel: str,
    count_sql: str,
    qis: list[str],
    kept: list[str],
    sensitive: list[str],
    missing: tuple[str, ...],
    unique_share: float,
    shifted: list[KeptShiftedDate],
    pseudonyms: list[str],
    k: int | None,
    value_counts: int = 0,
) -> Disclosure:
    def text(column: str) -> str:
        return f"COALESCE(CAST({quote(column)} AS VARCHAR), '')"

    def one(sql: str) -> tuple[Any, ...]:
        row = con.execute(sql).fetchone()
        assert row is not None
        return tuple(row)

    # The columns the warnings read, as text, stored once as their distinct rows with a count
    # ``w``: every figure below is a sum of counts over a grouping of these rows, so one scan
    # of the release serves them all (a release's records repeat a few thousand distinct rows).
    # The raw values are grouped first and cast to text after: the text is a function of the
    # value, and casting the distinct rows costs nothing, casting every record does.
    needed = _columns_read(qis, kept, sensitive, shifted, pseudonyms)
    raw = ", ".join(quote(c) for c in needed)
    if needed:
        columns = ", ".join(f"{text(c)} AS {quote(c)}" for c in needed)
        con.execute(
            f"CREATE TEMP TABLE released AS SELECT {columns}, w FROM "
            f"(SELECT {raw}, {count_sql} AS w FROM {rel} GROUP BY ALL)"
        )
    else:
        con.execute(f"CREATE TEMP TABLE released AS SELECT {count_sql} AS w FROM {rel}")
    (total,) = one("SELECT COALESCE(SUM(w), 0) FROM released")
    total = int(total)
    counts = _value_counts(con, kept, value_counts)
    if total == 0:
        return Disclosure([], counts=counts)
    out: list[DisclosureWarning] = []
    coarse = coarse_pseudonyms(con, "released", pseudonyms, missing)
    for p in coarse:
        out.append(
            DisclosureWarning(
                WarningCode.COARSE_PSEUDONYM,
                (p["column"],),
                p["distinct"] / p["records"],
                f"column {p['column']!r} is released as {p['distinct']:,} distinct pseudonyms over "
                f"{p['records']:,} records (fewer than 2 sqrt(n) = {p['limit']:,.0f}): a pseudonym of so few "
                "values is the column itself (their frequencies, or a guess among so few, tell which is "
                "which), so it is counted as known to the adversary; pseudonymize only a column that "
                "identifies a person, or make this one a quasi-identifier with a hierarchy",
            )
        )
    kept = [*kept, *(p["column"] for p in coarse if p["column"] not in kept)]
    group = ", ".join(quote(q) for q in qis)
    keys = f"{group}, " if group else ""

    def uniques(columns_sql: str) -> int:
        counts = f"SELECT SUM(w) AS n FROM released GROUP BY {columns_sql}"
        return int(one(f"SELECT COALESCE(SUM(n), 0) FROM ({counts}) WHERE n = 1")[0])

    qi_uniques = uniques(group) if group else 0
    if qi_uniques:
        out.append(
            DisclosureWarning(
                WarningCode.SINGLETON_CLASSES,
                tuple(qis),
                qi_uniques / total,
                f"{qi_uniques:,} released classes hold a single record ({_share(qi_uniques, total)}): "
                "their prosecutor risk is 1 (the release bounds an average risk, not each record's); "
                "add k-anonymity (k >= 2) to the privacy models to remove them",
            )
        )
    for column in kept:
        alone = uniques(quote(column))
        together = uniques(f"{keys}{quote(column)}") - qi_uniques
        share = together / total
        if share > unique_share:
            out.append(
                DisclosureWarning(
                    WarningCode.KEPT_COLUMN_IDENTIFYING,
                    (column, *qis),
                    share,
                    f"column {column!r}, kept as it is, makes {_share(together, total)} unique together "
                    f"with the quasi-identifiers ({alone:,} on its own), more than {unique_share:.0%}: "
                    "an adversary who knows it singles them out; make it a quasi-identifier with a "
                    "hierarchy, or drop it",
                )
            )
    absent = ", ".join(literal(t) for t in dict.fromkeys([*missing, ""]))
    for column in sensitive:
        if not group:
            break
        value = quote(column)
        con.execute(
            "CREATE OR REPLACE TEMP TABLE homogeneous AS SELECT * FROM (SELECT SUM(w) AS n, "
            f"COUNT(DISTINCT {value}) AS d, MIN({value}) AS v FROM released GROUP BY {group}) "
            f"WHERE d = 1 AND v NOT IN ({absent})"
        )
        classes, records = one("SELECT COUNT(*), COALESCE(SUM(n), 0) FROM homogeneous")
        classes, records = int(classes), int(records)
        if not classes:
            continue
        examples = con.execute(
            "SELECT h.v, COUNT(*) AS c, ANY_VALUE(a.n) FROM homogeneous AS h "
            f"JOIN (SELECT {value} AS v, SUM(w) AS n FROM released GROUP BY 1) AS a ON a.v = h.v "
            f"GROUP BY h.v ORDER BY c DESC, h.v LIMIT {EXAMPLES}"
        ).fetchall()
        shown = "; ".join(
            f"{v!r} in {int(c):,}, the value of {int(n) / total:.1%} of all released records"
            for v, c, n in examples
        )
        out.append(
            DisclosureWarning(
                WarningCode.HOMOGENEOUS_CLASSES,
                (column, *qis),
                records / total,
                f"{classes:,} released classes ({_share(records, total)}) hold a single value of {column!r} "
                f"({shown}): whoever knows a person's quasi-identifiers learns it (attribute disclosure); "
                "l-diversity (l >= 2) on this column would prevent it",
            )
        )
    adversary = None
    if shifted or coarse:
        adversary = informed_adversary(con, "released", qis, shifted, coarse, missing, k)
        warning = _adversary_warning(adversary, total)
        if warning is not None:
            out.append(warning)
    return Disclosure(out, adversary, counts)


def _value_counts(
    con: duckdb.DuckDBPyConnection, columns: Sequence[str], most: int
) -> dict[str, dict[str, int]]:
    """Value -> released records of each of ``columns`` with at most ``most`` distinct values,
    summed over the table ``released`` (:attr:`Disclosure.counts`)."""
    out: dict[str, dict[str, int]] = {}
    if most <= 0:
        return out
    for column in dict.fromkeys(columns):
        value = quote(column)
        rows = con.execute(
            f"SELECT {value}, SUM(w) FROM released GROUP BY 1 ORDER BY 1 LIMIT {int(most) + 1}"
        ).fetchall()
        if len(rows) <= most:
            out[column] = {str(v): int(n) for v, n in rows}
    return out


def _adversary_warning(adversary: InformedAdversary, total: int) -> DisclosureWarning | None:
    """The warning of an informed adversary who leaves records fewer than k candidates (without
    k: who singles some out); ``None`` when the per-record bound holds against them."""
    k, below, singled = adversary.k, adversary.below_k, adversary.singled_out
    short = below if k is not None and below is not None else singled
    if not short:
        return None
    known = []
    for d in adversary.dates:
        known.append(f"the true {d['column']} (released shifted by up to {d['max_days']} days)")
    for p in adversary.coarse_pseudonyms:
        known.append(f"{p['column']} (its {p['distinct']:,} pseudonyms are the column)")
    fewest = adversary.smallest_candidates
    bound = (
        f"{below:,} keep fewer than k = {k} candidates (the fewest: {fewest:,}), so no per-record "
        f"bound of 1/{k} holds against this adversary"
        if k is not None and below
        else "no per-record bound holds against this adversary"
    )
    dated = bool(adversary.dates)
    remedy = (
        "generalize the date (a dates hierarchy makes it a quasi-identifier), raise max_days, or drop it"
        if dated
        else "make the column a quasi-identifier with a hierarchy, or drop it"
    )
    expected = (
        f" (the most the release allows; {adversary.singled_out_expected:,.1f} on average over the true "
        "dates it allows)"
        if dated
        else ""
    )
    pessimistic = (
        "; the dates of the other person columns are counted as known exactly (figures pessimistic)"
        if adversary.pessimistic
        else ""
    )
    return DisclosureWarning(
        WarningCode.SHIFTED_DATE_IDENTIFYING if dated else WarningCode.COARSE_PSEUDONYM_IDENTIFYING,
        (*adversary.known, *adversary.quasi_identifiers),
        short / total,
        f"an adversary who knows a person's quasi-identifiers and {', '.join(known)} singles out up to "
        f"{_share(singled, total)}{expected}; {bound}{pessimistic}: {remedy}",
    )
