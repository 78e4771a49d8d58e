# ruff: noqa: F811
"""The workbench's Explore screen, run history and one-off node releases (issue 35), through
Starlette's TestClient (runs in real child processes, as in tests/test_ui_api.py). Each test
fails on the main branch before this work."""

from __future__ import annotations

import re
import time
from typing import Any

# the TestClient fixture of tests/test_ui_api.py, used here by name (pytest's fixture by import)
from tests.test_ui_api import CONFIG, Bench, bench  # noqa: F401

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
        if state["status"] != "running":
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


# --------------------------------------------------------------------------- Explore
def test_the_list_shows_anonymous_nodes_by_default_with_a_status_filter(bench: Bench) -> None:
    """Issue 35: the default list of 200 held only non-anonymous nodes. Now: the anonymous ones
    (the optimum first), a filter for the others (each saying why it is not anonymous) or all."""
    pid = _project(bench, CONFIG)
    rid = _run(bench, pid)
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


def test_levels_are_shown_with_the_hierarchys_labels(bench: Bench) -> None:
    """Issue 35: "age level 1" becomes "age: 20s, 30s, 40s, …" in the list, the optimum's line and
    the node's detail (level 0 is "as in the data", its values not listed)."""
    pid = _project(bench, CONFIG)
    rid = _run(bench, pid)
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
    assert "the lower node (the smaller sum of levels), then to the first in lexicographic order" in ties
    rows = {r["node"]: r for r in _rows(page)}
    assert rows["0,1"]["tie"] and rows["1,0"]["tie"] and not rows["1,1"]["tie"]
    assert [r["node"] for r in _rows(page)][:2] == ["0,1", "1,0"]
    detail = bench.client.get(f"/p/{pid}/runs/{rid}/node?levels=1,0").text
    assert 'data-testid="node-tie"' in detail and "Ties with the optimum's loss" in detail
    assert len(re.findall(r'<circle [^>]*class="node [^"]*\btie\b', page)) == 2


def test_nodes_and_rows_take_keyboard_focus_and_the_diagram_opens_on_the_optimum(bench: Bench) -> None:
    """Issue 35: no node, list row or sort header took keyboard focus. The diagram is one tab
    stop (the optimum; the arrows move, Enter shows: app.js), every row and sort header is one,
    and the SVG's window (viewBox) holds the optimum, with zoom controls."""
    pid = _project(bench, CONFIG)
    rid = _run(bench, pid)
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
