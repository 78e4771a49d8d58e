"""OLA finds exactly the k-minimal nodes and the exhaustive optimum (thesis §4.3).

The reference is a brute force over every node of the lattice that shares no
code with the search: class sizes from the evaluator's depth-first walk
(itself checked against pandas in test_evaluation.py), qualifying nodes,
their minimal elements and the least loss, computed here with plain Python.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from safeshare.core.evaluation import Evaluator
from safeshare.core.frequency import FrequencyTable
from safeshare.core.lattice import Lattice, TagStore
from safeshare.metrics.loss import NonUniformEntropy, make_metric
from safeshare.models import KAnonymity, PrivacyCriterion
from safeshare.search import MinimalSet, exhaustive_search, find_minimal_nodes, ola_search
from safeshare.search.ola import tag_minimal
from tests.conftest import random_table

KS = (2, 5, 25, 100)
LIMITS = (0.0, 0.01, 0.05, 0.1, 0.2, 0.5)
METRICS = ("prec", "dm_star", "entropy")
THESIS_TABLE_6_9 = {
    5: [127, 1267, 2418, 2058, 1303, 260],
    25: [98, 549, 1308, 2103, 1869, 773],
    100: [55, 215, 635, 1121, 1657, 1114],
}


class BruteForce:
    """Per-node statistics of the whole lattice, for several k at once."""

    def __init__(self, table: FrequencyTable, ks: tuple[int, ...]) -> None:
        self.table = table
        self.suppressed: dict[int, dict[tuple[int, ...], int]] = {k: {} for k in ks}
        self.dm_star: dict[tuple[int, ...], int] = {}
        for classes in Evaluator(table).iter_classes():
            sizes = classes.sizes[classes.sizes > 0].astype(np.int64)
            for k in ks:
                self.suppressed[k][classes.node] = int(sizes[sizes < k].sum())
            self.dm_star[classes.node] = int((sizes * sizes).sum())
        # non-uniform entropy per (QI, level) from row-level counts: -sum c(v) log2 c(v)/c(g(v))
        self.entropy: list[list[float]] = []
        for j, h in enumerate(table.hierarchies):
            leaf_counts: dict[str, int] = {}
            for code, c in zip(table.codes[:, j], table.counts, strict=True):
                value = h.leaves[code]
                leaf_counts[value] = leaf_counts.get(value, 0) + int(c)
            per_level = []
            for level in range(h.height + 1):
                gen = h.mapping(level)
                gen_counts: dict[str, int] = {}
                for v, c in leaf_counts.items():
                    gen_counts[gen[v]] = gen_counts.get(gen[v], 0) + c
                per_level.append(sum(-c * math.log2(c / gen_counts[gen[v]]) for v, c in leaf_counts.items()))
            self.entropy.append(per_level)

    def qualifying(self, k: int, limit: float) -> set[tuple[int, ...]]:
        cap = math.floor(limit * self.table.n_records + 1e-9)
        return {n for n, s in self.suppressed[k].items() if s <= cap}

    def minimal(self, nodes: set[tuple[int, ...]]) -> list[tuple[int, ...]]:
        lattice = self.table.lattice
        return sorted(n for n in nodes if not any(p in nodes for p in lattice.predecessors(n)))

    def loss(self, metric: str, node: tuple[int, ...]) -> float:
        table = self.table
        if metric == "dm_star":
            return float(self.dm_star[node])
        if metric == "prec":
            hs = [h.height for h in table.hierarchies]
            terms = [lv / h for lv, h in zip(node, hs, strict=True) if h > 0]
            return sum(terms) / len(terms) if terms else 0.0
        return math.fsum(self.entropy[j][lv] for j, lv in enumerate(node))


@pytest.fixture(scope="module")
def adult_brute(adult_table: FrequencyTable) -> BruteForce:
    return BruteForce(adult_table, KS)


def run_ola(table: FrequencyTable, k: int, limit: float, metric: str, ev: Evaluator | None = None):  # type: ignore[no-untyped-def]
    ev = ev or Evaluator(table)
    crit = PrivacyCriterion([KAnonymity(k)], limit)
    m = make_metric(metric, ev)
    guide = NonUniformEntropy(ev).node_array()
    return ola_search(table.lattice, lambda n: crit.holds(ev.classes(n), table), m.value, guide=guide)


def check_config(
    table: FrequencyTable, brute: BruteForce, k: int, limit: float, metric: str, ev: Evaluator | None = None
) -> None:
    result = run_ola(table, k, limit, metric, ev)
    qualifying = brute.qualifying(k, limit)
    assert result.minimal_nodes == brute.minimal(qualifying)
    best = min(brute.loss(metric, n) for n in qualifying)
    assert result.node in qualifying
    assert result.objective == pytest.approx(best, rel=1e-12, abs=1e-9)
    assert brute.loss(metric, result.node) == pytest.approx(best, rel=1e-12, abs=1e-9)


SAMPLE = [
    (2, 0.0, "prec"),
    (5, 0.05, "prec"),
    (5, 0.5, "dm_star"),
    (25, 0.1, "entropy"),
    (100, 0.2, "dm_star"),
    (100, 0.01, "entropy"),
]


@pytest.mark.parametrize(("k", "limit", "metric"), SAMPLE)
def test_adult_sample_matches_exhaustive(
    adult_table: FrequencyTable, adult_brute: BruteForce, k: int, limit: float, metric: str
) -> None:
    check_config(adult_table, adult_brute, k, limit, metric)


@pytest.mark.slow
@pytest.mark.parametrize("k", KS)
@pytest.mark.parametrize("limit", LIMITS)
@pytest.mark.parametrize("metric", METRICS)
def test_adult_full_grid_matches_exhaustive(
    adult_table: FrequencyTable, adult_brute: BruteForce, k: int, limit: float, metric: str
) -> None:
    check_config(adult_table, adult_brute, k, limit, metric)


@pytest.mark.slow
def test_adult_checks_at_most_thesis_table_6_9(adult_table: FrequencyTable) -> None:
    ev = Evaluator(adult_table)
    for k, counts in THESIS_TABLE_6_9.items():
        for limit, thesis in zip(LIMITS, counts, strict=True):
            assert run_ola(adult_table, k, limit, "prec", ev).checked_nodes <= thesis, (k, limit)


def test_adult_exhaustive_search_class_agrees(adult_table: FrequencyTable, adult_brute: BruteForce) -> None:
    ev = Evaluator(adult_table)
    crit = PrivacyCriterion([KAnonymity(5)], 0.05)
    m = make_metric("entropy", ev)
    result = exhaustive_search(
        adult_table.lattice, ev.iter_classes(), lambda c: (crit.holds(c, adult_table), m.value(c.node, c))
    )
    qualifying = adult_brute.qualifying(5, 0.05)
    assert result.checked_nodes == 7776
    assert result.minimal_nodes == adult_brute.minimal(qualifying)
    assert result.objective == pytest.approx(min(adult_brute.loss("entropy", n) for n in qualifying))


@pytest.mark.parametrize(("k", "limit", "metric"), [(5, 0.05, "prec"), (100, 0.2, "dm_star")])
def test_adult_compiled_paths_match_exhaustive(
    adult_table: FrequencyTable, adult_brute: BruteForce, k: int, limit: float, metric: str
) -> None:
    """The compiled loops of big searches (evaluator, settled boxes, level offsets, minimal
    filter), forced on Adult's 7,776 nodes: the exhaustive optimum and the same checks."""
    plain = run_ola(adult_table, k, limit, metric, Evaluator(adult_table, compiled=False))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(TagStore, "walk_from", 0)
        check_config(adult_table, adult_brute, k, limit, metric, Evaluator(adult_table, compiled=True))
        fast = run_ola(adult_table, k, limit, metric, Evaluator(adult_table, compiled=True))
    # the recursion compiled on its own (the evaluator's compiled loops turn it on)
    ev, criterion = Evaluator(adult_table, compiled=False), PrivacyCriterion([KAnonymity(k)], limit)
    alone = ola_search(
        adult_table.lattice,
        lambda n: criterion.holds(ev.classes(n), adult_table),
        lambda n: 0.0,
        compiled=True,
    )
    assert alone.checked_nodes <= adult_table.lattice.size
    assert alone.minimal_nodes == plain.minimal_nodes
    assert (fast.node, fast.checked_nodes, fast.minimal_nodes) == (
        plain.node,
        plain.checked_nodes,
        plain.minimal_nodes,
    )


