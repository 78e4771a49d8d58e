"""Independent checks of l-diversity and t-closeness on a written release (DuckDB SQL).

Listed in :data:`safeshare.verify.EXTRA_CHECKS`; run by
:func:`safeshare.verify.verify_release` on the release file, after it is
written and before it is published. They share no code with the models
(:mod:`safeshare.models.l_diversity`, :mod:`safeshare.models.t_closeness`):
the equivalence classes are the release's own ``GROUP BY`` of the
quasi-identifier columns, and every quantity is recomputed here from the
definitions (Machanavajjhala et al. 2007; Li, Li, Venkatasubramanian 2007),
with the hierarchical EMD in Li et al.'s bottom-up form (extras, positive and
negative extras per node) rather than the closed form the model uses.

What the release cannot show is passed in the parameters: for t-closeness,
the input's count of every sensitive value (the reference distribution ``Q``
of the whole input) and the hierarchy rows. The check also confronts them
with the release: no value may occur more often in the release than in the
input.

Missing values are one value: a NULL read from the release (an empty CSV
field) is the empty string, as the engines write it.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from typing import Any

import duckdb

from safeshare.numerics import TOLERANCE
from safeshare.verify.sql import quote

#: Slack of the floating-point comparisons (the models use the same value).

_names = itertools.count()


def _records(rel: str, group: str, column: str) -> str:
    """One row per record: its class (dense rank of the QI tuple) and its sensitive value as text."""
    return (
        f"SELECT DENSE_RANK() OVER (ORDER BY {group}) AS cls, "
        f"COALESCE(CAST({quote(column)} AS VARCHAR), '') AS v FROM {rel}"
    )


def _columns(params: Mapping[str, Any], model: str) -> tuple[list[str], list[str]]:
    columns = params.get("columns")
    if isinstance(columns, Mapping):
        columns = list(columns)
    if not columns:
        return [], [f"{model}: no sensitive column to check"]
    return [str(c) for c in columns], []


def check_l_diversity(
    con: duckdb.DuckDBPyConnection, rel: str, group: str, params: Mapping[str, Any]
) -> list[str]:
    """Distinct, entropy or recursive (c, l)-diversity of every class, for every sensitive column."""
    columns, failures = _columns(params, "l-diversity")
    variant = str(params.get("variant", "distinct"))
    l = float(params["l"])  # noqa: E741
    for column in columns:
        records = _records(rel, group, column)
        pairs = f"SELECT cls, v, COUNT(*) AS c FROM ({records}) GROUP BY cls, v"
        if variant == "distinct":
            row = _first(
                con, f"SELECT COUNT(*) AS d, SUM(c) AS n FROM ({pairs}) GROUP BY cls ORDER BY d, n LIMIT 1"
            )
            if row is not None and row[0] < l:
                failures.append(
                    f"l-diversity (distinct, l = {params['l']}) fails on column {column!r}: "
                    f"an equivalence class of {row[1]} records has {row[0]} distinct value(s)"
                )
        elif variant == "entropy":
            row = _first(
                con,
                f"""
                WITH p AS ({pairs}),
                     k AS (SELECT cls, SUM(c) AS n FROM p GROUP BY cls)
                SELECT -SUM((CAST(p.c AS DOUBLE) / k.n) * LN(CAST(p.c AS DOUBLE) / k.n)) AS h,
                       ANY_VALUE(k.n) AS n
                FROM p JOIN k USING (cls) GROUP BY p.cls ORDER BY h LIMIT 1
                """,
            )
            if row is not None and row[0] < math.log(l) - TOLERANCE:
                failures.append(
                    f"l-diversity (entropy, l = {params['l']}) fails on column {column!r}: an equivalence "
                    f"class of {row[1]} records has entropy {row[0]:.6g} < ln l = {math.log(l):.6g}"
                )
        elif variant == "recursive":
            c = float(params["c"])
            row = _first(
                con,
                f"""
                WITH p AS ({pairs}),
                     ranked AS (
                         SELECT cls, c, ROW_NUMBER() OVER (PARTITION BY cls ORDER BY c DESC) AS i FROM p
                     ),
                     t AS (
                         SELECT cls, MAX(c) AS r1, COALESCE(SUM(c) FILTER (WHERE i >= {int(l)}), 0) AS tail,
                                SUM(c) AS n
                         FROM ranked GROUP BY cls
                     )
                SELECT r1, tail, n FROM t WHERE NOT (r1 < {c!r} * tail) LIMIT 1
                """,
            )
            if row is not None:
                failures.append(
                    f"recursive ({params['c']}, {params['l']})-diversity fails on column {column!r}: an "
                    f"equivalence class of {row[2]} records has r1 = {row[0]} >= c * (r_l + ... + r_m) "
                    f"= {c} * {row[1]}"
                )
        else:
            failures.append(f"l-diversity: unknown variant {variant!r}")
    return failures


def check_t_closeness(
    con: duckdb.DuckDBPyConnection, rel: str, group: str, params: Mapping[str, Any]
) -> list[str]:
    """EMD between every class's distribution and the input's, for every sensitive column."""
    columns, failures = _columns(params, "t-closeness")
    t = float(params["t"])
    for column in columns:
        spec = params["columns"][column]
        reference = spec.get("reference") or {}
        ref_name = _temp_table(
            con,
            "ref",
            {"v": "VARCHAR", "n": "BIGINT"},
            [[str(v) for v in reference], [int(n) for n in reference.values()]],
        )
        try:
            records = _records(rel, group, column)
            bad = _first(
                con,
                f"""
                SELECT r.v, r.c, ref.n FROM (SELECT v, COUNT(*) AS c FROM ({records}) GROUP BY v) r
                LEFT JOIN {ref_name} ref USING (v) WHERE ref.n IS NULL OR r.c > ref.n LIMIT 1
                """,
            )
            if bad is not None:
                failures.append(
                    f"t-closeness: value {bad[0]!r} of column {column!r} occurs {bad[1]} times in the "
                    f"release but {bad[2] or 0} times in the input"
                )
                continue
            distance = str(spec.get("distance"))
            if distance == "ordered":
                text = _first(con, f"SELECT v FROM {ref_name} WHERE TRY_CAST(v AS DOUBLE) IS NULL LIMIT 1")
                if text is not None:
                    failures.append(
                        f"t-closeness: the ordered distance of column {column!r} needs numbers, "
                        f"got {text[0]!r}"
                    )
                    continue
            if distance == "equal":
                emd = _equal(con, records, ref_name)
            elif distance == "ordered":
                emd = _ordered(con, records, ref_name)
            elif distance == "hierarchical":
                emd = _hierarchical(con, records, ref_name, spec.get("hierarchy") or [])
            else:
                failures.append(f"t-closeness: unknown distance {distance!r} for column {column!r}")
                continue
            if emd is not None and emd > t + TOLERANCE:
                failures.append(
                    f"t-closeness (t = {params['t']}) fails on column {column!r}: an equivalence class "
                    f"is at distance {emd:.6g} ({distance}) from the input's distribution"
                )
        finally:
            con.execute(f"DROP TABLE {ref_name}")
    return failures


def t_closeness_figures(
    con: duckdb.DuckDBPyConnection, rel: str, group: str, params: Mapping[str, Any]
) -> dict[str, Any]:
    """:func:`check_t_closeness`'s failures and, per sensitive column, the largest distance of a
    class from the input's distribution (what the model bounds) and from the *release's own*
    distribution of that column (what a recipient, who lacks the input, can recompute from the
    file alone: pycanon's t of the release; issue 33)."""
    failures = check_t_closeness(con, rel, group, params)
    columns, _ = _columns(params, "t-closeness")
    to_input: dict[str, float | None] = {}
    to_release: dict[str, float | None] = {}
    for column in columns:
        spec = params["columns"][column]
        distance = str(spec.get("distance"))
        records = _records(rel, group, column)
        own = con.execute(f"SELECT v, COUNT(*) FROM ({records}) GROUP BY v").fetchall()
        for target, reference in (
            (to_input, spec.get("reference") or {}),
            (to_release, {str(v): int(n) for v, n in own}),
        ):
            ref = _temp_table(
                con,
                "ref",
                {"v": "VARCHAR", "n": "BIGINT"},
                [[str(v) for v in reference], [int(n) for n in reference.values()]],
            )
            try:
                if distance == "equal":
                    target[column] = _equal(con, records, ref)
                elif distance == "ordered":
                    target[column] = _ordered(con, records, ref)
                elif distance == "hierarchical":
                    target[column] = _hierarchical(con, records, ref, spec.get("hierarchy") or [])
                else:
                    target[column] = None
            except duckdb.Error:  # a value the distance cannot read (check_t_closeness says so)
                target[column] = None
            finally:
                con.execute(f"DROP TABLE {ref}")
    return {
        "failures": failures,
        "value": {"max_distance_to_input": to_input, "max_distance_to_release": to_release},
    }


def _first(con: duckdb.DuckDBPyConnection, sql: str) -> tuple[Any, ...] | None:
    """The first row of ``sql`` (every row is fetched: DuckDB wants results consumed)."""
    rows = con.execute(sql).fetchall()
    return tuple(rows[0]) if rows else None


def _temp_table(
    con: duckdb.DuckDBPyConnection, prefix: str, schema: Mapping[str, str], columns: list[list[Any]]
) -> str:
    """A temporary table filled from column lists (one INSERT with list parameters); its name."""
    name = f"__safeshare_{prefix}_{next(_names)}"
    con.execute(f"CREATE TEMP TABLE {name} ({', '.join(f'{c} {t}' for c, t in schema.items())})")
    if columns and columns[0]:
        select = ", ".join(f"UNNEST(?::{t}[])" for t in schema.values())
        con.execute(f"INSERT INTO {name} SELECT {select}", columns)
    return name


def _scalar(con: duckdb.DuckDBPyConnection, sql: str) -> float | None:
    row = _first(con, sql)
    return None if row is None or row[0] is None else float(row[0])


def _equal(con: duckdb.DuckDBPyConnection, records: str, ref: str) -> float | None:
    """Largest ``1/2 sum_v |p(E, v) - q(v)|`` over the classes."""
    return _scalar(
        con,
        f"""
        WITH r AS ({records}),
             q AS (SELECT v, CAST(n AS DOUBLE) / SUM(n) OVER () AS q FROM {ref}),
             k AS (SELECT cls, COUNT(*) AS n FROM r GROUP BY cls),
             p AS (SELECT cls, v, COUNT(*) AS c FROM r GROUP BY cls, v),
             grid AS (SELECT k.cls, k.n, q.v, q.q FROM k CROSS JOIN q)
        SELECT MAX(emd) FROM (
            SELECT g.cls, 0.5 * SUM(ABS(COALESCE(p.c, 0) / g.n - g.q)) AS emd
            FROM grid g LEFT JOIN p ON p.cls = g.cls AND p.v = g.v GROUP BY g.cls
        )
        """,
    )


def _ordered(con: duckdb.DuckDBPyConnection, records: str, ref: str) -> float | None:
    """Largest ``1/(m-1) sum_i |sum_{j<=i} (p_j - q_j)|`` over the classes (values sorted as numbers)."""
    return _scalar(
        con,
        f"""
        WITH r AS (SELECT cls, CAST(v AS DOUBLE) AS x FROM ({records})),
             q0 AS (SELECT CAST(v AS DOUBLE) AS x, SUM(n) AS n FROM {ref} GROUP BY x),
             q AS (SELECT x, CAST(n AS DOUBLE) / SUM(n) OVER () AS q, COUNT(*) OVER () AS m FROM q0),
             k AS (SELECT cls, COUNT(*) AS n FROM r GROUP BY cls),
             p AS (SELECT cls, x, COUNT(*) AS c FROM r GROUP BY cls, x),
             grid AS (SELECT k.cls, k.n, q.x, q.q, q.m FROM k CROSS JOIN q),
             cum AS (
                 SELECT g.cls, g.m,
                        SUM(COALESCE(p.c, 0) / g.n - g.q) OVER (
                            PARTITION BY g.cls ORDER BY g.x ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW
                        ) AS f
                 FROM grid g LEFT JOIN p ON p.cls = g.cls AND p.x = g.x
             )
        SELECT MAX(emd) FROM (
            SELECT cls, SUM(ABS(f)) / GREATEST(ANY_VALUE(m) - 1, 1) AS emd FROM cum GROUP BY cls
        )
        """,
    )


def _hierarchical(
    con: duckdb.DuckDBPyConnection, records: str, ref: str, rows: list[list[str]]
) -> float | None:
    """Largest EMD with the hierarchical ground distance, by Li et al.'s bottom-up formula.

    ``extra(N) = sum of (p - q)`` over the leaves under ``N``; for every node
    ``N`` at height ``h >= 1``, ``cost(N) = h/H * min(pos_extra, neg_extra)``
    over its children; the EMD is the sum of the costs. A hierarchy whose top
    level has several labels gets a virtual root.
    """
    if not rows:
        return None
    rows = [[str(x) for x in row] for row in rows]
    if len({row[-1] for row in rows}) > 1:
        rows = [[*row, "\x00root"] for row in rows]
    height = len(rows[0]) - 1
    anc = [(row[0], level, row[level]) for row in rows for level in range(height + 1)]
    par = sorted({(level, row[level - 1], row[level]) for row in rows for level in range(1, height + 1)})
    anc_name = _temp_table(
        con,
        "anc",
        {"leaf": "VARCHAR", "level": "INTEGER", "node": "VARCHAR"},
        [list(c) for c in zip(*anc, strict=True)],
    )
    par_name = _temp_table(
        con,
        "par",
        {"level": "INTEGER", "child": "VARCHAR", "parent": "VARCHAR"},
        [list(c) for c in zip(*par, strict=True)] if par else [[], [], []],
    )
    try:
        return _scalar(
            con,
            f"""
            WITH r AS ({records}),
                 q AS (SELECT v, CAST(n AS DOUBLE) / SUM(n) OVER () AS q FROM {ref}),
                 k AS (SELECT cls, COUNT(*) AS n FROM r GROUP BY cls),
                 p AS (SELECT cls, v, COUNT(*) AS c FROM r GROUP BY cls, v),
                 diff AS (
                     SELECT k.cls, q.v, COALESCE(p.c, 0) / k.n - q.q AS d
                     FROM k CROSS JOIN q LEFT JOIN p ON p.cls = k.cls AND p.v = q.v
                 ),
                 extra AS (
                     SELECT diff.cls, a.level, a.node, SUM(diff.d) AS e
                     FROM diff JOIN {anc_name} a ON a.leaf = diff.v
                     GROUP BY diff.cls, a.level, a.node
                 ),
                 cost AS (
                     SELECT e.cls, pa.level AS h, pa.parent,
                            SUM(GREATEST(e.e, 0)) AS pos, SUM(GREATEST(-e.e, 0)) AS neg
                     FROM extra e JOIN {par_name} pa ON pa.level = e.level + 1 AND pa.child = e.node
                     GROUP BY e.cls, pa.level, pa.parent
                 )
            SELECT MAX(emd) FROM (
                SELECT cls, SUM(CAST(h AS DOUBLE) / {height} * LEAST(pos, neg)) AS emd FROM cost GROUP BY cls
            )
            """,
        )
    finally:
        con.execute(f"DROP TABLE {anc_name}")
        con.execute(f"DROP TABLE {par_name}")
