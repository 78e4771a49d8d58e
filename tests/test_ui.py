"""``safeshare ui`` over HTTP, as a script (or an attacker) talks to it: the security rules, the
JSON API, a run and its release against the command line's, cancel. The browser tests are in
tests/test_ui_browser.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
import yaml

from tests.ui_helpers import (
    ADULT_DIR,
    ADULT_YAML,
    HIERARCHIES,
    ROOT,
    SLOW_PHASE,
    adult_project,
    running_server,
    slow_adult_yaml,
    wait_idle,
    wait_run,
)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    workdir = tmp_path_factory.mktemp("workdir")
    (workdir / "data.csv").write_text("age,sex\n30,F\n40,M\n", encoding="utf-8")
    with running_server(workdir, "--max-upload-mb", "8") as srv:
        yield srv


@pytest.fixture(scope="module")
def finished(server):
    """The Adult demo as a project, run once through the API."""
    with server.client() as client:
        project = adult_project(client)
        wait_idle(client, project["id"])
        answer = client.post(f"/api/projects/{project['id']}/runs", json={"kind": "anonymize"})
        assert answer.status_code == 202, answer.text
        state = wait_run(client, project["id"], answer.json()["id"])
        assert state["status"] == "done", state
        return project["id"], state["id"]


def acknowledge(client: httpx.Client, project: str, codes: list[str]) -> str:
    """Tick "I acknowledge: CODE" for each of ``codes`` and post the form (what the run page
    offers beside a refused run): saved as the project's ``accept_warnings:``, then it runs;
    returns the new run's id."""
    answer = client.post(
        f"/p/{project}/accept-warnings", data={"shown": codes, "code": codes}, follow_redirects=False
    )
    assert answer.status_code == 303 and "run=" in answer.headers["location"], answer.headers
    return answer.headers["location"].split("run=")[1]


# --------------------------------------------------------------------------- security
def test_every_request_needs_the_token(server) -> None:
    with httpx.Client(base_url=server.base) as anonymous:
        for path in ("/", "/api/projects", "/static/app.js", "/p/x/data"):
            answer = anonymous.get(path)
            assert answer.status_code == 403, path
        assert anonymous.get("/?token=wrong").status_code == 403
        entered = anonymous.get(f"/?token={server.token}", follow_redirects=False)
        assert entered.status_code == 303 and entered.headers["location"] == "/"
        cookie = entered.headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
        assert anonymous.get("/").status_code == 200  # the cookie from now on


def test_a_foreign_host_header_is_refused(server) -> None:
    """DNS rebinding: a page of evil.example re-pointed at 127.0.0.1 sends its own Host."""
    with server.client() as client:
        assert client.get("/").status_code == 200
        assert client.get(f"http://localhost:{server.port}/").status_code == 200
        for host in (
            "evil.example",
            f"evil.example:{server.port}",
            "127.0.0.1:1",
            f"127.0.0.2:{server.port}",
        ):
            assert client.get("/", headers={"Host": host}).status_code == 403, host


def test_a_foreign_origin_cannot_change_state(server) -> None:
    with server.client() as client:
        for headers in (
            {"Origin": "http://evil.example"},
            {"Origin": "null"},
            {"Referer": "http://evil.example/x"},
        ):
            answer = client.post("/api/projects", headers=headers, files={"data": ("d.csv", b"a\n1\n")})
            assert answer.status_code == 403, headers
            assert "cross-site" in answer.text
        assert client.get("/api/projects", headers={"Origin": "http://evil.example"}).status_code == 200
        same = client.post(
            "/api/projects", headers={"Origin": server.base}, files={"data": ("d.csv", b"a\n1\n")}
        )
        assert same.status_code == 201


@pytest.mark.parametrize(
    "name",
    [
        "../../escaped.csv",
        "..\\escaped.csv",
        "/etc/escaped.csv",
        ".hidden.csv",
        "a/../../escaped.csv",
        "x\x00.csv",
    ],
)
def test_traversal_in_an_upload_name_is_refused(server, name: str) -> None:
    with server.client() as client:
        before = (
            sorted(p.name for p in (server.workdir / "safeshare-projects").glob("*"))
            if (server.workdir / "safeshare-projects").exists()
            else []
        )
        answer = client.post("/api/projects", files={"data": (name, b"a,b\n1,2\n")})
        assert answer.status_code == 400, answer.text
        assert "not allowed" in answer.json()["error"]
    written = [p for p in server.workdir.parent.rglob("escaped.csv")] + list(Path("/etc").glob("escaped.csv"))
    assert written == []
    after = sorted(p.name for p in (server.workdir / "safeshare-projects").glob("*"))
    assert after == before  # no project, no incoming folder left behind


