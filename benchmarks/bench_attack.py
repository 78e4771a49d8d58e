"""``safeshare attack`` on a 1,000,000-record frame: peak memory and CPU (issue 34).

The population: UCI Adult resampled with replacement to ``--frame-records`` people (default 10^6),
each with an ``id``; the input: a 10 % simple random sample of it, released by ``anonymize``
with the Adult demo's settings on five QIs (age, education, marital-status, race, sex; k = 5,
5 % suppression). The attack (``safeshare attack RELEASE --config C --frame POPULATION --id id``)
runs in a child process, whose peak RSS (``ru_maxrss``) and CPU are measured, beside the
baseline in the same run: a child that only reads the frame with pandas (what holding the frame
costs). Target: the attack's peak RSS within 4 GiB and at most 6x the baseline's.

    PYTHONPATH=src nice -n 10 python benchmarks/bench_attack.py [--frame-records 1000000] [--keep DIR]
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
QIS = ["age", "education", "marital-status", "race", "sex"]


def child(code: str) -> tuple[float, float, int]:
    """Run ``code`` in a fresh interpreter: (wall s, CPU s, peak RSS bytes) of that child alone."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    subprocess.run(
        [sys.executable, "-c", code],
        check=True,
        env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"},
    )
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, after.ru_maxrss * 1024


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--frame-records", type=int, default=1_000_000)
    ap.add_argument("--keep", default=None, help="keep the generated files in this directory")
    args = ap.parse_args(argv)
    tmp = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="bench-attack-"))
    tmp.mkdir(parents=True, exist_ok=True)
    from safeshare import api
    from safeshare.adult import ADULT_COLUMNS

    adult = pd.read_csv(ROOT / "examples/adult/adult.data", header=None, names=list(ADULT_COLUMNS),
                        skipinitialspace=True, dtype=str)  # fmt: skip
    rng = np.random.default_rng(1)
    pop = adult.iloc[rng.integers(len(adult), size=args.frame_records)].reset_index(drop=True)
    pop.insert(0, "id", [f"p{i}" for i in range(len(pop))])
    pop.to_csv(tmp / "population.csv", index=False)
    pop.sample(frac=0.1, random_state=2).to_csv(tmp / "sample.csv", index=False)
    attrs = "\n".join(
        f"  {q}: {{role: quasi, hierarchy: {ROOT / 'examples/adult/hierarchies' / (q + '.csv')}}}"
        for q in QIS
    )
    (tmp / "config.yaml").write_text(
        f"input: {{path: {tmp / 'sample.csv'}}}\ndefault_role: identifying\nattributes:\n{attrs}\n"
        "  hours-per-week: {role: sensitive}\n  income: {role: insensitive}\n"
        f"privacy:\n  k-anonymity: {{k: 5}}\nmax_suppression: 0.05\npopulation_size: {len(pop)}\n"
    )
    api.anonymize(tmp / "config.yaml", tmp / "rel")
    with open(tmp / "rel" / "release.csv") as handle:
        n_release = sum(1 for _ in handle) - 1
    base = child(
        f"import pandas as pd; pd.read_csv({str(tmp / 'population.csv')!r}, dtype=str, keep_default_na=False)"
    )
    out = tmp / "attack"
    argv = ["attack", str(tmp / "rel" / "release.csv"), "--config", str(tmp / "config.yaml"),
            "--frame", str(tmp / "population.csv"), "--id", "id", "--targets", "500",
            "--out", str(out), "-q"]  # fmt: skip
    code = f"import sys; from safeshare.cli import main; sys.exit(main({argv!r}))"
    run = child(code)
    gib = 2**30
    print(f"frame {len(pop):,} records, release {n_release:,} rows (a 10 % sample at k = 5)")
    for label, (wall, cpu, rss) in (("baseline, reading the frame:", base), ("safeshare attack:", run)):
        print(f"{label:30s} {cpu:7.1f} s CPU  {wall:7.1f} s wall  peak RSS {rss / gib:.2f} GiB")
    ok = run[2] <= 4 * gib and run[2] <= 6 * base[2]
    print(f"target (peak RSS <= 4 GiB and <= 6x the baseline): {'met' if ok else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
