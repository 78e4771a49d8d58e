"""The evaluator's classes equal a direct group-by of the generalized records."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from safeshare.core.evaluation import Classes, Evaluator, _ClassTable, _TableCache, densify
from safeshare.core.frequency import FrequencyTable
from safeshare.data.engines.base import COUNT_COLUMN
from safeshare.hierarchy.hierarchy import Hierarchy
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


@pytest.mark.parametrize("compiled", [False, True])
@pytest.mark.parametrize("budget", ["none", "exactly one prefix", "large"])
def test_prefix_cache_stays_within_its_budget_and_is_read_only(budget: str, compiled: bool) -> None:
    """The prefix cache's byte count is the sum of what it holds, within ``cache_bytes``; the
    cached prefix ids are shared by many nodes, so they are read-only; results never depend on it.
    Both loops, explicitly: which one a small table gets by default depends on whether the
    process loaded the compiled ones (safeshare.core.jit_cache)."""
    table = random_table(np.random.default_rng(5), 4, 60)
    # a prefix has one id per frequency-table row: int32 in the compiled loops, intp in numpy's
    one = table.n_rows * np.dtype(np.int32 if compiled else np.intp).itemsize
    cache_bytes = {"none": 0, "exactly one prefix": one, "large": 1 << 20}[budget]
    ev = Evaluator(table, cache_bytes=cache_bytes, leaf_cache=0, compiled=compiled)
    fresh = Evaluator(table, cache_bytes=0, leaf_cache=0, compiled=False)
    for node in table.lattice.nodes():
        assert ev.classes(node).dm_star == fresh.classes(node).dm_star
        held = [ids for ids, _ in ev._cache.values() if ids is not None]
        assert ev._cache_used == sum(ids.nbytes for ids in held) <= cache_bytes
        assert not any(ids.flags.writeable for ids in held)
    # prefixes without ids (one class: every value generalized to one) cost nothing and are kept
    assert len(held) == {"none": 0, "exactly one prefix": 1}.get(budget, len(held))
    if budget == "large":
        assert len(held) > 1


# ------------------------------------------------------------ the roll-up's class-table cache
def _table(n_classes: int) -> _ClassTable:
    """A dense class table of ``n_classes`` classes: 16 bytes a class (intp rep + float64 size)."""
    return _ClassTable(np.arange(n_classes, dtype=np.intp), np.ones(n_classes), n_classes, dense=True)


def test_class_table_bytes_are_its_arrays() -> None:
    table = _ClassTable(np.arange(5, dtype=np.intp), np.ones(3), 3, dense=False)
    assert table.nbytes == 5 * 8 + 3 * 8


def test_table_cache_fills_its_slots_in_order_and_grows_by_doubling() -> None:
    """No slot is left unused: the first nodes take slots 0, 1, 2... (capacity 16 -> 32 -> 64
    -> 128), and after ``clear`` (which keeps the capacity) the same; ``used`` is the sum of
    the tables' bytes."""
    cache = _TableCache(2, 1 << 20)
    for n_nodes, capacity in ((40, 64), (65, 128)):
        nodes = [(i, j) for i in range(13) for j in range(5)][:n_nodes]
        for n, node in enumerate(nodes):
            cache.add(node, _table(n + 1))
        assert [cache._entries[node][0] for node in nodes] == list(range(n_nodes))
        assert cache._counts.shape[0] == cache._nodes.shape[0] == capacity
        assert cache.used == sum(16 * (n + 1) for n in range(n_nodes))
        assert cache.best_descendant((7, 4), 1000) is cache._entries[(6, 4)][1]  # 35 classes < 39
        cache.clear()
        assert cache.used == 0 and cache.best_descendant((7, 4), 1000) is None
        assert cache._counts.shape[0] == capacity


def test_table_cache_evicts_the_least_recently_used_and_fits_exactly() -> None:
    cache = _TableCache(1, 2 * 16 * 4)  # exactly two tables of 4 classes
    a, b, c = _table(4), _table(4), _table(4)
    cache.add((0,), a)
    cache.add((1,), b)
    assert list(cache._entries) == [(0,), (1,)] and cache.used == 128  # exactly full: both kept
    assert cache.best_descendant((2,), 10) is b  # (1,) one step below: now the most recent
    assert cache.best_descendant((1,), 10) is a  # and (0,) again
    cache.add((2,), c)  # evicts (1,), the least recently used
    assert list(cache._entries) == [(0,), (2,)] and cache.used == 128
    cache.add((3,), _table(9))  # larger than the whole budget: not kept, nothing evicted
    assert list(cache._entries) == [(0,), (2,)]
    three = _TableCache(1, 3 * 64)
    for level in range(5):  # from the fourth on, every add evicts one table of 64 bytes
        three.add((level,), _table(4))
        assert three.used == 64 * min(level + 1, 3)
    assert list(three._entries) == [(2,), (3,), (4,)]


