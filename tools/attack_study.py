"""The attack as a check of the estimators (issue 34): on populations where B is known.

For each run (everything drawn from ``SeedSequence([seed, dataset, run])``): a random subset of
the dataset's quasi-identifier pool (1 to all of them), a sampling fraction ``f ~ U(0.01, 0.99)``,
a simple random sample of ``round(f N)`` records: the release (its raw QIs). The adversary holds
the whole population and attacks every released record by exact matching
(:func:`safeshare.attack.exact.exact_match`: the same code as ``safeshare attack``), so:

* the measured correct-match rate and its Wilson 95 % interval, against the exact B (the
  expectation of the attack, :mod:`safeshare.risk.measures`): does the interval hold B?
* each estimator's 95 % interval for B (from the sample alone and N), against the measured rate:
  does it hold the rate? (The estimate of a risk is worth what it says about an attack.)
* the per-record population uniqueness of Rocher et al. (:mod:`safeshare.risk.record_risk`, the
  Gaussian copula fitted on the sample) as a predictor of the records' true population uniqueness:
  AUC, and the false-positive rate and precision of "unique" at ``xi >= 0.5``.

    PYTHONPATH=src nice -n 10 python tools/attack_study.py --runs 60 --seed 1 \\
        [--estimator pitman,average] [--kdd DIR] [--german FILE] [--json out.json]

Prints one table per dataset and the pooled figures; ``--json`` writes every run.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from safeshare.adult import ADULT_COLUMNS  # noqa: E402
from safeshare.attack.exact import exact_match  # noqa: E402
from safeshare.attack.view import QIMap, consistent_pairs  # noqa: E402
from safeshare.hierarchy.hierarchy import Hierarchy  # noqa: E402
from safeshare.risk.classes import SampleTable  # noqa: E402
from safeshare.risk.estimators import make_estimator  # noqa: E402
from safeshare.risk.record_risk import copula_record_risk  # noqa: E402

SHARED = Path("/work/shared/datasets")
#: the datasets, in the order their seeds are numbered (a run is the same whichever are run together)
DATASETS = ("adult", "kdd", "german")
_KDD = (
    "age,class_of_worker,detailed_industry_recode,detailed_occupation_recode,education,wage_per_hour,"
    "enroll_in_edu_inst_last_wk,marital_stat,major_industry_code,major_occupation_code,race,hispanic_origin,"
    "sex,member_of_a_labor_union,reason_for_unemployment,full_or_part_time_employment_stat,capital_gains,"
    "capital_losses,dividends_from_stocks,tax_filer_stat,region_of_previous_residence,"
    "state_of_previous_residence,detailed_household_and_family_stat,detailed_household_summary_in_household,"
    "instance_weight,migration_code_change_in_msa,migration_code_change_in_reg,migration_code_move_within_reg,"
    "live_in_this_house_1_year_ago,migration_prev_res_in_sunbelt,num_persons_worked_for_employer,"
    "family_members_under_18,country_of_birth_father,country_of_birth_mother,country_of_birth_self,"
    "citizenship,own_business_or_self_employed,fill_inc_questionnaire_for_veterans_admin,veterans_benefits,"
    "weeks_worked_in_year,year,income"
)
KDD_COLUMNS = _KDD.split(",")
_GERMAN = (
    "checking_status,duration,credit_history,purpose,credit_amount,savings,employment_since,installment_rate,"
    "personal_status_sex,other_debtors,residence_since,property,age,other_installment_plans,housing,"
    "existing_credits,job,num_dependents,telephone,foreign_worker,class"
)
GERMAN_COLUMNS = _GERMAN.split(",")
POOLS = {
    "adult": ["age", "workclass", "education", "marital-status", "occupation", "relationship", "race", "sex",
              "native-country"],
    "kdd": ["age", "class_of_worker", "education", "marital_stat", "major_occupation_code", "race",
            "hispanic_origin", "sex", "citizenship", "country_of_birth_self"],
    "german": ["age", "personal_status_sex", "employment_since", "housing", "job", "num_dependents",
               "telephone", "foreign_worker"],
}  # fmt: skip


def load(name: str, args: argparse.Namespace) -> pd.DataFrame | None:
    opts: dict[str, Any] = {"header": None, "dtype": str, "skipinitialspace": True, "keep_default_na": False}
    if name == "adult":
        data = pd.read_csv(ROOT / "examples/adult/adult.data", names=list(ADULT_COLUMNS), **opts)
        test = pd.read_csv(ROOT / "examples/adult/adult.test", names=list(ADULT_COLUMNS), skiprows=1, **opts)
        test["income"] = test["income"].str.rstrip(".")
        out: pd.DataFrame = pd.concat([data, test], ignore_index=True).dropna(subset=["age"])
        return out
    if name == "kdd":
        base = Path(args.kdd)
        if not (base / "census-income.data.gz").exists():
            return None
        parts = [
            pd.read_csv(base / f, names=KDD_COLUMNS, **opts)
            for f in ("census-income.data.gz", "census-income.test.gz")
        ]
        kdd: pd.DataFrame = pd.concat(parts, ignore_index=True)
        return kdd
    path = Path(args.german)
    if not path.exists():
        return None
    return pd.read_csv(path, sep=" ", names=GERMAN_COLUMNS, header=None, dtype=str, keep_default_na=False)


def identity_map(name: str, values: pd.Series) -> QIMap:
    """A one-level hierarchy: the release carries raw values."""
    return QIMap(name, Hierarchy([[v] for v in sorted(set(values.astype(str)))], name))


def auc(scores: np.ndarray, labels: np.ndarray) -> float | None:
    from sklearn.metrics import roc_auc_score

    if labels.all() or not labels.any():
        return None
    return float(roc_auc_score(labels, scores))


def run_once(
    pop: pd.DataFrame,
    pool: list[str],
    ss: np.random.SeedSequence,
    estimators: list[str],
    uniqueness: bool = True,
) -> dict[str, Any]:
    rng = np.random.default_rng(ss)
    m = int(rng.integers(1, len(pool) + 1))
    qi = sorted(rng.choice(pool, m, replace=False).tolist(), key=pool.index)
    f = float(rng.uniform(0.01, 0.99))
    N = len(pop)
    n = max(1, round(f * N))
    idx = rng.choice(N, n, replace=False)
    sample = pop.iloc[idx].reset_index(drop=True)
    maps = [identity_map(q, pop[q]) for q in qi]
    codes, uniq = pd.factorize(pd.MultiIndex.from_frame(sample[qi].astype(str)))
    labels = pd.DataFrame(list(uniq), columns=qi)
    rec, cls = consistent_pairs(maps, pop[qi].astype(str), labels)
    class_of_row = np.asarray(codes, dtype=np.int64)
    attack = exact_match(class_of_row, rec, cls, idx.astype(np.int64), np.ones(n, dtype=bool), rng)
    F_class = np.bincount(cls, minlength=len(labels))
    B = float(np.mean(1.0 / F_class[class_of_row]))  # the exact B (the attack's expectation)
    lo, hi = attack.rate.interval
    out: dict[str, Any] = {
        "qis": qi, "sampling_fraction": f, "n": n, "B": B, "expected": attack.expected,
        "rate": attack.rate.value, "rate_interval": [lo, hi], "rate_holds_B": bool(lo <= B <= hi),
        "estimators": {},
    }  # fmt: skip
    table = SampleTable.from_frame(sample, qi)
    for name in estimators:
        est = make_estimator(name, random_state=int(rng.integers(2**31))).fit(table, N)
        iv = est.B_interval_
        out["estimators"][name] = {
            "B": est.B_,
            "interval": None if iv is None else list(iv),
            "holds_rate": None if iv is None else bool(iv[0] <= attack.rate.value <= iv[1]),
            "holds_B": None if iv is None else bool(iv[0] <= B <= iv[1]),
        }
    if not uniqueness:  # the copula's per-record fit is most of a run's cost (--uniqueness-runs)
        out["uniqueness"] = None
        return out
    # Rocher et al.'s uniqueness: one score per released record, the truth F == 1
    fitted = copula_record_risk(table, N, int(rng.integers(2**31)))
    keys = pd.MultiIndex.from_arrays(
        [[table.categories[c][k] for k in table.codes[:, c]] for c in range(len(qi))]
    )
    F_pop = pop.groupby(qi).size()
    truth = (F_pop.reindex(keys).to_numpy() == 1).repeat(table.counts)
    xi = fitted.uniqueness.repeat(table.counts)
    uniques = table.counts.repeat(table.counts) == 1
    flagged = xi >= 0.5
    out["uniqueness"] = {
        "population_uniques": int(truth.sum()),
        "auc": auc(xi, truth),
        "auc_sample_uniques": auc(xi[uniques], truth[uniques]),
        "flagged": int(flagged.sum()),
        "false_positive_rate": float((flagged & ~truth).sum() / max((~truth).sum(), 1)),
        "precision": float((flagged & truth).sum() / flagged.sum()) if flagged.any() else None,
    }
    return out


def _with_noise(run: dict[str, Any], name: str) -> bool | None:
    """Whether the estimator's interval, widened at each end by the attack's own binomial spread
    (``1.96 sqrt(b (1 - b) / n)`` at that end ``b``: the measured rate is a mean of ``n`` Bernoulli
    draws around B), holds the measured rate: a prediction interval for what the attack measures."""
    interval = run["estimators"][name]["interval"]
    if interval is None:
        return None
    lo, hi = interval
    n = run["n"]
    lo -= 1.96 * (lo * (1 - lo) / n) ** 0.5
    hi += 1.96 * (hi * (1 - hi) / n) ** 0.5
    return bool(lo <= run["rate"] <= hi)


def summarize(runs: list[dict[str, Any]], estimators: list[str]) -> dict[str, Any]:
    def share(values: list[bool | None]) -> float | None:
        vals = [v for v in values if v is not None]
        return float(np.mean(vals)) if vals else None

    doc: dict[str, Any] = {"runs": len(runs), "rate_holds_B": share([r["rate_holds_B"] for r in runs])}
    for name in estimators:
        doc[f"{name}_interval_holds_rate"] = share([r["estimators"][name]["holds_rate"] for r in runs])
        doc[f"{name}_interval_with_attack_noise_holds_rate"] = share([_with_noise(r, name) for r in runs])
        doc[f"{name}_interval_holds_B"] = share([r["estimators"][name]["holds_B"] for r in runs])
    scored = [r for r in runs if r.get("uniqueness") is not None]
    aucs = [r["uniqueness"]["auc"] for r in scored if r["uniqueness"]["auc"] is not None]
    su = [
        r["uniqueness"]["auc_sample_uniques"]
        for r in scored
        if r["uniqueness"]["auc_sample_uniques"] is not None
    ]
    doc["auc_median"] = float(np.median(aucs)) if aucs else None
    doc["auc_min"] = float(np.min(aucs)) if aucs else None
    doc["auc_runs"] = len(aucs)
    doc["auc_sample_uniques_median"] = float(np.median(su)) if su else None
    fpr = [r["uniqueness"]["false_positive_rate"] for r in scored]
    doc["uniqueness_runs"] = len(scored)
    doc["false_positive_rate_median"] = float(np.median(fpr)) if fpr else None
    doc["false_positive_rate_max"] = float(np.max(fpr)) if fpr else None
    bands = {"f<0.1": (0, 0.1), "0.1-0.5": (0.1, 0.5), "f>0.5": (0.5, 1.0)}
    doc["bands"] = {}
    for band, (a, b) in bands.items():
        part = [r for r in runs if a <= r["sampling_fraction"] < b]
        if part:
            doc["bands"][band] = {
                "runs": len(part),
                "rate_holds_B": share([r["rate_holds_B"] for r in part]),
                **{
                    f"{e}_interval_holds_rate": share([r["estimators"][e]["holds_rate"] for r in part])
                    for e in estimators
                },
            }
    return doc


def study(
    names: list[str],
    runs: int,
    seed: int,
    estimators: list[str],
    args: argparse.Namespace,
    partial: str | None = None,
    uniqueness_runs: int | None = None,
) -> dict[str, Any]:
    out: dict[str, Any] = {"seed": seed, "runs_per_dataset": runs, "estimators": estimators, "datasets": {}}
    pooled: list[dict[str, Any]] = []
    for name in names:
        pop = load(name, args)
        if pop is None:
            print(f"{name}: data not found, skipped", file=sys.stderr)
            continue
        start = time.process_time()
        d = DATASETS.index(name)
        rs = []
        for r in range(runs):
            scored = uniqueness_runs is None or r < uniqueness_runs
            rs.append(run_once(pop, POOLS[name], np.random.SeedSequence([seed, d, r]), estimators, scored))
            print(f"{name}: run {r + 1} of {runs} ({time.process_time() - start:.0f} s CPU)", file=sys.stderr)
            if partial is not None:  # every run so far, so that an interrupted study keeps them
                Path(partial).write_text(
                    json.dumps({"dataset": name, "estimators": estimators, "runs": rs}) + "\n"
                )
        out["datasets"][name] = {"N": len(pop), "summary": summarize(rs, estimators), "runs": rs,
                                 "cpu_seconds": time.process_time() - start}  # fmt: skip
        pooled.extend(rs)
    out["pooled"] = summarize(pooled, estimators) if pooled else None
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=60)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--datasets", default="adult,kdd,german")
    ap.add_argument("--estimator", default="pitman,average")
    ap.add_argument("--kdd", default=str(SHARED / "census-income-kdd"))
    ap.add_argument("--german", default=str(SHARED / "german-credit" / "german.data"))
    ap.add_argument("--json", default=None)
    ap.add_argument(
        "--partial", default=None, help="rewrite this JSON file with the runs so far after each run"
    )
    ap.add_argument(
        "--uniqueness-runs",
        type=int,
        default=None,
        help="fit Rocher et al.'s per-record uniqueness in the first M runs only (default: every run)",
    )
    args = ap.parse_args(argv)
    estimators = [e for e in args.estimator.split(",") if e]
    result = study(
        args.datasets.split(","), args.runs, args.seed, estimators, args, args.partial, args.uniqueness_runs
    )
    for name, d in [*result["datasets"].items(), ("pooled", {"summary": result["pooled"]})]:
        s = d["summary"]
        if s is None:
            continue
        print(
            f"\n{name}: {s['runs']} runs"
            + (f", N = {d['N']:,}, {d['cpu_seconds']:.0f} s CPU" if "N" in d else "")
        )
        print(f"  measured rate's 95 % interval holds the exact B: {s['rate_holds_B']:.0%}")
        for e in estimators:
            print(f"  {e}'s 95 % interval holds the measured rate: {s[f'{e}_interval_holds_rate']:.0%}"
                  f" (holds B: {s[f'{e}_interval_holds_B']:.0%}; widened by the attack's binomial spread: "
                  f"{s[f'{e}_interval_with_attack_noise_holds_rate']:.0%})")  # fmt: skip
        for band, b in s["bands"].items():
            cells = ", ".join(f"{e} {b[f'{e}_interval_holds_rate']:.0%}" for e in estimators)
            print(
                f"    {band}: {b['runs']} runs; rate holds B {b['rate_holds_B']:.0%}; "
                f"intervals hold the rate: {cells}"
            )
        if s["auc_median"] is not None:
            print(f"  uniqueness AUC (Rocher et al.): median {s['auc_median']:.3f}, min {s['auc_min']:.3f} "
                  f"over {s['auc_runs']} runs; among sample uniques median "
                  f"{s['auc_sample_uniques_median']}")  # fmt: skip
        if s["false_positive_rate_median"] is not None:
            print(f"  false-positive rate of xi >= 0.5: median {s['false_positive_rate_median']:.4f}, "
                  f"max {s['false_positive_rate_max']:.4f}")  # fmt: skip
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
