# ruff: noqa: F811  (the bench fixture, imported from tests/test_ui_api.py, is every test's argument)
"""The workbench's Privacy form round-trips through the configuration's models (issue 31).

On main, saving the Privacy form unchanged dropped l-diversity's ``c`` and ``columns``,
t-closeness's ``distance`` and ``columns``, m-concealing's ``inclusion_probability``, risk's
``measure``, ``estimator``, ``population_size`` and ``use``, and wrote keys the file did not have
(``metric: prec``, ``max_suppression: 0.0``). Here the form is read as a browser reads it (every
input, the ticked boxes, the selected options) and posted back: for every model of the registry
and every option of the screen, the YAML is unchanged; a change of one field changes that key
only; a changed model is validated by its parameters model before anything is saved.
"""

from __future__ import annotations

from html.parser import HTMLParser
from typing import Any
from urllib.parse import unquote

import pytest
import yaml

from safeshare.models.registry import PRIVACY_MODELS
from tests.test_ui_api import Bench, bench  # noqa: F401  (the fixture)

BASE = """\
input: {path: data/people.csv}
attributes:
  age: {role: quasi, hierarchy: hierarchies/age.csv}
  sex: {role: quasi, hierarchy: {type: masking}}
  zip: {role: quasi, hierarchy: hierarchies/zip.csv}
  diagnosis: {role: sensitive}
"""

#: Every parameter of every model, none at its default (tests that the list is complete).
FULL: dict[str, dict[str, Any]] = {
    "k-anonymity": {"k": 3},
    "l-diversity": {"l": 2, "variant": "recursive", "c": 3, "columns": ["diagnosis"]},
    "t-closeness": {"t": 0.3, "distance": {"diagnosis": "equal"}, "columns": ["diagnosis"]},
    "m-concealing": {"m": 0.2, "knowledge": {"diagnosis": 0.5}, "inclusion_probability": 0.5},
    "risk": {
        "measure": "A",
        "threshold": 0.2,
        "estimator": "pitman",
        "population_size": 5000,
        "use": "upper",
    },
    "small-cells": {"population": "population.csv", "min_size": 5, "delimiter": ";"},
    "profile-anonymity": {"k": 2},
}
#: Other shapes a configuration gives the models: only what is required, other spellings.
SHAPES: list[tuple[str, Any]] = [
    ("l-diversity", {"l": 2}),
    ("l-diversity", {"l": 1.5, "variant": "entropy"}),
    ("t-closeness", {"t": 0.2, "distance": "ordered"}),
    ("t-closeness", {"t": 1}),
    ("m-concealing", {"m": 0.1, "knowledge": {"diagnosis": 1}}),
    ("risk", {}),
    ("risk", None),
    ("risk", {"measure": "record", "threshold": 0.05}),
    ("small-cells", {"population": "population.csv"}),
]
#: Every option of the screen, none at its default.
OPTIONS = """\
population_size: 100000
max_suppression: 5%
metric: entropy
algorithm: exhaustive
engine: duckdb
local_recoding: {rounds: 3}
threshold_reason: the data use agreement's figure
"""


class _Form(HTMLParser):
    """The fields a browser posts for the form ``data-testid=privacy-form`` (no button pressed)."""

    def __init__(self) -> None:
        super().__init__()
        self.fields: list[tuple[str, str]] = []
        self._inside = False
        self._select: str | None = None
        self._options: list[tuple[str, bool]] = []
        self._option: bool | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "form":
            self._inside = a.get("data-testid") == "privacy-form"
        if not self._inside:
            return
        if tag == "input" and "name" in a:
            if a.get("type") == "checkbox":
                if "checked" in a:
                    self.fields.append((a["name"], a.get("value", "on")))
            else:
                self.fields.append((a["name"], a.get("value", "")))
        elif tag == "select":
            self._select, self._options = a["name"], []
        elif tag == "option":
            self._option = "selected" in a
            self._options.append(("", self._option))

    def handle_data(self, data: str) -> None:
        if self._option is not None:
            text, selected = self._options[-1]
            self._options[-1] = (text + data, selected)

    def handle_endtag(self, tag: str) -> None:
        if tag == "option":
            self._option = None
        elif tag == "select" and self._select is not None:
            chosen = [t for t, s in self._options if s] or [t for t, _ in self._options[:1]]
            self.fields.append((self._select, chosen[0].strip()))
            self._select = None
        elif tag == "form":
            self._inside = False


