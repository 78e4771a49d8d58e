"""Epsilon-safe LA end to end (thesis §4.5.4): dry run, verified release, reproducibility, bad input."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from safeshare.cli import main
from safeshare.config import load_config
from safeshare.data.engines.memory import MemoryEngine
from safeshare.dp.drbg import CryptoRandom
from safeshare.dp.epsilon_safe import EpsilonSafeParams, EpsilonSafeStrategy
from safeshare.dp.mechanism import sample_indices
from safeshare.dp.parameters import d_function
from safeshare.dp.sampling import draw_sample
from safeshare.errors import ConfigError
from safeshare.models import KAnonymity
from safeshare.workflows.anonymizer import Anonymizer
from safeshare.workflows.epsilon_safe import EpsilonSafeAnonymizer
from tests.conftest import ADULT_DIR

CONFIG = ADULT_DIR / "adult-dp.yaml"
QIS = ["workclass", "marital-status", "occupation", "race", "sex"]


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture(scope="module")
def adult_frame() -> pd.DataFrame:
    return MemoryEngine(load_config(CONFIG).source).frame


def sampled_frame(frame: pd.DataFrame, beta: float, seed: int) -> pd.DataFrame:
    """The records the run sampled, recomputed from the documented generator."""
    keep = draw_sample(len(frame), beta, CryptoRandom(seed)).keep
    return frame.loc[keep, QIS].reset_index(drop=True)


def test_dry_run_writes_the_exact_distribution(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], adult_frame: pd.DataFrame
) -> None:
    out = tmp_path / "dist"
    args = ["anonymize", str(CONFIG), "--out", str(out), "--dry-run", "--seed", "5"]
    args += [
        "--utility-function",
        "thesis",
        "--penalty",
        "0.5",
        "--penalty-mode",
        "k-anonymity",
        "--epsilon-prime",
        "1",
        "--epsilon",
        "3",
    ]
    code, stdout, stderr = run(args, capsys)
    assert code == 0, stderr
    listed = sorted(p.name for p in out.iterdir())
    assert listed == [".safeshare-output", "distribution.csv", "distribution.json"]
    dist = pd.read_csv(out / "distribution.csv")
    doc = json.loads((out / "distribution.json").read_text())
    assert len(dist) == 108 and list(dist.columns[:5]) == QIS
    assert {"utility", "probability"} <= set(dist.columns)
    assert {"sensitivity", "epsilon_prime", "beta", "k", "penalty", "penalty_mode", "utility"} <= set(doc)
    assert doc["epsilon_prime"] == 1.0 and doc["k"] == 50 and doc["seed"] == 5
    # the probabilities are exp(eps' u / (2 Du)), normalized, recomputed here from the CSV
    u = dist["utility"].to_numpy()
    finite = np.isfinite(u)
    assert not finite[0] and finite[1:].all()  # the bottom node (Prec 0) is excluded
    w = np.exp(doc["epsilon_prime"] * (u[finite] - u[finite].max()) / (2 * doc["sensitivity"]))
    assert np.allclose(dist["probability"].to_numpy()[finite], w / w.sum(), rtol=1e-9)
    assert dist["probability"].sum() == pytest.approx(1.0)
    # the sensitivity is the derived one: 1/P_min - 1/(P_min + p), P_min = 1/(5 * 2)
    assert doc["sensitivity"] == pytest.approx(10 - 1 / (0.1 + 0.5))
    # suppression per node equals a pandas group-by of the sampled, generalized records
    sample = sampled_frame(adult_frame, 0.75, 5)
    assert doc["records_sampled"] == len(sample)
    hier = {
        q: pd.read_csv(ADULT_DIR / "hierarchies" / f"{q}.csv", sep=";", header=None, dtype=str) for q in QIS
    }
    for _, row in dist.sample(12, random_state=1).iterrows():
        gen = pd.DataFrame(
            {q: sample[q].map(dict(zip(hier[q][0], hier[q][int(row[q])], strict=True))) for q in QIS}
        )
        sizes = gen.groupby(QIS).size()
        assert int(row["suppressed_records"]) == int(sizes[sizes < 50].sum())
    assert "not for release" in " ".join(stdout.split())


def test_release_is_verified_and_made_of_sampled_records(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], adult_frame: pd.DataFrame
) -> None:
    out = tmp_path / "rel"
    args = ["anonymize", str(CONFIG), "--out", str(out), "--seed", "11", "--utility-function", "linear"]
    args += ["--penalty", "0.04", "--epsilon-prime", "2", "--epsilon", "3.5"]
    code, _, stderr = run(args, capsys)
    assert code == 0, stderr
    report = json.loads((out / "report.json").read_text())
    for key in ("beta", "epsilon", "epsilon_prime", "delta", "utility", "node_utility", "node_probability"):
        assert key in report, key
    assert report["verified"] is True and report["algorithm"] == "epsilon-safe"
    assert report["seed"] == 11 and report["epsilon"] == 3.5 and report["epsilon_prime"] == 2.0
    assert report["delta"] == pytest.approx(d_function(50, 0.75, 1.5, 32561).value)
    assert report["records_before_sampling"] == 32561
    sample = sampled_frame(adult_frame, 0.75, 11)
    assert report["records_in"] == report["records_sampled"] == len(sample)
    release = pd.read_csv(out / "release.csv", dtype=str, keep_default_na=False)
    assert list(release.columns) == QIS  # identifying columns dropped, every released column a QI
    sizes = release.groupby(QIS).size()
    assert sizes.min() >= 50
    # the release is exactly the sampled records, generalized, minus the classes smaller than k
    levels = report["levels"]
    hier = {
        q: pd.read_csv(ADULT_DIR / "hierarchies" / f"{q}.csv", sep=";", header=None, dtype=str) for q in QIS
    }
    gen = pd.DataFrame(
        {q: sample[q].map(dict(zip(hier[q][0], hier[q][levels[q]], strict=True))) for q in QIS}
    )
    gsizes = gen.groupby(QIS).size()
    expected = gsizes[gsizes >= 50].sort_index()
    assert sizes.sort_index().equals(expected)
    assert report["suppressed_records"] == int(gsizes[gsizes < 50].sum())
    assert report["privacy"]["max_suppression"] == 1.0  # suppression is unbounded in this mode


def test_same_seed_same_release_and_no_seed_is_not_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    common = ["anonymize", str(CONFIG), "--utility-function", "safepub", "-q"]
    assert run([*common, "--out", str(tmp_path / "a"), "--seed", "1789"], capsys)[0] == 0
    assert run([*common, "--out", str(tmp_path / "b"), "--seed", "1789"], capsys)[0] == 0
    assert (tmp_path / "a" / "release.csv").read_bytes() == (tmp_path / "b" / "release.csv").read_bytes()
    assert run([*common, "--out", str(tmp_path / "c")], capsys)[0] == 0
    report = json.loads((tmp_path / "c" / "report.json").read_text())
    assert "seed" not in report and "seed" not in json.dumps(report["differential_privacy"])
    assert json.loads((tmp_path / "a" / "report.json").read_text())["seed"] == 1789


def test_node_draws_follow_the_reported_probabilities() -> None:
    """Chi-square: nodes drawn with the mechanism's generator stream match the exact distribution."""
    cfg = load_config(CONFIG)
    params = EpsilonSafeParams(beta=0.75, epsilon_prime=2.0, utility="linear", penalty=0.04, seed=8)
    spec = dataclasses.replace(cfg.spec(), algorithm_options={"params": params})
    run_ = EpsilonSafeAnonymizer(spec).dry_run(MemoryEngine(cfg.source))
    probs = run_.distribution.probabilities
    draws = sample_indices(probs, CryptoRandom(8).stream("mechanism"), 30_000)
    counts = np.bincount(draws, minlength=probs.size)
    big = probs * 30_000 >= 5
    obs = np.append(counts[big], counts[~big].sum())
    exp = np.append(probs[big], probs[~big].sum()) * 30_000
    assert stats.chisquare(obs, exp).pvalue > 1e-4


