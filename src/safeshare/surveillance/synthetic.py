"""SYNTHETIC surveillance inputs in the exact layouts :mod:`.inputs` reads.

No real census, case or forecast data can be shipped, so the examples are
generated here, reproducibly::

    python -m safeshare.surveillance.synthetic --out examples/surveillance --seed 1
    python -m safeshare.surveillance.synthetic --nation --out NATION --seed 1   # 200 counties, ~10 MB

Regions are fake FIPS codes of a non-existent state 99 (``99001``, ...). The
population of each region is a multinomial draw over the default fine bins
from region-specific age, race and ethnicity marginals; daily cases follow two
epidemic waves with a weekly reporting rhythm (fewer cases on weekends);
forecasts are the true weekly totals times a biased log-normal error, with
quantiles around them. None of it describes real people or places.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from safeshare.surveillance.policies import DEFAULT_RACES, MAX_AGE, default_space

#: (fips, name, people, race shares in DEFAULT_RACES order, hispanic share)
REGIONS: tuple[tuple[str, str, int, tuple[float, ...], float], ...] = (
    ("99001", "Synthetic Metro", 26_000, (0.55, 0.28, 0.005, 0.06, 0.002, 0.06, 0.043), 0.12),
    ("99003", "Synthetic Valley", 8_000, (0.80, 0.12, 0.01, 0.02, 0.001, 0.02, 0.029), 0.06),
    ("99005", "Synthetic Ridge", 1_500, (0.90, 0.05, 0.02, 0.005, 0.0, 0.01, 0.015), 0.03),
)
START = np.datetime64("2020-08-02")  # a Sunday, the first day of the paper's study period
DAYS = 140  # 20 weeks
QUANTILES = (0.025, 0.1, 0.25, 0.5, 0.75, 0.9, 0.975)


def _age_shares() -> np.ndarray:
    ages = np.arange(MAX_AGE + 1, dtype=float)
    shares = np.where(ages < 60, 1.0, np.exp(-(ages - 60) / 12.0))
    shares[-1] *= 0.5
    out: np.ndarray = shares / shares.sum()
    return out


def population_frame(rng: np.random.Generator) -> pd.DataFrame:
    """People per region and fine bin (nonzero bins only)."""
    space = default_space()
    age = _age_shares()
    rows = []
    for fips, _name, people, races, hispanic in REGIONS:
        race = np.asarray(races) / sum(races)
        probs = np.einsum(
            "a,r,s,e->arse", age, race, np.array([0.51, 0.49]), np.array([hispanic, 1 - hispanic])
        )
        counts = rng.multinomial(people, probs.ravel()).reshape(space.shape)
        for a, r, s, e in zip(*np.nonzero(counts), strict=True):
            rows.append(
                (
                    fips,
                    int(a),
                    DEFAULT_RACES[r],
                    space.dimensions[2].leaves[s],
                    space.dimensions[3].leaves[e],
                    int(counts[a, r, s, e]),
                )
            )
    return pd.DataFrame(rows, columns=["region", "age", "race", "sex", "ethnicity", "count"])


def daily_cases(rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Two epidemic waves per region with fewer reports on weekends."""
    t = np.arange(DAYS, dtype=float)
    weekday = (t.astype(int)) % 7  # 0 = Sunday
    rhythm = np.where((weekday == 0) | (weekday == 6), 0.55, 1.12)
    out = {}
    for i, (fips, _name, people, _r, _h) in enumerate(REGIONS):
        wave = 0.25 + 3.0 * np.exp(-(((t - 45 - 5 * i) / 14) ** 2)) + 5.0 * np.exp(-(((t - 110) / 16) ** 2))
        mean = people * 6e-4 * wave * rhythm
        out[fips] = rng.poisson(mean).astype(np.int64)
    return out


def case_series_frame(cases: dict[str, np.ndarray]) -> pd.DataFrame:
    dates = START + np.arange(DAYS)
    frames = [
        pd.DataFrame({"region": fips, "date": dates.astype(str), "new_cases": c}) for fips, c in cases.items()
    ]
    return pd.concat(frames, ignore_index=True)


