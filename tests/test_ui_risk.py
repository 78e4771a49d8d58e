"""The workbench's Risk screen is report.json's risk section (issue 31, "the workbench's Risk
screen equals report.json's risk section for every run kind").

Each run kind the workbench starts (OLA k-anonymity, a risk-threshold model with a configured N,
local recoding, "Release this node", epsilon-safe, a person key) runs through the workbench on
2,000 Adult records; then every figure of the Risk screen (each ``data-key``: its key in
report.json) is compared with the value at that key of the run's report.json, both the value
the page carries and the text it shows. Before this work the screen showed its own comparison
(risk.json): under local recoding round 0's records and B, not the release's.
"""

from __future__ import annotations

import csv
import html
import io
import json
import re
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from safeshare.ui.app import Context, Settings, _num, _pct, create_app

with __import__("warnings").catch_warnings():  # Starlette's notice about httpx, not about us
    __import__("warnings").simplefilter("ignore")
    from starlette.testclient import TestClient

ROOT = Path(__file__).resolve().parent.parent
ADULT = ROOT / "examples" / "adult"
TOKEN = "test-token-" + "r" * 32
BASE = "http://127.0.0.1:8766"
ROWS = 2000
NAMES = (
    "age,workclass,fnlwgt,education,education-num,marital-status,occupation,relationship,race,sex,"
    "capital-gain,capital-loss,hours-per-week,native-country,income"
)
QIS = ("age", "education", "marital-status", "race", "sex")


#: the run's warnings that contradict its headline, acknowledged (issue 33): on 2,000 records the
#: kept hours-per-week singles out more than 5 % of the released records, and a category loses
#: more than half of its records
ACCEPTED = ("kept-column-identifying", "subgroup-suppressed")


def _config(
    extra: str = "",
    person: bool = False,
    qis: tuple[str, ...] = QIS,
    k: int = 5,
    sensitive: bool = True,
    accept: tuple[str, ...] = ACCEPTED,
) -> str:
    names = NAMES + (",pid" if person else "")
    attributes = "".join(f"  {q}: {{role: quasi, hierarchy: hierarchies/{q}.csv}}\n" for q in qis)
    if sensitive:  # epsilon-safe releases quasi-identifiers only
        attributes += "  hours-per-week: {role: sensitive}\n"
    if person:
        attributes += "  pid: {role: identifying}\n"
    return (
        f"input: {{path: data/adult.data, header: false, names: [{names}]}}\n"
        f"attributes:\n{attributes}"
        "default_role: identifying\n"
        f"privacy: {{k-anonymity: {{k: {k}}}}}\n"
        "max_suppression: 0.05\nmetric: prec\nengine: memory\noutput: {format: csv}\n"
        f"accept_warnings: [{', '.join(accept)}]\n" + extra
    )


def _data(person: bool = False) -> bytes:
    lines = [ln for ln in (ADULT / "adult.data").read_text().splitlines() if ln.strip()][:ROWS]
    if person:  # two records a person: the record and the next one
        lines = [f"{ln},p{i // 2}" for i, ln in enumerate(lines)]
    return ("\n".join(lines) + "\n").encode()


@dataclass
class Bench:
    client: TestClient
    workdir: Path

    def project(self, config: str, person: bool = False) -> str:
        files = [
            ("config", ("adult.yaml", config.encode())),
            ("data", ("adult.data", _data(person))),
        ]
        files += [
            ("hierarchies", (f"{q}.csv", (ADULT / "hierarchies" / f"{q}.csv").read_bytes())) for q in QIS
        ]
        answer = self.client.post("/api/projects", files=files)
        assert answer.status_code == 201, answer.text
        pid = str(answer.json()["id"])
        self.idle(pid)
        return pid

    def idle(self, pid: str, timeout: float = 300) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            runs = self.client.get(f"/api/projects/{pid}/runs").json()["runs"]
            if all(r["status"] != "running" and r.get("lattice") != "exploring" for r in runs):
                return list(runs)
            time.sleep(0.2)
        raise AssertionError("runs still going")

    def run(self, pid: str) -> str:
        started = self.client.post(f"/api/projects/{pid}/runs", json={"kind": "anonymize"})
        assert started.status_code == 202, started.text
        return self.finished(pid, str(started.json()["id"]))

    def finished(self, pid: str, rid: str) -> str:
        (state,) = [r for r in self.idle(pid) if r["id"] == rid]
        assert state["status"] == "done" and state["verified"], state
        return rid

    def report(self, pid: str, rid: str) -> dict[str, Any]:
        answer = self.client.get(f"/api/projects/{pid}/runs/{rid}/report")
        assert answer.status_code == 200, answer.text
        doc: dict[str, Any] = answer.json()
        return doc