def shown_form(bench: Bench, pid: str) -> dict[str, str]:
    page = bench.client.get(f"/p/{pid}/privacy")
    assert page.status_code == 200
    parser = _Form()
    parser.feed(page.text)
    fields = dict(parser.fields)
    assert len(fields) == len(parser.fields), "a field name twice"
    return fields


def save(bench: Bench, pid: str, form: dict[str, str]) -> str:
    answer = bench.client.post(f"/p/{pid}/privacy", data=form, follow_redirects=False)
    assert answer.status_code == 303
    return unquote(answer.headers["location"])


def config_text(bench: Bench, pid: str) -> str:
    return bench.client.get(f"/api/projects/{pid}/config").text


def _project(bench: Bench, privacy: dict[str, Any], options: str = "") -> str:
    body = yaml.safe_dump({"privacy": privacy}, sort_keys=False, default_flow_style=None)
    pid = bench.project(BASE + body + options)
    (bench.ctx.store.root / pid / "population.csv").write_text("age,count\n20,100\n")
    return pid


def test_every_parameter_of_every_model_is_in_the_test() -> None:
    assert set(FULL) == set(PRIVACY_MODELS)
    for name, params in PRIVACY_MODELS.items():
        assert set(FULL[name]) == set(params.model_fields), name


@pytest.mark.parametrize("model", sorted(FULL))
def test_saving_an_unchanged_form_leaves_the_yaml_unchanged(bench: Bench, model: str) -> None:
    pid = _project(bench, {"k-anonymity": {"k": 3}, model: FULL[model]}, OPTIONS)
    before = config_text(bench, pid)
    location = save(bench, pid, shown_form(bench, pid))
    assert "error" not in location, location
    assert config_text(bench, pid) == before


@pytest.mark.parametrize(("model", "params"), SHAPES)
def test_other_shapes_round_trip(bench: Bench, model: str, params: Any) -> None:
    pid = _project(bench, {model: params})
    before = config_text(bench, pid)
    assert "error" not in save(bench, pid, shown_form(bench, pid))
    assert config_text(bench, pid) == before


def test_one_changed_field_changes_one_key(bench: Bench) -> None:
    """The file is rewritten (k changed): every other model and option is as it was."""
    pid = _project(bench, FULL, OPTIONS)
    before = yaml.safe_load(config_text(bench, pid))
    form = shown_form(bench, pid)
    assert (
        form["k"] == "3"
        and form["l-diversity.c"] == "3"
        and form["t-closeness.distance"] == "diagnosis=equal"
    )
    assert "error" not in save(bench, pid, {**form, "k": "4"})
    after = yaml.safe_load(config_text(bench, pid))
    before["privacy"]["k-anonymity"]["k"] = 4
    assert after == before


