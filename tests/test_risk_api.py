"""``safeshare risk`` as a use case (issue 19 phase 2; issue 18 items 11, 13 and the "no raw
value" rule): :func:`safeshare.api.risk` returns one :class:`RiskAssessment` that the terminal,
``--json``, ``risk.json`` and ``risk.html`` all render; options are validated once with one line
naming the option; nothing of a record's values reaches a published file."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from safeshare import api
from safeshare.adult import ADULT_COLUMNS
from safeshare.errors import ConfigError, InputError
from tests.conftest import run_cli

ROOT = Path(__file__).resolve().parents[1]
QI = ["age", "sex", "race", "marital-status"]


@pytest.fixture(scope="module")
def sample() -> pd.DataFrame:
    table = pd.read_csv(
        ROOT / "examples/adult/adult.data",
        header=None,
        names=list(ADULT_COLUMNS),
        skipinitialspace=True,
        dtype=str,
        nrows=3000,
    )
    return table


@pytest.fixture
def sample_csv(sample: pd.DataFrame, tmp_path: Path) -> Path:
    path = tmp_path / "adult3k.csv"
    sample.to_csv(path, index=False)
    return path


def test_the_api_returns_the_typed_result_and_writes_nothing_without_out(
    sample: pd.DataFrame, tmp_path: Path
) -> None:
    result = api.risk(sample, qi=QI, population_size=100_000, estimator="pitman,zayatz", bootstrap=5)
    assert isinstance(result, api.RiskAssessment) and result.out is None
    assert list(result.estimates) == ["pitman", "zayatz"]
    pitman = result.estimates["pitman"]
    assert isinstance(pitman, api.Estimate) and pitman.B is not None and 1e-5 <= pitman.B <= 1
    assert pitman.interval is not None and pitman.interval[0] <= pitman.B <= pitman.interval[1]
    assert result.to_dict()["B_estimates"] == {"pitman": pitman.B, "zayatz": result.estimates["zayatz"].B}
    assert list(tmp_path.iterdir()) == []


def test_json_risk_json_and_the_api_are_one_result(
    sample: pd.DataFrame, sample_csv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One result, many views: ``--json`` prints the document risk.json holds, and the API's
    ``to_dict`` of the same run is equal to both (the data named by its file name only)."""
    out = tmp_path / "o"
    args = [
        "risk",
        str(sample_csv),
        "--qi",
        ",".join(QI),
        "--population-size",
        "100000",
        "--estimator",
        "pitman,snb",
        "--out",
        str(out),
        "--json",
    ]
    code, stdout, stderr = run_cli(args, capsys)
    assert code == 0, stderr
    printed = json.loads(stdout)
    assert printed == json.loads((out / "risk.json").read_text())
    direct = api.risk(sample_csv, qi=QI, population_size=100_000, estimator=["pitman", "snb"])
    assert json.loads(direct.to_json()) == printed
    assert printed["data"] == "adult3k.csv"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"qi": ""}, "--qi: give at least one column"),
        ({"qi": "age,age"}, "--qi: column 'age' is given twice"),
        ({"estimator": "magic"}, "--estimator: unknown estimator 'magic'"),
        ({"seed": -1}, "--seed: expected an integer >= 0"),
        ({"simulations": 0}, "--simulations: expected an integer >= 1"),
        ({"population_size": 0}, "--population-size: expected an integer >= 1"),
        ({"correlation": "pearson"}, "--correlation"),
        ({"threshold": 0}, "--threshold"),
    ],
)
def test_bad_options_are_refused_with_one_line_naming_them(
    sample: pd.DataFrame, options: dict[str, object], message: str
) -> None:
    """Item 11 (an empty QI list among them): validated once, before any data is read."""
    kwargs: dict[str, object] = {"qi": QI, "population_size": 100_000, **options}
    with pytest.raises((ConfigError, InputError)) as caught:
        api.risk(sample, **kwargs)
    text = str(caught.value)
    assert message in text and "\n" not in text


def test_the_cli_refuses_an_empty_qi_list_with_exit_2(
    sample_csv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = [
        "risk",
        str(sample_csv),
        "--qi",
        " , ",
        "--population-size",
        "10000",
        "--out",
        str(tmp_path / "o"),
    ]
    code, _, stderr = run_cli(args, capsys)
    assert code == 2 and len(stderr.strip().splitlines()) == 1 and "--qi" in stderr
    assert not (tmp_path / "o").exists()


def test_no_value_of_a_record_in_what_is_published(
    sample: pd.DataFrame, sample_csv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The "no raw value can leave" rule applied to risk: risk.json and risk.html hold counts,
    class sizes and estimates, never a value of a quasi-identifier or of another column."""
    out = tmp_path / "o"
    args = ["risk", str(sample_csv), "--qi", ",".join(QI), "--population-size", "100000"]
    code, _, stderr = run_cli([*args, "--estimator", "all", "--out", str(out), "-q"], capsys)
    assert code == 0, stderr
    texts = [(out / name).read_text() for name in ("risk.json", "risk.html")]
    words = {
        v
        for column in ("sex", "race", "marital-status", "occupation", "native-country")
        for v in sample[column].unique()
        if len(v) > 3
    }
    assert words, "the test needs category labels to look for"
    for text in texts:
        leaked = sorted(w for w in words if w in text)
        assert leaked == [], leaked


def test_the_risk_commands_start_without_the_numerical_stack() -> None:
    """cli/risk.py imports only typer and the CLI's vocabulary: ``safeshare risk ... --help`` loads
    neither numpy, pandas, scipy nor the use case (lightweight start-up, issue 19)."""
    import subprocess
    import sys

    code = (
        "import sys\nfrom safeshare.cli import main\n"
        "for args in (['risk', '--help'], ['risk', 'estimate', '--help'], ['risk', 'evaluate', '--help']):\n"
        "    main(args)\n"
        "heavy = ('numpy', 'pandas', 'scipy', 'safeshare.workflows.risk')\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "[]", out


def test_an_anonymization_run_imports_only_the_estimator_it_uses() -> None:
    """The estimators are looked up by name and imported then (``ESTIMATORS`` is lazy): the
    anonymize path, which reports Pitman's B, loads neither the copulas' libraries
    (pyvinecopulib, matplotlib) nor scipy.stats (about 1 s of a command's start-up; issue 24's
    10-million-row run), and the copulas are still there when asked for."""
    import subprocess
    import sys

    code = (
        "import sys\nimport safeshare.workflows.anonymize, safeshare.workflows.release\n"
        "from safeshare.risk.estimators import ESTIMATORS, make_estimator\n"
        "make_estimator('pitman')\n"
        "heavy = ('pyvinecopulib', 'matplotlib', 'scipy.stats', 'safeshare.risk.estimators.dvine_copula')\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
        "print(ESTIMATORS['average'].__name__, 'pyvinecopulib' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    lines = out.strip().splitlines()
    assert lines[-2] == "[]", out
    assert lines[-1] == "AverageCopulaEstimator True", out
