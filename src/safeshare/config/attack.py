"""The ``attack:`` section of a configuration (issue 34): attack the release as it is written.

Example (paths relative to the configuration file)::

    attack:
      frame: adult.data          # the identified frame the adversary holds, read like the input
      # frame: {path: frame.csv, header: true, delimiter: ";"}   # or with its own reading options
      methods: [exact, linkage]  # exact | linkage | residual (default: exact and linkage)
      id: person_id              # a column of the frame and the input linking them
                                 # (default: none, the frame is the input itself, row for row)
      control: control.csv       # residual: records of the population not in the release
      seed: 0                    # the attacker's random choices
      max_records: 100000        # attack a seeded sample of at most this many released rows
      max_pairs: 2000000000      # most distances the linkage may compute
      targets: 1000              # residual: targets of each attack

``safeshare anonymize CONFIG --attack-frame FILE`` sets ``attack.frame`` (creating the section).
The attack runs on the written release before it is published
(:mod:`safeshare.workflows.release_attack`); what the section names is checked before the search
(:func:`safeshare.workflows.release_attack.prepare_release_attack`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import BeforeValidator, Field, WithJsonSchema

from safeshare.config_checks import (
    Count,
    Flag,
    PositiveInt,
    Section,
    Text,
    check_text,
    checked,
    refuse,
)

#: The attacks a release can be put to (:mod:`safeshare.attack`).
ATTACK_METHODS = ("exact", "linkage", "residual")
#: The attacks run when ``methods`` is not given: the two that need no control set.
DEFAULT_METHODS = ("exact", "linkage")
#: The linkage's bound on the distances it computes (as ``safeshare attack --max-pairs``).
DEFAULT_MAX_PAIRS = 2_000_000_000


class FrameSection(Section):
    """``attack.frame``: the identified frame (a text alone is the path). A reading option not
    given is the input's (``input:``)."""

    path: Text
    delimiter: Text | None = None
    header: Flag | None = None
    names: Annotated[
        list[str] | None,
        BeforeValidator(lambda v: _names(v)),
        WithJsonSchema({"type": "array", "items": {"type": "string"}}),
    ] = None
    missing: Annotated[
        list[str] | None,
        BeforeValidator(lambda v: [v] if isinstance(v, str) else v),
        WithJsonSchema({"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]}),
    ] = None
    skip_rows: Count | None = None


def _names(value: Any) -> Any:
    if value is not None and (not isinstance(value, list) or not all(isinstance(n, str) for n in value)):
        raise refuse("expected a list of column names")
    return value


def _frame(value: Any) -> Any:
    if isinstance(value, str):
        return {"path": value}
    if not isinstance(value, Mapping) or "path" not in value:
        raise refuse("expected a file path, or a mapping with 'path' (and reading options)")
    return value


def _methods(value: Any) -> Any:
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not items:
        raise refuse(f"expected a list of attacks from {', '.join(ATTACK_METHODS)}")
    for item in items:
        if item not in ATTACK_METHODS:
            raise refuse(f"unknown attack {item!r}: expected {', '.join(ATTACK_METHODS)}")
    if len(set(items)) < len(items):
        raise refuse("an attack is named twice")
    return list(items)


class AttackSection(Section):
    """``attack:`` (module docstring; docs/configuration.md, "attack")."""

    frame: Annotated[FrameSection, BeforeValidator(_frame)]
    methods: Annotated[
        list[str],
        BeforeValidator(_methods),
        WithJsonSchema({"type": "array", "items": {"enum": list(ATTACK_METHODS)}}),
    ] = Field(default_factory=lambda: list(DEFAULT_METHODS))
    id: Annotated[str | None, checked(check_text, allow_none=True)] = None
    control: Annotated[str | None, checked(check_text, allow_none=True)] = None
    seed: Count = 0
    max_records: PositiveInt | None = None
    max_pairs: PositiveInt = DEFAULT_MAX_PAIRS
    targets: PositiveInt = 1000


def attack_section(value: Any) -> Any:
    """``attack:``: ``None``/``false`` is off, a text alone is the frame's path."""
    if value is None or value is False:
        return None
    if isinstance(value, str):
        return {"frame": value}
    if not isinstance(value, Mapping):
        raise refuse("expected a mapping such as {frame: identified.csv}")
    return value