def test_uploads_are_size_limited(server) -> None:
    with server.client() as client:
        answer = client.post("/api/projects", files={"data": ("big.csv", b"a\n" + b"1\n" * (5 << 20))})
        assert answer.status_code == 413
    assert not list((server.workdir / "safeshare-projects").rglob("big.csv"))


def test_files_are_picked_only_under_the_work_directory(server) -> None:
    with server.client() as client:
        for path in ("../outside.csv", "/etc/passwd", "data.csv/../../x"):
            answer = client.post("/api/projects", data={"path": path})
            assert answer.status_code == 400, path
        assert client.post("/api/projects", data={"path": "data.csv"}).status_code == 201


def test_answers_carry_a_strict_content_security_policy_and_escape_names(server) -> None:
    with server.client() as client:
        created = client.post("/api/projects", data={"path": "data.csv", "name": "<script>alert(1)</script>"})
        pid = created.json()["id"]
        page = client.get(f"/p/{pid}/data")
        assert "<script>alert(1)</script>" not in page.text and "&lt;script&gt;" in page.text
        csp = page.headers["content-security-policy"]
        assert "script-src 'self'" in csp and "unsafe-inline" not in csp.split("style-src")[0]
        assert page.headers["x-content-type-options"] == "nosniff"


def test_the_server_binds_loopback_and_warns_for_another_address(tmp_path: Path) -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "safeshare",
            "ui",
            "--no-browser",
            "--port",
            "0",
            "--host",
            "0.0.0.0",
            "--workdir",
            str(tmp_path),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert process.stdout is not None and process.stderr is not None
        line = process.stdout.readline()
        assert line.startswith("safeshare ui: http://0.0.0.0:")
        assert "warning: serving on 0.0.0.0" in process.stderr.readline()
    finally:
        process.terminate()
        process.wait(20)


