"""Spark benchmark (issue 12): 10 million records on the local standalone cluster, beside DuckDB.

The same Parquet file as ``bench_scale.py`` (10M records resampled from UCI Adult,
built once into ``benchmarks/data/``), the same workflow (k = 5, at most 5%
suppression, Prec, 9 quasi-identifiers, a Parquet release written, verified by
Spark and by DuckDB, and published), run with the spark engine against
``--master`` (default ``spark://127.0.0.1:7077``: start it with ``make
spark-cluster``; two workers of one core and 2 GB), then with the DuckDB engine
on the same file. It reports seconds per phase and the driver's peak memory (driver heap 512 MB):
the resident memory of this Python process plus its children (the driver JVM
that pyspark starts), sampled every 50 ms; the executors run in the workers'
processes. Target: driver peak below 1 GB (the search never collects records).

    python benchmarks/bench_spark.py [--rows 10000000] [--master spark://127.0.0.1:7077] [--quick]

Exit status 1 when the target is missed; 0 with a note when no cluster is up (skipped).
"""

from __future__ import annotations

import argparse
import contextlib
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import psutil

from bench_scale import MAX_SUPPRESSION, K, ensure_data, schema
from safeshare import Anonymizer, KAnonymity, TableSource
from safeshare.data.engines.duckdb_engine import DuckDBEngine
from safeshare.data.engines.spark_engine import SparkEngine, SparkOptions
from safeshare.workflows.publish import write_release

TARGET_DRIVER_MB = 1024.0


class DriverPeak:
    """Peak resident memory of this process and of its children (the driver JVM), and of each."""

    def __init__(self, interval: float = 0.05) -> None:
        self.interval = interval
        self.total = self.python = self.jvm = 0
        self._proc = psutil.Process()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def sample(self) -> None:
        python = self._proc.memory_info().rss
        jvm = 0
        for child in self._proc.children(recursive=True):
            with contextlib.suppress(psutil.Error):
                jvm += child.memory_info().rss
        self.python, self.jvm = max(self.python, python), max(self.jvm, jvm)
        self.total = max(self.total, python + jvm)

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.interval)

    def __enter__(self) -> DriverPeak:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def _run(engine_factory: Any, workdir: Path) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-spark-", dir=workdir) as tmp, DriverPeak() as peak:
        start = time.perf_counter()
        engine = engine_factory()
        opened = time.perf_counter() - start
        try:
            anonymizer = Anonymizer(schema(), [KAnonymity(K)], max_suppression=MAX_SUPPRESSION, metric="prec")
            result = anonymizer.fit(engine)
            published = write_release(result, engine, Path(tmp) / "out", fmt="parquet", html=False)
        finally:
            engine.close()
        total = time.perf_counter() - start
    elapsed = published.report["elapsed_s"]
    phases = {
        "open": opened,
        **{k: float(elapsed.get(k, 0.0)) for k in ("group_by", "search", "apply", "verify")},
    }
    return {
        "total_s": total,
        "phases_s": phases,
        "driver_peak_mb": peak.total / 2**20,
        "python_peak_mb": peak.python / 2**20,
        "jvm_peak_mb": peak.jvm / 2**20,
        "node": published.report["node"],
        "records_out": published.report["records_out"],
        "suppressed_records": published.report["suppressed_records"],
    }


def _cluster_up(master: str) -> bool:
    if not master.startswith("spark://"):
        return True
    host, port = master.removeprefix("spark://").split(":")
    try:
        with socket.create_connection((host, int(port)), timeout=1):
            return True
    except OSError:
        return False


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--master", default="spark://127.0.0.1:7077")
    parser.add_argument("--executor-memory", default="2g")
    parser.add_argument("--quick", action="store_true", help="1 million rows (unless --rows is given)")
    args, _ = parser.parse_known_args(argv)
    if args.quick and args.rows == 10_000_000:
        args.rows = 1_000_000
    if not _cluster_up(args.master):
        print(f"no Spark master at {args.master}: run `make spark-cluster` first (skipped)")
        return 0
    path, generate_s = ensure_data(args.rows)
    options = SparkOptions(
        master=args.master, executor_memory=args.executor_memory, shuffle_partitions=8, driver_memory="512m"
    )
    with tempfile.TemporaryDirectory(prefix="bench-spark-") as work:
        # DuckDB first: pyspark's driver JVM outlives the session and would count as a child
        duck = _run(lambda: DuckDBEngine(TableSource(path)), Path(work))
        spark = _run(lambda: SparkEngine(TableSource(path), options), Path(work))
    same = (spark["node"], spark["records_out"]) == (duck["node"], duck["records_out"])
    print(f"rows: {args.rows:,}   data: {path}" + (f" (built in {generate_s:.0f} s)" if generate_s else ""))
    print(f"{'':<26}{'spark (' + args.master + ')':>34}{'duckdb':>12}")
    for key in spark["phases_s"]:
        print(f"  {key:<24}{spark['phases_s'][key]:>34.2f}{duck['phases_s'][key]:>12.2f}")
    print(f"{'total (end to end, s)':<26}{spark['total_s']:>34.2f}{duck['total_s']:>12.2f}")
    print(f"{'driver peak RSS (MB)':<26}{spark['driver_peak_mb']:>34.0f}{duck['driver_peak_mb']:>12.0f}")
    print(f"{'  python / driver JVM':<26}{spark['python_peak_mb']:>27.0f} / {spark['jvm_peak_mb']:>4.0f}")
    ok = spark["driver_peak_mb"] <= TARGET_DRIVER_MB
    print(f"spark driver peak <= {TARGET_DRIVER_MB:.0f} MB: {'ok' if ok else 'MISSED'}")
    print(
        f"k = {K}: node {spark['node']}, {spark['records_out']:,} records released, "
        f"{spark['suppressed_records']:,} suppressed; same release figures as DuckDB: {same}"
    )
    return 0 if ok and same else 1


if __name__ == "__main__":
    sys.exit(main())
