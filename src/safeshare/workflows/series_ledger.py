"""The series ledger of ``safeshare surveil release`` (issue 37): what every release of a series
published, so that each new release can be checked against all earlier ones.

``series.jsonl`` lies in the release folder and is published with it, in the same atomic swap
(:class:`safeshare.io.OutputDirectory`). It is a ledger of the kind of :mod:`safeshare.workflows.ledger`
(the same canonical JSON lines, ``seq``, ``prev_sha256`` and ``entry_sha256``; ``safeshare ledger
verify OUT/series.jsonl`` checks it): one entry per release, holding

* ``files``: every file of the release with its SHA-256 (paths are the file names in the folder);
* ``series``: ``format`` (1), ``hierarchy`` (the SHA-256 of the hierarchies: a series keeps them),
  ``k``, ``weekly`` and ``publications``: per released file its ``file``, ``policy``, ``sha256`` and
  ``content`` (the SHA-256 of its publication record), and -- the first time that content appears
  in the ledger -- the record itself (:func:`safeshare.verify.series.publication_record`: the period,
  how the labels read and every released cell with its count); ``public_totals``: the file name and
  SHA-256 of the public counts the release was checked against (``--public-totals``; they are the
  counts public as of that release, so a later release is checked against its own).

Everything in it is computable from the published files (the counts a recipient computes from each
file): nothing of a record that was not released.

Before a release reads any data, the earlier ledger (``OUT/series.jsonl``, or ``--series FILE``)
is verified (its hash chain, and the files still beside it against their SHA-256): a broken or
foreign ledger is refused. The new entry is staged with the release and the staged ledger verified
again before the folder is published.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from safeshare.errors import InputError, VerificationError
from safeshare.io import sha256_file
from safeshare.surveillance.inputs import Population
from safeshare.surveillance.policies import PolicySpace
from safeshare.surveillance.release import SERIES_LEDGER
from safeshare.surveillance.series import (
    Conflict,
    EarlierFile,
    Published,
    SeriesContext,
    series_hierarchy,
)
from safeshare.verify.series import Publication, publication_from_record, publication_record
from safeshare.workflows.ledger import GENESIS, canonical, entry_hash, verify_ledger

FORMAT = 1


def hierarchy_fingerprint(space: PolicySpace) -> str:
    """The SHA-256 of the hierarchies (names, leaves, every level's code and labels)."""
    doc = [
        {"name": d.name, "leaves": list(d.leaves), "levels": [[lv.code, list(lv.groups)] for lv in d.levels]}
        for d in space.dimensions
    ]
    return hashlib.sha256(canonical({"dimensions": doc}).encode("ascii")).hexdigest()


def _content(record: Mapping[str, Any]) -> str:
    return hashlib.sha256(canonical(record).encode("ascii")).hexdigest()


@dataclass
class SeriesLedger:
    """An earlier series ledger, verified: its path, bytes and entries (none for a new series)."""

    path: Path | None
    data: bytes
    entries: list[dict[str, Any]]


def open_series(out: Path, series: Path | None, new_series: bool) -> SeriesLedger:
    """The ledger a release continues: ``series`` if given, else ``OUT/series.jsonl`` when it exists
    (``new_series`` starts over); its chain and files verified, every entry a series entry."""
    if series is not None and new_series:
        raise InputError("give at most one of --series FILE and --new-series")
    path = series if series is not None else (None if new_series else Path(out) / SERIES_LEDGER)
    if path is None or (series is None and not path.is_file()):
        return SeriesLedger(None, b"", [])
    if not path.is_file():
        raise InputError(f"--series {path}: no such file")
    check = verify_ledger(path)
    if not check.ok:
        raise InputError(f"series ledger {check.summary()}; nothing is released against a broken ledger")
    data = path.read_bytes()
    entries = [json.loads(line) for line in data.decode("ascii").splitlines()]
    for seq, entry in enumerate(entries, start=1):
        doc = entry.get("series")
        if not isinstance(doc, dict) or doc.get("format") != FORMAT:
            raise InputError(f"series ledger {path}: entry {seq} is not a surveil release of a series")
    return SeriesLedger(path, data, entries)


def series_context(
    ledger: SeriesLedger,
    population: Population,
    k: int,
    weekly: bool,
    on_conflict: Conflict,
    totals: Sequence[Publication] = (),
    totals_file: Path | None = None,
) -> SeriesContext:
    """The earlier publications (and public totals) of the series and the function that stages its
    next entry (see the module docstring)."""
    space = population.space
    fingerprint = hierarchy_fingerprint(space)
    hierarchy = series_hierarchy(population)
    where = str(ledger.path)
    history: list[Publication] = []
    earlier: dict[tuple[int, int], list[EarlierFile]] = {}
    contents: dict[str, Mapping[str, Any]] = {}
    for seq, entry in enumerate(ledger.entries, start=1):
        doc = entry["series"]
        if doc.get("hierarchy") != fingerprint:
            raise InputError(
                f"series ledger {where}: release {seq} of the series used other hierarchies; a series "
                "keeps its hierarchies (start a new series with --new-series)"
            )
        items = doc.get("publications", [])
        if not isinstance(items, list):
            raise InputError(f"series ledger {where}: entry {seq}: publications is not a list")
        for item in items:
            if not isinstance(item, dict) or not isinstance(item.get("content"), str):
                raise InputError(f"series ledger {where}: entry {seq}: a publication without its content")
            content = item["content"]
            record = contents.get(content)
            if record is None:
                if "cells" not in item:
                    raise InputError(
                        f"series ledger {where}: entry {seq}: content {content[:12]} is not recorded"
                    )
                record = contents[content] = item
            name = f"{item.get('file')} (release {seq})"
            pub = publication_from_record(name, record, hierarchy, f"series ledger {where}: entry {seq}")
            history.append(pub)
            _add_earlier(earlier, ledger, seq, item, pub)
    history.extend(totals)
    seq = len(ledger.entries) + 1
    public = (
        None if totals_file is None else {"file": Path(totals_file).name, "sha256": sha256_file(totals_file)}
    )

    def stage_ledger(stage: Path, published: list[Published]) -> None:
        _stage(stage, ledger, seq, fingerprint, k, weekly, published, public, contents)

    return SeriesContext(history, earlier, on_conflict, stage_ledger, seq, k)


def _add_earlier(
    earlier: dict[tuple[int, int], list[EarlierFile]],
    ledger: SeriesLedger,
    seq: int,
    item: Mapping[str, Any],
    pub: Publication,
) -> None:
    """An earlier file that is still beside the ledger, unchanged, can be re-published (frozen)."""
    if (
        ledger.path is None
        or not isinstance(item.get("file"), str)
        or not isinstance(item.get("sha256"), str)
    ):
        return
    name = Path(item["file"]).name
    path = ledger.path.parent / name
    if name != item["file"] or not path.is_file() or sha256_file(path) != item["sha256"]:
        return
    spans = earlier.setdefault(pub.span, [])
    spans[:] = [e for e in spans if e.file != name or e.sha256 != item["sha256"]]
    spans.append(EarlierFile(path, name, item["sha256"], str(item.get("policy")), seq))


def _stage(
    stage: Path,
    ledger: SeriesLedger,
    seq: int,
    fingerprint: str,
    k: int,
    weekly: bool,
    published: list[Published],
    public: dict[str, str] | None,
    contents: dict[str, Mapping[str, Any]],
) -> None:
    """Write ``series.jsonl`` (the earlier lines and this release's entry) into the staging folder
    and verify it there, before anything is published."""
    from safeshare import __version__

    seen = set(contents)
    publications = []
    for item in published:
        record = publication_record(item.publication, item.admissible, item.na)
        content = _content(record)
        head = {
            "file": item.file,
            "policy": item.policy,
            "sha256": sha256_file(stage / item.file),
            "content": content,
        }
        publications.append({**head, **({} if content in seen else record)})
        seen.add(content)
    files = sorted(p.name for p in stage.iterdir() if p.is_file() and p.name != SERIES_LEDGER)
    entry: dict[str, Any] = {
        "time": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "safeshare_version": __version__,
        "approved_by": None,
        "files": [
            {
                "role": "release",
                "path": name,
                "sha256": sha256_file(stage / name),
                "bytes": (stage / name).stat().st_size,
            }
            for name in files
            if not name.startswith(".")
        ],
        "series": {
            "format": FORMAT,
            "hierarchy": fingerprint,
            "k": k,
            "weekly": weekly,
            "publications": publications,
            "public_totals": public,
        },
    }
    previous = (
        hashlib.sha256(ledger.data.rstrip(b"\n").rsplit(b"\n", 1)[-1]).hexdigest() if ledger.data else GENESIS
    )
    entry.update(seq=seq, prev_sha256=previous)
    entry["entry_sha256"] = entry_hash(entry)
    target = stage / SERIES_LEDGER
    target.write_bytes(ledger.data + (canonical(entry) + "\n").encode("ascii"))
    check = verify_ledger(target)
    if not check.ok or check.entries != seq:
        raise VerificationError(f"the staged series ledger does not verify: {check.summary()}")
