"""Local recoding (issue 25): the rounds, the merged classes, the cell-level loss, the release.

References are computed here on record-level data with pandas and plain Python (one row per
record, labels as text), never with the code under test: the classes of a mixed release are
the records with identical released values, and every invariant is checked on them.
"""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from safeshare.config.spec import AnonymizationSpec
from safeshare.core.evaluation import Evaluator
from safeshare.core.frequency import FrequencyTable
from safeshare.core.mixed import MixedRelease
from safeshare.data.schema import Attribute, Role, Schema
from safeshare.errors import InputError
from safeshare.hierarchy.hierarchy import Hierarchy
from safeshare.metrics.cell_loss import cell_loss
from safeshare.metrics.loss import NonUniformEntropy, Prec
from safeshare.models import KAnonymity, LDiversity, PrivacyCriterion, PrivacyModel, TCloseness
from safeshare.models.m_concealing import MConcealing
from safeshare.models.mixed import assess_mixed
from safeshare.models.risk import RiskThreshold
from safeshare.models.small_cells import SmallCells
from safeshare.workflows.local_recoding import LocalRecoding, local_recoding
from tests.sensitive_helpers import random_frame, table_from_frame

# --------------------------------------------------------------------------- references


def spec_for(
    table: FrequencyTable,
    models: list[PrivacyModel],
    max_suppression: float,
    metric: str = "prec",
    **kw: object,
) -> AnonymizationSpec:
    attributes = [Attribute(q, Role.QUASI, h) for q, h in zip(table.qi_names, table.hierarchies, strict=True)]
    attributes += [Attribute(s, Role.SENSITIVE) for s in table.sensitive_names]
    schema = Schema.from_attributes(attributes)
    return AnonymizationSpec(schema, tuple(models), max_suppression=max_suppression, metric=metric, **kw)  # type: ignore[arg-type]


def records(release: MixedRelease) -> pd.DataFrame:
    """One row per record: raw values, the level and released label of each QI (text, from
    ``Hierarchy.generalize``), whether it is released, and the sensitive values."""
    table = release.table
    rows = []
    for r in range(table.n_rows):
        raw = [h.leaves[table.codes[r, j]] for j, h in enumerate(table.hierarchies)]
        levels = [int(v) for v in release.row_levels[r]]
        out = bool(release.released[r])
        labels = [
            h.generalize(v, lv) if out else None
            for h, v, lv in zip(table.hierarchies, raw, levels, strict=True)
        ]
        sens = [
            table.sensitive_labels[j][table.sensitive_codes[r, j]] for j in range(len(table.sensitive_names))
        ]
        rows += [(raw, levels, labels, out, sens)] * int(table.counts[r])
    q = len(table.qi_names)
    frame = pd.DataFrame(
        {
            **{f"raw{j}": [x[0][j] for x in rows] for j in range(q)},
            **{f"lv{j}": [x[1][j] for x in rows] for j in range(q)},
            **{f"lab{j}": [x[2][j] for x in rows] for j in range(q)},
            "released": [x[3] for x in rows],
            **{name: [x[4][j] for x in rows] for j, name in enumerate(table.sensitive_names)},
        }
    )
    return frame


def released_classes(frame: pd.DataFrame, q: int) -> pd.core.groupby.DataFrameGroupBy:
    return frame[frame["released"]].groupby([f"lab{j}" for j in range(q)], sort=False)


def reference_loss(release: MixedRelease) -> dict[str, float]:
    """Cell-level Prec, entropy (ARX's MIE 2016 algorithm on records, with Counters) and DM*."""
    table = release.table
    frame = records(release)
    n, q = len(frame), len(table.qi_names)
    hierarchies = table.hierarchies
    out_prec, weights = 0.0, 0
    entropy = 0.0
    for j, h in enumerate(hierarchies):
        top = h.height
        t = [lv if rel else top for lv, rel in zip(frame[f"lv{j}"], frame["released"], strict=True)]
        if top > 0:
            out_prec += sum(x / top for x in t) / n
            weights += 1
        raw = list(frame[f"raw{j}"])
        levels = sorted(set(t))
        for idx, level in enumerate(levels):
            member = [i for i in range(n) if t[i] >= level]
            prev = levels[idx - 1] if idx else None
            below = [raw[i] if prev is None else h.generalize(raw[i], prev) for i in member]
            above = [h.generalize(raw[i], level) for i in member]
            cb, ca = Counter(below), Counter(above)
            entropy -= sum(math.log2(cb[b] / ca[a]) for b, a in zip(below, above, strict=True))
    sizes = released_classes(frame, q).size().to_numpy() if frame["released"].any() else np.zeros(0)
    suppressed = int((~frame["released"]).sum())
    return {
        "prec": out_prec / weights if weights else 0.0,
        "entropy": entropy,
        "dm_star": float((sizes.astype(float) ** 2).sum() + n * suppressed),
        "classes": len(sizes),
    }


