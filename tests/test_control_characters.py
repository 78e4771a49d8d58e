"""No released value carries a terminal control character (issue 30, the attack run's list).

A kept column whose values held ESC sequences, a CR or a C1 control once reached release.csv as
they were. safeshare refuses them (verify/control.py, in the verifier's one scan of the written
file): nothing is published, and the message names the column, the count and the code point,
never the value. TAB and LF (a line break inside a quoted CSV field) are allowed."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from tests.conftest import run_cli, small_people

YAML = """\
input: {path: people.csv}
attributes:
  name: {role: identifying}
  age: {role: quasi, hierarchy: age.csv}
  zip: {role: quasi, hierarchy: zip.csv}
  diagnosis: {role: sensitive}
  note: {role: insensitive}
privacy: {k-anonymity: {k: 2}}
max_suppression: 10%
# the run's warnings that contradict its headline, acknowledged (issue 33)
accept_warnings: [kept-column-identifying]
"""


def _people(directory: Path, notes: list[str]) -> Path:
    engine, schema = small_people()
    frame = engine.frame.assign(note=[notes[i % len(notes)] for i in range(len(engine.frame))])
    frame.to_csv(directory / "people.csv", index=False, quoting=csv.QUOTE_MINIMAL)
    for qi in ("age", "zip"):
        rows = schema.attributes[qi].hierarchy.rows  # type: ignore[union-attr]
        (directory / f"{qi}.csv").write_text("".join(";".join(r) + "\n" for r in rows))
    (directory / "people.yaml").write_text(YAML)
    return directory / "people.yaml"


@pytest.mark.parametrize("engine", ["memory", "duckdb"])
@pytest.mark.parametrize(
    ("value", "code"),
    [
        ("\x1b]0;owned\x07title", "U+001B"),  # an OSC sequence: retitles the terminal
        ("\x1b[2J cleared", "U+001B"),
        ("bell\x07", "U+0007"),
        ("c1 \x9b31m", "U+009B"),  # a one-byte CSI
        ("del\x7f", "U+007F"),
    ],
)
def test_a_control_character_in_a_kept_value_is_never_published(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], engine: str, value: str, code: str
) -> None:
    config = _people(tmp_path, ["plain", value])
    out = tmp_path / "out"
    status, _, stderr = run_cli(
        ["anonymize", str(config), "--out", str(out), "-q", "--no-tradeoff", "--engine", engine], capsys
    )
    assert status == 1, stderr
    lines = stderr.splitlines()
    assert len(lines) == 1 and "nothing was written" in lines[0], stderr
    assert f"column 'note': 1 distinct value(s) hold the control character {code}" in lines[0], lines[0]
    assert value not in stderr and "\x1b" not in stderr and "\r" not in stderr.rstrip("\n")
    assert not out.exists()


@pytest.mark.parametrize("engine", ["memory", "duckdb"])
def test_a_carriage_return_in_a_field_is_refused_when_the_input_is_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], engine: str
) -> None:
    """CR (which returns the cursor and hides what was printed before it) inside a quoted field
    is refused by the readers already (mixed line endings), before anything runs."""
    config = _people(tmp_path, ["plain", "ok\rFAKE"])
    out = tmp_path / "out"
    status, _, stderr = run_cli(
        ["anonymize", str(config), "--out", str(out), "-q", "--no-tradeoff", "--engine", engine], capsys
    )
    assert status == 2 and len(stderr.splitlines()) == 1 and "FAKE" not in stderr, stderr
    assert not out.exists()


@pytest.mark.parametrize("engine", ["memory", "duckdb"])
def test_tabs_and_line_breaks_inside_a_field_are_released(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], engine: str
) -> None:
    config = _people(tmp_path, ["two\tcolumns", "two\nlines", "plain"])
    out = tmp_path / "out"
    status, _, stderr = run_cli(
        ["anonymize", str(config), "--out", str(out), "-q", "--no-tradeoff", "--engine", engine], capsys
    )
    assert status == 0, stderr
    with (out / "release.csv").open(newline="") as handle:
        notes = {row["note"] for row in csv.DictReader(handle)}
    assert notes == {"two\tcolumns", "two\nlines", "plain"}


@pytest.mark.parametrize("engine", ["memory", "duckdb"])
def test_a_control_character_in_a_parquet_input_is_never_published(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], engine: str
) -> None:
    import pandas as pd

    config = _people(tmp_path, ["plain", "nul\x00byte"])
    pd.read_csv(tmp_path / "people.csv", dtype=str, keep_default_na=False).to_parquet(
        tmp_path / "people.parquet"
    )
    config.write_text(YAML.replace("people.csv", "people.parquet"))
    out = tmp_path / "out"
    status, _, stderr = run_cli(
        ["anonymize", str(config), "--out", str(out), "-q", "--no-tradeoff", "--engine", engine], capsys
    )
    assert status == 1 and len(stderr.splitlines()) == 1, stderr
    assert "column 'note': 1 distinct value(s) hold the control character U+0000" in stderr, stderr
    assert not out.exists()


def test_the_byte_scan_finds_every_control_character_and_no_other(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """verify/control.py's CSV scan: every refused character is found wherever it falls, a C1
    control split between two chunks included; TAB, LF and other non-ASCII text are not."""
    from safeshare.verify import control

    monkeypatch.setattr(control, "CHUNK", 7)
    file = tmp_path / "r.csv"
    allowed = 'a,b\n"x\ty","two\nlines"\nnbsp\u00a0é,ü€\n'
    file.write_text(allowed, encoding="utf-8")
    assert not control.csv_holds_control(file)
    refused = [chr(c) for c in [*range(0x00, 0x09), *range(0x0B, 0x20), 0x7F, *range(0x80, 0xA0)]]
    for char in refused:
        for at in range(len(allowed) + 1):  # every position, so every chunk boundary
            file.write_text(allowed[:at] + char + allowed[at:], encoding="utf-8")
            assert control.csv_holds_control(file), (hex(ord(char)), at)


def test_a_csv_release_without_its_byte_test_is_an_error_not_a_pass() -> None:
    """The verifier takes a CSV release's control-character test from the bytes it read
    (verify/file_scan.py); a call without it must not read as "no control character"."""
    import duckdb

    from safeshare.verify import control

    con = duckdb.connect()
    con.execute("CREATE TABLE r AS SELECT 'a' || chr(27) AS note")
    with pytest.raises(ValueError, match="control-character test is missing"):
        control.control_failures(con, "r", "csv", ["note"], {}, None)
    assert control.control_failures(con, "r", "csv", ["note"], {}, False) == []  # the byte test rules
    assert len(control.control_failures(con, "r", "csv", ["note"], {}, True)) == 1
    assert len(control.control_failures(con, "r", "parquet", ["note"], {}, None)) == 1
