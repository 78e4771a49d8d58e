"""The acknowledgement gate (issue 33): a release whose own warnings contradict its headline is
published only when the custodian has acknowledged each of them.

The certificate's headline is a statement about the people in the release ("k = 5: every
released class holds at least 5 records, so no record's prosecutor risk exceeds 1/5", "B =
0.0826 <= 0.09"). Some of the run's warnings show that the statement, true of the configuration,
is not the whole truth about the file: a privacy officer who signs the headline without them
signs something the run itself found misleading. Those warnings *contradict* the headline:

==================================  ===========================================================
code                                why it contradicts the headline
==================================  ===========================================================
``kept-column-identifying``         a column released as it is singles out records that the
                                    headline's classes do not count
``shifted-date-identifying``        an adversary who knows the true dates leaves records fewer
                                    than k candidates
``coarse-pseudonym-identifying``    the same, from coarse pseudonyms
``linked-profiles``                 a person's linkable records form a profile fewer than k
                                    people share
``likely-repeated-persons``         k and the risk count records while a person may have several
``singleton-classes``               only under a threshold the standards set for the *maximum*
                                    risk (0.09, 0.075, 0.05), applied to an average: single-record
                                    classes beside it are what the figure hides
``subgroup-suppressed``             a whole subgroup (a category of at least 11 records) loses
                                    more than half of its records: the release no longer
                                    describes it
``attack-above-estimate``           the attack on the written release re-identified measurably
                                    more records than the headline's B
==================================  ===========================================================

The other codes (``uninformative-qi``, ``implausible-values``, ``delta-above-one-over-n``,
``not-differentially-private``, ``homogeneous-classes``, ``coarse-pseudonym``) are caveats beside
the headline, not contradictions of it: ``homogeneous-classes`` is attribute disclosure, which the
headline's identity figures do not claim to bound (l-diversity or t-closeness do, and the
certificate names the models configured). Every warning, contradicting or not, is listed on the
certificate (report.json ``certificate.warnings``).

The custodian acknowledges a code with ``accept_warnings: [CODE, ...]`` in the configuration,
``--accept-warning CODE`` on the command line (repeatable; added to the file's),
``api.anonymize(..., accept_warnings=[...])`` or the workbench's boxes. An acknowledgement names
who made it (``approved_by``, else "not named") and is recorded in the certificate
(``certificate.acknowledged``), the evidence (``evidence.acknowledgements``) and the ledger entry
(``accepted_warnings``). Without it the release is refused with
:class:`~safeshare.errors.AcknowledgementRequired` (exit 2) and nothing is published; a described
release (not written) is never refused, as its disclosure warnings need the written file.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from safeshare.errors import AcknowledgementRequired
from safeshare.risk.thresholds import threshold_measure
from safeshare.warning_codes import WarningCode

#: Codes that always contradict the headline, with the reason the certificate states.
CONTRADICTING: dict[WarningCode, str] = {
    WarningCode.KEPT_COLUMN_IDENTIFYING: (
        "a kept column singles out records the headline's classes do not count"
    ),
    WarningCode.SHIFTED_DATE_IDENTIFYING: (
        "an adversary who knows the true dates leaves records fewer candidates than the headline's k"
    ),
    WarningCode.COARSE_PSEUDONYM_IDENTIFYING: (
        "coarse pseudonyms leave records fewer candidates than the headline's k"
    ),
    WarningCode.LINKED_PROFILES: "linkable records form profiles fewer people share than the headline's k",
    WarningCode.LIKELY_REPEATED_PERSONS: (
        "the headline counts records, and a person seems to have several: it may overstate "
        "the people per class"
    ),
    WarningCode.SUBGROUP_SUPPRESSED: (
        "a whole subgroup loses most of its records: the release no longer describes it"
    ),
    WarningCode.ATTACK_ABOVE_ESTIMATE: (
        "the attack re-identified measurably more records than the headline's B"
    ),
}

#: The reason of ``singleton-classes`` where it contradicts (a maximum-risk figure on an average).
SINGLETONS_UNDER_A_MAXIMUM = (
    "the threshold is a figure the standards set for the maximum risk, applied to an average; "
    "classes of a single record are what the average hides"
)

#: Who acknowledged, when the configuration names no approver.
NOT_NAMED = "not named (approved_by: in the configuration)"


@dataclass(frozen=True)
class WarningMark:
    """One warning of the run as the certificate lists it (``certificate.warnings[]``): made by
    :func:`acknowledge` for the certificate, and read back from a published report.json by
    :func:`safeshare.workflows.run_warnings.run_warnings` for the workbench (one type for both)."""

    code: str
    message: str
    columns: tuple[str, ...]
    #: it contradicts the headline; ``None`` only when read from a report whose certificate has
    #: no such check (a report of an earlier version): :func:`acknowledge` always decides it
    contradicts: bool | None
    reason: str
    acknowledged: bool
    acknowledged_by: str

    @property
    def needs_acknowledgement(self) -> bool:
        """It contradicts the headline and the custodian has not acknowledged it."""
        return bool(self.contradicts) and not self.acknowledged

    def to_dict(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "message": self.message,
            "columns": list(self.columns),
            "contradicts": self.contradicts,
            "reason": self.reason,
            "acknowledged": self.acknowledged,
            "acknowledged_by": self.acknowledged_by,
        }


@dataclass(frozen=True)
class Acknowledgement:
    """The run's warnings marked against its headline and the custodian's acknowledgements."""

    marks: tuple[WarningMark, ...]
    #: the codes the configuration accepts (``accept_warnings:``), as given
    accepted: tuple[str, ...]
    by: str

    @property
    def unacknowledged(self) -> list[str]:
        """The contradicting codes not acknowledged, once each, in the order of the warnings."""
        return list(dict.fromkeys(m.code for m in self.marks if m.needs_acknowledgement))

    @property
    def acknowledged(self) -> list[dict[str, Any]]:
        """``certificate.acknowledged``: each acknowledged contradicting code, who acknowledged it
        and how many of the run's warnings it covers."""
        return [
            {
                "code": code,
                "by": self.by,
                "warnings": sum(1 for m in self.marks if m.code == code and m.contradicts),
            }
            for code in dict.fromkeys(m.code for m in self.marks if m.contradicts and m.acknowledged)
        ]

    @property
    def unused(self) -> list[str]:
        """Accepted codes no contradicting warning of this run carries (said, never an error: a
        configuration may acknowledge what an earlier run found)."""
        raised = {m.code for m in self.marks if m.contradicts}
        return [c for c in self.accepted if c not in raised]

    def to_dict(self) -> dict[str, Any]:
        return {
            "warnings": [m.to_dict() for m in self.marks],
            "acknowledged": self.acknowledged,
            "accepted_unused": self.unused,
        }

    def require(self) -> None:
        """Raise :class:`AcknowledgementRequired` (exit 2) while a contradicting warning is not
        acknowledged: one line naming each code and what it found."""
        codes = self.unacknowledged
        if not codes:
            return
        found = "; ".join(f"{code}: {_first(self.marks, code)}" for code in codes)
        raise AcknowledgementRequired(
            f"the release is not published: {len(codes)} warning code{'s' if len(codes) != 1 else ''} "
            f"contradict{'' if len(codes) != 1 else 's'} its headline ({found}); acknowledge each "
            f"with --accept-warning CODE or accept_warnings: [{', '.join(codes)}] in the configuration "
            'once the recipient may have the release as it is (docs/report.md, "Acknowledged warnings")',
            codes=codes,
        )


