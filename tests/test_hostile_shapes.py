"""Engines on hostile input shapes (issue 30, item 16; attack run N11).

A BOM CSV, a ``;`` file read with ``,``, an empty column name (CSV and Parquet), Parquet
binary / list / struct / map columns, a 5 MB field: the memory, DuckDB and Spark engines give
the same release, or the same one-line refusal (exit 2) naming the problem and never quoting
a record. A Parquet release keeps the input's type for the columns it releases verbatim
(numbers, booleans, dates, timestamps); generalized quasi-identifiers stay labels (text).
"""

from __future__ import annotations

import datetime as dt
import tempfile
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from safeshare.data.engines.duckdb_engine import DuckDBEngine
from safeshare.data.engines.memory import MemoryEngine
from safeshare.data.source import MAX_LINE_BYTES, TableSource, first_long_line
from safeshare.errors import DataError
from safeshare.verify.sql import MAX_RELEASE_LINE, release_relation
from tests.conftest import examples, run_cli

ENGINES = ("memory", "duckdb")
N = 200
DIAG = ("flu", "cold", "asthma", "none")


def _rows() -> list[str]:
    return ["age,sex,diag"] + [f"{20 + i % 40},{'fm'[i % 2]},{DIAG[i % 4]}" for i in range(N)]


def _hierarchies(directory: Path) -> None:
    (directory / "age.csv").write_text("".join(f"{a};{a // 10 * 10}s;*\n" for a in range(20, 60)))
    (directory / "sex.csv").write_text("f;*\nm;*\n")


def _config(directory: Path, data: str, engine: str, extra: str = "") -> Path:
    path = directory / f"c-{engine}.yaml"
    path.write_text(
        f"input: {{path: {data}}}\nattributes:\n  age: {{role: quasi, hierarchy: age.csv}}\n"
        "  sex: {role: quasi, hierarchy: sex.csv}\ndefault_role: insensitive\n"
        f"privacy: {{k-anonymity: {{k: 2}}}}\nmax_suppression: 0.1\nengine: {engine}\n{extra}"
        # the run's warnings that contradict its headline, acknowledged (issue 33)
        + ("" if "accept_warnings" in extra else "accept_warnings: [kept-column-identifying]\n")
    )
    return path


def _run(directory: Path, data: str, capsys: pytest.CaptureFixture[str], extra: str = "") -> dict[str, Any]:
    """``anonymize`` of ``data`` with each engine: exit status, stderr, the release's bytes."""
    out: dict[str, Any] = {}
    for engine in ENGINES:
        target = directory / f"out-{engine}"
        code, _, stderr = run_cli(
            [
                "anonymize",
                str(_config(directory, data, engine, extra)),
                "--out",
                str(target),
                "--no-tradeoff",
            ],
            capsys,
        )
        released = sorted(target.glob("release.*")) if target.exists() else []
        out[engine] = (code, stderr.strip(), released[0].read_bytes() if released else None)
    return out


def _same_refusal(results: dict[str, Any], *needles: str) -> str:
    messages = {results[e][1] for e in ENGINES}
    assert len(messages) == 1, messages  # the same line from every engine
    (message,) = messages
    assert all(results[e][0] == 2 and results[e][2] is None for e in ENGINES), results
    assert len(message.splitlines()) == 1 and message.startswith("error: "), message
    for needle in needles:
        assert needle in message, message
    return message


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    _hierarchies(tmp_path)
    (tmp_path / "plain.csv").write_text("\n".join(_rows()) + "\n")
    return tmp_path


