"""Summarize the risk evaluations of the three datasets and write the measured accuracy table.

Reads ``errors.csv`` of ``safeshare risk evaluate`` runs (one or more directories per dataset;
the rows of one dataset are joined by study point, so class-size and copula estimators may come
from separate runs with the same seed) and writes

* ``src/safeshare/risk/estimators/measured_accuracy.json`` (package data, read by
  :func:`safeshare.risk.estimators.choice.accuracy_table`): per estimator and sampling-fraction band, what
  :mod:`safeshare.risk.estimators.choice` (the default estimator and the caveats) and
  :mod:`safeshare.risk.estimators.accuracy` (the copulas' prediction intervals) use;
* ``docs/risk/{adult,kdd,german}_errors.csv.gz`` (the joined ``errors.csv``),
  ``*_summary.csv`` (its summary) and ``*_errors_by_true_risk.png`` (every estimator);
* on stdout: the Markdown tables of docs/risk.md ("Evaluation results", "Which estimator, by
  sampling fraction", "Uncertainty"), including the leave-one-dataset-out coverage of the
  prediction intervals.

A source may also be a ``*_errors.csv.gz`` file written by ``--write`` (to rebuild from the docs).

Usage::

    python tools/risk_accuracy.py adult=SRC[,SRC...] kdd=SRC[,SRC...] german=SRC[,SRC...] [--write]
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from safeshare.risk.estimators import BASELINES, PAPER_ESTIMATORS  # noqa: E402
from safeshare.risk.evaluation import (  # noqa: E402
    ACCURACY_BAND,
    FRACTION_BANDS,
    MIN_BIN_POINTS,
    acceptance,
    fraction_band,
    summarize,
)

OUT = ROOT / "src" / "safeshare" / "risk" / "estimators" / "measured_accuracy.json"
DATASETS = {"adult": "Adult", "kdd": "Census-Income KDD", "german": "German credit"}
RELATIVE_FROM = 0.01
"""Relative errors are summarized over points with a true B of at least this (below it the
absolute risk is negligible and a ratio says little)."""
INTERVAL_ESTIMATORS = ("gaussian_copula", "dvine_copula", "average")


def load(spec: str) -> tuple[str, pd.DataFrame]:
    name, _, dirs = spec.partition("=")
    if name not in DATASETS:
        raise SystemExit(f"unknown dataset {name!r}: expected one of {', '.join(DATASETS)}")
    frames = [pd.read_csv(Path(d) / "errors.csv" if Path(d).is_dir() else Path(d)) for d in dirs.split(",")]
    df = pd.concat(frames, ignore_index=True).drop_duplicates(["point", "estimator"], keep="last")
    # a *_errors.csv.gz holds the fractions and risks to 9 significant digits, a fresh errors.csv
    # to 17: the design is compared to a relative 1e-7, and the first source's figures are kept
    design = df.groupby("point")[["n", "qis"]].nunique()
    for column in ("sampling_fraction", "true_B"):
        spread = df.groupby("point")[column].agg(lambda v: (v.max() - v.min()) / max(abs(v.max()), 1e-300))
        design[column] = np.where(spread > 1e-7, 2, 1)
    if (design > 1).any(axis=None):
        bad = design.index[(design > 1).any(axis=1)][:5].tolist()
        raise SystemExit(f"{name}: the sources disagree on the design of points {bad} (other seed or data?)")
    for column in ("sampling_fraction", "true_B"):
        df[column] = df.groupby("point")[column].transform("first")
    df["dataset"] = name
    df["band"] = fraction_band(df["sampling_fraction"])
    return name, df


def conformal(values: np.ndarray) -> tuple[float, float]:
    """Split-conformal two-sided 95 % quantiles of ``values`` (Lei et al. 2018): the
    ``floor((n+1) 0.025)``-th and ``ceil((n+1) 0.975)``-th smallest (-inf / +inf beyond the data)."""
    v = np.sort(values[np.isfinite(values)])
    n = v.size
    lo_rank, hi_rank = math.floor((n + 1) * 0.025), math.ceil((n + 1) * 0.975)
    lo = float(v[lo_rank - 1]) if lo_rank >= 1 else -math.inf
    hi = float(v[hi_rank - 1]) if hi_rank <= n else math.inf
    return lo, hi


def band_stats(df: pd.DataFrame) -> dict[str, object]:
    e = df["error"].to_numpy(dtype=float)
    ok = np.isfinite(e)
    big = ok & (df["true_B"].to_numpy() >= RELATIVE_FROM)
    rel_true = (df["estimate"].to_numpy() / df["true_B"].to_numpy() - 1.0)[big]
    return {
        "points": len(df),
        "failed": int((~ok).sum()),
        "within": float(np.mean(np.abs(e[ok]) <= ACCURACY_BAND + 1e-12)) if ok.any() else 0.0,
        "median_abs_error": float(np.median(np.abs(e[ok]))) if ok.any() else math.nan,
        "median_error": float(np.median(e[ok])) if ok.any() else math.nan,
        "median_relative_error": float(np.median(rel_true)) if rel_true.size else math.nan,
        "relative_points": int(rel_true.size),
    }


def relative_to_estimate(df: pd.DataFrame) -> np.ndarray:
    """``(estimate - B) / estimate``: the nonconformity score of the prediction intervals."""
    est = df["estimate"].to_numpy(dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.asarray((est - df["true_B"].to_numpy(dtype=float)) / est, dtype=float)


def covered(df: pd.DataFrame, q: tuple[float, float]) -> np.ndarray:
    """Whether each point's interval ``[est (1 - q_hi), est (1 - q_lo)]`` widened by its Monte Carlo
    interval and clipped to [1/N, 1] holds the true B (N = n / sampling fraction)."""
    est = df["estimate"].to_numpy(dtype=float)
    N = df["n"].to_numpy(dtype=float) / df["sampling_fraction"].to_numpy(dtype=float)
    lo = np.minimum(est * (1 - q[1]), df["mc_low"].fillna(np.inf).to_numpy(dtype=float))
    hi = np.maximum(est * (1 - q[0]), df["mc_high"].fillna(-np.inf).to_numpy(dtype=float))
    lo, hi = np.clip(lo, 1 / N, 1.0), np.clip(hi, 1 / N, 1.0)
    B = df["true_B"].to_numpy(dtype=float)
    return np.asarray((lo <= B + 1e-12) & (hi + 1e-12 >= B))


def main(argv: Sequence[str]) -> int:
    write = "--write" in argv
    specs = [a for a in argv if not a.startswith("--")]
    data = dict(load(s) for s in specs)
    if set(data) != set(DATASETS):
        raise SystemExit(f"need all of {', '.join(DATASETS)}")
    allrows = pd.concat(data.values(), ignore_index=True)
    present = set(allrows["estimator"])
    names = [n for n in ORDER if n in present] + sorted(present - set(ORDER))
    table: dict[str, dict[str, dict[str, object]]] = {}
    for name in names:
        table[name] = {}
        for band in FRACTION_BANDS:
            entry: dict[str, object] = {"datasets": {}}
            for ds in DATASETS:
                part = data[ds][(data[ds]["estimator"] == name) & (data[ds]["band"] == band)]
                entry["datasets"][ds] = band_stats(part)  # type: ignore[index]
            pooled = allrows[(allrows["estimator"] == name) & (allrows["band"] == band)]
            entry["pooled"] = band_stats(pooled)
            if name in INTERVAL_ESTIMATORS:
                entry["relative_error_quantiles"] = conformal(relative_to_estimate(pooled))
            table[name][band] = entry

    for ds, frame in data.items():
        print_dataset(DATASETS[ds], frame)
    print(
        "| estimator | band | "
        + " | ".join(f"{DATASETS[d]}: within ±0.05, median rel. error" for d in DATASETS)
        + " |"
    )
    print("|---|---|" + "---|" * len(DATASETS))
    for band in FRACTION_BANDS:
        for name in names:
            cells = []
            for ds in DATASETS:
                s = table[name][band]["datasets"][ds]  # type: ignore[index]
                cells.append(
                    f"{s['within']:.0%} ({s['points']}), {s['median_relative_error']:+.0%}"
                    if s["points"]
                    else "not evaluated"
                )
            print(f"| {name} | f {band} | " + " | ".join(cells) + " |")
    print()
    print_choice(table)
    print()
    print("Leave-one-dataset-out coverage of the prediction intervals (calibrated on the other two):")
    for name in INTERVAL_ESTIMATORS:
        if name not in names:
            continue
        parts = []
        for held in DATASETS:
            hits = []
            for band in FRACTION_BANDS:
                train = allrows[
                    (allrows["estimator"] == name) & (allrows["band"] == band) & (allrows["dataset"] != held)
                ]
                test = data[held][(data[held]["estimator"] == name) & (data[held]["band"] == band)]
                test = test[np.isfinite(test["estimate"])]
                hits.append(covered(test, conformal(relative_to_estimate(train))))
            h = np.concatenate(hits)
            parts.append(f"{DATASETS[held]} {h.mean():.1%} of {h.size}")
        inside = []
        for band in FRACTION_BANDS:
            pooled = allrows[(allrows["estimator"] == name) & (allrows["band"] == band)]
            pooled = pooled[np.isfinite(pooled["estimate"])]
            inside.append(covered(pooled, table[name][band]["relative_error_quantiles"]))  # type: ignore[arg-type]
        print(
            f"  {name}: " + "; ".join(parts) + f"; all three (in sample) {np.concatenate(inside).mean():.1%}"
        )
    if write:
        write_docs(data)
        OUT.write_text(render(table), encoding="utf-8")
        print(f"wrote {OUT.relative_to(ROOT)}")
    return 0


DOCS = ROOT / "docs" / "risk"
ORDER = (*PAPER_ESTIMATORS, *BASELINES)


def write_docs(data: dict[str, pd.DataFrame]) -> None:
    """The joined errors, their summary and the box plots of every dataset, into docs/risk/."""
    from safeshare.risk.evaluation import ERROR_COLUMNS
    from safeshare.risk.plots import error_figure

    for ds, frame in data.items():
        rank = {name: i for i, name in enumerate(ORDER)}
        errors = frame[list(ERROR_COLUMNS)].sort_values(
            ["point", "estimator"], key=lambda c: c.map(rank) if c.name == "estimator" else c
        )
        gz = {"method": "gzip", "mtime": 0}
        errors.to_csv(DOCS / f"{ds}_errors.csv.gz", index=False, float_format="%.9g", compression=gz)
        summarize(errors).to_csv(DOCS / f"{ds}_summary.csv", index=False, float_format="%.6g")
        names = [n for n in ORDER if n in set(errors["estimator"])]
        title = f"estimation error by true risk: {DATASETS[ds]}, {errors['point'].nunique()} study points"
        for path in error_figure(errors, names, title, DOCS / f"{ds}_errors_by_true_risk"):
            if path.suffix == ".svg":
                path.unlink()


def print_choice(table: dict[str, dict[str, dict[str, object]]]) -> None:
    """What :mod:`safeshare.risk.estimators.choice` makes of ``table``: the default estimator
    per band (any estimator; histogram-only ones) and every caveat."""
    from unittest import mock

    from safeshare.risk.estimators import ESTIMATORS, choice

    with mock.patch.object(choice, "accuracy_table", lambda: table):
        print("| band | default | default without a frequency table | caveats |")
        print("|---|---|---|---|")
        histogram = [n for n in table if n in ESTIMATORS and not ESTIMATORS[n].requires_table]
        for band, f in zip(FRACTION_BANDS, (0.05, 0.3, 0.75), strict=True):
            notes = [c for n in table if (c := choice.caveat(n, f)) is not None]
            print(
                f"| f {band} | {choice.default_estimator(f)} | {choice.default_estimator(f, histogram)} | "
                + "<br>".join(notes)
                + " |"
            )


def print_dataset(title: str, frame: pd.DataFrame) -> None:
    """The overall table of one dataset: median error, median |error|, IQR, share within ±0.05,
    worst true-risk bin, the issue's criterion; then per estimator the bins with >= 10 points."""
    summary = summarize(frame.drop(columns=["dataset", "band"]))
    acc = acceptance(summary)
    present = set(summary["estimator"])
    names = [n for n in ORDER if n in present] + sorted(present - set(ORDER))
    print(f"### {title}")
    print()
    print(
        "| estimator | median error | median abs error | IQR | within ±0.05 "
        "| worst bin median abs error | criterion |"
    )
    print("|---|---|---|---|---|---|---|")
    for name in names:
        s = summary[summary["estimator"] == name]
        overall = s[s["group"] == "all"].iloc[0]
        bins = s[(s["group"] == "true_B") & (s["points"] >= MIN_BIN_POINTS)]
        worst = bins.loc[bins["median_abs_error"].idxmax()] if len(bins) else None
        failed = f" ({int(overall['failed'])} points without an estimate)" if overall["failed"] else ""
        worst_text = f"{worst['median_abs_error']:.3f} (B {worst['bin']})" if worst is not None else "-"
        verdict = "**passes**" if acc[name]["passes"] else "fails"
        print(
            f"| {name}{failed} | {overall['median_error']:+.3f} | {overall['median_abs_error']:.3f} | "
            f"{overall['iqr']:.3f} | {overall['within_0.05']:.0%} | {worst_text} | {verdict} |"
        )
    print()
    print("Per true-risk bin (points; median |error|):")
    print()
    labels = sorted(summary[summary["group"] == "true_B"]["bin"].unique())
    print("| estimator | " + " | ".join(f"B {b}" for b in labels) + " |")
    print("|---|" + "---|" * len(labels))
    for name in names:
        s = summary[(summary["estimator"] == name) & (summary["group"] == "true_B")].set_index("bin")
        cells = [
            f"{int(s.loc[b, 'points'])}; {s.loc[b, 'median_abs_error']:.3f}" if b in s.index else "-"
            for b in labels
        ]
        print(f"| {name} | " + " | ".join(cells) + " |")
    print()


