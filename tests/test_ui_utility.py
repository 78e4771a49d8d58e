"""The workbench's Utility screen is report.json's utility figures (issue 35, "a utility screen").

A run on 2,000 Adult records (the Risk screen's tests' fixture, tests/test_ui_risk.py) goes
through the workbench; then every figure of the Utility screen (each ``data-key``: its key in
report.json) is compared with report.json's value at that key, as a value and as the text shown,
and the screen's JSON is the same. Each column's rows add up to the report's records (nothing
left out), the suppression table is ordered by the share lost, the classifier check says how to
run it (the run trained none), a category the report pools is named nowhere on the page, and an
unknown run is a 404 page.
"""

from __future__ import annotations

import html
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from safeshare.ui.app import Context, Settings, _num, _pct, create_app
from tests.test_ui_risk import ADULT, BASE, NAMES, ROWS, TOKEN, Bench, _config, at, screen_figures

with __import__("warnings").catch_warnings():  # Starlette's notice about httpx, not about us
    __import__("warnings").simplefilter("ignore")
    from starlette.testclient import TestClient

#: the figures shown as percentages (the rest as numbers)
SHARES = re.compile(r"\.lost$|loss_share$|^max_suppression$")


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Bench]:
    """One workbench for the module's tests (each run is a child process; one profile each)."""
    workdir = tmp_path_factory.mktemp("utility") / "work"
    workdir.mkdir()
    app = create_app(Settings(workdir=workdir, token=TOKEN, host="127.0.0.1", port=8766, max_upload=8 << 20))
    ctx: Context = app.app.state.ctx
    client = TestClient(app, base_url=BASE, headers={"Authorization": f"Bearer {TOKEN}"})
    try:
        with client:
            yield Bench(client, workdir)
    finally:
        ctx.runs.shutdown()


@pytest.fixture(scope="module")
def ola(bench: Bench) -> tuple[str, str, dict[str, Any]]:
    """An OLA run (k = 5, 5 %) of the project: its project, run and report.json."""
    pid = bench.project(_config())
    rid = bench.run(pid)
    return pid, rid, bench.report(pid, rid)


def _page(bench: Bench, pid: str, rid: str) -> str:
    page = bench.client.get(f"/p/{pid}/utility?run={rid}")
    assert page.status_code == 200, page.text
    return page.text


def _figures_of(doc: Any) -> list[dict[str, Any]]:
    """Every ``{"key", "value"}`` figure of the screen's JSON."""
    if isinstance(doc, dict):
        if set(doc) == {"key", "value"}:
            return [doc]
        return [f for v in doc.values() for f in _figures_of(v)]
    if isinstance(doc, list):
        return [f for v in doc for f in _figures_of(v)]
    return []


def assert_screen_is_report(bench: Bench, pid: str, rid: str, report: dict[str, Any]) -> dict[str, Any]:
    """Every figure of the page and of the JSON API equals report.json's at its key; the page
    holds no number cell without its key. Returns the screen's JSON."""
    page = _page(bench, pid, rid)
    figures = screen_figures(page)
    assert figures
    for key, value, text in figures:
        expected = at(report, key)
        assert value == expected, (key, value, expected)
        shown = _pct(expected) if SHARES.search(key) else _num(expected)
        assert text == shown, (key, text, shown)
    assert page.count('class="num"') - page.count('<th class="num"') == len(figures) + page.count(
        '<td class="num">–</td>'
    )
    api = bench.client.get(f"/api/projects/{pid}/runs/{rid}/utility")
    assert api.status_code == 200, api.text
    view: dict[str, Any] = api.json()
    for fig in _figures_of(view):
        assert fig["value"] == at(report, fig["key"]), fig
    return view