def test_thesis_calibration_warns_and_needs_explicit_consent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    common = [
        "anonymize",
        str(CONFIG),
        "--utility-function",
        "thesis",
        "--penalty",
        "0.04",
        "--sensitivity",
        "thesis",
    ]
    code, _, stderr = run([*common, "--out", str(tmp_path / "d"), "--dry-run"], capsys)
    assert code == 0 and "NOT epsilon'-differentially" in stderr
    doc = json.loads((tmp_path / "d" / "distribution.json").read_text())
    assert doc["differentially_private"] is False and "warning" in doc
    assert doc["sensitivity"] == pytest.approx(0.04 * 100 / doc["records_sampled"])
    assert doc["effective_epsilon_prime"] is None  # the bottom node is a candidate: unbounded
    code, _, stderr = run([*common, "--out", str(tmp_path / "r")], capsys)
    assert code == 2 and "allow-non-dp" in stderr and not (tmp_path / "r").exists()
    code, _, _ = run([*common, "--out", str(tmp_path / "r"), "--allow-non-dp", "-q"], capsys)
    assert code == 0
    assert "warning" in json.loads((tmp_path / "r" / "report.json").read_text())


def bad_dp_configs(tmp: Path) -> dict[str, Path]:
    base = CONFIG.read_text().replace("hierarchies/", f"{ADULT_DIR}/hierarchies/")
    base = base.replace("path: adult.data", f"path: {ADULT_DIR / 'adult.data'}")
    variants = {
        "non-QI column": base.replace("income:         {role: identifying}", "income: {role: insensitive}"),
        "builder hierarchy": base.replace(
            f"{{role: quasi, hierarchy: {ADULT_DIR}/hierarchies/sex.csv}}",
            "{role: quasi, hierarchy: {type: suppression}}",
        ),
        "unknown dp key": base.replace("  beta: 0.75", "  beta: 0.75\n  betta: 0.5"),
        "beta as text": base.replace("  beta: 0.75", "  beta: high"),
        "beta above 1": base.replace("  beta: 0.75", "  beta: 1.5"),
        "no epsilon prime": base.replace("  epsilon_prime: 0.45\n", ""),
        "other model": base.replace("k-anonymity: {k: 50}", "k-anonymity: {k: 50}\n  l-diversity: {l: 2}"),
        "k above N": base.replace("k-anonymity: {k: 50}", "k-anonymity: {k: 40000}"),
        "max_loss": base.replace("max_suppression: 0.05", "max_suppression: 0.05\nmax_loss: 0.5"),
        "knowledge": base.replace("max_suppression: 0.05", "max_suppression: 0.05\nknowledge: {sex: 0.5}"),
    }
    out = {}
    for name, text in variants.items():
        p = tmp / (name.replace(" ", "_") + ".yaml")
        p.write_text(text)
        out[name] = p
    return out


