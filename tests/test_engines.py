"""The DuckDB engine agrees with the memory engine, value for value and byte for byte.

Both engines read the same sources (UCI Adult as CSV with and without missing
tokens, a gzip copy, a Parquet copy with int/float/bool/null columns, a small
';'-separated CSV with quoting, padding and whitespace traps, a DuckDB table),
and must report the same columns, record counts and frequency tables, and write
the same release for the same :class:`ReleasePlan` (CSV compared as text after
sorting the lines, Parquet by content). The whole workflow gives the same
report and the same release with either engine. Bad input raises a one-line
:class:`DataError`; a failing write leaves no file.
"""

from __future__ import annotations

import functools
import gzip
import math
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from safeshare import Anonymizer, KAnonymity, Schema, read_arx_csv
from safeshare.data.engines import COUNT_COLUMN, DuckDBEngine, Engine, MemoryEngine, ReleasePlan
from safeshare.data.engines.duckdb_engine import WHITESPACE, machine_defaults, release_memory_mb
from safeshare.data.schema import Attribute, Role
from safeshare.data.source import TableSource
from safeshare.errors import DataError
from safeshare.resources import duckdb_memory_limit
from safeshare.workflows.anonymizer import AnonymizationResult
from safeshare.workflows.publish import write_release
from safeshare.workflows.release import ReleaseContext
from tests.conftest import ADULT_COLUMNS, ADULT_DIR, ADULT_QIS

ADULT = ADULT_DIR / "adult.data"
EngineFactory = Callable[[TableSource], Engine]
ENGINES: dict[str, EngineFactory] = {"memory": MemoryEngine, "duckdb": DuckDBEngine}

TINY_CSV = (
    "id; city ;code;flag;note\n"
    '1; Paris ;75;true;"a;b"\n'
    '2;Lyon;  69 ;false;  "quoted ""x"""  \n'
    "3;?;NA;true;\n"
    "4;\u00a0Nice\u3000;06;;tab\there\n"
    '5;"multi\nline";13;false;#hash\n'
    "6;Lyon;69\n"
    "   \n"
    "7;Paris;75;true;\u2003\n"
    "\n"
)


def adult_source(missing: tuple[str, ...] = (), path: Path = ADULT) -> TableSource:
    return TableSource(path, header=False, names=tuple(ADULT_COLUMNS), missing=missing)


def adult_schema() -> Schema:
    attrs = [
        Attribute(q, Role.QUASI, read_arx_csv(ADULT_DIR / "hierarchies" / f"{q}.csv")) for q in ADULT_QIS
    ]
    # the other columns are kept unchanged, as the engines' comparison expects
    return Schema.from_attributes([*attrs, Attribute("fnlwgt", Role.IDENTIFYING)], Role.INSENSITIVE)


def sorted_counts(frame: pd.DataFrame) -> pd.DataFrame:
    cols = list(frame.columns)
    out = frame.astype({c: object for c in cols if c != COUNT_COLUMN}).astype({COUNT_COLUMN: "int64"})
    return out.sort_values(cols).reset_index(drop=True)


@functools.cache
def engines_for(source: TableSource) -> tuple[MemoryEngine, DuckDBEngine]:
    """Both engines over ``source`` (cached: reading is the slow part of these tests)."""
    return MemoryEngine(source), DuckDBEngine(source)


def assert_same_reading(source: TableSource, columns: list[str] | None = None) -> tuple[Engine, Engine]:
    memory, duck = engines_for(source)
    assert duck.columns() == memory.columns()
    assert duck.n_records() == memory.n_records()
    cols = columns or memory.columns()
    got, expected = duck.grouped_counts(cols), memory.grouped_counts(cols)
    assert list(got.columns) == list(expected.columns)
    assert got[COUNT_COLUMN].dtype == np.dtype("int64")
    pd.testing.assert_frame_equal(sorted_counts(got), sorted_counts(expected))
    return memory, duck


def sorted_lines(path: Path) -> tuple[str, list[str]]:
    text = path.read_bytes().decode("utf-8")
    header, _, body = text.partition("\n")
    return header, sorted(body.split("\n"))


