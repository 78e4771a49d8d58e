"""The clinical-style example (examples/clinic, issue 33): the bundled file is the generator's,
and its release shows what the certificate must tell a privacy officer: a subgroup that vanished
(sex 'X', 88 admissions), a kept column that singles out records, a tie at the optimum, the
population's source and the governance fields, every figure checked on the files with pandas."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from safeshare import api

ROOT = Path(__file__).resolve().parent.parent
CLINIC = ROOT / "examples" / "clinic"


def test_the_bundled_file_is_the_generators(tmp_path: Path) -> None:
    import subprocess
    import sys

    out = tmp_path / "admissions.csv"
    subprocess.run(
        [sys.executable, str(ROOT / "tools" / "make_clinic_example.py"), "--out", str(out)], check=True
    )
    assert out.read_bytes() == (CLINIC / "admissions.csv").read_bytes()


@pytest.fixture(scope="module")
def clinic(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path]:
    out = tmp_path_factory.mktemp("clinic") / "o"
    api.anonymize(CLINIC / "clinic.yaml", out)
    return json.loads((out / "report.json").read_text()), out


def test_the_vanished_subgroup_and_the_identifying_column_are_on_the_report(
    clinic: tuple[dict[str, Any], Path],
) -> None:
    doc, out = clinic
    data = pd.read_csv(CLINIC / "admissions.csv", dtype=str, keep_default_na=False)
    release = pd.read_csv(out / "release.csv", dtype=str, keep_default_na=False)
    x = int((data["sex"] == "X").sum())
    assert x == 88 and "X" not in set(release["sex"])
    flagged = {(f["column"], f["value"]): f for f in doc["before_after"]["flagged"]}
    assert (flagged[("sex", "X")]["before"], flagged[("sex", "X")]["after"]) == (x, 0)
    codes = {w["code"] for w in doc["warnings"]}
    assert {"subgroup-suppressed", "kept-column-identifying"} <= codes
    # the kept diagnosis singles out records: recount the uniques with pandas on the release
    qis = [g["qi"] for g in doc["generalization"]]
    sizes = release.groupby([*qis, "diagnosis"], dropna=False).size()
    unique = int((sizes == 1).sum())
    kept = next(w for w in doc["warnings"] if w["code"] == "kept-column-identifying")
    assert f"{unique:,} of {len(release):,}" in kept["message"]


def test_the_certificate_has_the_population_source_governance_and_the_tie(
    clinic: tuple[dict[str, Any], Path],
) -> None:
    doc, _ = clinic
    cert = doc["certificate"]
    assert cert["population"]["size"] == 1_200_000 and "census 2021" in cert["population"]["source"]
    assert cert["governance"]["release_model"] == "non-public"
    assert cert["coverage"]["documented"] >= 20
    assert doc["frontier"]["ties"] >= 1
    assert doc["people"]["min_class_people"] >= 11
