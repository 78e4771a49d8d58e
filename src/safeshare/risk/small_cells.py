"""Population group sizes of a sample's classes: the measure behind small-cell suppression.

Jiang et al. 2022 §4.3: a record is released only when its *population* group, the people of
the population with the same generalized quasi-identifiers, holds at least 11 people. Given the
population as a table of QI values (a census extract, a registry), :class:`PopulationCells`
answers, at any lattice node, the population size of every equivalence class of the sample
(0 when the population has nobody in it). The predicate is
:class:`safeshare.models.small_cells.SmallCells`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pandas as pd

from safeshare.core.evaluation import Classes
from safeshare.core.frequency import FrequencyTable
from safeshare.data.source import TableSource, check_unique_names, raw_header
from safeshare.errors import DataError, InputError
from safeshare.hierarchy.hierarchy import Hierarchy


def read_population(path: Path, columns: tuple[str, ...], delimiter: str = ",") -> pd.DataFrame:
    """The population file's ``columns`` as text (a header line naming them is required).

    Duplicate column names, also after stripping and case-folding (``sex`` and ``Sex``), are
    refused as in every input (:func:`~safeshare.data.source.check_unique_names`): pandas
    would use the first (or rename the second ``sex.1``) silently.
    """
    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False, sep=delimiter)
    except FileNotFoundError:
        raise InputError(f"population file {path}: not found") from None
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise DataError(f"population file {path}: cannot be read as CSV ({exc})") from None
    check_unique_names(raw_header(TableSource(path, "csv", delimiter)), f"population file {path}")
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise DataError(
            f"population file {path}: no column {missing[0]!r} (a header naming the QIs is required)"
        )
    if len(frame) == 0:
        raise DataError(f"population file {path}: no records")
    return frame[list(columns)]


class PopulationCells:
    """The population's distinct QI rows with counts, coded at every level as the table's labels.

    ``hierarchies`` are the QIs' hierarchies over *all* their values (a hierarchy file read
    whole, a builder run on the sample's and the population's values); the table's own may be
    restricted to the sample's values, and a population value the sample lacks still belongs
    to a sample class once generalized (age 31 in the "30s"). Both must generalize the sample's
    values identically (refused otherwise: a builder whose groups depend on the values it sees).
    A population group whose label no sample record has is coded -1 (no class matches it).
    """

    def __init__(
        self,
        table: FrequencyTable,
        population: pd.DataFrame,
        where: str = "population",
        hierarchies: Sequence[Hierarchy] | None = None,
    ) -> None:
        names = list(table.qi_names)
        grouped = population.astype(str).groupby(names, sort=False).size().reset_index(name="_n")
        self.counts = grouped["_n"].to_numpy(dtype=np.int64)
        self.table = table
        full_list = list(hierarchies) if hierarchies is not None else list(table.hierarchies)
        #: The hierarchies the population was generalized with (for the independent re-check).
        self.hierarchies = tuple(full_list)
        self.level_codes: list[list[npt.NDArray[np.int32]]] = []
        for name, own, full in zip(names, table.hierarchies, full_list, strict=True):
            values = grouped[name].tolist()
            known = full.leaf_index
            missing = [v for v in values if v not in known]
            if missing:
                raise DataError(f"{where}: value {missing[0]!r} of column {name!r} is not in its hierarchy")
            if full.height != own.height:
                raise InputError(
                    f"{where}: the hierarchy of {name!r} has a different height for the population"
                )
            per_level = []
            for level in range(own.height + 1):
                wide, narrow = full.mapping(level), own.mapping(level)
                if any(wide[v] != narrow[v] for v in own.leaves):
                    raise InputError(
                        f"{where}: the hierarchy of {name!r} generalizes differently when built on the "
                        "population's values; give it as a hierarchy file"
                    )
                index = {label: i for i, label in enumerate(own.labels(level))}
                per_level.append(np.array([index.get(wide[v], -1) for v in values], dtype=np.int32))
            self.level_codes.append(per_level)

    def class_population_sizes(self, classes: Classes) -> npt.NDArray[np.int64]:
        """Population group size of every class slot of ``classes`` at ``classes.node``."""
        table = self.table
        q = len(table.qi_names)
        gen_pop = np.empty((self.counts.shape[0], q), dtype=np.int32)
        gen_tab = np.empty((table.n_rows, q), dtype=np.int32)
        for j, (h, level) in enumerate(zip(table.hierarchies, classes.node, strict=True)):
            gen_pop[:, j] = self.level_codes[j][level]
            gen_tab[:, j] = h.leaf_codes(level)[table.codes[:, j]]
        _, inverse = np.unique(np.vstack([gen_pop, gen_tab]), axis=0, return_inverse=True)
        inverse = inverse.ravel()
        p = gen_pop.shape[0]
        per_key = np.bincount(inverse[:p], weights=self.counts, minlength=int(inverse.max()) + 1)
        out = np.zeros(classes.sizes.shape[0], dtype=np.int64)
        out[classes.row_class] = per_key[inverse[p:]].astype(np.int64)
        return out
