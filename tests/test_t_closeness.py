"""t-closeness: EMD values against a linear program, monotonicity claims, searches, pycanon, verification.

The reference EMD is the transportation linear program itself (scipy's HiGHS), with the
ground distance of Li, Li, Venkatasubramanian 2007 written out as a matrix: it shares
nothing with the closed forms of the model nor with the SQL of the verifier.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from collections import Counter
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

from safeshare.config import load_config
from safeshare.core.evaluation import Evaluator
from safeshare.core.frequency import FrequencyTable
from safeshare.data.engines.memory import MemoryEngine
from safeshare.data.schema import Attribute, Role, Schema
from safeshare.errors import ConfigError, HierarchyError, InputError
from safeshare.hierarchy.builders import FileBuilder
from safeshare.hierarchy.hierarchy import Hierarchy
from safeshare.metrics.loss import make_metric
from safeshare.models import KAnonymity, LDiversity, PrivacyCriterion, TCloseness
from safeshare.search.best_first import BestFirstOLA
from safeshare.search.context import SearchContext
from safeshare.verify import verify_release
from safeshare.verify.sensitive import check_t_closeness
from safeshare.workflows.anonymizer import Anonymizer, build_frequency_table
from safeshare.workflows.publish import write_release
from safeshare.workflows.release import ReleaseContext
from tests import conftest
from tests.conftest import ADULT_DIR, ADULT_QIS, random_hierarchy
from tests.sensitive_helpers import (
    adult_subset_config,
    class_histograms,
    expectations_of,
    fit,
    qualifying_nodes,
    random_frame,
    run_cli,
    table_from_frame,
)

ROOT = conftest.ROOT
GROUPS = Hierarchy([("a", "ab", "*"), ("b", "ab", "*"), ("c", "c", "*")], "g")


# ------------------------------------------------------------------ reference EMD
def emd_lp(p: np.ndarray, q: np.ndarray, ground: np.ndarray) -> float:
    """min sum d_ij f_ij  s.t.  sum_j f_ij = p_i, sum_i f_ij = q_j, f >= 0."""
    m = len(p)
    rows = np.zeros((2 * m, m * m))
    for i in range(m):
        rows[i, i * m : (i + 1) * m] = 1.0
        rows[m + i, i::m] = 1.0
    res = linprog(ground.ravel(), A_eq=rows, b_eq=np.concatenate([p, q]), bounds=(0, None), method="highs")
    assert res.status == 0
    return float(res.fun)


def ground_distance(kind: str, labels: list[str], hierarchy: Hierarchy | None = None) -> np.ndarray:
    m = len(labels)
    if kind == "equal":
        return 1.0 - np.eye(m)
    if kind == "ordered":
        rank = {v: i for i, v in enumerate(sorted(set(labels), key=float))}
        n = len(rank)
        pos = np.array([rank[v] for v in labels], dtype=float)
        return np.abs(pos[:, None] - pos[None, :]) / max(n - 1, 1)
    assert hierarchy is not None
    height = hierarchy.height
    single_root = hierarchy.size(height) == 1
    top = height if single_root else height + 1
    d = np.zeros((m, m))
    for i, u in enumerate(labels):
        for j, v in enumerate(labels):
            common = [
                lv for lv in range(height + 1) if hierarchy.generalize(u, lv) == hierarchy.generalize(v, lv)
            ]
            d[i, j] = (min(common) if common else top) / top
    return d


def class_emds_by_lp(table: FrequencyTable, node: tuple[int, ...], kind: str, hierarchy=None) -> dict:  # type: ignore[no-untyped-def]
    """QI tuple -> EMD of the class's distribution of ``s0`` to the table's, by linear programming."""
    labels = list(table.sensitive_labels[0])
    totals = np.bincount(table.sensitive_codes[:, 0], weights=table.counts, minlength=len(labels))
    q = totals / totals.sum()
    ground = ground_distance(kind, labels, hierarchy)
    out = {}
    for key, hist in class_histograms(table, node, "s0").items():
        p = np.array([hist.get(v, 0) for v in labels], dtype=float)
        out[key] = emd_lp(p / p.sum(), q, ground)
    return out


def model_emds(model: TCloseness, table: FrequencyTable, node: tuple[int, ...], column: str = "s0") -> dict:  # type: ignore[no-untyped-def]
    classes = Evaluator(table).classes(node)
    values = model.measure(classes, table)[column]
    labels = table.labels_at(node)
    return {tuple(str(v) for v in labels.loc[i]): float(values[s]) for i, s in enumerate(classes.row_class)}


# ------------------------------------------------------------------ exact values
SALARY = {
    # Li et al. 2007, Tables 3-4: three classes of three salaries (3k..11k) and diseases.
    "a": [("3", "gastric ulcer"), ("4", "gastritis"), ("5", "stomach cancer")],
    "b": [("6", "gastritis"), ("11", "flu"), ("8", "bronchitis")],
    "c": [("7", "bronchitis"), ("9", "pneumonia"), ("10", "stomach cancer")],
}
DISEASES = Hierarchy(
    [
        ("flu", "respiratory infection", "respiratory", "*"),
        ("pneumonia", "respiratory infection", "respiratory", "*"),
        ("bronchitis", "respiratory infection", "respiratory", "*"),
        ("pulmonary edema", "vascular lung", "respiratory", "*"),
        ("pulmonary embolism", "vascular lung", "respiratory", "*"),
        ("gastric ulcer", "stomach", "digestive", "*"),
        ("gastritis", "stomach", "digestive", "*"),
        ("stomach cancer", "stomach", "digestive", "*"),
        ("colitis", "colon", "digestive", "*"),
        ("colon cancer", "colon", "digestive", "*"),
    ],
    "disease",
)


def salary_table() -> FrequencyTable:
    rows = [(g, s, d) for g, records in SALARY.items() for s, d in records]
    frame = pd.DataFrame(rows, columns=["g", "salary", "disease"])
    flat = Hierarchy([(g, "*") for g in "abc"], "g")
    return table_from_frame(frame, ["g"], [flat], ["salary", "disease"])


def test_li_et_al_salary_example() -> None:
    """Ordered distance: D[P1, Q] = 0.375 and D[P2, Q] = 0.167 (Li et al. 2007, §4.2)."""
    table = salary_table()
    ordered = model_emds(TCloseness(0.2, {"salary": "ordered"}, columns=["salary"]), table, (0,), "salary")
    assert ordered[("a",)] == pytest.approx(0.375, abs=1e-12)
    assert ordered[("b",)] == pytest.approx(1 / 6, abs=1e-12)
    equal = model_emds(TCloseness(0.2, "equal", columns=["salary"]), table, (0,), "salary")
    assert equal[("a",)] == pytest.approx(2 / 3, abs=1e-12)  # 1/2 (3 (1/3 - 1/9) + 6 / 9)
    auto = TCloseness(0.2, columns=["salary"])
    assert auto.distances(table) == {"salary": "ordered"}  # every value is a number


def test_hierarchical_distance_on_the_disease_example() -> None:
    """{gastric ulcer, gastritis, stomach cancer}: 4/9 of the mass moves to respiratory diseases
    at distance 3/3, nothing else moves: D = 4/9; the LP agrees for every class."""
    table = salary_table()
    model = TCloseness(0.2, columns=["disease"], hierarchies={"disease": DISEASES})
    assert model.distances(table) == {"disease": "hierarchical"}
    got = model_emds(model, table, (0,), "disease")
    assert got[("a",)] == pytest.approx(4 / 9, abs=1e-12)
    labels = list(table.sensitive_labels[1])
    q = np.array([Counter(d for r in SALARY.values() for _, d in r)[v] for v in labels], dtype=float) / 9
    ground = ground_distance("hierarchical", labels, DISEASES)
    for g, records in SALARY.items():
        p = np.array([Counter(d for _, d in records)[v] for v in labels], dtype=float) / 3
        assert got[(g,)] == pytest.approx(emd_lp(p, q, ground), abs=1e-9)


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("kind", ["equal", "ordered", "hierarchical", "forest"])
def test_emd_matches_the_linear_program(seed: int, kind: str) -> None:
    rng = np.random.default_rng(seed)
    frame, qis, hierarchies, _ = random_frame(rng, n_qis=2, n_rows=150, n_sensitive=0)
    n_values = int(rng.integers(2, 7))
    hierarchy = None
    if kind in ("hierarchical", "forest"):
        hierarchy = random_hierarchy(rng, n_values, int(rng.integers(1, 4)), "s")
        if kind == "forest":  # drop the root: the top level has several labels
            rows = (
                [r[:-1] for r in hierarchy.rows]
                if hierarchy.height > 1
                else [(r[0], f"g{i % 2}") for i, r in enumerate(hierarchy.rows)]
            )
            hierarchy = Hierarchy(rows, "s")
        values = list(hierarchy.leaves)
    elif kind == "ordered":
        values = [str(x) for x in sorted(rng.choice(1000, n_values, replace=False) - 100)]
    else:
        values = [f"v{i}" for i in range(n_values)]
    frame["s0"] = rng.choice(values, size=len(frame), p=rng.dirichlet(np.ones(n_values)))
    table = table_from_frame(frame, qis, hierarchies, ["s0"])
    distance = "hierarchical" if hierarchy is not None else kind
    model = TCloseness(0.3, distance, hierarchies={"s0": hierarchy} if hierarchy else None)
    for node in list(table.lattice.nodes())[:: max(1, table.lattice.size // 6)]:
        got = model_emds(model, table, node)
        want = class_emds_by_lp(table, node, "hierarchical" if hierarchy else kind, hierarchy)
        assert got.keys() == want.keys()
        for key, value in want.items():
            assert got[key] == pytest.approx(value, abs=1e-9), (node, key)


def test_ordered_distance_compares_numbers_not_text() -> None:
    """'10' sorts before '9' as text; as numbers 9 < 10, and '1.0' is the same position as '1'."""
    frame = pd.DataFrame({"g": ["a", "a", "b", "b", "c", "c"], "s": ["1", "9", "10", "1.0", "9", "10"]})
    table = table_from_frame(frame, ["g"], [GROUPS], ["s"])
    got = model_emds(TCloseness(0.5, "ordered"), table, (0,), "s")
    # Q = (1: 1/3, 9: 1/3, 10: 1/3); a = (1/2, 1/2, 0): |1/6| + |1/3| = 1/2 over m - 1 = 2.
    assert got[("a",)] == pytest.approx(0.25)
    assert got[("b",)] == pytest.approx((1 / 6 + 1 / 6) / 2)  # (1/2, 0, 1/2)


# ------------------------------------------------------------------ validation and config
@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"t": 1.5}, "t must be a number in \\[0, 1\\]"),
        ({"t": -0.1}, "t must be a number in \\[0, 1\\]"),
        ({"t": True}, "t must be a number"),
        ({"t": 0.2, "distance": "euclid"}, "distance must be one of"),
        ({"t": 0.2, "distance": {"s": "manhattan"}}, "distance must be one of"),
    ],
)
def test_parameters_are_validated(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(InputError, match=message):
        TCloseness(**kwargs)  # type: ignore[arg-type]


def test_distance_choice_and_its_errors() -> None:
    frame = pd.DataFrame({"g": list("aabbc"), "n": ["1", "2", "3", "2", "1"], "c": ["x", "y", "x", "?", "y"]})
    table = table_from_frame(frame, ["g"], [GROUPS], ["n", "c"])
    assert TCloseness(0.5).distances(table) == {"n": "ordered", "c": "equal"}
    assert TCloseness(0.5, "equal").distances(table) == {"n": "equal", "c": "equal"}
    with pytest.raises(
        InputError, match="ordered distance needs numbers, but column 'c' has the value '\\?'"
    ):
        TCloseness(0.5, "ordered").validate(table)
    with pytest.raises(ConfigError, match="hierarchical distance for column 'n' needs a hierarchy"):
        TCloseness(0.5, {"n": "hierarchical"}).validate(table)
    partial = Hierarchy([("x", "*"), ("y", "*")], "c")
    with pytest.raises(HierarchyError, match="value '\\?' of sensitive column 'c' is missing from hierarchy"):
        TCloseness(0.5, hierarchies={"c": partial}).validate(table)


BASE = """
input: {{path: d.csv}}
attributes:
  g: {{role: quasi, hierarchy: g.csv}}
  s: {{role: sensitive{extra}}}
