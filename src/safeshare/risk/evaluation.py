"""The estimators' evaluation: the simulation of Jiang et al. (2022, §2.8) on a dataset taken as the
population, and the population-size sensitivity analysis (§4.2).

For each study point ``p`` (``0 <= p < R``), with randomness drawn only from
``SeedSequence([seed, p])`` so that a point's result does not depend on which
process runs it or in which order (``--jobs`` changes nothing but the time):

1. pick a number of quasi-identifiers ``m' ~ U{1..m}`` and a random subset of
   ``m'`` columns of the pool (kept in pool order);
2. pick a sampling fraction ``f ~ U(0.01, 0.99)`` and draw a simple random
   sample of ``n = round(f N)`` records of the population (without
   replacement);
3. compute the true ``B = (1/n) sum_k 1/F_k`` exactly from the population;
4. fit every estimator on the sample and ``N`` and record
   ``error = estimate - B``.

Estimator seeds: every estimator of point ``p`` gets ``random_state = s_p``
(one integer drawn after the design); that is also the seed
:class:`~.estimators.average.AverageCopulaEstimator` gives both its copulas,
so ``average`` is computed from the two copula estimates already fitted
(:meth:`~.estimators.average.AverageCopulaEstimator.from_fitted`), identical
to fitting ``average`` with ``random_state = s_p`` but at half the cost.

Sensitivity analysis: the sensitivity estimator (default ``average``) is
re-run with ``N (1 ± e)`` for every ``e`` in ``population_size_errors``; its
copulas are fitted on the sample alone, so only the synthesis is repeated
(:meth:`~.estimators.gaussian_copula.SyntheticEstimator.B_at`). The error is
always against the true ``B`` of the real ``N``.
"""

from __future__ import annotations

import math
import multiprocessing
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from safeshare.errors import DataError, InputError, SafeshareError
from safeshare.risk.classes import SampleTable, category_codes, pack
from safeshare.risk.estimators import ESTIMATORS, estimator_names, make_estimator
from safeshare.risk.estimators.base import RiskEstimator

ACCURACY_BAND = 0.05
"""An estimate within ±0.05 of the true B counts as accurate (the issue's and the paper's 5 %)."""

FRACTION_BANDS = ("<0.1", "0.1-0.5", ">0.5")
"""Sampling-fraction bands of the summary: f < 0.1, 0.1 <= f <= 0.5, f > 0.5."""

MIN_BIN_POINTS = 10
"""A true-risk bin enters the acceptance check when it holds this many points."""

ERROR_COLUMNS = (
    "point",
    "n_qis",
    "sampling_fraction",
    "true_B",
    "estimator",
    "estimate",
    "error",
    "n",
    "qis",
    "interval_low",
    "interval_high",
    "mc_low",
    "mc_high",
)
SENSITIVITY_COLUMNS = (
    "point",
    "n_qis",
    "sampling_fraction",
    "true_B",
    "estimator",
    "population_size_error",
    "population_size",
    "estimate",
    "error",
)


@dataclass(frozen=True)
class Population:
    """The population on the pool of quasi-identifiers, as integer codes (N x m)."""

    columns: tuple[str, ...]
    categories: tuple[tuple[str, ...], ...]
    codes: np.ndarray

    @classmethod
    def from_frame(cls, frame: pd.DataFrame, pool: Sequence[str]) -> Population:
        pool = list(pool)
        if not pool:
            raise InputError("--qi: at least one quasi-identifier is required")
        missing = [c for c in pool if c not in frame.columns]
        if missing:
            known = ", ".join(map(str, frame.columns))
            raise InputError(f"--qi: unknown column {missing[0]!r}: the data has columns {known}")
        if len(set(pool)) != len(pool):
            raise InputError("--qi: a quasi-identifier is listed twice")
        if len(frame) < 2:
            raise DataError(f"the population has {len(frame)} record(s); the simulation needs at least 2")
        codes = np.empty((len(frame), len(pool)), dtype=np.int64)
        cats: list[tuple[str, ...]] = []
        for c, col in enumerate(pool):
            codes[:, c], labels = category_codes(frame[col])
            cats.append(labels)
        return cls(tuple(pool), tuple(cats), codes)

    @property
    def size(self) -> int:
        return int(self.codes.shape[0])


