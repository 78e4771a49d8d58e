"""The certificate's governance fields, its coverage table of the standards and its PDF (issue 33):
each row's status follows from the configuration and report.json, the HTML and the PDF show the
same figures and SHA-256 digests as report.json."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from safeshare import api
from safeshare.report.pdf import find_chromium
from safeshare.workflows.coverage import ITEMS, coverage
from tests.conftest import ADULT_DIR, run_cli

GOVERNANCE = """
governance:
  recipient: "Cardiology research unit"
  recipient_kind: external
  release_model: non-public
  invasiveness: medium
  threat_model:
    motives: "none known"
    capacity: "statisticians, no registry access"
    controls: "agreement, enclave, audit"
  review_date: 2027-06-01
  expiry_date: 2028-01-01
  second_reviewer: "A. Smith"
  credentials: "J. Doe, CIPP/C"
threshold_reason: "non-public release to a contracted recipient"
approved_by: "J. Doe"
"""


def _config(tmp_path: Path, extra: str = "") -> Path:
    """The bundled Adult example copied next to its data, with ``extra`` YAML appended."""
    text = (
        (ADULT_DIR / "adult.yaml")
        .read_text()
        .replace("path: adult.data", f"path: {ADULT_DIR / 'adult.data'}")
    )
    text = text.replace("hierarchies/", f"{ADULT_DIR / 'hierarchies'}/")
    path = tmp_path / "adult.yaml"
    path.write_text(text + extra)
    return path


@pytest.fixture(scope="module")
def governed(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path]:
    tmp = tmp_path_factory.mktemp("gov")
    out = tmp / "o"
    api.anonymize(_config(tmp, GOVERNANCE), out)
    return json.loads((out / "report.json").read_text()), out


def test_the_certificate_carries_the_governance_fields(governed: tuple[dict[str, Any], Path]) -> None:
    doc, _ = governed
    gov = doc["certificate"]["governance"]
    assert gov["recipient"] == "Cardiology research unit" and gov["release_model"] == "non-public"
    assert gov["threat_model"] == {
        "motives": "none known",
        "capacity": "statisticians, no registry access",
        "controls": "agreement, enclave, audit",
    }
    assert (gov["review_date"], gov["expiry_date"]) == ("2027-06-01", "2028-01-01")


def test_every_coverage_row_follows_from_the_report(governed: tuple[dict[str, Any], Path]) -> None:
    doc, _ = governed
    table = doc["certificate"]["coverage"]
    assert table == coverage(doc)  # recomputed from report.json alone
    assert table["items"] == len(ITEMS) == len(table["rows"])
    assert table["documented"] == sum(r["status"] == "evidence" for r in table["rows"])
    status = {(r["standard"], r["asks"]): r["status"] for r in table["rows"]}
    assert (
        status[("HIPAA expert determination", "a person with appropriate knowledge and experience")]
        == "evidence"
    )
    assert status[("ISO/IEC 27559:2022", "the threat: motives, capacity, controls")] == "evidence"
    assert status[("ISO/IEC 27559:2022", "an adversarial (re-identification) test")] == "missing"  # no attack
    # without the governance section the same rows say what to add
    bare = dict(doc, certificate={**doc["certificate"], "governance": None})
    rows = {(r["standard"], r["asks"]): r for r in coverage(bare)["rows"]}
    credentials = rows[("HIPAA expert determination", "a person with appropriate knowledge and experience")]
    assert credentials["status"] == "missing" and credentials["what_to_add"] == "governance.credentials"
    assert coverage(bare)["documented"] < table["documented"]


def test_the_html_shows_the_governance_and_every_coverage_row(governed: tuple[dict[str, Any], Path]) -> None:
    doc, out = governed
    html = (out / "report.html").read_text()
    assert 'id="coverage"' in html and "Cardiology research unit" in html and "reviewed by: A. Smith" in html
    table = doc["certificate"]["coverage"]
    assert f"{table['documented']} of {table['items']} items documented" in html
    for row in table["rows"]:
        assert row["asks"].replace("'", "&#39;") in html


@pytest.mark.parametrize(
    ("yaml", "message"),
    [
        ("governance: {release_model: open}", "governance.release_model"),
        ("governance: {review_date: 2027-06-01, expiry_date: 2027-01-01}", "expiry_date"),
        ("governance: {recipient: 3}", "governance.recipient"),
        ("governance: {recipent: x}", "recipent"),
    ],
)
def test_a_bad_governance_section_is_one_clear_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], yaml: str, message: str
) -> None:
    config = _config(tmp_path, f"\n{yaml}\n")
    code, _, err = run_cli(["anonymize", str(config), "--out", str(tmp_path / "o")], capsys)
    assert code == 2, err
    assert message in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()


@pytest.mark.skipif(find_chromium() is None, reason="no Chromium (apt-get install chromium)")
def test_the_pdf_has_the_report_json_digests(
    governed: tuple[dict[str, Any], Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import pypdf

    doc, out = governed
    target = tmp_path / "certificate.pdf"
    code, _, err = run_cli(["certificate", "pdf", str(out), "--out", str(target)], capsys)
    assert code == 0, err
    text = "".join(page.extract_text() for page in pypdf.PdfReader(target).pages)
    flat = re.sub(r"\s", "", text)
    digests = [
        f["sha256"]
        for f in doc["evidence"]["files"]
        if f.get("sha256") and f["role"] in ("release", "config")
    ]
    assert digests and all(d in flat for d in digests)
    assert "Coverageofthestandards" in flat and "Cardiologyresearchunit" in flat
    assert doc["headline"]["text"].split(":")[0].replace(" ", "") in flat
    # every warning of the run, and who acknowledged the contradicting ones (issue 33)
    marks = doc["certificate"]["warnings"]
    n = sum(m["contradicts"] for m in marks)
    assert f"Warningsofthisrun({len(marks)},{n}contradictingtheresult)" in flat
    assert n and flat.count("acknowledgedbyJ.Doe") == n
    assert all(m["code"] in flat for m in marks)


def test_certificate_pdf_refuses_a_directory_without_a_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run_cli(["certificate", "pdf", str(tmp_path)], capsys)
    assert code == 2 and "no report.json" in err
    assert not (tmp_path / "certificate.pdf").exists()


def test_without_chromium_the_pdf_is_refused_and_nothing_written(
    governed: tuple[dict[str, Any], Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _, out = governed
    copy = tmp_path / "rel"
    shutil.copytree(out, copy)
    monkeypatch.setenv("SAFESHARE_CHROMIUM", str(tmp_path / "no-such-browser"))
    code, _, err = run_cli(["certificate", "pdf", str(copy)], capsys)
    assert code == 2 and "no Chromium" in err
    assert not (copy / "certificate.pdf").exists()


def test_the_context_derives_its_threshold_beside_the_runs(governed: tuple[dict[str, Any], Path]) -> None:
    """non-public, medium invasiveness: IPC's 0.075 on the average risk; the Adult demo's threshold
    (1/k = 0.2) is above it, and the certificate says so."""
    from safeshare.risk.thresholds import derive_threshold

    doc, out = governed
    derived = doc["certificate"]["derived_threshold"]
    expected = derive_threshold("non-public", "medium")
    assert (derived["value"], derived["measure"]) == (expected.value, expected.measure) == (0.075, "average")
    run = doc["certificate"]["risk_kind"]["threshold"]
    assert derived["run_threshold"] == run
    assert derived["run_at_most_derived"] is (run <= 0.075)
    assert ("ABOVE" in derived["text"]) is (run > 0.075)
    assert derived["text"] in (out / "report.html").read_text().replace("&#39;", "'")
