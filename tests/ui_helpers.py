"""A real ``safeshare ui`` server for the tests (a child process, as a user starts it)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import yaml

ROOT = Path(__file__).resolve().parent.parent
ADULT_DIR = ROOT / "examples" / "adult"
ADULT_YAML = ADULT_DIR / "adult.yaml"
HIERARCHIES = sorted((ADULT_DIR / "hierarchies").glob("*.csv"))


@dataclass
class Server:
    process: subprocess.Popen[str]
    url: str
    base: str
    token: str
    port: int
    workdir: Path

    def client(self, **kwargs: object) -> httpx.Client:
        """A client holding the token as a bearer header (a script's way in)."""
        headers = {"Authorization": f"Bearer {self.token}"}
        return httpx.Client(base_url=self.base, headers=headers, timeout=30, **kwargs)  # type: ignore[arg-type]


@contextmanager
def running_server(workdir: Path, *extra: str) -> Iterator[Server]:
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
            "--workdir",
            str(workdir),
            *extra,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline().strip()
        assert line.startswith("safeshare ui: http://127.0.0.1:"), (
            line,
            process.stderr.read() if process.stderr else "",
        )
        url = line.removeprefix("safeshare ui: ")
        base, _, token = url.partition("/?token=")
        yield Server(process, url, base, token, int(base.rsplit(":", 1)[1]), workdir)
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


#: five of Adult's nine quasi-identifiers: a lattice of 108 nodes instead of 7,776. A page's
#: markup is the same for both (every node is drawn up to 10,000), and a browser test that checks
#: the markup (axe-core, the keyboard) needs no more; the full lattice is in ``make test-all``.
SMALL_LATTICE_QIS = ("age", "education", "marital-status", "race", "sex")


def adult_yaml(quasi: tuple[str, ...] | None = None) -> bytes:
    """The Adult demo's configuration; with ``quasi``, only those columns are quasi-identifiers
    (the demo's other quasi-identifiers are dropped, as identifying), and the warning that the
    kept sensitive columns single records out in the coarser classes is acknowledged."""
    if quasi is None:
        return ADULT_YAML.read_bytes()
    config = yaml.safe_load(ADULT_YAML.read_text())
    for name, spec in config["attributes"].items():
        if spec.get("role") == "quasi" and name not in quasi:
            config["attributes"][name] = {"role": "identifying"}
    config["accept_warnings"] = [*config.get("accept_warnings", []), "kept-column-identifying"]
    return yaml.safe_dump(config, sort_keys=False).encode()


#: The phase of :func:`slow_adult_yaml`'s run that takes about 8 s of CPU before anything is
#: written (the suppression / loss curve, every point with a risk estimate), against the second's
#: fraction of the demo's search: a Cancel sent inside it lands before the release exists. (With
#: the demo's configuration the run was sometimes published and verified before the cancel
#: arrived, on a loaded machine.)
SLOW_PHASE = "suppression / loss trade-off"


def slow_adult_yaml() -> bytes:
    """The Adult demo's configuration with a B threshold (``risk``, ``hypothesis_test``), whose
    run spends :data:`SLOW_PHASE` before writing anything: the cancel tests' run."""
    config = yaml.safe_load(ADULT_YAML.read_text())
    config["privacy"]["risk"] = {"measure": "B", "threshold": 0.0001, "estimator": "hypothesis_test"}
    return yaml.safe_dump(config, sort_keys=False).encode()


def adult_project(
    client: httpx.Client, quasi: tuple[str, ...] | None = None, config: bytes | None = None
) -> dict:
    """A project from the Adult demo's configuration, data and hierarchy files (the JSON API);
    ``quasi``: as :func:`adult_yaml`; ``config``: another configuration of the same files."""
    files = [
        ("config", ("adult.yaml", adult_yaml(quasi) if config is None else config)),
        ("data", ("adult.data", (ADULT_DIR / "adult.data").read_bytes())),
    ]
    files += [("hierarchies", (h.name, h.read_bytes())) for h in HIERARCHIES]
    answer = client.post("/api/projects", files=files, data={"name": "adult"})
    assert answer.status_code == 201, answer.text
    return answer.json()


def wait_run(client: httpx.Client, project: str, run: str, timeout: float = 300) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state = client.get(f"/api/projects/{project}/runs/{run}").json()
        if state["status"] != "running" and state.get("lattice") != "exploring":
            return state
        time.sleep(0.1)
    raise AssertionError(f"run {run} still running after {timeout} s")


def wait_idle(client: httpx.Client, project: str, timeout: float = 120) -> None:
    """Wait for every run of the project (the profile run a new project starts) to end."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        runs = client.get(f"/api/projects/{project}/runs").json()["runs"]
        if all(r["status"] != "running" and r.get("lattice") != "exploring" for r in runs):
            return
        time.sleep(0.1)
    raise AssertionError("runs still going")
