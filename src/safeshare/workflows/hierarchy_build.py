"""The ``hierarchy build`` use case: build a column's hierarchy with a builder, write it (ARX CSV)."""

from __future__ import annotations

from dataclasses import dataclass, field
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
    #: what the builder noticed (implausible values), each with the values concerned: this
    #: output stays with the custodian, so it names them (a run's report does not)
    warnings: list[dict[str, Any]] = field(default_factory=list)
    #: the truth check of every label (:func:`safeshare.hierarchy.truth.check_hierarchy`)
    truth: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "out": self.path.name,
            "column": self.column,
            "values": self.values,
            "height": self.height,
            "truth": self.truth,
            "warnings": self.warnings,
        }


def hierarchy_build(data: str | Path, **options: Any) -> BuiltHierarchy:
    """``safeshare hierarchy build DATA --column C --spec '{type: intervals, widths: [5, 10]}' --out F``.

    Keywords are the command's options: ``column``, ``spec`` (a builder as YAML text or a
    mapping with ``type``; docs/hierarchies.md), ``out`` (the ARX CSV file, written
    atomically; never the input itself), and the data-reading options; ``missing`` is the one
    switch of :mod:`safeshare.missing` (``missing=[""]``, ``--missing ''``: blank cells are
    missing values, kept as they are below the top).

    Every label is checked true of its value before anything is written (a false one raises
    :class:`~safeshare.errors.HierarchyError` naming the column, the value and the label), and
    the builder's warnings (values far beyond a coding bound) are returned with their values.
    """
    from safeshare.config.commands import HierarchyBuildOptions
    from safeshare.config.commands import options as validated
    from safeshare.data.engines.memory import MemoryEngine
    from safeshare.hierarchy.builders import builder_files, builder_from_spec, with_data_missing
    from safeshare.hierarchy.io import write_arx_csv
    from safeshare.hierarchy.truth import check_hierarchy, semantics_of

    opts = validated(HierarchyBuildOptions, options)
    builder = builder_from_spec(opts.spec, Path.cwd(), "--spec")
    refuse_overwriting(opts.out, [Path(data), *builder_files(opts.spec, Path.cwd())], "--out")
    engine = MemoryEngine(opts.source(data))
    if opts.column not in engine.columns():
        raise InputError(f"unknown column {opts.column!r}: {data} has columns {', '.join(engine.columns())}")
    builder = with_data_missing(builder, engine.missing)
    h = builder.build(sorted(engine.frame[opts.column].unique()), name=opts.column)
    truth = check_hierarchy(h, semantics_of(builder))  # passed: build() refuses a false label
    write_arx_csv(h, opts.out)
    warnings = [{**w.to_dict(), "values": list(w.values)} for w in h.warnings]
    return BuiltHierarchy(Path(opts.out), opts.column, len(h.leaves), h.height, warnings, truth.to_dict())
