"""Every figure the certificate adds about B (issue 33) equals the one computed independently: from
the released file's class sizes with the estimator classes directly, and from report.json."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from safeshare.figures import number
from safeshare.report.html import format_figure, value_at
from safeshare.report.risk_certificate import risk_certificate_text
from safeshare.risk.classes import ClassSizeHistogram
from safeshare.risk.estimators import choice, make_estimator
from safeshare.risk.release_risk import histogram_estimators
from safeshare.risk.thresholds import risk_kind_sentence
from tests.conftest import run_cli, write_small_adult

QIS = [
    "age",
    "workclass",
    "education",
    "marital-status",
    "occupation",
    "relationship",
    "race",
    "sex",
    "native-country",
]


# the run's warnings that contradict its headline, acknowledged (issue 33): a sensitive column of
# the small Adult (hours-per-week, capital-gain), released as it is, singles out records
ACCEPT = ["--accept-warning", "kept-column-identifying"]


def _publish(tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: str, *options: str) -> Path:
    work = write_small_adult(tmp_path, n_train=1500)
    config = work / "adult.yaml"
    config.write_text(config.read_text() + extra)
    out = tmp_path / "out"
    code, _, err = run_cli(
        ["anonymize", str(config), "--out", str(out), "--quiet", "--no-tradeoff", *ACCEPT, *options], capsys
    )
    assert code == 0, err
    return out


def _released_sizes(out: Path) -> list[int]:
    """The released classes' sizes, read from the written file (not from the run)."""
    frame = pd.read_csv(out / "release.csv", dtype=str, keep_default_na=False)
    return [int(v) for v in frame.groupby(QIS, sort=False).size().to_numpy()]


def _B(sizes: list[int], N: int, name: str) -> float | None:
    if sum(sizes) > N:
        return None
    fitted = make_estimator(name, n_bootstrap=0).fit(ClassSizeHistogram.from_sizes(sizes), N)
    return fitted.B_


def _figures(html: str) -> dict[str, str]:
    return dict(re.findall(r'data-key="(certificate\.[^"]+)" data-kind="[a-z]+">([^<]*)<', html))


def _check_html(out: Path, report: dict[str, Any]) -> None:
    """Every certificate figure of report.html is report.json's value, as formatted."""
    shown = _figures((out / "report.html").read_text())
    keys = [k for k in shown if k.split(".")[1] in ("population", "sensitivity", "estimators")]
    assert keys, "no risk figure on the certificate page"
    for key in keys:
        kind = "count" if key.endswith((".N", ".size")) else "risk"
        assert shown[key] == format_figure(value_at(report, key), kind), key


