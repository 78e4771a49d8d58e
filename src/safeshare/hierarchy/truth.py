"""Whether a label is a true statement about a value: the one truth check (issue 30).

A released label stands for its record's value: ``35-39`` says "the age is between 35 and
39", ``2021-12`` says "the date is in December 2021". A hierarchy whose labels are false of
their values publishes untrue statements however well it is verified against its
configuration (a date builder labelled 2022-01-01 "2021"). This module reads labels *as
statements* and judges them against values. Its readings are written from the definitions
in docs/hierarchies.md, apart from the builders that write the labels
(:mod:`safeshare.hierarchy.builders` is not imported), so a builder's mistake is not
repeated here. It is used in three places:

* at build time: every builder's hierarchy is checked before it is returned
  (:func:`check_hierarchy`, :func:`refuse_false`), for ``safeshare hierarchy build`` and for
  the builders of a configuration alike;
* by ``safeshare hierarchy check FILE [--data]`` (:func:`check_hierarchy` with the file's
  semantics);
* by the verifier on the written release (:mod:`safeshare.verify.truth`), per distinct
  (value, label) pair.

**Semantics** (:func:`semantics_of`), by what made the hierarchy:

* ``intervals``: a label read through the builder's ``label`` pattern states
  ``low <= x`` (``{low}``), ``x < end`` (``{end}``) and ``x <= high`` (``{high}``, the largest
  integer of the interval for integer data) or ``x < high`` (otherwise, where ``{high}`` is
  ``{end}``); a pattern without an upper bound states ``[low, low + w)`` for a width ``w`` of
  the builder. Coded tails state ``x < b`` (``<b``), ``x >= t`` (``>=t``, ``t+``);
* ``dates``: ``2021-01-05`` (that day), ``2021-W03`` (that ISO week, Monday to Sunday),
  ``2021-W01..2021-W52`` (those ISO weeks), ``2021-01-03..2021-01-09`` (those days),
  ``2021-01`` (that month), ``2021-Q1`` (that quarter), ``2021`` (that calendar year),
  ``2020-2029`` (those calendar years); the value read with the builder's ``format``;
* ``masking``: the shown characters are the value's (padded as configured) and only the
  masked end is hidden;
* ``grouping``: a group holds exactly the values listed under it, through every level;
* ``suppression``: nothing but the top;
* an ARX CSV file or a loaded hierarchy (``file``): a label that reads as a numeric interval
  (``30-39``, ``30:39``, ``[30, 40)``, ``[30, 40[``, ``<18``, ``>=90``, ``90+``) is judged for a
  numeric value, a label that reads as a calendar period (the forms above) for an ISO date
  (``2021-01-20``, with or without a time); any other label is the file's own definition
  and cannot be checked (:data:`UNKNOWN`; ``hierarchy check`` says how many).

For every semantics the value itself (a level-1 label of top coding, a missing value kept as
it is) and the top label (``*``, which claims nothing) are true of the value.
"""

from __future__ import annotations

import calendar
import contextlib
import datetime as dt
import re
import string
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Protocol

from safeshare.errors import HierarchyError
from safeshare.hierarchy.hierarchy import Hierarchy

#: A verdict: the label is true of the value (True), false (False), or cannot be read (None).
Verdict = bool | None
UNKNOWN: Verdict = None

#: A judge of one column: ``(value, label) -> verdict``.
Judge = Callable[[str, str], Verdict]

#: Labels that claim nothing: true of every value.
ANY_LABELS = frozenset({"*"})


class Semantics(Protocol):
    """What the labels of one hierarchy state (see the module docstring)."""

    @property
    def kind(self) -> str:
        """``intervals``, ``dates``, ``masking``, ``grouping``, ``suppression`` or ``file``."""
        ...

    def judge(self, values: Iterable[str]) -> Judge:
        """The judge of a column whose distinct values are ``values`` (an interval pattern's
        ``{high}`` depends on whether they are all integers)."""
        ...


