"""The verifier's control-character check (verify/control.py; issue 30) against the verifier
without it, on the same file in the same run.

A synthetic release of R records (default 2,000,000; ``--quick``: 300,000): three
quasi-identifiers and three other text columns (200 diagnosis codes, 5,000 free-text notes,
30 sites), written as CSV and as Parquet. Each is verified with and without the check, paired
and alternated, three times; the medians are printed. CPU seconds (``time.process_time``:
this process and DuckDB's threads; the machine is shared, so wall time says little).

Targets: the check adds at most 60 % to the verification of the CSV release (its bytes are
scanned once) and at most 1 s of CPU per million records to the Parquet one (the distinct
values of each text column that is not a QI).

Run: ``PYTHONPATH=src python benchmarks/bench_verify_control.py [--quick]`` (or ``make bench``,
``python benchmarks/run.py --only verify-control``).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

import safeshare.verify.control as control  # noqa: E402
from safeshare.verify import Expectations, verify_release  # noqa: E402


def _release(records: int, directory: Path) -> tuple[Expectations, dict[str, Path]]:
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(
        {
            "age": rng.choice(["20s", "30s", "40s", "50s"], records),
            "sex": rng.choice(["F", "M"], records),
            "zip": rng.choice([f"{i:03d}**" for i in range(40)], records),
            "diagnosis": rng.choice([f"code-{i}" for i in range(200)], records),
            "note": rng.choice([f"free text number {i} with words" for i in range(5000)], records),
            "site": rng.choice([f"site {i}" for i in range(30)], records),
        }
    )
    paths = {"csv": directory / "release.csv", "parquet": directory / "release.parquet"}
    frame.to_csv(paths["csv"], index=False)
    frame.to_parquet(paths["parquet"], index=False)
    qis = ["age", "sex", "zip"]
    expected = Expectations(
        columns=list(frame.columns),
        quasi_identifiers=qis,
        allowed_labels={q: set(frame[q].unique()) for q in qis},
        records_in=records,
        max_suppression=0.0,
        k=1,
    )
    return expected, paths


def _cpu(path: Path, fmt: str, expected: Expectations, check: bool) -> float:
    real = control.control_failures
    if not check:
        control.control_failures = lambda *args, **kwargs: []
    try:
        start = time.process_time()
        verification = verify_release(path, fmt, expected)
        spent = time.process_time() - start
    finally:
        control.control_failures = real
    assert verification.passed, verification.failures
    return spent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=2_000_000)
    parser.add_argument("--quick", action="store_true", help="300,000 records")
    args = parser.parse_args()
    records = 300_000 if args.quick else args.records
    status = 0
    with tempfile.TemporaryDirectory() as tmp:
        expected, paths = _release(records, Path(tmp))
        for fmt, path in paths.items():
            times: dict[bool, list[float]] = {False: [], True: []}
            for _ in range(3):
                for check in (False, True):
                    times[check].append(_cpu(path, fmt, expected, check))
            without, with_ = statistics.median(times[False]), statistics.median(times[True])
            extra = with_ - without
            if fmt == "csv":
                met = extra <= 0.6 * without
                target = "at most +60 %"
            else:
                met = extra <= records / 1e6
                target = f"at most +{records / 1e6:.2f} s"
            size = path.stat().st_size / 1e6
            print(
                f"{fmt}: {records:,} records, 6 text columns ({size:.0f} MB): verification "
                f"{without:.2f} s CPU without the control check, {with_:.2f} s with it "
                f"(+{extra:.2f} s; target {target}: {'met' if met else 'MISSED'})"
            )
            status = status or (0 if met else 1)
    return status


if __name__ == "__main__":
    sys.exit(main())
