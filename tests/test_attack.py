"""``safeshare attack`` (issue 34): exact matching equals B, the linkage, residual risks, the outputs."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from safeshare import api
from safeshare.cli import main
from safeshare.hierarchy.io import read_arx_csv
from safeshare.risk.measures import class_sizes, risk_measures
from tests.conftest import ADULT_COLUMNS, ADULT_DIR

QIS = ["age", "education", "marital-status", "race", "sex"]


def _population() -> pd.DataFrame:
    pop = pd.read_csv(
        ADULT_DIR / "adult.data", header=None, names=ADULT_COLUMNS, skipinitialspace=True, dtype=str
    )
    pop.insert(0, "id", [f"p{i}" for i in range(len(pop))])
    return pop


def _config(
    tmp: Path,
    data: Path,
    extra: str = "",
    accepted: tuple[str, ...] = ("kept-column-identifying", "subgroup-suppressed"),
) -> Path:
    """A k = 3 configuration of Adult's quasi-identifiers over ``data``. ``accepted``: the run's
    warnings that contradict its headline, acknowledged (issue 33): hours-per-week, released as
    it is, singles out records, and suppression empties small subgroups of race."""
    attrs = "\n".join(
        f"  {q}: {{role: quasi, hierarchy: {ADULT_DIR / 'hierarchies' / (q + '.csv')}}}" for q in QIS
    )
    text = (
        f"input: {{path: {data}}}\ndefault_role: identifying\nattributes:\n{attrs}\n"
        "  hours-per-week: {role: sensitive}\n  income: {role: insensitive}\n"
        "privacy:\n  k-anonymity: {k: 3}\nmax_suppression: 0.05\n"
        f"accept_warnings: [{', '.join(accepted)}]\n" + extra
    )
    path = tmp / "config.yaml"
    path.write_text(text)
    return path


@pytest.fixture(scope="module")
def sampled(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A 30 % sample of Adult (with an id) released at k = 3; Adult whole is the population."""
    tmp = tmp_path_factory.mktemp("attack")
    pop = _population()
    pop.to_csv(tmp / "population.csv", index=False)
    sample = pop.sample(frac=0.3, random_state=11)
    sample.to_csv(tmp / "sample.csv", index=False)
    pop.drop(sample.index).to_csv(tmp / "control.csv", index=False)
    cfg = _config(tmp, tmp / "sample.csv", "population_size: 32561\n")
    api.anonymize(cfg, tmp / "rel")
    return {
        "tmp": tmp,
        "config": cfg,
        "release": tmp / "rel" / "release.csv",
        "population": tmp / "population.csv",
        "control": tmp / "control.csv",
        "sample": tmp / "sample.csv",
    }


def _independent_B(release: Path, report: Path, population: pd.DataFrame) -> float:
    """B of the release against the population by risk/measures.py, the population generalized at
    the release's node with the hierarchy files directly (no code of safeshare.attack)."""
    levels = json.loads(report.read_text())["levels"]
    rel = pd.read_csv(release, dtype=str, keep_default_na=False)
    gen = population.copy()
    for q in QIS:
        mapping = read_arx_csv(ADULT_DIR / "hierarchies" / f"{q}.csv").mapping(levels[q])
        gen[q] = gen[q].map(mapping)
    f, F = class_sizes(rel, QIS, gen)
    return float(risk_measures(f, F, len(population)).B)


def test_exact_matching_expectation_is_the_exact_B_and_the_rate_within_its_interval(
    sampled: dict[str, Path],
) -> None:
    from safeshare.config.commands import AttackOptions
    from safeshare.config.commands import options as validated
    from safeshare.config.file import load_config
    from safeshare.workflows.attack import read_frame, run_attack

    pop = _population()
    B = _independent_B(sampled["release"], sampled["tmp"] / "rel" / "report.json", pop)
    rates = []
    for seed in range(3):
        asked = {"id": "id", "seed": seed, "control": sampled["control"], "targets": 200}
        if seed == 0:  # the API's whole attack
            result = api.attack(sampled["release"], sampled["config"], sampled["population"], **asked)
        else:  # exact matching alone: the other attacks do not decide this test (issue 36: its time)
            opts = validated(AttackOptions, asked)
            frame = read_frame(opts.source(sampled["population"]))
            cfg = load_config(sampled["config"])
            result = run_attack(sampled["release"], cfg, frame, "population.csv", opts, methods=("exact",))
        ex = result.exact
        assert result.records["scored"] == result.records["release"]  # a global release: every row attributed
        assert ex["expected_rate"] == pytest.approx(B, rel=1e-12)
        assert result.estimate["B_exact"] == pytest.approx(B, rel=1e-12)
        lo, hi = ex["correct"]["interval"]
        rates.append((lo <= B <= hi, ex["correct"]["rate"]))
    assert sum(inside for inside, _ in rates) >= 2
    assert len({r for _, r in rates}) > 1  # the guesses are random (seeded), not a fixed choice


