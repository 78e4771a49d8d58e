"""Every threshold the tool promises, pinned at its boundary (issue 13).

Each check places a value exactly on a threshold and one step beyond it, on
hand-built class sizes or tiny tables whose numbers can be followed by hand,
so that an off-by-one (``<=`` for ``<``, ``k - 1`` for ``k``, a dropped
tie-break) fails here in milliseconds instead of surviving until a slow grid
test or a user notices. ``# kills:`` names the mutant a check was written for
(found by ``make mutation``, docs/testing.md).

The tie rules asserted are the documented ones: every search minimizes
``(loss, height, node)`` (OLA's :func:`choose_best`: "ties go to the lower
node, then lexicographic order"; the exhaustive and best-first searches break
ties the same way; Inverse OLA maximizes k, then the same key).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd
import pytest

from safeshare.core.evaluation import Classes, Evaluator, densify
from safeshare.core.frequency import FrequencyTable
from safeshare.core.lattice import Lattice
from safeshare.core.rollup import scan_lattice
from safeshare.data.schema import Attribute, Role, Schema
from safeshare.dp.parameters import d_function, dps_parameters, smallest_k
from safeshare.errors import ConfigError, InputError
from safeshare.hierarchy.hierarchy import Hierarchy
from safeshare.metrics.loss import Prec
from safeshare.models import KAnonymity, PrivacyCriterion
from safeshare.models.base import PrivacyModel
from safeshare.models.l_diversity import LDiversity
from safeshare.models.m_concealing import MConcealing
from safeshare.models.registry import make_model
from safeshare.models.risk import RiskThreshold
from safeshare.models.sensitive import ClassValueCounts
from safeshare.models.t_closeness import TCloseness, parse_number
from safeshare.numerics import TOLERANCE
from safeshare.risk import release_risk as release_risk_module
from safeshare.risk.release_risk import release_risk
from safeshare.search import ExhaustiveSearch, exhaustive_search
from safeshare.search.context import SearchContext
from safeshare.search.inverse_ola import InverseOLA
from safeshare.search.ola import choose_best, find_minimal_nodes
from safeshare.search.strategy import OLA
from tests.sensitive_helpers import table_from_frame

Node = tuple[int, ...]


def classes_of(sizes: Sequence[int], node: Node = (0,)) -> Classes:
    """Classes with the given slot sizes (0 = unused slot), one frequency-table row per used slot."""
    arr = np.asarray(sizes, dtype=np.float64)
    rows = np.flatnonzero(arr > 0)
    return Classes(node, arr, int(arr.sum()), row_class=rows)


def one_qi_table(groups: dict[str, list[str]], sensitive: str = "s") -> FrequencyTable:
    """One QI ``q`` whose value ``v`` holds the records with sensitive values ``groups[v]``."""
    q = [v for v, values in groups.items() for _ in values]
    s = [x for values in groups.values() for x in values]
    h = Hierarchy([[v, "*"] for v in groups], name="q")
    return table_from_frame(pd.DataFrame({"q": q, sensitive: s}), ["q"], [h], [sensitive])


def bottom(table: FrequencyTable) -> Classes:
    return Evaluator(table).classes(table.lattice.bottom)


def by_value(table: FrequencyTable, classes: Classes, accepted: np.ndarray) -> dict[str, bool]:
    """A per-slot boolean, as ``{value of q: bool}`` (slot order is the evaluator's business)."""
    labels = table.labels_at(classes.node)["q"]
    return {str(labels[r]): bool(accepted[classes.row_class[r]]) for r in range(table.n_rows)}


# ------------------------------------------------------------------ suppression limit
@pytest.mark.parametrize(
    ("fraction", "n", "limit"),
    [(0.1, 30, 3), (0.05, 100, 5), (0.29, 100, 29), (0.0, 50, 0), (1.0, 7, 7), (0.099, 10, 0)],
)
def test_suppression_limit_is_floor_of_fraction_times_n(fraction: float, n: int, limit: int) -> None:
    # 0.29 * 100 = 28.999999999999996 in floating point: the documented floor(s * N) is 29.
    # kills: dropping the + 1e-9 in PrivacyCriterion.suppression_limit; floor -> ceil / round
    assert PrivacyCriterion([KAnonymity(1)], fraction).suppression_limit(n) == limit


@pytest.mark.parametrize("extra_models", [0, 1])
def test_node_suppressing_exactly_the_limit_qualifies_and_one_more_fails(extra_models: int) -> None:
    """k = 2, s = 10%, N = 30: 3 records in classes of size 1 qualify, 4 do not."""
    models: list[PrivacyModel] = [KAnonymity(2)] + [KAnonymity(1)] * extra_models
    crit = PrivacyCriterion(models, 0.1)
    at_limit = classes_of([1, 1, 1, 10, 17])  # N = 30, limit 3, 3 suppressed
    over = classes_of([1, 1, 1, 1, 9, 17])  # N = 30, 4 suppressed
    assert crit.suppression_limit(30) == 3
    # kills: <= -> < in PrivacyCriterion.assess / holds (single- and multi-model paths)
    assert crit.holds(at_limit, None)  # type: ignore[arg-type]
    assert not crit.holds(over, None)  # type: ignore[arg-type]
    a = crit.assess(at_limit, None)  # type: ignore[arg-type]
    assert (a.qualifies, a.suppressed_records) == (True, 3)
    assert a.acceptable.tolist() == [False, False, False, True, True]
    b = crit.assess(over, None)  # type: ignore[arg-type]
    assert (b.qualifies, b.suppressed_records) == (False, 4)


def test_multi_model_holds_checks_every_model_against_the_limit() -> None:
    """Two models that each reject different classes: their union exceeds the limit."""
    crit = PrivacyCriterion([KAnonymity(2), KAnonymity(3)], 0.1)
    sizes = classes_of([1, 2, 2, 25])  # N = 30, limit 3: k=2 rejects 1, k=3 rejects 5
    assert not crit.holds(sizes, None)  # type: ignore[arg-type]
    assert not crit.assess(sizes, None).qualifies  # type: ignore[arg-type]
    crit_ok = PrivacyCriterion([KAnonymity(2), KAnonymity(3)], 0.2)  # limit 6
    assert crit_ok.holds(sizes, None)  # type: ignore[arg-type]
    assert crit_ok.assess(sizes, None).suppressed_records == 5  # type: ignore[arg-type]


@pytest.mark.parametrize("fraction", [-0.01, 1.01, "0.1", None])
def test_suppression_fraction_outside_unit_interval_is_refused(fraction: object) -> None:
    with pytest.raises(InputError, match="max_suppression"):
        PrivacyCriterion([KAnonymity(2)], fraction)  # type: ignore[arg-type]


def test_suppression_fraction_bounds_are_accepted_and_models_required() -> None:
    assert PrivacyCriterion([KAnonymity(2)], 0.0).max_suppression == 0.0
    assert PrivacyCriterion([KAnonymity(2)], 1).max_suppression == 1.0
    with pytest.raises(InputError, match="at least one privacy model"):
        PrivacyCriterion([], 0.1)


def test_monotone_uses_the_without_suppression_property_only_at_zero() -> None:
    entropy = LDiversity(2, "entropy")
    assert PrivacyCriterion([KAnonymity(2), entropy], 0.0).monotone
    assert not PrivacyCriterion([KAnonymity(2), entropy], 0.01).monotone
    assert PrivacyCriterion([KAnonymity(2), LDiversity(2)], 0.01).monotone


# ------------------------------------------------------------------ k-anonymity
@pytest.mark.parametrize("k", [1, 2, 5])
def test_k_anonymity_class_sizes_k_minus_one_k_k_plus_one(k: int) -> None:
    sizes = [k - 1, k, k + 1]
    classes = classes_of([s for s in sizes])
    model = KAnonymity(k)
    # kills: >= -> > in KAnonymity.acceptable; < -> <= in records_in_classes_smaller_than
    assert model.acceptable(classes, None).tolist() == [False, True, True]  # type: ignore[arg-type]
    assert model.failing_records(classes, None) == k - 1  # type: ignore[arg-type]
    assert classes.records_in_classes_smaller_than(k) == k - 1
    assert classes.records_in_classes_smaller_than(k + 1) == 2 * k - 1


@pytest.mark.parametrize("k", [0, -1, True, 2.0, "3", None])
def test_k_below_one_or_not_an_integer_is_an_input_error(k: object) -> None:
    # kills: k < 1 -> k < 0 (k = 0 accepted) in KAnonymity.__init__
    with pytest.raises(InputError, match="k must be an integer >= 1") as info:
        KAnonymity(k)  # type: ignore[arg-type]
    assert type(info.value) is InputError


def test_k_of_one_and_numpy_integers_are_accepted() -> None:
    assert KAnonymity(1).k == 1
    assert KAnonymity(np.int64(4)).k == 4


@pytest.mark.parametrize("k", [0, -3, True, 2.5])
def test_k_below_one_in_a_configuration_is_a_config_error(k: object) -> None:
    with pytest.raises(ConfigError, match=r"privacy\.k-anonymity\.k: expected an integer >= 1"):
        make_model("k-anonymity", {"k": k})


@pytest.mark.parametrize("k", [0, -3, True, 2.5, "5"])
def test_k_is_validated_in_one_place_with_one_message(k: object) -> None:
    """The model, the configuration, --k of anonymize and of sweep all ask check_k."""
    from safeshare.models.k_anonymity import check_k
    from safeshare.workflows.sweep import SweepGrid

    with pytest.raises(ConfigError, match=r"^--k: expected an integer >= 1, got "):
        check_k(k, "--k")
    with pytest.raises(ConfigError, match=r"^--k: expected an integer >= 1, got "):
        SweepGrid((k,), (0.0,), ("prec",))  # type: ignore[arg-type]
    assert check_k(np.int64(3), "--k") == 3 and type(check_k(np.int64(3))) is int


def test_k_configuration_accepts_one_and_needs_k() -> None:
    model = make_model("k-anonymity", {"k": 1})
    assert isinstance(model, KAnonymity) and model.k == 1
    with pytest.raises(ConfigError, match="missing k"):
        make_model("k-anonymity", {})


def test_k_equal_to_n_validates_and_k_above_n_is_refused() -> None:
    table = one_qi_table({"a": ["x", "y"], "b": ["x"]})
    KAnonymity(3).validate(table)
    with pytest.raises(InputError, match="exceeds the number of records"):
        KAnonymity(4).validate(table)


# ------------------------------------------------------------------ evaluator
def test_dense_class_ids_start_at_zero_and_are_contiguous() -> None:
    sizes = np.array([0.0, 3.0, 0.0, 0.0, 2.0, 4.0])
    classes = Classes((0,), sizes, 9, row_class=np.array([1, 4, 1, 5, 4]))
    ids, dense_sizes = classes.dense()
    # kills: cumsum(used) - 1 -> - 0 (ids off by one) in Classes.dense
    assert ids.tolist() == [0, 1, 0, 2, 1]
    assert dense_sizes.tolist() == [3, 2, 4]
    assert ids.dtype == dense_sizes.dtype == np.int64
    assert classes.nonempty.tolist() == [3, 2, 4]
    assert (classes.n_classes, classes.min_size, classes.max_size, classes.dm_star) == (3, 2, 4, 29)
    assert classes.row_sizes().tolist() == [3.0, 2.0, 3.0, 4.0, 2.0]


def test_dense_ids_of_an_evaluated_node_index_its_sizes() -> None:
    table = one_qi_table({"a": ["x", "y"], "b": ["x"], "c": ["y", "y", "x"]})
    classes = bottom(table)
    ids, sizes = classes.dense()
    assert sorted(set(ids.tolist())) == list(range(len(sizes)))
    assert sorted(sizes.tolist()) == [1, 2, 3]
    assert np.bincount(ids, weights=table.counts).tolist() == sizes.tolist()


# ------------------------------------------------------------------ l-diversity
def test_distinct_l_diversity_with_l_minus_one_l_l_plus_one_values() -> None:
    table = one_qi_table({"a": ["x", "x"], "b": ["x", "y"], "c": ["x", "y", "z"]})
    classes = bottom(table)
    # kills: >= -> > in LDiversity._passes (distinct)
    assert by_value(table, classes, LDiversity(2).acceptable(classes, table)) == {
        "a": False,
        "b": True,
        "c": True,
    }
    assert by_value(table, classes, LDiversity(3).acceptable(classes, table)) == {
        "a": False,
        "b": False,
        "c": True,
    }


def test_entropy_l_diversity_passes_exactly_at_exp_h_equal_l() -> None:
    # b: uniform over 2 values, exp(H) = 2 exactly (up to rounding); a: 2:1, exp(H) = 3 / 2^(2/3) = 1.8899
    table = one_qi_table({"a": ["x", "x", "y"], "b": ["x", "y"], "c": ["x", "y", "z"]})
    classes = bottom(table)
    accepted = LDiversity(2, "entropy").acceptable(classes, table)
    # kills: >= -> > and dropping - TOLERANCE in LDiversity._passes (entropy)
    assert by_value(table, classes, accepted) == {"a": False, "b": True, "c": True}
    assert by_value(table, classes, LDiversity(2.0001, "entropy").acceptable(classes, table)) == {
        "a": False,
        "b": False,
        "c": True,
    }
    assert LDiversity(1.8898, "entropy").acceptable(classes, table)[classes.row_class].all()
    assert not LDiversity(1.8899, "entropy").acceptable(classes, table)[classes.row_class].all()


def test_recursive_l_diversity_is_strict_at_r1_equal_c_times_tail() -> None:
    # c = 2, l = 2: a has r1 = 2, tail = 1 (2 < 2 fails); b has r1 = 2, tail = 2; d has r1 = 3, tail = 1
    table = one_qi_table({"a": ["x", "x", "y"], "b": ["x", "x", "y", "z"], "d": ["x", "x", "x", "y"]})
    classes = bottom(table)
    # kills: < -> <= in LDiversity._passes (recursive); rank >= l - 1 off by one in recursive_terms
    assert by_value(table, classes, LDiversity(2, "recursive", c=2).acceptable(classes, table)) == {
        "a": False,
        "b": True,
        "d": False,
    }
    assert by_value(table, classes, LDiversity(2, "recursive", c=2.001).acceptable(classes, table)) == {
        "a": True,
        "b": True,
        "d": False,
    }
    # l = 3: the tail is r_3 + ...: b has 1 (2 < 2 * 1 fails with c = 2, passes with c = 2.001)
    assert by_value(table, classes, LDiversity(3, "recursive", c=2.001).acceptable(classes, table)) == {
        "a": False,
        "b": True,
        "d": False,
    }


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((0,), "l must be an integer >= 1"),
        ((2.5,), "l must be an integer >= 1"),
        ((0.99, "entropy"), "l must be a number >= 1"),
        ((2, "recursive", 0.0), "c must be a number > 0"),
        ((2, "recursive", "2"), "c must be a number > 0"),  # kills: `or` -> `and` (a finite non-number)
        ((2, "recursive", True), "c must be a number > 0"),
        ((2, "recursive", math.inf), "c must be a number > 0"),
        ((2, "recursive"), "needs c"),
        ((2, "distinct", 1.0), "c applies to the recursive variant only"),
        ((2, "other"), "variant must be one of"),
    ],
)
def test_l_diversity_parameters_out_of_range_are_input_errors(args: tuple[object, ...], message: str) -> None:
    with pytest.raises(InputError, match=message) as info:
        LDiversity(*args)  # type: ignore[arg-type]
    assert type(info.value) is InputError