@given(
    seed=st.integers(0, 2**32 - 1),
    n_qis=st.integers(1, 4),
    n_rows=st.integers(1, 60),
    k=st.integers(1, 6),
    limit=st.sampled_from([0.0, 0.05, 0.1, 0.3, 0.5, 1.0]),
    metric=st.sampled_from(METRICS),
)
@settings(max_examples=80, deadline=None)
def test_random_tables_match_exhaustive(
    seed: int, n_qis: int, n_rows: int, k: int, limit: float, metric: str
) -> None:
    table = random_table(np.random.default_rng(seed), n_qis, n_rows)
    k = min(k, table.n_records)
    brute = BruteForce(table, (k,))
    check_config(table, brute, k, limit, metric)


@given(st.lists(st.integers(0, 3), min_size=1, max_size=4), st.integers(0, 2**32 - 1), st.booleans())
@settings(max_examples=80, deadline=None)
def test_generic_search_on_random_monotone_predicates(heights: list[int], seed: int, monotone: bool) -> None:
    """Any monotone (or anti-monotone) predicate: the frontier equals brute force."""
    lattice = Lattice(heights)
    nodes = list(lattice.nodes())
    rng = np.random.default_rng(seed)
    count = int(rng.integers(0, min(4, len(nodes)) + 1))
    generators = [nodes[int(i)] for i in rng.choice(len(nodes), size=count, replace=False)]
    if monotone:

        def pred(n: tuple[int, ...]) -> bool:
            return any(Lattice.leq(g, n) for g in generators) or n == lattice.top
    else:

        def pred(n: tuple[int, ...]) -> bool:
            return any(Lattice.leq(n, g) for g in generators)

    asked: list[tuple[int, ...]] = []

    def recorded(n: tuple[int, ...]) -> bool:
        asked.append(n)
        return pred(n)

    found, checked, any_ok = find_minimal_nodes(lattice, recorded, monotone=monotone)
    sequence = list(asked)
    guide = rng.random(tuple(h + 1 for h in heights)).round(1)  # ties on purpose
    with_guide = find_minimal_nodes(lattice, recorded, monotone=monotone, guide=guide, compiled=False)
    guided_sequence = asked[len(sequence) :]
    # The compiled recursion checks the same nodes in the same order, with and without a
    # guide; so does the Python one on the compiled paths of big lattices (walk_from = 0).
    for walk_from, compiled in ((0, False), (0, True), (TagStore.walk_from, True)):
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(TagStore, "walk_from", walk_from)
            del asked[:]
            assert find_minimal_nodes(lattice, recorded, monotone=monotone, compiled=compiled) == (
                found,
                checked,
                any_ok,
            )
            assert asked == sequence
            del asked[:]
            assert find_minimal_nodes(
                lattice, recorded, monotone=monotone, guide=guide, compiled=compiled
            ) == (with_guide)
            assert asked == guided_sequence
    holding = {n for n in nodes if pred(n)}
    if monotone:
        expected = sorted(n for n in holding if not any(p in holding for p in lattice.predecessors(n)))
    else:
        expected = sorted(n for n in holding if not any(s in holding for s in lattice.successors(n)))
    assert found == expected
    assert any_ok == bool(holding)
    assert checked <= lattice.size


