"""Release policies as nodes of the core generalization lattice (paper: Table 1, Fig. 2, Fig. 3 key).

A policy generalizes each demographic dimension (age, race, sex, ethnicity) to
one level of its hierarchy. Level 0 is the finest; each further level merges
groups of the previous one, and a dimension's last level may suppress it
(one group for everybody). A policy is therefore a node of
:class:`~safeshare.core.lattice.Lattice` with one QI per dimension, and
"policy ``a`` is below policy ``b``" (``b`` generalizes ``a``) is the lattice's
order. Each level has a one-character code; a policy's code is the characters
of its levels in dimension order, e.g. ``1C*e`` (5-year ages, race
white-or-black/other, sex suppressed, ethnicity shared).

Default hierarchies: the paper's (Fig. 2 and its code, ``--hierarchies paper``):

=========  ====================================================================
age        ``0`` 1-year, ``1`` 5-year to 89 then 90+, ``2`` 15-year to 89 then 90+,
           ``3`` 0-29, 30-59, 60-89, 90+, ``4`` 0-59, 60+, ``*`` suppressed
           (leaves 0 .. 100, 100 meaning "100 and over")
race       ``A`` all seven (white, black, aian, asian, nhpi, other, multiple),
           ``B`` white/black/asian/other, ``C`` white-or-black/other, ``*``
sex        ``s`` female/male, ``*``
ethnicity  ``e`` hispanic/non-hispanic, ``*``
=========  ====================================================================

so 6 x 4 x 2 x 2 = 96 policies. The static k-anonymous comparison policy of the paper's Table 2 (ages
0-17, 18-49, 50-64, 65+, the rest in full) merges races ``other`` and ``multiple`` ("Multiple/Other",
as CDC's public-use data does): :attr:`PolicySpace.static_groups`.

The hierarchies of issue 10 stay available by name, ``--hierarchies ages-to-100``: 5-year bands
continue to 90-94, 95-99, 100+ (the coarser levels are the paper's), and the static policy shares all
seven races. User hierarchies are built with
:class:`Dimension` (or read from a mapping by :func:`space_from_mapping`);
every level must coarsen the previous one, which is what makes the PK risk
monotone along the lattice (see :mod:`.search`).

The simulation works on *fine bins*: one per combination of level-0 labels,
numbered in mixed radix (dimension order). :meth:`PolicySpace.grouping` maps
every fine bin to its group under a policy.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from safeshare.core.lattice import Lattice, Node
from safeshare.errors import ConfigError, InputError

SUPPRESSED = "*"

IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class Level:
    """One generalization level: a code character and the group label of each leaf."""

    code: str
    groups: tuple[str, ...]  # group label per leaf, in leaf order

    @cached_property
    def group_index(self) -> IntArray:
        """Dense group number (order of first appearance) of each leaf."""
        seen: dict[str, int] = {}
        return np.array([seen.setdefault(g, len(seen)) for g in self.groups], dtype=np.int64)

    @property
    def n_groups(self) -> int:
        return len(set(self.groups))


@dataclass(frozen=True)
class Dimension:
    """A demographic dimension: its leaf labels and its levels, finest first."""

    name: str
    leaves: tuple[str, ...]
    levels: tuple[Level, ...]
    _leaf_index: dict[str, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        where = f"dimension {self.name!r}"
        if not self.leaves:
            raise ConfigError(f"{where}: no leaf labels")
        if len(set(self.leaves)) != len(self.leaves):
            raise ConfigError(f"{where}: duplicate leaf labels")
        if not self.levels:
            raise ConfigError(f"{where}: no levels")
        _text(self.name, "dimension name")
        for label in (*self.leaves, *(g for lv in self.levels for g in (lv.code, *lv.groups))):
            _text(label, where)
        codes = [lv.code for lv in self.levels]
        for code in codes:
            if len(code) != 1 or code.isspace():
                raise ConfigError(f"{where}: level code {code!r} must be one non-blank character")
        if len(set(codes)) != len(codes):
            raise ConfigError(f"{where}: duplicate level codes {codes}")
        for i, lv in enumerate(self.levels):
            if len(lv.groups) != len(self.leaves):
                raise ConfigError(
                    f"{where}: level {lv.code!r} labels {len(lv.groups)} leaves, not {len(self.leaves)}"
                )
            if i and not _coarsens(self.levels[i - 1], lv):
                raise ConfigError(
                    f"{where}: level {lv.code!r} splits a group of level {self.levels[i - 1].code!r}; "
                    "each level must merge groups of the previous one"
                )
        object.__setattr__(self, "_leaf_index", {label: i for i, label in enumerate(self.leaves)})

    @property
    def height(self) -> int:
        return len(self.levels) - 1

    def leaf_index(self, label: str) -> int | None:
        return self._leaf_index.get(label)

    def level_of_code(self, code: str) -> int | None:
        for i, lv in enumerate(self.levels):
            if lv.code == code:
                return i
        return None


def _coarsens(finer: Level, coarser: Level) -> bool:
    """Whether every group of ``finer`` lies inside one group of ``coarser``."""
    image: dict[str, str] = {}
    return all(image.setdefault(f, c) == c for f, c in zip(finer.groups, coarser.groups, strict=True))


class PolicySpace:
    """The dimensions, their lattice, policy codes and the fine-bin grouping of each policy."""

    def __init__(
        self,
        dimensions: Sequence[Dimension],
        static_groups: Mapping[str, Sequence[str]] | None = None,
        name: str = "custom",
    ) -> None:
        if not dimensions:
            raise ConfigError("a policy space needs at least one dimension")
        names = [d.name for d in dimensions]
        if len(set(names)) != len(names):
            raise ConfigError(f"duplicate dimension names {names}")
        self.dimensions: tuple[Dimension, ...] = tuple(dimensions)
        self.name = name
        #: per dimension, the group label of each leaf under the static k-anonymous policy (Table 2);
        #: dimensions not listed are shared in full (their leaves), ``age`` in the paper's four bands
        self.static_groups: dict[str, tuple[str, ...]] = {}
        for dim_name, groups in (static_groups or {}).items():
            if dim_name not in names:
                raise ConfigError(f"static policy: {dim_name!r} is not a dimension ({', '.join(names)})")
            dim = self.dimensions[names.index(dim_name)]
            if len(groups) != len(dim.leaves):
                raise ConfigError(
                    f"static policy: {dim_name!r} needs a group for each of its {len(dim.leaves)} leaves"
                )
            self.static_groups[dim_name] = tuple(_text(g, f"static policy {dim_name!r}") for g in groups)
        self.lattice = Lattice([d.height for d in dimensions], names)
        self._groupings: dict[Node, tuple[IntArray, int]] = {}

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(d.name for d in self.dimensions)

    @property
    def shape(self) -> tuple[int, ...]:
        """Number of leaves per dimension (the fine-bin array's shape)."""
        return tuple(len(d.leaves) for d in self.dimensions)

    @property
    def n_bins(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    def policies(self) -> list[Node]:
        """Every policy (lattice node), in lexicographic order."""
        return list(self.lattice.nodes())

    def format(self, node: Node) -> str:
        """The policy code of ``node`` (one character per dimension)."""
        node = self.lattice.validate(node)
        return "".join(d.levels[lv].code for d, lv in zip(self.dimensions, node, strict=True))

    def parse(self, code: str) -> Node:
        """The node of a policy code; :class:`InputError` naming the bad character otherwise."""
        if len(code) != len(self.dimensions):
            raise InputError(
                f"policy code {code!r} must have {len(self.dimensions)} characters ({', '.join(self.names)})"
            )
        out = []
        for pos, (char, dim) in enumerate(zip(code, self.dimensions, strict=True)):
            lv = dim.level_of_code(char)
            if lv is None:
                allowed = "".join(x.code for x in dim.levels)
                raise InputError(
                    f"policy code {code!r}: character {pos + 1} {char!r} "
                    f"is not a {dim.name} level ({allowed})"
                )
            out.append(lv)
        return tuple(out)

    def bin_index(self, leaf_indices: Sequence[IntArray]) -> IntArray:
        """Fine-bin number of each record from its per-dimension leaf indices."""
        out = np.zeros_like(np.asarray(leaf_indices[0], dtype=np.int64))
        for idx, size in zip(leaf_indices, self.shape, strict=True):
            out = out * size + np.asarray(idx, dtype=np.int64)
        return out

    def level_groups(self, dim: int, level: int) -> IntArray:
        """Group number of each leaf of dimension ``dim`` at ``level``."""
        return self.dimensions[dim].levels[level].group_index

    def grouping(self, node: Node) -> tuple[IntArray, int]:
        """``(group_of_bin, n_groups)``: the group of every fine bin under policy ``node``."""
        hit = self._groupings.get(node)
        if hit is None:
            node = self.lattice.validate(node)
            hit = self.grouping_from_levels(
                [d.levels[lv].group_index for d, lv in zip(self.dimensions, node, strict=True)]
            )
            self._groupings[node] = hit
        return hit

    def grouping_from_levels(self, per_dim: Sequence[IntArray]) -> tuple[IntArray, int]:
        """The fine-bin grouping of arbitrary per-dimension leaf groupings (e.g. a static policy
        whose age bands are no level of the hierarchy)."""
        grids = np.meshgrid(*[np.asarray(g, dtype=np.int64) for g in per_dim], indexing="ij")
        sizes = [int(g.max()) + 1 for g in per_dim]
        gid = np.zeros(self.shape, dtype=np.int64)
        for grid, size in zip(grids, sizes, strict=True):
            gid = gid * size + grid
        flat = gid.ravel()
        _, dense = np.unique(flat, return_inverse=True)
        dense = dense.astype(np.int64).ravel()
        return dense, int(dense.max()) + 1

    def precision_loss(self, node: Node) -> float:
        """Sweeney's Prec: mean over dimensions (with more than one level) of level / height.

        0 for the finest policy, 1 for the most general; the information loss used to
        choose among the minimal acceptable policies (monotone along the lattice)."""
        parts = [lv / d.height for d, lv in zip(self.dimensions, node, strict=True) if d.height > 0]
        return float(sum(parts) / len(parts)) if parts else 0.0


DEFAULT_RACES = ("white", "black", "aian", "asian", "nhpi", "other", "multiple")
DEFAULT_SEXES = ("female", "male")
DEFAULT_ETHNICITIES = ("hispanic", "non-hispanic")
MAX_AGE = 100


#: The paper's top age band: every level coarser than single years ends with ``90+``.
PAPER_OPEN_FROM = 90


def age_band_label(age: int, width: int, max_age: int = MAX_AGE, open_from: int | None = None) -> str:
    """``lo-hi`` band of ``age`` for a band width, ``lo+`` for the band reaching ``max_age``; with
    ``open_from``, bands of width > 1 starting at or after it merge into ``{open_from}+``."""
    lo = (age // width) * width
    hi = lo + width - 1
    if width == 1:
        return str(age) if age < max_age else f"{max_age}+"
    if open_from is not None and lo >= open_from:
        return f"{open_from}+"
    return f"{lo}+" if hi >= max_age else f"{lo}-{hi}"


def age_dimension(
    widths: Sequence[int] = (1, 5, 15, 30, 60), max_age: int = MAX_AGE, open_from: int | None = None
) -> Dimension:
    """Ages ``0 .. max_age`` (the last meaning "and over") in bands of the given widths, then suppressed;
    with ``open_from`` (the paper's 90), every level coarser than single years ends with one open band.

    Each width must be a multiple of the previous one so that every level coarsens the last (and an
    ``open_from`` that splits a band is refused the same way)."""
    for a, b in pairwise(widths):
        if b % a:
            raise ConfigError(f"age band widths {list(widths)}: {b} is not a multiple of {a}")
    if open_from is not None:
        if not 0 < open_from <= max_age:
            raise ConfigError(f"open_from {open_from}: an age in [1, {max_age}] is required")
        split = [w for w in widths if w > 1 and open_from % w and (open_from // w + 1) * w <= max_age]
        if split:  # a band would straddle open_from: its label would hide ages of the open band
            raise ConfigError(
                f"open_from {open_from} splits a band of width {split[0]}: it must be a multiple of it"
            )
    leaves = tuple(str(a) for a in range(max_age + 1))
    levels = [
        Level(str(i), tuple(age_band_label(a, w, max_age, open_from) for a in range(max_age + 1)))
        for i, w in enumerate(widths)
    ]
    levels.append(Level(SUPPRESSED, (SUPPRESSED,) * len(leaves)))
    return Dimension("age", leaves, tuple(levels))


def _race_sex_ethnicity() -> list[Dimension]:
    """Race (all seven, white/black/asian/other, white-or-black/other, suppressed), sex, ethnicity."""
    race_b = {"white": "white", "black": "black", "asian": "asian"}
    race_c = {"white": "white-or-black", "black": "white-or-black"}
    race = Dimension(
        "race",
        DEFAULT_RACES,
        (
            Level("A", DEFAULT_RACES),
            Level("B", tuple(race_b.get(r, "other") for r in DEFAULT_RACES)),
            Level("C", tuple(race_c.get(r, "other") for r in DEFAULT_RACES)),
            Level(SUPPRESSED, (SUPPRESSED,) * len(DEFAULT_RACES)),
        ),
    )
    sex = Dimension("sex", DEFAULT_SEXES, (Level("s", DEFAULT_SEXES), Level(SUPPRESSED, (SUPPRESSED,) * 2)))
    eth = Dimension(
        "ethnicity",
        DEFAULT_ETHNICITIES,
        (Level("e", DEFAULT_ETHNICITIES), Level(SUPPRESSED, (SUPPRESSED,) * 2)),
    )
    return [race, sex, eth]


#: The static policy's races of the paper and of CDC's public-use data: "other" and "multiple" merged.
PAPER_STATIC_RACES = tuple("other/multiple" if r in ("other", "multiple") else r for r in DEFAULT_RACES)


def paper_space() -> PolicySpace:
    """The paper's 96 policies (Fig. 2 and its code): age 6 levels ending at 90+, race 4, sex 2,
    ethnicity 2; the static policy merges races other and multiple (``--hierarchies paper``)."""
    return PolicySpace(
        [age_dimension(open_from=PAPER_OPEN_FROM), *_race_sex_ethnicity()],
        static_groups={"race": PAPER_STATIC_RACES},
        name="paper",
    )


def ages_to_100_space() -> PolicySpace:
    """Issue 10's hierarchies (``--hierarchies ages-to-100``): 5-year bands to 95-99 and 100+; the
    static policy shares all seven races."""
    return PolicySpace([age_dimension(), *_race_sex_ethnicity()], name="ages-to-100")


#: The policy spaces known by name (``--hierarchies NAME``); the first is the default.
NAMED_SPACES = {"paper": paper_space, "ages-to-100": ages_to_100_space}


def default_space() -> PolicySpace:
    """The default policy space: the paper's (:func:`paper_space`)."""
    return paper_space()


#: Characters refused in names, labels and codes: they would reach the released files (C0 and C1
#: controls such as NUL, a line break or ESC, and the Unicode line and paragraph separators).
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def _text(value: object, where: str) -> str:
    """``value`` as a label, refusing control characters (``where`` names the key path)."""
    text = str(value)
    hit = _CONTROL.search(text)
    if hit is not None:
        raise ConfigError(f"{where}: {text!r} holds the control character U+{ord(hit.group()):04X}")
    return text


def space_from_mapping(spec: Mapping[str, Any]) -> PolicySpace:
    """A user policy space from a parsed YAML/JSON mapping::

        dimensions:
          - name: race
            leaves: [white, black, other]
            levels:                       # finest first; groups: label -> leaves
              - {code: A}                 # no groups: every leaf is its own group
              - {code: B, groups: {white: [white], nonwhite: [black, other]}}
              - {code: "*", suppress: true}

    An age dimension may instead give its band widths (each a multiple of the previous), as the
    default one: ``{name: age, age_widths: [1, 10, 20], max_age: 90}`` (codes ``0``, ``1``, ... and
    ``*``; leaves ``0`` .. ``max_age``, default 100, the last meaning "and over").

    Errors name the key path (``dimensions[1].levels[2].groups``).
    """
    dims_spec = spec.get("dimensions")
    if not isinstance(dims_spec, list) or not dims_spec:
        raise ConfigError("dimensions: a non-empty list is required")
    dims = []
    for i, d in enumerate(dims_spec):
        path = f"dimensions[{i}]"
        if not isinstance(d, Mapping):
            raise ConfigError(f"{path}: a mapping is required")
        name, leaves, levels_spec = d.get("name"), d.get("leaves"), d.get("levels")
        if not isinstance(name, str) or not name:
            raise ConfigError(f"{path}.name: a non-empty string is required")
        _text(name, f"{path}.name")
        if "age_widths" in d:
            widths, max_age, open_from = d["age_widths"], d.get("max_age", MAX_AGE), d.get("open_from")
            if (
                not isinstance(widths, list)
                or not widths
                or not all(isinstance(w, int) and not isinstance(w, bool) and w >= 1 for w in widths)
            ):
                raise ConfigError(f"{path}.age_widths: a non-empty list of whole numbers >= 1 is required")
            if not isinstance(max_age, int) or isinstance(max_age, bool) or max_age < 1:
                raise ConfigError(f"{path}.max_age: a whole number >= 1 is required")
            if open_from is not None and (not isinstance(open_from, int) or isinstance(open_from, bool)):
                raise ConfigError(f"{path}.open_from: a whole number is required")
            try:
                age = age_dimension(widths, max_age, open_from)
            except ConfigError as exc:
                raise ConfigError(f"{path}.age_widths: {exc}") from None
            dims.append(Dimension(name, age.leaves, age.levels))
            continue
        if not isinstance(leaves, list) or not leaves:
            raise ConfigError(f"{path}.leaves: a non-empty list is required")
        leaves_t = tuple(_text(x, f"{path}.leaves[{i}]") for i, x in enumerate(leaves))
        if not isinstance(levels_spec, list) or not levels_spec:
            raise ConfigError(f"{path}.levels: a non-empty list is required")
        levels = []
        for j, lv in enumerate(levels_spec):
            lpath = f"{path}.levels[{j}]"
            if not isinstance(lv, Mapping) or not isinstance(lv.get("code"), str):
                raise ConfigError(f"{lpath}.code: a one-character string is required")
            _text(lv["code"], f"{lpath}.code")
            if lv.get("suppress"):
                levels.append(Level(lv["code"], (SUPPRESSED,) * len(leaves_t)))
                continue
            groups = lv.get("groups")
            if groups is None:
                levels.append(Level(lv["code"], leaves_t))
                continue
            if not isinstance(groups, Mapping):
                raise ConfigError(f"{lpath}.groups: a mapping label -> leaves is required")
            of_leaf: dict[str, str] = {}
            for label, members in groups.items():
                _text(label, f"{lpath}.groups")
                for m in members if isinstance(members, list) else [members]:
                    if str(m) not in leaves_t:
                        raise ConfigError(f"{lpath}.groups.{label}: {m!r} is not a leaf of {name}")
                    if str(m) in of_leaf:
                        raise ConfigError(f"{lpath}.groups.{label}: {m!r} is already in {of_leaf[str(m)]!r}")
                    of_leaf[str(m)] = str(label)
            missing = [x for x in leaves_t if x not in of_leaf]
            if missing:
                raise ConfigError(f"{lpath}.groups: leaves {missing} are in no group")
            levels.append(Level(lv["code"], tuple(of_leaf[x] for x in leaves_t)))
        try:
            dims.append(Dimension(name, leaves_t, tuple(levels)))
        except ConfigError as exc:
            raise ConfigError(f"{path}: {exc}") from None
    return PolicySpace(dims)


def load_space(path: Path | str | None) -> PolicySpace:
    """The policy space named ``path`` (:data:`NAMED_SPACES`: ``paper``, ``ages-to-100``), or of a YAML
    or JSON file (:func:`space_from_mapping`; ``./paper`` for a file of that name); the default (the
    paper's) for None.

    The file is read by the configuration's safe loader (:func:`safeshare.config_checks.read_yaml`: no
    aliases, no duplicate keys, a size limit). Errors are one line naming the file and the key path."""
    if path is None:
        return default_space()
    if isinstance(path, str) and path in NAMED_SPACES:
        return NAMED_SPACES[path]()
    from safeshare.config_checks import read_yaml

    spec = read_yaml(Path(path), "hierarchies")
    if not isinstance(spec, Mapping):
        raise ConfigError(f"{path}: a mapping with 'dimensions' is required")
    try:
        return space_from_mapping(spec)
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from None