def test_bad_configs_exit_2_one_line_nothing_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    expected = {
        "non-QI column": "column 'income'",
        "builder hierarchy": "column 'sex'",
        "unknown dp key": "betta",
        "beta as text": "dp.beta",
        "beta above 1": "dp.beta",
        "no epsilon prime": "epsilon_prime",
        "other model": "privacy",
        "k above N": "exceeds",
        "max_loss": "max_loss",
        "knowledge": "knowledge",
    }
    for name, config in bad_dp_configs(tmp_path).items():
        out = tmp_path / f"out_{name.replace(' ', '_')}"
        code, _, stderr = run(["anonymize", str(config), "--out", str(out)], capsys)
        lines = stderr.strip().splitlines()
        assert code == 2 and len(lines) == 1 and lines[0].startswith("error: "), (name, stderr)
        assert expected[name] in lines[0], (name, lines[0])
        assert not out.exists(), name


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (["--beta", "0"], "--beta"),
        (["--epsilon-prime", "-1"], "--epsilon-prime"),
        (["--epsilon", "0.5"], "below"),  # below -ln(1 - 0.75) + 0.5
        (["--utility-function", "magic"], "--utility-function"),
        (["--penalty-mode", "both"], "--penalty-mode"),
        (["--utility-function", "thesis", "--penalty-mode", "suppression", "--penalty", "-2"], "penalty"),
        (["--reference-size", "0"], "--reference-size"),
        (["--sensitivity", "thesis", "--utility-function", "linear"], "thesis utility only"),
        (["--engine", "duckdb"], "Parquet files only"),  # CSV rows have no stable number in DuckDB
    ],
)
def test_bad_options_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], match: str
) -> None:
    out = tmp_path / "o"
    code, _, stderr = run(["anonymize", str(CONFIG), "--out", str(out), *args], capsys)
    assert code == 2 and len(stderr.strip().splitlines()) == 1 and match in stderr, stderr
    assert not out.exists()