@st.composite
def mixed_releases(draw: st.DrawFn) -> MixedRelease:
    """A random table (with a sensitive column) and a random level per raw QI tuple and fate."""
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    frame, qis, hierarchies, sensitive = random_frame(
        rng, n_qis=int(rng.integers(1, 4)), n_rows=int(rng.integers(5, 60)), n_values=3
    )
    table = table_from_frame(frame, qis, hierarchies, sensitive)
    tuples = np.unique(table.codes, axis=0, return_inverse=True)[1].ravel()
    n_tuples = int(tuples.max()) + 1
    levels = np.column_stack(
        [rng.integers(0, h.height + 1, size=n_tuples) for h in table.hierarchies]
    ).astype(np.int16)
    released = rng.random(n_tuples) < 0.8
    return MixedRelease(table, levels[tuples], released[tuples])


# --------------------------------------------------------------------------- classes and loss


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mixed_releases())
def test_classes_and_cell_loss_match_a_record_level_reference(release: MixedRelease) -> None:
    q = len(release.table.qi_names)
    frame = records(release)
    _, sizes = release.classes
    expected = sorted(released_classes(frame, q).size().tolist()) if frame["released"].any() else []
    assert sorted(sizes.tolist()) == expected
    loss = cell_loss(release)
    ref = reference_loss(release)
    assert loss.prec == pytest.approx(ref["prec"], abs=1e-12)
    assert loss.entropy == pytest.approx(ref["entropy"], rel=1e-9, abs=1e-9)
    assert loss.dm_star == ref["dm_star"]
    assert loss.classes == ref["classes"]
    assert loss.released + loss.suppressed == loss.records == len(frame)
    assert 0.0 <= loss.prec <= 1.0 and 0.0 <= loss.entropy_normalized <= 1.0 + 1e-12
    assert 0.0 <= loss.dm_star_normalized <= 1.0


@pytest.mark.parametrize(
    "node", [(0,) * 9, (1, 1, 1, 1, 1, 1, 1, 1, 1), (2, 2, 2, 0, 2, 0, 0, 0, 0), (2, 1, 2, 1, 2, 1, 0, 1, 3)]
)
def test_cell_loss_of_a_full_release_is_the_search_metric(
    adult_table: FrequencyTable, node: tuple[int, ...]
) -> None:
    """Every record released at one node: Prec, entropy and DM* are the search's (thesis §5.1)."""
    ev = Evaluator(adult_table)
    release = MixedRelease.at_node(adult_table, node, np.ones(adult_table.n_rows, dtype=bool))
    loss = cell_loss(release)
    assert loss.prec == pytest.approx(Prec(ev).value(node), abs=1e-12)
    assert loss.entropy == pytest.approx(NonUniformEntropy(ev).value(node), rel=1e-12)
    assert loss.dm_star == ev.classes(node).dm_star
    assert loss.suppressed == 0


def test_suppressed_cells_cost_the_most(adult_table: FrequencyTable) -> None:
    everything = MixedRelease.at_node(adult_table, (0,) * 9, np.zeros(adult_table.n_rows, dtype=bool))
    loss = cell_loss(everything)
    n = adult_table.n_records
    assert loss.prec == 1.0 and loss.dm_star == n * n and loss.dm_star_normalized == 1.0
    assert loss.entropy_normalized == pytest.approx(1.0)


# --------------------------------------------------------------------------- models on merged classes