# --------------------------------------------------------------------------- API and runs
def test_a_run_through_the_api_gives_the_command_lines_release(server, finished, tmp_path: Path) -> None:
    project, run = finished
    with server.client() as client:
        state = client.get(f"/api/projects/{project}/runs/{run}").json()
        assert state["verified"] is True and state["exit"] == 0
        report = client.get(f"/api/projects/{project}/runs/{run}/report").json()
        assert report["verified"] and report["records_in"] == 32561
        files = client.get(f"/api/projects/{project}/runs/{run}/files").json()["files"]
        assert files == ["release.csv", "report.json", "report.html"]
        release = client.get(f"/api/projects/{project}/runs/{run}/files/release.csv").content
    config = server.workdir / "safeshare-projects" / project / f"run-{run}.yaml"
    out = tmp_path / "cli"
    done = subprocess.run(
        [sys.executable, "-m", "safeshare", "anonymize", str(config), "--out", str(out), "--quiet"],
        env=dict(os.environ, PYTHONPATH=str(ROOT / "src")),
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert (out / "release.csv").read_bytes() == release
    cli_report = json.loads((out / "report.json").read_text())
    for key in ("node", "levels", "suppressed_records", "information_loss", "risk", "class_size_histogram"):
        assert cli_report[key] == report[key], key


def test_the_lattice_and_risk_of_a_run(server, finished) -> None:
    project, run = finished
    with server.client() as client:
        report = client.get(f"/api/projects/{project}/runs/{run}/report").json()
        lattice = client.get(f"/api/projects/{project}/runs/{run}/lattice").json()
        assert lattice["size"] == len(lattice["nodes"]) == report["lattice_size"] == 7776
        assert lattice["optimum"] == report["node"]
        optimum = [n for n in lattice["nodes"] if n["status"] == "optimum"]
        assert [n["levels"] for n in optimum] == [report["node"]]
        key = ",".join(map(str, report["node"]))
        node = client.get(f"/api/projects/{project}/runs/{run}/nodes/{key}").json()
        assert (
            node["suppressed"] == report["suppressed_records"]
            and node["classes"] == report["equivalence_classes"]
        )
        assert node["risk"]["B"] == pytest.approx(report["risk"]["release"]["B"])
        risk = client.get(f"/api/projects/{project}/runs/{run}/risk").json()
        assert risk["risk"] == report["risk"]  # the Risk screen's figures are the report's
        assert risk["certificate"]["estimators"] == report["certificate"]["estimators"]
        assert client.get(f"/api/projects/{project}/runs/{run}/nodes/1,2").status_code == 404


def test_a_node_picked_in_explore_is_released_as_the_command_line_would(
    server, finished, tmp_path: Path
) -> None:
    """Explore's "Release this node": the run's own configuration takes ``algorithm: node`` with
    the node's levels (the project's is left alone: tests/test_ui_explore.py), the run releases
    exactly that node, verified, and its YAML reproduces the bytes. The node is picked in the
    module's finished Adult run (a one-off run changes neither that run nor the project's
    configuration; issue 36: it profiled and ran the same Adult project again)."""
    project, first = finished
    with server.client() as client:
        lattice = client.get(f"/api/projects/{project}/runs/{first}/lattice").json()
        candidates = sorted(
            (n for n in lattice["nodes"] if n["status"] == "anonymous" and n.get("loss") is not None),
            key=lambda n: n["loss"],
        )
        chosen = candidates[0]["levels"]  # the best qualifying node after the optimum
        assert chosen != lattice["optimum"]
        # the run's warnings that contradict its headline, acknowledged (issue 33): at this node
        # a kept sensitive column singles out more than 5 % of the records; the project's
        # configuration says so (the one-off run's snapshot, and so its YAML, carries it)
        config = yaml.safe_load(client.get(f"/api/projects/{project}/config").text)
        config["accept_warnings"] = [*config.get("accept_warnings", []), "kept-column-identifying"]
        saved = client.put(f"/api/projects/{project}/config", json=config)
        assert saved.status_code == 200, saved.text
        answer = client.post(
            f"/p/{project}/runs/{first}/release-node",
            data={"levels": ",".join(map(str, chosen))},
            follow_redirects=False,
        )
        assert answer.status_code == 303 and "run=" in answer.headers["location"], answer.text
        second = answer.headers["location"].split("run=")[1]
        state = wait_run(client, project, second)
        assert state["status"] == "done" and state["verified"] is True, state
        report = client.get(f"/api/projects/{project}/runs/{second}/report").json()
        assert report["node"] == chosen and report["verified"]
        release = client.get(f"/api/projects/{project}/runs/{second}/files/release.csv").content
        bad = client.post(
            f"/p/{project}/runs/{first}/release-node", data={"levels": "1,2"}, follow_redirects=False
        )
        assert bad.status_code == 303 and "error" in bad.headers["location"]
    config = server.workdir / "safeshare-projects" / project / f"run-{second}.yaml"
    assert "algorithm: node" in config.read_text()
    out = tmp_path / "cli"
    done = subprocess.run(
        [sys.executable, "-m", "safeshare", "anonymize", str(config), "--out", str(out), "--quiet"],
        env=dict(os.environ, PYTHONPATH=str(ROOT / "src")),
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert (out / "release.csv").read_bytes() == release


def test_cancel_stops_the_child_and_publishes_nothing(server) -> None:
    """Cancel inside the run's long phase (:data:`~tests.ui_helpers.SLOW_PHASE`), before anything
    is written: the child exits 143, nothing is published and no staging is left."""
    with server.client() as client:
        project = adult_project(client, config=slow_adult_yaml())["id"]
        wait_idle(client, project)
        started = client.post(f"/api/projects/{project}/runs", json={"kind": "anonymize"})
        assert started.status_code == 202, started.text
        run = started.json()["id"]
        deadline = time.monotonic() + 120
        while True:  # the child is in its long phase, before the release is written
            state = client.get(f"/api/projects/{project}/runs/{run}").json()
            assert state["status"] == "running", state
            if (state.get("progress") or {}).get("phase") == SLOW_PHASE:
                break
            assert time.monotonic() < deadline, state
            time.sleep(0.05)
        second = client.post(f"/api/projects/{project}/runs", json={"kind": "anonymize"})
        assert second.status_code == 409  # one run of a project at a time
        cancelled = client.post(f"/api/projects/{project}/runs/{run}/cancel")
        assert cancelled.status_code == 202
        state = wait_run(client, project, run)
    assert state["status"] == "cancelled", state
    assert state["exit"] == 143 and state["published"] is False, state
    assert state["error"] == "cancelled; nothing was published", state
    directory = server.workdir / "safeshare-projects" / project / "runs" / run
    assert not (directory / "out").exists()
    assert not [
        p for p in directory.iterdir() if p.name.startswith(".out.") and p.is_dir()
    ]  # no staging left


def test_bad_configurations_are_refused_before_a_child_starts(server) -> None:
    with server.client() as client:
        pid = client.post("/api/projects", data={"path": "data.csv"}).json()["id"]
        wait_idle(client, pid)
        answer = client.post(f"/api/projects/{pid}/runs", json={"kind": "anonymize"})
        assert answer.status_code == 400 and "error" in answer.json()
        put = client.put(
            f"/api/projects/{pid}/config", content=b"input: {path: data.csv}\ninput: {path: x}\n"
        )
        assert put.status_code == 400 and "duplicate" in put.json()["error"]
        assert client.get("/api/projects/nope").status_code == 404


def test_the_command_line_does_not_import_the_web_stack() -> None:
    """`safeshare --help` stays fast: Starlette, uvicorn and python-multipart load only in `ui`."""
    code = (
        "import sys, safeshare.cli; "
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'starlette', 'uvicorn', 'python_multipart'}))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        env=dict(os.environ, PYTHONPATH=str(ROOT / "src")),
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0 and done.stdout.strip() == "[]", done.stdout + done.stderr


