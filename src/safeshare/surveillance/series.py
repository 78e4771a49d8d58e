"""A release's place in its series: what earlier releases published, and how a conflict is resolved
(issue 37; the check itself is :mod:`safeshare.verify.series`).

Every ``surveil release`` of a series is checked against all earlier ones before it is published:
the publications of the earlier releases come from the series ledger (``series.jsonl``, kept and
hash-chained by :mod:`safeshare.workflows.series_ledger`), the public totals (a county's daily case
count, published by others) from ``--public-totals``, and the new files are re-read from disk by the
verifier. This module states, for the verifier, the hierarchies as plain data
(:func:`series_hierarchy`) and the levels a file's labels may take (:func:`admissible`), reads the
public totals as publications (:func:`public_totals`), and chooses the remedy of each finding when
the release is to be suppressed further rather than refused (:func:`remedy`):

* ``refuse`` (the default): the release is refused, the revealed cell named;
* ``suppress``: a period that re-publishes an earlier one with a revealing difference (late
  records, a changed policy) keeps the earlier file, byte for byte (``frozen``: its new records are
  held back); a period whose generalization intersects an earlier one's is coarsened to their join;
  a period that is a *part* of an earlier or public total withholds more of its cells in the
  revealing cell's region (complementary suppression) until the hidden remainder is at least ``k``;
  a period that holds earlier periods (a week over published days) is held back;
* ``coarsen``: as ``suppress``, but a part of a total is coarsened instead (one step up the lattice
  at a time, the step that suppresses fewest records in the revealing region, ties by Prec) -- the
  report then says which weeks the series had to coarsen.

Every remedy only removes detail or records, so the loop ends; the verifier decides each round.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np

from safeshare.config.vocabulary import SMALL_CELL
from safeshare.core.lattice import Node
from safeshare.errors import InputError, VerificationError
from safeshare.surveillance.inputs import CaseSeries, Population
from safeshare.surveillance.policies import PolicySpace
from safeshare.verify.series import ANY, Labels, Publication, SeriesFinding, SeriesHierarchy

Conflict = Literal["refuse", "suppress", "coarsen"]
CONFLICTS: tuple[Conflict, ...] = ("refuse", "suppress", "coarsen")


class SeriesConflict(VerificationError):
    """The release would reveal, with the earlier releases of its series, a cell no file shows.
    Exit status 1; nothing is published."""


def check_conflict(on_conflict: str) -> Conflict:
    """``on_conflict`` as a :data:`Conflict`; ``InputError`` for anything else."""
    for choice in CONFLICTS:
        if on_conflict == choice:
            return choice
    raise InputError(f"--on-conflict: one of {', '.join(CONFLICTS)}, got {on_conflict!r}")


def series_hierarchy(population: Population) -> SeriesHierarchy:
    """The region (level 0 the region itself, level 1 its state: the first two characters of a
    county FIPS code) and the policy space's dimensions, each level as leaf -> label."""
    space = population.space
    regions = {r: r for r in population.regions}
    states = {r: r[:2] for r in population.regions}
    levels: list[tuple[dict[str, str], ...]] = [(regions, states)]
    for dim in space.dimensions:
        levels.append(tuple(dict(zip(dim.leaves, lv.groups, strict=True)) for lv in dim.levels))
    return SeriesHierarchy(("region", *space.names), tuple(levels))


def admissible(node: Node, fields: bool = False) -> list[list[int]]:
    """The levels a published file's values may take: the policy's; with field suppression
    (``fields``), a region may also be its state (a county suppressed) and any field NA."""
    return [[0, 1] if fields else [0], *([int(level)] for level in node)]


def public_totals(series: dict[str, CaseSeries], population: Population, name: str) -> list[Publication]:
    """The case counts of ``series`` (``--public-totals``) as publications: one per period, a count
    per region listed (a count of 0 included), every dimension but the region at "any value"."""
    top = tuple([0, *(dim.height + 1 for dim in population.space.dimensions)])
    by_period: dict[tuple[int, int], dict[Labels, int]] = {}
    regions: dict[tuple[int, int], set[str]] = {}
    width = len(population.space.dimensions)
    for region, s in series.items():
        if region not in population.regions:
            raise InputError(f"{name}: region {region!r} is not in the population table")
        step = s.step_days
        for day, n in zip(s.dates.astype("datetime64[D]").astype(np.int64), s.cases, strict=True):
            span = (int(day), int(day) + step - 1)
            regions.setdefault(span, set()).add(region)
            if n:
                by_period.setdefault(span, {})[(region, *([ANY] * width))] = int(n)
    out = []
    for span in sorted(regions):
        pub = Publication(
            f"the public total of {_days(span)} ({name})",
            span[0],
            span[1],
            {top: by_period.get(span, {})},
            frozenset(regions[span]),
            new=False,
            external=True,
        )
        out.append(pub)
    return out


