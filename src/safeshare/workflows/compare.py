"""The ``compare`` use case: releases of the same people side by side, risk and loss (issue 32).

An extract of events (tests, visits) can be released as it is, one row per event with a person
key, or flattened first (``safeshare flatten``: one row per person, the first events side by
side; docs/longitudinal.md). The two answer the same question differently: the event-level
release keeps every event but links a person's records (when the key is kept or pseudonymized),
the flattened release has one record per person by construction but stacks the events into
quasi-identifiers. ``safeshare compare A B ...`` reads the published reports (report.json of each
release folder) and shows, for each, the same figures in the same unit, people:

* the people in and released, the records, the smallest class in people and the k;
* the risk of the release in people (``risk.release``: B, prosecutor maximum and mean) and, when
  the release links a person's records, the people whose profile fewer than k people share;
* the information loss (the metric and its normalized value) and the suppression.

Every figure is the report's own (nothing is recomputed, so nothing can disagree with the
release it describes). A report without a person key counts records as people (one record per
person: a flattened release), which the comparison states. The comparison warns when the releases
do not describe the same number of people.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from safeshare.errors import InputError
from safeshare.figures import number

#: The rows of the comparison: (key, label).
ROWS = (
    ("people_in", "people in"),
    ("people_out", "people released"),
    ("records_out", "records released"),
    ("unit", "counted in"),
    ("k", "k"),
    ("min_class_people", "smallest class (people)"),
    ("suppressed_records", "records suppressed"),
    ("people_suppressed", "people wholly suppressed"),
    ("B", "B (release, people)"),
    ("prosecutor_max", "prosecutor risk max"),
    ("prosecutor_mean", "prosecutor risk mean"),
    ("linked_below_k", "people whose linked profile < k share"),
    ("metric", "loss metric"),
    ("loss", "information loss (normalized)"),
)


@dataclass(frozen=True)
class Comparison:
    """The figures of each release (:data:`ROWS`), in the order given, and the warnings."""

    names: tuple[str, ...]
    figures: tuple[Mapping[str, Any], ...]
    warnings: tuple[str, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        return {
            "releases": [{"name": n, **dict(f)} for n, f in zip(self.names, self.figures, strict=True)],
            "warnings": list(self.warnings),
        }

    def rows(self) -> list[tuple[str, list[str]]]:
        """The terminal's table: one row per figure, one column per release."""
        out = []
        for key, label in ROWS:
            out.append((label, [_shown(f.get(key)) for f in self.figures]))
        return out


def _shown(value: Any) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return number(value)
    return str(value)


def release_figures(report: Mapping[str, Any]) -> dict[str, Any]:
    """The comparison's figures of one report.json (module docstring)."""
    people = report.get("people")
    risk = report.get("risk") or {}
    release = risk.get("release") or {}
    prosecutor = release.get("prosecutor") or {}
    out: dict[str, Any] = {
        "records_in": report.get("records_in"),
        "records_out": report.get("records_out"),
        "suppressed_records": report.get("suppressed_records"),
        "k": report.get("k"),
        "B": release.get("B"),
        "prosecutor_max": prosecutor.get("max"),
        "prosecutor_mean": prosecutor.get("mean"),
        "metric": report.get("metric"),
        "loss": report.get("information_loss_normalized"),
    }
    if isinstance(people, Mapping):
        out.update(
            unit="people",
            person_key=people.get("column"),
            people_in=people.get("people_in"),
            people_out=people.get("people_out"),
            people_suppressed=people.get("people_suppressed"),
            min_class_people=people.get("min_class_people"),
        )
    else:
        out.update(
            unit="records (one per person)",
            person_key=None,
            people_in=report.get("records_in"),
            people_out=report.get("records_out"),
            people_suppressed=report.get("suppressed_records"),
            min_class_people=report.get("min_class_size"),
        )
    checks = ((report.get("verification") or {}).get("checks") or {}).get("profiles")
    linked = checks if isinstance(checks, list) else []
    out["linked_below_k"] = (
        max((int(c.get("below_k") or 0) for c in linked), default=None) if linked else None
    )
    return out


def _read(release: str | Path | Mapping[str, Any]) -> tuple[str, Mapping[str, Any]]:
    if isinstance(release, Mapping):
        return str(release.get("release") or "release"), release
    path = Path(release)
    report = path / "report.json" if path.is_dir() else path
    if not report.is_file():
        raise InputError(f"{path}: no report.json (give a published release folder or its report.json)")
    try:
        doc = json.loads(report.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"{report}: not a readable report.json ({exc})") from None
    if not isinstance(doc, Mapping) or "records_in" not in doc:
        raise InputError(f"{report}: not a safeshare release report")
    return (path.name if path.is_dir() else path.parent.name), doc


def compare(releases: Sequence[str | Path | Mapping[str, Any]]) -> Comparison:
    """``safeshare compare A B ...``: the published releases ``releases`` (folders, report.json
    files, or report mappings such as :attr:`Release.report`) side by side (module docstring)."""
    if len(releases) < 2:
        raise InputError("compare: give at least two releases")
    names, figures = [], []
    for release in releases:
        name, doc = _read(release)
        names.append(name)
        figures.append(release_figures(doc))
    warnings = []
    people = {f["people_in"] for f in figures}
    if len(people) > 1:
        shown = ", ".join(f"{n}: {_shown(f['people_in'])}" for n, f in zip(names, figures, strict=True))
        warnings.append(
            f"the releases do not describe the same number of people ({shown}): check the person key of the "
            "event-level release and the key of the flattened one"
        )
    for name, f in zip(names, figures, strict=True):
        if f["person_key"] is None:
            warnings.append(f"{name}: no person key; its records are counted as people (a flattened release)")
    return Comparison(tuple(names), tuple(figures), tuple(warnings))


__all__ = ["ROWS", "Comparison", "compare", "release_figures"]
