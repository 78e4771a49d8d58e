"""Benchmark: flattening's memory against its estimate, and its added columns against a baseline.

Run from the repository root::

    PYTHONPATH=src python benchmarks/bench_flatten.py [--quick]

Figures printed:

1. for a few shapes (persons x events per person x stacked columns, CSV and Parquet),
   ``flatten_files`` run in a child process on generated tables: the peak resident memory
   above what reading the inputs took, the CPU time, and the estimate
   (:func:`safeshare.data.flatten.flatten_memory`) that ``flatten`` compares with the memory
   available before it allocates anything (target: the estimate is an upper bound, so that a
   flattening that fits is never refused for more than the estimate's margin, and one that
   does not fit is refused before it takes the machine);
2. many padding columns (3 persons, 20,000 events each): the one object block that
   ``flatten_frame`` builds, against the baseline measured in the same run, one pandas
   string column per added column (the implementation before issue 18: 7.5 kB and 170 us a
   column). Target: at least 10 times less CPU.

Timings are CPU times on a possibly shared machine.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

ROOT = Path(__file__).resolve().parent.parent

CHILD = """
import json, resource, sys, time
import numpy as np, pandas as pd
from safeshare.data.engines.memory import read_frame
from safeshare.data.flatten import flatten_files
from safeshare.data.source import TableSource
persons, events, n, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
read_frame(TableSource(persons)); read_frame(TableSource(events))  # the inputs' share of the peak
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
start = time.process_time()
stats = flatten_files(TableSource(persons), TableSource(events), key="id", n_events=n, out=out)
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"growth": peak - before, "cpu": time.process_time() - start, "max": stats.max_events}))
"""


def write_inputs(
    directory: Path, persons: int, events: int, columns: int, seed: int = 0
) -> tuple[Path, Path]:
    rng = np.random.default_rng(seed)
    person_file, event_file = directory / "persons.csv", directory / "events.csv"
    pd.DataFrame({"id": [f"p{i}" for i in range(persons)], "sex": rng.choice(["F", "M"], persons)}).to_csv(
        person_file, index=False
    )
    frame = {"id": np.char.add("p", rng.integers(0, persons, events).astype(str))}
    for c in range(columns):
        frame[f"c{c}"] = np.char.add("code", rng.integers(0, 1000, events).astype(str))
    pd.DataFrame(frame).to_csv(event_file, index=False)
    return person_file, event_file


def measure_memory(quick: bool) -> bool:
    from safeshare.data.flatten import flatten_memory

    shapes = [(3, 100_000, 1, 10), (20_000, 500, 2, 200_000)]
    if not quick:
        shapes.append((100_000, 20, 3, 1_000_000))
    ok = True
    print(f"{'persons x N x columns':>24} {'format':>8} {'measured':>10} {'estimate':>10} {'CPU':>7}")
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        for persons, n, columns, events in shapes:
            person_file, event_file = write_inputs(directory, persons, events, columns)
            for fmt in ("csv", "parquet"):
                out = directory / f"flat.{fmt}"
                run = subprocess.run(
                    [sys.executable, "-c", CHILD, str(person_file), str(event_file), str(n), str(out)],
                    capture_output=True,
                    text=True,
                    check=True,
                    env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"},
                )
                figures = json.loads(run.stdout)
                estimate = flatten_memory(persons, n, columns, fmt)
                fits = estimate >= figures["growth"]
                ok = ok and fits
                print(
                    f"{persons:>10,} x {n:>7,} x {columns} {fmt:>8} {figures['growth'] / 1e6:>8.0f}MB "
                    f"{estimate / 1e6:>8.0f}MB {figures['cpu']:>6.1f}s{'' if fits else '  ESTIMATE TOO LOW'}"
                )
    return ok


def per_column_baseline(persons: pd.DataFrame, events: pd.DataFrame, n: int) -> pd.DataFrame:
    """The pivot before issue 18: one Arrow ``take`` and one pandas string column per added column."""
    n_rows = len(events)
    owner = events["id"].map({p: i for i, p in enumerate(persons["id"])}).to_numpy()
    rank = events.groupby("id").cumcount().to_numpy()
    text = pa.large_string()
    values = pa.concat_arrays([pa.array(events["c0"], type=text), pa.array([""], type=text)])
    added = {}
    for i in range(n):
        slot = np.full(len(persons), n_rows, dtype=np.int64)
        here = rank == i
        slot[owner[here]] = np.flatnonzero(here)
        added[f"event{i + 1}_c0"] = values.take(slot).to_pandas()
    return pd.concat([persons, pd.DataFrame(added)], axis=1)


def measure_columns(quick: bool) -> bool:
    from safeshare.data.flatten import EventSpec, flatten_frame

    n = 5_000 if quick else 20_000
    persons = pd.DataFrame({"id": ["a", "b", "c"], "sex": ["F", "M", "F"]})
    events = pd.DataFrame({"id": ["a", "a", "b"], "c0": ["x", "y", "z"]})
    start = time.process_time()
    block, _ = flatten_frame(persons, events, EventSpec(key="id", n_events=n))
    block_cpu = time.process_time() - start
    start = time.process_time()
    baseline = per_column_baseline(persons, events, n)
    baseline_cpu = time.process_time() - start
    assert block.astype(object).equals(baseline.astype(object)), "the two pivots differ"
    speedup = baseline_cpu / max(block_cpu, 1e-6)
    print(
        f"3 persons x {n:,} events: one block {block_cpu:.3f}s, "
        f"one column each (baseline) {baseline_cpu:.2f}s: {speedup:.0f}x (target >= 10x)"
    )
    return speedup >= 10


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args, _ = parser.parse_known_args()
    sys.path.insert(0, str(ROOT / "src"))
    ok = measure_memory(args.quick)
    ok = measure_columns(args.quick) and ok
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3
    print(f"(this process: peak {peak:.0f} MB)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
