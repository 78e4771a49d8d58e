"""Independent check of a CDC public-use-style rule set on a written surveillance release (issue 37).

Listed in :data:`safeshare.verify.EXTRA_CHECKS` as ``cdc-rules``; the rules are CDC's (``CDCgov/
covid_case_privacy_review``, ``R/review_public_geo.R``; the thresholds come in as parameters, the
release's preset is :mod:`safeshare.surveillance.cdc`). Everything is recomputed from the file
(DuckDB SQL) and the population table as plain rows; nothing is shared with the code that suppressed
the fields. The region column holds a county's FIPS code, its state's two digits when the county is
suppressed, or the suppression token ``na`` (so a county never shows without its state: rules #7-#9
are the column's form, checked value by value).

* #3: a shown county has at least ``county_population`` people;
* #1, #2: every shown state, shown county and state-only group holds at least ``location_k``
  records of the file;
* #10: no shown state misses exactly one of its counties (the population table's) from the file;
* #4: every shown county's subpopulation of the record's sex, race and ethnicity labels (a
  suppressed field summed over) has at least ``subpopulation`` people;
* #5: the records of each released (county, sex, race, ethnicity) are fewer than ``share_cap`` times
  its people;
* #6: every class of the quasi-identifiers (``na`` a value of its own) holds at least ``k`` records.

Parameters (plain data): ``k``, ``location_k``, ``county_population``, ``subpopulation``,
``share_cap``, ``na``; ``region`` (the region column); ``dims``: the subpopulation's columns;
``labels``: dimension -> {leaf -> released label at the policy}; ``population``: column -> list
(``region``, the ``dims`` as leaf labels, ``people``).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from safeshare.verify.sql import literal, quote, release_relation

_names = itertools.count()


def check_cdc_rules(
    con: duckdb.DuckDBPyConnection, rel: str, group: str, params: Mapping[str, Any]
) -> list[str]:
    """One failure per rule that does not hold (see the module docstring)."""
    try:
        k, location_k = int(params["k"]), int(params["location_k"])
        county_population, subpopulation = int(params["county_population"]), int(params["subpopulation"])
        share_cap, na = float(params["share_cap"]), str(params["na"])
        region = str(params["region"])
        dims = [str(d) for d in params["dims"]]
        labels: Mapping[str, Mapping[str, str]] = params["labels"]
        population: Mapping[str, list[Any]] = params["population"]
    except (KeyError, TypeError, ValueError):
        return [f"cdc-rules: malformed parameters {sorted(params)!r}"]
    cur = con.cursor()
    name = f"__safeshare_cdc_population_{next(_names)}"
    table: dict[str, pa.Array] = {"r": pa.array([str(x) for x in population[region]], pa.string())}
    for j, dim in enumerate(dims):
        table[f"s{j}"] = pa.array([labels[dim].get(str(x)) for x in population[dim]], pa.string())
    table["people"] = pa.array([int(x) for x in population["people"]], pa.int64())
    cur.register(name, pa.table(table))
    failures: list[str] = []
    try:
        g = f"CAST({quote(region)} AS VARCHAR)"
        nal = literal(na)
        counties = f"(SELECT r, SUM(people) AS people FROM {name} GROUP BY r)"
        states = f"(SELECT DISTINCT substr(r, 1, 2) AS s FROM {name})"

        def first(sql: str) -> tuple[Any, ...] | None:
            rows = cur.execute(sql).fetchall()
            return tuple(rows[0]) if rows else None

        bad = first(
            f"SELECT g FROM (SELECT DISTINCT {g} AS g FROM {rel}) WHERE g IS NULL OR (g <> {nal} "
            f"AND g NOT IN (SELECT r FROM {counties}) AND g NOT IN (SELECT s FROM {states})) "
            "ORDER BY g LIMIT 1"
        )
        if bad is not None:
            return [f"cdc-rules #7-#9: region value {bad[0]!r} is no county, state or {na!r}"]
        hit = first(
            f"SELECT c.r, c.people FROM (SELECT DISTINCT {g} AS g FROM {rel}) x "
            f"JOIN {counties} c ON x.g = c.r "
            f"WHERE c.people < {county_population} ORDER BY c.people, c.r LIMIT 1"
        )
        if hit is not None:
            failures.append(
                f"cdc-rules #3: county {hit[0]} is shown with {hit[1]} people (< {county_population})"
            )
        shown = f"(SELECT {g} AS g FROM {rel} WHERE {g} <> {nal})"
        for what, key, where in (
            ("state", "substr(g, 1, 2)", "TRUE"),
            ("county", "g", "length(g) = 5"),
            ("state without county", "g", "length(g) = 2"),
        ):
            hit = first(
                f"SELECT {key} AS v, COUNT(*) AS n FROM {shown} WHERE {where} GROUP BY v "
                f"HAVING COUNT(*) < {location_k} ORDER BY n, v LIMIT 1"
            )
            if hit is not None:
                failures.append(f"cdc-rules #1, #2: {what} {hit[0]} holds {hit[1]} records (< {location_k})")
        hit = first(
            f"SELECT s.s, census.n - COALESCE(seen.n, 0) AS missing FROM "
            f"(SELECT DISTINCT substr(g, 1, 2) AS s FROM {shown}) s "
            f"JOIN (SELECT substr(r, 1, 2) AS s, COUNT(DISTINCT r) AS n FROM {name} GROUP BY s) census "
            "ON census.s = s.s "
            f"LEFT JOIN (SELECT substr(g, 1, 2) AS s, COUNT(DISTINCT g) AS n FROM {shown} "
            "WHERE length(g) = 5 "
            f"GROUP BY s) seen ON seen.s = s.s WHERE census.n - COALESCE(seen.n, 0) = 1 ORDER BY s.s LIMIT 1"
        )
        if hit is not None:
            failures.append(f"cdc-rules #10: state {hit[0]} is shown missing exactly one of its counties")
        cols = ", ".join(f"CAST({quote(d)} AS VARCHAR) AS x{j}" for j, d in enumerate(dims))
        match = " AND ".join(f"(x.x{j} = {nal} OR x.x{j} = p.s{j})" for j in range(len(dims)))
        xs = ", ".join(f"x.x{j}" for j in range(len(dims)))
        groups = (
            f"(SELECT x.g, {xs}, x.n, COALESCE(SUM(p.people), 0) AS people FROM "
            f"(SELECT {g} AS g, {cols}, COUNT(*) AS n FROM {rel} WHERE length({g}) = 5 AND {g} <> {nal} "
            f"GROUP BY ALL) x LEFT JOIN {name} p ON p.r = x.g AND {match} GROUP BY x.g, {xs}, x.n)"
        )
        cur.execute(f"CREATE TEMP TABLE {name}_groups AS SELECT * FROM {groups}")
        hit = first(
            f"SELECT g, people FROM {name}_groups WHERE people < {subpopulation} ORDER BY people, g LIMIT 1"
        )
        if hit is not None:
            failures.append(
                f"cdc-rules #4: a record of county {hit[0]} in a subpopulation of {hit[1]} people "
                f"(< {subpopulation})"
            )
        hit = first(
            f"SELECT g, n, people FROM {name}_groups WHERE n >= {share_cap!r} * people ORDER BY g LIMIT 1"
        )
        if hit is not None:
            failures.append(
                f"cdc-rules #5: {hit[1]} records of county {hit[0]} in a subpopulation of {hit[2]} people "
                f"(>= {share_cap:g} of them)"
            )
        cur.execute(f"DROP TABLE {name}_groups")
        hit = first(
            f"SELECT COUNT(*) AS n FROM {rel} GROUP BY {group} HAVING COUNT(*) < {k} ORDER BY n LIMIT 1"
        )
        if hit is not None:
            failures.append(
                f"cdc-rules #6: a class of the quasi-identifiers holds {hit[0]} records (< k = {k})"
            )
    finally:
        cur.unregister(name)
        cur.close()
    return failures


def suppressed_fields(
    path: Path, fmt: str, columns: list[str], na: str, delimiter: str = ","
) -> dict[str, int]:
    """The records of the written file whose column holds the suppression token, per column (what
    CDC's log calls the suppression summary; computable from the file by anyone)."""
    con = duckdb.connect()
    try:
        rel = release_relation(Path(path), fmt, delimiter)
        sums = ", ".join(
            f"SUM(CASE WHEN CAST({quote(c)} AS VARCHAR) = {literal(na)} THEN 1 ELSE 0 END)" for c in columns
        )
        row = con.execute(f"SELECT COUNT(*), {sums} FROM {rel}").fetchone()
    finally:
        con.close()
    assert row is not None
    return {"records": int(row[0]), **{c: int(v or 0) for c, v in zip(columns, row[1:], strict=True)}}
