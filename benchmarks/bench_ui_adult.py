"""A workbench run beside the command line's on Adult (issue 35: at most 1.2x the CLI's wall time).

Starts ``safeshare ui`` as a user does and creates a project from ``examples/adult``
(``adult.yaml``, ``adult.data``, its hierarchies) through the JSON API, then, alternately, in the
same run of this script:

* the workbench: ``POST /api/projects/<p>/runs {"kind": "anonymize"}`` and polling until the run
  is done (what a person waits for: the published, verified release; Explore's lattice is
  evaluated after it in the run's child, and its extra time is printed and waited for);
* the command line: ``safeshare anonymize examples/adult/adult.yaml --out DIR`` as a process.

Each ``--repeat`` times; it prints every wall time, the medians and their ratio.

    PYTHONPATH=src python benchmarks/bench_ui_adult.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
ADULT = ROOT / "examples" / "adult"
TARGET = 1.2


def _server(workdir: Path, env: dict[str, str]) -> tuple[subprocess.Popen[str], httpx.Client]:
    command = [sys.executable, "-m", "safeshare", "ui", "--no-browser", "--port", "0", "--json"]
    server = subprocess.Popen(
        [*command, "--workdir", str(workdir)], stdout=subprocess.PIPE, text=True, env=env
    )
    assert server.stdout is not None
    url = json.loads(server.stdout.readline())["url"]
    base, _, token = url.partition("/?token=")
    return server, httpx.Client(base_url=base, headers={"Authorization": f"Bearer {token}"}, timeout=120)


def _idle(client: httpx.Client, project: str) -> None:
    while any(r["status"] == "running" for r in client.get(f"/api/projects/{project}/runs").json()["runs"]):
        time.sleep(0.2)


def _workbench_run(client: httpx.Client, project: str) -> tuple[float, float, str]:
    """One run: its wall time, the time after its release was published, its end state."""
    start = time.perf_counter()
    run = client.post(f"/api/projects/{project}/runs", json={"kind": "anonymize"}).json()["id"]
    phases: list[tuple[str, float]] = []
    end = None
    while True:
        state = client.get(f"/api/projects/{project}/runs/{run}").json()
        phase = str((state.get("progress") or {}).get("phase") or "")
        if phase and (not phases or phases[-1][0] != phase):
            phases.append((phase, time.perf_counter() - start))
        if end is None and state["status"] != "running":
            end = time.perf_counter()  # the release is published and verified: the person's wait
        if end is not None and state.get("lattice") != "exploring":
            break  # Explore's lattice, evaluated after the release (waited for: no overlap)
        time.sleep(0.05)
    ready = time.perf_counter()
    print("  phases (seconds after the request): " + ", ".join(f"{p} {t:.2f}" for p, t in phases))
    status = f"{state['status']} (verified {state.get('verified')}, lattice {state.get('lattice')})"
    assert end is not None
    return end - start, ready - end, status


def _cli_run(out: Path, env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "safeshare", "anonymize", str(ADULT / "adult.yaml"), "--out", str(out)],
        check=True,
        env=env,
        stdout=subprocess.DEVNULL,
    )
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp) / "work"
        workdir.mkdir()
        server, client = _server(workdir, env)
        try:
            files = [
                ("hierarchies", (h.name, h.read_bytes()))
                for h in sorted((ADULT / "hierarchies").glob("*.csv"))
            ]
            files.append(("config", ("adult.yaml", (ADULT / "adult.yaml").read_bytes())))
            files.append(("data", ("adult.data", (ADULT / "adult.data").read_bytes())))
            answer = client.post("/api/projects", files=files, data={"name": "adult"})
            assert answer.status_code == 201, answer.text
            project = answer.json()["id"]
            _idle(client, project)
            ui: list[float] = []
            cli: list[float] = []
            for i in range(args.repeat):
                wall, after, status = _workbench_run(client, project)
                ui.append(wall)
                print(
                    f"workbench run {i + 1}: {wall:.2f} s wall to the release; "
                    f"Explore's lattice {after:.2f} s later; {status}"
                )
                cli.append(_cli_run(Path(tmp) / f"cli-{i}", env))
                print(f"command line {i + 1}: {cli[-1]:.2f} s wall")
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(30)
            shutil.rmtree(workdir, ignore_errors=True)
    ratio = statistics.median(ui) / statistics.median(cli)
    print(
        f"median: workbench {statistics.median(ui):.2f} s, command line {statistics.median(cli):.2f} s; "
        f"ratio {ratio:.2f} (target <= {TARGET}: {'met' if ratio <= TARGET else 'NOT met'}); "
        f"load {os.getloadavg()[0]:.1f}"
    )
    return 0 if ratio <= TARGET else 1


if __name__ == "__main__":
    raise SystemExit(main())
