"""Mutation testing of safeshare's core with mutmut 3 (issue 13; docs/testing.md).

A mutant is a one-point change of the source (a flipped comparison, an
off-by-one literal, ``and`` for ``or``, ``break`` for ``continue``, a dropped
argument...). A test suite that lets a mutant pass ("survive") would also let
that bug pass. Every *target* below pairs core source files with their fast
tests; each target runs in its own scratch copy, ``build/mutation/<target>/``
(``src/``, ``tests/``, ``examples/`` and ``pyproject.toml`` with a generated
``[tool.mutmut]`` section), so the checkout is never touched and mutmut's own
``mutants/`` directory lands there.

Usage::

    python tools/mutation.py                 # every target, then the scores
    python tools/mutation.py ola evaluation  # some targets
    python tools/mutation.py --list          # the targets and their files
    python tools/mutation.py --report ola    # scores and survivors of an earlier run
    python tools/mutation.py evaluation --every 3 --seed 13   # a seeded sample: every 3rd mutant
    python tools/mutation.py risk_model --mutant 'safeshare.models.risk.x*node_acceptable*'

Paths are relative to the repository root and listed only in :data:`TARGETS`:
when modules move (issue 8's layout), edit that table and nothing else.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRATCH = ROOT / "build" / "mutation"
PACKAGE = "src/safeshare"


@dataclass(frozen=True)
class Target:
    """Source files to mutate (relative to the package) and the fast tests that guard them."""

    sources: tuple[str, ...]
    tests: tuple[str, ...]


#: The core modules and their fast tests (``-m "not slow"``). Edit paths here when the layout moves.
TARGETS: dict[str, Target] = {
    "ola": Target(
        ("search/ola.py",),
        ("tests/test_ola.py", "tests/test_search_economy.py", "tests/test_boundaries.py"),
    ),
    "best_first": Target(
        ("search/best_first.py",),
        ("tests/test_sensitive_searches.py", "tests/test_boundaries.py"),
    ),
    "inverse_ola": Target(
        ("search/inverse_ola.py",),
        ("tests/test_inverse_ola.py", "tests/test_boundaries.py"),
    ),
    "anytime": Target(
        ("search/anytime.py",),
        ("tests/test_anytime.py", "tests/test_auto.py", "tests/test_boundaries.py"),
    ),
    "lattice": Target(
        ("core/lattice.py",),
        ("tests/test_lattice.py", "tests/test_ola.py", "tests/test_boundaries.py"),
    ),
    "evaluation": Target(
        ("core/evaluation.py",),
        ("tests/test_evaluation.py", "tests/test_boundaries.py"),
    ),
    "models_k": Target(
        ("models/base.py", "models/k_anonymity.py", "models/registry.py"),
        ("tests/test_boundaries.py", "tests/test_config_keys.py"),
    ),
    "l_diversity": Target(
        ("models/l_diversity.py", "models/sensitive.py"),
        ("tests/test_l_diversity.py", "tests/test_boundaries.py"),
    ),
    "t_closeness": Target(
        ("models/t_closeness.py",),
        ("tests/test_t_closeness.py", "tests/test_boundaries.py"),
    ),
    "m_concealing": Target(
        ("models/m_concealing.py",),
        ("tests/test_m_concealing.py", "tests/test_boundaries.py"),
    ),
    "risk_model": Target(
        ("models/risk.py",),
        ("tests/test_risk_model.py", "tests/test_boundaries.py"),
    ),
    "small_cells": Target(
        ("models/small_cells.py",),
        ("tests/test_small_cells.py", "tests/test_boundaries.py"),
    ),
    "release_risk": Target(
        ("risk/release_risk.py",),
        ("tests/test_risk_model.py", "tests/test_boundaries.py"),
    ),
    "concealment": Target(
        ("risk/m_concealing.py",),
        ("tests/test_m_concealing.py", "tests/test_boundaries.py"),
    ),
    "population_cells": Target(
        ("risk/small_cells.py",),
        ("tests/test_small_cells.py", "tests/test_boundaries.py"),
    ),
    "metrics": Target(
        ("metrics/loss.py",),
        ("tests/test_metrics.py", "tests/test_boundaries.py"),
    ),
    "verify_lines": Target(
        ("verify/csv_lines.py", "verify/file_scan.py"),
        ("tests/test_csv_lines.py", "tests/test_file_scan.py", "tests/test_hostile_shapes.py"),
    ),
    "verifier": Target(
        ("verify/__init__.py",),
        (
            "tests/test_release.py",
            "tests/test_local_release.py",
            "tests/test_truth.py",
            "tests/test_hostile_shapes.py",
            "tests/test_control_characters.py",
            "tests/test_identifiers.py",
            "tests/test_file_scan.py",
            "tests/test_persons.py",
        ),
    ),
    "persons": Target(
        ("verify/persons.py",),
        ("tests/test_persons.py",),
    ),
    "truth": Target(
        ("verify/truth.py",),
        ("tests/test_truth.py",),
    ),
    "surveillance": Target(
        ("surveillance/simulate.py", "surveillance/search.py", "risk/measures.py"),
        (
            "tests/test_surveillance_simulate.py",
            "tests/test_surveillance_search.py",
            "tests/test_risk_measures.py",
        ),
    ),
}

#: Lines that only build a message (an exception's text, a report note) are not mutated: a
#: reworded message is not a wrong result, and the CLI and config tests match the messages
#: that matter. Mutants of the condition that raises are kept (they are on the ``if`` line).
MESSAGE_LINES = (
    r"^\s*raise \w+\(",  # raise SomeError(f"...")
    r'^\s*f?"[^"]*"\s*[,)]*\s*$',  # a continuation line of a message
    r'^\s*"(note|reason)":',  # report notes of a search result
)

#: A mutant's CPU time limit is ``2 * multiplier * (its tests' time + 1 s)``; mutmut's default (15)
#: lets a mutant that loops forever (``k -= 1`` -> ``k += 1``) hold a shared core for minutes.
#: A timeout counts as a kill.
TIMEOUT_MULTIPLIER = 5.0

#: Copied into every scratch directory (the tests read the bundled Adult data and hierarchies).
COPIED = ("src", "tests", "examples")


def mutmut_section(target: Target) -> str:
    """The ``[tool.mutmut]`` section of one target."""
    sources = [f"{PACKAGE}/{s}" for s in target.sources]
    tests = [t for t in target.tests if (ROOT / t).exists()]
    return (
        "\n[tool.mutmut]\n"
        'source_paths = ["src"]\n'
        f"only_mutate = {json.dumps(sources)}\n"
        'also_copy = ["examples"]\n'
        f"do_not_mutate_patterns = {json.dumps(list(MESSAGE_LINES))}\n"
        f"pytest_add_cli_args_test_selection = {json.dumps(tests)}\n"
        'pytest_add_cli_args = ["-m", "not slow", "-x", "-q", "-p", "no:cacheprovider"]\n'
        f"timeout_multiplier = {TIMEOUT_MULTIPLIER}\n"
    )


def prepare(name: str, target: Target) -> Path:
    """A fresh scratch copy of the repository for ``target``."""
    work = SCRATCH / name
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".hypothesis")
    for entry in COPIED:
        shutil.copytree(ROOT / entry, work / entry, ignore=ignore)
    text = (ROOT / "pyproject.toml").read_text()
    if "[tool.mutmut]" in text:
        raise SystemExit("pyproject.toml has its own [tool.mutmut] section; tools/mutation.py writes one")
    (work / "pyproject.toml").write_text(text + mutmut_section(target))
    return work


def mutmut() -> str:
    exe = Path(sys.executable).with_name("mutmut")
    if exe.exists():
        return str(exe)
    found = shutil.which("mutmut")
    if found is None:
        raise SystemExit("mutmut is not installed: pip install -e '.[test]'")
    return found


def mutant_names(name: str, target: Target) -> list[str]:
    """Every mutant of ``target``'s files (from the ``.meta`` files of a generated run), sorted."""
    keys: list[str] = []
    for source in target.sources:
        meta = SCRATCH / name / "mutants" / PACKAGE / f"{source}.meta"
        if meta.exists():
            keys += json.loads(meta.read_text())["exit_code_by_key"]
    return sorted(keys)


