"""Screenshots of report.html in headless Chromium for docs/report.md (issue 20).

A synthetic cardiology cohort (no real person: generated here with a fixed seed) is released
with a pseudonymized record number, per-person shifted admission and discharge dates (the
discharge date a quasi-identifier), ``k-anonymity`` with ``k = 5`` and ``risk: {threshold:
0.09}``, a purpose, an approver and a ledger; then Chromium renders report.html::

    PYTHONPATH=src python tools/report_screenshots.py [--chromium /usr/bin/chromium]

writes ``docs/img/report-cover.png`` (the certificate), ``report-headline.png`` (the result
and the warnings), ``report-evidence.png`` (the evidence section) and
``report-print-1.png``, ``report-print-2.png`` (the first two printed pages, from Chromium's
PDF, with poppler's ``pdftoppm``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from safeshare import api
from safeshare.data.identifiers import write_new_key

ROOT = Path(__file__).resolve().parents[1]
IMG = ROOT / "docs" / "img"

CONFIG = """\
# A synthetic cardiology cohort: one row per admission.
input: {path: admissions.csv}
key_file: release.key
attributes:
  mrn: {role: pseudonym, length: 16}
  sex: {role: quasi, hierarchy: {type: masking}}
  age: {role: quasi, hierarchy: {type: intervals, widths: [5, 10, 20], coding: {top: 90}}}
  admitted: {role: shifted_date, person: mrn, max_days: 90}
  discharged: {role: shifted_date, person: mrn, max_days: 90,
               hierarchy: {type: dates, levels: [month, quarter, year]}}
  died: {role: sensitive}
  followup_days: {role: insensitive}
privacy:
  k-anonymity: {k: 5}
  risk: {threshold: 0.09}
max_suppression: 5%
purpose: monthly research extract of the cardiology cohort, linkable across releases
approved_by: "J. Doe, privacy officer"
ledger: releases.jsonl
"""


def cohort(n_people: int = 2000, seed: int = 7) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for p in range(n_people):
        sex, age = str(rng.choice(["F", "M"])), int(rng.integers(35, 96))
        died = "yes" if rng.random() < 0.12 + 0.004 * max(age - 60, 0) else "no"
        start = dt.date(2018, 1, 1) + dt.timedelta(days=int(rng.integers(0, 1200)))
        for _ in range(int(rng.integers(1, 4))):
            admitted = start + dt.timedelta(days=int(rng.integers(0, 365)))
            rows.append(
                {
                    "mrn": f"MRN{p:07d}",
                    "sex": sex,
                    "age": str(age),
                    "admitted": admitted.isoformat(),
                    "discharged": (admitted + dt.timedelta(days=int(rng.integers(1, 25)))).isoformat(),
                    "died": died,
                    "followup_days": str(int(rng.integers(1, 3000))),
                }
            )
    return pd.DataFrame(rows)


def shoot(chromium: str, url: str, png: Path, width: int, height: int) -> None:
    subprocess.run(
        [chromium, "--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         f"--window-size={width},{height}", f"--screenshot={png}", url],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    args = parser.parse_args()
    IMG.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="safeshare-shots-") as tmp:
        work = Path(tmp)
        cohort().to_csv(work / "admissions.csv", index=False)
        write_new_key(work / "release.key")
        (work / "cohort.yaml").write_text(CONFIG)
        release = api.anonymize(work / "cohort.yaml", work / "out")
        print(release.report["headline"]["text"])
        html = work / "out" / "report.html"
        page = html.read_text()
        # one page per view: the cover, the result, the evidence (Chromium shoots the top of a page)
        cut = page.index("<h1>safeshare release report")
        head, body = page[: page.index("<body>") + len("<body>")], page[page.index("<body>") + 6 :]
        views = {
            "report-cover.png": (page, 1000, 1250),
            "report-headline.png": (head + body[body.index("<h1>") :], 1000, 1500),
            "report-evidence.png": (head + body[body.index('<h2 id="evidence">') :], 1000, 1700),
        }
        assert cut > 0
        for name, (text, width, height) in views.items():
            view = work / f"view-{name}.html"
            view.write_text(text)
            shoot(args.chromium, view.as_uri(), IMG / name, width, height)
        pdf = work / "report.pdf"
        subprocess.run(
            [args.chromium, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-pdf-header-footer",
             f"--print-to-pdf={pdf}", html.as_uri()],
            check=True, capture_output=True, timeout=120,
        )  # fmt: skip
        pdftoppm = shutil.which("pdftoppm")
        if pdftoppm is not None:  # the first two printed pages (poppler-utils), side by side in the docs
            for page_no in (1, 2):
                subprocess.run(
                    [pdftoppm, "-png", "-r", "60", "-f", str(page_no), "-l", str(page_no), "-singlefile",
                     str(pdf), str(IMG / f"report-print-{page_no}")],
                    check=True, capture_output=True, timeout=120,
                )  # fmt: skip
        else:
            print("pdftoppm not found (apt-get install poppler-utils): no picture of the printed pages")
        info = shutil.which("pdfinfo")
        if info is not None:
            pages = subprocess.run([info, str(pdf)], check=True, capture_output=True, text=True).stdout
            print(next(line for line in pages.splitlines() if line.startswith("Pages")))
        for name in sorted(p.name for p in IMG.glob("report-*.png")):
            print(IMG / name)


if __name__ == "__main__":
    main()