def test_a_bom_csv_is_the_same_release_as_without(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """DuckDB named the first column '\\ufeffage' and refused the configuration's 'age'."""
    (folder / "bom.csv").write_bytes(("\ufeff" + "\n".join(_rows()) + "\n").encode())
    plain, bom = _run(folder, "plain.csv", capsys), _run(folder, "bom.csv", capsys)
    assert all(r[0] == 0 for r in (*plain.values(), *bom.values())), (plain, bom)
    assert {r[2] for r in (*plain.values(), *bom.values())} == {plain["memory"][2]}  # same bytes


def test_a_semicolon_file_read_with_commas_is_refused_with_the_delimiter(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (folder / "semi.csv").write_text("\n".join(r.replace(",", ";") for r in _rows()) + "\n")
    message = _same_refusal(_run(folder, "semi.csv", capsys), "reads as a single column", "--delimiter ';'")
    assert "set input.delimiter: ';'" in message
    # inspect and hierarchy build read it as one column without a word (a configuration's own
    # "reads as a single column" check fired only when it names several columns)
    code, _, stderr = run_cli(["inspect", str(folder / "semi.csv"), "--qi", "age"], capsys)
    assert code == 2 and "--delimiter ';'" in stderr and "unknown" not in stderr, stderr
    spec = "{type: intervals, widths: [10]}"
    args = ["hierarchy", "build", str(folder / "semi.csv"), "--column", "age", "--spec", spec]
    code, _, stderr = run_cli([*args, "--out", str(folder / "h.csv")], capsys)
    assert code == 2 and "--delimiter ';'" in stderr and not (folder / "h.csv").exists(), stderr
    # a true single-column file (no other delimiter on every line) is read as one column
    (folder / "one.csv").write_text("age\n" + "".join(f"{20 + i % 40}\n" for i in range(N)))
    assert MemoryEngine(TableSource(folder / "one.csv")).columns() == ["age"]


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_an_empty_column_name_is_refused(folder: Path, fmt: str, capsys: pytest.CaptureFixture[str]) -> None:
    """pandas called it 'Unnamed: 2' and released it; DuckDB called it 'column2' and failed."""
    if fmt == "csv":
        (folder / "e.csv").write_text("\n".join(["age,sex,", *_rows()[1:]]) + "\n")
    else:
        table = pa.table({"age": [str(20 + i % 40) for i in range(N)], "sex": ["f"] * N, "": ["x"] * N})
        pq.write_table(table, folder / "e.parquet")
    _same_refusal(_run(folder, f"e.{fmt}", capsys), "column 3 has an empty name")


@pytest.mark.parametrize(
    ("kind", "array"),
    [
        ("binary", pa.array([bytes([i % 256, 0, 255]) for i in range(N)], pa.binary())),
        ("list", pa.array([[DIAG[i % 4], "x"] for i in range(N)], pa.list_(pa.string()))),
        ("struct", pa.array([{"a": i, "b": "y"} for i in range(N)])),
        ("map", pa.array([[("k", i)] for i in range(N)], pa.map_(pa.string(), pa.int64()))),
    ],
)
def test_a_parquet_column_without_text_is_refused(
    folder: Path, kind: str, array: pa.Array, capsys: pytest.CaptureFixture[str]
) -> None:
    """Binary was a decoding error on one engine and an internal BinderException on the other."""
    table = pa.table({"age": [str(20 + i % 40) for i in range(N)], "sex": ["f"] * N, "odd": array})
    pq.write_table(table, folder / "odd.parquet")
    _same_refusal(_run(folder, "odd.parquet", capsys), "column 'odd' has Parquet type", f"({kind})")


def test_a_5_mb_field_is_refused_by_its_line_never_quoted(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Today: an internal error quoting the record (memory), DuckDB's limit (duckdb)."""
    rows = _rows()
    rows[5] = rows[5].rsplit(",", 1)[0] + ",secret" + "x" * 5_000_000
    (folder / "big.csv").write_text("\n".join(rows) + "\n")
    message = _same_refusal(_run(folder, "big.csv", capsys), "line 6: 5,000,011 bytes", f"{MAX_LINE_BYTES:,}")
    assert "secret" not in message and "xxxx" not in message


def test_the_long_line_scan_finds_the_line_across_chunks(tmp_path: Path) -> None:
    path = tmp_path / "x.csv"
    lines = ["a,b"] + ["1,2"] * 1000 + ["3," + "y" * (MAX_LINE_BYTES + 1)] + ["4,5"] * 10
    path.write_text("\n".join(lines) + "\n")
    assert first_long_line(TableSource(path)) == (1002, MAX_LINE_BYTES + 3)
    assert first_long_line(TableSource(path), 10 * MAX_LINE_BYTES) is None
    path.write_text("a,b\n" + "1," + "z" * (3 * (1 << 24)))  # no line end, longer than the chunks
    assert first_long_line(TableSource(path)) == (2, 3 * (1 << 24) + 2)
    with pytest.raises(DataError, match=r"x\.csv line 2: "):
        DuckDBEngine(TableSource(path))


@settings(max_examples=examples(200, 60), deadline=None)
@given(
    lengths=st.lists(st.integers(0, 40), min_size=1, max_size=30),
    limit=st.integers(1, 30),
    end=st.booleans(),
    cr=st.booleans(),
)
def test_the_long_line_scan_is_exact(lengths: list[int], limit: int, end: bool, cr: bool) -> None:
    """:func:`first_long_line` (a window check of the file, then the exact scan only where a
    window holds no line end) against the lines counted one by one: the first line longer than
    the limit, its line end not counted (a CR is part of the line), or none."""
    lines = [("x" * (n - 1) + "\r" if cr and n else "x" * n) for n in lengths]
    text = "\n".join(lines) + ("\n" if end else "")
    want = next(((i + 1, len(line)) for i, line in enumerate(lines) if len(line) > limit), None)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "x.csv"
        path.write_bytes(text.encode())
        assert first_long_line(TableSource(path), limit) == want


def typed_parquet(path: Path) -> Path:
    table = pa.table(
        {
            "age": [str(20 + i % 40) for i in range(N)],
            "sex": ["f" if i % 2 else "m" for i in range(N)],
            "n": pa.array([i if i % 7 else None for i in range(N)], pa.int64()),
            "small": pa.array([i % 100 for i in range(N)], pa.int16()),
            "ratio": pa.array([i / 3 for i in range(N)], pa.float64()),
            "f32": pa.array([i / 7 for i in range(N)], pa.float32()),
            "ok": pa.array([i % 3 == 0 for i in range(N)]),
            "when": pa.array(
                [dt.datetime(2020, 1, 1) + dt.timedelta(hours=i, microseconds=i) for i in range(N)],
                pa.timestamp("us"),
            ),
            "day": pa.array([dt.date(2020, 1, 1) + dt.timedelta(days=i) for i in range(N)], pa.date32()),
            "note": pa.array([None if i % 5 == 0 else f" x{i} " for i in range(N)]),
            "code": pa.array([i for i in range(N)], pa.uint64()),  # unsigned: text (Spark: decimal)
        }
    )
    pq.write_table(table, path)
    return path


EXPECTED_TYPES = {
    "age": pa.string(),  # a label
    "sex": pa.string(),
    "n": pa.int64(),
    "small": pa.int16(),
    "ratio": pa.float64(),
    "f32": pa.float32(),
    "ok": pa.bool_(),
    "when": pa.timestamp("us"),
    "day": pa.date32(),
    "note": pa.string(),
    "code": pa.string(),
}


def test_a_parquet_release_keeps_the_types_of_its_verbatim_columns(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    typed_parquet(folder / "typed.parquet")
    source = pq.read_table(folder / "typed.parquet")
    results = _run(folder, "typed.parquet", capsys, "output: {format: parquet}\n")
    assert all(results[e][0] == 0 for e in ENGINES), results
    tables = {e: pq.read_table(folder / f"out-{e}" / "release.parquet") for e in ENGINES}
    for engine, table in tables.items():
        assert {f.name: f.type for f in table.schema} == EXPECTED_TYPES, (engine, table.schema)
    assert tables["memory"].to_pylist() == tables["duckdb"].to_pylist()  # the same decoded table
    # the kept values are the input's, record for record (k = 2 suppresses nobody here)
    by_key = {(r["n"], r["ratio"], r["when"]): r for r in source.to_pylist()}
    for row in tables["memory"].to_pylist():
        original = by_key[(row["n"], row["ratio"], row["when"])]
        for column in ("small", "f32", "ok", "day"):
            assert row[column] == original[column], column
        assert row["note"] == ("" if original["note"] is None else original["note"].strip())
        assert row["age"] in {original["age"], f"{int(original['age']) // 10 * 10}s", "*"}  # a label


def test_typed_sensitive_columns_are_verified_with_missing_tokens(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """l-diversity and t-closeness re-checked by the verifier on typed columns, a declared
    missing token released as null."""
    typed_parquet(folder / "typed.parquet")
    releases = {}
    for engine in ENGINES:
        config = folder / f"s-{engine}.yaml"
        config.write_text(
            "input: {path: typed.parquet, missing: ['?']}\nattributes:\n"
            "  age: {role: quasi, hierarchy: age.csv}\n  sex: {role: quasi, hierarchy: sex.csv}\n"
            "  n: {role: sensitive}\n  ratio: {role: sensitive}\ndefault_role: insensitive\n"
            "privacy: {k-anonymity: {k: 2}, l-diversity: {l: 2, columns: [n]}, "
            "t-closeness: {t: 0.9, columns: [ratio], distance: ordered}}\n"
            f"max_suppression: 0.2\nengine: {engine}\noutput: {{format: parquet}}\n"
            "accept_warnings: [kept-column-identifying]\n"  # contradicts the headline: acknowledged
        )
        out = folder / f"s-out-{engine}"
        code, _, stderr = run_cli(["anonymize", str(config), "--out", str(out), "--no-tradeoff"], capsys)
        assert code == 0, stderr
        releases[engine] = pq.read_table(out / "release.parquet")
    assert releases["memory"].to_pylist() == releases["duckdb"].to_pylist()
    assert releases["memory"].schema.field("n").type == pa.int64()
    assert releases["memory"].column("n").null_count == sum(1 for i in range(N) if i % 7 == 0)


# ------------------------------------------------------------------ Spark, where available
def _spark_reason() -> str | None:
    try:
        import pyspark  # noqa: F401
    except ImportError:
        return "pyspark is not installed"
    from safeshare.data.engines.spark_engine import java_version

    version = java_version()
    return None if version is not None and version >= 17 else f"Java 17+ is required (found {version})"


@pytest.mark.slow  # a Spark session: about 2 minutes on a loaded 2-core machine
@pytest.mark.skipif(_spark_reason() is not None, reason=_spark_reason() or "")
def test_spark_reads_refuses_and_writes_as_the_other_engines(folder: Path) -> None:
    from safeshare.data.engines.base import ReleasePlan
    from safeshare.data.engines.spark_engine import SparkEngine, SparkOptions, build_session

    spark = build_session(SparkOptions(master="local[1]", shuffle_partitions=2))
    try:
        (folder / "bom.csv").write_bytes(("\ufeff" + "\n".join(_rows()) + "\n").encode())
        assert SparkEngine(TableSource(folder / "bom.csv"), session=spark).columns() == ["age", "sex", "diag"]
        (folder / "semi.csv").write_text("\n".join(r.replace(",", ";") for r in _rows()) + "\n")
        rows = _rows()
        rows[5] += "x" * (MAX_LINE_BYTES + 1)
        (folder / "big.csv").write_text("\n".join(rows) + "\n")
        table = pa.table({"age": ["20"] * N, "blob": pa.array([b"\xff"] * N, pa.binary())})
        pq.write_table(table, folder / "blob.parquet")
        for name in ("semi.csv", "big.csv", "blob.parquet"):
            source = TableSource(folder / name)
            with pytest.raises(DataError) as memory:
                MemoryEngine(source)
            with pytest.raises(DataError) as spark_error:
                SparkEngine(source, session=spark)
            assert str(spark_error.value) == str(memory.value), name
        source = TableSource(typed_parquet(folder / "typed.parquet"))
        ages = {str(a): f"{a // 10 * 10}s" for a in range(20, 60)}
        columns = list(EXPECTED_TYPES)
        plan = ReleasePlan(
            columns, {"age": ages, "sex": {"f": "f", "m": "m"}}, pd.DataFrame({"age": []}), "parquet"
        )
        written = {}
        for engine in (MemoryEngine(source), SparkEngine(source, session=spark)):
            target = folder / f"{engine.name}.parquet"
            engine.write_release(plan, target)
            written[engine.name] = pq.read_table(target)
        assert {f.name: f.type for f in written["spark"].schema} == EXPECTED_TYPES
        assert written["spark"].to_pylist() == written["memory"].to_pylist()
    finally:
        spark.stop()


def test_a_release_line_longer_than_the_verifier_reads_is_refused_never_quoted(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A Parquet input has no line limit; its CSV release may hold a line longer than the verifier
    reads (MAX_RELEASE_LINE). Then the release is not checked, so not published: a failed check
    (exit 1) in one line, the line not quoted (DuckDB's own error quotes it)."""
    diag = [DIAG[i % 4] for i in range(N)]
    diag[7] = "secret" + "x" * MAX_RELEASE_LINE
    table = pa.table({"age": [str(20 + i % 40) for i in range(N)], "sex": ["fm"[i % 2] for i in range(N)]})
    pq.write_table(table.append_column("diag", pa.array(diag)), folder / "long.parquet")
    results = _run(folder, "long.parquet", capsys, "output: {format: csv}\n")
    for engine in ENGINES:
        code, stderr, released = results[engine]
        assert code == 1 and released is None, (engine, code)  # a failed check: exit 1, nothing out
        last = stderr.strip().splitlines()[-1]
        assert last.startswith("error: the written release failed its independent privacy check"), last
        assert f"longer than {MAX_RELEASE_LINE:,} bytes" in last, last
        assert "secret" not in stderr and "xxxx" not in stderr
        assert not (folder / f"out-{engine}").exists() or not any((folder / f"out-{engine}").iterdir())


def test_the_verifier_reads_a_csv_release_in_buffers_not_as_one_block(tmp_path: Path) -> None:
    """DuckDB reads a CSV smaller than its buffer as one block; the verifier's buffer was 16 x a
    256 MiB line, so a 941 MiB release was one block, over the disclosure check's memory limit
    (10 million rows: an out-of-memory error). A 100 MB release within 100 MB of DuckDB memory."""
    path = tmp_path / "release.csv"
    row = "40s,f,asthma,12345,some text\n"
    with path.open("w") as handle:
        handle.write("age,sex,diag,n,t\n" + row * (100_000_000 // len(row)))
    con = duckdb.connect(config={"memory_limit": "100MB", "threads": 1})
    try:
        rows = con.execute(
            f"SELECT diag, COUNT(*) FROM {release_relation(path, 'csv', ',')} GROUP BY 1"
        ).fetchall()
    finally:
        con.close()
    assert rows == [("asthma", 100_000_000 // len(row))]