def test_l_of_one_is_accepted_and_zero_in_a_configuration_is_a_config_error() -> None:
    assert LDiversity(1).l == 1
    assert LDiversity(1.0, "entropy").l == 1.0
    assert LDiversity(2, "recursive", c=1e-9).c == 1e-9
    # the configuration's bounds are the model's: l = 1 and any c > 0 are accepted
    assert make_model("l-diversity", {"l": 1}).l == 1  # type: ignore[attr-defined]
    assert make_model("l-diversity", {"l": 2, "variant": "recursive", "c": 0.5}).c == 0.5  # type: ignore[attr-defined]
    with pytest.raises(ConfigError, match=r"\.l: expected an integer >= 1"):
        make_model("l-diversity", {"l": 0})
    with pytest.raises(ConfigError, match=r"\.c: expected a number > 0"):
        make_model("l-diversity", {"l": 2, "variant": "recursive", "c": 0})


def test_l_diversity_relaxation_is_the_smallest_class_size_that_can_pass() -> None:
    assert LDiversity(1).monotone_relaxation().k == 1  # kills: max(2, k)
    assert LDiversity(1.0, "entropy").monotone_relaxation().k == 1
    assert LDiversity(3, "recursive", c=2).monotone_relaxation().k == 3
    assert LDiversity(2.5, "entropy").monotone_relaxation().k == 3
    # within the model's tolerance of an integer: ln 2 >= ln l - TOLERANCE passes 2 values
    assert LDiversity(2 + 1e-10, "entropy").monotone_relaxation().k == 2  # kills: k -= 1 -> k += 1
    assert LDiversity(2 + 4e-9, "entropy").monotone_relaxation().k == 3


