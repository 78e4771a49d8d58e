"""Hierarchy builders: make a hierarchy from the distinct values of a column.

A builder is a frozen dataclass with validated parameters and a method
``build(values, name) -> Hierarchy``. The result is a validated
:class:`~safeshare.hierarchy.hierarchy.Hierarchy` (thesis §4.1.4: global,
single-dimensional recoding, so every level is a *function* of the level below)
whose leaves are exactly the distinct input strings, with every row the same
depth. The same input always gives the same hierarchy, whatever the order of
``values``.

:func:`builder_from_spec` turns the mapping given under an attribute's
``hierarchy:`` key of the YAML configuration into a builder:

================  ==========================  =====================================================
``type``          class                       keys
================  ==========================  =====================================================
``intervals``     :class:`IntervalBuilder`    ``widths``, ``origin``, ``label``, ``bottom_coding``,
                                              ``top_coding``, ``missing``, ``top``
``grouping``      :class:`GroupingBuilder`    ``levels`` *or* ``file``, ``top``
``masking``       :class:`MaskingBuilder`     ``char``, ``max_masked``, ``align``, ``pad``,
                                              ``pad_side``, ``missing``, ``top``
``dates``         :class:`DateBuilder`        ``levels``, ``format``, ``week_start``, ``missing``,
                                              ``top``
``suppression``   :class:`SuppressionBuilder` ``missing``, ``top``
``file``          :class:`FileBuilder`        ``path``, ``delimiter``, ``encoding``
================  ==========================  =====================================================

Bad parameters raise :class:`~safeshare.errors.ConfigError` when the builder
is made; data the builder cannot place (a value that is not a number, a date
in another format, a category in no group) raises
:class:`~safeshare.errors.HierarchyError` from ``build``, naming the value.
Both are one-line messages and make the command line exit with status 2.

The empty value is never a data value by default: an empty cell is what a
wrong delimiter or a padded short row produces, so :class:`IntervalBuilder`
and :class:`SuppressionBuilder` refuse it unless ``missing`` declares it
(``missing: [""]``).

The hierarchies of the reference thesis (appendix B) are reproduced by these
builders: age bands by :class:`IntervalBuilder` (``widths: [10, 50]``,
``label: "{low}:{high}"``), the categorical rules by :class:`GroupingBuilder`,
"maintain first digit" of procedure codes by :class:`MaskingBuilder` and the
"suppression rule" by :class:`SuppressionBuilder`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import itertools
import math
import re
import string
import types
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, cast

from safeshare.config_checks import check_keys, read_yaml
from safeshare.errors import ConfigError, HierarchyError
from safeshare.hierarchy.hierarchy import Hierarchy, HierarchyWarning
from safeshare.hierarchy.io import read_arx_csv, read_arx_rows
from safeshare.hierarchy.truth import refuse_false, semantics_of
from safeshare.missing import BLANK, BLANK_HINT
from safeshare.resources import check_memory

if TYPE_CHECKING:
    from typing import Self

    from safeshare.hierarchy.hierarchy import HierarchyBuilder

Number = int | float

__all__ = [
    "BUILDERS",
    "DateBuilder",
    "FileBuilder",
    "GroupingBuilder",
    "IntervalBuilder",
    "MaskingBuilder",
    "SuppressionBuilder",
    "builder_files",
    "builder_from_spec",
]


# --------------------------------------------------------------------------- parameter checks
def _shown(value: object) -> str:
    """A parameter value as it would be written in YAML (for error messages)."""
    if isinstance(value, tuple | list):
        return "[" + ", ".join(_shown(v) for v in value) + "]"
    if isinstance(value, str):
        return repr(value)
    return str(value)


def _fraction(value: Number) -> Fraction:
    """The exact rational value of a parameter (floats by their decimal repr: 0.1 is 1/10)."""
    return Fraction(value) if isinstance(value, int) else Fraction(repr(value))


def _plain(q: Fraction) -> Number:
    """``q`` as an int when it is integral, else as the nearest float."""
    return q.numerator if q.denominator == 1 else float(q)


def _as_number(value: object, key: str) -> Number:
    """A finite number from YAML (int, float or numeric string); integral values become ints."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ConfigError(f"{key} must be a number, got {_shown(value)}")
    if isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(f"{key} must be a finite number, got {value}")
    if isinstance(value, str):
        parsed = _parse_fraction(value)
        if parsed is None:
            raise ConfigError(f"{key} must be a number, got {value!r}")
        return _plain(parsed)
    return _plain(_fraction(value))


