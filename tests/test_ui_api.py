"""The workbench through Starlette's TestClient (in-process; runs still go to real child
processes): issue 30, items 10 to 12 and the attack run's list. Each test fails on the main
branch before this work."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from safeshare.ui.app import Context, Settings, create_app

with __import__("warnings").catch_warnings():  # Starlette's notice about httpx, not about us
    __import__("warnings").simplefilter("ignore")
    from starlette.testclient import TestClient

TOKEN = "test-token-" + "x" * 32
BASE = "http://127.0.0.1:8765"
PEOPLE = "age,sex,zip,diagnosis\n" + "".join(
    f"{20 + i % 40},{'FM'[i % 2]},{['12345', '12346', '54321'][i % 3]},{['flu', 'cold'][i % 2]}\n"
    for i in range(120)
)
AGE = "".join(f"{a};{a // 10 * 10}s;*\n" for a in range(20, 60))
ZIP = "12345;123**;*\n12346;123**;*\n54321;543**;*\n"
CONFIG = """\
input: {path: data/people.csv}
attributes:
  age: {role: quasi, hierarchy: hierarchies/age.csv}
  sex: {role: quasi, hierarchy: {type: masking}}
  zip: {role: quasi, hierarchy: hierarchies/zip.csv}
  diagnosis: {role: sensitive}
