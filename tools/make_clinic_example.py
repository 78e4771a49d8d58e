"""Write examples/clinic/admissions.csv: a synthetic clinical table (issue 33's clinical-style example).

20,000 hospital admissions of about 13,000 patients, drawn with a fixed seed (no real person is
in it; the file is CC0): a patient number (the person key), the patient's name (a direct
identifier, dropped), age (some blank: not recorded), sex, a 5-digit postcode, the admission
date (2021-2022), the ICD-10 chapter letter and code of the main diagnosis, the length of stay
and the outcome. The shape is a registry's: few patients repeat often, rare diagnoses and
rare postcodes exist, a minority group (sex ``X``) is small.

    python tools/make_clinic_example.py [--out examples/clinic/admissions.csv] [--seed 7]
"""

from __future__ import annotations

import argparse
import datetime as dt
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
ADMISSIONS = 20_000
PATIENTS = 13_000

#: ICD-10 codes by chapter letter with their weight (circulatory and respiratory most common).
DIAGNOSES = {
    "I": (["I10", "I20", "I21", "I48", "I50", "I63"], 0.22),
    "J": (["J18", "J44", "J45", "J96"], 0.16),
    "K": (["K35", "K80", "K92"], 0.12),
    "S": (["S06", "S72", "S82"], 0.10),
    "N": (["N17", "N39"], 0.08),
    "E": (["E11", "E86"], 0.08),
    "C": (["C18", "C34", "C50", "C61"], 0.08),
    "F": (["F10", "F32", "F20"], 0.06),
    "O": (["O80", "O82"], 0.06),
    "A": (["A41", "A08"], 0.04),
}
FIRST = ["Alex", "Sam", "Maria", "John", "Li", "Fatima", "Noah", "Emma", "Omar", "Sofia", "Ivan", "Aiko"]
LAST = ["Smith", "Garcia", "Chen", "Khan", "Müller", "Rossi", "Dubois", "Kim", "Novak", "Silva", "Haddad"]


def make(seed: int) -> pd.DataFrame:
    """The admissions table (module docstring), the same for the same ``seed``."""
    rng = np.random.default_rng(seed)
    age = np.clip(rng.gamma(4.0, 13.0, PATIENTS), 0, 104).astype(int)
    sex = rng.choice(["F", "M", "X"], PATIENTS, p=[0.505, 0.49, 0.005])
    # postcodes: 60 districts of a region, few common and a long tail (Zipf-like)
    districts = np.array([f"{40000 + 37 * i:05d}" for i in range(60)])
    weights = 1.0 / np.arange(1, 61) ** 0.9
    postcode = rng.choice(districts, PATIENTS, p=weights / weights.sum())
    names = [f"{rng.choice(FIRST)} {rng.choice(LAST)}" for _ in range(PATIENTS)]
    # admissions per patient: most once, a few often (the person key matters)
    visits = rng.choice(PATIENTS, ADMISSIONS - PATIENTS, p=(w := rng.pareto(1.5, PATIENTS) + 1) / w.sum())
    patient = np.concatenate([np.arange(PATIENTS), visits])
    rng.shuffle(patient)
    chapters = list(DIAGNOSES)
    chapter = rng.choice(chapters, ADMISSIONS, p=[DIAGNOSES[c][1] for c in chapters])
    # pregnancy and childbirth (O) only for women aged 15 to 49; others get a digestive diagnosis
    fertile = (sex[patient] == "F") & (age[patient] >= 15) & (age[patient] <= 49)
    chapter = np.where((chapter == "O") & ~fertile, "K", chapter)
    code = np.array([rng.choice(DIAGNOSES[c][0]) for c in chapter])
    start = dt.date(2021, 1, 1)
    days = rng.integers(0, 730, ADMISSIONS)
    admitted = [(start + dt.timedelta(days=int(d))).isoformat() for d in days]
    stay = np.maximum(1, rng.poisson(np.where(chapter == "O", 2, 5))).astype(int)
    outcome = rng.choice(["home", "transferred", "deceased"], ADMISSIONS, p=[0.86, 0.1, 0.04])
    frame = pd.DataFrame(
        {
            "patient_id": [f"P{p:06d}" for p in patient],
            "name": [names[p] for p in patient],
            "age": [str(a) for a in age[patient]],
            "sex": sex[patient],
            "postcode": postcode[patient],
            "admission_date": admitted,
            "chapter": chapter,
            "diagnosis": code,
            "length_of_stay": stay,
            "outcome": outcome,
        }
    )
    blank = rng.random(ADMISSIONS) < 0.02  # age not recorded
    frame.loc[blank, "age"] = ""
    return frame.sort_values(["admission_date", "patient_id"], kind="mergesort").reset_index(drop=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=str(ROOT / "examples" / "clinic" / "admissions.csv"))
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    make(args.seed).to_csv(out, index=False)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
