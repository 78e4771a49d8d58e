"""New projects through a preview, and rename, delete and export of projects (issue 35).

The home page's upload first shows a preview (the sniffed delimiter, a header guess, the first
records split into columns) and creates the project only on "Create project", with the input
settings the preview's form gives; a file that is not CSV text is refused with one line and no
project is made. A project can be renamed, deleted (its name typed; never while a run of it is
going) and exported as a zip that never holds its key (key.hex) nor its data. On main a
``;``-separated file became one column and a binary file a project whose profile failed.
"""

from __future__ import annotations

import html
import io
import json
import re
import subprocess
import sys
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

import pytest
import yaml

from tests.test_ui_api import PEOPLE, Bench, open_bench
from tests.test_ui_identifiers import AGE, CONFIG, VISITS

SEMICOLONS = PEOPLE.replace(",", ";")
#: test_ui_identifiers' visits, whose record number becomes a pseudonym (the project's key)
KEYED = CONFIG.replace("shifted-date-identifying]", "shifted-date-identifying, likely-repeated-persons]")
assert KEYED != CONFIG
FIRST_RECORD = PEOPLE.splitlines()[1].split(",")  # 20,F,12345,flu


def _listing(bench: Bench) -> list[str]:
    """Everything under the projects' directory (the pending area and leftovers included)."""
    root = bench.workdir / "safeshare-projects"
    return sorted(str(p.relative_to(root)) for p in root.rglob("*")) if root.exists() else []


def _projects(bench: Bench) -> list[str]:
    return [p["id"] for p in bench.client.get("/api/projects").json()["projects"]]


def _location(answer: object) -> str:
    assert answer.status_code == 303, (answer.status_code, answer.text)  # type: ignore[attr-defined]
    return unquote(answer.headers["location"])  # type: ignore[attr-defined]


def _error_of(location: str) -> str:
    values = parse_qs(urlsplit(location).query).get("error")
    assert values, location
    (message,) = values
    assert "\n" not in message and "Traceback" not in message
    return message


def _upload(bench: Bench, filename: str, content: bytes, **fields: str) -> str:
    """Post the home page's form with a data file; where it redirects."""
    answer = bench.client.post(
        "/projects", files={"data": (filename, content)}, data=fields, follow_redirects=False
    )
    return _location(answer)


def _value(page: str, testid: str) -> str:
    found = re.search(rf'data-testid="{testid}" data-value="([^"]*)"', page)
    assert found, testid
    return found.group(1)


def _table(page: str) -> tuple[list[str], list[list[str]]]:
    """The preview table's header cells and its rows' cells."""
    table = page.split('data-testid="preview-table"', 1)[1].split("</table>", 1)[0]
    head = re.findall(r'<th scope="col">([^<]*)</th>', table)
    body = table.split("<tbody>", 1)[1]
    rows = [re.findall(r"<td>([^<]*)</td>", row) for row in body.split("</tr>") if "<td>" in row]
    return head, rows


def _post(bench: Bench, url: str, **fields: str) -> str:
    """Post a page's form; where it redirects."""
    return _location(bench.client.post(url, data=fields, follow_redirects=False))


_create = _post


@pytest.fixture()
def bench(tmp_path: Path) -> Iterator[Bench]:
    with open_bench(tmp_path) as made:
        yield made


