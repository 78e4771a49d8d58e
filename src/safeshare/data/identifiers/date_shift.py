"""Per-person date shifting: every date of one person moves by the same secret number of days.

The shift of person ``p`` is a whole number of days ``s(p)`` in ``[-N, N] \\ {0}``
(``N = max_days``), derived from the key and the person's identifier text::

    k_s = HMAC-SHA256(key, "safeshare date shift v1")
    d_c = HMAC-SHA256(k_s, uint32_be(c) || utf8(p))          c = 0, 1, ...
    u   = the next unused 64-bit big-endian word of d_0 || d_1 || ...  with u < L,
          L = 2^64 - (2^64 mod 2N)   (rejection: u mod 2N is then uniform, no modulo bias)
    r   = u mod 2N
    s   = r - N        if r < N      (-N .. -1)
          r - N + 1    otherwise     ( 1 ..  N)

A word is rejected with probability below ``2N / 2^64``, so ``d_0`` (four words) almost
always suffices. Every date of the person becomes ``date + s(p)``: intervals between a
person's dates are kept exactly, calendar dates are not, and ``s(p)`` itself is never
written anywhere. Without the key the shift is uniform over the ``2N`` values.

Dates are read with a ``strptime`` format (default ISO ``%Y-%m-%d``) and written back in
the same format. Only calendar-date directives are accepted (``%Y %m %d %j %b %B``): a
time of day would not survive the day arithmetic the engines do in SQL, and ``%y`` does
not round-trip outside 1969-2068. Shifted dates stay within the years 1000-9999 (four-digit
years): a column whose dates come within ``N`` days of those limits is refused, whatever
the shifts are, so that the refusal says nothing about the key.
"""

from __future__ import annotations

import datetime as dt
import hmac
import re
from collections.abc import Iterable, Sequence

from safeshare.data.identifiers.key import DATE_SHIFT_LABEL, SecretKey
from safeshare.errors import ConfigError, DataError

ISO_FORMAT = "%Y-%m-%d"

#: The largest ``max_days`` accepted (100 years).
MAX_SHIFT_DAYS = 36_500

#: Shifted dates stay within these days (proleptic Gregorian ordinals): four-digit years.
FIRST_DAY = dt.date(1000, 1, 1).toordinal()
LAST_DAY = dt.date(9999, 12, 31).toordinal()

_DIRECTIVES = frozenset("YmdjbB%")
_DIRECTIVE = re.compile(r"%(.)")
_SAMPLES = (dt.date(1000, 1, 1), dt.date(1999, 12, 31), dt.date(2024, 2, 29), dt.date(9999, 12, 31))


def check_date_format(fmt: object, where: str = "format") -> str:
    """``fmt`` as a ``strptime`` format of calendar dates that round-trips (one-line :class:`ConfigError`)."""
    if not isinstance(fmt, str) or "%" not in fmt:
        raise ConfigError(f"{where}: expected a strptime date format such as '%Y-%m-%d', got {fmt!r}")
    bad = [d for d in _DIRECTIVE.findall(fmt) if d not in _DIRECTIVES]
    if bad or fmt.count("%") != len(_DIRECTIVE.findall(fmt)):
        shown = f"%{bad[0]}" if bad else "a lone %"
        raise ConfigError(
            f"{where}: {shown} in {fmt!r} is not a calendar-date directive; "
            "shifted dates use %Y, %m, %d, %j, %b, %B (a time of day is not shifted)"
        )
    for day in _SAMPLES:
        text = day.strftime(fmt)
        try:
            back = dt.datetime.strptime(text, fmt).date()
        except ValueError:
            back = None
        if back != day:
            raise ConfigError(
                f"{where}: {fmt!r} does not identify a day (it needs the year %Y and the month and day, "
                "or the day of the year %j)"
            )
    return fmt


def check_max_days(max_days: object, where: str = "max_days") -> int:
    """``max_days`` as an int in [1, :data:`MAX_SHIFT_DAYS`] (one-line :class:`ConfigError`)."""
    if isinstance(max_days, bool) or not isinstance(max_days, int):
        raise ConfigError(f"{where}: expected a whole number of days, got {max_days!r}")
    if not 1 <= max_days <= MAX_SHIFT_DAYS:
        raise ConfigError(f"{where}: {max_days} days; expected 1 to {MAX_SHIFT_DAYS}")
    return max_days


def shift_of_digest_words(words: Iterable[int], max_days: int) -> int | None:
    """The shift given by the first accepted 64-bit word of ``words`` (``None``: all rejected)."""
    span = 2 * max_days
    limit = (1 << 64) - ((1 << 64) % span)
    for u in words:
        if u < limit:
            r = u % span
            return r - max_days if r < max_days else r - max_days + 1
    return None


def day_shifts(key: SecretKey, persons: Iterable[str], max_days: int) -> list[int]:
    """The shift in days of each person (see the module docstring)."""
    subkey = key.subkey(DATE_SHIFT_LABEL)
    out = []
    for person in persons:
        message = person.encode("utf-8", "surrogatepass")
        counter = 0
        while True:
            digest = hmac.digest(subkey, counter.to_bytes(4, "big") + message, "sha256")
            words = (int.from_bytes(digest[i : i + 8], "big") for i in range(0, 32, 8))
            shift = shift_of_digest_words(words, max_days)
            if shift is not None:
                out.append(shift)
                break
            counter += 1
    return out


def parse_day(text: str, fmt: str) -> int:
    """The proleptic Gregorian ordinal of the date ``text`` in ``fmt`` (``ValueError`` if it is none)."""
    return dt.datetime.strptime(text, fmt).toordinal()


def format_day(ordinal: int, fmt: str) -> str:
    """The date of ``ordinal`` in ``fmt``."""
    return dt.date.fromordinal(ordinal).strftime(fmt)


def check_shift_range(column: str, first: int, last: int, max_days: int) -> None:
    """Refuse a column whose dates (ordinals ``first`` .. ``last``) could leave the years 1000-9999."""
    if first - max_days < FIRST_DAY or last + max_days > LAST_DAY:
        lo, hi = dt.date.fromordinal(first), dt.date.fromordinal(last)
        raise DataError(
            f"column {column!r}: dates from {lo.isoformat()} to {hi.isoformat()} cannot be shifted by up to "
            f"{max_days} days within the years 1000-9999"
        )


def check_one_window(windows: Sequence[tuple[str, int]]) -> None:
    """Refuse shifted dates (``(column, max_days)``) with more than one ``max_days``: a person's
    shift depends on the window, so two windows would give one person two shifts (see the
    module docstring)."""
    if len({days for _, days in windows}) > 1:
        (first, days), other = windows[0], next(w for w in windows if w[1] != windows[0][1])
        raise ConfigError(
            f"column {other[0]!r}: max_days {other[1]} differs from {first!r}'s {days}: every date of a "
            "person moves by the person's one shift, drawn in one window; two windows give a person two "
            "shifts, which together narrow the true dates (give every shifted date the same max_days)"
        )