def test_changed_fields_are_parsed_by_kind_and_validated(bench: Bench) -> None:
    pid = _project(bench, {"k-anonymity": {"k": 3}})
    form = shown_form(bench, pid)
    changed = {
        **form,
        "l": "2",
        "l_variant": "recursive",
        "l-diversity.c": "3",
        "l-diversity.columns": "diagnosis",
        "t": "0.25",
        "t-closeness.distance": "diagnosis=hierarchical",
        "max_suppression": "2%",
        "metric": "entropy",
    }
    assert "error" not in save(bench, pid, changed)
    doc = yaml.safe_load(config_text(bench, pid))
    assert doc["privacy"]["l-diversity"] == {"l": 2, "variant": "recursive", "c": 3, "columns": ["diagnosis"]}
    assert doc["privacy"]["t-closeness"] == {"t": 0.25, "distance": {"diagnosis": "hierarchical"}}
    assert doc["max_suppression"] == pytest.approx(0.02) and doc["metric"] == "entropy"
    before = config_text(bench, pid)
    # recursive l-diversity without c: the configuration's own rule, one line, nothing saved
    location = save(bench, pid, {**shown_form(bench, pid), "l-diversity.c": ""})
    assert "privacy.l-diversity" in location and "missing c" in location, location
    assert config_text(bench, pid) == before
    location = save(bench, pid, {**shown_form(bench, pid), "k": "abc"})
    assert "k: expected a whole number, got 'abc'" in location
    assert config_text(bench, pid) == before


def test_unticking_a_model_removes_it(bench: Bench) -> None:
    pid = _project(bench, {"k-anonymity": {"k": 3}, "l-diversity": {"l": 2}})
    form = shown_form(bench, pid)
    del form["use.l-diversity"]
    assert "error" not in save(bench, pid, form)
    assert yaml.safe_load(config_text(bench, pid))["privacy"] == {"k-anonymity": {"k": 3}}


def test_a_script_s_partial_post_changes_what_it_posts_only(bench: Bench) -> None:
    """Without the screen's marker (a script posting a few fields): ``risk: {}`` and the other
    models it does not name stay; an emptied field of a model removes it, as on main."""
    pid = _project(bench, {"k-anonymity": {"k": 3}, "risk": {}, "l-diversity": {"l": 2}})
    assert "error" not in save(bench, pid, {"k": "4", "l": ""})
    assert yaml.safe_load(config_text(bench, pid))["privacy"] == {"k-anonymity": {"k": 4}, "risk": {}}


def test_each_search_strategys_options_are_on_the_screen_and_follow_its_algorithm(bench: Bench) -> None:
    """Issue 35: Inverse OLA's largest loss, the anytime search's time limit and auto's exact
    lattice size were not in the UI. Each is a field; a value out of range is refused with its
    key; switching to another algorithm removes an option that algorithm would refuse."""
    pid = _project(bench, {"k-anonymity": {"k": 3}})
    form = shown_form(bench, pid)
    assert {"max_loss", "time_limit", "exact_max_nodes"} <= set(form)
    assert "error" not in save(bench, pid, {**form, "algorithm": "inverse-ola", "max_loss": "0.4"})
    config = yaml.safe_load(config_text(bench, pid))
    assert config["algorithm"] == "inverse-ola" and config["max_loss"] == 0.4
    assert shown_form(bench, pid)["max_loss"] == "0.4"
    before = config_text(bench, pid)
    refused = save(bench, pid, {**shown_form(bench, pid), "max_loss": "1.5"})
    assert "max_loss" in refused and config_text(bench, pid) == before  # nothing saved
    # to the anytime search with a time limit: inverse-ola's max_loss goes
    assert "error" not in save(
        bench, pid, {**shown_form(bench, pid), "algorithm": "anytime", "time_limit": "30"}
    )
    config = yaml.safe_load(config_text(bench, pid))
    assert config["algorithm"] == "anytime" and config["time_limit"] == 30 and "max_loss" not in config
    assert "error" not in save(
        bench, pid, {**shown_form(bench, pid), "algorithm": "auto", "exact_max_nodes": "1000"}
    )
    config = yaml.safe_load(config_text(bench, pid))
    assert config["algorithm"] == "auto" and config["exact_max_nodes"] == 1000 and config["time_limit"] == 30
    assert "error" not in save(bench, pid, {**shown_form(bench, pid), "algorithm": "ola"})
    config = yaml.safe_load(config_text(bench, pid))
    assert "time_limit" not in config and "exact_max_nodes" not in config
