r"""Utilities of lattice nodes for the exponential mechanism, and their sensitivities (thesis §4.5.4).

Every utility here is computed for EVERY node of the lattice from three
per-node quantities: the normalized precision loss ``P(n)`` (Sweeney's Prec,
thesis §5.1; it depends on the node only), the records ``S(n)`` in classes
smaller than ``k`` on the sampled data (what the release would suppress), and
constants. Nodes are compared on the *sampled* data, which is what the
mechanism sees.

Neighbouring datasets differ by one record (added or removed; Li, Qardaji,
Su 2012). Their sensitivities rest on one fact:

**Lemma (suppression moves by at most k - 1).** Adding one record changes
``S(n)`` by ``-(k-1)`` (it joins a class of exactly ``k - 1`` records, which
is then released), by ``+1`` (it joins a class of fewer than ``k - 1``), or
by 0; removing one is symmetric. So ``|S(D) - S(D')| <= max(k - 1, 1)`` at
every node, and the bound is attained. NOT 1: one record can un-suppress a
whole class, which the thesis' "percentage of the database corresponding to
one record" (§6.2.2) overlooks.

The thesis' utility: ``u = 1 / (P + pen)``
------------------------------------------

``pen`` is either

* **k-anonymity penalty**: ``p`` when the node needs more than the
  suppression limit (``S(n) > floor(max_sup * n_sampled)``), else 0. Its
  change between neighbours is at most ``Dpen = p`` (an indicator flips);
* **suppression penalty**: ``p`` times the *percentage* of records
  suppressed, ``p * 100 * S(n) / N_ref`` (the thesis multiplies "by the
  percentage of suppressed records"; its Fig. 6.3 peaks at ``p ~ 0.04``,
  which is only consistent with a percentage, not a fraction). ``N_ref`` is a
  constant of the mechanism (by default ``round(beta N)``, the expected
  sample size, with ``N`` the number of input records treated as public).
  By the lemma, ``Dpen = p * 100 * max(k - 1, 1) / N_ref``.

The thesis states that the sensitivity "is exactly equal to the penalty
factor" (k-anonymity mode) or "the penalty factor multiplied by the
percentage of the database corresponding to one record" (suppression mode).
Both statements are about the *penalty term*. The utility is its
reciprocal, and ``x -> 1/x`` amplifies changes near 0: for ``a, b >= 0`` with
``|a - b| <= Dpen``,

.. math::

    \Big|\frac{1}{P + a} - \frac{1}{P + b}\Big| \le \frac{1}{P} - \frac{1}{P + \Delta pen},

with equality at ``a = 0, b = Dpen`` (a node that needs no penalty on one
dataset and the full change on its neighbour: attainable in both modes). The
global sensitivity of ``u`` over all nodes and all neighbouring datasets is
therefore

.. math::

    \Delta u = \max_{n: P(n) > 0} \Big(\frac{1}{P(n)} - \frac{1}{P(n) + \Delta pen}\Big)
             = \frac{1}{P_{min}} - \frac{1}{P_{min} + \Delta pen},

attained at the least generalized non-bottom node (``P_min = min_i 1/(q h_i)``
for unweighted Prec). At the bottom node ``P = 0`` and ``u = 1/pen`` is
unbounded (``pen`` can be 0 on a neighbour): no finite sensitivity covers it,
so this utility **excludes every node with ``P = 0``** (probability 0; the
set of candidates is still data-independent). For Adult's 9 QIs (``P_min =
1/18``) and ``p = 0.5`` in k-anonymity mode, ``Du = 18 - 1/(1/18 + 1/2) ~
16.2`` instead of the thesis' 0.5: calibrated correctly, the mechanism is
close to uniform. **The thesis' calibration does not give epsilon'-DP**: with
its ``Du``, the choice of node is only ``epsilon' * Du_true / Du_thesis``-DP
(``sensitivity="thesis"`` reproduces it, reports that figure, and is refused
for a release unless explicitly allowed), and not DP at all when the bottom
node is a candidate.

A DP-correct form of the thesis' idea: ``u = -(P + pen)``
-----------------------------------------------------------

``linear``: the negated loss. Its sensitivity IS the penalty's, ``Du = Dpen``
(``P`` is data-independent), exactly as the thesis intended, for both modes
and every node including the bottom.

SafePub's granularity score (Bild, Kuhn, Prasser 2018, §5.1; REFERENCE.md A5.5)
-------------------------------------------------------------------------------

``safepub``: with ``R(n) = n_sampled - S(n)`` released records,
``m(n) = N - R(n)`` records suppressed *or not sampled* (``N`` input records)
and ``G(n) = sum_i l_i / h_i`` over the ``d`` QIs,

.. math::

    u(n) = -\frac{R(n)\, G(n) + d\, m(n)}{d \max(k - 1, 1)}, \qquad \Delta u = 1.

Proof: adding a record to the input either leaves it unsampled (``m`` grows
by 1: the numerator moves by ``d``), or samples it into a class of size
``>= k`` (``R`` grows by 1: moves by ``G <= d``), of size ``< k - 1`` (``m``
grows by 1: ``d``), or of size exactly ``k - 1`` (``R`` grows by ``k`` and ``m``
shrinks by ``k - 1``: moves by ``k G - d(k - 1)``, in ``[-d(k-1), d]``). Every
case is within ``d max(k - 1, 1)``; removal is symmetric. The term ``-N/(k-1)``
is the same for every node, so it does not change the probabilities.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from safeshare.errors import InputError
from safeshare.numerics import suppression_limit

FloatArray = npt.NDArray[np.float64]
Int64Array = npt.NDArray[np.int64]

PENALTY_MODES = ("k-anonymity", "suppression")
SENSITIVITY_RULES = ("exact", "thesis")


@dataclass(frozen=True)
class LatticeData:
    """What the utilities need, every array indexed by the node (``array[node]``).

    Attributes
    ----------
    prec: normalized Prec of every node (data-independent).
    granularity: ``G = sum_i l_i / h_i`` of every node (unweighted; SafePub).
    suppressed: records in classes smaller than ``k`` (sampled data).
    n_qis: number of quasi-identifiers ``d``.
    k: the k of k-anonymity.
    n_sampled: records in the sampled data.
    n_input: records before sampling.
    max_suppression: the suppression limit that shapes the k-anonymity penalty.
    reference_size: ``N_ref`` of the suppression penalty (a public constant).
    """

    prec: FloatArray
    granularity: FloatArray
    suppressed: Int64Array
    n_qis: int
    k: int
    n_sampled: int
    n_input: int
    max_suppression: float
    reference_size: int

    @property
    def suppression_limit(self) -> int:
        return suppression_limit(self.max_suppression, self.n_sampled)

    @property
    def suppressed_fraction(self) -> FloatArray:
        return self.suppressed / max(self.n_sampled, 1)

    @property
    def within_limit(self) -> npt.NDArray[np.bool_]:
        return self.suppressed <= self.suppression_limit


class Utility(ABC):
    """A utility of every node and its global sensitivity."""

    name: str = "utility"

    @abstractmethod
    def values(self, data: LatticeData) -> FloatArray:
        """Utility of every node (``-inf``: the node is not a candidate)."""

    @abstractmethod
    def sensitivity(self, data: LatticeData) -> float:
        """The sensitivity the mechanism is calibrated with (data-independent)."""

    def exact_sensitivity(self, data: LatticeData) -> float:
        """The true global sensitivity over the candidates (``inf`` when unbounded)."""
        return self.sensitivity(data)

    @property
    def differentially_private(self) -> bool:
        """Whether :meth:`sensitivity` is a valid global sensitivity."""
        return True

    @abstractmethod
    def params(self) -> dict[str, Any]:
        """The utility's parameters, for reports."""


