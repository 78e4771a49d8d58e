"""Numbers that are wrong (issue 30, items 13, 15 and 17): every view shows the figure computed.

* 13: with ``prec_weights`` the terminal, report.json, report.html, the trade-off curve and the
  workbench's Explore view show one loss, the weighted one the search minimized, labelled so.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from safeshare import api
from safeshare.metrics.loss import Prec
from tests.conftest import run_cli, write_small_adult


# ------------------------------------------------------------------ item 13: one weighted loss
@pytest.fixture(scope="module")
def weighted_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    directory = write_small_adult(tmp_path_factory.mktemp("weighted"))
    config = directory / "adult.yaml"
    config.write_text(config.read_text() + "prec_weights: {age: 10, sex: 0.5}\n")
    return {"config": config, "out": directory / "out"}


def test_the_weighted_loss_is_the_one_figure_of_every_view(
    weighted_run: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    config, out = weighted_run["config"], weighted_run["out"]
    code, stdout, stderr = run_cli(["anonymize", str(config), "--out", str(out)], capsys)
    assert code == 0, stderr
    report = json.loads((out / "report.json").read_text())
    node = tuple(report["node"])
    release = api.anonymize(config, None)
    assert release.fit is not None
    weighted = Prec(release.fit.evaluator, {"age": 10, "sex": 0.5}).value(node)
    unweighted = Prec(release.fit.evaluator).value(node)
    assert abs(weighted - unweighted) > 0.05  # the trial's case: the two differ at this node
    # report.json: the minimized figure, under its key and in every metric's table, labelled
    assert report["information_loss"] == pytest.approx(weighted)
    assert report["loss"]["prec"] == pytest.approx(weighted)
    assert report["metric_weights"] == {"age": 10.0, "sex": 0.5}
    assert report["metric_label"] == "prec, weighted (age 10, sex 0.5)"
    # the trade-off curve's chosen point is the same node with the same figure
    chosen = [t for t in report["tradeoff"] if t["chosen"]]
    assert len(chosen) == 1 and chosen[0]["information_loss"] == pytest.approx(report["information_loss"])
    # the terminal
    assert f"prec, weighted (age 10, sex 0.5) = {weighted:.6g}" in re.sub(r"\s*│\s*", " ", stdout)
    assert f"{unweighted:.6g}" not in stdout
    # report.html: the loss table's optimized row, weighted, and no unweighted Prec anywhere
    html = (out / "report.html").read_text()
    assert "Prec (Sweeney), weighted (age 10, sex 0.5) (optimized)" in html
    assert f"{unweighted:.6g}" not in html
    # the Python result and the workbench's Explore view of the same run
    assert release.choice.information_loss == pytest.approx(weighted)
    from safeshare.workflows.explore import lattice_view

    view = lattice_view(release.fit, max_nodes=50)
    optimum = view.node(node)
    assert view.metric == "prec, weighted (age 10, sex 0.5)"
    assert optimum.loss == pytest.approx(report["information_loss_normalized"])
    assert optimum.losses["prec"] == pytest.approx(optimum.loss)


def test_without_weights_the_label_is_the_metric(tmp_path: Path) -> None:
    config = write_small_adult(tmp_path) / "adult.yaml"
    release = api.anonymize(config, None, tradeoff=False)
    report = release.report
    assert report["metric_label"] == "prec" and report["metric_weights"] == {}
    assert report["loss"]["prec"] == report["information_loss"]