privacy:
  t-closeness: {privacy}
"""


def write_config(tmp_path: Path, privacy: str, extra: str = "") -> Path:
    (tmp_path / "d.csv").write_text(
        "g,s\n" + "".join(f"{'abc'[i % 3]},{['flu', 'gastritis', 'colitis'][i % 4 % 3]}\n" for i in range(30))
    )
    (tmp_path / "g.csv").write_text("a;ab;*\nb;ab;*\nc;c;*\n")
    (tmp_path / "s.csv").write_text("flu;respiratory;*\ngastritis;digestive;*\ncolitis;digestive;*\n")
    path = tmp_path / "c.yaml"
    path.write_text(BASE.format(privacy=privacy, extra=extra))
    return path


def test_sensitive_hierarchy_in_the_config_selects_the_hierarchical_distance(tmp_path: Path) -> None:
    cfg = load_config(write_config(tmp_path, "{t: 0.3}", ", hierarchy: s.csv"))
    assert isinstance(cfg.schema.attributes["s"].hierarchy, FileBuilder)  # read lazily
    result = Anonymizer(cfg.schema, cfg.privacy, max_suppression=0.0).fit(MemoryEngine(cfg.source))
    model = result.criterion.models[0]
    assert isinstance(model, TCloseness) and model.distances(result.table) == {"s": "hierarchical"}
    assert result.summary()["privacy_achieved"]["t-closeness"]["distance"] == {"s": "hierarchical"}
    cfg = load_config(write_config(tmp_path, "{t: 0.3, distance: {s: equal}}", ", hierarchy: s.csv"))
    result = Anonymizer(cfg.schema, cfg.privacy, max_suppression=0.0).fit(MemoryEngine(cfg.source))
    assert result.criterion.models[0].distances(result.table) == {"s": "equal"}  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("privacy", "message"),
    [
        ("{t: 2}", "privacy.t-closeness.t: expected a number in [0, 1], got 2"),
        ("{}", "privacy.t-closeness: missing t"),
        ("{t: 0.2, l: 3}", "privacy.t-closeness.l: unknown key; expected one of columns, distance, t"),
        (
            "{t: 0.2, distance: emd}",
            "privacy.t-closeness.distance: expected one of equal, ordered, hierarchical",
        ),
        ("{t: 0.2, distance: {s: far}}", "privacy.t-closeness.distance.s: expected one of"),
    ],
)
def test_config_errors_name_the_key(tmp_path: Path, privacy: str, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(write_config(tmp_path, privacy))
    assert message in str(info.value) and "\n" not in str(info.value)


def test_distance_for_an_unknown_column_is_a_one_line_cli_error(tmp_path: Path) -> None:
    path = write_config(tmp_path, "{t: 0.2, distance: {diagnosis: equal}}")
    proc = subprocess.run(
        [sys.executable, "-m", "safeshare", "anonymize", str(path), "--out", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"},
        check=False,
    )
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1
    assert "privacy.t-closeness.distance: 'diagnosis' is not a sensitive column" in proc.stderr
    assert not (tmp_path / "out").exists()


# ------------------------------------------------------------------ monotonicity
def three_classes(a: list[int], b: list[int], c: list[int], numeric: bool) -> FrequencyTable:
    values = [str(10 * i) if numeric else f"v{i}" for i in range(len(a))]
    rows = [
        (g, values[i])
        for g, hist in zip("abc", (a, b, c), strict=True)
        for i, n in enumerate(hist)
        for _ in range(n)
    ]
    return table_from_frame(pd.DataFrame(rows, columns=["g", "s"]), ["g"], [GROUPS], ["s"])


histograms = st.lists(st.integers(0, 6), min_size=4, max_size=4).filter(lambda h: sum(h) > 0)
SENSITIVE_TREE = Hierarchy([("v0", "x", "*"), ("v1", "x", "*"), ("v2", "y", "*"), ("v3", "y", "*")], "s")


@given(
    histograms,
    histograms,
    histograms,
    st.floats(0.0, 1.0),
    st.sampled_from(["equal", "ordered", "hierarchical"]),
)
@settings(max_examples=80, deadline=None)
def test_generalization_property(a: list[int], b: list[int], c: list[int], t: float, kind: str) -> None:
    """The EMD is convex in the class distribution: merging two passing classes passes."""
    table = three_classes(a, b, c, numeric=kind == "ordered")
    model = TCloseness(t, kind, hierarchies={"s": SENSITIVE_TREE})
    low = model_emds(model, table, (0,), "s")
    high = model_emds(model, table, (1,), "s")
    assert high[("ab",)] <= max(low[("a",)], low[("b",)]) + 1e-12


@given(st.integers(0, 2**32 - 1), st.floats(0.05, 0.6), st.booleans())
@settings(max_examples=30, deadline=None)
def test_monotone_without_suppression(seed: int, t: float, numeric: bool) -> None:
    rng = np.random.default_rng(seed)
    frame, qis, hierarchies, sensitive = random_frame(rng, n_qis=3, n_rows=150, numeric=numeric)
    table = table_from_frame(frame, qis, hierarchies, sensitive)
    ok = qualifying_nodes(table, [TCloseness(t)], 0.0)
    for node in ok:
        assert set(table.lattice.successors(node)) <= ok


def test_not_monotone_with_suppression() -> None:
    """a = {x, y} passes, b = {x x 10} fails; merged {x x 11, y} fails: 20 -> 22 records to suppress."""
    frame = pd.DataFrame({"g": ["a", "a", *"b" * 10, *"c" * 10], "s": ["x", "y", *"x" * 10, *"y" * 10]})
    table = table_from_frame(frame, ["g"], [GROUPS], ["s"])
    crit = PrivacyCriterion([TCloseness(0.1)], 20 / 22)
    ev = Evaluator(table)
    assert crit.assess(ev.classes((0,)), table).suppressed_records == 20
    assert crit.assess(ev.classes((1,)), table).suppressed_records == 22
    assert crit.holds(ev.classes((0,)), table) and not crit.holds(ev.classes((1,)), table)
    assert not crit.monotone and PrivacyCriterion([TCloseness(0.1)], 0.0).monotone


# ------------------------------------------------------------------ searches
@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("with_k", [False, True])
@pytest.mark.parametrize("limit", [0.0, 0.1, 0.3])
@pytest.mark.parametrize("numeric", [False, True])
def test_ola_equals_exhaustive_on_random_tables(seed: int, with_k: bool, limit: float, numeric: bool) -> None:
    rng = np.random.default_rng(200 + seed)
    frame, qis, hierarchies, sensitive = random_frame(
        rng, n_qis=3, n_rows=200, n_sensitive=2, numeric=numeric
    )
    table = table_from_frame(frame, qis, hierarchies, sensitive)
    t = float(rng.uniform(0.1, 0.4))

    def models():  # type: ignore[no-untyped-def]
        return [KAnonymity(3), TCloseness(t)] if with_k else [TCloseness(t)]

    ola = fit(table, models(), limit, "ola", metric="dm_star" if seed % 2 else "prec")
    exhaustive = fit(table, models(), limit, "exhaustive", metric="dm_star" if seed % 2 else "prec")
    assert ola.node == exhaustive.node and ola.search.objective == exhaustive.search.objective
    qualifying = qualifying_nodes(table, models(), limit)
    assert (ola.node is None) == (not qualifying)
    assert ola.search.algorithm == "ola"
    assert ola.search.extra.get("search") == (None if limit == 0 else "best-first")


@pytest.fixture(scope="module")
def adult_sensitive(adult_engine: MemoryEngine):  # type: ignore[no-untyped-def]
    cfg = load_config(ADULT_DIR / "adult.yaml")
    table, _ = build_frequency_table(adult_engine, cfg.schema, cfg.schema.sensitive)
    return cfg.schema, table


def test_adult_k5_t02_no_suppression_ola_equals_exhaustive(adult_sensitive) -> None:  # type: ignore[no-untyped-def]
    schema, table = adult_sensitive
    models = [KAnonymity(5), TCloseness(0.2)]
    ola = Anonymizer(schema, models, max_suppression=0.0).fit_table(table)
    exhaustive = Anonymizer(schema, models, max_suppression=0.0, algorithm="exhaustive").fit_table(table)
    assert ola.search.algorithm == "ola"
    assert ola.node == exhaustive.node and ola.search.objective == exhaustive.search.objective
    assert ola.search.minimal_nodes == exhaustive.search.minimal_nodes


@pytest.mark.slow
@pytest.mark.parametrize(
    ("models", "limit", "metric"),
    [
        ([TCloseness(0.2)], 0.05, "prec"),
        ([KAnonymity(5), TCloseness(0.15)], 0.05, "dm_star"),
        ([KAnonymity(10), TCloseness(0.1, "equal")], 0.1, "entropy"),
    ],
)
def test_adult_with_suppression_equals_exhaustive(adult_sensitive, models, limit, metric) -> None:  # type: ignore[no-untyped-def]
    schema, table = adult_sensitive
    ola = Anonymizer(schema, models, max_suppression=limit, metric=metric).fit_table(table)
    exhaustive = Anonymizer(schema, models, max_suppression=limit, metric=metric, algorithm="exhaustive")
    exhaustive = exhaustive.fit_table(table)
    assert ola.search.extra["search"] == "best-first"
    assert ola.node == exhaustive.node and ola.search.objective == exhaustive.search.objective


# ------------------------------------------------------------------ releases


def t_of_release(release: pd.DataFrame, sensitive: list[str]) -> float:
    """Our largest EMD over the classes of a release, with the release's own distribution as Q."""
    flat = [Hierarchy([(v, "*") for v in sorted(release[q].astype(str).unique())], q) for q in ADULT_QIS]
    table = table_from_frame(release, ADULT_QIS, flat, sensitive)
    classes = Evaluator(table).classes(table.lattice.bottom)
    return max(float(d.max()) for d in TCloseness(1.0).measure(classes, table).values())


