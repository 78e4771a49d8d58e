"""Pseudonyms, shifted dates and the disclosure warnings at scale (issue 20).

A synthetic clinical table of R records (default 1,000,000; ``--quick``: 200,000): about
R/3 people with 1-5 visits, a medical record number, sex, age, admission and discharge
dates and a diagnosis. With the DuckDB engine:

* baseline: the same release with ``mrn`` dropped and the dates kept as they are
  (``insensitive``), i.e. no identifier treatment;
* treated: ``mrn`` a pseudonym, ``admitted`` a kept shifted date and ``discharged`` a shifted
  date generalized by month (a quasi-identifier), same privacy model (k = 5);
* the independent identifier check on the written release (recomputing every pseudonym
  and shift from the key), and the disclosure warnings over it, with the informed adversary
  who knows the true admission dates within max_days (issue 30, verify/informed.py).

CPU seconds (``time.process_time``: this process and DuckDB's threads; the machine is
shared, so wall time says little) and the peak resident memory. Targets: the treated run
costs at most 4 times the baseline's CPU; the verification (which recomputes every
pseudonym and shift in Python, apart from the engine's SQL) at most twice the treated run's;
peak memory under 2 GB.

Run: ``PYTHONPATH=src python benchmarks/bench_identifiers.py [--quick]`` (or ``make bench``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import resource
import secrets
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from safeshare import Anonymizer, KAnonymity  # noqa: E402
from safeshare.data.engines.duckdb_engine import DuckDBEngine  # noqa: E402
from safeshare.data.identifiers import IdentifierTreatment, SecretKey  # noqa: E402
from safeshare.data.schema import Attribute, Role, Schema  # noqa: E402
from safeshare.data.source import TableSource  # noqa: E402
from safeshare.hierarchy.builders import DateBuilder  # noqa: E402
from safeshare.hierarchy.hierarchy import Hierarchy  # noqa: E402
from safeshare.verify import verify_release, with_identifiers  # noqa: E402
from safeshare.verify.disclosure import disclosure_check  # noqa: E402
from safeshare.verify.identifiers import IdentifierExpectations  # noqa: E402
from safeshare.verify.informed import KeptShiftedDate  # noqa: E402
from safeshare.workflows.release import release_expectations  # noqa: E402

TARGET_RATIO, TARGET_BYTES = 4.0, 2 * 1024**3


def visits(records: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    people = records // 3
    person = np.sort(rng.integers(0, people, records))
    start = rng.integers(0, 3 * 365, people)
    admitted = start[person] + rng.integers(0, 365, records)
    base = dt.date(2018, 1, 1).toordinal()
    day = np.array([dt.date.fromordinal(base + d).isoformat() for d in range(0, 5 * 365)])
    return pd.DataFrame(
        {
            "mrn": np.char.add("MRN", person.astype(str)),
            "sex": np.array(["F", "M"])[rng.integers(0, 2, people)][person],
            "age": rng.integers(18, 95, people)[person].astype(str),
            "admitted": day[admitted],
            "discharged": day[admitted + rng.integers(1, 20, records)],
            "dx": np.array(["I21", "I50", "J18", "E11", "N18", "C34"])[rng.integers(0, 6, records)],
        }
    )


def schema(treated: bool) -> Schema:
    age = Hierarchy([(str(a), f"{a // 10 * 10}s", "*") for a in range(18, 95)], "age")
    sex = Hierarchy([("F", "*"), ("M", "*")], "sex")
    if not treated:
        return Schema.from_attributes(
            [
                Attribute("mrn", Role.IDENTIFYING),
                Attribute("sex", Role.QUASI, sex),
                Attribute("age", Role.QUASI, age),
                Attribute("admitted", Role.INSENSITIVE),
                Attribute("discharged", Role.QUASI, DateBuilder(levels=("month", "year"))),
                Attribute("dx", Role.SENSITIVE),
            ]
        )
    return Schema.from_attributes(
        [
            Attribute("mrn", Role.PSEUDONYM),
            Attribute("sex", Role.QUASI, sex),
            Attribute("age", Role.QUASI, age),
            Attribute("admitted", Role.SHIFTED_DATE, person="mrn", max_days=60),
            Attribute(
                "discharged",
                Role.SHIFTED_DATE,
                DateBuilder(levels=("month", "year")),
                person="mrn",
                max_days=60,
            ),
            Attribute("dx", Role.SENSITIVE),
        ]
    )


def _cpu(fn: Any) -> tuple[float, Any]:
    start = time.process_time()
    value = fn()
    return time.process_time() - start, value


def run(records: int, warm_up: bool = True) -> dict[str, Any]:
    if warm_up:  # imports and compiled kernels (numba's cache) out of the timings
        run(3_000, warm_up=False)
    key = SecretKey(secrets.token_bytes(32))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "visits.csv"
        visits(records).to_csv(path, index=False)
        out: dict[str, Any] = {"records": records}
        for treated in (False, True):
            s = schema(treated)

            def release(s: Schema = s, treated: bool = treated) -> Any:
                ids = IdentifierTreatment.from_schema(s, key) if treated else None
                engine = DuckDBEngine(TableSource(path), identifiers=ids)
                result = Anonymizer(s, [KAnonymity(5)], max_suppression=0.05).fit(engine)
                target = Path(tmp) / f"release-{treated}.csv"
                engine.write_release(result.release_plan(engine.columns(), "csv"), target)
                return engine, result, target

            seconds, (engine, result, target) = _cpu(release)
            out["treated_s" if treated else "baseline_s"] = seconds
        expected = release_expectations(result, engine.columns())
        table = result.table
        ids = IdentifierExpectations.from_schema(
            s,
            key,
            engine.raw_grouped_batches,
            (),
            {q: h.rows for q, h in zip(table.qi_names, table.hierarchies, strict=True)},
            result.levels,
        )
        roles = {n: a.role.value for n, a in s.attributes.items()}
        expected = with_identifiers(expected, engine.columns(), roles, None, ids)
        out["verify_s"], verification = _cpu(lambda: verify_release(target, "csv", expected))
        out["verified"] = verification.passed
        out["warnings_s"], found = _cpu(
            lambda: disclosure_check(
                target,
                "csv",
                table.qi_names,
                ["dx"],
                ["dx"],
                shifted_dates=[KeptShiftedDate("admitted", "mrn", 60)],
                pseudonyms=["mrn"],
                k=5,
            )
        )
        out["warnings"] = [w.code for w in found.warnings]
        out["informed"] = found.adversary
        engine.close()
    out["rss_peak"] = int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024
    return out


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--records", type=int, default=None)
    args, _ = parser.parse_known_args()
    records = args.records or (200_000 if args.quick else 1_000_000)
    r = run(records)
    ratio = r["treated_s"] / r["baseline_s"]
    print(f"records {r['records']:,}: CPU seconds (process + DuckDB threads; machine shared)")
    print(f"  baseline (mrn dropped, dates raw)        {r['baseline_s']:8.1f}")
    print(f"  treated (pseudonyms, shifted dates)       {r['treated_s']:8.1f}  ({ratio:.2f} x baseline)")
    print(f"  identifier + release verification         {r['verify_s']:8.1f}  (passed: {r['verified']})")
    fired = ", ".join(r["warnings"]) or "none"
    print(f"  disclosure warnings                       {r['warnings_s']:8.1f}  ({fired})")
    informed = r["informed"]
    if informed is not None:
        print(
            f"    informed adversary (admitted within 60 days): singles out up to {informed.singled_out:,} "
            f"of {informed.records:,} ({informed.singled_out_expected:,.1f} on average), fewest candidates "
            f"{informed.smallest_candidates}"
        )
    print(f"  peak resident memory                      {r['rss_peak'] / 1024**3:8.2f} GB")
    ok = (
        r["verified"]
        and ratio <= TARGET_RATIO
        and r["verify_s"] <= 2 * r["treated_s"]
        and r["rss_peak"] < TARGET_BYTES
    )
    print("targets met" if ok else "TARGET MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
