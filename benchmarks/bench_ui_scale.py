"""``safeshare ui`` on 10M rows (issue 23): progress, cancel, and the server's memory beside the run's.

Starts ``safeshare ui`` as a user does, creates a project over the resampled Adult file of
:mod:`bench_scale` (10M rows, Parquet) with the DuckDB engine, and through the JSON API:

1. runs ``anonymize`` to the end, polling its progress (the phases seen are printed), and
   reads the peak resident memory of the server (``VmHWM`` of its process) and of the run's
   child process (the worker writes its own peak into the run's state);
2. starts a second run and cancels it after a few seconds: the time from the cancel request
   to the run's end, and that nothing was published.

The server never reads a record (the runs are child processes), so its peak should stay
far below the run's.

    PYTHONPATH=src python benchmarks/bench_ui_scale.py [--rows 10000000]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_scale import ensure_data

ROOT = Path(__file__).resolve().parent.parent
ADULT = ROOT / "examples" / "adult"


def peak_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def children_peak_mb(pid: int) -> float:
    """The largest VmHWM among the live descendants of ``pid`` (the run's worker, a fork of the
    server's fork server), now."""
    best = 0.0
    with contextlib.suppress(FileNotFoundError, ProcessLookupError):
        for task in Path(f"/proc/{pid}/task").iterdir():
            children = (task / "children").read_text().split() if (task / "children").exists() else []
            for child in children:
                with contextlib.suppress(FileNotFoundError, ProcessLookupError):
                    best = max(best, peak_mb(int(child)), children_peak_mb(int(child)))
    return best


def config(data: Path) -> dict[str, Any]:
    from bench_scale import COLUMNS, IDENTIFYING, QIS

    attributes: dict[str, Any] = {q: {"role": "quasi", "hierarchy": f"hierarchies/{q}.csv"} for q in QIS}
    attributes.update({c: {"role": "identifying"} for c in IDENTIFYING})
    attributes.update({c: {"role": "insensitive"} for c in COLUMNS if c not in attributes})
    return {
        "input": {"path": data.name},
        "attributes": attributes,
        "privacy": {"k-anonymity": {"k": 5}},
        "max_suppression": 0.05,
        "metric": "prec",
        "engine": "duckdb",
        "duckdb": {"memory_limit": "2GB", "threads": 2},
        "output": {"format": "parquet"},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rows", type=int, default=10_000_000)
    args = parser.parse_args(argv)
    data, _ = ensure_data(args.rows)
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        shutil.copyfile(data, workdir / data.name)  # a link out of the work directory is refused
        env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
        server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "safeshare",
                "ui",
                "--no-browser",
                "--port",
                "0",
                "--json",
                "--workdir",
                str(workdir),
            ],
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        try:
            assert server.stdout is not None
            url = json.loads(server.stdout.readline())["url"]
            base, _, token = url.partition("/?token=")
            client = httpx.Client(base_url=base, headers={"Authorization": f"Bearer {token}"}, timeout=60)
            files = [
                ("hierarchies", (h.name, h.read_bytes()))
                for h in sorted((ADULT / "hierarchies").glob("*.csv"))
            ]
            files.append(("config", ("run.yaml", json.dumps(config(data)).encode())))
            answer = client.post("/api/projects", files=files, data={"path": data.name, "name": "scale"})
            assert answer.status_code == 201, answer.text
            project = answer.json()["id"]
            while any(
                r["status"] == "running" for r in client.get(f"/api/projects/{project}/runs").json()["runs"]
            ):
                time.sleep(0.5)
            start = time.perf_counter()
            run = client.post(f"/api/projects/{project}/runs", json={"kind": "anonymize"}).json()["id"]
            phases: list[str] = []
            child_peak = 0.0
            while True:
                state = client.get(f"/api/projects/{project}/runs/{run}").json()
                progress = state.get("progress") or {}
                phase = str(state.get("phase") or progress.get("phase") or "")
                if phase and (not phases or phases[-1] != phase):
                    phases.append(phase)
                child_peak = max(child_peak, children_peak_mb(server.pid))
                if state["status"] != "running":
                    break
                time.sleep(0.2)
            elapsed = time.perf_counter() - start
            print(
                f"rows {args.rows:,}: run {state['status']} (verified {state.get('verified')}) "
                f"in {elapsed:.1f} s wall"
            )
            print(f"  phases seen while polling: {' -> '.join(phases)}")
            print(
                f"  peak memory: server {peak_mb(server.pid):.0f} MB, "
                f"run's child {child_peak:.0f} MB (sampled)"
            )
            run2 = client.post(f"/api/projects/{project}/runs", json={"kind": "anonymize"}).json()["id"]
            time.sleep(4)
            asked = time.perf_counter()
            client.post(f"/api/projects/{project}/runs/{run2}/cancel")
            while (state2 := client.get(f"/api/projects/{project}/runs/{run2}").json())[
                "status"
            ] == "running":
                time.sleep(0.1)
            published = client.get(f"/api/projects/{project}/runs/{run2}/files")
            shown = published.json().get("files", []) if published.status_code == 200 else "none"
            waited = time.perf_counter() - asked
            print(
                f"  cancel: {state2['status']} (exit {state2.get('exit')}) {waited:.2f} s after "
                f"the request; files published: {shown}"
            )
            print(f"  server peak after both runs: {peak_mb(server.pid):.0f} MB")
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(30)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
