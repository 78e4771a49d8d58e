"""The evaluator's classes equal a direct group-by of the generalized records."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from safeshare.core.evaluation import Classes, Evaluator
from safeshare.core.frequency import FrequencyTable
from tests.conftest import ADULT_QIS, generalized_frame, random_table


def direct_sizes(table: FrequencyTable, node: tuple[int, ...]) -> list[int]:
    frame = generalized_frame(table, node)
    return sorted(frame.groupby(list(table.qi_names), sort=False).size().tolist())


@pytest.mark.parametrize("compiled", [False, True])
def test_adult_random_nodes_match_pandas(adult_table: FrequencyTable, compiled: bool) -> None:
    ev = Evaluator(adult_table, compiled=compiled)
    rng = np.random.default_rng(7)
    nodes = list(adult_table.lattice.nodes())
    picks = [nodes[i] for i in rng.choice(len(nodes), size=12, replace=False)]
    for node in [adult_table.lattice.bottom, adult_table.lattice.top, *picks]:
        classes = ev.classes(node)
        assert sorted(classes.nonempty.tolist()) == direct_sizes(adult_table, node)
        assert classes.n_records == 32561
        # row_class maps every frequency-table row to its class
        per_class = np.bincount(classes.row_class, weights=adult_table.counts, minlength=classes.sizes.size)
        assert np.array_equal(per_class, classes.sizes)


def test_adult_bottom_has_21551_classes(adult_table: FrequencyTable) -> None:
    assert adult_table.n_rows == 21551
    assert Evaluator(adult_table).classes(adult_table.lattice.bottom).n_classes == 21551
    assert list(adult_table.qi_names) == ADULT_QIS


@given(st.integers(0, 2**32 - 1), st.integers(1, 4), st.integers(1, 80), st.booleans())
@settings(max_examples=40, deadline=None)
def test_iter_classes_equals_classes_equals_direct(
    seed: int, n_qis: int, n_rows: int, compiled: bool
) -> None:
    """numpy and the compiled loops (safeshare.core.kernels) alike."""
    table = random_table(np.random.default_rng(seed), n_qis, n_rows)
    ev = Evaluator(table, cache_bytes=1 << 16, compiled=compiled)
    seen = set()
    for classes in ev.iter_classes():
        seen.add(classes.node)
        expected = direct_sizes(table, classes.node)
        assert sorted(classes.nonempty.tolist()) == expected
        assert sorted(ev.classes(classes.node).nonempty.tolist()) == expected
        assert classes.dm_star == sum(s * s for s in expected)
        for k in (1, 2, 3, 5):
            assert classes.records_in_classes_smaller_than(k) == sum(s for s in expected if s < k)
    assert seen == set(table.lattice.nodes())


def test_cache_eviction_keeps_results_right(adult_table: FrequencyTable) -> None:
    small = Evaluator(adult_table, cache_bytes=200_000, leaf_cache=0)
    big = Evaluator(adult_table)
    rng = np.random.default_rng(3)
    nodes = list(adult_table.lattice.nodes())
    for i in rng.choice(len(nodes), size=25, replace=False):
        node = nodes[int(i)]
        assert sorted(small.classes(node).nonempty) == sorted(big.classes(node).nonempty)


def _assert_same_classes(got: Classes, want: Classes, table: FrequencyTable) -> None:
    g_rows, g_sizes = got.dense()
    w_rows, w_sizes = want.dense()
    assert np.array_equal(g_sizes, w_sizes)  # same classes, same (lexicographic) order
    assert np.array_equal(g_rows, w_rows)  # every row in the same class
    assert got.n_classes == want.n_classes
    assert got.dm_star == want.dm_star
    for k in (1, 2, 3, 5, 10):
        assert got.records_in_classes_smaller_than(k) == want.records_in_classes_smaller_than(k)
    per_class = np.bincount(got.row_class, weights=table.counts, minlength=got.sizes.size)
    assert np.array_equal(per_class, got.sizes)


@given(
    st.integers(0, 2**32 - 1),
    st.integers(1, 5),
    st.integers(1, 120),
    st.integers(1, 60),
    st.sampled_from([1 << 10, 1 << 14, 1 << 24]),
    st.booleans(),
)
@settings(max_examples=60, deadline=None)
def test_rollup_equals_leaf_evaluation(
    seed: int, n_qis: int, n_rows: int, n_nodes: int, table_bytes: int, compiled: bool
) -> None:
    """Classes rolled up from a cached descendant's class table equal those computed from
    the leaf table, for random tables, hierarchies, nodes and evaluation orders (and small
    table caches that evict)."""
    rng = np.random.default_rng(seed)
    table = random_table(rng, n_qis, n_rows, max_values=8)
    rolled = Evaluator(
        table, leaf_cache=0, table_cache_bytes=table_bytes, rollup_ratio=1.0, compiled=compiled
    )
    plain = Evaluator(table, leaf_cache=0, rollup_ratio=0.0, compiled=not compiled)
    nodes = list(table.lattice.nodes())
    for i in rng.integers(0, len(nodes), size=n_nodes):
        node = nodes[int(i)]
        _assert_same_classes(rolled.classes(node), plain.classes(node), table)
    assert plain.rolled_up == 0


def test_rollup_is_used_and_exact_on_adult(adult_table: FrequencyTable) -> None:
    rolled = Evaluator(adult_table, leaf_cache=0, rollup_ratio=0.25)
    plain = Evaluator(adult_table, leaf_cache=0, rollup_ratio=0.0)
    rng = np.random.default_rng(11)
    nodes = sorted(adult_table.lattice.nodes(), key=sum)
    picks = [nodes[int(i)] for i in np.sort(rng.choice(len(nodes), size=60, replace=False))]
    for node in picks:  # low to high: later nodes have evaluated descendants
        got = rolled.classes(node)
        _assert_same_classes(got, plain.classes(node), adult_table)
        assert got.n_records == adult_table.n_records
    assert rolled.rolled_up > 0


@pytest.mark.parametrize("budget", ["none", "exactly one prefix", "large"])
def test_prefix_cache_stays_within_its_budget_and_is_read_only(budget: str) -> None:
    """The prefix cache's byte count is the sum of what it holds, within ``cache_bytes``; the
    cached prefix ids are shared by many nodes, so they are read-only; results never depend on it."""
    table = random_table(np.random.default_rng(5), 4, 60)
    one = table.n_rows * np.dtype(np.intp).itemsize  # a prefix has one id per frequency-table row
    cache_bytes = {"none": 0, "exactly one prefix": one, "large": 1 << 20}[budget]
    ev = Evaluator(table, cache_bytes=cache_bytes, leaf_cache=0)
    fresh = Evaluator(table, cache_bytes=0, leaf_cache=0)
    for node in table.lattice.nodes():
        assert ev.classes(node).dm_star == fresh.classes(node).dm_star
        held = [ids for ids, _ in ev._cache.values() if ids is not None]
        assert ev._cache_used == sum(ids.nbytes for ids in held) <= cache_bytes
        assert not any(ids.flags.writeable for ids in held)
    # prefixes without ids (one class: every value generalized to one) cost nothing and are kept
    assert len(held) == {"none": 0, "exactly one prefix": 1}.get(budget, len(held))
    if budget == "large":
        assert len(held) > 1