def test_a_guess_is_scored_against_the_truth_not_the_frame_order(sampled: dict[str, Path]) -> None:
    """Shuffling the frame's rows changes nothing in expectation: the truth is the id, not a position."""
    tmp = sampled["tmp"]
    pop = pd.read_csv(sampled["population"], dtype=str, keep_default_na=False)
    pop.sample(frac=1.0, random_state=3).to_csv(tmp / "shuffled.csv", index=False)
    a = api.attack(
        sampled["release"],
        sampled["config"],
        sampled["population"],
        id="id",
        targets=100,
        control=sampled["control"],
    )
    b = api.attack(
        sampled["release"],
        sampled["config"],
        tmp / "shuffled.csv",
        id="id",
        targets=100,
        control=sampled["control"],
    )
    assert a.exact["expected_rate"] == pytest.approx(b.exact["expected_rate"], rel=1e-12)
    lo, hi = a.linkage["correct"]["interval"]
    assert lo - 0.02 <= b.linkage["correct"]["rate"] <= hi + 0.02


def test_hostile_frame_leaves_nothing_of_it_in_any_output(sampled: dict[str, Path], tmp_path: Path) -> None:
    pop = pd.read_csv(sampled["population"], dtype=str, keep_default_na=False)
    hostile = pop.copy()
    markers = [f"ZZMARK{i}QQ" for i in range(len(pop))]
    hostile["secret_name"] = markers  # a column the release does not have
    hostile.loc[:40, "education"] = [f"ZZEDU{i}QQ" for i in range(41)]  # values no hierarchy places
    hostile.loc[41:80, "hours-per-week"] = [f"ZZHRS{i}QQ" for i in range(40)]  # a compared column
    hostile.loc[81:120, "id"] = [f"ZZID{i}QQ" for i in range(40)]  # identifiers
    hostile.to_csv(tmp_path / "hostile.csv", index=False)
    out = tmp_path / "out"
    code = main(
        [
            "attack",
            str(sampled["release"]),
            "--config",
            str(sampled["config"]),
            "--frame",
            str(tmp_path / "hostile.csv"),
            "--id",
            "id",
            "--control",
            str(sampled["control"]),
            "--targets",
            "100",
            "--out",
            str(out),
            "-q",
        ]
    )
    assert code == 0
    files = sorted(p for p in out.rglob("*") if p.is_file())
    assert {p.name for p in files} >= {"report.json", "report.html"}
    for p in files:
        text = p.read_text(errors="replace")
        assert "ZZ" not in text and "QQ" not in text, p
        assert str(tmp_path) not in text


def test_a_locally_recoded_release_is_attacked(tmp_path: Path) -> None:
    pop = _population().iloc[:8000]
    pop.to_csv(tmp_path / "data.csv", index=False)
    extra = "local_recoding: {rounds: 10}\n"
    cfg = _config(tmp_path, tmp_path / "data.csv", extra, accepted=("kept-column-identifying",))
    cfg.write_text(cfg.read_text().replace("k: 3", "k: 5").replace("0.05", "0.02"))
    release = api.anonymize(cfg, tmp_path / "rel")
    rounds = release.report["local_recoding"]["rounds"]
    assert len(rounds) >= 2  # records released at more than one node
    result = api.attack(tmp_path / "rel" / "release.csv", cfg, tmp_path / "data.csv", targets=200)
    rec = result.records
    assert rec["unscored"] <= 0.01 * rec["release"]
    link = result.linkage["correct"]
    assert link["attempts"] == rec["scored"]
    # the linkage uses hours-per-week and income as well: it beats guessing within a class
    assert link["rate"] > result.exact["correct"]["interval"][1]
    # every released record is covered by the frame: the expected exact rate is a mean of 1/|M|
    assert 0 < result.exact["expected_rate"] <= 1


def test_the_frame_is_the_input_without_id(tmp_path: Path) -> None:
    data = tmp_path / "data.csv"
    _population().iloc[:3000].to_csv(data, index=False)
    cfg = _config(tmp_path, data)
    api.anonymize(cfg, tmp_path / "rel")
    result = api.attack(tmp_path / "rel" / "release.csv", cfg, data, targets=100)
    # the input is the population: F = f for every released class, so B = J / n
    rel = pd.read_csv(tmp_path / "rel" / "release.csv", dtype=str, keep_default_na=False)
    J = rel.groupby(QIS).ngroups
    assert result.exact["expected_rate"] == pytest.approx(J / len(rel), rel=1e-12)
    assert result.record_risk["exact"]["max"] <= 1 / 3 + 1e-12  # k = 3
    assert result.residual["skipped"].startswith("no control set")
    # another frame without --id is refused in one line
    other = tmp_path / "other.csv"
    _population().iloc[3000:6000].to_csv(other, index=False)
    code = main(
        [
            "attack",
            str(tmp_path / "rel" / "release.csv"),
            "--config",
            str(cfg),
            "--frame",
            str(other),
            "--out",
            str(tmp_path / "o"),
            "-q",
        ]
    )
    assert code == 2 and not (tmp_path / "o").exists()


