"""Issue 22: population-size categories (the paper's by default), Table 2 in the paper's form, the
marketer search and the cumulative selection from the command line, several k in one run."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from safeshare.cli import main
from safeshare.errors import InputError
from safeshare.surveillance.categories import (
    PAPER_EDGES,
    category_label,
    check_edges,
    table2,
    table2_markdown,
)

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "surveillance"
POP = str(EXAMPLES / "population.csv")
CASES = str(EXAMPLES / "cases_long.csv")
FORECASTS = str(EXAMPLES / "forecasts.csv")


def test_the_papers_categories() -> None:
    assert check_edges("paper") == list(PAPER_EDGES) == [1_000, 50_000, 100_000, 1_000_000]
    assert check_edges([50, 10, 50]) == [10, 50] and check_edges(None) is None
    for bad in ("papers", [0, 5], []):
        with pytest.raises(InputError, match="--categories"):
            check_edges(bad)  # type: ignore[arg-type]
    assert [category_label(n) for n in ("<1000", "1000-50000", "100000-1000000", ">=1000000")] == [
        "< 1,000",
        "1,000 - 50,000",
        "100,000 - 1,000,000",
        "> 1,000,000",
    ]


def test_table2_averages_and_quantile_ranges_across_regions() -> None:
    rng = np.random.default_rng(3)
    rows = []
    for category, n in (("<1000", 7), ("1000-50000", 30)):
        for i in range(n):
            for schedule, releases in (("daily", 140), ("weekly", 20)):
                rows.append(
                    {
                        "region": f"{category}{i}",
                        "category": category,
                        "k": 11,
                        "schedule": schedule,
                        "releases": releases,
                        "static": rng.random(),
                        "dynamic": rng.random(),
                        "perfect_forecast": 1.0,
                    }
                )
    per_region = pd.DataFrame(rows)
    table = table2(per_region)
    assert len(table) == 2 * 2 * 3
    for _, row in table.iterrows():
        shares = per_region[
            (per_region["category"] == row["category"]) & (per_region["schedule"] == row["schedule"])
        ][row["policy"]].to_numpy()
        assert row["regions"] == len(shares) and row["mean"] == pytest.approx(shares.mean())
        assert row["q025"] == pytest.approx(np.percentile(shares, 2.5))
        assert row["q975"] == pytest.approx(np.percentile(shares, 97.5))
    text = table2_markdown(table, 0.01, 0.975)
    assert "| < 1,000 (n = 7) |" in text and "| 1,000 - 50,000 (n = 30) |" in text
    assert "| (releases) | n = 140 | n = 140 | n = 20 | n = 20 |" in text
    assert "PK11 upper bound" in text


def test_search_for_several_k_per_paper_category_and_marketer(tmp_path: Path) -> None:
    args = ["surveil", "search", "--population", POP, "--volumes", "10,11,50,300,2000", "--sims", "40"]
    assert main([*args, "--k", "5,11,20", "--categories", "paper", "--out", str(tmp_path / "k")]) == 0
    table = pd.read_csv(tmp_path / "k" / "search.csv")
    assert list(table.columns) == ["policy", "k5 1000-50000", "k11 1000-50000", "k20 1000-50000"]
    by_policy = table.set_index("policy")
    # more records are needed for a larger k: a policy's smallest volume never falls as k grows
    both = by_policy.dropna()
    assert (both["k5 1000-50000"] <= both["k11 1000-50000"]).all()
    assert (both["k11 1000-50000"] <= both["k20 1000-50000"]).all()
    assert by_policy.loc["****", "k5 1000-50000"] == 10 and by_policy.loc["****", "k20 1000-50000"] == 50
    doc = json.loads((tmp_path / "k" / "search.json").read_text())
    assert doc["criterion"]["k"] == [5, 11, 20] and len(doc["notes"]) == 3  # 2,000 is above 99005
    assert main([*args, "--risk", "marketer", "--out", str(tmp_path / "m")]) == 0
    assert json.loads((tmp_path / "m" / "search.json").read_text())["criterion"]["risk"] == "marketer"
    assert main([*args, "--risk", "journalist", "--out", str(tmp_path / "x")]) == 2


def test_select_by_category_and_cumulative(tmp_path: Path, capsys) -> None:
    base = ["surveil", "select", "--population", POP, "--region", "99005", "--cases", CASES, "--sims", "40"]
    assert main([*base, "--categories", "paper", "--out", str(tmp_path / "c")]) == 0
    doc = json.loads((tmp_path / "c" / "schedule.json").read_text())
    assert sorted(doc["searched_regions"]) == ["99001", "99003", "99005"]  # its category
    assert main([*base, "--approach", "cumulative", "--out", str(tmp_path / "m")]) == 0
    doc = json.loads((tmp_path / "m" / "schedule.json").read_text())
    assert doc["approach"] == "cumulative" and doc["criterion"]["risk"] == "marketer"
    codes = [w["policy"] for w in doc["weeks"]]
    assert codes[0] == "do not share" and codes[-1] != "do not share"
    assert (
        main([*base, "--approach", "cumulative", "--forecasts", FORECASTS, "--out", str(tmp_path / "x")]) == 2
    )
    assert "takes no --forecasts" in capsys.readouterr().err
    assert main([*base, "--approach", "monthly", "--out", str(tmp_path / "x")]) == 2


def test_evaluate_writes_table2_in_the_papers_form(tmp_path: Path, capsys) -> None:
    out = tmp_path / "e"
    args = ["surveil", "evaluate", "--population", POP, "--cases", CASES, "--forecasts", FORECASTS]
    args += ["--categories", "5000,20000", "--k", "11,20", "--sims", "40", "--case-studies", "99003"]
    assert main([*args, "--out", str(out)]) == 0
    names = sorted(p.name for p in out.iterdir() if not p.name.startswith("."))
    assert names == sorted(
        [
            "case_study_99003.png",
            "evaluation.csv",
            "evaluation.json",
            "periods.csv",
            "schedules.csv",
            "table2.csv",
            "table2.md",
            "table2.png",
        ]
    )
    per_region = pd.read_csv(out / "evaluation.csv", dtype={"region": str})
    assert set(per_region["schedule"]) == {"daily", "weekly"} and set(per_region["k"]) == {11, 20}
    assert len(per_region) == 3 * 2 * 2
    table = pd.read_csv(out / "table2.csv")
    recomputed = table2(per_region)
    pd.testing.assert_frame_equal(table, recomputed, check_dtype=False)
    text = (out / "table2.md").read_text()
    assert text.count("| population size |") == 2 and "| < 5,000 (n = 1) |" in text
    assert set(pd.read_csv(out / "periods.csv", dtype={"region": str})["region"]) == {"99003"}
    schedules = pd.read_csv(out / "schedules.csv", dtype={"region": str})
    assert len(schedules) == 3 * 2 * 2 * 20  # regions x k x schedules x weeks
    printed = capsys.readouterr().out
    assert "| population size | daily: k-anonymous policy |" in printed
    assert main([*args, "--weekly", "--out", str(tmp_path / "w")]) == 2