def test_l_diversity_achieved_is_the_worst_released_class() -> None:
    table = one_qi_table({"a": ["x", "y"], "b": ["x", "y", "z"]})
    classes = bottom(table)
    slot = {str(table.labels_at(classes.node)["q"][r]): classes.row_class[r] for r in range(table.n_rows)}
    only_b = np.zeros(len(classes.sizes), dtype=bool)
    only_b[slot["b"]] = True
    both = classes.sizes > 0
    distinct = LDiversity(2)
    meaning = distinct.achieved_summary[1]
    assert distinct.achieved(classes, table, both) == {"measure": meaning, "min": {"s": 2.0}}
    assert distinct.achieved(classes, table, only_b) == {"measure": meaning, "min": {"s": 3.0}}
    assert distinct.achieved(classes, table, ~both) == {"measure": meaning, "min": {"s": None}}
    # recursive (2, 3): b has r1 / r3 = 1; a has 2 < l values: infinite, reported as None
    recursive = LDiversity(3, "recursive", c=2)
    assert recursive.achieved(classes, table, only_b)["max"] == {"s": 1.0}
    assert recursive.achieved(classes, table, both)["max"] == {"s": None}


def test_class_starts_are_the_first_pair_of_every_class() -> None:
    def starts(cls: list[int]) -> list[int]:
        n = len(cls)
        pairs = ClassValueCounts(np.array(cls), np.zeros(n, dtype=np.int64), np.ones(n), 1, 4)
        return pairs.class_starts().tolist()

    assert starts([0, 0, 1, 3, 3]) == [0, 2, 3]
    assert starts([0, 1, 1]) == [0, 1]
    assert starts([2]) == [0]
    assert starts([]) == []


