# ruff: noqa: F811
"""The workbench's Explore screen, run history and one-off node releases (issue 35), through
Starlette's TestClient (runs in real child processes, as in tests/test_ui_api.py). Each test
fails on the main branch before this work."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

# the TestClient fixture of tests/test_ui_api.py, used here by name (pytest's fixture by import)
from tests.test_ui_api import CONFIG, Bench, bench, open_bench  # noqa: F401

#: Two symmetric quasi-identifiers: nodes 0,1 and 1,0 tie at the least loss (issue 35's ties).
TWINS = "a,b\n" + "p,p\n" * 10 + "q,q\n" * 10 + "p,q\n" + "q,p\n"
TWINS_CONFIG = """\
input: {path: data/twins.csv}
attributes:
  a: {role: quasi, hierarchy: {type: masking}}
  b: {role: quasi, hierarchy: {type: masking}}
privacy: {k-anonymity: {k: 3}}
max_suppression: 0.05
"""


def _project(bench: Bench, config: str, data: tuple[str, str] | None = None) -> str:
    if data is None:
        return bench.project(config)
    files = [("config", ("c.yaml", config.encode())), ("data", (data[0], data[1].encode()))]
    answer = bench.client.post("/api/projects", files=files)
    assert answer.status_code == 201, answer.text
    pid = str(answer.json()["id"])
    bench.idle(pid)
    return pid


def _run(bench: Bench, pid: str, expect: str = "done") -> str:
    started = bench.client.post(f"/api/projects/{pid}/runs", json={"kind": "anonymize"})
    assert started.status_code == 202, started.text
    return _wait(bench, pid, started.json()["id"], expect)


def _wait(bench: Bench, pid: str, rid: str, expect: str = "done") -> str:
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        state = bench.client.get(f"/api/projects/{pid}/runs/{rid}").json()
        if state["status"] != "running" and state.get("lattice") != "exploring":
            assert state["status"] == expect, state
            return rid
        time.sleep(0.1)
    raise AssertionError("the run did not end")


def _rows(html: str) -> list[dict[str, Any]]:
    """The node list's rows: levels, classes, whether a tie badge and a why-not line are there."""
    body = html.split('data-testid="node-list"', 1)[1]
    out = []
    for match in re.finditer(r'<tr data-node="([^"]+)" class="([^"]*)" tabindex="0">(.*?)</tr>', body, re.S):
        cells = match.group(3)
        why = re.search(r'data-testid="why-not">([^<]*)<', cells)
        out.append(
            {
                "node": match.group(1),
                "class": match.group(2).split(),
                "tie": 'data-testid="tie"' in cells,
                "why_not": why.group(1) if why else None,
                "labels": re.search(r'<td class="labels">([^<]*)', cells).group(1),
            }
        )
    return out


@dataclass
class Explored:
    """One project of CONFIG and its finished run, read (never changed) by the Explore tests."""

    bench: Bench
    pid: str
    rid: str


@pytest.fixture(scope="module")
def explored(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Explored]:
    """The project and run the read-only Explore tests share: each made its own before, the
    same configuration and data, a profiling child and a run child apiece (issue 36)."""
    with open_bench(tmp_path_factory.mktemp("explored")) as shared:
        pid = _project(shared, CONFIG)
        yield Explored(shared, pid, _run(shared, pid))


# --------------------------------------------------------------------------- Explore
def test_the_list_shows_anonymous_nodes_by_default_with_a_status_filter(explored: Explored) -> None:
    """Issue 35: the default list of 200 held only non-anonymous nodes. Now: the anonymous ones
    (the optimum first), a filter for the others (each saying why it is not anonymous) or all."""
    bench, pid, rid = explored.bench, explored.pid, explored.rid
    lattice = bench.client.get(f"/api/projects/{pid}/runs/{rid}/lattice").json()
    statuses = [n["status"] for n in lattice["nodes"]]
    page = bench.client.get(f"/p/{pid}/explore?run={rid}")
    assert page.status_code == 200
    rows = _rows(page.text)
    assert len(rows) == statuses.count("anonymous") + statuses.count("optimum")
    assert rows[0]["node"] == ",".join(map(str, lattice["optimum"]))
    assert all(set(r["class"]) & {"optimum", "anonymous"} and r["why_not"] is None for r in rows)
    bad = _rows(bench.client.get(f"/p/{pid}/explore?run={rid}&status=not-anonymous").text)
    assert len(bad) == statuses.count("not-anonymous") > 0
    records = lattice["records"]
    by_key = {",".join(map(str, n["levels"])): n for n in lattice["nodes"]}
    for row in bad:
        node = by_key[row["node"]]
        share = node["suppressed"] / records
        assert row["why_not"] is not None and row["why_not"].startswith("needs "), row
        assert f"({node['suppressed']:,} of {records:,} records) &gt; 5% allowed (6)" in row["why_not"]
        assert share > 0.05
    every = _rows(bench.client.get(f"/p/{pid}/explore?run={rid}&status=all").text)
    assert len(every) == len(lattice["nodes"])
    answer = bench.client.get(f"/p/{pid}/explore?run={rid}&status=bogus")
    assert answer.status_code == 400 and answer.text.startswith("error: status 'bogus': expected one of")