# the run's warnings that contradict its headline, acknowledged (issue 33)
_KEPT = ("kept-column-identifying",)
_KEPT_SUPPRESSED = ("kept-column-identifying", "subgroup-suppressed")


@pytest.mark.parametrize(("t", "limit", "accepted"), [(0.15, 0.0, _KEPT), (0.1, 0.05, _KEPT_SUPPRESSED)])
def test_cli_release_passes_pycanon(
    tmp_path: Path, t: float, limit: float, accepted: tuple[str, ...]
) -> None:
    from pycanon import anonymity

    sensitive = ["capital-gain", "hours-per-week"]
    config = adult_subset_config(
        tmp_path, 1500, sensitive, f"{{k-anonymity: {{k: 5}}, t-closeness: {{t: {t}}}}}", limit
    )
    proc = run_cli(config, tmp_path / "out", *(a for code in accepted for a in ("--accept-warning", code)))
    assert proc.returncode == 0, proc.stderr
    release = pd.read_csv(tmp_path / "out" / "release.csv")
    theirs = anonymity.t_closeness(release, ADULT_QIS, sensitive)  # ordered EMD for numeric columns
    assert anonymity.k_anonymity(release, ADULT_QIS) >= 5
    # Same definition as ours when Q is the release's own distribution:
    assert theirs == pytest.approx(t_of_release(release, sensitive), abs=1e-9)
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    achieved = report["privacy_achieved"]["t-closeness"]["max"]
    assert max(achieved.values()) <= t + 1e-9
    # the verifier's figures on the file: against the input (the model's) and against the release's
    # own distribution, which a recipient can recompute: pycanon's t (issue 33)
    rechecked = report["verification"]["checks"]["models"]["t-closeness"]["value"]
    assert max(rechecked["max_distance_to_release"].values()) == pytest.approx(theirs, abs=1e-9)
    for column, value in achieved.items():
        assert rechecked["max_distance_to_input"][column] == pytest.approx(value, abs=1e-9)
    if limit == 0:  # nothing suppressed: the release's distribution is the input's
        assert theirs <= t + 1e-9
        assert theirs == pytest.approx(max(achieved.values()), abs=1e-9)


