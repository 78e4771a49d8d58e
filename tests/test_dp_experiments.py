"""Thesis §6.2.2-6.2.3: the Fig. 6.3 / 6.4 shapes, with the thesis' calibration and with correct ones."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from safeshare.workflows.dp_experiment import (
    default_config,
    evaluate,
    good_nodes,
    run_experiments,
    shape_checks,
    stored_samples,
)


@pytest.fixture(scope="module")
def results() -> pd.DataFrame:
    samples = stored_samples(default_config(), n_samples=10, seed=2024)
    assert all(s.data.prec.size == 108 for s in samples)  # the thesis' 108-node lattice
    assert all(abs(s.data.n_sampled / s.data.n_input - 0.75) < 0.01 for s in samples)
    assert len({s.data.n_sampled for s in samples}) > 1  # ten different stored samples
    return evaluate(samples)


def test_thesis_calibration_reproduces_the_thesis_shapes(results: pd.DataFrame) -> None:
    checks = shape_checks(results)
    thesis = checks["thesis-calibration"]
    # suppression penalty: near 1 around p ~ 0.04, below the uniform baseline by p ~ 0.2
    assert thesis["suppression_max_p_good"] > 0.95 and thesis["suppression_argmax_penalty"] == 0.04
    assert thesis["suppression_max_p_good_at_0.2"] < checks["baseline_p_good"]
    # k-anonymity penalty: stays under ~0.45, best at p = 0.5 ("0.5 ... worked the best")
    assert 0.3 < thesis["kanonymity_max_p_good"] <= 0.45 and thesis["kanonymity_argmax_penalty"] == 0.5
    assert thesis["reproduces_thesis_shapes"]
    # "essentially invariant to changes of eps'" with the suppression penalty (thesis calibration)
    sup = results[(results.calibration == "thesis-calibration") & (results.penalty_mode == "suppression")]
    at = sup[np.isclose(sup.penalty, 0.04)]
    assert at.p_good.max() - at[at.epsilon_prime >= 0.1].p_good.min() < 0.02


def test_correct_calibrations_change_the_picture(results: pd.DataFrame) -> None:
    checks = shape_checks(results)
    # the inverse utility with its true sensitivity is close to the uniform baseline
    exact = checks["thesis-exact"]
    assert exact["suppression_max_p_good"] < 0.3 and not exact["reproduces_thesis_shapes"]
    # the linear utility (same penalties, Du = Dpen) keeps the peak for large eps'
    linear = results[(results.calibration == "linear") & (results.penalty_mode == "suppression")]
    assert linear[linear.epsilon_prime == 2.0].p_good.max() > 0.9
    assert linear[linear.epsilon_prime == 0.01].p_good.max() < 0.2  # ... but not for tiny eps'
    # every DP calibration is DP, the thesis' is not
    flags = results.groupby("calibration").differentially_private.all()
    assert not flags["thesis-calibration"] and flags[["thesis-exact", "linear", "safepub"]].all()


def test_baseline_is_the_fraction_of_good_nodes() -> None:
    samples = stored_samples(default_config(), n_samples=2, seed=7)
    r = evaluate(samples, epsilon_primes=(1.0,), penalties=(0.04,))
    base = r[r.calibration == "uniform"].iloc[0]
    assert base.p_good == pytest.approx(np.mean([good_nodes(s.data).mean() for s in samples]))
    assert base.expected_suppression == pytest.approx(
        np.mean([s.data.suppressed_fraction.mean() for s in samples])
    )


@pytest.mark.slow
def test_run_writes_csv_json_and_plots(tmp_path: Path) -> None:
    paths = run_experiments(default_config(), tmp_path / "exp", n_samples=3)
    names = sorted(p.name for p in paths)
    assert "dp_experiments.csv" in names and "dp_experiments.json" in names
    assert sum(n.endswith(".png") for n in names) == 4
    doc = json.loads((tmp_path / "exp" / "dp_experiments.json").read_text())
    assert doc["lattice_nodes"] == 108 and len(doc["samples"]) == 3
