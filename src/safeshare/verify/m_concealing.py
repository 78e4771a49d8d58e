"""Independent check of m-concealing on a written release (thesis §5.2, formula 5.1).

Listed in :data:`safeshare.verify.EXTRA_CHECKS` as ``"m-concealing"``. It recomputes every
record's re-identification probability from the release file with DuckDB SQL,
sharing no code with :mod:`safeshare.risk.m_concealing` (no frequency table,
no evaluator): for each knowledge state ``q`` (subset of the knowledge
columns ``K``) of probability

    P(q) = prod_{c in q} p_c * prod_{c in K \\ q} (1 - p_c) > 0,

a window ``COUNT(*) OVER (PARTITION BY <QI columns>, <columns of q>)`` counts
the records indistinguishable from each record, and

    m(i) = pi * sum_q P(q) / count_q(i).

The release passes when ``max_i m(i) <= m + 1e-9`` (the same rounding
allowance as the model).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from itertools import product
from typing import Any

import duckdb

from safeshare.numerics import TOLERANCE
from safeshare.verify.sql import quote

#: Same allowance for floating-point rounding as the privacy model.
ALLOWANCE = TOLERANCE


def _double(x: float) -> str:
    return f"CAST({x!r} AS DOUBLE)"


def record_values_sql(relation: str, group: str, knowledge: Mapping[str, float], pi: float) -> str:
    """SQL selecting ``v``, every record's ``m(i)``, from ``relation``."""
    columns = list(knowledge)
    terms = []
    for bits in product((False, True), repeat=len(columns)):
        pairs = zip(columns, bits, strict=True)
        prob = math.prod(float(knowledge[c]) if b else 1.0 - float(knowledge[c]) for c, b in pairs)
        if prob <= 0.0:
            continue
        known = [f"CAST({quote(c)} AS VARCHAR)" for c, b in zip(columns, bits, strict=True) if b]
        partition = ", ".join([group, *known]) if group else ", ".join(known)
        window = f"COUNT(*) OVER (PARTITION BY {partition})" if partition else "COUNT(*) OVER ()"
        terms.append(f"{_double(prob)} / {window}")
    return f"SELECT {_double(pi)} * ({' + '.join(terms)}) AS v FROM {relation}"


def check_m_concealing(
    con: duckdb.DuckDBPyConnection, relation: str, group: str, params: Mapping[str, Any]
) -> list[str]:
    """Failures of m-concealing on the release (empty when it holds)."""
    try:
        m = float(params["m"])
        knowledge = {str(c): float(p) for c, p in dict(params.get("knowledge") or {}).items()}
        pi = float(params.get("inclusion_probability", 1.0))
    except (KeyError, TypeError, ValueError):
        return [f"m-concealing: malformed parameters {dict(params)!r}"]
    columns = {row[0] for row in con.execute(f"DESCRIBE SELECT * FROM {relation}").fetchall()}
    missing = [c for c in knowledge if c not in columns]
    if missing:
        return [f"m-concealing: knowledge column {missing[0]!r} is not in the release"]
    row = con.execute(
        f"SELECT MAX(v), COUNT(*) FILTER (WHERE v > {_double(m + ALLOWANCE)}) "
        f"FROM ({record_values_sql(relation, group, knowledge, pi)})"
    ).fetchone()
    if row is None or row[0] is None:
        return []
    largest, above = float(row[0]), int(row[1])
    if above:
        return [
            f"m-concealing: {above} record(s) have a re-identification probability above m = {m:g} "
            f"(largest {largest:.6g}, 1/m = {1 / largest:.4g})"
        ]
    return []