def test_the_workbench_surveillance_is_the_commands(tmp_path: Path) -> None:
    """The Surveillance screen calls surveil_simulate/search themselves: volume 0 (which once
    unlocked the finest policy) is refused with the command's message, and the policy table equals
    ``safeshare.api.surveil_search``'s."""
    from contextlib import nullcontext

    from safeshare import api
    from safeshare.api import workbench as services
    from safeshare.errors import InputError

    class Quiet:
        wants_estimates = False

        def phase(self, name: str) -> object:
            return nullcontext()

        def note(self, message: str) -> None:
            pass

        def progress(self, what: str, total: int) -> object:
            return nullcontext(None)

    folder = ROOT / "examples" / "surveillance"
    settings = {
        "population": str(folder / "population.csv"),
        "cases": str(folder / "cases_long.csv"),
        "simulations": 30,
        "seed": 4,
        "policies": ["1C*e", "0Ase"],
    }
    with pytest.raises(InputError, match="0 is no case volume"):
        services.surveillance_simulate({**settings, "volumes": [0, 11]}, Quiet())  # type: ignore[arg-type]
    doc = services.surveillance_simulate({**settings, "volumes": [11, 300]}, Quiet())  # type: ignore[arg-type]
    assert [b["policy"] for b in doc["bands"]] == ["1C*e", "0Ase"]
    assert len(doc["bands"][0]["mean"]) == len(doc["periods"]) == len(doc["cases"])
    search = api.surveil_search(
        population_table=folder / "population.csv",
        regions=[doc["region"]],
        volumes=[11, 300],
        simulations=30,
        seed=4,
        plots=False,
    )
    assert [(p["volume"], p["policy"]) for p in doc["policies"]] == [
        (v["volume"], v["best"]) for v in search.to_dict()["volumes"]
    ]


def test_privacy_screen_sets_local_recoding_and_the_threshold_reason(server) -> None:
    """The Privacy screen writes ``local_recoding: {rounds: N}`` and ``threshold_reason`` into the
    configuration (what "copy as YAML" shows), and the Release screen shows the rounds."""
    with server.client() as client:
        project = adult_project(client)["id"]
        wait_idle(client, project)
        form = {"k": "5", "max_suppression": "5%", "metric": "prec", "algorithm": "ola", "engine": "memory"}
        saved = client.post(
            f"/p/{project}/privacy",
            data={
                **form,
                "local_recoding": "1",
                "rounds": "3",
                "threshold_reason": "ignored without a threshold",
            },
            follow_redirects=False,
        )
        assert saved.status_code == 303 and "error" not in saved.headers["location"], saved.headers
        config = client.get(f"/api/projects/{project}/config").text
        assert "local_recoding: {rounds: 3}" in config and "threshold_reason" not in config
        run = client.post(f"/api/projects/{project}/runs", json={"kind": "anonymize"}).json()["id"]
        state = wait_run(client, project, run)
        # the run's warnings that contradict its headline, acknowledged (issue 33): the locally
        # recoded release's kept hours-per-week singles out more than 5 % of its records
        assert (state["status"], state["exit"], state["acknowledge"]) == (
            "failed",
            2,
            ["kept-column-identifying"],
        ), state
        run = acknowledge(client, project, ["kept-column-identifying"])
        state = wait_run(client, project, run)
        assert state["status"] == "done" and state["verified"] is True, state
        report = client.get(f"/api/projects/{project}/runs/{run}/report").json()
        assert report["records_out"] == 32561 and report["local_recoding"]["rounds_run"] >= 1
        page = client.get(f"/p/{project}/release?run={run}").text
        assert 'data-testid="local-recoding-rounds"' in page
        client.post(
            f"/p/{project}/privacy",
            data={**form, "threshold": "0.09", "threshold_reason": "  the  agreement's figure "},
            follow_redirects=False,
        )
        config = client.get(f"/api/projects/{project}/config").text
        assert "threshold_reason: the agreement's figure" in config and "local_recoding" not in config


