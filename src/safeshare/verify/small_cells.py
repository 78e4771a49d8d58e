"""Independent check of small-cell suppression on a written release.

Listed in :data:`safeshare.verify.EXTRA_CHECKS` as ``"small-cells"``. The population file is
re-read by DuckDB, each quasi-identifier generalized by a join with its hierarchy's rows (leaf
-> label at the level whose labels the release uses), counted by group, and joined with the
release's own ``GROUP BY`` classes: no frequency table, evaluator or population codes of the
search. The level of a column is read from the release: every level whose labels include all of
the column's released values is a candidate, and the release must pass under every candidate
combination (conservative when a hierarchy repeats labels across levels). A release class whose
population group has fewer than ``min_size`` people (or nobody) fails.
"""

from __future__ import annotations

from collections.abc import Mapping
from itertools import product
from typing import Any

import duckdb
import pandas as pd

from safeshare.verify.sql import literal, quote

#: At most this many combinations of candidate levels are checked; more is refused as doubtful.
MAX_COMBINATIONS = 64


def check_small_cells(
    con: duckdb.DuckDBPyConnection, relation: str, group: str, params: Mapping[str, Any]
) -> list[str]:
    """Failures of small-cell suppression on the release (empty when it holds)."""
    try:
        path = str(params["population"])
        min_size = int(params["min_size"])
        delimiter = str(params.get("delimiter", ","))
        hierarchies = {
            str(q): [[str(v) for v in row] for row in rows] for q, rows in params["hierarchies"].items()
        }
    except (KeyError, TypeError, ValueError, AttributeError):
        return [f"small-cells: malformed parameters {dict(params)!r}"]
    qis = list(hierarchies)
    candidates: list[list[int]] = []
    for q in qis:
        values = {
            "" if r[0] is None else str(r[0])
            for r in con.execute(f"SELECT DISTINCT CAST({quote(q)} AS VARCHAR) FROM {relation}").fetchall()
        }
        depth = len(hierarchies[q][0]) if hierarchies[q] else 0
        levels = [lv for lv in range(depth) if values <= {row[lv] for row in hierarchies[q]}]
        if not levels:
            return [f"small-cells: the values of {q!r} are not the labels of one level of its hierarchy"]
        candidates.append(levels)
    combos = list(product(*candidates))
    if len(combos) > MAX_COMBINATIONS:
        return [f"small-cells: {len(combos)} possible generalization levels; cannot check unambiguously"]
    pop = (
        f"read_csv({literal(path)}, all_varchar=true, header=true, delim={literal(delimiter)}, "
        "quote='\"', escape='\"')"
    )
    failures: list[str] = []
    for combo in combos:
        joins, keys, names = [], [], []
        for j, (q, level) in enumerate(zip(qis, combo, strict=True)):
            name = f"_ss_map_{j}"
            frame = pd.DataFrame(
                {"leaf": [r[0] for r in hierarchies[q]], "label": [r[level] for r in hierarchies[q]]}
            )
            con.register(name, frame.drop_duplicates("leaf"))
            names.append(name)
            joins.append(f"JOIN {name} m{j} ON CAST(p.{quote(q)} AS VARCHAR) = m{j}.leaf")
            keys.append(j)
        try:
            p_keys = ", ".join(f"m{j}.label AS k{j}" for j in keys)
            r_keys = ", ".join(f"CAST({quote(q)} AS VARCHAR) AS k{j}" for j, q in enumerate(qis))
            on = " AND ".join(f"r.k{j} = g.k{j}" for j in keys)
            rows = con.execute(
                f"WITH g AS (SELECT {p_keys}, COUNT(*) AS c FROM {pop} p {' '.join(joins)} GROUP BY ALL), "
                f"r AS (SELECT {r_keys}, COUNT(*) AS n FROM {relation} GROUP BY ALL) "
                f"SELECT COUNT(*), SUM(r.n), MIN(COALESCE(g.c, 0)) FROM r LEFT JOIN g ON {on} "
                f"WHERE COALESCE(g.c, 0) < {min_size}"
            ).fetchall()  # fetched to the end: unregister refuses an unfinished result
        except duckdb.Error as exc:
            return [f"small-cells: population file {path} cannot be read ({str(exc).splitlines()[0]})"]
        finally:
            for name in names:
                con.unregister(name)
        row = rows[0] if rows else None
        if row is not None and int(row[0]):
            failures.append(
                f"small-cells: {int(row[0])} released class(es) ({int(row[1])} records) have a population "
                f"group smaller than {min_size} (smallest {int(row[2])})"
            )
            break
    return failures
