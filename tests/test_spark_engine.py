"""The spark engine (issue 12): the same release as the memory and DuckDB engines, verified by Spark.

One local SparkSession for the whole module (starting one takes tens of seconds).
Skipped, with the reason, only when pyspark or Java 17+ is missing.
"""

from __future__ import annotations

import collections
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from safeshare.config import load_config
from safeshare.data.engines.duckdb_engine import DuckDBEngine
from safeshare.data.engines.memory import MemoryEngine
from safeshare.data.engines.spark_engine import (
    MISSING_MESSAGE,
    SparkEngine,
    SparkOptions,
    java_version,
    render_keys,
)
from safeshare.data.source import TableSource
from safeshare.errors import DataError
from safeshare.verify import verify_release
from safeshare.verify.spark import verify_release_spark
from safeshare.workflows.publish import write_release
from safeshare.workflows.release import ReleaseContext, release_expectations
from tests.conftest import write_small_adult


def _spark_missing() -> str | None:
    try:
        import pyspark  # noqa: F401
    except ImportError:
        return "pyspark is not installed (pip install 'safeshare[spark]')"
    version = java_version()
    if version is None or version < 17:
        return f"Java 17+ is required by Spark (found {version})"
    return None


REASON = _spark_missing()
#: the JVM options of the tests' Spark session (see the ``spark`` fixture)
TEST_JVM_OPTIONS = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-XX:CICompilerCount=1")
needs_spark = pytest.mark.skipif(REASON is not None, reason=REASON or "")


@pytest.fixture(scope="module")
def spark() -> Any:
    if REASON is not None:
        pytest.skip(REASON)
    from safeshare.data.engines.spark_engine import build_session

    # The tests' JVM compiles with C1 only and collects with the serial collector: on a few
    # thousand records Spark's JVM spent 40 s of CPU (most of it the C2 compiler's threads, on
    # 2 cores beside the other test worker), 22 s so (issue 36); the results do not depend on
    # the JIT. JDK_JAVA_OPTIONS is read by every `java` that spark-submit starts.
    before = os.environ.get("JDK_JAVA_OPTIONS")
    os.environ["JDK_JAVA_OPTIONS"] = " ".join(filter(None, [before, *TEST_JVM_OPTIONS]))
    try:
        session = build_session(SparkOptions(master="local[2]", shuffle_partitions=4))
    finally:
        if before is None:
            del os.environ["JDK_JAVA_OPTIONS"]
        else:
            os.environ["JDK_JAVA_OPTIONS"] = before
    yield session
    session.stop()


def _anonymize(cfg: Any, engine: Any, out: Path) -> Any:
    from safeshare.workflows.anonymizer import Anonymizer

    anonymizer = Anonymizer(cfg.spec())
    result = anonymizer.fit(engine)
    # the run's warnings that contradict its headline, acknowledged (issue 33)
    acknowledged = ReleaseContext(accepted_warnings=("kept-column-identifying", "subgroup-suppressed"))
    return result, write_release(result, engine, out, fmt="parquet", html=False, context=acknowledged)


def _rows(path: Path) -> collections.Counter[tuple[Any, ...]]:
    frame = pq.read_table(path).to_pandas()
    return collections.Counter(
        map(tuple, frame.astype(object).where(frame.notna(), None).to_numpy().tolist())
    )


@needs_spark
def test_three_engines_give_the_same_release(spark: Any, tmp_path: Path) -> None:
    """Adult subset, k=5 with 5% suppression: same rows (multiset) and figures on every engine."""
    directory = write_small_adult(tmp_path, n_train=2000)
    cfg = load_config(directory / "adult.yaml")
    assert cfg.max_suppression > 0
    results = {}
    for name, engine in (
        ("memory", MemoryEngine(cfg.source)),
        ("duckdb", DuckDBEngine(cfg.source)),
        ("spark", SparkEngine(cfg.source, session=spark)),
    ):
        with engine:
            results[name] = _anonymize(cfg, engine, tmp_path / f"out-{name}")
    rows = {name: _rows(pub.release) for name, (_, pub) in results.items()}
    assert rows["memory"] == rows["duckdb"] == rows["spark"]
    figures = {
        name: (
            pub.report["node"],
            pub.report["records_out"],
            pub.report["suppressed_records"],
            pub.report["loss"],
        )
        for name, (_, pub) in results.items()
    }
    assert figures["memory"] == figures["duckdb"] == figures["spark"]
    spark_pub = results["spark"][1]
    assert spark_pub.report["suppressed_records"] > 0  # the suppression path ran
    assert spark_pub.report["engine"] == "spark"
    assert spark_pub.release.is_dir() and (spark_pub.release / "_SUCCESS").exists()
    assert spark_pub.report["verification"]["checks"]["spark"]["passed"]
    assert not [p for p in spark_pub.release.iterdir() if p.name.endswith(".crc")]