def test_no_qualifying_node() -> None:
    lattice = Lattice([1, 2])
    found, checked, any_ok = find_minimal_nodes(lattice, lambda n: False)
    assert (found, checked, any_ok) == ([], 1, False)


@given(st.lists(st.integers(0, 4), min_size=1, max_size=6), st.data())
@settings(max_examples=80, deadline=None)
def test_level_offsets_are_the_box_nodes_at_that_height(shape: list[int], data: st.DataObject) -> None:
    from itertools import product

    from safeshare.search.ola import level_offsets

    steps = data.draw(st.integers(0, sum(shape)))
    want = [o for o in product(*(range(s + 1) for s in shape)) if sum(o) == steps]
    for compiled in (False, True):
        rows, arr = level_offsets(tuple(shape), steps, compiled)
        assert rows == want  # same nodes, same (lexicographic) order
        assert arr is None if len(want) <= 16 else arr.tolist() == [list(o) for o in want]


def test_compiled_searches_nest_and_survive_an_exception_in_the_predicate() -> None:
    """The compiled recursion calls the predicate of the innermost running search (a search
    inside a predicate, as Inverse OLA and the policy search may run), and an exception in a
    predicate leaves the compiled code and the next search unharmed."""
    outer, inner = Lattice([2, 2]), Lattice([1, 3])
    inner_pred = lambda n: n[0] + n[1] >= 2  # noqa: E731
    expected_inner = find_minimal_nodes(inner, inner_pred, compiled=False)
    seen: list[tuple[list[tuple[int, ...]], int, bool]] = []

    def outer_pred(n: tuple[int, ...]) -> bool:
        seen.append(find_minimal_nodes(inner, inner_pred, compiled=True))
        return n[0] >= 1 and n[1] >= 1

    found = find_minimal_nodes(outer, outer_pred, compiled=True)
    assert found == find_minimal_nodes(outer, lambda n: n[0] >= 1 and n[1] >= 1, compiled=False)
    assert seen and all(s == expected_inner for s in seen)

    class Boom(Exception):
        pass

    def failing(n: tuple[int, ...]) -> bool:
        if n == (1, 1):
            raise Boom
        return sum(n) >= 2

    with pytest.raises(Boom):
        find_minimal_nodes(outer, failing, compiled=True)
    assert find_minimal_nodes(outer, lambda n: sum(n) >= 2, compiled=True) == find_minimal_nodes(
        outer, lambda n: sum(n) >= 2, compiled=False
    )


