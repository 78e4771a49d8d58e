# ruff: noqa: F811  (the bench fixture, imported from tests/test_ui_api.py, is every test's argument)
"""The hierarchy wizard (issue 35): a builder as a form, a live value -> label mapping with the
records of each value and label, a blank-is-missing switch, saved as the YAML a person would write
and checked against the data first."""

from __future__ import annotations

import re
from collections import Counter
from html import unescape
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from safeshare.errors import InputError
from safeshare.workflows import hierarchy_form as hf
from tests.test_ui_api import PEOPLE, Bench, bench  # noqa: F401  (the fixture)

#: the people of tests/test_ui_api.py, with a blank-coded column of their own
BLANKS = "age,sex,ward\n" + "".join(
    f"{20 + i % 40},{'FM'[i % 2]},{['A', 'B', ''][i % 3]}\n" for i in range(120)
)
BLANK_CONFIG = """\
input: {path: data/blanks.csv}
attributes:
  age: {role: quasi, hierarchy: {type: intervals, widths: [10]}}
  sex: {role: quasi, hierarchy: {type: masking}}
  ward: {role: quasi}
privacy: {k-anonymity: {k: 3}}
max_suppression: 0.05
"""


def _rows(html: str, testid: str) -> list[list[str]]:
    table = html[html.index(f'data-testid="{testid}"') :]
    table = table[: table.index("</table>")]
    rows = re.findall(r"<tr>(.*?)</tr>", table, flags=re.S)
    cells = [
        [unescape(re.sub("<[^>]+>", "", c)) for c in re.findall(r"<td[^>]*>(.*?)</td>", r, re.S)]
        for r in rows
    ]
    return [c for c in cells if c]


def _version(html: str) -> str:
    found = re.search(r'name="config_version" value="([0-9a-f]+)"', html)
    assert found, "no config_version in the page"
    return found.group(1)


def _config(bench: Bench, pid: str) -> dict[str, Any]:
    loaded = yaml.safe_load(bench.client.get(f"/api/projects/{pid}/config").text)
    assert isinstance(loaded, dict)
    return loaded


def _ages() -> Counter[str]:
    return Counter(line.split(",")[0] for line in PEOPLE.splitlines()[1:])


# --------------------------------------------------------------------------- the form <-> the spec
def test_each_builder_reads_its_fields_and_shows_them_again() -> None:
    forms = {
        "intervals": {"intervals-widths": "5, 10, 20", "intervals-origin": "0", "intervals-coding_top": "90"},
        "grouping": {
            "grouping-levels": "Young: 20, 30\nOld: 40\n---\nAll: Young, Old",
            "grouping-no_top": "yes",
        },
        "masking": {
            "masking-char": "#",
            "masking-max_masked": "3",
            "masking-align": "left",
            "masking-top": "ALL",
        },
        "dates": {"dates-levels-month": "yes", "dates-levels-year": "yes", "dates-week_start": "sunday"},
        "suppression": {"suppression-top": "any"},
    }
    expected = {
        "intervals": {"type": "intervals", "widths": [5, 10, 20], "origin": 0, "coding": {"top": 90}},
        "grouping": {
            "type": "grouping",
            "levels": [{"Young": ["20", "30"], "Old": ["40"]}, {"All": ["Young", "Old"]}],
            "top": None,
        },
        "masking": {"type": "masking", "char": "#", "max_masked": 3, "align": "left", "top": "ALL"},
        "dates": {"type": "dates", "levels": ["month", "year"], "week_start": "sunday"},
        "suppression": {"type": "suppression", "top": "any"},
    }
    for kind, form in forms.items():
        spec = hf.builder_spec({hf.TYPE_FIELD: kind, **form})
        assert spec == expected[kind], kind
        assert hf.wizard_shows(spec)
        shown = hf.form_values(spec)
        assert hf.builder_spec(shown) == spec, kind  # the form shows the spec it saves
    # the blank switch is the builder's missing: [""]
    spec = hf.builder_spec({hf.TYPE_FIELD: "suppression", hf.BLANK_FIELD: "yes"})
    assert spec == {"type": "suppression", "missing": [""]}
    assert hf.form_values(spec)[hf.BLANK_FIELD] == "yes"


