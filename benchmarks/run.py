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

#: name -> module in benchmarks/ with ``main() -> int`` (0 = all targets met), or (module, the
#: arguments it is run with, before those given to run.py)
BENCHMARKS: dict[str, str | tuple[str, list[str]]] = {
    "startup": "bench_startup",
    "ola": "bench_ola",
    "arx": "bench_arx",
    "cli": "bench_cli",
    "scale": "bench_scale",
    "sweep": "bench_sweep",
    "inverse-ola": "inverse_ola",
    "m-concealing": "m_concealing",
    "dp": "bench_dp",
    "sensitive": "bench_sensitive",
    "surveillance": "bench_surveillance",
    # issue 37: 52 weekly releases of 9 counties, each checked against the whole series
    "surveillance-series": ("bench_surveillance", ["--series"]),
    "risk": "bench_risk",
    "risk-model": "bench_risk_model",
    "spark": "bench_spark",
    "identifiers": "bench_identifiers",
    "flatten": "bench_flatten",
    "local-recoding": "bench_local_recoding",
    "truth": "bench_truth",  # issue 30: the verifier's truth check beside the verification without it
    "ui-scale": "bench_ui_scale",
    # issue 35: a workbench run on Adult beside the command line's, at most 1.2x its wall time
    "ui-adult": "bench_ui_adult",
    "verify-control": "bench_verify_control",  # issue 30: the control-character check's cost
    # issue 34: safeshare attack on a 1,000,000-record frame (peak RSS beside reading the frame)
    "attack": "bench_attack",
    # issue 32: 1M visits of ~300k people (DuckDB, k = 5): the person-level run beside the record-level one
    "persons": "bench_persons",
    # issues 24, 36: Census-Income KDD, 14 QIs, three hierarchy sets (the project's, ALT, one generated
    # with a fixed seed), the proven optimum <= 30 s of CPU on each, OLA's beside it (ARX beside when given)
    "kdd": ("bench_kdd", ["--qis", "14", "--hierarchies", "ours,alt,random", "--max-cpu", "30"]),
    # issue 24: exact OLA at 18 QIs (19.9M nodes) within 10 minutes of CPU, beside the anytime search
    "kdd-18": ("bench_anytime", ["--qis", "18", "--time-limit", "60", "--ola-cpu-budget", "600"]),
}


def main() -> int:
    parser = argparse.ArgumentParser(description="safeshare benchmarks")
    parser.add_argument("--only", help="comma-separated subset of: " + ", ".join(BENCHMARKS))
    args, rest = parser.parse_known_args()
    names = [n.strip() for n in args.only.split(",")] if args.only else list(BENCHMARKS)
    status = 0
    for name in names:
        entry = BENCHMARKS.get(name)
        if entry is None:
            print(f"unknown benchmark {name!r}", file=sys.stderr)
            return 2
        module_name, fixed = (entry, []) if isinstance(entry, str) else entry
        if not (HERE / f"{module_name}.py").exists():
            print(f"\n== {name}: benchmarks/{module_name}.py is missing", file=sys.stderr)
            status = 1
            continue
        print(f"\n== {name} ({module_name}.py)", flush=True)
        start = time.perf_counter()
        module = importlib.import_module(module_name)
        sys.argv = [module_name, *fixed, *rest]
        code = module.main()
        verdict = "targets met" if code == 0 else "TARGET MISSED"
        print(f"== {name}: {verdict} ({time.perf_counter() - start:.0f} s)")
        status = status or code
    return status


if __name__ == "__main__":
    sys.exit(main())
