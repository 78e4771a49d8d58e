"""What a search will cost, before it runs: :func:`search_estimate`.

``safeshare anonymize`` prints the lattice size and a cost estimate before it searches; the
browser workbench shows the same figures on its Privacy screen, before the custodian starts a
run. The estimate builds the frequency table (one ``GROUP BY`` through the engine), times the
classes of one mid-lattice node and multiplies by the lattice size: the cost if every node
were checked (an upper bound for OLA, whose predictive tagging checks a small fraction).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import Any

from safeshare.core.evaluation import Evaluator
from safeshare.core.tabulate import build_frequency_table
from safeshare.data.engines.base import Engine
from safeshare.workflows.anonymizer import Anonymizer

#: How each algorithm relates to the "every node" bound.
HOW = {
    "exhaustive": "every node is checked",
    "anytime": "the anytime search checks far fewer and stops at its budget",
    "auto": "OLA, or above exact_max_nodes the anytime search, checks far fewer",
    "epsilon-safe": "epsilon-safe scores every node of the sample's lattice",
}


@dataclass(frozen=True)
class SearchEstimate:
    """The lattice and the cost of checking its nodes."""

    quasi_identifiers: tuple[str, ...]
    heights: tuple[int, ...]
    lattice_size: int
    records: int
    distinct_rows: int
    #: wall-clock seconds for the classes of one mid-lattice node
    seconds_per_node: float
    #: ``seconds_per_node * lattice_size``: every node checked
    worst_seconds: float
    algorithm: str
    how: str

    def to_dict(self) -> dict[str, Any]:
        doc = asdict(self)
        doc["quasi_identifiers"] = list(self.quasi_identifiers)
        doc["heights"] = list(self.heights)
        return doc

    def sentence(self) -> str:
        """The CLI's announcement."""
        return (
            f"lattice of {self.lattice_size:,} nodes ({len(self.heights)} quasi-identifiers, "
            f"{self.distinct_rows:,} distinct rows); about {self.seconds_per_node * 1e3:.2g} ms a node, "
            f"at most ~{self.worst_seconds:.3g} s ({self.how})"
        )


def search_estimate(anonymizer: Anonymizer, engine: Engine) -> SearchEstimate:
    """The :class:`SearchEstimate` of ``anonymizer``'s search on the data ``engine`` reads."""
    table, _ = build_frequency_table(engine, anonymizer.schema, anonymizer.criterion.sensitive_columns)
    anonymizer.criterion.validate(table)
    evaluator = Evaluator(table)
    lattice = table.lattice
    t0 = time.perf_counter()
    evaluator.classes(tuple(h // 2 for h in lattice.heights))
    per_node = time.perf_counter() - t0
    return SearchEstimate(
        quasi_identifiers=tuple(table.qi_names),
        heights=tuple(lattice.heights),
        lattice_size=lattice.size,
        records=table.n_records,
        distinct_rows=len(table.counts),
        seconds_per_node=per_node,
        worst_seconds=per_node * lattice.size,
        algorithm=anonymizer.algorithm,
        how=HOW.get(anonymizer.algorithm, "OLA usually checks far fewer"),
    )


__all__ = ["SearchEstimate", "search_estimate"]
