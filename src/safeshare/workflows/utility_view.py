"""The workbench's Utility screen: what a release keeps, read from its report.json (issue 35).

One result, many views: every figure of the screen is a value the run's published report.json
already holds, handed to the page with its key there (``{"key": "before_after.columns.2.
categories.0.lost", "value": 0.52}``), so that the page, the JSON API and the report cannot
disagree and a test can read each figure back at its key. Nothing is counted, estimated or
trained here; the rows are only selected and ordered:

* **each column before and after** (report.json's ``before_after``,
  :mod:`safeshare.workflows.before_after`): per category the records of the input, released, and
  the share lost; the small categories as the report pools them (one row, never named: the
  report names none of them, and neither does the screen), or why the column is not tabulated;
* **suppression by category**: the same rows, those that lost most first, with the run's
  ``subgroup-suppressed`` warnings beside them (:func:`~safeshare.workflows.run_warnings.run_warnings`);
* **the classifier check** (thesis §5.3; docs/utility.md): ``safeshare anonymize`` never trains a
  classifier, so report.json has no accuracy to show; the screen says so and gives the command
  that measures it for this run's configuration (``safeshare utility``), which the configuration
  cannot ask for (it refuses a ``utility:`` key), without running it;
* **information loss** (report.json's ``loss``, thesis §5.1, :mod:`safeshare.metrics.loss`; for
  a locally recoded release also ``local_recoding.loss_global`` / ``loss_mixed``,
  :mod:`safeshare.metrics.cell_loss`): every measure the report holds, with one plain sentence.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict
from typing import Any

from safeshare.workflows.run_warnings import run_warnings

#: The rows of the "suppression by category" table (the categories that lost most).
SUPPRESSION_ROWS = 20

#: One plain sentence per information-loss measure of report.json's ``loss`` (thesis §5.1).
LOSS_MEASURES: tuple[tuple[str, str, str], ...] = (
    (
        "prec",
        "Prec (Sweeney)",
        "How far up its hierarchy each quasi-identifier is generalized (its level over the "
        "hierarchy's height), averaged over the quasi-identifiers: 0 is the data as it is, 1 every "
        "quasi-identifier at its top level; it counts generalization only, not suppression.",
    ),
    (
        "dm_star",
        "DM* (discernibility)",
        "The sum of the squared sizes of the equivalence classes before suppression: each record "
        "costs the size of the class it hides in, so large classes cost more; normalized, 0 is the "
        "data's own classes and 1 every quasi-identifier at its top level.",
    ),
    (
        "entropy",
        "Non-uniform entropy",
        "The information lost about each value, in bits: the sum over the records and the "
        "quasi-identifiers of -log2 P[value | its released label], from the input's counts; "
        "normalized, 0 is the data as it is and 1 every quasi-identifier at its top level.",
    ),
)
#: The further measure of ``loss`` (the thesis' Fig. 6.1 plots it).
DM_STAR_MINUS_BOTTOM = (
    "dm_star_minus_bottom",
    "DM* minus its value on the data as it is",
    "DM* less what the data's own classes already cost: the part of DM* this generalization adds "
    "(the thesis' Fig. 6.1 plots it).",
)
#: The cell-level measures of a locally recoded release (``local_recoding.loss_*``).
CELL_MEASURES: tuple[tuple[str, str, str], ...] = (
    (
        "prec",
        "precision loss, cell by cell",
        "Each released cell loses its level over its hierarchy's height, a suppressed cell 1, "
        "averaged over the records and the quasi-identifiers.",
    ),
    (
        "entropy_normalized",
        "non-uniform entropy, cell by cell (normalized)",
        "The bits lost about each value, record by record up to its own level (a suppressed cell "
        "loses all), over the most that can be lost.",
    ),
    (
        "dm_star_normalized",
        "DM* per record (normalized)",
        "A released record costs the size of its class, a suppressed one all records; 0 is the "
        "data's own classes and 1 all records in one class.",
    ),
)


def _fig(report: Mapping[str, Any], key: str) -> dict[str, Any] | None:
    """``{"key": key, "value": ...}`` for the value at dotted ``key`` of report.json (list items
    by index); ``None`` when the report has no value there."""
    value: Any = report
    for part in key.split("."):
        if isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        elif isinstance(value, Mapping) and part in value:
            value = value[part]
        else:
            return None
    return {"key": key, "value": value}


def _column_rows(report: Mapping[str, Any], i: int, col: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A column's categories as report.json lists them (most records first), then its pooled row."""
    base = f"before_after.columns.{i}"
    flagged = {
        str(f.get("value"))
        for f in (report.get("before_after") or {}).get("flagged") or []
        if isinstance(f, Mapping) and f.get("column") == col.get("column")
    }
    rows = []
    for j, cat in enumerate(col.get("categories") or []):
        key = f"{base}.categories.{j}"
        rows.append(
            {
                "value": str(cat.get("value")),
                "pooled": False,
                "flagged": str(cat.get("value")) in flagged,
                "before": _fig(report, f"{key}.before"),
                "after": _fig(report, f"{key}.after"),
                "lost": _fig(report, f"{key}.lost"),
                "categories": None,
            }
        )
    small = col.get("small")
    if isinstance(small, Mapping):
        key = f"{base}.small"
        rows.append(
            {
                "value": str(small.get("value")),  # the report's description of the pool, no name
                "pooled": True,
                "flagged": False,
                "before": _fig(report, f"{key}.before"),
                "after": _fig(report, f"{key}.after"),
                "lost": _fig(report, f"{key}.lost"),
                "categories": _fig(report, f"{key}.categories"),
            }
        )
    return rows


