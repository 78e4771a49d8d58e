"""Local recoding on the one application path (issue 25): configuration, CLI, API, Release.

``local_recoding: {rounds: N}`` in the configuration, ``safeshare anonymize --local-recoding
[--rounds N]`` and ``api.anonymize(..., local_recoding=True, rounds=N)`` run the same use case
(workflows/anonymize.py) and return the one :class:`Release`: on UCI Adult (k = 5, 5 %, Prec)
it releases more records than the global optimum at a lower cell-level loss; the written file
passes the independent verifier again when re-read here; the terminal, report.json and
report.html show the rounds; what does not combine is refused in one line (exit 2), before
any data is read.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml

from safeshare import api
from safeshare.config import load_config
from safeshare.errors import ConfigError
from safeshare.verify import verify_release
from safeshare.workflows.local_release import local_release_expectations
from safeshare.workflows.result import Release
from tests.conftest import ADULT_DIR, comparable_report, run_cli, write_small_adult

ADULT_YAML = ADULT_DIR / "adult.yaml"
# the run's warnings that contradict its headline, acknowledged (issue 33): a kept sensitive
# column singles out more than 5 % of the locally recoded records (adult.yaml itself
# acknowledges subgroup-suppressed)
ACCEPTED = ["kept-column-identifying"]
ACCEPT = [a for code in ACCEPTED for a in ("--accept-warning", code)]


@pytest.fixture(scope="module")
def cli_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``safeshare anonymize examples/adult/adult.yaml --local-recoding -q`` (the whole of Adult)."""
    from safeshare.cli import main

    out = tmp_path_factory.mktemp("cli") / "out"
    assert main(["anonymize", str(ADULT_YAML), "--out", str(out), "--local-recoding", "-q", *ACCEPT]) == 0
    return out


@pytest.fixture(scope="module")
def api_run(tmp_path_factory: pytest.TempPathFactory) -> Release:
    return api.anonymize(
        ADULT_YAML, tmp_path_factory.mktemp("api") / "out", local_recoding=True, accept_warnings=ACCEPTED
    )


def test_adult_more_records_at_lower_cell_loss(cli_run: Path) -> None:
    out = cli_run
    report = json.loads((out / "report.json").read_text())
    local = report["local_recoding"]
    g, m = local["loss_global"], local["loss_mixed"]
    assert report["verified"] is True
    assert m["released"] == report["records_out"] > g["released"] == local["records_released_global"]
    assert m["prec"] < g["prec"] and m["entropy"] < g["entropy"]
    assert report["suppressed_records"] <= g["suppressed"] <= local["suppression_limit"]
    assert local["rounds"][0]["round"] == 0 and local["rounds"][0]["node"] == report["node"]
    assert sum(r["released"] for r in local["rounds"]) == report["records_out"]
    assert local["stop_reason"] in ("nothing_suppressed", "too_few", "no_node", "no_gain", "rounds")
    assert report["provenance"]["settings"]["local_recoding"] == {"rounds": 100}
    # the measured figures of docs/anonymization.md
    assert (g["released"], m["released"]) == (30_980, 32_561)
    assert round(g["prec"], 4) == 0.4714 and round(m["prec"], 4) == 0.4555


def test_the_written_file_passes_the_verifier_again(cli_run: Path, api_run: Release) -> None:
    """Re-read here: classes by identical released QI values (k >= 5) and the verifier's SQL with
    the expectations from the configuration."""
    out = cli_run
    path = out / "release.csv"
    release = pd.read_csv(path, dtype=str, keep_default_na=False)
    cfg = load_config(ADULT_YAML)
    qis = list(cfg.schema.quasi_identifiers)
    assert len(release) == api_run.output.records_out
    assert release.groupby(qis).size().min() >= 5
    assert api_run.recoding is not None
    assert cfg.source.names is not None  # adult.data has no header: the names are configured
    input_columns = list(cfg.source.names)
    again = verify_release(path, "csv", local_release_expectations(api_run.recoding, input_columns))
    assert again.passed, again.failures
    assert again.records_out == api_run.output.records_out


def test_cli_and_api_give_the_same_release_and_report(cli_run: Path, api_run: Release) -> None:
    out = cli_run
    assert api_run.path is not None
    assert (out / "release.csv").read_bytes() == api_run.path.read_bytes()
    written = json.loads((out / "report.json").read_text())
    from_api = json.loads((api_run.path.parent / "report.json").read_text())
    assert comparable_report(written) == comparable_report(from_api)
    assert json.loads(json.dumps(api_run.report)) == from_api  # Release.report is report.json