def assert_same_release(memory: Engine, duck: Engine, plan: ReleasePlan, tmp_path: Path) -> int:
    suffix = "parquet" if plan.format == "parquet" else "csv"
    a, b = tmp_path / f"memory.{suffix}", tmp_path / f"duckdb.{suffix}"
    n_memory, n_duck = memory.write_release(plan, a), duck.write_release(plan, b)
    assert n_duck == n_memory
    if plan.format == "parquet":
        left, right = pd.read_parquet(a), pd.read_parquet(b)
        assert list(right.columns) == list(left.columns) == plan.columns
        key = list(left.columns)
        left = left.astype(object).where(left.notna(), None).sort_values(key, na_position="first")
        right = right.astype(object).where(right.notna(), None).sort_values(key, na_position="first")
        pd.testing.assert_frame_equal(right.reset_index(drop=True), left.reset_index(drop=True))
    else:
        assert sorted_lines(b) == sorted_lines(a)
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []
    return n_duck


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def adult_parquet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Adult typed by pandas (Int64 with nulls, floats with NaN, bool, boolean with nulls) as Parquet."""
    frame = pd.read_csv(ADULT, header=None, names=ADULT_COLUMNS, skipinitialspace=True).dropna(how="all")
    rng = np.random.default_rng(7)
    n = len(frame)
    frame["age"] = frame["age"].astype("int64")
    frame["hours-per-week"] = frame["hours-per-week"].astype("Int64").mask(rng.random(n) < 0.05)
    frame["ratio"] = (frame["capital-gain"] / (frame["hours-per-week"].astype("float64") + 0.5)).round(3)
    frame["ratio"] = frame["ratio"].mask(rng.random(n) < 0.05, np.nan)
    frame["weird"] = rng.choice([0.1, 1e-05, 1e16, 123456789.125, -0.0, 0.0, math.inf, 2.5e-300], n)
    frame["flag"] = frame["sex"] == "Male"
    frame["maybe"] = pd.array(rng.choice([True, False], n), dtype="boolean")
    frame["maybe"] = frame["maybe"].mask(rng.random(n) < 0.1)
    frame["workclass"] = frame["workclass"].mask(rng.random(n) < 0.02)  # None in a string column
    path = tmp_path_factory.mktemp("parquet") / "adult.parquet"
    frame.to_parquet(path, index=False)
    return path


@pytest.fixture(scope="module")
def tiny_csv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("tiny") / "tiny.csv"
    path.write_text(TINY_CSV, encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def adult_results() -> dict[str, tuple[Engine, AnonymizationResult]]:
    schema = adult_schema()
    engines: dict[str, Engine] = dict(zip(ENGINES, engines_for(adult_source()), strict=True))
    return {
        name: (e, Anonymizer(schema, [KAnonymity(5)], max_suppression=0.05, metric="prec").fit(e))
        for name, e in engines.items()
    }


# --------------------------------------------------------------------------- reading


@pytest.mark.parametrize("missing", [(), ("?",)], ids=["no-missing", "missing-?"])
def test_adult_csv_reads_identically(missing: tuple[str, ...]) -> None:
    # every column (fnlwgt: ~21k distinct values) with the missing token, the QIs without
    _memory, duck = assert_same_reading(adult_source(missing), None if missing else ADULT_QIS)
    assert duck.n_records() == 32561
    assert "?" in set(duck.grouped_counts(["workclass"])["workclass"])


def test_adult_missing_tokens_are_normalized_to_the_first() -> None:
    engine = DuckDBEngine(adult_source(("N/A", "?")))
    values = set(engine.grouped_counts(["workclass"])["workclass"])
    assert "N/A" in values and "?" not in values


def test_gzip_csv_reads_identically(tmp_path: Path) -> None:
    gz = tmp_path / "adult.data.gz"
    with ADULT.open("rb") as src, gzip.open(gz, "wb") as dst:
        shutil.copyfileobj(src, dst)
    _memory, duck = assert_same_reading(adult_source(("?",), path=gz), ADULT_QIS)
    assert duck.n_records() == 32561


def test_parquet_reads_identically(adult_parquet: Path) -> None:
    source = TableSource(adult_parquet, missing=("?", ""))
    _memory, duck = assert_same_reading(source)
    assert_same_reading(source, ["age", "workclass", "ratio", "flag", "maybe", "hours-per-week"])
    weird = set(duck.grouped_counts(["weird"])["weird"])
    assert weird == {"0.1", "1e-05", "1e+16", "123456789.125", "-0.0", "0.0", "inf", "2.5e-300"}
    assert set(duck.grouped_counts(["maybe"])["maybe"]) == {"true", "false", "?"}


def test_parquet_names_replace_the_file_names(adult_parquet: Path) -> None:
    names = tuple(f"col{i}" for i in range(len(pq.read_schema(adult_parquet).names)))
    assert_same_reading(TableSource(adult_parquet, names=names), ["col0", "col3"])


def test_tiny_csv_with_header_and_semicolons(tiny_csv: Path) -> None:
    # record 6 is short: refused by default, padded alike by both engines with ragged="pad"
    for engine in (MemoryEngine, DuckDBEngine):
        with pytest.raises(DataError, match=r"tiny.csv line 8: 3 fields, expected 5"):
            engine(TableSource(tiny_csv, delimiter=";")).grouped_counts(["id"])
    source = TableSource(tiny_csv, delimiter=";", missing=("?", "NA"), ragged="pad")
    _memory, duck = assert_same_reading(source)
    assert duck.columns() == ["id", "city", "code", "flag", "note"]
    assert duck.n_records() == 7
    notes = set(duck.grouped_counts(["note"])["note"])
    assert {"a;b", 'quoted "x"', "tab\there", "#hash", "?"} <= notes
    assert set(duck.grouped_counts(["city"])["city"]) == {"Paris", "Lyon", "?", "Nice", "multi\nline"}
    assert_same_reading(TableSource(tiny_csv, delimiter=";", ragged="pad"))
    missing = ("it's {x}", "Lyon", "true")
    assert_same_reading(TableSource(tiny_csv, delimiter=";", missing=missing, ragged="pad"))
    names = tuple("abcde")
    assert_same_reading(
        TableSource(tiny_csv, delimiter=";", skip_rows=1, header=False, names=names, ragged="pad")
    )


def test_unicode_whitespace_is_stripped_like_str_strip(tmp_path: Path) -> None:
    assert "".join(filter(str.isspace, map(chr, range(0x110000)))) == WHITESPACE
    values = [f"{c}v{i}{c}" for i, c in enumerate(WHITESPACE) if c not in "\n\r"]
    values += [" x", "x ", "  ", "", "\u200bz\u200b", "é", " é ", "a b"]
    csv_path = tmp_path / "ws.csv"
    pd.DataFrame({"v": values, "w": range(len(values))}).to_csv(csv_path, index=False)
    assert_same_reading(TableSource(csv_path))
    parquet_path = tmp_path / "ws.parquet"
    pq.write_table(pa.table({"v": values}), parquet_path)
    _memory, duck = assert_same_reading(TableSource(parquet_path))
    assert set(duck.grouped_counts(["v"])["v"]) == {v.strip() for v in values}


@pytest.mark.parametrize("columns", [1, 3])
def test_lines_of_blanks_are_skipped_as_pandas_skips_them(tmp_path: Path, columns: int) -> None:
    """Lines of spaces or tabs only and empty lines among the records: both engines skip them
    (the DuckDB engine filters blank lines only where they can read as records: in a one-column
    file, or once a short line has turned padding on)."""
    header = ",".join(f"c{j}" for j in range(columns))
    records = [",".join(f"v{i % 4}{j}" for j in range(columns)) for i in range(30)]
    lines = [header, *records[:10], "   ", *records[10:20], "\t", "", *records[20:], " \t "]
    path = tmp_path / "blanks.csv"
    path.write_text("\n".join(lines) + "\n")
    _memory, duck = assert_same_reading(TableSource(path))
    assert int(duck.grouped_counts(["c0"])[COUNT_COLUMN].sum()) == 30


def test_doubles_render_as_python_repr(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    bits = rng.integers(0, 2**63, 5000, dtype=np.uint64).view(np.float64)
    values = np.concatenate([bits[np.isfinite(bits)], rng.normal(0, 1e4, 2000), [1e16, 1e-5, 0.1 + 0.2]])
    path = tmp_path / "doubles.parquet"
    floats = (rng.normal(0, 1e3, len(values)) * rng.choice([1e-30, 1e-3, 1, 1e30], len(values))).astype(
        np.float32
    )
    pq.write_table(pa.table({"x": values, "f": floats}), path)
    duck = DuckDBEngine(TableSource(path))
    got = set(duck.grouped_counts(["x"])["x"])
    assert got == {repr(float(v)) for v in values}
    assert_same_reading(TableSource(path), ["f"])


def test_sql_source_reads_and_writes_like_a_dataframe(tmp_path: Path) -> None:
    frame = pd.DataFrame(
        {
            "age": pd.array([39, 50, None, 39], dtype="Int64"),
            "score": [0.5, None, 1e-05, 0.5],
            "ok": [True, False, True, True],
            "city": [" Paris", "Lyon ", None, "Paris"],
        }
    )
    con = duckdb.connect()
    con.register("frame_view", frame)
    con.execute("CREATE TABLE people AS SELECT * FROM frame_view")
    memory = MemoryEngine(frame, missing=("?",))
    plan = ReleasePlan(
        columns=["city", "age", "ok", "score"],
        generalization={"age": {"39": "30-39", "50": "50-59", "?": "?"}, "ok": {"true": "*", "false": "*"}},
        suppressed=pd.DataFrame({"age": ["50-59"], "ok": ["*"]}),
    )
    for n, relation in enumerate(("people", "SELECT * FROM people", "  SELECT * FROM people;  ")):
        duck = DuckDBEngine.from_sql(con, relation, missing=("?",))
        assert duck.columns() == memory.columns()
        assert duck.n_records() == 4
        got, expected = duck.grouped_counts(duck.columns()), memory.grouped_counts(memory.columns())
        pd.testing.assert_frame_equal(sorted_counts(got), sorted_counts(expected))
        (tmp_path / str(n)).mkdir()
        assert assert_same_release(memory, duck, plan, tmp_path / str(n)) == 3
        duck.close()
    assert con.execute("SELECT current_setting('preserve_insertion_order')").fetchone() == (True,)
    assert con.execute(
        "SELECT COUNT(*) FROM duckdb_tables() WHERE table_name LIKE '__safeshare%'"
    ).fetchone() == (0,)
    assert con.execute("SELECT COUNT(*) FROM people").fetchone() == (4,)  # the caller's connection stays open
    stripped = DuckDBEngine.from_sql(con, "people", strip=True).grouped_counts(["city"])
    assert sorted(stripped["city"]) == ["", "Lyon", "Paris"]
    with pytest.raises(DataError, match="no_such_table"):
        DuckDBEngine.from_sql(con, "no_such_table")


def test_parquet_without_pandas_metadata(tmp_path: Path) -> None:
    """Nullable ints and booleans written by Arrow (no pandas metadata) keep their rendering."""
    path = tmp_path / "arrow.parquet"
    table = pa.table(
        {
            "i": pa.array([39, None, 7]),
            "b": pa.array([True, None, False]),
            "u": pa.array([1, 2**63 - 1, 5], pa.uint64()),
            "d": pa.array([1.5, None, float("nan")]),
        }
    )
    pq.write_table(table, path)
    assert sorted(DuckDBEngine(TableSource(path)).grouped_counts(["i"])["i"]) == ["", "39", "7"]
    assert_same_reading(TableSource(path, missing=("?",)))


# --------------------------------------------------------------------------- writing


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_adult_release_plan_written_identically(
    adult_results: dict[str, tuple[Engine, AnonymizationResult]], fmt: str, tmp_path: Path
) -> None:
    memory, result = adult_results["memory"]
    duck, _ = adult_results["duckdb"]
    plan = result.release_plan(memory.columns(), fmt)  # type: ignore[arg-type]
    assert len(plan.suppressed) > 0
    written = assert_same_release(memory, duck, plan, tmp_path)
    assert written == result.records_in - result.suppressed_records


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_parquet_release_written_identically(adult_parquet: Path, fmt: str, tmp_path: Path) -> None:
    source = TableSource(adult_parquet, missing=("?",))
    memory, duck = MemoryEngine(source), DuckDBEngine(source)
    ages = {str(a): ("young" if a < 40 else "old") for a in range(0, 100)}
    plan = ReleasePlan(
        columns=["age", "workclass", "ratio", "weird", "flag", "maybe", "hours-per-week"],
        generalization={"age": ages, "workclass": {"Private": "Private", "?": "?"}},  # others unmapped
        suppressed=pd.DataFrame({"age": ["young"], "workclass": ["?"]}),
        format=fmt,  # type: ignore[arg-type]
    )
    assert assert_same_release(memory, duck, plan, tmp_path) > 0


def test_csv_release_quoting_matches_pandas(tiny_csv: Path, tmp_path: Path) -> None:
    source = TableSource(tiny_csv, delimiter=";", missing=("?", "NA"), ragged="pad")
    memory, duck = MemoryEngine(source), DuckDBEngine(source)
    city = {"Paris": 'P"a;ris', "Lyon": "", "?": "?", "Nice": "N,ice", "multi\nline": "two\nlines"}
    for delimiter in (";", ",", "\t"):
        plan = ReleasePlan(
            columns=["city", "code", "note", "flag"],
            generalization={"city": city, "code": {"75": "7x", "69": "6x", "06": "0x", "13": "1x", "?": "?"}},
            suppressed=pd.DataFrame({"city": ["N,ice"], "code": ["0x"]}),
            delimiter=delimiter,
        )
        (tmp_path / delimiter.strip()).mkdir(exist_ok=True)
        assert assert_same_release(memory, duck, plan, tmp_path / delimiter.strip()) == 6
    single = ReleasePlan(columns=["flag"], generalization={}, suppressed=pd.DataFrame())
    (tmp_path / "single").mkdir()
    plain = TableSource(tiny_csv, delimiter=";", ragged="pad")  # no missing tokens: empty values stay empty
    assert assert_same_release(MemoryEngine(plain), DuckDBEngine(plain), single, tmp_path / "single") == 7
    assert '""' in (tmp_path / "single" / "duckdb.csv").read_text().splitlines()  # a lone empty field


alphabet = st.sampled_from([*'ab ,;"\n\t#?', "\u00a0", "\u3000", "é", "NA"])
cells = st.lists(alphabet, max_size=4).map("".join)


# derandomized: the same 12 examples in every run (CI must not depend on the draw); the one known
# divergence such a draw found is pinned by the strict xfail below.
@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(
    rows=st.integers(1, 3).flatmap(
        lambda n: st.lists(st.lists(cells, min_size=n, max_size=n), min_size=1, max_size=6)
    ),
    delimiter=st.sampled_from([",", ";", "\t"]),
    missing=st.sampled_from([(), ("?", "NA")]),
)
def test_random_csv_read_and_written_identically(
    rows: list[list[str]], delimiter: str, missing: tuple[str, ...], tmp_path_factory: pytest.TempPathFactory
) -> None:
    tmp = tmp_path_factory.mktemp("random")
    frame = pd.DataFrame(rows, columns=[f"c{i}" for i in range(len(rows[0]))])
    path = tmp / "in.csv"
    frame.to_csv(path, index=False, sep=delimiter)
    source = TableSource(path, delimiter=delimiter, missing=missing)
    memory, duck = assert_same_reading(source)
    values = sorted(set(memory.grouped_counts(["c0"])["c0"]))
    mapping = {v: f"<{v}>" if i % 2 else v for i, v in enumerate(values)}
    plan = ReleasePlan(
        columns=list(frame.columns),
        generalization={"c0": mapping},
        suppressed=pd.DataFrame({"c0": [mapping[v] for v in values[:1]]}),
        delimiter=delimiter,
    )
    assert_same_release(memory, duck, plan, tmp)


def test_a_quoted_field_starting_with_a_space_and_a_quote(tmp_path: Path) -> None:
    """Found by the property test above: the text `` "a"`` (a space, then a quoted word), which
    pandas writes as a quoted field, its quotes doubled. Both engines read `` "a"`` and strip it to
    ``"a"``; the DuckDB engine's repair of fields after several spaces (``unquote_spaced``)
    used to take it for one and read ``a``."""
    path = tmp_path / "in.csv"
    pd.DataFrame([[' "a"', "b"], ['x "a"', "c"]], columns=["c0", "c1"]).to_csv(path, index=False)
    memory, _ = assert_same_reading(TableSource(path))
    assert sorted(memory.grouped_counts(["c0"])["c0"]) == ['"a"', 'x "a"']


def test_spaces_then_a_quoted_field_are_read_as_pandas_reads_them(tmp_path: Path) -> None:
    """One or several spaces after the delimiter, then a quoted field: pandas'
    ``skipinitialspace`` reads the field's text; DuckDB does after one space, and the DuckDB
    engine repairs the fields after several."""
    path = tmp_path / "in.csv"
    path.write_text('c0,c1\nx, "a ""b"""\ny,  "a ""b"""\nz,   "c"  \n')
    memory, _ = assert_same_reading(TableSource(path))
    assert sorted(memory.grouped_counts(["c1"])["c1"]) == ['a "b"', "c"]