# --------------------------------------------------------------------------- regions
@dataclass(frozen=True)
class Region:
    """A set of numbers (or of day ordinals) between two bounds, each closed or open or absent."""

    low: Fraction | None = None
    low_closed: bool = True
    high: Fraction | None = None
    high_closed: bool = True

    def contains(self, x: Fraction) -> bool:
        if self.low is not None and (x < self.low or (x == self.low and not self.low_closed)):
            return False
        return not (self.high is not None and (x > self.high or (x == self.high and not self.high_closed)))

    @property
    def empty(self) -> bool:
        if self.low is None or self.high is None:
            return False
        return self.low > self.high or (self.low == self.high and not (self.low_closed and self.high_closed))


#: A number as the builders and files write it: ``39``, ``-2.5``, ``1e3`` (also ``1,000`` in a label).
NUMBER = r"[-+]?(?:\d[\d,]*(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"


def read_number(text: str) -> Fraction | None:
    """The exact value of a decimal number's text (``39``, ``-2.5``, ``1e3``); ``None`` otherwise
    (``nan``, ``inf``, ``1/2``, ``12,5``, the blank)."""
    stripped = text.strip()
    if not stripped or "/" in stripped or "_" in stripped or "," in stripped:
        return None
    try:
        return Fraction(stripped)
    except (ValueError, ZeroDivisionError):
        return None


def _label_number(text: str) -> Fraction | None:
    """A number inside a label: thousands separators (``1,000``) allowed."""
    return read_number(text.replace(",", "")) if re.fullmatch(NUMBER, text.strip()) else None


_TAIL = re.compile(rf"^\s*(<=|>=|<|>|≤|≥)\s*({NUMBER})\s*$|^\s*({NUMBER})\s*\+\s*$")


def read_tail(label: str) -> Region | None:
    """A coded tail: ``<18`` (x < 18), ``<=18``, ``>90``, ``>=90`` / ``≥90`` / ``90+`` (x >= 90)."""
    match = _TAIL.match(label)
    if match is None:
        return None
    if match.group(3) is not None:
        bound = _label_number(match.group(3))
        return None if bound is None else Region(low=bound)
    op, bound = match.group(1), _label_number(match.group(2))
    if bound is None:
        return None
    if op in ("<", "<=", "≤"):
        return Region(high=bound, high_closed=op != "<")
    return Region(low=bound, low_closed=op != ">")


_OPEN = {"[": True, "(": False, "]": False}
_CLOSE = {"]": True, ")": False, "[": False}
_BRACKETED = re.compile(rf"^\s*([\[(\]])\s*({NUMBER})\s*[,;]\s*({NUMBER})\s*([\])\[])\s*$")
_RANGE = re.compile(rf"^\s*({NUMBER})\s*(?:-|:|\.\.|–|to)\s*({NUMBER})\s*$")


def read_interval(label: str) -> Region | None:
    """A numeric interval label as files write them: ``30-39``, ``30:39``, ``30..39`` (both ends
    included), ``[30, 40)``, ``[30, 40[``, ``(30, 40]``, ``]30, 40]``, or a tail (:func:`read_tail`)."""
    tail = read_tail(label)
    if tail is not None:
        return tail
    match = _BRACKETED.match(label)
    if match is not None:
        low, high = _label_number(match.group(2)), _label_number(match.group(3))
        if low is None or high is None:
            return None
        region = Region(low, _OPEN[match.group(1)], high, _CLOSE[match.group(4)])
        return None if region.empty else region
    match = _RANGE.match(label)
    if match is not None:
        low, high = _label_number(match.group(1)), _label_number(match.group(2))
        if low is None or high is None or low > high:
            return None
        return Region(low, True, high, True)
    return None


# --------------------------------------------------------------------------- calendar periods
def _days(first: dt.date, last: dt.date) -> Region | None:
    if last < first:
        return None
    return Region(Fraction(first.toordinal()), True, Fraction(last.toordinal()), True)


def _iso_week(year: int, week: int) -> tuple[dt.date, dt.date] | None:
    try:
        monday = dt.date.fromisocalendar(year, week, 1)
        return monday, monday + dt.timedelta(days=6)
    except (ValueError, OverflowError):
        return None


