"""Independent check that every released class holds at least k distinct people (issue 32).

With a person key (``person:``), k-anonymity counts people: a class of 5 records of 3 people
fails k = 5. The written release often cannot show whose records are whose (the person key is
dropped, or replaced by a pseudonym), so this check counts the people of each released class
from the **input**, as the engine reads it (its distinct quasi-identifier tuples with the person
key, and their record counts), mapped to the released labels by the *configured* hierarchies at
the chosen levels (never by the search's frequency table or evaluator), and joined to the classes
of the written file (``GROUP BY`` its quasi-identifiers, :mod:`safeshare.verify`):

1. every released class holds exactly the input records that map to it (the file's record count
   equals the input's): the class is then that set of records, and its people are theirs;
2. every released class holds at least ``k`` distinct people of the input;
3. when the person key is itself in the release (a pseudonym or a kept column), the distinct
   values of it per class, counted on the file, must give the same figure (a pseudonym is one to
   one with its person).

All in DuckDB SQL over the file and one registered table of the input's tuples: no code of the
search. The linked-records measure (profiles) reads the file alone: :mod:`safeshare.verify.profiles`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import duckdb
import pandas as pd
import pyarrow as pa

from safeshare.verify.sql import quote

COUNT = "__count__"


@dataclass
class PersonExpectations:
    """What the people check needs, from the configuration and the input.

    ``column``: the person key; ``k``: the fewest people a released class may hold (1: counted,
    not bounded); ``labels``: per quasi-identifier, input value -> its released label (the
    configured hierarchy at the chosen level); ``input_grain()``: the input's distinct tuples of
    the quasi-identifiers and the person key, as text, with their record counts in ``__count__``;
    ``released``: whether the person key is a column of the release.
    """

    column: str
    k: int
    labels: Mapping[str, Mapping[str, str]]
    input_grain: Callable[[], pd.DataFrame]
    released: bool = False


def check_persons(
    con: duckdb.DuckDBPyConnection,
    rel: str,
    qis: Sequence[str],
    classes: str,
    expected: PersonExpectations,
    checks: dict[str, Any],
) -> list[str]:
    """Failures of the people check (module docstring). ``classes``: the temporary table of the
    release's classes (``q{i}`` per quasi-identifier of ``qis``, ``n`` records)."""
    failures: list[str] = []
    frame = expected.input_grain()
    person = expected.column
    columns: dict[str, pa.Array] = {
        f"v{i}": pa.array(frame[qi].astype(str).to_numpy(dtype=object), pa.string())
        for i, qi in enumerate(qis)
    }
    columns["p"] = pa.array(frame[person].astype(str).to_numpy(dtype=object), pa.string())
    columns["n"] = pa.array(frame[COUNT].to_numpy(dtype="int64"), pa.int64())
    maps = {
        f"__persons_map_{i}": pa.table(
            {
                "v": pa.array(list(expected.labels[qi].keys()), pa.string()),
                "label": pa.array(list(expected.labels[qi].values()), pa.string()),
            }
        )
        for i, qi in enumerate(qis)
    }
    con.register("__persons_input", pa.table(columns))
    for name, table in maps.items():
        con.register(name, table)
    try:
        k = range(len(qis))
        labels = ", ".join(f"m{i}.label AS q{i}" for i in k)
        joins = " ".join(f"JOIN __persons_map_{i} AS m{i} ON t.v{i} = m{i}.v" for i in k)
        on = " AND ".join(f"r.q{i} = COALESCE(c.q{i}, '')" for i in k)
        by = ", ".join(f"q{i}" for i in k)
        con.execute(
            f"CREATE TEMP TABLE __persons_mapped AS SELECT {labels}, t.p, t.n "
            f"FROM __persons_input AS t {joins}"
        )
        con.execute(
            "CREATE TEMP TABLE __persons_classes AS SELECT "
            + ", ".join(f"c.q{i}" for i in k)
            + ", c.n AS file_records, COALESCE(r.records, 0) AS input_records, "
            "COALESCE(r.people, 0) AS people "
            f"FROM {classes} AS c LEFT JOIN (SELECT {by}, SUM(n) AS records, COUNT(DISTINCT p) AS people "
            f"FROM __persons_mapped GROUP BY {by}) AS r ON {on}"
        )
        row = con.execute(
            "SELECT COUNT(*) FILTER (WHERE file_records <> input_records), "
            "COALESCE(MIN(people), 0), COUNT(*) FILTER (WHERE people < ?), "
            "COALESCE(SUM(file_records) FILTER (WHERE people < ?), 0) FROM __persons_classes",
            [expected.k, expected.k],
        ).fetchall()[0]
        assert row is not None
        mismatched, fewest, below, below_records = (int(v) for v in row)
        if mismatched:
            failures.append(
                f"people: {mismatched:,} released classes do not hold the input records that map to them "
                "(their people cannot be counted)"
            )
        if below:
            failures.append(
                f"people: {below:,} released classes ({below_records:,} records) hold fewer than "
                f"k = {expected.k} people (the smallest {fewest:,}), counted by {person!r}"
            )
        on_mapped = " AND ".join(f"m.q{i} = COALESCE(c.q{i}, '')" for i in k)
        people_out = con.execute(
            f"SELECT COUNT(DISTINCT m.p) FROM __persons_mapped AS m SEMI JOIN {classes} AS c ON {on_mapped}"
        ).fetchall()[0]
        people_in = con.execute("SELECT COUNT(DISTINCT p) FROM __persons_input").fetchall()[0]
        report: dict[str, Any] = {
            "column": person,
            "k": expected.k,
            "people_in": int(people_in[0]) if people_in else 0,
            "people_out": int(people_out[0]) if people_out else 0,
            "min_class_people": fewest,
            "classes_below_k": below,
        }
        if expected.released:
            failures += _on_file(con, rel, qis, person, fewest, report)
        report["passed"] = not failures
        checks["persons"] = report
    finally:
        con.unregister("__persons_input")
        for name in maps:
            con.unregister(name)
        con.execute("DROP TABLE IF EXISTS __persons_mapped")
        con.execute("DROP TABLE IF EXISTS __persons_classes")
    return failures


def _on_file(
    con: duckdb.DuckDBPyConnection,
    rel: str,
    qis: Sequence[str],
    person: str,
    fewest: int,
    report: dict[str, Any],
) -> list[str]:
    """The released person key counted on the file itself: the fewest distinct values of a class
    must be the input's fewest people."""
    group = ", ".join(f"CAST({quote(q)} AS VARCHAR)" for q in qis)
    row = con.execute(
        f"SELECT COALESCE(MIN(people), 0) FROM (SELECT COUNT(DISTINCT CAST({quote(person)} AS VARCHAR)) AS "
        f"people FROM {rel} GROUP BY {group})"
    ).fetchall()[0]
    on_file = int(row[0]) if row else 0
    report["min_class_people_on_file"] = on_file
    if on_file != fewest:
        return [
            f"people: the release's person column {person!r} gives {on_file:,} people in its smallest "
            f"class, the input {fewest:,}"
        ]
    return []