def test_every_figure_is_report_json_s_and_every_category_is_shown(
    bench: Bench, ola: tuple[str, str, dict[str, Any]]
) -> None:
    pid, rid, report = ola
    view = assert_screen_is_report(bench, pid, rid, report)
    page = _page(bench, pid, rid)
    keys = {key for key, _, _ in screen_figures(page)}
    ba = report["before_after"]
    # every category of every column, and every pooled row, is on the page with its three figures
    for i, col in enumerate(ba["columns"]):
        assert col["skipped"] is None  # 2,000 records: each column has at most 100 categories
        for j in range(len(col["categories"])):
            for figure in ("before", "after", "lost"):
                assert f"before_after.columns.{i}.categories.{j}.{figure}" in keys
        if col["small"] is not None:
            for figure in ("before", "after", "lost"):
                assert f"before_after.columns.{i}.small.{figure}" in keys
        # and the rows hold every record: the input's before, the release's after
        rows = view["columns"][i]["rows"]
        assert len(rows) == len(col["categories"]) + (col["small"] is not None)
        assert sum(r["before"]["value"] for r in rows) == report["records_in"] == ROWS
        assert sum(r["after"]["value"] for r in rows) == report["records_out"]
        # the chart draws the same rows, one bar pair each
        chart = page.split(f'data-testid="chart-{col["column"]}"', 1)[1].split("</svg>", 1)[0]
        assert chart.count('class="after"') == len(rows) + 1  # and the legend's
    for key in ("records_in", "records_out", "suppressed_records", "before_after.small_cell"):
        assert key in keys
    # the information loss: every measure report.json's loss holds, raw and normalized
    for name in ("prec", "dm_star", "entropy"):
        assert f"loss.{name}" in keys and f"loss.{name}_normalized" in keys
    assert "loss.dm_star_minus_bottom" in keys
    assert view["loss"]["metric"] == report["metric"] == "prec"
    (optimized,) = [r for r in view["loss"]["rows"] if r["optimized"]]
    assert optimized["value"]["value"] == report["information_loss"]
    for r in view["loss"]["rows"]:
        assert r["sentence"] in html.unescape(page)  # one plain sentence each
    # nothing computed beside the report: the run's folder holds no file of the screen's
    assert not list((bench.workdir / "safeshare-projects" / pid / "runs" / rid).glob("utility*"))


def test_suppression_lists_the_categories_that_lost_most_first_beside_the_subgroup_warnings(
    bench: Bench, ola: tuple[str, str, dict[str, Any]]
) -> None:
    pid, rid, report = ola
    view = bench.client.get(f"/api/projects/{pid}/runs/{rid}/utility").json()
    rows = view["suppression"]["rows"]
    lost = [r["lost"]["value"] for r in rows]
    assert lost == sorted(lost, reverse=True) and lost
    every = [
        (col["column"], c["value"], c["lost"])
        for col in report["before_after"]["columns"]
        for c in [*col["categories"], *([col["small"]] if col["small"] else [])]
        if c["lost"] > 0
    ]
    assert view["suppression"]["losing"] == len(every)
    assert lost[0] == max(c[2] for c in every)
    # the flagged categories are the report's, and they lead the table (they lost most)
    flagged = {(f["column"], f["value"]) for f in report["before_after"]["flagged"]}
    assert flagged  # 2,000 records: a category of race loses all its records
    assert {(r["column"], r["value"]) for r in rows if r["flagged"]} == flagged
    # the run's subgroup-suppressed warnings beside the table, as the report words them
    warnings = [w for w in report["warnings"] if w["code"] == "subgroup-suppressed"]
    assert [w["message"] for w in view["warnings"]] == [w["message"] for w in warnings]
    page = html.unescape(_page(bench, pid, rid))
    section = page.split('data-testid="subgroup-warnings"', 1)[1]
    for w in warnings:
        assert w["message"] in section
    assert section.count('data-testid="warning"') == len(warnings)


def test_without_a_classifier_the_screen_says_how_to_run_it(
    bench: Bench, ola: tuple[str, str, dict[str, Any]]
) -> None:
    pid, rid, report = ola
    page = html.unescape(_page(bench, pid, rid))
    text = re.sub(r"<[^>]+>", "", page)
    assert "This run trained no classifier" in text
    assert "refuses a utility: key" in text  # no configuration key turns it on
    command = (
        f"safeshare utility safeshare-projects/{pid}/run-{rid}.yaml "
        "--test TEST_FILE --target hours-per-week --out DIR"
    )
    assert command in text  # the run's own configuration; the one column released as it is
    assert "accuracy" not in {k.lower() for k in report}  # and nothing pretends it ran
    assert not (bench.workdir / "safeshare-projects" / pid / "runs" / rid / "out" / "utility.json").exists()


