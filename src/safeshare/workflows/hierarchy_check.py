"""The ``hierarchy check`` use case: is a hierarchy file consistent, and does it cover a column?"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from safeshare.errors import HierarchyError, InputError


@dataclass(frozen=True)
class HierarchyCheck:
    """The result of :func:`hierarchy_check`: the hierarchy's shape and, with data, its coverage.

    ``levels`` lists, per level, how many labels it has and the first few of them;
    ``column`` and ``data`` name what was checked against (``None`` without data).
    """

    hierarchy: str
    values: int
    height: int
    levels: list[dict[str, Any]] = field(default_factory=list)
    data: str | None = None
    column: str | None = None
    #: the truth check (:func:`safeshare.hierarchy.truth.check_hierarchy`): pairs judged, and
    #: how many labels could not be read as an interval or a calendar period
    truth: dict[str, Any] = field(default_factory=dict)
    #: what a person should know (labels whose truth could not be checked)
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "hierarchy": self.hierarchy,
            "values": self.values,
            "height": self.height,
            "levels": self.levels,
            "data": self.data,
            "column": self.column,
            "covers_column": self.column is not None,
            "truth": self.truth,
            "warnings": self.warnings,
        }


def hierarchy_check(hierarchy: str | Path, **options: Any) -> HierarchyCheck:
    """``safeshare hierarchy check FILE``: one parent per label, consistent levels, every label
    true of its value where it reads as a numeric interval or a calendar period
    (:mod:`safeshare.hierarchy.truth`: a false one raises :class:`~safeshare.errors.HierarchyError`
    naming the value and the label; the labels that cannot be read are counted, and said); with
    ``data`` and ``column``, every value of the column is a leaf of the hierarchy, and the truth
    check covers the rows of the column's values.

    Keywords are the command's options: ``hierarchy_delimiter`` (the hierarchy file's
    separator, default ``;``), ``data``, ``column``, and the data-reading options
    (``delimiter``, ``header``, ``names``, ``missing``, ``skip_rows``). A value that the
    hierarchy does not cover raises :class:`~safeshare.errors.InputError`.
    """
    from safeshare.config.commands import HierarchyCheckOptions
    from safeshare.config.commands import options as validated
    from safeshare.hierarchy.io import read_arx_csv
    from safeshare.hierarchy.truth import FileSemantics, check_hierarchy, false_message

    opts = validated(HierarchyCheckOptions, options)
    path = Path(hierarchy)
    h = read_arx_csv(path, delimiter=opts.hierarchy_delimiter)
    checked = h
    levels = []
    for level in range(h.height + 1):
        labels = h.labels(level)
        levels.append({"level": level, "labels": len(labels), "examples": list(labels[:6])})
    if opts.data is not None:
        from safeshare.data.engines.memory import MemoryEngine

        assert opts.column is not None
        engine = MemoryEngine(opts.source(opts.data))
        if opts.column not in engine.columns():
            raise InputError(
                f"unknown column {opts.column!r}: {opts.data} has columns {', '.join(engine.columns())}"
            )
        present = engine.frame[opts.column].unique()
        missing = h.missing_values(present)
        if missing:
            raise InputError(
                f"value {missing[0]!r} of column {opts.column!r} is missing from hierarchy {path} "
                f"({len(missing)} value(s) not covered)"
            )
        checked = h.restricted_to(present)
    truth = check_hierarchy(checked, FileSemantics())
    if not truth.passed:
        raise HierarchyError(false_message(path.name, truth))
    warnings = []
    if truth.unchecked:
        examples = ", ".join(repr(label) for label in truth.unchecked_examples)
        warnings.append(
            f"{truth.unchecked:,} of {truth.pairs:,} labels could not be checked against their values "
            f"(neither a numeric interval nor a calendar period, e.g. {examples}): a file's categories "
            "are its own definition"
        )
    return HierarchyCheck(
        hierarchy=path.name,
        values=len(h.leaves),
        height=h.height,
        levels=levels,
        data=Path(opts.data).name if opts.data is not None else None,
        column=opts.column if opts.data is not None else None,
        truth=truth.to_dict(),
        warnings=warnings,
    )