def _node_models(table: FrequencyTable) -> list[list[PrivacyModel]]:
    s = table.sensitive_names[0]
    return [
        [KAnonymity(3)],
        [KAnonymity(2), LDiversity(2, columns=[s])],
        [LDiversity(1.5, "entropy", columns=[s])],
        [LDiversity(2, "recursive", c=2.0, columns=[s])],
        [TCloseness(0.3, columns=[s])],
        [MConcealing(0.4, {s: 0.5})],
        [KAnonymity(2), RiskThreshold(0.5, "A")],
    ]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**31 - 1))
def test_merged_check_agrees_with_the_search_at_a_node(seed: int) -> None:
    """A full-domain release seen as a mixed one: every model's verdict per row is the search's."""
    rng = np.random.default_rng(seed)
    frame, qis, hierarchies, sensitive = random_frame(rng, n_qis=2, n_rows=int(rng.integers(10, 80)))
    table = table_from_frame(frame, qis, hierarchies, sensitive)
    ev = Evaluator(table)
    node = tuple(int(rng.integers(0, h.height + 1)) for h in hierarchies)
    classes = ev.classes(node)
    for models in _node_models(table):
        criterion = PrivacyCriterion(
            [m.bind(spec_for(table, [KAnonymity(1)], 0).schema) for m in models], 1.0
        )
        assessment = criterion.assess(classes, table)
        rows_ok = assessment.acceptable[classes.row_class]
        release = MixedRelease.at_node(table, node, rows_ok)
        mixed = assess_mixed(criterion.models, release)
        assert mixed.acceptable.all(), models  # the released classes are the accepted ones
        everything = MixedRelease.at_node(table, node, np.ones(table.n_rows, dtype=bool))
        verdict = assess_mixed(criterion.models, everything)
        row_class = everything.classes[0]
        assert (verdict.acceptable[row_class] == rows_ok).all(), models
        if any(isinstance(m, RiskThreshold) for m in models):
            assert mixed.node_acceptable == assessment.qualifies or assessment.suppressed_records > 0


def test_small_cells_is_refused(adult_table: FrequencyTable, tmp_path: Path) -> None:
    population = tmp_path / "p.csv"
    population.write_text("age\n1\n")
    spec = spec_for(adult_table, [KAnonymity(5), SmallCells(population)], 0.05)
    with pytest.raises(InputError, match="small-cells"):
        LocalRecoding(spec)


# --------------------------------------------------------------------------- the rounds


def test_adult_releases_more_records_at_less_loss(adult_table: FrequencyTable) -> None:
    """The issue's demo: k = 5, 5 %, Prec; the global optimum suppresses 1,581 records."""
    result = local_recoding(spec_for(adult_table, [KAnonymity(5)], 0.05), table=adult_table)
    first = result.rounds[0]
    assert first.suppressed_after == 1581 and first.node == (2, 2, 2, 0, 2, 0, 0, 0, 0)
    assert result.records_out > result.global_result.records_in - 1581
    assert result.suppressed_records < 1581
    g, m = result.global_loss, result.mixed_loss
    assert m.prec < g.prec and m.entropy < g.entropy and m.dm_star < g.dm_star
    assert sum(r.released for r in result.rounds) == result.records_out
    assert result.assessment.passes and result.released_class_sizes.min() >= 5
    assert result.stop_reason in ("nothing_suppressed", "no_gain", "no_node", "too_few", "rounds")


def test_one_round_limit(adult_table: FrequencyTable) -> None:
    result = local_recoding(spec_for(adult_table, [KAnonymity(5)], 0.05), table=adult_table, rounds=1)
    assert len(result.rounds) == 2 and result.stop_reason == "rounds"


GROUPED = Hierarchy([("a", "a", "*"), ("b", "a", "*"), ("c", "a", "*"), ("d", "d", "*")], "x")


def _table(values: dict[str, int], sensitive: dict[str, list[str]] | None = None) -> FrequencyTable:
    rows = []
    for v, n in values.items():
        for i in range(n):
            rows.append((v, (sensitive or {}).get(v, ["s"] * n)[i]))
    frame = pd.DataFrame(rows, columns=["x", "s"])
    return table_from_frame(frame, ["x"], [GROUPED], ["s"] if sensitive else [])