def sample(names: list[str], every: int, seed: int) -> list[str]:
    """Every ``every``-th name from a seeded start: a reproducible systematic sample."""
    if every <= 1:
        return names
    return names[random.Random(seed).randrange(every) :: every]


def run(name: str, target: Target, max_children: int, mutants: list[str], every: int, seed: int) -> None:
    """Mutate ``target`` and run its fast tests on the mutants (all, the named ones, or a sample)."""
    work = prepare(name, target)
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)  # mutmut puts mutants/src first; nothing else may shadow it
    print(f"== {name}: {', '.join(target.sources)} against {', '.join(target.tests)}", flush=True)
    command = [mutmut(), "run", "--max-children", str(max_children)]
    if every > 1:
        # a pattern that matches nothing: mutmut generates the mutants and its test map only
        generate = [*command, "no-mutant-has-this-name"]
        subprocess.run(generate, cwd=work, env=env, check=False, capture_output=True)
        mutants = [*mutants, *sample(mutant_names(name, target), every, seed)]
        if not mutants:
            raise SystemExit(f"{name}: mutmut generated no mutants to sample")
        print(f"   sample: every {every}th mutant from seed {seed}: {len(mutants)} mutants", flush=True)
    subprocess.run([*command, *mutants], cwd=work, env=env, check=False, stdout=subprocess.DEVNULL)


