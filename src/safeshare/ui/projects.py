"""Projects: a configuration and its files in one directory under the work directory.

A project is ``<workdir>/safeshare-projects/<id>/``::

    config.yaml          the configuration the screens edit (the one source of truth)
    data/                uploaded input files
    hierarchies/         uploaded hierarchy files (ARX CSV)
    profile.json         the columns' profile (a profile run); values.json their values and records
    run-<run>.yaml       the configuration a run used, as it was (its "copy as YAML")
    runs/<run>/          one run (safeshare.ui.runs)

Paths in ``config.yaml`` are relative to the project directory, as in any configuration, so
``safeshare anonymize <project>/run-<run>.yaml --out DIR`` repeats a run exactly. The
configuration is edited as a mapping (so the keys the screens do not show, ``duckdb:`` or
``knowledge:``, are kept) and validated by the library when a run starts.
"""

from __future__ import annotations

import json
import re
import secrets
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import yaml

from safeshare.app_runner import to_json
from safeshare.errors import InputError

#: Characters allowed in an uploaded file's name (no separator, no leading dot).
SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._ ()+-]{0,199}$")
PROJECT_ID = re.compile(r"^[a-z0-9-]{6,40}$")
RUN_ID = re.compile(r"^[0-9]{8}-[0-9]{6}-[0-9a-f]{6}$")
#: Input files a project may take (also offered from the work directory).
DATA_SUFFIXES = (".csv", ".csv.gz", ".data", ".txt", ".tsv", ".parquet", ".pq")


def check_name(name: str, what: str = "file name") -> str:
    """``name`` when it is a plain file name (no directory part, no traversal, no control
    character); :class:`InputError` otherwise."""
    if not isinstance(name, str) or not SAFE_NAME.match(name) or ".." in name:
        raise InputError(f"{what} {name!r} is not allowed: use letters, digits and . _ - ( ) + only")
    return name


#: The longest name a project may have.
NAME_LIMIT = 100


def check_project_name(name: str) -> str:
    """A project's new name, stripped: not empty, at most :data:`NAME_LIMIT` characters, no
    control character (a line break or a tab); :class:`InputError` otherwise."""
    text = name.strip() if isinstance(name, str) else ""
    if not text:
        raise InputError("a project's name cannot be empty")
    if len(text) > NAME_LIMIT:
        raise InputError(f"a project's name has at most {NAME_LIMIT} characters, got {len(text):,}")
    if any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 for c in text):
        raise InputError("a project's name cannot hold a control character (a line break or a tab)")
    return text


def dump_yaml(doc: Mapping[str, Any]) -> str:
    """A configuration as YAML, keys in the order given."""
    return yaml.safe_dump(dict(doc), sort_keys=False, allow_unicode=True, default_flow_style=None, width=100)


