"""The vocabulary of warning codes: every ``code`` a run's warnings carry (report.json's
``warnings[].code``, the terminal, report.html, the workbench), defined once and spelled one way,
in kebab-case (lower-case words joined by ``-``).

A warning never fails a release: it tells the data custodian what to look at before publishing
(docs/report.md, "Warnings"). The code is stable, for programs; the message is for a person.

==============================  ==============================================================
code                            what it says
==============================  ==============================================================
``uninformative-qi``            a quasi-identifier is released at its top level or with one label
``implausible-values``          values far beyond a coding bound, absorbed by it (a builder's note)
``delta-above-one-over-n``      epsilon-safe's delta exceeds 1/N (N: records before sampling)
``not-differentially-private``  epsilon-safe with the thesis' sensitivity (not DP)
``kept-column-identifying``     a column released as it is singles out more than 5 % of the
                                released records (with the released quasi-identifiers)
``homogeneous-classes``         released classes in which every record has the same value of a
                                sensitive column (attribute disclosure)
``singleton-classes``           released classes of a single record (a release without k-anonymity)
``coarse-pseudonym``            a pseudonym column with too few distinct released values: known as
                                its column
``shifted-date-identifying``    the informed adversary (kept shifted dates known within max_days)
                                leaves records fewer than k candidates
``coarse-pseudonym-identifying``  the same, from coarse pseudonyms without kept shifted dates
``likely-repeated-persons``     without a person key, a column that looks like a person identifier
                                repeats: k and the risk count records, not people (issue 32)
``linked-profiles``             a person's records are linkable in the release (a kept pseudonym
                                or the person key): people whose combination of released classes
                                fewer than k others share (issue 32)
``attack-above-estimate``       an attack run with the release (``attack:``) re-identified
                                measurably more records than the headline's B (issue 34)
``subgroup-suppressed``         a category of a column (at least 11 input records) loses more
                                than half of its records to suppression (issue 33)
==============================  ==============================================================

The two structured warnings, :class:`safeshare.report.content.ReportWarning` and
:class:`safeshare.verify.disclosure.DisclosureWarning`, refuse a code that is not one of these.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from enum import StrEnum


class WarningCode(StrEnum):
    """A warning's code (a :class:`str`: it is written, compared and shown as its value)."""

    UNINFORMATIVE_QI = "uninformative-qi"
    IMPLAUSIBLE_VALUES = "implausible-values"
    DELTA_ABOVE_ONE_OVER_N = "delta-above-one-over-n"
    NOT_DIFFERENTIALLY_PRIVATE = "not-differentially-private"
    KEPT_COLUMN_IDENTIFYING = "kept-column-identifying"
    HOMOGENEOUS_CLASSES = "homogeneous-classes"
    SINGLETON_CLASSES = "singleton-classes"
    COARSE_PSEUDONYM = "coarse-pseudonym"
    SHIFTED_DATE_IDENTIFYING = "shifted-date-identifying"
    COARSE_PSEUDONYM_IDENTIFYING = "coarse-pseudonym-identifying"
    LIKELY_REPEATED_PERSONS = "likely-repeated-persons"
    LINKED_PROFILES = "linked-profiles"
    SUBGROUP_SUPPRESSED = "subgroup-suppressed"
    ATTACK_ABOVE_ESTIMATE = "attack-above-estimate"


#: The spelling of every code: lower-case words (letters, digits) joined by single hyphens.
SPELLING = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")


def warning_code(code: str) -> WarningCode:
    """``code`` as a :class:`WarningCode`; :class:`ValueError` naming the known codes if it is not one."""
    try:
        return WarningCode(code)
    except ValueError:
        known = ", ".join(c.value for c in WarningCode)
        raise ValueError(f"unknown warning code {code!r}: expected one of {known}") from None


def warning_codes(items: Iterable[object]) -> tuple[str, ...]:
    """``items`` as known codes, each once, in their order (``accept_warnings:``, the workbench's
    acknowledgement boxes); :class:`ValueError` naming the first unknown one (a non-text by its
    ``repr``)."""
    return tuple(dict.fromkeys(warning_code(i if isinstance(i, str) else repr(i)).value for i in items))


__all__ = ["SPELLING", "WarningCode", "warning_code", "warning_codes"]
