"""Risk estimators: the class-size estimators over N = 10^4 ... 10^9 (issue 21), ``safeshare risk
--estimator all`` at N = 10^6 and 10^9, and the average copula estimate at the paper's Ontario
scale (Jiang et al. 2022, §4.3; issue 9).

**Class-size estimators** (``class_sizes``): a 10 % sample (1,000 records) of Adult's first
10,000 records on age, sex, race, marital status, education; every class-size estimator fitted
at N = 10^4, 10^5, ..., 10^9, CPU time (``time.process_time``) of the point estimate
(``n_bootstrap=0``) and of the default fit (with its 50-resample bootstrap interval). Baseline in
the same run: the plain sums over every population size (the code before issue 21: ``E[1/F |
f]`` summed term by term up to N) for Pitman and SNB, where they finish (N <= 10^6); their
values must agree (relative 1e-7). Target: every point estimate under 1 s of CPU at every N.

**The command** (``command``): ``safeshare risk SAMPLE --estimator all --population-size N`` in
a subprocess, its CPU time (children's ``getrusage``), at N = 10^6 and 10^9. Target: 30 s.

**Copulas at Ontario scale** (skipped with ``--quick``):

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

Run: ``PYTHONPATH=src python benchmarks/bench_risk.py [--quick]`` (or ``make bench``).
"""

from __future__ import annotations

import math
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import special, stats

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from safeshare.adult import ADULT_COLUMNS, ADULT_QUASI_IDENTIFIERS  # noqa: E402
from safeshare.risk.classes import ClassSizeHistogram, SampleTable  # noqa: E402
from safeshare.risk.estimators import ESTIMATORS, make_estimator  # noqa: E402
from safeshare.risk.estimators.pitman import pitman_fit  # noqa: E402
from safeshare.risk.estimators.snb import snb_fit  # noqa: E402

N = 13_448_494
SAMPLE = 30_000
QI = ["age", "sex", "race", "marital-status", "education", "native-country"]
QI9 = list(ADULT_QUASI_IDENTIFIERS)
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


CLASS_QI = ["age", "sex", "race", "marital-status", "education"]
POPULATIONS = [10**k for k in range(4, 10)]
PLAIN_SUM_LIMIT = 10**6
POINT_TARGET_S = 1.0
COMMAND_TARGET_S = 30.0


def _small_sample() -> pd.DataFrame:
    opts: dict[str, Any] = {"header": None, "names": COLUMNS, "skipinitialspace": True, "dtype": str}
    table = pd.read_csv(ROOT / "examples" / "adult" / "adult.data", nrows=10_000, **opts)
    sample: pd.DataFrame = table.sample(n=1000, random_state=3)
    return sample


def plain_pitman_B(hist: ClassSizeHistogram, N: int) -> float:
    """The pre-issue-21 sum: E[1/F | f] over every y in [0, N - n] of the Beta-binomial urn."""
    fit = pitman_fit(hist)
    n, M = hist.n, N - hist.n
    y = np.arange(M + 1, dtype=float)
    total = 0.0
    for f, c in zip(hist.sizes, hist.classes, strict=True):
        a, b = f - fit.alpha, fit.theta + n - f + fit.alpha
        logp = stats.betabinom.logpmf(y, M, a, b)
        p = np.exp(logp - logp.max())
        total += f * c * float((p / (f + y)).sum() / p.sum())
    return total / n


def plain_snb_B(hist: ClassSizeHistogram, N: int) -> float:
    """The pre-issue-21 SNB sum: the NB x binomial posterior over every F in [f, N]."""
    fit = snb_fit(hist, N)
    a, b = fit.a, fit.b
    pi = hist.n / N
    total = 0.0
    for f, c in zip(hist.sizes, hist.classes, strict=True):
        F = np.arange(f, N + 1, dtype=float)
        logw = stats.nbinom.logpmf(F - 1, a, b) + special.gammaln(F + 1) - special.gammaln(F - f + 1)
        logw += (F - f) * math.log1p(-pi)
        w = np.exp(logw - logw.max())
        total += f * c * float((w / F).sum() / w.sum())
    return total / hist.n