def test_a_refused_run_offers_the_boxes_and_the_acknowledged_run_publishes(server) -> None:
    """Issue 33 in the workbench: a run whose warnings contradict its headline is refused (exit
    2, nothing published) and its page offers "I acknowledge: CODE" for each code; ticking and
    posting them saves ``accept_warnings:`` in the project's configuration and the next run
    publishes, the certificate recording the acknowledgement."""
    lines = (ADULT_DIR / "adult.data").read_text().splitlines()[:400]
    files = [
        ("config", ("adult.yaml", ADULT_YAML.read_bytes())),
        ("data", ("adult.data", ("\n".join(lines) + "\n").encode())),
    ]
    files += [("hierarchies", (h.name, h.read_bytes())) for h in HIERARCHIES]
    with server.client() as client:
        created = client.post("/api/projects", files=files, data={"name": "adult-400"})
        assert created.status_code == 201, created.text
        project = created.json()["id"]
        wait_idle(client, project)
        refused = client.post(f"/api/projects/{project}/runs", json={"kind": "anonymize"}).json()["id"]
        state = wait_run(client, project, refused)
        code = "kept-column-identifying"  # on 400 records a kept column singles out > 5 %
        assert (state["status"], state["exit"], state["acknowledge"]) == ("failed", 2, [code]), state
        assert client.get(f"/api/projects/{project}/runs/{refused}/report").status_code == 404
        page = client.get(f"/p/{project}/run?run={refused}").text
        assert f'data-testid="acknowledge-{code}"' in page and 'data-testid="acknowledge-form"' in page
        run = acknowledge(client, project, [code])
        config = yaml.safe_load(client.get(f"/api/projects/{project}/config").text)
        assert config["accept_warnings"] == ["subgroup-suppressed", code]  # adult.yaml's kept
        state = wait_run(client, project, run)
        assert state["status"] == "done" and state["verified"] is True, state
        report = client.get(f"/api/projects/{project}/runs/{run}/report").json()
        assert code in [a["code"] for a in report["certificate"]["acknowledged"]]


def test_blank_cells_are_released_with_the_workbench_switch(server) -> None:
    """issue 30, item 3: a numeric QI with blank cells could not be released from the workbench
    (its "Missing" field dropped the empty token). The "Blank cells are missing values" box is
    the one switch: without it the builder refuses the blank and names the box; with it the
    release keeps the blanks as blanks, verified."""
    lines = ["age,sex"] + [f"{'' if i % 5 == 0 else 20 + i % 40},{'FM'[i % 2]}" for i in range(200)]
    (server.workdir / "blanks.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    builder = {"column": "age", "builder": "{type: intervals, widths: [10, 20]}"}
    empty = {"file": ("none.csv", b"")}
    with server.client() as client:
        pid = client.post("/api/projects", data={"path": "blanks.csv"}).json()["id"]
        wait_idle(client, pid)
        client.post(f"/p/{pid}/roles", data={"role-age": "quasi", "role-sex": "insensitive"})
        answer = client.post(f"/p/{pid}/hierarchy", data=builder, files=empty, follow_redirects=False)
        assert answer.status_code == 303
        assert "Blank cells are missing values" in httpx.URL(answer.headers["location"]).params["error"]
        saved = client.post(
            f"/p/{pid}/input",
            data={"header": "yes", "missing": "", "blank_missing": "yes"},
            follow_redirects=False,
        )
        assert saved.status_code == 303
        assert yaml.safe_load(client.get(f"/api/projects/{pid}/config").text)["input"]["missing"] == [""]
        wait_idle(client, pid)
        assert 'name="blank_missing" value="yes"' in client.get(f"/p/{pid}/data").text
        answer = client.post(f"/p/{pid}/hierarchy", data=builder, files=empty, follow_redirects=False)
        assert "error" not in answer.headers["location"], answer.headers["location"]
        run = client.post(f"/api/projects/{pid}/runs", json={"kind": "anonymize"}).json()["id"]
        state = wait_run(client, pid, run)
        assert state["status"] == "done" and state["verified"] is True, state
        release = client.get(f"/api/projects/{pid}/runs/{run}/files/release.csv").text.splitlines()
    ages = [line.split(",")[0] for line in release[1:]]
    assert ages.count("") == 40 and len(ages) + 0 <= 200
