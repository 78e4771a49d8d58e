"""Run every ``benchmarks/bench_*.py`` (each has ``main()`` printing its figures against a baseline)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> None:
    for path in sorted(HERE.glob("bench_*.py")):
        spec = importlib.util.spec_from_file_location(path.stem, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[path.stem] = module
        spec.loader.exec_module(module)
        print(f"== {path.name}")
        module.main()
        print()


if __name__ == "__main__":
    main()