def test_dp_options_need_the_epsilon_safe_algorithm(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = ADULT_DIR / "adult.yaml"
    code, _, stderr = run(["anonymize", str(config), "--out", str(tmp_path / "x"), "--beta", "0.5"], capsys)
    assert code == 2 and "--beta applies to --algorithm epsilon-safe only" in stderr
    code, _, stderr = run(["anonymize", str(config), "--out", str(tmp_path / "x"), "--dry-run"], capsys)
    assert code == 2 and "--dry-run" in stderr


def test_strategy_refuses_unsampled_data() -> None:
    cfg = load_config(CONFIG)
    with pytest.raises(ConfigError, match=r"epsilon-safe needs dp\.beta"):  # no parameters
        Anonymizer(cfg.schema, [KAnonymity(50)], max_suppression=0.05, algorithm="epsilon-safe")
    # the strategy samples in its prepare step (called by Anonymizer.fit); run() alone refuses
    strategy = EpsilonSafeStrategy(EpsilonSafeParams(beta=0.5, epsilon_prime=0.5, utility="safepub"))
    with pytest.raises(ConfigError, match="samples the records"):
        strategy.run(None)  # type: ignore[arg-type]


def test_the_dp_options_are_part_of_the_spec_built_once_by_the_config() -> None:
    """The file's ``dp:`` section and the command-line overrides become one EpsilonSafeParams."""
    cfg = load_config(CONFIG)
    assert not hasattr(cfg, "raw")  # nothing downstream parses the file a second time
    spec = cfg.with_overrides(beta=0.5, seed=7, penalty=None).spec()
    params = spec.algorithm_options["params"]
    assert isinstance(params, EpsilonSafeParams)
    assert (params.beta, params.epsilon_prime, params.penalty, params.seed) == (0.5, 0.45, 0.04, 7)
    runner = EpsilonSafeAnonymizer(spec)
    assert (runner.k, runner.max_suppression, runner.params) == (50, 0.05, params)
    with pytest.raises(ConfigError, match="--beta"):
        cfg.with_overrides(beta=2.0).spec()
    with pytest.raises(ConfigError, match="unknown option 'betta'"):
        cfg.with_overrides(betta=0.5)
    with pytest.raises(ConfigError, match="--seed: expected an integer"):  # an integer everywhere
        cfg.with_overrides(seed="s")
    with pytest.raises(ConfigError, match="privacy: epsilon-safe anonymization supports exactly one"):
        dataclasses.replace(spec, privacy=(KAnonymity(50), KAnonymity(60)))
    with pytest.raises(ConfigError, match="needs its parameters"):
        dataclasses.replace(spec, algorithm_options={"params": {"beta": 0.5}})
    with pytest.raises(ConfigError, match="epsilon-safe"):
        EpsilonSafeAnonymizer(dataclasses.replace(spec, algorithm="ola", algorithm_options={}))


def test_epsilon_defaults_to_its_minimum() -> None:
    p = EpsilonSafeParams(beta=0.75, epsilon_prime=0.5, utility="safepub").dps(50, 32561)
    assert p.epsilon == pytest.approx(-math.log(0.25) + 0.5)


def test_duckdb_engine_on_parquet_gives_the_memory_engines_release(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], adult_frame: pd.DataFrame
) -> None:
    """Same seed, same sample, same node, same release: the DuckDB engine samples by file row number."""
    data = tmp_path / "adult.parquet"
    adult_frame.to_parquet(data, index=False)
    text = CONFIG.read_text().replace("path: adult.data", f"path: {data}").replace("header: false", "")
    text = text.replace("hierarchies/", f"{ADULT_DIR}/hierarchies/")
    config = tmp_path / "adult-dp.yaml"
    config.write_text(text)
    releases, reports = {}, {}
    for engine in ("memory", "duckdb"):
        out = tmp_path / engine
        code, _, stderr = run(
            ["anonymize", str(config), "--out", str(out), "--seed", "23", "--engine", engine], capsys
        )
        assert code == 0, stderr
        reports[engine] = json.loads((out / "report.json").read_text())
        frame = pd.read_csv(out / "release.csv", dtype=str, keep_default_na=False)
        releases[engine] = frame.sort_values(list(frame.columns)).reset_index(drop=True)
    assert reports["duckdb"]["engine"] == "duckdb" and reports["duckdb"]["verified"] is True
    for key in ("levels", "records_in", "suppressed_records", "records_out"):
        assert reports["duckdb"][key] == reports["memory"][key], key
    pd.testing.assert_frame_equal(releases["duckdb"], releases["memory"])