# ------------------------------------------------------------------ found by mutation testing (issue 13)
def test_minimal_set_drops_the_members_above_a_new_node() -> None:
    """MinimalSet is an antichain whatever the order of additions (the search adds by height)."""
    found = MinimalSet(2)
    for node in [(2, 1), (1, 2), (2, 2), (0, 3)]:
        found.add(node)
    assert found.nodes() == [(0, 3), (1, 2), (2, 1)]
    # kills: `if not keep.all()` -> `if keep.all()`, the kept nodes or members computed from None
    found.add((1, 1))
    assert found.nodes() == [(0, 3), (1, 1)]
    found.add((1, 1))
    found.add((3, 3))
    assert found.nodes() == [(0, 3), (1, 1)]
    found.add((0, 0))
    assert found.nodes() == [(0, 0)]


def test_tag_minimal_reads_only_the_direct_predecessor_on_every_axis() -> None:
    """Qualifying nodes none of whose predecessors qualifies: exactly, not a superset."""
    state = np.array([[0, 1, 1, 1], [1, 1, 1, 1], [1, 1, 1, 1]])  # (0, 0) unknown, the rest qualifies
    # kills: slice(0, -1) -> slice(0, +1) (the level-0 row would stand for every level's predecessor)
    assert tag_minimal(state) == [(0, 1), (1, 0)]
    line = np.array([0, 0, 1, 1])
    assert tag_minimal(line) == [(2,)]


def test_known_facts_are_used_and_not_evaluated_again() -> None:
    """``known``: facts of an earlier run of the same predicate are tagged before the search."""
    lattice = Lattice([2, 3, 1])
    generators = [(1, 2, 0), (2, 0, 1)]

    def pred(n: tuple[int, ...]) -> bool:
        return any(Lattice.leq(g, n) for g in generators)

    calls: list[tuple[int, ...]] = []

    def counted(n: tuple[int, ...]) -> bool:
        calls.append(n)
        return pred(n)

    plain = ola_search(lattice, counted, lambda n: float(sum(n)))
    assert plain.minimal_nodes == sorted(generators) and plain.checked_nodes == len(calls) > 0
    assert (plain.algorithm, plain.node) == ("ola", (1, 2, 0))  # kills: algorithm=None / "OLA"
    assert plain.elapsed_s is not None and plain.elapsed_s >= 0
    facts = [(n, pred(n)) for n in lattice.nodes()]
    calls.clear()
    # kills: known dropped in ola_search; `== UNKNOWN` -> `!=` or tag() without the fact in the loop
    everything = ola_search(lattice, counted, lambda n: float(sum(n)), known=facts)
    assert (everything.minimal_nodes, everything.checked_nodes, calls) == (sorted(generators), 0, [])
    failing = [(n, q) for n, q in facts if not q]  # only failures known: the qualifying ones still checked
    partial = ola_search(lattice, counted, lambda n: float(sum(n)), known=failing)
    assert partial.minimal_nodes == sorted(generators) and 0 < partial.checked_nodes < plain.checked_nodes
    assert all(pred(n) for n in calls)


