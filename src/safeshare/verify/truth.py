"""Independent check that a written release's labels are true of its records (issue 30).

The verifier's other checks prove that the release matches its configuration: every label is
one of its hierarchy's, every class is large enough. A hierarchy can match its configuration
and still lie (a date builder that labelled 2022-01-01 "2021"). This check reads the labels as
statements (:mod:`safeshare.hierarchy.truth`, which shares no code with the builders that
wrote them) and judges them against the input's values, on the file as written:

1. **per distinct (value, label) pair**: for every quasi-identifier, every input value and
   every label the configuration lets it take at the released level (its hierarchy's label at
   the chosen level; with local recoding, at any level) that the release holds, the label must
   be true of the value. A false pair that reaches the release is refused, in one line naming
   the column, the value, the label and its records. Labels a hierarchy file defines by itself
   (categories, not intervals or dates) cannot be judged: they are counted as ``unchecked``;
2. **every released record is a record its labels are true of**: each released class (``GROUP
   BY`` the quasi-identifiers of the file) holds at most as many records as the input has
   records whose values all lie in its labels through true pairs. When the labels of one level
   are disjoint (every builder's and file's level), a class passing this is a set of distinct
   input records with true labels, so an engine that wrote a record with another record's
   label is found unless it swapped labels between two groups of exactly the same size, which
   no count can see. A locally recoded release (labels of several levels, which overlap) is
   checked per column: each label's records against the input records it is true of.

The work is per distinct pair and per distinct input tuple, never per record: the input's
tuples come as one table (the distinct quasi-identifier tuples with their counts), the release's
classes from the verifier's one ``GROUP BY`` of the file (``release_classes``), and the joins
run in DuckDB. It reads the written file, so it checks the memory, DuckDB and Spark engines'
releases alike.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import duckdb
import pandas as pd
import pyarrow as pa

from safeshare.hierarchy.truth import Semantics

COUNT = "__count__"


@dataclass
class TruthExpectations:
    """What the truth check needs, from the configuration and the input.

    ``semantics``: per quasi-identifier, what its labels state (from the configured builder or
    file: :func:`~safeshare.hierarchy.truth.semantics_of`); ``labels``: per quasi-identifier,
    each input value -> the labels the configuration lets the release give it (its hierarchy's
    label at the chosen level, or every level's with ``any_level``); ``input_classes()``: the
    input's distinct quasi-identifier tuples as text, with their record counts in ``__count__``.
    """

    semantics: Mapping[str, Semantics]
    labels: Mapping[str, Mapping[str, Sequence[str]]]
    input_classes: Callable[[], pd.DataFrame]
    any_level: bool = False


def check_truth(
    con: duckdb.DuckDBPyConnection,
    qis: Sequence[str],
    classes: str,
    expected: TruthExpectations,
    checks: dict[str, Any],
) -> list[str]:
    """Failures of the truth check (see the module docstring). ``classes``: the temporary table
    of the release's classes, one column ``q{i}`` per quasi-identifier of ``qis`` and ``n``."""
    failures: list[str] = []
    released = {
        qi: {_label(r[0]) for r in con.execute(f"SELECT DISTINCT q{i} FROM {classes}").fetchall()}
        for i, qi in enumerate(qis)
    }
    frame = expected.input_classes()
    values = {qi: frame[qi].astype(str) for qi in qis}
    report: dict[str, Any] = {}
    pairs: dict[str, pa.Table] = {}
    for qi in qis:
        distinct = [str(v) for v in values[qi].unique()]
        judge = expected.semantics[qi].judge(distinct)
        allowed = expected.labels[qi]
        vs, labels, oks = [], [], []
        unchecked = false = 0
        for value in distinct:
            for label in allowed.get(value, ()):
                if label not in released[qi]:
                    continue
                verdict = judge(value, label)
                unchecked += verdict is None
                false += verdict is False
                vs.append(value)
                labels.append(label)
                oks.append(verdict is not False)
        pairs[qi] = pa.table(
            {
                "v": pa.array(vs, pa.string()),
                "label": pa.array(labels, pa.string()),
                "ok": pa.array(oks, pa.bool_()),
            }
        )
        report[qi] = {
            "semantics": expected.semantics[qi].kind,
            "pairs": len(vs),
            "false": false,
            "unchecked": unchecked,
        }
    columns = {f"v{i}": pa.array(values[qi].to_numpy(dtype=object), pa.string()) for i, qi in enumerate(qis)}
    columns["n"] = pa.array(frame[COUNT].to_numpy(dtype="int64"), pa.int64())
    names = {qi: f"__truth_pairs_{i}" for i, qi in enumerate(qis)}
    con.register("__truth_input", pa.table(columns))
    for qi, name in names.items():
        con.register(name, pairs[qi])
    try:
        if expected.any_level:
            failures += _per_column(con, qis, classes, names)
        else:
            failures += _per_class(con, qis, classes, names)
    finally:
        con.unregister("__truth_input")
        for name in names.values():
            con.unregister(name)
        con.execute("DROP TABLE IF EXISTS __truth_mapped")
    checks["truth"] = {"columns": report, "passed": not failures}
    return failures


def _label(value: Any) -> str:
    return "" if value is None else str(value)


def _false_pair(qi: str, row: Sequence[Any], records: str) -> str:
    more = f"; {int(row[3]):,} such values" if int(row[3]) > 1 else ""
    return (
        f"column {qi!r}: label {_label(row[1])!r} is not true of value {_label(row[0])!r} "
        f"({int(row[2]):,} {records} records{more})"
    )


def _per_class(
    con: duckdb.DuckDBPyConnection, qis: Sequence[str], classes: str, names: Mapping[str, str]
) -> list[str]:
    """Global recoding: every input tuple mapped to its class through its pairs (one label per
    value at the released level), kept when the release holds the class; the false pairs of
    those, then each released class's records against the input records its labels are true of."""
    failures: list[str] = []
    k = range(len(qis))
    select = ", ".join(f"p{i}.label AS q{i}, p{i}.ok AS ok{i}, t.v{i} AS v{i}" for i in k)
    joins = " ".join(f"JOIN {names[qi]} AS p{i} ON t.v{i} = p{i}.v" for i, qi in enumerate(qis))
    on = " AND ".join(f"m.q{i} = COALESCE(r.q{i}, '')" for i in k)
    con.execute(
        f"CREATE TEMP TABLE __truth_mapped AS SELECT m.* FROM "
        f"(SELECT {select}, t.n FROM __truth_input AS t {joins}) AS m SEMI JOIN {classes} AS r ON {on}"
    )
    for i, qi in enumerate(qis):
        rows = con.execute(
            f"SELECT v{i}, q{i}, SUM(n), COUNT(*) OVER () FROM __truth_mapped WHERE NOT ok{i} "
            "GROUP BY 1, 2 ORDER BY 3 DESC, 1, 2 LIMIT 1"
        ).fetchall()
        if rows:
            failures.append(_false_pair(qi, rows[0], "released"))
    true = " AND ".join(f"ok{i}" for i in k)
    by = ", ".join(f"q{i}" for i in k)
    row = con.execute(
        f"SELECT COUNT(*), COALESCE(SUM(r.n - COALESCE(m.cap, 0)), 0) FROM {classes} AS r LEFT JOIN "
        f"(SELECT {by}, SUM(n) FILTER (WHERE {true}) AS cap FROM __truth_mapped GROUP BY {by}) AS m "
        f"ON {on} WHERE r.n > COALESCE(m.cap, 0)"
    ).fetchall()[0]
    if int(row[0]):
        failures.append(
            f"{int(row[1]):,} released records in {int(row[0]):,} classes are not input records their "
            "labels are true of (a record written with another record's label)"
        )
    return failures


def _per_column(
    con: duckdb.DuckDBPyConnection, qis: Sequence[str], classes: str, names: Mapping[str, str]
) -> list[str]:
    """Local recoding: per column, the false pairs whose label the release holds, then each
    label's records against the input records it is true of."""
    failures: list[str] = []
    for i, qi in enumerate(qis):
        table = names[qi]
        rows = con.execute(
            f"SELECT p.v, p.label, SUM(t.n), COUNT(*) OVER () FROM {table} AS p JOIN __truth_input AS t "
            f"ON t.v{i} = p.v WHERE NOT p.ok GROUP BY 1, 2 ORDER BY 3 DESC, 1, 2 LIMIT 1"
        ).fetchall()
        row = rows[0] if rows else None
        if row is not None:
            failures.append(_false_pair(qi, row, "input"))
        row = con.execute(
            f"SELECT COUNT(*), COALESCE(SUM(r.n - COALESCE(c.cap, 0)), 0) FROM "
            f"(SELECT COALESCE(q{i}, '') AS label, SUM(n) AS n FROM {classes} GROUP BY 1) AS r "
            f"LEFT JOIN (SELECT p.label, SUM(t.n) AS cap FROM {table} AS p JOIN __truth_input AS t "
            f"ON t.v{i} = p.v WHERE p.ok GROUP BY 1) AS c ON r.label = c.label "
            "WHERE r.n > COALESCE(c.cap, 0)"
        ).fetchall()[0]
        if int(row[0]):
            failures.append(
                f"column {qi!r}: {int(row[1]):,} released records carry labels that fewer input records "
                "are true of"
            )
    return failures


__all__ = ["TruthExpectations", "check_truth"]
