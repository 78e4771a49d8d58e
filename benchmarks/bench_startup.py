"""Start-up cost of the Python API and of the command line (issues 19, 31): CPU seconds of each
process, best and median of ``--repeat`` runs, beside ``python -c pass`` measured in the same run.

Measured as the CPU time (user + system) of each child process (``resource.getrusage`` of the
children), so that a loaded machine inflates it little; the best of several runs is the figure
compared with the target (what the code costs; the median shows the spread). Each command runs
once untimed first, and with bytecode caching on (``PYTHONDONTWRITEBYTECODE`` removed from the
children's environment), as a user's start-up is.

Targets (<= 0.3 s of CPU):

* ``import safeshare.api``: the use cases are imported on first use (PEP 562);
* ``safeshare --help``;
* a configuration error: ``safeshare anonymize missing.yaml --out x`` (no such file) and
  ``safeshare anonymize BAD.yaml --out x`` (an unknown key): the configuration is validated
  before the engine, the core and the searches are imported;
* ``safeshare risk --help`` (a lazily imported command group).

For reference (no target): ``safeshare version`` (the cost of running any command: typer converts
the options with pydantic), ``anonymize --help``, and the option or configuration errors of other
commands (sweep, utility, dp params, risk, surveil), found before their libraries are imported.

    python benchmarks/bench_startup.py [--repeat 7]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET_S = 0.3


def cpu_seconds(args: list[str], env: dict[str, str], cwd: Path) -> float:
    """CPU time (user + system) of one run of ``args`` as a child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(args, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    args, _ = parser.parse_known_args()
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    # a start-up as a user has it: the modules' compiled bytecode is written by the warm-up run and
    # read by the measured ones (without it, every run compiles safeshare's sources again)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    py = [sys.executable]
    cli = [*py, "-m", "safeshare"]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        bad = work / "bad.yaml"
        bad.write_text("input: {path: d.csv}\nattributes: {x: quasi}\nmetirc: prec\n")
        out = str(work / "out")
        targets = {
            "python -c pass (baseline)": [*py, "-c", "pass"],
            "import safeshare.api": [*py, "-c", "import safeshare.api"],
            "safeshare --help": [*cli, "--help"],
            "safeshare anonymize missing.yaml (config error)": [
                *cli,
                "anonymize",
                "missing.yaml",
                "--out",
                out,
            ],
            "safeshare anonymize BAD.yaml (unknown key)": [*cli, "anonymize", str(bad), "--out", out],
            "safeshare risk --help": [*cli, "risk", "--help"],
        }
        reference = {
            "safeshare version": [*cli, "version"],
            "safeshare anonymize --help": [*cli, "anonymize", "--help"],
            "safeshare sweep BAD.yaml": [*cli, "sweep", str(bad), "--out", out],
            "safeshare utility BAD.yaml": [
                *cli, "utility", str(bad), "--test", "t", "--target", "y", "--out", out,
            ],
            "safeshare dp params --k 0": [*cli, "dp", "params", "--k", "0", "--beta", "0.1", "--n", "10"],
            "safeshare risk missing.csv": [
                *cli, "risk", "missing.csv", "--qi", "a", "--population-size", "9", "--out", out,
            ],
            "safeshare surveil simulate --k 0": [
                *cli, "surveil", "simulate", "--population-table", "p.csv", "--region", "r",
                "--cases", "c.csv", "--policy", "1C*e", "--k", "0", "--out", out,
            ],
        }  # fmt: skip
        runs: dict[str, list[float]] = {name: [] for name in (*targets, *reference)}
        commands = {**targets, **reference}
        for command in commands.values():  # warm-up: bytecode caches written, files in the page cache
            cpu_seconds(command, env, work)
        for _ in range(args.repeat):  # interleaved: a burst of load affects every command alike
            for name, command in commands.items():
                runs[name].append(cpu_seconds(command, env, work))
    base = min(runs["python -c pass (baseline)"])
    print(
        f"CPU seconds of the process, best and median of {args.repeat} runs "
        f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs: CPU time, not wall time)"
    )
    print(f"  {'command':<50} {'best':>7} {'median':>7}  over python")
    for name, seconds in runs.items():
        if name == "safeshare version":
            print("  for reference:")
        best = min(seconds)
        print(f"  {name:<50} {best:7.3f} {statistics.median(seconds):7.3f}  {best - base:+.3f}")
    status = 0
    for name in targets:
        if name.startswith("python -c pass"):
            continue
        met = min(runs[name]) <= TARGET_S
        print(f"  target {name}: <= {TARGET_S} s: {'met' if met else 'MISSED'}")
        status = status or (0 if met else 1)
    return status


if __name__ == "__main__":
    sys.exit(main())
