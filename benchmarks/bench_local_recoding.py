"""Local recoding against the global optimum (issue 25): records released and cell-level loss.

For UCI Adult (``examples/adult/adult.yaml``: 9 QIs, k = 5, 5 % suppression, Prec) and
Census-Income KDD (``benchmarks/census-income-kdd.yaml``: 9 QIs, k = 5, 5 %, Prec; the data
from ``--data``, skipped with a line when missing), in the same run:

* the baseline, the **global optimum** (OLA, full-domain generalization), and
* **local recoding** (:mod:`safeshare.workflows.local_recoding`): rounds on the records the
  optimum suppresses, until none can be released (or ``--rounds``),

each scored with the same cell-level definitions (:mod:`safeshare.metrics.cell_loss`, ARX's
evaluation models): records released and suppressed, precision loss, non-uniform entropy
(normalized), DM* per record (normalized), equivalence classes, rounds, and process CPU
seconds (the global search; the rounds after it). The targets: local recoding releases more
records at a lower precision loss and a lower entropy than the global optimum.

Beside ARX, where an ARX build is given (``SAFESHARE_ARX_CLASSPATH``, see benchmarks/arx.py;
``--no-arx`` leaves it out): the same records and exported hierarchies go to
``ArxBench local CSV HIERDIR QIS K SUPPRESSION METRIC ROUNDS OUT.csv``, which should anonymize
as ``anonymize`` does, call ``ARXResult.optimizeIterative(output, 0.5, ROUNDS, 0.0)`` on the
output handle, save it in input order and print one JSON line (``rows``, ``suppressed``,
``time_ms``); its output is scored here with the same cell-level code (a cell's level is the
lowest level of its hierarchy whose label for the record's raw value is the released text).
The arx-bench driver of this machine has no ``local`` command yet (docs/benchmarks.md gives
the few lines it needs); without it, or without an ARX build, the benchmark says so and prints
safeshare's figures alone::

    python benchmarks/bench_local_recoding.py [--data PATH] [--rounds N] [--only adult,kdd] [--no-arx]
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from arx import Arx, export_hierarchies, last_json, locate_or_say, run_measured, write_data_csv  # noqa: E402
from safeshare.config import load_config  # noqa: E402
from safeshare.core.frequency import FrequencyTable  # noqa: E402
from safeshare.core.mixed import MixedRelease  # noqa: E402
from safeshare.core.tabulate import build_frequency_table  # noqa: E402
from safeshare.data.engines.memory import MemoryEngine  # noqa: E402
from safeshare.hierarchy.hierarchy import Hierarchy  # noqa: E402
from safeshare.metrics.cell_loss import CellLoss, cell_loss  # noqa: E402
from safeshare.workflows.local_recoding import DEFAULT_ROUNDS, LocalRecoding  # noqa: E402

ADULT = ROOT / "examples" / "adult" / "adult.yaml"
KDD = ROOT / "benchmarks" / "census-income-kdd.yaml"
KDD_DATA = Path("/work/shared/datasets/census-income-kdd/census-income.data.gz")


def row(label: str, loss: CellLoss, rounds: int | str, cpu: float) -> str:
    return (
        f"  {label:<10} released {loss.released:>8,}  suppressed {loss.suppressed:>6,}  "
        f"Prec {loss.prec:.4f}  entropy {loss.entropy_normalized:.4f}  DM* {loss.dm_star_normalized:.5f}  "
        f"classes {loss.classes:>6,}  rounds {rounds!s:>3}  cpu {cpu:6.2f} s"
    )


def release_from_output(
    raw: pd.DataFrame, output: pd.DataFrame, qis: list[str], hierarchies: list[Hierarchy]
) -> MixedRelease:
    """Another tool's output (records in input order, ``*`` in every QI of a suppressed record)
    as a :class:`MixedRelease` over the input: each cell's level is the lowest level whose label
    of the raw value is the released text. A record shown as ``*`` in every QI counts as
    suppressed (ARX's convention; a record released at the top of every ``*``-topped hierarchy
    looks the same)."""
    if len(raw) != len(output):
        raise ValueError(f"the output has {len(output)} records, the input {len(raw)}")
    n, q = len(raw), len(qis)
    levels = np.zeros((n, q), dtype=np.int16)
    codes = np.zeros((n, q), dtype=np.int32)
    suppressed = np.ones(n, dtype=bool)
    for j, (qi, h) in enumerate(zip(qis, hierarchies, strict=True)):
        values = raw[qi].astype(str).to_numpy()
        shown = output[qi].astype(str).to_numpy()
        codes[:, j] = [h.leaf_index[v] for v in values]
        suppressed &= shown == "*"
        found = np.full(n, -1, dtype=np.int64)
        for level in range(h.height, -1, -1):  # the lowest matching level wins
            labels = np.asarray(h.labels(level), dtype=object)[h.leaf_codes(level)[codes[:, j]]]
            found[labels == shown] = level
        unmatched = (found < 0) & (shown != "*")
        if unmatched.any():
            first = int(np.flatnonzero(unmatched)[0])
            raise ValueError(f"{qi}: released {shown[first]!r} is no label of {values[first]!r}")
        levels[:, j] = np.maximum(found, 0)
    key = pd.DataFrame(np.hstack([codes, levels, suppressed[:, None]]))
    grouped = key.groupby(list(key.columns), sort=True).size().reset_index(name="n").to_numpy()
    table = FrequencyTable(
        qi_names=tuple(qis),
        hierarchies=tuple(hierarchies),
        codes=np.ascontiguousarray(grouped[:, :q], dtype=np.int32),
        counts=grouped[:, -1].astype(np.int64),
    )
    return MixedRelease(table, grouped[:, q : 2 * q].astype(np.int16), grouped[:, 2 * q] == 0)


def arx_local(
    arx: Arx, frame: pd.DataFrame, qis: list[str], hierarchies: list[Hierarchy], k: int, s: float, rounds: int
) -> tuple[MixedRelease, dict[str, Any]] | None:
    """ARX's local recoding of the same records with the same hierarchies (module docstring);
    ``None`` (after saying why) when the driver cannot do it."""
    with tempfile.TemporaryDirectory(prefix="bench-local-arx-") as tmp:
        hier_dir = export_hierarchies(dict(zip(qis, hierarchies, strict=True)), Path(tmp) / "hierarchies")
        csv = write_data_csv(frame, qis, Path(tmp) / "data.csv")
        out = Path(tmp) / "out.csv"
        command = arx.command(
            "local", str(csv), str(hier_dir), ",".join(qis), str(k), str(s), "prec", str(rounds), str(out)
        )
        measured = run_measured(command, timeout=3600)
        try:
            answer = last_json(measured.stdout)
        except ValueError:
            print("  ARX        the arx-bench driver has no `local` command (docs/benchmarks.md): left out")
            return None
        if measured.returncode != 0 or not out.exists():
            print(f"  ARX        failed (exit {measured.returncode}): {measured.stderr.strip()[-200:]}")
            return None
        output = pd.read_csv(out, dtype=str, keep_default_na=False)
        answer["cpu_s"] = measured.cpu_s
        return release_from_output(frame, output, qis, hierarchies), answer


def run(name: str, config: Path, data: Path | None, rounds: int, arx: Arx | None) -> bool:
    cfg = load_config(config)
    source = cfg.source if data is None else dataclasses.replace(cfg.source, path=data)
    engine = MemoryEngine(source)
    spec = cfg.spec()
    table, _ = build_frequency_table(engine, spec.schema, spec.criterion().sensitive_columns)
    print(
        f"{name}: {table.n_records:,} records, {len(table.qi_names)} QIs, {table.lattice.size:,} nodes, "
        f"k = 5, {cfg.max_suppression:.0%}, {cfg.metric}",
        flush=True,
    )
    recoder = LocalRecoding(spec, rounds)
    start = time.process_time()
    base = recoder.anonymizer.fit_table(table)
    global_cpu = time.process_time() - start
    start = time.process_time()
    result = recoder.recode(base, seconds=global_cpu)
    local_cpu = time.process_time() - start
    print(row("global", result.global_loss, "-", global_cpu))
    print(row("local", result.mixed_loss, len(result.rounds) - 1, global_cpu + local_cpu))
    for r in result.rounds[1:]:
        print(
            f"    round {r.number}: node {r.node}, {r.records_searched:,} searched, {r.released:,} released, "
            f"{r.returned:,} returned, {r.suppressed_after:,} left, cpu {r.seconds:.2f} s"
        )
    print(f"    stop: {result.stop_reason}")
    if arx is not None:
        qis = list(table.qi_names)
        frame = engine.frame[qis]
        done = arx_local(arx, frame, qis, list(table.hierarchies), 5, cfg.max_suppression, rounds)
        if done is not None:
            release, answer = done
            print(row("ARX local", cell_loss(release), answer.get("rounds", "?"), answer["cpu_s"]))
    g, m = result.global_loss, result.mixed_loss
    met = m.released > g.released and m.prec < g.prec and m.entropy < g.entropy
    print(
        f"  released +{m.released - g.released:,} records; Prec {g.prec:.4f} -> {m.prec:.4f}, "
        f"entropy {g.entropy_normalized:.4f} -> {m.entropy_normalized:.4f}, "
        f"DM* {g.dm_star_normalized:.5f} -> {m.dm_star_normalized:.5f}: "
        f"{'target met' if met else 'TARGET MISSED'}",
        flush=True,
    )
    return met


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--data", type=Path, default=KDD_DATA, help="Census-Income (KDD) census-income.data.gz"
    )
    parser.add_argument("--rounds", type=int, default=DEFAULT_ROUNDS)
    parser.add_argument("--only", default="adult,kdd")
    parser.add_argument("--no-arx", action="store_true", help="leave ARX out even when it is built")
    args, _ = parser.parse_known_args()
    arx = None if args.no_arx else locate_or_say()
    print("(process CPU seconds; the machine is shared, figures vary with its load)")
    ok = True
    names = {n.strip() for n in args.only.split(",")}
    if "adult" in names:
        ok &= run("UCI Adult", ADULT, None, args.rounds, arx)
    if "kdd" in names:
        if not args.data.exists():
            print(f"Census-Income (KDD) not found at {args.data}: skipped")
        else:
            ok &= run("Census-Income (KDD)", KDD, args.data, args.rounds, arx)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