privacy: {k-anonymity: {k: 3}}
max_suppression: 0.05
"""


@dataclass
class Bench:
    client: TestClient
    ctx: Context
    workdir: Path
    outside: Path

    def project(self, config: str = CONFIG) -> str:
        """A project from the configuration, its data and its two hierarchy files (profiled)."""
        return self.upload(
            [
                ("config", ("people.yaml", config.encode())),
                ("data", ("people.csv", PEOPLE.encode())),
                ("hierarchies", ("age.csv", AGE.encode())),
                ("hierarchies", ("zip.csv", ZIP.encode())),
            ]
        )

    def upload(self, files: list[tuple[str, tuple[str, bytes]]]) -> str:
        """A project from uploaded ``(field, (name, bytes))`` files, profiled; its id."""
        answer = self.client.post("/api/projects", files=files)
        assert answer.status_code == 201, answer.text
        pid = str(answer.json()["id"])
        self.idle(pid)
        return pid

    def idle(self, pid: str, timeout: float = 120) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            runs = self.client.get(f"/api/projects/{pid}/runs").json()["runs"]
            if all(r["status"] != "running" and r.get("lattice") != "exploring" for r in runs):
                return list(runs)
            time.sleep(0.1)
        raise AssertionError("runs still going")

    def directory(self, pid: str) -> Path:
        return self.workdir / "safeshare-projects" / pid


@contextmanager
def open_bench(tmp_path: Path) -> Iterator[Bench]:
    """A workbench over ``tmp_path``: the app, its TestClient and the runs' manager (shut down
    on leaving)."""
    workdir = tmp_path / "work"
    outside = tmp_path / "outside"
    workdir.mkdir()
    outside.mkdir()
    (outside / "secret.csv").write_text(PEOPLE)
    (outside / "secret-age.csv").write_text(AGE)
    (outside / "accounts").write_text("root:x:0:0:root:/root:/bin/bash\n")
    app = create_app(Settings(workdir=workdir, token=TOKEN, host="127.0.0.1", port=8765, max_upload=8 << 20))
    ctx: Context = app.app.state.ctx
    client = TestClient(app, base_url=BASE, headers={"Authorization": f"Bearer {TOKEN}"})
    try:
        with client:
            yield Bench(client, ctx, workdir, outside)
    finally:
        ctx.runs.shutdown()


@pytest.fixture()
def bench(tmp_path: Path) -> Iterator[Bench]:
    with open_bench(tmp_path) as made:
        yield made


def _one_line_error(answer: Any, status: int = 400) -> str:
    assert answer.status_code == status, (answer.status_code, answer.text)
    message = answer.json()["error"]
    assert isinstance(message, str) and "\n" not in message and "Traceback" not in message
    return message


# --------------------------------------------------------------------------- item 11: confinement
KEYS = {
    "input": ("input.path", lambda p: CONFIG.replace("data/people.csv", p)),
    "hierarchy file": ("attributes.age.hierarchy", lambda p: CONFIG.replace("hierarchies/age.csv", p)),
    "builder file": (
        "attributes.sex.hierarchy",
        lambda p: CONFIG.replace("{type: masking}", f"{{type: file, path: '{p}'}}"),
    ),
    "key_file": ("key_file", lambda p: CONFIG + f"key_file: '{p}'\n"),
    "ledger": ("ledger", lambda p: CONFIG + f"ledger: '{p}'\napproved_by: someone\n"),
    "small-cells population": (
        "privacy.small-cells.population",
        lambda p: CONFIG.replace(
            "privacy: {k-anonymity: {k: 3}}",
            f"privacy: {{k-anonymity: {{k: 3}}, small-cells: {{population: '{p}'}}}}",
        ),
    ),
}
TARGETS = {"input": "secret.csv", "hierarchy file": "secret-age.csv", "small-cells population": "secret.csv"}


def _outside(bench: Bench, key: str, form: str) -> str:
    """A path naming a file outside the work directory, as seen from a project's folder: absolute,
    climbing with ``..``, or through a symbolic link inside the work directory."""
    target = bench.outside / TARGETS.get(key, "accounts")
    if form == "absolute":
        return str(target)
    if form == "dotdot":
        return f"../../../outside/{target.name}"  # work/safeshare-projects/<id>/ -> tmp/outside
    link = bench.workdir / f"link-{target.name}"
    if not link.is_symlink():
        link.symlink_to(target)
    return f"../../{link.name}"


FORMS = ["absolute", "dotdot", "symlink"]


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("key", list(KEYS))
def test_an_uploaded_configuration_naming_a_file_outside_the_workdir_is_refused(
    bench: Bench, key: str, form: str
) -> None:
    where, config = KEYS[key]
    files = [("config", ("people.yaml", config(_outside(bench, key, form)).encode()))]
    if key != "input":  # an uploaded data file replaces the configuration's input
        files += [("data", ("people.csv", PEOPLE.encode())), ("hierarchies", ("zip.csv", ZIP.encode()))]
    answer = bench.client.post("/api/projects", files=files)
    message = _one_line_error(answer)
    assert message.startswith(f"{where}: ") and "not under the work directory" in message, message
    assert not [p for p in (bench.workdir / "safeshare-projects").iterdir() if not p.name.startswith(".")]


@pytest.fixture(scope="module")
def refusing(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Bench, str]]:
    """One project the refused PUTs (every key and form) and the refused Surveillance forms aim
    at: a PUT case checks that its refusal left the configuration as it was, so the cases need
    not profile a project apiece (25 profiling children before; issue 36)."""
    with open_bench(tmp_path_factory.mktemp("put")) as shared:
        yield shared, shared.project()


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("key", list(KEYS))
def test_a_put_configuration_naming_a_file_outside_the_workdir_is_refused(
    refusing: tuple[Bench, str], key: str, form: str
) -> None:
    bench, pid = refusing
    before = bench.client.get(f"/api/projects/{pid}/config").text
    where, config = KEYS[key]
    text = config(_outside(bench, key, form))
    message = _one_line_error(bench.client.put(f"/api/projects/{pid}/config", content=text.encode()))
    assert message.startswith(f"{where}: "), message
    as_json = bench.client.put(
        f"/api/projects/{pid}/config",
        content=json.dumps(__import__("yaml").safe_load(text)).encode(),
        headers={"content-type": "application/json"},
    )
    assert _one_line_error(as_json).startswith(f"{where}: ")
    assert bench.client.get(f"/api/projects/{pid}/config").text == before


@pytest.mark.parametrize("key", list(KEYS))
def test_a_configuration_edited_on_disk_starts_no_run_and_no_child_reads_outside(
    bench: Bench, key: str
) -> None:
    """Whatever wrote config.yaml, a run that names an outside file is refused before a child
    starts (400), and the child itself refuses such a job before it reads anything."""
    from safeshare.errors import InputError
    from safeshare.ui.worker import FileMonitor, run_job

    pid = bench.project()
    directory = bench.directory(pid)
    where, config = KEYS[key]
    (directory / "config.yaml").write_text(config(_outside(bench, key, "absolute")))
    runs_before = sorted(p.name for p in (directory / "runs").iterdir())
    answer = bench.client.post(f"/api/projects/{pid}/runs", json={"kind": "anonymize"})
    assert _one_line_error(answer).startswith(f"{where}: ")
    assert sorted(p.name for p in (directory / "runs").iterdir()) == runs_before
    for page in ("privacy", "run"):  # the screens name the problem; they do not read the file
        assert "not under the work directory" in bench.client.get(f"/p/{pid}/{page}").text
    (directory / "run-x.yaml").write_text(config(_outside(bench, key, "absolute")))
    run_dir = directory / "runs" / "x"
    run_dir.mkdir()
    job = {
        "kind": "anonymize",
        "project": str(directory),
        "workdir": str(bench.workdir),
        "params": {"config": "run-x.yaml"},
    }
    with pytest.raises(InputError, match="not under the work directory"):
        run_job(run_dir, job, FileMonitor(run_dir / "progress.json"))
    assert not (run_dir / "out").exists()


def test_a_file_builder_or_a_hierarchy_outside_the_workdir_is_never_read(bench: Bench) -> None:
    """The system's account file appeared as hierarchy labels on main."""
    pid = bench.project()
    directory = bench.directory(pid)
    for path in (
        str(bench.outside / "accounts"),
        "../../../outside/accounts",
        _outside(bench, "x", "symlink"),
    ):
        answer = bench.client.post(
            f"/p/{pid}/hierarchy",
            data={"column": "sex", "builder": f"{{type: file, path: '{path}'}}"},
            follow_redirects=False,
        )
        assert answer.status_code == 303 and "error=" in answer.headers["location"], answer.headers
        assert "work%20directory" in answer.headers["location"]
        assert "masking" in (directory / "config.yaml").read_text()  # not saved
    (directory / "config.yaml").write_text(
        CONFIG.replace("{type: masking}", f"'{bench.outside / 'accounts'}'")
    )
    page = bench.client.get(f"/p/{pid}/hierarchy/sex").text
    assert "root:x:0:0" not in page and "not under the work directory" in page


