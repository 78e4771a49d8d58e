"""The acknowledgement gate (issue 33): every warning on the certificate; a release whose warnings
contradict its headline is published only when each code is acknowledged, and the
acknowledgement is recorded in the certificate, the evidence and the ledger.

Run on the two bundled examples (Adult, the clinic's synthetic admissions) as a user would: their
configuration without its ``accept_warnings:`` line is refused with exit 2 and nothing in
``--out``; with it (or ``--accept-warning``) the release is published.
"""

from __future__ import annotations

import json
import pickle
import re
import shutil
from html import unescape
from pathlib import Path
from typing import Any

import pytest

from safeshare import api
from safeshare.config import load_config
from safeshare.errors import AcknowledgementRequired, ConfigError
from safeshare.warning_codes import WarningCode
from safeshare.workflows.acknowledgement import (
    CONTRADICTING,
    NOT_NAMED,
    SINGLETONS_UNDER_A_MAXIMUM,
    acknowledge,
    contradiction,
)
from tests.conftest import ADULT_DIR, run_cli

CLINIC_DIR = ADULT_DIR.parent / "clinic"


def _copy_example(source: Path, name: str, target: Path, drop_accepted: bool) -> Path:
    """The example's configuration in ``target`` with its paths pointing at the bundled files;
    without its ``accept_warnings:`` line when ``drop_accepted``."""
    text = (source / name).read_text(encoding="utf-8")
    lines = [ln for ln in text.splitlines() if not (drop_accepted and ln.startswith("accept_warnings:"))]
    text = "\n".join(lines) + "\n"
    text = text.replace("hierarchies/", f"{source}/hierarchies/")
    text = re.sub(r"^  path: (\S+)$", lambda m: f"  path: {source / m.group(1)}", text, flags=re.M)
    path = target / name
    path.write_text(text, encoding="utf-8")
    return path


def test_the_examples_acknowledge_what_they_raise() -> None:
    """Both bundled examples name their acknowledgements (the demo runs as shipped)."""
    assert load_config(ADULT_DIR / "adult.yaml").accept_warnings == ("subgroup-suppressed",)
    assert load_config(CLINIC_DIR / "clinic.yaml").accept_warnings == (
        "kept-column-identifying",
        "subgroup-suppressed",
    )


@pytest.mark.parametrize(
    ("source", "name", "codes"),
    [
        (ADULT_DIR, "adult.yaml", ["subgroup-suppressed"]),
        (CLINIC_DIR, "clinic.yaml", ["kept-column-identifying", "subgroup-suppressed"]),
    ],
)
def test_unacknowledged_contradictions_publish_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], source: Path, name: str, codes: list[str]
) -> None:
    config = _copy_example(source, name, tmp_path, drop_accepted=True)
    out = tmp_path / "out"
    code, _, stderr = run_cli(["anonymize", str(config), "--out", str(out), "-q"], capsys)
    assert code == 2, stderr
    assert not out.exists()  # nothing published, not even a partial directory
    line = stderr.strip()
    assert "\n" not in line and line.startswith("error: the release is not published")
    assert f"accept_warnings: [{', '.join(codes)}]" in line
    for c in codes:
        assert f"{c}: " in line
    # acknowledging one of two codes is not enough: the other is named alone
    if len(codes) == 2:
        code, _, stderr = run_cli(
            ["anonymize", str(config), "--out", str(out), "-q", "--accept-warning", codes[0]], capsys
        )
        assert code == 2 and f"accept_warnings: [{codes[1]}]" in stderr and not out.exists()