def _date(text: str) -> dt.date | None:
    try:
        return dt.date.fromisoformat(text) if re.fullmatch(r"\d{4}-\d{2}-\d{2}", text) else None
    except ValueError:
        return None


_ISO_WEEK = re.compile(r"^(\d{4})-W(\d{2})$")
_ISO_WEEKS = re.compile(r"^(\d{4})-W(\d{2})\.\.(\d{4})-W(\d{2})$")
_DAYS = re.compile(r"^(\d{4}-\d{2}-\d{2})\.\.(\d{4}-\d{2}-\d{2})$")
_MONTH = re.compile(r"^(\d{4})-(\d{2})$")
_QUARTER = re.compile(r"^(\d{4})-Q([1-4])$")
_YEAR = re.compile(r"^(\d{4})$")
_YEARS = re.compile(r"^(\d{4})-(\d{4})$")


def read_period(label: str) -> Region | None:
    """A calendar period label as the days (ordinals) it covers; ``None`` for anything else."""
    text = label.strip()
    try:
        if (day := _date(text)) is not None:
            return _days(day, day)
        if m := _ISO_WEEK.match(text):
            week = _iso_week(int(m.group(1)), int(m.group(2)))
            return None if week is None else _days(*week)
        if m := _ISO_WEEKS.match(text):
            first, last = (
                _iso_week(int(m.group(1)), int(m.group(2))),
                _iso_week(int(m.group(3)), int(m.group(4))),
            )
            return None if first is None or last is None else _days(first[0], last[1])
        if m := _DAYS.match(text):
            a, b = _date(m.group(1)), _date(m.group(2))
            return None if a is None or b is None else _days(a, b)
        if m := _MONTH.match(text):
            year, month = int(m.group(1)), int(m.group(2))
            if not 1 <= month <= 12:
                return None
            return _days(dt.date(year, month, 1), dt.date(year, month, calendar.monthrange(year, month)[1]))
        if m := _QUARTER.match(text):
            year, quarter = int(m.group(1)), int(m.group(2))
            final = 3 * quarter
            end = dt.date(year, final, calendar.monthrange(year, final)[1])
            return _days(dt.date(year, final - 2, 1), end)
        if m := _YEAR.match(text):
            year = int(m.group(1))
            return _days(dt.date(year, 1, 1), dt.date(year, 12, 31))
        if m := _YEARS.match(text):
            return _days(dt.date(int(m.group(1)), 1, 1), dt.date(int(m.group(2)), 12, 31))
    except (ValueError, OverflowError):  # year 0, a day 31 of a short month
        return None
    return None


#: The fraction of a second after ``HH:MM:SS`` (read and dropped when the format has no ``%f``).
_FRACTION = re.compile(r"(\d:\d\d)\.\d{1,9}(?!\d)")


def read_date(value: str, fmt: str) -> dt.date | None:
    """The calendar day of ``value`` read with the ``strptime`` format ``fmt`` (a fraction of a
    second is dropped when ``fmt`` has ``%S`` and no ``%f``, as docs/hierarchies.md says)."""
    text = value.strip()
    with contextlib.suppress(ValueError):
        return dt.datetime.strptime(text, fmt).date()
    if "%S" in fmt and "%f" not in fmt:
        whole = _FRACTION.sub(r"\1", text, count=1)
        if whole != text:
            with contextlib.suppress(ValueError):
                return dt.datetime.strptime(whole, fmt).date()
    return None


_ISO_VALUE = re.compile(
    r"^\d{4}-\d{2}-\d{2}(?:[ T]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}(?::?\d{2})?)?)?$"
)


def read_iso_date(value: str) -> dt.date | None:
    """The day of an ISO date or timestamp (``2021-01-20``, ``2021-01-20 09:18:48.12+00``)."""
    text = value.strip()
    if not _ISO_VALUE.match(text):
        return None
    try:
        return dt.date.fromisoformat(text[:10])
    except ValueError:
        return None


