"""The release report (report.json, report.html): it shows only what the release holds.

Every value or label the report shows must come from the released classes, never from the
hierarchy, the input or suppressed records; no absolute local path; every value escaped in
the HTML; warnings for uninformative QIs and weak epsilon-safe parameters; every column's
role and treatment; the achieved l, t and m in the HTML.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from markupsafe import escape

from safeshare.config.spec import AnonymizationSpec
from safeshare.data.engines.memory import MemoryEngine
from safeshare.data.schema import Attribute, Role, Schema
from safeshare.dp.epsilon_safe import EpsilonSafeParams
from safeshare.hierarchy.hierarchy import Hierarchy
from safeshare.models.k_anonymity import KAnonymity
from safeshare.report.content import describe_search, report_warnings
from safeshare.report.html import render_report
from safeshare.workflows.epsilon_safe import EpsilonSafeAnonymizer
from safeshare.workflows.publish import write_release
from tests.conftest import run_cli

SCRIPT = "<script>alert(1)</script>"
COUNTRIES = [
    ("Aland", "Europe"),
    ("Bhutan", "Asia"),
    ("Trinadad&Tobago", "Caribbean"),  # in the input, every record suppressed
    ("Narnia", "Fiction"),  # in the hierarchy only
    (SCRIPT, "Web"),  # released: must come out escaped
]
#: labels that must appear nowhere in the reports: suppressed records' and hierarchy-only labels
ABSENT = ["Trinadad", "Tobago", "Caribbean", "Narnia", "Fiction", "age-unused", "band-unused"]


def _records() -> pd.DataFrame:
    rows: list[tuple[str, str, str]] = []
    for country in ("Aland", "Bhutan"):
        for age in ("25", "35"):
            rows += [(age, country, ["flu", "cold", "asthma"][i % 3]) for i in range(10)]
    rows += [("25", "Trinadad&Tobago", "flu"), ("25", "Trinadad&Tobago", "cold")]
    rows += [("35", SCRIPT, ["flu", "cold", "asthma"][i % 3]) for i in range(5)]
    frame = pd.DataFrame(rows, columns=["age", "country", "diagnosis"])
    frame.insert(0, "name", [f"person{i}" for i in range(len(frame))])
    return frame


def write_project(root: Path, privacy: str = "k-anonymity: {k: 3}", max_suppression: float = 0.05) -> Path:
    """A config in ``root/cfg`` with its data in ``cfg/data`` and hierarchies in ``cfg/h``."""
    cfg = root / "cfg"
    (cfg / "data").mkdir(parents=True)
    (cfg / "h").mkdir()
    _records().to_csv(cfg / "data" / "records.csv", index=False)
    ages = ["25;20-29;*", "35;30-39;*", "age-unused;band-unused;*"]
    (cfg / "h" / "age.csv").write_text("\n".join(ages) + "\n")
    lines = [f"{c};{region};*" for c, region in COUNTRIES]
    (cfg / "h" / "country.csv").write_text("\n".join(lines) + "\n")
    (cfg / "cfg.yaml").write_text(
        "input: {path: data/records.csv}\n"
        "attributes:\n"
        "  name: {role: identifying}\n"
        "  age: {role: quasi, hierarchy: h/age.csv}\n"
        "  country: {role: quasi, hierarchy: h/country.csv}\n"
        "  diagnosis: {role: sensitive}\n"
        f"privacy:\n  {privacy}\n"
        f"max_suppression: {max_suppression}\n"
        "output: {format: csv}\n"
    )
    return cfg / "cfg.yaml"


def anonymize(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], *extra: str, **project: Any
) -> tuple[dict[str, Any], str, pd.DataFrame, str]:
    """Run ``safeshare anonymize``; returns (report.json, report.html, release, stdout)."""
    config = write_project(tmp_path, **project)
    out = tmp_path / "out"
    code, stdout, stderr = run_cli(["anonymize", str(config), "--out", str(out), *extra], capsys)
    assert code == 0, stderr
    report = json.loads((out / "report.json").read_text())
    page = (out / "report.html").read_text()
    release = pd.read_csv(out / "release.csv", dtype=str, keep_default_na=False)
    return report, page, release, stdout


def _flat(terminal: str) -> str:
    """The terminal summary's text with the table's borders and line breaks removed."""
    return re.sub(r"[│\s]+", " ", terminal)


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield str(k)
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


# --------------------------------------------------------------------------- values: from the release only


@pytest.mark.parametrize("engine", ["memory", "duckdb"])
def test_suppressed_and_hierarchy_only_labels_appear_nowhere(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], engine: str
) -> None:
    report, page, release, _ = anonymize(tmp_path, capsys, "--engine", engine)
    assert report["engine"] == engine
    assert report["levels"] == {"age": 0, "country": 0}
    assert report["suppressed_records"] == 2  # the two Trinadad&Tobago records
    assert "Trinadad&Tobago" not in set(release["country"])
    text = json.dumps(report, ensure_ascii=False)
    for label in ABSENT:
        assert label not in text, label
        assert label not in page and escape(label) not in page, label
    # label counts and examples: the release's distinct values, read back independently
    for g in report["generalization"]:
        values = release[g["qi"]].value_counts()
        assert g["labels"] == release[g["qi"]].nunique(), g
        assert set(g["examples"]) <= set(values.index), g
        assert g["example_records"] == [int(values[v]) for v in g["examples"]], g


def test_reports_hold_no_absolute_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report, page, _, _ = anonymize(tmp_path, capsys)
    assert report["config"] == "cfg.yaml"
    assert report["input"] == "data/records.csv"  # relative to the config's directory
    absolute = [s for s in _strings(report) if s.startswith("/") or s[1:3] in (":\\", ":/")]
    assert absolute == []
    for text in (json.dumps(report), page):
        for where in (tmp_path, tmp_path.resolve(), Path.cwd(), Path.home()):
            assert str(where) not in text


def test_every_value_is_escaped_in_the_html(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report, page, release, _ = anonymize(tmp_path, capsys)
    assert SCRIPT in set(release["country"])  # released, so the report may show it...
    assert any(SCRIPT in g["examples"] for g in report["generalization"])
    assert "<script" not in page  # ...escaped
    assert escape(SCRIPT) in page


def test_render_escapes_every_field() -> None:
    hostile = "<img src=x onerror=alert(1)>"
    doc = {
        "verified": True,
        "created": hostile,
        "engine": hostile,
        "input": hostile,
        "config": hostile,
        "algorithm": hostile,
        "records_in": 10,
        "suppressed_records": 0,
        "records_out": 10,
        "equivalence_classes": 2,
        "min_class_size": 5,
        "privacy": {"models": {hostile: {hostile: hostile}}, "max_suppression": 0.0},
        "generalization": [
            {
                "qi": hostile,
                "level": 1,
                "height": 2,
                "labels": 1,
                "examples": [hostile],
                "example_records": [10],
            }
        ],
        "columns": [{"name": hostile, "role": "quasi", "treatment": "generalized"}],
        "warnings": [hostile],
        "verification": {"passed": True, "failures": [hostile]},
        "elapsed_s": {hostile: 0.1},
    }
    page = render_report(doc)
    assert "<img" not in page
    assert page.count(escape(hostile)) >= 8


# --------------------------------------------------------------------------- columns, warnings, search


def test_every_column_has_its_role_and_treatment(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report, page, _, _ = anonymize(tmp_path, capsys)
    assert report["columns"] == [
        {"name": "name", "role": "identifying", "treatment": "dropped"},
        {"name": "age", "role": "quasi", "treatment": "generalized"},
        {"name": "country", "role": "quasi", "treatment": "generalized"},
        {"name": "diagnosis", "role": "sensitive", "treatment": "kept"},
    ]
    section = page[page.index("Columns") :]
    for name, treatment in (("name", "dropped"), ("diagnosis", "kept"), ("country", "generalized")):
        assert f"<td>{name}</td>" in section and treatment in section


def test_render_uses_the_columns_key_when_present() -> None:
    doc = {"columns": [{"name": "zzcol", "role": "insensitive", "treatment": "kept"}]}
    page = render_report(doc)
    assert "zzcol" in page and "insensitive" in page


def test_qi_generalized_to_its_top_level_is_warned(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report, page, _, stdout = anonymize(tmp_path, capsys, max_suppression=0.0)
    assert report["levels"]["country"] == 2  # top: the only way to keep Trinadad&Tobago's records
    assert report["suppressed_records"] == 0
    warned = [w["message"] for w in report["warnings"] if "country" in w["message"]]
    assert len(warned) == 1 and "top level" in warned[0] and "drop" in warned[0]
    assert [(w["code"], w["columns"], w["value"]) for w in report["warnings"]] == [
        ("uninformative-qi", ["country"], 2)
    ]
    assert not any("'age'" in w["message"] for w in report["warnings"])
    assert escape(warned[0]) in page
    assert "top level" in _flat(stdout)


def test_no_warning_without_cause(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report, page, _, _ = anonymize(tmp_path, capsys)
    assert report["warnings"] == []
    assert report["certificate"]["warnings"] == []
    assert '<h2 id="warnings">' not in page  # no Warnings section
    # the certificate lists every warning of the run (issue 33): here, none
    assert "Warnings of this run (0)</h3>" in page and "The run raised no warning." in page


def test_best_first_search_reports_what_it_did_not_zero_minimal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    privacy = "k-anonymity: {k: 3}\n  l-diversity: {l: 2, variant: entropy}"
    report, page, release, stdout = anonymize(tmp_path, capsys, privacy=privacy)
    assert report.get("search") == "best-first"
    assert report["minimal_nodes"] is None
    flat = _flat(stdout)
    assert "0 minimal" not in flat and "minimal" not in flat
    assert "best-first" in flat
    assert "minimal qualifying" not in page and "best-first" in page
    # the achieved l is in the HTML, equal to the release's smallest exp(entropy) per class
    achieved = report["privacy_achieved"]["l-diversity"]["min"]["diagnosis"]
    qis = list(report["levels"])
    shares = release.groupby(qis)["diagnosis"].value_counts(normalize=True)
    entropy = (-(shares * shares.map(math.log))).groupby(level=list(range(len(qis)))).sum()
    assert achieved == pytest.approx(float(math.exp(entropy.min())))
    assert "l-diversity" in page and f"{achieved:.4g}" in page


def test_ola_search_sentence_counts_minimal_nodes() -> None:
    doc = {"algorithm": "ola", "checked_nodes": 12, "lattice_size": 30, "minimal_nodes": 4}
    assert describe_search(doc) == "ola: 12 of 30 lattice nodes checked, 4 minimal qualifying nodes compared"
    best_first = {**doc, "minimal_nodes": None, "search": "best-first", "exact_checks": 3}
    assert "minimal" not in describe_search(best_first)


# --------------------------------------------------------------------------- epsilon-safe


def _epsilon_safe_report(tmp_path: Path) -> tuple[dict[str, Any], str]:
    frame = _records()
    frame = pd.concat([frame] * 6, ignore_index=True)
    frame = frame[frame["country"].isin(["Aland", "Bhutan"])]
    age = Hierarchy([("25", "20-29", "*"), ("35", "30-39", "*")], "age")
    country = Hierarchy([("Aland", "Europe", "*"), ("Bhutan", "Asia", "*")], "country")
    schema = Schema.from_attributes(
        [
            Attribute("name", Role.IDENTIFYING),
            Attribute("age", Role.QUASI, age),
            Attribute("country", Role.QUASI, country),
            Attribute("diagnosis", Role.IDENTIFYING),
        ]
    )
    params = EpsilonSafeParams(beta=0.5, epsilon_prime=0.5, utility="linear", penalty=0.04, seed=3)
    engine = MemoryEngine(frame.reset_index(drop=True))
    spec = AnonymizationSpec(
        schema, (KAnonymity(5),), 0.05, algorithm="epsilon-safe", algorithm_options={"params": params}
    )
    fitted = EpsilonSafeAnonymizer(spec).fit(engine)
    published = write_release(fitted.result, fitted.engine, tmp_path / "dp")
    assert (published.report["k"], published.report["max_suppression"]) == (5, 0.05)
    return published.report, published.report_html.read_text()


def test_epsilon_safe_report_shows_its_parameters_and_warns_on_large_delta(tmp_path: Path) -> None:
    report, page = _epsilon_safe_report(tmp_path)
    n = report["records_before_sampling"]
    assert n == 240 and report["records_in"] == report["records_sampled"] < n
    assert report["delta"] > 1 / n
    assert any("1/N" in w["message"] and w["code"] == "delta-above-one-over-n" for w in report["warnings"])
    section = page[page.index("Differential privacy") :]
    for text in ("β", "ε", "δ", f"{n:,}", report["delta_scientific"], "records before sampling"):
        assert text in section, text
    assert "1/N" in page
    assert report["minimal_nodes"] is None and "minimal" not in page


def test_small_delta_is_not_warned() -> None:
    doc = {"algorithm": "epsilon-safe", "records_before_sampling": 1000, "delta": 1e-6, "log10_delta": -6.0}
    assert report_warnings(doc) == []
    assert any("1/N" in w.message for w in report_warnings({**doc, "delta": 0.01, "log10_delta": -2.0}))
