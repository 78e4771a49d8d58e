"""The ARX side of the benchmarks (benchmarks/arx.py): without ARX or java the benchmarks say so
in one line instead of failing, and the hierarchies exported for ARX read back unchanged."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pandas as pd
import pytest

from safeshare.hierarchy.builders import IntervalBuilder, MaskingBuilder, SuppressionBuilder
from safeshare.hierarchy.hierarchy import Hierarchy
from safeshare.hierarchy.io import read_arx_csv

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import arx


def _built(tmp_path: Path) -> Path:
    """A classpath.txt whose entries all exist (the file an ARX build lists its class path in)."""
    for name in ("classes", "driver"):
        (tmp_path / name).mkdir()
    cp = tmp_path / "classpath.txt"
    cp.write_text(f"{tmp_path / 'classes'}:{tmp_path / 'driver'}\n")
    return cp


def test_no_build_is_one_line_and_no_failure(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    env = {arx.ENV: str(tmp_path / "nowhere" / "classpath.txt"), "PATH": ""}
    said = r"^ARX not found .*nowhere.* does not exist\): set SAFESHARE_ARX_CLASSPATH to the classpath"
    with pytest.raises(arx.ArxUnavailable, match=said):
        arx.locate(env)
    assert arx.locate_or_say(env) is None
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and out.startswith("ARX not found") and "make arx" not in out


def test_without_the_variable_the_comparison_says_it_is_skipped(capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 19: nothing builds ARX; without SAFESHARE_ARX_CLASSPATH the comparison is skipped, said
    in one line (no default location is searched)."""
    said = r"^ARX comparison skipped: SAFESHARE_ARX_CLASSPATH is not set"
    with pytest.raises(arx.ArxUnavailable, match=said):
        arx.locate({"PATH": ""})
    assert arx.locate_or_say({}) is None
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and "SAFESHARE_ARX_CLASSPATH is not set" in out


def test_a_classpath_entry_that_is_gone_counts_as_not_built(tmp_path: Path) -> None:
    cp = _built(tmp_path)
    (tmp_path / "driver").rmdir()
    with pytest.raises(arx.ArxUnavailable, match="driver missing"):
        arx.locate({arx.ENV: str(cp), "PATH": ""})


def test_no_java_is_said(tmp_path: Path) -> None:
    cp = _built(tmp_path)
    with pytest.raises(arx.ArxUnavailable, match="no `java`"):
        arx.locate({arx.ENV: str(cp), "PATH": str(tmp_path)})


def test_a_build_with_java_is_found(tmp_path: Path) -> None:
    cp = _built(tmp_path)
    java = tmp_path / "jdk" / "bin" / "java"
    java.parent.mkdir(parents=True)
    java.write_text("#!/bin/sh\n")
    java.chmod(0o755)
    found = arx.locate({arx.ENV: str(cp), "PATH": "", "JAVA_HOME": str(tmp_path / "jdk")})
    assert found == arx.Arx(str(java), f"{tmp_path / 'classes'}:{tmp_path / 'driver'}")
    command = found.command("serve", "d.csv", heap="12g")
    assert command == [str(java), "-Xmx12g", "-cp", found.classpath, "ArxBench", "serve", "d.csv"]


def test_exported_hierarchies_round_trip(tmp_path: Path) -> None:
    """What bench_kdd hands to ARX (one QI.csv per QI) is what safeshare reads back."""
    built = {
        "age": IntervalBuilder(widths=[5, 10, 20]).build([str(v) for v in (0, 17, 38, 90)], "age"),
        "industry": MaskingBuilder(max_masked=1, pad="0", pad_side="start").build(["3", "41", "7"], "ind"),
        "sex": SuppressionBuilder().build(["Female", "Male"], "sex"),
        "awkward": Hierarchy([("a;1", 'x"y', "*"), ("b 2", "p q", "*")]),
    }
    out = arx.export_hierarchies(built, tmp_path / "h")
    assert sorted(p.name for p in out.iterdir()) == sorted(f"{q}.csv" for q in built)
    for name, hierarchy in built.items():
        assert read_arx_csv(out / f"{name}.csv").rows == hierarchy.rows


def test_data_csv_refuses_a_comma(tmp_path: Path) -> None:
    ok = pd.DataFrame({"a": ["x", "y"], "b": ["1", "2"], "c": ["not", "written"]})
    arx.write_data_csv(ok, ["a", "b"], tmp_path / "ok.csv")
    assert (tmp_path / "ok.csv").read_text() == "a,b\nx,1\ny,2\n"
    with pytest.raises(ValueError, match="b: value '1,5'"):
        arx.write_data_csv(pd.DataFrame({"b": ["1,5"]}), ["b"], tmp_path / "bad.csv")


@pytest.mark.slow
def test_the_warm_jvm_answers_and_ends_cleanly(tmp_path: Path) -> None:
    """With ARX built: two searches in one JVM, the optimum's loss is ours, ``quit`` ends it (exit 0)."""
    try:
        found = arx.locate()
    except arx.ArxUnavailable as exc:
        pytest.skip(str(exc))
    from safeshare.config.algorithms import make_strategy
    from safeshare.core.evaluation import Evaluator
    from safeshare.core.frequency import FrequencyTable
    from safeshare.data.engines.base import COUNT_COLUMN
    from safeshare.metrics.loss import make_metric
    from safeshare.models import KAnonymity, PrivacyCriterion
    from safeshare.search.context import SearchContext

    adult = Path(__file__).resolve().parent.parent / "examples" / "adult" / "hierarchies"
    qis = ["sex", "race", "relationship"]
    hierarchies = {q: read_arx_csv(adult / f"{q}.csv") for q in qis}
    leaves = {q: list(h.leaves) for q, h in hierarchies.items()}
    rng = random.Random(7)  # skewed values: rare combinations that k = 5 and 20 must generalize
    rows = [
        {q: rng.choices(leaves[q], [2.0**-i for i in range(len(leaves[q]))])[0] for q in qis}
        for _ in range(300)
    ]
    frame = pd.DataFrame(rows)
    csv = arx.write_data_csv(frame, qis, tmp_path / "d.csv")
    grouped = frame.groupby(qis, sort=False).size().reset_index(name=COUNT_COLUMN)
    table = FrequencyTable.from_grouped(grouped, qis, [hierarchies[q] for q in qis])
    with arx.ArxServer(found, csv, adult, qis) as server:
        for k, limit in ((5, 0.0), (20, 0.05)):
            answer = server.search(k, limit, "prec", timeout=120)
            ev = Evaluator(table)
            ctx = SearchContext(table, ev, PrivacyCriterion([KAnonymity(k)], limit), make_metric("prec", ev))
            ours = make_strategy("ola").run(ctx)
            assert answer["found"] and len(answer["levels"]) == len(qis)
            assert any(answer["levels"])  # not the bottom node: a search took place
            metric = make_metric("prec", Evaluator(table))
            assert metric.value(tuple(answer["levels"])) == pytest.approx(metric.value(ours.node))
            assert answer["loss"] == pytest.approx(metric.value(ours.node))
    assert server.returncode == 0