def _days(span: tuple[int, int]) -> str:
    start = np.datetime64(span[0], "D")
    return str(start) if span[0] == span[1] else f"{start} .. {np.datetime64(span[1], 'D')}"


@dataclass(frozen=True)
class EarlierFile:
    """A file of an earlier release that a period can be frozen to (its bytes re-published)."""

    path: Path
    file: str
    sha256: str
    policy: str
    release: int


@dataclass(frozen=True)
class Published:
    """A publication of this release as the ledger records it: the file, its policy, how its labels
    read (the levels each value may take, the token of a suppressed field)."""

    publication: Publication
    file: str
    policy: str
    admissible: list[list[int]]
    na: str | None = None


@dataclass
class SeriesContext:
    """What a release needs of its series: the earlier publications and public totals, the earlier
    files by period (latest last), the conflict rule, and the function that stages the ledger."""

    history: list[Publication]
    earlier: dict[tuple[int, int], list[EarlierFile]]
    on_conflict: Conflict = "refuse"
    stage_ledger: Callable[[Path, list[Published]], None] | None = None
    #: this release's number in the series (1 for the first)
    seq: int = 1
    #: the threshold of the differences (the release's k)
    k: int = SMALL_CELL


@dataclass
class PeriodState:
    """How a period is released this round: its policy, the cells withheld, frozen, held back."""

    label: str
    span: tuple[int, int]
    scheduled: Node | None
    node: Node | None
    withheld: set[Labels] = field(default_factory=set)
    frozen: EarlierFile | None = None
    held: bool = False
    actions: list[str] = field(default_factory=list)


def conflict_message(findings: list[SeriesFinding], rounds: int = 0) -> str:
    head = findings[0].message
    more = f" (and {len(findings) - 1} more finding(s))" if len(findings) > 1 else ""
    return (
        f"the release would reveal, with the earlier releases of its series, {head}{more}; "
        "use --on-conflict suppress or coarsen to withhold it"
    )


def remedy(
    state: PeriodState,
    finding: SeriesFinding,
    context: SeriesContext,
    space: PolicySpace,
    coarsen_step: Callable[[PeriodState, SeriesFinding], Node | None],
    cells_in: Callable[[PeriodState, SeriesFinding], list[tuple[Labels, int]]],
) -> bool:
    """Apply the remedy of ``finding`` to its period (module docstring); False when none is left."""
    if state.held:
        return False
    mode = context.on_conflict
    earlier = context.earlier.get(state.span, [])
    if finding.kind == "windows" or (finding.kind == "difference" and finding.role == "total"):
        state.held = True
        state.actions.append(f"held back ({finding.kind} with {', '.join(finding.others)})")
        return True
    if finding.role == "same" and state.frozen is None and earlier:
        state.frozen = earlier[-1]
        state.actions.append(f"frozen to {earlier[-1].file} of release {earlier[-1].release}")
        return True
    if finding.kind == "intersection" and finding.levels is not None and state.node is not None:
        target = tuple(max(a, b) for a, b in zip(state.node, finding.levels[1:], strict=True))
        if target != tuple(state.node):
            state.actions.append(
                f"coarsened {space.format(state.node)} -> {space.format(target)} (intersection)"
            )
            state.node = target
            state.frozen = None
            return True
    if finding.role == "part" and state.node is not None and state.frozen is None:
        if mode == "suppress":
            # withhold the fewest cells (smallest first) that raise the hidden remainder to k
            need = context.k - finding.value
            chosen, got = [], 0
            for labels, n in cells_in(state, finding):
                if labels not in state.withheld and got < need:
                    chosen.append(labels)
                    got += n
            if chosen and got >= need:
                state.withheld.update(chosen)
                state.actions.append(f"withheld {got} record(s) in {len(chosen)} cell(s) (complementary)")
                return True
        step = coarsen_step(state, finding)
        if step is not None:
            state.actions.append(
                f"coarsened {space.format(state.node)} -> {space.format(step)} (part of a total)"
            )
            state.node = step
            state.withheld.clear()
            return True
    state.held = True
    state.frozen = None
    state.actions.append(f"held back ({finding.kind} with {', '.join(finding.others)})")
    return True
