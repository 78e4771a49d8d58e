"""The one result of an anonymization run: :class:`Release`.

Everything a user sees of a run is rendered from one :class:`Release`: the terminal
summary (``safeshare anonymize``), report.json (:attr:`Release.report`, written as it
is), report.html (rendered from :attr:`Release.report`), ``--json`` and the Python API
(:func:`safeshare.api.anonymize` returns it). So they cannot disagree.

A release is made of sections, each a field:

* :attr:`Release.input`: the input's profile (source, records, every column's role and
  treatment);
* :attr:`Release.choice`: the chosen node and why (the search, its figures, one sentence);
* :attr:`Release.output`: the release itself (file, records, classes, class-size histogram);
* :attr:`Release.privacy`: the privacy models, the suppression limit, what the release achieves;
* :attr:`Release.risk`: the re-identification risk of the input and of the release, with
  the same estimator and the same population size N (exact values where the population
  is known);
* :attr:`Release.utility`: information loss (in :attr:`choice`), the suppression / loss
  trade-off and m-concealing, when computed;
* :attr:`Release.sampling`: epsilon-safe's Bernoulli sample and guarantee, when it ran;
* :attr:`Release.local_recoding`: the rounds of local recoding (node and records released
  each), the cell-level loss of the global and of the mixed release, the stop reason, when
  it ran (the other sections then describe the mixed release);
* :attr:`Release.verification`: the independent re-check of the written file;
* :attr:`Release.provenance`: the configuration (its file name and every validated
  setting), the version, the seeds;
* :attr:`Release.warnings`: structured warnings ``{code, columns, value, message}`` (among
  them the disclosure warnings over the written release, :mod:`safeshare.verify.disclosure`);
* :attr:`Release.informed_adversary`: what an adversary who also knows the kept shifted dates
  (within ``max_days``) and the coarse pseudonyms achieves on the written release
  (:mod:`safeshare.verify.informed`), when it has such columns;
* :attr:`Release.headline`: the result in one sentence with its figures (the achieved risk
  against the threshold, re-checked on the file; the prosecutor figure with its context);
* :attr:`Release.evidence`: what a privacy officer signs (attack models, threshold and its
  source, QIs with hierarchies and every released label, the verifier's checks, SHA-256 of
  every file; :mod:`safeshare.workflows.evidence`), when the release was written;
* :attr:`Release.certificate`: the cover of the printable report (data set, purpose, approver,
  ledger);
* :attr:`Release.attack`: the attacks on the written release with the identified frame of the
  configuration's ``attack:`` (:mod:`safeshare.workflows.release_attack`), when asked;
* :attr:`Release.ledger_entry`: the ledger line appended after publishing (not in report.json,
  which is written before it);
* :attr:`Release.timings`: seconds per phase (and :attr:`peak_rss_mb`): the only figures
  that differ between two runs of the same configuration (with the creation time).

Adding a section is adding a field here and its key in :meth:`Release.report`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from safeshare.figures import against, number, percent
from safeshare.report.content import ReportWarning
from safeshare.risk.thresholds import risk_kind_sentence
from safeshare.verify import Verification
from safeshare.workflows.anonymizer import AnonymizationResult
from safeshare.workflows.evidence import informed_figures, informed_knowledge, threshold_of

if TYPE_CHECKING:
    from safeshare.workflows.local_recoding import LocalRecodingResult

#: Keys of report.json that are measurements of one run, not results: two runs of the same
#: configuration differ only in these and in ``engine_settings.peak_rss_mb`` (the CLI/API
#: agreement test, tests/test_api.py, ignores them).
MEASUREMENT_KEYS = ("created", "elapsed_s")


@dataclass(frozen=True)
class InputProfile:
    """The input as the run read it.

    ``source`` is portable (relative to the configuration's directory, never an absolute
    local path); ``records`` counts every input record (before epsilon-safe's sampling);
    ``columns`` lists every input column with its role and treatment (``dropped``,
    ``generalized``, ``kept``).
    """

    source: str | None
    records: int
    quasi_identifiers: tuple[str, ...]
    columns: tuple[Mapping[str, str], ...]
    #: without a person key, the columns that look like a person identifier and repeat (issue 32:
    #: :mod:`safeshare.data.person_key`), each ``{column, records, values, repeated_values, ...}``
    repeated_persons: tuple[Mapping[str, Any], ...] = ()


@dataclass(frozen=True)
class Choice:
    """The chosen node and why: the search's figures and one sentence (:attr:`why`)."""

    found: bool
    node: tuple[int, ...] | None
    levels: Mapping[str, int]
    generalization: tuple[Mapping[str, Any], ...]
    algorithm: str
    metric: str
    information_loss: float | None
    information_loss_normalized: float | None
    loss: Mapping[str, float]
    checked_nodes: int
    minimal_nodes: int | None
    lattice_size: int
    #: the strategy's own figures (Inverse OLA's k, anytime's bound and gap, epsilon-safe's draw, ...)
    search: Mapping[str, Any]
    why: str
    #: the metric as every view names it (``prec, weighted (age 2)`` with ``prec_weights``): the
    #: losses above are the minimized metric's, weights included (issue 30, item 13)
    metric_label: str = ""
    #: the minimized metric's per-QI weights (``prec_weights``; empty without)
    metric_weights: Mapping[str, float] = field(default_factory=dict)
    #: the k-minimal nodes with their losses and suppression, the ties at the optimum and the
    #: tie-break rule (:func:`~safeshare.workflows.frontier.frontier_of`); ``None``: no frontier
    frontier: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class Output:
    """The release: its file name and format, and what it holds (released classes only)."""

    file: str
    format: str
    records_in: int
    records_out: int
    suppressed_records: int
    equivalence_classes: int
    min_class_size: int
    class_size_histogram: tuple[Mapping[str, Any], ...]
    #: where it was published; ``None`` when the run wrote nothing (``out=None``)
    path: Path | None = None
    #: the release in people, with a person key (issue 32): people in and out, suppressed, the
    #: fewest people of a released class, the suppression limit's unit (``None``: one record per person)
    people: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class PrivacyOutcome:
    """The privacy models with the suppression limit, and what the released classes achieve.

    ``k`` is the k of the release's k-anonymity (Inverse OLA: the k it achieved), ``None``
    without one.
    """

    models: Mapping[str, Any]
    max_suppression: float
    achieved: Mapping[str, Any]
    k: int | None = None


@dataclass(frozen=True)
class UtilityOutcome:
    """What the release keeps beyond the loss of :class:`Choice`: the suppression / loss
    trade-off (thesis Fig. 6.1) and the m-concealing of the release, when computed."""

    tradeoff: tuple[Mapping[str, Any], ...] | None = None
    #: why the trade-off curve was not computed (a large lattice), when it was not asked
    tradeoff_skipped: str | None = None
    m_concealing: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class Provenance:
    """Where a release comes from: the configuration, the version, the seeds, the engine.

    ``settings`` is the validated configuration with every key (defaults filled in and
    command-line or Python overrides applied), paths relative to the configuration.
    """

    config: str | None
    settings: Mapping[str, Any]
    version: str
    seeds: Mapping[str, Any]
    created: str
    engine: str
    engine_settings: Mapping[str, Any]


@dataclass
class Release:
    """The one result of ``anonymize`` (see the module docstring); report.json is :attr:`report`."""

    input: InputProfile
    choice: Choice
    output: Output
    privacy: PrivacyOutcome
    risk: Mapping[str, Any]
    utility: UtilityOutcome
    provenance: Provenance
    verification: Verification | None
    warnings: list[ReportWarning] = field(default_factory=list)
    #: epsilon-safe: the sample and the (beta, epsilon, delta) guarantee (``None`` otherwise)
    sampling: Mapping[str, Any] | None = None
    timings: dict[str, float] = field(default_factory=dict)
    peak_rss_mb: float | None = None
    #: the result in one sentence with its figures (:func:`headline`)
    headline: Mapping[str, Any] | None = None
    #: the evidence section (``Evidence.to_dict()``), when the release was written
    evidence: Mapping[str, Any] | None = None
    #: the informed adversary on the written release (``InformedAdversary.to_dict()``): kept
    #: shifted dates known within max_days, coarse pseudonyms known; ``None`` without such columns
    informed_adversary: Mapping[str, Any] | None = None
    #: utility before and after: each column's categories, records in the input and released
    #: (``BeforeAfter.to_dict()``, :mod:`safeshare.workflows.before_after`), when the release was written
    before_after: Mapping[str, Any] | None = None
    #: the printable cover: data set, purpose, approver, ledger
    certificate: Mapping[str, Any] | None = None
    #: the attacks on the written release (``AttackResult.to_report()``), when ``attack:`` asked
    attack: Mapping[str, Any] | None = None
    #: the ledger line appended after publishing (``seq``, ``entry_sha256``, ...), when a ledger is kept
    ledger_entry: Mapping[str, Any] | None = field(default=None, compare=False)
    #: the search's full result (frequency table, evaluator, classes) for further analysis
    fit: AnonymizationResult | None = field(default=None, repr=False, compare=False)
    #: local recoding: report.json's ``local_recoding`` (``None`` when it did not run)
    local_recoding: Mapping[str, Any] | None = None
    #: local recoding's full result (the rounds, the mixed release) for further analysis
    recoding: LocalRecodingResult | None = field(default=None, repr=False, compare=False)

    @property
    def path(self) -> Path | None:
        """The published release file (``None`` when nothing was written)."""
        return self.output.path / self.output.file if self.output.path is not None else None

    @property
    def verified(self) -> bool:
        return self.verification is not None and self.verification.passed

    @property
    def report(self) -> dict[str, Any]:
        """report.json: every section, in one mapping (the CLI writes exactly this)."""
        choice, out = self.choice, self.output
        doc: dict[str, Any] = {
            "safeshare_version": self.provenance.version,
            "created": self.provenance.created,
            "engine": self.provenance.engine,
            "engine_settings": {**self.provenance.engine_settings, "peak_rss_mb": self.peak_rss_mb},
            "release": out.file,
            "config": self.provenance.config,
            "input": self.input.source,
            "found": choice.found,
            "node": list(choice.node) if choice.node is not None else None,
            "levels": dict(choice.levels),
            "generalization": [dict(g) for g in choice.generalization],
            "metric": choice.metric,
            "metric_label": choice.metric_label or choice.metric,
            "metric_weights": dict(choice.metric_weights),
            "information_loss": choice.information_loss,
            "information_loss_normalized": choice.information_loss_normalized,
            "loss": dict(choice.loss),
            "records_in": out.records_in,
            "suppressed_records": out.suppressed_records,
            "records_out": out.records_out,
            "min_class_size": out.min_class_size,
            "people": dict(out.people) if out.people is not None else None,
            "equivalence_classes": out.equivalence_classes,
            "checked_nodes": choice.checked_nodes,
            "minimal_nodes": choice.minimal_nodes,
            "lattice_size": choice.lattice_size,
            "algorithm": choice.algorithm,
            "why": choice.why,
            "frontier": dict(choice.frontier) if choice.frontier is not None else None,
            "privacy": {"models": dict(self.privacy.models), "max_suppression": self.privacy.max_suppression},
            "privacy_achieved": dict(self.privacy.achieved),
            **{key: value for key, value in choice.search.items() if key not in ("qualifying_nodes",)},
            "verified": self.verified,
            "verification": self.verification.to_dict() if self.verification is not None else None,
            "class_size_histogram": [dict(b) for b in out.class_size_histogram],
            "risk": dict(self.risk),
        }
        doc["k"] = self.privacy.k
        doc["max_suppression"] = self.privacy.max_suppression
        if self.local_recoding is not None:
            doc["local_recoding"] = dict(self.local_recoding)
        if self.sampling is not None:  # epsilon-safe: its k and suppression limit (which shapes the utility)
            doc.update(self.sampling)
        if self.utility.tradeoff is not None:
            doc["tradeoff"] = [dict(t) for t in self.utility.tradeoff]
        if self.utility.tradeoff_skipped is not None:
            doc["tradeoff_skipped"] = self.utility.tradeoff_skipped
        if self.utility.m_concealing is not None:
            doc.update(self.utility.m_concealing)
        doc["columns"] = [dict(c) for c in self.input.columns]
        doc["repeated_persons"] = [dict(r) for r in self.input.repeated_persons]
        doc["provenance"] = {
            "config": self.provenance.config,
            "settings": dict(self.provenance.settings),
            "version": self.provenance.version,
            "seeds": dict(self.provenance.seeds),
        }
        doc["warnings"] = [w.to_dict() for w in self.warnings]
        doc["informed_adversary"] = (
            dict(self.informed_adversary) if self.informed_adversary is not None else None
        )
        doc["before_after"] = dict(self.before_after) if self.before_after is not None else None
        doc["headline"] = dict(self.headline) if self.headline is not None else None
        doc["certificate"] = dict(self.certificate) if self.certificate is not None else None
        doc["evidence"] = dict(self.evidence) if self.evidence is not None else None
        doc["attack"] = dict(self.attack) if self.attack is not None else None
        doc["elapsed_s"] = {key: round(value, 6) for key, value in self.timings.items()}
        return doc


def input_profile(
    result: AnonymizationResult,
    source: str | None,
    input_columns: Sequence[str],
    released_columns: Sequence[str],
    records: int,
    repeated_persons: Sequence[Mapping[str, Any]] = (),
) -> InputProfile:
    from safeshare.report.content import column_treatments

    return InputProfile(
        source=source,
        records=records,
        quasi_identifiers=tuple(result.table.qi_names),
        columns=tuple(column_treatments(result.schema, input_columns, released_columns)),
        repeated_persons=tuple(dict(r) for r in repeated_persons),
    )


def choice_of(result: AnonymizationResult) -> Choice:
    """The chosen node and why, from the search's result."""
    from safeshare.report.content import describe_search
    from safeshare.workflows.frontier import frontier_of

    summary = result.summary()
    frontier = frontier_of(result)
    search = {key: value for key, value in result.search.extra.items() if key != "qualifying_nodes"}
    return Choice(
        found=result.found,
        node=result.node,
        levels=result.levels,
        generalization=tuple(result.generalization()),
        algorithm=result.search.algorithm,
        metric=summary["metric"],
        information_loss=summary["information_loss"],
        information_loss_normalized=summary["information_loss_normalized"],
        loss=summary["loss"],
        checked_nodes=result.search.checked_nodes,
        minimal_nodes=result.minimal_node_count(),
        lattice_size=result.search.lattice_size,
        search=search,
        why=describe_search({**summary, **search}),
        metric_label=summary["metric_label"],
        metric_weights=summary["metric_weights"],
        frontier=frontier.to_dict() if frontier is not None else None,
    )


def class_size_histogram(result: AnonymizationResult) -> list[dict[str, Any]]:
    """Released classes by size, in bins 1, 2, ..., 10, 11-20, 21-50, ... (for the HTML report)."""
    return size_histogram(result.released_class_sizes)


def size_histogram(sizes: np.ndarray) -> list[dict[str, Any]]:
    """:func:`class_size_histogram` of the released class ``sizes``."""
    edges = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 21, 51, 101, 201, 501, 1001, 2001, 5001, 10001]
    out = []
    for lo, hi in zip(edges, [*edges[1:], None], strict=True):
        mask = sizes >= lo if hi is None else (sizes >= lo) & (sizes < hi)
        count = int(mask.sum())
        if count or (hi is not None and hi <= 11):
            label = str(lo) if hi == lo + 1 else (f"{lo}+" if hi is None else f"{lo}-{hi - 1}")
            out.append({"label": label, "low": lo, "classes": count, "records": int(sizes[mask].sum())})
    return out


