"""The evidence section (issue 20): attack models in words, the threshold with its source,
the quasi-identifiers with their hierarchies and every released label, the verifier's checks
by name, and the SHA-256 of every file; built from explicit parameters."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pandas as pd
import pytest

from safeshare import Anonymizer, __version__
from safeshare.config import load_config
from safeshare.data.engines.memory import MemoryEngine
from safeshare.data.source import TableSource
from safeshare.hierarchy.builders import DateBuilder
from safeshare.verify import Expectations, Verification, verify_release
from safeshare.workflows.evidence import (
    PUBLIC_RELEASE_THRESHOLD,
    build_evidence,
    describe_hierarchy,
    hierarchy_files,
    released_labels,
)
from safeshare.workflows.publish import write_release
from safeshare.workflows.release import ReleaseContext, release_expectations
from tests.conftest import ADULT_DIR, run_cli, write_small_adult
from tests.identifier_helpers import TEST_KEY, TEST_KEY_BYTES, make_engine, release, visits, visits_schema


@pytest.fixture(scope="module")
def adult_release(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    cfg = load_config(ADULT_DIR / "adult.yaml")
    engine = MemoryEngine(cfg.source)
    result = Anonymizer(cfg.spec()).fit(engine)
    # the run's warnings that contradict its headline, acknowledged (issue 33): adult.yaml's
    acknowledged = ReleaseContext(accepted_warnings=tuple(cfg.accept_warnings))
    out = tmp_path_factory.mktemp("adult") / "out"
    published = write_release(result, engine, out, html=False, context=acknowledged)
    return {"cfg": cfg, "engine": engine, "result": result, "published": published}


def _adult_evidence(adult_release: dict[str, object], **overrides: object) -> object:
    cfg, engine, result, published = (adult_release[k] for k in ("cfg", "engine", "result", "published"))
    specs = {q: cfg.schema.hierarchy_spec(q) for q in cfg.schema.quasi_identifiers}  # type: ignore[attr-defined]
    table = result.table  # type: ignore[attr-defined]
    params = {
        "expected": release_expectations(result, engine.columns()),  # type: ignore[arg-type, attr-defined]
        "verification": published.verification,  # type: ignore[attr-defined]
        "hierarchies": {q: describe_hierarchy(s, ADULT_DIR) for q, s in specs.items()},
        "heights": {q: h.height for q, h in zip(table.qi_names, table.hierarchies, strict=True)},
        "levels": result.levels,  # type: ignore[attr-defined]
        "labels": released_labels(published.release, "csv", table.qi_names),  # type: ignore[attr-defined]
        "files": {
            "input": [ADULT_DIR / "adult.data"],
            "config": [ADULT_DIR / "adult.yaml"],
            "hierarchy": hierarchy_files(specs),
            "release": [published.release],  # type: ignore[attr-defined]
        },
        "version": __version__,
        "engine": "memory",
        "base": ADULT_DIR,
    }
    params.update(overrides)
    return build_evidence(**params)  # type: ignore[arg-type]


def test_adult_evidence_states_the_model_the_labels_the_checks_and_the_hashes(
    adult_release: dict[str, object],
) -> None:
    evidence = _adult_evidence(adult_release)
    published = adult_release["published"]
    released = pd.read_csv(published.release, dtype=str, keep_default_na=False)  # type: ignore[attr-defined]
    doc = evidence.to_dict()  # type: ignore[attr-defined]
    json.dumps(doc)  # plain data
    prosecutor, journalist, marketer = doc["attack_models"]
    assert [m["name"] for m in doc["attack_models"]] == ["prosecutor", "journalist", "marketer"]
    assert "knows that a given person is in the release" in prosecutor["adversary"]
    assert "age, workclass" in prosecutor["adversary"]
    assert (
        prosecutor["bounded"]
        and "at least k = 5 records" in prosecutor["guarantee"]
        and "1/5 = 0.2" in prosecutor["guarantee"]
    )
    assert journalist["bounded"] and "at most 1/5" in journalist["guarantee"]
    classes = released.groupby([q["name"] for q in doc["quasi_identifiers"]]).size()
    assert marketer["value"] == pytest.approx(len(classes) / len(released)) and not marketer["bounded"]
    assert prosecutor["value"] == pytest.approx(1 / classes.min())
    threshold = doc["threshold"]
    assert threshold["value"] == pytest.approx(0.2) and not threshold["public_release_figure"]
    assert "gave no reason" in threshold["source"] and "k >= 12" in threshold["source"]
    # every released label, in full (the 90+ band of age was once cut with "...")
    for qi in doc["quasi_identifiers"]:
        assert list(qi["labels"]) == sorted(set(released[qi["name"]]))
        assert not any("..." in label for label in qi["labels"])
    age = next(q for q in doc["quasi_identifiers"] if q["name"] == "age")
    assert (
        age["hierarchy"] == "file hierarchies/age.csv"
        and age["level"] == adult_release["result"].levels["age"]
    )  # type: ignore[attr-defined]
    result = adult_release["result"]
    age_hierarchy = result.table.hierarchies[result.table.qi_names.index("age")]  # type: ignore[attr-defined]
    assert age_hierarchy.generalize("90", age["level"]) in age["labels"]  # the oldest band is listed
    checks = {c["name"]: c for c in doc["verifier_checks"]}
    assert list(checks) == ["columns", "labels", "k-anonymity", "suppression"]
    assert all(c["passed"] for c in checks.values()) and doc["verified"]
    assert "at least k = 5 records" in checks["k-anonymity"]["requirement"]
    # every file named by a relative path; the hashes of the configuration and the release equal
    # hashlib's; the input's and the hierarchies' are not published (issue 30: they would confirm a
    # guess of a suppressed record), the ledger holds them
    roles = {f["role"] for f in doc["files"]}
    assert roles == {"input", "config", "hierarchy", "release"}
    assert sum(f["role"] == "hierarchy" for f in doc["files"]) == 9
    for f in doc["files"]:
        assert not Path(f["path"]).is_absolute() and ".." not in f["path"]
        # inside the configuration's folder by its relative path, elsewhere by its name (issue 30, 17)
        outside = f["role"] == "release"
        path = adult_release["published"].release if outside else (ADULT_DIR / f["path"]).resolve()  # type: ignore[attr-defined]
        assert f["path"] == (path.name if outside else f["path"])
        if f["role"] in ("input", "hierarchy"):
            assert f["sha256"] is None and f["bytes"] is None
            assert hashlib.sha256(path.read_bytes()).hexdigest() not in json.dumps(doc)
        else:
            assert (
                hashlib.sha256(path.read_bytes()).hexdigest() == f["sha256"]
                and path.stat().st_size == f["bytes"]
            )
    assert doc["software_version"] == __version__ and doc["engine"] == "memory" and doc["seeds"] == {}


def _verification(**changes: object) -> Verification:
    base = {
        "passed": True,
        "records_out": 100,
        "suppressed_records": 0,
        "min_class_size": 1,
        "equivalence_classes": 40,
        "failures": [],
        "checks": {"suppression_limit": 0},
    }
    base.update(changes)
    return Verification(**base)  # type: ignore[arg-type]


def _expected(models: dict[str, dict[str, object]], k: int = 1) -> Expectations:
    return Expectations(["a", "b"], ["a"], {"a": {"x"}}, 100, 0.0, k, models)  # type: ignore[arg-type]


def _risk_evidence(threshold: float, reason: str | None = None, **changes: object) -> object:
    models = {
        "risk": {"threshold": threshold, "measure": "B", "estimator": "pitman", "population_size": 5000}
    }
    return build_evidence(
        expected=_expected(models),
        verification=_verification(**changes),
        hierarchies={"a": "file a.csv"},
        heights={"a": 1},
        levels={"a": 0},
        labels={"a": ["x"]},
        files={},
        version="1",
        engine="duckdb",
        population_size=5000,
        risk_estimate=0.071,
        threshold_reason=reason,
        seeds={"epsilon_safe": 7},
    )


def test_the_public_release_threshold_names_its_source() -> None:
    evidence = _risk_evidence(PUBLIC_RELEASE_THRESHOLD).to_dict()  # type: ignore[attr-defined]
    threshold = evidence["threshold"]
    assert threshold["public_release_figure"] and threshold["reason"] is None
    assert "European Medicines Agency" in threshold["source"] and "Health Canada" in threshold["source"]
    prosecutor, journalist, marketer = evidence["attack_models"]
    # a risk-only release: the prosecutor's 1.0 is shown with its context, never alone
    assert not prosecutor["bounded"] and prosecutor["value"] == 1.0
    assert (
        "not bounded for each record" in prosecutor["guarantee"]
        and "bounds an average" in prosecutor["guarantee"]
    )
    assert (
        journalist["bounded"]
        and "B <= 0.09 (pitman, N = 5000; this release: 0.071)" in journalist["guarantee"]
    )
    assert marketer["bounded"] and marketer["value"] == 0.071
    assert [c["name"] for c in evidence["verifier_checks"]][-1] == "risk"
    assert "threshold = 0.09" in evidence["verifier_checks"][-1]["requirement"]
    assert evidence["seeds"] == {"epsilon_safe": 7}


def test_another_threshold_carries_the_custodians_reason() -> None:
    given = _risk_evidence(0.05, "  internal release to an accredited research environment ").to_dict()  # type: ignore[attr-defined]
    assert given["threshold"]["reason"] == "internal release to an accredited research environment"
    assert (
        given["threshold"]["source"] == "chosen by the custodian"
        and not given["threshold"]["public_release_figure"]
    )
    silent = _risk_evidence(0.2).to_dict()  # type: ignore[attr-defined]
    assert "gave no reason (threshold_reason)" in silent["threshold"]["source"]
    with_reason_public = _risk_evidence(0.09, "EMA Policy 0070").to_dict()  # type: ignore[attr-defined]
    assert with_reason_public["threshold"]["reason"] == "EMA Policy 0070"


def test_a_failed_check_is_named() -> None:
    evidence = _risk_evidence(
        0.09, passed=False, failures=["risk: B = 0.12 on the release, above the threshold 0.09"]
    ).to_dict()  # type: ignore[attr-defined]
    checks = {c["name"]: c["passed"] for c in evidence["verifier_checks"]}
    assert checks == {
        "columns": True,
        "labels": True,
        "k-anonymity": True,
        "suppression": True,
        "risk": False,
    }
    assert not evidence["verified"]


def test_identifier_evidence_has_neither_the_key_nor_its_fingerprint(tmp_path: Path) -> None:
    """Issue 30, item 6: the published fingerprint let a guessed key be checked offline (then every
    pseudonym inverted); the evidence names the columns, never the key or its fingerprint."""
    path = tmp_path / "visits.csv"
    visits(60).to_csv(path, index=False)
    schema = visits_schema()
    done = release(make_engine("memory", TableSource(path), schema), schema, tmp_path / "r.csv")
    table = done.result.table
    evidence = build_evidence(
        expected=done.expected,
        verification=done.verification,
        hierarchies={q: describe_hierarchy(schema.hierarchy_spec(q)) for q in table.qi_names},
        heights={q: h.height for q, h in zip(table.qi_names, table.hierarchies, strict=True)},
        levels=done.result.levels,
        labels=released_labels(done.path, "csv", table.qi_names),
        files={"input": [path], "release": [done.path]},
        version=__version__,
        engine="memory",
        base=tmp_path,
        identifiers=done.engine.identifiers.describe(),  # type: ignore[union-attr]
    ).to_dict()
    text = json.dumps(evidence)
    assert TEST_KEY_BYTES.hex() not in text and TEST_KEY.subkey(b"safeshare pseudonym v1").hex() not in text
    check = evidence["verifier_checks"][-1]
    assert check["name"] == "identifiers" and check["passed"]
    assert "recomputed from the key" in check["requirement"]
    assert TEST_KEY.fingerprint not in text and "fingerprint" not in evidence["identifiers"]
    assert TEST_KEY.fingerprint not in json.dumps(done.verification.to_dict())
    discharged = next(q for q in evidence["quasi_identifiers"] if q["name"] == "discharged")
    assert discharged["hierarchy"].startswith("dates (levels: month, quarter, year; format: %Y-%m-%d")
    assert [f["path"] for f in evidence["files"]] == ["visits.csv", "r.csv"]
    assert verify_release(done.path, "csv", done.expected).passed


def test_hierarchy_descriptions() -> None:
    assert describe_hierarchy(DateBuilder(levels=("year",))).startswith(
        "dates (levels: year; format: %Y-%m-%d"
    )
    from safeshare.hierarchy.hierarchy import Hierarchy

    assert describe_hierarchy(Hierarchy([("a", "*"), ("b", "*")])) == "table of 2 values, 1 levels above them"


def test_the_verifier_reads_the_released_labels_the_evidence_gives(
    adult_release: dict[str, object],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Issue 36: the verifier's one scan of the written release yields every QI's distinct labels
    (``Verification.labels``), equal to a scan of the file of its own (:func:`released_labels`),
    and the evidence takes them from there: a publication no longer reads the release a third
    time for its labels (a 1 GB CSV release: 3 s of CPU)."""
    published = adult_release["published"]
    table = adult_release["result"].table  # type: ignore[attr-defined]
    verification = published.verification  # type: ignore[attr-defined]
    assert verification.labels == released_labels(published.release, "csv", table.qi_names)  # type: ignore[attr-defined]
    assert "labels" not in verification.to_dict()  # report.json is unchanged
    import safeshare.workflows.release_evidence as module

    def no_scan(*args: object, **kwargs: object) -> None:
        raise AssertionError("the release was read again for its labels")

    monkeypatch.setattr(module, "released_labels", no_scan)
    work = write_small_adult(tmp_path)
    args = ["anonymize", str(work / "adult.yaml"), "--out", str(work / "out"), "-q"]
    # the run's warnings that contradict its headline, acknowledged (issue 33)
    code, _, err = run_cli([*args, "--accept-warning", "kept-column-identifying"], capsys)
    assert code == 0, err
    doc = json.loads((work / "out" / "report.json").read_text())["evidence"]
    monkeypatch.undo()
    release = next(Path(f["path"]) for f in doc["files"] if f["role"] == "release")
    release = release if release.is_absolute() else work / "out" / release.name
    expected = released_labels(release, "csv", table.qi_names)
    assert {q["name"]: list(q["labels"]) for q in doc["quasi_identifiers"]} == expected