def _small_categories() -> dict[str, set[str]]:
    """The categories of fewer than 11 records of each quasi-identifier, counted on the input."""
    names = NAMES.split(",")
    lines = [ln for ln in (ADULT / "adult.data").read_text().splitlines() if ln.strip()][:ROWS]
    records = [[v.strip() for v in ln.split(",")] for ln in lines]
    out = {}
    for column in ("education", "marital-status", "race"):
        counts = Counter(r[names.index(column)] for r in records)
        out[column] = {v for v, n in counts.items() if n < 11}
    return out


def test_a_pooled_category_is_never_named(bench: Bench, ola: tuple[str, str, dict[str, Any]]) -> None:
    pid, rid, report = ola
    small = _small_categories()
    pooled = {v for values in small.values() for v in values}
    assert len(pooled) >= 3, small  # e.g. marital-status' Married-AF-spouse, race's Other
    named = {c["value"] for col in report["before_after"]["columns"] for c in col["categories"]}
    assert not pooled & named  # the report pools them
    page = html.unescape(_page(bench, pid, rid))
    api = bench.client.get(f"/api/projects/{pid}/runs/{rid}/utility").text
    for value in pooled:
        assert re.search(rf"(?<![\w-]){re.escape(value)}(?![\w-])", page) is None, value
        assert f'"{value}"' not in api, value
    # the pooled rows are there, as the report describes them
    for col in report["before_after"]["columns"]:
        if col["small"] is not None:
            assert col["small"]["value"] in page


def test_an_unknown_run_is_a_404_page(bench: Bench, ola: tuple[str, str, dict[str, Any]]) -> None:
    pid, _, _ = ola
    for run in ("20990101-000000-abcdef", "not-a-run"):
        page = bench.client.get(f"/p/{pid}/utility?run={run}", headers={"accept": "text/html"})
        assert page.status_code == 404, page.text
        assert "<h1>Error</h1>" in page.text and "no such run" in html.unescape(page.text)
        api = bench.client.get(f"/api/projects/{pid}/runs/{run}/utility")
        assert api.status_code == 404 and "no such run" in api.json()["error"]


def test_reachable_from_the_nav_and_the_release_screen(
    bench: Bench, ola: tuple[str, str, dict[str, Any]]
) -> None:
    pid, rid, _ = ola
    release = bench.client.get(f"/p/{pid}/release?run={rid}").text
    assert f'href="/p/{pid}/utility?run={rid}" data-testid="utility-link"' in release
    nav = release.split("<nav>", 1)[1].split("</nav>", 1)[0]
    order = re.findall(r'data-testid="nav-([a-z]+)"', nav)
    assert order.index("risk") + 1 == order.index("utility") == order.index("release") - 1
    assert f'href="/p/{pid}/utility?run={rid}"' in nav  # the nav keeps the chosen run
    page = _page(bench, pid, rid)
    assert "<h1>6 Utility</h1>" in page and 'class="current" data-testid="nav-utility"' in page


def test_a_project_without_a_finished_run_says_so(bench: Bench) -> None:
    answer = bench.client.post(
        "/api/projects",
        files=[("data", ("small.csv", b"age,sex\n30,F\n40,M\n"))],
    )
    assert answer.status_code == 201, answer.text
    pid = answer.json()["id"]
    bench.idle(pid)
    page = bench.client.get(f"/p/{pid}/utility")
    assert page.status_code == 200 and "no finished run yet" in page.text


def test_local_recoding_shows_the_cell_level_loss_and_its_kept_columns(bench: Bench, tmp_path: Path) -> None:
    pid = bench.project(_config("local_recoding: {rounds: 20}\n", k=10, accept=("kept-column-identifying",)))
    rid = bench.run(pid)
    report = bench.report(pid, rid)
    view = assert_screen_is_report(bench, pid, rid, report)
    assert [c["column"] for c in view["columns"]] == ["hours-per-week"]  # the QIs mix levels
    assert view["notes"] == report["before_after"]["notes"] and view["notes"]
    cells = {r["name"]: r for r in view["loss"]["cells"]}
    assert set(cells) == {"prec", "entropy_normalized", "dm_star_normalized"}
    for name, r in cells.items():
        assert r["global"]["value"] == report["local_recoding"]["loss_global"][name]
        assert r["mixed"]["value"] == report["local_recoding"]["loss_mixed"][name]
    page = _page(bench, pid, rid)
    assert 'data-testid="cell-loss"' in page
