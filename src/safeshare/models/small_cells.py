"""Small-cell suppression against a population table (Jiang et al. 2022 §4.3).

A class is released only when its population group (the population's people with the same
generalized quasi-identifiers) has at least ``min_size`` people (11 by default); the records of
the other classes are suppressed, within the suppression limit like k-anonymity's. A thin
adapter over :class:`safeshare.risk.small_cells.PopulationCells`; re-checked on the written
file by :mod:`safeshare.verify.small_cells`.

Monotone with and without suppression (as k-anonymity): generalizing merges classes and their
population groups; a merged class's population group contains each part's, so if any part
passed, the merged class passes, and the suppressed records never grow. Predictive tagging
applies.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from safeshare.core.evaluation import Classes
from safeshare.core.frequency import FrequencyTable
from safeshare.errors import InputError
from safeshare.hierarchy.hierarchy import Hierarchy
from safeshare.models.base import BoolArray, PrivacyModel
from safeshare.models.vocabulary import DEFAULT_MIN_SIZE
from safeshare.risk.small_cells import PopulationCells, read_population

if TYPE_CHECKING:
    from safeshare.data.schema import Schema

#: The paper's smallest publishable population group.


class SmallCells(PrivacyModel):
    """Every released class has a population group of at least ``min_size`` people.

    Parameters
    ----------
    population: a CSV file with a header line naming (at least) the quasi-identifiers.
    min_size: the smallest population group that may be released (default 11).
    delimiter: the population file's field separator.
    """

    name = "small-cells"
    monotone_with_suppression = True
    monotone_without_suppression = True

    def __init__(
        self, population: str | Path, min_size: int = DEFAULT_MIN_SIZE, delimiter: str = ","
    ) -> None:
        if isinstance(min_size, bool) or not isinstance(min_size, int) or min_size < 1:
            raise InputError(f"small-cells min_size: expected a positive integer, got {min_size!r}")
        self.population = Path(population)
        self.min_size = min_size
        self.delimiter = delimiter
        self._cells: list[tuple[FrequencyTable, PopulationCells]] = []
        self._schema: Schema | None = None

    def cells(self, table: FrequencyTable) -> PopulationCells:
        """The population on ``table``'s QIs (read once per table)."""
        for known, cells in self._cells:
            if known is table:
                return cells
        frame = read_population(self.population, table.qi_names, self.delimiter)
        cells = PopulationCells(
            table, frame, f"population file {self.population}", self._full_hierarchies(table, frame)
        )
        self._cells = [(table, cells)]
        return cells

    def bind(self, schema: Schema) -> SmallCells:
        """A copy that knows the schema's hierarchy specifications (to read them whole)."""
        bound = copy.copy(self)
        bound._schema = schema
        bound._cells = []
        return bound

    def _full_hierarchies(self, table: FrequencyTable, frame: pd.DataFrame) -> list[Hierarchy] | None:
        """The QIs' hierarchies over the sample's and the population's values (``None``: the table's)."""
        if self._schema is None:
            return None
        out = []
        for name, own in zip(table.qi_names, table.hierarchies, strict=True):
            spec = self._schema.hierarchy_spec(name)
            if isinstance(spec, Hierarchy):
                out.append(spec)
            else:
                values = sorted(set(own.leaves) | set(frame[name].astype(str)))
                out.append(spec.build(values, name=name))
        return out

    def validate(self, table: FrequencyTable) -> None:
        self.cells(table)

    def acceptable(self, classes: Classes, table: FrequencyTable) -> BoolArray:
        return self.cells(table).class_population_sizes(classes) >= self.min_size

    def achieved(self, classes: Classes, table: FrequencyTable, released: BoolArray) -> dict[str, Any]:
        sizes = self.cells(table).class_population_sizes(classes)[released & (classes.sizes > 0)]
        return {"smallest_population_group": int(sizes.min()) if sizes.size else None}

    def params(self) -> dict[str, Any]:
        return {"population": str(self.population), "min_size": self.min_size, "delimiter": self.delimiter}

    def verification_params(self, table: FrequencyTable) -> dict[str, Any]:
        full = self.cells(table).hierarchies
        rows = {q: [list(r) for r in h.rows] for q, h in zip(table.qi_names, full, strict=True)}
        return {**self.params(), "hierarchies": rows}
