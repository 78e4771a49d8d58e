"""The ``governance:`` section of a configuration (issue 33): who receives the release, under
which release model, against which threat, reviewed by whom and until when.

Example::

    governance:
      recipient: "Cardiology research unit, University Hospital"
      recipient_kind: external        # internal | external (to the custodian's organisation)
      release_model: non-public       # public | non-public (a data sharing agreement, controls)
      invasiveness: medium            # low | medium | high: the IPC Ontario threshold ladder
      threat_model:
        motives: "no known motive; academic recipients under contract"
        capacity: "statisticians; no linked registry access"
        controls: "data sharing agreement, secure enclave, audit log, no re-identification clause"
      review_date: 2027-06-01         # when the release's context is reviewed again
      expiry_date: 2028-01-01         # when the recipient's copy must be destroyed
      second_reviewer: "A. Smith, biostatistician"
      credentials: "J. Doe, CIPP/C; 10 years of statistical disclosure control"

Every key is optional: the certificate's coverage table
(:mod:`safeshare.workflows.coverage`) says, clause by clause of the standards a privacy officer
signs against, which of them the release documents and which are missing. ``release_model`` and
``invasiveness`` also derive the threshold the context calls for
(:func:`safeshare.risk.thresholds.derive_threshold`), shown beside the configured one.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import BeforeValidator, WithJsonSchema, model_validator

from safeshare.config_checks import Section, check_text, checked, refuse
from safeshare.risk.thresholds import INVASIVENESS, RELEASE_MODELS

RECIPIENT_KINDS = ("internal", "external")
#: The threat model's questions (ISO/IEC 27559's context assessment; the IPC's context risk).
THREAT_QUESTIONS = ("motives", "capacity", "controls")

OptionalText = Annotated[str | None, checked(check_text, allow_none=True)]


def _one_of(options: tuple[str, ...]) -> Any:
    def check(value: Any) -> Any:
        if value is not None and value not in options:
            raise refuse(f"expected one of {', '.join(options)}, got {value!r}")
        return value

    return BeforeValidator(check)


def _date(value: Any) -> Any:
    """An ISO date (YAML's ``2027-06-01`` is already one; a text is parsed)."""
    if value is None or isinstance(value, dt.date):
        return value
    if isinstance(value, str):
        try:
            return dt.date.fromisoformat(value)
        except ValueError:
            pass
    raise refuse(f"expected a date as YYYY-MM-DD, got {value!r}")


DateField = Annotated[
    dt.date | None, BeforeValidator(_date), WithJsonSchema({"type": "string", "format": "date"})
]


class ThreatModel(Section):
    """``governance.threat_model``: the answers to the context assessment's three questions."""

    motives: OptionalText = None
    capacity: OptionalText = None
    controls: OptionalText = None


class GovernanceSection(Section):
    """``governance:`` (module docstring; docs/configuration.md, "governance")."""

    recipient: OptionalText = None
    recipient_kind: Annotated[
        str | None, _one_of(RECIPIENT_KINDS), WithJsonSchema({"enum": [*RECIPIENT_KINDS, None]})
    ] = None
    release_model: Annotated[
        str | None, _one_of(RELEASE_MODELS), WithJsonSchema({"enum": [*RELEASE_MODELS, None]})
    ] = None
    invasiveness: Annotated[
        str | None, _one_of(INVASIVENESS), WithJsonSchema({"enum": [*INVASIVENESS, None]})
    ] = None
    threat_model: ThreatModel | None = None
    review_date: DateField = None
    expiry_date: DateField = None
    second_reviewer: OptionalText = None
    credentials: OptionalText = None

    @model_validator(mode="after")
    def _dates_in_order(self) -> GovernanceSection:
        if self.review_date and self.expiry_date and self.expiry_date < self.review_date:
            raise refuse(f"expiry_date {self.expiry_date} is before review_date {self.review_date}")
        return self

    def to_dict(self) -> dict[str, Any]:
        """The section as report.json's ``certificate.governance`` (dates as ISO text)."""
        threat = self.threat_model
        return {
            "recipient": self.recipient,
            "recipient_kind": self.recipient_kind,
            "release_model": self.release_model,
            "invasiveness": self.invasiveness,
            "threat_model": {q: getattr(threat, q) if threat else None for q in THREAT_QUESTIONS},
            "review_date": self.review_date.isoformat() if self.review_date else None,
            "expiry_date": self.expiry_date.isoformat() if self.expiry_date else None,
            "second_reviewer": self.second_reviewer,
            "credentials": self.credentials,
        }


def governance_section(value: Any) -> Any:
    """``governance:``: ``None`` is none; otherwise a mapping."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise refuse("expected a mapping such as {recipient: ..., release_model: non-public}")
    return value


__all__ = ["RECIPIENT_KINDS", "THREAT_QUESTIONS", "GovernanceSection", "ThreatModel", "governance_section"]