def test_a_frame_without_the_quasi_identifiers_is_refused(
    sampled: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pd.DataFrame({"id": ["p1"], "zip": ["1"]}).to_csv(tmp_path / "f.csv", index=False)
    code = main(
        [
            "attack",
            str(sampled["release"]),
            "--config",
            str(sampled["config"]),
            "--frame",
            str(tmp_path / "f.csv"),
            "--id",
            "id",
            "--out",
            str(tmp_path / "o"),
        ]
    )
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "quasi-identifiers" in err[0]


def test_the_linkage_refuses_an_unbounded_comparison_with_the_figure(sampled: dict[str, Path]) -> None:
    from safeshare.errors import InputError

    with pytest.raises(InputError, match=r"would compute [\d,]+ distances"):
        api.attack(
            sampled["release"],
            sampled["config"],
            sampled["population"],
            id="id",
            block="",
            max_pairs=10**6,
            control=sampled["control"],
            targets=50,
        )


def test_terminal_json_and_report_agree(
    sampled: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = [
        "attack",
        str(sampled["release"]),
        "--config",
        str(sampled["config"]),
        "--frame",
        str(sampled["population"]),
        "--id",
        "id",
        "--control",
        str(sampled["control"]),
        "--targets",
        "100",
        "--seed",
        "4",
    ]
    assert main([*args, "--out", str(tmp_path / "a"), "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    written = json.loads((tmp_path / "a" / "report.json").read_text())
    assert printed == written
    result = api.attack(
        sampled["release"],
        sampled["config"],
        sampled["population"],
        id="id",
        seed=4,
        control=sampled["control"],
        targets=100,
    )
    assert json.loads(result.to_json()) == written
    html = (tmp_path / "a" / "report.html").read_text()
    assert f"{written['exact_matching']['correct']['rate']:.4f}" in html


def test_per_record_risk_counts_the_records_above_the_threshold(sampled: dict[str, Path]) -> None:
    result = api.attack(
        sampled["release"],
        sampled["config"],
        sampled["population"],
        id="id",
        threshold=0.2,
        control=sampled["control"],
        targets=50,
    )
    exact = result.record_risk["exact"]
    assert exact["mean"] == pytest.approx(result.exact["expected_rate"], rel=1e-12)
    assert sum(b["records"] for b in exact["bins"]) == exact["records"]
    copula = result.record_risk["copula"]
    assert 0 < copula["mean"] <= 1 and copula["records"] == result.records["release"]
    assert np.isfinite(copula["expected_population_uniques_in_release"])


def test_a_kept_shifted_date_links_records_that_k_anonymity_hides(tmp_path: Path) -> None:
    """The issue's finding: a shifted date kept in a k-anonymous release links its records to the
    adversary's true dates (the shift is at most max_days; the key is never the attacker's)."""
    import os

    rng = np.random.default_rng(7)
    n = 3000
    days = pd.to_datetime("2020-01-01") + pd.to_timedelta(rng.integers(0, 3 * 365, n), unit="D")
    people = pd.DataFrame({
        "mrn": [f"M{i:05d}" for i in range(n)],
        "age": rng.integers(20, 80, n).astype(str),
        "sex": rng.choice(["Male", "Female"], n),
        "admitted": days.strftime("%Y-%m-%d"),
    })  # fmt: skip
    people.to_csv(tmp_path / "people.csv", index=False)
    key = tmp_path / "release.key"
    key.write_text(np.random.default_rng(34).bytes(32).hex() + "\n")  # a test key, not a secret
    os.chmod(key, 0o600)
    cfg = tmp_path / "c.yaml"
    cfg.write_text(
        f"input: {{path: {tmp_path / 'people.csv'}}}\nkey_file: {key}\nattributes:\n"
        f"  age: {{role: quasi, hierarchy: {ADULT_DIR / 'hierarchies' / 'age.csv'}}}\n"
        f"  sex: {{role: quasi, hierarchy: {ADULT_DIR / 'hierarchies' / 'sex.csv'}}}\n"
        "  mrn: {role: pseudonym}\n  admitted: {role: shifted_date, person: mrn, max_days: 30}\n"
        "privacy:\n  k-anonymity: {k: 5}\nmax_suppression: 0.02\n"
        # the run's warnings that contradict its headline, acknowledged (issue 33): the finding
        "accept_warnings: [shifted-date-identifying]\n"
    )
    release = api.anonymize(cfg, tmp_path / "rel")
    assert [a["code"] for a in release.report["certificate"]["acknowledged"]] == ["shifted-date-identifying"]
    rel = pd.read_csv(tmp_path / "rel" / "release.csv", dtype=str)
    assert not rel["admitted"].isin(people["admitted"]).all()  # the dates are shifted
    with_dates = api.attack(
        tmp_path / "rel" / "release.csv", cfg, tmp_path / "people.csv", id="mrn", targets=100
    )
    people.drop(columns=["admitted"]).to_csv(tmp_path / "no_dates.csv", index=False)
    without = api.attack(
        tmp_path / "rel" / "release.csv", cfg, tmp_path / "no_dates.csv", id="mrn", targets=100
    )
    assert with_dates.records["unscored"] == 0
    assert "admitted" in with_dates.linkage["compared_columns"]
    hi_without = without.linkage["correct"]["interval"][1]
    assert with_dates.linkage["correct"]["interval"][0] > 3 * hi_without
    assert with_dates.linkage["correct"]["rate"] > 0.2


def test_a_signal_during_the_linkage_ends_the_command(sampled: dict[str, Path], tmp_path: Path) -> None:
    """SIGINT while the (unblocked, hence long) linkage runs: exit 130, nothing published; the
    latency is printed (docs/risk.md). The command runs on a terminal, which shows its phases;
    the signal goes once the linkage has started (not after a fixed wait)."""
    import os
    import pty
    import signal
    import subprocess
    import sys
    import time

    from tests.test_risk_outputs import _wait_for

    out = tmp_path / "out"
    root = Path(__file__).resolve().parent.parent
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "safeshare", "attack", str(sampled["release"]),
         "--config", str(sampled["config"]), "--frame", str(sampled["population"]), "--id", "id",
         "--block", "", "--control", str(sampled["control"]), "--out", str(out)],
        stdout=subprocess.DEVNULL, stderr=slave,
        env={**os.environ, "PYTHONPATH": str(root / "src"), "COLUMNS": "200"},
    )  # fmt: skip
    os.close(slave)
    try:
        _wait_for(master, proc, "distance-based linkage")
        time.sleep(0.5)  # inside the linkage's 3e8 distances
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        seen = _wait_for(master, proc, "interrupted; nothing was published", timeout=60, running=False)
        proc.wait(timeout=60)
        latency = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(master)
    assert proc.returncode == 130, seen[-500:]
    assert not out.exists()
    print(f"attack: exit 130 {latency:.3f} s after SIGINT")


@pytest.mark.slow
def test_the_attack_checks_the_estimators_on_adult_kdd_and_german() -> None:
    """tools/attack_study.py with fixed seeds (docs/risk.md, "The attack as a check of the
    estimators"): the measured exact-match rate's interval holds the exact B, Pitman's interval
    (widened by the attack's binomial spread) holds the measured rate in >= 90 % of the runs, and
    Rocher et al.'s uniqueness reaches a median AUC >= 0.90 for predicting population uniqueness."""
    import argparse
    import importlib.util

    root = Path(__file__).resolve().parent.parent
    spec = importlib.util.spec_from_file_location("attack_study", root / "tools" / "attack_study.py")
    assert spec is not None and spec.loader is not None
    study = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(study)
    args = argparse.Namespace(kdd=str(study.SHARED / "census-income-kdd"),
                              german=str(study.SHARED / "german-credit" / "german.data"))  # fmt: skip
    result = study.study(["adult", "kdd", "german"], 20, 1, ["pitman"], args)
    pooled = result["pooled"]
    assert pooled["rate_holds_B"] >= 0.9
    assert pooled["pitman_interval_holds_B"] >= 0.9
    # the measured rate is B plus the attack's own Bernoulli noise: the estimator's interval holds it
    # once widened by that spread (the raw interval does not on small releases; docs/risk.md)
    assert pooled["pitman_interval_with_attack_noise_holds_rate"] >= 0.9
    assert pooled["auc_median"] >= 0.9


@pytest.mark.parametrize(
    ("text", "said"),
    [("id,age,age,sex\np1,39,40,Male\n", "duplicate column name"), ("id,age,sex\np1,39,Male\np2,50\n", "")],
)
def test_a_doubtful_frame_shape_is_refused_and_nothing_written(
    sampled: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, said: str
) -> None:
    (tmp_path / "f.csv").write_text(text)
    code = main(["attack", str(sampled["release"]), "--config", str(sampled["config"]), "--frame",
                 str(tmp_path / "f.csv"), "--id", "id", "--out", str(tmp_path / "o")])  # fmt: skip
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and said in err[0]
    assert not (tmp_path / "o").exists()