def _columns(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    ba = report.get("before_after")
    if not isinstance(ba, Mapping):
        return []
    out = []
    for i, col in enumerate(ba.get("columns") or []):
        if not isinstance(col, Mapping):
            continue
        rows = _column_rows(report, i, col)
        named = [r for r in rows if not r["pooled"]]
        worst = max((r for r in named if r["lost"]), key=lambda r: r["lost"]["value"], default=None)
        out.append(
            {
                "column": str(col.get("column")),
                "role": str(col.get("role")),
                "skipped": col.get("skipped"),
                "rows": rows,
                "categories": len(named),
                "worst": worst,
                "flagged": any(r["flagged"] for r in rows),
                # the chart's bars: the table's rows, the same figures
                "chart": [
                    {
                        "label": r["value"],
                        "before": r["before"]["value"],
                        "after": r["after"]["value"],
                        "lost": r["lost"]["value"],
                    }
                    for r in rows
                    if r["before"] and r["after"] and r["lost"]
                ],
            }
        )
    return out


def _suppression(columns: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Every category that lost records, those that lost most first (then the largest), at most
    :data:`SUPPRESSION_ROWS`; the pooled rows keep the report's description."""
    losing = [
        {"column": col["column"], **row}
        for col in columns
        for row in col["rows"]
        if row["lost"] and row["before"] and row["lost"]["value"] > 0
    ]
    losing.sort(key=lambda r: (-r["lost"]["value"], -r["before"]["value"], r["column"], r["value"]))
    return {"rows": losing[:SUPPRESSION_ROWS], "losing": len(losing), "limit": SUPPRESSION_ROWS}


def _classifier(report: Mapping[str, Any], config: str | None) -> dict[str, Any]:
    """What the screen says of the classifier check: not trained by the run (``safeshare
    anonymize`` trains none), and the command that measures it, with the columns the report
    releases as they are (the target must be one: docs/utility.md)."""
    targets = [
        str(c.get("name"))
        for c in report.get("columns") or []
        if isinstance(c, Mapping) and c.get("treatment") == "kept" and c.get("role") != "quasi"
    ]
    command = (
        f"safeshare utility {config or 'CONFIG'} --test TEST_FILE --target "
        f"{targets[0] if len(targets) == 1 else 'COLUMN'} --out DIR"
    )
    return {
        "trained": False,
        "reason": (
            "This run trained no classifier: safeshare anonymize (which the workbench runs) never "
            "does, so its report.json holds no accuracy."
        ),
        "config_key": None,
        "config_note": (
            "No configuration key turns it on: the configuration refuses a utility: key, and the "
            "classifier's settings (a held-out test set, the column to predict) are the options of "
            "the command safeshare utility (or safeshare sweep --utility)."
        ),
        "command": command,
        "targets": targets,
        "measures": (
            "It anonymizes the training data with this configuration, trains a logistic regression "
            "on the release and on the original data, and reports both accuracies on the test set "
            "generalized with the same node (accuracy, baseline_accuracy, majority_accuracy in "
            "utility.json)."
        ),
        "doc": "docs/utility.md",
    }


def _loss(report: Mapping[str, Any]) -> dict[str, Any]:
    """The information-loss measures report.json holds: ``loss`` (the released node's, as the
    search scores it), marked where the search minimized it, and for a locally recoded release
    the cell-level measures of the global node and of the release as written."""
    metric = report.get("metric")
    rows = []
    for name, title, sentence in (*LOSS_MEASURES, DM_STAR_MINUS_BOTTOM):
        value = _fig(report, f"loss.{name}")
        if value is None:
            continue
        rows.append(
            {
                "name": name,
                "title": title,
                "sentence": sentence,
                "value": value,
                "normalized": _fig(report, f"loss.{name}_normalized"),
                "optimized": name == metric,
            }
        )
    cells = []
    if isinstance(report.get("local_recoding"), Mapping):
        for name, title, sentence in CELL_MEASURES:
            found = _fig(report, f"local_recoding.loss_global.{name}")
            mixed = _fig(report, f"local_recoding.loss_mixed.{name}")
            if found is not None and mixed is not None:
                cells.append(
                    {"name": name, "title": title, "sentence": sentence, "global": found, "mixed": mixed}
                )
    return {
        "metric": metric,
        "metric_label": report.get("metric_label") or metric,
        "rows": rows,
        "cells": cells,
        "local_recoding": bool(report.get("local_recoding")),
    }


def utility_view(report: Mapping[str, Any] | None, config: str | None = None) -> dict[str, Any] | None:
    """The Utility screen's rows from a run's published report.json (module docstring), each
    figure ``{"key", "value"}`` with its key in report.json; ``config``: the run's configuration
    as the command line names it (the classifier's command). ``None`` when the run published no
    report."""
    if not report:
        return None
    ba = report.get("before_after")
    columns = _columns(report)
    warnings = [asdict(w) for w in run_warnings(report) if w.code == "subgroup-suppressed"]
    return {
        "records_in": _fig(report, "records_in"),
        "records_out": _fig(report, "records_out"),
        "suppressed_records": _fig(report, "suppressed_records"),
        "max_suppression": _fig(report, "max_suppression"),
        "tabulated": isinstance(ba, Mapping),
        "loss_share": _fig(report, "before_after.loss_share"),
        "small_cell": _fig(report, "before_after.small_cell"),
        "notes": list(ba.get("notes") or []) if isinstance(ba, Mapping) else [],
        "columns": columns,
        "suppression": _suppression(columns),
        "warnings": warnings,
        "classifier": _classifier(report, config),
        "loss": _loss(report),
    }


__all__ = ["CELL_MEASURES", "LOSS_MEASURES", "SUPPRESSION_ROWS", "utility_view"]