@dataclass(frozen=True)
class EvaluationSettings:
    points: int
    seed: int
    estimators: tuple[str, ...]
    population_size_errors: tuple[float, ...] = (0.1, 0.2, 0.3)
    sensitivity_estimator: str = "average"
    correlation: str = "mi"
    min_fraction: float = 0.01
    max_fraction: float = 0.99
    estimator_params: tuple[tuple[str, Any], ...] = ()
    """Further parameters for every estimator that takes them (e.g. ``(("repetitions", 1),)``)."""

    def validate(self) -> None:
        if self.points < 1:
            raise InputError(f"--simulations: expected a positive integer, got {self.points}")
        if self.seed < 0:
            raise InputError(f"--seed: expected a non-negative integer, got {self.seed}")
        if not self.estimators:
            raise InputError("--estimator: expected at least one estimator name or all")
        for name in (*self.estimators, self.sensitivity_estimator):
            if name not in ESTIMATORS:
                raise InputError(
                    f"--estimator: unknown estimator {name!r} (one of {', '.join(estimator_names())})"
                )
        if len(set(self.estimators)) != len(self.estimators):
            raise InputError("--estimator: an estimator is listed twice")
        for e in self.population_size_errors:
            if not 0 < e < 1:
                raise InputError(f"--population-size-error: expected fractions in (0, 1), got {e}")
        if not 0 < self.min_fraction <= self.max_fraction <= 1:
            raise InputError("sampling fractions: expected 0 < min <= max <= 1")
        if self.correlation not in ("mi", "rank"):
            raise InputError(f"--correlation: expected mi or rank, got {self.correlation!r}")


@dataclass(frozen=True)
class PointDesign:
    """What study point ``point`` samples: QI columns (pool indices), the rows, the estimators' seed."""

    point: int
    qis: tuple[int, ...]
    sampling_fraction: float
    rows: np.ndarray
    estimator_seed: int


def design_point(
    seed: int,
    point: int,
    pool_size: int,
    population_size: int,
    min_fraction: float = 0.01,
    max_fraction: float = 0.99,
) -> PointDesign:
    """Study point ``point``'s random design, a function of ``(seed, point)`` alone."""
    rng = np.random.default_rng(np.random.SeedSequence([seed, point]))
    n_qis = int(rng.integers(1, pool_size + 1))
    qis = tuple(sorted(int(i) for i in rng.choice(pool_size, size=n_qis, replace=False)))
    fraction = float(rng.uniform(min_fraction, max_fraction))
    n = min(population_size, max(1, round(fraction * population_size)))
    rows = np.sort(rng.choice(population_size, size=n, replace=False))
    return PointDesign(point, qis, n / population_size, rows, int(rng.integers(0, 2**31 - 2)))


def exact_B(population: Population, qis: Sequence[int], rows: np.ndarray) -> float:
    """The true B of the sample ``rows``: ``(1/n) sum_k 1/F_k`` with ``F_k`` counted in the population."""
    cards = [len(population.categories[q]) for q in qis]
    keys = pack(population.codes[:, [int(q) for q in qis]], cards)
    _, inverse, counts = np.unique(keys, return_inverse=True, return_counts=True)
    return float(np.mean(1.0 / counts[inverse[rows]]))


def sample_table(population: Population, qis: Sequence[int], rows: np.ndarray) -> SampleTable:
    """The sample's frequency table, its categories those present in the sample (in population order),
    as :meth:`SampleTable.from_frame` builds it from the sample alone: estimators see nothing else."""
    sub = population.codes[np.ix_(rows, np.asarray(qis, dtype=np.intp))]
    recoded = np.empty_like(sub)
    cats: list[tuple[str, ...]] = []
    for c, q in enumerate(qis):
        present, recoded[:, c] = np.unique(sub[:, c], return_inverse=True)
        cats.append(tuple(population.categories[q][int(i)] for i in present))
    return SampleTable.from_codes(recoded, tuple(population.columns[q] for q in qis), tuple(cats))