@dataclass
class Score:
    total: int = 0
    killed: int = 0
    pending: int = 0
    survived: list[str] | None = None
    other: list[str] | None = None

    @property
    def checked(self) -> int:
        return self.total - self.pending

    @property
    def percent(self) -> float:
        return 100.0 * self.killed / self.checked if self.checked else 0.0


#: mutmut's exit codes counted as a kill (tests failed, pytest error, timeout, crash: -11 a
#: segmentation fault, -6 an abort, e.g. a compiled loop writing out of bounds).
KILLED = {1, 3, 36, 24, -24, 152, 255, -11, -9, -6, 37}


def score(name: str, target: Target) -> dict[str, Score]:
    """Per source file: mutants, killed, survivors (from mutmut's ``.meta`` files)."""
    out: dict[str, Score] = {}
    for source in target.sources:
        meta = SCRATCH / name / "mutants" / PACKAGE / f"{source}.meta"
        s = Score(survived=[], other=[])
        if meta.exists():
            codes: dict[str, int | None] = json.loads(meta.read_text())["exit_code_by_key"]
            for key, code in sorted(codes.items()):
                s.total += 1
                if code in KILLED:
                    s.killed += 1
                elif code is None:
                    s.pending += 1
                elif code == 0:
                    assert s.survived is not None
                    s.survived.append(key)
                else:
                    assert s.other is not None
                    s.other.append(f"{key} (exit {code})")
        out[source] = s
    return out


def report(names: list[str]) -> None:
    print(f"\n{'file':<28} {'mutants':>8} {'checked':>8} {'killed':>7} {'score':>7}")
    for name in names:
        for source, s in score(name, TARGETS[name]).items():
            print(f"{source:<28} {s.total:>8} {s.checked:>8} {s.killed:>7} {s.percent:>6.1f}%")
    for name in names:
        for source, s in score(name, TARGETS[name]).items():
            for key in (s.survived or []) + (s.other or []):
                print(f"  survived  {source}: {key}")
    print(f"\nshow a mutant's diff: cd build/mutation/<target> && {mutmut()} show <name>")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("targets", nargs="*", help=f"default: all of {', '.join(TARGETS)}")
    parser.add_argument("--list", action="store_true", help="print the targets and exit")
    parser.add_argument("--report", action="store_true", help="only print the scores of an earlier run")
    parser.add_argument("--max-children", type=int, default=max(1, (os.cpu_count() or 2) // 2))
    parser.add_argument(
        "--mutant", action="append", default=[], help="run only this mutant (a name or glob; repeatable)"
    )
    parser.add_argument("--every", type=int, default=1, help="run a sample: every N-th mutant")
    parser.add_argument("--seed", type=int, default=13, help="the sample's seed (its first mutant)")
    args = parser.parse_args()
    unknown = [t for t in args.targets if t not in TARGETS]
    if unknown:
        parser.error(f"unknown target {unknown[0]!r}; expected one of {', '.join(TARGETS)}")
    names = args.targets or list(TARGETS)
    if args.list:
        for name in names:
            print(f"{name}: {' '.join(TARGETS[name].sources)} <- {' '.join(TARGETS[name].tests)}")
        return
    if not args.report:
        for name in names:
            run(name, TARGETS[name], args.max_children, args.mutant, args.every, args.seed)
    report(names)


if __name__ == "__main__":
    main()
