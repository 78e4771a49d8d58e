"""The generated hierarchy set of the KDD benchmark (benchmarks/bench_kdd.py, issue 36): random,
unbalanced nestings of a column's values at a given height, the same for the same seed, and on a
table of such hierarchies OLA and the anytime search without a budget find the exhaustive optimum."""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from safeshare.config.algorithms import make_strategy
from safeshare.core.evaluation import Evaluator
from safeshare.core.frequency import FrequencyTable
from safeshare.data.engines.base import COUNT_COLUMN
from safeshare.metrics.loss import make_metric
from safeshare.models import KAnonymity, PrivacyCriterion
from safeshare.search.anytime import AnytimeSearch
from safeshare.search.context import SearchContext

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import bench_kdd


@pytest.mark.parametrize(("n_values", "height"), [(91, 4), (52, 2), (7, 2), (3, 2), (2, 1), (1240, 3)])
def test_random_nesting_is_a_hierarchy_of_the_height_with_coarser_levels(n_values: int, height: int) -> None:
    values = [str(v) for v in range(n_values)]
    h = bench_kdd.RandomNesting(height, seed=36).build(values, "col")
    assert h.height == height and sorted(h.leaves) == sorted(values)
    sizes = [h.size(level) for level in range(height + 1)]
    assert sizes[0] == n_values and sizes[-1] == 1
    for low, high in itertools.pairwise(sizes):
        assert high < low or low <= 2  # each level coarser, when there is something to group
    again = bench_kdd.RandomNesting(height, seed=36).build(values, "col")
    assert [again.generalize(v, height - 1) for v in values] == [h.generalize(v, height - 1) for v in values]


def test_random_nesting_is_unbalanced_and_depends_on_the_seed() -> None:
    values = [str(v) for v in range(200)]
    one = bench_kdd.RandomNesting(3, seed=36).build(values, "col")
    other = bench_kdd.RandomNesting(3, seed=37).build(values, "col")
    groups = pd.Series([one.generalize(v, 1) for v in values]).value_counts()
    assert groups.max() >= 4 * groups.min()  # unbalanced group sizes
    assert [one.generalize(v, 1) for v in values] != [other.generalize(v, 1) for v in values]


def test_the_generated_set_has_the_heights_of_the_projects_set() -> None:
    frame = pd.DataFrame({q: [str(i % 9) for i in range(40)] for q in bench_kdd.QI_ORDER})
    built = bench_kdd.hierarchies_for(frame, 14, "random")
    assert list(built) == bench_kdd.QI_ORDER == list(bench_kdd.HEIGHTS)
    assert [h.height for h in built.values()] == list(bench_kdd.HEIGHTS.values())


@pytest.mark.parametrize("seed", range(4))
def test_ola_and_anytime_find_the_exhaustive_optimum_on_random_nestings(seed: int) -> None:
    rng = np.random.default_rng(seed)
    names = ["a", "b", "c", "d"]
    n_values = {"a": 12, "b": 6, "c": 3, "d": 2}
    frame = pd.DataFrame({q: rng.integers(0, n_values[q], size=300).astype(str) for q in names})
    hierarchies = [
        bench_kdd.RandomNesting(height, seed).build(sorted(frame[q].unique()), q)
        for q, height in zip(names, [3, 2, 2, 1], strict=True)
    ]
    grouped = frame.groupby(names, sort=False).size().reset_index(name=COUNT_COLUMN)
    table = FrequencyTable.from_grouped(grouped, names, hierarchies)
    found = {}
    for algorithm in ("ola", "exhaustive", "anytime"):
        ev = Evaluator(table)
        ctx = SearchContext(table, ev, PrivacyCriterion([KAnonymity(4)], 0.05), make_metric("prec", ev))
        strategy = AnytimeSearch(time_limit=None) if algorithm == "anytime" else make_strategy(algorithm)
        found[algorithm] = strategy.run(ctx)
    assert found["exhaustive"].node is not None
    for algorithm in ("ola", "anytime"):
        assert (found[algorithm].node, found[algorithm].objective) == (
            found["exhaustive"].node,
            found["exhaustive"].objective,
        )
    assert found["anytime"].extra["optimal"]