def estimator_seed(name: str, point_seed: int) -> int:
    """The seed of estimator ``name`` at a point: the point's seed, for every estimator."""
    return point_seed


@dataclass
class PointResult:
    point: int
    qis: tuple[str, ...]
    n: int
    sampling_fraction: float
    true_B: float
    estimates: dict[str, float]
    seconds: dict[str, float]
    intervals: dict[str, tuple[float, float, float, float]] = field(default_factory=dict)
    """Per estimator: ``B_interval_`` and ``B_mc_interval_`` (nan where it has none)."""
    sensitivity: dict[float, tuple[int, float]] = field(default_factory=dict)
    failures: dict[str, str] = field(default_factory=dict)


_FIT_ERRORS = (SafeshareError, ValueError, ArithmeticError, np.linalg.LinAlgError, RuntimeError)


def _value(est: RiskEstimator) -> float:
    b = est.B_
    return float(b) if b is not None and math.isfinite(b) else math.nan


def _intervals(est: RiskEstimator) -> tuple[float, float, float, float]:
    out: list[float] = []
    for attr in ("B_interval_", "B_mc_interval_"):
        iv = getattr(est, attr, None)
        out.extend((math.nan, math.nan) if iv is None else (float(iv[0]), float(iv[1])))
    return (out[0], out[1], out[2], out[3])


def run_point(population: Population, settings: EvaluationSettings, point: int) -> PointResult:
    """One study point: design, true B, every estimator, the sensitivity runs."""
    d = design_point(
        settings.seed,
        point,
        len(population.columns),
        population.size,
        settings.min_fraction,
        settings.max_fraction,
    )
    N = population.size
    table = sample_table(population, d.qis, d.rows)
    result = PointResult(
        point=point,
        qis=tuple(population.columns[q] for q in d.qis),
        n=table.n,
        sampling_fraction=d.sampling_fraction,
        true_B=exact_B(population, d.qis, d.rows),
        estimates={},
        seconds={},
    )
    fitted: dict[str, RiskEstimator] = {}

    def fit(name: str) -> RiskEstimator | None:
        if name in fitted:
            return fitted[name]
        if name in result.failures:
            return None
        start = time.process_time()
        try:
            est = make_estimator(
                name,
                **dict(settings.estimator_params),
                random_state=estimator_seed(name, d.estimator_seed),
                correlation=settings.correlation,
            ).fit(table, N)
        except _FIT_ERRORS as exc:
            result.failures[name] = f"{type(exc).__name__}: {exc}"
            result.seconds[name] = time.process_time() - start
            return None
        result.seconds[name] = time.process_time() - start
        fitted[name] = est
        return est

    def average() -> RiskEstimator | None:
        from safeshare.risk.estimators.average import AverageCopulaEstimator
        from safeshare.risk.estimators.dvine_copula import DVineCopulaEstimator
        from safeshare.risk.estimators.gaussian_copula import GaussianCopulaEstimator

        g, v = fit("gaussian_copula"), fit("dvine_copula")
        if g is None or v is None:
            result.failures.setdefault("average", "a component copula failed")
            return None
        assert isinstance(g, GaussianCopulaEstimator) and isinstance(v, DVineCopulaEstimator)
        result.seconds["average"] = result.seconds["gaussian_copula"] + result.seconds["dvine_copula"]
        return AverageCopulaEstimator.from_fitted(g, v)

    for name in settings.estimators:
        est = average() if name == "average" else fit(name)
        result.estimates[name] = math.nan if est is None else _value(est)
        result.intervals[name] = (math.nan,) * 4 if est is None else _intervals(est)

    name = settings.sensitivity_estimator
    for e in settings.population_size_errors:
        for signed in (-e, e):
            N2 = round(N * (1 + signed))
            if table.n > N2:
                result.sensitivity[signed] = (N2, math.nan)
                continue
            result.sensitivity[signed] = (N2, _b_at(name, N2, fit, table, d.estimator_seed, settings))
    return result


