"""The ``flatten`` use case: the first n events of each person, side by side (thesis §4.2)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from safeshare.app_runner import SILENT, Monitor
from safeshare.data.flatten import FlattenStats


@dataclass(frozen=True)
class Flattened:
    """The result of :func:`flatten`: where the flat table went and what was stacked."""

    path: Path
    events: int
    stats: FlattenStats

    def to_dict(self) -> dict[str, Any]:
        return {"out": self.path.name, "events_per_person": self.events, **asdict(self.stats)}


def flatten(
    persons_file: str | Path, events_file: str | Path, monitor: Monitor = SILENT, **options: Any
) -> Flattened:
    """``safeshare flatten PERSONS EVENTS --key id --events 3 --out flat.csv``.

    Keywords are the command's options: ``key`` (the persons' id column), ``events`` (how
    many events to stack per person), ``out`` (a .csv or .parquet file, written atomically;
    never an input), ``event_key``, ``order_by``, ``order_numeric``, ``order_dates``,
    ``columns``, ``prefix``, ``descending``, ``pad`` (padding of persons with fewer
    events), ``orphans`` (``error`` or ``drop``: events matching no person), and the
    data-reading options, which apply to both files. ``monitor`` is told each phase
    (reading, flattening, writing).
    """
    from safeshare.config.commands import FlattenOptions
    from safeshare.config.commands import options as validated
    from safeshare.data.flatten import flatten_files

    opts = validated(FlattenOptions, options)
    stats = flatten_files(
        opts.source(persons_file),
        opts.source(events_file),
        key=opts.key,
        event_key=opts.event_key,
        order_by=opts.order_by,
        n_events=opts.events,
        columns=opts.columns,
        prefix=opts.prefix,
        descending=opts.descending,
        order_numeric=opts.order_numeric,
        order_dates=opts.order_dates,
        missing=opts.pad,
        on_orphans="drop" if opts.orphans == "drop" else "error",
        out=opts.out,
        phase=monitor.phase,
    )
    return Flattened(Path(opts.out), opts.events, stats)
