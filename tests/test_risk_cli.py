"""``safeshare risk``: the JSON keys scripts rely on, and one-line errors with exit status 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "safeshare", "risk", *args], capture_output=True, text=True)


@pytest.fixture
def data(tmp_path: Path) -> Path:
    rows = ["age,sex,zip"] + [f"{20 + i % 7},{'fm'[i % 2]},{100 + i % 3}" for i in range(60)]
    path = tmp_path / "d.csv"
    path.write_text("\n".join(rows) + "\n")
    return path


def test_risk_json_keys_and_exact_B(data: Path, tmp_path: Path) -> None:
    res = _run(
        str(data),
        "--qi",
        "age,sex",
        "--population-size",
        "60",
        "--data-is-population",
        "--estimator",
        "all",
        "--out",
        str(tmp_path / "o"),
        "--quiet",
    )
    assert res.returncode == 0, res.stderr
    doc = json.loads((tmp_path / "o" / "risk.json").read_text())
    names = {"entropy", "hypothesis_test", "benedetti_franconi", "gaussian_copula", "dvine_copula", "average"}
    assert names <= set(doc["B_estimates"])
    assert doc["A"] == pytest.approx(14 / 60)  # 7 ages x 2 sexes, all present
    assert doc["B_exact"] == pytest.approx(14 / 60)
    assert doc["B_estimates"]["benedetti_franconi"] == pytest.approx(doc["B_exact"])


def test_benedetti_franconis_uniques_say_whose_they_are(tmp_path: Path) -> None:
    """Issue 30, item 14: risk.json and risk.html give Benedetti-Franconi's tau_1 (the sample's
    records estimated unique in the population) and say so; the other models' are the population's."""
    rows = ["age,sex"] + [f"{i},{'fm'[i % 2]}" for i in range(30)] + [f"{i % 5},f" for i in range(30)]
    data = tmp_path / "d.csv"
    data.write_text("\n".join(rows) + "\n")
    res = _run(str(data), "--qi", "age,sex", "--population-size", "600", "--estimator", "all",
               "--out", str(tmp_path / "o"), "--quiet")  # fmt: skip
    assert res.returncode == 0, res.stderr
    doc = json.loads((tmp_path / "o" / "risk.json").read_text())
    bf = doc["estimators"]["benedetti_franconi"]
    uniques = doc["measures"]["sample_uniques"]
    assert uniques == 27  # ages 5..29, and (1, m), (3, m), are unique
    assert bf["population_uniques"] == pytest.approx(uniques * 60 / 600)  # sum of P(F = 1 | f = 1) = n/N
    assert bf["population_uniques_of"] == "sample"
    assert doc["estimators"]["zayatz"]["population_uniques_of"] == "population"
    html = (tmp_path / "o" / "risk.html").read_text()
    assert "2.7 (of the sample's records)" in html


def test_without_population_there_is_no_B_exact(data: Path, tmp_path: Path) -> None:
    res = _run(
        str(data),
        "--qi",
        "age",
        "--population-size",
        "600",
        "--estimator",
        "entropy",
        "--out",
        str(tmp_path / "o"),
        "--quiet",
    )
    assert res.returncode == 0, res.stderr
    doc = json.loads((tmp_path / "o" / "risk.json").read_text())
    assert "B_exact" not in doc and set(doc["B_estimates"]) == {"entropy"}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--qi", "zip9", "--population-size", "100"], "unknown quasi-identifier"),
        (["--qi", "age", "--population-size", "10"], "smaller than the data"),
        (["--qi", "age", "--population-size", "100", "--estimator", "magic"], "unknown estimator"),
        (["--qi", "age", "--population-size", "100", "--data-is-population"], "differs from 60"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(data: Path, tmp_path: Path, args: list[str], message: str) -> None:
    res = _run(str(data), *args, "--out", str(tmp_path / "o"))
    assert res.returncode == 2
    assert message in res.stderr and len(res.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "o" / "risk.json").exists()


@pytest.mark.parametrize("spelling", [[], ["estimate"]])
def test_risk_is_a_group_that_still_takes_data_first(data: Path, tmp_path: Path, spelling: list[str]) -> None:
    """`safeshare risk DATA ...` (the fixed interface) and `safeshare risk estimate DATA ...` agree."""
    out = tmp_path / "o"
    res = _run(
        *spelling,
        str(data),
        "--qi",
        "age",
        "--population-size",
        "600",
        "--estimator",
        "entropy",
        "--out",
        str(out),
        "--quiet",
    )
    assert res.returncode == 0, res.stderr
    doc = json.loads((out / "risk.json").read_text())
    assert set(doc["B_estimates"]) == {"entropy"}


def test_risk_option_first_goes_to_estimate(data: Path, tmp_path: Path) -> None:
    res = _run(
        "--qi",
        "age",
        str(data),
        "--population-size",
        "600",
        "--estimator",
        "entropy",
        "--out",
        str(tmp_path / "o"),
        "--quiet",
    )
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "o" / "risk.json").exists()


def test_risk_help_lists_both_commands() -> None:
    res = _run("--help")
    assert res.returncode == 0, res.stderr
    assert "evaluate" in res.stdout and "estimate" in res.stdout
    for sub in ("estimate", "evaluate"):
        res = _run(sub, "--help")
        assert res.returncode == 0, res.stderr
        assert "--population-size" in res.stdout or "--qi" in res.stdout


def test_risk_without_arguments_shows_help() -> None:
    res = _run()
    assert "evaluate" in res.stdout + res.stderr


def test_unknown_option_of_the_default_command_is_one_line_exit_2(data: Path, tmp_path: Path) -> None:
    res = _run(str(data), "--qi", "age", "--population-size", "600", "--bogus", "--out", str(tmp_path / "o"))
    assert res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1


def test_default_estimator_is_the_documented_best(data: Path, tmp_path: Path) -> None:
    from safeshare.risk.estimators import DEFAULT_ESTIMATOR

    res = _run(str(data), "--qi", "age", "--population-size", "600", "--out", str(tmp_path / "o"), "--quiet")
    assert res.returncode == 0, res.stderr
    doc = json.loads((tmp_path / "o" / "risk.json").read_text())
    assert set(doc["B_estimates"]) == {DEFAULT_ESTIMATOR} == {doc["default_estimator"]}
    assert doc["B"] == doc["B_estimates"][DEFAULT_ESTIMATOR]