def _ordinal(day: dt.date) -> Fraction:
    return Fraction(day.toordinal())


# --------------------------------------------------------------------------- semantics
def _common(label: str, value: str, top: str | None, missing: frozenset[str]) -> Verdict:
    """The verdicts every builder's semantics shares: the value itself, the top, a missing value."""
    if label == value or (top is not None and label == top):
        return True
    if value in missing or label in missing:
        return False  # a missing value is only ever labelled itself (or the top)
    return UNKNOWN


@dataclass(frozen=True)
class IntervalSemantics:
    """What an ``intervals`` builder's labels state (see the module docstring)."""

    widths: tuple[Fraction, ...]
    origin: Fraction = Fraction(0)
    label: str | None = None
    bounds: tuple[Fraction, ...] = ()
    missing: frozenset[str] = frozenset()
    top: str | None = "*"
    kind: str = "intervals"

    def judge(self, values: Iterable[str]) -> Judge:
        numbers = [q for q in (read_number(v) for v in values if v not in self.missing) if q is not None]
        params = (*self.widths, self.origin, *self.bounds)
        integral = all(q.denominator == 1 for q in (*numbers, *params))
        pattern = self.label or ("{low}-{high}" if integral else "[{low}, {high})")
        reader = _pattern_reader(pattern, integral, self.widths)

        def judge(value: str, label: str) -> Verdict:
            common = _common(label, value, self.top, self.missing)
            if common is not None:
                return common
            x = read_number(value)
            if x is None:
                return False
            regions = [r for r in (reader(label), read_tail(label)) if r is not None]
            return any(r.contains(x) for r in regions) if regions else False

        return judge


def _pattern_reader(
    pattern: str, integral: bool, widths: Sequence[Fraction]
) -> Callable[[str], Region | None]:
    """The region a label written with the ``str.format`` pattern ``pattern`` states."""
    parts, seen = [], set()
    for literal, name, _, _ in string.Formatter().parse(pattern):
        parts.append(re.escape(literal))
        if name is None:
            continue
        if name in seen:
            parts.append(rf"\s*(?P={name})\s*")
        else:
            seen.add(name)
            parts.append(rf"\s*(?P<{name}>{NUMBER})\s*")
    compiled = re.compile("^" + "".join(parts) + "$")

    def read(label: str) -> Region | None:
        match = compiled.match(label)
        if match is None:
            return None
        found = {k: _label_number(v) for k, v in match.groupdict().items()}
        if any(v is None for v in found.values()):
            return None
        low, high, end = found.get("low"), found.get("high"), found.get("end")
        uppers = [(end, False)] if end is not None else []
        if high is not None:
            uppers.append((high, integral))
        if not uppers:  # "{low}" alone: the interval of one of the widths
            if low is None:
                return None
            return _any_width(low, widths)
        upper, closed = min(uppers, key=lambda u: (u[0], u[1]))
        return Region(low, True, upper, closed)

    return read


def _any_width(low: Fraction, widths: Sequence[Fraction]) -> Region | None:
    """``[low, low + w)`` for the widest ``w``: the most a ``{low}``-only label can state."""
    return Region(low, True, low + max(widths), False) if widths else None


@dataclass(frozen=True)
class DateSemantics:
    """What a ``dates`` builder's labels state: the calendar period they name."""

    format: str = "%Y-%m-%d"
    missing: frozenset[str] = frozenset()
    top: str | None = "*"
    kind: str = "dates"

    def judge(self, values: Iterable[str]) -> Judge:
        def judge(value: str, label: str) -> Verdict:
            common = _common(label, value, self.top, self.missing)
            if common is not None:
                return common
            day = read_date(value, self.format)
            region = read_period(label)
            return False if day is None or region is None else region.contains(_ordinal(day))

        return judge