def test_certificate_with_a_stated_population(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    N = 40_000
    out = _publish(tmp_path, capsys, f"\npopulation: {{size: {N}, source: 'census 1990, table P1'}}\n")
    report = json.loads((out / "report.json").read_text())
    cert = report["certificate"]
    assert cert["population"] == {"size": N, "source": "census 1990, table P1", "assumed": False}
    sizes = _released_sizes(out)
    assert sum(sizes) == report["records_out"]
    band = cert["sensitivity"]
    estimator = report["risk"]["estimator"]
    assert band["estimator"] == estimator and band["N"] == N
    assert band["B_at_half_N"] == pytest.approx(_B(sizes, N // 2, estimator), rel=1e-12)
    assert band["B_at_N"] == pytest.approx(_B(sizes, N, estimator), rel=1e-12)
    assert band["B_at_double_N"] == pytest.approx(_B(sizes, 2 * N, estimator), rel=1e-12)
    assert band["B_at_N"] == pytest.approx(report["risk"]["release"]["B"], rel=1e-12)  # the report's B
    assert band["B_at_half_N"] >= band["B_at_N"] >= band["B_at_double_N"]
    crossing = band["crossing"]
    threshold = band["threshold"]
    assert threshold == report["risk"]["threshold"]
    if crossing["N"] is not None:
        assert _B(sizes, crossing["N"], estimator) <= threshold + 1e-9
        assert _B(sizes, max(crossing["range"][0], int(crossing["N"] * 0.999)), estimator) > threshold
    else:
        lo, hi = crossing["range"]
        assert lo == sum(sizes) and hi == 100 * N
        low, high = _B(sizes, lo, estimator), _B(sizes, hi, estimator)
        assert (low <= threshold) == (high <= threshold)  # no crossing: both ends on one side
    spread = cert["estimators"]
    fraction = sum(sizes) / N
    assert spread["sampling_fraction"] == pytest.approx(fraction)
    assert spread["recommended"] == choice.default_estimator(fraction, histogram_estimators())
    rows = {r["estimator"]: r for r in spread["rows"]}
    assert set(rows) == set(histogram_estimators())
    for name, row in rows.items():
        expected = _B(sizes, N, name)
        assert row["B"] == (pytest.approx(expected, rel=1e-12) if expected is not None else None), name
        assert row["caveat"] == choice.caveat(name, fraction)
        assert row["used"] == (name == estimator)
    values = [r["B"] for r in rows.values() if r["B"] is not None]
    assert spread["min"] == min(values) and spread["max"] == max(values)
    assert spread["spread"] == pytest.approx(max(values) - min(values))
    assert cert["risk_kind"]["text"] == risk_kind_sentence("B", threshold)
    _check_html(out, report)
    terminal = dict(risk_certificate_text(report))  # the terminal's rows: the same figures
    assert terminal["population N"] == "40,000 (source: census 1990, table P1)"
    assert f"N = 20,000: {number(band['B_at_half_N'])}" in terminal["B as N changes"]
    assert f"N = 80,000: {number(band['B_at_double_N'])}" in terminal["B as N changes"]
    assert terminal["estimators"].startswith(f"B from {number(spread['min'])} to {number(spread['max'])}")


def test_certificate_without_a_population(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = _publish(tmp_path, capsys, "")
    report = json.loads((out / "report.json").read_text())
    cert = report["certificate"]
    assert cert["population"] == {
        "size": report["records_in"],
        "source": "the input, taken as the whole population",
        "assumed": True,
    }
    sizes = _released_sizes(out)
    band = cert["sensitivity"]
    assert band["B_at_half_N"] is None and "smaller than the release" in band["points"][0]["reason"]
    N = report["records_in"]
    assert band["B_at_N"] == pytest.approx(_B(sizes, N, band["estimator"]), rel=1e-12)
    assert band["B_at_double_N"] == pytest.approx(_B(sizes, 2 * N, band["estimator"]), rel=1e-12)
    assert band["report_B_exact"] and band["report_B"] == report["risk"]["release"]["B"]
    assert "exact" in band["note"]
    _check_html(out, report)


def test_population_source_option_and_risk_model_threshold(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--population-size with --population-source; a risk model's threshold is the one judged, and the
    headline states the average-vs-maximum sentence the certificate carries."""
    extra = "\n".join(["", "privacy:", "  k-anonymity: {k: 2}", "  risk: {threshold: 0.09}", ""])
    work = write_small_adult(tmp_path, n_train=1500)
    config = work / "adult.yaml"
    text = config.read_text().replace("privacy:\n  k-anonymity: {k: 5}\n", "")
    config.write_text(text + extra)
    out = tmp_path / "out"
    code, _, err = run_cli(
        [
            "anonymize",
            str(config),
            "--out",
            str(out),
            "--quiet",
            "--no-tradeoff",
            "--population-size",
            "30000",
            "--population-source",
            "ACS 2019 estimate",
            *ACCEPT,
        ],
        capsys,
    )
    assert code == 0, err
    report = json.loads((out / "report.json").read_text())
    cert = report["certificate"]
    assert cert["population"] == {"size": 30000, "source": "ACS 2019 estimate", "assumed": False}
    assert report["risk"]["population_size"] == 30000
    kind = risk_kind_sentence("B", 0.09)
    assert cert["risk_kind"]["text"] == kind and cert["risk_kind"]["threshold_set_for"] == "maximum"
    assert report["headline"]["risk"]["kind"] == kind and kind in report["headline"]["text"]
    sizes = _released_sizes(out)
    model = report["privacy"]["models"]["risk"]
    assert cert["sensitivity"]["estimator"] == model["estimator"]
    assert cert["sensitivity"]["B_at_N"] == pytest.approx(_B(sizes, 30000, model["estimator"]), rel=1e-12)
    _check_html(out, report)


def test_person_key_band_counts_people(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """With a person key B is in people: the band at N equals the report's risk section (people,
    person-class pairs at most N), never 'population size smaller than the sample'."""
    from tests.test_persons import config, events

    cfg = config(tmp_path / "keyed", events(300, seed=3))
    code, _, err = run_cli(
        ["anonymize", str(cfg), "--out", str(tmp_path / "out"), "--quiet", "--no-tradeoff"], capsys
    )
    assert code == 0, err
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    cert, risk = report["certificate"], report["risk"]
    assert cert["population"]["size"] == report["people"]["people_in"] == risk["population_size"]
    band = cert["sensitivity"]
    assert band["unit"] == "people"
    estimate = risk["release"]["B_estimate"][risk["estimator"]]
    if estimate is None:  # the pairs exceed N: said so, not refused
        assert "person-class pairs" in band["points"][1]["reason"]
    else:
        assert band["B_at_N"] == pytest.approx(estimate, rel=1e-9)
    assert band["crossing"]["range"][0] >= risk["release"]["n"]
    assert cert["estimators"]["n"] == risk["release"]["n"]  # people, not records
