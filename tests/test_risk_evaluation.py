"""``safeshare risk evaluate`` (the §2.8 simulation): design, exact B, summary, files, seeds and --jobs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from safeshare.errors import InputError
from safeshare.risk import evaluation as ev
from safeshare.risk.classes import SampleTable
from safeshare.risk.estimators import make_estimator


def _population_frame(n: int = 600, seed: int = 1) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    age = rng.integers(18, 60, n)
    return pd.DataFrame(
        {
            "age": age.astype(str),
            "sex": rng.choice(["f", "m"], n),
            "zip": ((age // 10 + rng.integers(0, 3, n)) % 5).astype(str),
            "race": rng.choice(["a", "b", "c"], n, p=[0.8, 0.15, 0.05]),
        }
    )


@pytest.fixture(scope="module")
def population() -> ev.Population:
    return ev.Population.from_frame(_population_frame(), ["age", "sex", "zip", "race"])


def test_design_depends_on_seed_and_point_only() -> None:
    a = ev.design_point(7, 3, 4, 600)
    b = ev.design_point(7, 3, 4, 600)
    assert a.qis == b.qis and a.estimator_seed == b.estimator_seed and np.array_equal(a.rows, b.rows)
    others = [ev.design_point(7, p, 4, 600) for p in range(20)]
    assert len({o.sampling_fraction for o in others}) == 20
    assert {len(o.qis) for o in others} <= {1, 2, 3, 4} and len({len(o.qis) for o in others}) > 1
    for o in others:
        assert 0.01 <= o.sampling_fraction <= 0.99 and len(o.rows) == round(o.sampling_fraction * 600)
        assert len(set(o.rows.tolist())) == len(o.rows)  # without replacement


def test_exact_B_and_sample_table_match_a_direct_computation(population: ev.Population) -> None:
    frame = _population_frame()
    d = ev.design_point(0, 5, 4, len(frame))
    cols = [population.columns[q] for q in d.qis]
    F = frame.groupby(cols)[cols[0]].transform("size")
    assert ev.exact_B(population, d.qis, d.rows) == pytest.approx(float(np.mean(1.0 / F.iloc[d.rows])))
    direct = SampleTable.from_frame(frame.iloc[d.rows], cols)
    table = ev.sample_table(population, d.qis, d.rows)
    assert table.categories == direct.categories
    assert np.array_equal(table.codes, direct.codes) and np.array_equal(table.counts, direct.counts)


def test_average_is_the_average_estimator_and_sensitivity_is_a_refit(population: ev.Population) -> None:
    settings = ev.EvaluationSettings(
        points=1,
        seed=2,
        estimators=("gaussian_copula", "dvine_copula", "average"),
        population_size_errors=(0.2,),
        sensitivity_estimator="gaussian_copula",
    )
    r = ev.run_point(population, settings, 0)
    d = ev.design_point(2, 0, 4, population.size)
    table = ev.sample_table(population, d.qis, d.rows)
    avg = make_estimator("average", random_state=d.estimator_seed).fit(table, population.size)
    assert r.estimates["average"] == pytest.approx(avg.B_, abs=1e-12)
    assert r.estimates["gaussian_copula"] == pytest.approx(avg.gaussian_.B_, abs=1e-12)
    n2, b2 = r.sensitivity[0.2]
    assert n2 == 720
    refit = make_estimator("gaussian_copula", random_state=d.estimator_seed).fit(table, 720)
    assert b2 == pytest.approx(refit.B_, abs=1e-12)


def test_summary_bins_bands_and_acceptance() -> None:
    errors = pd.DataFrame(
        {
            "estimator": ["x"] * 12 + ["y"] * 12,
            "true_B": [0.05] * 10 + [0.55, 1.0] + [0.05] * 10 + [0.55, 1.0],
            "sampling_fraction": [0.05, 0.1, 0.5, 0.51] * 6,
            "error": [0.01] * 12 + [0.2] * 10 + [0.0, np.nan],
        }
    )
    s = ev.summarize(errors)
    x = s[s["estimator"] == "x"].set_index("bin")
    assert list(s[(s["estimator"] == "x") & (s["group"] == "true_B")]["bin"]) == [
        "0.0-0.1",
        "0.5-0.6",
        "0.9-1.0",
    ]
    assert list(s[(s["estimator"] == "x") & (s["group"] == "sampling_fraction")]["points"]) == [3, 6, 3]
    assert x.loc["all", "within_0.05"] == 1.0 and x.loc["all", "median_error"] == pytest.approx(0.01)
    y = s[s["estimator"] == "y"].set_index("bin")
    assert y.loc["all", "points"] == 11 and y.loc["all", "failed"] == 1
    acc = ev.acceptance(s)
    assert acc["x"]["passes"] and not acc["y"]["passes"] and acc["y"]["bins_failing"] == ["0.0-0.1"]
    assert ev.rank_estimators(s) == ["x", "y"]


def test_settings_refuse_bad_values() -> None:
    with pytest.raises(InputError, match="unknown estimator"):
        ev.EvaluationSettings(points=3, seed=0, estimators=("magic",)).validate()
    with pytest.raises(InputError, match="population-size-error"):
        ev.EvaluationSettings(
            points=3, seed=0, estimators=("entropy",), population_size_errors=(1.5,)
        ).validate()
    with pytest.raises(InputError, match="--qi"):
        ev.Population.from_frame(_population_frame(), ["age", "zip9"])


def _evaluate(data: Path, out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "safeshare",
            "risk",
            "evaluate",
            str(data),
            "--qi",
            "age,sex,zip,race",
            "--simulations",
            "5",
            "--seed",
            "11",
            "--out",
            str(out),
            "--quiet",
            *extra,
        ],
        capture_output=True,
        text=True,
    )


def test_evaluate_files_and_jobs_independence(tmp_path: Path, population: ev.Population) -> None:
    """5 points through the CLI in 2 processes equal the same points run here in one (same seed)."""
    data = tmp_path / "pop.csv"
    _population_frame().to_csv(data, index=False)
    out = tmp_path / "j2"
    res = _evaluate(data, out, "--jobs", "2", "--no-plots")
    assert res.returncode == 0, res.stderr
    errors = pd.read_csv(out / "errors.csv")
    assert list(errors.columns[:7]) == [
        "point",
        "n_qis",
        "sampling_fraction",
        "true_B",
        "estimator",
        "estimate",
        "error",
    ]
    assert sorted(set(errors["point"])) == [0, 1, 2, 3, 4] and len(set(errors["estimator"])) == 10
    assert np.allclose(errors["error"], errors["estimate"] - errors["true_B"], equal_nan=True)
    names = tuple(dict.fromkeys(errors["estimator"]))
    here = ev.errors_frame(ev.run_points(population, ev.EvaluationSettings(5, 11, names), jobs=1), names)
    assert np.allclose(here["estimate"], errors["estimate"], rtol=0, atol=1e-12, equal_nan=True)
    assert np.allclose(here["true_B"], errors["true_B"], rtol=0, atol=1e-15)
    sens = pd.read_csv(out / "sensitivity.csv")
    assert sorted(set(sens["population_size_error"])) == [-0.3, -0.2, -0.1, 0.0, 0.1, 0.2, 0.3]
    assert set(pd.read_csv(out / "summary.csv")["group"]) == {"all", "true_B", "sampling_fraction"}
    doc = json.loads((out / "evaluation.json").read_text())
    assert doc["seed"] == 11 and doc["points"] == 5 and doc["population_size"] == 600
    assert set(doc["acceptance"]) == set(names) and doc["figures"] == []


@pytest.mark.slow
def test_evaluate_reruns_are_byte_identical_and_plots_are_written(tmp_path: Path) -> None:
    data = tmp_path / "pop.csv"
    _population_frame(400).to_csv(data, index=False)
    one, two = tmp_path / "j1", tmp_path / "j2"
    assert _evaluate(data, one, "--jobs", "1").returncode == 0
    assert _evaluate(data, two, "--jobs", "2", "--no-plots").returncode == 0
    for name in ("errors.csv", "summary.csv", "sensitivity.csv", "sensitivity_summary.csv"):
        assert (one / name).read_bytes() == (two / name).read_bytes(), name
    for stem in ("errors_by_true_risk", "sensitivity"):
        for fmt in ("svg", "png"):
            assert (one / f"{stem}.{fmt}").stat().st_size > 1000
    res = _evaluate(
        data, tmp_path / "s2", "--seed", "12", "--estimator", "entropy", "--population-size-error", ""
    )
    assert res.returncode == 0, res.stderr
    assert not (tmp_path / "s2" / "sensitivity.csv").exists()
    other = pd.read_csv(tmp_path / "s2" / "errors.csv")
    errors = pd.read_csv(one / "errors.csv")
    assert not np.allclose(other["true_B"], errors[errors["estimator"] == "entropy"]["true_B"])


def test_evaluate_bad_input_is_one_line_exit_2(tmp_path: Path) -> None:
    data = tmp_path / "pop.csv"
    _population_frame(50).to_csv(data, index=False)
    res = _evaluate(data, tmp_path / "o", "--estimator", "entropy,magic")
    assert res.returncode == 2 and "unknown estimator" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1 and not (tmp_path / "o").exists()


def test_sigint_with_worker_processes_ends_them_at_once(population: ev.Population) -> None:
    """A real SIGINT, with the command line's handler, while 2 worker processes compute points
    that would take hours (10^6 syntheses each): Interrupted reaches the caller and no worker is
    left running (the pool is terminated, not drained). The latency is printed."""
    import multiprocessing
    import os
    import signal
    import threading
    import time

    from safeshare.app_runner import signal_guard
    from safeshare.errors import Interrupted

    settings = ev.EvaluationSettings(
        points=4,
        seed=0,
        estimators=("dvine_copula",),
        population_size_errors=(),
        estimator_params=(("repetitions", 10**6),),
    )
    sent: list[float] = []
    computing: list[bool] = []

    def in_the_estimator(pid: int) -> bool:
        """The worker has loaded the vine library: it is fitting a point's copula."""
        try:
            return "pyvinecopulib" in Path(f"/proc/{pid}/maps").read_text()
        except OSError:
            return False

    def fire() -> None:
        # the signal comes once both workers compute (their start-up, spawn and imports, is
        # over), at most 30 s after the start (about 4 s on 2 busy cores; before, a fixed 8 s)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            workers = multiprocessing.active_children()
            if len(workers) == 2 and all(in_the_estimator(w.pid or 0) for w in workers):
                computing.append(True)
                break
            time.sleep(0.05)
        sent.append(time.monotonic())
        os.kill(os.getpid(), signal.SIGINT)

    timer = threading.Thread(target=fire)
    with signal_guard(), pytest.raises(Interrupted):
        timer.start()
        ev.run_points(population, settings, jobs=2)
    timer.join()
    latency = time.monotonic() - sent[0]
    assert computing, "the workers never reached the estimator"
    assert multiprocessing.active_children() == []
    print(f"run_points(jobs=2): interrupted {latency:.3f} s after SIGINT, workers gone")
