"""A project's export: a zip of what repeats and documents its work, never its data or key.

:func:`write_export` writes ``<project>/...`` entries from an **allow-list** (nothing is added
because it happens to lie in the project's folder):

* ``README.txt`` (what is in the zip and what was left out), ``project.json`` (name, creation),
  ``config.yaml`` (the project's configuration);
* ``hierarchies/<file>``: the uploaded hierarchy files (regular files only);
* ``run-<run>.yaml``: the configuration each run used, and ``runs/<run>/command.txt``, its command
  line; ``runs/<run>/report.json`` and ``runs/<run>/report.html``, the run's published reports.

Left out, always: the input data (``data/``, or a file picked under the work directory), the
releases (``release.csv``, ``release.parquet``), the columns' profile and distinct values
(``profile.json``, ``values.json``: values of the data), the runs' working files, and the key of
the pseudonyms and shifted dates (``key.hex``, or whatever file ``key_file:`` names), which is
never served or exported.
"""

from __future__ import annotations

import time
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path

from safeshare.errors import InputError
from safeshare.ui.projects import RUN_ID, SAFE_NAME, Project

#: The files of a run's ``out/`` the export holds.
RUN_REPORTS = ("report.json", "report.html")
#: Never exported, wherever it lies.
KEY_NAME = "key.hex"

README = """\
safeshare workbench: the export of project {name!r} ({id}), {when}.

In this zip:
  config.yaml                the project's configuration (paths are relative to this folder)
  project.json               the project's name and creation time
  hierarchies/               the uploaded hierarchy files
  run-<run>.yaml             the configuration each run used
  runs/<run>/command.txt     the run's command line (run it from this folder)
  runs/<run>/report.json     the run's report, as published (also report.html)

Left out: the input data file ({data}) - put it back at that path to repeat a run; the
releases (release.csv / release.parquet: download them from the Release screen); the columns'
profile and distinct values (values of the data); and the key of the pseudonyms and shifted
dates (key.hex), which the workbench never serves or exports: a keyed run needs your own copy
of it at the path key_file: names.
"""


def _regular(path: Path) -> bool:
    return path.is_file() and not path.is_symlink()


def _key_paths(project: Project) -> set[Path]:
    """The key files a project may hold: ``key.hex`` and what its configuration's ``key_file:`` names."""
    keys = {(project.directory / KEY_NAME).resolve()}
    try:
        named = project.config().get("key_file")
    except InputError:  # a configuration that does not parse still exports no key
        named = None
    if isinstance(named, str) and named.strip():
        keys.add((project.directory / named).resolve())
    return keys


def exported_files(project: Project) -> Iterator[tuple[str, Path]]:
    """``(name in the zip, file)`` of every file the export holds (the allow-list of the module
    docstring), the key files excepted whatever their name."""
    directory = project.directory
    keys = _key_paths(project)

    def allowed(path: Path) -> bool:
        return _regular(path) and path.name != KEY_NAME and path.resolve() not in keys

    for name in ("project.json", "config.yaml"):
        if allowed(directory / name):
            yield name, directory / name
    hierarchies = directory / "hierarchies"
    if hierarchies.is_dir() and not hierarchies.is_symlink():
        for path in sorted(hierarchies.iterdir()):
            if SAFE_NAME.match(path.name) and allowed(path):
                yield f"hierarchies/{path.name}", path
    for run_id in sorted(project.run_ids()):
        snapshot = directory / f"run-{run_id}.yaml"
        if allowed(snapshot):
            yield snapshot.name, snapshot
        out = directory / "runs" / run_id / "out"
        for name in RUN_REPORTS:
            if allowed(out / name):
                yield f"runs/{run_id}/{name}", out / name


def write_export(project: Project, target: Path, command: Callable[[str], str]) -> list[str]:
    """Write the project's export to ``target`` (a zip); the names of its entries (under
    ``<project id>/``). ``command(run_id)``: the command line of a run with a snapshot."""
    prefix = project.id
    try:
        section = project.config().get("input")
    except InputError:
        section = None
    data = str(section.get("path") or "") if isinstance(section, dict) else ""
    names: list[str] = []
    with zipfile.ZipFile(target, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        readme = README.format(
            name=project.name,
            id=project.id,
            when=time.strftime("%Y-%m-%d %H:%M"),
            data=data or "the configuration's input: path",
        )
        archive.writestr(f"{prefix}/README.txt", readme)
        names.append("README.txt")
        for name, path in exported_files(project):
            archive.write(path, f"{prefix}/{name}")
            names.append(name)
            if name.startswith("run-") and RUN_ID.match(name[4:-5]):
                archive.writestr(f"{prefix}/runs/{name[4:-5]}/command.txt", command(name[4:-5]) + "\n")
                names.append(f"runs/{name[4:-5]}/command.txt")
    return names


__all__ = ["KEY_NAME", "RUN_REPORTS", "exported_files", "write_export"]