def test_a_node_within_the_suppression_limit_says_which_model_rejects_it(bench: Bench) -> None:
    """With a risk threshold on B beside k, a node can suppress within the limit and still fail:
    its line names the threshold instead of a share of records."""
    config = CONFIG.replace(
        "privacy: {k-anonymity: {k: 3}}", "privacy: {k-anonymity: {k: 2}, risk: {measure: B, threshold: 0.1}}"
    )
    pid = _project(bench, config)
    rid = _run(bench, pid)
    lattice = bench.client.get(f"/api/projects/{pid}/runs/{rid}/lattice").json()
    by_key = {",".join(map(str, n["levels"])): n for n in lattice["nodes"]}
    rows = _rows(bench.client.get(f"/p/{pid}/explore?run={rid}&status=not-anonymous").text)
    rejected = [r for r in rows if "rejected by" in r["why_not"]]
    assert rejected and len(rejected) < len(rows)
    for row in rows:
        suppressed = by_key[row["node"]]["suppressed"]
        if suppressed > 6:  # floor(5% of 120)
            assert row["why_not"].startswith("needs "), row
        else:
            assert row["why_not"].endswith("but rejected by the risk threshold B &lt;= 0.1"), row


def test_levels_are_shown_with_the_hierarchys_labels(explored: Explored) -> None:
    """Issue 35: "age level 1" becomes "age: 20s, 30s, 40s, …" in the list, the optimum's line and
    the node's detail (level 0 is "as in the data", its values not listed)."""
    bench, pid, rid = explored.bench, explored.pid, explored.rid
    optimum = bench.client.get(f"/api/projects/{pid}/runs/{rid}/lattice").json()["optimum"]
    assert optimum == [1, 0, 0]
    page = bench.client.get(f"/p/{pid}/explore?run={rid}").text
    assert "age: 20s, 30s, 40s, …" in re.search(r'data-testid="optimum-summary">(.*?)</p>', page, re.S).group(
        1
    )
    assert _rows(page)[0]["labels"] == "age: 20s, 30s, 40s, …"
    detail = bench.client.get(f"/p/{pid}/runs/{rid}/node?levels=1,0,0").text
    table = re.search(r'data-testid="node-generalization">(.*?)</table>', detail, re.S).group(1)
    cells = [re.sub(r"\s+", " ", c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", table, re.S)]
    assert cells[:3] == ["age", "level 1", "20s, 30s, 40s, … (4 groups)"]
    assert cells[3:6] == ["sex", "level 0", "as in the data"]
    api = bench.client.get(f"/api/projects/{pid}/runs/{rid}/nodes/2,1,2").json()
    assert [g["labels"] for g in api["generalization"]] == [["*"], ["*"], ["*"]]


def test_ties_at_the_optimums_loss_are_flagged_with_the_tie_break_rule(bench: Bench) -> None:
    """Two symmetric quasi-identifiers: 0,1 and 1,0 have the same loss and both qualify; the
    search chose 0,1 (equal height, lexicographically first). Issue 35: no flag said so."""
    pid = _project(bench, TWINS_CONFIG, ("twins.csv", TWINS))
    rid = _run(bench, pid)
    lattice = bench.client.get(f"/api/projects/{pid}/runs/{rid}/lattice").json()
    assert lattice["optimum"] == [0, 1]
    page = bench.client.get(f"/p/{pid}/explore?run={rid}").text
    ties = re.search(r'data-testid="ties">(.*?)</p>', page, re.S).group(1)
    assert "2 anonymous nodes share the optimum's loss" in ties
    assert "<code>0,1</code>, <code>1,0</code>" in ties
    assert "the lower node (the least sum of levels), then the first in lexicographic order" in ties
    rows = {r["node"]: r for r in _rows(page)}
    assert rows["0,1"]["tie"] and rows["1,0"]["tie"] and not rows["1,1"]["tie"]
    assert [r["node"] for r in _rows(page)][:2] == ["0,1", "1,0"]
    detail = bench.client.get(f"/p/{pid}/runs/{rid}/node?levels=1,0").text
    assert 'data-testid="node-tie"' in detail and "Ties with the optimum's loss" in detail
    assert len(re.findall(r'<circle [^>]*class="node [^"]*\btie\b', page)) == 2


def test_nodes_and_rows_take_keyboard_focus_and_the_diagram_opens_on_the_optimum(
    explored: Explored,
) -> None:
    """Issue 35: no node, list row or sort header took keyboard focus. The diagram is one tab
    stop (the optimum; the arrows move, Enter shows: app.js), every row and sort header is one,
    and the SVG's window (viewBox) holds the optimum, with zoom controls."""
    bench, pid, rid = explored.bench, explored.pid, explored.rid
    page = bench.client.get(f"/p/{pid}/explore?run={rid}").text
    svg = re.search(r"<svg [^>]*>", page).group(0)
    x, y, w, h = map(float, re.search(r'viewBox="([^"]+)"', svg).group(1).split())
    circles = re.findall(r"<circle [^>]*>", page)
    assert len(circles) == 18 and all('tabindex="' in c and 'role="button"' in c for c in circles)
    stops = [c for c in circles if 'tabindex="0"' in c]
    assert len(stops) == 1 and 'data-testid="optimum"' in stops[0]
    cx, cy = (float(v) for v in re.search(r'cx="([\d.]+)" cy="([\d.]+)"', stops[0]).groups())
    assert x <= cx <= x + w and y <= cy <= y + h
    assert all(f'data-zoom="{z}"' in page for z in ("in", "out", "optimum", "all"))
    assert len(_rows(page)) > 0  # each row matched with tabindex="0"
    assert (
        page.count('data-sort="num" tabindex="0"') == 5 and page.count('data-sort="text" tabindex="0"') == 2
    )


# --------------------------------------------------------------------------- run history
def test_the_run_history_lists_every_run_and_a_failed_run_hides_none(bench: Bench) -> None:
    """Issue 35: after a failed run the verified release before it was reachable only by
    ``?run=ID``. The history lists every run (status, node, k, B, suppression, verified,
    released) with links; Explore, Risk and Release open the latest run that has their figures
    and say that a newer run failed."""
    pid = _project(bench, CONFIG)
    first = _run(bench, pid)
    report = bench.client.get(f"/api/projects/{pid}/runs/{first}/report").json()
    put = bench.client.put(f"/api/projects/{pid}/config", content=CONFIG.replace("k: 3", "k: 500"))
    assert put.status_code == 200, put.text
    failed = _run(bench, pid, expect="failed")
    history = bench.client.get(f"/api/projects/{pid}/history").json()["runs"]
    assert [r["id"] for r in history] == [failed, first]
    newest, older = history
    assert newest["status"] == "failed" and not newest["verified"] and not newest["released"]
    assert newest["k"] == 500 and newest["node"] is None
    assert older["status"] == "done" and older["verified"] and older["released"]
    assert older["node"] == report["node"] and older["k"] == 3
    assert older["B"] == report["risk"]["release"]["B"]
    assert older["suppressed"] == report["suppressed_records"] and older["records"] == report["records_in"]
    page = bench.client.get(f"/p/{pid}/history")
    assert page.status_code == 200
    rows = re.findall(r'<tr data-run="([^"]+)" data-testid="history-row">(.*?)</tr>', page.text, re.S)
    assert [r[0] for r in rows] == [failed, first]
    for screen in ("explore", "risk", "release"):
        assert f'href="/p/{pid}/{screen}?run={first}"' in rows[1][1]
    assert f'href="/p/{pid}/release?run={failed}"' in rows[0][1]
    assert "failed" in rows[0][1] and re.search(r"<td>yes</td>\s*<td>yes</td>", rows[1][1])
    for screen in ("explore", "risk", "release"):
        shown = bench.client.get(f"/p/{pid}/{screen}").text  # no ?run=: the latest with figures
        assert f"This is run <code>{first}</code>; a newer run, <code>{failed}</code>" in shown, screen
    assert 'data-testid="newer-run"' not in bench.client.get(f"/p/{pid}/release?run={failed}").text
    assert 'data-testid="nav-history"' in page.text


def test_run_ids_sort_in_start_order_within_one_second() -> None:
    """Two runs started in the same second (a fast run, then the next) once sorted by their
    random suffix: the run history listed the older first, and a screen opened the older run as
    the latest. The id carries the milliseconds before its random digits."""
    from safeshare.ui.projects import RUN_ID
    from safeshare.ui.runs import new_run_id

    start = 1_796_000_000.0  # a whole second
    times = [start + step / 1000 for step in (0, 1, 2, 9, 10, 99, 100, 500, 998, 999)]
    times += [start + 1, start + 1.001, start + 61]
    for _ in range(20):  # the random digits change nothing
        ids = [new_run_id(t) for t in times]
        assert all(RUN_ID.match(i) for i in ids), ids
        assert sorted(ids) == ids and len(set(ids)) == len(ids), ids


# --------------------------------------------------------------------------- release this node
def test_release_this_node_is_a_one_off_run_that_leaves_the_project_alone(bench: Bench) -> None:
    """Issue 35: "Release this node" pinned the project to ``algorithm: node`` + ``levels:``;
    changing k then ran that node. Now only the run's own configuration (``run-<run>.yaml``)
    says ``algorithm: node``; the project's is unchanged byte for byte, the next run searches
    again, and each run's command line has its own ``--out``."""
    pid = _project(bench, CONFIG)
    first = _run(bench, pid)
    config_path = bench.directory(pid) / "config.yaml"
    before = config_path.read_bytes()
    lattice = bench.client.get(f"/api/projects/{pid}/runs/{first}/lattice").json()
    chosen = min(
        (n for n in lattice["nodes"] if n["status"] == "anonymous"), key=lambda n: (n["loss"], n["levels"])
    )["levels"]
    answer = bench.client.post(
        f"/p/{pid}/runs/{first}/release-node",
        data={"levels": ",".join(map(str, chosen))},
        follow_redirects=False,
    )
    assert answer.status_code == 303 and "run=" in answer.headers["location"], answer.text
    second = _wait(bench, pid, answer.headers["location"].split("run=")[1])
    assert bench.client.get(f"/api/projects/{pid}/runs/{second}/report").json()["node"] == chosen
    assert config_path.read_bytes() == before  # the project's configuration is not touched
    one_off = (bench.directory(pid) / f"run-{second}.yaml").read_text()
    assert "algorithm: node" in one_off and "levels: {{age: {}, sex: {}, zip: {}}}".format(*chosen) in one_off
    # the next run, with k changed on the Privacy screen, searches again (it ran the node before)
    saved = bench.client.post(
        f"/p/{pid}/privacy", data={"k": "4", "max_suppression": "0.05"}, follow_redirects=False
    )
    assert saved.status_code == 303 and "error" not in saved.headers["location"]
    assert "levels" not in config_path.read_text() and "algorithm: node" not in config_path.read_text()
    third = _run(bench, pid)
    third_yaml = (bench.directory(pid) / f"run-{third}.yaml").read_text()
    assert "algorithm: node" not in third_yaml and "k: 4" in third_yaml
    history = {r["id"]: r for r in bench.client.get(f"/api/projects/{pid}/history").json()["runs"]}
    assert history[second]["one_off"] == dict(zip(("age", "sex", "zip"), chosen, strict=True))
    assert history[second]["picked_in"] == first and history[third]["one_off"] is None
    assert history[third]["algorithm"] == "ola" and history[second]["algorithm"] == "node"
    # every shown command line writes its own output folder
    lines = []
    for rid in (first, second, third):
        page = bench.client.get(f"/p/{pid}/release?run={rid}").text
        cli = re.search(r'data-testid="cli">([^<]*)<', page).group(1)
        assert cli.endswith(f"--out out/{pid}/{rid}") and f"run-{rid}.yaml" in cli
        lines.append(cli)
    assert len(set(lines)) == 3
    assert 'data-testid="one-off"' in bench.client.get(f"/p/{pid}/release?run={second}").text
    # the Run screen shows the configuration each run used, not the project's of now
    shown = bench.client.get(f"/p/{pid}/run?run={second}").text
    assert "algorithm: node" in shown and 'data-testid="one-off"' in shown
    assert "algorithm: node" not in bench.client.get(f"/p/{pid}/run?run={third}").text


def test_a_project_pinned_by_an_earlier_node_release_is_freed_by_choosing_a_search(bench: Bench) -> None:
    """A project the earlier "Release this node" pinned (``algorithm: node`` + ``levels:``): choosing
    OLA on the Privacy screen saved a configuration that could not run ("levels" belongs to
    algorithm node), with no control to remove ``levels:``. Saving drops them now."""
    pid = _project(bench, CONFIG + "algorithm: node\nlevels: {age: 1, sex: 0, zip: 0}\n")
    saved = bench.client.post(
        f"/p/{pid}/privacy",
        data={"k": "3", "max_suppression": "0.05", "algorithm": "ola"},
        follow_redirects=False,
    )
    assert saved.status_code == 303 and "error" not in saved.headers["location"], saved.headers
    text = (bench.directory(pid) / "config.yaml").read_text()
    # OLA, the default: the form writes no algorithm key for it (the round trip of issue 31)
    assert "levels" not in text and "algorithm: node" not in text
    _run(bench, pid)