def _check_penalty(penalty: float | None, mode: str, utility: str) -> tuple[float, str]:
    if penalty is None:
        raise InputError(f"utility {utility!r} needs a penalty factor (--penalty)")
    if isinstance(penalty, bool) or not isinstance(penalty, int | float) or not math.isfinite(penalty):
        raise InputError(f"penalty: expected a number > 0, got {penalty!r}")
    if penalty <= 0:
        raise InputError(f"penalty: expected a number > 0, got {penalty!r}")
    if mode not in PENALTY_MODES:
        raise InputError(f"penalty mode: expected one of {', '.join(PENALTY_MODES)}, got {mode!r}")
    return float(penalty), mode


class _Penalized(Utility):
    """Shared penalty logic of the thesis' utility and its linear form."""

    def __init__(self, penalty: float | None, mode: str) -> None:
        self.penalty, self.mode = _check_penalty(penalty, mode, self.name)

    def penalty_values(self, data: LatticeData) -> FloatArray:
        if self.mode == "k-anonymity":
            return self.penalty * (data.suppressed > data.suppression_limit).astype(np.float64)
        return self.penalty * 100.0 * data.suppressed.astype(np.float64) / data.reference_size

    def penalty_sensitivity(self, data: LatticeData) -> float:
        """``Dpen``: ``p``, or ``p * 100 * max(k - 1, 1) / N_ref`` (module docstring, lemma)."""
        if self.mode == "k-anonymity":
            return self.penalty
        return self.penalty * 100.0 * max(data.k - 1, 1) / data.reference_size

    def params(self) -> dict[str, Any]:
        return {"utility": self.name, "penalty": self.penalty, "penalty_mode": self.mode}


