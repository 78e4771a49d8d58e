"""Start-up cost of the command line (issue 19): CPU seconds, median of 5, beside ``python -c pass``.

Measured as the CPU time (user + system) of each child process (``resource.getrusage`` of the
children), so that a loaded machine inflates it little:

* ``safeshare --help``, target < 0.3 s;
* a command that fails on its configuration (``anonymize`` of a file with an unknown key),
  target < 0.3 s: the configuration is validated before the engine, the core and the
  searches are imported;
* for reference: ``safeshare version`` (the cost of running any command: typer converts the
  options with pydantic) and ``safeshare anonymize --help``.

    python benchmarks/bench_startup.py [--repeat 5]
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


def cpu_seconds(args: list[str], env: dict[str, str]) -> float:
    """CPU time (user + system) of one run of ``args`` as a child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def median_cpu(args: list[str], env: dict[str, str], repeat: int) -> float:
    return statistics.median(cpu_seconds(args, env) for _ in range(repeat))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args, _ = parser.parse_known_args()
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    py = [sys.executable]
    with tempfile.TemporaryDirectory() as tmp:
        bad = Path(tmp) / "bad.yaml"
        bad.write_text("input: {path: d.csv}\nattributes: {x: quasi}\nmetirc: prec\n")
        runs = {
            "python -c pass (baseline)": [*py, "-c", "pass"],
            "safeshare --help": [*py, "-m", "safeshare", "--help"],
            "safeshare anonymize BAD.yaml (config error)": [
                *py,
                "-m",
                "safeshare",
                "anonymize",
                str(bad),
                "--out",
                str(Path(tmp) / "out"),
            ],
            "safeshare version": [*py, "-m", "safeshare", "version"],
            "safeshare anonymize --help": [*py, "-m", "safeshare", "anonymize", "--help"],
        }
        figures = {name: median_cpu(cmd, env, args.repeat) for name, cmd in runs.items()}
    base = figures["python -c pass (baseline)"]
    print(f"CPU seconds, median of {args.repeat} (the machine may be loaded: CPU time, not wall time)")
    for name, seconds in figures.items():
        print(f"  {name:<46} {seconds:6.3f} s   ({seconds - base:+.3f} s over python)")
    status = 0
    for name in ("safeshare --help", "safeshare anonymize BAD.yaml (config error)"):
        met = figures[name] < TARGET_S
        print(f"  target {name}: < {TARGET_S} s: {'met' if met else 'MISSED'}")
        status = status or (0 if met else 1)
    return status


if __name__ == "__main__":
    sys.exit(main())