@pytest.fixture()
def bench(tmp_path: Path) -> Iterator[Bench]:
    workdir = tmp_path / "work"
    workdir.mkdir()
    app = create_app(Settings(workdir=workdir, token=TOKEN, host="127.0.0.1", port=8766, max_upload=8 << 20))
    ctx: Context = app.app.state.ctx
    client = TestClient(app, base_url=BASE, headers={"Authorization": f"Bearer {TOKEN}"})
    try:
        with client:
            yield Bench(client, workdir)
    finally:
        ctx.runs.shutdown()


FIGURE = re.compile(
    r"<(td|span) class=\"num\"(?: data-testid=\"[^\"]*\")? "
    r"data-key=\"([^\"]+)\" data-value='([^']*)'>([^<]*)</\1>"
)


def at(doc: Any, key: str) -> Any:
    """The value at dotted ``key`` of report.json (list items by index); KeyError if absent."""
    for part in key.split("."):
        doc = doc[int(part)] if isinstance(doc, list) else doc[part]
    return doc


def screen_figures(page: str) -> list[tuple[str, Any, str]]:
    """Every figure of the Risk screen: (its report.json key, the value it carries, the text shown)."""
    return [
        (key, json.loads(html.unescape(value)), html.unescape(text))
        for _, key, value, text in FIGURE.findall(page)
    ]


def assert_screen_is_report(bench: Bench, pid: str, rid: str) -> dict[str, Any]:
    """Every figure of the Risk screen equals report.json's at its key, as a value and as shown;
    the JSON endpoint is the report's risk section and certificate figures."""
    report = bench.report(pid, rid)
    page = bench.client.get(f"/p/{pid}/risk?run={rid}")
    assert page.status_code == 200, page.text
    figures = screen_figures(page.text)
    keys = {key for key, _, _ in figures}
    # the headline figures are all there: the release's records and B, each side's measures,
    # the estimators of both sides, the drivers, the population's N
    for needed in (
        "risk.input.n",
        "risk.release.n",
        "risk.input.B",
        "risk.release.B",
        "risk.release.prosecutor.max",
        "risk.release.A",
        "risk.release.drivers.0.classes",
        "risk.input.estimators.rows.0.B",
        "certificate.estimators.rows.0.B",
        "certificate.population.size",
    ):
        assert needed in keys, (needed, sorted(keys))
    for key, value, text in figures:
        expected = at(report, key)
        assert value == expected, (key, value, expected)
        shown = _pct(expected) if key.endswith("share_above_threshold") else _num(expected)
        assert text == shown, (key, text, shown)
    # the page holds no figure but these (every number in a num cell carries its key)
    assert page.text.count('class="num"') - page.text.count('<th class="num"') == len(
        figures
    ) + page.text.count('<td class="num">–</td>')
    # no figures of its own: the run writes no risk file beside the report
    assert not (bench.workdir / "safeshare-projects" / pid / "runs" / rid / "risk.json").exists()
    api = bench.client.get(f"/api/projects/{pid}/runs/{rid}/risk").json()
    assert api["risk"] == report["risk"]
    for name in ("population", "sensitivity", "estimators", "risk_kind"):
        assert api["certificate"][name] == report["certificate"][name], name
    return report


def test_plain_ola_k_anonymity(bench: Bench) -> None:
    pid = bench.project(_config())
    rid = bench.run(pid)
    report = assert_screen_is_report(bench, pid, rid)
    assert report["risk"]["release"]["estimated"] is False  # no N: the input is the population
    assert report["risk"]["release"]["n"] == report["records_out"]
    assert _population_line(bench, pid, rid) == (
        f"Population: N = {report['records_in']:,} (the input, taken as the whole population; assumed: no "
        "population size was given). The risks are exact for this population."
    )
    # B's label says the assumption: "the population is known" was shown for an assumed one
    assert _b_label(bench, pid, rid) == (
        "B (exact if the input is the whole population, as assumed: no N was given)"
    )


