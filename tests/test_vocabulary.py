"""The vocabulary is defined once (issue 31): safeshare.config.vocabulary.

On main the configuration file accepted ``metric: nue`` where the Python specification refused
it, and the specification accepted ``precision`` where the file refused it: two tables of
aliases. Now one table, and a test that both read it; the roles, the metric classes and the
surveillance defaults of the commands, the API and the workbench are the vocabulary's, and no
module restates them.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
from pathlib import Path

import pytest
import typer

from safeshare import api
from safeshare.config import load_config, vocabulary
from safeshare.errors import InputError
from tests.conftest import write_small_adult

SRC = Path(__file__).resolve().parents[1] / "src" / "safeshare"

#: Every spelling either reader knew on main, their variations, and names no reader knows.
SPELLINGS = [
    *vocabulary.METRICS,
    *vocabulary.METRIC_ALIASES,
    "Prec",
    " PRECISION ",
    "DM*",
    "NUE",
    "Entropy",
    "nue2",
    "dm",
    "loss",
    "non_uniform",
    "",
]


@pytest.fixture(scope="module")
def adult(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_small_adult(tmp_path_factory.mktemp("adult"), n_train=200) / "adult.yaml"


def _yaml(config: Path, name: str) -> str | None:
    """The metric the configuration file reads ``metric: name`` as (None: refused)."""
    try:
        return load_config(config, metric=name).metric
    except InputError:
        return None


def _spec(config: Path, name: str) -> str | None:
    """The metric the Python specification reads ``metric=name`` as (None: refused)."""
    spec = load_config(config).spec()
    try:
        return dataclasses.replace(spec, metric=name).metric
    except InputError:
        return None


@pytest.mark.parametrize("name", SPELLINGS)
def test_the_file_and_the_spec_accept_and_refuse_the_same_metric_names(adult: Path, name: str) -> None:
    expected = vocabulary.metric_name(name)
    assert _yaml(adult, name) == _spec(adult, name) == expected


def test_the_aliases_name_metrics() -> None:
    assert set(vocabulary.METRIC_ALIASES.values()) <= set(vocabulary.METRICS)
    assert {"nue", "precision"} <= set(vocabulary.METRIC_ALIASES)
    assert set(vocabulary.ROLE_ALIASES.values()) <= set(vocabulary.ROLES)
    assert set(vocabulary.DEFAULT_ROLES) <= set(vocabulary.ROLES)


def test_the_classes_have_the_vocabulary_s_names() -> None:
    from safeshare.data.schema import Role
    from safeshare.metrics.loss import METRICS
    from safeshare.models.registry import PRIVACY_MODELS, model_name

    assert tuple(METRICS) == vocabulary.METRICS
    assert tuple(PRIVACY_MODELS) == vocabulary.PRIVACY_MODELS
    for alias, model in vocabulary.MODEL_ALIASES.items():
        assert model_name(f" {alias.upper()} ") == model
    assert tuple(role.value for role in Role) == vocabulary.ROLES
    for alias, role in vocabulary.ROLE_ALIASES.items():
        assert Role.parse(alias.upper()) is Role(role)


#: What a restatement of a surveillance default looks like (a default argument, a form's value).
RESTATEMENTS = [
    re.compile(r"\b(k|min_size|KANON_LEVEL)\s*(:[^=]*)?=\s*\"?11\"?\s*[,)]?\s*$"),
    re.compile(r"\bthreshold\s*(:[^=]*)?=\s*0\.01\s*,?\s*$"),
    re.compile(r"\bquantile\s*(:[^=]*)?=\s*0\.975\s*,?\s*$"),
    re.compile(r"\b(simulations|sims)\s*(:[^=]*)?=\s*1000\s*,?\s*$"),
    re.compile(r"\blag\s*(:[^=]*)?=\s*1\s*,?\s*$"),
    re.compile(r"\"(k|lag|threshold|quantile)\",\s*(\w+,\s*)?(11|0\.01|0\.975)\)"),
    re.compile(r"\"lag\",\s*(\w+,\s*)?1\)"),
    re.compile(r"name=\"(k|threshold|quantile|lag)\"[^>]*value=\"(11|0\.01|0\.975|1)\""),
    re.compile(r"\[11\]"),
]


def test_no_module_restates_a_default() -> None:
    found = []
    for path in sorted(SRC.rglob("*")):
        here = path.relative_to(SRC).as_posix()
        if path.suffix not in (".py", ".html") or here == "config/vocabulary.py":
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if any(pattern.search(line) for pattern in RESTATEMENTS):
                found.append(f"{here}:{number}: {line.strip()}")
    assert found == []


def _defaults(function: object) -> dict[str, object]:
    return {
        name: p.default
        for name, p in inspect.signature(function).parameters.items()  # type: ignore[arg-type]
        if p.default is not inspect.Parameter.empty
    }


SURVEILLANCE = {
    "k": vocabulary.SMALL_CELL,
    "threshold": vocabulary.SURVEILLANCE_THRESHOLD,
    "quantile": vocabulary.SURVEILLANCE_QUANTILE,
    "simulations": vocabulary.SURVEILLANCE_SIMULATIONS,
    "lag": vocabulary.SURVEILLANCE_LAG,
}


@pytest.mark.parametrize("command", ["simulate", "search", "select", "evaluate", "release"])
def test_the_surveillance_defaults_are_the_vocabulary_s(command: str) -> None:
    """The API's, the command line's and the workbench's defaults are the same values."""
    from safeshare.cli import app
    from safeshare.models.small_cells import SmallCells
    from safeshare.surveillance.cdc import CdcRules

    function = getattr(api, f"surveil_{command}")
    given = _defaults(function)
    cli = typer.main.get_command(app).get_command(None, "surveil").get_command(None, command)  # type: ignore[attr-defined]
    options = {p.name: p.default for p in cli.params}
    checked = 0
    for key, value in SURVEILLANCE.items():
        if key in given:
            assert given[key] == value, (command, key)
            checked += 1
        if key in options and options[key] is not None:
            assert str(options[key]) == str(value), (command, key, options[key])
            checked += 1
    assert checked >= 2
    bench = api.workbench.surveillance_defaults()
    assert {key: bench[key] for key in ("k", "lag", "threshold", "quantile")} == {
        key: SURVEILLANCE[key] for key in ("k", "lag", "threshold", "quantile")
    }
    assert _defaults(SmallCells)["min_size"] == vocabulary.SMALL_CELL
    assert CdcRules().k == vocabulary.SMALL_CELL