def test_table_cache_best_descendant() -> None:
    """One step below first (the fewest classes among them), else the fewest classes among all
    descendants; never a table of more than ``limit`` classes (``limit`` itself is fine)."""
    cache = _TableCache(2, 1 << 20)
    cache.add((0, 1), _table(5))
    cache.add((1, 0), _table(3))
    cache.add((0, 0), _table(2))
    cache.add((3, 3), _table(1))  # below none of the nodes asked about
    table = {node: entry[1] for node, entry in cache._entries.items()}
    # one step below (1, 1): (0, 1) has 5 classes, (1, 0) 3: the later QI's wins
    assert cache.best_descendant((1, 1), 10) is table[(1, 0)]
    assert cache.best_descendant((1, 1), 2) is table[(0, 0)]  # the only one within the limit
    assert cache.best_descendant((1, 2), 4) is table[(0, 0)]  # (1, 1) and (0, 2) not cached
    # (0, 1) is one step below (0, 2) but has 5 classes: beyond the limit 4
    assert cache.best_descendant((0, 2), 4) is table[(0, 0)]
    assert cache.best_descendant((0, 2), 1) is None
    # two steps above (0, 0): the fewest classes among all descendants, at most limit
    assert cache.best_descendant((2, 2), 5) is table[(0, 0)]
    assert cache.best_descendant((2, 2), 2) is table[(0, 0)]
    assert cache.best_descendant((2, 2), 1) is None
    only = _TableCache(1, 1 << 20)
    only.add((0,), _table(3))
    assert only.best_descendant((1,), 2) is None  # one step below, but 3 classes > 2
    assert only.best_descendant((1,), 3) is only._entries[(0,)][1]


# ------------------------------------------------------------ wide id spaces, flags and counters
def wide_table(n_a: int, n_b: int, seed: int) -> FrequencyTable:
    """Two QIs: ``a`` distinct on each of the ``n_a`` rows, ``b`` with ``n_b <= n_a`` values
    (each present, some repeated), 1-3 records a row. The last step's id space ``n_a * n_b``
    is far beyond twice the rows, so it must be re-densified."""
    rng = np.random.default_rng(seed)
    a = [f"a{i}" for i in range(n_a)]
    b_values = [f"b{i}" for i in range(n_b)]
    b = [b_values[i % n_b] for i in rng.permutation(n_a)]
    grouped = pd.DataFrame({"a": a, "b": b, COUNT_COLUMN: rng.integers(1, 4, size=n_a)})
    hierarchies = [Hierarchy([(v, "*") for v in a], "a"), Hierarchy([(v, "*") for v in b_values], "b")]
    return FrequencyTable.from_grouped(grouped, ["a", "b"], hierarchies)


# 100 x 100: the last id space 10**4 exceeds 2 * 100 rows and 2**12 (numpy: densify; compiled:
# the rank directory); 400 x 300: 1.2 * 10**5 exceeds the compiled scratch (256 * 400 ids), so
# the compiled path falls back to densify too (and b alone does not tell the rows apart)
@pytest.mark.parametrize("shape", [(100, 100), (400, 300)])
@pytest.mark.parametrize("compiled", [False, True])
def test_wide_id_spaces_are_re_densified_and_weighted(shape: tuple[int, int], compiled: bool) -> None:
    table = wide_table(*shape, seed=shape[1])
    ev = Evaluator(table, compiled=compiled)
    assert ev.compiled is compiled
    for node in table.lattice.nodes():
        classes = ev.classes(node)
        assert sorted(classes.nonempty.tolist()) == direct_sizes(table, node)
        assert classes.sizes.shape[0] <= max(2 * table.n_rows, 1 << 12)  # slots stay dense
        per_class = np.bincount(classes.row_class, weights=table.counts, minlength=classes.sizes.size)
        assert np.array_equal(per_class, classes.sizes)


