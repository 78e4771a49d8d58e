"""How a published report names a file: :func:`shown_path`, the one rule.

report.json, report.html (its evidence, its certificate, its provenance settings) and the
ledger line a release records travel with the release; a path in them that climbs out of the
configuration's folder (``../../../../../home/jdoe/project-x/age.csv``, issue 30, item 17) or
an absolute one publishes the custodian's directory layout (user names, project names). So a
file inside the configuration's folder is named by its path relative to it (as the
configuration writes it), and any other file by its name alone.
"""

from __future__ import annotations

import os
from pathlib import Path, PurePath, PurePosixPath


def shown_path(path: str | PurePath, base: str | PurePath | None) -> str:
    """``path`` as a report shows it: relative to ``base`` (POSIX form) when it lies inside
    ``base`` once both are resolved (symbolic links followed: a link out of the folder does not
    make its target inside), else its file name only; its name only without a ``base``.

    ``path`` is a file-system path (a relative one is relative to the working directory); a
    path written in a configuration is ``base / written``.
    """
    given = Path(path)
    name = given.name or PurePath(os.path.normpath(given)).name
    if base is None:
        return name
    root = Path(base).resolve()
    try:
        target = given.resolve()
    except (OSError, RuntimeError):  # a loop of links: not inside anything
        return name
    if target == root:
        return "."
    if target.is_relative_to(root):
        return PurePosixPath(*target.relative_to(root).parts).as_posix()
    return name


def written_path(written: str, base: str | PurePath | None) -> str:
    """A path as written in a configuration (relative to its folder ``base``), as
    :func:`shown_path` shows it: the text itself when it stays inside the folder, else its name."""
    if base is None or not written:
        return PurePath(written).name if written else written
    return shown_path(Path(base) / written, base)


__all__ = ["shown_path", "written_path"]