def test_the_report_html_renders_the_mixed_release(cli_run: Path) -> None:
    out = cli_run
    html = (out / "report.html").read_text()
    report = json.loads((out / "report.json").read_text())
    assert "<h2>Local recoding</h2>" in html and "0 (global optimum)" in html
    for r in report["local_recoding"]["rounds"]:
        assert f"{r['released']:,}" in html
    assert f"{report['local_recoding']['loss_mixed']['prec']:.4f}" in html
    assert "1 (1,581)" in html  # race: 1,581 records one level up, beside those at level 0


def test_the_mixed_release_carries_its_evidence_and_disclosure_warnings(cli_run: Path) -> None:
    """As a global release does (issue 20): the disclosure warnings computed over the written
    mixed release (here recomputed directly from the file), and the evidence: the released
    labels read from the file, the records at each level per QI summing to the records
    released, the release's SHA-256 of the bytes written, the verifier's checks."""
    import hashlib

    from safeshare.verify.disclosure import disclosure_warnings

    out = cli_run
    report = json.loads((out / "report.json").read_text())
    cfg = load_config(ADULT_YAML)
    qis = list(cfg.schema.quasi_identifiers)
    released = pd.read_csv(out / "release.csv", dtype=str, keep_default_na=False)
    kept = [c for c in released.columns if c not in qis]
    direct = disclosure_warnings(
        out / "release.csv", "csv", qis, kept, list(cfg.schema.sensitive), missing=cfg.source.missing
    )
    shown = [w for w in report["warnings"] if w["code"] in {"homogeneous-classes", "kept-column-identifying"}]
    assert direct and [(w["code"], w["value"]) for w in shown] == [(w.code, w.value) for w in direct]
    assert "kept-column-identifying" in {a["code"] for a in report["certificate"]["acknowledged"]}
    evidence = report["evidence"]
    assert evidence["verified"] is True
    by_name = {q["name"]: q for q in evidence["quasi_identifiers"]}
    assert list(by_name) == qis
    for q in qis:
        assert by_name[q]["labels"] == sorted(set(released[q]))
        assert sum(by_name[q]["records_per_level"].values()) == report["records_out"]
        assert by_name[q]["level"] == report["levels"][q]
    assert by_name["race"]["records_per_level"] == {"0": 30_980, "1": 1_581}
    digest = hashlib.sha256((out / "release.csv").read_bytes()).hexdigest()
    assert [f["sha256"] for f in evidence["files"] if f["role"] == "release"] == [digest]
    assert "locally recoded; records per level" in (out / "report.html").read_text()


