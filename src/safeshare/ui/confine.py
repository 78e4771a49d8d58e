"""The workbench reads and writes only under ``--workdir`` (issue 30, item 11).

Every path the workbench takes from its user passes :func:`inside`, the one check: a file
picked on the home or surveillance screen, and every file a configuration names
(:func:`confine_config`: the input, hierarchy files, the files of a hierarchy builder such as
``{type: file, path: ...}``, a privacy model's files, ``key_file`` and ``ledger``, listed by
:func:`safeshare.config.file.named_files`), whether the configuration was uploaded, sent with
``PUT``, or edited on a screen. A path is resolved as the operating system would open it
(relative to the project's folder, ``..`` and symbolic links followed) and refused when the
result is not under the work directory. The server checks before it reads a file or starts a
child (a bad path is a 400 with one line); the child checks again before it reads any data.
The outputs of a run (its ``out`` folder, the files it writes) are the workbench's own, in the
project's folder.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from safeshare.errors import InputError


def inside(path: str | Path, workdir: Path, what: str, base: Path | None = None) -> Path:
    """The real path of ``path`` when it lies under ``workdir``; :class:`InputError` naming
    ``what`` otherwise.

    ``path`` relative is taken from ``base`` (default: ``workdir``); ``..`` and symbolic links
    are resolved (a link inside the work directory to a file outside is outside), so the
    answer is the file the operating system would open. The path need not exist (a ledger
    that a run will create)."""
    root = Path(os.path.realpath(workdir))
    given = Path(path)
    joined = given if given.is_absolute() else Path(base if base is not None else root) / given
    try:
        real = Path(os.path.realpath(joined))
    except (ValueError, OSError):  # an embedded NUL, a loop of links
        raise InputError(f"{what}: {str(path)!r} is not a usable path") from None
    if not real.is_relative_to(root):
        raise InputError(
            f"{what}: {str(path)!r} is not under the work directory; the workbench reads and writes "
            "files under --workdir only"
        )
    return real


def confine_config(doc: Mapping[str, Any], base: Path, workdir: Path) -> None:
    """Refuse a configuration mapping (its relative paths from ``base``, the project's folder)
    that names a file outside ``workdir`` (:func:`inside` for each)."""
    from safeshare.config.file import named_files

    for where, path in named_files(doc, base):
        inside(path, workdir, where)


def confine_config_file(path: Path, workdir: Path) -> None:
    """:func:`confine_config` of the configuration file at ``path`` (read with the loader's
    limits; a file that does not parse names no path and is left to the loader's message)."""
    from safeshare.config_checks import read_yaml

    doc = read_yaml(path)
    if isinstance(doc, Mapping):
        confine_config(doc, path.parent, workdir)


__all__ = ["confine_config", "confine_config_file", "inside"]
