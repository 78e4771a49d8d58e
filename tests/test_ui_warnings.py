"""A run's disclosure warnings beside the Run and Release buttons (issue 35), and /help/warnings.

The warnings shown are the run's report.json ``warnings[]``, each linked to its code's
explanation, which is docs/report.md's bullet ("Disclosure warnings"); where the report's
certificate marks them (``certificate.warnings[]``: contradicts, acknowledged), the marks are
shown too.
"""

from __future__ import annotations

import json
import re
from html import unescape

from safeshare.ui.markup import markdown_inline
from safeshare.warning_codes import WarningCode
from safeshare.workflows.run_warnings import REPORT_DOCS, explanations, run_warnings
from tests.test_ui_api import AGE, PEOPLE, ZIP, Bench, bench  # noqa: F401 - the fixture

#: a constant quasi-identifier and l-diversity: two uninformative-qi warnings, neither of which
#: contradicts the headline
CONFIG = """\
input: {path: data/people.csv}
attributes:
  age: {role: quasi, hierarchy: hierarchies/age.csv}
  sex: {role: quasi, hierarchy: {type: masking}}
  zip: {role: quasi, hierarchy: hierarchies/zip.csv}
  country: {role: quasi, hierarchy: {type: masking}}
  diagnosis: {role: sensitive}
privacy: {k-anonymity: {k: 3}, l-diversity: {l: 2, columns: [diagnosis]}}
max_suppression: 0.05
"""


def _items(page: str) -> list[tuple[str, str, str]]:
    """(code, link, text) of each shown warning."""
    found = re.findall(
        r'<li data-testid="warning" data-code="([^"]+)"[^>]*>\s*<a href="([^"]+)"[^>]*>.*?</a>:(.*?)</li>',
        page,
        re.S,
    )
    return [
        (code, link, " ".join(unescape(re.sub(r"<[^>]+>", "", text)).split())) for code, link, text in found
    ]


def test_every_code_has_its_explanation_from_the_docs() -> None:
    explained = explanations()
    assert set(explained) == {c.value for c in WarningCode}
    docs = REPORT_DOCS.read_text(encoding="utf-8")
    for code, (summary, doc) in explained.items():
        assert summary, code  # warning_codes.py's table
        assert f"**`{code}`**" in doc, code  # docs/report.md's bullet of the code
        assert " ".join(doc.split()[:12]) in " ".join(docs.split()), code


def test_markdown_of_a_bullet_is_escaped_before_it_is_marked_up() -> None:
    html = str(markdown_inline("**`a<b>`**: `x & y` <script>"))
    assert html == "<strong><code>a&lt;b&gt;</code></strong>: <code>x &amp; y</code> &lt;script&gt;"


def test_marks_come_from_the_certificate_by_code_and_message() -> None:
    report = {
        "warnings": [
            {"code": "kept-column-identifying", "columns": ["a"], "message": "column a"},
            {"code": "kept-column-identifying", "columns": ["b"], "message": "column b"},
            {"code": "uninformative-qi", "columns": ["c"], "message": "c"},
        ],
        "certificate": {
            "warnings": [
                {"code": "kept-column-identifying", "message": "column a", "contradicts": True,
                 "reason": "always", "acknowledged": True, "acknowledged_by": "Dr B"},
                {"code": "kept-column-identifying", "message": "column b", "contradicts": True,
                 "reason": "always", "acknowledged": False},
                {"code": "uninformative-qi", "message": "c", "contradicts": False, "acknowledged": False},
            ]
        },
    }  # fmt: skip
    a, b, c = run_warnings(report)
    assert (a.contradicts, a.acknowledged, a.acknowledged_by, a.needs_acknowledgement) == (
        True,
        True,
        "Dr B",
        False,
    )
    assert (b.contradicts, b.acknowledged, b.needs_acknowledgement, b.columns) == (True, False, True, ("b",))
    assert (c.contradicts, c.needs_acknowledgement) == (False, False)
    (plain,) = run_warnings({"warnings": report["warnings"][2:]})
    assert plain.contradicts is None and not plain.needs_acknowledgement  # no headline check in the report
    assert run_warnings(None) == [] and run_warnings({}) == []


def test_the_release_and_run_screens_list_the_runs_warnings_with_their_docs(bench: Bench) -> None:  # noqa: F811
    lines = PEOPLE.splitlines()
    data = lines[0] + ",country\n" + "".join(line + ",US\n" for line in lines[1:])
    files = [
        ("config", ("people.yaml", CONFIG.encode())),
        ("data", ("people.csv", data.encode())),
        ("hierarchies", ("age.csv", AGE.encode())),
        ("hierarchies", ("zip.csv", ZIP.encode())),
    ]
    answer = bench.client.post("/api/projects", files=files)
    assert answer.status_code == 201, answer.text
    pid = str(answer.json()["id"])
    bench.idle(pid)
    started = bench.client.post(f"/api/projects/{pid}/runs", json={"kind": "anonymize"})
    assert started.status_code == 202, started.text
    rid = started.json()["id"]
    (state,) = [r for r in bench.idle(pid, 300) if r["id"] == rid]
    assert state["status"] == "done", state
    report_path = bench.directory(pid) / "runs" / rid / "out" / "report.json"
    report = json.loads(report_path.read_text())
    expected = [(w["code"], w["message"]) for w in report["warnings"]]
    assert [c for c, _ in expected] == ["uninformative-qi", "uninformative-qi"]  # sex, then country

    help_page = bench.client.get("/help/warnings").text
    for screen in ("release", "run"):
        page = bench.client.get(f"/p/{pid}/{screen}?run={rid}").text
        shown = _items(page)
        assert [(c, t) for c, _, t in shown] == expected, screen
        for code, link, _ in shown:
            assert link == f"/help/warnings#{code}"
            assert f'<section id="{code}"' in help_page
        assert 'data-testid="warning-contradicts"' not in page  # no certificate marks in this report
    assert _items(bench.client.get(f"/p/{pid}/runs/{rid}/warnings").text) == _items(page)

    # a report whose certificate marks a warning as contradicting the headline, not acknowledged
    report["certificate"]["warnings"] = [
        {"code": w["code"], "message": w["message"], "contradicts": i == 0, "reason": "a test's reason",
         "acknowledged": False}
        for i, w in enumerate(report["warnings"])
    ]  # fmt: skip
    report_path.write_text(json.dumps(report))
    page = bench.client.get(f"/p/{pid}/release?run={rid}").text
    marks = re.findall(r'data-testid="warning-contradicts">(.*?)</strong>', page, re.S)
    assert [unescape(" ".join(m.split())) for m in marks] == [
        "contradicts the headline: a test's reason; not acknowledged"
    ]