@dataclass(frozen=True)
class MaskingSemantics:
    """What a ``masking`` builder's labels state: the shown characters are the value's."""

    char: str = "*"
    align: str = "right"
    pad: str | None = None
    pad_side: str | None = None
    missing: frozenset[str] = frozenset()
    top: str | None = "*"
    kind: str = "masking"

    def judge(self, values: Iterable[str]) -> Judge:
        def judge(value: str, label: str) -> Verdict:
            common = _common(label, value, self.top, self.missing)
            if common is not None:
                return common
            return self.shows(value, label)

        return judge

    def shows(self, value: str, label: str) -> bool:
        """Whether ``label`` is ``value`` (padded to the label's length when padding is
        configured) with a run of mask characters at its masked end."""
        text = value
        if len(text) < len(label) and self.pad is not None:
            side = self.pad_side or ("end" if self.align == "right" else "start")
            padding = self.pad * (len(label) - len(text))
            text = text + padding if side == "end" else padding + text
        if len(text) != len(label):
            return False
        if self.align == "right":
            shown = label.rstrip(self.char)
            return text[: len(shown)] == shown
        shown = label.lstrip(self.char)
        return text[len(text) - len(shown) :] == shown


@dataclass(frozen=True)
class GroupingSemantics:
    """What a ``grouping`` builder's labels state: a group holds the values listed under it."""

    members: Mapping[str, frozenset[str]]  # label -> the values it holds, over every level
    missing: frozenset[str] = frozenset()
    top: str | None = "*"
    kind: str = "grouping"

    @classmethod
    def from_levels(
        cls, levels: Sequence[Mapping[str, Sequence[str]]], top: str | None, missing: Iterable[str] = ()
    ) -> GroupingSemantics:
        members: dict[str, set[str]] = {}
        below: dict[str, frozenset[str]] | None = None  # the level below: label -> its values
        for level in levels:
            current: dict[str, frozenset[str]] = {}
            for label, listed in level.items():
                if below is None:
                    held = frozenset(listed)
                else:
                    held = frozenset().union(*(below.get(m, frozenset()) for m in listed))
                current[label] = held
                members.setdefault(label, set()).update(held)
            below = current
        return cls({k: frozenset(v) for k, v in members.items()}, frozenset(missing), top)

    def judge(self, values: Iterable[str]) -> Judge:
        def judge(value: str, label: str) -> Verdict:
            common = _common(label, value, self.top, self.missing)
            if common is not None:
                return common
            return value in self.members.get(label, frozenset())

        return judge


@dataclass(frozen=True)
class SuppressionSemantics:
    """A ``suppression`` builder's only label is the top."""

    missing: frozenset[str] = frozenset()
    top: str | None = "*"
    kind: str = "suppression"

    def judge(self, values: Iterable[str]) -> Judge:
        def judge(value: str, label: str) -> Verdict:
            common = _common(label, value, self.top, self.missing)
            return False if common is None else common

        return judge


@dataclass(frozen=True)
class FileSemantics:
    """An ARX CSV file's labels: intervals and calendar periods are judged, the rest is the
    file's own definition (:data:`UNKNOWN`)."""

    kind: str = "file"

    def judge(self, values: Iterable[str]) -> Judge:
        def judge(value: str, label: str) -> Verdict:
            if label == value or label in ANY_LABELS:
                return True
            x = read_number(value)
            if x is not None:
                region = read_interval(label)
                return UNKNOWN if region is None else region.contains(x)
            day = read_iso_date(value)
            if day is not None:
                period = read_period(label)
                return UNKNOWN if period is None else period.contains(_ordinal(day))
            return UNKNOWN

        return judge


def _fractions(values: Iterable[Any]) -> tuple[Fraction, ...]:
    out = []
    for v in values:
        q = read_number(repr(v) if isinstance(v, float) else str(v))
        if q is not None:
            out.append(q)
    return tuple(out)


