"""The keyed roles on the workbench's Data screen (issue 35: "roles (with a pseudonym and a
shifted date)"): a pseudonym and a shifted date with its person and window are set by the roles
form; the first keyed role writes the project's key (mode 0600, 32 random bytes), which no page,
no run output and no release ever shows; the run releases pseudonyms and shifted dates, verified.
"""

from __future__ import annotations

import csv
import json
import stat
from pathlib import Path
from urllib.parse import unquote

import yaml

from tests.test_ui_api import Bench, open_bench

VISITS = "mrn,visit,age,sex\n" + "".join(
    f"M{i % 60:04d},2023-{1 + i % 12:02d}-{1 + i % 28:02d},{20 + i % 40},{'FM'[i % 2]}\n" for i in range(240)
)
AGE = "".join(f"{a};{a // 10 * 10}s;*\n" for a in range(20, 60))
CONFIG = """\
input: {path: data/visits.csv}
attributes:
  mrn: {role: identifying}
  visit: {role: insensitive}
  age: {role: quasi, hierarchy: hierarchies/age.csv}
  sex: {role: quasi, hierarchy: {type: masking}}
privacy: {k-anonymity: {k: 3}}
max_suppression: 0.2
accept_warnings: [kept-column-identifying, subgroup-suppressed, linked-profiles, shifted-date-identifying]
"""


def _project(bench: Bench) -> str:
    return bench.upload(
        [
            ("config", ("visits.yaml", CONFIG.encode())),
            ("data", ("visits.csv", VISITS.encode())),
            ("hierarchies", ("age.csv", AGE.encode())),
        ]
    )


def _roles(bench: Bench, pid: str, **fields: str) -> str:
    page = bench.client.get(f"/p/{pid}/data").text
    assert 'data-testid="person-visit"' in page and '<option value="pseudonym"' in page
    answer = bench.client.post(f"/p/{pid}/roles", data=fields, follow_redirects=False)
    assert answer.status_code == 303
    return unquote(answer.headers["location"])


def test_a_pseudonym_and_a_shifted_date_from_the_roles_form(tmp_path: Path) -> None:
    with open_bench(tmp_path) as bench:
        pid = _project(bench)
        directory = bench.directory(pid)
        # a shifted date without its person is one line, nothing saved, no key written
        before = (directory / "config.yaml").read_text()
        location = _roles(bench, pid, **{"role-visit": "shifted_date"})
        assert "visit: a shifted date needs the column of its person" in location, location
        assert (directory / "config.yaml").read_text() == before and not (directory / "key.hex").exists()
        location = _roles(
            bench, pid, **{"role-mrn": "pseudonym", "role-visit": "shifted_date", "person-visit": "mrn",
                           "max_days-visit": "30"})  # fmt: skip
        assert "roles saved; a new key" in location, location
        config = yaml.safe_load((directory / "config.yaml").read_text())
        assert config["attributes"]["mrn"] == {"role": "pseudonym"}
        assert config["attributes"]["visit"] == {"role": "shifted_date", "person": "mrn", "max_days": 30}
        assert config["key_file"] == "key.hex"
        key = directory / "key.hex"
        assert stat.S_IMODE(key.stat().st_mode) == 0o600
        material = key.read_text().strip()
        assert len(material) == 64 and int(material, 16) != 0
        # saving again keeps the key (a new one would change every pseudonym)
        assert "a new key" not in _roles(bench, pid, **{"role-mrn": "pseudonym"})
        assert key.read_text().strip() == material
        # the run publishes pseudonyms and shifted dates, verified; the key is nowhere in its output
        answer = bench.client.post(f"/p/{pid}/run", follow_redirects=False)
        assert answer.status_code == 303
        runs = bench.idle(pid, timeout=300)
        done = [r for r in runs if r.get("kind", "anonymize") == "anonymize" and r["status"] == "done"]
        assert done, runs
        out = next(p for p in sorted((directory / "runs").glob("*/out")) if (p / "release.csv").exists())
        report = json.loads((out / "report.json").read_text())
        assert report["verified"]
        treatments = {c["name"]: c["treatment"] for c in report["columns"]}
        assert treatments["mrn"] == "pseudonymized" and treatments["visit"] == "shifted"
        released = (out / "release.csv").read_text()
        assert "M0001" not in released  # pseudonyms, not the record numbers
        rows = list(csv.DictReader(released.splitlines()))
        dates = {r["visit"] for r in rows if r["visit"]}
        given = {line.split(",")[1] for line in VISITS.splitlines()[1:]}
        assert rows and dates and dates != given  # shifted per person (never by 0 days)
        for path in directory.rglob("*"):
            if path.is_file() and path != key:
                assert material not in path.read_text(errors="replace"), path
        for page in ("data", "privacy", "run", "release"):
            assert material not in bench.client.get(f"/p/{pid}/{page}").text