def test_class_value_counts_sort_branch_counts_every_pair() -> None:
    """40 classes x 50 values (space 2000 > 4 R and 1024): the packed-sort branch, not bincount."""
    groups = {f"g{i:02d}": [f"v{(7 * i + j // 2) % 50:02d}" for j in range(i % 6 + 1)] for i in range(40)}
    table = one_qi_table(groups)
    classes = bottom(table)
    pairs = LDiversity(1).pairs(classes, table, "s")
    labels = table.labels_at(classes.node)["q"]
    values = table.sensitive_labels[0]
    slot_of = {str(labels[r]): int(classes.row_class[r]) for r in range(table.n_rows)}
    assert len(values) * len(classes.sizes) > max(4 * table.n_rows, 1024)
    got = {(int(c), str(values[v])): n for c, v, n in zip(pairs.cls, pairs.value, pairs.count, strict=True)}
    expected: dict[tuple[int, str], float] = {}
    for g, vs in groups.items():
        for v in vs:
            expected[(slot_of[g], v)] = expected.get((slot_of[g], v), 0.0) + 1.0
    assert got == expected
    assert list(zip(pairs.cls, pairs.value, strict=True)) == sorted(zip(pairs.cls, pairs.value, strict=True))


# ------------------------------------------------------------------ t-closeness
# a = [1, 1], b = [2, 3, 3, 3]: Q = (1/3, 1/6, 1/2), P_a = (1, 0, 0), P_b = (0, 1/4, 3/4).
#   equal:        D_a = (2/3 + 1/6 + 1/2) / 2 = 2/3,   D_b = (1/3 + 1/12 + 1/4) / 2 = 1/3
#   ordered:      D_a = (2/3 + 1/2) / 2 = 7/12,        D_b = (1/3 + 1/4) / 2 = 7/24
#   hierarchical ({1, 2} -> low, {3} -> high, height 2): mean of the total variations at levels 0, 1:
#                 D_a = (2/3 + 1/2) / 2 = 7/12,        D_b = (1/3 + 1/4) / 2 = 7/24
T_CASES = {"equal": (2 / 3, 1 / 3), "ordered": (7 / 12, 7 / 24), "hierarchical": (7 / 12, 7 / 24)}
S_HIERARCHY = Hierarchy([["1", "low", "*"], ["2", "low", "*"], ["3", "high", "*"]], name="s")


def t_model(t: float, distance: str) -> TCloseness:
    hierarchies = {"s": S_HIERARCHY} if distance == "hierarchical" else None
    return TCloseness(t, distance, hierarchies=hierarchies)


@pytest.mark.parametrize("distance", sorted(T_CASES))
def test_t_closeness_passes_exactly_at_distance_t(distance: str) -> None:
    table = one_qi_table({"a": ["1", "1"], "b": ["2", "3", "3", "3"]})
    classes = bottom(table)
    d_a, d_b = T_CASES[distance]
    measured = t_model(0.5, distance).measure(classes, table)["s"]
    values = {v: float(measured[classes.row_class[r]]) for r, v in enumerate(table.labels_at((0,))["q"])}
    assert values == pytest.approx({"a": d_a, "b": d_b}, abs=1e-12)
    # kills: <= -> < and dropping + TOLERANCE in TCloseness.acceptable's comparison
    for t, expected in [
        (d_a, {"a": True, "b": True}),
        (d_a - 1e-6, {"a": False, "b": True}),
        (d_b, {"a": False, "b": True}),
        (d_b - 1e-6, {"a": False, "b": False}),
    ]:
        assert by_value(table, classes, t_model(t, distance).acceptable(classes, table)) == expected, t


@pytest.mark.parametrize("t", [-0.01, 1.01, True, "0.2"])
def test_t_outside_unit_interval_is_an_input_error(t: object) -> None:
    with pytest.raises(InputError, match="t must be a number in"):
        TCloseness(t)  # type: ignore[arg-type]


def test_t_bounds_are_accepted() -> None:
    assert TCloseness(0).t == 0.0
    assert TCloseness(1).t == 1.0
    table = one_qi_table({"a": ["1", "1"], "b": ["2", "3", "3", "3"]})
    classes = bottom(table)
    assert TCloseness(1, "ordered").acceptable(classes, table).all()  # every distance is <= 1
    assert not TCloseness(0, "ordered").acceptable(classes, table)[classes.row_class].any()
    assert TCloseness(0.25, "equal").params() == {"t": 0.25, "distance": "equal", "columns": None}
    assert TCloseness(0.25, columns=["s"]).params() == {"t": 0.25, "columns": ["s"]}


def test_t_closeness_two_ordered_values_and_the_tolerance_bound() -> None:
    # two values: Q = (1/2, 1/2), P_a = (1, 0): the ordered EMD is |1 - 1/2| / (m - 1) = 1/2
    table = one_qi_table({"a": ["1", "1"], "b": ["2", "2"]})
    classes = bottom(table)
    distances = TCloseness(1, "ordered").measure(classes, table)["s"][classes.sizes > 0]
    assert distances.tolist() == [0.5, 0.5]  # kills: m <= 1 -> m <= 2 (no distance at two values)
    assert not TCloseness(0.49, "ordered").acceptable(classes, table)[classes.row_class].any()
    # the comparison is D <= t + TOLERANCE: exactly at the widened bound still passes
    assert 0.5 - TOLERANCE + TOLERANCE == 0.5
    assert TCloseness(0.5 - TOLERANCE, "ordered").acceptable(classes, table)[classes.row_class].all()
    assert not TCloseness(0.5 - 3 * TOLERANCE, "ordered").acceptable(classes, table)[classes.row_class].any()
    # a class of one record has its distance too (only empty slots are 0): Q = (1/3, 2/3), P = (1, 0)
    single = one_qi_table({"a": ["1"], "b": ["2", "2"]})
    single_classes = bottom(single)
    by_size = dict(
        zip(single_classes.sizes, TCloseness(1, "ordered").measure(single_classes, single)["s"], strict=True)
    )
    assert by_size[1.0] == pytest.approx(2 / 3)
    assert by_size[2.0] == pytest.approx(1 / 3)


def test_parse_number_accepts_finite_plain_numbers_only() -> None:
    assert [parse_number(v) for v in ("2.5", "-3", ".5", "1e3")] == [2.5, -3.0, 0.5, 1000.0]
    assert [parse_number(v) for v in ("1e999", "-1e999", "nan", "inf", "abc", "")] == [None] * 6