def test_a_risk_threshold_model_with_a_configured_population(bench: Bench) -> None:
    extra = "population: {size: 40000, source: a test's census}\n"
    config = _config(extra).replace(
        "privacy: {k-anonymity: {k: 5}}", "privacy: {k-anonymity: {k: 2}, risk: {threshold: 0.2}}"
    )
    pid = bench.project(config)
    rid = bench.run(pid)
    report = assert_screen_is_report(bench, pid, rid)
    assert report["risk"]["release"]["estimated"] is True and report["risk"]["population_size"] == 40000
    assert _population_line(bench, pid, rid) == (
        "Population: N = 40,000 (a test's census). Journalist and marketer risks are estimated with this N."
    )
    assert _b_label(bench, pid, rid) == f"B (estimated, {report['risk']['estimator']})"


def _b_label(bench: Bench, pid: str, rid: str) -> str:
    """The Risk table's label of B (its first line, without the meaning under it)."""
    page = bench.client.get(f"/p/{pid}/risk?run={rid}").text
    cell = re.search(r"<tr><td>(B [^<]*)<br>", page)
    assert cell is not None
    return " ".join(html.unescape(cell.group(1)).split())


def _population_line(bench: Bench, pid: str, rid: str) -> str:
    """The Risk screen's population sentence, as text (each figure's markup dropped), up to "Input:"."""
    page = bench.client.get(f"/p/{pid}/risk?run={rid}").text
    para = re.search(r'<p data-testid="risk-population">(.*?)</p>', page, re.S)
    assert para is not None
    text = " ".join(html.unescape(re.sub(r"<[^>]+>", "", para.group(1))).split())
    return text.split(" Input:")[0]


def test_local_recoding_shows_the_final_release_not_round_0(bench: Bench) -> None:
    """The issue's case: the screen described round 0 (fewer records, another B)."""
    pid = bench.project(_config("local_recoding: {rounds: 20}\n", k=10, accept=("kept-column-identifying",)))
    rid = bench.run(pid)
    report = assert_screen_is_report(bench, pid, rid)
    assert report["local_recoding"]["records_released_global"] < report["records_out"]
    page = bench.client.get(f"/p/{pid}/risk?run={rid}").text
    figures = {key: value for key, value, _ in screen_figures(page)}
    assert figures["risk.release.n"] == report["records_out"]  # the final release's records
    assert figures["risk.release.B"] == report["risk"]["release"]["B"]
    # and independently, on the published file: its records, and B = J / n (the input is the
    # population: F = f), J the released classes of the quasi-identifiers
    release = bench.client.get(f"/api/projects/{pid}/runs/{rid}/files/release.csv").text
    rows = list(csv.DictReader(io.StringIO(release)))
    assert len(rows) == figures["risk.release.n"]
    classes = Counter(tuple(r[q] for q in QIS) for r in rows)
    assert figures["risk.release.classes"] == len(classes)
    assert figures["risk.release.B"] == pytest.approx(len(classes) / len(rows), rel=1e-12)


def test_release_this_node(bench: Bench) -> None:
    pid = bench.project(_config())
    first = bench.run(pid)
    lattice = bench.client.get(f"/api/projects/{pid}/runs/{first}/lattice").json()
    chosen = sorted(
        (n for n in lattice["nodes"] if n["status"] == "anonymous"), key=lambda n: (n["loss"], n["levels"])
    )[0]["levels"]
    answer = bench.client.post(
        f"/p/{pid}/runs/{first}/release-node",
        data={"levels": ",".join(map(str, chosen))},
        follow_redirects=False,
    )
    assert answer.status_code == 303 and "run=" in answer.headers["location"], answer.text
    rid = bench.finished(pid, answer.headers["location"].split("run=")[1])
    report = assert_screen_is_report(bench, pid, rid)
    assert report["node"] == chosen and report["algorithm"] == "node"