def semantics_of(spec: Any) -> Semantics:
    """What the labels of a hierarchy spec state: a builder's (by its ``type_name`` and the
    parameters it was configured with) or, for an ARX CSV file or a loaded
    :class:`~safeshare.hierarchy.hierarchy.Hierarchy`, the file's."""
    kind = getattr(spec, "type_name", None)
    missing = frozenset(str(t) for t in getattr(spec, "missing", ()) or ())
    top = getattr(spec, "top", "*")
    if kind == "intervals":
        coding = getattr(spec, "coding", None) or {}
        bounds = [*coding.values(), spec.bottom_coding, spec.top_coding]
        return IntervalSemantics(
            widths=_fractions(spec.widths),
            origin=_fractions([spec.origin])[0],
            label=spec.label,
            bounds=_fractions(b for b in bounds if b is not None),
            missing=missing,
            top=top,
        )
    if kind == "dates":
        return DateSemantics(format=spec.format, missing=missing, top=top)
    if kind == "masking":
        return MaskingSemantics(spec.char, spec.align, spec.pad, spec.pad_side, missing, top)
    if kind == "grouping":
        return GroupingSemantics.from_levels(spec.levels, top, missing)
    if kind == "suppression":
        return SuppressionSemantics(missing, top)
    return FileSemantics()


# --------------------------------------------------------------------------- checks
@dataclass(frozen=True)
class FalseLabel:
    """A label that is not true of its value (``level`` in the hierarchy, 0 when unknown)."""

    value: str
    label: str
    level: int = 0


@dataclass
class TruthCheck:
    """The outcome of :func:`check_hierarchy`: how many (value, label) pairs were judged true,
    false or could not be read (a file's own categories)."""

    kind: str
    pairs: int = 0
    unchecked: int = 0
    false: list[FalseLabel] = field(default_factory=list)
    unchecked_examples: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.false

    def to_dict(self) -> dict[str, Any]:
        return {
            "semantics": self.kind,
            "pairs": self.pairs,
            "true": self.pairs - self.unchecked - len(self.false),
            "false": len(self.false),
            "unchecked": self.unchecked,
        }


def check_hierarchy(
    hierarchy: Hierarchy, semantics: Semantics, values: Collection[str] | None = None
) -> TruthCheck:
    """Judge every label of every row of ``hierarchy`` against the row's value.

    ``values``: the column's distinct values (default: the hierarchy's leaves); only their rows
    are judged (a code list may hold many more), and an interval pattern reads ``{high}`` by
    whether they are all integers.
    """
    judge = semantics.judge(list(hierarchy.leaves) if values is None else list(values))
    out = TruthCheck(semantics.kind)
    for row in hierarchy.rows:
        value = row[0]
        if values is not None and value not in values:
            continue
        for level, label in enumerate(row[1:], start=1):
            out.pairs += 1
            verdict = judge(value, label)
            if verdict is None:
                out.unchecked += 1
                if len(out.unchecked_examples) < 5 and label not in out.unchecked_examples:
                    out.unchecked_examples.append(label)
            elif not verdict:
                out.false.append(FalseLabel(value, label, level))
    return out


def false_message(name: str, check: TruthCheck) -> str:
    """The one line that refuses a hierarchy with a false label."""
    first = check.false[0]
    more = f" ({len(check.false)} labels are false)" if len(check.false) > 1 else ""
    level = f" (level {first.level})" if first.level else ""
    return f"{name}: label {first.label!r}{level} is not true of value {first.value!r}{more}"


def refuse_false(
    hierarchy: Hierarchy, semantics: Semantics, name: str = "", values: Collection[str] | None = None
) -> TruthCheck:
    """:func:`check_hierarchy`, raising :class:`HierarchyError` (one line naming the column,
    the value and the label) when a label is false of its value."""
    check = check_hierarchy(hierarchy, semantics, values)
    if not check.passed:
        raise HierarchyError(false_message(name or hierarchy.name, check))
    return check


__all__ = [
    "UNKNOWN",
    "DateSemantics",
    "FalseLabel",
    "FileSemantics",
    "GroupingSemantics",
    "IntervalSemantics",
    "MaskingSemantics",
    "Region",
    "Semantics",
    "SuppressionSemantics",
    "TruthCheck",
    "Verdict",
    "check_hierarchy",
    "false_message",
    "read_date",
    "read_interval",
    "read_number",
    "read_period",
    "refuse_false",
    "semantics_of",
]
