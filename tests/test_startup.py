"""Start-up (issue 31): ``import safeshare.api`` and every command's start-up import none of the
heavy libraries (numba, scipy, scikit-learn, matplotlib, pyvinecopulib, pandas, numpy, DuckDB,
pyarrow) nor the surveillance release; a command imports them once its options and configuration
are valid. Checked on the modules a fresh interpreter holds afterwards, never on times
(benchmarks/bench_startup.py measures the CPU seconds)."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from importlib import import_module
from pathlib import Path

import pytest

from safeshare import api

ROOT = Path(__file__).resolve().parent.parent

HEAVY = (
    "numba",
    "scipy",
    "sklearn",
    "matplotlib",
    "pyvinecopulib",
    "pandas",
    "numpy",
    "duckdb",
    "pyarrow",
    "starlette",
    "safeshare.surveillance.release",
    "safeshare.search.ola",
    "safeshare.core",
)


def loaded_after(code: str) -> list[str]:
    """The heavy modules (or their submodules) a fresh interpreter has imported after ``code``."""
    probe = (
        f"{code}\nimport json, sys\n"
        f"heavy = {HEAVY!r}\n"
        "print(json.dumps(sorted(h for h in heavy if any(m == h or m.startswith(h + '.') "
        "for m in sys.modules))))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    found: list[str] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


def test_importing_the_api_loads_no_heavy_module() -> None:
    assert loaded_after("import safeshare.api") == []
    assert loaded_after("from safeshare import api\napi.anonymize, api.hierarchy_check, api.workbench") == []


def test_every_api_name_is_its_modules_and_the_type_checkers_see_the_same_names() -> None:
    """``api.<name>`` is the object of the module :data:`_EXPORTS` names; ``__all__`` lists them;
    the ``TYPE_CHECKING`` imports (what mypy and IDEs read) import exactly those names from exactly
    those modules."""
    exports: dict[str, str] = api._EXPORTS
    modules: dict[str, str] = api._MODULES
    assert api.__all__ == sorted({*exports, *modules})
    for name, module in exports.items():
        assert getattr(api, name) is getattr(import_module(module), name), name
    for name, module in modules.items():
        assert getattr(api, name) is import_module(module)
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        api.nope  # noqa: B018

    tree = ast.parse((ROOT / "src" / "safeshare" / "api.py").read_text(encoding="utf-8"))
    guarded = next(n for n in tree.body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING")
    seen: dict[str, str] = {}
    for node in guarded.body:
        assert isinstance(node, ast.ImportFrom) and node.module is not None
        for alias in node.names:
            seen[alias.name] = f"{node.module}.{alias.name}" if alias.name in modules else node.module
    assert seen == {**exports, **modules}


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["version"],
        ["risk", "--help"],
        ["risk", "estimate", "--help"],
        ["surveil", "--help"],
        ["ledger", "--help"],
        ["ui", "--help"],
        ["anonymize", "--help"],
        ["anonymize", "missing.yaml", "--out", "x"],
        ["anonymize", "BAD", "--out", "x"],
        ["sweep", "BAD", "--out", "x"],
        ["utility", "BAD", "--test", "t.csv", "--target", "y", "--out", "x"],
        ["dp", "params", "--k", "0", "--beta", "0.1", "--epsilon", "1", "--epsilon-prime", "0.1"],
        ["inspect", "missing.csv", "--qi", "a"],
        ["risk", "missing.csv", "--qi", "a", "--population-size", "10", "--out", "x"],
        ["risk", "evaluate", "missing.csv", "--qi", "a", "--out", "x"],
        ["ledger", "verify", "missing.jsonl"],
    ],
    ids=" ".join,
)
def test_a_commands_start_up_loads_no_heavy_module(args: list[str], tmp_path: Path) -> None:
    """Help, and a configuration, option or input-file error found before any work: none of the
    heavy modules (an unknown key in a configuration for BAD)."""
    bad = tmp_path / "bad.yaml"
    bad.write_text("input: {path: d.csv}\nattributes: {x: quasi}\nmetirc: prec\n")
    argv = [str(bad) if a == "BAD" else str(tmp_path / a) if a in ("x", "missing.yaml") else a for a in args]
    code = (
        "import contextlib, io\nfrom safeshare.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):\n"
        f"    status = main({argv!r})\n"
        "assert status in (0, 2), status\n"
    )
    assert loaded_after(code) == []


def test_a_release_without_a_copula_imports_no_copula_library(tmp_path: Path) -> None:
    """Issue 36: listing the estimators usable on a release's class sizes imported every
    estimator's module, so each ``safeshare anonymize`` loaded pyvinecopulib, matplotlib and
    scipy.stats (about 1 s of start-up) for copulas it never fits."""
    config = tmp_path / "people.yaml"
    data = tmp_path / "people.csv"
    data.write_text("age,sex\n" + "".join(f"{20 + i % 3},{'FM'[i % 2]}\n" for i in range(60)))
    config.write_text(
        "input: {path: people.csv}\n"
        "attributes:\n"
        "  age: {role: quasi, hierarchy: {type: intervals, widths: [10]}}\n"
        "  sex: {role: quasi, hierarchy: {type: masking}}\n"
        "privacy: {k-anonymity: {k: 2}}\n"
    )
    code = (
        "from safeshare import api\n"
        f"api.anonymize({str(config)!r}, {str(tmp_path / 'out')!r})\n"
        "import sys\n"
        "assert 'safeshare.risk.estimators.pitman' in sys.modules  # the default estimator ran\n"
    )
    loaded = loaded_after(code)
    assert "numba" in loaded  # the search ran
    assert "pyvinecopulib" not in loaded and "matplotlib" not in loaded


def test_the_estimators_needing_the_table_are_known_without_importing_them() -> None:
    from safeshare.risk.estimators import ESTIMATORS, TABLE_ESTIMATORS, requires_table

    assert {name for name in ESTIMATORS if ESTIMATORS[name].requires_table} == TABLE_ESTIMATORS
    assert all(requires_table(name) == ESTIMATORS[name].requires_table for name in ESTIMATORS)