# --------------------------------------------------------------------------- the preview
def test_a_semicolon_file_is_previewed_as_columns_and_created_with_its_delimiter(bench: Bench) -> None:
    before = _projects(bench)
    pending = _upload(bench, "people.csv", SEMICOLONS.encode(), name="semicolons")
    assert pending.startswith("/projects/pending/"), pending
    assert _projects(bench) == before  # nothing created by the upload
    waiting = bench.workdir / "safeshare-projects" / ".pending" / pending.rsplit("/", 1)[1]
    assert (waiting / "people.csv").read_text() == SEMICOLONS

    page = bench.client.get(pending).text
    assert _value(page, "preview-delimiter") == ";"
    assert _value(page, "preview-header") == "yes"
    assert _value(page, "preview-columns") == "4"
    head, rows = _table(page)
    assert head == ["age", "sex", "zip", "diagnosis"]
    assert len(rows) == 10 and rows[0] == FIRST_RECORD
    assert "preview-problem" not in page
    # the pending file is never served
    assert SEMICOLONS.encode() not in bench.client.get(f"{pending}/people.csv").content

    # "," leaves it one column while ";" splits it: shown, and "Create project" refuses it
    wrong = html.unescape(bench.client.get(f"{pending}?delimiter=,").text)
    assert _value(wrong, "preview-columns") == "1"
    assert "with the delimiter ',' the file is one column, with ';' it has 4" in wrong
    message = _error_of(_create(bench, pending, delimiter=",", header="yes", name="semicolons"))
    assert "one column" in message and "nothing was created" in message
    assert _projects(bench) == before and waiting.is_dir()

    location = _create(bench, pending, delimiter=";", header="yes", name="semicolons")
    pid = location.split("/p/", 1)[1].split("/", 1)[0]
    assert _projects(bench) == [pid, *before]
    config = yaml.safe_load((bench.directory(pid) / "config.yaml").read_text())
    assert config["input"] == {"path": "data/people.csv", "delimiter": ";"}
    assert (bench.directory(pid) / "data" / "people.csv").read_text() == SEMICOLONS
    assert not waiting.exists()  # the pending upload is gone once created
    bench.idle(pid)
    project = bench.client.get(f"/api/projects/{pid}").json()
    assert project["name"] == "semicolons"
    assert [c["name"] for c in project["profile"]["columns"]] == ["age", "sex", "zip", "diagnosis"]
    assert project["profile"]["records"] == 120


def test_the_preview_corrects_the_header_and_checks_the_names(bench: Bench) -> None:
    """A file without a header line (guessed so), named on the preview; a wrong count of names
    or none at all is refused with one line and nothing is created."""
    body = "".join(line + "\n" for line in PEOPLE.splitlines()[1:])
    pending = _upload(bench, "people.data", body.encode())
    page = bench.client.get(pending).text
    assert _value(page, "preview-header") == "no" and _value(page, "preview-delimiter") == ","
    head, rows = _table(page)
    assert head == ["column 1", "column 2", "column 3", "column 4"] and rows[0] == FIRST_RECORD
    before = _projects(bench)
    for names, expected in (
        ("", "the file has no header line: give its 4 column names"),
        ("age,sex,zip", "3 column names given, the file has 4 columns"),
    ):
        message = _error_of(_create(bench, pending, delimiter=",", header="no", names=names))
        assert message.startswith(expected), message
    assert "choose one of , ; tab |" in _error_of(_create(bench, pending, delimiter=":", header="no"))
    long_name = _create(bench, pending, delimiter=",", header="yes", name="n" * 101)
    assert "a project's name has at most 100 characters, got 101" in _error_of(long_name)
    assert _projects(bench) == before
    # saying the first line holds names shows it as the header
    as_header = bench.client.get(f"{pending}?header=yes").text
    assert _table(as_header)[0] == FIRST_RECORD
    location = _create(bench, pending, delimiter=",", header="no", names="age,sex,zip,diagnosis", missing="?")
    pid = location.split("/p/", 1)[1].split("/", 1)[0]
    config = yaml.safe_load((bench.directory(pid) / "config.yaml").read_text())
    assert config["input"] == {
        "path": "data/people.data",
        "header": False,
        "names": ["age", "sex", "zip", "diagnosis"],
        "missing": ["?"],
    }
    bench.idle(pid)
    assert bench.client.get(f"/api/projects/{pid}").json()["profile"]["records"] == 120


def test_a_picked_tab_separated_file_is_previewed_and_created(bench: Bench) -> None:
    (bench.workdir / "shared").mkdir()
    (bench.workdir / "shared" / "people.tsv").write_text(PEOPLE.replace(",", "\t"))
    answer = bench.client.post("/projects", data={"path": "shared/people.tsv"}, follow_redirects=False)
    pending = _location(answer)
    page = bench.client.get(pending).text
    assert _value(page, "preview-delimiter") == "tab" and _value(page, "preview-columns") == "4"
    pid = _create(bench, pending, delimiter="tab", header="yes").split("/p/", 1)[1].split("/", 1)[0]
    config = yaml.safe_load((bench.directory(pid) / "config.yaml").read_text())
    assert config["input"] == {"path": "../../shared/people.tsv", "delimiter": "\t"}
    assert (bench.workdir / "shared" / "people.tsv").exists()  # a picked file stays where it is