def _as_int(value: object, key: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{key} must be a whole number, got {_shown(value)}")
    if value < minimum:
        raise ConfigError(f"{key} must be at least {minimum}, got {value}")
    return value


def _as_label(value: object, key: str, allow_empty: bool = False) -> str:
    """A label from YAML: strings as they are, numbers as their text."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ConfigError(f"{key} must be a string, got {_shown(value)}")
    text = value if isinstance(value, str) else str(value)
    if not text and not allow_empty:
        raise ConfigError(f"{key} must not be empty")
    return text


def _as_top(value: object) -> str | None:
    """The ``top`` parameter: a label, or ``None`` (YAML ``null``) for no top level."""
    return None if value is None else _as_label(value, "top")


def _as_char(value: object, key: str) -> str:
    text = _as_label(value, key)
    if len(text) != 1:
        raise ConfigError(f"{key} must be a single character, got {text!r}")
    return text


def _as_choice(value: object, key: str, choices: Sequence[str]) -> str:
    text = str(value).strip().lower() if isinstance(value, str) else ""
    if text not in choices:
        raise ConfigError(f"{key} must be one of {', '.join(choices)}, got {_shown(value)}")
    return text


def _as_tokens(value: object, key: str) -> tuple[str, ...]:
    """A list of labels (a single string is a list of one, ``None`` the empty list)."""
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if not isinstance(value, Sequence):
        raise ConfigError(f"{key} must be a list of strings, got {_shown(value)}")
    tokens = tuple(_as_label(v, key, allow_empty=True) for v in value)
    return tuple(dict.fromkeys(tokens))


def _parse_fraction(text: str) -> Fraction | None:
    """The exact value of a decimal number such as ``"39"``, ``"-2.5"``, ``"1e3"``; else None."""
    stripped = text.strip()
    if not stripped or "/" in stripped or "_" in stripped:
        return None
    try:
        return Fraction(stripped)
    except (ValueError, ZeroDivisionError):
        return None


def _distinct(values: Iterable[object]) -> list[str]:
    """The distinct values as strings, in order of first appearance."""
    return list(dict.fromkeys(str(v) for v in values))


def _assemble(
    rows: Sequence[Sequence[str]],
    missing: Sequence[str],
    height: int,
    top: str | None,
    name: str,
    warnings: Sequence[HierarchyWarning] = (),
) -> Hierarchy:
    """The hierarchy of ``rows`` (``value, level 1 .. level height``), plus missing tokens and ``top``.

    A missing-value token is its own label at every level below the top, so it
    must not coincide with a label that real values get at some level.
    """
    if not rows and not missing:
        raise HierarchyError(f"{name}: no values to build a hierarchy from")
    for token in missing:
        for level in range(1, height + 1):
            if any(row[level] == token for row in rows):
                raise HierarchyError(
                    f"{name}: missing-value token {token!r} is also the label of other values at "
                    f"level {level}; use a different token"
                )
    table = [tuple(row) for row in rows] + [(token,) * (height + 1) for token in missing]
    if top is not None:
        table = [(*row, top) for row in table]
    return Hierarchy(table, name=name, warnings=warnings)


#: Memory of one label besides its characters (a str object and its slot in a row): an upper bound.
_BYTES_PER_LABEL = 80


def _check_labels_fit(name: str, n_values: int, levels: int, chars: int, hint: str) -> None:
    """Refuse a hierarchy of ``n_values`` rows of ``levels`` labels (``chars`` characters in all)
    that the memory cannot hold, before it is built (:func:`~safeshare.resources.check_memory`)."""
    check_memory(
        n_values * levels * _BYTES_PER_LABEL + chars,
        f"{name}: a hierarchy of {n_values:,} values x {levels:,} levels",
        hint,
    )


def _split_missing(values: Iterable[object], missing: Sequence[str]) -> tuple[list[str], list[str]]:
    """Distinct values split into (real values, missing tokens present)."""
    tokens = set(missing)
    distinct = _distinct(values)
    return [v for v in distinct if v not in tokens], [v for v in distinct if v in tokens]


class _Configurable:
    """Construction from a configuration mapping, with one-line errors for unknown keys, and the
    truth check of every hierarchy built (:mod:`safeshare.hierarchy.truth`)."""

    type_name: ClassVar[str] = ""
    extra_keys: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def from_config(cls, params: Mapping[str, Any], base_dir: Path) -> Self:
        """The builder for the keys of a ``hierarchy:`` mapping (without ``type``)."""
        _check_keys(cls, params)
        return cls(**params)

    def build(self, values: Sequence[str], name: str = "") -> Hierarchy:
        """The hierarchy of ``values``, every label checked true of its value: a label the
        builder's own semantics do not confirm raises :class:`HierarchyError` naming the
        column, the value and the label (:func:`~safeshare.hierarchy.truth.refuse_false`)."""
        hierarchy = self._build(values, name)
        refuse_false(hierarchy, semantics_of(self), name or hierarchy.name)
        return hierarchy

    def _build(self, values: Sequence[str], name: str) -> Hierarchy:
        raise NotImplementedError


def with_data_missing(builder: HierarchyBuilder, tokens: Sequence[str]) -> HierarchyBuilder:
    """``builder`` keeping the data's missing values (the input's declared tokens,
    :mod:`safeshare.missing`) as they are below its top, besides its own ``missing``.

    The input's declaration is the one switch: a configuration's ``input.missing``, the command
    line's ``--missing`` and the workbench's fields reach every builder through this function.
    A hierarchy file is its own definition: it must list the token (``?;?;*``)."""
    own = getattr(builder, "missing", None)
    if own is None or not tokens or not isinstance(builder, _Configurable):
        return builder
    merged = tuple(dict.fromkeys([*own, *tokens]))
    if merged == tuple(own):
        return builder
    return cast("HierarchyBuilder", dataclasses.replace(cast(Any, builder), missing=merged))


def _known_keys(cls: type) -> list[str]:
    """The configuration keys of a builder class: its constructor's fields and extra keys."""
    fields = [f.name for f in dataclasses.fields(cast(Any, cls)) if f.init]
    return fields + list(getattr(cls, "extra_keys", ()))


def _check_keys(cls: type, params: Mapping[str, Any], extra: Sequence[str] = ()) -> None:
    """Raise :class:`ConfigError` for an unknown key or a missing required one."""
    fields = [f for f in dataclasses.fields(cast(Any, cls)) if f.init]
    type_name = getattr(cls, "type_name", cls.__name__)
    check_keys(params, [f.name for f in fields] + list(extra), f"hierarchy type {type_name!r}:")
    required = [
        f.name
        for f in fields
        if f.default is dataclasses.MISSING
        and f.default_factory is dataclasses.MISSING
        and f.name not in params
    ]
    if required and not any(e in params for e in extra):
        raise ConfigError(f"hierarchy type {type_name!r} needs the key {required[0]!r}")


def _set(obj: object, **values: Any) -> None:
    """Assign normalized parameters on a frozen dataclass during ``__post_init__``."""
    for key, value in values.items():
        object.__setattr__(obj, key, value)


# --------------------------------------------------------------------------- suppression
@dataclass(frozen=True)
class SuppressionBuilder(_Configurable):
    """One level above the values: everything becomes ``top`` (default ``*``).

    The "suppression rule" of thesis appendix B (race, sex, relationship)::

        Female -> *
        Male   -> *

    The empty value is refused unless ``missing`` lists it (``missing: [""]``):
    it is the mark of a wrong delimiter or of padded rows, not a category.
    """

    type_name: ClassVar[str] = "suppression"

    top: str = "*"
    missing: Sequence[str] = ()

    def __post_init__(self) -> None:
        _set(self, top=_as_label(self.top, "top"), missing=_as_tokens(self.missing, "missing"))

    def _build(self, values: Sequence[str], name: str) -> Hierarchy:
        name = name or self.type_name
        distinct = _distinct(values)
        if not distinct:
            raise HierarchyError(f"{name}: no values to build a hierarchy from")
        if "" in distinct and "" not in self.missing:
            raise HierarchyError(_empty_message(name))
        return Hierarchy([(v, self.top) for v in sorted(distinct)], name=name)


def _empty_message(name: str) -> str:
    """The refusal of a blank cell that is not declared missing (:mod:`safeshare.missing`)."""
    return (
        f"{name}: the empty value occurs in the data (a wrong input.delimiter, or padded rows?); "
        f"{BLANK_HINT} (or declare it with missing: [''] in this builder only)"
    )


