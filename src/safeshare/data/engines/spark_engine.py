"""The Spark engine: national-scale data on a Spark cluster (issue 12).

Same contract as the memory and DuckDB engines (:mod:`safeshare.data.engines.base`),
down to the text of every value, with the two raw-record steps written as Spark SQL
so that records never travel to the driver:

**Reading.** A CSV is read with every column a string (``header``, ``delimiter``,
``quote``/``escape`` ``"``, ``ignoreLeadingWhiteSpace`` as pandas' ``skipinitialspace``,
``mode=FAILFAST``) after the same shape checks as the other engines, run on the driver
by :mod:`safeshare.data.source` (duplicate names on the raw header, records whose field
count is not the header's). A Parquet file or directory is read with its own types; a
Spark SQL table (``input: {table: db.claims}``) through the session's catalog. Columns
are renamed to positions (``_c0 ..``) inside the engine, so names with dots or hyphens
need no quoting.

**Keys and text.** Every column has a *key*, a string expression over the raw value
that is equal for two values exactly when their released texts are equal (a double's
``CAST AS STRING`` keeps ``-0.0`` apart from ``0.0``; a float is widened to double
first, as the memory engine's ``repr(float(v))``). The key is rendered to the memory
engine's text (:func:`render_keys`: Python's shortest ``repr`` for doubles, NaN and
NULL as missing, :meth:`str.strip`, missing tokens to the first one) on the *driver*,
for distinct keys only.

**grouped_counts** is one ``GROUP BY`` of the keys (a shuffle of partial counts),
collected as a small pandas frame (one row per distinct key tuple), rendered, and
summed again by text. The last one is kept for :meth:`SparkEngine.write_release`.

**write_release** is one Spark SQL plan: each quasi-identifier's ``key -> label``
lookup table (built on the driver from its distinct keys and the plan's mapping;
an unmapped value gives NULL as ``Series.map`` gives NaN) is *broadcast* and
``LEFT JOIN``-ed on the key; the suppressed classes are removed by a ``LEFT ANTI
JOIN`` on the labels (broadcast when small); the other columns are normalized per
record (strings by a regular expression for :meth:`str.strip` and a ``CASE`` for the
missing tokens; doubles by a vectorized Python UDF printing ``repr``). Rows are sorted
by the released columns (string order is code point order, NULL first: the other
engines' order) and written as a partitioned Parquet directory (``part-*.parquet``
and ``_SUCCESS``) beside the target, then renamed onto it: the directory appears
complete or not at all. Only Parquet releases are written.

**Sampling** (:meth:`SparkEngine.sampled`): the shared Bernoulli draw of
:mod:`safeshare.dp.sampling` is keyed on the record's position in file order; here
that is Spark's ``_metadata.row_index`` of a single Parquet file (the DuckDB engine's
``file_row_number``), so the same seed samples the same records on every engine.

Known differences with the memory engine: a CSV's ``skip_rows`` and quoted fields
holding line breaks are refused (Spark's splittable CSV reader is line-based),
timestamps print in Spark's format, and a directory or table cannot be sampled.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from safeshare.data.engines.base import COUNT_COLUMN, Engine, ReleasePlan
from safeshare.data.identifiers.treatment import IdentifierTreatment, UnplacedValue, located, missing_set
from safeshare.data.source import (
    TableSource,
    check_field_counts,
    check_unique_names,
    parquet_names,
    raw_header,
)
from safeshare.errors import DataError, InputError

#: Every character that :meth:`str.strip` removes (as the DuckDB engine's ``WHITESPACE``).
WHITESPACE = (
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680"
    "\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)
_WS_CLASS = "[" + "".join(f"\\x{{{ord(c):x}}}" for c in WHITESPACE) + "]"
#: Java regular expression removing leading and trailing whitespace (``str.strip``).
STRIP_PATTERN = f"^{_WS_CLASS}+|{_WS_CLASS}+$"

#: Broadcast the suppressed classes below this many rows (a plain shuffle anti-join above).
BROADCAST_LIMIT = 500_000

MISSING_MESSAGE = (
    "the spark engine needs pyspark 4.x (pip install 'safeshare[spark]') and Java 17 or newer "
    "(java on PATH or JAVA_HOME)"
)


@dataclass(frozen=True)
class SparkOptions:
    """How to reach Spark: the ``spark:`` configuration keys and ``--spark-master``.

    ``master``: ``local[N]`` or ``spark://HOST:PORT``; ``executor_memory`` e.g. ``"2g"``;
    ``shuffle_partitions``: ``spark.sql.shuffle.partitions`` (the frequency table is
    small, so few partitions suffice).
    """

    master: str = "local[2]"
    app_name: str = "safeshare"
    executor_memory: str | None = None
    shuffle_partitions: int = 8
    driver_memory: str | None = None


_MASTER = re.compile(r"^(local(\[(\d+|\*)\])?|spark://[A-Za-z0-9.\-]+:\d+)$")


def check_master(master: str, where: str) -> str:
    """``local``, ``local[N]``, ``local[*]`` or ``spark://HOST:PORT``."""
    from safeshare.errors import ConfigError

    if not isinstance(master, str) or not _MASTER.match(master):
        raise ConfigError(f"{where}: expected local[N] or spark://HOST:PORT, got {master!r}")
    return master


