"""Independent check of a surveillance release's population-bin suppression (DuckDB SQL; issue 10).

Listed in :data:`safeshare.verify.EXTRA_CHECKS` as ``population-bins``; run by
:func:`safeshare.verify.verify_release` on the written file before it is published
(``safeshare surveil release``, :mod:`safeshare.surveillance.release`).

The rule: a released record's *population bin* -- the people of its region whose
demographics have the record's released labels -- holds at least ``k`` people. The
check shares nothing with the code that made the release plan (which groups fine bins
with the policy space's integer groupings and numpy): here every population row's
leaves are relabelled at the policy's level from the hierarchy's label of each leaf,
the people are summed by SQL ``GROUP BY`` region and labels, and every distinct
(region, labels) of the release file is looked up in that table.

Parameters (plain data): ``k``; ``region`` (the region column's name); ``labels``:
dimension -> {leaf label -> released label at the policy's level}; ``population``:
column -> list, with ``region``, one column per dimension (leaf labels) and ``people``.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any

import duckdb
import pyarrow as pa

from safeshare.verify.sql import quote

_names = itertools.count()


def check_population_bins(
    con: duckdb.DuckDBPyConnection, rel: str, group: str, params: Mapping[str, Any]
) -> list[str]:
    """Every released record's population bin holds at least ``k`` people (see the module docstring)."""
    k = int(params["k"])
    region = str(params["region"])
    labels: Mapping[str, Mapping[str, str]] = params["labels"]
    population: Mapping[str, list[Any]] = params["population"]
    dims = list(labels)
    table: dict[str, pa.Array] = {"r": pa.array([str(x) for x in population[region]], pa.string())}
    for j, dim in enumerate(dims):
        # a leaf without a label of the level is no population of any released label
        table[f"d{j}"] = pa.array([labels[dim].get(str(x)) for x in population[dim]], pa.string())
    table["people"] = pa.array([int(x) for x in population["people"]], pa.int64())
    name = f"__safeshare_population_bins_{next(_names)}"
    # a cursor of its own: the verifier's connection may hold an unfinished result, which forbids register
    cur = con.cursor()
    cur.register(name, pa.table(table))
    try:
        cols = ", ".join(f"d{j}" for j in range(len(dims)))
        bins = f"SELECT r, {cols}, SUM(people) AS people FROM {name} GROUP BY r, {cols}"
        released = ", ".join(
            [f"CAST({quote(region)} AS VARCHAR) AS r"]
            + [f"CAST({quote(dim)} AS VARCHAR) AS d{j}" for j, dim in enumerate(dims)]
        )
        on = " AND ".join(
            f"x.{c} IS NOT DISTINCT FROM b.{c}" for c in ["r", *(f"d{j}" for j in range(len(dims)))]
        )
        rows = cur.execute(
            f"SELECT x.r, COALESCE(b.people, 0) AS p FROM (SELECT DISTINCT {released} FROM {rel}) AS x "
            f"LEFT JOIN ({bins}) AS b ON {on} WHERE COALESCE(b.people, 0) < {k} ORDER BY p, x.r LIMIT 1"
        ).fetchall()
    finally:
        cur.unregister(name)
        cur.close()
    if not rows:
        return []
    region_value, people = rows[0]
    return [f"a record of region {region_value} in a population bin of {int(people)} people (< k = {k})"]