def jhu_frame(cases: dict[str, np.ndarray], rng: np.random.Generator) -> pd.DataFrame:
    """The JHU CSSE US layout: cumulative counts from the day before START."""
    dates = START - 1 + np.arange(DAYS + 1)
    names = [f"{pd.Timestamp(d).month}/{pd.Timestamp(d).day}/{pd.Timestamp(d).strftime('%y')}" for d in dates]
    rows = []
    for fips, name, people, _r, _h in REGIONS:
        prior = int(rng.integers(0, max(2, people // 200)))
        cum = prior + np.concatenate([[0], np.cumsum(cases[fips])])
        meta = {
            "UID": int("840" + fips),
            "iso2": "US",
            "iso3": "USA",
            "code3": 840,
            "FIPS": f"{float(fips):.1f}",
            "Admin2": name,
            "Province_State": "Synthetica",
            "Country_Region": "US",
            "Lat": 0.0,
            "Long_": 0.0,
            "Combined_Key": f"{name}, Synthetica, US",
        }
        rows.append({**meta, **dict(zip(names, cum.tolist(), strict=True))})
    return pd.DataFrame(rows)


def forecast_frame(cases: dict[str, np.ndarray], rng: np.random.Generator) -> pd.DataFrame:
    """Forecast Hub rows: 1 wk ahead incident cases for each Sunday-Saturday week, made the Monday before."""
    rows = []
    for fips, c in cases.items():
        for week in range(DAYS // 7):
            start = START + 7 * week
            truth = float(c[7 * week : 7 * week + 7].sum())
            point = max(0.0, (truth + 1.0) * math.exp(rng.normal(0.1, 0.3)) - 1.0)
            base = {
                "forecast_date": str(start - 6),
                "target": "1 wk ahead inc case",
                "target_end_date": str(start + 6),
                "location": fips,
            }
            rows.append({**base, "type": "point", "quantile": "NA", "value": round(point, 1)})
            for q in QUANTILES:
                z = math.sqrt(2) * _erfinv(2 * q - 1)
                rows.append(
                    {**base, "type": "quantile", "quantile": q, "value": round(point * math.exp(0.3 * z), 1)}
                )
    return pd.DataFrame(rows)


def _erfinv(y: float) -> float:
    """Inverse error function by bisection (enough for a handful of quantile levels)."""
    lo, hi = -6.0, 6.0
    for _ in range(80):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if math.erf(mid) < y else (lo, mid)
    return (lo + hi) / 2


def case_records_frame(
    pop: pd.DataFrame, cases: dict[str, np.ndarray], rng: np.random.Generator
) -> pd.DataFrame:
    """Person-level records of region 99003 for the first two weeks, drawn without replacement."""
    fips = "99003"
    region = pop[pop["region"] == fips].reset_index(drop=True)
    people = np.repeat(np.arange(len(region)), region["count"].to_numpy())
    order = rng.permutation(people)
    rows: list[dict[str, object]] = []
    pos = 0
    for day in range(14):
        n = int(cases[fips][day])
        for who in order[pos : pos + n]:
            rec = region.iloc[int(who)]
            rows.append(
                {
                    "case_id": f"S{len(rows) + 1:05d}",
                    "region": fips,
                    "date": str(START + day),
                    "age": int(rec["age"]),
                    "race": rec["race"],
                    "sex": rec["sex"],
                    "ethnicity": rec["ethnicity"],
                    "hospitalized": bool(rng.random() < 0.05),
                }
            )
        pos += n
    return pd.DataFrame(rows)


#: The synthetic nation: counties per category of the paper's Table 2 (people from, to), 200 in all.
NATION = (
    (10, 200, 1_000),
    (100, 1_000, 50_000),
    (35, 50_000, 100_000),
    (45, 100_000, 1_000_000),
    (10, 1_000_000, 3_000_000),
)
#: New cases per person per day at the waves' base rate (about 2% of the people infected in 20 weeks).
NATION_RATE = 8e-5


def nation_frames(rng: np.random.Generator) -> dict[str, pd.DataFrame]:
    """A SYNTHETIC nation of 200 counties over the paper's five population-size categories: the
    population table, daily cases (two waves, county-specific timing and size, fewer reports on
    weekends) and 1 wk ahead point forecasts (the true weekly totals times a biased log-normal error).
    Regions are fake FIPS codes of non-existent states 80-83."""
    space = default_space()
    age = _age_shares()
    t = np.arange(DAYS, dtype=float)
    weekday = t.astype(int) % 7
    rhythm = np.where((weekday == 0) | (weekday == 6), 0.55, 1.12)
    sizes = np.concatenate(
        [np.exp(rng.uniform(np.log(lo), np.log(hi), n)).astype(np.int64) for n, lo, hi in NATION]
    )
    rows: list[pd.DataFrame] = []
    cases: dict[str, np.ndarray] = {}
    base_race = np.array([0.60, 0.13, 0.01, 0.06, 0.002, 0.06, 0.04])
    for i, people in enumerate(sizes):
        fips = f"{80 + i // 50}{(i % 50) * 2 + 1:03d}"
        race = rng.dirichlet(base_race * 40)
        hispanic = float(rng.beta(2, 10))
        probs = np.einsum(
            "a,r,s,e->arse", age, race, np.array([0.51, 0.49]), np.array([hispanic, 1 - hispanic])
        )
        counts = rng.multinomial(int(people), probs.ravel()).reshape(space.shape)
        a, r, x, e = np.nonzero(counts)
        rows.append(
            pd.DataFrame(
                {
                    "region": fips,
                    "age": a,
                    "race": np.asarray(DEFAULT_RACES)[r],
                    "sex": np.asarray(space.dimensions[2].leaves)[x],
                    "ethnicity": np.asarray(space.dimensions[3].leaves)[e],
                    "count": counts[a, r, x, e],
                }
            )
        )
        first, second = rng.uniform(30, 70), rng.uniform(95, 125)
        wave = 0.3 + 2.5 * np.exp(-(((t - first) / 14) ** 2)) + 4.0 * np.exp(-(((t - second) / 16) ** 2))
        rate = NATION_RATE * float(rng.lognormal(0.0, 0.4))
        cases[fips] = rng.poisson(people * rate * wave * rhythm).astype(np.int64)
    forecasts = forecast_frame(cases, rng)
    return {
        "population.csv": pd.concat(rows, ignore_index=True),
        "cases_long.csv": case_series_frame(cases),
        "forecasts.csv": forecasts[forecasts["type"] == "point"].reset_index(drop=True),
    }


#: The series of releases (issue 37): the people of a county, log-uniform between these.
SERIES_PEOPLE = (20_000, 300_000)


def series_frames(
    rng: np.random.Generator, counties: int = 9, weeks: int = 52, late: float = 0.1, delay: int = 10
) -> dict[str, pd.DataFrame]:
    """A SYNTHETIC series for release after release (issue 37): ``counties`` counties (fake FIPS codes
    of a non-existent state 84, people log-uniform in 20,000-300,000, the nation's marginals), daily
    cases over ``weeks`` weeks from 2020-08-02 (two waves, fewer reports on weekends), the person-level
    case records (drawn without replacement from each county's people) with a ``report_date``: a share
    ``late`` of them reported 1 to ``delay`` days after their ``date``, the others on it."""
    space = default_space()
    age = _age_shares()
    days = 7 * weeks
    t = np.arange(days, dtype=float)
    rhythm = np.where((t.astype(int) % 7 == 0) | (t.astype(int) % 7 == 6), 0.55, 1.12)
    lo, hi = SERIES_PEOPLE
    sizes = np.exp(rng.uniform(np.log(lo), np.log(hi), counties)).astype(np.int64)
    base_race = np.array([0.60, 0.13, 0.01, 0.06, 0.002, 0.06, 0.04])
    pops, records, series = [], [], []
    dates = START + np.arange(days)
    for i, people in enumerate(sizes):
        fips = f"84{2 * i + 1:03d}"
        race = rng.dirichlet(base_race * 40)
        hispanic = float(rng.beta(2, 10))
        probs = np.einsum(
            "a,r,s,e->arse", age, race, np.array([0.51, 0.49]), np.array([hispanic, 1 - hispanic])
        )
        counts = rng.multinomial(int(people), probs.ravel()).reshape(space.shape)
        a, r, x, e = np.nonzero(counts)
        pops.append(
            pd.DataFrame(
                {
                    "region": fips,
                    "age": a,
                    "race": np.asarray(DEFAULT_RACES)[r],
                    "sex": np.asarray(space.dimensions[2].leaves)[x],
                    "ethnicity": np.asarray(space.dimensions[3].leaves)[e],
                    "count": counts[a, r, x, e],
                }
            )
        )
        first, second = rng.uniform(40, 140), rng.uniform(200, 320)
        wave = 0.3 + 2.5 * np.exp(-(((t - first) / 20) ** 2)) + 4.0 * np.exp(-(((t - second) / 25) ** 2))
        cases = rng.poisson(people * NATION_RATE * 0.5 * wave * rhythm).astype(np.int64)
        total = int(min(cases.sum(), people))
        cases = (
            cases
            if total == cases.sum()
            else np.diff(np.minimum(np.concatenate([[0], np.cumsum(cases)]), total))
        )
        flat = np.repeat(np.arange(counts.size), counts.ravel())
        who = flat[rng.choice(flat.size, int(cases.sum()), replace=False)]
        ai, ri, si, ei = np.unravel_index(who, space.shape)
        day = np.repeat(np.arange(days), cases)
        lag = np.where(rng.random(day.size) < late, rng.integers(1, delay + 1, day.size), 0)
        records.append(
            pd.DataFrame(
                {
                    "region": fips,
                    "date": dates[day].astype(str),
                    "age": ai,
                    "race": np.asarray(DEFAULT_RACES)[ri],
                    "sex": np.asarray(space.dimensions[2].leaves)[si],
                    "ethnicity": np.asarray(space.dimensions[3].leaves)[ei],
                    "report_date": (dates[day] + lag).astype(str),
                }
            )
        )
        series.append(pd.DataFrame({"region": fips, "date": dates.astype(str), "new_cases": cases}))
    return {
        "population.csv": pd.concat(pops, ignore_index=True),
        "case_records.csv": pd.concat(records, ignore_index=True),
        "cases_long.csv": pd.concat(series, ignore_index=True),
    }


def generate_nation(out: Path, seed: int) -> list[Path]:
    """Write the SYNTHETIC nation (:func:`nation_frames`) into ``out``; returns the files written."""
    rng = np.random.default_rng(seed)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, frame in nation_frames(rng).items():
        path = out / name
        frame.to_csv(path, index=False, lineterminator="\n")
        written.append(path)
    readme = out / "README.md"
    readme.write_text(
        "SYNTHETIC surveillance inputs: a nation of 200 made-up counties over the paper's five\n"
        "population-size categories (fake FIPS codes of non-existent states 80-83), written by\n"
        f"`python -m safeshare.surveillance.synthetic --nation --out DIR --seed {seed}`.\n"
        "None of it describes real people or places.\n"
    )
    written.append(readme)
    return written


def generate(out: Path, seed: int) -> list[Path]:
    """Write every synthetic example into ``out``; returns the files written."""
    rng = np.random.default_rng(seed)
    out.mkdir(parents=True, exist_ok=True)
    pop = population_frame(rng)
    cases = daily_cases(rng)
    files = {
        "population.csv": pop,
        "cases_long.csv": case_series_frame(cases),
        "cases_jhu.csv": jhu_frame(cases, rng),
        "forecasts.csv": forecast_frame(cases, rng),
        "case_records.csv": case_records_frame(pop, cases, rng),
    }
    written = []
    for name, frame in files.items():
        path = out / name
        frame.to_csv(path, index=False, lineterminator="\n")
        written.append(path)
    return written


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="directory to write the CSV files into")
    parser.add_argument("--seed", type=int, default=1, help="seed of the generator (default 1)")
    parser.add_argument(
        "--nation", action="store_true", help="a nation of 200 counties over the paper's five categories"
    )
    args = parser.parse_args(argv)
    for path in (generate_nation if args.nation else generate)(args.out, args.seed):
        print(f"{path} ({path.stat().st_size:,} bytes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
