"""The verifier's truth check (issue 30) on the scale benchmark's data: what it adds to the
verification of a written release, beside the verification without it, in the same run.

    python benchmarks/bench_truth.py [--rows 1000000] [--repeats 3] [--engine duckdb] [--k 5]

The resampled UCI Adult Parquet file of ``bench_scale.py`` (built once under
``benchmarks/data/``, reused) is anonymized once as the scale benchmark does (k = 5, at most 5 %
suppression, Prec, the 9 Adult quasi-identifiers with the bundled hierarchy files: age's labels
``30:39`` are judged as intervals, the others are the files' own categories) and its release
written once. Then the written file is verified ``--repeats`` times without the truth check and
``--repeats`` times with it (the engine still open, as in a run), alternately; the medians of wall
and CPU seconds are printed with the truth check's share. The check works per distinct
(value, label) pair and per distinct input tuple, never per record: its cost depends on the
number of distinct quasi-identifier tuples (a few tens of thousands here), not on ``--rows``.

Exit status 1 when the truth check adds more than :data:`TARGET_ADDED_S` seconds (median wall).
:func:`run` is the entry point of the project's benchmark runner.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_scale import DATA_DIR, MAX_SUPPRESSION, K, _cpu_seconds, ensure_data, schema
from safeshare import Anonymizer, KAnonymity, TableSource
from safeshare.data.engines.duckdb_engine import DuckDBEngine
from safeshare.data.engines.memory import MemoryEngine
from safeshare.verify import verify_release
from safeshare.workflows.publish import write_release
from safeshare.workflows.release import release_expectations, truth_expectations

#: The most the truth check may add to the verification of the scale benchmark's release.
TARGET_ADDED_S = 2.0


def _timed(call: Any) -> tuple[float, float, Any]:
    start, cpu = time.perf_counter(), _cpu_seconds()
    out = call()
    return time.perf_counter() - start, _cpu_seconds() - cpu, out


def run(rows: int, repeats: int = 3, engine_name: str = "duckdb", k: int = K) -> dict[str, Any]:
    path, _ = ensure_data(rows, DATA_DIR)
    source = TableSource(path)
    engine = DuckDBEngine(source) if engine_name == "duckdb" else MemoryEngine(source)
    with engine, tempfile.TemporaryDirectory(prefix="bench-truth-") as tmp:
        anonymizer = Anonymizer(schema(), [KAnonymity(k)], max_suppression=MAX_SUPPRESSION, metric="prec")
        result = anonymizer.fit(engine)
        published = write_release(result, engine, Path(tmp) / "out", fmt="parquet", html=False)
        plain = release_expectations(result, engine.columns())
        with_truth = dataclasses.replace(
            plain, truth=truth_expectations(result.schema, result.table, engine, result.levels)
        )
        times: dict[str, list[tuple[float, float]]] = {"without": [], "with": []}
        checks: dict[str, Any] = {}
        for _ in range(repeats):
            for name, expected in (("without", plain), ("with", with_truth)):
                wall, cpu, verification = _timed(
                    lambda e=expected: verify_release(published.release, "parquet", e)
                )
                assert verification.passed, verification.failures
                times[name].append((wall, cpu))
                checks = verification.checks.get("truth", checks)
        distinct = len(engine.grouped_counts(list(result.table.qi_names)))
    median = {
        name: {"wall_s": statistics.median(w for w, _ in t), "cpu_s": statistics.median(c for _, c in t)}
        for name, t in times.items()
    }
    added = median["with"]["wall_s"] - median["without"]["wall_s"]
    return {
        "rows": rows,
        "k": k,
        "engine": engine_name,
        "levels": dict(result.levels),
        "distinct_qi_tuples": distinct,
        "records_out": published.report["records_out"],
        "verify_s": median,
        "truth_added_s": added,
        "truth_added_cpu_s": median["with"]["cpu_s"] - median["without"]["cpu_s"],
        "truth": checks,
        "target_added_s": TARGET_ADDED_S,
        "passed": added <= TARGET_ADDED_S,
    }


def format_table(r: dict[str, Any]) -> str:
    v = r["verify_s"]
    lines = [
        f"rows: {r['rows']:,}  k: {r['k']}  engine: {r['engine']}  distinct QI tuples: "
        f"{r['distinct_qi_tuples']:,}  records released: {r['records_out']:,}",
        "levels: " + ", ".join(f"{q}={lv}" for q, lv in r["levels"].items()),
        f"{'verification':<32}{'wall s':>10}{'CPU s':>10}",
        f"  {'without the truth check':<30}{v['without']['wall_s']:>10.3f}{v['without']['cpu_s']:>10.3f}",
        f"  {'with the truth check':<30}{v['with']['wall_s']:>10.3f}{v['with']['cpu_s']:>10.3f}",
        f"{'truth check adds':<32}{r['truth_added_s']:>10.3f}{r['truth_added_cpu_s']:>10.3f}"
        f"   target <= {r['target_added_s']:.1f} s: {'ok' if r['passed'] else 'MISSED'}",
    ]
    for qi, c in r["truth"].get("columns", {}).items():
        lines.append(
            f"  {qi:<20} {c['semantics']:<6} {c['pairs']:>6} pairs, "
            f"{c['false']} false, {c['unchecked']} unchecked"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--engine", choices=["duckdb", "memory"], default="duckdb")
    parser.add_argument("--k", type=int, default=K, help="k of k-anonymity (larger: coarser labels)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    result = run(args.rows, args.repeats, args.engine, args.k)
    print(json.dumps(result, indent=2) if args.json else format_table(result))
    return 0 if result["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
