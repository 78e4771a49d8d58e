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

from safeshare.figures import against, count, number, percent
from safeshare.metrics.loss import weights_text
from safeshare.report.attack_section import attack_section, certificate_rows
from safeshare.report.content import describe_search, frontier_sentence, released_level, risk_rows
from safeshare.report.risk_certificate import risk_certificate_rows
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
        return count(v)
    return number(v, digits)


#: How a figure of report.json is written in the page, by kind (tests/test_report_evidence.py
#: reads every figure back and compares it with report.json's value).
FIGURE_KINDS = ("count", "risk", "share", "bytes", "text")


def value_at(doc: Any, path: str) -> Any:
    """The value of report.json at a dotted key path (``risk.release.B``, ``evidence.files.0.sha256``)."""
    value = doc
    for key in path.split("."):
        if isinstance(value, list | tuple):
            value = value[int(key)] if key.isdigit() and int(key) < len(value) else None
        elif isinstance(value, dict):
            value = value.get(key)
        else:
            return None
    return value


def format_figure(value: Any, kind: str) -> str:
    """A figure as shown (:mod:`safeshare.figures`): counts with thousands separators, risks with
    4 significant digits, shares of records as percentages (3 significant digits), never rounded
    to a value they cannot have; ``–`` for none."""
    if value is None or (isinstance(value, float) and value != value):
        return "–"
    if kind == "text":
        return str(value)
    if kind in ("count", "bytes"):
        return count(value)
    if kind == "share":
        return percent(value)
    return number(value)


def figure(doc: dict[str, Any], path: str, kind: str = "risk", text: str | None = None) -> Markup:
    """The figure of report.json at ``path``, marked with its key so that a reader (or a test)
    can tell where it comes from: ``<span class="fig" data-key=... data-kind=...>``; ``text``:
    the figure as already written (:func:`safeshare.figures.compared`), else :func:`format_figure`."""
    assert kind in FIGURE_KINDS, kind
    if text is None:
        text = format_figure(value_at(doc, path), kind)
    return Markup('<span class="fig" data-key="{}" data-kind="{}">{}</span>').format(path, kind, text)


