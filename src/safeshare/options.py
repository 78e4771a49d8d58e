"""Parsers of command-line option values shared by every command, so that one option name
has one meaning everywhere (``--max-suppression`` is a fraction in ``anonymize``,
``utility`` and ``sweep`` alike)."""

from __future__ import annotations

import math

from safeshare.errors import ConfigError


def parse_fraction(text: str, option: str) -> float:
    """A share of the records: a fraction in [0, 1] (``0.05``) or an explicit percent (``5%``).

    A bare number above 1 is refused rather than read as a percent: ``5`` could
    be meant as 5% or as a typo, and guessing would release more than asked.
    """
    raw = str(text).strip()
    percent = raw.endswith("%")
    number = raw[:-1].strip() if percent else raw
    hint = "expected a fraction in [0, 1] (0.05) or a percent in [0%, 100%] (5%)"
    try:
        value = float(number)
    except ValueError:
        raise ConfigError(f"{option}: {hint}, got {raw!r}") from None
    if percent:
        value /= 100.0
    if not math.isfinite(value) or not 0.0 <= value <= 1.0:
        looks_percent = not percent and math.isfinite(value) and 1.0 < value <= 100.0
        extra = f" (did you mean {raw}%?)" if looks_percent else ""
        raise ConfigError(f"{option}: {hint}, got {raw!r}{extra}")
    return value


def parse_fractions(text: str, option: str) -> list[float]:
    """A comma-separated list of :func:`parse_fraction` values (``0,0.01,5%``)."""
    items = [item.strip() for item in str(text).split(",") if item.strip()]
    if not items:
        raise ConfigError(f"{option}: expected a comma-separated list of fractions, got {text!r}")
    return [parse_fraction(item, option) for item in items]


#: Help of every command's single ``--max-suppression`` value.
MAX_SUPPRESSION_HELP = "Override the suppression limit: a fraction of the records (0.05) or a percent (5%)."


def optional_fraction(text: str | None, option: str) -> float | None:
    """:func:`parse_fraction` of an option that may be absent."""
    return None if text is None else parse_fraction(text, option)


#: Help of ``--delimiter``: in every command, the field separator of the DATA (CSV) files;
#: a hierarchy file's separator is ``--hierarchy-delimiter``.
DATA_DELIMITER_HELP = "Field separator of the data (CSV) files."


#: ``anonymize``: above this many lattice nodes the suppression / loss trade-off curve is computed
#: only when asked (``--tradeoff``, ``tradeoff=True``): it repeats the search for six limits.
TRADEOFF_AUTO_MAX = 20_000