def test_paths_that_climb_but_stay_inside_the_workdir_are_accepted(bench: Bench) -> None:
    shared = bench.workdir / "shared"
    shared.mkdir()
    (shared / "age.csv").write_text(AGE)
    (bench.workdir / "age-link.csv").symlink_to(shared / "age.csv")
    for path in ("../../shared/age.csv", "../../age-link.csv", str(shared / "age.csv")):
        pid = bench.project(CONFIG.replace("hierarchies/age.csv", path))
        assert bench.client.get(f"/p/{pid}/hierarchy/age").status_code == 200
        assert "20s" in bench.client.get(f"/p/{pid}/hierarchy/age").text


# --------------------------------------------------------------------------- item 10: cancel
def test_cancel_after_publication_says_what_was_published(
    bench: Bench, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SIGTERM (the server stopping) landing after the release was published, while the lattice
    is explored: once the run said "cancelled; nothing was published" while the Release screen
    offered the verified release. Now the run is done, and its lattice says what was cut short."""
    from safeshare.api import workbench
    from safeshare.ui import worker

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

    def cancelled(*args: object, **kwargs: object) -> object:
        os.kill(os.getpid(), signal.SIGTERM)  # the handler raises Interrupted right here
        raise AssertionError("the signal did not interrupt")

    monkeypatch.setattr(workbench, "lattice_view", cancelled)
    monkeypatch.setattr("safeshare.io._published", [])
    assert worker.main([str(run_dir)]) == 143
    state = bench.client.get(f"/api/projects/{pid}/runs/{run_dir.name}").json()
    # the release was published and verified before the lattice for Explore (issue 35): the run
    # is done, its lattice cancelled, and it says so in the command line's words
    assert state["status"] == "done" and state["verified"] is True and state["exit"] == 0
    assert state["lattice"] == "cancelled"
    assert state["lattice_error"] == (
        "the lattice for Explore was not finished: "
        f"cancelled after the new output was published to {run_dir / 'out'}"
    )
    assert "nothing was published" not in json.dumps(state)
    explore = bench.client.get(f"/p/{pid}/explore?run={run_dir.name}").text
    assert "the lattice for Explore was not finished" in explore
    run_page = bench.client.get(f"/p/{pid}/run?run={run_dir.name}").text
    assert "release verified" in run_page and "nothing was published" not in run_page
    release_page = bench.client.get(f"/p/{pid}/release?run={run_dir.name}").text
    assert "release verified" in release_page and 'data-testid="download-release"' in release_page


def test_cancel_before_publication_says_nothing_was_published(
    bench: Bench, monkeypatch: pytest.MonkeyPatch
) -> None:
    from safeshare.api import workbench
    from safeshare.ui import worker

    pid = bench.project()
    directory = bench.directory(pid)
    (directory / "run-x.yaml").write_text((directory / "config.yaml").read_text())
    run_dir = directory / "runs" / "20260101-000000-abcdee"
    run_dir.mkdir()
    job = {
        "kind": "anonymize",
        "project": str(directory),
        "workdir": str(bench.workdir),
        "params": {"config": "run-x.yaml"},
    }
    (run_dir / "job.json").write_text(json.dumps(job))

    def cancelled(*args: object, **kwargs: object) -> object:
        os.kill(os.getpid(), signal.SIGTERM)
        raise AssertionError("the signal did not interrupt")

    monkeypatch.setattr(workbench, "check_config", cancelled)
    monkeypatch.setattr("safeshare.io._published", [])
    assert worker.main([str(run_dir)]) == 143
    state = json.loads((run_dir / "state.json").read_text())
    assert state["error"] == "cancelled; nothing was published" and state["published"] is False
    assert not (run_dir / "out").exists()


# --------------------------------------------------------------------------- item 12: hierarchy uploads
def _no_parsing_here(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make every hierarchy reader fail in this process (where the TestClient's server runs)."""
    import safeshare.hierarchy.builders as builders
    import safeshare.hierarchy.io as hio

    def refuse(*args: object, **kwargs: object) -> object:
        raise AssertionError("a hierarchy was parsed in the server process")

    for module, name in ((hio, "parse_arx_csv"), (hio, "read_arx_csv"), (hio, "read_arx_rows")):
        monkeypatch.setattr(module, name, refuse)
    monkeypatch.setattr(builders, "read_arx_rows", refuse, raising=False)
    monkeypatch.setattr(builders, "read_arx_csv", refuse, raising=False)
    monkeypatch.setattr(builders, "builder_from_spec", refuse)


def test_a_hierarchy_is_checked_and_previewed_in_a_child_never_in_the_server(
    bench: Bench, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On main the upload was parsed in the event loop (153 MB: 3.8 GB and every request
    blocked for 47 s); now the server's process never parses one."""
    pid = bench.project()
    _no_parsing_here(monkeypatch)
    answer = bench.client.post(
        f"/p/{pid}/hierarchy",
        data={"column": "age"},
        files={"file": ("age2.csv", AGE.encode())},
        follow_redirects=False,
    )
    assert answer.status_code == 303 and "notice=" in answer.headers["location"], answer.headers
    assert (bench.directory(pid) / "hierarchies" / "age2.csv").read_text() == AGE
    page = bench.client.get(f"/p/{pid}/hierarchy/age").text
    assert "20s" in page and "preview-error" not in page
    wrong = bench.client.post(
        f"/p/{pid}/hierarchy",
        data={"column": "age"},
        files={"file": ("bad.csv", b"20;20s\n21\n")},
        follow_redirects=False,
    )
    assert (
        "error=" in wrong.headers["location"]
        and not (bench.directory(pid) / "hierarchies" / "bad.csv").exists()
    )
    builder = bench.client.post(
        f"/p/{pid}/hierarchy", data={"column": "zip", "builder": "{type: masking}"}, follow_redirects=False
    )
    assert "notice=" in builder.headers["location"], builder.headers


def test_a_hierarchy_file_over_the_limit_is_refused_with_its_size(bench: Bench) -> None:
    pid = bench.project()
    bench.ctx.settings.max_hierarchy = 1000
    big = AGE * 10
    answer = bench.client.post(
        f"/p/{pid}/hierarchy",
        data={"column": "age"},
        files={"file": ("big.csv", big.encode())},
        follow_redirects=False,
    )
    location = __import__("urllib.parse").parse.unquote(answer.headers["location"])
    assert f"{len(big):,} bytes, more than the workbench's limit of 1,000" in location, location
    assert not (bench.directory(pid) / "hierarchies" / "big.csv").exists()
    assert not list((bench.workdir / "safeshare-projects").glob(".incoming-*"))


def _children(marker: str) -> list[int]:
    """The pids of this process's children whose command line holds ``marker``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == os.getpid() and marker in cmdline:
            found.append(int(entry.name))
    return found


def _descendants() -> set[int]:
    """The pids of this process's descendants (children, and their children: the fork server's)."""
    parent: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except OSError:
                continue
    found: set[int] = set()
    frontier = {os.getpid()}
    while frontier:
        frontier = {p for p, pp in parent.items() if pp in frontier} - found
        found |= frontier
    return found


def test_other_requests_are_served_while_a_large_hierarchy_is_checked(bench: Bench) -> None:
    """While the child reads a large hierarchy (its column's values not profiled: the whole
    file), the server answers other requests: one is answered before the upload is."""
    pid = bench.project()
    large = "".join(f"v{i:07d};g{i // 100:05d};*\n" for i in range(400_000))  # about 8 MB
    events: list[str] = []

    def upload() -> None:
        answer = bench.client.post(
            f"/p/{pid}/hierarchy",
            data={"column": "diagnosis"},
            files={"file": ("large.csv", large.encode())},
            follow_redirects=False,
        )
        events.append(f"upload {answer.status_code}")

    (bench.directory(pid) / "values.json").write_text("{}")  # no values known: read whole
    before = _descendants()  # the fork server and its idle state
    thread = threading.Thread(target=upload)
    thread.start()
    deadline = time.monotonic() + 120
    # the check's child: a fresh interpreter (--hierarchy), or a fork of the fork server
    while (
        not (_children("--hierarchy") or _descendants() - before)
        and thread.is_alive()
        and time.monotonic() < deadline
    ):
        time.sleep(0.01)
    assert thread.is_alive(), "the upload ended before a child checked it"
    answer = bench.client.get("/api/projects")
    events.append(f"list {answer.status_code}")
    thread.join(300)
    assert events == ["list 200", "upload 303"], events


# --------------------------------------------------------------------------- the attack run's list
def test_the_token_link_redirects_only_to_this_server(bench: Bench) -> None:
    """``http://127.0.0.1:PORT//evil.example?token=T`` redirected to ``//evil.example``, which a
    browser reads as another host (an open redirect carrying a fresh session cookie)."""
    anonymous = TestClient(bench.client.app, base_url=BASE)
    for path, expected in (
        ("//evil.example/", "/evil.example/"),
        ("//evil.example", "/evil.example"),
        ("/\\evil.example", "/evil.example"),
        ("///evil.example/x?a=1", "/evil.example/x?a=1"),
        ("/p/abc/data", "/p/abc/data"),
    ):
        sep = "&" if "?" in path else "?"
        answer = anonymous.get(f"{BASE}{path}{sep}token={TOKEN}", follow_redirects=False)
        assert answer.status_code == 303, path
        location = answer.headers["location"]
        assert location == expected, (path, location)
        assert not location.startswith("//") and "\\" not in location


def _finished_run(bench: Bench) -> tuple[str, str]:
    pid = bench.project()
    started = bench.client.post(f"/api/projects/{pid}/runs", json={"kind": "anonymize"})
    assert started.status_code == 202, started.text
    rid = started.json()["id"]
    (state,) = [r for r in bench.idle(pid, 300) if r["id"] == rid]
    assert state["status"] == "done" and state["verified"], state
    return pid, rid


def test_odd_parameters_and_bodies_are_4xx_with_one_line(bench: Bench) -> None:
    """``limit=abc`` and odd JSON bodies were 500s with a traceback in the server's log."""
    pid, rid = _finished_run(bench)
    for limit in ("abc", "1e9", "9" * 50, "-"):
        answer = bench.client.get(f"/p/{pid}/explore?run={rid}&limit={limit}")
        assert answer.status_code == 400 and answer.text.startswith("error: limit: expected a whole number")
        assert len(answer.text.strip().splitlines()) == 1
    assert bench.client.get(f"/p/{pid}/explore?run={rid}&limit=5").status_code == 200
    deep = b'{"a": ' + b"[" * 600 + b"]" * 600 + b"}"  # parses, but YAML cannot write it back
    bodies = [b"[1, 2]", b'"text"', b"null", b"3", b"{", b"\xff\xfe", b"[" * 100_000 + b"]" * 100_000, deep]
    for body in bodies:
        _one_line_error(bench.client.post(f"/api/projects/{pid}/runs", content=body))
        put = bench.client.put(
            f"/api/projects/{pid}/config", content=body, headers={"content-type": "application/json"}
        )
        _one_line_error(put)
    for kind in ([1], {"a": 1}, None, 7):
        message = _one_line_error(bench.client.post(f"/api/projects/{pid}/runs", json={"kind": kind}))
        assert "expected anonymize, estimate or profile" in message
    _one_line_error(bench.client.put(f"/api/projects/{pid}/config", content=b"- a\n- b\n"))
    garbage = bench.client.post(
        "/api/projects", content=b"garbage", headers={"content-type": "multipart/form-data; boundary=zz"}
    )
    assert "not a valid multipart/form-data body" in _one_line_error(garbage)
    assert "not a usable path" in _one_line_error(bench.client.post("/api/projects", data={"path": "a\x00b"}))
    for levels in ("a,b", "1", "9,9,9,9", ",,,"):
        answer = bench.client.get(f"/api/projects/{pid}/runs/{rid}/nodes/{levels}")
        assert 400 <= answer.status_code < 500 and "error" in answer.json(), (levels, answer.text)
        fragment = bench.client.get(f"/p/{pid}/runs/{rid}/node?levels={levels}")
        assert 400 <= fragment.status_code < 500, levels


@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [
        ("k", "abc", "k: expected a whole number, got 'abc'"),
        ("simulations", "1e400", "simulations: expected a whole number"),
        ("seed", "9" * 5000, "seed: expected a whole number"),
        ("threshold", "inf", "threshold: expected a finite number"),
        ("quantile", "x", "quantile: expected a number"),
        ("volumes", "1,x,3", "volumes: expected a whole number, got 'x'"),
        (
            "population",
            "../../etc/passwd",
            "population table: '../../etc/passwd' is not under the work directory",
        ),
    ],
)
def test_the_surveillance_form_answers_in_its_own_words(
    refusing: tuple[Bench, str], field: str, value: str, expected: str
) -> None:
    """On main a bad field answered with Python's own text ("invalid literal for int() with base 10")."""
    from urllib.parse import unquote

    bench, pid = refusing
    (bench.workdir / "population.csv").write_text("region,age,count\nr1,20,100\n")
    (bench.workdir / "cases.csv").write_text("region,date,new_cases\nr1,2020-01-01,3\n")
    form = {"population": "population.csv", "cases": "cases.csv", field: value}
    answer = bench.client.post(f"/p/{pid}/surveillance", data=form, follow_redirects=False)
    location = unquote(answer.headers["location"])
    assert answer.status_code == 303 and expected in location, location
    for internal in ("invalid literal", "could not convert", "base 10", "Exceeds the limit", "OverflowError"):
        assert internal not in location