@pytest.fixture(scope="module")
def clinic_release(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The clinic example as shipped (its acknowledgements), published with a ledger."""
    base = tmp_path_factory.mktemp("clinic")
    config = _copy_example(CLINIC_DIR, "clinic.yaml", base, drop_accepted=False)
    out = base / "out"
    release = api.anonymize(config, out, ledger=str(base / "ledger.jsonl"))
    return {"release": release, "out": out, "ledger": base / "ledger.jsonl"}


def test_the_certificate_lists_every_warning(clinic_release: dict[str, Any]) -> None:
    report = json.loads((clinic_release["out"] / "report.json").read_text())
    marks = report["certificate"]["warnings"]
    assert [(m["code"], m["message"]) for m in marks] == [
        (w["code"], w["message"]) for w in report["warnings"]
    ]
    assert len(marks) >= 4
    for m in marks:
        expected = contradiction({"code": m["code"]}, report)
        assert m["contradicts"] is (expected is not None)
        assert m["acknowledged"] is (
            m["contradicts"] and m["code"] in report["provenance"]["settings"]["accept_warnings"]
        )
    # the HTML certificate shows each, in order, with its status
    html = unescape((clinic_release["out"] / "report.html").read_text())
    cover = html[html.index('id="certificate"') : html.index("</section>")]
    rows = re.findall(
        r'<tr data-key="certificate\.warnings\.(\d+)"><td><code>([^<]+)</code></td><td>([^<]*)</td>', cover
    )
    assert [(int(i), c, msg) for i, c, msg in rows] == [
        (i, m["code"], m["message"]) for i, m in enumerate(marks)
    ]
    n = sum(m["contradicts"] for m in marks)
    assert f"Warnings of this run ({len(marks)}, {n} contradicting the result)" in cover
    assert cover.count("acknowledged by J. Doe, privacy officer (example)") == n


def test_the_acknowledgement_is_recorded(clinic_release: dict[str, Any]) -> None:
    report = clinic_release["release"].report
    acknowledged = report["certificate"]["acknowledged"]
    by = "J. Doe, privacy officer (example)"
    assert [(a["code"], a["by"]) for a in acknowledged] == [
        ("kept-column-identifying", by),
        ("subgroup-suppressed", by),
    ]
    marks = report["certificate"]["warnings"]
    for a in acknowledged:  # each counts the run's warnings of its code
        assert a["warnings"] == sum(1 for m in marks if m["code"] == a["code"]) >= 1
    assert report["evidence"]["acknowledgements"] == acknowledged
    assert report["certificate"]["accepted_unused"] == []
    entry = json.loads(clinic_release["ledger"].read_text().splitlines()[-1])
    assert entry["accepted_warnings"] == [{"code": a["code"], "by": by} for a in acknowledged]
    written = json.loads((clinic_release["out"] / "report.json").read_text())
    assert written["certificate"]["acknowledged"] == acknowledged


def test_the_command_line_adds_to_the_files_codes_and_prints_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = _copy_example(ADULT_DIR, "adult.yaml", tmp_path, drop_accepted=True)
    out = tmp_path / "out"
    code, stdout, stderr = run_cli(
        ["anonymize", str(config), "--out", str(out), "--accept-warning", "subgroup-suppressed",
         "--accept-warning", "linked-profiles"], capsys)  # fmt: skip
    assert code == 0, stderr
    report = json.loads((out / "report.json").read_text())
    assert report["provenance"]["settings"]["accept_warnings"] == ["subgroup-suppressed", "linked-profiles"]
    assert [a["code"] for a in report["certificate"]["acknowledged"]] == ["subgroup-suppressed"]
    assert report["certificate"]["acknowledged"][0]["by"] == NOT_NAMED
    assert report["certificate"]["accepted_unused"] == ["linked-profiles"]  # said, not an error
    assert "acknowledged" in stdout and "subgroup-suppressed (2 warning(s)" in " ".join(stdout.split())


def test_a_described_release_is_not_refused(tmp_path: Path) -> None:
    """Without --out nothing is published: no gate (its disclosure warnings need the file)."""
    config = _copy_example(ADULT_DIR, "adult.yaml", tmp_path, drop_accepted=True)
    release = api.anonymize(config, None)
    assert release.report["certificate"]["acknowledged"] == []
    assert all(not m["contradicts"] for m in release.report["certificate"]["warnings"])


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("[subgroup-supressed]", "accept_warnings.0: unknown warning code 'subgroup-supressed'"),
        ("{a: 1}", "accept_warnings: expected a warning code or a list of them"),
        ("[3]", "accept_warnings.0: unknown warning code '3'"),
    ],
)
def test_unknown_codes_are_refused(tmp_path: Path, value: str, message: str) -> None:
    config = _copy_example(ADULT_DIR, "adult.yaml", tmp_path, drop_accepted=True)
    config.write_text(config.read_text() + f"accept_warnings: {value}\n")
    with pytest.raises(ConfigError) as info:
        load_config(config)
    assert message.split(": ", 1)[1] in str(info.value) and "\n" not in str(info.value)
    assert "accept_warnings" in str(info.value)


def test_an_unknown_option_code_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = _copy_example(ADULT_DIR, "adult.yaml", tmp_path, drop_accepted=True)
    code, _, stderr = run_cli(
        ["anonymize", str(config), "--out", str(tmp_path / "o"), "--accept-warning", "nope"], capsys
    )
    assert code == 2 and "--accept-warning: unknown warning code 'nope'" in stderr
    assert not (tmp_path / "o").exists()


# ------------------------------------------------------------------ the rules, one by one
def _doc(threshold: float | None = None, measure: str = "B") -> dict[str, Any]:
    models: dict[str, Any] = {"k-anonymity": {"k": 5}}
    if threshold is not None:
        models = {"risk": {"threshold": threshold, "measure": measure}}
    return {"privacy": {"models": models}}


@pytest.mark.parametrize("code", [c.value for c in CONTRADICTING])
def test_each_contradicting_code_contradicts_any_headline(code: str) -> None:
    assert contradiction({"code": code}, _doc()) == CONTRADICTING[WarningCode(code)]
    assert contradiction({"code": code}, _doc(0.2)) is not None


@pytest.mark.parametrize(
    "code",
    [
        "uninformative-qi",
        "implausible-values",
        "delta-above-one-over-n",
        "not-differentially-private",
        "coarse-pseudonym",
        "homogeneous-classes",
    ],
)
def test_caveats_do_not_contradict(code: str) -> None:
    assert contradiction({"code": code}, _doc()) is None
    assert contradiction({"code": code}, _doc(0.09)) is None


def test_every_code_is_ruled_on() -> None:
    ruled = {c.value for c in CONTRADICTING} | {"singleton-classes"}
    caveats = {"uninformative-qi", "implausible-values", "delta-above-one-over-n",
               "not-differentially-private", "coarse-pseudonym", "homogeneous-classes"}  # fmt: skip
    assert ruled | caveats == {c.value for c in WarningCode} and not ruled & caveats


@pytest.mark.parametrize(
    ("threshold", "measure", "contradicts"),
    [(0.09, "B", True), (0.075, "A", True), (0.05, "B", True), (0.2, "B", False), (0.09, "record", False)],
)
def test_singletons_contradict_a_maximum_figure_on_an_average(
    threshold: float, measure: str, contradicts: bool
) -> None:
    found = contradiction({"code": "singleton-classes"}, _doc(threshold, measure))
    assert found == (SINGLETONS_UNDER_A_MAXIMUM if contradicts else None)
    assert contradiction({"code": "singleton-classes"}, _doc()) is None


def test_require_names_each_code_once_and_pickles() -> None:
    warnings = [
        {"code": "subgroup-suppressed", "message": "column 'a': lost: advice", "columns": ["a"]},
        {"code": "subgroup-suppressed", "message": "column 'b': lost: advice", "columns": ["b"]},
        {"code": "homogeneous-classes", "message": "h", "columns": []},
    ]
    ack = acknowledge(warnings, _doc(), [], None)
    assert ack.unacknowledged == ["subgroup-suppressed"]
    with pytest.raises(AcknowledgementRequired) as info:
        ack.require()
    assert info.value.codes == ["subgroup-suppressed"]
    assert "subgroup-suppressed: column 'a': lost and 1 more" in str(info.value)
    again = pickle.loads(pickle.dumps(info.value))  # a pool re-raises it in its parent
    assert again.codes == ["subgroup-suppressed"] and str(again) == str(info.value)
    done = acknowledge(warnings, _doc(), ["subgroup-suppressed"], " A. Officer ")
    done.require()
    assert done.acknowledged == [{"code": "subgroup-suppressed", "by": "A. Officer", "warnings": 2}]
    assert [m.acknowledged for m in done.marks] == [True, True, False]  # a caveat is never "acknowledged"


def test_nothing_left_from_a_refused_run_in_an_existing_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A refused run leaves the release already in --out as it was."""
    config = _copy_example(ADULT_DIR, "adult.yaml", tmp_path, drop_accepted=False)
    out = tmp_path / "out"
    assert run_cli(["anonymize", str(config), "--out", str(out), "-q"], capsys)[0] == 0
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    shutil.copy(config, tmp_path / "keep.yaml")
    config.write_text(
        "\n".join(ln for ln in config.read_text().splitlines() if not ln.startswith("accept_warnings:"))
        + "\n"
    )
    assert run_cli(["anonymize", str(config), "--out", str(out), "-q", "--k", "6"], capsys)[0] == 2
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()} == before