def small_release(tmp_path: Path):  # type: ignore[no-untyped-def]
    privacy = "{k-anonymity: {k: 5}, t-closeness: {t: 0.12}}"
    config = adult_subset_config(tmp_path, 2000, ["hours-per-week", "capital-gain"], privacy, 0.05)
    cfg = load_config(config)
    engine = MemoryEngine(cfg.source)
    result = Anonymizer(cfg.schema, cfg.privacy, max_suppression=cfg.max_suppression).fit(engine)
    published = write_release(
        result, engine, tmp_path / "out", context=ReleaseContext(accepted_warnings=_KEPT_SUPPRESSED)
    )
    assert published.verification.passed
    return result, published


def test_tampered_release_is_rejected(tmp_path: Path) -> None:
    result, published = small_release(tmp_path)
    release = pd.read_csv(published.release, dtype=str, keep_default_na=False)
    expected = expectations_of(result, list(release.columns))
    key = release[ADULT_QIS].agg("|".join, axis=1)
    largest = key.value_counts().index[0]
    release.loc[key == largest, "hours-per-week"] = "99"  # every record of the class works 99 hours
    tampered = tmp_path / "tampered.csv"
    release.to_csv(tampered, index=False)
    verdict = verify_release(tampered, "csv", expected)
    assert not verdict.passed
    assert any("value '99' of column 'hours-per-week' occurs" in f for f in verdict.failures)
    # Permute the column so that the largest class holds the lowest values: every value keeps
    # its count (the reference check passes) and the EMD catches it.
    release = pd.read_csv(published.release, dtype=str, keep_default_na=False)
    inside = (key == largest).to_numpy()
    ordered = sorted(release["hours-per-week"], key=float)
    column = np.empty(len(release), dtype=object)
    column[inside] = ordered[: inside.sum()]
    column[~inside] = ordered[inside.sum() :]
    release["hours-per-week"] = column
    release.to_csv(tampered, index=False)
    verdict = verify_release(tampered, "csv", expected)
    assert not verdict.passed
    assert any("t-closeness (t = 0.12) fails on column 'hours-per-week'" in f for f in verdict.failures)