@needs_spark
def test_grouped_counts_match_memory_for_typed_parquet(spark: Any, tmp_path: Path) -> None:
    """Doubles (-0.0, NaN, 1e-05), floats, integers with nulls, booleans, padded strings render alike."""
    path = tmp_path / "t.parquet"
    table = pa.table(
        {
            "d": pa.array([0.1, -0.0, 0.0, float("nan"), None, 1e-05, 1e16, 0.1], pa.float64()),
            "f": pa.array([0.1, 0.5, None, 0.1, 2.0, 0.1, 0.1, 0.1], pa.float32()),
            "i": pa.array([1, None, 3, 1, 1, 1, 1, 1], pa.int64()),
            "b": pa.array([True, False, None, True, True, True, True, True]),
            "s": pa.array([" a", "a ", "?", "", None, "\u3000a", "b", "b"]),
        }
    )
    pq.write_table(table, path)
    source = TableSource(path, missing=("?",))
    memory = MemoryEngine(source)
    with SparkEngine(source, session=spark) as engine:
        for cols in (["d"], ["f"], ["i", "b"], ["s"], ["d", "f", "i", "b", "s"]):
            expected = memory.grouped_counts(cols).sort_values(cols).reset_index(drop=True)
            got = engine.grouped_counts(cols).sort_values(cols).reset_index(drop=True)
            pd.testing.assert_frame_equal(got, expected, check_dtype=False)
        assert engine.n_records() == 8


def test_render_keys_is_the_memory_engines_text() -> None:
    doubles = pd.Series(["1.0E-5", "-0.0", "NaN", None, "1.0E16"])
    assert list(render_keys(doubles, "double", ())) == ["1e-05", "-0.0", "", "", "1e+16"]
    strings = pd.Series([None, "", " x\u2003", "?"])
    assert list(render_keys(strings, "string", ("?", "NA"))) == ["?", "?", "x", "?"]


@pytest.mark.slow  # make test-all: make test keeps the three engines' equal release (issue 36)
@needs_spark
def test_a_tampered_release_fails_the_spark_verification(spark: Any, tmp_path: Path) -> None:
    directory = write_small_adult(tmp_path, n_train=2000)
    cfg = load_config(directory / "adult.yaml")
    with SparkEngine(cfg.source, session=spark) as engine:
        result, published = _anonymize(cfg, engine, tmp_path / "out")
        expected = release_expectations(result, engine.columns())
        assert verify_release_spark(spark, published.release, expected).passed
        # tamper: one released record gets an age label of its own -> a class of size 1
        parts = sorted(published.release.glob("part-*.parquet"))
        frame = pq.read_table(parts[0]).to_pandas()
        qi = expected.quasi_identifiers[0]
        label = sorted(expected.allowed_labels[qi])[0]
        others = frame.drop(columns=[qi]).iloc[0]
        lonely = frame.iloc[[0]].copy()
        lonely[qi] = label
        for column in expected.quasi_identifiers[1:]:
            lonely[column] = others[column]
        tampered = pd.concat([frame, lonely, lonely.assign(**{qi: "not-a-label"})], ignore_index=True)
        pq.write_table(pa.Table.from_pandas(tampered, preserve_index=False), parts[0])
        check = verify_release_spark(spark, published.release, expected)
        assert not check.passed
        assert any("not a label" in f for f in check.failures)
        assert any("more records" in f or "fewer than k" in f for f in check.failures)
        # the DuckDB verifier reads the same partitioned directory and agrees
        assert not verify_release(published.release, "parquet", expected).passed


