"""What a run adds when records are people's, not people (issue 32): one module of hooks.

The search counts people through the frequency table's (row, person) grain
(:mod:`safeshare.core.persons`); this module gives the rest of a run the same unit:

* :func:`person_expectations` and :func:`link_expectations`: what the verifier re-checks on the
  written file (every released class holds k distinct people, :mod:`safeshare.verify.persons`;
  the profiles of linked records, :mod:`safeshare.verify.profiles`), from the configuration's roles
  and the input as the engine reads it, never from the search's table;
* :func:`person_risk`: report.json's ``risk`` in people (:mod:`safeshare.risk.persons`), and, when
  the release links a person's records, the same measures on their profiles;
* :func:`profile_figures`: the linked records' profiles at the chosen node, from the search;
* :func:`detect_repeated_persons` and :func:`person_warnings`: the warnings by name (a column that
  looks like a person identifier and repeats, without a person key; profiles fewer than k people
  share, with the choice "release without linkage").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from safeshare.data.person_key import RepeatedPersons, repeated_persons
from safeshare.data.schema import Role, Schema
from safeshare.figures import percent
from safeshare.report.content import ReportWarning
from safeshare.risk.measures import DEFAULT_THRESHOLD, risk_measures
from safeshare.risk.persons import most_exposed, person_side
from safeshare.risk.population import Population
from safeshare.risk.report_risk import input_estimators
from safeshare.risk.sensitivity import ReleasedClasses
from safeshare.risk.spread import recommended_estimator
from safeshare.verify.persons import PersonExpectations
from safeshare.verify.profiles import LinkExpectations

if TYPE_CHECKING:
    from safeshare.data.engines.base import Engine
    from safeshare.workflows.anonymizer import AnonymizationResult


def release_k(result: AnonymizationResult) -> int:
    """The k a release's profiles are measured against (:meth:`AnonymizationResult.release_k`)."""
    return result.release_k()


def link_columns(schema: Schema, released_columns: Sequence[str]) -> list[str]:
    """The released columns that link a person's records: the person key when it is released (a
    pseudonym or kept), then every other released pseudonym."""
    out = []
    if schema.person is not None and schema.person_released and schema.person in released_columns:
        out.append(schema.person)
    for column in released_columns:
        attr = schema.attributes.get(column)
        if attr is not None and attr.role is Role.PSEUDONYM and column not in out:
            out.append(column)
    return out


def link_expectations(schema: Schema, released_columns: Sequence[str], k: int) -> LinkExpectations | None:
    """The verifier's profile measure (:mod:`safeshare.verify.profiles`) over the release's link
    columns, with the kept shifted dates shifted by each link column's person (their intervals are
    kept); ``None`` when no record is linkable."""
    links = link_columns(schema, released_columns)
    if not links:
        return None
    dates: dict[str, dict[str, str]] = {}
    for link in links:
        kept = {
            name: str(attr.date_format)
            for name, attr in schema.attributes.items()
            if attr.role is Role.SHIFTED_DATE
            and attr.hierarchy is None
            and attr.person == link
            and name in released_columns
        }
        if kept:
            dates[link] = kept
    return LinkExpectations(tuple(links), k, dates)


def person_expectations(result: AnonymizationResult, engine: Engine) -> PersonExpectations | None:
    """The verifier's people check (:mod:`safeshare.verify.persons`): the person key, the k in
    people, each quasi-identifier's value -> label at the chosen level of the configured hierarchy,
    and the input's (QI, person) tuples as the engine reads them (asked when the check runs: the
    engine answers from the grouping it already made for the search)."""
    schema = result.schema
    person = schema.person
    if person is None or result.node is None:
        return None
    qis = list(result.table.qi_names)
    labels = {
        qi: {str(row[0]): str(row[level]) for row in h.rows}
        for qi, h, level in zip(qis, result.table.hierarchies, result.node, strict=True)
    }
    ks = [int(getattr(m, "k", 1)) for m in result.criterion.models if m.name == "k-anonymity"]
    return PersonExpectations(
        column=person,
        k=max(ks, default=1),
        labels=labels,
        input_grain=lambda: engine.grouped_counts([*qis, person]),
        released=schema.person_released,
    )


def profile_figures(result: AnonymizationResult) -> dict[str, Any] | None:
    """The released profiles at the chosen node (:meth:`AnonymizationResult.profile_figures`)."""
    return result.profile_figures()


def person_risk(
    result: AnonymizationResult,
    population_size: int | None,
    estimator: str | None = None,
    threshold: float = DEFAULT_THRESHOLD,
) -> dict[str, Any]:
    """report.json's ``risk`` in people (:mod:`safeshare.risk.persons`): the input's people on the
    raw quasi-identifiers and the release's, each person at their most exposed class, N in people
    (``population_size``, else the input's people: exact). With linked records, ``linked``: the
    same measures on the people's released profiles (each person's risk 1 / the people sharing it)."""
    grain = result.table.persons
    assert grain is not None and result.node is not None
    assert result.classes is not None and result.assessment is not None
    population = Population.of(population_size)
    exact = population.whole_input
    N = population.resolve(grain.n_people)
    if estimator is None:  # the one our evaluation recommends at the input's sampling fraction
        estimator = recommended_estimator(grain.n_people, N)
    bottom = result.evaluator.classes(result.table.lattice.bottom)
    f_in = most_exposed(bottom.people, np.asarray(bottom.row_class)[grain.row], grain.person)
    classes = result.classes
    released = result.assessment.acceptable & (classes.sizes > 0)
    f_out = most_exposed(classes.people, np.asarray(classes.row_class)[grain.row], grain.person, released)
    doc: dict[str, Any] = {
        "population_size": N,
        "population": "the input's people, taken as the whole population (exact risks)"
        if exact
        else "configured population_size, in people (journalist and marketer risks estimated)",
        "unit": "people",
        "estimator": estimator,
        "threshold": threshold,
        "input": person_side(f_in, bottom.people[bottom.sizes > 0], N, exact, estimator, threshold),
        "release": person_side(f_out, classes.people[released], N, exact, estimator, threshold),
    }
    if doc["input"] is not None:  # every estimator's B on the input's classes, in people
        people = bottom.people[bottom.sizes > 0]
        doc["input"]["estimators"] = input_estimators(
            ReleasedClasses.of(people, grain.n_people, "people"), N, threshold, estimator
        )
    if result.schema.person_released:
        profiles = grain.profiles(classes.row_class, counted=released)
        if profiles.n_people:
            sizes = profiles.sizes
            linked = risk_measures(sizes, sizes if exact else None, N, threshold).to_dict()
            linked["estimated"] = not exact
            linked["column"] = grain.column
            doc["linked"] = linked
    return doc