@pytest.mark.parametrize("kind", ["equal", "ordered", "hierarchical"])
def test_sql_verifier_agrees_with_the_model(tmp_path: Path, kind: str) -> None:
    """The verifier's EMD (Li et al.'s bottom-up form in SQL) equals the model's closed form."""
    rng = np.random.default_rng(7)
    frame, qis, hierarchies, _ = random_frame(rng, n_qis=2, n_rows=400, n_sensitive=0)
    tree = random_hierarchy(rng, 6, 2, "s")
    values = (
        list(tree.leaves)
        if kind == "hierarchical"
        else ([str(5 * i) for i in range(6)] if kind == "ordered" else [f"v{i}" for i in range(6)])
    )
    frame["s0"] = rng.choice(values, size=len(frame), p=rng.dirichlet(np.ones(6)))
    schema = Schema.from_attributes(
        [Attribute(q, Role.QUASI, h) for q, h in zip(qis, hierarchies, strict=True)]
        + [Attribute("s0", Role.SENSITIVE, tree if kind == "hierarchical" else None)]
    )
    model = TCloseness(1.0, kind)
    result = Anonymizer(schema, [model], max_suppression=0.0).fit(MemoryEngine(frame))
    bound = result.criterion.models[0]
    assert isinstance(bound, TCloseness)
    assert result.classes is not None
    largest = float(bound.measure(result.classes, result.table)["s0"].max())
    assert largest > 0
    path = tmp_path / "r.csv"
    frame[[*qis, "s0"]].assign(
        **{q: frame[q].map(h.mapping(lv)) for q, h, lv in zip(qis, hierarchies, result.node, strict=True)}
    ).to_csv(path, index=False)
    params = bound.verification_params(result.table)
    con = duckdb.connect()
    rel = f"read_csv('{path}', all_varchar=true, header=true)"
    group = ", ".join(f'CAST("{q}" AS VARCHAR)' for q in qis)
    assert check_t_closeness(con, rel, group, {**params, "t": largest + 1e-7}) == []
    failures = check_t_closeness(con, rel, group, {**params, "t": largest - 1e-7})
    assert len(failures) == 1 and f"distance {largest:.6g} ({kind})" in failures[0]
    con.close()


