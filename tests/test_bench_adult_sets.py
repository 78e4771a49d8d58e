"""Adult's second hierarchy set of the benchmarks (benchmarks/bench_ola.py, issue 24): the same
lattice as the files' set, other hierarchies, every top one class, and OLA's optimum on it that
of exhaustive search."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from safeshare.config.algorithms import make_strategy
from safeshare.core.evaluation import Evaluator
from safeshare.core.frequency import FrequencyTable
from safeshare.metrics.loss import make_metric
from safeshare.models import KAnonymity, PrivacyCriterion
from safeshare.search.context import SearchContext

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import bench_ola


@pytest.fixture(scope="module")
def tables() -> dict[str, FrequencyTable]:
    return {which: bench_ola.adult_table(which)[1] for which in bench_ola.HIERARCHY_SETS}


def test_alt_set_is_another_set_on_the_same_lattice(tables: dict[str, FrequencyTable]) -> None:
    ours, alt = tables["ours"], tables["alt"]
    assert alt.lattice.heights == ours.lattice.heights and alt.lattice.size == 7776
    assert alt.n_rows == ours.n_rows
    differ = [
        h.name
        for h, g in zip(alt.hierarchies, ours.hierarchies, strict=True)
        if h.height and h.size(1) != g.size(1)
    ]
    assert len(differ) >= 4  # age and the grouped categories are cut at other widths
    assert all(h.size(h.height) == 1 for h in alt.hierarchies)  # every cell has a solution


def test_unknown_set_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown hierarchy set 'finer'"):
        bench_ola.adult_hierarchies(bench_ola.adult_table()[0].frame, "finer")


@pytest.mark.parametrize(("k", "limit"), [(5, 0.05), (100, 0.0)])
def test_ola_finds_exhaustive_optimum_on_alt_set(
    tables: dict[str, FrequencyTable], k: int, limit: float
) -> None:
    table = tables["alt"]
    found = {}
    for algorithm in ("ola", "exhaustive"):
        ev = Evaluator(table)
        ctx = SearchContext(table, ev, PrivacyCriterion([KAnonymity(k)], limit), make_metric("prec", ev))
        found[algorithm] = make_strategy(algorithm).run(ctx)
    assert found["ola"].node is not None
    assert found["ola"].objective == pytest.approx(found["exhaustive"].objective)
