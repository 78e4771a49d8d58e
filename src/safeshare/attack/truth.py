"""The custodian's truth: which input record each released row is, to score an attack.

A release is sorted and carries no record identifier, so the attack's claims ("row s is person
p") are scored against the configuration's input, read as the anonymization read it (missing
tokens normalized, pseudonyms and shifted dates recomputed from the key: the key is used here,
on the custodian's side, never by the attacker). A released row is a *block* of identical rows
(every released column equal); the rows of a block are indistinguishable to anyone, so any
one-to-one assignment of a block's rows to the block's people is as true as another, and one
seeded at random is used.

Which input records make up a block: an input record can be in a block when it is consistent
with the block's labels (:mod:`safeshare.attack.view`) and equal to it on every other released
column. In a global release that is at most one block per record. In a locally recoded one a
record can also be consistent with a coarser block of a later round; the assignment is then
propagated from the records with one candidate: a block whose rows are all taken by such records
is no candidate for the others, and so on until nothing changes. A block whose decided records
do not fill its rows exactly (records left with several candidates) has its rows *unscored*:
excluded from every rate, and counted in the report. More than half of the rows unscored means
the release was not made from this input (or with other hierarchies): refused.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from safeshare.attack.view import QIMap, consistent_pairs
from safeshare.errors import DataError


@dataclass(frozen=True)
class Truth:
    """Per released row: the input record it is (``-1``: unscored), and the counts."""

    record_of_row: np.ndarray
    #: released rows whose record could not be decided (excluded from the rates)
    unscored_rows: int
    #: input records that are in the release
    released_records: int

    @property
    def scored(self) -> np.ndarray:
        return self.record_of_row >= 0


def row_blocks(release: pd.DataFrame, columns: Sequence[str]) -> tuple[np.ndarray, pd.DataFrame]:
    """Block id of every released row (identical on ``columns``) and the blocks' values."""
    codes, uniques = pd.factorize(pd.MultiIndex.from_frame(release[list(columns)].astype(str)))
    blocks = (
        pd.DataFrame(list(uniques), columns=list(columns)) if len(uniques) else release[list(columns)][:0]
    )
    return np.asarray(codes, dtype=np.int64), blocks


def attribute(
    release: pd.DataFrame,
    inputs: pd.DataFrame,
    quasi_identifiers: Sequence[str],
    other: Sequence[str],
    maps: Sequence[QIMap],
    seed: int,
) -> Truth:
    """:class:`Truth` of ``release`` against the (treated) input ``inputs`` (module docstring).

    ``maps`` are the QIs' hierarchies built over the input's values; ``other`` the released
    columns compared as text."""
    qi, other = list(quasi_identifiers), list(other)
    block_of_row, blocks = row_blocks(release, qi + other)
    capacity = np.bincount(block_of_row, minlength=len(blocks)).astype(np.int64)
    # QI classes of the blocks, then the records consistent with each class
    qi_codes, qi_classes = pd.factorize(pd.MultiIndex.from_frame(blocks[qi].astype(str)))
    labels = pd.DataFrame(list(qi_classes), columns=qi)
    rec, cls = consistent_pairs(maps, inputs[qi].astype(str), labels)
    # a pair is a candidate block when the other columns agree too
    block_key = pd.DataFrame({"cls": qi_codes, "block": np.arange(len(blocks))})
    for c in other:
        block_key[c] = blocks[c].astype(str).to_numpy()
    pairs = pd.DataFrame({"rec": rec, "cls": cls})
    for c in other:
        pairs[c] = inputs[c].astype(str).to_numpy()[rec]
    cand = pairs.merge(block_key, on=["cls", *other], how="inner")[["rec", "block"]]
    cand = cand.sort_values(["rec", "block"], kind="stable").reset_index(drop=True)
    assigned = _propagate(cand["rec"].to_numpy(), cand["block"].to_numpy(), capacity)
    rng = np.random.default_rng(np.random.SeedSequence([seed, 71]))
    record_of_row = np.full(len(release), -1, dtype=np.int64)
    rows_of_block = _group(block_of_row, len(blocks))
    recs_of_block = _group(assigned[1], len(blocks), assigned[0])
    unscored = 0
    for b in range(len(blocks)):
        rows, recs = rows_of_block[b], recs_of_block[b]
        if recs.size == rows.size:
            record_of_row[rows] = rng.permutation(recs)
        else:
            unscored += rows.size
    released = int((record_of_row >= 0).sum())
    if len(release) and unscored * 2 > len(release):
        raise DataError(
            f"{unscored:,} of the release's {len(release):,} rows cannot be attributed to records of the "
            "configuration's input: the release was not made from this input (or with these hierarchies)"
        )
    return Truth(record_of_row, unscored, released)


def _group(keys: np.ndarray, size: int, values: np.ndarray | None = None) -> list[np.ndarray]:
    values = np.arange(keys.size) if values is None else values
    order = np.argsort(keys, kind="stable")
    bounds = np.searchsorted(keys[order], np.arange(size + 1))
    return [values[order[bounds[i] : bounds[i + 1]]] for i in range(size)]


def _propagate(rec: np.ndarray, block: np.ndarray, capacity: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Records decided: (records, their blocks). A record with one candidate takes it; a full
    block drops out of the others' candidates; repeated until nothing changes."""
    remaining = capacity.copy()
    alive = np.ones(rec.size, dtype=bool)
    done_rec: list[np.ndarray] = []
    done_blk: list[np.ndarray] = []
    while True:
        r, b = rec[alive], block[alive]
        if r.size == 0:
            break
        counts = np.bincount(r)
        single = counts[r] == 1
        if not single.any():
            # drop candidates of full blocks; stop when none is dropped
            full = remaining[b] <= 0
            if not full.any():
                break
            alive[np.flatnonzero(alive)[full]] = False
            continue
        take_r, take_b = r[single], b[single]
        done_rec.append(take_r)
        done_blk.append(take_b)
        np.subtract.at(remaining, take_b, 1)
        decided = np.zeros(int(rec.max()) + 1, dtype=bool)
        decided[take_r] = True
        alive &= ~decided[rec]
        full = remaining[block] <= 0
        alive &= ~full
    if not done_rec:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    return np.concatenate(done_rec), np.concatenate(done_blk)