def render(table: dict[str, dict[str, dict[str, object]]]) -> str:
    """The text of ``measured_accuracy.json``: ``about`` (what the fields are) and ``estimators``
    (the table), written by :func:`safeshare.resources.resource_json` (non-finite floats as text)."""
    from safeshare.resources import resource_json

    about = (
        "The estimators' accuracy measured on Adult, Census-Income KDD and German credit, by "
        "sampling-fraction band (docs/risk.md, 'Which estimator, by sampling fraction'). GENERATED by "
        "tools/risk_accuracy.py from the evaluations' errors.csv (commands in docs/risk.md); do not edit "
        "by hand. Per estimator and band ('<0.1', '0.1-0.5', '>0.5'): 'datasets' (per dataset) and "
        "'pooled': 'points', 'failed' (no estimate), 'within' (share of points within +-0.05 of the true "
        "B, failures counted as misses for the choice), 'median_abs_error', 'median_error', "
        "'median_relative_error' (median of estimate / B - 1 over the 'relative_points' with B >= "
        f"{RELATIVE_FROM}); for the copulas 'relative_error_quantiles': the split-conformal 2.5 % / "
        "97.5 % quantiles of (estimate - B) / estimate over the pooled points. A float that is not "
        'finite is written "nan", "inf" or "-inf" (safeshare.resources).'
    )
    return resource_json({"about": about, "estimators": _rounded(table)})


def _rounded(value: object) -> object:
    """The table's floats to 6 decimals (infinities and NaN as they are)."""
    if isinstance(value, float):
        return round(value, 6) if math.isfinite(value) else value
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, tuple | list):
        return tuple(_rounded(v) for v in value)
    return value


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