class Project:
    """One project directory."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    @property
    def id(self) -> str:
        return self.directory.name

    @property
    def config_path(self) -> Path:
        return self.directory / "config.yaml"

    @property
    def meta(self) -> dict[str, Any]:
        try:
            data = json.loads((self.directory / "project.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            data = {}
        return data if isinstance(data, dict) else {}

    def set_meta(self, **values: Any) -> None:
        from safeshare.io import atomic_write_text

        meta = {**self.meta, **values}
        atomic_write_text(self.directory / "project.json", to_json(meta, indent=1) + "\n")

    @property
    def name(self) -> str:
        return str(self.meta.get("name") or self.id)

    def config(self) -> dict[str, Any]:
        """The configuration as a mapping (empty before anything was set)."""
        try:
            text = self.config_path.read_text(encoding="utf-8")
        except OSError:
            return {}
        from safeshare.config_checks import parse_yaml

        doc = parse_yaml(text, str(self.config_path)) if text.strip() else {}
        return dict(doc) if isinstance(doc, Mapping) else {}

    def config_text(self) -> str:
        try:
            return self.config_path.read_text(encoding="utf-8")
        except OSError:
            return ""

    def version(self) -> str:
        """The configuration's version: the SHA-256 of its text (its first 16 hex digits). Each
        form of the workbench carries the version it was rendered from (``config_version``), so
        that a save from a stale tab is refused instead of silently overwriting (issue 35)."""
        import hashlib

        return hashlib.sha256(self.config_text().encode("utf-8")).hexdigest()[:16]

    def check_version(self, seen: str | None) -> None:
        """Raise :class:`InputError` when ``seen`` (a form's ``config_version``) is not the current
        version; ``None`` (a script's post without it) is not checked."""
        if seen is not None and seen.strip() != self.version():
            raise InputError(
                "the configuration changed since this page was loaded (in another tab or by a script): "
                "nothing was saved; reload the page and make the change again"
            )

    def save_config(self, doc: Mapping[str, Any], seen: str | None = None) -> None:
        """Write the configuration ``doc``; ``seen``: the version the change was made on
        (:meth:`check_version`)."""
        from safeshare.io import atomic_write_text

        self.check_version(seen)
        atomic_write_text(self.config_path, dump_yaml(doc))

    def save_config_text(self, text: str, check: Callable[[Mapping[str, Any]], None] | None = None) -> None:
        """Replace the configuration by ``text`` (it must parse as a YAML mapping, and pass
        ``check``, which raises :class:`InputError` to refuse it: nothing is saved then)."""
        from safeshare.config_checks import parse_yaml
        from safeshare.io import atomic_write_text

        doc = parse_yaml(text, "config.yaml")
        if not isinstance(doc, Mapping):
            raise InputError("config.yaml: expected a mapping at the top level")
        if check is not None:
            check(doc)
        atomic_write_text(self.config_path, text if text.endswith("\n") else text + "\n")

    def snapshot(self, run_id: str, config: Mapping[str, Any] | None = None) -> str:
        """Copy the configuration as ``run-<run>.yaml`` (what the run uses), or write ``config``
        there instead (a one-off run: the project's configuration is left as it is); its file name."""
        from safeshare.io import atomic_write_text

        name = f"run-{run_id}.yaml"
        atomic_write_text(self.directory / name, self.config_text() if config is None else dump_yaml(config))
        return name

    def profile(self) -> dict[str, Any] | None:
        try:
            doc = json.loads((self.directory / "profile.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return doc if isinstance(doc, dict) else None

    def values(self, column: str) -> list[str] | None:
        """The column's distinct values (sorted), ``None`` when not profiled or too many."""
        counts = self.counts(column)
        return None if counts is None else list(counts)

    def counts(self, column: str) -> dict[str, int] | None:
        """The column's distinct values with their records (the profile's ``values.json``)."""
        try:
            doc = json.loads((self.directory / "values.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        found = doc.get(column) if isinstance(doc, dict) else None
        if not isinstance(found, dict):
            return None
        return {str(k): int(v) for k, v in found.items() if isinstance(v, int)}

    def run_dir(self, run_id: str) -> Path:
        if not RUN_ID.match(run_id):
            raise InputError(f"run {run_id!r}: no such run")
        directory = self.directory / "runs" / run_id
        if not directory.is_dir():
            raise InputError(f"run {run_id!r}: no such run")
        return directory

    def run_ids(self) -> list[str]:
        """The project's runs, newest first (a run's id sorts in start order:
        :func:`safeshare.ui.runs.new_run_id`)."""
        runs = self.directory / "runs"
        if not runs.is_dir():
            return []
        return sorted((p.name for p in runs.iterdir() if p.is_dir() and RUN_ID.match(p.name)), reverse=True)

    def columns(self) -> list[str]:
        """The input's columns: the profile's, else the configuration's ``names``."""
        prof = self.profile()
        if prof:
            return [c["name"] for c in prof["columns"]]
        names = self.config().get("input", {}).get("names")
        return [str(n) for n in names] if isinstance(names, list) else []


class ProjectStore:
    """The projects under one work directory."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir.resolve()
        self.root = self.workdir / "safeshare-projects"

    def create(self, name: str = "") -> Project:
        self.root.mkdir(parents=True, exist_ok=True)
        project_id = time.strftime("%Y%m%d-") + secrets.token_hex(4)
        directory = self.root / project_id
        directory.mkdir(mode=0o700)
        for sub in ("data", "hierarchies", "runs"):
            (directory / sub).mkdir()
        project = Project(directory)
        created = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        project.set_meta(name=name.strip()[:NAME_LIMIT] or project_id, created=created)
        return project

    def get(self, project_id: str) -> Project:
        if not PROJECT_ID.match(project_id) or not (self.root / project_id / "project.json").is_file():
            raise InputError(f"project {project_id!r}: no such project")
        return Project(self.root / project_id)

    def all(self) -> list[Project]:
        if not self.root.is_dir():
            return []
        found = [Project(p) for p in self.root.iterdir() if (p / "project.json").is_file()]
        return sorted(found, key=lambda p: p.id, reverse=True)

    def data_files(self, limit: int = 500, depth: int = 4) -> list[str]:
        """Input files under the work directory (relative paths, at most ``depth`` folders down,
        hidden folders and the projects' own skipped), at most ``limit``."""
        import os

        out: list[str] = []
        for top, dirs, files in os.walk(self.workdir):
            rel_top = Path(top).relative_to(self.workdir)
            dirs[:] = sorted(
                d
                for d in dirs
                if not d.startswith(".")
                and not (rel_top == Path(".") and d == self.root.name)
                and len(rel_top.parts) < depth
            )
            for name in sorted(files):
                if name.lower().endswith(DATA_SUFFIXES) and not name.startswith("."):
                    out.append((rel_top / name).as_posix())
                    if len(out) >= limit:
                        return out
        return out

    def inside(self, relative: str, what: str = "file") -> Path:
        """The file ``relative`` names under the work directory (:class:`InputError` when it
        leaves it, through ``..`` or a link: :func:`safeshare.workflows.confine.inside`; or is not a
        file)."""
        from safeshare.api import workbench

        path = workbench.inside(relative, self.workdir, what)
        if not path.is_file():
            raise InputError(f"{what}: {relative!r} is not a file under the work directory")
        return path


__all__ = [
    "DATA_SUFFIXES",
    "NAME_LIMIT",
    "Project",
    "ProjectStore",
    "check_name",
    "check_project_name",
    "dump_yaml",
]
