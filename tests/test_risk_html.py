"""risk.html beside risk.json: estimators, A, the per-record risk distribution and the
classes that drive the risk, from class sizes and counts only."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from safeshare.risk.drivers import risk_drivers
from safeshare.risk.html import risk_distribution


def test_distribution_counts_records_and_classes_by_size() -> None:
    rows = {r["class_size"]: r for r in risk_distribution([1, 1, 2, 3, 4, 12])}
    assert rows["1"]["classes"] == 2 and rows["1"]["records"] == 2 and rows["1"]["risk"] == "1"
    assert rows["2"]["records"] == 2
    assert rows["3-4"]["classes"] == 2 and rows["3-4"]["records"] == 7
    assert rows["11-20"]["records"] == 12
    assert sum(r["records"] for r in rows.values()) == 23
    assert sum(r["share"] for r in rows.values()) == pytest.approx(1.0)


def test_drivers_sum_to_B_and_are_ordered() -> None:
    f = np.array([1, 1, 2, 5, 1])
    F = np.array([1, 3, 2, 50, 1])
    drivers = risk_drivers(f, F)
    B = float((f / F).sum() / f.sum())
    assert sum(d["contribution"] for d in drivers) == pytest.approx(B)
    assert drivers[0] == {"f": 1, "F": 1, "classes": 2, "records": 2, "contribution": pytest.approx(2 / 10)}
    contributions = [d["contribution"] for d in drivers]
    assert contributions == sorted(contributions, reverse=True)
    without = risk_drivers(f, None)
    assert all(d["F"] is None for d in without)
    assert [d["f"] for d in without] == [1, 2, 5]  # riskiest first
    assert sum(d["contribution"] for d in without) == pytest.approx(len(f) / f.sum())


def test_cli_writes_risk_html_without_qi_values(tmp_path: Path) -> None:
    rows = ["age,town"] + [f"{20 + i % 7},{'Zanzibar' if i == 0 else 'Oslo'}" for i in range(60)]
    data = tmp_path / "d.csv"
    data.write_text("\n".join(rows) + "\n")
    out = tmp_path / "o"
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "safeshare",
            "risk",
            str(data),
            "--qi",
            "age,town",
            "--population-size",
            "600",
            "--estimator",
            "pitman,entropy",
            "--out",
            str(out),
            "--quiet",
        ],
        capture_output=True,
        text=True,
    )
    assert res.returncode == 0, res.stderr
    doc = json.loads((out / "risk.json").read_text())
    html = (out / "risk.html").read_text()
    assert "pitman" in html and "entropy" in html and "A = J / N" in html
    assert f"{doc['A']:.4g}" in html
    assert "Per-record risk distribution" in html and "drive the risk" in html
    assert sum(r["records"] for r in doc["risk_distribution"]) == 60
    assert doc["risk_drivers"][0]["f"] == 1  # the unique Zanzibar record leads the prosecutor mean
    assert "Zanzibar" not in html and "Oslo" not in html