def _refuse_blank(real: Sequence[str], name: str) -> None:
    """Refuse the blank cell among the values that are not declared missing."""
    if BLANK in real:
        raise HierarchyError(_empty_message(name))


# --------------------------------------------------------------------------- intervals


@dataclass(frozen=True)
class IntervalBuilder(_Configurable):
    """Nested numeric intervals, one level per width, then ``top``.

    Level ``j`` (1-based) puts a value ``x`` in the half-open interval
    ``[low, low + widths[j-1])`` with ``low = origin + i * widths[j-1]`` for the
    integer ``i`` with ``low <= x < low + widths[j-1]``. Every width must be a
    multiple of the one before, so the intervals of level ``j`` nest in those of
    level ``j + 1`` (thesis §4.1.4: single-dimensional recoding maps a value to
    non-overlapping ranges; appendix B, "merge range" for age). With
    ``widths: [5, 10, 20]``::

        37 -> 35-39 -> 30-39 -> 20-39 -> *

    ``label`` is a :meth:`str.format` pattern with the fields ``{low}`` (the
    inclusive lower bound), ``{high}`` and ``{end}`` (the exclusive upper bound).
    When every value, ``origin``, width and coding bound is an integer,
    ``{high}`` is the largest integer in the interval (``end - 1``) and the
    default label is ``"{low}-{high}"`` (``35-39``, the UCI/ARX style; the thesis
    writes ``35:39``). Otherwise ``{high}`` equals ``{end}`` and the default label
    is ``"[{low}, {high})"`` (``[35, 37.5)``).

    **Top and bottom coding** (``coding: {top: 90, bottom: 18}``, either bound or both) is a
    transformation of its own: level 1 keeps every value as it is except the tails, shown as
    ``>=90`` and ``<18``; the interval levels follow (``widths`` may then be empty), with the
    same tail labels, and an interval that straddles a bound is cut at it (``[80, 100)``
    shows as ``80-89``)::

        17 -> <18  -> <18   -> *          (coding: {top: 90, bottom: 18}, widths: [10])
        37 -> 37   -> 30-39 -> *
        93 -> >=90 -> >=90  -> *

    The older keys ``top_coding: 90`` / ``bottom_coding: 10`` code the tails inside the
    interval levels only (labels ``90+`` and ``<10``, no level of exact values); they cannot
    be combined with ``coding``.

    Values are parsed from their text (``"39"``, ``"39.5"``, ``"-4"``, ``"1e3"``);
    the leaves are the exact input strings. The tokens in ``missing`` (default:
    none) stay themselves at every level below the top; any other value that
    is not a number, the empty value included, raises :class:`HierarchyError`
    naming it.
    """

    type_name: ClassVar[str] = "intervals"

    widths: Sequence[Number]
    origin: Number = 0
    label: str | None = None
    bottom_coding: Number | None = None
    top_coding: Number | None = None
    missing: Sequence[str] = ()
    top: str | None = "*"
    coding: Mapping[str, Number] | None = None

    def __post_init__(self) -> None:
        if isinstance(self.widths, str | bytes) or not isinstance(self.widths, Sequence):
            raise ConfigError(
                f"widths must be a list of numbers such as [5, 10, 20], got {_shown(self.widths)}"
            )
        widths = tuple(_as_number(w, "widths") for w in self.widths)
        coding = _as_coding(self.coding)
        if coding is not None and (self.bottom_coding is not None or self.top_coding is not None):
            raise ConfigError("coding replaces bottom_coding and top_coding: give one or the other")
        if not widths and coding is None:
            raise ConfigError("widths must list at least one interval width, e.g. widths: [5, 10, 20]")
        for w in widths:
            if w <= 0:
                raise ConfigError(f"widths {_shown(widths)}: every width must be positive, got {w}")
        for a, b in itertools.pairwise(widths):
            if b <= a:
                raise ConfigError(f"widths {_shown(widths)} must increase strictly ({b} follows {a})")
            if (_fraction(b) / _fraction(a)).denominator != 1:
                raise ConfigError(
                    f"widths {_shown(widths)} do not nest: {b} is not a multiple of {a} "
                    "(each width must be a whole multiple of the one before)"
                )
        bottom = None if self.bottom_coding is None else _as_number(self.bottom_coding, "bottom_coding")
        top_coding = None if self.top_coding is None else _as_number(self.top_coding, "top_coding")
        if bottom is not None and top_coding is not None and bottom >= top_coding:
            raise ConfigError(f"bottom_coding ({bottom}) must be below top_coding ({top_coding})")
        label = None if self.label is None else _as_label(self.label, "label")
        if label is not None:
            _check_label_format(label)
        _set(
            self,
            widths=widths,
            origin=_as_number(self.origin, "origin"),
            label=label,
            bottom_coding=bottom,
            top_coding=top_coding,
            missing=_as_tokens(self.missing, "missing"),
            top=_as_top(self.top),
            coding=coding,
        )

    def __hash__(self) -> int:
        coding = tuple(sorted(self.coding.items())) if self.coding is not None else None
        return hash(
            (
                tuple(self.widths),
                self.origin,
                self.label,
                self.bottom_coding,
                self.top_coding,
                tuple(self.missing),
                self.top,
                coding,
            )
        )

    def _build(self, values: Sequence[str], name: str) -> Hierarchy:
        name = name or self.type_name
        real, missing = _split_missing(values, self.missing)
        numbers: dict[str, Fraction] = {}
        for value in real:
            q = _parse_fraction(value)
            if value == "":
                raise HierarchyError(_empty_message(name))
            if q is None:
                raise HierarchyError(
                    f"{name}: value {value!r} is not a number; if it marks an unknown value, "
                    f"declare it with missing: [{value!r}]"
                )
            numbers[value] = q
        widths = [_fraction(w) for w in self.widths]
        origin = _fraction(self.origin)
        with_coding = self.coding is not None
        if self.coding is not None:
            bound_b, bound_t = self.coding.get("bottom"), self.coding.get("top")
        else:
            bound_b, bound_t = self.bottom_coding, self.top_coding
        bottom = None if bound_b is None else _fraction(bound_b)
        top_coding = None if bound_t is None else _fraction(bound_t)
        low_label = f"<{_plain(bottom)}" if bottom is not None else ""
        high_label = ""
        if top_coding is not None:
            high_label = f">={_plain(top_coding)}" if with_coding else f"{_plain(top_coding)}+"
        params = [*widths, origin, *(b for b in (bottom, top_coding) if b is not None)]
        integral = all(q.denominator == 1 for q in (*numbers.values(), *params))
        pattern = self.label or ("{low}-{high}" if integral else "[{low}, {high})")
        longest = max((len(v) for v in numbers), default=0) + len(pattern) + 40
        chars = len(numbers) * len(widths) * longest
        _check_labels_fit(name, len(numbers), len(widths), chars, "give fewer widths")
        # Level-wise label -> interval key, to catch label patterns that merge intervals.
        seen: list[dict[str, object]] = [{} for _ in widths]
        rows = []
        for value in sorted(numbers, key=lambda v: (numbers[v], v)):
            x = numbers[value]
            row = [value]
            if with_coding:  # level 1: the value itself, its tails coded
                tail = "bottom" if bottom is not None and x < bottom else None
                tail = "top" if top_coding is not None and x >= top_coding else tail
                # (a number's text never reads "<18" or ">=90": the tails cannot meet a value)
                row.append(low_label if tail == "bottom" else high_label if tail == "top" else value)
            for level, width in enumerate(widths):
                key: object
                if bottom is not None and x < bottom:
                    text, key = low_label, "bottom"
                elif top_coding is not None and x >= top_coding:
                    text, key = high_label, "top"
                else:
                    low = origin + math.floor((x - origin) / width) * width
                    end = low + width
                    if bottom is not None:
                        low = max(low, bottom)
                    if top_coding is not None:
                        end = min(end, top_coding)
                    high = end - 1 if integral else end
                    try:
                        text = pattern.format(low=_plain(low), high=_plain(high), end=_plain(end))
                    except (ValueError, TypeError) as exc:
                        raise HierarchyError(
                            f"{name}: label {pattern!r} cannot show the interval [{_plain(low)}, "
                            f"{_plain(end)}): {exc}"
                        ) from None
                    key = low
                other = seen[level].setdefault(text, key)
                if other != key:
                    coded = isinstance(other, str) or isinstance(key, str)
                    hint = "differ from the coding labels" if coded else "show {low} in full"
                    raise HierarchyError(
                        f"{name}: label {pattern!r} gives two different classes the same label "
                        f"{text!r} at level {level + 1 + with_coding}; make the label {hint}"
                    )
                row.append(text)
            rows.append(row)
        warnings = _implausible(name, numbers, widths, bottom, top_coding, low_label, high_label)
        return _assemble(rows, missing, len(widths) + with_coding, self.top, name, warnings)