@pytest.mark.parametrize(
    ("form", "names"),
    [
        ({hf.TYPE_FIELD: "pyramids"}, "choose a builder"),
        ({hf.TYPE_FIELD: "intervals"}, "intervals-widths"),
        ({hf.TYPE_FIELD: "intervals", "intervals-widths": "5, ten"}, "'ten' is not a number"),
        ({hf.TYPE_FIELD: "intervals", "intervals-widths": "5", "intervals-origin": "inf"}, "finite"),
        ({hf.TYPE_FIELD: "masking", "masking-max_masked": "-2"}, "not a whole number"),
        ({hf.TYPE_FIELD: "masking", "masking-align": "up"}, "not one of right, left"),
        ({hf.TYPE_FIELD: "grouping", "grouping-levels": "no colon here"}, "line 1"),
        ({hf.TYPE_FIELD: "grouping", "grouping-levels": "A: 1\nA: 2"}, "defined twice"),
        ({hf.TYPE_FIELD: "grouping", "grouping-levels": "A: ,"}, "lists no member"),
        ({hf.TYPE_FIELD: "grouping", "grouping-levels": "\n---\n"}, "no group"),
    ],
)
def test_a_field_that_cannot_be_read_is_one_line_naming_it(form: dict[str, str], names: str) -> None:
    with pytest.raises(InputError) as caught:
        hf.builder_spec(form)
    assert names in str(caught.value) and "\n" not in str(caught.value)


LABEL = st.text(st.characters(categories=["L", "N"]), min_size=1, max_size=6)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.dictionaries(LABEL, st.lists(LABEL, min_size=1, max_size=3), min_size=1, max_size=4),
        min_size=1,
        max_size=3,
    )
)
def test_a_grouping_round_trips_through_its_text(levels: list[dict[str, list[str]]]) -> None:
    spec = {"type": "grouping", "levels": levels}
    assert hf.builder_spec(hf.form_values(spec)) == spec


def test_a_spec_the_wizard_cannot_show_is_not_shown_and_a_new_column_gets_a_suggestion() -> None:
    assert not hf.wizard_shows({"type": "grouping", "file": "groups.yaml"})
    assert not hf.wizard_shows({"type": "intervals", "widths": [5], "top_coding": 90})
    assert not hf.wizard_shows("hierarchies/age.csv")
    assert hf.form_values(None, ["20", "31", ""])[hf.TYPE_FIELD] == "intervals"
    suggested = hf.form_values(None, ["A", "B", ""])
    assert suggested[hf.TYPE_FIELD] == "grouping" and suggested[hf.BLANK_FIELD] == "yes"
    assert suggested["grouping-levels"] == "A: A\nB: B"


# --------------------------------------------------------------------------- the page
def test_the_preview_maps_each_value_with_its_records_and_saves_nothing(bench: Bench) -> None:
    pid = bench.project()
    before = bench.client.get(f"/api/projects/{pid}/config").text
    form = {hf.TYPE_FIELD: "intervals", "intervals-widths": "10, 20", "config_version": "x"}
    answer = bench.client.post(f"/p/{pid}/hierarchy/age/preview?fragment=1", data=form)
    assert answer.status_code == 200, answer.text
    rows = _rows(answer.text, "hierarchy-mapping")
    ages = _ages()
    assert {r[0] for r in rows} == set(ages)
    for value, records, level1, level2, top in rows:  # each value, its records, its labels
        assert int(records) == ages[value]
        low = int(value) // 10 * 10
        assert level1 == f"{low}-{low + 9}" and top == "*"
        assert level2 == f"{int(value) // 20 * 20}-{int(value) // 20 * 20 + 19}"
    # each label's records are the sum over its values
    levels = _rows(answer.text, "hierarchy-levels")
    level1 = dict(re.findall(r"(\d+-\d+) \((\d+)\)", levels[1][2]))
    for label, n in level1.items():
        low = int(label.split("-")[0])
        assert int(n) == sum(c for v, c in ages.items() if low <= int(v) < low + 10)
    assert sum(int(n) for n in level1.values()) == len(PEOPLE.splitlines()) - 1
    assert bench.client.get(f"/api/projects/{pid}/config").text == before  # nothing saved