def test_a_round_class_merges_with_an_earlier_one() -> None:
    """Round 1 writes b and c as "a" (level 1), the label round 0 gave a (level 0): one class of 4."""
    table = _table({"a": 2, "b": 1, "c": 1})
    result = local_recoding(spec_for(table, [KAnonymity(2)], 0.5), table=table)
    assert [r.node for r in result.rounds] == [(0,), (1,)]
    assert [r.released for r in result.rounds] == [2, 2]
    assert result.released_class_sizes.tolist() == [4]  # by identical released values
    assert result.suppressed_records == 0
    # b and c: suppressed (1 each) globally, at level 1 of 2 (0.5 each) after recoding
    assert result.global_loss.prec == 0.5 and result.mixed_loss.prec == 0.25
    # DM* per record: the merge grows a's class (2 -> 4): 16 against 2^2 + 2 * N = 12
    assert result.global_loss.dm_star == 4 + 2 * 4 and result.mixed_loss.dm_star == 16
    plan = result.release_plan(["x"])
    assert dict(zip(plan.keys["x"], plan.labels["x"], strict=True)) == {"a": "a", "b": "a", "c": "a"}


def test_t_closeness_is_judged_against_the_whole_input() -> None:
    """Round 1's search sees only the suppressed records (all "y"), whose own distribution makes
    them t-close; against the input's (80 % "x") they are not, so they go back (ARX would
    release them)."""
    values = {"a": 40, "d": 10}
    sensitive = {"a": ["x"] * 40, "d": ["y"] * 10}
    table = _table(values, sensitive)
    result = local_recoding(spec_for(table, [TCloseness(0.3, columns=["s"])], 0.2), table=table)
    assert result.rounds[0].suppressed_after == 10
    assert len(result.rounds) == 2 and result.rounds[1].released == 0 and result.rounds[1].returned == 10
    assert result.stop_reason == "no_gain" and result.suppressed_records == 10


def test_a_round_that_breaks_a_node_level_model_is_dropped() -> None:
    """Risk A = J / N <= 0.2: round 0 releases 4 classes of 22 records (0.18); the round that
    would add a fifth class (0.23) is dropped."""
    h = Hierarchy(
        [
            ("x0", "g0", "*"),
            ("x1", "g0", "*"),
            ("x2", "g1", "*"),
            ("x3", "g1", "*"),
            ("x4", "g2", "*"),
            ("x5", "g2", "*"),
        ],
        "x",
    )
    frame = pd.DataFrame({"x": ["x0"] * 5 + ["x1"] * 5 + ["x2"] * 5 + ["x3"] * 5 + ["x4", "x5"]})
    table = table_from_frame(frame, ["x"], [h], [])
    spec = spec_for(table, [KAnonymity(2), RiskThreshold(0.2, "A")], 0.1)
    result = local_recoding(spec, table=table)
    assert result.rounds[0].node == (0,) and result.rounds[0].suppressed_after == 2
    assert result.stop_reason == "node_model" and len(result.rounds) == 1
    assert result.suppressed_records == 2


def test_parameters_are_validated(adult_table: FrequencyTable) -> None:
    spec = spec_for(adult_table, [KAnonymity(5)], 0.05)
    for bad in (0, -1, True, 1.5):
        with pytest.raises(InputError, match="rounds"):
            LocalRecoding(spec, rounds=bad)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="inverse-ola"):
        LocalRecoding(
            spec_for(
                adult_table,
                [KAnonymity(5)],
                0.05,
                algorithm="inverse-ola",
                algorithm_options={"max_loss": 0.5},
            )
        )
    with pytest.raises(InputError, match="engine or a frequency table"):
        local_recoding(spec)


def test_no_global_node() -> None:
    table = _table({"a": 2, "d": 2}, {"a": ["s", "s"], "d": ["s", "s"]})  # one sensitive value
    result = local_recoding(spec_for(table, [LDiversity(2, columns=["s"])], 0.0), table=table)
    assert not result.found and result.stop_reason == "no_global_node" and result.rounds == []


