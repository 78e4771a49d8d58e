"""The ARX side of benchmarks/bench_local_recoding.py: another tool's output (records in input
order, ``*`` where suppressed) is scored with the same cell-level code, and a driver without a
``local`` command is reported in one line, not a failure."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from safeshare.config import load_config
from safeshare.data.engines.memory import MemoryEngine
from safeshare.hierarchy.hierarchy import Hierarchy
from safeshare.metrics.cell_loss import cell_loss
from safeshare.workflows.local_recoding import local_recoding
from tests.conftest import ADULT_DIR

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import arx
import bench_local_recoding as bench


def test_an_output_in_input_order_scores_as_our_release() -> None:
    cfg = load_config(ADULT_DIR / "adult.yaml")
    engine = MemoryEngine(cfg.source)
    result = local_recoding(cfg.spec(), engine, rounds=1)  # one round: some records stay suppressed
    qis = list(result.table.qi_names)
    plan = result.release_plan(engine.columns())
    raw = engine.frame[qis]
    lookup = pd.concat([plan.keys, plan.labels.add_suffix("__out")], axis=1)
    merged = raw.merge(lookup, on=qis, how="left")
    output = pd.DataFrame({q: merged[f"{q}__out"].fillna("*") for q in qis})  # ARX writes * when suppressed
    release = bench.release_from_output(raw, output, qis, list(result.table.hierarchies))
    theirs, ours = cell_loss(release), result.mixed_loss
    assert (theirs.released, theirs.suppressed, theirs.classes) == (
        ours.released,
        ours.suppressed,
        ours.classes,
    )
    assert ours.suppressed > 0
    assert theirs.dm_star == ours.dm_star
    # a label that several levels share is read at its lowest level (ARX's convention): never more loss
    assert theirs.prec <= ours.prec + 1e-12 and theirs.entropy <= ours.entropy + 1e-6


def test_a_label_that_is_no_generalization_is_refused() -> None:
    h = Hierarchy([("a", "ab", "*"), ("b", "ab", "*")], "q")
    raw = pd.DataFrame({"q": ["a", "b"]})
    with pytest.raises(ValueError, match="'zz' is no label of 'a'"):
        bench.release_from_output(raw, pd.DataFrame({"q": ["zz", "ab"]}), ["q"], [h])
    release = bench.release_from_output(raw, pd.DataFrame({"q": ["ab", "*"]}), ["q"], [h])
    assert release.records_out == 1 and np.asarray(release.row_levels)[release.released].tolist() == [[1]]


def test_a_driver_without_local_is_said_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    java = tmp_path / "java"
    java.write_text("#!/bin/sh\nexit 0\n")  # answers nothing, as ArxBench does to an unknown command
    java.chmod(0o755)
    h = Hierarchy([("a", "*"), ("b", "*")], "q")
    frame = pd.DataFrame({"q": ["a", "b"] * 5})
    assert bench.arx_local(arx.Arx(str(java), str(tmp_path)), frame, ["q"], [h], 2, 0.1, 3) is None
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and "no `local` command" in out