def detect_repeated_persons(engine: Engine, schema: Schema | None = None) -> list[RepeatedPersons]:
    """Without a person key: the input's columns that look like a person identifier and repeat
    (:mod:`safeshare.data.person_key`); with one, none."""
    if schema is not None and schema.person is not None:
        return []
    roles: dict[str, str | None] = {}
    for column in engine.columns():
        if schema is None:
            roles[column] = None
            continue
        attr = schema.attributes.get(column)
        role = attr.role if attr is not None else schema.default_role
        if attr is not None and attr.is_quasi:
            roles[column] = "quasi"
        else:
            roles[column] = role.value if role is not None else None
    return repeated_persons(engine, roles)


def person_warnings(doc: Mapping[str, Any]) -> list[ReportWarning]:
    """report.json's warnings about people: ``repeated_persons`` (no person key, a column that looks
    like one repeats) and ``linked_profiles`` (people whose linked records fewer than k people
    share), from the report's sections."""
    out = []
    for found in doc.get("repeated_persons") or []:
        out.append(
            ReportWarning(
                "likely-repeated-persons",
                str(found["message"]),
                (str(found["column"]),),
                float(found["repeated_values"]) / max(float(found["values"]), 1.0),
            )
        )
    for linked in linked_figures(doc):
        if not int(linked.get("below_k") or 0):
            continue
        out.append(
            ReportWarning(
                "linked-profiles",
                linked_message(linked),
                (str(linked["column"]),),
                float(linked["below_k_share"]),
            )
        )
    return out


def people_certificate(doc: Mapping[str, Any]) -> dict[str, Any]:
    """The certificate's figures about people (report.json's ``certificate``): the unit its counts
    are in, the people in and out (re-checked on the file when written), the suppression limit's
    unit, and each link column's profiles; the repeated-person warnings when there is no key."""
    out: dict[str, Any] = {}
    people = doc.get("people")
    checks = ((doc.get("verification") or {}).get("checks") or {}).get("persons")
    if isinstance(people, Mapping):
        out["unit"] = "people"
        out["person_key"] = people.get("column")
        out["people"] = people.get("people_in")
        out["people_released"] = (checks or {}).get("people_out", people.get("people_out"))
        out["min_class_people"] = (checks or {}).get("min_class_people", people.get("min_class_people"))
        out["suppression_unit"] = people.get("suppression_unit")
    else:
        out["unit"] = "records (one record per person: no person key)"
    linked = linked_figures(doc)
    if linked:
        out["linked_records"] = [
            {
                key: entry.get(key)
                for key in (
                    "column",
                    "k",
                    "people",
                    "below_k",
                    "below_k_share",
                    "singled_out",
                    "smallest",
                    "rechecked",
                )
            }
            | {"alternative": "release without linkage: drop the link column (role identifying)"}
            for entry in linked
        ]
    repeated = doc.get("repeated_persons") or []
    if repeated:
        out["repeated_persons"] = [str(r["message"]) for r in repeated]
    return out


def linked_figures(doc: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The profile figures of a report: the verifier's, measured on the written file, else the
    search's (a release not written)."""
    checks = ((doc.get("verification") or {}).get("checks") or {}).get("profiles")
    if isinstance(checks, list) and checks:
        return [dict(c, rechecked=True) for c in checks]
    people = doc.get("people") or {}
    search = people.get("profiles") if isinstance(people, Mapping) else None
    return [dict(search, rechecked=False)] if isinstance(search, Mapping) else []


def linked_message(linked: Mapping[str, Any]) -> str:
    """One sentence on a link column's profiles, with the choice beside it."""
    column, k = str(linked["column"]), int(linked["k"])
    below, people = int(linked["below_k"]), int(linked["people"])
    dates = list(linked.get("intervals") or [])
    what = "the classes of their records" + (
        f" and the days between their {', '.join(dates)}" if dates else ""
    )
    return (
        f"linked by {column!r}: {below:,} of {people:,} released people ({percent(below / people)}) have a "
        f"profile ({what}) that fewer than {k} people share, {int(linked['singled_out']):,} of them a "
        f"profile of their own; release without linkage (drop {column}: role identifying), or require "
        f"profile-anonymity: {{k: {k}}}"
        if people
        else f"linked by {column!r}: no released person"
    )


__all__ = [
    "detect_repeated_persons",
    "link_columns",
    "link_expectations",
    "linked_figures",
    "linked_message",
    "people_certificate",
    "person_expectations",
    "person_risk",
    "person_warnings",
    "profile_figures",
    "release_k",
]