def test_t_closeness_bound_to_a_schema_keeps_its_distance() -> None:
    schema = Schema.from_attributes(
        [Attribute("q", Role.QUASI, Hierarchy([["a", "*"]], name="q")), Attribute("s", Role.SENSITIVE)]
    )
    for columns in (None, ["s"]):  # a copy of the model, or the model itself when its columns are given
        bound = TCloseness(0.25, "ordered", columns=columns).bind(schema)
        assert isinstance(bound, TCloseness)
        assert (bound.t, bound.distance, tuple(bound.columns or ())) == (0.25, "ordered", ("s",))


# ------------------------------------------------------------------ m-concealing
def test_m_concealing_passes_exactly_at_m_equal_pi_over_the_indistinguishable_records() -> None:
    """The column s is known for sure: m(i) = pi / |{j in E : s(j) = s(i)}|."""
    table = one_qi_table({"a": ["x", "x"], "b": ["x", "y", "y"], "c": ["x", "x", "x", "x"]})
    classes = bottom(table)
    # a: every record 1/2; b: the x record 1; c: 1/4
    # kills: <= -> < in the m(i) <= m comparison; pi dropped or inverted
    assert by_value(table, classes, MConcealing(0.5, {"s": 1.0}).acceptable(classes, table)) == {
        "a": True,
        "b": False,
        "c": True,
    }
    assert by_value(table, classes, MConcealing(0.4999, {"s": 1.0}).acceptable(classes, table)) == {
        "a": False,
        "b": False,
        "c": True,
    }
    assert MConcealing(1.0, {"s": 1.0}).acceptable(classes, table)[classes.row_class].all()
    # inclusion probability 1/2 halves every m(i): the x record of b is at exactly 1/2
    assert MConcealing(0.5, {"s": 1.0}, 0.5).acceptable(classes, table)[classes.row_class].all()


def test_m_concealing_measure_is_kept_per_table() -> None:
    one = one_qi_table({"a": ["x", "x"], "b": ["x", "y", "y"]})
    other = one_qi_table({"a": ["x", "y"], "b": ["x", "y", "y"]})
    model = MConcealing(0.5, {"s": 1.0})
    first = model.measure(one)
    assert model.measure(one) is first and first.table is one
    assert model.measure(other).table is other  # kills: a measure of another table returned
    assert model.measure(one) is first  # the last two tables are kept


def test_m_concealing_relaxation_is_the_smallest_passing_class_size() -> None:
    # pi / c <= m: m = 1/2 -> 2, m = 0.4999 -> 3, m = 1 -> 1, pi = 1/2 and m = 1/4 -> 2
    assert MConcealing(0.5, {"s": 1.0}).monotone_relaxation().k == 2
    assert MConcealing(0.4999, {"s": 1.0}).monotone_relaxation().k == 3
    assert MConcealing(1.0, {"s": 1.0}).monotone_relaxation().k == 1
    assert MConcealing(0.25, {"s": 1.0}, 0.5).monotone_relaxation().k == 2
    assert MConcealing(0.1, {"s": 1.0}).monotone_relaxation().k == 10
    # the relaxation's margin is 2 * TOLERANCE: m a little further below 1/2 already needs 3 records
    assert MConcealing(0.5 - 1.5 * TOLERANCE, {"s": 1.0}).monotone_relaxation().k == 2
    assert MConcealing(0.5 - 2.5 * TOLERANCE, {"s": 1.0}).monotone_relaxation().k == 3  # kills: 3 * TOLERANCE


@pytest.mark.parametrize("m", [0, 0.0, -0.1, 1.01, True, "0.5"])
def test_m_outside_zero_one_is_an_input_error(m: object) -> None:
    with pytest.raises(InputError, match="m must be a number in"):
        MConcealing(m, {"s": 1.0})  # type: ignore[arg-type]


def test_m_of_zero_in_a_configuration_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"\.m: expected a number in \(0, 1\]"):
        make_model("m-concealing", {"m": 0, "knowledge": {"s": 1.0}})
    model = make_model("m-concealing", {"m": 1, "knowledge": {"s": 1.0}})
    assert isinstance(model, MConcealing) and model.m == 1.0


# ------------------------------------------------------------------ ties and max_loss
def tie_table() -> FrequencyTable:
    """q0 in {a, b} (height 1), q1 in {u, v, w, z} ({u, v} -> U, {w, z} -> W, then *; height 2).

    Records (q0, q1, s): (a, u, x), (b, u, y), (a, w, y), (b, w, x). With 2-diversity and no
    suppressed record, the qualifying nodes are (1, 0), (1, 1), (1, 2) and (0, 2); Prec gives
    (1, 0) and (0, 2) the same loss 1/2. The lower one, (1, 0), must win; lexicographic order
    alone would pick (0, 2).
    """
    h0 = Hierarchy([["a", "*"], ["b", "*"]], name="q0")
    h1 = Hierarchy([["u", "U", "*"], ["v", "U", "*"], ["w", "W", "*"], ["z", "W", "*"]], name="q1")
    frame = pd.DataFrame({"q0": ["a", "b", "a", "b"], "q1": ["u", "u", "w", "w"], "s": ["x", "y", "y", "x"]})
    return table_from_frame(frame, ["q0", "q1"], [h0, h1], ["s"])


def context(table: FrequencyTable, models: list[PrivacyModel], fraction: float) -> SearchContext:
    ev = Evaluator(table)
    return SearchContext(table, ev, PrivacyCriterion(models, fraction), Prec(ev))


def test_choose_best_ties_go_to_the_lower_node_then_lexicographic() -> None:
    # kills: dropping sum(node) from choose_best's key; < -> <= (first of equals wins)
    for nodes in ([(0, 2), (1, 0)], [(1, 0), (0, 2)]):
        assert choose_best(nodes, lambda n: 0.5) == ((1, 0), 0.5)
    for nodes in ([(1, 1), (0, 2), (2, 0)], [(2, 0), (1, 1), (0, 2)]):
        assert choose_best(nodes, lambda n: 1.0) == ((0, 2), 1.0)
    assert choose_best([(2, 0), (0, 1)], lambda n: float(n[1])) == ((2, 0), 0.0)
    assert choose_best([], lambda n: 0.0) == (None, None)


