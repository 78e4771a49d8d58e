"""``safeshare dp params``: the JSON contract, solving for a parameter, the §6.2.1 grid, bad input."""

from __future__ import annotations

import json
import math

import pytest

from safeshare.cli import main
from safeshare.dp.parameters import d_function, gamma


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_params_json_is_one_object(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["dp", "params", "--k", "50", "--beta", "0.75", "--epsilon", "2", "--epsilon-prime", "0.5"]
    code, out, err = run([*args, "--n", "32561", "--json"], capsys)
    assert code == 0, err
    doc = json.loads(out)  # exactly one JSON document
    assert out.count("\n") == 1
    assert {"gamma", "delta", "epsilon_min"} <= set(doc)
    assert doc["gamma"] == pytest.approx(gamma(0.75, 1.5))
    assert doc["epsilon_min"] == pytest.approx(-math.log(0.25) + 0.5)
    assert doc["delta"] == pytest.approx(d_function(50, 0.75, 1.5, 32561).value)


def test_params_solves_for_k(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["dp", "params", "--beta", "0.75", "--epsilon", "2", "--epsilon-prime", "0.5", "--n", "32561"]
    code, out, _ = run([*args, "--delta", "1e-4", "--json"], capsys)
    doc = json.loads(out)
    assert code == 0 and doc["solved"] == ["k"] and doc["delta"] <= 1e-4 and doc["meets_target"]
    assert d_function(doc["k"] - 1, 0.75, 1.5, 32561).value > 1e-4
    code, out, _ = run([*args, "--delta", "1e-4"], capsys)  # readable table
    assert code == 0 and "(solved)" in out


def test_params_reports_tiny_deltas(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["dp", "params", "--k", "400", "--beta", "0.05", "--epsilon", "2", "--epsilon-prime", "0"]
    code, out, _ = run([*args, "--n", "1500", "--json"], capsys)
    doc = json.loads(out)
    assert code == 0 and doc["delta"] == 0.0 and doc["log10_delta"] < -350
    assert doc["delta_scientific"].endswith(f"e{math.floor(doc['log10_delta'])}")


def test_grid_compares_with_the_thesis(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(["dp", "params", "--grid", "--json"], capsys)
    assert code == 0, err
    doc = json.loads(out)
    summary = doc["summary"]
    assert summary["thesis_k"] == 50 and summary["k_min_all_cells"] >= 50
    assert summary["k_min_all_cells"] == max(r["k_min"] for r in doc["rows"] if r["k_min"] is not None)
    code, out, _ = run(["dp", "params", "--grid"], capsys)
    assert code == 0 and "the thesis reports k = 50" in " ".join(out.split())


@pytest.mark.parametrize(
    "args",
    [
        ["--k", "50", "--beta", "2", "--epsilon", "2", "--epsilon-prime", "0.5", "--n", "100"],
        ["--k", "50", "--beta", "0.5", "--epsilon", "2", "--epsilon-prime", "0.5"],  # no --n
        ["--beta", "0.5", "--epsilon", "2", "--epsilon-prime", "0.5", "--n", "100"],  # k without --delta
        ["--k", "50", "--beta", "0.5", "--epsilon", "0.1", "--epsilon-prime", "0.5", "--n", "100"],
        ["--k", "0", "--beta", "0.5", "--epsilon", "2", "--epsilon-prime", "0.5", "--n", "100"],
    ],
)
def test_bad_params_exit_2_one_line(capsys: pytest.CaptureFixture[str], args: list[str]) -> None:
    code, out, err = run(["dp", "params", *args], capsys)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and err.startswith("error: ")