def test_epsilon_safe(bench: Bench) -> None:
    extra = (
        "algorithm: epsilon-safe\n"
        "dp: {beta: 0.75, epsilon: 2.0, epsilon_prime: 0.45, utility: linear, penalty: 0.04, "
        "penalty_mode: suppression}\n"
    )
    qis = ("marital-status", "race", "sex")
    pid = bench.project(_config(extra, qis=qis, k=20, sensitive=False, accept=("subgroup-suppressed",)))
    rid = bench.run(pid)
    report = assert_screen_is_report(bench, pid, rid)
    assert report["records_out"] < ROWS


def test_a_person_key(bench: Bench) -> None:
    pid = bench.project(_config("person: pid\n", person=True), person=True)
    rid = bench.run(pid)
    report = assert_screen_is_report(bench, pid, rid)
    assert report["risk"]["unit"] == "people" and report["risk"]["input"]["n"] == ROWS // 2


def _distribution(page: str) -> list[tuple[float, bool, str]]:
    svg = page[page.index('data-testid="risk-distribution"') :]
    svg = svg[: svg.index("</svg>")]
    bars = re.findall(r'<g data-risk="([^"]+)"( data-above="1")?><title>([^<]*)</title>', svg)
    return [(float(r), bool(a), html.unescape(t)) for r, a, t in bars]


def test_the_screen_says_each_measure_the_verdict_and_the_risks_spread_in_plain_words(bench: Bench) -> None:
    """Issue 35: a risk screen in plain language: one sentence per measure, a verdict against the
    threshold, a risk-distribution plot; each from report.json (the headline, the class sizes)."""
    config = _config().replace(
        "privacy: {k-anonymity: {k: 5}}", "privacy: {k-anonymity: {k: 2}, risk: {threshold: 0.2}}"
    )
    pid = bench.project(config)
    rid = bench.run(pid)
    report = assert_screen_is_report(bench, pid, rid)  # the verdict's figures are report.json's too
    page = bench.client.get(f"/p/{pid}/risk?run={rid}").text
    head = report["headline"]["risk"]
    line = html.unescape(re.search(r'data-testid="risk-verdict-line">(.*?)</p>', page, re.S).group(1))  # type: ignore[union-attr]
    assert ("Within the threshold" in line) == bool(head["holds"]) and (
        "Above the threshold" in line
    ) != bool(head["holds"])
    assert html.unescape(report["headline"]["text"]) in html.unescape(page)
    # a sentence beside every measure of the table
    table = page[
        page.index('data-testid="risk-table"') : page.index(
            "</table>", page.index('data-testid="risk-table"')
        )
    ]
    rows = table.count("<tr>") - 1
    meanings = re.findall(r'data-testid="meaning">([^<]*)</span>', table)
    assert len(meanings) == rows and all(len(m) > 20 for m in meanings)
    # the spread: one bar per class size of the report that holds records, the riskiest first
    bins = [b for b in report["class_size_histogram"] if b["records"]]
    bars = _distribution(page)
    assert [r for r, _, _ in bars] == pytest.approx([1 / b["low"] for b in bins], rel=1e-5)
    threshold = report["risk"]["threshold"]
    assert [a for _, a, _ in bars] == [1 / b["low"] > threshold for b in bins]
    for (_, _, tip), b in zip(bars, bins, strict=True):
        assert f"{b['records']:,} records" in tip and f"{b['classes']:,} classes" in tip


def test_without_a_threshold_the_verdict_says_so_and_gives_the_headline(bench: Bench) -> None:
    pid = bench.project(_config())
    rid = bench.run(pid)
    report = bench.report(pid, rid)
    page = html.unescape(bench.client.get(f"/p/{pid}/risk?run={rid}").text)
    assert "No risk model with a threshold was configured" in page and report["headline"]["text"] in page
    assert "headline.risk" not in page  # no verdict figure without a risk model
    # the bars are marked against the threshold the report measures its share above
    bins = [b for b in report["class_size_histogram"] if b["records"]]
    assert [a for _, a, _ in _distribution(page)] == [
        1 / b["low"] > report["risk"]["threshold"] for b in bins
    ]