def _implausible(
    name: str,
    numbers: Mapping[str, Fraction],
    widths: Sequence[Fraction],
    bottom: Fraction | None,
    top: Fraction | None,
    low_label: str,
    high_label: str,
) -> list[HierarchyWarning]:
    """Values that a coding tail absorbs although they lie far beyond its bound: more than the
    coarsest width beyond it (without widths, more than the distance between the two bounds).
    An age of 138 under ``coding: {top: 90}`` with ``widths: [5, 10, 20]`` (138 >= 90 + 20) is
    most likely an error, and top coding would hide it; 95 is not reported."""
    if widths:
        reach = max(widths)
    elif bottom is not None and top is not None:
        reach = top - bottom
    else:
        return []
    out = []
    tails: list[tuple[Fraction | None, str, int, str]] = [
        (top, high_label, 1, "above the top coding"),
        (bottom, low_label, -1, "below the bottom coding"),
    ]
    for bound, label, side, where in tails:
        if bound is None:
            continue
        far = bound + side * reach  # beyond it: x >= far (top), x < far (bottom)
        found = sorted(
            (v for v, x in numbers.items() if (x >= far if side > 0 else x < far)), key=lambda v: numbers[v]
        )
        if found:
            count = "1 value of the data lies" if len(found) == 1 else f"{len(found)} values of the data lie"
            out.append(
                HierarchyWarning(
                    "implausible-values",
                    name,
                    f"{name}: {count} far {where} (more than {_plain(reach)} beyond {_plain(bound)}), "
                    f"released as {label!r}: check the input for errors",
                    tuple(found),
                )
            )
    return out


