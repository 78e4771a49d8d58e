"""One field of the workbench's forms (the Privacy screen's models and options, the release
context): its name in the form, its key in the configuration, its kind and the text shown
(:mod:`safeshare.workflows.privacy_form`, :mod:`safeshare.workflows.governance_form`)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Field:
    """One field of the form: ``name`` in the form, ``key`` in the configuration (its model's
    parameter, or a top-level key), ``kind`` (integer, number, choice, list, mapping, text,
    fraction, flag), the ``choices`` of a choice, the ``blank`` (the text of an absent key) and
    the ``text`` shown."""

    name: str
    key: str
    kind: str
    choices: tuple[str, ...] = ()
    blank: str = ""
    placeholder: str = ""
    text: str = ""
    #: the values of a mapping: numbers (knowledge) or texts (a distance per column)
    values: str = "number"

    @property
    def testid(self) -> str:
        return self.name.replace("_", "-").replace(".", "-")


__all__ = ["Field"]