def class_sizes() -> tuple[list[str], bool]:
    hist = SampleTable.from_frame(_small_sample(), CLASS_QI).histogram()
    names = sorted(n for n, cls in ESTIMATORS.items() if not cls.requires_table)
    lines = [
        f"class-size estimators: 1,000 Adult records on {', '.join(CLASS_QI)} "
        f"({hist.n_classes} classes, {hist.sizes.size} distinct sizes); CPU seconds"
    ]
    header = (
        f"  {'N':>14} " + " ".join(f"{n[:10]:>10}" for n in names) + "   default fits (with the bootstrap)"
    )
    lines.append(header)
    ok = True
    for N in POPULATIONS:
        cells, full = [], []
        for name in names:
            _, t, est = _cpu(lambda name=name, N=N: make_estimator(name, n_bootstrap=0).fit(hist, N))
            ok = ok and t <= POINT_TARGET_S
            cells.append(f"{t:10.3f}")
            _, t_full, _ = _cpu(lambda name=name, N=N: make_estimator(name).fit(hist, N))
            full.append(f"{name[:6]} {t_full:.2f}")
        lines.append(f"  {N:>14,} " + " ".join(cells) + "   " + ", ".join(full))
    lines.append("  baseline: the plain sums over the population (the code before issue 21)")
    for N in [p for p in POPULATIONS if p <= PLAIN_SUM_LIMIT]:
        row = []
        for name, plain in (("pitman", plain_pitman_B), ("snb", plain_snb_B)):
            _, t_plain, b_plain = _cpu(lambda plain=plain, N=N: plain(hist, N))
            _, t_new, est = _cpu(lambda name=name, N=N: make_estimator(name, n_bootstrap=0).fit(hist, N))
            agree = est.B_ is not None and abs(est.B_ / b_plain - 1) < 1e-7
            ok = ok and agree
            verdict = "equal" if agree else "DIFFERENT"
            row.append(f"{name} plain {t_plain:7.2f} s vs {t_new:.3f} s (B {b_plain:.6g}, {verdict})")
        lines.append(f"  {N:>14,}  " + "; ".join(row))
    lines.append(f"  target: every point estimate <= {POINT_TARGET_S:.0f} s of CPU at every N")
    return lines, ok


def command() -> tuple[list[str], bool]:
    lines, ok = [], True
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "sample.csv"
        _small_sample().to_csv(data, index=False)
        for N in (10**6, 10**9):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            res = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "safeshare",
                    "risk",
                    str(data),
                    "--qi",
                    ",".join(CLASS_QI[:4]),
                    "--estimator",
                    "all",
                    "--population-size",
                    str(N),
                    "--out",
                    str(Path(tmp) / f"o{N}"),
                    "-q",
                ],
                capture_output=True,
                text=True,
                env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"},
            )
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
            ok = ok and res.returncode == 0 and cpu <= COMMAND_TARGET_S
            status = "ok" if res.returncode == 0 else f"exit {res.returncode}: {res.stderr.strip()}"
            lines.append(
                f"  safeshare risk --estimator all --population-size {N:,}: {cpu:6.1f} s CPU ({status})"
            )
    lines.append(f"  target: <= {COMMAND_TARGET_S:.0f} s of CPU each")
    return ["the command on a 10 % sample of a 10k-record table", *lines], ok


def main() -> int:
    quick = "--quick" in sys.argv[1:]
    status = 0
    for part in (class_sizes, command):
        lines, ok = part()
        print("\n".join(lines), flush=True)
        status = status or (0 if ok else 1)
    if quick:
        return status
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
    return status or (0 if ok else 1)


if __name__ == "__main__":
    sys.exit(main())