def test_exhaustive_search_breaks_ties_like_choose_best() -> None:
    lattice = Lattice([1, 2])
    table = tie_table()
    qualifying = {(1, 0), (0, 2), (1, 1), (1, 2)}
    result = exhaustive_search(
        lattice, Evaluator(table).iter_classes(), lambda c: (c.node in qualifying, 0.5)
    )
    assert (result.node, result.objective) == ((1, 0), 0.5)
    assert result.minimal_nodes == [(0, 2), (1, 0)]
    assert result.extra["qualifying_nodes"] == 4


@pytest.mark.parametrize(
    ("models", "fraction", "search"),
    [
        ([LDiversity(2)], 0.0, "ola"),  # monotone: OLA and choose_best
        ([LDiversity(2, "entropy")], 0.2, "best-first"),  # not monotone with suppression: best-first
        ([LDiversity(2)], 0.0, "exhaustive"),
    ],
)
def test_every_search_returns_the_lower_of_two_nodes_of_equal_loss(
    models: list[PrivacyModel], fraction: float, search: str
) -> None:
    table = tie_table()
    ctx = context(table, models, fraction)
    assert ctx.criterion.suppression_limit(table.n_records) == 0
    strategy = ExhaustiveSearch() if search == "exhaustive" else OLA()
    result = strategy.run(ctx)
    assert result.extra.get("search", search) == search
    # kills: dropping sum(node) from the best-first key / its lexsort; window or break off by one
    assert (result.node, result.objective) == ((1, 0), 0.5)


@pytest.mark.parametrize(("models", "fraction"), [([LDiversity(2)], 0.0), ([LDiversity(2, "entropy")], 0.2)])
def test_inverse_ola_ties_in_k_go_to_the_least_loss_then_the_lower_node(
    models: list[PrivacyModel], fraction: float
) -> None:
    ctx = context(tie_table(), models, fraction)
    result = InverseOLA(0.5).run(ctx)
    assert (result.node, result.objective, result.extra["k_achieved"]) == ((1, 0), 0.5, 2)


def max_loss_table() -> FrequencyTable:
    """One QI of height 2 (Prec 0, 1/2, 1): a1, a2 -> A and b1, b2 -> B, classes 1, 2 / 3, 3 / 6."""
    h = Hierarchy([["a1", "A", "*"], ["a2", "A", "*"], ["b1", "B", "*"], ["b2", "B", "*"]], name="q")
    frame = pd.DataFrame({"q": ["a1", "a2", "a2", "b1", "b1", "b2"], "s": ["x"] * 6})
    return table_from_frame(frame, ["q"], [h], ["s"])


@pytest.mark.parametrize(
    ("max_loss", "node", "k"), [(0.5, (1,), 3), (0.5 - 1e-9, (0,), 1), (1.0, (2,), 6), (0.0, (0,), 1)]
)
def test_inverse_ola_max_loss_boundary(max_loss: float, node: Node, k: int) -> None:
    """A node whose normalized loss equals max_loss is within it; a hair less excludes it."""
    ctx = context(max_loss_table(), [KAnonymity(1)], 0.0)
    result = InverseOLA(max_loss).run(ctx)
    # kills: <= -> < in InverseOLA.run's within()
    assert (result.node, result.extra["k_achieved"]) == (node, k)
    assert result.objective == pytest.approx(node[0] / 2)


def test_inverse_ola_k_floor_boundary() -> None:
    """A configured k is a floor: k* = 3 within max_loss 1/2 meets k = 3 and misses k = 4."""
    table = max_loss_table()
    ok = InverseOLA(0.5).run(context(table, [KAnonymity(3)], 0.0))
    assert (ok.node, ok.extra["k_achieved"]) == ((1,), 3)
    # kills: best_k >= max(floor, 1) -> > in InverseOLA.run
    missed = InverseOLA(0.5).run(context(table, [KAnonymity(4)], 0.0))
    assert missed.node is None and missed.extra["k_achieved"] is None


def test_inverse_ola_suppression_limit_boundary() -> None:
    """At the bottom (classes 1, 2, 1, 2 of q... here 1, 2, 2, 1): suppressing the smallest class."""
    table = max_loss_table()  # bottom classes: a1 = 1, a2 = 2, b1 = 2, b2 = 1
    # limit floor(0.34 * 6) = 2 records: suppress a1 and b2 -> k* = 2 within max_loss 0
    result = InverseOLA(0.0).run(context(table, [KAnonymity(1)], 0.34))
    assert (result.node, result.extra["k_achieved"]) == ((0,), 2)
    # limit floor(0.33 * 6) = 1: only one class of 1 may go, the other stays -> k* = 1
    result = InverseOLA(0.0).run(context(table, [KAnonymity(1)], 0.33))
    assert (result.node, result.extra["k_achieved"]) == ((0,), 1)


@pytest.mark.parametrize("max_loss", [-0.01, 1.01, True, "0.5"])
def test_max_loss_outside_unit_interval_is_a_config_error(max_loss: object) -> None:
    with pytest.raises(ConfigError, match="max_loss: expected a number in"):
        InverseOLA(max_loss)  # type: ignore[arg-type]


# ------------------------------------------------------------------ DPS delta
def test_smallest_k_is_the_first_k_whose_delta_meets_the_target() -> None:
    beta, gap, n = 0.1, 1.0, 1000
    k = smallest_k(beta, gap, 1e-6, n)
    assert d_function(k, beta, gap, n).log_value <= math.log(1e-6) < d_function(k - 1, beta, gap, n).log_value
    # A target equal to D(k) (up to the last bits) is met by k; a hair below needs more.
    exact = math.exp(d_function(k, beta, gap, n).log_value)
    assert smallest_k(beta, gap, exact * (1 + 1e-12), n) == k
    assert smallest_k(beta, gap, exact * (1 - 1e-9), n) > k


def test_dps_meets_target_at_its_boundary() -> None:
    p = dps_parameters(10, 0.1, 1.0, 0.0, 1000)
    assert p.meets_target is None
    target = math.exp(p.log_delta)
    assert dps_parameters(10, 0.1, 1.0, 0.0, 1000, delta_target=target * (1 + 1e-12)).meets_target
    assert not dps_parameters(10, 0.1, 1.0, 0.0, 1000, delta_target=target * (1 - 1e-9)).meets_target


# ------------------------------------------------------------------ criterion on a real table
def union_table() -> FrequencyTable:
    """a: 2 diverse records (k = 3 rejects them), b: 3 records all "x" (2-diversity rejects them),
    c: 5 diverse records."""
    return one_qi_table({"a": ["x", "y"], "b": ["x", "x", "x"], "c": ["x", "y", "x", "y", "x"]})