def _as_coding(value: object) -> dict[str, Number] | None:
    """The ``coding`` parameter: ``{top: t, bottom: b}`` (one or both), ``b < t``; ``None``: none."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise ConfigError(f"coding must be a mapping such as {{top: 90, bottom: 18}}, got {_shown(value)}")
    unknown = sorted(str(k) for k in value if k not in ("top", "bottom"))
    if unknown:
        raise ConfigError(f"coding: unknown key {unknown[0]!r}; expected top and/or bottom")
    if not value:
        raise ConfigError("coding needs top, bottom or both, e.g. coding: {top: 90, bottom: 18}")
    out = {str(k): _as_number(v, f"coding.{k}") for k, v in value.items()}
    if "top" in out and "bottom" in out and out["bottom"] >= out["top"]:
        raise ConfigError(f"coding.bottom ({out['bottom']}) must be below coding.top ({out['top']})")
    return dict(sorted(out.items()))


#: The largest width or precision in a label pattern's format spec (``{low:>4}``): a width of
#: 3,000,000,000 made every label 3 GB.
MAX_FORMAT_NUMBER = 100


def _check_label_format(label: str) -> None:
    try:
        parsed = [(f, spec or "") for _, f, spec, _ in string.Formatter().parse(label) if f is not None]
    except ValueError as exc:
        raise ConfigError(
            f"label {label!r} is not a valid pattern ({exc}); use the fields {{low}}, {{high}}, {{end}}"
        ) from None
    for _, spec in parsed:
        if "{" in spec:
            raise ConfigError(f"label {label!r}: a replacement field inside a format spec is not accepted")
        largest = max((int(n) for n in re.findall(r"\d+", spec)), default=0)
        if largest > MAX_FORMAT_NUMBER:
            raise ConfigError(
                f"label {label!r}: the width or precision {largest} is too large "
                f"(at most {MAX_FORMAT_NUMBER})"
            )
    try:
        label.format(low=0, high=1, end=1)
    except (ValueError, KeyError, IndexError, AttributeError) as exc:
        raise ConfigError(
            f"label {label!r} is not a valid pattern ({exc}); use the fields {{low}}, {{high}}, {{end}}"
        ) from None
    if not parsed:
        raise ConfigError(f"label {label!r} must contain {{low}} (and usually {{high}} or {{end}})")


# --------------------------------------------------------------------------- grouping
GroupLevel = Mapping[str, Sequence[str]]


@dataclass(frozen=True)
class GroupingBuilder(_Configurable):
    """Explicit groups of categories, one mapping per level, then ``top``.

    ``levels[0]`` maps each level-1 label to the data values it covers,
    ``levels[j]`` maps each level-``j + 1`` label to labels of level ``j``. This
    is how the categorical rules of thesis appendix B are written, e.g. marital
    status of UCI Adult::

        levels:
          - {Has-Spouse: [Married-civ-spouse, Married-AF-spouse, Married-spouse-absent],
             Had-Spouse: [Divorced, Separated, Widowed], No-Spouse: [Never-married], "?": ["?"]}
          - {Human: [Has-Spouse, Had-Spouse, No-Spouse, "?"]}
        top: null

    gives ``Divorced -> Had-Spouse -> Human``. A value that should stay as it
    is needs a group of its own (``Private: [Private]``).

    Checked when the builder is made (:class:`ConfigError`): a label listed
    under two groups of one level, a group member that is not a label of the
    level below, a label of the level below that is in no group. Checked by
    ``build`` (:class:`HierarchyError`): a data value in no level-1 group.
    Level-1 groups may list values that do not occur in the data (the groups
    describe the whole domain); the hierarchy holds only the values given.
    Leaves are ordered as listed in ``levels[0]``.
    """

    type_name: ClassVar[str] = "grouping"
    extra_keys: ClassVar[tuple[str, ...]] = ("file",)

    levels: Sequence[GroupLevel]
    top: str | None = "*"
    missing: Sequence[str] = ()

    def __post_init__(self) -> None:
        if isinstance(self.levels, str | bytes | Mapping) or not isinstance(self.levels, Sequence):
            raise ConfigError(
                "levels must be a list with one mapping per level, e.g. "
                "levels: [{Married: [Married-civ-spouse], Single: [Never-married]}]"
            )
        if not self.levels:
            raise ConfigError("levels must list at least one level of groups")
        normalized: list[Mapping[str, tuple[str, ...]]] = []
        below: tuple[str, ...] | None = None  # the group labels of the level below
        for number, level in enumerate(self.levels, start=1):
            groups = _normalize_groups(level, number)
            parent: dict[str, str] = {}
            for label, members in groups.items():
                for member in members:
                    if member in parent:
                        other = parent[member]
                        where = (
                            f"twice under group {label!r}"
                            if other == label
                            else (f"under two groups, {other!r} and {label!r}")
                        )
                        raise ConfigError(f"levels[{number - 1}]: {member!r} is listed {where}")
                    if below is not None and member not in below:
                        shown = ", ".join(map(repr, below[:10])) + (", ..." if len(below) > 10 else "")
                        raise ConfigError(
                            f"levels[{number - 1}]: group {label!r} lists {member!r}, which is not a group "
                            f"of levels[{number - 2}] (groups there: {shown})"
                        )
                    parent[member] = label
            if below is not None:
                for label in below:
                    if label not in parent:
                        raise ConfigError(
                            f"levels[{number - 1}]: group {label!r} of levels[{number - 2}] is in no group"
                        )
            normalized.append(types.MappingProxyType(groups))
            below = tuple(groups)
        _set(
            self, levels=tuple(normalized), top=_as_top(self.top), missing=_as_tokens(self.missing, "missing")
        )

    def __hash__(self) -> int:
        return hash((tuple(tuple(level.items()) for level in self.levels), self.top, tuple(self.missing)))

    @classmethod
    def from_config(cls, params: Mapping[str, Any], base_dir: Path) -> Self:
        """Like the constructor, but ``file: groups.yaml`` (relative to ``base_dir``) may give ``levels``."""
        _check_keys(cls, params, extra=cls.extra_keys)
        if "file" not in params:
            return cls(**params)
        if "levels" in params:
            raise ConfigError("give either levels or file, not both")
        path = Path(str(params["file"]))
        path = path if path.is_absolute() else base_dir / path
        rest = {k: v for k, v in params.items() if k != "file"}
        return cls.from_file(path, **rest)

    @classmethod
    def from_file(cls, path: str | Path, top: str | None = "*", missing: Sequence[str] = ()) -> Self:
        """The builder whose ``levels`` are in a YAML file (a list, or a mapping with key ``levels``)."""
        path = Path(path)
        content = read_yaml(path, "grouping file")  # no aliases, no duplicate keys, at most 1 MiB
        if isinstance(content, Mapping):
            unknown = [str(k) for k in content if k != "levels"]
            if unknown or "levels" not in content:
                raise ConfigError(f"{path}: expected a mapping with the single key 'levels'")
            content = content["levels"]
        try:
            return cls(levels=content, top=top, missing=missing)
        except ConfigError as exc:
            raise ConfigError(f"{path}: {exc}") from None

    def _build(self, values: Sequence[str], name: str) -> Hierarchy:
        name = name or self.type_name
        parents: list[dict[str, str]] = []
        order: dict[str, int] = {}
        for level in self.levels:
            parent: dict[str, str] = {}
            for label, members in level.items():
                for member in members:
                    parent[member] = label
                    if not parents:
                        order.setdefault(member, len(order))
            parents.append(parent)
        distinct, missing = _split_missing(values, [m for m in self.missing if m not in parents[0]])
        uncovered = [v for v in distinct if v not in parents[0]]
        if BLANK in uncovered:
            raise HierarchyError(_empty_message(name))
        if uncovered:
            more = f" ({len(uncovered)} values are in no group)" if len(uncovered) > 1 else ""
            raise HierarchyError(
                f"{name}: value {uncovered[0]!r} is in no group of levels[0]; add it to a group{more}"
            )
        rows = []
        for value in sorted(distinct, key=order.__getitem__):
            row = [value]
            for parent in parents:
                row.append(parent[row[-1]])
            rows.append(row)
        return _assemble(rows, missing, len(parents), self.top, name)


def _normalize_groups(level: object, number: int) -> dict[str, tuple[str, ...]]:
    where = f"levels[{number - 1}]"
    if not isinstance(level, Mapping) or not level:
        raise ConfigError(f"{where} must be a non-empty mapping of group label -> list of members")
    groups: dict[str, tuple[str, ...]] = {}
    for key, members in level.items():
        label = _as_label(key, f"{where}: a group label", allow_empty=True)
        if label in groups:
            raise ConfigError(f"{where}: group {label!r} is defined twice")
        items: Sequence[object]
        if isinstance(members, str | int | float) and not isinstance(members, bool):
            items = [members]
        elif isinstance(members, Sequence) and not isinstance(members, str):
            items = members
        else:
            raise ConfigError(
                f"{where}: the members of group {label!r} must be a list, got {_shown(members)}"
            )
        if not items:
            raise ConfigError(f"{where}: group {label!r} has no members")
        groups[label] = tuple(
            _as_label(m, f"{where}: a member of group {label!r}", allow_empty=True) for m in items
        )
    return groups


# --------------------------------------------------------------------------- masking
@dataclass(frozen=True)
class MaskingBuilder(_Configurable):
    """Mask one more character per level, from the right (or left), then ``top``.

    For codes whose prefix carries the meaning (ZIP codes, ICD codes; thesis
    appendix B, procedure codes "maintain first digit")::

        12345 -> 1234* -> 123** -> 12*** -> 1**** -> ***** -> *

    Level ``j`` masks ``j`` characters, up to ``max_masked`` (default: all). The
    number of levels is ``max_masked`` or the length of the longest value,
    whichever is smaller, so the depth is the same for every value.

    Values of different lengths: without ``pad`` each value is masked on its own
    and, once fully masked, stays fully masked at the higher levels (``12`` at
    level 3 of a column with 5-character codes is ``**``); labels of different
    lengths never merge. With ``pad`` (one character), shorter values are first
    padded to the length of the longest value, by default at the masked end, so
    that the padding is masked first: with ``pad: "_"``, ``E11`` and ``E119``
    both give ``E11*`` at level 1. ``pad_side`` (``start`` or ``end``) sets the
    side explicitly, e.g. ``pad: "0", pad_side: start`` for ZIP codes that lost
    their leading zeros. Only the labels are padded; the leaves stay the input
    strings.

    ``top`` (default ``*``) is added as a final level unless the last masked
    level is already that single label. The tokens in ``missing`` (default: the
    empty string) are kept as they are below the top.
    """

    type_name: ClassVar[str] = "masking"

    char: str = "*"
    max_masked: int | None = None
    align: str = "right"
    pad: str | None = None
    pad_side: str | None = None
    missing: Sequence[str] = ()
    top: str | None = "*"

    def __post_init__(self) -> None:
        pad = None if self.pad is None else _as_char(self.pad, "pad")
        pad_side = None if self.pad_side is None else _as_choice(self.pad_side, "pad_side", ("start", "end"))
        if pad_side is not None and pad is None:
            raise ConfigError("pad_side needs pad (the padding character)")
        _set(
            self,
            char=_as_char(self.char, "char"),
            max_masked=None if self.max_masked is None else _as_int(self.max_masked, "max_masked", 1),
            align=_as_choice(self.align, "align", ("right", "left")),
            pad=pad,
            pad_side=pad_side,
            missing=_as_tokens(self.missing, "missing"),
            top=_as_top(self.top),
        )

    def _build(self, values: Sequence[str], name: str) -> Hierarchy:
        name = name or self.type_name
        real, missing = _split_missing(values, self.missing)
        _refuse_blank(real, name)
        longest = max((len(v) for v in real), default=0)
        height = longest if self.max_masked is None else min(self.max_masked, longest)
        hint = f"set max_masked (the longest value has {longest:,} characters)"
        _check_labels_fit(name, len(real), height, len(real) * height * longest, hint)
        rows = []
        for value in sorted(real):
            text = self._padded(value, longest)
            row = [value]
            for level in range(1, height + 1):
                row.append(self._mask(text, min(level, len(text))))
            rows.append(row)
        top = self.top
        last = {row[-1] for row in rows} | set(missing)
        if top is not None and height > 0 and last == {top}:
            top = None  # the last masked level already is the top
        return _assemble(rows, missing, height, top, name)

    def _padded(self, value: str, length: int) -> str:
        if self.pad is None or len(value) >= length:
            return value
        padding = self.pad * (length - len(value))
        side = self.pad_side or ("end" if self.align == "right" else "start")
        return value + padding if side == "end" else padding + value

    def _mask(self, text: str, count: int) -> str:
        if count == 0:
            return text
        if self.align == "right":
            return text[:-count] + self.char * count
        return self.char * count + text[count:]


# --------------------------------------------------------------------------- dates
#: The fraction of a second after ``HH:MM:SS`` (DuckDB and both engines write up to 9 digits).
_FRACTION = re.compile(r"(\d:\d\d)\.\d{1,9}(?!\d)")
#: The calendar chain: each level nests in the next.
CALENDAR_LEVELS = ("day", "month", "quarter", "year", "decade")
#: The week chain: weeks nest in week-numbering years (ISO 8601, or MMWR with Sunday weeks), not in
#: months, quarters or calendar years.
WEEK_LEVELS = ("day", "week", "week_year")
DATE_LEVELS = ("day", "week", "week_year", "month", "quarter", "year", "decade")
WEEK_STARTS = ("monday", "sunday")


@dataclass(frozen=True)
class DateBuilder(_Configurable):
    """Calendar generalization of dates, then ``top``: a tree of true statements.

    ``levels`` is a sub-sequence, finest first, of one of two chains, never a mix:

    * the calendar (the default is ``[month, quarter, year]``): ``day`` (``2021-01-05``, useful
      when ``format`` has a time of day), ``month`` (``2021-01``), ``quarter`` (``2021-Q1``),
      ``year`` (``2021``), ``decade`` (``2020-2029``)::

          2021-01-20 -> 2021-01 -> 2021-Q1 -> 2021 -> *

    * weeks: ``day``, ``week`` and ``week_year``. ISO 8601 weeks (Monday to Sunday) are
      labelled ``2021-W03`` and their week-numbering year by its weeks, ``2021-W01..2021-W52``;
      with ``week_start: sunday``, CDC/MMWR weeks (Sunday to Saturday) and MMWR years are
      labelled by their first and last day (``2021-01-17..2021-01-23``,
      ``2021-01-03..2022-01-01``)::

          2022-01-01 -> 2021-W52 -> 2021-W01..2021-W52 -> *

    A week can span two months or two years, so no month, quarter or calendar year holds every
    day of it: a hierarchy with weeks below months would label some days with a month or a
    year they are not in (thesis §4.1.4: every level is a function of the level below, and
    every label is a statement about its values). Levels of both chains are refused
    (:class:`ConfigError`); a week-numbering year is never labelled like a calendar year.

    ``format`` is the :func:`~datetime.datetime.strptime` format of the values
    (default ISO ``%Y-%m-%d``). A value in another format raises
    :class:`HierarchyError` naming it and the format. A Parquet or SQL timestamp
    column reads as ``2021-01-20 00:00:00`` on both engines (its UTC time and
    ``+00`` when it is time-zone aware), so it needs ``format: "%Y-%m-%d %H:%M:%S"``
    (the error says so); with ``%S`` and no ``%f`` in the format, a fraction of a
    second (``13:45:00.25``) is read and dropped. The tokens in ``missing`` (default: none;
    the data's declared missing values are added, :mod:`safeshare.missing`) are kept as they
    are below the top; a blank cell that is not declared missing is refused.
    """

    type_name: ClassVar[str] = "dates"

    levels: Sequence[str] = ("month", "quarter", "year")
    format: str = "%Y-%m-%d"
    week_start: str = "monday"
    missing: Sequence[str] = ()
    top: str | None = "*"

    def __post_init__(self) -> None:
        if isinstance(self.levels, str | bytes) or not isinstance(self.levels, Sequence):
            raise ConfigError(f"levels must be a list such as [month, year], got {_shown(self.levels)}")
        levels = tuple(str(v).strip().lower() for v in self.levels)
        if not levels:
            raise ConfigError(f"levels must name at least one of {', '.join(DATE_LEVELS)}")
        for level in levels:
            if level not in DATE_LEVELS:
                raise ConfigError(f"unknown date level {level!r}; expected some of {', '.join(DATE_LEVELS)}")
        weekly = [level for level in levels if level in ("week", "week_year")]
        calendar = [level for level in levels if level in CALENDAR_LEVELS[1:]]
        if weekly and calendar:
            raise ConfigError(
                f"levels {_shown(list(levels))}: weeks do not nest in months, quarters or years (a week "
                f"can span two of them), so {weekly[0]!r} and {calendar[0]!r} cannot be levels of one "
                "hierarchy; choose calendar levels [day, month, quarter, year, decade] or week levels "
                "[day, week, week_year] (docs/hierarchies.md)"
            )
        chain = WEEK_LEVELS if weekly else CALENDAR_LEVELS
        ranks = [chain.index(level) for level in levels]
        if any(b <= a for a, b in itertools.pairwise(ranks)):
            raise ConfigError(
                f"levels {_shown(list(levels))} must go from fine to coarse without repeats, "
                f"in the order {', '.join(chain)}"
            )
        fmt = _as_label(self.format, "format")
        if "%" not in fmt:
            raise ConfigError(f"format {fmt!r} is not a strptime format such as '%Y-%m-%d'")
        _set(
            self,
            levels=levels,
            format=fmt,
            week_start=_as_choice(self.week_start, "week_start", WEEK_STARTS),
            missing=_as_tokens(self.missing, "missing"),
            top=_as_top(self.top),
        )

    def _build(self, values: Sequence[str], name: str) -> Hierarchy:
        name = name or self.type_name
        real, missing = _split_missing(values, self.missing)
        _refuse_blank(real, name)
        parsed: dict[str, dt.datetime] = {}
        for value in real:
            when = self._parse(value)
            if when is None:
                example = dt.datetime(2021, 1, 31, 13, 45).strftime(self.format)
                raise HierarchyError(
                    f"{name}: value {value!r} is not a date in the format {self.format!r} "
                    f"(e.g. {example!r}){self._timestamp_hint(value)}; if it marks an unknown value, "
                    f"declare it with missing: [{value!r}]"
                )
            parsed[value] = when
        labellers = [self._labeller(level) for level in self.levels]
        rows = []
        for value in sorted(parsed, key=lambda v: (parsed[v], v)):
            day = parsed[value].date()
            try:
                rows.append([value, *(f(day) for f in labellers)])
            except (OverflowError, ValueError):
                raise HierarchyError(f"{name}: date {value!r} is too close to year 1 or 9999") from None
        return _assemble(rows, missing, len(self.levels), self.top, name)

    def _parse(self, value: str, fmt: str | None = None) -> dt.datetime | None:
        """``value`` read with ``fmt`` (default :attr:`format`); None when it does not match.

        A format with seconds (``%S``) and no fraction (``%f``) also reads a value whose
        seconds have one (``09:18:48.5``, as a timestamp column's text has when the
        fraction is not zero): the fraction is dropped, no level is finer than a day.
        """
        fmt = self.format if fmt is None else fmt
        text = value.strip()
        try:
            return dt.datetime.strptime(text, fmt)
        except ValueError:
            pass
        if "%S" in fmt and "%f" not in fmt:
            whole = _FRACTION.sub(r"\1", text, count=1)
            if whole != text:
                with contextlib.suppress(ValueError):
                    return dt.datetime.strptime(whole, fmt)
        return None

    def _timestamp_hint(self, value: str) -> str:
        """Advice when ``value`` is a timestamp in :attr:`format` followed by a time of day."""
        if "%H" in self.format:
            return ""
        for suffix in (" %H:%M:%S", " %H:%M:%S+00"):
            if self._parse(value, self.format + suffix) is not None:
                return f" but a timestamp: use format: {self.format + suffix!r}"
        return ""

    def _week_start(self, day: dt.date) -> dt.date:
        """The first day of the week of ``day`` (Monday, or Sunday for MMWR weeks)."""
        shift = day.weekday() if self.week_start == "monday" else (day.weekday() + 1) % 7
        return day - dt.timedelta(days=shift)

    def _mmwr_year_start(self, year: int) -> dt.date:
        """The first day of MMWR year ``year``: the Sunday of the week that holds January 4."""
        return self._week_start(dt.date(year, 1, 4))

    def _labeller(self, level: str) -> Callable[[dt.date], str]:
        def day(d: dt.date) -> str:
            return d.isoformat()

        def week(d: dt.date) -> str:
            if self.week_start == "monday":
                year, number, _ = d.isocalendar()
                return f"{year:04d}-W{number:02d}"
            first = self._week_start(d)
            return f"{first.isoformat()}..{(first + dt.timedelta(days=6)).isoformat()}"

        def week_year(d: dt.date) -> str:
            if self.week_start == "monday":  # the ISO year, by its first and last week
                year = d.isocalendar()[0]
                weeks = dt.date(year, 12, 28).isocalendar()[1]
                return f"{year:04d}-W01..{year:04d}-W{weeks:02d}"
            year = (self._week_start(d) + dt.timedelta(days=3)).year  # the MMWR year: its Wednesday's
            first, after = self._mmwr_year_start(year), self._mmwr_year_start(year + 1)
            return f"{first.isoformat()}..{(after - dt.timedelta(days=1)).isoformat()}"

        def month(d: dt.date) -> str:
            return f"{d.year:04d}-{d.month:02d}"

        def quarter(d: dt.date) -> str:
            return f"{d.year:04d}-Q{(d.month - 1) // 3 + 1}"

        def year(d: dt.date) -> str:
            return f"{d.year:04d}"

        def decade(d: dt.date) -> str:
            first = d.year // 10 * 10
            return f"{first:04d}-{first + 9:04d}"

        functions: dict[str, Callable[[dt.date], str]] = {
            "day": day,
            "week": week,
            "week_year": week_year,
            "month": month,
            "quarter": quarter,
            "year": year,
            "decade": decade,
        }
        return functions[level]


# --------------------------------------------------------------------------- file
@dataclass(frozen=True)
class FileBuilder(_Configurable):
    """A hierarchy from an ARX CSV file (see :mod:`safeshare.hierarchy.io`).

    ``{type: file, path: age.csv, delimiter: ","}``; ``path`` is relative to the
    configuration file, and a plain path in a configuration (``hierarchy: age.csv``)
    is this builder too. ``build`` streams the file and keeps only the rows of the
    given values (a large file costs no more memory than the data needs), and raises
    :class:`HierarchyError` naming a value that the file does not cover;
    :meth:`load` returns the whole file. The labels come from the file, not from the
    data: the rows kept for a value are the same whatever the other values.
    """

    type_name: ClassVar[str] = "file"
    #: The labels do not depend on the data (epsilon-safe anonymization accepts it).
    data_independent: ClassVar[bool] = True

    path: str | Path
    delimiter: str = ";"
    encoding: str = "utf-8"

    def __post_init__(self) -> None:
        if not isinstance(self.path, str | Path) or not str(self.path):
            raise ConfigError(f"path must be the name of an ARX CSV file, got {_shown(self.path)}")
        encoding = _as_label(self.encoding, "encoding")
        try:
            "".encode(encoding)
        except LookupError:
            raise ConfigError(f"unknown encoding {encoding!r}") from None
        _set(self, path=Path(self.path), delimiter=_as_char(self.delimiter, "delimiter"), encoding=encoding)

    @classmethod
    def from_config(cls, params: Mapping[str, Any], base_dir: Path) -> Self:
        """Like the constructor, with ``path`` relative to ``base_dir``; the file must exist."""
        _check_keys(cls, params)
        builder = cls(**params)
        path = Path(builder.path)
        if not path.is_absolute():
            path = base_dir / path
        if not path.is_file():
            raise ConfigError(f"hierarchy file {path} does not exist")
        return cls(path=path, delimiter=builder.delimiter, encoding=builder.encoding)

    def check_readable(self) -> None:
        """Raise :class:`HierarchyError` now when the file cannot be opened (before any data is read)."""
        try:
            with Path(self.path).open(encoding=self.encoding, newline="") as handle:
                handle.read(1)
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
            raise HierarchyError(f"cannot read hierarchy {self.path}: {reason}") from None

    def load(self, keep: Collection[str] | None = None) -> Hierarchy:
        """The hierarchy in the file: all of it, or the rows whose leaf is in ``keep``."""
        return read_arx_csv(self.path, delimiter=self.delimiter, encoding=self.encoding, keep=keep)

    def _build(self, values: Sequence[str], name: str) -> Hierarchy:
        distinct = _distinct(values)
        if not distinct:
            raise HierarchyError(f"{name or self.path}: no values to build a hierarchy from")
        rows = read_arx_rows(self.path, self.delimiter, self.encoding, keep=set(distinct))
        covered = {row[0] for row in rows}
        missing = [v for v in distinct if v not in covered]
        if missing:
            more = f" ({len(missing)} values are missing)" if len(missing) > 1 else ""
            raise HierarchyError(
                f"{name or self.path}: value {missing[0]!r} is not in hierarchy file {self.path}{more}"
            )
        return Hierarchy(rows, name=name or str(self.path))


# --------------------------------------------------------------------------- registry
BUILDERS: dict[str, Any] = {
    cls.type_name: cls
    for cls in (
        IntervalBuilder,
        GroupingBuilder,
        MaskingBuilder,
        DateBuilder,
        SuppressionBuilder,
        FileBuilder,
    )
}


def builder_keys(kind: str) -> list[str]:
    """The configuration keys of the builder ``type: kind`` (besides ``type``)."""
    return _known_keys(BUILDERS[kind])


def builder_from_spec(spec: Mapping[str, Any], base_dir: Path, where: str = "hierarchy") -> HierarchyBuilder:
    """The builder described by a configuration mapping with a ``type`` key.

    ``base_dir`` is the directory of the configuration file: ``file`` paths are
    relative to it. Every problem raises :class:`ConfigError` prefixed by ``where``.
    """
    if not isinstance(spec, Mapping):
        raise ConfigError(f"{where}: expected a mapping with a 'type' key, got {_shown(spec)}")
    if "type" not in spec:
        raise ConfigError(f"{where}: missing key 'type'; expected one of {', '.join(BUILDERS)}")
    kind = str(spec["type"]).strip().lower()
    if kind not in BUILDERS:
        raise ConfigError(f"{where}: unknown hierarchy type {kind!r}; expected one of {', '.join(BUILDERS)}")
    factory = BUILDERS[kind]
    check_keys(spec, ["type", *_known_keys(factory)], where)
    params = {str(k): v for k, v in spec.items() if k != "type"}
    try:
        if hasattr(factory, "from_config"):
            builder: HierarchyBuilder = factory.from_config(params, Path(base_dir))
        else:
            builder = factory(**params)
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    except TypeError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    return builder


def builder_files(spec: Mapping[str, Any], base_dir: Path) -> list[Path]:
    """The files a builder spec reads (``type: file``'s ``path``, ``grouping``'s ``file``),
    relative to ``base_dir``: an output must not replace them (``hierarchy build --out``)."""
    files = [spec[key] for key in ("path", "file") if isinstance(spec.get(key), str | Path)]
    return [path if Path(path).is_absolute() else Path(base_dir) / path for path in map(Path, files)]