def output_of(result: AnonymizationResult, file: str, fmt: str, path: Path | None) -> Output:
    released = result.released_class_sizes
    return Output(
        file=file,
        format=fmt,
        records_in=result.records_in,
        records_out=result.records_in - result.suppressed_records,
        suppressed_records=result.suppressed_records,
        equivalence_classes=int(released.size),
        min_class_size=result.min_class_size,
        class_size_histogram=tuple(class_size_histogram(result)),
        path=path,
        people=result.people_figures(),
    )


def privacy_of(result: AnonymizationResult) -> PrivacyOutcome:
    params = result.criterion.params()
    ks = [getattr(m, "k", None) for m in result.criterion.models if hasattr(m, "k")]
    return PrivacyOutcome(
        models=params["models"],
        max_suppression=params["max_suppression"],
        achieved=result.privacy_achieved(),
        k=ks[0] if ks else None,
    )


def headline(doc: Mapping[str, Any], threshold_reason: str | None = None) -> dict[str, Any]:
    """The result in one sentence and its figures, from report.json's sections.

    With a risk threshold: the achieved measure (re-checked by the verifier on the written
    file when it was written, else the search's) against the threshold, with where the
    threshold comes from. With k-anonymity: the prosecutor bound 1/k and the smallest class.
    The largest prosecutor risk of a release without k-anonymity is never shown alone: it
    comes with the smallest class and the statement that the threshold bounds an average.
    """
    models = dict(doc.get("privacy", {}).get("models", {}))
    checks = (doc.get("verification") or {}).get("checks", {}).get("models", {})
    achieved = doc.get("privacy_achieved", {})
    k = doc.get("k")
    smallest = int(doc.get("min_class_size") or 0)
    people = doc.get("people") if isinstance(doc.get("people"), Mapping) else None
    # the unit a privacy officer signs for: people with a person key, records (one per person) without
    unit = "people" if people is not None else "records"
    fewest_people = int(people.get("min_class_people") or 0) if people is not None else smallest
    verified = bool(doc.get("verified"))
    out: dict[str, Any] = {"verified": verified, "written": doc.get("verification") is not None}
    parts: list[str] = []
    risk = models.get("risk")
    if isinstance(risk, Mapping):
        measure = str(risk.get("measure", "B"))
        rechecked = checks.get("risk", {})
        value = rechecked.get("value") if "value" in rechecked else achieved.get("risk", {}).get(measure)
        threshold = float(risk["threshold"])
        source = threshold_of(risk, int(k or 1), threshold_reason)
        holds = value is not None and value <= threshold + 1e-9
        use = str(rechecked.get("use", risk.get("use", "estimate")))  # upper: the value is the 95 % upper end
        out["risk"] = {
            "measure": measure,
            "use": use,
            "achieved": value,
            "threshold": threshold,
            "holds": holds,
            "rechecked": bool(rechecked),
            "estimator": risk.get("estimator"),
            "population_size": rechecked.get("params", {}).get(
                "population_size", risk.get("population_size")
            ),
            "source": source.source if source is not None else None,
            "reason": source.reason if source is not None else None,
            "public_release_figure": bool(source is not None and source.public_release_figure),
        }
        if value is None:
            shown, limit = "no estimate", number(threshold)
        else:  # never rounded to a value B cannot have, nor to the threshold it differs from
            shown, limit = against(float(value), threshold, holds)
        where = "re-checked on the written release" if rechecked else "as found by the search (not written)"
        origin = (
            "the EMA / Health Canada public-release threshold"
            if out["risk"]["public_release_figure"]
            else (
                f"the custodian's threshold: {source.reason}"
                if source and source.reason
                else "the custodian's threshold"
            )
        )
        label = measure if use == "estimate" else f"the 95 % upper bound of {measure}"
        # average vs maximum (issue 33): what the measure is and what the threshold is set for
        out["risk"]["kind"] = risk_kind_sentence(measure, threshold)
        parts.append(
            f"{label} = {shown} {'<=' if holds else '>'} {limit} ({origin}), {where} ({out['risk']['kind']})"
        )
    informed = doc.get("informed_adversary")
    informed = dict(informed) if isinstance(informed, Mapping) else None
    unmeasured = [] if informed is not None else _unmeasured_columns(doc)
    if isinstance(k, int) and k >= 2:
        holds = informed is None or bool(informed.get("bound_holds"))
        fewest = int(informed.get("smallest_candidates") or 0) if informed is not None else k
        out["prosecutor"] = {
            "bounded": holds,
            "k": k,
            "max": 1 / k if holds else (1 / fewest if fewest else None),
            "smallest_class": smallest,
            **({"unit": unit, "smallest_class_people": fewest_people} if people is not None else {}),
            **_adversaries(informed, unmeasured),
        }
        if people is not None:
            text = (
                f"k = {k}: every released class holds at least {k} people "
                f"(smallest {fewest_people:,} people, {smallest:,} records), "
            )
        else:
            text = f"k = {k}: every released class holds at least {k} records (smallest {smallest:,}), "
        who = "person's" if people is not None else "record's"
        if holds:
            text += f"so no {who} prosecutor risk exceeds 1/{k} = {number(1 / k)}"
            if informed is not None:
                text += f", also against an adversary who knows {informed_knowledge(informed)}"
            elif unmeasured:
                text += (
                    " against an adversary who knows the quasi-identifiers; not measured against one who "
                    f"also knows {', '.join(unmeasured)} (the release was not checked for it)"
                )
        else:
            assert informed is not None
            text += (
                f"but the bound of 1/{k} per {'person' if people is not None else 'record'} does not hold "
                "against an adversary who also knows "
                f"{informed_knowledge(informed)}: {informed_figures(informed)}"
            )
        parts.append(text)
    elif smallest:
        out["prosecutor"] = {
            "bounded": False,
            "k": None,
            "max": 1 / (fewest_people or smallest),
            "smallest_class": smallest,
            **({"unit": unit, "smallest_class_people": fewest_people} if people is not None else {}),
            **_adversaries(informed, unmeasured),
        }
        fewest_shown = fewest_people if people is not None else smallest
        noun = (
            ("person" if fewest_shown == 1 else "people")
            if people is not None
            else ("record" if fewest_shown == 1 else "records")
        )
        per = "person" if people is not None else "record"
        parts.append(
            f"prosecutor risk not bounded per {per} (no k-anonymity): "
            f"the smallest released class holds {fewest_shown:,} {noun}"
            + ("; the threshold bounds an average" if isinstance(risk, Mapping) else "")
            + (
                f"; an adversary who also knows {informed_knowledge(informed)}: {informed_figures(informed)}"
                if informed is not None and int(informed.get("singled_out") or 0)
                else ""
            )
        )
    parts += _linked(doc, out)
    out["text"] = "; ".join(parts) if parts else "no privacy figure"
    return out


