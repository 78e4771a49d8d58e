# ruff: noqa: F811  (the bench fixture, imported from tests/test_ui_api.py, is every test's argument)
"""The release context on the workbench's Privacy screen (issue 35: "privacy with governance
fields"; :mod:`safeshare.workflows.governance_form`): purpose, approver, N's source and every
``governance:`` field round-trip through the form as a browser posts it; a changed field changes
its key only; a bad value is one line naming the key and nothing is saved.
"""

from __future__ import annotations

from urllib.parse import unquote

import yaml

from safeshare.config.governance import GovernanceSection
from tests.test_ui_api import Bench, bench  # noqa: F401  (the fixture)
from tests.test_ui_privacy_form import BASE, config_text, save, shown_form

FULL = """\
privacy: {k-anonymity: {k: 3}}
population: {size: 100000, source: census 2021}
purpose: a registry's yearly report
approved_by: J. Doe, privacy officer
governance:
  recipient: Cardiology research unit
  recipient_kind: external
  release_model: non-public
  invasiveness: medium
  threat_model: {motives: none known, capacity: statisticians, controls: enclave}
  review_date: 2027-06-01
  expiry_date: 2028-01-01
  second_reviewer: A. Smith
  credentials: CIPP/C
"""


def test_every_governance_field_is_on_the_screen() -> None:
    from safeshare.workflows.governance_form import governance_fields

    keys = {f.key for f in governance_fields({})}
    expected = {f"governance.{k}" for k in GovernanceSection.model_fields if k != "threat_model"}
    expected |= {f"governance.threat_model.{q}" for q in ("motives", "capacity", "controls")}
    assert keys == expected | {"purpose", "approved_by", "population.source"}


def test_an_unchanged_form_leaves_the_context_unchanged(bench: Bench) -> None:
    pid = bench.project(BASE + FULL)
    before = config_text(bench, pid)
    form = shown_form(bench, pid)
    assert form["governance.recipient"] == "Cardiology research unit"
    assert form["governance.release_model"] == "non-public" and form["governance.review_date"] == "2027-06-01"
    assert form["population.source"] == "census 2021" and form["approved_by"] == "J. Doe, privacy officer"
    assert "error" not in save(bench, pid, form)
    assert config_text(bench, pid) == before


def test_filling_in_the_context_writes_its_keys_only(bench: Bench) -> None:
    pid = bench.project(BASE + "privacy: {k-anonymity: {k: 3}}\npopulation_size: 50000\n")
    before = yaml.safe_load(config_text(bench, pid))
    form = shown_form(bench, pid)
    assert form["governance.recipient"] == "" and form["governance.release_model"] == ""
    changed = {
        **form,
        "governance.recipient": "  Cardiology   unit ",
        "governance.release_model": "public",
        "governance.invasiveness": "high",
        "governance.threat_model.controls": "agreement",
        "governance.review_date": "2027-06-01",
        "population.source": "census 2021",
        "purpose": "a study",
    }
    assert "error" not in save(bench, pid, changed)
    after = yaml.safe_load(config_text(bench, pid))
    assert after["governance"] == {
        "recipient": "Cardiology unit",
        "release_model": "public",
        "invasiveness": "high",
        "threat_model": {"controls": "agreement"},
        "review_date": "2027-06-01",
    }
    assert after["population"] == {"size": 50000, "source": "census 2021"} and "population_size" not in after
    assert after["purpose"] == "a study"
    rest = {k: v for k, v in after.items() if k not in ("governance", "population", "purpose")}
    assert rest == {k: v for k, v in before.items() if k != "population_size"}
    # emptying every governance field removes the section
    emptied = {**shown_form(bench, pid), **{k: "" for k in changed if k.startswith("governance.")}}
    assert "error" not in save(bench, pid, emptied)
    assert "governance" not in yaml.safe_load(config_text(bench, pid))


def test_a_bad_context_value_is_one_line_and_nothing_is_saved(bench: Bench) -> None:
    pid = bench.project(BASE + FULL)
    before = config_text(bench, pid)
    for field, value, message in [
        ("governance.expiry_date", "2020-01-01", "expiry_date 2020-01-01 is before review_date 2027-06-01"),
        ("governance.review_date", "next year", "governance.review_date: expected a date as YYYY-MM-DD"),
        ("governance.release_model", "leaked", "governance.release_model: "),
    ]:
        location = save(bench, pid, {**shown_form(bench, pid), field: value})
        assert "error" in location and message in location, location
        assert config_text(bench, pid) == before
    pid = bench.project(BASE + "privacy: {k-anonymity: {k: 3}}\n")
    location = save(bench, pid, {**shown_form(bench, pid), "population.source": "census"})
    assert "population.source: says where N comes from" in location, location


def test_a_stale_tab_is_refused_and_nothing_is_saved(bench: Bench) -> None:
    """Two tabs of one project (issue 35): the second save, made on the page rendered before the
    first was saved, is refused with one line instead of silently overwriting it."""
    pid = bench.project(BASE + "privacy: {k-anonymity: {k: 3}}\n")
    first, second = shown_form(bench, pid), shown_form(bench, pid)
    assert first["config_version"] == second["config_version"] != ""
    assert "error" not in save(bench, pid, {**first, "k": "7"})
    saved = config_text(bench, pid)
    location = save(bench, pid, {**second, "k": "4"})
    assert "the configuration changed since this page was loaded" in location, location
    assert config_text(bench, pid) == saved and "k: 7" in saved
    # reloaded, the same change goes in; a script's post without the version is not checked
    assert "error" not in save(bench, pid, {**shown_form(bench, pid), "k": "4"})
    assert "error" not in save(bench, pid, {"k": "5"})
    assert "k: 5" in config_text(bench, pid)
    # the roles form carries the version too
    page = bench.client.get(f"/p/{pid}/data").text
    assert page.count('name="config_version"') >= 3
    answer = bench.client.post(
        f"/p/{pid}/roles", data={"config_version": "0" * 16, "role-age": "quasi"}, follow_redirects=False
    )
    assert "the configuration changed" in unquote(answer.headers["location"])


def test_impossible_values_are_refused_before_saved_and_k_1_is_warned(bench: Bench) -> None:
    """Issue 35: "privacy settings saved" was green for t = 2 and 150 % suppression; k = 1 was
    accepted without a word."""
    pid = bench.project(BASE + "privacy: {k-anonymity: {k: 3}}\n")
    before = config_text(bench, pid)
    for field, value in [("t", "2"), ("max_suppression", "150%"), ("k", "0")]:
        location = save(bench, pid, {**shown_form(bench, pid), field: value})
        assert "error" in location and "saved" not in location, (field, location)
        assert config_text(bench, pid) == before
    location = save(bench, pid, {**shown_form(bench, pid), "k": "1"})
    assert "privacy settings saved" in location and "k = 1" in location, location
