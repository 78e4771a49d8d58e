"""The ``dp experiment`` use case: thesis §6.2.2-6.2.3 (Figures 6.3, 6.4, C.1, C.2), reproduced and extended.

Setting (thesis §6.2.2): UCI Adult with a column subset whose lattice has 108
nodes (every column a quasi-identifier), ``k = 50``, ``beta = 0.75``, a 5%
suppression limit, ``epsilon'`` from 0.01 to 2, and penalty factors ``p``.
Ten samples of the data are drawn once with ``beta = 0.75`` (fixed seeds)
and stored; every figure averages over them. For every setting the
distribution of the exponential mechanism over the 108 nodes is computed
exactly (:func:`safeshare.dp.epsilon_safe.node_distribution`), so the
"probability of a good node" (normalized Prec < 0.5 and suppression < 5%)
and the expected suppression are exact expectations, not Monte Carlo
estimates. The baseline draws a node uniformly at random.

Four calibrations are compared:

* ``thesis-calibration``: ``u = 1/(Prec + pen)`` with the thesis' sensitivity
  (``p``, or ``p x`` one record's percentage): the thesis' own experiment,
  which is NOT differentially private (:mod:`safeshare.dp.scores`);
* ``thesis-exact``: the same utility with its true global sensitivity;
* ``linear``: ``u = -(Prec + pen)``, whose sensitivity is the penalty's;
* ``safepub``: SafePub's granularity score (no penalty factor).

:func:`shape_checks` states the thesis' claims as numbers and says whether
each calibration reproduces them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from safeshare.app_runner import to_json
from safeshare.config import load_config
from safeshare.config.spec import AnonymizationSpec
from safeshare.core.tabulate import build_frequency_table
from safeshare.dp.drbg import CryptoRandom
from safeshare.dp.epsilon_safe import EpsilonSafeParams, lattice_data
from safeshare.dp.mechanism import ExponentialMechanism
from safeshare.dp.sampling import sample_engine
from safeshare.dp.scores import LatticeData, make_utility
from safeshare.errors import ConfigError
from safeshare.io import OutputDirectory, atomic_write, atomic_write_text
from safeshare.models.k_anonymity import KAnonymity
from safeshare.workflows.epsilon_safe import EpsilonSafeAnonymizer

EPSILON_PRIMES = (0.01, 0.1, 0.5, 1.0, 2.0)
PENALTIES = (
    0.001,
    0.002,
    0.005,
    0.01,
    0.015,
    0.02,
    0.03,
    0.04,
    0.05,
    0.06,
    0.08,
    0.1,
    0.15,
    0.2,
    0.3,
    0.5,
    0.7,
    0.9,
)
#: (label, utility, sensitivity rule, uses the penalty factor)
CALIBRATIONS = (
    ("thesis-calibration", "thesis", "thesis", True),
    ("thesis-exact", "thesis", "exact", True),
    ("linear", "linear", "exact", True),
    ("safepub", "safepub", "exact", False),
)
MODES = ("suppression", "k-anonymity")


def default_config() -> Path:
    """``examples/adult/adult-dp.yaml`` of this checkout."""
    return Path(__file__).resolve().parents[3] / "examples" / "adult" / "adult-dp.yaml"


@dataclass
class StoredSample:
    """One stored sample: its seed and the per-node statistics of its lattice."""

    seed: int
    data: LatticeData


def stored_samples(
    config: Path, n_samples: int = 10, seed: int = 2024, beta: float = 0.75
) -> list[StoredSample]:
    """Draw ``n_samples`` Bernoulli(``beta``) samples of the configured data (seeds ``seed + i``)."""
    from safeshare.data.engines.factory import CONFIG_SWITCH, make_engine

    cfg = load_config(config, release=False)  # samples only: no release
    ks = [m.k for m in cfg.privacy if isinstance(m, KAnonymity)]
    if len(ks) != 1:
        raise ConfigError(f"{config}: privacy: the experiments need k-anonymity")
    params = EpsilonSafeParams(beta=beta, epsilon_prime=1.0, utility="safepub")
    spec = AnonymizationSpec(
        cfg.schema,
        (KAnonymity(ks[0]),),
        cfg.max_suppression,
        algorithm="epsilon-safe",
        algorithm_options={"params": params},
    )
    checker = EpsilonSafeAnonymizer(spec)
    engine = make_engine(
        cfg.engine, cfg.source, cfg.spark, cfg.duckdb, switch=CONFIG_SWITCH, identifiers=cfg.identifiers
    )
    out = []
    try:
        checker.check_schema(engine.columns())
        for i in range(n_samples):
            sampled, draw = sample_engine(engine, beta, CryptoRandom(seed + i))
            table, _ = build_frequency_table(sampled, cfg.schema)
            data = lattice_data(table, ks[0], cfg.max_suppression, draw.records_in, beta)
            out.append(StoredSample(seed + i, data))
    finally:
        engine.close()
    return out


def good_nodes(data: LatticeData, max_prec: float = 0.5) -> np.ndarray:
    """Thesis §6.2.2: normalized Prec below 0.5 and suppression below the limit (5%)."""
    return (data.prec < max_prec) & (data.suppressed_fraction < data.max_suppression)


def evaluate(
    samples: Sequence[StoredSample],
    epsilon_primes: Sequence[float] = EPSILON_PRIMES,
    penalties: Sequence[float] = PENALTIES,
) -> pd.DataFrame:
    """Probability of a good node and expected suppression, averaged over the samples."""
    rows: list[dict[str, Any]] = []
    good = [good_nodes(s.data) for s in samples]
    supp = [s.data.suppressed_fraction for s in samples]
    rows.append(
        {
            "calibration": "uniform",
            "utility": "uniform",
            "sensitivity_rule": "",
            "penalty_mode": "",
            "epsilon_prime": math.nan,
            "penalty": math.nan,
            "p_good": float(np.mean([g.mean() for g in good])),
            "p_good_std": float(np.std([g.mean() for g in good])),
            "expected_suppression": float(np.mean([s.mean() for s in supp])),
            "sensitivity": math.nan,
            "differentially_private": True,
        }
    )
    for label, utility_name, rule, penalized in CALIBRATIONS:
        for mode in MODES if penalized else ("",):
            for eps in epsilon_primes:
                for p in penalties if penalized else (math.nan,):
                    utility = make_utility(
                        utility_name, p if penalized else None, mode or "suppression", rule
                    )
                    p_good, expected, sens = [], [], []
                    for s, g, f in zip(samples, good, supp, strict=True):
                        values = utility.values(s.data)
                        delta_u = utility.sensitivity(s.data)
                        probs = ExponentialMechanism(eps, delta_u).probabilities(values)
                        p_good.append(float((probs * g).sum()))
                        expected.append(float((probs * f).sum()))
                        sens.append(delta_u)
                    rows.append(
                        {
                            "calibration": label,
                            "utility": utility_name,
                            "sensitivity_rule": rule,
                            "penalty_mode": mode,
                            "epsilon_prime": eps,
                            "penalty": p,
                            "p_good": float(np.mean(p_good)),
                            "p_good_std": float(np.std(p_good)),
                            "expected_suppression": float(np.mean(expected)),
                            "sensitivity": float(np.mean(sens)),
                            "differentially_private": utility.differentially_private,
                        }
                    )
    return pd.DataFrame(rows)


def shape_checks(results: pd.DataFrame) -> dict[str, Any]:
    """The thesis' claims (§6.2.2) as numbers, per calibration.

    * suppression penalty: the probability of a good node "rises to near 1"
      (max >= 0.9) at a penalty between 0.02 and 0.08, and is below the
      baseline by ``p = 0.2``;
    * k-anonymity penalty: it stays under about 0.45 (max <= 0.5).
    """
    baseline = float(results.loc[results.calibration == "uniform", "p_good"].iloc[0])
    out: dict[str, Any] = {"baseline_p_good": baseline}
    for label, _, _, penalized in CALIBRATIONS:
        if not penalized:
            sub = results[results.calibration == label]
            out[label] = {"p_good_by_epsilon_prime": dict(zip(sub.epsilon_prime, sub.p_good, strict=True))}
            continue
        sup = results[(results.calibration == label) & (results.penalty_mode == "suppression")]
        kan = results[(results.calibration == label) & (results.penalty_mode == "k-anonymity")]
        peak = sup.iloc[int(np.argmax(sup.p_good.to_numpy()))]
        at_02 = sup[np.isclose(sup.penalty, 0.2)]
        checks = {
            "suppression_max_p_good": float(peak.p_good),
            "suppression_argmax_penalty": float(peak.penalty),
            "suppression_max_p_good_at_0.2": float(at_02.p_good.max()),
            "kanonymity_max_p_good": float(kan.p_good.max()),
            "kanonymity_argmax_penalty": float(kan.iloc[int(np.argmax(kan.p_good.to_numpy()))].penalty),
        }
        checks["rises_to_near_1_around_0.04"] = bool(
            checks["suppression_max_p_good"] >= 0.9 and 0.02 <= checks["suppression_argmax_penalty"] <= 0.08
        )
        checks["below_baseline_by_0.2"] = bool(checks["suppression_max_p_good_at_0.2"] < baseline)
        checks["kanonymity_stays_under_0.45"] = bool(checks["kanonymity_max_p_good"] <= 0.5)
        checks["reproduces_thesis_shapes"] = bool(
            checks["rises_to_near_1_around_0.04"]
            and checks["below_baseline_by_0.2"]
            and checks["kanonymity_stays_under_0.45"]
        )
        out[label] = checks
    return out


def plot(results: pd.DataFrame, directory: Path) -> list[Path]:
    """Figures 6.3 / 6.4 (probability of a good node) and C.1 / C.2 (expected suppression)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    baseline = results[results.calibration == "uniform"].iloc[0]
    safepub = results[results.calibration == "safepub"]
    panels = [c for c in CALIBRATIONS if c[3]]
    figures = [
        ("fig6_3_good_node_suppression_penalty.png", "suppression", "p_good", "P(good node)", "Fig. 6.3"),
        ("fig6_4_good_node_kanonymity_penalty.png", "k-anonymity", "p_good", "P(good node)", "Fig. 6.4"),
        (
            "figC1_suppression_kanonymity_penalty.png",
            "k-anonymity",
            "expected_suppression",
            "E[suppression]",
            "C.1",
        ),
        (
            "figC2_suppression_suppression_penalty.png",
            "suppression",
            "expected_suppression",
            "E[suppression]",
            "C.2",
        ),
    ]
    written = []
    for name, mode, column, ylabel, ref in figures:
        fig, axes = plt.subplots(1, len(panels), figsize=(5.2 * len(panels), 4.2), sharey=True)
        for ax, (label, _, rule, _) in zip(axes, panels, strict=True):
            sub = results[(results.calibration == label) & (results.penalty_mode == mode)]
            for eps, grp in sub.groupby("epsilon_prime"):
                ax.plot(grp.penalty, grp[column], marker="o", markersize=3, label=f"eps' = {eps:g}")
            ax.axhline(float(baseline[column]), color="black", linestyle=":", label="uniform baseline")
            for eps, val in zip(safepub.epsilon_prime, safepub[column], strict=True):
                if eps == max(safepub.epsilon_prime):
                    ax.axhline(
                        float(val),
                        color="grey",
                        linestyle="--",
                        linewidth=0.8,
                        label=f"SafePub, eps' = {eps:g}",
                    )
            ax.set_xscale("log")
            ax.set_xlabel("penalty factor p")
            dp = "NOT DP" if rule == "thesis" else "epsilon'-DP"
            ax.set_title(f"{label} ({dp})", fontsize=10)
            ax.grid(alpha=0.3)
        axes[0].set_ylabel(ylabel)
        axes[-1].legend(fontsize=7, loc="best")
        fig.suptitle(
            f"{ref}: {mode} penalty, k = 50, beta = 0.75, 108-node Adult lattice (mean of stored samples)"
        )
        fig.tight_layout()
        path = directory / name
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
    return written