@needs_spark
def test_a_falsely_labelled_spark_release_is_refused(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """issue 30: the verifier judges the file Spark wrote: records of 2022-01-01 written with the
    label 2021-12 (a label of the hierarchy, true of other records) are refused, nothing published."""
    from safeshare.data.schema import Attribute, Role, Schema
    from safeshare.errors import VerificationError
    from safeshare.hierarchy.builders import DateBuilder
    from safeshare.models import KAnonymity
    from safeshare.workflows.anonymizer import AnonymizationResult, Anonymizer
    from tests.test_truth import admissions, relabel

    path = tmp_path / "a.csv"
    admissions().to_csv(path, index=False)
    schema = Schema.from_attributes(
        [Attribute("admitted", Role.QUASI, DateBuilder(levels=["month", "year"]))], Role.INSENSITIVE
    )
    with SparkEngine(TableSource(path), session=spark) as engine:
        result = Anonymizer(
            schema, [KAnonymity(2)], algorithm="node", algorithm_options={"levels": {"admitted": 1}}
        ).fit(engine)
        good = write_release(result, engine, tmp_path / "good", fmt="parquet")
        assert good.report["verification"]["checks"]["truth"]["passed"]
        monkeypatch.setattr(AnonymizationResult, "release_plan", relabel("2022-01-01", "2021-12"))
        out = tmp_path / "out"
        with pytest.raises(VerificationError, match="records in 1 classes are not input records"):
            write_release(result, engine, out, fmt="parquet")
    assert not out.exists()


@needs_spark
def test_shape_checks_and_table_input(spark: Any, tmp_path: Path) -> None:
    dup = tmp_path / "dup.csv"
    dup.write_text("a,b,A\n1,2,3\n")
    with pytest.raises(DataError, match="duplicate column name"):
        SparkEngine(TableSource(dup), session=spark)
    ragged = tmp_path / "ragged.csv"
    ragged.write_text("a,b\n1,2\n3\n")
    with pytest.raises(DataError, match="line 3: 1 fields, expected 2"):
        SparkEngine(TableSource(ragged), session=spark)
    frame = spark.createDataFrame([(" x", 1), ("y", 2), ("?", None)], "`a b` string, n long")
    frame.createOrReplaceTempView("claims_view")
    with SparkEngine(
        TableSource(Path("claims_view"), table="claims_view", missing=("?",)), session=spark
    ) as eng:
        assert eng.columns() == ["a b", "n"]
        got = eng.grouped_counts(["a b", "n"]).sort_values(["a b"]).reset_index(drop=True)
        assert got.values.tolist() == [["?", "?", 1], ["x", "1", 1], ["y", "2", 1]]
    with pytest.raises(DataError, match="--engine spark only"):
        MemoryEngine(TableSource(Path("claims_view"), table="claims_view"))


@needs_spark
def test_sampled_records_are_the_same_on_every_engine(spark: Any, tmp_path: Path) -> None:
    """The shared Bernoulli draw is keyed on file row positions: Spark's row_index = DuckDB's."""
    from safeshare.dp.drbg import CryptoRandom
    from safeshare.dp.sampling import sample_engine

    path = tmp_path / "s.parquet"
    n = 5000
    pq.write_table(
        pa.table({"id": [f"r{i}" for i in range(n)], "g": [str(i % 7) for i in range(n)]}),
        path,
        row_group_size=700,
    )
    source = TableSource(path)
    picked = {}
    for name, engine in (
        ("memory", MemoryEngine(source)),
        ("duckdb", DuckDBEngine(source)),
        ("spark", SparkEngine(source, session=spark)),
    ):
        sampled, draw = sample_engine(engine, 0.3, CryptoRandom(seed=7))
        frame = sampled.grouped_counts(["id"])
        picked[name] = set(frame["id"])
        assert sampled.n_records() == draw.records_sampled == len(picked[name])
    assert picked["memory"] == picked["duckdb"] == picked["spark"]
    assert 0.25 * n < len(picked["spark"]) < 0.35 * n


def test_missing_java_names_pyspark_and_java(tmp_path: Path) -> None:
    """Without java (empty PATH, no JAVA_HOME) the CLI stops with one line naming both (exit 2)."""
    directory = write_small_adult(tmp_path, n_train=200)
    text = (directory / "adult.yaml").read_text().replace("output: {format: csv}", "")
    (directory / "adult.yaml").write_text(text)
    env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"}
    env["PATH"] = str(tmp_path / "empty")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "safeshare",
            "anonymize",
            str(directory / "adult.yaml"),
            "--out",
            str(tmp_path / "out"),
            "--engine",
            "spark",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "pyspark" in lines[0] and "Java 17" in lines[0] and "no java found" in lines[0]
    assert MISSING_MESSAGE in lines[0]
    assert not (tmp_path / "out").exists()


def _cluster_up(host: str = "127.0.0.1", port: int = 7077) -> bool:
    try:
        with socket.create_connection((host, port), timeout=1):
            return True
    except OSError:
        return False


@pytest.mark.slow
@pytest.mark.skipif(
    REASON is not None or not _cluster_up(),
    reason="no standalone cluster on 127.0.0.1:7077 (make spark-cluster), or no pyspark/Java",
)
def test_cli_on_the_standalone_cluster(tmp_path: Path) -> None:
    """End to end through the CLI on `make spark-cluster`: the same rows as the memory engine."""
    directory = write_small_adult(tmp_path, n_train=2000)
    text = (directory / "adult.yaml").read_text().replace("output: {format: csv}", "")
    (directory / "adult.yaml").write_text(text)
    out = {}
    for engine, extra in (("memory", []), ("spark", ["--spark-master", "spark://127.0.0.1:7077"])):
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "safeshare",
                "anonymize",
                str(directory / "adult.yaml"),
                "--out",
                str(tmp_path / engine),
                "--engine",
                engine,
                "--quiet",
                "--no-tradeoff",
                *extra,
            ],
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert proc.returncode == 0, proc.stderr
        out[engine] = tmp_path / engine
    memory = pd.read_csv(out["memory"] / "release.csv", dtype=str, keep_default_na=False)
    spark_rows = _rows(out["spark"] / "release.parquet")
    assert collections.Counter(map(tuple, memory.to_numpy().tolist())) == spark_rows


