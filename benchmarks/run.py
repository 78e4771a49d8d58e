"""Run every benchmark (``make bench``); each prints its figures against a baseline
measured in the same run. Exit status 1 if any target is missed.

    python benchmarks/run.py [--only ola,scale,...] [--quick]
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "src"))

#: name -> module in benchmarks/ with ``main() -> int`` (0 = all targets met)
BENCHMARKS = {
    "startup": "bench_startup",
    "ola": "bench_ola",
    "arx": "bench_arx",
    "scale": "bench_scale",
    "sweep": "bench_sweep",
    "inverse-ola": "inverse_ola",
    "m-concealing": "m_concealing",
    "dp": "bench_dp",
    "sensitive": "bench_sensitive",
    "surveillance": "bench_surveillance",
    "risk": "bench_risk",
    "spark": "bench_spark",
    "identifiers": "bench_identifiers",
    "flatten": "bench_flatten",
    "local-recoding": "bench_local_recoding",
}


def main() -> int:
    parser = argparse.ArgumentParser(description="safeshare benchmarks")
    parser.add_argument("--only", help="comma-separated subset of: " + ", ".join(BENCHMARKS))
    args, rest = parser.parse_known_args()
    names = [n.strip() for n in args.only.split(",")] if args.only else list(BENCHMARKS)
    status = 0
    for name in names:
        module_name = BENCHMARKS.get(name)
        if module_name is None:
            print(f"unknown benchmark {name!r}", file=sys.stderr)
            return 2
        if not (HERE / f"{module_name}.py").exists():
            print(f"\n== {name}: benchmarks/{module_name}.py is missing", file=sys.stderr)
            status = 1
            continue
        print(f"\n== {name} ({module_name}.py)", flush=True)
        start = time.perf_counter()
        module = importlib.import_module(module_name)
        sys.argv = [module_name, *rest]
        code = module.main()
        verdict = "targets met" if code == 0 else "TARGET MISSED"
        print(f"== {name}: {verdict} ({time.perf_counter() - start:.0f} s)")
        status = status or code
    return status


if __name__ == "__main__":
    sys.exit(main())