def _privacy_rows(doc: dict[str, Any]) -> list[tuple[str, str]]:
    """(what, value) rows of the privacy table: the models, what the release achieves, the risk."""
    privacy = doc.get("privacy", {})
    models = ", ".join(
        f"{name} ({', '.join(f'{k}={v}' for k, v in params.items())})"
        for name, params in privacy.get("models", {}).items()
    )
    rows = [
        ("privacy models", models),
        ("suppression limit", f"{percent(float(privacy.get('max_suppression', 0)), 4)} of records"),
    ]
    if "records_in" in doc:
        rows.append(
            (
                "records",
                f"{_num(doc['records_in'])} in · {_num(doc.get('suppressed_records'))} suppressed · "
                f"{_num(doc.get('records_out'))} released",
            )
        )
    people = doc.get("people") if isinstance(doc.get("people"), dict) else None
    if people is not None:  # issue 32: the unit a privacy officer signs for
        per = people.get("records_per_person") or {}
        rows.append(
            (
                "people",
                f"{_num(people.get('people_in'))} in ({_num(per.get('people_with_several'))} with several "
                f"records, up to {_num(per.get('max'))}) · {_num(people.get('people_out'))} released · "
                f"{_num(people.get('people_suppressed'))} wholly suppressed (by the person key "
                f"{people.get('column')}; the suppression limit counts {people.get('suppression_unit')})",
            )
        )
    if "equivalence_classes" in doc:
        smallest = int(doc.get("min_class_size", 0))
        fewest = int(people.get("min_class_people") or 0) if people is not None else smallest
        unit, per_whom = ("people", "person") if people is not None else ("records", "record")
        sizes = f"smallest {smallest:,} records" + (f", {fewest:,} people" if people is not None else "")
        rows.append(("equivalence classes", f"{doc['equivalence_classes']:,} ({sizes})"))
        k = doc.get("k")
        bounded = bool(((doc.get("headline") or {}).get("prosecutor") or {}).get("bounded", True))
        if isinstance(k, int) and k >= 2:
            prosecutor = (
                f"at most 1/{k} per {per_whom} (k-anonymity{' in people' if people is not None else ''}, "
                f"k = {k}); the smallest class holds {fewest:,} {unit}: 1/{fewest:,} = "
                f"{number(1 / max(fewest, 1))}"
            )
            if not bounded:
                prosecutor += (
                    " (against an adversary who knows the quasi-identifiers only; not against the informed "
                    "adversary of the headline)"
                )
        else:  # never the bare 1.0 of a singleton: it comes with what bounds the release
            noun = (
                ("person" if fewest == 1 else "people")
                if people is not None
                else f"record{'s' if smallest != 1 else ''}"
            )
            prosecutor = (
                f"not bounded per {per_whom} (no k-anonymity): the smallest class holds {fewest:,} {noun}"
                + (
                    "; the risk threshold bounds the average B (above)"
                    if "risk" in privacy.get("models", {})
                    else ""
                )
            )
        rows.append(("re-identification risk (prosecutor)", prosecutor))
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
        known = ", ".join(f"{c} p={number(p, 6)}" for c, p in detail.get("knowledge", {}).items())
        rows.append(
            (
                "m-concealing (thesis §5.2) achieved",
                f"m = {number(doc['m'])}, 1/m = {number(doc['inverse_m'])} "
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
        ("1/N", "–" if not n else number(1 / int(n), 3)),
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
        more = ""
        if g["labels"] > len(g["examples"]):  # examples here; every label in the evidence section
            more = ", … (every label: the evidence section)" if doc.get("evidence") else ", …"
        lowest, _ = released_level(g)
        rows.append(
            {
                "qi": g["qi"],
                "level": g["level"] if "level" in g else _per_level(g),
                "height": g["height"],
                "labels": f"{g['labels']:,}: " + ", ".join(shown) + more,
                "top": g["height"] > 0 and lowest >= g["height"],
            }
        )
    return rows


def _per_level(g: dict[str, Any]) -> str:
    """A locally recoded QI's levels with their released records: ``0 (30,980) · 1 (1,535)``."""
    per_level = sorted((int(lv), int(n)) for lv, n in g.get("records_per_level", {}).items() if n)
    return " · ".join(f"{lv} ({n:,})" for lv, n in per_level)


def _local_recoding(doc: dict[str, Any]) -> dict[str, Any] | None:
    """Local recoding: the rounds (node, records released each) and the cell-level loss of the
    global optimum's release beside the mixed release's (the same definitions)."""
    local = doc.get("local_recoding")
    if not local:
        return None
    rounds = [
        (
            "0 (global optimum)" if r["round"] == 0 else str(r["round"]),
            ", ".join(f"{q}={lv}" for q, lv in r["levels"].items()),
            _num(r["records_searched"]),
            _num(r["suppression_limit"]),
            _num(r["released"]),
            _num(r["returned"]),
            _num(r["suppressed_after"]),
        )
        for r in local["rounds"]
    ]
    g, m = local["loss_global"], local["loss_mixed"]
    measures = [
        ("records released", "released", 0),
        ("records suppressed", "suppressed", 0),
        ("equivalence classes", "classes", 0),
        ("precision loss (cell level, [0, 1])", "prec", 4),
        ("non-uniform entropy (normalized)", "entropy_normalized", 4),
        ("DM* per record (normalized)", "dm_star_normalized", 5),
    ]
    loss = [
        (
            title,
            _num(g.get(key)) if not digits else number(float(g[key]), digits),
            _num(m.get(key)) if not digits else number(float(m[key]), digits),
        )
        for title, key, digits in measures
        if key in g and key in m
    ]
    return {"rounds": rounds, "loss": loss, "stop": f"{local['stop']} ({local['stop_reason']})"}


def _column_rows(doc: dict[str, Any]) -> list[dict[str, str]]:
    levels = {g["qi"]: g for g in doc.get("generalization", [])}
    rows = []
    for c in doc.get("columns", []):  # release.py: given by the caller, or column_treatments()
        g = levels.get(c["name"])
        detail = released_level(g)[1] if g is not None else ""
        rows.append({**c, "detail": detail})
    return rows


def _risk(doc: dict[str, Any]) -> dict[str, Any] | None:
    section = risk_rows(doc)
    if section is None:
        return None
    rows = [
        (label, figure(doc, before, kind), figure(doc, after, kind))
        for label, kind, before, after in section["rows"]
    ]
    return {
        "population_size": figure(doc, "risk.population_size", "count"),
        "population": section["population"],
        "unit": section["unit"],
        "rows": rows,
    }


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
        f"optimal node's normalized {doc.get('metric_label') or doc.get('metric')} by suppression limit",
        "suppression limit (%)",
        "normalized loss",
        highlight=chosen,
    )
    rows = []
    for t in tradeoff:
        levels = ", ".join(f"{q}={lv}" for q, lv in t.get("levels", {}).items()) or "no solution"
        label = percent(float(t["max_suppression"]), 4) + (" ◀ chosen" if t.get("chosen") else "")
        rows.append(
            (
                label,
                _num(t.get("information_loss_normalized"), 4),
                f"{t.get('suppressed_records', 0):,}",
                levels,
            )
        )
    return {"chart": Markup(chart), "rows": rows}  # svg.py escapes its own text


#: Rows of the minimal-nodes table: every tie and at least this many nodes of least loss.
FRONTIER_ROWS = 10


def _frontier(doc: dict[str, Any]) -> dict[str, Any] | None:
    """The minimal nodes of least loss with their suppression and the ties at the optimum, with
    the sentence every view shows (:func:`~safeshare.report.content.frontier_sentence`)."""
    frontier = doc.get("frontier")
    if not frontier:
        return None
    nodes = frontier["nodes"]
    shown = [n for i, n in enumerate(nodes) if i < FRONTIER_ROWS or n["tie"] or n["chosen"]]
    return {
        "sentence": frontier_sentence(frontier),
        "metric": frontier["metric"],
        "count": f"{frontier['count']:,}",
        "shown": len(shown),
        "rows": [
            {
                "node": "[" + ", ".join(str(v) for v in n["node"]) + "]",
                "levels": ", ".join(f"{q} {lv}" for q, lv in n["levels"].items() if lv) or "none",
                "loss": _num(n["loss"]),
                "suppressed": f"{n['suppressed_records']:,}",
                "chosen": n["chosen"],
                "tie": n["tie"],
            }
            for n in shown
        ],
    }


def _before_after(doc: dict[str, Any]) -> dict[str, Any] | None:
    """Per column: its categories' records in the input and released, the share lost, flagged
    above the warning's share (report.json's ``before_after``)."""
    ba = doc.get("before_after")
    if not ba:
        return None
    share = float(ba["loss_share"])
    columns = []
    for col in ba["columns"]:
        cats = [*col["categories"], *([col["small"]] if col.get("small") else [])]
        worst = max((c["lost"] for c in col["categories"]), default=0.0)
        columns.append(
            {
                "column": col["column"],
                "role": col["role"],
                "skipped": col.get("skipped"),
                "summary": (
                    f"{len(col['categories'])} categories of at least {ba['small_cell']} records; "
                    f"most lost: {percent(worst)}"
                ),
                "flagged": worst > share,
                "rows": [
                    {
                        "value": c["value"],
                        "before": f"{c['before']:,}",
                        "after": f"{c['after']:,}",
                        "lost": percent(c["lost"]),
                        "flagged": c is not col.get("small") and c["lost"] > share,
                    }
                    for c in cats
                ],
            }
        )
    return {"share": percent(share), "small_cell": ba["small_cell"], "columns": columns, "notes": ba["notes"]}


def _loss_rows(doc: dict[str, Any]) -> list[tuple[str, str, str]]:
    loss = doc.get("loss", {})
    rows = []
    for key, title in METRIC_TITLES.items():
        if key in loss:
            mark = ""
            if key == doc.get("metric"):  # as minimized: weighted Prec names its weights (issue 30, item 13)
                weights = doc.get("metric_weights") or {}
                mark = f", weighted ({weights_text(weights)}) (optimized)" if weights else " (optimized)"
            if doc.get("local_recoding"):  # the search's metric: of the global node, not the mixed release
                mark += ", global node (round 0)"
            rows.append((title + mark, _num(loss[key]), _num(loss.get(f"{key}_normalized"), 4)))
    if "dm_star_minus_bottom" in loss:
        rows.append(("DM* minus its value on the original data", _num(loss["dm_star_minus_bottom"]), ""))
    return rows


def _headline(doc: dict[str, Any]) -> dict[str, Any] | None:
    """The result's figures (report.json's ``headline``), each marked with its key."""
    head = doc.get("headline")
    if not isinstance(head, dict):
        return None
    rows: list[tuple[str, Markup]] = []
    risk = head.get("risk")
    if isinstance(risk, dict):
        relation = "≤" if risk.get("holds") else ">"
        achieved, threshold = None, None  # each as format_figure, unless both are numbers:
        if isinstance(risk.get("achieved"), int | float) and isinstance(risk.get("threshold"), int | float):
            achieved, threshold = against(risk["achieved"], risk["threshold"], bool(risk.get("holds")))
        rows.append(
            (
                f"{risk.get('measure')}, achieved against the threshold",
                Markup("{} {} {}").format(
                    figure(doc, "headline.risk.achieved", text=achieved),
                    relation,
                    figure(doc, "headline.risk.threshold", text=threshold),
                ),
            )
        )
        how = "re-checked by the verifier on the written release" if risk.get("rechecked") else "not written"
        estimator = f"estimator {risk.get('estimator')}, " if risk.get("estimator") else ""
        rows.append(
            (
                "how it was measured",
                Markup("{}population N = {}; {}").format(
                    estimator, figure(doc, "headline.risk.population_size", "count"), how
                ),
            )
        )
        source = risk.get("reason") or risk.get("source") or ""
        rows.append(("why this threshold", Markup("{}").format(source)))
    prosecutor = head.get("prosecutor")
    if isinstance(prosecutor, dict):
        # issue 32: with a person key the bound is per person and the smallest class is in people
        in_people = prosecutor.get("unit") == "people"
        per = "person" if in_people else "record"
        smallest = (
            Markup("{} people").format(figure(doc, "headline.prosecutor.smallest_class_people", "count"))
            if in_people
            else figure(doc, "headline.prosecutor.smallest_class", "count")
        )
        if prosecutor.get("bounded"):
            value = Markup("at most 1/{} = {} per {} (smallest class {})").format(
                prosecutor.get("k"), figure(doc, "headline.prosecutor.max"), per, smallest
            )
        elif prosecutor.get("k") and prosecutor.get("informed"):
            value = Markup(
                "at most 1/{} per {} against an adversary who knows the quasi-identifiers (smallest "
                "class {}), not against the informed adversary: below"
            ).format(prosecutor.get("k"), per, smallest)
        else:
            value = Markup(
                "not bounded per {} (no k-anonymity): the smallest class holds {}{}, whose "
                "prosecutor risk is {}; {}"
            ).format(
                per,
                smallest,
                "" if in_people else " record(s)",
                figure(doc, "headline.prosecutor.max"),
                "the threshold bounds an average" if isinstance(risk, dict) else "no threshold applies",
            )
        rows.append(("prosecutor risk", value))
        informed = doc.get("informed_adversary")
        if isinstance(informed, dict):
            rows.append(("informed adversary", _informed_row(doc, informed)))
    return {"text": head.get("text"), "verified": bool(head.get("verified")), "rows": rows}


def _informed_row(doc: dict[str, Any], informed: dict[str, Any]) -> Markup:
    """What the informed adversary (kept shifted dates known within max_days, coarse pseudonyms
    known: report.json's ``informed_adversary``) achieves, with its figures marked."""
    known = [f"{d['column']} within {d['max_days']} days" for d in informed.get("dates", [])]
    known += [f"{p['column']} (coarse pseudonym)" for p in informed.get("coarse_pseudonyms", [])]
    text = Markup("knows {} besides the quasi-identifiers: singles out up to {} of {} records").format(
        ", ".join(known),
        figure(doc, "informed_adversary.singled_out", "count"),
        figure(doc, "informed_adversary.records", "count"),
    )
    if informed.get("dates"):
        text += Markup(" ({} on average over the true dates)").format(
            figure(doc, "informed_adversary.singled_out_expected")
        )
    text += Markup("; fewest candidates of a record {}").format(
        figure(doc, "informed_adversary.smallest_candidates", "count")
    )
    if informed.get("k") is not None:
        text += Markup("; {} records keep fewer than k = {}: {}").format(
            figure(doc, "informed_adversary.below_k", "count"),
            informed.get("k"),
            "the bound 1/k holds against them"
            if informed.get("bound_holds")
            else "the bound 1/k does not hold",
        )
    return text


def _certificate_people(doc: dict[str, Any], cert: dict[str, Any]) -> list[tuple[str, Any]]:
    """The cover's rows about people (report.json's ``certificate``, issue 32): the unit its counts
    are in, the people in and released with the smallest class in people (re-checked on the file
    when written), each link column's profiles with the choice of a release without linkage, and
    the repeated-person warnings of a run without a person key."""
    rows: list[tuple[str, Any]] = []
    if cert.get("unit") == "people":
        rows.append(
            (
                "people",
                Markup(
                    "{} people in, {} released (by the person key {}); every released class holds at "
                    "least {} people; the suppression limit counts {}"
                ).format(
                    figure(doc, "certificate.people", "count"),
                    figure(doc, "certificate.people_released", "count"),
                    cert.get("person_key"),
                    figure(doc, "certificate.min_class_people", "count"),
                    cert.get("suppression_unit"),
                ),
            )
        )
    elif cert.get("unit"):
        rows.append(("counted in", str(cert["unit"])))
    for i, linked in enumerate(cert.get("linked_records") or []):
        at = f"certificate.linked_records.{i}"
        rows.append(
            (
                f"linked records ({linked.get('column')})",
                Markup(
                    "{} of {} people have a profile (their records' classes together) that fewer than {} "
                    "people share, {} a profile of their own ({}); {}"
                ).format(
                    figure(doc, f"{at}.below_k", "count"),
                    figure(doc, f"{at}.people", "count"),
                    linked.get("k"),
                    figure(doc, f"{at}.singled_out", "count"),
                    "re-checked on the written file" if linked.get("rechecked") else "as found by the search",
                    linked.get("alternative") or "",
                ),
            )
        )
    for message in cert.get("repeated_persons") or []:
        rows.append(("repeated persons", str(message)))
    return rows


def _certificate(doc: dict[str, Any]) -> dict[str, Any] | None:
    """The cover a privacy officer signs: data set, purpose, threshold and reason, result,
    hashes, approver (report.json's ``certificate``, ``headline`` and ``evidence``)."""
    cert = doc.get("certificate")
    if not isinstance(cert, dict):
        return None
    evidence = doc.get("evidence") or {}
    threshold = evidence.get("threshold") or {}

    def param(name: str, key: str, value: Any) -> Any:
        if isinstance(value, bool) or not isinstance(value, int | float):
            return value
        return figure(doc, f"privacy.models.{name}.{key}", "count" if isinstance(value, int) else "risk")

    models = Markup(", ").join(
        Markup("{} ({})").format(
            name,
            Markup(", ").join(
                Markup("{}={}").format(k, param(name, k, v)) for k, v in params.items() if v is not None
            ),
        )
        for name, params in doc.get("privacy", {}).get("models", {}).items()
    )
    rows: list[tuple[str, Any]] = [
        (
            "data set",
            Markup("{} ({} records in, {} released)").format(
                cert.get("data_set") or "–",
                figure(doc, "records_in", "count"),
                figure(doc, "records_out", "count"),
            ),
        ),
        ("purpose", cert.get("purpose") or "not stated (purpose: in the configuration)"),
        *_certificate_people(doc, cert),
        ("privacy models", models),
        *_t_closeness_rows(doc),
    ]
    if threshold:
        reason = threshold.get("reason")
        rows.append(
            (
                "threshold",
                Markup("{} = {}: {}{}").format(
                    threshold.get("measure"),
                    figure(doc, "evidence.threshold.value"),
                    threshold.get("source"),
                    Markup("; reason given: {}").format(reason) if reason else "",
                ),
            )
        )
    rows.append(("result", (doc.get("headline") or {}).get("text") or "–"))
    rows += certificate_rows(doc, figure)  # issue 34: the attack beside B
    rows.append(
        ("verified", "yes: re-checked independently on the written file" if doc.get("verified") else "no")
    )
    hashes = [
        (i, f)
        for i, f in enumerate(evidence.get("files", []))
        if f.get("role") in ("release", "input", "config")
    ]
    return {
        "rows": rows,
        "hashes": [(f["role"], f["path"], _digest(doc, i, f)) for i, f in hashes],
        "approved_by": cert.get("approved_by"),
        "ledger": cert.get("ledger"),
        "governance": _governance_rows(cert.get("governance")),
        "second_reviewer": (cert.get("governance") or {}).get("second_reviewer"),
        "coverage": cert.get("coverage"),
        "warnings": _certificate_warnings(cert),
    }


def _certificate_warnings(cert: dict[str, Any]) -> list[dict[str, Any]] | None:
    """Every warning of the run as the certificate lists it (``certificate.warnings``, issue 33):
    its code, what it found, whether it contradicts the headline and why, and who acknowledged
    it; ``None`` for a report without the list (an older report)."""
    marks = cert.get("warnings")
    if not isinstance(marks, list):
        return None
    return [
        {
            "index": i,
            "code": m.get("code", ""),
            "message": m.get("message", ""),
            "contradicts": bool(m.get("contradicts")),
            "acknowledged": bool(m.get("acknowledged")),
            "reason": m.get("reason", ""),
            "status": (
                f"acknowledged by {m.get('acknowledged_by')}"
                if m.get("acknowledged")
                else ("NOT acknowledged" if m.get("contradicts") else "caveat")
            ),
        }
        for i, m in enumerate(marks)
        if isinstance(m, dict)
    ]


#: The governance fields as the certificate names them, in order.
GOVERNANCE_ROWS = (
    ("recipient", "recipient"),
    ("recipient_kind", "recipient is"),
    ("release_model", "release model"),
    ("invasiveness", "invasion of privacy"),
    ("review_date", "review date"),
    ("expiry_date", "expiry date"),
    ("second_reviewer", "second reviewer"),
    ("credentials", "expert's credentials"),
)


def _governance_rows(gov: dict[str, Any] | None) -> list[tuple[str, str]]:
    """The certificate's context rows (report.json's ``certificate.governance``); a field not
    given says so."""
    if gov is None:
        return [("governance", "not given (governance: in the configuration; see the coverage table)")]
    rows = [(title, str(gov.get(key) or "not given")) for key, title in GOVERNANCE_ROWS]
    threat = gov.get("threat_model") or {}
    rows += [(f"threat: {q}", str(threat.get(q) or "not given")) for q in ("motives", "capacity", "controls")]
    return rows


def _t_closeness_rows(doc: dict[str, Any]) -> list[tuple[str, Any]]:
    """t-closeness as the verifier measured it on the written file: each sensitive column's largest
    class distance to the input's distribution (what the model bounds) and to the release's own
    (what a recipient, who lacks the input, can recompute: pycanon's t; issue 33)."""
    checks = ((doc.get("verification") or {}).get("checks") or {}).get("models") or {}
    value = (checks.get("t-closeness") or {}).get("value")
    if not isinstance(value, dict):
        return []
    parts = []
    for column in value.get("max_distance_to_input") or {}:
        parts.append(
            Markup("{}: {} to the input's distribution, {} to the release's own").format(
                column,
                figure(doc, f"verification.checks.models.t-closeness.value.max_distance_to_input.{column}"),
                figure(doc, f"verification.checks.models.t-closeness.value.max_distance_to_release.{column}"),
            )
        )
    if not parts:
        return []
    note = Markup(" (the model bounds the first; a recipient can recompute only the second)")
    return [("t-closeness on the file", Markup("; ").join(parts) + note)]


#: What the report says in place of the SHA-256 of a file whose digest is not published.
DIGEST_IN_LEDGER = "not published (it would confirm guesses of unreleased records): in the custodian's ledger"


def _digest(doc: dict[str, Any], i: int, file: dict[str, Any]) -> Markup | str:
    """The SHA-256 of the evidence's ``i``-th file, or why it is not published (the input and
    hierarchy files: :data:`~safeshare.workflows.evidence.UNPUBLISHED_DIGESTS`)."""
    if not file.get("sha256"):
        return DIGEST_IN_LEDGER
    return figure(doc, f"evidence.files.{i}.sha256", "text")


def _evidence(doc: dict[str, Any]) -> dict[str, Any] | None:
    """The evidence section (report.json's ``evidence``), figures marked with their keys."""
    evidence = doc.get("evidence")
    if not isinstance(evidence, dict):
        return None
    attacks = []
    for i, a in enumerate(evidence.get("attack_models", [])):
        value = figure(doc, f"evidence.attack_models.{i}.value") if a.get("value") is not None else "–"
        attacks.append({**a, "figure": value})
    files = [
        {
            **f,
            "size": figure(doc, f"evidence.files.{i}.bytes", "bytes") if f.get("sha256") else "–",
            "digest": _digest(doc, i, f),
        }
        for i, f in enumerate(evidence.get("files", []))
    ]
    seeds = ", ".join(f"{k} = {v}" for k, v in (evidence.get("seeds") or {}).items()) or "none given"
    ids = evidence.get("identifiers")
    identifiers = None
    if isinstance(ids, dict):
        parts = [
            f"{p['column']} (pseudonym, HMAC-SHA256, {p['length']} hex digits)"
            for p in ids.get("pseudonyms", [])
        ]
        parts += [
            f"{d['column']} (shifted per {d['person']} by up to {d['max_days']} days, format {d['format']})"
            for d in ids.get("shifted_dates", [])
        ]
        identifiers = {"columns": "; ".join(parts)}
    return {
        "attacks": attacks,
        "threshold": evidence.get("threshold"),
        "qis": evidence.get("quasi_identifiers", []),
        "checks": evidence.get("verifier_checks", []),
        "files": files,
        "software": [
            ("safeshare", evidence.get("software_version")),
            ("engine", evidence.get("engine")),
            ("seeds", seeds),
        ],
        "identifiers": identifiers,
    }


def _rechecked(doc: dict[str, Any]) -> list[tuple[str, Any]]:
    """What the verifier re-checked beyond classes and suppression, each model by name, with
    the re-computed figure against its threshold (report.json's ``verification.checks.models``)."""
    models = ((doc.get("verification") or {}).get("checks") or {}).get("models") or {}
    rows: list[tuple[str, Any]] = []
    for name, check in models.items():
        params = check.get("params", {})
        verdict = "holds" if check.get("passed") else "FAILS"
        if "value" in check and "threshold" in params:
            rows.append(
                (
                    f"{name} re-checked",
                    Markup("{} = {} against the threshold {}: {} ({}N = {})").format(
                        params.get("measure", ""),
                        figure(doc, f"verification.checks.models.{name}.value"),
                        figure(doc, f"verification.checks.models.{name}.params.threshold"),
                        verdict,
                        f"{params['estimator']}, " if params.get("estimator") else "",
                        figure(doc, f"verification.checks.models.{name}.params.population_size", "count"),
                    ),
                )
            )
        else:
            shown = ", ".join(f"{k} = {v}" for k, v in params.items())
            rows.append((f"{name} re-checked", f"{shown}: {verdict}"))
    if "identifiers" in ((doc.get("verification") or {}).get("checks") or {}):
        ids = doc["verification"]["checks"]["identifiers"]
        rows.append(
            (
                "identifiers re-checked",
                Markup("{}: pseudonyms and shifted dates recomputed from the key for {} records").format(
                    ", ".join(ids.get("columns", [])),
                    figure(doc, "verification.checks.identifiers.records_checked", "count"),
                ),
            )
        )
    return rows


def _verification_people(ver: dict[str, Any]) -> list[tuple[str, str]]:
    """The verifier's people check (``verification.checks.persons``, issue 32): people counted on
    the written file, the fewest in a class, against k in people."""
    persons = (ver.get("checks") or {}).get("persons")
    if not isinstance(persons, dict):
        return []
    return [
        ("people in the release", f"{_num(persons.get('people_out'))} (by {persons.get('column')})"),
        (
            "smallest class in people",
            f"{_num(persons.get('min_class_people'))} (k = {persons.get('k')} in people: "
            f"{'holds' if persons.get('passed') else 'FAILS'})",
        ),
    ]


def render_report(doc: dict[str, Any], only_certificate: bool = False) -> str:
    """Render ``report.json``'s content as a standalone HTML page (``only_certificate``: the
    certificate alone, the page :mod:`safeshare.report.pdf` prints)."""
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
        # structured warnings ({code, columns, value, message}): the code and the message
        "warnings": [
            {"code": w.get("code", ""), "message": w.get("message", "")}
            if isinstance(w, dict)
            else {"code": "", "message": str(w)}
            for w in doc.get("warnings", [])
        ],
        "headline": _headline(doc),
        "certificate": _certificate(doc),
        "risk_certificate": risk_certificate_rows(doc, figure),  # issue 33: N, band, spread
        "evidence": _evidence(doc),
        "rechecked": _rechecked(doc),
        "privacy": _privacy_rows(doc),
        "dp": _dp_rows(doc),
        "columns": _column_rows(doc),
        "generalization": _generalization_rows(doc),
        "search": describe_search(doc) if "algorithm" in doc else None,
        "frontier": _frontier(doc),
        "before_after": _before_after(doc),
        "local": _local_recoding(doc),
        "loss": _loss_rows(doc),
        "histogram": histogram,
        "tradeoff": _tradeoff(doc),
        "risk": _risk(doc),
        "attack": attack_section(doc, figure),
        "verification": [
            ("passed", str(ver.get("passed"))),
            ("records in the release", _num(ver.get("records_out", 0))),
            ("smallest class in the release", _num(ver.get("min_class_size", 0)) + " records"),
            *_verification_people(ver),
            ("failures", "; ".join(ver.get("failures", [])) or "none"),
        ],
        "timings": [(k, f"{float(v):.3f}") for k, v in doc.get("elapsed_s", {}).items()],
        "only_certificate": only_certificate,
    }
    return environment().get_template("report.html.j2").render(context)