@pytest.mark.parametrize("l_first", [True, False])
@pytest.mark.parametrize(("fraction", "qualifies"), [(0.5, True), (0.49, False), (0.3, False)])
def test_criterion_suppresses_the_union_of_the_models_rejections(
    fraction: float, qualifies: bool, l_first: bool
) -> None:
    """N = 10; k = 3 alone suppresses 2 records, 2-diversity alone 3, both together 5."""
    table = union_table()
    classes = bottom(table)
    models: list[PrivacyModel] = [LDiversity(2), KAnonymity(3)]
    crit = PrivacyCriterion(models if l_first else models[::-1], fraction)
    # kills: a model's acceptable(classes, None); only the last model counted in holds()
    assessment = crit.assess(classes, table)
    assert assessment.suppressed_records == 5
    assert by_value(table, classes, assessment.acceptable) == {"a": False, "b": False, "c": True}
    assert assessment.qualifies is qualifies
    assert crit.holds(classes, table) is qualifies
    assert PrivacyCriterion([KAnonymity(3)], 0.2).holds(classes, table)
    assert not PrivacyCriterion([KAnonymity(3)], 0.19).holds(classes, table)
    assert PrivacyCriterion([LDiversity(2)], 0.3).holds(classes, table)
    assert not PrivacyCriterion([LDiversity(2)], 0.29).holds(classes, table)


