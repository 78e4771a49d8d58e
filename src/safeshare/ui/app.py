"""The workbench's pages and JSON API (Starlette): :func:`create_app`.

Screens, in the order of the work (each ``/p/<project>/<screen>``): data, privacy, run,
explore, risk, utility, release, surveillance. The JSON API under ``/api`` (docs/ui.md) is what the
pages' script calls and what a script may call. No handler computes anything: the figures are
the use cases' (through :mod:`safeshare.api.workbench` and the files a run wrote), and the
handlers only read, render and write the project's configuration.
"""

from __future__ import annotations

import json
import math
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any
from urllib.parse import quote

import jinja2
from markupsafe import Markup, escape
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from safeshare.api import workbench
from safeshare.app_runner import json_ready
from safeshare.errors import InputError
from safeshare.figures import number, percent
from safeshare.ui.markup import markdown_inline
from safeshare.ui.pending import Pending, PendingStore
from safeshare.ui.projects import Project, ProjectStore, check_name, check_project_name, dump_yaml
from safeshare.ui.runs import RunError, RunManager, preview_in_child, read_json
from safeshare.ui.uploads import SavedFile, Upload, UploadError, read_upload

HERE = Path(__file__).parent
#: The roles the Data screen offers (the vocabulary's, through :func:`safeshare.api.workbench.roles`).
ROLES = tuple(workbench.roles())
SCREENS = (
    ("data", "1 Data"),
    ("privacy", "2 Privacy"),
    ("run", "3 Run"),
    ("explore", "4 Explore"),
    ("risk", "5 Risk"),
    ("utility", "6 Utility"),
    ("release", "7 Release"),
    ("surveillance", "8 Surveillance"),
    ("history", "Run history"),
)
#: files of a run's output that may be downloaded
RELEASE_FILES = ("release.csv", "release.parquet", "report.json", "report.html")


@dataclass
class Settings:
    workdir: Path
    token: str
    host: str
    port: int
    max_upload: int = 4 << 30
    #: distinct values kept per column for hierarchy previews
    values_limit: int = 5000
    #: the largest hierarchy file the Data screen takes (checked in a child, never in the server)
    max_hierarchy: int = 64 << 20


class Context:
    """What the handlers share: the settings, the projects, the runs, the templates."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.store = ProjectStore(settings.workdir)
        self.runs = RunManager(settings.workdir)
        #: uploads waiting for their preview's "Create project" (never served)
        self.pending = PendingStore(self.store.root / ".pending")
        self.pending.sweep()
        self.templates = jinja2.Environment(
            loader=jinja2.FileSystemLoader(HERE / "templates"),
            autoescape=True,
            undefined=jinja2.ChainableUndefined,
            trim_blocks=True,
            lstrip_blocks=True,
        )
        self.templates.filters["num"] = _num
        self.templates.filters["pct"] = _pct
        self.templates.filters["md"] = markdown_inline
        self.templates.filters["zip"] = lambda a, b: list(zip(a, b, strict=False))
        self.templates.globals["screens"] = SCREENS
        self.templates.globals["roles"] = ROLES

    def render(self, name: str, status: int = 200, **values: Any) -> HTMLResponse:
        return HTMLResponse(self.templates.get_template(name).render(**values), status_code=status)


def _num(value: Any, digits: int = 4) -> str:
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if value != value:
            return "–"
        if value == 0:
            return "0"
        if abs(value) >= 1000:
            return f"{value:,.0f}"
        return number(value, digits)  # never rounded to a value it cannot have (safeshare.figures)
    return str(value)


def _pct(value: Any) -> str:
    return "–" if value is None else percent(float(value))


#: The deepest nesting a JSON body may have (a configuration nests five levels).
MAX_JSON_DEPTH = 32


def _json_object(text: str | bytes, what: str) -> dict[str, Any]:
    """The JSON object of a request body; :class:`InputError` (a 400 with one line) for anything
    else: not JSON, not an object, nested deeper than :data:`MAX_JSON_DEPTH`."""
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
        raise InputError(f"{what}: not a JSON document") from None
    if not isinstance(doc, dict):
        raise InputError(f"{what}: expected a JSON object, got {type(doc).__name__}")
    stack: list[tuple[Any, int]] = [(doc, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > MAX_JSON_DEPTH:
            raise InputError(f"{what}: nested deeper than {MAX_JSON_DEPTH} levels")
        children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return doc


def _int_param(request: Request, name: str, default: int) -> int:
    """An integer query parameter (``?limit=200``); :class:`InputError` (400) when it is not one."""
    text = request.query_params.get(name, "").strip()
    if not text:
        return default
    if not text.lstrip("-").isdigit() or len(text) > 12:
        raise InputError(f"{name}: expected a whole number, got {text[:40]!r}")
    return int(text)


def _error(exc: Exception, status: int = 400) -> JSONResponse:
    return JSONResponse({"error": " ".join(str(exc).split())}, status_code=status)


def ctx_of(request: Request) -> Context:
    ctx: Context = request.app.state.ctx
    return ctx


def project_of(request: Request) -> Project:
    return ctx_of(request).store.get(request.path_params["pid"])


def latest_run(ctx: Context, project: Project, kind: str) -> str | None:
    for run_id in project.run_ids():
        job = read_json(project.directory / "runs" / run_id / "job.json") or {}
        if job.get("kind") == kind:
            return run_id
    return None


def chosen_run(
    request: Request, project: Project, kind: str = "anonymize", needs: str | None = None
) -> str | None:
    """The run a screen shows: ``?run=ID`` (any run of the project: the run history links each),
    else the latest ``kind`` run that wrote ``needs`` (a file of the run's folder: Explore needs
    ``lattice.json``, Risk ``out/report.json``), else the latest ``kind`` run. A failed or cancelled run
    does not hide the releases before it; the screen says when a newer run exists
    (:func:`newer_run`)."""
    run_id = request.query_params.get("run")
    if run_id:
        project.run_dir(run_id)  # checks it
        return run_id
    if needs is not None:
        for rid in project.run_ids():
            job = read_json(project.directory / "runs" / rid / "job.json") or {}
            if job.get("kind") == kind and (
                (project.directory / "runs" / rid / needs).is_file()
                or (needs == LATTICE and exploring(ctx_of(request), project, rid))
            ):
                return rid
    return latest_run(ctx_of(request), project, kind)


#: Explore's file of a run (written by the run's child after the release is published)
LATTICE = "lattice.json"


def exploring(ctx: Context, project: Project, run_id: str) -> bool:
    """Whether the run's release is published and its lattice for Explore is still evaluated by
    its child (:meth:`~safeshare.ui.runs.RunManager.state`)."""
    directory = project.directory / "runs" / run_id
    return not (directory / LATTICE).is_file() and ctx.runs.state(directory).get("lattice") == "exploring"


def newer_run(ctx: Context, project: Project, run_id: str | None) -> dict[str, Any] | None:
    """The state of the project's latest anonymize run when it is not ``run_id`` (the screen shows
    an earlier run: it says so, with the newer run's status and a link to the run history)."""
    latest = latest_run(ctx, project, "anonymize")
    if latest is None or run_id is None or latest <= run_id:
        return None
    return ctx.runs.state(project.directory / "runs" / latest)


def run_summary(ctx: Context, project: Project, run_id: str) -> dict[str, Any]:
    """One row of the run history: what the run's own files say (job.json, state.json,
    report.json, run-<run>.yaml); nothing is computed here.

    ``node`` (the released node), ``k`` (the configured k-anonymity, from the run's own
    configuration), ``B`` (the release's B as its report states it), ``suppressed`` (records) and
    ``records``, ``verified`` (the independent verifier's verdict), ``released`` (a release file
    was published), ``one_off`` (the levels of a "Release this node" run) with ``picked_in``."""
    directory = project.directory / "runs" / run_id
    state = ctx.runs.state(directory)
    job = read_json(directory / "job.json") or {}
    params = job.get("params") or {}
    report = read_json(directory / "out" / "report.json") or {}
    config: dict[str, Any] = {}
    name = params.get("config")
    if isinstance(name, str) and (project.directory / name).is_file():
        from safeshare.config_checks import parse_yaml

        try:
            doc = parse_yaml((project.directory / name).read_text(encoding="utf-8"), name)
            config = dict(doc) if isinstance(doc, Mapping) else {}
        except InputError:
            config = {}
    privacy = config.get("privacy") if isinstance(config.get("privacy"), Mapping) else {}
    k_section = privacy.get("k-anonymity") if isinstance(privacy, Mapping) else None
    risk = (report.get("risk") or {}).get("release") or {}
    node = report.get("node")
    return {
        "id": run_id,
        "kind": job.get("kind"),
        "status": state.get("status"),
        "error": state.get("error"),
        "algorithm": config.get("algorithm", "ola") if config else None,
        "node": list(node) if isinstance(node, list) else None,
        "k": k_section.get("k") if isinstance(k_section, Mapping) else None,
        "B": risk.get("B"),
        "suppressed": report.get("suppressed_records"),
        "records": report.get("records_in"),
        "max_suppression": config.get("max_suppression"),
        "verified": bool(state.get("verified") or report.get("verified")),
        "released": any((directory / "out" / f).is_file() for f in ("release.csv", "release.parquet")),
        "one_off": params.get("node"),
        "picked_in": params.get("picked_in"),
        "config": name if isinstance(name, str) else None,
    }