def test_the_workbench_reaps_its_children(bench: Bench) -> None:
    """A finished child stayed a zombie until a page happened to poll it."""
    pid = bench.project()
    (run,) = bench.ctx.runs._runs.values()
    assert run.process is not None
    pid_of_child = run.process.pid
    deadline = time.monotonic() + 60
    state = "?"
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid_of_child}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:
            state = "gone"
            break
        time.sleep(0.05)
    assert state == "gone", f"child {pid_of_child} is in state {state} (Z: a zombie)"
    assert bench.client.get(f"/api/projects/{pid}").json()["runs"][0]["status"] == "done"


def test_a_new_run_removes_the_staging_folders_of_killed_runs(bench: Bench) -> None:
    """Each run publishes into its own runs/<run>/out, so a staging folder a SIGKILL left there
    was never met again; the next run of the project removes it (a live run's is kept)."""
    import fcntl

    pid = bench.project()
    runs = bench.directory(pid) / "runs"
    killed = runs / "20250101-000000-aaaaaa"
    alive = runs / "20250101-000000-bbbbbb"
    for directory in (killed, alive):
        stage = directory / ".out.staging-abcd1234"
        stage.mkdir(parents=True)
        (stage / "release.csv").write_text("unverified\n")
    lock = os.open(alive / ".out.lock", os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)  # a live run holds its lock
        started = bench.client.post(f"/api/projects/{pid}/runs", json={"kind": "profile"})
        assert started.status_code == 202, started.text
        bench.idle(pid)
        assert not (killed / ".out.staging-abcd1234").exists()
        assert (alive / ".out.staging-abcd1234" / "release.csv").exists()
    finally:
        os.close(lock)