def test_report_states_the_distances_and_the_achieved_t(tmp_path: Path) -> None:
    _, published = small_release(tmp_path)
    achieved = published.report["privacy_achieved"]["t-closeness"]
    assert achieved["distance"] == {"hours-per-week": "ordered", "capital-gain": "ordered"}
    assert 0 < max(achieved["max"].values()) <= 0.12 + 1e-9
    assert math.isfinite(achieved["max"]["capital-gain"])


def test_example_configs_load() -> None:
    for name, model in (("adult-l-diversity.yaml", LDiversity), ("adult-t-closeness.yaml", TCloseness)):
        cfg = load_config(ADULT_DIR / name)
        assert [type(m) for m in cfg.privacy] == [KAnonymity, model]
        assert cfg.schema.sensitive == ["capital-gain", "capital-loss", "hours-per-week"]


@pytest.mark.parametrize("seed", range(3))
def test_best_first_search_equals_exhaustive_for_a_monotone_criterion(seed: int) -> None:
    """Best-first search assumes no monotonicity of the criterion: exact for monotone ones too."""
    rng = np.random.default_rng(300 + seed)
    frame, qis, hierarchies, sensitive = random_frame(rng, n_qis=3, n_rows=200)
    table = table_from_frame(frame, qis, hierarchies, sensitive)
    schema = Schema.from_attributes(
        [Attribute(q, Role.QUASI, h) for q, h in zip(qis, hierarchies, strict=True)]
        + [Attribute(s, Role.SENSITIVE) for s in sensitive]
    )
    for models in ([KAnonymity(4)], [KAnonymity(2), TCloseness(0.3)], [LDiversity(2)]):
        evaluator = Evaluator(table)
        criterion = PrivacyCriterion([m.bind(schema) for m in models], 0.1)
        ctx = SearchContext(table, evaluator, criterion, make_metric("entropy", evaluator))
        best_first = BestFirstOLA().run(ctx)
        exhaustive = fit(table, models, 0.1, "exhaustive", metric="entropy")
        assert best_first.extra["search"] == "best-first"
        assert best_first.node == exhaustive.node
        assert best_first.objective == exhaustive.search.objective
