"""How a figure a person reads is written: one function per kind, used by every view.

The headline, the certificate, the evidence's attack models, report.html, risk.html and
the terminal of ``anonymize``, ``inspect`` and ``risk`` write their numbers with these
functions (issue 30, item 15: the headline once read ``B = 0 <= 0.0001`` for an achieved
B of 3.1e-05, a value B cannot have, since ``B >= 1/N``):

* :func:`number`: ``digits`` significant figures (default 4), in positional notation from
  1e-4 up and scientific below (``0.0846``, ``0.2``, ``3.1e-05``), never rounded to a value
  it cannot have: a non-zero value is never written ``0`` and a value strictly between -1
  and 1 (a probability, a share, a normalized loss) never ``1`` or ``-1``; more digits are
  used when the rounding would say so;
* :func:`percent`: a share of ``[0, 1]`` as a percentage, by the same rule (never ``0%`` for
  a positive share nor ``100%`` for one below 1);
* :func:`compared`: two figures written side by side with a relation (``B = ... <= ...``):
  each as :func:`number`, with more digits until two different values read differently,
  so that ``0.090004 > 0.09`` is never written ``0.09 > 0.09``;
* :func:`count`: an integer with thousands separators.

Property-tested with hypothesis (``tests/test_true_figures.py``).
"""

from __future__ import annotations

import math

#: Significant figures of a figure unless a view asks for more.
SIGNIFICANT = 4

#: Most significant figures a float64 needs to be read back exactly.
_MAX_DIGITS = 17


def _significant(x: float, digits: int) -> str:
    """``x`` rounded to ``digits`` significant figures: positional from 1e-4 to below 10**15,
    scientific outside, without trailing zeros."""
    text = f"{x:.{digits}g}"
    if "e" in text and 1e-4 <= abs(x) < 1e15:  # %g goes scientific from 10**digits up
        text = f"{float(text):.{max(digits - 1 - math.floor(math.log10(abs(float(text)))), 0)}f}"
    return text


def _faithful(x: float, text: str) -> bool:
    """Whether ``text`` is a value ``x`` may be read as: finite, zero only for zero, the same
    sign, and inside (-1, 1) when ``x`` is."""
    shown = float(text)
    if not math.isfinite(shown):  # 1.5e308 to one digit is 2e+308, beyond float64
        return False
    if (shown == 0) != (x == 0) or (shown < 0) != (x < 0):
        return False
    return not (abs(x) < 1 <= abs(shown))


def number(value: float, digits: int = SIGNIFICANT) -> str:
    """``value`` with ``digits`` significant figures, never rounded to a value it cannot have
    (see the module docstring); ``nan``, ``inf`` and ``-inf`` as such."""
    x = float(value)
    if not math.isfinite(x):
        return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")
    if x == 0:
        return "0"
    for d in range(max(int(digits), 1), _MAX_DIGITS + 1):
        text = _significant(x, d)
        if _faithful(x, text):
            return text
    return repr(x)


def percent(share: float, digits: int = 3) -> str:
    """A share (``0.0123``) as a percentage (``1.23%``) with ``digits`` significant figures;
    a positive share is never ``0%`` and one below 1 never ``100%``."""
    x = float(share)
    if not math.isfinite(x):
        return number(x)
    for d in range(max(int(digits), 1), _MAX_DIGITS + 1):
        text = number(100 * x, d)
        if x == 0 or (float(text) != 0 and (x >= 1 or float(text) < 100)):
            return f"{text}%"
    return f"{100 * x!r}%"


def compared(a: float, b: float, digits: int = SIGNIFICANT) -> tuple[str, str]:
    """``a`` and ``b`` as :func:`number`, with as many more digits as it takes for two different
    values to read differently (rounding is monotone, so their order reads as it is)."""
    x, y = float(a), float(b)
    for d in range(max(int(digits), 1), _MAX_DIGITS + 1):
        left, right = number(x, d), number(y, d)
        if (left == right) == (x == y):
            return left, right
    return repr(x), repr(y)


def against(value: float, threshold: float, holds: bool) -> tuple[str, str]:
    """A measured ``value`` and the ``threshold`` it was checked against, as :func:`compared`, for
    a check that ``holds`` (or not). A value that holds while above the threshold is above it by
    less than the floating-point tolerance every check compares with (``value <= threshold +
    1e-9``): it is the threshold, and both read as the threshold (``B = 1`` against ``1 - 2**-53``
    read "1 <= 0.9999999999999999")."""
    if holds and float(value) > float(threshold):
        return number(threshold), number(threshold)
    return compared(value, threshold)


def count(value: int) -> str:
    """An integer with thousands separators (``31,131``)."""
    return f"{int(value):,}"


__all__ = ["SIGNIFICANT", "against", "compared", "count", "number", "percent"]
