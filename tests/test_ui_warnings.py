"""A run's disclosure warnings beside the Run and Release buttons (issue 35), and /help/warnings.

The warnings shown are the run's report.json ``warnings[]``, each linked to its code's
explanation, which is docs/report.md's bullet ("Disclosure warnings"); where the report's
certificate marks them (``certificate.warnings[]``: contradicts, acknowledged), the marks are
shown too.
"""

from __future__ import annotations

import importlib.util
import json
import re
from html import unescape
from urllib.parse import unquote

import pytest
import yaml

from safeshare.api import workbench
from safeshare.errors import InputError
from safeshare.ui.markup import markdown_inline
from safeshare.warning_codes import WarningCode
from safeshare.workflows.run_warnings import REPORT_DOCS, explanations, run_warnings
from tests.test_ui_api import AGE, PEOPLE, ZIP, Bench, _finished_run, bench  # noqa: F401 - the fixture

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
        # docs/report.md's bullet of the code: the workbench links each warning to it
        missing = f"{code}: no bullet '* **`{code}`**: ...' in docs/report.md, Disclosure warnings"
        assert f"**`{code}`**" in doc, missing
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
    pid = bench.upload(
        [
            ("config", ("people.yaml", CONFIG.encode())),
            ("data", ("people.csv", data.encode())),
            ("hierarchies", ("age.csv", AGE.encode())),
            ("hierarchies", ("zip.csv", ZIP.encode())),
        ]
    )
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


def test_accept_warnings_checks_each_code_and_keeps_the_rest_of_the_configuration() -> None:
    config = {"algorithm": "ola", "accept_warnings": ["homogeneous-classes"]}
    assert workbench.accepted_warnings(config) == ["homogeneous-classes"]
    assert workbench.accepted_warnings({"accept_warnings": "singleton-classes"}) == ["singleton-classes"]
    both = workbench.accept_warnings(
        config, ["homogeneous-classes", "kept-column-identifying", "homogeneous-classes"]
    )
    assert both == {"algorithm": "ola", "accept_warnings": ["homogeneous-classes", "kept-column-identifying"]}
    assert workbench.accept_warnings(config, []) == {"algorithm": "ola"}
    assert config == {"algorithm": "ola", "accept_warnings": ["homogeneous-classes"]}  # not changed
    with pytest.raises(InputError, match=r"^accept_warnings: unknown warning code 'nope'"):
        workbench.accept_warnings(config, ["nope"])


def test_contradicting_warnings_get_a_box_each_that_saves_accept_warnings_and_runs(bench: Bench) -> None:  # noqa: F811
    """The certificate marks a warning as contradicting the headline: "I acknowledge: CODE" beside
    it; ticking it saves ``accept_warnings: [CODE]`` (checked by the configuration's models) and
    starts a run. Without the certificate issue's ``accept_warnings`` key the configuration refuses
    it: the form says so and nothing is saved."""
    pid, rid = _finished_run(bench)
    config_path = bench.directory(pid) / "config.yaml"
    report_path = bench.directory(pid) / "runs" / rid / "out" / "report.json"
    report = json.loads(report_path.read_text())
    code = "homogeneous-classes"
    report["warnings"] = [{"code": code, "columns": ["diagnosis"], "value": 1.0, "message": "every class"}]
    report.setdefault("certificate", {})["warnings"] = [
        {
            "code": code,
            "message": "every class",
            "contradicts": True,
            "reason": "no l-diversity",
            "acknowledged": False,
        }
    ]
    report_path.write_text(json.dumps(report))
    page = bench.client.get(f"/p/{pid}/release?run={rid}").text
    assert f'data-testid="acknowledge-{code}"' in page and 'name="shown" value="homogeneous-classes"' in page
    assert not re.search(rf'value="{code}"\s+checked', page)
    before = config_path.read_text()
    answer = bench.client.post(
        f"/p/{pid}/accept-warnings", data={"shown": code, "code": code}, follow_redirects=False
    )
    assert answer.status_code == 303
    if importlib.util.find_spec("safeshare.workflows.acknowledgement") is None:
        # before the certificate issue: accept_warnings is not a key of the configuration
        assert "error=" in answer.headers["location"] and "accept_warnings" in unquote(
            answer.headers["location"]
        )
        assert config_path.read_text() == before
        return
    assert "run=" in answer.headers["location"], answer.headers["location"]
    assert yaml.safe_load(config_path.read_text())["accept_warnings"] == [code]
    assert {k: v for k, v in yaml.safe_load(config_path.read_text()).items() if k != "accept_warnings"} == (
        yaml.safe_load(before)
    )
    bench.idle(pid, 300)
    page = bench.client.get(f"/p/{pid}/release?run={rid}").text
    assert re.search(rf'value="{code}"\s+checked', page)  # the box shows what the project accepts now
    # unticking it (the form shows it, the box is not sent) removes the key
    answer = bench.client.post(f"/p/{pid}/accept-warnings", data={"shown": code}, follow_redirects=False)
    assert "accept_warnings" not in yaml.safe_load(config_path.read_text())
    bench.idle(pid, 300)


def test_a_run_refused_for_its_warnings_offers_a_box_for_each_code(
    bench: Bench,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A release refused until its contradicting warnings are acknowledged (an InputError with
    ``codes``, the certificate issue's AcknowledgementRequired) publishes nothing: the run's state
    keeps the codes and the Run screen offers "I acknowledge: CODE" for each."""
    from safeshare.api import workbench as api_workbench
    from safeshare.ui import worker

    class Refused(InputError):
        def __init__(self, message: str, codes: tuple[str, ...]) -> None:
            super().__init__(message)
            self.codes = codes

    def refuse(*args: object, **kwargs: object) -> object:
        raise Refused(
            "the release's warnings contradict its headline: kept-column-identifying",
            ("kept-column-identifying",),
        )

    pid = bench.project()
    directory = bench.directory(pid)
    (directory / "run-x.yaml").write_text((directory / "config.yaml").read_text())
    run_dir = directory / "runs" / "20260101-000000-abcdef"
    run_dir.mkdir()
    job = {
        "kind": "anonymize",
        "project": str(directory),
        "workdir": str(bench.workdir),
        "params": {"config": "run-x.yaml"},
    }
    (run_dir / "job.json").write_text(json.dumps(job))
    monkeypatch.setattr(api_workbench, "anonymize", refuse)
    assert worker.main([str(run_dir)]) == 2
    state = json.loads((run_dir / "state.json").read_text())
    assert state["status"] == "failed" and state["acknowledge"] == ["kept-column-identifying"]
    page = bench.client.get(f"/p/{pid}/run?run={run_dir.name}").text
    assert 'data-testid="acknowledge-kept-column-identifying"' in page and "Nothing was published" in page