@given(st.lists(st.integers(0, 3), min_size=2, max_size=4), st.integers(0, 2**32 - 1))
@settings(max_examples=40, deadline=None)
def test_anti_monotone_search_is_the_monotone_search_of_the_dual(heights: list[int], seed: int) -> None:
    """An anti-monotone predicate with a guide is searched on the dual lattice with the dual guide
    (reversed on every axis, negated): the same checks, node for node, as that search by hand."""
    lattice = Lattice(heights)
    nodes = list(lattice.nodes())
    rng = np.random.default_rng(seed)
    generators = [nodes[int(i)] for i in rng.choice(len(nodes), size=min(3, len(nodes)), replace=False)]
    top = lattice.top

    def dual(n: tuple[int, ...]) -> tuple[int, ...]:
        return tuple(t - v for t, v in zip(top, n, strict=True))

    guide = rng.permutation(lattice.size).astype(np.float64).reshape(tuple(h + 1 for h in heights))
    seen: list[tuple[int, ...]] = []

    def pred(n: tuple[int, ...]) -> bool:
        seen.append(n)
        return any(Lattice.leq(n, g) for g in generators)

    found, checked, _ = find_minimal_nodes(lattice, pred, monotone=False, guide=guide)
    direct = list(seen)
    seen.clear()
    dual_guide = np.empty_like(guide)
    for n in nodes:
        dual_guide[dual(n)] = -guide[n]
    dual_found, dual_checked, _ = find_minimal_nodes(lattice, lambda n: pred(dual(n)), guide=dual_guide)
    # kills: the dual guide not reversed (slice(None, None, -1) -> slice(None, None))
    assert (found, checked, direct) == (sorted(dual(n) for n in dual_found), dual_checked, seen)


def test_big_levels_are_probed_in_the_same_order_as_small_ones() -> None:
    """Mid nodes are visited by increasing guide, ties in lexicographic order (a stable sort):
    the numpy path of levels with more than 16 nodes checks the same nodes, in the same order,
    as the list path."""
    import safeshare.search.ola as ola_module

    lattice = Lattice([3, 3, 3, 3])
    guide = np.array([max(n) for n in lattice.nodes()], dtype=np.float64).reshape(4, 4, 4, 4)  # ties
    generators = [(3, 0, 2, 1), (1, 2, 1, 2), (0, 3, 3, 0), (2, 2, 0, 3)]

    def run() -> list[tuple[int, ...]]:
        seen: list[tuple[int, ...]] = []

        def pred(n: tuple[int, ...]) -> bool:
            seen.append(n)
            return any(Lattice.leq(g, n) for g in generators)

        assert find_minimal_nodes(lattice, pred, guide=guide)[0] == sorted(generators)
        return seen

    fast = run()
    assert ola_module.level_offsets((3, 3, 3, 3), 6)[1] is not None  # 44 nodes: the numpy path
    with pytest.MonkeyPatch.context() as patch:
        original = ola_module.level_offsets
        patch.setattr(ola_module, "level_offsets", lambda *a, **k: (original(*a, **k)[0], None))
        plain = run()
    # kills: argsort(..., kind="stable") -> the default (unstable) sort in mid_nodes
    assert fast == plain


@pytest.mark.parametrize("monotone", [True, False])
def test_progress_counts_every_check_in_both_directions(monotone: bool) -> None:
    """A shared Ticker counts the predicate's evaluations, also on the dual lattice (Inverse OLA's
    loss search reports its progress through it)."""
    from safeshare.search.progress import Ticker

    lattice = Lattice([3, 2, 2])
    generators = [(1, 2, 0), (3, 0, 1)]

    def pred(n: tuple[int, ...]) -> bool:
        return any(Lattice.leq(g, n) if monotone else Lattice.leq(n, g) for g in generators)

    ticker = Ticker(None)
    ticker.tick(5)  # an earlier search's count goes on
    _, checked, _ = find_minimal_nodes(lattice, pred, monotone=monotone, progress=ticker)
    # kills: progress=None in the dual search of an anti-monotone predicate
    assert checked > 0 and ticker.count == 5 + checked
