"""OLA's internal economy: how many nodes it checks is a promise too (issue 13).

The result of OLA is tested against brute force elsewhere (test_ola.py); a
change that keeps the result but silently checks more nodes would pass those
tests. The thesis' Table 6.9 gives the checks of its implementation on UCI
Adult (Prec, k x suppression limit); safeshare promises at most as many
(README, docs/anonymization.md), and the slow test checks all 18 cells. Here a
few cells that run in about a second in total keep that promise in the fast
suite, and two budgets keep each of the extra probes of
:func:`~safeshare.search.ola.find_minimal_nodes` honest:

================  =====  ======  =====================  ===========================
cell (k, limit)   today  thesis  without look-below     without descent
================  =====  ======  =====================  ===========================
(5, 50%)            244     260  298                    269
(100, 0%)            39      55  31                     34
(25, 1%)            275     549  265                    279
(100, 20%)          689    1657  810                    814
(100, 50%)          672    1114  806                    790
================  =====  ======  =====================  ===========================

(measured when this test was written; "look-below" is the check of a mid
node's best predecessor first, "descent" the walk down to a minimal node).
Removing either probe breaks the thesis bound of (5, 50%), and the
budget of (100, 20%): today's count plus 5%, below what either removal costs.
The budget of (100, 50%), today's count plus 2.5%, keeps the descent whole: a
descent that stops at the first predecessor already known to qualify checks
723 nodes there, one that stops after the first predecessor it had to check
700 (mutation testing, issue 13; both are within 5% on the other cells).
A change that lowers the counts is welcome: update the table and budgets.
"""

from __future__ import annotations

import pytest

from safeshare.core.evaluation import Evaluator
from safeshare.core.frequency import FrequencyTable
from safeshare.metrics.loss import NonUniformEntropy, Prec
from safeshare.models import KAnonymity, PrivacyCriterion
from safeshare.search import ola_search
from safeshare.search.result import SearchResult

#: (k, max_suppression) -> the thesis' checked nodes (Table 6.9), for the cells run here.
THESIS_CELLS = {(5, 0.5): 260, (100, 0.0): 55, (25, 0.01): 549}
#: (k, max_suppression) -> checks today + 5%; removing the look-below or descent probe exceeds it.
BUDGETS = {(100, 0.2): 723, (100, 0.5): 688}
#: The k-minimal nodes of these cells (the count is part of the result, tested exactly).
MINIMAL = {(5, 0.5): 83, (100, 0.0): 3, (25, 0.01): 56, (100, 0.2): 241, (100, 0.5): 210}


def ola(table: FrequencyTable, k: int, limit: float) -> SearchResult:
    """OLA as the workflow runs it: Prec objective, non-uniform entropy guide, a fresh evaluator."""
    ev = Evaluator(table)
    criterion = PrivacyCriterion([KAnonymity(k)], limit)
    guide = NonUniformEntropy(ev).node_array()
    return ola_search(
        table.lattice, lambda n: criterion.holds(ev.classes(n), table), Prec(ev).value, guide=guide
    )


@pytest.mark.parametrize(("k", "limit"), sorted(THESIS_CELLS))
def test_adult_checks_at_most_thesis_table_6_9(adult_table: FrequencyTable, k: int, limit: float) -> None:
    result = ola(adult_table, k, limit)
    assert len(result.minimal_nodes) == MINIMAL[(k, limit)]
    assert result.checked_nodes <= THESIS_CELLS[(k, limit)]


@pytest.mark.parametrize(("k", "limit"), sorted(BUDGETS))
def test_adult_checks_within_budget_that_needs_both_probes(
    adult_table: FrequencyTable, k: int, limit: float
) -> None:
    # kills: removing descent(node) or the look-below check(p) in find_minimal_nodes.kmin; a descent
    # that stops early (`break` -> `return`, `nxt = p` -> `nxt = None` in descend)
    result = ola(adult_table, k, limit)
    assert len(result.minimal_nodes) == MINIMAL[(k, limit)]
    assert result.checked_nodes <= BUDGETS[(k, limit)]


def test_checks_are_counted_once_per_node(adult_table: FrequencyTable) -> None:
    """checked_nodes counts predicate evaluations, and no node is evaluated twice."""
    ev = Evaluator(adult_table)
    criterion = PrivacyCriterion([KAnonymity(5)], 0.5)
    seen: list[tuple[int, ...]] = []

    def predicate(node: tuple[int, ...]) -> bool:
        seen.append(node)
        return criterion.holds(ev.classes(node), adult_table)

    guide = NonUniformEntropy(ev).node_array()
    result = ola_search(adult_table.lattice, predicate, Prec(ev).value, guide=guide)
    assert result.checked_nodes == len(seen) == len(set(seen))
    assert result.lattice_size == 7776
