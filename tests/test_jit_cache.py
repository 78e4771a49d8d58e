"""The compiled loops' machine code is loaded from numba's on-disk cache when the search path
is imported, only when the cache holds it, and then a search compiles nothing (issue 24)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from safeshare.core.evaluation import Evaluator
from safeshare.search.ola import find_minimal_nodes
from safeshare.search.warmup import exercise, synthetic_table

SRC = Path(__file__).resolve().parent.parent / "src"

#: run in a new process: import the search path, report what preload did, then search
#: on a synthetic table and report the compilations the search caused
_PROBE = """
import json, sys
from safeshare.core import _jit, jit_cache
import safeshare.search.ola
from safeshare.search import _ola_jit, warmup
report = jit_cache.preload_report()
if sys.argv[1] == "warmup":
    warmup.exercise()
functions = [*_jit.EVALUATION, *jit_cache.dispatchers(_ola_jit)]
before = {f.py_func.__name__: len(f.overloads) for f in functions}
from safeshare.core.evaluation import Evaluator
from safeshare.models import KAnonymity, PrivacyCriterion
from safeshare.metrics.loss import make_metric
from safeshare.search.context import SearchContext
from safeshare.config.algorithms import make_strategy
table = warmup.synthetic_table(seed=7)
ev = Evaluator(table)
ctx = SearchContext(table, ev, PrivacyCriterion([KAnonymity(4)], 0.1), make_metric("prec", ev))
result = make_strategy("ola").run(ctx)
ev.classes(result.node)
after = {f.py_func.__name__: len(f.overloads) for f in functions}
print(json.dumps({"report": report, "compiled_default": ev.compiled, "node": result.node,
                  "new": {k: after[k] - before[k] for k in after if after[k] != before[k]}}))
"""


def _probe(cache: Path, mode: str) -> dict[str, object]:
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache), "PYTHONPATH": str(SRC)}
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, mode], env=env, capture_output=True, text=True, check=True, timeout=900
    )
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


@pytest.mark.slow  # make test-all: compiles every loop from a cold cache (issue 36)
def test_cold_cache_loads_nothing_and_a_warm_one_is_hit_by_the_next_process(tmp_path: Path) -> None:
    """A cold cache (a new NUMBA_CACHE_DIR, as in a fresh clone): nothing is loaded, small
    tables keep numpy. After the warm-up compiled the loops into it, a new process loads
    them when it imports the search, uses them on a small table and compiles nothing."""
    cold = _probe(tmp_path, "warmup")
    assert cold["report"]["loaded"] is False  # type: ignore[index]
    assert cold["compiled_default"] is False
    warm = _probe(tmp_path, "search")
    assert warm["report"]["loaded"] is True and warm["report"]["signatures"] > 10  # type: ignore[index]
    assert warm["compiled_default"] is True
    assert warm["new"] == {}  # every loop and argument type came from the cache
    assert warm["node"] == cold["node"]


def test_exercise_takes_the_compiled_paths_and_agrees_with_numpy() -> None:
    table = synthetic_table(seed=3)
    checked = exercise(table)
    python = find_minimal_nodes(
        table.lattice,
        lambda node: Evaluator(table, compiled=False).records_below(node, 3) <= table.n_records // 20,
        compiled=False,
    )
    assert checked == python[1]
    ev = Evaluator(table, compiled=True)
    assert ev.records_below(table.lattice.bottom, 3) == Evaluator(table, compiled=False).records_below(
        table.lattice.bottom, 3
    )
    space = 300 * 40 * 3
    assert space > ev._count_space  # the bottom node's count re-densifies


#: run in a new process, with the machine's own numba cache (make warm fills it): load the
#: compiled loops in a thread (as a run does beside its read), import the search path meanwhile,
#: then search; or load them when the search path is imported
_BACKGROUND = """
import json, sys, threading
from safeshare.core import jit_cache
from safeshare.search import compiled_loops
if sys.argv[1] == "background":
    compiled_loops.load_in_background()
    assert jit_cache.loading_in_background()
import safeshare.search.ola
from safeshare.search import warmup
from safeshare.core.evaluation import Evaluator
from safeshare.models import KAnonymity, PrivacyCriterion
from safeshare.metrics.loss import make_metric
from safeshare.search.context import SearchContext
from safeshare.config.algorithms import make_strategy
table = warmup.synthetic_table(seed=7)
ev = Evaluator(table)
ctx = SearchContext(table, ev, PrivacyCriterion([KAnonymity(4)], 0.1), make_metric("prec", ev))
result = make_strategy("ola").run(ctx)
report = jit_cache.preload_report()
alive = [t.name for t in threading.enumerate() if t.name == "safeshare-jit-preload" and t.is_alive()]
print(json.dumps({"loaded": report["loaded"], "signatures": report["signatures"], "alive": alive,
                  "compiled_default": ev.compiled, "node": result.node, "checked": result.checked_nodes}))
"""


def _run(mode: str) -> dict[str, object]:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    done = subprocess.run(
        [sys.executable, "-c", _BACKGROUND, mode],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=900,
    )
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def test_loops_loaded_in_a_thread_beside_the_read_give_the_same_search() -> None:
    """A run loads the compiled loops in a thread beside its read of the input (issue 36): the
    evaluator's and OLA's choice of the compiled paths wait for it, so the loops loaded, the
    paths taken, the node found and the nodes checked are those of loading them on import; the
    thread has ended once the search has asked."""
    foreground, background = _run("foreground"), _run("background")
    assert background == foreground
    assert background["alive"] == []
