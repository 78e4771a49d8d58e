"""The HTML report of an anonymization run: one self-contained, offline file.

The page is rendered from ``templates/report.html.j2`` by Jinja2 with
autoescaping on: every value of report.json (labels of the data, column
names, paths, messages) is escaped by the template engine, not by hand. Only
the inline SVG charts of :mod:`safeshare.report.svg`, which escape their own
text, are inserted as markup. CSS is inline, so the file needs no network.

This module turns report.json's content into rows of text (a view model);
the template only lays them out. What the report may show is decided where
report.json is assembled (:mod:`safeshare.workflows.release`,
:mod:`safeshare.report.content`): values only from the released classes.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

from safeshare.report.content import describe_search, risk_rows
from safeshare.report.svg import CSS, bar_chart, line_chart

METRIC_TITLES = {
    "prec": "Prec (Sweeney)",
    "dm_star": "DM* (sum of squared class sizes)",
    "entropy": "Non-uniform entropy",
}

TEMPLATES = Path(__file__).parent / "templates"


@cache
def environment() -> jinja2.Environment:
    """The template environment: autoescaping everywhere, undefined names are errors."""
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )


def _num(v: Any, digits: int = 6) -> str:
    if v is None:
        return "–"
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, int):
        return f"{v:,}"
    return f"{float(v):.{digits}g}"


def _privacy_rows(doc: dict[str, Any]) -> list[tuple[str, str]]:
    """(what, value) rows of the privacy table: the models, what the release achieves, the risk."""
    privacy = doc.get("privacy", {})
    models = ", ".join(
        f"{name} ({', '.join(f'{k}={v}' for k, v in params.items())})"
        for name, params in privacy.get("models", {}).items()
    )
    rows = [
        ("privacy models", models),
        ("suppression limit", f"{100 * float(privacy.get('max_suppression', 0)):.4g}% of records"),
    ]
    if "records_in" in doc:
        rows.append(
            (
                "records",
                f"{_num(doc['records_in'])} in · {_num(doc.get('suppressed_records'))} suppressed · "
                f"{_num(doc.get('records_out'))} released",
            )
        )
    if "equivalence_classes" in doc:
        smallest = int(doc.get("min_class_size", 0))
        rows.append(
            ("equivalence classes", f"{doc['equivalence_classes']:,} (smallest {smallest:,} records)")
        )
        rows.append(
            (
                "re-identification risk (prosecutor)",
                f"at most 1/{smallest:,} = {1 / max(smallest, 1):.4f} per record; "
                f"average {doc['equivalence_classes'] / max(int(doc.get('records_out', 0)), 1):.4f}",
            )
        )
    for name, achieved in doc.get("privacy_achieved", {}).items():  # l, t ... of the released classes
        for how in ("min", "max"):
            if how in achieved:
                values = ", ".join(f"{c} {_num(v, 4)}" for c, v in achieved[how].items())
                label = "smallest" if how == "min" else "largest"
                rows.append((f"{name} achieved", f"{label} per column: {values}"))
                if achieved.get("measure"):
                    rows.append(("", str(achieved["measure"])))
    if doc.get("k_achieved") is not None:
        rows.append(
            (
                "Inverse OLA (thesis §4.4)",
                f"largest achievable k = {doc['k_achieved']:,} within normalized loss {doc.get('max_loss')}",
            )
        )
    if doc.get("inverse_m") is not None:
        detail = doc.get("m_concealing", {})
        known = ", ".join(f"{c} p={p:g}" for c, p in detail.get("knowledge", {}).items())
        rows.append(
            (
                "m-concealing (thesis §5.2) achieved",
                f"m = {doc['m']:.4g}, 1/m = {doc['inverse_m']:.4g} "
                f"({detail.get('records_at_max', 0):,} records at m; "
                f"adversary knows {known or 'nothing more'})",
            )
        )
    return rows


def _dp_rows(doc: dict[str, Any]) -> list[tuple[str, str]]:
    """Epsilon-safe runs: the (beta, epsilon, delta) guarantee and the sampling."""
    if doc.get("algorithm") != "epsilon-safe" and "records_before_sampling" not in doc:
        return []
    n = doc.get("records_before_sampling")
    delta = doc.get("delta_scientific") or _num(doc.get("delta"), 4)
    rows = [
        ("β (sampling probability)", _num(doc.get("beta"), 6)),
        ("ε", _num(doc.get("epsilon"), 6)),
        ("ε′ (node choice)", _num(doc.get("epsilon_prime"), 6)),
        ("δ", str(delta)),
        ("1/N", "–" if not n else f"{1 / int(n):.3g}"),
        ("records before sampling (N)", _num(n)),
        ("records sampled", _num(doc.get("records_sampled"))),
    ]
    if doc.get("utility"):
        rows.append(
            (
                "node choice",
                f"exponential mechanism, {doc['utility']} utility; chosen node drawn with probability "
                f"{_num(doc.get('node_probability'), 4)}",
            )
        )
    return rows


def _generalization_rows(doc: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for g in doc.get("generalization", []):
        shown = [
            f"{label} ({count:,})"
            for label, count in zip(g["examples"], g.get("example_records", []), strict=False)
        ] or list(g["examples"])
        more = ", …" if g["labels"] > len(g["examples"]) else ""
        rows.append(
            {
                "qi": g["qi"],
                "level": g["level"],
                "height": g["height"],
                "labels": f"{g['labels']:,}: " + ", ".join(shown) + more,
                "top": g["height"] > 0 and g["level"] >= g["height"],
            }
        )
    return rows


def _column_rows(doc: dict[str, Any]) -> list[dict[str, str]]:
    levels = {g["qi"]: g for g in doc.get("generalization", [])}
    rows = []
    for c in doc.get("columns", []):  # release.py: given by the caller, or column_treatments()
        g = levels.get(c["name"])
        detail = f"level {g['level']} of {g['height']}" if g is not None else ""
        rows.append({**c, "detail": detail})
    return rows


def _tradeoff(doc: dict[str, Any]) -> dict[str, Any] | None:
    tradeoff = doc.get("tradeoff")
    if not tradeoff:
        return None
    xs = [100 * float(t["max_suppression"]) for t in tradeoff]
    ys = [t["information_loss_normalized"] for t in tradeoff]
    chosen = next((i for i, t in enumerate(tradeoff) if t.get("chosen")), None)
    chart = line_chart(
        xs,
        ys,
        f"optimal node's normalized {doc.get('metric')} by suppression limit",
        "suppression limit (%)",
        "normalized loss",
        highlight=chosen,
    )
    rows = []
    for t in tradeoff:
        levels = ", ".join(f"{q}={lv}" for q, lv in t.get("levels", {}).items()) or "no solution"
        label = f"{100 * float(t['max_suppression']):.4g}%" + (" ◀ chosen" if t.get("chosen") else "")
        rows.append(
            (
                label,
                _num(t.get("information_loss_normalized"), 4),
                f"{t.get('suppressed_records', 0):,}",
                levels,
            )
        )
    return {"chart": Markup(chart), "rows": rows}  # svg.py escapes its own text


def _loss_rows(doc: dict[str, Any]) -> list[tuple[str, str, str]]:
    loss = doc.get("loss", {})
    rows = []
    for key, title in METRIC_TITLES.items():
        if key in loss:
            mark = " (optimized)" if key == doc.get("metric") else ""
            rows.append((title + mark, _num(loss[key]), _num(loss.get(f"{key}_normalized"), 4)))
    if "dm_star_minus_bottom" in loss:
        rows.append(("DM* minus its value on the original data", _num(loss["dm_star_minus_bottom"]), ""))
    return rows


def render_report(doc: dict[str, Any]) -> str:
    """Render ``report.json``'s content as a standalone HTML page."""
    hist = doc.get("class_size_histogram", [])
    histogram = (
        Markup(  # svg.py escapes its own text
            bar_chart(
                [h["label"] for h in hist],
                [h["classes"] for h in hist],
                "released classes by size (records)",
                "classes",
            )
        )
        if hist
        else None
    )
    ver = doc.get("verification", {})
    context = {
        "css": Markup(CSS),  # a constant of svg.py, not data
        "verified": bool(doc.get("verified")),
        "header": [
            str(doc.get("created", "")),
            f"safeshare {doc.get('safeshare_version', '')}",
            f"engine {doc.get('engine', '')}",
        ],
        "config": doc.get("config"),
        "input": doc.get("input"),
        # structured warnings ({code, columns, value, message}); their message is shown
        "warnings": [w["message"] if isinstance(w, dict) else str(w) for w in doc.get("warnings", [])],
        "privacy": _privacy_rows(doc),
        "dp": _dp_rows(doc),
        "columns": _column_rows(doc),
        "generalization": _generalization_rows(doc),
        "search": describe_search(doc) if "algorithm" in doc else None,
        "loss": _loss_rows(doc),
        "histogram": histogram,
        "tradeoff": _tradeoff(doc),
        "risk": risk_rows(doc),
        "verification": [
            ("passed", str(ver.get("passed"))),
            ("records in the release", _num(ver.get("records_out", 0))),
            ("smallest class in the release", _num(ver.get("min_class_size", 0))),
            ("failures", "; ".join(ver.get("failures", [])) or "none"),
        ],
        "timings": [(k, f"{float(v):.3f}") for k, v in doc.get("elapsed_s", {}).items()],
    }
    return environment().get_template("report.html.j2").render(context)