def _linked(doc: Mapping[str, Any], out: dict[str, Any]) -> list[str]:
    """The headline's linked records (issue 32): per link column of the release, the people whose
    profile (their records' classes together) fewer than k people share, re-checked on the file
    when written, with the choice of a release without linkage."""
    from safeshare.workflows.persons import linked_figures

    figures = linked_figures(doc)
    if not figures:
        return []
    out["linked"] = [
        {
            key: f.get(key)
            for key in ("column", "k", "people", "below_k", "singled_out", "smallest", "rechecked")
        }
        for f in figures
    ]
    parts = []
    for f in figures:
        column, k, people, below = str(f["column"]), int(f["k"]), int(f["people"]), int(f["below_k"])
        if not people:
            continue
        if below:
            parts.append(
                f"linked by {column}: {below:,} of {people:,} people ({percent(below / people)}) have a "
                f"profile (their records' classes together) that fewer than {k} people share, "
                f"{int(f['singled_out']):,} singled out; a release without linkage (drop {column}) avoids it"
            )
        else:
            parts.append(f"linked by {column}: every person's profile is shared by at least {k} people")
    return parts


def _adversaries(informed: Mapping[str, Any] | None, unmeasured: list[str]) -> dict[str, Any]:
    """The headline's prosecutor keys about the informed adversary: ``informed`` (measured: the
    figures are report.json's ``informed_adversary``) or ``unmeasured`` (what they would know)."""
    if informed is not None:
        return {"informed": True}
    return {"unmeasured": unmeasured} if unmeasured else {}


def _unmeasured_columns(doc: Mapping[str, Any]) -> list[str]:
    """The released columns the informed adversary would know and that were not measured (a
    release not written, or written by a path without the disclosure check): kept shifted dates
    and pseudonyms (report.json's ``columns``)."""
    out = []
    for column in doc.get("columns") or []:
        if column.get("treatment") == "shifted":
            out.append(f"the true {column['name']}")
        elif column.get("treatment") == "pseudonymized":
            out.append(f"{column['name']} (if its pseudonyms are few)")
    return out


__all__ = [
    "MEASUREMENT_KEYS",
    "Choice",
    "InputProfile",
    "Output",
    "PrivacyOutcome",
    "Provenance",
    "Release",
    "ReportWarning",
    "UtilityOutcome",
]