def test_every_requirement_is_told_at_once_before_any_data_is_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 30, item 18: the trial met beta, then the penalty factor after seconds of work,
    then the QIs, then the hierarchy files, one failed run at a time. The Adult demo with
    ``--algorithm epsilon-safe`` and every requirement unmet gets them all in one line, exit 2,
    and the input is never opened."""
    import safeshare.data.engines.factory as factory

    def never(*args: object, **kwargs: object) -> None:
        raise AssertionError("the input was read")

    monkeypatch.setattr(factory, "make_engine", never)
    text = (ADULT_DIR / "adult.yaml").read_text().replace("hierarchies/", f"{ADULT_DIR}/hierarchies/")
    text = text.replace("path: adult.data", f"path: {ADULT_DIR / 'adult.data'}")
    text = text.replace(f"{{role: quasi, hierarchy: {ADULT_DIR}/hierarchies/sex.csv}}", "{role: quasi, "
                        "hierarchy: {type: suppression}}")  # fmt: skip
    text = text.replace("k-anonymity: {k: 5}", "k-anonymity: {k: 5}\n  l-diversity: {l: 2}")
    text = text.replace("metric: prec", "metric: entropy")
    config = tmp_path / "adult.yaml"
    config.write_text(text)
    out = tmp_path / "o"
    code, _, stderr = run(
        [
            "anonymize",
            str(config),
            "--out",
            str(out),
            "--algorithm",
            "epsilon-safe",
            "--sensitivity",
            "thesis",
        ],
        capsys,
    )
    lines = stderr.strip().splitlines()
    assert code == 2 and len(lines) == 1 and not out.exists(), stderr
    for needed in (
        "algorithm epsilon-safe needs",
        "dp.beta (or --beta): missing",
        "dp.epsilon_prime (or --epsilon-prime): missing",
        "needs a penalty factor",
        "not differentially private",
        "privacy: exactly one privacy model, k-anonymity (got l-diversity)",
        "metric: algorithm epsilon-safe scores nodes by prec",
        "column 'capital-gain' has role sensitive",
        "column 'income' has role insensitive",
        "column 'sex' uses a builder",
    ):
        assert needed in lines[0], (needed, lines[0])
    # without any dp option there is no dp section at all: it was an internal AssertionError
    code, _, stderr = run(
        ["anonymize", str(config), "--out", str(out), "--algorithm", "epsilon-safe"], capsys
    )
    assert code == 2 and "dp.beta (or --beta): missing" in stderr and "internal error" not in stderr, stderr
    # once they are met, the run goes on (and the same configuration with them met is released)
    monkeypatch.undo()
    code, _, stderr = run(["anonymize", str(CONFIG), "--out", str(out), "-q"], capsys)
    assert code == 0, stderr


def test_the_requirements_are_one_function_for_the_configuration_and_the_python_api() -> None:
    """The Python API (a schema and an engine) gets the same list from the same function."""
    from safeshare.dp.epsilon_safe import check_epsilon_safe_schema, requirement_problems

    cfg = load_config(ADULT_DIR / "adult.yaml")
    problems = requirement_problems(cfg.schema, ["k-anonymity", "risk"])
    assert problems[0] == "privacy: exactly one privacy model, k-anonymity (got risk)"
    assert problems[1].startswith("every released column a quasi-identifier") and len(problems) == 2
    with pytest.raises(ConfigError, match=r"\(1\) every released column a quasi-identifier.*'income'"):
        check_epsilon_safe_schema(cfg.schema, list(cfg.schema.attributes))