def _b_at(
    name: str,
    N2: int,
    fit: Callable[[str], RiskEstimator | None],
    table: SampleTable,
    point_seed: int,
    settings: EvaluationSettings,
) -> float:
    """The estimate of ``name`` with population size ``N2`` (the copulas are not refitted)."""
    # the copulas' modules (pyvinecopulib, scipy.stats) load when an evaluation needs them
    from safeshare.risk.estimators.average import AverageCopulaEstimator
    from safeshare.risk.estimators.synthetic import SyntheticEstimator

    try:
        if name == "average":
            g, v = fit("gaussian_copula"), fit("dvine_copula")
            if g is None or v is None:
                return math.nan
            assert isinstance(g, SyntheticEstimator) and isinstance(v, SyntheticEstimator)
            return (g.B_at(N2) + v.B_at(N2)) / 2
        est = fit(name)
        if est is None:
            return math.nan
        if isinstance(est, (SyntheticEstimator, AverageCopulaEstimator)):
            return est.B_at(N2)
        again = make_estimator(
            name,
            **dict(settings.estimator_params),
            random_state=estimator_seed(name, point_seed),
            correlation=settings.correlation,
        )
        return _value(again.fit(table, N2))
    except _FIT_ERRORS:
        return math.nan


# --- running points, in this process or a pool of processes -------------------------------------------

_WORKER: dict[str, Any] = {}


def _init_worker(population: Population, settings: EvaluationSettings) -> None:
    _WORKER["population"] = population
    _WORKER["settings"] = settings


def _worker_point(point: int) -> PointResult:
    return run_point(_WORKER["population"], _WORKER["settings"], point)


def run_points(
    population: Population,
    settings: EvaluationSettings,
    jobs: int = 1,
    progress: Callable[[], None] | None = None,
) -> list[PointResult]:
    """Every study point, in order of ``point``; ``jobs > 1`` runs them in that many processes."""
    settings.validate()
    if jobs < 1:
        raise InputError(f"--jobs: expected a positive integer, got {jobs}")
    results: list[PointResult] = []
    if jobs == 1 or settings.points == 1:
        for p in range(settings.points):
            results.append(run_point(population, settings, p))
            if progress:
                progress()
        return results
    # spawn, not fork: the parent may hold threads (BLAS, the vine library) that fork would copy mid-lock.
    # On an interrupt (or any error) the workers are terminated at once: waiting for the points
    # they are computing could take minutes.
    ctx = multiprocessing.get_context("spawn")
    pool = ctx.Pool(jobs, initializer=_init_worker, initargs=(population, settings))
    try:
        for result in pool.imap_unordered(_worker_point, range(settings.points)):
            results.append(result)
            if progress:
                progress()
        pool.close()
    except BaseException:
        pool.terminate()
        raise
    finally:
        pool.join()
    results.sort(key=lambda r: r.point)
    return results


# --- tables ----------------------------------------------------------------------------------------------


def errors_frame(results: Sequence[PointResult], estimators: Sequence[str]) -> pd.DataFrame:
    """One row per (point, estimator): the ``errors.csv`` table."""
    rows = [
        {
            "point": r.point,
            "n_qis": len(r.qis),
            "sampling_fraction": r.sampling_fraction,
            "true_B": r.true_B,
            "estimator": name,
            "estimate": r.estimates[name],
            "error": r.estimates[name] - r.true_B,
            "n": r.n,
            "qis": "|".join(r.qis),
            "interval_low": r.intervals.get(name, (math.nan,) * 4)[0],
            "interval_high": r.intervals.get(name, (math.nan,) * 4)[1],
            "mc_low": r.intervals.get(name, (math.nan,) * 4)[2],
            "mc_high": r.intervals.get(name, (math.nan,) * 4)[3],
        }
        for r in results
        for name in estimators
    ]
    return pd.DataFrame(rows, columns=list(ERROR_COLUMNS))


