"""The Risk screen in plain language (issue 35): one sentence per measure, the verdict against the
threshold, and the distribution of the records' prosecutor risk, all from report.json.

Nothing is computed here that the report does not hold: the verdict is the report's ``headline``
(``headline.risk``: the measure, what it achieved, the threshold and whether it ``holds``; or
the headline's sentence when no risk threshold was configured), and the distribution is the
report's ``class_size_histogram`` (records per class size; a record in a class of ``f`` has the
prosecutor risk ``1 / f``, so the bins from the smallest classes are the riskiest, thesis §2.2).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

#: What each measure of the Risk screen's table says, in one sentence (``risk.<side>.<path>``).
MEASURES: dict[str, str] = {
    "n": "The records (with a person key: the people) on each side.",
    "classes": (
        "Groups of records that share every quasi-identifier: a person hides among the others of their group."
    ),
    "B": (
        "The expected share of released records an adversary matches to the right person, knowing "
        "each person's quasi-identifiers and holding a register of the whole population (journalist "
        "risk: B = (1/n) sum of f/F over the classes)."
    ),
    "B_estimate": (
        "B as the chosen estimator gives it from the sample's class sizes, the population's being unknown."
    ),
    "prosecutor.max": (
        "The highest chance of picking out one known person, who is known to be in the data: "
        "1 / the size of the smallest class."
    ),
    "prosecutor.mean": "That chance averaged over the records: J / n, with J the number of classes.",
    "prosecutor.share_above_threshold": (
        "The share whose class is so small that their prosecutor risk exceeds the threshold the "
        "report measures against."
    ),
    "journalist.mean": (
        "The chance of a correct match averaged over the records when the adversary, holding a "
        "register of the population, does not know who is in the data."
    ),
    "marketer": "The share of records an adversary who links every record at once matches correctly.",
    "A": "The share of the population matched to a unique record of the release: J / N.",
    "sample_uniques": (
        "Records alone in their class: the ones an adversary can single out without a register."
    ),
}


def measure_sentence(path: str) -> str:
    """The sentence of the table row ``path`` (``B_estimate.pitman``: that of ``B_estimate``)."""
    key = path if path in MEASURES else path.split(".", 1)[0]
    return MEASURES.get(key, "")


def verdict(report: Mapping[str, Any]) -> dict[str, Any] | None:
    """The headline of the report as a verdict: ``{"holds", "measure", "achieved", "threshold",
    "text"}`` with a risk threshold (``holds``: the achieved figure is within it), else the
    headline's ``text`` alone (``holds``: ``None``, no threshold was set). ``None`` without a
    headline (a report of an older version)."""
    head = report.get("headline")
    if not isinstance(head, Mapping):
        return None
    risk = head.get("risk")
    if isinstance(risk, Mapping):
        return {
            "holds": bool(risk.get("holds")),
            "measure": risk.get("measure"),
            "achieved": risk.get("achieved"),
            "threshold": risk.get("threshold"),
            "text": head.get("text"),
        }
    return {"holds": None, "measure": None, "achieved": None, "threshold": None, "text": head.get("text")}


def risk_bins(histogram: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The report's ``class_size_histogram`` as bins of prosecutor risk: each bin's label (its
    class sizes), records and classes, and the largest risk of a record in it, ``1 / low``."""
    bins = []
    for row in histogram:
        low = row.get("low")
        if not isinstance(low, int) or low < 1:
            continue
        bins.append(
            {
                "label": str(row.get("label")),
                "records": int(row.get("records") or 0),
                "classes": int(row.get("classes") or 0),
                "risk": 1 / low,
            }
        )
    return bins


__all__ = ["MEASURES", "measure_sentence", "risk_bins", "verdict"]