@pytest.mark.xfail(
    strict=True,
    reason=(
        "known divergence: a quoted field whose text starts with two or more spaces and a quoted "
        'word (\'"  ""a"""\', the text \'  "a"\') is read as \'"a"\' by the memory engine and as \'a\' '
        "by the DuckDB engine, which cannot tell it from the unquoted field '  \"a\"' after parsing "
        "(docs/engines.md)"
    ),
)
def test_a_quoted_field_starting_with_two_spaces_and_a_quote(tmp_path: Path) -> None:
    path = tmp_path / "in.csv"
    pd.DataFrame([['  "a"', "b"]], columns=["c0", "c1"]).to_csv(path, index=False)
    assert_same_reading(TableSource(path))


# --------------------------------------------------------------------------- the whole workflow


def _numbers(report: dict[str, Any]) -> dict[str, Any]:
    keys = [*("found", "node", "levels", "records_in", "suppressed_records", "records_out", "min_class_size")]
    keys += ["equivalence_classes", "checked_nodes", "minimal_nodes", "lattice_size", "class_size_histogram"]
    return {k: report[k] for k in keys}


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_pipeline_gives_the_same_report_and_release(
    adult_results: dict[str, tuple[Engine, AnonymizationResult]], fmt: str, tmp_path: Path
) -> None:
    published = {}
    # the run's warnings that contradict its headline, acknowledged (issue 33)
    acknowledged = ReleaseContext(accepted_warnings=("subgroup-suppressed",))
    for name, (engine, result) in adult_results.items():
        published[name] = write_release(
            result,
            engine,
            tmp_path / name,
            fmt=fmt,  # type: ignore[arg-type]
            html=False,
            context=acknowledged,
        )
    memory, duck = published["memory"], published["duckdb"]
    assert duck.report["engine"] == "duckdb" and memory.report["engine"] == "memory"
    assert _numbers(duck.report) == _numbers(memory.report)
    assert duck.report["loss"] == pytest.approx(memory.report["loss"], rel=1e-12)
    assert duck.verification.to_dict() == memory.verification.to_dict()
    assert duck.report["suppressed_records"] > 0
    if fmt == "csv":
        assert sorted_lines(duck.release) == sorted_lines(memory.release)
    else:
        left, right = pd.read_parquet(memory.release), pd.read_parquet(duck.release)
        key = list(left.columns)
        pd.testing.assert_frame_equal(
            right.sort_values(key).reset_index(drop=True), left.sort_values(key).reset_index(drop=True)
        )


