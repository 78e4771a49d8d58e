"""The certificate's coverage table (issue 33): what the standards a privacy officer signs against
ask to be documented, item by item, each marked "evidence here" (where on the report) or
"missing" (what to add), filled from the configuration and the run's report.

The items paraphrase, at the level of their sections, what each document asks of a
de-identified release; they are checklists for the officer, not the standards' text:

* **EMA Policy 0070 / Health Canada PRCI** (the anonymisation report of clinical documents): the
  methods per variable, the quantitative risk against the 0.09 public-release threshold with its
  justification, the adversary assumed, the utility kept.
* **ISO/IEC 27559:2022** (privacy-enhancing data de-identification framework): §6 context
  assessment (release model, recipient, threat: motives, capacity, controls), §7 data assessment
  (identifiers and quasi-identifiers), §8 identifiability assessment (measured risk against a
  threshold, an adversarial test), §9 governance (approval, review, monitoring and expiry).
* **NIST SP 800-188** (de-identifying government data sets): a documented review and approval,
  the methods and their parameters, a re-identification test.
* **IPC Ontario, De-identification Guidelines for Structured Data (2016, 2025)**: its steps:
  determine the release model, classify the variables, set the threshold, measure the data risk,
  measure the context risk, de-identify, assess utility, document.
* **HIPAA expert determination (45 CFR 164.514(b)(1))**: (i) a person with appropriate knowledge
  and experience determines that the risk is very small, (ii) and documents the methods and
  results of the analysis that justify the determination.

Clause numbers below the section are not given: the standards' texts were not at hand when this
was written, and a number shown must be one a reader can check.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

#: An item's test: the report (with its certificate) -> (met, where the evidence is / what to add).
Check = Callable[[Mapping[str, Any]], tuple[bool, str]]


@dataclass(frozen=True)
class Item:
    """One thing a standard asks to be documented, and how the report shows it."""

    standard: str
    section: str
    asks: str
    check: Check

    def row(self, doc: Mapping[str, Any]) -> dict[str, Any]:
        met, text = self.check(doc)
        return {
            "standard": self.standard,
            "section": self.section,
            "asks": self.asks,
            "status": "evidence" if met else "missing",
            ("where" if met else "what_to_add"): text,
        }


def _gov(doc: Mapping[str, Any]) -> Mapping[str, Any]:
    return ((doc.get("certificate") or {}).get("governance")) or {}


def _field(key: str, where: str, add: str) -> Check:
    def check(doc: Mapping[str, Any]) -> tuple[bool, str]:
        value = _gov(doc).get(key)
        return (True, f"{where}: {value}") if value else (False, add)

    return check


def _threat(doc: Mapping[str, Any]) -> tuple[bool, str]:
    threat = _gov(doc).get("threat_model") or {}
    missing = [q for q in ("motives", "capacity", "controls") if not threat.get(q)]
    if not missing:
        return True, "certificate, governance: threat model (motives, capacity, controls)"
    return False, f"governance.threat_model: {', '.join(missing)}"


def _methods(doc: Mapping[str, Any]) -> tuple[bool, str]:
    columns = doc.get("columns") or []
    if columns and doc.get("generalization") is not None:
        where = "report, Columns and Chosen generalization"
        return True, f"{where}: the treatment of each of {len(columns)} columns"
    return False, "a release with its columns' treatments (run safeshare anonymize)"


def _risk(doc: Mapping[str, Any]) -> tuple[bool, str]:
    headline = doc.get("headline") or {}
    risk = (doc.get("risk") or {}).get("release") or {}
    if headline.get("text") and risk.get("B") is not None:
        return True, "certificate, headline: the measured risk B and its threshold"
    return False, "the risk section (a release with its class sizes)"


def _threshold_reason(doc: Mapping[str, Any]) -> tuple[bool, str]:
    threshold = (doc.get("evidence") or {}).get("threshold") or {}
    if threshold.get("reason"):
        return True, f"evidence, 'The threshold and where it comes from': {threshold['reason']}"
    return False, "threshold_reason: why this threshold fits the release (e.g. the derived one)"


def _attack(doc: Mapping[str, Any]) -> tuple[bool, str]:
    attack = (doc.get("certificate") or {}).get("attack")
    if attack and not attack.get("skipped"):
        return True, "certificate, attack: the measured correct-match rate beside B"
    return False, "attack: {frame: ...} (or --attack-frame): the release attacked with an identified frame"


def _adversary(doc: Mapping[str, Any]) -> tuple[bool, str]:
    if doc.get("evidence"):
        return True, "evidence, 'The attack model': the adversary assumed (prosecutor, journalist)"
    return False, "a written release (the evidence section states the attack model)"


def _utility(doc: Mapping[str, Any]) -> tuple[bool, str]:
    if doc.get("before_after") and doc.get("loss"):
        return True, "report, Information loss and Utility before and after (per category)"
    return False, "a written release (utility before and after is measured on the file)"


def _variables(doc: Mapping[str, Any]) -> tuple[bool, str]:
    columns = doc.get("columns") or []
    if columns:
        return True, "report, Columns: every column's role (identifying, quasi, sensitive, ...)"
    return False, "attributes: a role for every column"


def _population(doc: Mapping[str, Any]) -> tuple[bool, str]:
    pop = (doc.get("certificate") or {}).get("population") or {}
    if pop.get("source") and not pop.get("assumed") and pop.get("source") != "not stated":
        return True, f"certificate, population: N = {pop.get('size'):,} ({pop['source']})"
    return False, "population: {size, source}: the population N and where it comes from"


def _approval(doc: Mapping[str, Any]) -> tuple[bool, str]:
    cert = doc.get("certificate") or {}
    if cert.get("approved_by"):
        return True, f"certificate: approved by {cert['approved_by']}"
    return False, "approved_by (--approved-by): who approves the release"


def _second(doc: Mapping[str, Any]) -> tuple[bool, str]:
    cert = doc.get("certificate") or {}
    second = _gov(doc).get("second_reviewer")
    if cert.get("approved_by") and second:
        return True, f"certificate: approved by {cert['approved_by']}, reviewed by {second}"
    return False, "approved_by and governance.second_reviewer: a review by a second person"


def _documented(doc: Mapping[str, Any]) -> tuple[bool, str]:
    if doc.get("evidence") and doc.get("verified"):
        return True, "evidence: SHA-256 of every file, the verifier's checks, software and seeds"
    return False, "a written, verified release (its evidence section)"


def _review(doc: Mapping[str, Any]) -> tuple[bool, str]:
    gov = _gov(doc)
    if gov.get("review_date") and gov.get("expiry_date"):
        return True, f"certificate, governance: review {gov['review_date']}, expiry {gov['expiry_date']}"
    return False, "governance.review_date and governance.expiry_date"


def _ledger(doc: Mapping[str, Any]) -> tuple[bool, str]:
    cert = doc.get("certificate") or {}
    if cert.get("ledger"):
        return True, f"certificate: recorded in the release ledger {cert['ledger']}"
    return False, "ledger: a release ledger recording every release of this data"


def _context(doc: Mapping[str, Any]) -> tuple[bool, str]:
    gov = _gov(doc)
    if gov.get("release_model") and gov.get("recipient"):
        kind = f", {gov['recipient_kind']}" if gov.get("recipient_kind") else ""
        return True, f"certificate, governance: {gov['release_model']} release to {gov['recipient']}{kind}"
    return False, "governance.release_model and governance.recipient"


_CREDENTIALS = _field("credentials", "certificate, governance: credentials", "governance.credentials")

EMA = "EMA Policy 0070 / Health Canada PRCI"
ISO = "ISO/IEC 27559:2022"
NIST = "NIST SP 800-188"
IPC = "IPC Ontario (2016, 2025)"
HIPAA = "HIPAA expert determination"

#: Every item of the table, in the order shown.
ITEMS: tuple[Item, ...] = (
    Item(EMA, "anonymisation report", "the method applied to each variable", _methods),
    Item(EMA, "anonymisation report", "the quantitative re-identification risk and its threshold", _risk),
    Item(EMA, "anonymisation report", "the justification of the threshold", _threshold_reason),
    Item(EMA, "anonymisation report", "the adversary assumed", _adversary),
    Item(EMA, "anonymisation report", "the data utility kept", _utility),
    Item(ISO, "§6 context assessment", "the release model and the recipient", _context),
    Item(ISO, "§6 context assessment", "the threat: motives, capacity, controls", _threat),
    Item(ISO, "§7 data assessment", "the identifiers and quasi-identifiers", _variables),
    Item(ISO, "§8 identifiability assessment", "the measured risk against a threshold", _risk),
    Item(ISO, "§8 identifiability assessment", "the population the risk is measured against", _population),
    Item(ISO, "§8 identifiability assessment", "an adversarial (re-identification) test", _attack),
    Item(ISO, "§9 governance", "approval and accountability", _approval),
    Item(ISO, "§9 governance", "review and expiry of the release", _review),
    Item(ISO, "§9 governance", "a record of releases", _ledger),
    Item(NIST, "disclosure review", "a documented review and approval", _second),
    Item(NIST, "de-identification", "the methods and their parameters", _documented),
    Item(NIST, "de-identification", "a re-identification test", _attack),
    Item(IPC, "step: release model", "public or non-public, and to whom", _context),
    Item(IPC, "step: classify variables", "direct identifiers and quasi-identifiers", _variables),
    Item(IPC, "step: threshold", "the threshold and its justification", _threshold_reason),
    Item(IPC, "step: data risk", "the measured risk of the data", _risk),
    Item(IPC, "step: context risk", "the recipient's motives, capacity and controls", _threat),
    Item(IPC, "step: utility", "what the de-identified data keeps", _utility),
    Item(HIPAA, "164.514(b)(1)(i)", "a person with appropriate knowledge and experience", _CREDENTIALS),
    Item(HIPAA, "164.514(b)(1)(i)", "the determination that the risk is very small", _risk),
    Item(HIPAA, "164.514(b)(1)(ii)", "the methods and results of the analysis documented", _documented),
)


def coverage(doc: Mapping[str, Any]) -> dict[str, Any]:
    """The coverage table of report.json ``doc`` (whose certificate carries ``governance``):
    one row per :data:`ITEMS`, and the count of items documented."""
    rows = [item.row(doc) for item in ITEMS]
    return {"rows": rows, "documented": sum(r["status"] == "evidence" for r in rows), "items": len(rows)}


__all__ = ["ITEMS", "Item", "coverage"]
