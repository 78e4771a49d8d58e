"""What the release report says, apart from how it is laid out.

The report of a release may show only what the release itself shows (the
labels and counts of the released classes, computed in
:meth:`safeshare.workflows.anonymizer.AnonymizationResult.generalization`), the
parameters of the run, and figures about them. This module derives the parts
of report.json that are not figures of the search:

* :func:`column_treatments`: every input column's role and what the release
  did with it;
* :func:`report_warnings`: what a data custodian should know before
  publishing (uninformative QIs, implausible values a coding absorbed, a weak epsilon-safe
  delta);
* :func:`describe_search`: one sentence on what the search did (shared by the
  terminal summary and the HTML);
* :func:`portable_paths`: the configuration and input paths relative to the
  configuration's directory, so that no absolute local path leaves the machine.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Any

from safeshare.data.schema import Role, Schema
from safeshare.figures import number, percent
from safeshare.paths import shown_path
from safeshare.warning_codes import WarningCode, warning_code


@dataclass(frozen=True)
class ReportWarning:
    """What a data custodian should know before publishing, in a form a program can act on.

    Attributes
    ----------
    code: a stable identifier, one of :class:`~safeshare.warning_codes.WarningCode` (refused
        otherwise): ``uninformative-qi`` (a QI released at its top level or with one label),
        ``implausible-values`` (values far beyond a coding bound, absorbed by it: issue 30),
        ``delta-above-one-over-n`` (epsilon-safe's delta exceeds 1/N),
        ``not-differentially-private`` (epsilon-safe with the thesis' sensitivity), and the
        disclosure warnings of :mod:`safeshare.verify.disclosure`.
    message: the sentence shown to a person.
    columns: the columns it is about (may be empty).
    value: the figure it is about (a level, a delta; ``None`` when there is none).
    """

    code: str
    message: str
    columns: tuple[str, ...] = ()
    value: Any = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "code", warning_code(self.code))

    def to_dict(self) -> dict[str, Any]:
        return {
            "code": str(self.code),
            "columns": list(self.columns),
            "value": self.value,
            "message": self.message,
        }


def column_treatments(
    schema: Schema, input_columns: Sequence[str], released_columns: Sequence[str]
) -> list[dict[str, str]]:
    """Every input column, in input order, with its role and treatment.

    Treatment is ``dropped`` (not in the release), ``generalized`` (a
    quasi-identifier, released through its hierarchy at the chosen level,
    possibly level 0), ``pseudonymized`` (a keyed pseudonym), ``shifted`` (a date
    moved by its person's secret shift), ``shifted, generalized`` (a shifted date
    that is a quasi-identifier) or ``kept`` (released as it is). Reports render the
    ``columns`` key of the report when a caller provides it; this is the
    fallback derived from the schema and the written release's columns.
    """

    released = set(released_columns)
    qis = set(schema.quasi_identifiers)
    out = []
    for name in input_columns:
        role = schema.role(name)
        if name not in released:
            treatment = "dropped"
        elif role is Role.PSEUDONYM:
            treatment = "pseudonymized"
        elif role is Role.SHIFTED_DATE:
            treatment = "shifted, generalized" if name in qis else "shifted"
        elif name in qis:
            treatment = "generalized"
        else:
            treatment = "kept"
        out.append({"name": name, "role": role.value, "treatment": treatment})
    return out


def hierarchy_warnings(generalization: Sequence[Mapping[str, Any]]) -> list[ReportWarning]:
    """What the QIs' hierarchy builders noticed in the data (``implausible-values``: values far
    beyond a coding bound, which the coding would absorb silently). The messages name no value:
    they are published; ``safeshare hierarchy build`` lists the values to the custodian."""
    return [
        ReportWarning(str(w["code"]), str(w["message"]), (str(g["qi"]),))
        for g in generalization
        for w in g.get("hierarchy_warnings", [])
    ]


def uninformative_qi_warnings(generalization: Sequence[Mapping[str, Any]]) -> list[ReportWarning]:
    """QIs generalized to their top level, or released with a single label: they carry no information."""
    out = []
    advice = "consider dropping it (role identifying), which may let the other columns keep more detail"
    for g in generalization:
        level, where = released_level(g)
        top = g["height"] > 0 and level >= g["height"]
        where = "its top level" if top else where
        if g["labels"] == 1 and g.get("examples"):
            message = (
                f"quasi-identifier {g['qi']!r} is generalized to {where}, one label in every released "
                f"record ({g['examples'][0]!r}): the column carries no information; {advice}"
            )
        elif top:
            message = (
                f"quasi-identifier {g['qi']!r} is generalized to its top level ({g['labels']:,} labels "
                f"released): the column carries little information; {advice}"
            )
        else:
            continue
        out.append(ReportWarning(WarningCode.UNINFORMATIVE_QI, message, (str(g["qi"]),), level))
    return out


def released_level(g: Mapping[str, Any]) -> tuple[int, str]:
    """The level of a QI's released records and its wording: the node's level, or, in a locally
    recoded release (``records_per_level``), the lowest level of any released record
    (``levels 1-3 of 4``)."""
    if "level" in g:
        return int(g["level"]), f"level {g['level']} of {g['height']}"
    levels = sorted(int(lv) for lv, n in g.get("records_per_level", {}).items() if n)
    if not levels:
        return 0, f"level 0 of {g['height']}"
    shown = str(levels[0]) if levels[0] == levels[-1] else f"{levels[0]}-{levels[-1]}"
    return levels[0], f"level{'s' if levels[0] != levels[-1] else ''} {shown} of {g['height']}"


def delta_warning(doc: Mapping[str, Any]) -> ReportWarning | None:
    """Epsilon-safe: warn when delta > 1/N (N = records before sampling).

    With delta >= 1/N the (beta, epsilon, delta) guarantee tolerates failing
    for about one record of the input or more, the usual bound of "delta
    much smaller than 1/N" is not met. Compared on log10 so that tiny deltas
    (1e-300 and below) do not underflow.
    """
    n = doc.get("records_before_sampling")
    if not isinstance(n, int) or n <= 0:
        return None
    log10_delta = doc.get("log10_delta")
    if log10_delta is None:
        delta = doc.get("delta")
        if delta is None:
            return None
        log10_delta = math.log10(delta) if delta > 0 else -math.inf
    if float(log10_delta) <= -math.log10(n):
        return None
    shown = doc.get("delta_scientific") or number(doc.get("delta", 10.0**log10_delta), 3)
    message = (
        f"delta = {shown} exceeds 1/N = 1/{n:,} = {number(1 / n, 3)} (N = records before sampling): "
        "the guarantee may fail for about one record or more; choose a larger k or a smaller "
        "beta or epsilon' (`safeshare dp params`)"
    )
    return ReportWarning(WarningCode.DELTA_ABOVE_ONE_OVER_N, message, (), doc.get("delta"))


def report_warnings(doc: Mapping[str, Any]) -> list[ReportWarning]:
    """Everything the report of a release warns about, in the order shown."""
    out = hierarchy_warnings(doc.get("generalization", []))
    out += uninformative_qi_warnings(doc.get("generalization", []))
    delta = delta_warning(doc)
    if delta is not None:
        out.append(delta)
    warning = doc.get("warning")  # epsilon-safe's non-DP calibration
    if isinstance(warning, str) and warning:
        out.append(ReportWarning(WarningCode.NOT_DIFFERENTIALLY_PRIVATE, warning, (), doc.get("sensitivity")))
    return out


def anytime_outcome(doc: Mapping[str, Any]) -> str:
    """The anytime search's claim: proven optimal, or best found with the proven bound and the gap."""
    loss, bound, gap = doc.get("information_loss"), doc.get("lower_bound"), doc.get("gap")
    if doc.get("optimal"):
        shown = number(loss, 6) if loss is not None else "–"
        return f"proven optimal (loss {shown}, stopped: optimal)"
    if loss is None or bound is None or gap is None:
        return f"no qualifying node found (stopped: {doc.get('stop_reason')})"
    relative = doc.get("gap_relative")
    share = f" ({percent(relative)} of the loss)" if relative is not None else ""
    return (
        f"best found, loss {number(loss, 6)}, optimum >= {number(bound, 6)}, gap {number(gap, 6)}{share} "
        f"(stopped: {str(doc.get('stop_reason')).replace('_', ' ')})"
    )


def describe_search(doc: Mapping[str, Any]) -> str:
    """One sentence on what the search did; minimal nodes only for searches that compute them.

    ``algorithm: auto`` says which search ran and why (``auto_reason``) and whether its node is
    proven optimal.
    """
    reason = doc.get("auto_reason")
    if doc.get("algorithm") == "auto" and isinstance(reason, str):
        inner = _describe_one(doc, str(doc.get("auto_choice")))
        if doc.get("search") == "anytime":  # the anytime sentence already says whether it is optimal
            return f"auto: {reason}; {inner}"
        claim = "proven optimal (exact search)" if doc.get("optimal") else "no qualifying node"
        return f"auto: {reason}; {inner}; {claim}"
    return _describe_one(doc, doc.get("algorithm"))


def _describe_one(doc: Mapping[str, Any], algorithm: Any) -> str:
    """:func:`describe_search` for the search that ran, named ``algorithm``."""
    checked = f"{doc.get('checked_nodes', 0):,} of {doc.get('lattice_size', 0):,} lattice nodes checked"
    if algorithm == "epsilon-safe":
        return (
            f"{algorithm}: the utility of all {doc.get('lattice_size', 0):,} lattice nodes computed on "
            "the sample, one node drawn by the exponential mechanism"
        )
    if doc.get("search") == "anytime":
        return f"{algorithm}: {checked}; {anytime_outcome(doc)}"
    if doc.get("search") == "best-first":
        details = [checked]
        if doc.get("exact_checks") is not None:
            details.append(f"{doc['exact_checks']:,} exactly in increasing loss order")
        if doc.get("relaxation_checks"):
            details.append(f"{doc['relaxation_checks']:,} for the monotone relaxation")
        if doc.get("pruned_below_failures"):
            details.append(f"{doc['pruned_below_failures']:,} pruned below failing nodes")
        estimates = doc.get("risk_estimates")
        if isinstance(estimates, Mapping) and estimates:
            intervals = estimates.get("intervals")
            details.append(
                f"{estimates.get('nodes_estimated', 0):,} needed a risk estimate "
                f"({estimates.get('cached', 0):,} of them from the cache"
                + (f", {intervals:,} its interval" if intervals else "")
                + f"), {estimates.get('bound_rejections', 0):,} rejected by the risk bound without one"
            )
        return f"{algorithm} (best-first search, privacy models not monotone with suppression): " + ", ".join(
            details
        )
    minimal = doc.get("minimal_nodes")
    if minimal is None:
        return f"{algorithm}: {checked}"
    return f"{algorithm}: {checked}, {minimal:,} minimal qualifying nodes compared"


def portable_paths(doc: dict[str, Any]) -> None:
    """Make ``doc['config']`` and ``doc['input']`` relative to the configuration's directory.

    Reports travel with the release; absolute paths would publish the
    custodian's directory layout (user names, project names). The config is
    named by its file name, the input relative to the config's directory when it
    lies inside it, else (and without a config) by its file name
    (:func:`safeshare.paths.shown_path`).
    """
    config = doc.get("config")
    base = None
    if isinstance(config, str | PurePath) and str(config):
        path = Path(config)
        base = (path if path.is_absolute() else Path.cwd() / path).resolve().parent
        doc["config"] = path.name
    source = doc.get("input")
    if isinstance(source, str | PurePath) and str(source):
        doc["input"] = shown_path(str(source), base)


def risk_rows(doc: Mapping[str, Any]) -> dict[str, Any] | None:
    """The report's risk section as rows ``(measure, kind, input key, release key)``.

    Each figure is named by its key path in report.json (``risk.release.B``) and its kind
    (``count``, ``risk``, ``share``: a share of records, or of people with a person key, shown as a
    percentage), so that the HTML shows report.json's figures and nothing else (class sizes only).
    With a person key (``risk.unit`` people, issue 32) the labels name the people and the per-person
    formulas of :mod:`safeshare.risk.persons`; a release that links a person's records adds the
    measures on the released profiles (``risk.linked``; the input has no such side: ``risk.linked_input``
    is never written, so its cells show none).
    """
    risk = doc.get("risk")
    if not isinstance(risk, Mapping):
        return None
    estimator = str(risk.get("estimator", ""))
    threshold = risk.get("threshold")
    people = risk.get("unit") == "people"  # issue 32: f_p, the people of a person's most exposed class
    spec = [
        ("people" if people else "records", "count", "n"),
        ("equivalence classes", "count", "classes"),
        (
            "prosecutor risk, highest (1 / fewest people of a class)"
            if people
            else "prosecutor risk, highest (1 / smallest class)",
            "risk",
            "prosecutor.max",
        ),
        (
            "prosecutor risk, mean over people (1 / people of each one's most exposed class)"
            if people
            else "prosecutor risk, mean (J / n)",
            "risk",
            "prosecutor.mean",
        ),
        (
            f"share of {'people' if people else 'records'} with prosecutor risk above {threshold}",
            "share",
            "prosecutor.share_above_threshold",
        ),
        ("journalist risk, highest", "risk", "journalist.max"),
        ("journalist risk, mean", "risk", "journalist.mean"),
        ("marketer risk", "risk", "marketer"),
        (
            "A = (1/N) sum over people of 1 / f_p (population-to-sample match rate)"
            if people
            else "A = J / N (population-to-sample match rate)",
            "risk",
            "A",
        ),
        ("B (sample-to-population match rate)", "risk", "B"),
        (f"B estimated by {estimator}", "risk", f"B_estimate.{estimator}"),
        (f"95 % interval of the {estimator} estimate, low", "risk", f"B_interval.{estimator}.0"),
        (f"95 % interval of the {estimator} estimate, high", "risk", f"B_interval.{estimator}.1"),
    ]
    sides = [risk.get("input") or {}, risk.get("release") or {}]
    if any(isinstance(side, Mapping) and (side.get("B_no_estimate") or {}).get(estimator) for side in sides):
        # an estimator without an estimate says why (its B_estimate is null then)
        spec.append((f"no estimate by {estimator}", "text", f"B_no_estimate.{estimator}"))
    rows = [(label, kind, f"risk.input.{path}", f"risk.release.{path}") for label, kind, path in spec]
    linked = risk.get("linked")
    if isinstance(linked, Mapping):  # the released profiles of linked records: the release's side only
        column = linked.get("column")
        for label, kind, path in (
            (f"linked by {column}: people with a released profile", "count", "n"),
            (f"linked by {column}: prosecutor risk, highest (1 / fewest people sharing a profile)", "risk",
             "prosecutor.max"),
            (f"linked by {column}: prosecutor risk, mean over people", "risk", "prosecutor.mean"),
            (f"linked by {column}: people whose profile is their own", "count", "sample_uniques"),
        ):  # fmt: skip
            rows.append((label, kind, f"risk.linked_input.{path}", f"risk.linked.{path}"))
    return {
        "population": risk.get("population"),
        "unit": "people" if people else "records",
        "rows": rows,
    }


def frontier_sentence(frontier: Mapping[str, Any] | None) -> str | None:
    """One sentence on the minimal frontier's ties at the optimum (issue 33), for every view;
    ``None`` without a frontier. Names each tying node's suppression beside the chosen one's and
    the tie-break rule, so a reader sees that the choice among them is the rule's."""
    if not frontier:
        return None
    nodes = frontier["nodes"]
    chosen = next((n for n in nodes if n["chosen"]), None)
    ties = [n for n in nodes if n["tie"] and not n["chosen"]]
    count = f"{frontier['count']:,} minimal node{'s' if frontier['count'] != 1 else ''}"
    if chosen is None or not ties:
        return f"{count}; no other shares the optimum's loss"
    others = "; ".join(
        f"{_levels_text(n['levels'])} suppresses {n['suppressed_records']:,} records" for n in ties
    )
    return (
        f"{count}; {len(ties)} other{'s' if len(ties) != 1 else ''} share{'' if len(ties) != 1 else 's'} "
        f"the optimum's {frontier['metric']} = {chosen['loss']:.6g} (the released node suppresses "
        f"{chosen['suppressed_records']:,} records): {others}. Tie-break: {frontier['tie_break']}"
    )


def _levels_text(levels: Mapping[str, int]) -> str:
    """The levels of a node above 0, e.g. ``age 2, education 2`` (``all at level 0`` if none)."""
    raised = [f"{q} {lv}" for q, lv in levels.items() if lv]
    return ", ".join(raised) if raised else "all at level 0"
