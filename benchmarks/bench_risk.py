"""The average copula estimate at the paper's Ontario scale (Jiang et al. 2022, §4.3; issues 9, 21).

A 30,000-record sample of UCI Adult (train + test, drawn with a fixed seed) on
six demographic quasi-identifiers, population size N = 13,448,494 (Ontario):
the ``average`` estimator (MI-matched Gaussian copula + checkerboard D-vine,
each the mean of its default R syntheses; no synthesis materializes N records:
:mod:`safeshare.risk.synthesis`). Then the same estimator at N = 10^6 and
N = 10^9, and at those sizes on a 1,000-record sample of 9 quasi-identifiers
(a 10 % sample of a 10,000-record table), to show the cost does not grow with N.

Targets: at most 60 s of CPU (``process_time``: on a shared machine wall time
measures the other jobs) and 2 GB peak memory for the Ontario case (resident
set of the process, ``getrusage`` max RSS). Baseline measured in the same run:
the entropy estimator on the same sample (closed form, no synthesis), and the
exact frequency table of the sample. Times are printed as wall clock and CPU.

Run: ``PYTHONPATH=src python benchmarks/bench_risk.py`` (or ``make bench``).
"""

from __future__ import annotations

import resource
import sys
import time
from pathlib import Path
from typing import Any

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from safeshare.adult import ADULT_COLUMNS  # noqa: E402
from safeshare.risk.classes import SampleTable  # noqa: E402
from safeshare.risk.estimators import make_estimator  # noqa: E402

N = 13_448_494
SAMPLE = 30_000
QI = ["age", "sex", "race", "marital-status", "education", "native-country"]
QI9 = [
    "age",
    "workclass",
    "education",
    "marital-status",
    "occupation",
    "relationship",
    "race",
    "sex",
    "native-country",
]
SIZES = (10**6, 10**9)
TARGET_SECONDS, TARGET_BYTES = 60.0, 2 * 1024**3
COLUMNS = list(ADULT_COLUMNS)


def _max_rss() -> int:
    """Peak resident set of this process in bytes (Linux reports KiB)."""
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024


def _timed(fn: Any) -> tuple[float, Any]:
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def _cpu(fn: Any) -> tuple[float, float, Any]:
    """Wall and CPU seconds of ``fn()`` and its value."""
    cpu = time.process_time()
    wall, value = _timed(fn)
    return wall, time.process_time() - cpu, value


def run() -> dict[str, Any]:
    opts: dict[str, Any] = {"header": None, "names": COLUMNS, "skipinitialspace": True, "dtype": str}
    adult = ROOT / "examples" / "adult"
    population = pd.concat(
        [pd.read_csv(adult / "adult.data", **opts), pd.read_csv(adult / "adult.test", skiprows=1, **opts)],
        ignore_index=True,
    )
    sample = population.sample(n=SAMPLE, random_state=2022)
    t_table, table = _timed(lambda: SampleTable.from_frame(sample, QI))
    rss_before = _max_rss()
    t_entropy, entropy = _timed(lambda: make_estimator("entropy").fit(table, N))
    t_average, cpu_average, average = _cpu(lambda: make_estimator("average", random_state=0).fit(table, N))
    small = SampleTable.from_frame(
        population.sample(n=10_000, random_state=1).sample(n=1_000, random_state=2), QI9
    )
    scaling = []
    for label, t in (("30,000 records, 6 QIs", table), ("1,000 records, 9 QIs", small)):
        for size in SIZES:
            wall, cpu, est = _cpu(
                lambda t=t, size=size: make_estimator("average", random_state=0).fit(t, size)
            )
            scaling.append((label, size, wall, cpu, est.B_, est.B_mc_interval_))
    return {
        "classes": table.n_classes,
        "table_s": t_table,
        "entropy_s": t_entropy,
        "entropy_B": entropy.B_,
        "average_s": t_average,
        "average_cpu": cpu_average,
        "scaling": scaling,
        "average_B": average.B_,
        "gaussian_B": average.gaussian_.B_,
        "dvine_B": average.dvine_.B_,
        "rss_before": rss_before,
        "rss_peak": _max_rss(),
    }


def main() -> int:
    r = run()
    gib = 1024**3
    print(f"sample {SAMPLE:,} Adult records on {', '.join(QI)} ({r['classes']:,} classes), N = {N:,}")
    print(f"  baseline: frequency table      {r['table_s']:7.2f} s")
    print(f"  baseline: entropy estimator    {r['entropy_s']:7.2f} s   B = {r['entropy_B']:.4f}")
    print(
        f"  average copula estimator       {r['average_s']:7.2f} s ({r['average_cpu']:.2f} s CPU)   "
        f"B = {r['average_B']:.4f} (gaussian {r['gaussian_B']:.4f}, d-vine {r['dvine_B']:.4f})   "
        f"target <= {TARGET_SECONDS:.0f} s CPU"
    )
    for label, size, wall, cpu, b, mc in r["scaling"]:
        print(
            f"  average, {label}, N = {size:.0e}: {wall:6.2f} s ({cpu:.2f} s CPU)   B = {b:.4g} "
            f"(Monte Carlo 95 %: {mc[0]:.4g} - {mc[1]:.4g})"
        )
    print(
        f"  peak memory (max RSS)          {r['rss_peak'] / gib:7.2f} GiB (after loading: "
        f"{r['rss_before'] / gib:.2f} GiB)   target <= {TARGET_BYTES / gib:.0f} GiB"
    )
    ok = r["average_cpu"] <= TARGET_SECONDS and r["rss_peak"] <= TARGET_BYTES
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