def test_qis_are_ordered_by_decreasing_number_of_values() -> None:
    rng = np.random.default_rng(2)
    columns = {
        "few": rng.choice(["x", "y"], 50),
        "many": [f"m{i % 9}" for i in range(50)],
        "mid": rng.choice(list("abcd"), 50),
    }
    frame = pd.DataFrame(columns)
    hierarchies = [Hierarchy([(v, "*") for v in sorted(frame[c].unique())], c) for c in columns]
    grouped = frame.groupby(list(columns), sort=False).size().reset_index(name=COUNT_COLUMN)
    table = FrequencyTable.from_grouped(grouped, list(columns), hierarchies)
    assert Evaluator(table).order == (1, 2, 0)  # 9 values, 4, 2


def test_leaf_cache_keeps_exactly_its_capacity_least_recently_used_out() -> None:
    table = random_table(np.random.default_rng(4), 2, 30)
    ev = Evaluator(table, leaf_cache=2)
    a, b, c = table.lattice.bottom, table.lattice.top, (0, table.lattice.top[1])
    ca, cb = ev.classes(a), ev.classes(b)
    assert ev.classes(a) is ca and ev.classes(b) is cb  # both kept: capacity 2
    ev.classes(c)  # evicts a, the least recently used
    assert ev.classes(b) is cb
    assert ev.classes(a) is not ca
    assert Evaluator(table, leaf_cache=0).classes(a) is not Evaluator(table, leaf_cache=0).classes(a)
    one = Evaluator(table, leaf_cache=1)
    assert one.classes(a) is one.classes(a)  # a cache of one node keeps it
    zero = Evaluator(table, leaf_cache=0)
    assert zero.classes(a) is not zero.classes(a)


def test_rollup_counts_each_rolled_up_node_and_takes_a_table_at_the_limit() -> None:
    """``rolled_up`` counts the nodes rolled up; a cached table of exactly ``rollup_ratio * M``
    classes is used, by the one-step lookup and by the search over all descendants alike."""
    table = wide_table(8, 8, seed=1)  # 8 rows; a node with one QI generalized has 8 classes
    m = table.n_rows
    one = Evaluator(table, leaf_cache=0, rollup_ratio=1 / m)  # limit: one class
    one.classes((0, 1))  # 8 classes: not kept
    one.classes((1, 1))
    assert one.rolled_up == 0
    assert one.classes((1, 1)).nonempty.tolist() == [int(table.counts.sum())]
    assert one.rolled_up == 1  # from the cached top, which has one class (the limit)
    full = Evaluator(table, leaf_cache=0, rollup_ratio=1.0)  # limit: 8 classes
    full.classes((0, 0))  # 8 classes: kept
    assert full.classes((1, 1)).nonempty.tolist() == [int(table.counts.sum())]  # two steps above
    assert sorted(full.classes((0, 1)).nonempty.tolist()) == sorted(table.counts.tolist())  # one step
    assert full.rolled_up == 2


@pytest.mark.parametrize("compiled", [False, True])
def test_prefix_cache_evicts_the_least_recently_used_prefix(compiled: bool) -> None:
    """With room for one prefix, the newest stays: a (8 values, then 4 groups) comes first.
    Both loops, explicitly (int32 prefixes in the compiled ones, intp in numpy's)."""
    a = [f"a{i}" for i in range(8)]
    grouped = pd.DataFrame({"a": a * 2, "b": ["x"] * 8 + ["y"] * 8, COUNT_COLUMN: [1] * 16})
    hierarchies = [
        Hierarchy([(v, f"g{i // 2}", "*") for i, v in enumerate(a)], "a"),
        Hierarchy([("x", "*"), ("y", "*")], "b"),
    ]
    table = FrequencyTable.from_grouped(grouped, ["a", "b"], hierarchies)
    one = table.n_rows * np.dtype(np.int32 if compiled else np.intp).itemsize
    ev = Evaluator(table, cache_bytes=one, leaf_cache=0, compiled=compiled)
    assert ev.order == (0, 1)
    ev.classes((0, 0))
    assert list(ev._cache) == [(0,)]
    ev.classes((1, 0))
    assert list(ev._cache) == [(1,)]
    assert ev.classes((0, 1)).nonempty.tolist() == [2] * 8
    assert list(ev._cache) == [(0,)]


def test_compiled_fallback_tells_apart_ids_that_a_division_would_merge() -> None:
    """600 rows, ``a`` distinct, ``b`` with 512 values: the last id space 600 * 512 exceeds the
    compiled scratch (256 * 600), so the key ``a_id * 512 + b_code`` is built in numpy; rows
    (a0, b1) and (a512, b0) are two classes (``a_id / 512 + b_code`` would make them one)."""
    a = [f"a{i}" for i in range(600)]
    b_values = [f"b{i}" for i in range(512)]
    b = [b_values[(i + 1) % 512] if i < 512 else b_values[i - 512] for i in range(600)]
    grouped = pd.DataFrame({"a": a, "b": b, COUNT_COLUMN: [1] * 600})
    hierarchies = [Hierarchy([(v, "*") for v in a], "a"), Hierarchy([(v, "*") for v in b_values], "b")]
    table = FrequencyTable.from_grouped(grouped, ["a", "b"], hierarchies)
    assert Evaluator(table, compiled=True).classes((0, 0)).nonempty.tolist() == [1] * 600


