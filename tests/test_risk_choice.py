"""The default estimator per sampling-fraction band and its caveats (risk/estimators/choice.py),
on a hand-made accuracy table (the rule) and on the measured one (what the command line gets):
package data (measured_accuracy.json, issue 31), equal to the module it replaced."""

from __future__ import annotations

import math
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from safeshare.errors import InputError
from safeshare.resources import read_json_resource, resource_json
from safeshare.risk.estimators import ESTIMATORS, choice

ROOT = Path(__file__).resolve().parent.parent
#: The last commit holding the table as code (risk/estimators/measured.py, 1,251 generated lines).
MODULE_COMMIT = "c0de85e"


def _stats(
    points: int, within: float, mae: float, median: float = 0.0, rel: float = 0.0, failed: int = 0
) -> dict[str, Any]:
    return {
        "points": points,
        "failed": failed,
        "within": within,
        "median_abs_error": mae,
        "median_error": median,
        "median_relative_error": rel,
        "relative_points": points,
    }


def _entry(
    adult: dict[str, Any], kdd: dict[str, Any], german: dict[str, Any], pooled: dict[str, Any]
) -> dict[str, Any]:
    return {"datasets": {"adult": adult, "kdd": kdd, "german": german}, "pooled": pooled}


@pytest.fixture
def table(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    good = _stats(100, 0.99, 0.001)
    low = _stats(100, 0.90, 0.02, median=0.02)
    acc: dict[str, Any] = {
        # best pooled, but one dataset is poor: the worst dataset decides
        "steady": {
            b: _entry(good, _stats(100, 0.95, 0.002), _stats(100, 0.93, 0.004), good) for b in choice.BANDS
        },
        "uneven": {
            b: _entry(good, good, _stats(100, 0.80, 0.02, median=0.03, rel=0.05), good) for b in choice.BANDS
        },
        # same worst share as steady below 0.1, larger worst median |error|: loses the tie
        "tied": {b: _entry(good, _stats(100, 0.93, 0.009), good, good) for b in choice.BANDS},
        # overestimates by 25 % at every band; fails on a fifth of its points above 0.5
        "biased": {
            b: _entry(low, low, low, _stats(300, 0.90, 0.02, median=0.02, rel=0.25)) for b in choice.BANDS
        },
        "failing": {
            b: _entry(_stats(100, 1.0, 0.0, failed=30), good, good, _stats(300, 1.0, 0.0, failed=30))
            for b in choice.BANDS
        },
    }
    monkeypatch.setattr(choice, "accuracy_table", lambda: acc)
    return acc


def test_band_edges() -> None:
    assert choice.band(0.01) == "<0.1" and choice.band(0.0999) == "<0.1"
    assert choice.band(0.1) == "0.1-0.5" and choice.band(0.5) == "0.1-0.5"
    assert choice.band(0.5001) == ">0.5" and choice.band(1.0) == ">0.5"
    for bad in (0.0, -0.2, 1.2, math.nan):
        with pytest.raises(InputError, match="sampling fraction"):
            choice.band(bad)


def test_the_worst_dataset_decides_and_ties_go_to_the_smaller_error(table: dict[str, Any]) -> None:
    ranking = choice.ranking(0.3)
    # steady: worst 93 %, 0.004; tied: worst 93 %, 0.009; biased 90 %; uneven 80 %; a point
    # without an estimate is a miss: failing's adult share is 1.0 x 70/100 = 70 %
    assert ranking == ["steady", "tied", "biased", "uneven", "failing"]
    assert choice.default_estimator(0.3) == "steady"


def test_a_dataset_without_points_is_left_out_of_the_worst_case(table: dict[str, Any]) -> None:
    for entry in table["uneven"].values():
        entry["datasets"]["german"] = _stats(0, 0.0, math.nan)
    assert choice.ranking(0.3)[0] == "uneven"  # 99 % on the two datasets it was evaluated on
    assert choice.caveat("uneven", 0.3) is None


def test_the_default_can_be_restricted_to_estimators_that_need_no_table(table: dict[str, Any]) -> None:
    assert choice.default_estimator(0.3, candidates=("uneven", "biased")) == "biased"
    with pytest.raises(InputError, match="no evaluated estimator"):
        choice.default_estimator(0.3, candidates=("not_evaluated",))


def test_caveats_name_the_bias_the_evaluation_shows(table: dict[str, Any]) -> None:
    assert choice.caveat("steady", 0.05) is None
    text = choice.caveat("biased", 0.7)
    assert text is not None and "overestimated B by about 25%" in text and "above 0.5" in text
    text = choice.caveat("failing", 0.05)
    assert text is not None and "no estimate on 10%" in text and "below 0.1" in text
    text = choice.caveat("uneven", 0.2)
    assert text is not None and "German credit" in text and "80%" in text and "+0.030" in text
    assert choice.caveat("never_evaluated", 0.2) is None
    for name in table:
        for f in (0.05, 0.3, 0.9):
            line = choice.caveat(name, f)
            assert line is None or "\n" not in line


# --------------------------------------------------------------------------- the measured table


def test_the_measured_table_covers_every_registered_estimator_in_every_band() -> None:
    acc = choice.accuracy_table()
    assert set(acc) == set(ESTIMATORS)
    for name, bands in acc.items():
        assert set(bands) == set(choice.BANDS), name
        for entry in bands.values():
            assert set(entry["datasets"]) == set(choice.DATASET_NAMES)
            evaluated = [s for s in entry["datasets"].values() if s["points"] > 0]
            assert len(evaluated) >= 2 and entry["pooled"]["points"] == sum(s["points"] for s in evaluated)
            for stats in (*evaluated, entry["pooled"]):
                assert 0.0 <= stats["within"] <= 1.0
            if name in ("gaussian_copula", "dvine_copula", "average"):
                lo, hi = entry["relative_error_quantiles"]
                assert lo < 0.0 < hi


@pytest.mark.parametrize("fraction", [0.02, 0.3, 0.8])
def test_the_measured_default_is_a_registered_estimator(fraction: float) -> None:
    name = choice.default_estimator(fraction)
    assert name in ESTIMATORS
    histogram_only = [n for n in ESTIMATORS if not ESTIMATORS[n].requires_table]
    assert not ESTIMATORS[choice.default_estimator(fraction, candidates=histogram_only)].requires_table


def _git_show(path: str) -> str | None:
    """``path`` at :data:`MODULE_COMMIT`, or ``None`` where git or that commit is not at hand."""
    git = shutil.which("git")
    if git is None or not (ROOT / ".git").exists():
        return None
    done = subprocess.run(
        [git, "-C", str(ROOT), "show", f"{MODULE_COMMIT}:{path}"], capture_output=True, text=True
    )
    return done.stdout if done.returncode == 0 else None


def test_the_loaded_table_equals_what_the_generated_module_held() -> None:
    """measured.py became measured_accuracy.json with the same values: every figure, every key in
    the same order, the quantile pairs as pairs (the module's source is taken from the history)."""
    source = _git_show("src/safeshare/risk/estimators/measured.py")
    if source is None:
        pytest.skip(f"git history with commit {MODULE_COMMIT} is not available (a shallow or exported tree)")
    namespace: dict[str, Any] = {}
    exec(compile(source, "measured.py", "exec"), namespace)  # our own generated literals
    old = namespace["ACCURACY"]
    new = choice.accuracy_table()
    assert new == old
    assert list(new) == list(old)
    for name, bands in old.items():
        assert list(new[name]) == list(bands)
        for band, entry in bands.items():
            assert list(new[name][band]) == list(entry)
            if "relative_error_quantiles" in entry:
                assert type(new[name][band]["relative_error_quantiles"]) is tuple


def test_a_data_file_keeps_nan_and_infinities_and_is_standard_json(tmp_path: Path) -> None:
    """What the generator writes (resource_json) reads back (read_json_resource) as written, an
    unbounded quantile (inf) and a figure without points (NaN) included; the file is standard JSON."""
    import json

    table = {
        "x": {
            "<0.1": {
                "pooled": {"median_abs_error": math.nan, "points": 0},
                "relative_error_quantiles": (-math.inf, math.inf),
            }
        }
    }
    text = resource_json({"estimators": table})
    json.loads(text, parse_constant=lambda c: pytest.fail(f"non-standard JSON constant {c}"))
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "t.json").write_text(text)
    import sys

    sys.path.insert(0, str(tmp_path))
    try:
        back = read_json_resource("pkg", "t.json")["estimators"]
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("pkg", None)
    entry = back["x"]["<0.1"]
    assert math.isnan(entry["pooled"]["median_abs_error"]) and entry["pooled"]["points"] == 0
    assert entry["relative_error_quantiles"] == (-math.inf, math.inf)
    with pytest.raises(ValueError, match="read back as a float"):
        resource_json({"a": "inf"})


def test_the_generator_writes_the_file_the_package_reads() -> None:
    """tools/risk_accuracy.py's writer, given the loaded table, writes the shipped file byte for
    byte (so a regeneration changes it only where the evaluations changed)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("risk_accuracy", ROOT / "tools" / "risk_accuracy.py")
    assert spec is not None and spec.loader is not None
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    shipped = (ROOT / "src" / "safeshare" / "risk" / "estimators" / choice.ACCURACY_FILE).read_text("utf-8")
    assert tool.render(choice.accuracy_table()) == shipped