def test_criterion_validates_every_model_and_reports_its_parameters() -> None:
    table = union_table()
    crit = PrivacyCriterion([KAnonymity(2), LDiversity(2)], 0.25)
    crit.validate(table)
    with pytest.raises(InputError, match="k = 11 exceeds the number of records"):
        PrivacyCriterion([LDiversity(2), KAnonymity(11)], 0.25).validate(table)
    assert crit.params() == {
        "models": {"k-anonymity": {"k": 2}, "l-diversity": {"l": 2, "variant": "distinct", "columns": None}},
        "max_suppression": 0.25,
    }
    assert crit.sensitive_columns == ()
    assert repr(KAnonymity(3)) == "KAnonymity(k=3)"
    expected = "LDiversity(l=2, variant='recursive', c=3.0, columns=None)"
    assert repr(LDiversity(2, "recursive", c=3)) == expected


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"m": 1.5, "knowledge": {"s": 1.0}}, r"\.m: expected a number in \(0, 1\]"),
        ({"m": 0.5, "knowledge": {"s": 1.0}, "inclusion_probability": 0}, "inclusion_probability: expected"),
        ({"m": 0.5, "knowledge": {"s": 1.0}, "inclusion_probability": 1.5}, "inclusion_probability: expect"),
        ({"m": 0.5, "knowledge": {"s": 1.0}, "inclusion_probability": "x"}, "inclusion_probability: expect"),
        ({"m": 0.5, "knowledge": {"s": 2.0}}, r"privacy\.m-concealing\.knowledge"),
        ({"knowledge": {"s": 1.0}}, "missing m"),
        ({"m": 0.5}, "missing knowledge"),
    ],
)
def test_m_concealing_configuration_out_of_range_is_a_config_error(
    params: dict[str, object], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        make_model("m-concealing", params)


def test_m_concealing_configuration_keeps_the_inclusion_probability() -> None:
    model = make_model("m-concealing", {"m": 0.25, "knowledge": {"s": 0.5}, "inclusion_probability": 1})
    assert isinstance(model, MConcealing)
    assert model.params() == {"m": 0.25, "knowledge": {"s": 0.5}, "inclusion_probability": 1.0}
    model = make_model("m-concealing", {"m": 0.25, "knowledge": {"s": 0.5}, "inclusion_probability": 0.5})
    assert model.params()["inclusion_probability"] == 0.5


def test_evaluator_counts_every_evaluation() -> None:
    """``evaluations`` counts the nodes asked for (a leaf-cache hit included), and a walk counts each node."""
    table = tie_table()
    ev = Evaluator(table)
    classes = ev.classes((1, 0))
    assert ev.evaluations == 1
    assert ev.classes((1, 0)) is classes  # leaf cache
    assert ev.evaluations == 2
    walked = {c.node: c.nonempty.tolist() for c in ev.iter_classes()}
    assert ev.evaluations == 2 + table.lattice.size
    assert sorted(walked) == sorted(table.lattice.nodes())
    assert walked[(0, 0)] == [1, 1, 1, 1] and walked[(1, 2)] == [4]
    assert ev.class_sizes_at((0, 2)).tolist() == [2, 2]
    ev.clear_cache()
    assert ev.classes((1, 0)) is not classes
    assert ev.classes((1, 0)).nonempty.tolist() == [2, 2]


@pytest.mark.parametrize("name", ["K-Anonymity", " k_anonymity ", "KANONYMITY"])
def test_model_names_are_case_and_alias_insensitive(name: str) -> None:
    model = make_model(name, {"k": 2})
    assert isinstance(model, KAnonymity) and model.k == 2


def test_unknown_model_names_get_a_suggestion_or_the_list() -> None:
    with pytest.raises(ConfigError, match=r"privacy model 'k-anonymty'; did you mean 'k-anonymity'\?"):
        make_model("k-anonymty", {"k": 2})
    with pytest.raises(
        ConfigError,
        match=(
            r"expected one of k-anonymity, l-diversity, m-concealing, profile-anonymity, risk, small-cells, "
            r"t-closeness$"
        ),
    ):
        make_model("zzz", {})
    with pytest.raises(ConfigError, match=r"privacy\.k-anonymity: missing k"):
        make_model("k-anonymity", None)


def test_scan_lattice_counts_records_below_each_k_at_every_node() -> None:
    table = tie_table()
    stats = scan_lattice(table, [2, 3])
    assert stats.ks == (2, 3) and stats.n_records == 4
    for classes in Evaluator(table).iter_classes():
        sizes = classes.nonempty
        assert stats.suppressed_for(2)[classes.node] == int(sizes[sizes < 2].sum())
        assert stats.suppressed_for(3)[classes.node] == int(sizes[sizes < 3].sum())
        assert stats.classes[classes.node] == classes.n_classes


def test_search_keeps_going_after_a_sub_lattice_it_has_already_visited() -> None:
    """A mid node whose child sub-lattice was visited before must not end the loop over the others.

    Found by mutation testing (random monotone predicates; the hypothesis test of test_ola.py
    uses smaller lattices): with ``continue`` -> ``break`` OLA misses the minimal node (4, 1, 0).
    """
    lattice = Lattice([4, 1, 2])
    generators = [(4, 0, 1), (4, 1, 0), (1, 0, 2)]
    found, _, any_ok = find_minimal_nodes(lattice, lambda n: any(Lattice.leq(g, n) for g in generators))
    # kills: continue -> break after "(child_bottom, child_top) in visited" in find_minimal_nodes.kmin
    assert (found, any_ok) == (sorted(generators), True)


# cumulative ranks (space <= 4 ids) / presence array / sort (a space far beyond 64 ids)
@pytest.mark.parametrize("space", [16, 1 << 15, 10**9])
def test_densify_keeps_the_order_of_ids_in_both_methods(space: int) -> None:
    key = np.array([5, 11, 5, 3, 11, 15])
    ids, n = densify(key, space)
    # kills: the sort branch's np.unique arguments and its count (never reached by the table tests)
    assert (ids.tolist(), n) == ([1, 2, 1, 0, 2, 3], 4)
    assert ids.dtype == np.intp


def test_every_strategy_has_the_one_selector_signature() -> None:
    """``run(ctx: SearchContext) -> SearchResult`` for every strategy; no ``search`` methods left."""
    import inspect

    from safeshare.config.algorithms import make_strategy
    from safeshare.search import BestFirstOLA

    table = tie_table()
    ctx = SearchContext(
        table, Evaluator(table), PrivacyCriterion([KAnonymity(2)], 0.0), Prec(Evaluator(table))
    )
    classes = [OLA, ExhaustiveSearch, BestFirstOLA, InverseOLA]
    classes += [type(make_strategy(name, {})) for name in ("ola", "exhaustive")]
    classes += [type(make_strategy("inverse-ola", {"max_loss": 0.5}))]
    for cls in classes:
        assert list(inspect.signature(cls.run).parameters) == ["self", "ctx"], cls
        assert not hasattr(cls, "search"), cls
    assert OLA().run(ctx).node == ExhaustiveSearch().run(ctx).node == BestFirstOLA().run(ctx).node


# ------------------------------------------------------------------ risk threshold
def risk_table() -> FrequencyTable:
    """10 records in 4 bottom classes of sizes 1, 2, 3, 4 (values a, b, c, d)."""
    return one_qi_table({"a": ["x"], "b": ["x", "y"], "c": ["x", "y", "z"], "d": ["x", "y", "z", "w"]})


def test_risk_threshold_passes_exactly_at_the_threshold_on_the_released_classes() -> None:
    table = risk_table()
    classes = bottom(table)
    everything = classes.sizes > 0
    without_a = everything & (classes.sizes != 1)
    # A = J / N: 4/10 with every class released, 3/10 without the class of size 1
    at = RiskThreshold(0.4, "A")
    assert at.node_acceptable(classes, table, everything)  # kills: value <= threshold -> <
    assert not RiskThreshold(0.35, "A").node_acceptable(classes, table, everything)
    # the comparison is value <= threshold + TOLERANCE: exactly at the widened bound still passes
    assert 0.4 - TOLERANCE + TOLERANCE == 0.4
    assert RiskThreshold(0.4 - TOLERANCE, "A").node_acceptable(classes, table, everything)
    assert not RiskThreshold(0.4 - 3 * TOLERANCE, "A").node_acceptable(classes, table, everything)
    tight = RiskThreshold(0.3, "A")
    # kills: value(classes, table, None) in node_acceptable / achieved (every class counted)
    assert tight.node_acceptable(classes, table, without_a)
    assert tight.achieved(classes, table, without_a) == {"A": pytest.approx(0.3), "population_size": 10}
    assert RiskThreshold(0.3, "A", population_size=20).achieved(classes, table, everything) == {
        "A": pytest.approx(0.2),
        "population_size": 20,
    }


def test_risk_threshold_uses_its_estimator_and_refuses_an_estimate_without_solution(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    table = risk_table()
    classes = bottom(table)
    released = classes.sizes > 0
    sizes = classes.sizes[released]
    zayatz = RiskThreshold(1.0, "B", estimator="zayatz", population_size=100)
    # kills: the estimator dropped from release_risk (the default, Pitman, gives another B)
    expected = release_risk(sizes, 100, "B", "zayatz")
    assert zayatz.value(classes, table, released) == pytest.approx(expected)
    assert expected != pytest.approx(release_risk(sizes, 100, "B", "pitman"))
    nan = RiskThreshold(1.0, "B")

    class NoEstimate:  # an estimator without a solution: None, with its reason (the contract)
        B_ = None
        B_reason_ = "no fit"
        B_interval_ = None
        population_uniqueness_ = None

        def fit(self, hist: object, population_size: int) -> NoEstimate:
            return self

    monkeypatch.setattr(release_risk_module, "make_estimator", lambda name, **params: NoEstimate())
    assert not nan.node_acceptable(classes, table, released)
    expected_report = {"B": None, "population_size": 10, "no_estimate": "no fit"}
    assert nan.achieved(classes, table, released) == expected_report


def test_risk_threshold_parameters_at_their_bounds() -> None:
    assert RiskThreshold(1).threshold == 1.0
    assert RiskThreshold(1e-9).threshold == 1e-9
    assert RiskThreshold(0.1, population_size=1).population_size == 1
    for threshold in (0, 0.0, -0.1, 1.0000001, 1.5, True, "0.5", None):
        with pytest.raises(InputError, match="risk threshold"):
            RiskThreshold(threshold)  # type: ignore[arg-type]
    for size in (0, -1, True, 2.0, "10"):
        with pytest.raises(InputError, match="population_size"):
            RiskThreshold(0.1, population_size=size)  # type: ignore[arg-type]
    # the exact measure A has no estimator: it is neither checked nor reported
    assert RiskThreshold(0.1, "A", estimator="average").estimator == "average"
    with pytest.raises(InputError, match="needs the frequency table"):
        RiskThreshold(0.1, "uniques", estimator="average")
    assert RiskThreshold(0.1, "A").params() == {"measure": "A", "threshold": 0.1, "population_size": None}
    assert RiskThreshold(0.1, "uniques", "dankar").params() == {
        "measure": "uniques",
        "threshold": 0.1,
        "estimator": "dankar",
        "population_size": None,
    }
