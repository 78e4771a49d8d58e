"""The risk section of every anonymize report (report.json ``risk``, the HTML section)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from safeshare.data.engines.memory import MemoryEngine
from safeshare.data.schema import Attribute, Role, Schema
from safeshare.errors import InputError
from safeshare.hierarchy.hierarchy import Hierarchy
from safeshare.models import KAnonymity
from safeshare.risk.classes import ClassSizeHistogram
from safeshare.risk.estimators import make_estimator
from safeshare.risk.report_risk import risk_section
from safeshare.workflows.anonymizer import Anonymizer
from safeshare.workflows.publish import write_release
from tests.conftest import run_cli, write_small_adult


def test_input_as_population_gives_exact_risks() -> None:
    doc = risk_section([1, 2, 3, 4], [3, 4], None)
    assert doc["population_size"] == 10
    inp, rel = doc["input"], doc["release"]
    assert inp["estimated"] is False and rel["estimated"] is False
    assert inp["B"] == pytest.approx(4 / 10) and inp["A"] == pytest.approx(4 / 10)
    assert inp["prosecutor"]["max"] == 1.0 and inp["journalist"]["max"] == 1.0
    # released classes are whole population classes: F = f, B = J/n over the release
    assert rel["n"] == 7 and rel["B"] == pytest.approx(2 / 7) and rel["A"] == pytest.approx(2 / 10)
    assert rel["prosecutor"]["max"] == pytest.approx(1 / 3) and rel["marketer"] == pytest.approx(2 / 7)


def test_configured_population_gives_estimates() -> None:
    sizes = np.array([1, 1, 1, 2, 2, 3, 5, 8])
    doc = risk_section(sizes, sizes[sizes >= 2], 1000)
    expected = make_estimator("pitman", n_bootstrap=0).fit(ClassSizeHistogram.from_sizes(sizes), 1000).B_
    assert doc["input"]["estimated"] is True
    assert doc["input"]["B"] == pytest.approx(expected)
    assert doc["input"]["journalist"] == {"mean": pytest.approx(expected)}
    assert doc["input"]["A"] == pytest.approx(8 / 1000)
    assert doc["release"]["A"] == pytest.approx(5 / 1000)
    assert "estimated" in doc["population"]


def test_the_sections_drivers_and_input_estimators_for_the_views() -> None:
    """The Risk screen's tables, in the section (issue 31): the drivers' contributions sum to B
    (exact: F = f, B = J/n), and the input's estimators are every class-size estimator's B on
    the input's classes, each equal to that estimator fitted independently here."""
    from safeshare.risk.release_risk import histogram_estimators

    sizes = np.array([1, 1, 1, 2, 2, 3, 5, 8])
    doc = risk_section(sizes, sizes[sizes >= 2], None)
    for name in ("input", "release"):
        drivers = doc[name]["drivers"]
        assert sum(d["contribution"] for d in drivers) == pytest.approx(doc[name]["B"])
        assert sum(d["records"] for d in drivers) == doc[name]["n"]
        assert all(d["F"] == d["f"] for d in drivers)
    rows = doc["input"]["estimators"]["rows"]
    assert [r["estimator"] for r in rows] == histogram_estimators()
    N = doc["population_size"]
    for row in rows:
        fitted = make_estimator(row["estimator"]).fit(ClassSizeHistogram.from_sizes(sizes), N)
        assert row["B"] == (None if fitted.B_ is None else pytest.approx(fitted.B_)), row
    estimated = risk_section(sizes, sizes[sizes >= 2], 1000)
    assert all(d["F"] is None for d in estimated["release"]["drivers"])
    # without F the contributions sum to the prosecutor mean J/n
    rel = estimated["release"]
    assert sum(d["contribution"] for d in rel["drivers"]) == pytest.approx(rel["classes"] / rel["n"])
    assert estimated["input"]["estimators"]["N"] == 1000


def test_empty_release_has_no_release_side() -> None:
    assert risk_section([1, 2], [], None)["release"] is None


@pytest.fixture()
def clinic() -> tuple[MemoryEngine, Schema]:
    age = Hierarchy([(str(a), f"{a // 10 * 10}s", "*") for a in range(20, 60)], "age")
    frame = pd.DataFrame({"age": [str(20 + (i * 7) % 40) for i in range(60)], "dx": ["x"] * 60})
    schema = Schema.from_attributes([Attribute("age", Role.QUASI, age), Attribute("dx", Role.SENSITIVE)])
    return MemoryEngine(frame), schema


def test_release_report_has_risk_side_by_side(clinic: tuple[MemoryEngine, Schema], tmp_path: Path) -> None:
    engine, schema = clinic
    result = Anonymizer(schema, [KAnonymity(3)], max_suppression=0.2).fit(engine)
    published = write_release(result, engine, tmp_path / "out", population_size=600)
    doc = json.loads(published.report_json.read_text())
    risk = doc["risk"]
    assert risk["population_size"] == 600
    assert risk["input"]["n"] == 60
    assert risk["release"]["n"] == published.verification.records_out
    assert risk["release"]["prosecutor"]["max"] <= 1 / 3
    assert risk["input"]["prosecutor"]["max"] == 1.0
    assert risk["release"]["B"] < risk["input"]["B"]
    html = published.report_html.read_text()
    assert "Re-identification risk" in html and "B estimated by pitman" in html
    with pytest.raises(InputError, match="population_size 10 is smaller"):
        write_release(result, engine, tmp_path / "bad", population_size=10)
    assert not (tmp_path / "bad").exists()


def test_cli_population_size_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    work = write_small_adult(tmp_path, n_train=400)
    config = work / "adult.yaml"
    config.write_text(config.read_text() + "\npopulation_size: 32561\n")
    # the run's warnings that contradict its headline, acknowledged (issue 33)
    accept = ["--accept-warning", "kept-column-identifying"]
    code, _, err = run_cli(
        ["anonymize", str(config), "--out", str(tmp_path / "out"), "--quiet", *accept], capsys
    )
    assert code == 0, err
    risk = json.loads((tmp_path / "out" / "report.json").read_text())["risk"]
    assert risk["population_size"] == 32561 and risk["input"]["estimated"] is True
    config.write_text(config.read_text().replace("population_size: 32561", "population_size: many"))
    code, _, err = run_cli(["anonymize", str(config), "--out", str(tmp_path / "out2"), "--quiet"], capsys)
    assert code == 2 and "population_size" in err