def sensitivity_frame(results: Sequence[PointResult], estimator: str, population_size: int) -> pd.DataFrame:
    """One row per (point, N change), the unchanged N included: the ``sensitivity.csv`` table."""
    rows = []
    for r in results:
        base = {
            "point": r.point,
            "n_qis": len(r.qis),
            "sampling_fraction": r.sampling_fraction,
            "true_B": r.true_B,
            "estimator": estimator,
        }
        changes: list[tuple[float, int, float]] = sorted((e, N2, b) for e, (N2, b) in r.sensitivity.items())
        if estimator in r.estimates:
            changes.append((0.0, population_size, r.estimates[estimator]))
            changes.sort()
        for e, N2, b in changes:
            rows.append(
                {
                    **base,
                    "population_size_error": e,
                    "population_size": N2,
                    "estimate": b,
                    "error": b - r.true_B,
                }
            )
    return pd.DataFrame(rows, columns=list(SENSITIVITY_COLUMNS))


def true_risk_bin(b: pd.Series) -> pd.Series:
    """The true-risk bin of width 0.1 as a label ``0.0-0.1`` ... ``0.9-1.0`` (B = 1 in the last)."""
    lo = np.minimum(np.floor(b.to_numpy(dtype=float) * 10 + 1e-9), 9).astype(int)
    return pd.Series([f"{i / 10:.1f}-{(i + 1) / 10:.1f}" for i in lo], index=b.index)


def fraction_band(f: pd.Series) -> pd.Series:
    """The sampling-fraction band of each value (:data:`FRACTION_BANDS`)."""
    v = f.to_numpy(dtype=float)
    return pd.Series(
        np.where(v < 0.1, FRACTION_BANDS[0], np.where(v <= 0.5, FRACTION_BANDS[1], FRACTION_BANDS[2])),
        index=f.index,
    )


def _stats(errors: pd.Series) -> dict[str, Any]:
    e = errors.dropna().to_numpy(dtype=float)
    failed = int(errors.isna().sum())
    if e.size == 0:
        return {
            "points": 0,
            "failed": failed,
            "median_error": math.nan,
            "median_abs_error": math.nan,
            "q1": math.nan,
            "q3": math.nan,
            "iqr": math.nan,
            "within_0.05": math.nan,
            "mean_error": math.nan,
        }
    q1, med, q3 = np.quantile(e, [0.25, 0.5, 0.75])
    return {
        "points": int(e.size),
        "failed": failed,
        "median_error": float(med),
        "median_abs_error": float(np.median(np.abs(e))),
        "q1": float(q1),
        "q3": float(q3),
        "iqr": float(q3 - q1),
        "within_0.05": float(np.mean(np.abs(e) <= ACCURACY_BAND + 1e-12)),
        "mean_error": float(np.mean(e)),
    }


def _coverage(frame: pd.DataFrame) -> dict[str, float]:
    """Share of the points with an interval whose interval holds the true B (nan without any)."""
    out: dict[str, float] = {}
    for key, lo, hi in (
        ("interval_coverage", "interval_low", "interval_high"),
        ("mc_coverage", "mc_low", "mc_high"),
    ):
        if lo not in frame.columns:
            out[key] = math.nan
            continue
        has = frame[lo].notna() & frame[hi].notna()
        inside = (frame.loc[has, lo] <= frame.loc[has, "true_B"] + 1e-12) & (
            frame.loc[has, "true_B"] <= frame.loc[has, hi] + 1e-12
        )
        out[key] = float(inside.mean()) if has.any() else math.nan
    return out


def summarize(errors: pd.DataFrame) -> pd.DataFrame:
    """Per estimator: all points, each true-risk bin of width 0.1 and each sampling-fraction band
    (with the coverage of the intervals where the estimator gives them)."""
    df = errors.assign(
        risk_bin=true_risk_bin(errors["true_B"]), band=fraction_band(errors["sampling_fraction"])
    )
    out: list[dict[str, Any]] = []
    order = list(dict.fromkeys(df["estimator"]))

    def row(name: str, group: str, label: str, part: pd.DataFrame) -> dict[str, Any]:
        return {"estimator": name, "group": group, "bin": label, **_stats(part["error"]), **_coverage(part)}

    for name in order:
        sub = df[df["estimator"] == name]
        out.append(row(name, "all", "all", sub))
        for label in sorted(sub["risk_bin"].unique()):
            out.append(row(name, "true_B", label, sub[sub["risk_bin"] == label]))
        for label in FRACTION_BANDS:
            part = sub[sub["band"] == label]
            if len(part):
                out.append(row(name, "sampling_fraction", label, part))
    return pd.DataFrame(out)