def java_version() -> int | None:
    """The major version of the ``java`` that Spark will run (JAVA_HOME first, then PATH), or None."""
    home = os.environ.get("JAVA_HOME")
    java = str(Path(home) / "bin" / "java") if home and (Path(home) / "bin" / "java").exists() else None
    java = java or shutil.which("java")
    if java is None:
        return None
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    match = re.search(r'version "(\d+)(?:\.(\d+))?', out.stderr + out.stdout)
    if match is None:
        return None
    major = int(match.group(1))
    return int(match.group(2) or 0) if major == 1 else major


def require_spark() -> None:
    """Raise a one-line :class:`InputError` naming pyspark and Java when either is missing."""
    problems = []
    try:
        import pyspark

        if int(pyspark.__version__.split(".")[0]) < 4:
            problems.append(f"pyspark {pyspark.__version__} is too old")
    except ImportError:
        problems.append("pyspark is not installed")
    version = java_version()
    if version is None:
        problems.append("no java found")
    elif version < 17:
        problems.append(f"java {version} is too old")
    if problems:
        raise InputError(f"{MISSING_MESSAGE}: {'; '.join(problems)}")


def build_session(options: SparkOptions) -> Any:
    """A SparkSession for ``options`` (no UI, no progress bars, no ``.crc`` files)."""
    require_spark()
    from pyspark.sql import SparkSession

    builder = (
        SparkSession.builder.master(options.master)
        .appName(options.app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", str(options.shuffle_partitions))
        # plain local files: no .crc side files in the release directory
        .config("spark.hadoop.fs.file.impl", "org.apache.hadoop.fs.RawLocalFileSystem")
        .config("spark.hadoop.fs.file.impl.disable.cache", "true")
        .config("spark.sql.session.timeZone", "UTC")
    )
    if options.executor_memory:
        builder = builder.config("spark.executor.memory", options.executor_memory)
    if options.driver_memory:  # the driver JVM's heap (it holds only the frequency table)
        builder = builder.config("spark.driver.memory", options.driver_memory)
    host = options.master.removeprefix("spark://").split(":")[0]
    if options.master.startswith("local") or host in ("127.0.0.1", "localhost"):
        builder = builder.config("spark.driver.host", "127.0.0.1")
        builder = builder.config("spark.driver.bindAddress", "127.0.0.1")
        builder = builder.config("spark.pyspark.python", sys.executable)  # same machine: this Python
    try:
        session = builder.getOrCreate()
    except Exception as exc:
        raise InputError(f"cannot start Spark ({options.master}): {_one_line(exc)}") from None
    session.sparkContext.setLogLevel("ERROR")
    return session


def _one_line(exc: BaseException) -> str:
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    text = lines[0] if lines else type(exc).__name__
    return text if len(text) <= 300 else text[:297] + "..."


def render_keys(keys: pd.Series, kind: str, missing: Sequence[str]) -> pd.Series:
    """Keys (strings or None) of a column of ``kind`` -> the memory engine's text of the values."""

    def one(v: object) -> str:
        if v is None or (isinstance(v, float) and v != v):
            return ""
        s = str(v)
        if kind == "double":
            f = float(s)
            return "" if f != f else repr(f)
        return s.strip()

    out = keys.astype(object).map(one)
    if missing:
        tokens = {*missing, ""}
        out = out.map(lambda v: missing[0] if v in tokens else v)
    return out.astype(object)


def _kind(spark_type: Any) -> str:
    from pyspark.sql import types as T

    if isinstance(spark_type, T.StringType):
        return "string"
    if isinstance(spark_type, T.DoubleType | T.FloatType):
        return "double"
    return "other"


class SparkEngine(Engine):
    """Reads Parquet/CSV paths or a Spark SQL table with Spark; see the module docstring.

    Parameters
    ----------
    source: the input (``TableSource.table`` set: a table of the session's catalog).
    options: how to start Spark (ignored when ``session`` is given).
    session: an existing SparkSession to use (not stopped by :meth:`close`).
    identifiers: pseudonyms and shifted dates applied to every record as it is read
        (:mod:`safeshare.data.identifiers.treatment`): the mapping tables are built on the
        driver from distinct texts and joined to the records (broadcast when small).
    """

    name = "spark"

    def __init__(
        self,
        source: TableSource,
        options: SparkOptions | None = None,
        session: Any = None,
        identifiers: IdentifierTreatment | None = None,
    ) -> None:
        self.source = source
        self.label = f"table {source.table}" if source.table else str(source.path)
        self._missing = tuple(source.missing)
        self._owns_session = session is None
        self._groups: tuple[frozenset[int], pd.DataFrame] | None = None
        self._n_records: int | None = None
        self.spark = session if session is not None else build_session(options or SparkOptions())
        try:
            frame, names = self._read(source)
        except InputError:
            self.close()
            raise
        cols = [str(n).strip() for n in names]
        if len(set(cols)) != len(cols):
            raise DataError(f"{self.label}: duplicate column names")
        self._names = cols
        self.df = frame.toDF(*[f"_c{i}" for i in range(len(cols))])
        self._kinds = [_kind(f.dataType) for f in self.df.schema.fields]
        #: before the identifier treatment: the records and column kinds as read
        self._raw_df, self._raw_kinds = self.df, list(self._kinds)
        if identifiers is not None:
            self._treat(identifiers)

    # ------------------------------------------------------------------ identifiers
    def _treat(self, treatment: IdentifierTreatment) -> None:
        """Replace the treated columns by their treated text (mapping tables joined on the
        raw text of the column and of its person); every later step reads ``self.df``."""
        from pyspark.sql import functions as F

        for column in treatment.read_columns:
            self._index(column)
        absent = sorted(missing_set(self._missing))
        reads = sorted({self._index(c) for c in treatment.read_columns})
        frame = self.df.select("*", *[self._text(i).alias(f"__t{i}") for i in reads])
        treated: dict[int, Any] = {}

        def distinct(i: int, present: int | None, skip_missing: bool) -> list[str]:
            rows = frame
            if skip_missing:
                rows = rows.where(~F.col(f"__t{i}").isin(absent))
            if present is not None:
                rows = rows.where(~F.col(f"__t{present}").isin(absent))
            return [str(v) for v in self._collect(rows.select(f"__t{i}").distinct())[f"__t{i}"]]

        def lookup(table: pd.DataFrame, schema: str) -> Any:
            out = self.spark.createDataFrame(table, schema=schema)
            return F.broadcast(out) if len(table) <= BROADCAST_LIMIT else out

        try:
            for j, shifted in enumerate(treatment.shifted_dates):
                d, p = self._index(shifted.name), self._index(shifted.person)
                persons = distinct(p, d, skip_missing=False)
                shifts = treatment.shift_map(shifted, persons, self._missing)
                treatment.check_persons(
                    shifted, len(persons), int(frame.where(~F.col(f"__t{d}").isin(absent)).count())
                )
                dates = distinct(d, None, skip_missing=True)
                days = treatment.day_map(shifted, dates)
                span = list(treatment.day_range(shifted, min(days), max(days))) if days else []
                texts = treatment.day_texts(shifted, span)
                frame = frame.join(
                    lookup(
                        pd.DataFrame({f"__spv{j}": persons, f"__sps{j}": shifts}),
                        f"__spv{j} string, __sps{j} int",
                    ),
                    F.col(f"__t{p}") == F.col(f"__spv{j}"),
                    "left",
                )
                frame = frame.join(
                    lookup(
                        pd.DataFrame({f"__sdv{j}": dates, f"__sdo{j}": days}),
                        f"__sdv{j} string, __sdo{j} int",
                    ),
                    F.col(f"__t{d}") == F.col(f"__sdv{j}"),
                    "left",
                )
                frame = frame.join(
                    lookup(
                        pd.DataFrame({f"__sto{j}": span, f"__stt{j}": texts}),
                        f"__sto{j} int, __stt{j} string",
                    ),
                    F.col(f"__sto{j}") == F.col(f"__sdo{j}") + F.col(f"__sps{j}"),
                    "left",
                )
                treated[d] = F.when(F.col(f"__t{d}").isin(absent), F.col(f"__t{d}")).otherwise(
                    F.col(f"__stt{j}")
                )
            for j, pseudonym in enumerate(treatment.pseudonyms):
                i = self._index(pseudonym.name)
                values = distinct(i, None, skip_missing=True)
                hashed = treatment.pseudonym_map(pseudonym, values)
                treatment.check_pseudonyms(pseudonym, len(values), len(set(hashed)))
                frame = frame.join(
                    lookup(
                        pd.DataFrame({f"__ipv{j}": values, f"__iph{j}": hashed}),
                        f"__ipv{j} string, __iph{j} string",
                    ),
                    F.col(f"__t{i}") == F.col(f"__ipv{j}"),
                    "left",
                )
                treated[i] = F.when(F.col(f"__t{i}").isin(absent), F.col(f"__t{i}")).otherwise(
                    F.col(f"__iph{j}")
                )
        except UnplacedValue as exc:
            raise located(exc, self.label, self._names, self.source, self._missing) from None
        self.df = frame.select(
            *[
                (treated[i] if i in treated else F.col(f"_c{i}")).alias(f"_c{i}")
                for i in range(len(self._names))
            ]
        )
        self._kinds = ["string" if i in treated else kind for i, kind in enumerate(self._kinds)]
        self._groups = None
        self.identifiers = treatment

    def raw_grouped_batches(
        self, columns: Sequence[str], batch_rows: int = 1_000_000
    ) -> Iterator[pd.DataFrame]:
        """The input's distinct tuples of ``columns`` before the identifier treatment, with counts."""
        if self.identifiers is None:
            yield from super().raw_grouped_batches(columns, batch_rows)
            return
        indices = list(dict.fromkeys(self._index(c) for c in columns))
        grouped = self._raw_df.groupBy(*[self._key(i, self._raw_df).alias(f"k{i}") for i in indices]).count()
        keys = self._collect(grouped.withColumnRenamed("count", "n"))
        text = pd.DataFrame(
            {self._names[i]: render_keys(keys[f"k{i}"], self._raw_kinds[i], self._missing) for i in indices}
        )
        text[COUNT_COLUMN] = keys["n"].astype("int64").to_numpy()
        names = [self._names[i] for i in indices]
        out = text.groupby(names, sort=True, dropna=False)[COUNT_COLUMN].sum().reset_index()
        out[COUNT_COLUMN] = out[COUNT_COLUMN].astype("int64")
        for start in range(0, max(len(out), 1), batch_rows):
            yield out.iloc[start : start + batch_rows].reset_index(drop=True)

    # ------------------------------------------------------------------ reading
    def _read(self, source: TableSource) -> tuple[Any, list[str]]:
        from pyspark.errors import PySparkException

        try:
            if source.table:
                frame = self.spark.table(source.table)
                names = list(frame.columns)
                check_unique_names(names, self.label)
            elif source.fmt == "parquet":
                if not source.path.exists():
                    raise DataError(f"cannot read {source.path}: no such file or directory")
                if source.path.is_file():
                    check_unique_names(parquet_names(source), str(source.path))
                frame = self.spark.read.parquet(str(source.path))
                names = list(frame.columns)
                check_unique_names(names, str(source.path))
            else:
                frame, names = self._read_csv(source)
            if source.names and source.fmt == "parquet":
                if len(source.names) != len(names):
                    raise DataError(f"{self.label}: {len(source.names)} names given for {len(names)} columns")
                names = list(source.names)
        except PySparkException as exc:
            raise DataError(f"cannot read {self.label}: {_one_line(exc)}") from None
        return frame, names

    def _read_csv(self, source: TableSource) -> tuple[Any, list[str]]:
        from pyspark.sql import types as T

        source.check_readable()
        if source.skip_rows:
            raise DataError(f"{source.path}: input.skip_rows is not supported by the spark engine")
        header = raw_header(source)
        if source.header and not source.names:
            check_unique_names(header, str(source.path))
        n_fields = len(source.names) if source.names else len(header)
        if source.ragged == "error":
            check_field_counts(source, n_fields)
        if source.names and len(source.names) != len(header) and source.ragged == "error":
            raise DataError(f"{source.path}: {len(source.names)} names given for {len(header)} columns")
        schema = T.StructType([T.StructField(f"c{i}", T.StringType()) for i in range(n_fields)])
        frame = self.spark.read.csv(
            str(source.path),
            schema=schema,
            header=source.header,
            sep=source.delimiter,
            quote='"',
            escape='"',
            encoding=source.encoding,
            ignoreLeadingWhiteSpace=True,
            nullValue=None,
            emptyValue="",
            mode="PERMISSIVE" if source.ragged == "pad" else "FAILFAST",
            enforceSchema=True,
        )
        return frame, list(source.names) if source.names else header

    # ------------------------------------------------------------------ keys and text
    def _key(self, i: int, frame: Any = None) -> Any:
        """The string key of column ``i`` of ``frame`` (default: the records as the engine
        reads them, after any identifier treatment; see the module docstring)."""
        from pyspark.sql import functions as F

        c = F.col(f"_c{i}")
        field = (self.df if frame is None else frame).schema.fields[i]
        from pyspark.sql import types as T

        if isinstance(field.dataType, T.StringType):
            return c
        if isinstance(field.dataType, T.FloatType):
            return c.cast("double").cast("string")
        if isinstance(field.dataType, T.BooleanType):
            return F.when(c.isNull(), F.lit(None)).when(c, F.lit("true")).otherwise(F.lit("false"))
        return c.cast("string")

    def _text(self, i: int) -> Any:
        """Column ``i`` as released text, per record (for the columns released unchanged)."""
        from pyspark.sql import functions as F

        kind = self._kinds[i]
        key = self._key(i)
        if kind == "double":
            text = _double_text_udf()(key)
        elif kind == "string":
            text = F.regexp_replace(F.coalesce(key, F.lit("")), STRIP_PATTERN, "")
        else:
            text = F.coalesce(key, F.lit(""))
        if self._missing:
            tokens = list(dict.fromkeys([*self._missing, ""]))
            text = F.when(text.isin(tokens), F.lit(self._missing[0])).otherwise(text)
        return text

    def _index(self, column: str) -> int:
        try:
            return self._names.index(column)
        except ValueError:
            raise DataError(f"{self.label}: unknown column {column!r}") from None

    def _distinct_keys(self, indices: Sequence[int]) -> pd.DataFrame:
        """Distinct key tuples of ``indices`` (columns ``k{i}``) with counts ``n``: the one pass."""
        wanted = frozenset(indices)
        if self._groups is not None and wanted <= self._groups[0]:
            return self._groups[1]
        order = sorted(wanted)
        grouped = self.df.groupBy(*[self._key(i).alias(f"k{i}") for i in order]).count()
        frame = self._collect(grouped.withColumnRenamed("count", "n"))
        self._groups = (wanted, frame)
        return frame

    def _collect(self, frame: Any) -> pd.DataFrame:
        from py4j.protocol import Py4JJavaError
        from pyspark.errors import PySparkException

        try:
            rows = frame.collect()
        except (PySparkException, Py4JJavaError) as exc:
            raise DataError(f"cannot read {self.label}: {_spark_error(exc)}") from None
        return pd.DataFrame([r.asDict() for r in rows], columns=frame.columns)

    # ------------------------------------------------------------------ Engine API
    def columns(self) -> list[str]:
        return list(self._names)

    def n_records(self) -> int:
        if self._n_records is None:
            if self._groups is not None:
                self._n_records = int(self._groups[1]["n"].sum())
            else:
                self._n_records = int(self._collect(self.df.groupBy().count())["count"].iloc[0])
        return self._n_records

    def grouped_counts(self, columns: Sequence[str]) -> pd.DataFrame:
        indices = list(dict.fromkeys(self._index(c) for c in columns))
        if not indices:
            return pd.DataFrame({COUNT_COLUMN: [self.n_records()]}, dtype="int64")
        keys = self._distinct_keys(indices)
        text = pd.DataFrame(
            {self._names[i]: render_keys(keys[f"k{i}"], self._kinds[i], self._missing) for i in indices}
        )
        text[COUNT_COLUMN] = keys["n"].astype("int64").to_numpy()
        names = [self._names[i] for i in indices]
        out = text.groupby(names, sort=True, dropna=False)[COUNT_COLUMN].sum().reset_index()
        out[COUNT_COLUMN] = out[COUNT_COLUMN].astype("int64")
        return out

    def write_release(self, plan: ReleasePlan, target: Path) -> int:
        """One Spark plan: broadcast lookups per QI, an anti-join, a sort, a Parquet directory."""
        from pyspark.sql import functions as F

        if plan.format != "parquet":
            raise InputError("the spark engine writes Parquet releases only: set output.format: parquet")
        qis = plan.quasi_identifiers
        qi_idx = [self._index(q) for q in qis]
        frame = self.df
        labels: dict[int, Any] = {}
        keys = self._distinct_keys(qi_idx) if qis else pd.DataFrame()
        for j, (qi, i) in enumerate(zip(qis, qi_idx, strict=True)):
            distinct = keys[f"k{i}"].drop_duplicates().reset_index(drop=True)
            text = render_keys(distinct, self._kinds[i], self._missing)
            label = text.map(plan.generalization[qi])
            lookup = pd.DataFrame({f"__key{j}": distinct.astype(object), f"__label{j}": label})
            lookup = lookup.astype(object).where(lookup.notna(), None)
            table = self.spark.createDataFrame(lookup, schema=f"`__key{j}` string, `__label{j}` string")
            frame = frame.join(F.broadcast(table), self._key(i).eqNullSafe(F.col(f"__key{j}")), "left").drop(
                f"__key{j}"
            )
            labels[i] = F.col(f"__label{j}")
        if len(plan.suppressed) and qis:
            sup = plan.suppressed[qis].astype(str)
            sup.columns = [f"__sup{j}" for j in range(len(qis))]
            schema = ", ".join(f"`__sup{j}` string" for j in range(len(qis)))
            table = self.spark.createDataFrame(sup.astype(object), schema=schema)
            if len(sup) <= BROADCAST_LIMIT:
                table = F.broadcast(table)
            cond = [F.col(f"__label{j}") == F.col(f"__sup{j}") for j in range(len(qis))]
            frame = frame.join(table, cond, "left_anti")
        out = frame.select(
            *[
                (labels[i] if i in labels else self._text(i)).alias(f"__o{n}")
                for n, i in enumerate(self._index(c) for c in plan.columns)
            ]
        )
        out = out.orderBy(*[F.col(f"__o{n}").asc_nulls_first() for n in range(len(plan.columns))])
        out = out.toDF(*plan.columns)
        return self._write_parquet(out, Path(target))

    def _write_parquet(self, frame: Any, target: Path) -> int:
        """Write ``frame`` as a Parquet directory beside ``target``, then rename it onto ``target``."""
        from py4j.protocol import Py4JJavaError
        from pyspark.errors import PySparkException

        target = Path(target).absolute()
        tmp = target.parent / f".{target.name}.spark-{uuid.uuid4().hex[:12]}"
        try:
            frame.write.mode("errorifexists").option("compression", "snappy").parquet(tmp.as_uri())
            if not (tmp / "_SUCCESS").exists():
                raise DataError(f"cannot write the release of {self.label}: Spark wrote no _SUCCESS marker")
            written = self.spark.read.parquet(tmp.as_uri()).count()
            os.replace(tmp, target) if not target.exists() else _replace_dir(tmp, target)
        except (PySparkException, Py4JJavaError) as exc:
            shutil.rmtree(tmp, ignore_errors=True)
            raise DataError(f"cannot write the release of {self.label}: {_spark_error(exc)}") from None
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        return int(written)

    def sampled(self, keep: npt.NDArray[np.bool_]) -> SparkEngine:
        """This engine restricted to the records at the positions where ``keep`` is True.

        The position is the record's row index in a single Parquet file
        (``_metadata.row_index``), as the DuckDB engine's ``file_row_number``; the
        kept positions are joined to it (broadcast when small). CSV files,
        directories and tables have no stable record order across engines: refused.
        """
        from pyspark.sql import functions as F

        keep = np.asarray(keep)
        source = self.source
        if source.table or source.fmt != "parquet" or not source.path.is_file():
            raise InputError(
                f"the spark engine samples records of a single Parquet file only ({self.label} is not one): "
                "convert it to one Parquet file or use the memory engine"
            )
        if keep.dtype != np.bool_ or keep.shape != (self.n_records(),):
            raise InputError(
                f"sampling mask: expected {self.n_records()} booleans, got {keep.dtype} of shape {keep.shape}"
            )
        positions = np.flatnonzero(keep).astype(np.int64)
        kept = self.spark.createDataFrame(pd.DataFrame({"__p": positions}), schema="`__p` long")
        if len(positions) <= BROADCAST_LIMIT:
            kept = F.broadcast(kept)
        raw = self.spark.read.parquet(str(source.path))
        raw = raw.select("*", F.col("_metadata.row_index").alias("__row"))
        joined = raw.join(kept, F.col("__row") == F.col("__p"), "left_semi").drop("__row")
        clone = SparkEngine.__new__(SparkEngine)
        clone.__dict__.update(self.__dict__)
        clone._owns_session = False
        clone._groups = None
        clone._n_records = int(keep.sum())
        clone.df = joined.toDF(*[f"_c{i}" for i in range(len(self._names))])
        return clone

    def close(self) -> None:
        if getattr(self, "_owns_session", False) and getattr(self, "spark", None) is not None:
            with contextlib.suppress(Exception):
                self.spark.stop()
            self._owns_session = False


def _replace_dir(tmp: Path, target: Path) -> None:
    """Put the directory ``tmp`` in place of ``target`` (an earlier release in the private stage)."""
    old = target.parent / f".{target.name}.old-{uuid.uuid4().hex[:12]}"
    os.rename(target, old)
    os.rename(tmp, target)
    shutil.rmtree(old, ignore_errors=True) if old.is_dir() else old.unlink()


def _spark_error(exc: BaseException) -> str:
    """The first useful line of a Spark (JVM) error."""
    text = str(exc)
    for pattern in (r"\[MALFORMED_RECORD_IN_PARSING[^\]]*\][^\n]*", r"Malformed[^\n]*"):
        match = re.search(pattern, text)
        if match:
            return "a record does not parse as a row of the header's fields (check input.delimiter)"
    return _one_line(exc)


def _double_text_udf() -> Any:
    """A vectorized UDF printing a double's key (its ``CAST AS STRING``) as Python's ``repr``.

    Defined inside a function so that it is shipped to the executors by value and
    needs no safeshare installed there.
    """
    from pyspark.sql.functions import pandas_udf

    @pandas_udf("string")  # type: ignore[untyped-decorator]
    def text(keys: pd.Series) -> pd.Series:
        def one(v: object) -> str:
            if v is None:
                return ""
            f = float(str(v))
            return "" if f != f else repr(f)

        return keys.map(one)

    return text
