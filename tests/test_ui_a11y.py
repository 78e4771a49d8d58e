"""Accessibility of ``safeshare ui`` (issue 35): axe-core on every screen, and the keyboard.

axe-core (Deque's rule engine, WCAG 2.x A/AA and best practices; the copy bundled by the
``axe-playwright-python`` package, never downloaded) is injected into each workbench screen after
a run of the Adult demo, in Debian's Chromium: the projects list, a new project's preview (also
with a delimiter that leaves the file one column), Data (roles; rename, export, delete), a hierarchy,
Privacy (with an estimate), Run, Explore (with a node's figures and a comparison), Risk, Utility, Release
(with the run's disclosure warnings), the warnings' help page, the run history, Surveillance (with
its result), the embedded report and an error page. No
violation of impact ``critical`` or ``serious`` may remain; every violation found (of any impact)
is printed on failure.

The keyboard test picks, compares and releases a node of the lattice, sorts the list and picks a
row, pressing keys only (Tab, Shift+Tab, arrows, Enter, Space): no click, no ``focus()``.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import yaml
from markupsafe import escape

from tests.test_ui_browser import ARGS, CHROMIUM
from tests.ui_helpers import (
    ROOT,
    SMALL_LATTICE_QIS,
    Server,
    adult_project,
    running_server,
    wait_idle,
    wait_run,
)

pytestmark = pytest.mark.browser

#: the impacts that fail the test (axe-core's scale: minor < moderate < serious < critical)
FAILING = ("critical", "serious")
#: the loss column of Explore's list of nodes
LOSSES = "table[data-testid=node-list] tbody tr td:nth-child(4)"


@dataclass
class Bench:
    server: Server
    project: str
    run: str


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not CHROMIUM.exists():
        pytest.skip("no /usr/bin/chromium (apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("the playwright package is not installed (pip install playwright)")
    profile = tempfile.mkdtemp(prefix="safeshare-chromium-")
    with sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            profile,
            executable_path=str(CHROMIUM),
            headless=True,
            args=ARGS,
            viewport={"width": 1400, "height": 900},
        )
        try:
            yield context
        finally:
            context.close()
            shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture(
    scope="module",
    params=[
        pytest.param(SMALL_LATTICE_QIS, id="adult-5-qis"),
        # Explore's axe-core run takes 12 s per state on the full 7,776-node diagram (issue 36)
        pytest.param(None, id="adult", marks=pytest.mark.slow),
    ],
)
def bench(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Iterator[Bench]:
    """A server holding the Adult project after one verified run (and the surveillance examples):
    in ``make test`` with five of its quasi-identifiers (a 108-node lattice, the same markup on
    every screen), in ``make test-all`` also with all nine (7,776 nodes)."""
    workdir = tmp_path_factory.mktemp("workdir")
    shutil.copytree(ROOT / "examples" / "surveillance", workdir / "surveillance")
    with running_server(workdir) as srv, srv.client() as client:
        project = adult_project(client, request.param)["id"]
        wait_idle(client, project)
        run = client.post(f"/api/projects/{project}/runs", json={"kind": "anonymize"}).json()["id"]
        state = wait_run(client, project, run)
        assert state["status"] == "done" and state["verified"], state
        yield Bench(srv, project, run)


def _axe() -> Any:
    try:
        from axe_playwright_python.sync_playwright import Axe
    except ImportError:
        pytest.skip("the axe-playwright-python package is not installed (pip install -e '.[test]')")
    return Axe()


def _violations(axe: Any, page: Any) -> list[dict[str, Any]]:
    page.wait_for_load_state("load")
    found: list[dict[str, Any]] = axe.run(page).response["violations"]
    return found


def _describe(screen: str, violations: list[dict[str, Any]]) -> str:
    lines = [f"{screen}: {len(violations)} rule(s) violated"]
    for v in violations:
        lines.append(f"  [{v['impact']}] {v['id']}: {v['help']} ({len(v['nodes'])} element(s))")
        for node in v["nodes"][:5]:
            lines.append(f"      {', '.join(map(str, node['target']))}: {node['html'][:160]}")
    return "\n".join(lines)


def test_every_screen_has_no_critical_or_serious_violation(browser: Any, bench: Bench) -> None:
    """axe-core on each screen (and on the states a person brings about on it)."""
    axe = _axe()
    srv, pid, rid = bench.server, bench.project, bench.run
    page = browser.new_page()
    page.set_default_timeout(120_000)
    page.goto(srv.url)  # sets the session cookie
    found: dict[str, list[dict[str, Any]]] = {}

    def check(screen: str, path: str | None = None) -> None:
        if path is not None:
            page.goto(srv.base + path)
        found[screen] = _violations(axe, page)

    check("projects", "/")
    semicolons = srv.workdir / "semicolons.csv"  # uploaded on the home page: the preview's input
    records = "".join(f"{20 + i % 40};{'FM'[i % 2]};1234{i % 3}\n" for i in range(40))
    semicolons.write_text("age;sex;zip\n" + records)
    page.goto(srv.base + "/")
    page.get_by_test_id("upload").set_input_files(str(semicolons))
    page.get_by_test_id("preview").click()
    page.get_by_test_id("preview-table").wait_for()
    assert page.get_by_test_id("preview-delimiter").get_attribute("data-value") == ";"
    check("new project: preview")
    page.get_by_test_id("delimiter").select_option(",")
    page.get_by_test_id("update-preview").click()
    page.get_by_test_id("preview-problem").wait_for()
    check("new project: preview, a delimiter that gives one column")
    page.get_by_test_id("cancel-upload").click()
    page.get_by_test_id("notice").wait_for()
    check("data (roles)", f"/p/{pid}/data")
    page.get_by_test_id("save-roles").click()
    page.get_by_test_id("notice").wait_for()
    check("data, after saving")
    check("hierarchy", f"/p/{pid}/hierarchy/age")
    page.get_by_test_id("wizard-type").select_option("intervals")
    page.get_by_test_id("intervals-widths").fill("10, 20")
    page.get_by_test_id("hierarchy-preview").get_by_text("would become").wait_for()  # the live preview
    check("hierarchy, the wizard's preview")
    check("privacy", f"/p/{pid}/privacy")
    page.get_by_test_id("estimate").click()
    page.get_by_test_id("estimate-result").wait_for()
    check("privacy, estimated")
    check("run", f"/p/{pid}/run?run={rid}")
    check("explore", f"/p/{pid}/explore?run={rid}")
    page.get_by_test_id("optimum").dispatch_event("click")
    page.get_by_test_id("add-compare").wait_for()
    page.get_by_test_id("add-compare").click()
    row = page.locator("table[data-testid=node-list] tbody tr").nth(1)
    row.click()
    page.get_by_test_id("node-levels").filter(has_text=str(row.get_attribute("data-node"))).wait_for()
    page.get_by_test_id("add-compare").click()
    page.get_by_test_id("compare").click()
    page.get_by_test_id("compare-table").wait_for()
    check("explore, a node and a comparison")
    check("explore, every node", f"/p/{pid}/explore?run={rid}&status=all")
    check("risk", f"/p/{pid}/risk?run={rid}")
    check("utility", f"/p/{pid}/utility?run={rid}")
    assert page.get_by_test_id("before-after-age").count() == 1  # its tables and charts are checked too
    check("release", f"/p/{pid}/release?run={rid}")
    assert page.get_by_test_id("warning").count() > 0  # Adult's run warns (its warnings are checked too)
    page.get_by_test_id("warning-doc").first.click()
    page.wait_for_url("**/help/warnings#*")
    check("help: the disclosure warnings")
    check("report.html (embedded in Release)", f"/p/{pid}/runs/{rid}/files/report.html")
    check("run history", f"/p/{pid}/history")
    check("surveillance", f"/p/{pid}/surveillance")
    page.get_by_test_id("surv-population").select_option("surveillance/population.csv")
    page.get_by_test_id("surv-cases").select_option("surveillance/cases_long.csv")
    page.get_by_test_id("surv-run").click()
    page.get_by_test_id("policy-table").wait_for()
    check("surveillance, simulated")
    check("an error page", f"/p/{pid}/explore?run=no-such-run")
    page.close()

    impacts = (*FAILING, "moderate", "minor")
    summary = "\n".join(
        f"{screen:40} " + " ".join(f"{i}={sum(v['impact'] == i for v in vs)}" for i in impacts)
        for screen, vs in found.items()
    )
    print("axe-core violations (rules) per screen:\n" + summary)
    failing = {s: [v for v in vs if v["impact"] in FAILING] for s, vs in found.items()}
    assert not any(failing.values()), "\n".join(
        [_describe(s, vs) for s, vs in found.items() if vs] + ["", summary]
    )


def _press_until(page: Any, selector: str, key: str = "Tab", limit: int = 80) -> None:
    """Press ``key`` until the focused element matches ``selector`` (a keyboard user tabbing on)."""
    for _ in range(limit):
        page.keyboard.press(key)
        if page.evaluate("(s) => document.activeElement && document.activeElement.matches(s)", selector):
            return
    focused = page.evaluate("document.activeElement && document.activeElement.outerHTML.slice(0, 200)")
    raise AssertionError(f"{limit} x {key} never reached {selector}; the focus is on {focused}")


def _focused(page: Any, attribute: str) -> str:
    value = page.evaluate("(a) => document.activeElement.getAttribute(a)", attribute)
    assert value, attribute
    return str(value)


def test_pick_compare_sort_and_release_a_node_with_the_keyboard_only(browser: Any, bench: Bench) -> None:
    """Issue 35: no node, list row or sort header took keyboard focus. Here the keyboard alone
    picks the optimum, moves to a neighbour, compares the two, sorts the list by loss, picks a row
    and releases it as a one-off run; the project's configuration is unchanged."""
    srv, pid, rid = bench.server, bench.project, bench.run
    with srv.client() as client:
        before = client.get(f"/api/projects/{pid}/config").text
    page = browser.new_page()
    page.set_default_timeout(120_000)
    page.goto(srv.url)
    page.goto(f"{srv.base}/p/{pid}/explore?run={rid}")
    page.wait_for_load_state("load")
    optimum = str(page.get_by_test_id("optimum").get_attribute("data-node"))
    levels = page.get_by_test_id("node-levels")

    # the first Tab reaches "Skip to the content", which passes the header's links
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.className") == "skip"
    page.keyboard.press("Enter")
    assert page.evaluate("document.activeElement.id") == "main"
    # the lattice is one tab stop, on the optimum; Enter shows its figures
    _press_until(page, "circle[data-node]", limit=12)  # past the zoom buttons only
    assert _focused(page, "data-node") == optimum
    page.keyboard.press("Enter")
    levels.filter(has_text=optimum).wait_for()
    _press_until(page, "[data-testid=add-compare]")
    page.keyboard.press("Enter")
    # back to the lattice (its tab stop is still the optimum), an arrow to a neighbour, Space shows it
    _press_until(page, "circle[data-node]", "Shift+Tab")
    page.keyboard.press("ArrowRight")
    neighbour = _focused(page, "data-node")
    assert neighbour != optimum
    page.keyboard.press(" ")
    levels.filter(has_text=neighbour).wait_for()
    _press_until(page, "[data-testid=add-compare]")
    page.keyboard.press("Enter")
    _press_until(page, "[data-testid=compare]")
    page.keyboard.press("Enter")
    table = page.get_by_test_id("compare-table")
    table.wait_for()
    assert table.locator("th code").all_inner_texts() == [optimum, neighbour]

    # the list: sort by loss (Enter on its header), then the first row (the least loss) with Enter
    _press_until(page, "th[data-sort]:nth-child(4)")
    page.keyboard.press("Enter")
    header = page.locator("table[data-testid=node-list] th[data-sort]").nth(2)
    assert header.inner_text() == "loss" and header.get_attribute("aria-sort") == "ascending"
    losses = [float(t) for t in page.locator(LOSSES).all_inner_texts()]
    assert losses == sorted(losses) and len(losses) > 2
    page.keyboard.press("Enter")
    assert header.get_attribute("aria-sort") == "descending"
    losses = [float(t) for t in page.locator(LOSSES).all_inner_texts()]
    assert losses == sorted(losses, reverse=True)
    _press_until(page, "table[data-testid=node-list] tbody tr")
    picked = _focused(page, "data-node")
    assert picked == page.locator("table[data-testid=node-list] tbody tr").first.get_attribute("data-node")
    page.keyboard.press("Enter")
    levels.filter(has_text=picked).wait_for()

    # release it: Shift+Tab back up to the node's "Release this node", Enter
    _press_until(page, "[data-testid=release-node]", "Shift+Tab", limit=400)
    page.keyboard.press("Enter")
    page.wait_for_url("**/run?run=*")
    status = page.get_by_test_id("run-status")
    status.filter(has_text="verified").wait_for()
    page.close()
    with srv.client() as client:
        assert client.get(f"/api/projects/{pid}/config").text == before
        runs = client.get(f"/api/projects/{pid}/history").json()["runs"]
    (released,) = [r for r in runs if r["id"] != rid and r.get("one_off")]
    assert ",".join(map(str, released["node"])) == picked
    assert yaml.safe_load(before).get("algorithm", "ola") != "node"


def test_plain_errors_stay_plain_for_scripts_and_are_pages_for_browsers(bench: Bench) -> None:
    """An error of a page is one line of text for a script, and a titled page in the workbench's
    frame (lang, title, main landmark, h1) for a browser, which asks for text/html."""
    srv, pid = bench.server, bench.project
    with srv.client() as client:
        plain = client.get(f"/p/{pid}/explore?run=no-such-run")
        page = client.get(f"/p/{pid}/explore?run=no-such-run", headers={"Accept": "text/html"})
    assert plain.status_code == page.status_code and 400 <= plain.status_code < 500
    assert plain.headers["content-type"].startswith("text/plain") and len(plain.text.splitlines()) == 1
    assert page.headers["content-type"].startswith("text/html")
    assert '<html lang="en">' in page.text and '<main id="main"' in page.text
    assert "<h1>Error</h1>" in page.text
    assert str(escape(plain.text.strip())) in page.text