def test_the_terminal_shows_the_rounds(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    directory = write_small_adult(tmp_path, n_train=2000)
    args = ["anonymize", str(directory / "adult.yaml"), "--out", str(tmp_path / "o"), "--local-recoding"]
    code, stdout, stderr = run_cli([*args, *ACCEPT], capsys)
    assert code == 0, stderr
    report = json.loads((tmp_path / "o" / "report.json").read_text())
    assert "local recoding" in stdout and "cell-level loss" in stdout
    assert "levels (global node)" in stdout
    for r in report["local_recoding"]["rounds"][1:]:
        assert f"round {r['round']}" in stdout


def test_rounds_from_the_file_and_the_options(tmp_path: Path) -> None:
    directory = write_small_adult(tmp_path, n_train=2000)
    config = yaml.safe_load((directory / "adult.yaml").read_text())
    path = directory / "local.yaml"
    path.write_text(yaml.safe_dump({**config, "local_recoding": {"rounds": 1}}))
    one = api.anonymize(path)
    assert one.local_recoding is not None and one.local_recoding["rounds_run"] <= 1
    assert one.verification is None and one.path is None  # out=None: described, not written
    assert api.anonymize(path, local_recoding=True).report["provenance"]["settings"]["local_recoding"] == {
        "rounds": 1
    }  # --local-recoding keeps the file's rounds
    assert api.anonymize(path, rounds=2).report["provenance"]["settings"]["local_recoding"] == {"rounds": 2}
    off = api.anonymize(path, local_recoding=False)
    assert off.local_recoding is None and "local_recoding" not in off.report
    path.write_text(yaml.safe_dump({**config, "local_recoding": True}))
    assert load_config(path).local_recoding is not None
    assert load_config(path).local_recoding.rounds == 100  # type: ignore[union-attr]
    full = api.anonymize(directory / "adult.yaml", local_recoding=True)
    glob = api.anonymize(directory / "adult.yaml")
    assert "local_recoding" not in glob.report
    assert full.report["node"] == glob.report["node"]  # round 0 is the global optimum
    assert full.output.records_out >= glob.output.records_out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--rounds", "3"], "--rounds: applies to local recoding only"),
        (["--local-recoding", "--rounds", "0"], "--rounds: expected an integer >= 1, got 0"),
        (["--local-recoding", "--algorithm", "epsilon-safe"], "not supported with algorithm epsilon-safe"),
        (["--local-recoding", "--algorithm", "inverse-ola"], "not supported with algorithm inverse-ola"),
        (["--local-recoding", "--engine", "spark"], "the spark engine does not write locally recoded"),
        (["--local-recoding", "--tradeoff"], "--tradeoff: does not apply to local recoding"),
    ],
)
def test_what_does_not_combine_is_one_line_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    out = tmp_path / "o"
    code, _, stderr = run_cli(["anonymize", str(ADULT_YAML), "--out", str(out), *args], capsys)
    assert code == 2
    assert message in stderr and len(stderr.strip().splitlines()) == 1, stderr
    assert not out.exists()


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("yes", "local_recoding: expected true, false or a mapping such as {rounds: 10}"),
        ({"round": 3}, "local_recoding"),
        ({"rounds": 2.5}, "local_recoding.rounds"),
    ],
)
def test_a_configuration_error_names_the_file_and_key(tmp_path: Path, value: Any, message: str) -> None:
    directory = write_small_adult(tmp_path, n_train=10)
    config = yaml.safe_load((directory / "adult.yaml").read_text())
    path = directory / "bad.yaml"
    path.write_text(yaml.safe_dump({**config, "local_recoding": value}))
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert str(caught.value).startswith(f"{path}: ") and message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_the_m_concealing_report_is_refused_in_the_configuration(tmp_path: Path) -> None:
    directory = write_small_adult(tmp_path, n_train=10)
    config = yaml.safe_load((directory / "adult.yaml").read_text())
    path = directory / "k.yaml"
    path.write_text(yaml.safe_dump({**config, "local_recoding": True, "knowledge": {"income": 0.5}}))
    with pytest.raises(ConfigError, match="local_recoding: the m-concealing report"):
        load_config(path)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"attributes": "fnlwgt-pseudonym"}, "not yet supported with pseudonym or shifted_date columns"),
    ],
)
def test_what_the_local_path_does_not_wire_yet_is_refused(
    tmp_path: Path, extra: dict[str, Any], message: str
) -> None:
    """The identifier re-checks of issue 20 are not wired into the local path: refused by name
    rather than published without them."""
    directory = write_small_adult(tmp_path, n_train=10)
    config = yaml.safe_load((directory / "adult.yaml").read_text())
    if extra.get("attributes"):
        config["attributes"]["fnlwgt"] = {"role": "pseudonym"}
        from safeshare.data.identifiers import write_new_key

        write_new_key(directory / "k.key")  # a strong key: the refusal must be local recoding's
        extra = {"key_file": "k.key"}
    path = directory / "c.yaml"
    path.write_text(yaml.safe_dump({**config, **extra, "local_recoding": True}))
    with pytest.raises(ConfigError, match=f"local_recoding: {message}"):
        load_config(path)


def test_a_mixed_release_is_entered_in_the_ledger(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A locally recoded release appends its ledger entry (the files as published, the global
    node, the rounds), ``safeshare ledger verify`` holds, and catches a changed byte of it."""
    directory = write_small_adult(tmp_path, n_train=400)
    ledger = tmp_path / "releases.jsonl"
    out = tmp_path / "out"
    args = [
        "anonymize",
        str(directory / "adult.yaml"),
        "--out",
        str(out),
        "--local-recoding",
        "--no-tradeoff",
        *ACCEPT,
    ]
    args += ["--ledger", str(ledger), "--approved-by", "A. Officer"]
    code, stdout, stderr = run_cli(args, capsys)
    assert code == 0, stderr
    assert "entry 1 appended to" in " ".join(stdout.split())
    (entry,) = [json.loads(line) for line in ledger.read_text().splitlines()]
    report = json.loads((out / "report.json").read_text())
    assert entry["node"] == report["node"] and entry["approved_by"] == "A. Officer"
    local = report["local_recoding"]
    assert entry["local_recoding"] == {
        "rounds_run": local["rounds_run"],
        "records_released_global": local["records_released_global"],
        "records_out": report["records_out"],
    }
    digest = next(f["sha256"] for f in report["evidence"]["files"] if f["role"] == "release")
    assert digest == next(f["sha256"] for f in entry["files"] if f["role"] == "release")
    code, stdout, _ = run_cli(["ledger", "verify", str(ledger)], capsys)
    assert code == 0, stdout
    data = (out / "release.csv").read_bytes()
    (out / "release.csv").write_bytes(data[:-2] + bytes([data[-2] ^ 1]) + data[-1:])
    code, stdout, _ = run_cli(["ledger", "verify", str(ledger)], capsys)
    assert code == 3 and "entry 1" in stdout