def test_config_keys_and_master(tmp_path: Path) -> None:
    from safeshare.errors import ConfigError

    directory = write_small_adult(tmp_path, n_train=10)
    text = (directory / "adult.yaml").read_text().replace("engine: memory", "engine: spark")
    with pytest.raises(ConfigError, match=r"output\.format: the spark engine writes Parquet releases only"):
        (directory / "csv.yaml").write_text(text)
        load_config(directory / "csv.yaml").with_overrides()
    text = text.replace("output: {format: csv}", "")
    (directory / "a.yaml").write_text(
        text + "spark: {master: 'spark://127.0.0.1:7077', shuffle_partitions: 3}\n"
    )
    cfg = load_config(directory / "a.yaml")
    assert cfg.engine == "spark" and cfg.spark.master == "spark://127.0.0.1:7077"
    assert cfg.spark.shuffle_partitions == 3 and cfg.release_format == "parquet"
    (directory / "b.yaml").write_text(text + "spark: {master: yarn}\n")
    with pytest.raises(ConfigError, match=r"spark.master: expected local\[N\] or spark://HOST:PORT"):
        load_config(directory / "b.yaml")
    (directory / "c.yaml").write_text(text + "spark: {executors: 3}\n")
    with pytest.raises(ConfigError, match=r"spark\.executors: unknown key"):
        load_config(directory / "c.yaml")


@pytest.mark.slow  # make test-all: make test keeps the three engines' equal release (issue 36)
@needs_spark
def test_pseudonyms_and_shifted_dates_are_the_same_on_spark(spark: Any, tmp_path: Path) -> None:
    """Issue 20: the identifier treatment on Spark gives the memory engine's release, row for
    row, and the independent verifier recomputes it from the key on the Spark release."""
    from safeshare.data.identifiers import IdentifierTreatment
    from tests.identifier_helpers import TEST_KEY, make_engine, read_release, release, visits, visits_schema

    path = tmp_path / "visits.csv"
    visits(60).to_csv(path, index=False)
    schema = visits_schema()
    memory = release(
        make_engine("memory", TableSource(path), schema), schema, tmp_path / "m.parquet", "parquet"
    )
    treatment = IdentifierTreatment.from_schema(schema, TEST_KEY)
    with SparkEngine(TableSource(path), session=spark, identifiers=treatment) as engine:
        on_spark = release(engine, schema, tmp_path / "s.parquet", "parquet")
        raw = pd.concat(list(engine.raw_grouped_batches(["mrn", "admitted"])))
    assert memory.verification.passed and on_spark.verification.passed, on_spark.verification.failures
    assert on_spark.verification.checks["identifiers"]["records_checked"] == on_spark.verification.records_out
    pd.testing.assert_frame_equal(read_release(tmp_path / "m.parquet"), _frame(tmp_path / "s.parquet"))
    assert set(raw["mrn"]) == set(visits(60)["mrn"])


def _frame(path: Path) -> pd.DataFrame:
    return pq.read_table(path).to_pandas()
