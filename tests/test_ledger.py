"""The release ledger (issue 20): hash-chained entries appended atomically under a lock;
``safeshare ledger verify`` exits 0 on an intact ledger of three releases and 1, naming the
entry, after one byte of any entry or of any released file is changed."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from safeshare import Anonymizer, KAnonymity
from safeshare.errors import InputError
from safeshare.io import HASH_CHUNK, files_of, sha256_file
from safeshare.workflows.ledger import (
    GENESIS,
    LedgerError,
    append_entry,
    canonical,
    entry_hash,
    release_entry,
    verify_ledger,
)
from safeshare.workflows.release import write_release
from tests.conftest import run_cli, small_people

ROOT = Path(__file__).resolve().parent.parent


def test_sha256_of_a_file_is_streamed_and_directories_expand(tmp_path: Path) -> None:
    data = os.urandom(3 * HASH_CHUNK + 17)
    (tmp_path / "big.bin").write_bytes(data)
    assert sha256_file(tmp_path / "big.bin") == hashlib.sha256(data).hexdigest()
    (tmp_path / "d" / "e").mkdir(parents=True)
    for name in ("d/b", "d/a", "d/e/c"):
        (tmp_path / name).write_text(name)
    assert [p.relative_to(tmp_path).as_posix() for p in files_of(tmp_path / "d")] == ["d/a", "d/b", "d/e/c"]
    assert files_of(tmp_path / "big.bin") == [tmp_path / "big.bin"]


def _three_releases(tmp_path: Path) -> tuple[Path, list[Path]]:
    """Three published releases of the same input with k = 2, 3, 4, each recorded in the ledger."""
    engine, schema = small_people()
    data = tmp_path / "people.csv"
    engine.frame.to_csv(data, index=False)
    config = tmp_path / "people.yaml"
    config.write_text("# the configuration of these releases\n")
    hierarchy = tmp_path / "age.csv"
    hierarchy.write_text("20;20s;*\n")
    ledger = tmp_path / "releases.jsonl"
    outs = []
    for k in (2, 3, 4):
        result = Anonymizer(schema, [KAnonymity(k)]).fit(engine)
        out = tmp_path / f"release-k{k}"
        published = write_release(result, engine, out, html=False)
        entry = release_entry(
            ledger,
            {
                "input": [data],
                "config": [config],
                "hierarchy": [hierarchy],
                "release": [published.release],
                "report": [published.report_json],
            },
            "A. Officer (privacy office)",
            node=result.node,
            levels=result.levels,
            risk={"prosecutor_max": 1 / result.min_class_size},
            verification=published.verification.to_dict(),
            extra={"engine": engine.name},
        )
        append_entry(ledger, entry)
        outs.append(out)
    return ledger, outs


def test_an_intact_ledger_of_three_releases_verifies(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ledger, _ = _three_releases(tmp_path)
    lines = ledger.read_text().splitlines()
    assert len(lines) == 3
    entries = [json.loads(line) for line in lines]
    assert [e["seq"] for e in entries] == [1, 2, 3]
    assert entries[0]["prev_sha256"] == GENESIS
    for before, after in zip(lines, entries[1:], strict=False):
        assert after["prev_sha256"] == hashlib.sha256(before.encode()).hexdigest()
    assert all(
        e["entry_sha256"] == entry_hash(e) and canonical(e) == line
        for e, line in zip(entries, lines, strict=True)
    )
    first = entries[0]
    assert (
        first["approved_by"] == "A. Officer (privacy office)"
        and first["node"]
        and first["verification"]["passed"]
    )
    assert {f["role"] for f in first["files"]} == {"input", "config", "hierarchy", "release", "report"}
    assert all(not Path(f["path"]).is_absolute() for f in first["files"])
    result = verify_ledger(ledger)
    assert result.ok and result.entries == 3 and result.files_checked == 3 * 5 - 2 * 3  # shared files once
    assert result.head_sha256 == hashlib.sha256(lines[-1].encode()).hexdigest()
    code, stdout, _ = run_cli(["ledger", "verify", str(ledger)], capsys)
    assert code == 0 and "3 entries, the hash chain holds" in stdout


def test_one_changed_byte_anywhere_in_the_ledger_names_its_entry(tmp_path: Path) -> None:
    ledger, _ = _three_releases(tmp_path)
    original = ledger.read_bytes()
    starts = [0] + [i + 1 for i, b in enumerate(original) if b == ord("\n")]
    for position in range(len(original)):
        changed = bytearray(original)
        changed[position] ^= 0x01 if original[position] != ord("\n") - 1 else 0x02
        ledger.write_bytes(bytes(changed))
        result = verify_ledger(ledger)
        line = max(n for n, start in enumerate(starts, start=1) if start <= position)
        line = min(line, 3)  # the last newline belongs to the last entry
        assert not result.ok, position
        assert result.broken_entry == line, (position, result.problem)
    ledger.write_bytes(original)
    assert verify_ledger(ledger).ok


@pytest.mark.parametrize("entry", [1, 2, 3])
def test_cli_names_the_broken_entry_of_a_changed_ledger_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], entry: int
) -> None:
    ledger, _ = _three_releases(tmp_path)
    lines = ledger.read_text().splitlines(keepends=True)
    lines[entry - 1] = lines[entry - 1].replace("A. Officer", "B. Officer")
    ledger.write_text("".join(lines))
    code, stdout, stderr = run_cli(["ledger", "verify", str(ledger)], capsys)
    assert code == 1 and f"entry {entry} is broken" in stdout
    # the command's own status 1, not an error: nothing on stderr (it said "internal error: Exit: 1")
    assert stderr == "", stderr


@pytest.mark.parametrize("which", [0, 1, 2])
def test_one_changed_byte_of_a_released_file_names_its_entry(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], which: int
) -> None:
    ledger, outs = _three_releases(tmp_path)
    release = outs[which] / "release.csv"
    data = bytearray(release.read_bytes())
    data[len(data) // 2] ^= 0x01
    release.write_bytes(bytes(data))
    code, stdout, _ = run_cli(["ledger", "verify", str(ledger)], capsys)
    assert (
        code == 1 and f"entry {which + 1} is broken: file release-k{[2, 3, 4][which]}/release.csv" in stdout
    )


def test_a_replaced_release_is_checked_against_its_latest_entry_and_missing_files_are_reported(
    tmp_path: Path,
) -> None:
    ledger, outs = _three_releases(tmp_path)
    engine, schema = small_people()
    result = Anonymizer(schema, [KAnonymity(5)]).fit(engine)
    published = write_release(result, engine, outs[0], html=False)  # replaces the first release
    assert not verify_ledger(ledger).ok  # the first entry's file changed, and no entry says why
    files = {"release": [published.release], "report": [published.report_json]}
    append_entry(ledger, release_entry(ledger, files, "A. Officer"))
    assert verify_ledger(ledger).ok
    (outs[1] / "release.csv").unlink()
    result_missing = verify_ledger(ledger)
    assert result_missing.ok and result_missing.files_missing == ["release-k3/release.csv"]
    assert "1 missing (not checked)" in result_missing.summary()


def test_appending_refuses_a_broken_tail_and_an_anonymous_release(tmp_path: Path) -> None:
    ledger = tmp_path / "l.jsonl"
    entry = release_entry(ledger, {}, "someone")
    append_entry(ledger, entry)
    with ledger.open("ab") as handle:
        handle.write(b'{"seq": 2')  # a crash mid-write of an older tool
    with pytest.raises(LedgerError, match="last line is incomplete"):
        append_entry(ledger, entry)
    ledger.write_bytes(ledger.read_bytes()[: -len(b'{"seq": 2')] + b"garbage\n")
    with pytest.raises(LedgerError, match="not a ledger entry"):
        append_entry(ledger, entry)
    with pytest.raises(InputError, match="approved_by"):
        release_entry(ledger, {}, "  ")
    with pytest.raises(InputError, match="missing approved_by"):
        append_entry(tmp_path / "other.jsonl", {"time": "now", "safeshare_version": "x", "files": []})
    with pytest.raises(InputError, match="no such file"):
        verify_ledger(tmp_path / "absent.jsonl")


def test_an_append_waits_for_the_lock_and_gives_up_with_one_line(tmp_path: Path) -> None:
    ledger = tmp_path / "l.jsonl"
    fd = os.open(tmp_path / ".l.jsonl.lock", os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        with pytest.raises(LedgerError, match=r"has held it for 0\.2 s"):
            append_entry(ledger, release_entry(ledger, {}, "someone"), timeout=0.2)
    finally:
        os.close(fd)
    assert not ledger.exists()
    append_entry(ledger, release_entry(ledger, {}, "someone"), timeout=0.2)
    assert verify_ledger(ledger).ok


_APPENDER = """
import sys
from pathlib import Path
from safeshare.workflows.ledger import append_entry, release_entry
ledger, data, who = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
for n in range(int(sys.argv[4])):
    append_entry(ledger, release_entry(ledger, {"input": [data]}, f"{who} #{n}", extra={"pad": "x" * 5000}))
"""


def test_concurrent_appends_from_real_processes_give_whole_entries(tmp_path: Path) -> None:
    """Four processes append five entries each at the same time: twenty whole entries, one chain."""
    ledger, data = tmp_path / "shared.jsonl", tmp_path / "data.csv"
    data.write_text("a,b\n1,2\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src") + os.pathsep + str(ROOT)}
    procs = [
        subprocess.Popen([sys.executable, "-c", _APPENDER, str(ledger), str(data), f"proc{p}", "5"], env=env)
        for p in range(4)
    ]
    assert [p.wait(timeout=300) for p in procs] == [0, 0, 0, 0]
    result = verify_ledger(ledger)
    assert result.ok and result.entries == 20, result.summary()
    entries = [json.loads(line) for line in ledger.read_text().splitlines()]
    assert sorted(e["approved_by"] for e in entries) == sorted(
        f"proc{p} #{n}" for p in range(4) for n in range(5)
    )
    assert all(len(e["pad"]) == 5000 for e in entries)
    assert not [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
