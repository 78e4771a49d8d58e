"""A rule set of the kind of CDC's COVID-19 case-surveillance public-use files, as a preset of
``surveil release --rules cdc`` (issue 37).

CDC's *COVID-19 Case Surveillance Public Use Data with Geography* is released with field-level
suppression -- a record is never dropped, a field is set to ``NA`` -- and every file is checked by a
separate verifier, CDC's Surveillance Review and Response Group's scripts (``CDCgov/
covid_case_privacy_review``, ``R/review_public_geo.R``), which log each release. Its thresholds are
named there: ``KANON_LEVEL_LOCATION <- 1000``, ``KANON_LEVEL <- 11``, ``COUNTY_POPULATION_LEVEL <-
20000``, ``COUNTY_DEMO_POPULATION_LEVEL <- 20*KANON_LEVEL`` (220), the 50 % case share
(``cases_subpopulation >= census_subpopulation/2`` is a violation), and its ten rules:

* #1, #2 -- k = 1,000 on the location (state, and state x county): a shown state or county holds at
  least 1,000 records of the file;
* #3 -- a county of fewer than 20,000 people is not shown;
* #4 -- a shown county's subpopulation of the record's sex, race and ethnicity (a suppressed field
  summed over) holds at least 220 people;
* #5 -- the records of a county's subpopulation are fewer than half of its people;
* #6 -- k = 11 on all the quasi-identifiers (region, period, every dimension);
* #7, #8, #9 -- a suppressed state suppresses its county (here the region column holds the county's
  FIPS code, its state's two-digit code when the county is suppressed, ``NA`` when the state is too,
  so a county never shows without its state);
* #10 -- complementary suppression: no state has exactly one of its counties (in the population
  table) missing from the file, which would name the county of the state's county-less records.

How they are applied here (:func:`apply_rules`, on one period's records; all records of one released
tuple share its fate, so the work is on those tuples): county population (#3), location k (#1, #2:
a county below 1,000 records is suppressed, then more of the state's counties, smallest first, while
the state's county-less records are fewer than 1,000; a state below 1,000 is suppressed), the
complementary rule (#10: the smallest shown county of such a state is suppressed; a state of one
county, suppressed, is suppressed), the subpopulation (#4) and the share cap (#5: ethnicity, then
race, then sex is suppressed until the record passes; then its county), and k = 11 (#6: through the
fields right to left in CDC's order -- ethnicity, race, sex, age, county, state -- the records of
classes smaller than 11 get the field suppressed, as CDC's ``manual_k_suppress``; a record still in a
small class when every field is suppressed is dropped, the one case CDC's monthly national file never
meets), repeated until nothing changes (every step only suppresses more, so it ends).

Where this differs from CDC's verifier, it is stricter: ``NA`` is a value of its own in the class
sizes of #1, #2 and #6 (CDC's sdcMicro check of #6 counts ``NA`` as a wildcard, ``alpha = 1``, which
makes classes larger), and #10 is checked for every state shown, including a state whose every county
is suppressed (CDC's looks only at states with a shown county; a state of one county would name it).
The county-less and state-less group (``NA``) is not held to 1,000 records: a file of one period
would otherwise have to drop every record. The checks are re-made on the written file by
:mod:`safeshare.verify.cdc_rules`, sharing nothing with this module.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from safeshare.config.vocabulary import SMALL_CELL
from safeshare.core.lattice import Node
from safeshare.errors import ConfigError, InputError
from safeshare.surveillance.inputs import Population

#: Where the thresholds come from.
SOURCE = (
    "CDCgov/covid_case_privacy_review, R/review_public_geo.R: KANON_LEVEL_LOCATION <- 1000, "
    "KANON_LEVEL <- 11, COUNTY_POPULATION_LEVEL <- 20000, COUNTY_DEMO_POPULATION_LEVEL <- 20*KANON_LEVEL, "
    "cases_subpopulation >= census_subpopulation/2 a violation; rules #1-#10"
)

#: The subpopulation dimensions of rules #4 and #5, and the order in which rule #6 suppresses fields.
SUBPOPULATION = ("sex", "race", "ethnicity")
ORDER = ("ethnicity", "race", "sex", "age")


@dataclass(frozen=True)
class CdcRules:
    """The thresholds of the rule set (the defaults are CDC's, :data:`SOURCE`)."""

    k: int = SMALL_CELL
    location_k: int = 1000
    county_population: int = 20_000
    subpopulation: int = 220
    share_cap: float = 0.5
    na: str = "NA"
    name: str = "cdc"

    def table(self) -> list[dict[str, Any]]:
        """The rules, their thresholds and their source (the log's rows)."""
        src = "review_public_geo.R"
        rows = [
            ("#1, #2", "a shown state, and a shown county, holds at least this many records",
             self.location_k, "KANON_LEVEL_LOCATION"),
            ("#3", "a shown county has at least this many people", self.county_population,
             "COUNTY_POPULATION_LEVEL"),
            ("#4", "a shown county's subpopulation (sex, race, ethnicity) has at least this many people",
             self.subpopulation, "COUNTY_DEMO_POPULATION_LEVEL = 20*KANON_LEVEL"),
            ("#5", "a county subpopulation's records are fewer than this share of its people",
             self.share_cap, "cases_subpopulation >= census_subpopulation/2 is a violation"),
            ("#6", "every class of the quasi-identifiers (NA a value) holds at least this many records",
             self.k, "KANON_LEVEL"),
            ("#7-#9", "a suppressed state suppresses its county", None, "linked_attributes"),
            ("#10", "no shown state misses exactly one of its counties", 1, "county_diff == 1, a violation"),
        ]  # fmt: skip
        return [
            {"rule": r, "what": what, "threshold": t, "source": f"{name} ({src})"}
            for r, what, t, name in rows
        ]

    def params(self) -> dict[str, Any]:
        return {
            "k": self.k,
            "location_k": self.location_k,
            "county_population": self.county_population,
            "subpopulation": self.subpopulation,
            "share_cap": self.share_cap,
            "na": self.na,
        }


PRESETS = {"cdc": CdcRules()}


def load_rules(value: str | Path) -> CdcRules:
    """``cdc`` (the preset), or a YAML file ``{preset: cdc, k: ..., location_k: ..., county_population:
    ..., subpopulation: ..., share_cap: ...}`` (the preset with some thresholds changed)."""
    if isinstance(value, str) and value in PRESETS:
        return PRESETS[value]
    from safeshare.config_checks import read_yaml

    path = Path(value)
    if not path.is_file():
        raise InputError(f"--rules: {value!r} is no preset ({', '.join(PRESETS)}) and no file")
    spec = read_yaml(path, "rule set")
    if not isinstance(spec, Mapping) or spec.get("preset") not in PRESETS:
        raise ConfigError(f"{path}: a mapping with 'preset: {' | '.join(PRESETS)}' is required")
    rules = PRESETS[str(spec["preset"])]
    changes: dict[str, Any] = {}
    for key, value_ in spec.items():
        if key == "preset":
            continue
        if key in ("k", "location_k", "county_population", "subpopulation"):
            if not isinstance(value_, int) or isinstance(value_, bool) or not 1 <= value_ <= 10**10:
                raise ConfigError(f"{path}: {key}: a whole number from 1 to 10^10, got {value_!r}")
        elif key == "share_cap":
            if not isinstance(value_, int | float) or isinstance(value_, bool) or not 0 < value_ <= 1:
                raise ConfigError(f"{path}: share_cap: a share in (0, 1], got {value_!r}")
            value_ = float(value_)
        else:
            raise ConfigError(
                f"{path}: unknown key {key!r} (k, location_k, county_population, subpopulation, share_cap)"
            )
        changes[key] = value_
    return replace(rules, name=f"{rules.name} ({path.name})", **changes)


def check_population(population: Population, rules: CdcRules) -> None:
    """The rule set needs county FIPS regions (the state is the first two digits), the dimensions of
    the subpopulation, and no label equal to the suppression token."""
    bad = next((r for r in population.regions if not (len(r) == 5 and r.isdigit())), None)
    if bad is not None:
        raise InputError(f"--rules {rules.name}: region {bad!r} is not a 5-digit county FIPS code")
    names = population.space.names
    missing = [d for d in SUBPOPULATION if d not in names]
    if missing:
        raise InputError(f"--rules {rules.name}: the hierarchies have no dimension {missing[0]!r}")
    for dim in population.space.dimensions:
        if any(rules.na in lv.groups for lv in dim.levels) or rules.na in dim.leaves:
            raise InputError(
                f"--rules {rules.name}: {dim.name!r} has a label {rules.na!r}, the suppression token"
            )


@dataclass
class Unit:
    """The records of one released tuple (region, labels at the policy) and what is suppressed."""

    region: str
    labels: tuple[str, ...]
    n: int
    geo: int = 0  # 0 county shown, 1 state only, 2 neither
    na: list[bool] = field(default_factory=list)
    dropped: bool = False

    def released(self, rules: CdcRules) -> tuple[str, ...]:
        region = (self.region, self.region[:2], rules.na)[self.geo]
        return (
            region,
            *(rules.na if off else label for label, off in zip(self.labels, self.na, strict=True)),
        )


class _Subpopulations:
    """People of a county per subpopulation labels (``None``: the field suppressed, summed over)."""

    def __init__(self, population: Population, node: Node, dims: list[int]) -> None:
        space = population.space
        grids = np.unravel_index(np.arange(space.n_bins), space.shape)
        keys = [np.asarray(space.dimensions[d].levels[node[d]].groups, dtype=object)[grids[d]] for d in dims]
        self.by_region: dict[str, dict[tuple[str, ...], int]] = {}
        for r, region in enumerate(population.regions):
            counts: dict[tuple[str, ...], int] = {}
            for key, n in zip(zip(*keys, strict=True), population.counts[r].tolist(), strict=True):
                if n:
                    counts[key] = counts.get(key, 0) + int(n)
            self.by_region[region] = counts
        self._cache: dict[tuple[str, tuple[str | None, ...]], int] = {}

    def people(self, region: str, labels: tuple[str | None, ...]) -> int:
        key = (region, labels)
        if key not in self._cache:
            self._cache[key] = sum(
                n
                for cell, n in self.by_region[region].items()
                if all(want is None or want == got for want, got in zip(labels, cell, strict=True))
            )
        return self._cache[key]


def apply_rules(units: list[Unit], population: Population, node: Node, rules: CdcRules) -> None:
    """Suppress fields (and, for the last resort of #6, records) of ``units`` until every rule holds
    (module docstring). ``units`` hold one period's released tuples; changed in place."""
    space = population.space
    names = list(space.names)
    width = len(names)
    for u in units:
        if not u.na:
            u.na = [False] * width
    sub_dims = [names.index(d) for d in SUBPOPULATION]
    order = [names.index(d) for d in ORDER if d in names]
    order += [d for d in reversed(range(width)) if d not in order]
    county_people = dict(zip(population.regions, population.counts.sum(axis=1).tolist(), strict=True))
    census: dict[str, set[str]] = {}
    for region in population.regions:
        census.setdefault(region[:2], set()).add(region)
    subpops = _Subpopulations(population, node, sub_dims)

    def live() -> list[Unit]:
        return [u for u in units if not u.dropped]

    def sub_labels(u: Unit) -> tuple[str | None, ...]:
        return tuple(None if u.na[d] else u.labels[d] for d in sub_dims)

    changed = True
    while changed:
        changed = False
        # 3: small counties
        for u in live():
            if u.geo == 0 and county_people.get(u.region, 0) < rules.county_population:
                u.geo, changed = 1, True
        # 1, 2: k on the location
        changed |= _location(live(), rules)
        # 10: complementary suppression within a state
        changed |= _complementary(live(), census)
        # 4, 5: subpopulation and its share of cases
        moved = True
        while moved:
            moved = False
            cases: Counter[tuple[str, tuple[str | None, ...]]] = Counter()
            for u in live():
                if u.geo == 0:
                    cases[(u.region, sub_labels(u))] += u.n
            for u in live():
                if u.geo != 0:
                    continue
                people = subpops.people(u.region, sub_labels(u))
                if (
                    people >= rules.subpopulation
                    and cases[(u.region, sub_labels(u))] < rules.share_cap * people
                ):
                    continue
                nxt = next(
                    (d for d in (names.index(x) for x in ("ethnicity", "race", "sex")) if not u.na[d]), None
                )
                if nxt is None:
                    u.geo = 1
                else:
                    u.na[nxt] = True
                moved = changed = True
        # 6: k over every quasi-identifier, field by field right to left, then county, state, the record
        for step in [*order, "county", "state", "record"]:
            sizes: Counter[tuple[str, ...]] = Counter()
            for u in live():
                sizes[u.released(rules)] += u.n
            for u in live():
                if sizes[u.released(rules)] >= rules.k:
                    continue
                if step == "county" and u.geo == 0:
                    u.geo = 1
                elif step == "state" and u.geo == 1:
                    u.geo = 2
                elif step == "record":
                    u.dropped = True
                elif isinstance(step, int) and not u.na[step]:
                    u.na[step] = True
                else:
                    continue
                changed = True


def _location(units: list[Unit], rules: CdcRules) -> bool:
    """Rules #1 and #2 (see the module docstring); whether anything changed."""
    changed = False
    county: Counter[str] = Counter()
    for u in units:
        if u.geo == 0:
            county[u.region] += u.n
    for u in units:
        if u.geo == 0 and county[u.region] < rules.location_k:
            u.geo, changed = 1, True
    states: dict[str, list[Unit]] = {}
    for u in units:
        if u.geo <= 1:
            states.setdefault(u.region[:2], []).append(u)
    for members in states.values():
        total = sum(u.n for u in members)
        if total < rules.location_k:
            for u in members:
                u.geo = 2
            changed = True
            continue
        while 0 < sum(u.n for u in members if u.geo == 1) < rules.location_k:
            shown: Counter[str] = Counter()
            for u in members:
                if u.geo == 0:
                    shown[u.region] += u.n
            if not shown:
                break
            smallest = min(shown, key=lambda r: (shown[r], r))
            for u in members:
                if u.region == smallest:
                    u.geo = 1
            changed = True
    return changed


def _complementary(units: list[Unit], census: Mapping[str, set[str]]) -> bool:
    """Rule #10 (see the module docstring); whether anything changed."""
    changed = False
    while True:
        states: dict[str, list[Unit]] = {}
        for u in units:
            if u.geo <= 1:
                states.setdefault(u.region[:2], []).append(u)
        fixed = True
        for state, members in sorted(states.items()):
            shown: Counter[str] = Counter()
            for u in members:
                if u.geo == 0:
                    shown[u.region] += u.n
            if len(census.get(state, set())) - len(shown) != 1:
                continue
            if shown:
                smallest = min(shown, key=lambda r: (shown[r], r))
                for u in members:
                    if u.region == smallest:
                        u.geo = 1
            else:
                for u in members:
                    u.geo = 2
            fixed, changed = False, True
        if fixed:
            return changed