def back(url: str, error: str | None = None, notice: str | None = None) -> RedirectResponse:
    sep = "&" if "?" in url else "?"
    if error:
        url += f"{sep}error={quote(' '.join(error.split()))}"
    elif notice:
        url += f"{sep}notice={quote(notice)}"
    return RedirectResponse(url, status_code=303)


# --------------------------------------------------------------------------- project building
def _move_into(upload: Upload, project: Project, field: str, folder: str) -> list[str]:
    """Move the uploaded files of ``field`` into the project's ``folder``; their relative paths."""
    moved = []
    for saved in upload.files_of(field):
        target = project.directory / folder / check_name(saved.name)
        shutil.move(str(saved.path), target)
        moved.append(f"{folder}/{saved.name}")
    return moved


def _missing(config: Mapping[str, Any]) -> list[str]:
    """The input's declared missing-value tokens of a project's configuration."""
    tokens = (config.get("input") or {}).get("missing") or []
    return [tokens] if isinstance(tokens, str) else [str(t) for t in tokens]


def _csv_list(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def _input_section(upload: Upload, path: str) -> dict[str, Any]:
    section: dict[str, Any] = {"path": path}
    if upload.value("header", "yes") in ("no", "false", "0", "off"):
        section["header"] = False
    names = _csv_list(upload.value("names"))
    if names:
        section["names"] = names
    delimiter = upload.value("delimiter")
    if delimiter and delimiter != ",":
        section["delimiter"] = "\t" if delimiter in ("\\t", "tab") else delimiter
    missing = workbench.missing_tokens(upload.value("missing"), upload.value("blank_missing") == "yes")
    if missing:
        section["missing"] = missing
    return section


def build_project(ctx: Context, upload: Upload) -> Project:
    """A project from an upload: a configuration and/or a data file, hierarchies, or a file
    picked under the work directory. Starts the profile run when there is an input."""
    project = ctx.store.create(upload.value("name"))
    try:
        configs = upload.files_of("config")
        data = _move_into(upload, project, "data", "data")
        hierarchies = _move_into(upload, project, "hierarchies", "hierarchies")
        picked = upload.value("path")
        if configs:
            from safeshare.config_checks import parse_yaml

            doc = parse_yaml(configs[0].path.read_text(encoding="utf-8"), configs[0].name)
            if not isinstance(doc, Mapping):
                raise InputError(f"{configs[0].name}: expected a mapping at the top level")
            config = dict(doc)
            section = dict(config.get("input") or {})
            if data:
                section["path"] = data[0]
            elif picked:
                section["path"] = _relative_to(ctx.store.inside(picked), project.directory)
            config["input"] = section
            _point_hierarchies(config, hierarchies)
        else:
            if data:
                path = data[0]
            elif picked:
                path = _relative_to(ctx.store.inside(picked), project.directory)
            else:
                raise InputError(
                    "give a data file (CSV or Parquet), a file under the work directory, or a config"
                )
            config = {
                "input": _input_section(upload, path),
                "privacy": {"k-anonymity": {"k": 5}},
                "max_suppression": 0.05,
                "metric": "prec",
                "algorithm": "ola",
            }
        workbench.confine_config(config, project.directory, ctx.settings.workdir)  # before anything reads it
        project.save_config(config)
        if config.get("input", {}).get("path"):
            start_profile(ctx, project)
    except BaseException:
        shutil.rmtree(project.directory, ignore_errors=True)
        raise
    return project


def _relative_to(path: Path, base: Path) -> str:
    import os

    return Path(os.path.relpath(path, base)).as_posix()


def _point_hierarchies(config: dict[str, Any], uploaded: list[str]) -> None:
    """Hierarchy files the configuration names and that were uploaded: point at the uploads."""
    by_name = {Path(p).name: p for p in uploaded}
    attributes = config.get("attributes")
    if not isinstance(attributes, dict):
        return
    for spec in attributes.values():
        if not isinstance(spec, dict):
            continue
        hierarchy = spec.get("hierarchy")
        if isinstance(hierarchy, str) and Path(hierarchy).name in by_name:
            spec["hierarchy"] = by_name[Path(hierarchy).name]
        elif isinstance(hierarchy, dict) and hierarchy.get("type") == "file":
            name = Path(str(hierarchy.get("path", ""))).name
            if name in by_name:
                hierarchy["path"] = by_name[name]


def start_profile(ctx: Context, project: Project) -> str:
    section = project.config().get("input") or {}
    workbench.confine_config({"input": section}, project.directory, ctx.settings.workdir)
    return ctx.runs.start(
        project.directory, "profile", {"input": section, "values_limit": ctx.settings.values_limit}
    )


def start_run(
    ctx: Context,
    project: Project,
    kind: str,
    node: Mapping[str, int] | None = None,
    source: str | None = None,
) -> str:
    """Start an ``anonymize`` or ``estimate`` run on a snapshot of the configuration
    (``run-<run>.yaml``: what "copy as YAML" shows for that run). ``node`` (QI -> level): a
    one-off run of that node (:func:`safeshare.api.workbench.node_config`): only the run's own
    snapshot says ``algorithm: node``, the project's configuration is not touched. ``source``:
    the run the node was picked in (the run history says so)."""
    from safeshare.ui.runs import new_run_id

    # a bad configuration, or one naming a file outside --workdir: refused before a child starts
    workbench.check_config(project.config_path, ctx.settings.workdir)
    run_id = new_run_id()
    config = workbench.node_config(project.config(), node) if node is not None else None
    name = project.snapshot(run_id, config)
    params: dict[str, Any] = {"config": name}
    if node is not None:
        params["node"] = dict(node)
        params["picked_in"] = source
    try:
        if config is not None:  # the one-off configuration is checked as the project's was
            workbench.check_config(project.directory / name, ctx.settings.workdir)
        return ctx.runs.start(project.directory, kind, params, run_id=run_id)
    except BaseException:
        (project.directory / name).unlink(missing_ok=True)
        raise


# --------------------------------------------------------------------------- pages
async def home(request: Request) -> Response:
    ctx = ctx_of(request)
    ctx.pending.sweep()
    return ctx.render(
        "home.html",
        projects=ctx.store.all(),
        files=ctx.store.data_files(),
        workdir=str(ctx.settings.workdir),
        error=request.query_params.get("error"),
        notice=request.query_params.get("notice"),
        project=None,
        screen=None,
        run_id=None,
    )


async def create_project_page(request: Request) -> Response:
    """The home page's form: a configuration (with its data and hierarchy files) makes the
    project at once, as its ``input:`` says how the data is read; a data file, or a file picked
    under the work directory, is previewed first (:func:`pending_page`): it waits in the pending
    area until "Create project". A file that is not CSV text (nor Parquet) is refused with one
    line and nothing is kept."""
    ctx = ctx_of(request)
    try:
        upload = await _upload(request, ctx)
    except UploadError as exc:
        return back("/", str(exc))
    try:
        _refuse_empty(upload)
        if upload.files_of("config"):
            project = build_project(ctx, upload)
            return back(f"/p/{project.id}/data")
        data = upload.files_of("data")
        picked = upload.value("path").strip()
        if data:
            await _preview(ctx, data[0].path, data[0].name)
            pending = ctx.pending.add(upload.value("name"), upload=data[0])
        elif picked:
            await _preview(ctx, ctx.store.inside(picked), picked)
            pending = ctx.pending.add(upload.value("name"), picked=picked)
        else:
            raise InputError(
                "give a data file (CSV or Parquet), a file under the work directory, or a config"
            )
    except (InputError, RunError) as exc:
        return back("/", str(exc))
    finally:
        upload.discard()
    return back(f"/projects/pending/{pending.id}")


def _refuse_empty(upload: Upload) -> None:
    """:class:`InputError` for an uploaded data file of no bytes (an empty file field sends none)."""
    for saved in upload.files:
        if saved.field == "data" and saved.size == 0:
            raise InputError(f"{saved.name}: empty: the file holds no records")


# --------------------------------------------------------------------------- the preview of a new project
#: The delimiter field's words for a tab.
TAB_WORDS = ("tab", "\\t", "\t")


async def _preview(
    ctx: Context, path: Path, name: str, delimiter: str | None = None, header: bool | None = None
) -> dict[str, Any]:
    """The preview of an input file, made in a child (:func:`~safeshare.ui.runs.preview_in_child`);
    :class:`InputError` with one line when the file is not CSV text (nor Parquet)."""
    request = {
        "path": str(path),
        "workdir": str(ctx.settings.workdir),
        "name": name,
        "delimiter": delimiter,
        "header": header,
    }
    return await preview_in_child(request)


def _delimiter_choice(text: str | None) -> str | None:
    """The delimiter a preview's field names (``tab`` for a tab), ``None`` when empty;
    :class:`InputError` for one the preview does not offer."""
    if text is None or text == "":
        return None
    if text in TAB_WORDS:
        return "\t"
    if text in workbench.input_delimiters():
        return text
    offered = " ".join("tab" if d == "\t" else d for d in workbench.input_delimiters())
    raise InputError(f"delimiter {text[:10]!r}: choose one of {offered}")


def _header_choice(text: str | None) -> bool | None:
    if text is None or text == "":
        return None
    if text in ("yes", "no"):
        return text == "yes"
    raise InputError(f"header {text[:10]!r}: expected yes or no")


def _pending_input(ctx: Context, pending: Pending) -> tuple[Path, str]:
    """The file of a pending upload (the upload, or the picked file under the work directory)
    and what the page calls it."""
    if pending.file is not None:
        return pending.file, pending.label
    return ctx.store.inside(pending.picked or ""), pending.label


def _choices(values: Mapping[str, Any]) -> dict[str, str]:
    """The preview form's fields as posted (or as the "Update preview" query gave them)."""
    keys = ("name", "delimiter", "header", "names", "missing", "blank_missing")
    return {key: str(values.get(key, "")) for key in keys if values.get(key) is not None}


def _pending_url(pending_id: str, choices: Mapping[str, str]) -> str:
    from urllib.parse import urlencode

    query = urlencode({k: v for k, v in choices.items() if v})
    return f"/projects/pending/{pending_id}" + (f"?{query}" if query else "")


async def pending_page(request: Request) -> Response:
    """The preview of a new project's input (issue 35): the delimiter (sniffed, or as chosen),
    the header (guessed, or as chosen), the first records split into columns and the column
    count, with the fields to correct them, "Create project" and "Cancel"."""
    ctx = ctx_of(request)
    ctx.pending.sweep()
    pending = ctx.pending.get(request.path_params["id"])
    choices = _choices(request.query_params)
    error = request.query_params.get("error")
    try:
        delimiter = _delimiter_choice(choices.get("delimiter"))
        header = _header_choice(choices.get("header"))
    except InputError as exc:
        delimiter, header, error = None, None, str(exc)
    path, label = _pending_input(ctx, pending)
    preview = await _preview(ctx, path, label, delimiter, header)
    return ctx.render(
        "preview.html",
        pending=pending,
        preview=preview,
        label=label,
        choices=choices,
        delimiters=[("tab" if d == "\t" else d, _delimiter_label(d)) for d in workbench.input_delimiters()],
        chosen_delimiter="tab" if preview.get("delimiter") == "\t" else preview.get("delimiter"),
        delimiter_label=_delimiter_label(preview.get("delimiter")),
        sniffed_label=_delimiter_label(preview.get("sniffed")),
        shown_columns=PREVIEW_COLUMNS,
        error=error,
        notice=None,
        project=None,
        screen=None,
        run_id=None,
    )


#: Columns the preview's table shows (a wider file says how many more it has).
PREVIEW_COLUMNS = 60


def _delimiter_label(delimiter: Any) -> str:
    names = {",": "comma (,)", ";": "semicolon (;)", "\t": "tab", "|": "pipe (|)"}
    return names.get(str(delimiter), repr(delimiter)) if delimiter is not None else ""


async def create_pending(request: Request) -> Response:
    """ "Create project" on a preview: the project, with the input settings the form gives
    (delimiter, header, names, missing tokens); refused with one line, and nothing created, when
    they do not fit the file (a delimiter that leaves it one column while another splits it, no
    header and no names, as many names as columns)."""
    ctx = ctx_of(request)
    form = await request.form()
    choices = _choices(form)
    pending_id = request.path_params["id"]
    pending = ctx.pending.get(pending_id)
    try:
        path, label = _pending_input(ctx, pending)
        delimiter = _delimiter_choice(choices.get("delimiter"))
        header = _header_choice(choices.get("header"))
        preview = await _preview(ctx, path, label, delimiter, header)
        name = choices.get("name", pending.name)
        fields: dict[str, list[str]] = {
            "name": [check_project_name(name) if name.strip() else ""],
            "missing": [choices.get("missing", "")],
            "blank_missing": [choices.get("blank_missing", "")],
        }
        if preview["format"] == "csv":
            _check_reading(preview, _csv_list(choices.get("names", "")))
            fields["delimiter"] = [preview["delimiter"]]
            fields["header"] = ["yes" if preview["header"] else "no"]
            fields["names"] = [choices.get("names", "")]
        project = _create_from(ctx, pending, fields)
    except (InputError, RunError) as exc:
        return back(_pending_url(pending_id, choices), str(exc))
    ctx.pending.remove(pending_id)
    return back(f"/p/{project.id}/data", notice=f"project {project.name} created")


def _check_reading(preview: Mapping[str, Any], names: list[str]) -> None:
    """:class:`InputError` when the reading settings do not fit the previewed file."""
    if preview.get("problem"):
        raise InputError(f"{preview['problem']}: nothing was created")
    columns = int(preview.get("columns") or 0)
    if not preview.get("header") and not names:
        raise InputError(
            f"the file has no header line: give its {columns} column names (comma-separated), "
            "or say its first line holds them"
        )
    if names and len(names) != columns:
        raise InputError(f"{len(names)} column names given, the file has {columns} columns")


def _create_from(ctx: Context, pending: Pending, fields: dict[str, list[str]]) -> Project:
    """The project of a pending upload (:func:`build_project`). The pending file is linked (or
    copied) into the upload, so that it is still there to try again if the project fails."""
    import os
    import secrets

    folder = ctx.store.root / f".incoming-{secrets.token_hex(6)}"
    folder.mkdir(mode=0o700, parents=True)
    upload = Upload(folder, dict(fields))
    try:
        if pending.file is not None:
            target = folder / pending.file.name
            try:
                os.link(pending.file, target)
            except OSError:
                shutil.copy2(pending.file, target)
            upload.files.append(SavedFile("data", target.name, target, target.stat().st_size))
        else:
            upload.fields["path"] = [pending.picked or ""]
        return build_project(ctx, upload)
    finally:
        upload.discard()


async def cancel_pending(request: Request) -> Response:
    """ "Cancel" on a preview: the uploaded file is removed; no project."""
    ctx = ctx_of(request)
    ctx.pending.remove(request.path_params["id"])
    return back("/", notice="the upload was discarded: no project was created")


# --------------------------------------------------------------------------- rename, delete, export
async def rename_project(request: Request) -> Response:
    project = project_of(request)
    form = await request.form()
    try:
        name = check_project_name(str(form.get("name", "")))
    except InputError as exc:
        return back(f"/p/{project.id}/data", str(exc))
    project.set_meta(name=name)
    return back(f"/p/{project.id}/data", notice=f"project renamed to {name}")


def _delete(ctx: Context, project: Project) -> None:
    """Remove the project's folder (first moved aside, so that no page or run meets half of it);
    :class:`RunError` while a run of it is going (nothing is removed)."""
    import secrets

    trash = ctx.store.root / f".deleting-{project.id}-{secrets.token_hex(4)}"
    ctx.runs.retire(project.directory, trash)
    shutil.rmtree(trash, ignore_errors=True)


async def delete_project(request: Request) -> Response:
    """Delete a project: the form's ``confirm`` must be the project's name (or its id) typed;
    refused while a run of the project is going."""
    ctx = ctx_of(request)
    project = project_of(request)
    form = await request.form()
    typed = str(form.get("confirm", "")).strip()
    if typed not in (project.name.strip(), project.id):
        return back(
            f"/p/{project.id}/data",
            f"type the project's name, {project.name}, to delete it: nothing was deleted",
        )
    try:
        _delete(ctx, project)
    except RunError as exc:
        return back(f"/p/{project.id}/data", str(exc))
    return back("/", notice=f"project {project.name} deleted")


def run_command(config_path: str, project_id: str, run_id: str) -> str:
    """A run's command line (the Release screen's): its configuration and an output folder of its own."""
    return f"safeshare anonymize {config_path} --out out/{project_id}/{run_id}"


async def _export(ctx: Context, project: Project) -> Response:
    """The project's export as a zip download (:func:`safeshare.ui.export.write_export`: never the
    data, the releases or the key), written under the work directory and removed once sent."""
    import os
    import secrets

    from starlette.background import BackgroundTask
    from starlette.concurrency import run_in_threadpool

    from safeshare.ui.export import write_export

    folder = ctx.store.root / ".exports"
    folder.mkdir(mode=0o700, exist_ok=True)
    target = folder / f"{project.id}-{secrets.token_hex(4)}.zip"

    def command(run_id: str) -> str:
        return (
            "# from this folder, with the input file at the path config.yaml names\n"
            f"safeshare anonymize run-{run_id}.yaml --out out/{run_id}"
        )

    try:
        await run_in_threadpool(write_export, project, target, command)
    except BaseException:
        target.unlink(missing_ok=True)
        raise
    return FileResponse(
        target,
        media_type="application/zip",
        filename=f"{project.id}-export.zip",
        background=BackgroundTask(os.unlink, target),
    )


async def export_project(request: Request) -> Response:
    return await _export(ctx_of(request), project_of(request))


#: The hidden field of every form that saves the configuration: the version it was rendered from.
VERSION_FIELD = "config_version"


def _seen(form: Mapping[str, Any]) -> str | None:
    """The configuration version a posted form was rendered from (``None``: not posted)."""
    value = form.get(VERSION_FIELD)
    return str(value) if value else None  # a page rendered without it posts it empty


def _page(request: Request, project: Project, screen: str, **values: Any) -> dict[str, Any]:
    return {
        "project": project,
        "config_version": project.version(),
        "screen": screen,
        "error": request.query_params.get("error"),
        "notice": request.query_params.get("notice"),
        **values,
    }


async def data_page(request: Request) -> Response:
    ctx = ctx_of(request)
    project = project_of(request)
    config = project.config()
    profile = project.profile()
    profiling = latest_run(ctx, project, "profile")
    profile_state = ctx.runs.state(project.directory / "runs" / profiling) if profiling else None
    attributes = config.get("attributes") or {}
    columns = project.columns()
    rows = []
    suggestions = {c["name"]: c for c in (profile or {}).get("columns", [])}
    for name in columns:
        spec = attributes.get(name) or {}
        hierarchy = spec.get("hierarchy") if isinstance(spec, dict) else None
        rows.append(
            {
                "name": name,
                "profile": suggestions.get(name),
                "role": spec.get("role") if isinstance(spec, dict) else None,
                "spec": spec if isinstance(spec, dict) else {},
                "hierarchy": hierarchy,
                "hierarchy_text": _hierarchy_text(hierarchy),
            }
        )
    return ctx.render(
        "data.html",
        **_page(
            request,
            project,
            "data",
            config=config,
            input=config.get("input") or {},
            rows=rows,
            profile=profile,
            profile_state=profile_state,
            profile_run=profiling,
            builders=workbench.builder_types(),
            run_id=None,
        ),
    )


def _hierarchy_text(hierarchy: Any) -> str:
    if hierarchy is None:
        return ""
    if isinstance(hierarchy, str):
        return hierarchy
    return dump_yaml(hierarchy).strip() if isinstance(hierarchy, Mapping) else str(hierarchy)


async def save_roles(request: Request) -> Response:
    project = project_of(request)
    form = await request.form()
    config = project.config()
    attributes = dict(config.get("attributes") or {})
    for name in project.columns():
        role = form.get(f"role-{name}")
        if role is None:
            continue
        role = str(role)
        if role not in ROLES:
            return back(
                f"/p/{project.id}/data", f"role {role!r} of {name!r}: expected one of {', '.join(ROLES)}"
            )
        previous = attributes.get(name) if isinstance(attributes.get(name), dict) else {}
        spec: dict[str, Any] = {"role": role}
        if role in ("quasi", "sensitive") and previous and previous.get("hierarchy") is not None:
            spec["hierarchy"] = previous["hierarchy"]
        if role in ("pseudonym", "shifted_date"):  # keyed: their options and the project's key
            try:
                spec = workbench.identifier_spec(name, role, previous or {}, form, project.columns())
            except InputError as exc:
                return back(f"/p/{project.id}/data", str(exc))
        attributes[name] = spec
    config["attributes"] = attributes
    try:
        project.check_version(_seen(form))
        keyed = workbench.ensure_key(project.directory, config)
        project.save_config(config, seen=_seen(form))
    except InputError as exc:
        return back(f"/p/{project.id}/data", str(exc))
    notice = "roles saved" + ("; a new key for the pseudonyms and shifted dates: key.hex" if keyed else "")
    return back(f"/p/{project.id}/data", notice=notice)


async def set_hierarchy(request: Request) -> Response:
    """A column's hierarchy: an uploaded ARX CSV file (at most ``max_hierarchy`` bytes), or a
    builder given as YAML. Checked against the column's values in a child process
    (:func:`~safeshare.ui.runs.hierarchy_in_child`): the server's event loop is never held by a
    large file, and the server never parses one."""
    ctx = ctx_of(request)
    project = project_of(request)
    try:
        upload = await _upload(request, ctx, ctx.settings.max_hierarchy + (1 << 20))
    except UploadError as exc:
        return back(f"/p/{project.id}/data", str(exc))
    try:
        column = upload.value("column")
        if column not in project.columns():
            raise InputError(f"unknown column {column!r}")
        config = project.config()
        attributes = dict(config.get("attributes") or {})
        spec = dict(attributes.get(column) or {"role": "quasi"})
        files = upload.files_of("file")
        values = project.values(column)
        if files:
            saved = files[0]
            name = check_name(saved.name)
            if saved.size > ctx.settings.max_hierarchy:
                raise InputError(
                    f"hierarchy file {name}: {saved.size:,} bytes, more than the workbench's limit of "
                    f"{ctx.settings.max_hierarchy:,}; build the hierarchy with a builder, or name the file "
                    "in a configuration (the run reads it)"
                )
            delimiter = _sniff_delimiter(saved.path)
            uploaded = {"type": "file", "path": str(saved.path), "delimiter": delimiter}
            # the whole file when the column's values are not known
            await _check_hierarchy(ctx, project, uploaded, column, values, _missing(config))
            target = project.directory / "hierarchies" / name
            shutil.move(str(saved.path), target)
            relative = f"hierarchies/{name}"
            spec["hierarchy"] = (
                relative if delimiter == ";" else {"type": "file", "path": relative, "delimiter": ","}
            )
        else:
            from safeshare.config_checks import parse_yaml

            builder = parse_yaml(upload.value("builder"), f"hierarchy of {column}")
            if not isinstance(builder, Mapping) or "type" not in builder:
                raise InputError(
                    f"hierarchy of {column}: a builder such as {{type: intervals, widths: [5, 10]}}"
                )
            spec["hierarchy"] = await _checked_builder(ctx, project, column, dict(builder))
        attributes[column] = spec
        config["attributes"] = attributes
        project.save_config(config, seen=upload.value(VERSION_FIELD) or None)
    except (InputError, UnicodeDecodeError) as exc:
        return back(f"/p/{project.id}/data", str(exc))
    finally:
        upload.discard()
    return back(f"/p/{project.id}/data", notice=f"hierarchy of {column} set")


async def _checked_builder(
    ctx: Context, project: Project, column: str, builder: dict[str, Any]
) -> dict[str, Any]:
    """A builder mapping confined under the workdir and checked against the column's values (the
    hierarchy must cover the data: checked now, not at run time)."""
    workbench.confine_config(
        {"attributes": {column: {"hierarchy": builder}}}, project.directory, ctx.settings.workdir
    )
    values = project.values(column)
    if values is not None:
        await _check_hierarchy(ctx, project, builder, column, values, _missing(project.config()))
    return builder


def _sniff_delimiter(path: Path) -> str:
    """``,`` when the file's first line (at most 1 MiB of it) has commas and no ``;``; else ARX's ``;``."""
    with path.open("rb") as handle:
        first = handle.readline(1 << 20).decode("utf-8", "replace")
    return "," if "," in first and ";" not in first else ";"


async def _check_hierarchy(
    ctx: Context, project: Project, spec: Any, column: str, values: list[str] | None, missing: list[str]
) -> dict[str, Any] | None:
    """A hierarchy entry checked for ``values`` (the input's ``missing`` tokens kept as they are,
    as a run builds it) in a child process: its levels and value -> label mapping
    (:func:`~safeshare.ui.runs.hierarchy_in_child`)."""
    from safeshare.ui.runs import hierarchy_in_child

    request = {
        "spec": spec,
        "base": str(project.directory),
        "workdir": str(ctx.settings.workdir),
        "column": column,
        "values": values,
        "missing": missing,
        "counts": project.counts(column) if values is not None else None,
    }
    return await hierarchy_in_child(request)


async def _hierarchy_view(
    ctx: Context, project: Project, column: str, spec: Any
) -> tuple[dict[str, Any], str | None]:
    """What ``spec`` gives for the column's values (levels, mapping, records) or the one line
    that says why it cannot be shown."""
    values = project.values(column)
    if spec is None:
        return {}, None
    if values is None:
        return {}, "the column's values are not profiled (too many distinct values, or no profile yet)"
    try:
        answer = await _check_hierarchy(ctx, project, spec, column, values, _missing(project.config()))
    except InputError as exc:
        return {}, str(exc)
    return answer or {}, None


def _hierarchy_values(
    request: Request,
    project: Project,
    column: str,
    spec: Any,
    answer: Mapping[str, Any],
    error: str | None,
    wizard: Mapping[str, str],
    candidate: bool,
) -> dict[str, Any]:
    return _page(
        request,
        project,
        "data",
        column=column,
        spec=_hierarchy_text(spec),
        levels=answer.get("levels") or [],
        mapping=answer.get("mapping") or [],
        records=answer.get("records") or [],
        n_values=answer.get("values") or 0,
        preview_error=error,
        wizard=wizard,
        wizard_fields=workbench.wizard_fields(),
        wizard_types=workbench.WIZARD_TYPES,
        wizard_shows=workbench.wizard_shows(spec) if not candidate else True,
        candidate=candidate,
        run_id=None,
    )


def _column_of(request: Request, project: Project) -> str:
    column = str(request.path_params["column"])
    if column not in project.columns():
        raise InputError(f"unknown column {column!r}: no such column")
    return column


async def hierarchy_page(request: Request) -> Response:
    """A column's hierarchy: what each value becomes at every level, with the records of each
    value and label, and the wizard that builds it (issue 35)."""
    ctx = ctx_of(request)
    project = project_of(request)
    column = _column_of(request, project)
    spec = ((project.config().get("attributes") or {}).get(column) or {}).get("hierarchy")
    answer, error = await _hierarchy_view(ctx, project, column, spec)
    wizard = workbench.wizard_form(spec, project.values(column))
    return ctx.render(
        "hierarchy.html", **_hierarchy_values(request, project, column, spec, answer, error, wizard, False)
    )


def _form_text(form: Mapping[str, Any]) -> dict[str, str]:
    return {str(k): str(v) for k, v in form.items() if isinstance(v, str)}


async def hierarchy_preview(request: Request) -> Response:
    """The wizard's candidate, not saved: the page (or, with ``?fragment=1``, its preview part,
    which the page's script swaps in as the fields change) with the mapping the posted fields
    give, or the one line of what is wrong with them."""
    ctx = ctx_of(request)
    project = project_of(request)
    column = _column_of(request, project)
    wizard = _form_text(await request.form())
    spec: Any = None
    try:
        spec = workbench.wizard_spec(wizard)
        answer, error = await _hierarchy_view(ctx, project, column, spec)
    except InputError as exc:
        answer, error = {}, str(exc)
    values = _hierarchy_values(request, project, column, spec, answer, error, wizard, True)
    name = "_hierarchy_preview.html" if request.query_params.get("fragment") else "hierarchy.html"
    return ctx.render(name, status=200 if error is None else 400, **values)


async def save_wizard(request: Request) -> Response:
    """The wizard's builder saved as the column's ``hierarchy:`` (checked against its values
    first; nothing saved when it fails)."""
    ctx = ctx_of(request)
    project = project_of(request)
    column = _column_of(request, project)
    form = _form_text(await request.form())
    here = f"/p/{project.id}/hierarchy/{quote(column)}"
    try:
        builder = await _checked_builder(ctx, project, column, workbench.wizard_spec(form))
        config = project.config()
        attributes = dict(config.get("attributes") or {})
        spec = dict(attributes.get(column) or {"role": "quasi"})
        spec["hierarchy"] = builder
        attributes[column] = spec
        config["attributes"] = attributes
        project.save_config(config, seen=_seen(form))
    except InputError as exc:
        return back(here, str(exc))
    return back(here, notice=f"hierarchy of {column} saved")


async def input_settings(request: Request) -> Response:
    """The input's reading options (header, names, delimiter, missing tokens); re-profiles."""
    ctx = ctx_of(request)
    project = project_of(request)
    form = await request.form()
    config = project.config()
    section = dict(config.get("input") or {})
    section["header"] = str(form.get("header", "yes")) == "yes"
    if section["header"]:
        section.pop("header")
    names = _csv_list(str(form.get("names", "")))
    if names:
        section["names"] = names
    else:
        section.pop("names", None)
    missing = workbench.missing_tokens(
        str(form.get("missing", "")), str(form.get("blank_missing", "")) == "yes"
    )
    if missing:
        section["missing"] = missing
    else:
        section.pop("missing", None)
    delimiter = str(form.get("delimiter", ","))
    if delimiter in ("", ","):
        section.pop("delimiter", None)
    else:
        section["delimiter"] = "\t" if delimiter in ("\\t", "tab") else delimiter
    config["input"] = section
    try:
        project.save_config(config, seen=_seen(form))
        start_profile(ctx, project)
    except (InputError, RunError) as exc:
        return back(f"/p/{project.id}/data", str(exc))
    return back(f"/p/{project.id}/data", notice="input options saved; profiling again")


async def privacy_page(request: Request) -> Response:
    ctx = ctx_of(request)
    project = project_of(request)
    config = project.config()
    models, options = workbench.privacy_form(config, project.meta.get("threshold_reason"))
    estimate_run = latest_run(ctx, project, "estimate")
    estimate_state = ctx.runs.state(project.directory / "runs" / estimate_run) if estimate_run else None
    estimate = (
        read_json(project.directory / "runs" / estimate_run / "estimate.json") if estimate_run else None
    )
    problem = None
    try:
        workbench.check_config(project.config_path, ctx.settings.workdir)
    except InputError as exc:
        problem = " ".join(str(exc).split())
    return ctx.render(
        "privacy.html",
        **_page(
            request,
            project,
            "privacy",
            models=models,
            options={field.key: field for field in options},
            shown=workbench.SHOWN,
            estimate=estimate,
            estimate_state=estimate_state,
            estimate_run=estimate_run,
            problem=problem,
            run_id=None,
        ),
    )


def _parse_number(text: str, key: str, kind: type) -> Any:
    """``text`` as an ``int`` or a finite ``float``; a one-line :class:`InputError` naming the
    form's field otherwise (never Python's own "invalid literal for int()")."""
    try:
        value = kind(text)
    except (ValueError, OverflowError):
        expected = "a whole number" if kind is int else "a number"
        raise InputError(f"{key}: expected {expected}, got {text[:40]!r}") from None
    if isinstance(value, float) and not math.isfinite(value):
        raise InputError(f"{key}: expected a finite number, got {text[:40]!r}")
    return value


def _number(form: Mapping[str, Any], key: str, kind: type, default: Any = None) -> Any:
    """The form's field ``key`` as a number of ``kind`` (``default`` when it is empty)."""
    text = str(form.get(key, "")).strip()
    return default if not text else _parse_number(text, key, kind)


async def save_privacy(request: Request) -> Response:
    """The Privacy form, written back through the configuration's models
    (:func:`safeshare.api.workbench.apply_privacy_form`): an unchanged form leaves the file as it
    was, a changed model is validated before anything is saved."""
    ctx = ctx_of(request)
    project = project_of(request)
    form = await request.form()
    try:
        config = project.config()
        project.check_version(_seen(form))
        saved = workbench.apply_privacy_form(config, form, project.meta.get("threshold_reason"))
        if saved != config:
            project.save_config(saved, seen=_seen(form))
        if "threshold_reason" in form:
            project.set_meta(threshold_reason=workbench.posted_reason(form))
        if form.get("estimate"):
            start_run(ctx, project, "estimate")
    except (InputError, RunError) as exc:
        return back(f"/p/{project.id}/privacy", str(exc))
    notes = workbench.privacy_notes(saved)
    return back(f"/p/{project.id}/privacy", notice="; ".join(["privacy settings saved", *notes]))


async def run_page(request: Request) -> Response:
    ctx = ctx_of(request)
    project = project_of(request)
    run_id = chosen_run(request, project)
    state = ctx.runs.state(project.run_dir(run_id)) if run_id else None
    problem = None
    try:
        workbench.check_config(project.config_path, ctx.settings.workdir)
    except InputError as exc:
        problem = " ".join(str(exc).split())
    # the configuration the shown run used (a one-off node release's differs from the project's)
    snapshot = project.directory / f"run-{run_id}.yaml" if run_id else None
    used = snapshot.read_text(encoding="utf-8") if snapshot is not None and snapshot.is_file() else None
    report = read_json(project.run_dir(run_id) / "out" / "report.json") if run_id else None
    shown = workbench.run_warnings(report)
    return ctx.render(
        "run.html",
        **_page(
            request,
            project,
            "run",
            run_id=run_id,
            state=state,
            problem=problem,
            config_text=used if used is not None else project.config_text(),
            summary=run_summary(ctx, project, run_id) if run_id else None,
            report=report,
            warnings=shown,
            acknowledge=acknowledgements(project, shown, state) if run_id else [],
        ),
    )


def acknowledgements(
    project: Project, warnings: list[Any], state: Mapping[str, Any] | None
) -> list[dict[str, Any]]:
    """The boxes "I acknowledge: CODE" beside a run's warnings: each code the run's certificate
    marks as contradicting its headline, or that refused its publication (the run's state
    ``acknowledge``, a failed run), ticked when the project's configuration accepts it now."""
    accepted = workbench.accepted_warnings(project.config())
    codes: list[str] = []
    for code in [w.code for w in warnings if w.contradicts] + list((state or {}).get("acknowledge") or []):
        if code not in codes:
            codes.append(code)
    return [{"code": c, "checked": c in accepted} for c in codes]


async def save_acknowledgements(request: Request) -> Response:
    """The boxes of :func:`acknowledgements`: the project's ``accept_warnings:`` keeps the codes it
    had that the form did not show, and takes the ticked ones of those it showed
    (:func:`safeshare.api.workbench.accept_warnings`); the configuration is checked as a whole
    (its models, :func:`~safeshare.api.workbench.check_config`) before it is saved, then it runs."""
    ctx = ctx_of(request)
    project = project_of(request)
    form = await request.form()
    shown = [str(c) for c in form.getlist("shown")]
    ticked = [str(c) for c in form.getlist("code") if c in shown]
    try:
        project.check_version(_seen(form))
        config = project.config()
        kept = [c for c in workbench.accepted_warnings(config) if c not in shown]
        saved = workbench.accept_warnings(config, kept + ticked)
        if saved != config:
            probe = project.directory / "config-check.yaml"
            probe.write_text(dump_yaml(saved), encoding="utf-8")
            try:
                workbench.check_config(probe, ctx.settings.workdir)
            finally:
                probe.unlink(missing_ok=True)
            project.save_config(saved, seen=_seen(form))
        run_id = start_run(ctx, project, "anonymize")
    except (InputError, RunError) as exc:
        return back(f"/p/{project.id}/run", " ".join(str(exc).split()))
    return back(f"/p/{project.id}/run?run={run_id}")


async def start_run_page(request: Request) -> Response:
    ctx = ctx_of(request)
    project = project_of(request)
    try:
        run_id = start_run(ctx, project, "anonymize")
    except (InputError, RunError) as exc:
        return back(f"/p/{project.id}/run", str(exc))
    return back(f"/p/{project.id}/run?run={run_id}")


@lru_cache(maxsize=4)
def _view(path: str, mtime: float) -> Any:
    return workbench.LatticeView.read(Path(path))


def view_of(project: Project, run_id: str) -> Any:
    directory = project.run_dir(run_id)
    lattice = directory / "lattice.json"
    if not lattice.is_file():
        raise InputError(f"run {run_id} has no lattice (it did not finish)")
    return _view(str(directory), lattice.stat().st_mtime)


async def explore_page(request: Request) -> Response:
    ctx = ctx_of(request)
    project = project_of(request)
    run_id = chosen_run(request, project, needs=LATTICE)
    if run_id is None:
        return ctx.render(
            "message.html",
            message="no run yet: start one on the Run screen",
            project=project,
            screen="explore",
            run_id=None,
        )
    if exploring(ctx, project, run_id):  # the release is out; the page reloads when the lattice is
        state = ctx.runs.state(project.directory / "runs" / run_id)
        return ctx.render("exploring.html", **_page(request, project, "explore", run_id=run_id, state=state))
    try:
        view = view_of(project, run_id)
    except InputError as exc:
        state = ctx.runs.state(project.directory / "runs" / run_id)
        message = state.get("lattice_error") or str(exc)
        return ctx.render("message.html", message=message, project=project, screen="explore", run_id=run_id)
    from safeshare.ui.hasse import hasse_svg

    drawn = len(view.nodes) <= 10_000 and view.complete
    limit = _int_param(request, "limit", 200)
    status = request.query_params.get("status", "anonymous")
    listed = view.listed(status)  # InputError (400, one line) for an unknown status
    ties = view.ties()
    tied = {n.levels for n in ties}
    ranked = listed[:limit] if limit > 0 else listed
    rows = [
        {"node": n, "tie": n.levels in tied, "labels": view.label_text(n.levels), "why_not": view.why_not(n)}
        for n in ranked
    ]
    return ctx.render(
        "explore.html",
        **_page(
            request,
            project,
            "explore",
            run_id=run_id,
            view=view,
            counts=view.counts(),
            svg=Markup(hasse_svg(view)) if drawn else None,
            rows=rows,
            listed=len(listed),
            list_status=status,
            statuses=(("anonymous", "anonymous"), ("not-anonymous", "not anonymous"), ("all", "all")),
            ties=ties,
            tie_rule=view.tie_rule(),
            optimum_labels=view.label_text(view.optimum) if view.optimum is not None else None,
            limit=limit,
            newer=newer_run(ctx, project, run_id),
        ),
    )


async def node_fragment(request: Request) -> Response:
    ctx = ctx_of(request)
    project = project_of(request)
    run_id = request.path_params["rid"]
    try:
        detail = workbench.node_detail(view_of(project, run_id), request.query_params.get("levels", ""))
    except InputError as exc:
        return HTMLResponse(f"<p class=error>{escape(str(exc))}</p>", status_code=400)
    return ctx.render(
        "node.html", node=detail, chart=Markup(_histogram_svg(detail)), project=project, run_id=run_id
    )


async def release_node(request: Request) -> Response:
    """Release the node picked in Explore as a one-off run: that run's own configuration
    (``run-<run>.yaml``) takes ``algorithm: node`` with the node's ``levels`` (so its "copy as
    YAML" reproduces it), the project's configuration keeps its algorithm (the next run searches
    again); the node is checked against the models like a searched one and released only if it
    qualifies."""
    ctx = ctx_of(request)
    project = project_of(request)
    form = await request.form()
    try:
        source = request.path_params["rid"]
        view = view_of(project, source)
        parts = str(form.get("levels", "")).split(",")
        if len(parts) != len(view.quasi_identifiers) or not all(p.strip().isdigit() for p in parts):
            raise InputError(f"levels: expected {len(view.quasi_identifiers)} levels joined by ','")
        view.node(",".join(p.strip() for p in parts))  # in the lattice (InputError if not)
        levels = {q: int(p) for q, p in zip(view.quasi_identifiers, parts, strict=True)}
        run_id = start_run(ctx, project, "anonymize", node=levels, source=source)
    except (InputError, RunError) as exc:
        return back(f"/p/{project.id}/explore", str(exc))
    return back(f"/p/{project.id}/run?run={run_id}")


def _histogram_svg(detail: Mapping[str, Any], width: int = 380) -> str:
    from safeshare.report.svg import bar_chart

    bins = [b for b in detail.get("histogram", []) if b["classes"] or b["low"] <= 10]
    return bar_chart(
        [b["label"] for b in bins],
        [b["classes"] for b in bins],
        "released classes by size",
        "classes",
        width=width,
        height=200,
    )


async def compare_fragment(request: Request) -> Response:
    ctx = ctx_of(request)
    project = project_of(request)
    try:
        view = view_of(project, request.path_params["rid"])
        keys = [k for k in request.query_params.get("nodes", "").split(";") if k][:4]
        details = [workbench.node_detail(view, key) for key in keys]
    except InputError as exc:
        return HTMLResponse(f"<p class=error>{escape(str(exc))}</p>", status_code=400)
    charts = [Markup(_histogram_svg(d, 260)) for d in details]
    return ctx.render(
        "compare.html", nodes=list(zip(details, charts, strict=True)), qis=view.quasi_identifiers
    )


async def risk_page(request: Request) -> Response:
    """The run's risk as its published report.json states it (:func:`safeshare.api.workbench.risk_view`:
    the risk section and the certificate's population, sensitivity and estimators), nothing
    recomputed; each figure carries ``data-key``, its key in report.json."""
    from safeshare.ui.charts import risk_bins_svg

    ctx = ctx_of(request)
    project = project_of(request)
    run_id = chosen_run(request, project, needs="out/report.json")
    report = read_json(project.run_dir(run_id) / "out" / "report.json") if run_id else None
    view = workbench.risk_view(report)
    if view is None:
        return ctx.render(
            "message.html",
            message="no finished run yet: start one on the Run screen",
            project=project,
            screen="risk",
            run_id=run_id,
        )
    found = view["risk"].get("threshold")
    threshold = float(found) if isinstance(found, int | float) else None
    return ctx.render(
        "risk.html",
        **_page(
            request,
            project,
            "risk",
            run_id=run_id,
            risk=view["risk"],
            certificate=view["certificate"],
            verdict=view["verdict"],
            say=workbench.measure_sentence,
            distribution=Markup(risk_bins_svg(view["bins"], threshold)) if view["bins"] else None,
            newer=newer_run(ctx, project, run_id),
        ),
    )


def _run_config_path(ctx: Context, project: Project, run_id: str) -> str:
    """The run's configuration (``run-<run>.yaml``) as a command line run from ``--workdir`` names it."""
    return _relative_to(project.directory / f"run-{run_id}.yaml", ctx.settings.workdir)


async def utility_page(request: Request) -> Response:
    """What the release keeps, as its published report.json states it
    (:func:`safeshare.api.workbench.utility_view`: each column before and after, suppression by
    category with the run's ``subgroup-suppressed`` warnings, the classifier check, information
    loss), nothing recomputed; each figure carries ``data-key``, its key in report.json."""
    ctx = ctx_of(request)
    project = project_of(request)
    run_id = chosen_run(request, project, needs="out/report.json")
    report = read_json(project.run_dir(run_id) / "out" / "report.json") if run_id else None
    view = workbench.utility_view(report, _run_config_path(ctx, project, run_id) if run_id else None)
    if view is None:
        return ctx.render(
            "message.html",
            message="no finished run yet: start one on the Run screen",
            project=project,
            screen="utility",
            run_id=run_id,
        )
    from safeshare.ui.charts import before_after_svg

    charts = [
        None if col["skipped"] else Markup(before_after_svg(col["column"], col["chart"]))
        for col in view["columns"]
    ]
    return ctx.render(
        "utility.html",
        **_page(
            request,
            project,
            "utility",
            run_id=run_id,
            view=view,
            charts=charts,
            newer=newer_run(ctx, project, run_id),
        ),
    )


async def release_page(request: Request) -> Response:
    ctx = ctx_of(request)
    project = project_of(request)
    run_id = chosen_run(request, project, needs="out/report.json")
    if run_id is None:
        return ctx.render(
            "message.html",
            message="no run yet: start one on the Run screen",
            project=project,
            screen="release",
            run_id=None,
        )
    directory = project.run_dir(run_id)
    state = ctx.runs.state(directory)
    report = read_json(directory / "out" / "report.json")
    config_name = f"run-{run_id}.yaml"
    config_text = (
        (project.directory / config_name).read_text(encoding="utf-8")
        if (project.directory / config_name).is_file()
        else ""
    )
    config_path = _run_config_path(ctx, project, run_id)
    out_hint = f"out/{project.id}/{run_id}"  # each run's command line writes where no other run's does
    files = [name for name in RELEASE_FILES if (directory / "out" / name).is_file()]
    shown = workbench.run_warnings(report)
    return ctx.render(
        "release.html",
        **_page(
            request,
            project,
            "release",
            run_id=run_id,
            state=state,
            report=report,
            warnings=shown,
            acknowledge=acknowledgements(project, shown, state),
            files=files,
            config_text=config_text,
            config_path=config_path,
            cli=run_command(config_path, project.id, run_id),
            python=(
                "from safeshare import api\n\n"
                f'release = api.anonymize("{config_path}", "{out_hint}")\n'
                'print(release.report["levels"])'
            ),
            reason=project.meta.get("threshold_reason", ""),
            summary=run_summary(ctx, project, run_id),
            newer=newer_run(ctx, project, run_id),
        ),
    )


async def warnings_fragment(request: Request) -> Response:
    """The disclosure warnings of a run (``_warnings.html``): the Run screen fetches them when the
    run it follows ends."""
    ctx = ctx_of(request)
    project = project_of(request)
    report = read_json(project.run_dir(request.path_params["rid"]) / "out" / "report.json")
    return ctx.render("_warnings.html", report=report, warnings=workbench.run_warnings(report))


async def help_warnings(request: Request) -> Response:
    """What each disclosure warning code means (:func:`~safeshare.workflows.run_warnings.explanations`),
    one anchor a code: the Run and Release screens link each warning here."""
    return ctx_of(request).render("help_warnings.html", explanations=workbench.warning_explanations())


async def history_page(request: Request) -> Response:
    """Every anonymize run of the project, newest first (:func:`run_summary`), each openable in
    Explore, Risk and Release."""
    ctx = ctx_of(request)
    project = project_of(request)
    rows = [run_summary(ctx, project, r) for r in _anonymize_runs(project)]
    return ctx.render("history.html", **_page(request, project, "history", rows=rows, run_id=None))


def _anonymize_runs(project: Project) -> list[str]:
    return [
        r
        for r in project.run_ids()
        if (read_json(project.directory / "runs" / r / "job.json") or {}).get("kind") == "anonymize"
    ]


async def api_history(request: Request) -> Response:
    """The run history as JSON: the rows of the Run history page."""
    ctx = ctx_of(request)
    try:
        project = project_of(request)
    except InputError as exc:
        return _error(exc, 404)
    return JSONResponse({"runs": [run_summary(ctx, project, r) for r in _anonymize_runs(project)]})


async def surveillance_page(request: Request) -> Response:
    ctx = ctx_of(request)
    project = project_of(request)
    run_id = latest_run(ctx, project, "surveil-simulate")
    state = ctx.runs.state(project.run_dir(run_id)) if run_id else None
    result = read_json(project.run_dir(run_id) / "surveillance.json") if run_id else None
    chart = None
    if result:
        from safeshare.ui.charts import bands_svg

        title = (
            f"PK{result['k']}: mean and 95% range, region {result['region']}, "
            f"lag {result['lag']}, {result['simulations']} simulations"
        )
        chart = Markup(bands_svg(result["periods"], result["bands"], title))
    return ctx.render(
        "surveillance.html",
        **_page(
            request,
            project,
            "surveillance",
            run_id=None,
            state=state,
            result=result,
            chart=chart,
            files=ctx.store.data_files(),
            defaults=workbench.surveillance_defaults(),
        ),
    )


async def start_surveillance(request: Request) -> Response:
    ctx = ctx_of(request)
    project = project_of(request)
    form = await request.form()
    try:
        params = {
            "population": str(ctx.store.inside(str(form.get("population", "")), "population table")),
            "cases": str(ctx.store.inside(str(form.get("cases", "")), "case series")),
            "region": str(form.get("region", "")).strip(),
            "policies": _csv_list(str(form.get("policies", ""))),
            **{  # an empty field is the default (api.workbench.surveillance_defaults)
                key: _number(form, key, type(default), default)
                for key, default in workbench.surveillance_defaults().items()
            },
            "volumes": [_parse_number(v, "volumes", int) for v in _csv_list(str(form.get("volumes", "")))],
            "layout": str(form.get("layout", "long")),
        }
        ctx.runs.start(project.directory, "surveil-simulate", params)
    except (InputError, RunError) as exc:
        return back(f"/p/{project.id}/surveillance", str(exc))
    return back(f"/p/{project.id}/surveillance")


async def run_file(request: Request) -> Response:
    """A file of a run's output: the release (download) and its reports."""
    project = project_of(request)
    name = request.path_params["name"]
    if name not in RELEASE_FILES and name not in ("simulation.svg",):
        return PlainError(f"{name}: not a file of a run", 404, request)
    path = project.run_dir(request.path_params["rid"]) / "out" / name
    if not path.is_file():
        return PlainError(f"{name}: not written by this run", 404, request)
    if name == "report.html":
        return FileResponse(path, media_type="text/html; charset=utf-8")
    download = request.query_params.get("download") is not None or name.startswith("release")
    return FileResponse(
        path, filename=f"{project.id}-{request.path_params['rid']}-{name}" if download else None
    )


def PlainError(message: str, status: int, request: Request | None = None) -> Response:
    """One line saying what went wrong: a page of the workbench for a browser (it asks for
    ``text/html``: a titled page in the workbench's frame, readable by a screen reader), the line
    as plain text for a script."""
    if request is not None and "text/html" in request.headers.get("accept", ""):
        return ctx_of(request).render("message.html", status, message=message, heading="Error")
    return Response(message + "\n", status_code=status, media_type="text/plain; charset=utf-8")


# --------------------------------------------------------------------------- JSON API
async def _upload(request: Request, ctx: Context, limit: int | None = None) -> Upload:
    limit = min(limit, ctx.settings.max_upload) if limit is not None else ctx.settings.max_upload
    length = request.headers.get("content-length")
    if length is not None and length.isdigit() and int(length) > limit:
        raise UploadError(f"upload larger than the limit of {limit:,} bytes", 413)
    incoming = ctx.store.root
    incoming.mkdir(parents=True, exist_ok=True)
    if request.headers.get("content-type", "").startswith("application/x-www-form-urlencoded"):
        import secrets

        form = await request.form()  # text fields only: nothing is written
        folder = incoming / f".incoming-{secrets.token_hex(6)}"
        folder.mkdir(mode=0o700)
        return Upload(folder, {key: [str(v) for v in form.getlist(key)] for key in form})
    return await read_upload(request.headers.get("content-type", ""), request.stream(), incoming, limit)


def _project_doc(ctx: Context, project: Project) -> dict[str, Any]:
    return {
        "id": project.id,
        "name": project.name,
        "config": json_ready(project.config()),  # a YAML date (governance.review_date) as its text
        "config_yaml": project.config_text(),
        "profile": project.profile(),
        "runs": [ctx.runs.state(project.directory / "runs" / r) for r in project.run_ids()],
    }


async def api_projects(request: Request) -> Response:
    ctx = ctx_of(request)
    if request.method == "GET":
        return JSONResponse({"projects": [{"id": p.id, "name": p.name} for p in ctx.store.all()]})
    try:
        upload = await _upload(request, ctx)
    except UploadError as exc:
        return _error(exc, exc.status)
    try:
        await _check_api_input(ctx, upload)
        project = build_project(ctx, upload)
    except (InputError, RunError) as exc:
        return _error(exc)
    finally:
        upload.discard()
    return JSONResponse(_project_doc(ctx, project), status_code=201)


async def _check_api_input(ctx: Context, upload: Upload) -> None:
    """The JSON API's data file (or picked file), without a configuration: refused when it is
    not CSV text (nor Parquet), or when its delimiter leaves it one column while another splits
    it; the sniffed delimiter is used when none is given (the header is as given: yes by
    default)."""
    _refuse_empty(upload)
    if upload.files_of("config"):
        return
    data = upload.files_of("data")
    picked = upload.value("path").strip()
    if data:
        path, name = data[0].path, data[0].name
    elif picked:
        path, name = ctx.store.inside(picked), picked
    else:
        return  # build_project says what is missing
    given = upload.value("delimiter")
    delimiter = None if given == "" else "\t" if given in TAB_WORDS else given
    header = upload.value("header", "yes") not in ("no", "false", "0", "off")
    preview = await _preview(ctx, path, name, delimiter, header)
    if preview.get("problem"):
        raise InputError(f"{name}: {preview['problem']} (the delimiter field)")
    if delimiter is None and preview.get("delimiter") not in (None, ","):
        upload.fields["delimiter"] = [str(preview["delimiter"])]


async def api_project(request: Request) -> Response:
    """GET a project; PATCH its name (``{"name": ...}``); DELETE it (409 while a run is going)."""
    ctx = ctx_of(request)
    try:
        project = project_of(request)
    except InputError as exc:
        return _error(exc, 404)
    if request.method == "PATCH":
        try:
            doc = _json_object(await request.body(), "the project")
            unknown = sorted(set(doc) - {"name"})
            if unknown:
                raise InputError(f"{unknown[0][:40]!r}: a project's name is the one field to change")
            if not isinstance(doc.get("name"), str):
                raise InputError('name: expected a text, e.g. {"name": "adult k=5"}')
            name = check_project_name(doc["name"])
        except InputError as exc:
            return _error(exc)
        project.set_meta(name=name)
        return JSONResponse({"id": project.id, "name": project.name})
    if request.method == "DELETE":
        try:
            _delete(ctx, project)
        except RunError as exc:
            return _error(exc, 409)
        return JSONResponse({"deleted": project.id})
    return JSONResponse(_project_doc(ctx, project))


async def api_export(request: Request) -> Response:
    """The project's export (a zip: never the data, the releases or the key)."""
    ctx = ctx_of(request)
    try:
        project = project_of(request)
    except InputError as exc:
        return _error(exc, 404)
    return await _export(ctx, project)


async def api_config(request: Request) -> Response:
    """PUT the configuration (YAML text, or JSON); GET it as YAML. A configuration naming a file
    outside ``--workdir`` is refused (400) and not saved."""
    workdir = ctx_of(request).settings.workdir
    try:
        project = project_of(request)
    except InputError as exc:
        return _error(exc, 404)
    if request.method == "GET":
        return Response(project.config_text(), media_type="application/yaml")
    body = await request.body()
    if len(body) > 1 << 20:
        return _error(InputError("configuration larger than 1 MiB"), 413)
    try:
        text = body.decode("utf-8")
        if request.headers.get("content-type", "").startswith("application/json"):
            text = dump_yaml(_json_object(text, "the configuration"))
        project.save_config_text(text, lambda doc: workbench.confine_config(doc, project.directory, workdir))
    except (InputError, UnicodeDecodeError) as exc:
        return _error(exc)
    return JSONResponse({"id": project.id, "config_yaml": project.config_text()})


async def api_runs(request: Request) -> Response:
    ctx = ctx_of(request)
    try:
        project = project_of(request)
    except InputError as exc:
        return _error(exc, 404)
    if request.method == "GET":
        return JSONResponse(
            {"runs": [ctx.runs.state(project.directory / "runs" / r) for r in project.run_ids()]}
        )
    try:
        doc = _json_object((await request.body()) or b"{}", "the run")
        kind = doc.get("kind", "anonymize")
        if kind in ("anonymize", "estimate"):
            run_id = start_run(ctx, project, kind)
        elif kind == "profile":
            run_id = start_profile(ctx, project)
        else:
            raise InputError(f"kind {str(kind)[:40]!r}: expected anonymize, estimate or profile")
    except RunError as exc:
        return _error(exc, 409)
    except InputError as exc:
        return _error(exc)
    return JSONResponse(ctx.runs.state(project.run_dir(run_id)), status_code=202)


def _run_dir(request: Request) -> tuple[Project, Path]:
    project = project_of(request)
    return project, project.run_dir(request.path_params["rid"])


async def api_run(request: Request) -> Response:
    ctx = ctx_of(request)
    try:
        _, directory = _run_dir(request)
    except InputError as exc:
        return _error(exc, 404)
    return JSONResponse(ctx.runs.state(directory))


async def api_cancel(request: Request) -> Response:
    ctx = ctx_of(request)
    try:
        _, directory = _run_dir(request)
    except InputError as exc:
        return _error(exc, 404)
    cancelled = ctx.runs.cancel(directory)
    return JSONResponse(
        {"cancelled": cancelled, **ctx.runs.state(directory)}, status_code=202 if cancelled else 409
    )


async def api_run_json(request: Request) -> Response:
    """report.json, the lattice view, the Risk and Utility screens' figures (report.json's) or the
    estimate of a run."""
    try:
        project, directory = _run_dir(request)
    except InputError as exc:
        return _error(exc, 404)
    what = request.path_params["what"]
    if what == "risk":  # the Risk screen's figures: report.json's (workbench.risk_view)
        view = workbench.risk_view(read_json(directory / "out" / "report.json"))
        if view is None:
            return _error(InputError("risk: not written by this run"), 404)
        return JSONResponse(view)
    if what == "utility":  # the Utility screen's figures: report.json's (workbench.utility_view)
        config = _run_config_path(ctx_of(request), project, request.path_params["rid"])
        found = workbench.utility_view(read_json(directory / "out" / "report.json"), config)
        if found is None:
            return _error(InputError("utility: not written by this run"), 404)
        return JSONResponse(found)
    path = {
        "report": directory / "out" / "report.json",
        "lattice": directory / "lattice.json",
        "estimate": directory / "estimate.json",
        "surveillance": directory / "surveillance.json",
    }.get(what)
    if path is None:
        return _error(InputError(f"{what}: unknown"), 404)
    if not path.is_file():
        return _error(InputError(f"{what}: not written by this run"), 404)
    return Response(path.read_bytes(), media_type="application/json")


async def api_node(request: Request) -> Response:
    try:
        project, _ = _run_dir(request)
        return JSONResponse(
            workbench.node_detail(view_of(project, request.path_params["rid"]), request.path_params["levels"])
        )
    except InputError as exc:
        return _error(exc, 404)


async def api_files(request: Request) -> Response:
    try:
        _, directory = _run_dir(request)
    except InputError as exc:
        return _error(exc, 404)
    return JSONResponse({"files": [n for n in RELEASE_FILES if (directory / "out" / n).is_file()]})


async def not_found(request: Request, exc: Exception) -> Response:
    if request.url.path.startswith("/api/"):
        return _error(exc if isinstance(exc, InputError) else InputError("not found"), 404)
    return PlainError(f"not found: {exc}", 404, request)


def create_app(settings: Settings) -> Any:
    """The workbench: pages, the JSON API and the static files, behind the
    :class:`~safeshare.ui.security.Guard`."""
    from safeshare.ui.security import Guard

    ctx = Context(settings)
    pid = "/p/{pid:str}"
    run = "/api/projects/{pid:str}/runs/{rid:str}"
    routes = [
        Route("/", home),
        Route("/favicon.ico", lambda r: Response(status_code=204)),
        Route("/help/warnings", help_warnings),
        Route("/projects", create_project_page, methods=["POST"]),
        Route("/projects/pending/{id:str}", pending_page),
        Route("/projects/pending/{id:str}", create_pending, methods=["POST"]),
        Route("/projects/pending/{id:str}/cancel", cancel_pending, methods=["POST"]),
        Route(f"{pid}", lambda r: RedirectResponse(f"/p/{r.path_params['pid']}/data", 303)),
        Route(f"{pid}/data", data_page),
        Route(f"{pid}/input", input_settings, methods=["POST"]),
        Route(f"{pid}/rename", rename_project, methods=["POST"]),
        Route(f"{pid}/delete", delete_project, methods=["POST"]),
        Route(f"{pid}/export", export_project, methods=["POST"]),
        Route(f"{pid}/roles", save_roles, methods=["POST"]),
        Route(f"{pid}/hierarchy", set_hierarchy, methods=["POST"]),
        Route(f"{pid}/hierarchy/{{column:str}}", hierarchy_page),
        Route(f"{pid}/hierarchy/{{column:str}}/preview", hierarchy_preview, methods=["POST"]),
        Route(f"{pid}/hierarchy/{{column:str}}", save_wizard, methods=["POST"]),
        Route(f"{pid}/privacy", privacy_page),
        Route(f"{pid}/privacy", save_privacy, methods=["POST"]),
        Route(f"{pid}/run", run_page),
        Route(f"{pid}/run", start_run_page, methods=["POST"]),
        Route(f"{pid}/accept-warnings", save_acknowledgements, methods=["POST"]),
        Route(f"{pid}/explore", explore_page),
        Route(f"{pid}/risk", risk_page),
        Route(f"{pid}/utility", utility_page),
        Route(f"{pid}/release", release_page),
        Route(f"{pid}/surveillance", surveillance_page),
        Route(f"{pid}/history", history_page),
        Route(f"{pid}/surveillance", start_surveillance, methods=["POST"]),
        Route(f"{pid}/runs/{{rid:str}}/node", node_fragment),
        Route(f"{pid}/runs/{{rid:str}}/release-node", release_node, methods=["POST"]),
        Route(f"{pid}/runs/{{rid:str}}/compare", compare_fragment),
        Route(f"{pid}/runs/{{rid:str}}/warnings", warnings_fragment),
        Route(f"{pid}/runs/{{rid:str}}/files/{{name:str}}", run_file),
        Route("/api/projects", api_projects, methods=["GET", "POST"]),
        Route("/api/projects/{pid:str}", api_project, methods=["GET", "PATCH", "DELETE"]),
        Route("/api/projects/{pid:str}/export", api_export),
        Route("/api/projects/{pid:str}/config", api_config, methods=["GET", "PUT"]),
        Route("/api/projects/{pid:str}/runs", api_runs, methods=["GET", "POST"]),
        Route("/api/projects/{pid:str}/history", api_history),
        Route(run, api_run),
        Route(f"{run}/cancel", api_cancel, methods=["POST"]),
        Route(f"{run}/files", api_files),
        Route(f"{run}/files/{{name:str}}", run_file),
        Route(f"{run}/nodes/{{levels:str}}", api_node),
        Route(f"{run}/{{what:str}}", api_run_json),
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
    ]

    async def input_error(request: Request, exc: Exception) -> Response:
        if request.url.path.startswith("/api/"):
            return _error(exc, 404 if "no such" in str(exc) else 400)
        return PlainError(f"error: {exc}", 404 if "no such" in str(exc) else 400, request)

    app = Starlette(routes=routes, exception_handlers={InputError: input_error, 404: not_found})
    app.state.ctx = ctx
    return Guard(app, settings.token, settings.host, settings.port)


__all__ = ["Context", "Settings", "create_app"]
