"""The verifier's read of a written release's bytes beside its SQL (verify/file_scan.py): the
SHA-256 of each file, the CSV control-character test, one read that the evidence reuses."""

from __future__ import annotations

import hashlib
import json
import threading
from pathlib import Path

import pytest

from safeshare.verify import control, file_scan
from safeshare.verify.file_scan import FileScan, ScanStopped
from tests.conftest import run_cli, write_small_adult


def test_the_scan_hashes_every_part_and_tests_the_bytes_as_the_csv_scan_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Chunks of 7 bytes: a refused character anywhere, a C1 control split between two chunks
    included, is found as :func:`control.csv_holds_control` finds it; the digests are hashlib's
    of each file of a directory of parts; a Parquet release's bytes are not tested."""
    monkeypatch.setattr(file_scan, "CHUNK", 7)
    monkeypatch.setattr(control, "CHUNK", 7)
    file = tmp_path / "r.csv"
    allowed = 'a,b\n"x\ty","two\nlines"\nnbsp\u00a0é,ü€\n'
    for char in ["", "\x1b", "\r", "\x7f", "\x9b", "\x85"]:
        for at in range(len(allowed) + 1) if char else [0]:
            file.write_text(allowed[:at] + char + allowed[at:], encoding="utf-8")
            with FileScan(file, control=True) as scan:
                found = scan.result()
            assert found.holds_control is bool(char) is control.csv_holds_control(file), (char, at)
            assert found.digests == {file: hashlib.sha256(file.read_bytes()).hexdigest()}
    parts = tmp_path / "parts"
    parts.mkdir()
    for i, text in enumerate(["one\n", "two\x00\n", ""]):
        (parts / f"part-{i}.csv").write_text(text)
    with FileScan(parts, control=True) as scan:
        found = scan.result()
    assert found.holds_control is True
    assert found.digests == {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(parts.iterdir())}
    with FileScan(file, control=False) as scan:
        assert scan.result().holds_control is None


def test_leaving_the_block_stops_the_scan_and_an_error_of_the_read_is_raised(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An interrupted verification leaves no thread reading: the scan stops at its next chunk.
    A file that cannot be read raises its error from :meth:`FileScan.result`, in the caller."""
    monkeypatch.setattr(file_scan, "CHUNK", 1)
    big = tmp_path / "big.csv"
    big.write_bytes(b"x" * (1 << 22))
    scan = FileScan(big, control=True)
    with pytest.raises(KeyboardInterrupt), scan:
        raise KeyboardInterrupt
    assert not any(t.name == "safeshare-file-scan" and t.is_alive() for t in threading.enumerate())
    with pytest.raises(ScanStopped):
        scan.result()
    with FileScan(tmp_path / "missing.csv", control=True) as scan, pytest.raises(FileNotFoundError):
        scan.result()


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_the_release_is_read_for_its_digest_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], fmt: str
) -> None:
    """The evidence's digest of the release is the one the verifier's read computed (hashlib's of
    the published file), and the evidence does not read the file again."""
    from safeshare.workflows import evidence

    read: list[Path] = []
    real = evidence.sha256_file
    monkeypatch.setattr(evidence, "sha256_file", lambda path: read.append(Path(path)) or real(path))
    tested: list[Path] = []  # the control-character test of a CSV release: the scan's, not a read of its own
    test = control.csv_holds_control
    monkeypatch.setattr(control, "csv_holds_control", lambda path: tested.append(Path(path)) or test(path))
    write_small_adult(tmp_path, 2000)
    config = tmp_path / "adult.yaml"
    config.write_text(config.read_text().replace("output: {format: csv}", f"output: {{format: {fmt}}}"))
    out = tmp_path / "out"
    status, _, stderr = run_cli(
        [
            "anonymize",
            str(config),
            "--out",
            str(out),
            "-q",
            "--no-tradeoff",
            "--engine",
            "duckdb",
            "--accept-warning",
            "kept-column-identifying",
        ],
        capsys,
    )
    assert status == 0, stderr
    doc = json.loads((out / "report.json").read_text())
    (released,) = [f for f in doc["evidence"]["files"] if f["role"] == "release"]
    path = out / f"release.{fmt}"
    assert released["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert released["bytes"] == path.stat().st_size
    assert not [p for p in read if p.name.startswith("release")], read
    assert not [p for p in tested if p.name.startswith("release")], tested


def test_the_scan_holds_one_chunk_of_a_file_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 1 GB release is read CHUNK bytes at a time (its memory is one chunk, not the file)."""
    monkeypatch.setattr(file_scan, "CHUNK", 5)
    asked: list[int | None] = []
    real_open = open

    class Recording:
        def __init__(self, handle: object) -> None:
            self.handle = handle

        def __enter__(self) -> Recording:
            return self

        def __exit__(self, *args: object) -> None:
            self.handle.close()  # type: ignore[attr-defined]

        def read(self, size: int | None = None) -> bytes:
            asked.append(size)
            return self.handle.read(size)  # type: ignore[attr-defined,no-any-return]

    def recording_open(path: Path, mode: str = "r") -> Recording:
        return Recording(real_open(path, mode))

    monkeypatch.setattr(file_scan, "open", recording_open, raising=False)
    file = tmp_path / "r.csv"
    file.write_bytes(b"a,b\n" * 10)
    with FileScan(file, control=True) as scan:
        found = scan.result()
    assert found.digests == {file: hashlib.sha256(file.read_bytes()).hexdigest()}
    assert asked and set(asked) == {5}  # 40 bytes in 8 reads of 5, then the empty read
    assert len(asked) == 9