def acceptance(summary: pd.DataFrame) -> dict[str, dict[str, Any]]:
    """The issue's criterion per estimator: >= 90 % of errors within ±0.05 overall, and a median
    absolute error <= 0.05 in every true-risk bin holding >= 10 points."""
    out: dict[str, dict[str, Any]] = {}
    for name in dict.fromkeys(summary["estimator"]):
        s = summary[summary["estimator"] == name]
        overall = s[s["group"] == "all"].iloc[0]
        bins = s[(s["group"] == "true_B") & (s["points"] >= MIN_BIN_POINTS)]
        failing = [
            str(b)
            for b, mae in zip(bins["bin"], bins["median_abs_error"], strict=True)
            if not mae <= ACCURACY_BAND
        ]
        within = float(overall["within_0.05"])
        out[name] = {
            "within_0.05": within,
            "median_abs_error": float(overall["median_abs_error"]),
            "median_error": float(overall["median_error"]),
            "bins_checked": [str(b) for b in bins["bin"]],
            "bins_failing": failing,
            "passes": bool(within >= 0.9 and not failing),
        }
    return out


def qualitative_checks(summary: pd.DataFrame) -> dict[str, Any]:
    """The paper's directions (§3): entropy overestimates, Benedetti-Franconi underestimates, judged by
    the median error overall and in the true-risk bins with enough points."""
    out: dict[str, Any] = {}
    for name, sign, claim in (("entropy", 1, "overestimates"), ("benedetti_franconi", -1, "underestimates")):
        s = summary[summary["estimator"] == name]
        if s.empty:
            continue
        overall = float(s[s["group"] == "all"]["median_error"].iloc[0])
        bins = s[(s["group"] == "true_B") & (s["points"] >= MIN_BIN_POINTS)]
        agree = int(sum(sign * m > 0 for m in bins["median_error"]))
        out[name] = {
            "claim": claim,
            "median_error": overall,
            "bins_agreeing": agree,
            "bins": len(bins),
            "holds": bool(sign * overall > 0),
        }
    return out


def sensitivity_summary(sens: pd.DataFrame) -> pd.DataFrame:
    """Per N change: all points and each true-risk bin."""
    df = sens.assign(risk_bin=true_risk_bin(sens["true_B"]))
    out: list[dict[str, Any]] = []
    for e in sorted(df["population_size_error"].unique()):
        sub = df[df["population_size_error"] == e]
        out.append({"population_size_error": e, "bin": "all", **_stats(sub["error"])})
        for label in sorted(sub["risk_bin"].unique()):
            out.append(
                {
                    "population_size_error": e,
                    "bin": label,
                    **_stats(sub.loc[sub["risk_bin"] == label, "error"]),
                }
            )
    return pd.DataFrame(out)


def rank_estimators(summary: pd.DataFrame) -> list[str]:
    """Estimators from best to worst: most errors within ±0.05, then the worst true-risk bin's median
    absolute error (bins with >= 10 points), then the overall median absolute error."""
    acc = acceptance(summary)

    def key(name: str) -> tuple[float, float, float]:
        s = summary[
            (summary["estimator"] == name)
            & (summary["group"] == "true_B")
            & (summary["points"] >= MIN_BIN_POINTS)
        ]
        worst = float(s["median_abs_error"].max()) if len(s) else math.inf
        w = acc[name]["within_0.05"]
        return (-(w if math.isfinite(w) else -1.0), worst, acc[name]["median_abs_error"])

    return sorted(acc, key=key)
