"""The workbench's hierarchy wizard (issue 35): a builder's parameters as form fields, and back.

A custodian builds a column's hierarchy by filling a form (one fieldset per builder of
:mod:`safeshare.hierarchy.builders`: ``intervals``, ``grouping``, ``masking``, ``dates``,
``suppression``), sees the value -> label mapping it gives with the records of each value, and
saves it. The form is a view of the configuration's ``hierarchy:`` mapping and nothing more:

    spec = builder_spec(form)          # the mapping a configuration file would hold
    form = form_values(spec, values)   # the fields that show ``spec`` again

so a saved wizard is the same YAML a person would write (docs/hierarchies.md), checked by the
builder itself when it is built for the column's values. Field names are ``<type>-<key>`` (e.g.
``intervals-widths``); the builder's own checks (nesting widths, one chain of date levels, a group
in no level) give the one-line errors. Text is parsed here only as far as a form must: lists are
comma-separated, a grouping is one line per group, ``label: member, member``, with a line ``---``
between levels, and the blank cell is a box ("Blank cells are missing values": ``missing: [""]``,
:mod:`safeshare.missing`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from safeshare.errors import InputError

#: The builders the wizard offers, in the order of its type menu.
WIZARD_TYPES = ("intervals", "grouping", "masking", "dates", "suppression")

#: The date levels the wizard offers, finest first within each chain (the builder refuses a mix
#: of the calendar and the week chains).
DATE_LEVELS = ("day", "week", "week_year", "month", "quarter", "year", "decade")

#: The line between two levels of a grouping.
LEVEL_BREAK = "---"

#: Values a new grouping is pre-filled with (one group per value).
PREFILL_VALUES = 200


@dataclass(frozen=True)
class WizardField:
    """One field of the wizard: its form ``name`` (``<type>-<key>``), the builder ``key`` it sets,
    what the page says of it, and how it is read (``kind``)."""

    builder: str
    key: str
    label: str
    kind: str  # number, numbers, integer, text, char, choice, levels, groups, top
    help: str = ""
    choices: tuple[str, ...] = ()
    placeholder: str = ""

    @property
    def name(self) -> str:
        return f"{self.builder}-{self.key}"


def _top(builder: str) -> WizardField:
    return WizardField(builder, "top", "Top label", "top", "the final level shared by every value", (), "*")


FIELDS: dict[str, tuple[WizardField, ...]] = {
    "intervals": (
        WizardField(
            "intervals",
            "widths",
            "Widths",
            "numbers",
            "one width per level, each a whole multiple of the one before (5, 10, 20)",
            placeholder="5, 10, 20",
        ),
        WizardField("intervals", "origin", "Origin", "number", "boundaries are origin + i x width", (), "0"),
        WizardField(
            "intervals", "label", "Label", "text", "a pattern with {low}, {high}, {end}", (), "{low}-{high}"
        ),
        WizardField("intervals", "coding_bottom", "Bottom coding", "number", "values below it: one class <b"),
        WizardField("intervals", "coding_top", "Top coding", "number", "values from it up: one class >=t"),
        _top("intervals"),
    ),
    "grouping": (
        WizardField(
            "grouping",
            "levels",
            "Groups",
            "groups",
            f"one line per group, label: member, member; a line {LEVEL_BREAK} starts the next level",
        ),
        _top("grouping"),
    ),
    "masking": (
        WizardField("masking", "char", "Mask character", "char", "", (), "*"),
        WizardField("masking", "max_masked", "Characters masked at most", "integer", "empty: all"),
        WizardField("masking", "align", "Mask from the", "choice", "", ("right", "left")),
        WizardField("masking", "pad", "Pad character", "char", "pads shorter values first (0 for ZIP codes)"),
        WizardField("masking", "pad_side", "Pad at the", "choice", "", ("", "start", "end")),
        _top("masking"),
    ),
    "dates": (
        WizardField(
            "dates",
            "levels",
            "Levels",
            "levels",
            "finest first; the calendar (day, month, quarter, year, decade) or weeks (day, week, week_year)",
            DATE_LEVELS,
        ),
        WizardField("dates", "format", "Format", "text", "strptime format of the values", (), "%Y-%m-%d"),
        WizardField("dates", "week_start", "Weeks start on", "choice", "", ("monday", "sunday")),
        _top("dates"),
    ),
    "suppression": (_top("suppression"),),
}

#: The keys of each builder the wizard can show; a mapping with another key (``grouping: {file}``,
#: ``intervals: {top_coding}``) is kept as YAML, not shown in the wizard.
SHOWN_KEYS: dict[str, frozenset[str]] = {
    "intervals": frozenset({"type", "widths", "origin", "label", "coding", "missing", "top"}),
    "grouping": frozenset({"type", "levels", "missing", "top"}),
    "masking": frozenset({"type", "char", "max_masked", "align", "pad", "pad_side", "missing", "top"}),
    "dates": frozenset({"type", "levels", "format", "week_start", "missing", "top"}),
    "suppression": frozenset({"type", "missing", "top"}),
}

BLANK_FIELD = "blank_missing"
TYPE_FIELD = "builder_type"
NO_TOP = "no_top"


def _number(text: str, where: str) -> int | float:
    try:
        value = float(text)
    except ValueError:
        raise InputError(f"{where}: {text!r} is not a number") from None
    if not math.isfinite(value):
        raise InputError(f"{where}: {text!r} is not a finite number")
    return int(value) if value.is_integer() and "." not in text and "e" not in text.lower() else value


def _groups(text: str, where: str) -> list[dict[str, list[str]]]:
    """``label: member, member`` lines, ``---`` between levels, as the builder's ``levels``."""
    levels: list[dict[str, list[str]]] = [{}]
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line:
            continue
        if line == LEVEL_BREAK:
            if levels[-1]:
                levels.append({})
            continue
        label, sep, members = line.partition(":")
        if not sep or not label.strip():
            raise InputError(f"{where}, line {number}: {line!r} is not 'label: member, member'")
        items = [m.strip() for m in members.split(",")]
        if not any(items):
            raise InputError(f"{where}, line {number}: group {label.strip()!r} lists no member")
        key = label.strip()
        if key in levels[-1]:
            raise InputError(f"{where}, line {number}: group {key!r} is defined twice in this level")
        levels[-1][key] = [m for m in items if m]
    if not levels[-1]:
        levels.pop()
    if not levels:
        raise InputError(f"{where}: no group given")
    return levels


