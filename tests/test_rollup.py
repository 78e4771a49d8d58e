"""The roll-up scan gives, at every node, the same statistics as a group-by of the generalized records."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from safeshare.core import rollup
from safeshare.core.evaluation import Evaluator
from safeshare.core.frequency import FrequencyTable
from safeshare.core.rollup import scan_lattice
from tests.conftest import examples, generalized_frame, random_table


def evaluator_reference(table: FrequencyTable, ks: tuple[int, ...]) -> tuple[dict, dict]:
    supp: dict = {k: {} for k in ks}
    classes: dict = {}
    for c in Evaluator(table).iter_classes():
        classes[c.node] = c.n_classes
        for k in ks:
            supp[k][c.node] = c.records_in_classes_smaller_than(k)
    return supp, classes


def test_adult_every_node_matches_the_evaluator(adult_table: FrequencyTable) -> None:
    ks = (2, 5, 50)
    stats = scan_lattice(adult_table, ks)
    assert stats.method == "rollup"
    supp, classes = evaluator_reference(adult_table, ks)
    for node in adult_table.lattice.nodes():
        assert stats.classes[node] == classes[node]
        for k in ks:
            assert stats.suppressed_for(k)[node] == supp[k][node]


@given(st.integers(0, 2**32 - 1), st.integers(1, 4), st.integers(1, 60), st.integers(1, 6))
@settings(max_examples=examples(40, 15), deadline=None)
def test_random_tables_match_pandas(seed: int, n_qis: int, n_rows: int, k: int) -> None:
    table = random_table(np.random.default_rng(seed), n_qis, n_rows)
    stats = scan_lattice(table, (k,))
    for node in table.lattice.nodes():
        sizes = generalized_frame(table, node).groupby(list(table.qi_names)).size()
        assert stats.classes[node] == len(sizes)
        assert stats.suppressed_for(k)[node] == int(sizes[sizes < k].sum())


def test_fallback_agrees(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    table = random_table(np.random.default_rng(5), 4, 400, max_values=6)
    monkeypatch.setattr(rollup, "_MAX_BITS", 4)  # force the evaluator path
    slow = scan_lattice(table, (3,))
    monkeypatch.undo()
    fast = scan_lattice(table, (3,))
    assert slow.method == "evaluator" and fast.method == "rollup"
    assert np.array_equal(slow.suppressed[0], fast.suppressed[0])
    assert np.array_equal(slow.classes, fast.classes)
