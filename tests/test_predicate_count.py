"""The search predicate at a node (``PrivacyCriterion.holds_at``) equals the predicate on the
node's class table (``holds``): for k-anonymity alone it is a count
(:meth:`Evaluator.records_below`, issue 24), for anything else the class table."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from safeshare.core.evaluation import Evaluator
from safeshare.models import KAnonymity, PrivacyCriterion
from safeshare.search.memo import MemoizedCriterion
from tests.conftest import random_table


@given(
    st.integers(0, 2**32 - 1),
    st.integers(1, 4),
    st.integers(1, 100),
    st.sampled_from([0.0, 0.05, 0.3, 1.0]),
    st.booleans(),
)
@settings(max_examples=40, deadline=None)
def test_holds_at_equals_holds_on_the_class_table(
    seed: int, n_qis: int, n_rows: int, limit: float, compiled: bool
) -> None:
    table = random_table(np.random.default_rng(seed), n_qis, n_rows, max_values=6)
    alone = PrivacyCriterion([KAnonymity(3)], limit)
    two = PrivacyCriterion([KAnonymity(3), KAnonymity(2)], limit)  # not a single floor: classes
    memo = MemoizedCriterion([KAnonymity(3)], limit, {})
    assert alone._floor == memo._floor == 3 and two._floor is None
    counted = Evaluator(table, leaf_cache=0, compiled=compiled)
    reference = Evaluator(table, compiled=not compiled)
    for node in sorted(table.lattice.nodes(), key=lambda n: -sum(n)):  # top down: refinements
        classes = reference.classes(node)
        want = alone.holds(classes, table)
        assert alone.failing_at(counted, node) == alone.failing_count(classes, table)
        assert alone.holds_at(counted, node) == want == memo.holds_at(counted, node)
        assert two.holds_at(counted, node) == two.holds(classes, table)
        assert memo.failing[node] == alone.failing_count(classes, table)
    before = counted.evaluations
    for node in table.lattice.nodes():  # remembered: no evaluation
        memo.holds_at(counted, node)
    assert counted.evaluations == before
