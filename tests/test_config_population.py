"""``population: {size, source}`` in the configuration, ``population_size:`` kept, the overrides
(--population-size, --population-source) and what does not combine (issue 33)."""

from __future__ import annotations

from pathlib import Path

import pytest

from safeshare.config import load_config
from safeshare.errors import ConfigError
from safeshare.risk.population import NOT_STATED, Population
from tests.conftest import write_small_adult


def _config(tmp_path: Path, extra: str) -> Path:
    work = write_small_adult(tmp_path, n_train=50)
    config = work / "adult.yaml"
    config.write_text(config.read_text() + extra)
    return config


def test_population_with_its_source(tmp_path: Path) -> None:
    cfg = load_config(_config(tmp_path, "\npopulation: {size: 100000, source: 'census 2021, table X'}\n"))
    assert cfg.population == Population(100000, "census 2021, table X")
    assert cfg.population_size == 100000
    settings = cfg.settings()
    assert settings["population"] == {"size": 100000, "source": "census 2021, table X"}
    assert settings["population_size"] == 100000


def test_population_size_alone_means_source_not_stated(tmp_path: Path) -> None:
    cfg = load_config(_config(tmp_path, "\npopulation_size: 5000\n"))
    assert cfg.population == Population(5000, NOT_STATED)
    assert load_config(_config(tmp_path, "")).population.whole_input


def test_both_given_is_an_error(tmp_path: Path) -> None:
    path = _config(tmp_path, "\npopulation_size: 5000\npopulation: {size: 5000, source: census}\n")
    with pytest.raises(ConfigError, match=r"population_size: given with population: \{size, source\}"):
        load_config(path)


def test_population_needs_a_size(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="population: missing size"):
        load_config(_config(tmp_path, "\npopulation: {source: census}\n"))
    with pytest.raises(ConfigError, match="population"):
        load_config(_config(tmp_path, "\npopulation: 5000\n"))
    with pytest.raises(ConfigError, match=r"population\.source"):
        load_config(_config(tmp_path, "\npopulation: {size: 5000, source: 12}\n"))


def test_population_agrees_with_the_risk_model(tmp_path: Path) -> None:
    extra = "\npopulation: {size: 5000, source: census}\n"
    path = _config(tmp_path, extra)
    text = path.read_text().replace(
        "privacy:\n  k-anonymity: {k: 5}\n",
        "privacy:\n  k-anonymity: {k: 5}\n  risk: {threshold: 0.09, population_size: 6000}\n",
    )
    path.write_text(text)
    with pytest.raises(
        ConfigError, match=r"population\.size: 5000 differs from privacy\.risk\.population_size 6000"
    ):
        load_config(path)


def test_overrides(tmp_path: Path) -> None:
    path = _config(tmp_path, "\npopulation: {size: 5000, source: census}\n")
    cfg = load_config(path, population_size=7000)  # the file's source stays, its size replaced
    assert cfg.population == Population(7000, "census")
    cfg = load_config(path, population_source="registry 2024")
    assert cfg.population == Population(5000, "registry 2024")
    path = _config(tmp_path, "\npopulation_size: 5000\n")
    assert load_config(path, population_source="registry").population == Population(5000, "registry")
    path = _config(tmp_path, "")
    cfg = load_config(path, population_size=8000, population_source="registry")
    assert cfg.population == Population(8000, "registry")
    with pytest.raises(ConfigError, match="--population-source: says where N comes from: give N too"):
        load_config(path, population_source="registry")