def builder_spec(form: Mapping[str, Any]) -> dict[str, Any]:
    """The configuration's ``hierarchy:`` mapping the wizard's ``form`` describes.

    Only the chosen type's fields are read; an empty field leaves the builder's default. A field
    that cannot be read (a width that is not a number, a group line without ``:``) raises
    :class:`InputError` naming it; the builder's own rules are checked when it is built."""
    kind = str(form.get(TYPE_FIELD) or "").strip()
    if kind not in FIELDS:
        raise InputError(f"hierarchy wizard: choose a builder ({', '.join(WIZARD_TYPES)}), got {kind!r}")
    spec: dict[str, Any] = {"type": kind}
    coding: dict[str, int | float] = {}
    for f in FIELDS[kind]:
        where = f"{f.label.lower()} ({f.name})"
        if f.kind == "levels":
            chosen = [lv for lv in f.choices if str(form.get(f"{f.name}-{lv}") or "")]
            if chosen:
                spec[f.key] = chosen
            continue
        text = str(form.get(f.name) or "")
        if f.kind == "top":
            if str(form.get(f"{f.builder}-{NO_TOP}") or ""):
                spec["top"] = None
            elif text.strip():
                spec["top"] = text.strip()
            continue
        if f.kind == "groups":
            spec[f.key] = _groups(text, where)
            continue
        if f.kind != "char":
            text = text.strip()
        if not text:
            continue
        if f.kind == "numbers":
            spec[f.key] = [_number(t.strip(), where) for t in text.split(",") if t.strip()]
        elif f.kind == "number" and f.key.startswith("coding_"):
            coding[f.key.removeprefix("coding_")] = _number(text, where)
        elif f.kind == "number":
            spec[f.key] = _number(text, where)
        elif f.kind == "integer":
            if not text.isdigit():
                raise InputError(f"{where}: {text!r} is not a whole number")
            spec[f.key] = int(text)
        elif f.kind == "choice":
            if text not in f.choices:
                raise InputError(f"{where}: {text!r} is not one of {', '.join(c for c in f.choices if c)}")
            spec[f.key] = text
        else:
            spec[f.key] = text
    if kind == "intervals" and "widths" not in spec:
        if not coding:
            raise InputError("widths (intervals-widths): give one width per level, e.g. 5, 10, 20")
        spec["widths"] = []
    if coding:
        spec["coding"] = coding
    if str(form.get(BLANK_FIELD) or ""):
        spec["missing"] = [""]
    return spec


