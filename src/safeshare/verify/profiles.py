"""Linked records on the written release: profile uniqueness (issue 32).

When a person's records are linkable in a release (the person key kept or pseudonymized, or any
other pseudonym), an adversary sees each person's records together: their **profile**, the
multiset of the released classes of their records (the quasi-identifiers' labels, with
multiplicities) and, for kept shifted dates under the same person's shift, the intervals between
their dates (each record's dates as days after the person's first one). Every person whose profile
fewer than ``k`` people share is exposed beyond the class-level ``k``: with a k = 5 release of
COVID tests, 754 of 1,682 people tested more than once had a combination of classes nobody else
had (issue 32). This is the patient-level k-anonymity of Tamersoy et al. (2012) and the adversary
who knows every record of a person; it implies k^m-anonymity (Terrovitis et al. 2008) for every
m (docs/longitudinal.md).

Computed in DuckDB SQL over the written file alone (one ``GROUP BY`` per link column): the
records' elements (labels, date offsets) counted per person, each person's sorted list of
(element, count), and the people per distinct list. Records with an empty link value are linked to
nothing and left out. Nothing of an unreleased record is read.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import duckdb
import pandas as pd
import pyarrow as pa

from safeshare.verify.sql import quote


@dataclass(frozen=True)
class LinkExpectations:
    """The released columns that link a person's records (the person key if released, every
    pseudonym), the kept shifted dates whose intervals each link column keeps (link column ->
    {date column: format}), and the ``k`` the profiles are measured against."""

    columns: tuple[str, ...]
    k: int = 2
    dates: Mapping[str, Mapping[str, str]] = field(default_factory=dict)


def _day(text: str, fmt: str) -> int | None:
    try:
        return dt.datetime.strptime(text, fmt).toordinal()
    except ValueError:
        return None


def profile_uniqueness(
    con: duckdb.DuckDBPyConnection,
    rel: str,
    group: str,
    link: str,
    k: int,
    dates: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Profile figures of the release ``rel`` whose classes are ``group`` (the quasi-identifiers'
    SQL, comma-separated), linked by ``link``: ``people`` (with a non-empty link value),
    ``profiles`` (distinct), ``below_k`` (people whose profile fewer than ``k`` people share),
    ``singled_out`` (a profile of one person), ``smallest``, and their shares."""
    dates = dict(dates or {})
    registered: list[str] = []
    try:
        joins, days = [], []
        texts_sql = []
        for j, (column, fmt) in enumerate(dates.items()):
            texts = [
                r[0]
                for r in con.execute(
                    f"SELECT DISTINCT CAST({quote(column)} AS VARCHAR) FROM {rel} "
                    f"WHERE {quote(column)} IS NOT NULL"
                ).fetchall()
            ]
            name = f"__profile_days_{j}"
            con.register(
                name,
                pa.table(
                    {
                        "t": pa.array(texts, pa.string()),
                        "d": pa.array(pd.array([_day(t, fmt) for t in texts], "Int64"), pa.int64()),
                    }
                ),
            )
            registered.append(name)
            texts_sql.append(f"CAST({quote(column)} AS VARCHAR) AS t{j}")
            joins.append(f"LEFT JOIN {name} AS dd{j} ON b.t{j} = dd{j}.t")
            days.append(f"dd{j}.d AS d{j}")
        n_dates = len(days)
        first = (
            ", LEAST("
            + ", ".join(f"COALESCE(dd{j}.d, 9223372036854775807)" for j in range(n_dates))
            + ") AS f"
            if n_dates
            else ""
        )
        link_sql = f"CAST({quote(link)} AS VARCHAR)"
        con.execute(
            "CREATE OR REPLACE TEMP TABLE __profile_records AS SELECT b.p, b.q"
            + "".join(f", {d}" for d in days)
            + first
            + " FROM (SELECT "
            + ", ".join([f"{link_sql} AS p", f"DENSE_RANK() OVER (ORDER BY {group}) AS q", *texts_sql])
            + f" FROM {rel} WHERE NULLIF(TRIM({link_sql}), '') IS NOT NULL) AS b "
            + " ".join(joins)
        )
        offsets = [f"d{j} - MIN(f) OVER (PARTITION BY p) AS o{j}" for j in range(n_dates)]
        keys = ["q", *[f"o{j}" for j in range(n_dates)]]
        struct = ", ".join(f"{key} := {key}" for key in keys)
        order = ", ".join(keys)
        row = con.execute(
            "SELECT COALESCE(SUM(people), 0), COUNT(*), COALESCE(SUM(people) FILTER (WHERE people < ?), 0), "
            "COALESCE(SUM(people) FILTER (WHERE people = 1), 0), COALESCE(MIN(people), 0) FROM ("
            "SELECT profile, COUNT(*) AS people FROM ("
            f"SELECT p, list(struct_pack({struct}, n := n) ORDER BY {order}, n) AS profile FROM ("
            f"SELECT p, {order}, COUNT(*) AS n FROM ("
            "SELECT " + ", ".join(["p", "q", *offsets]) + " FROM __profile_records) GROUP BY ALL) "
            "GROUP BY p) GROUP BY profile)",
            [k],
        ).fetchall()[0]
        assert row is not None
        people, profiles, below, singled, smallest = (int(v) for v in row)
    finally:
        con.execute("DROP TABLE IF EXISTS __profile_records")
        for name in registered:
            con.unregister(name)
    return {
        "column": link,
        "k": k,
        "people": people,
        "profiles": profiles,
        "below_k": below,
        "below_k_share": below / people if people else 0.0,
        "singled_out": singled,
        "singled_out_share": singled / people if people else 0.0,
        "smallest": smallest,
        "intervals": list(dates),
    }


def check_profiles(
    con: duckdb.DuckDBPyConnection,
    rel: str,
    group: str,
    expected: LinkExpectations,
    checks: dict[str, Any],
) -> list[str]:
    """Measure every link column's profiles into ``checks["profiles"]`` (a list). A measure, not
    a check: the profile model's re-check is :func:`check_profile_anonymity`."""
    checks["profiles"] = [
        profile_uniqueness(con, rel, group, link, expected.k, expected.dates.get(link))
        for link in expected.columns
    ]
    return []


def check_profile_anonymity(
    con: duckdb.DuckDBPyConnection, rel: str, group: str, params: Mapping[str, Any]
) -> list[str]:
    """The profile model's independent re-check (:data:`safeshare.verify.EXTRA_CHECKS`): for every
    released link column (``params["links"]``, from the configuration's roles), every profile of
    the written release is shared by at least ``params["k"]`` people."""
    k = int(params["k"])
    failures = []
    dates: Mapping[str, Mapping[str, str]] = params.get("dates") or {}
    for link in params.get("links") or ():
        doc = profile_uniqueness(con, rel, group, str(link), k, dates.get(str(link)))
        if doc["people"] and doc["smallest"] < k:
            failures.append(
                f"profile-anonymity: linked by {link!r}, {doc['below_k']:,} people have a profile fewer "
                f"than {k} people share (the smallest: {doc['smallest']})"
            )
    return failures