def contradiction(warning: Mapping[str, Any], doc: Mapping[str, Any]) -> str | None:
    """Why ``warning`` (report.json's ``{code, columns, value, message}``) contradicts the headline
    of the report ``doc``, or ``None`` when it does not (module docstring)."""
    code = str(warning.get("code", ""))
    for known, reason in CONTRADICTING.items():
        if code == known.value:
            return reason
    if code == WarningCode.SINGLETON_CLASSES.value and _maximum_figure_on_an_average(doc):
        return SINGLETONS_UNDER_A_MAXIMUM
    return None


def _maximum_figure_on_an_average(doc: Mapping[str, Any]) -> bool:
    """A risk threshold set by the standards for the maximum risk compared with an average measure."""
    risk = ((doc.get("privacy") or {}).get("models") or {}).get("risk")
    if not isinstance(risk, Mapping) or risk.get("threshold") is None:
        return False
    if str(risk.get("measure", "B")) == "record":
        return False  # the largest per-record risk is a maximum: singletons are then refused by it
    set_for, _ = threshold_measure(float(risk["threshold"]))
    return set_for == "maximum"


def acknowledge(
    warnings: Sequence[Mapping[str, Any]],
    doc: Mapping[str, Any],
    accepted: Sequence[str],
    approved_by: str | None,
) -> Acknowledgement:
    """Mark every warning of the run (report.json's ``warnings``) against the headline of ``doc``
    and the custodian's ``accepted`` codes (``accept_warnings:``)."""
    by = approved_by.strip() if approved_by and approved_by.strip() else NOT_NAMED
    taken = set(accepted)
    marks = []
    for w in warnings:
        code = str(w.get("code", ""))
        reason = contradiction(w, doc)
        contradicts = reason is not None
        marks.append(
            WarningMark(
                code=code,
                message=str(w.get("message", "")),
                columns=tuple(str(c) for c in w.get("columns") or ()),
                contradicts=contradicts,
                reason=reason or "a caveat beside the headline (it does not contradict it)",
                acknowledged=contradicts and code in taken,
                acknowledged_by=by if contradicts and code in taken else "",
            )
        )
    return Acknowledgement(marks=tuple(marks), accepted=tuple(dict.fromkeys(accepted)), by=by)


def _first(marks: Sequence[WarningMark], code: str) -> str:
    """The first message of ``code`` without its advice (a warning's last ``": "`` clause), at most
    160 characters, and how many more warnings carry the code (the refusal stays one line)."""
    messages = [m.message for m in marks if m.code == code and m.contradicts]
    short = " ".join(messages[0].rsplit(": ", 1)[0].split())
    short = short if len(short) <= 160 else short[:157] + "..."
    return short + (f" and {len(messages) - 1} more" if len(messages) > 1 else "")


__all__ = [
    "CONTRADICTING",
    "NOT_NAMED",
    "SINGLETONS_UNDER_A_MAXIMUM",
    "Acknowledgement",
    "WarningMark",
    "acknowledge",
    "contradiction",
]