def repeating_hierarchy(rng: np.random.Generator, n_values: int, height: int, name: str) -> Hierarchy:
    """A random hierarchy whose groups are often labelled like one of their members (``a`` at
    level 0 and the group ``{a, b}`` both shown as ``a``, as real hierarchies do with a category
    they leave alone): rows written at different nodes can then carry identical labels."""
    rows = [[f"{name}{i}"] for i in range(n_values)]
    current = sorted({r[-1] for r in rows})
    for level in range(1, height + 1):
        if level == height:
            parent = {c: "*" for c in current}
        else:
            groups: dict[int, list[str]] = {}
            n_groups = int(rng.integers(1, len(current) + 1))
            for c in current:
                groups.setdefault(int(rng.integers(0, n_groups)), []).append(c)
            parent = {}
            for g, members in groups.items():
                label = min(members) if rng.random() < 0.7 else f"{name}L{level}g{g}"
                parent.update({c: label for c in members})
        for row in rows:
            row.append(parent[row[-1]])
        current = sorted(set(parent.values()))
    return Hierarchy(rows, name=name)


@st.composite
def recoding_cases(draw: st.DrawFn) -> tuple[FrequencyTable, list[PrivacyModel], float]:
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    frame, qis, hierarchies, sensitive = random_frame(
        rng,
        n_qis=int(rng.integers(1, 4)),
        n_rows=int(rng.integers(8, 120)),
        n_values=3,
        max_values=6,
        max_height=3,
    )
    if draw(st.booleans()):  # labels that repeat across levels: classes of several rounds merge
        # the same leaves (``q0``, ``q1``, ... as random_hierarchy names them), other groups
        hierarchies = [
            repeating_hierarchy(rng, len(h.leaves), max(2, h.height), q)
            for q, h in zip(qis, hierarchies, strict=True)
        ]
    table = table_from_frame(frame, qis, hierarchies, sensitive)
    k = draw(st.integers(2, 5))
    kind = draw(st.sampled_from(["k", "k+l", "t", "m"]))
    s = sensitive[0]
    models: list[PrivacyModel] = [KAnonymity(k)]
    if kind == "k+l":
        models.append(LDiversity(2, columns=[s]))
    elif kind == "t":
        models = [KAnonymity(2), TCloseness(0.4, columns=[s])]
    elif kind == "m":
        models = [MConcealing(0.5, {s: 0.5})]
    return table, models, draw(st.sampled_from([0.0, 0.05, 0.1, 0.3]))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(recoding_cases())
def test_invariants_on_random_tables(case: tuple[FrequencyTable, list[PrivacyModel], float]) -> None:
    table, models, s = case
    result = local_recoding(spec_for(table, models, s), table=table)
    if not result.found:
        return
    g = result.global_result
    frame = records(result.release)
    q = len(table.qi_names)
    # suppression: never more than the global optimum's, hence within the limit
    assert result.suppressed_records <= g.suppressed_records <= math.floor(s * table.n_records + 1e-9)
    assert result.records_out == int(frame["released"].sum()) == sum(r.released for r in result.rounds)
    # every raw tuple has one fate and one node
    per_tuple = frame.groupby([f"raw{j}" for j in range(q)])
    assert (per_tuple[[*(f"lv{j}" for j in range(q)), "released"]].nunique() <= 1).all().all()
    # the released rows of round r are written at round r's node; the records of round 0 are the global's
    # every model on the classes of identical released values (reference computations)
    if frame["released"].any():
        groups = released_classes(frame, q)
        for m in models:
            if isinstance(m, KAnonymity):
                assert groups.size().min() >= m.k
            elif isinstance(m, LDiversity):
                assert groups[table.sensitive_names[0]].nunique().min() >= m.l
            elif isinstance(m, TCloseness):
                whole = frame[table.sensitive_names[0]].value_counts(normalize=True)
                for _, cls in groups:
                    p = cls[table.sensitive_names[0]].value_counts(normalize=True)
                    emd = 0.5 * sum(abs(p.get(v, 0.0) - whole.get(v, 0.0)) for v in whole.index)
                    assert emd <= m.t + 1e-9
            elif isinstance(m, MConcealing):
                col = table.sensitive_names[0]
                for _, cls in groups:
                    n_cls = len(cls)
                    same = cls[col].map(cls[col].value_counts())
                    worst = (0.5 / n_cls + 0.5 / same).max()
                    assert worst <= m.m + 1e-9
    # the loss of released cells never exceeds the loss of the same cells suppressed
    assert result.mixed_loss.prec <= result.global_loss.prec + 1e-12
    assert result.mixed_loss.suppressed == result.suppressed_records