NOT_CSV = {
    "binary": ("people.csv", bytes(range(256)) * 40, "a binary file (it holds NUL bytes), not CSV text"),
    "empty": ("people.csv", b"", "people.csv: empty: the file holds no records"),
    "blank lines": ("people.csv", b"\n \n\n", "people.csv: empty: the file holds no records"),
    "not UTF-8": ("people.csv", "name,city\nJosé,Köln\n".encode("latin-1"), "people.csv: not UTF-8 text"),
    "a header only": ("people.csv", b"age,sex,zip\n", "only a header line (3 names), no records"),
    "a Parquet file named .csv": ("people.csv", b"PAR1\x15\x04\x00\x00PAR1", "a Parquet file; give it"),
    "not Parquet": ("people.parquet", PEOPLE.encode(), "not a Parquet file (it does not start with PAR1)"),
    "not gzip": ("people.csv.gz", PEOPLE.encode(), "not a gzip file"),
    "an image": ("photo.csv", b"\x89PNG\r\n\x1a\n" + bytes(range(1, 40)) * 30, "a binary file"),
}


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Bench]:
    """One workbench holding one project (and the folders it made), for the refused uploads."""
    with open_bench(tmp_path_factory.mktemp("refused")) as made:
        made.project()
        yield made


@pytest.mark.parametrize("case", list(NOT_CSV))
def test_a_file_that_is_not_csv_creates_no_project(shared: Bench, case: str) -> None:
    bench = shared
    name, content, expected = NOT_CSV[case]
    before = _listing(bench)
    projects = _projects(bench)
    location = _upload(bench, name, content)
    assert location.startswith("/?error="), location
    assert expected in _error_of(location), _error_of(location)
    assert _listing(bench) == before and _projects(bench) == projects
    # the JSON API refuses it too, with the same line
    answer = bench.client.post("/api/projects", files={"data": (name, content)})
    assert answer.status_code == 400 and expected in answer.json()["error"], answer.text
    assert _listing(bench) == before
    page = bench.client.get(location).text
    assert 'data-testid="error"' in page


def test_a_pending_upload_is_removed_on_cancel_and_after_an_hour(bench: Bench) -> None:
    pending = _upload(bench, "people.csv", PEOPLE.encode())
    pending_id = pending.rsplit("/", 1)[1]
    folder = bench.workdir / "safeshare-projects" / ".pending"
    assert [p.name for p in folder.iterdir()] == [pending_id]
    answer = bench.client.post(f"{pending}/cancel", follow_redirects=False)
    assert "no project was created" in _location(answer)
    assert list(folder.iterdir()) == [] and _projects(bench) == []
    gone = bench.client.get(pending)
    assert gone.status_code == 404 and "no such upload waiting" in gone.text
    assert bench.client.post(pending, data={"delimiter": ","}, follow_redirects=False).status_code == 404

    kept = _upload(bench, "people.csv", PEOPLE.encode()).rsplit("/", 1)[1]
    assert bench.ctx.pending.sweep(now=time.time() + 600) == []  # ten minutes on: still there
    assert bench.ctx.pending.sweep(now=time.time() + 3601) == [kept]
    assert list(folder.iterdir()) == []
    assert bench.client.get(f"/projects/pending/{kept}").status_code == 404
    for odd in ("../../etc", "x" * 16, "ABCDEF0123456789"):
        assert bench.client.get(f"/projects/pending/{odd}").status_code == 404


def test_the_json_api_sniffs_the_delimiter_and_refuses_one_column(bench: Bench) -> None:
    answer = bench.client.post("/api/projects", files={"data": ("people.csv", SEMICOLONS.encode())})
    assert answer.status_code == 201, answer.text
    assert answer.json()["config"]["input"] == {"path": "data/people.csv", "delimiter": ";"}
    commas = bench.client.post("/api/projects", files={"data": ("people.csv", PEOPLE.encode())})
    assert commas.json()["config"]["input"] == {"path": "data/people.csv"}  # as before: no delimiter key
    given = bench.client.post(
        "/api/projects", files={"data": ("people.csv", SEMICOLONS.encode())}, data={"delimiter": ","}
    )
    assert given.status_code == 400
    assert "with the delimiter ',' the file is one column, with ';' it has 4" in given.json()["error"]
    for pid in (answer.json()["id"], commas.json()["id"]):
        bench.idle(pid)