class ThesisUtility(_Penalized):
    """``u = 1 / (normalized Prec + penalty)`` (thesis §4.5.4, §6.2.2).

    Parameters
    ----------
    penalty: the penalty factor ``p``.
    mode: ``k-anonymity`` or ``suppression``.
    sensitivity_rule: ``exact`` (the true global sensitivity; nodes with
        ``P = 0`` excluded) or ``thesis`` (the thesis' calibration: NOT
        differentially private, see the module docstring).
    """

    name = "thesis"

    def __init__(self, penalty: float | None, mode: str, sensitivity_rule: str = "exact") -> None:
        super().__init__(penalty, mode)
        if sensitivity_rule not in SENSITIVITY_RULES:
            raise InputError(
                f"sensitivity: expected one of {', '.join(SENSITIVITY_RULES)}, got {sensitivity_rule!r}"
            )
        self.rule = sensitivity_rule

    def values(self, data: LatticeData) -> FloatArray:
        denominator = data.prec + self.penalty_values(data)
        out = np.full(denominator.shape, -np.inf)
        if self.rule == "exact":
            keep = data.prec > 0
        else:  # the thesis kept the bottom node whenever its penalty was positive
            if bool((denominator <= 0).any()):
                raise InputError(
                    "the thesis' utility 1/(Prec + penalty) is infinite at a node with no loss and no "
                    "penalty (the bottom node needs no suppression); use --sensitivity exact"
                )
            keep = np.ones(denominator.shape, dtype=bool)
        out[keep] = 1.0 / denominator[keep]
        return out

    def _p_min(self, data: LatticeData) -> float:
        positive = data.prec[data.prec > 0]
        if positive.size == 0:
            raise InputError("utility 'thesis' needs a node with positive Prec (a QI with a hierarchy)")
        return float(positive.min())

    def exact_sensitivity(self, data: LatticeData) -> float:
        if self.rule == "thesis" and bool((data.prec <= 0).any()):
            return math.inf  # the bottom node is a candidate: 1/pen is unbounded
        p_min = self._p_min(data)
        return 1.0 / p_min - 1.0 / (p_min + self.penalty_sensitivity(data))

    def sensitivity(self, data: LatticeData) -> float:
        if self.rule == "exact":
            return self.exact_sensitivity(data)
        if self.mode == "k-anonymity":
            return self.penalty
        return self.penalty * 100.0 / max(data.n_sampled, 1)

    @property
    def differentially_private(self) -> bool:
        return self.rule == "exact"

    def params(self) -> dict[str, Any]:
        return {**super().params(), "sensitivity_rule": self.rule}


class LinearUtility(_Penalized):
    """``u = -(normalized Prec + penalty)``: the thesis' idea with ``Du = Dpen`` exactly."""

    name = "linear"

    def values(self, data: LatticeData) -> FloatArray:
        return -(data.prec + self.penalty_values(data))

    def sensitivity(self, data: LatticeData) -> float:
        return self.penalty_sensitivity(data)


class SafePubUtility(Utility):
    """SafePub's granularity score, counting non-sampled records as suppressed (``Du = 1``)."""

    name = "safepub"

    def values(self, data: LatticeData) -> FloatArray:
        released = (data.n_sampled - data.suppressed).astype(np.float64)
        missing = data.n_input - released
        d = data.n_qis
        return -(released * data.granularity + d * missing) / (d * max(data.k - 1, 1))

    def sensitivity(self, data: LatticeData) -> float:
        return 1.0

    def params(self) -> dict[str, Any]:
        return {"utility": self.name}


UTILITIES = ("thesis", "linear", "safepub")


def make_utility(
    name: str, penalty: float | None = None, mode: str = "suppression", sensitivity_rule: str = "exact"
) -> Utility:
    """The utility called ``name`` (``thesis``, ``linear`` or ``safepub``)."""
    key = str(name).strip().lower()
    if key == "thesis":
        return ThesisUtility(penalty, mode, sensitivity_rule)
    if sensitivity_rule != "exact":
        raise InputError(f"--sensitivity thesis applies to the thesis utility only, not {name!r}")
    if key == "linear":
        return LinearUtility(penalty, mode)
    if key == "safepub":
        return SafePubUtility()
    raise InputError(f"unknown utility {name!r}; expected one of {', '.join(UTILITIES)}")