def test_grouped_counts_is_reproducible() -> None:
    engine = engines_for(adult_source())[1]
    first = engine.grouped_counts(ADULT_QIS)
    pd.testing.assert_frame_equal(
        engine.grouped_counts(list(reversed(ADULT_QIS)))[ADULT_QIS]
        .sort_values(ADULT_QIS)
        .reset_index(drop=True),
        first[ADULT_QIS].sort_values(ADULT_QIS).reset_index(drop=True),
    )
    pd.testing.assert_frame_equal(engine.grouped_counts(ADULT_QIS), first)  # same order, run to run
    assert engine.grouped_counts([])[COUNT_COLUMN].tolist() == [32561]
    with pytest.raises(DataError, match="unknown column 'nope'"):
        engine.grouped_counts(["nope"])


# --------------------------------------------------------------------------- errors and atomicity


def _one_line_error(factory: Callable[[], Engine | object], *needles: str) -> str:
    with pytest.raises(DataError) as info:
        engine = factory()
        if isinstance(engine, Engine):
            engine.grouped_counts(engine.columns())
    message = str(info.value)
    assert "\n" not in message and len(message) < 400
    for needle in needles:
        assert needle in message
    return message


def test_bad_input_raises_one_line_data_errors(tmp_path: Path, adult_parquet: Path) -> None:
    missing = tmp_path / "nope.csv"
    _one_line_error(lambda: DuckDBEngine(TableSource(missing)), str(missing), "no such file")
    _one_line_error(lambda: DuckDBEngine(TableSource(tmp_path)), "not a file")
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    _one_line_error(lambda: DuckDBEngine(TableSource(empty)), "empty")
    empty_pq = tmp_path / "empty.parquet"
    empty_pq.write_bytes(b"")
    _one_line_error(lambda: DuckDBEngine(TableSource(empty_pq)), "empty")
    names14 = tuple(ADULT_COLUMNS[:14])
    _one_line_error(
        lambda: DuckDBEngine(TableSource(ADULT, header=False, names=names14)),
        "line 1: 15 fields, expected 14",
    )
    names16 = (*ADULT_COLUMNS, "extra")
    _one_line_error(
        lambda: DuckDBEngine(TableSource(ADULT, header=False, names=names16)), "15 fields, expected 16"
    )
    _one_line_error(lambda: DuckDBEngine(TableSource(adult_parquet, names=("a", "b"))), "2 names")
    header = tmp_path / "header.csv"
    header.write_text("a,b,c\n1,2,3\n")
    _one_line_error(
        lambda: DuckDBEngine(TableSource(header, names=("x", "y"))), "line 1: 3 fields, expected 2"
    )
    fake = tmp_path / "fake.parquet"
    fake.write_text("this is not parquet, not at all\n" * 10)
    _one_line_error(lambda: DuckDBEngine(TableSource(fake)), str(fake))
    ragged = tmp_path / "ragged.csv"
    ragged.write_text("a,b\n1,2\n3,4,5\n")
    _one_line_error(lambda: DuckDBEngine(TableSource(ragged)), f"{ragged} line 3: 3 fields, expected 2")
    binary = tmp_path / "binary.csv"
    binary.write_bytes(b"a,b\n\xff\xfe\x00,1\n")
    _one_line_error(lambda: DuckDBEngine(TableSource(binary)), str(binary))
    _one_line_error(lambda: DuckDBEngine(TableSource(header, encoding="cp1252")), "encoding")
    dup = tmp_path / "dup.parquet"
    pq.write_table(pa.table({"a": [1], " a ": [2]}), dup)
    _one_line_error(lambda: DuckDBEngine(TableSource(dup)), "duplicate column name 'a' (also ' a ')")


