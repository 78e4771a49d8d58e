"""Rates of an attack's successes and their 95 % intervals.

* :func:`wilson`: the Wilson score interval of a success rate ``k/n`` (Wilson 1927), the
  interval Anonymeter uses (Giomi et al., PoPETs 2023(2), §4): centre
  ``(k + z^2/2)/(n + z^2)``, half-width ``z/(n + z^2) sqrt(k(n-k)/n + z^2/4)``, ``z = 1.96``.
* :func:`residual`: Anonymeter's residual risk of an attack against the released records over the
  same attack against control records not in the release, ``R = (r_a - r_c) / (1 - r_c)`` on
  the Wilson centres, its error propagated to first order
  (``dR = sqrt((dr_a/(1-r_c))^2 + ((r_a-1) dr_c/(1-r_c)^2)^2)``), clipped to ``[0, 1]``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

Z95 = 1.959963984540054


@dataclass(frozen=True)
class Rate:
    """``successes`` of ``attempts``: the rate ``successes/attempts`` and its Wilson 95 % interval."""

    successes: int
    attempts: int

    @property
    def value(self) -> float:
        return self.successes / self.attempts if self.attempts else 0.0

    @property
    def center(self) -> float:
        return wilson(self.successes, self.attempts)[0]

    @property
    def half_width(self) -> float:
        return wilson(self.successes, self.attempts)[1]

    @property
    def interval(self) -> tuple[float, float]:
        c, h = wilson(self.successes, self.attempts)
        return max(0.0, c - h), min(1.0, c + h)

    def to_dict(self) -> dict[str, Any]:
        return {
            "successes": self.successes,
            "attempts": self.attempts,
            "rate": self.value,
            "interval": list(self.interval),
        }


def wilson(successes: int, attempts: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval's centre and half-width (module docstring); (0, 0) without attempts."""
    if attempts <= 0:
        return 0.0, 0.0
    k, n = float(successes), float(attempts)
    z2 = z * z
    denominator = n + z2
    centre = (k + z2 / 2) / denominator
    half = z / denominator * math.sqrt(k * (n - k) / n + z2 / 4)
    return centre, half


def _clip(x: float) -> float:
    return min(max(x, 0.0), 1.0)


@dataclass(frozen=True)
class Residual:
    """The residual risk of an attack over its control (module docstring)."""

    attack: Rate
    control: Rate
    baseline: Rate

    @property
    def risk(self) -> tuple[float, tuple[float, float]]:
        a, da = self.attack.center, self.attack.half_width
        c, dc = self.control.center, self.control.half_width
        if c >= 1.0:
            return 0.0, (0.0, 1.0)
        value = (a - c) / (1 - c)
        err = math.sqrt((da / (1 - c)) ** 2 + ((a - 1) * dc / (1 - c) ** 2) ** 2)
        return _clip(value), (_clip(value - err), _clip(value + err))

    @property
    def better_than_baseline(self) -> bool:
        """Whether the attack beats random guessing (Anonymeter warns when it does not)."""
        return self.attack.center > self.baseline.center

    def to_dict(self) -> dict[str, Any]:
        value, interval = self.risk
        return {
            "risk": value,
            "risk_interval": list(interval),
            "attack": self.attack.to_dict(),
            "control": self.control.to_dict(),
            "baseline": self.baseline.to_dict(),
            "better_than_baseline": self.better_than_baseline,
        }