# --------------------------------------------------------------------------- rename
def test_rename_a_project_and_refuse_bad_names(bench: Bench) -> None:
    pid = bench.project()
    directory = bench.directory(pid)
    assert "notice=project renamed to adult k=3" in _post(bench, f"/p/{pid}/rename", name="  adult k=3  ")
    assert json.loads((directory / "project.json").read_text())["name"] == "adult k=3"
    assert ">adult k=3</a>" in bench.client.get("/").text
    for name, expected in (
        ("", "a project's name cannot be empty"),
        ("   ", "a project's name cannot be empty"),
        ("x" * 101, "a project's name has at most 100 characters, got 101"),
        ("two\nlines", "cannot hold a control character"),
    ):
        location = _post(bench, f"/p/{pid}/rename", name=name)
        assert expected in _error_of(location), location
        assert json.loads((directory / "project.json").read_text())["name"] == "adult k=3"
    assert _post(bench, f"/p/{pid}/rename", name="y" * 100)
    assert bench.client.get(f"/api/projects/{pid}").json()["name"] == "y" * 100
    # the JSON API
    patched = bench.client.patch(f"/api/projects/{pid}", json={"name": "renamed"})
    assert patched.status_code == 200 and patched.json() == {"id": pid, "name": "renamed"}
    for body, expected in (
        ({"name": ""}, "cannot be empty"),
        ({"name": 5}, "name: expected a text"),
        ({"name": "a", "config": {}}, "a project's name is the one field to change"),
        ([1], "expected a JSON object"),
    ):
        refused = bench.client.patch(f"/api/projects/{pid}", json=body)
        assert refused.status_code == 400 and expected in refused.json()["error"], refused.text
    assert bench.client.get(f"/api/projects/{pid}").json()["name"] == "renamed"
    assert bench.client.patch("/api/projects/20990101-00000000", json={"name": "x"}).status_code == 404
    foreign = bench.client.post(
        f"/p/{pid}/rename", data={"name": "evil"}, headers={"Origin": "http://evil.example"}
    )
    assert foreign.status_code == 403 and bench.client.get(f"/api/projects/{pid}").json()["name"] == "renamed"


# --------------------------------------------------------------------------- delete
def _fake_running(bench: Bench, pid: str) -> subprocess.Popen[bytes]:
    """A run of the project that is going: a child alive and no state.json (as a profile run
    is while it reads)."""
    from safeshare.ui.runs import Run

    run_dir = bench.directory(pid) / "runs" / "20990101-000000-abcdef"
    run_dir.mkdir()
    (run_dir / "job.json").write_text(json.dumps({"kind": "profile"}))
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    bench.ctx.runs._runs[run_dir.name] = Run(run_dir.name, "profile", run_dir, process)
    return process


def test_delete_a_project_with_its_name_typed_never_while_a_run_goes(bench: Bench) -> None:
    pid = bench.project()
    other = bench.project()
    directory = bench.directory(pid)
    name = bench.client.get(f"/api/projects/{pid}").json()["name"]
    for typed in ("", "wrong", name + "x"):
        location = _post(bench, f"/p/{pid}/delete", confirm=typed)
        assert f"type the project's name, {name}, to delete it: nothing was deleted" in _error_of(location)
        assert directory.is_dir()
    process = _fake_running(bench, pid)
    try:
        location = _post(bench, f"/p/{pid}/delete", confirm=name)
        assert "is still running; cancel it" in _error_of(location) and directory.is_dir()
        refused = bench.client.delete(f"/api/projects/{pid}")
        assert refused.status_code == 409 and "nothing was deleted" in refused.json()["error"]
        assert directory.is_dir()
    finally:
        process.kill()
        process.wait()
    foreign = bench.client.post(
        f"/p/{pid}/delete", data={"confirm": name}, headers={"Origin": "http://evil.example"}
    )
    assert foreign.status_code == 403 and directory.is_dir()
    location = _post(bench, f"/p/{pid}/delete", confirm=name)
    assert location == f"/?notice=project {name} deleted"
    assert not directory.exists() and _projects(bench) == [other]
    assert not [p for p in (bench.workdir / "safeshare-projects").iterdir() if p.name.startswith(".deleting")]
    assert bench.client.get(f"/p/{pid}/data").status_code == 404
    assert bench.client.get(f"/api/projects/{pid}").status_code == 404
    # the JSON API; the id typed deletes too
    assert bench.client.delete(f"/api/projects/{other}").json() == {"deleted": other}
    assert bench.client.delete(f"/api/projects/{other}").status_code == 404
    third = bench.project()
    assert _post(bench, f"/p/{third}/delete", confirm=third)
    assert _projects(bench) == []