def wizard_shows(spec: object) -> bool:
    """Whether the wizard can show ``spec`` (a builder mapping of its types with its keys only)."""
    if not isinstance(spec, Mapping) or spec.get("type") not in SHOWN_KEYS:
        return False
    kind = str(spec["type"])
    missing = spec.get("missing")
    if missing not in (None, [], [""], ("",)):
        return False
    return set(spec) <= SHOWN_KEYS[kind]


def _text(value: object) -> str:
    return "" if value is None else str(value)


def form_values(spec: object, values: Sequence[str] | None = None) -> dict[str, str]:
    """The wizard's fields that show ``spec`` (:func:`builder_spec`'s inverse on what the wizard
    shows); for no spec, or one the wizard cannot show, a grouping pre-filled with one group per
    value (the first :data:`PREFILL_VALUES`) and intervals chosen for a column whose values are
    all numbers."""
    out: dict[str, str] = {}
    if not wizard_shows(spec):
        numeric = bool(values) and all(_is_number(v) for v in (values or []) if v != "")
        out[TYPE_FIELD] = "intervals" if numeric else "grouping"
        if values and not numeric:
            out["grouping-levels"] = "\n".join(f"{v}: {v}" for v in values[:PREFILL_VALUES] if v != "")
        out[BLANK_FIELD] = "yes" if values and "" in values else ""
        return out
    assert isinstance(spec, Mapping)
    kind = str(spec["type"])
    out[TYPE_FIELD] = kind
    for f in FIELDS[kind]:
        if f.kind == "levels":
            for lv in spec.get(f.key) or ():
                out[f"{f.name}-{lv}"] = "yes"
        elif f.kind == "top":
            if "top" in spec and spec["top"] is None:
                out[f"{f.builder}-{NO_TOP}"] = "yes"
            else:
                out[f.name] = _text(spec.get("top"))
        elif f.kind == "groups":
            lines: list[str] = []
            for number, level in enumerate(spec.get("levels") or ()):
                if number:
                    lines.append(LEVEL_BREAK)
                for label, members in dict(level).items():
                    items = [members] if isinstance(members, str) else list(members)
                    lines.append(f"{label}: {', '.join(str(m) for m in items)}")
            out[f.name] = "\n".join(lines)
        elif f.kind == "numbers":
            out[f.name] = ", ".join(str(w) for w in spec.get(f.key) or ())
        elif f.key.startswith("coding_"):
            out[f.name] = _text(dict(spec.get("coding") or {}).get(f.key.removeprefix("coding_")))
        else:
            out[f.name] = _text(spec.get(f.key))
    out[BLANK_FIELD] = "yes" if "" in (spec.get("missing") or ()) else ""
    return out


def _is_number(text: str) -> bool:
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False


def fields() -> dict[str, tuple[WizardField, ...]]:
    """The wizard's fields per builder (for the page)."""
    return FIELDS


__all__ = [
    "BLANK_FIELD",
    "DATE_LEVELS",
    "FIELDS",
    "LEVEL_BREAK",
    "NO_TOP",
    "TYPE_FIELD",
    "WIZARD_TYPES",
    "WizardField",
    "builder_spec",
    "fields",
    "form_values",
    "wizard_shows",
]