def test_densify_of_no_ids() -> None:
    ids, n = densify(np.zeros(0, dtype=np.intp), 0)
    assert (ids.tolist(), n) == ([], 0)


# ------------------------------------------------------------ the predicate's count (issue 24)
def _walks(lattice_nodes: list[tuple[int, ...]], rng: np.random.Generator, n: int) -> list[tuple[int, ...]]:
    """Random nodes, each followed by a walk down one QI at a time (OLA's descents: what the
    refinement of :meth:`Evaluator.records_below` serves) and some repeats."""
    out: list[tuple[int, ...]] = []
    for i in rng.integers(0, len(lattice_nodes), size=n):
        node = list(lattice_nodes[int(i)])
        out.append(tuple(node))
        for _ in range(int(rng.integers(0, 4))):
            down = [j for j, level in enumerate(node) if level > 0]
            if not down:
                break
            node[int(rng.choice(down))] -= 1
            out.append(tuple(node))
        if out and rng.random() < 0.2:
            out.append(out[int(rng.integers(0, len(out)))])
    return out


@given(
    st.integers(0, 2**32 - 1),
    st.integers(1, 5),
    st.integers(1, 150),
    st.integers(1, 40),
    st.sampled_from([1, 2, 3, 5, 10]),
    st.booleans(),
    st.booleans(),
)
@settings(max_examples=80, deadline=None)
def test_records_below_equals_the_class_table_count(
    seed: int, n_qis: int, n_rows: int, n_walks: int, k: int, compiled: bool, small_cache: bool
) -> None:
    """The predicate's count (prefix composition or refinement of a recent node's classes,
    whichever it takes) is the count of the class table, for random tables, hierarchies,
    walks down the lattice, k, both loops and a prefix cache that holds nothing."""
    rng = np.random.default_rng(seed)
    table = random_table(rng, n_qis, n_rows, max_values=9, max_height=4)
    ev = Evaluator(table, cache_bytes=0 if small_cache else 1 << 20, leaf_cache=0, compiled=compiled)
    reference = Evaluator(table, leaf_cache=0, compiled=not compiled)
    for node in _walks(list(table.lattice.nodes()), rng, n_walks):
        want = reference.classes(node).records_in_classes_smaller_than(k)
        assert ev.records_below(node, k) == want == sum(s for s in direct_sizes(table, node) if s < k)
    assert ev.evaluations >= n_walks


@pytest.mark.parametrize("compiled", [False, True])
def test_records_below_refines_descents_on_adult(adult_table: FrequencyTable, compiled: bool) -> None:
    """A walk down from the top of Adult's lattice: every step after the first refines the
    node just counted (one pass), and every count equals the class table's."""
    ev = Evaluator(adult_table, leaf_cache=0, compiled=compiled)
    reference = Evaluator(adult_table, compiled=not compiled)
    node = list(adult_table.lattice.top)
    steps = 0
    while any(node):
        for k in (2, 5, 100):
            assert ev.records_below(tuple(node), k) == reference.classes(
                tuple(node)
            ).records_in_classes_smaller_than(k)
        node[max(range(len(node)), key=lambda i: (node[i], -i))] -= 1
        steps += 1
    assert ev.refined >= 3 * (steps - 1)


def test_records_below_wide_spaces_and_the_child_ranks() -> None:
    """Wide id spaces (re-densified, or sorted past the compiled scratch) count right, and the
    rank of a label among its parent's children numbers them 0 .. fanout - 1."""
    for shape in ((100, 100), (400, 300)):
        table = wide_table(*shape, seed=4)
        for compiled in (False, True):
            ev = Evaluator(table, leaf_cache=0, compiled=compiled)
            for node in [(0, 0), (1, 0), (0, 1), (0, 0)]:
                for k in (1, 2, 4):
                    want = sum(s for s in direct_sizes(table, node) if s < k)
                    assert ev.records_below(node, k) == want
            rank, fanout = ev._child_ranks(1, 0)
            assert fanout == shape[1] and sorted(set(rank.tolist())) == list(range(shape[1]))