# --------------------------------------------------------------------------- export
def _zip(content: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(content)) as archive:
        return {info.filename: archive.read(info) for info in archive.infolist()}


def test_export_holds_the_configuration_and_reports_never_the_key_or_the_data(tmp_path: Path) -> None:
    with open_bench(tmp_path) as bench:
        pid = bench.upload(
            [
                ("config", ("visits.yaml", KEYED.encode())),
                ("data", ("visits.csv", VISITS.encode())),
                ("hierarchies", ("age.csv", AGE.encode())),
            ]
        )
        directory = bench.directory(pid)
        saved = bench.client.post(f"/p/{pid}/roles", data={"role-mrn": "pseudonym"}, follow_redirects=False)
        assert "a new key" in _location(saved)
        key = (directory / "key.hex").read_text().strip()
        assert len(key) == 64
        started = bench.client.post(f"/api/projects/{pid}/runs", json={"kind": "anonymize"})
        assert started.status_code == 202, started.text
        rid = started.json()["id"]
        (state,) = [r for r in bench.idle(pid, 300) if r["id"] == rid]
        assert state["status"] == "done" and state["verified"], state
        assert (directory / "runs" / rid / "out" / "release.csv").is_file()

        answer = bench.client.post(f"/p/{pid}/export")
        assert answer.status_code == 200, answer.text
        assert answer.headers["content-type"] == "application/zip"
        assert f'filename="{pid}-export.zip"' in answer.headers["content-disposition"]
        entries = _zip(answer.content)
        names = sorted(n.removeprefix(f"{pid}/") for n in entries)
        assert names == sorted(
            [
                "README.txt",
                "project.json",
                "config.yaml",
                "hierarchies/age.csv",
                f"run-{rid}.yaml",
                f"runs/{rid}/command.txt",
                f"runs/{rid}/report.json",
                f"runs/{rid}/report.html",
            ]
        ), names
        assert all(n.startswith(f"{pid}/") for n in entries)
        assert entries[f"{pid}/config.yaml"] == (directory / "config.yaml").read_bytes()
        assert (
            entries[f"{pid}/runs/{rid}/report.json"]
            == (directory / "runs" / rid / "out" / "report.json").read_bytes()
        )
        command = entries[f"{pid}/runs/{rid}/command.txt"].decode()
        assert f"safeshare anonymize run-{rid}.yaml --out out/{rid}" in command
        readme = entries[f"{pid}/README.txt"].decode()
        assert "Left out: the input data file (data/visits.csv)" in readme and "key.hex" in readme
        for name, content in entries.items():
            assert Path(name).name != "key.hex" and not name.startswith(f"{pid}/data/"), name
            assert "release." not in name and "values.json" not in name, name
            assert key.encode() not in content, name
            for record in VISITS.splitlines()[1:4]:
                assert record.encode() not in content, (name, record)
        # the JSON API gives the same entries; the page says what is left out
        same = bench.client.get(f"/api/projects/{pid}/export")
        assert sorted(_zip(same.content)) == sorted(entries)
        note = bench.client.get(f"/p/{pid}/data").text
        assert "Not in it: the input data file" in note and "key.hex" in note
        assert list((bench.workdir / "safeshare-projects" / ".exports").iterdir()) == []
        assert bench.client.get("/api/projects/20990101-00000000/export").status_code == 404
        assert (
            bench.client.post(f"/p/{pid}/export", headers={"Origin": "http://evil.example"}).status_code
            == 403
        )


def test_export_never_holds_a_key_named_otherwise(bench: Bench) -> None:
    """A key under another name (``key_file:`` of an uploaded configuration, kept among the
    hierarchy files) stays out of the export too."""
    from tests.test_ui_api import CONFIG as PEOPLE_CONFIG

    pid = bench.project(PEOPLE_CONFIG + "key_file: hierarchies/secret.key\n")
    (bench.directory(pid) / "hierarchies" / "secret.key").write_text("ab" * 32 + "\n")
    (bench.directory(pid) / "key.hex").write_text("cd" * 32 + "\n")
    entries = _zip(bench.client.get(f"/api/projects/{pid}/export").content)
    assert sorted(n.removeprefix(f"{pid}/") for n in entries) == [
        "README.txt",
        "config.yaml",
        "hierarchies/age.csv",
        "hierarchies/zip.csv",
        "project.json",
    ]