def run_experiments(config: Path, out_dir: Path, n_samples: int = 10, seed: int = 2024) -> list[Path]:
    """Draw the stored samples, evaluate every setting, write CSV + JSON + PNG into ``out_dir``,
    published as one unit (:class:`~safeshare.io.OutputDirectory`); the files written."""
    return dp_experiment(out=out_dir, config=config, simulations=n_samples, seed=seed).files


@dataclass(frozen=True)
class DPExperiment:
    """The result of :func:`dp_experiment`: the shape checks (dp_experiments.json) and the files."""

    checks: dict[str, Any]
    results: pd.DataFrame
    path: Path
    files: list[Path]

    def to_dict(self) -> dict[str, Any]:
        return {"out": self.path.name, "files": [p.name for p in self.files], **self.checks}


def dp_experiment(**options: Any) -> DPExperiment:
    """``safeshare dp experiment --out DIR``: thesis §6.2.2-6.2.3 (Figures 6.3, 6.4, C.1, C.2).

    Keywords are the command's options: ``out``, ``config`` (default
    examples/adult/adult-dp.yaml), ``simulations`` (stored Bernoulli samples to average
    over, default 10), ``seed`` (of the first sample, default 2024).
    """
    from safeshare.config.commands import DPExperimentOptions
    from safeshare.config.commands import options as validated

    opts = validated(DPExperimentOptions, options)
    output = OutputDirectory(opts.out)
    output.preflight()
    config = opts.config if opts.config is not None else default_config()
    samples = stored_samples(config, opts.simulations, opts.seed)
    results = evaluate(samples)
    checks = shape_checks(results)
    checks["samples"] = [
        {"seed": s.seed, "records_sampled": s.data.n_sampled, "records_before_sampling": s.data.n_input}
        for s in samples
    ]
    checks["lattice_nodes"] = int(samples[0].data.prec.size)
    checks["good_nodes_per_sample"] = [int(good_nodes(s.data).sum()) for s in samples]
    with output as stage:
        atomic_write(stage / "dp_experiments.csv", lambda p: results.to_csv(p, index=False))
        atomic_write_text(stage / "dp_experiments.json", to_json(checks, indent=2) + "\n")
        names = ["dp_experiments.csv", "dp_experiments.json", *(p.name for p in plot(results, stage))]
        output.publish()
    return DPExperiment(checks, results, Path(opts.out), [Path(opts.out) / name for name in names])
