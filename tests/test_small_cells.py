"""Small-cell suppression against a population table (Jiang et al. 2022 §4.3)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from safeshare.config.algorithms import make_strategy
from safeshare.core.evaluation import Classes, Evaluator
from safeshare.core.frequency import FrequencyTable
from safeshare.data.engines.base import COUNT_COLUMN
from safeshare.data.engines.memory import MemoryEngine
from safeshare.data.schema import Attribute, Role, Schema
from safeshare.errors import ConfigError, DataError, InputError, VerificationError
from safeshare.hierarchy.hierarchy import Hierarchy
from safeshare.metrics.loss import make_metric
from safeshare.models import KAnonymity, PrivacyCriterion
from safeshare.models.registry import make_model
from safeshare.models.small_cells import SmallCells
from safeshare.risk.small_cells import PopulationCells, read_population
from safeshare.search.context import SearchContext
from safeshare.workflows.anonymizer import Anonymizer, build_frequency_table
from safeshare.workflows.publish import write_release
from tests.conftest import TamperingEngine, first_record, generalized_frame, random_hierarchy
from tests.test_ola import BruteForce

AGE = Hierarchy([(str(a), f"{a // 10 * 10}s", "*") for a in range(20, 60)], "age")


@pytest.fixture()
def known(tmp_path: Path) -> tuple[MemoryEngine, Schema, Path, pd.DataFrame]:
    """Population: 20s: 30 people (ages 20-24 x 6), 30s: 8 people, 40s: 15 people (age 40 only)."""
    ages = [str(20 + i % 5) for i in range(30)] + [str(30 + i) for i in range(8)] + ["40"] * 15
    population = pd.DataFrame({"age": ages, "sex": ["f", "m"] * (len(ages) // 2) + ["f"] * (len(ages) % 2)})
    path = tmp_path / "population.csv"
    population.to_csv(path, index=False)
    sample = population.iloc[::2].reset_index(drop=True).assign(dx="x")
    schema = Schema.from_attributes(
        [
            Attribute("age", Role.QUASI, AGE),
            Attribute("sex", Role.INSENSITIVE),
            Attribute("dx", Role.SENSITIVE),
        ]
    )
    return MemoryEngine(sample), schema, path, population


def test_known_population_groups(known: tuple[MemoryEngine, Schema, Path, pd.DataFrame]) -> None:
    engine, schema, path, population = known
    table, _ = build_frequency_table(engine, schema, ())
    model = SmallCells(path)
    ev = Evaluator(table)
    for node in table.lattice.nodes():
        classes = ev.classes(node)
        frame = generalized_frame(table, node)
        pop = pd.DataFrame(
            {
                q: [h.generalize(v, lv) for v in population[q]]
                for q, h, lv in zip(table.qi_names, table.hierarchies, node, strict=True)
            }
        )
        pop_counts = pop.groupby(list(table.qi_names)).size().to_dict()
        sample_keys = frame.groupby(list(table.qi_names)).size()
        expected_suppressed = sum(n for key, n in sample_keys.items() if pop_counts.get(key, 0) < 11)
        assert model.failing_records(classes, table) == expected_suppressed, node
    # single ages: groups of 6 or fewer, except 40 (15); by decade: the 30s (8 people) are
    # suppressed, the 20s and 40s kept, within the limit and with less loss than the top
    result = Anonymizer(schema, [SmallCells(path)], max_suppression=0.2).fit(engine)
    assert result.found
    assert result.suppressed_records == 4  # the sample's 4 records in their 30s
    assert dict(result.levels) == {"age": 1}


def random_population_table(rng: np.random.Generator, tmp: Path) -> tuple[FrequencyTable, Path]:
    hierarchies, pop = [], {}
    n_pop = int(rng.integers(10, 200))
    for j in range(int(rng.integers(1, 4))):
        h = random_hierarchy(rng, int(rng.integers(1, 5)), int(rng.integers(1, 3)), f"q{j}")
        hierarchies.append(h)
        pop[f"q{j}"] = rng.choice(list(h.leaves), size=n_pop)
    population = pd.DataFrame(pop)
    path = tmp / f"pop{rng.integers(1 << 30)}.csv"
    population.to_csv(path, index=False)
    sample = population.sample(frac=float(rng.uniform(0.1, 1.0)), random_state=int(rng.integers(1 << 30)))
    if len(sample) == 0:
        sample = population.iloc[:1]
    names = list(pop)
    grouped = sample.groupby(names, sort=False).size().reset_index(name="__count__")
    from safeshare.data.engines.base import COUNT_COLUMN

    grouped = grouped.rename(columns={"__count__": COUNT_COLUMN})
    return FrequencyTable.from_grouped(grouped, names, hierarchies), path


@given(
    seed=st.integers(0, 2**32 - 1),
    min_size=st.sampled_from([2, 5, 11]),
    k=st.sampled_from([None, 2]),
    limit=st.sampled_from([0.0, 0.1, 0.4]),
    metric=st.sampled_from(["prec", "dm_star"]),
)
@settings(max_examples=30, deadline=None)
def test_ola_with_small_cells_equals_brute_force(
    tmp_path_factory: pytest.TempPathFactory,
    seed: int,
    min_size: int,
    k: int | None,
    limit: float,
    metric: str,
) -> None:
    rng = np.random.default_rng(seed)
    table, path = random_population_table(rng, tmp_path_factory.mktemp("pop"))
    population = pd.read_csv(path, dtype=str, keep_default_na=False)
    models: list[object] = [SmallCells(path, min_size)]
    if k is not None:
        models.insert(0, KAnonymity(k))
    ev = Evaluator(table)
    result = make_strategy("ola").run(
        SearchContext(table, ev, PrivacyCriterion(models, limit), make_metric(metric, ev))  # type: ignore[arg-type]
    )
    cap = math.floor(limit * table.n_records + 1e-9)
    brute = BruteForce(table, (1,))
    qualifying = set()
    for node in table.lattice.nodes():
        frame = generalized_frame(table, node)
        pop = pd.DataFrame(
            {
                q: [h.generalize(v, lv) for v in population[q]]
                for q, h, lv in zip(table.qi_names, table.hierarchies, node, strict=True)
            }
        )
        pop_counts = pop.groupby(list(table.qi_names)).size().to_dict()
        sizes = frame.groupby(list(table.qi_names)).size()
        bad = sum(n for key, n in sizes.items() if pop_counts.get(key, 0) < min_size or n < (k or 1))
        if bad <= cap:
            qualifying.add(node)
    best = min((brute.loss(metric, n) for n in qualifying), default=None)
    if best is None:
        assert result.node is None
    else:
        assert result.node in qualifying
        assert result.objective == pytest.approx(best, rel=1e-12, abs=1e-9)


def test_release_verified_and_tampering_caught(
    known: tuple[MemoryEngine, Schema, Path, pd.DataFrame], tmp_path: Path
) -> None:
    engine, schema, path, _ = known
    result = Anonymizer(schema, [SmallCells(path)], max_suppression=0.2).fit(engine)
    published = write_release(result, engine, tmp_path / "ok")
    assert published.verification.passed
    assert "30s" not in set(pd.read_csv(published.release, dtype=str)["age"])
    with pytest.raises(VerificationError, match="small-cells: 1 released class"):
        write_release(result, TamperingEngine(engine, first_record("age", "30s")), tmp_path / "bad")
    assert not (tmp_path / "bad").exists()


def test_config_and_bad_population(
    known: tuple[MemoryEngine, Schema, Path, pd.DataFrame], tmp_path: Path
) -> None:
    engine, schema, path, _ = known
    model = make_model("small-cells", {"population": str(path)})
    assert isinstance(model, SmallCells) and model.min_size == 11
    for params, match in [({}, "missing population"), ({"population": "p.csv", "min_size": 0}, "min_size")]:
        with pytest.raises(ConfigError, match=match):
            make_model("small-cells", params)
    bad = tmp_path / "bad.csv"
    pd.DataFrame({"age": ["20", "99"], "sex": ["f", "m"]}).to_csv(bad, index=False)
    with pytest.raises(DataError, match="value '99' of column 'age' is not in its hierarchy"):
        Anonymizer(schema, [SmallCells(bad)], max_suppression=0.2).fit(engine)
    pd.DataFrame({"sex": ["f"]}).to_csv(bad, index=False)
    with pytest.raises(DataError, match="no column 'age'"):
        Anonymizer(schema, [SmallCells(bad)], max_suppression=0.2).fit(engine)
    with pytest.raises(InputError, match="not found"):
        Anonymizer(schema, [SmallCells(tmp_path / "nope.csv")], max_suppression=0.2).fit(engine)


def test_cli_population_path_is_relative_to_the_config(
    known: tuple[MemoryEngine, Schema, Path, pd.DataFrame], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.conftest import run_cli

    engine, _, _, population = known
    work = tmp_path / "work"
    (work / "pop").mkdir(parents=True)
    population.to_csv(work / "pop" / "population.csv", index=False)
    engine.frame.to_csv(work / "sample.csv", index=False)
    (work / "age.csv").write_text("\n".join(";".join(r) for r in AGE.rows) + "\n")
    (work / "c.yaml").write_text(
        "input: {path: sample.csv}\n"
        "attributes: {age: {role: quasi, hierarchy: age.csv}}\n"
        "default_role: insensitive\n"
        "privacy: {small-cells: {population: pop/population.csv}}\n"
        "max_suppression: 0.2\n"
    )
    code, _, err = run_cli(
        ["anonymize", str(work / "c.yaml"), "--out", str(tmp_path / "out"), "--quiet"], capsys
    )
    assert code == 0, err
    release = pd.read_csv(tmp_path / "out" / "release.csv", dtype=str)
    assert set(release["age"]) == {"20s", "40s"}


def test_min_size_boundary_and_the_smallest_released_group(
    known: tuple[MemoryEngine, Schema, Path, pd.DataFrame],
) -> None:
    """Population groups at the bottom: ages 20-24: 6 each, 30-37: 1 each, 40: 15."""
    engine, schema, path, _ = known
    table, _ = build_frequency_table(engine, schema, ())
    bottom = Evaluator(table).classes((0,))
    used = bottom.sizes > 0
    # min_size = 6 keeps the groups of exactly 6 and 15, suppresses those of 1
    six = SmallCells(path, min_size=6)
    assert six.achieved(bottom, table, six.acceptable(bottom, table)) == {"smallest_population_group": 6}
    assert six.failing_records(bottom, table) == 4
    assert SmallCells(path, min_size=7).failing_records(bottom, table) == 4 + 15
    assert SmallCells(path, min_size=1).failing_records(bottom, table) == 0
    # the smallest group among the released, non-empty classes only (sample classes of size 1 count)
    assert six.achieved(bottom, table, used) == {"smallest_population_group": 1}
    # an unused class slot (size 0, population group 0) is never counted, even if marked released
    sparse = Classes(bottom.node, np.append(bottom.sizes, 0.0), bottom.n_records, row_class=bottom.row_class)
    everything = np.ones(len(sparse.sizes), dtype=bool)
    assert six.achieved(sparse, table, everything) == {"smallest_population_group": 1}
    assert six.achieved(bottom, table, np.zeros_like(used)) == {"smallest_population_group": None}
    assert six.params() == {"population": str(path), "min_size": 6, "delimiter": ","}
    for bad in (0, -1, True, 1.5, "11"):
        with pytest.raises(InputError, match="min_size"):
            SmallCells(path, min_size=bad)  # type: ignore[arg-type]


def test_population_cells_are_read_once_per_table(
    known: tuple[MemoryEngine, Schema, Path, pd.DataFrame],
) -> None:
    engine, schema, path, _ = known
    table, _ = build_frequency_table(engine, schema, ())
    other, _ = build_frequency_table(engine, schema, ())
    model = SmallCells(path)
    first = model.cells(table)
    assert model.cells(table) is first and first.table is table
    assert model.cells(other).table is other


def test_population_file_delimiter_is_used(
    known: tuple[MemoryEngine, Schema, Path, pd.DataFrame], tmp_path: Path
) -> None:
    engine, schema, path, population = known
    semicolons = tmp_path / "population-semicolons.csv"
    population.to_csv(semicolons, index=False, sep=";")
    table, _ = build_frequency_table(engine, schema, ())
    classes = Evaluator(table).classes((1,))
    expected = SmallCells(path).failing_records(classes, table)
    assert expected == 4  # the sample's 30s
    assert SmallCells(semicolons, delimiter=";").failing_records(classes, table) == expected


# ------------------------------------------------------------ the measure: population group sizes
def test_read_population_keeps_values_as_text(tmp_path: Path) -> None:
    """Values are text as written ("NA", "null", "007" are values, not missing or numbers); the
    delimiter defaults to a comma; a file with one record is read, a header alone refused."""
    path = tmp_path / "population.csv"
    path.write_text("v,w,x\nNA,007,1\nnull,010,2\n")
    frame = read_population(path, ("w", "v"))
    assert list(frame.columns) == ["w", "v"]
    assert frame.values.tolist() == [["007", "NA"], ["010", "null"]]
    path.write_text("v\nNA\n")
    assert read_population(path, ("v",)).values.tolist() == [["NA"]]
    path.write_text("v\n")
    with pytest.raises(DataError, match="no records"):
        read_population(path, ("v",))


def test_population_group_sizes_of_every_class() -> None:
    """The sample has a, b and z; the population a x 2, b x 3 and y x 5 (a value the sample
    lacks, generalized to "*" with the others) and no z: at the bottom the classes' population
    groups are 2, 3 and 0; at the top, everyone."""
    own = Hierarchy([("a", "*"), ("b", "*"), ("z", "*")], "v")
    full = Hierarchy([("a", "*"), ("b", "*"), ("y", "*"), ("z", "*")], "v")
    grouped = pd.DataFrame({"v": ["z", "b", "a"], COUNT_COLUMN: [1, 2, 1]})
    table = FrequencyTable.from_grouped(grouped, ["v"], [own])
    population = pd.DataFrame({"v": ["y", "a", "b", "y", "b", "y", "a", "y", "b", "y"]})
    cells = PopulationCells(table, population, hierarchies=[full])
    assert int(cells.counts.sum()) == 10
    ev = Evaluator(table)
    bottom = ev.classes((0,))
    sizes = cells.class_population_sizes(bottom)
    assert sizes.dtype == np.int64
    by_value = {v: int(sizes[bottom.row_class[r]]) for r, v in enumerate(["z", "b", "a"])}
    assert by_value == {"a": 2, "b": 3, "z": 0}
    assert sizes[bottom.sizes == 0].tolist() == [0] * int((bottom.sizes == 0).sum())
    top = ev.classes((1,))
    assert cells.class_population_sizes(top)[top.row_class].tolist() == [10, 10, 10]
