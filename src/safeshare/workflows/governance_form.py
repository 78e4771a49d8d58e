"""The workbench's fields of the release context (issue 35: "privacy with governance fields"):
``governance:`` (:class:`~safeshare.config.governance.GovernanceSection`), ``purpose``,
``approved_by`` and where N comes from (``population.source``), on the Privacy screen.

The fields round-trip as the privacy form's do (:mod:`safeshare.workflows.privacy_form`): each is
shown with the configuration's text, and a field whose posted text is the text it was shown with
leaves the configuration as it was, so an unchanged form leaves the YAML unchanged. A changed
field is set at its key path (an emptied one removed, an emptied section with it); the
``governance:`` section that results is validated by its model (a choice outside its list, a date
that is not one, an expiry before the review) before anything is saved, one line naming the key.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from pydantic import ValidationError

from safeshare.config.governance import RECIPIENT_KINDS, THREAT_QUESTIONS, GovernanceSection
from safeshare.errors import InputError
from safeshare.risk.thresholds import INVASIVENESS, RELEASE_MODELS
from safeshare.workflows.form_fields import Field

#: The context's fields: (form name and key path, kind, choices, placeholder).
_SPECS: tuple[tuple[str, str, tuple[str, ...], str], ...] = (
    ("purpose", "text", (), "what the release is for (the certificate's cover)"),
    ("approved_by", "text", (), "who approves the release (required with a ledger)"),
    ("population.source", "text", (), "where N comes from, e.g. census 2021, table X"),
    ("governance.recipient", "text", (), "who receives the release"),
    ("governance.recipient_kind", "choice", ("", *RECIPIENT_KINDS), ""),
    ("governance.release_model", "choice", ("", *RELEASE_MODELS), ""),
    ("governance.invasiveness", "choice", ("", *INVASIVENESS), ""),
    *((f"governance.threat_model.{q}", "text", (), "") for q in THREAT_QUESTIONS),
    ("governance.review_date", "text", (), "YYYY-MM-DD"),
    ("governance.expiry_date", "text", (), "YYYY-MM-DD"),
    ("governance.second_reviewer", "text", (), "a second reviewer's name and role"),
    ("governance.credentials", "text", (), "the expert's credentials"),
)


def governance_fields(config: Mapping[str, Any]) -> list[Field]:
    """The context's fields of ``config``, each with its configuration's text."""
    out = []
    for path, kind, choices, placeholder in _SPECS:
        value = _get(config, path.split("."))
        text = "" if value is None else str(value)
        shown = choices if not choices or text in choices else (*choices, text)
        out.append(replace(Field(path, path, kind, shown, placeholder=placeholder), text=text))
    return out


def apply_governance_form(out: dict[str, Any], config: Mapping[str, Any], form: Mapping[str, Any]) -> None:
    """Set into ``out`` (a copy of ``config``) the context fields the ``form`` changed; validate the
    ``governance:`` section that results. Raises :class:`InputError` naming the key path."""
    changed = False
    for field in governance_fields(config):
        posted = form.get(field.name)
        if posted is None:
            continue
        text = " ".join(str(posted).split())
        if text == " ".join(field.text.split()):
            continue
        changed = True
        path = field.key.split(".")
        if path[0] == "population" and text and not isinstance(out.get("population"), Mapping):
            size = out.get("population_size")
            if size is None:
                raise InputError(f"{field.key}: says where N comes from: give the population size N too")
            out.pop("population_size", None)
            out["population"] = {"size": size}
        _set(out, path, text or None)
    if changed and isinstance(out.get("governance"), Mapping):
        try:
            GovernanceSection.model_validate(out["governance"])
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            key = f"governance.{where}" if where else "governance"
            raise InputError(f"{key}: {first['msg'].removeprefix('Value error, ')}") from None


def _get(doc: Mapping[str, Any], path: list[str]) -> Any:
    value: Any = doc
    for key in path:
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)
    return value


def _set(doc: dict[str, Any], path: list[str], value: Any) -> None:
    """``doc`` with ``value`` at ``path`` (``None``: removed, and the sections left empty with it)."""
    head, rest = path[0], path[1:]
    if not rest:
        if value is None:
            doc.pop(head, None)
        else:
            doc[head] = value
        return
    inner = dict(doc[head]) if isinstance(doc.get(head), Mapping) else {}
    _set(inner, rest, value)
    if inner:
        doc[head] = inner
    else:
        doc.pop(head, None)


__all__ = ["apply_governance_form", "governance_fields"]
