"""A toy criterion and a toy strategy, each one file + one registry line (docs/architecture.md).

Used by tests/test_extension.py, which registers them for the duration of a test:

* ``min-class-size: {n: 5}``: a class is released when it holds at least ``n``
  records (k-anonymity under another name, so that the test has an oracle);
* ``lowest-level``: the qualifying node of least loss among the least
  generalized qualifying ones (lowest height), found level by level.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import duckdb

from safeshare.config.algorithms import Algorithm
from safeshare.config_checks import PositiveInt
from safeshare.core.evaluation import Classes
from safeshare.core.frequency import FrequencyTable
from safeshare.models.base import BoolArray, PrivacyModel
from safeshare.models.registry import ModelParams
from safeshare.search.context import SearchContext
from safeshare.search.result import SearchResult


# ------------------------------------------------------------------ the criterion (models/)
class MinClassSize(PrivacyModel):
    """Every released class holds at least ``n`` records (monotone, like k-anonymity)."""

    name = "min-class-size"

    def __init__(self, n: int) -> None:
        self.n = n

    def acceptable(self, classes: Classes, table: FrequencyTable) -> BoolArray:
        return classes.sizes >= self.n

    def params(self) -> dict[str, Any]:
        return {"n": self.n}


class MinClassSizeParams(ModelParams):
    """For ``PRIVACY_MODELS``: the configuration's ``min-class-size: {n: 5}``, validated by pydantic."""

    n: PositiveInt

    def build(self, base_dir: Path) -> PrivacyModel:
        return MinClassSize(self.n)


def check_min_class_size(
    con: duckdb.DuckDBPyConnection, relation: str, group: str, params: Mapping[str, Any]
) -> list[str]:
    """The independent re-check for ``verify.EXTRA_CHECKS``: SQL on the written file."""
    row = con.execute(
        f"SELECT MIN(c) FROM (SELECT COUNT(*) AS c FROM {relation} GROUP BY {group})"
    ).fetchone()
    smallest = int(row[0]) if row and row[0] is not None else 0
    return (
        [] if smallest >= params["n"] else [f"a class has {smallest} records, fewer than n = {params['n']}"]
    )


# ------------------------------------------------------------------ the strategy (search/)
class LowestLevel:
    """The least-loss node among the qualifying nodes of the lowest height."""

    name = "lowest-level"

    def run(self, ctx: SearchContext) -> SearchResult:
        start, checked = time.perf_counter(), 0
        for level in ctx.lattice.nodes_by_height():
            found = []
            for node in level:
                checked += 1
                if ctx.holds(node):
                    found.append(node)
            if found:
                node = min(found, key=lambda n: (ctx.metric.value(n), n))
                break
        else:
            node, found = None, []
        return SearchResult(
            algorithm=self.name,
            node=node,
            objective=None if node is None else ctx.metric.value(node),
            minimal_nodes=found,
            checked_nodes=checked,
            lattice_size=ctx.lattice.size,
            elapsed_s=time.perf_counter() - start,
        )


#: The registry line's entry for ``ALGORITHMS`` (no options: ``NoOptions``).
LOWEST_LEVEL = Algorithm(lambda options: LowestLevel(), summary="least loss among the lowest qualifying")