def test_failing_write_leaves_no_file(tmp_path: Path) -> None:
    bad = tmp_path / "late_error.csv"
    lines = ["a,b"] + [f"{i},{i % 7}" for i in range(200_000)] + ["oops,1,2,3"]
    bad.write_text("\n".join(lines) + "\n")
    out = tmp_path / "out"
    out.mkdir()
    target = out / "release.csv"
    plan = ReleasePlan(columns=["a", "b"], generalization={}, suppressed=pd.DataFrame())
    with DuckDBEngine(TableSource(bad)) as engine:  # closed here, not by the garbage collector
        with pytest.raises(DataError, match=r"late_error.csv line 200002: 4 fields, expected 2"):
            engine.write_release(plan, target)
        assert list(out.iterdir()) == []
        target.write_text("previous release\n")
        with pytest.raises(DataError):
            engine.write_release(ReleasePlan(**{**plan.__dict__, "format": "parquet"}), target)
    assert target.read_text() == "previous release\n"
    assert [p.name for p in out.iterdir()] == ["release.csv"]


def test_close_removes_the_private_spill_directory() -> None:
    engine = DuckDBEngine(adult_source())
    spill = engine._own_temp
    assert spill is not None and spill.is_dir()
    with engine:
        assert engine.n_records() == 32561
    assert not spill.exists()
    engine.close()  # idempotent
    with pytest.raises(RuntimeError, match="closed"):
        engine.grouped_counts(["age"])