def test_a_bad_candidate_is_its_builders_one_line_and_the_page_keeps_the_fields(bench: Bench) -> None:
    pid = bench.project()
    form = {hf.TYPE_FIELD: "intervals", "intervals-widths": "10, 15"}
    answer = bench.client.post(f"/p/{pid}/hierarchy/age/preview", data=form)
    assert answer.status_code == 400
    error = unescape(re.search(r'data-testid="preview-error"[^>]*>(.*?)</p>', answer.text, re.S).group(1))  # type: ignore[union-attr]
    assert "multiple" in error and "\n" not in error
    assert 'value="10, 15"' in answer.text  # what the person typed is still there


def test_blank_cells_are_refused_unless_the_switch_declares_them_missing(bench: Bench) -> None:
    pid = bench.upload(
        [("config", ("blanks.yaml", BLANK_CONFIG.encode())), ("data", ("blanks.csv", BLANKS.encode()))]
    )
    page = bench.client.get(f"/p/{pid}/hierarchy/ward").text
    assert 'data-testid="no-hierarchy"' in page
    assert re.search(r'data-testid="wizard-blank-missing"\s+checked', page)  # suggested: ward has blanks
    form = {hf.TYPE_FIELD: "grouping", "grouping-levels": "Ward: A, B"}
    refused = bench.client.post(f"/p/{pid}/hierarchy/ward/preview?fragment=1", data=form)
    assert refused.status_code == 400 and "blank" in refused.text.lower()
    kept = bench.client.post(
        f"/p/{pid}/hierarchy/ward/preview?fragment=1", data={**form, hf.BLANK_FIELD: "yes"}
    )
    assert kept.status_code == 200, kept.text
    rows = {r[0]: r[1:] for r in _rows(kept.text, "hierarchy-mapping")}
    assert rows["(blank)"] == ["40", "", "*"]  # 40 blank records, kept blank below the top
    assert rows["A"] == ["40", "Ward", "*"] and rows["B"] == ["40", "Ward", "*"]
    # saved: the YAML a person would write, and a run with it releases the blanks as blanks
    version = _version(page)
    saved = bench.client.post(
        f"/p/{pid}/hierarchy/ward", data={**form, hf.BLANK_FIELD: "yes", "config_version": version}
    )
    assert saved.status_code == 200 and "hierarchy of ward saved" in saved.text
    assert _config(bench, pid)["attributes"]["ward"] == {
        "role": "quasi",
        "hierarchy": {"type": "grouping", "levels": [{"Ward": ["A", "B"]}], "missing": [""]},
    }
    page = bench.client.get(f"/p/{pid}/hierarchy/ward").text  # the saved one, shown in the wizard
    assert "Ward: A, B" in page and 'data-testid="no-hierarchy"' not in page


def test_saving_checks_the_data_and_the_version_first(bench: Bench) -> None:
    pid = bench.project()
    page = bench.client.get(f"/p/{pid}/hierarchy/zip").text
    before = bench.client.get(f"/api/projects/{pid}/config").text
    version = _version(page)
    # a grouping that leaves a value of the data out: refused, nothing saved
    partial = {hf.TYPE_FIELD: "grouping", "grouping-levels": "North: 12345, 12346", "config_version": version}
    answer = bench.client.post(f"/p/{pid}/hierarchy/zip", data=partial)
    assert "value '54321' is in no group" in unescape(answer.text)
    assert "hierarchy of zip saved" not in answer.text
    assert bench.client.get(f"/api/projects/{pid}/config").text == before
    # a stale tab: the version of a configuration changed since
    whole = {**partial, "grouping-levels": "North: 12345, 12346\nSouth: 54321"}
    assert (
        bench.client.post(f"/p/{pid}/hierarchy/zip", data={**whole, "config_version": "0" * 64}).status_code
        == 200
    )
    assert bench.client.get(f"/api/projects/{pid}/config").text == before
    assert "hierarchy of zip saved" in bench.client.post(f"/p/{pid}/hierarchy/zip", data=whole).text
    assert _config(bench, pid)["attributes"]["zip"]["hierarchy"]["levels"] == [
        {"North": ["12345", "12346"], "South": ["54321"]}
    ]


def test_an_unknown_column_is_a_404(bench: Bench) -> None:
    pid = bench.project()
    assert bench.client.get(f"/p/{pid}/hierarchy/nope").status_code == 404
    assert bench.client.post(f"/p/{pid}/hierarchy/nope/preview", data={}).status_code == 404
