"""The ``hierarchy build`` use case: build a column's hierarchy with a builder, write it (ARX CSV)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from safeshare.errors import InputError
from safeshare.io import refuse_overwriting


@dataclass(frozen=True)
class BuiltHierarchy:
    """The result of :func:`hierarchy_build`: where the hierarchy went and its shape."""

    path: Path
    column: str
    values: int
    height: int

    def to_dict(self) -> dict[str, Any]:
        return {"out": self.path.name, "column": self.column, "values": self.values, "height": self.height}


def hierarchy_build(data: str | Path, **options: Any) -> BuiltHierarchy:
    """``safeshare hierarchy build DATA --column C --spec '{type: intervals, widths: [5, 10]}' --out F``.

    Keywords are the command's options: ``column``, ``spec`` (a builder as YAML text or a
    mapping with ``type``; docs/hierarchies.md), ``out`` (the ARX CSV file, written
    atomically; never the input itself), and the data-reading options.
    """
    from safeshare.config.commands import HierarchyBuildOptions
    from safeshare.config.commands import options as validated
    from safeshare.data.engines.memory import MemoryEngine
    from safeshare.hierarchy.builders import builder_files, builder_from_spec
    from safeshare.hierarchy.io import write_arx_csv

    opts = validated(HierarchyBuildOptions, options)
    builder = builder_from_spec(opts.spec, Path.cwd(), "--spec")
    refuse_overwriting(opts.out, [Path(data), *builder_files(opts.spec, Path.cwd())], "--out")
    engine = MemoryEngine(opts.source(data))
    if opts.column not in engine.columns():
        raise InputError(f"unknown column {opts.column!r}: {data} has columns {', '.join(engine.columns())}")
    h = builder.build(sorted(engine.frame[opts.column].unique()), name=opts.column)
    write_arx_csv(h, opts.out)
    return BuiltHierarchy(Path(opts.out), opts.column, len(h.leaves), h.height)