@pytest.mark.parametrize(
    ("total_gb", "cpus", "expected"),
    [
        (0.5, 1, ("256MB", 1)),  # a quarter of 512 MB is 128 MB: raised to the 256 MB floor
        (1.5, 2, ("384MB", 2)),  # a quarter of the memory
        (23, 2, ("512MB", 2)),  # capped at 512 MB (about 0.85 GB peak for 5M rows)
        (256, 64, ("512MB", 8)),  # at most 8 threads
    ],
)
def test_machine_defaults_quarter_of_memory_capped(
    total_gb: float, cpus: int, expected: tuple[str, int]
) -> None:
    assert machine_defaults(int(total_gb * 2**30), cpus) == expected
    # the readers of a written release (verifier, disclosure check, before / after) take the same
    assert duckdb_memory_limit(int(total_gb * 2**30)) == expected[0]


def test_the_readers_of_a_release_run_within_the_machines_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The disclosure check and the before / after open DuckDB with the machine's limit
    (:func:`duckdb_memory_limit`), not a fixed 512 MB: on a machine of 1 GB, 256 MB."""
    from safeshare import resources
    from safeshare.verify.disclosure import disclosure_check
    from safeshare.workflows import before_after

    limits: list[object] = []
    connect = duckdb.connect

    def recorded(*args: Any, **kwargs: Any) -> duckdb.DuckDBPyConnection:
        limits.append((kwargs.get("config") or {}).get("memory_limit"))
        return connect(*args, **kwargs)

    monkeypatch.setattr(resources.psutil, "virtual_memory", lambda: type("M", (), {"total": 2**30})())
    monkeypatch.setattr(duckdb, "connect", recorded)
    path = tmp_path / "r.csv"
    pd.DataFrame({"q": ["a", "b"] * 5, "v": ["x"] * 10}).to_csv(path, index=False)
    disclosure_check(path, "csv", ["q"], ["v"])
    before_after._released_counts(path, "csv", ",", ["v"])
    assert limits == ["256MB", "256MB"]


@pytest.mark.parametrize(
    ("records", "total_gb", "expected_mb"),
    [
        (5_000_000, 23, 512),  # 120 MB asked: the 512 MB default
        (40_000_000, 23, 960),  # 24 bytes a record
        (100_000_000, 23, 2048),  # 2.4 GB asked: the 2 GB cap
        (100_000_000, 4, 1024),  # a quarter of the memory
        (100_000_000, 1, 256),  # never below the default (a quarter of 1 GB)
    ],
)
def test_release_memory_grows_with_records_within_the_cap(
    records: int, total_gb: int, expected_mb: int
) -> None:
    assert release_memory_mb(records, total_gb * 2**30) == expected_mb


def test_default_memory_limit_and_private_spill_directory(adult_parquet: Path) -> None:
    """Without settings the engine uses machine_defaults() and spills to a fresh directory
    under the system temp directory, removed by close()."""
    engine = DuckDBEngine(TableSource(adult_parquet))
    limit_mb = int(machine_defaults()[0].removesuffix("MB"))
    reported = engine.settings()["memory_limit"]
    assert isinstance(reported, str)
    number, unit = reported.split()
    assert abs(float(number) * {"MiB": 2**20, "GiB": 2**30}[unit] - limit_mb * 10**6) < 2**20
    spill = engine._own_temp
    assert spill is not None and spill.is_dir() and spill.parent == Path(tempfile.gettempdir())
    assert engine._setting("temp_directory") == str(spill)
    engine.close()
    assert not spill.exists()


@pytest.mark.slow
def test_bounded_memory_with_spilling(tmp_path: Path) -> None:
    """2 million rows through a 200 MB DuckDB memory limit, high-cardinality columns included."""
    path = tmp_path / "big.parquet"
    con = duckdb.connect()
    con.execute(
        f"COPY (SELECT i % 97 AS a, 'v' || (hash(i) % 100000) AS b, i AS id, 'x' || i AS text "
        f"FROM range(2000000) t(i)) TO '{path}' (FORMAT parquet)"
    )
    con.close()
    engine = DuckDBEngine(TableSource(path), memory_limit="200MB", temp_directory=tmp_path / "spill")
    counts = engine.grouped_counts(["a", "b", "id"])
    assert len(counts) == 2_000_000 and int(counts[COUNT_COLUMN].sum()) == 2_000_000
    plan = ReleasePlan(
        columns=["a", "b", "text"],
        generalization={"a": {str(i): str(i // 10) for i in range(97)}},
        suppressed=pd.DataFrame({"a": ["0"]}),
        format="parquet",
    )
    written = engine.write_release(plan, tmp_path / "release.parquet")
    assert written == int(((np.arange(2_000_000) % 97) >= 10).sum())
    assert pq.ParquetFile(tmp_path / "release.parquet").metadata.num_rows == written
    engine.close()


def test_settings_report_the_limit_the_release_was_written_with(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """report.json's engine_settings: the connection's limit, and the (raised) one of the COPY."""
    import safeshare.data.engines.duckdb_engine as de

    data = tmp_path / "d.csv"
    data.write_text("a,b\n" + "".join(f"{i % 5},{i % 3}\n" for i in range(100)))
    plan = ReleasePlan(columns=["a", "b"], generalization={}, suppressed=pd.DataFrame())
    with DuckDBEngine(TableSource(data), memory_limit="300MB") as engine:  # a limit given: never raised
        engine.write_release(plan, tmp_path / "given.csv")
        given = engine.settings()
    assert given["release_memory_limit"] == given["memory_limit"]
    monkeypatch.setattr(de, "release_memory_mb", lambda records, total_bytes=None: 1000)
    with DuckDBEngine(TableSource(data)) as engine:  # the default: raised for the COPY only
        before = engine.settings()
        assert before["release_memory_limit"] == before["memory_limit"]
        engine.write_release(plan, tmp_path / "raised.csv")
        after = engine.settings()

    def mb(setting: object) -> float:
        number, unit = str(setting).split()
        return float(number) * {"MiB": 2**20, "GiB": 2**30}[unit] / 10**6

    # restored after the COPY (DuckDB's own text of it, rounded to 0.1 MiB, is what is set back)
    assert abs(mb(after["memory_limit"]) - mb(before["memory_limit"])) < 1
    assert abs(mb(after["release_memory_limit"]) - 1000) < 1


line_cells = st.lists(st.sampled_from([*"ab ;\t#?", "\u00a0", "é", "NA", '"', "\x01"]), max_size=3).map(
    "".join
)


# derandomized, as above: the draws give repeated records (so the distinct lines are few and the
# lines are taken), blank lines, lines of spaces, quotes and the lines reader's delimiter
@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(
    width=st.integers(2, 3),
    data=st.data(),
    delimiter=st.sampled_from([",", ";"]),
    missing=st.sampled_from([(), ("?", "NA")]),
    extra=st.sampled_from(["", "\n", "   \n", "a\n"]),
)
def test_a_csv_input_grouped_from_its_lines_reads_as_the_memory_engine(
    width: int,
    data: st.DataObject,
    delimiter: str,
    missing: tuple[str, ...],
    extra: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """The DuckDB engine's first pass from a CSV input's distinct lines (``_distinct_lines``,
    issue 36) reads what the memory engine reads, writes the same release, and is taken whenever
    the file holds no quote, no U+0001, no line that does not split into the header's fields
    and few distinct lines; otherwise the records are parsed (the same answer)."""
    tmp = tmp_path_factory.mktemp("lines")
    header = [f"c{i}" for i in range(width)]
    distinct = data.draw(
        st.lists(st.lists(line_cells, min_size=width, max_size=width), min_size=1, max_size=4)
    )
    body = "".join(delimiter.join(r) + "\n" for r in distinct for _ in range(3))  # each line 3 times
    text = delimiter.join(header) + "\n" + body + extra
    path = tmp / "in.csv"
    path.write_text(text, encoding="utf-8")
    try:
        memory = MemoryEngine(TableSource(path, delimiter=delimiter, missing=missing))
    except DataError:
        return  # a file the memory engine refuses (a field too many): not a reading to compare
    source = TableSource(path, delimiter=delimiter, missing=missing)
    duck = DuckDBEngine(source)
    taken: list[object] = []
    real = duck._distinct_lines
    duck._distinct_lines = lambda: taken.append(real()) or taken[-1]  # type: ignore[method-assign]
    try:
        expected = memory.grouped_counts(header)
        got = duck.grouped_counts(header)
    except DataError:
        pytest.fail("the DuckDB engine refused a file the memory engine reads")
    lines = body.splitlines() + extra.splitlines()
    clean = not any(("\x01" in line or len(line.split(delimiter)) != width) for line in lines if line)
    if '"' in text:  # quoted fields: parsed, never split (how quotes read is test_random_csv_...'s)
        assert taken[0] is None
        return
    assert (taken[0] is not None) is clean, (taken, text)
    pd.testing.assert_frame_equal(sorted_counts(got), sorted_counts(expected))
    values = sorted(set(expected["c0"]))
    plan = ReleasePlan(
        columns=header,
        generalization={"c0": {v: f"<{v}>" for v in values}},
        suppressed=pd.DataFrame(),
        delimiter=delimiter,
    )
    assert_same_release(memory, duck, plan, tmp)


@pytest.mark.parametrize(
    ("body", "taken"),
    [
        ("a,b\n" * 4 + "\n" + "c,d\n" * 4, True),  # a blank line: skipped by both scans
        ("a,b\n" * 4 + "   \n" + "c,d\n" * 4, False),  # a line of spaces: pandas skips it as blank
        ("a,b\n" * 4 + "c,\x01d\n" * 4, False),  # the lines reader's delimiter in a value
        ("a,b\n" * 4 + 'c,"d"\n' * 4, False),  # a quoted field
        ("a,b\n1,2\n3,4\n5,6\n", False),  # every line distinct: the records are parsed
    ],
)
def test_the_lines_are_taken_only_where_they_read_as_the_records(
    tmp_path: Path, body: str, taken: bool
) -> None:
    path = tmp_path / "in.csv"
    path.write_text("x,y\n" + body, encoding="utf-8")
    source = TableSource(path)
    duck = DuckDBEngine(source)
    seen: list[object] = []
    real = duck._distinct_lines
    duck._distinct_lines = lambda: seen.append(real()) or seen[-1]  # type: ignore[method-assign]
    got = duck.grouped_counts(["x", "y"])
    assert (seen[0] is not None) is taken
    expected = MemoryEngine(TableSource(path)).grouped_counts(["x", "y"])
    pd.testing.assert_frame_equal(sorted_counts(got), sorted_counts(expected))
