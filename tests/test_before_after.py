"""Utility before and after (issue 33): every category's records in the input and in the written
release, checked with pandas on the input file and on the release file (code independent of the
frequency table and DuckDB that produce them), and the ``subgroup-suppressed`` warning."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from safeshare import api
from safeshare.workflows.before_after import SMALL_CELL, column_before_after
from tests.conftest import ADULT_COLUMNS, ADULT_DIR

ADULT_YAML = ADULT_DIR / "adult.yaml"


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path]:
    out = tmp_path_factory.mktemp("ba") / "o"
    api.anonymize(ADULT_YAML, out)
    return json.loads((out / "report.json").read_text()), out


def test_every_column_matches_pandas_on_the_input_and_the_release(demo: tuple[dict[str, Any], Path]) -> None:
    report, out = demo
    data = pd.read_csv(
        ADULT_DIR / "adult.data", header=None, names=ADULT_COLUMNS, dtype=str, skipinitialspace=True
    )
    release = pd.read_csv(out / "release.csv", dtype=str, keep_default_na=False)
    by_column = {c["column"]: c for c in report["before_after"]["columns"]}
    level0 = [g["qi"] for g in report["generalization"] if g["level"] == 0]
    assert {"sex", "race", "native-country"} <= set(level0)
    checked = 0
    for name, col in by_column.items():
        before = data[name].value_counts()
        if col["skipped"]:
            assert before.size > 100
            continue
        total_before = sum(c["before"] for c in col["categories"]) + (col["small"] or {"before": 0})["before"]
        assert total_before == len(data) == report["records_in"]
        total_after = sum(c["after"] for c in col["categories"]) + (col["small"] or {"after": 0})["after"]
        assert total_after == report["records_out"]
        for cat in col["categories"]:
            assert cat["before"] == before[cat["value"]] >= SMALL_CELL
        if col["role"] != "quasi" or name in level0:  # released as the input's values
            after = release[name].value_counts()
            for cat in col["categories"]:
                assert cat["after"] == after.get(cat["value"], 0), (name, cat)
                checked += 1
    assert checked > 50


def test_the_demo_warns_that_rare_countries_lose_most_of_their_records(
    demo: tuple[dict[str, Any], Path],
) -> None:
    report, _ = demo
    flagged = report["before_after"]["flagged"]
    assert all(f["lost"] > 0.5 and f["before"] >= SMALL_CELL for f in flagged)
    dominican = next(f for f in flagged if f["value"] == "Dominican-Republic")
    assert (dominican["before"], dominican["after"]) == (70, 14)
    codes = [w for w in report["warnings"] if w["code"] == "subgroup-suppressed"]
    assert {w["columns"][0] for w in codes} == {f["column"] for f in flagged}
    assert report["suppressed_records"] / report["records_in"] < 0.05  # overall within the limit


def test_small_categories_are_pooled_and_never_named() -> None:
    col = column_before_after(
        "diagnosis", "sensitive", {"common": 500, "rare-a": 3, "rare-b": 10}, {"common": 480, "rare-b": 0}
    )
    assert [c.value for c in col.categories] == ["common"]
    assert col.small is not None and (col.small.before, col.small.after) == (13, 0)
    assert "rare" not in json.dumps(col.to_dict())
    many = column_before_after("x", "sensitive", {str(i): 20 for i in range(101)}, {})
    assert many.skipped is not None and not many.categories


def test_a_vanished_subgroup_is_warned_about_with_its_counts(tmp_path: Path) -> None:
    """A sex category whose records are all suppressed: the warning names its counts."""
    rows = [{"age": str(20 + i % 40), "sex": "M", "dx": "a" if i % 2 else "b"} for i in range(400)]
    rows += [{"age": str(20 + 7 * i), "sex": "F", "dx": "a"} for i in range(12)]  # 12 singletons
    pd.DataFrame(rows).to_csv(tmp_path / "d.csv", index=False)
    (tmp_path / "age.csv").write_text("".join(f"{a};*\n" for a in sorted({r["age"] for r in rows})))
    (tmp_path / "sex.csv").write_text("M;*\nF;*\n")
    (tmp_path / "c.yaml").write_text(
        "input: {path: d.csv}\n"
        "attributes:\n"
        "  age: {role: quasi, hierarchy: age.csv}\n"
        "  sex: {role: quasi, hierarchy: sex.csv}\n"
        "  dx: {role: sensitive}\n"
        "privacy: {k-anonymity: {k: 5}}\nmax_suppression: 0.05\nmetric: prec\n"
    )
    # the run's warnings that contradict its headline, acknowledged (issue 33): the very
    # warning this test is about
    release = api.anonymize(tmp_path / "c.yaml", tmp_path / "o", accept_warnings=["subgroup-suppressed"])
    assert [a["code"] for a in release.report["certificate"]["acknowledged"]] == ["subgroup-suppressed"]
    ba = release.report["before_after"]
    sex = next(c for c in ba["columns"] if c["column"] == "sex")
    female = next(c for c in sex["categories"] if c["value"] == "F")
    assert release.report["levels"] == {"age": 0, "sex": 0}  # the 12 women are within the 5 % limit
    assert (female["before"], female["after"], female["lost"]) == (12, 0, 1.0)
    assert any(
        w["code"] == "subgroup-suppressed" and "'F'" in w["message"] for w in release.report["warnings"]
    )
