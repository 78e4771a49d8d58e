"""Safe by default, round 2 (issue 18): ``hierarchy build``, ``inspect``, the engines, exit statuses.

Each test reproduces a defect of the issue's attack run and fails without its fix:

* item 5: ``hierarchy build --spec`` accepted YAML aliases and duplicate keys; a built hierarchy
  carried a control character into its file and into a release;
* item 8: ``hierarchy build --out data.csv`` replaced the data it was built from;
* item 10: a huge integer in a configuration was an ``internal error: OverflowError``; a bare
  ``MemoryError`` advised ``--engine duckdb`` on commands without that option;
* item 11: ``inspect`` lacked the mostly-empty quasi-identifier check that ``anonymize`` has;
* item 12: a Parquet timestamp column was released by the memory engine and refused by DuckDB;
* item 6 (small cells): a population file with ``sex`` and ``Sex`` used the first silently.

(Flattening, items 8 and 9, is tested in tests/test_flatten.py.)
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from safeshare import errors
from safeshare.data.engines.duckdb_engine import DuckDBEngine
from safeshare.data.engines.memory import MemoryEngine
from safeshare.data.source import TableSource
from safeshare.errors import HierarchyError
from safeshare.hierarchy.builders import IntervalBuilder, MaskingBuilder, SuppressionBuilder
from safeshare.hierarchy.hierarchy import Hierarchy
from tests.conftest import run_cli
from tests.test_input_shape import ENGINES, anonymize, rows, write_config, write_csv


def one_line(stderr: str) -> str:
    lines = stderr.splitlines()
    assert len(lines) == 1, f"expected one line on stderr, got {stderr!r}"
    return lines[0]


def build(
    data: Path, column: str, spec: str, out: Path, capsys: pytest.CaptureFixture[str]
) -> tuple[int, str]:
    code, _, stderr = run_cli(
        ["hierarchy", "build", str(data), "--column", column, "--spec", spec, "--out", str(out)], capsys
    )
    return code, stderr


@pytest.fixture()
def data(tmp_path: Path) -> Path:
    return write_csv(tmp_path / "data.csv", ["age", "sex"], [["30", "F"], ["41", "M"], ["52", "F"]])


# --------------------------------------------------------------------------- item 5: the --spec loader
NINES = "9" * 5000
BOMB = "{type: suppression, top: &a [x, x, x, x, x, x, x, x, x], missing: &b [*a, *a, *a, *a, *a, *a, *a]}"


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("{type: intervals, widths: [5, 10], widths: [3]}", "--spec: line 1: widths: duplicate key"),
        ('{type: masking, char: &c "#", top: *c}', "--spec: line 1: YAML aliases (*name) are not allowed"),
        (BOMB, "--spec: line 1: YAML aliases (*name) are not allowed"),
        (
            f"{{type: intervals, widths: [5, {10**400}]}}",
            "--spec: line 1: an integer this large is not accepted",
        ),
        (f"{{type: intervals, widths: [5, {NINES}]}}", "--spec: line 1: an integer this large"),
        ("[intervals, 5]", "--spec: expected a mapping"),
    ],
    ids=["duplicate key", "alias", "alias bomb", "huge integer", "5000 digits", "not a mapping"],
)
def test_spec_is_read_by_the_configurations_strict_loader(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], spec: str, message: str
) -> None:
    """Aliases and duplicate keys were accepted (an alias bomb grew past 6 GB; the last key won)."""
    target = tmp_path / "age.csv"
    code, stderr = build(data, "age", spec, target, capsys)
    assert code == 2 and message in one_line(stderr), stderr
    assert not target.exists()


@pytest.mark.parametrize(
    ("column", "spec"),
    [
        ("sex", '{type: suppression, top: "\\0"}'),
        ("sex", '{type: suppression, top: "a\\nb"}'),
        ("note", "{type: masking}"),
    ],
    ids=["NUL top", "newline top", "masked tab"],
)
def test_a_built_hierarchy_with_a_control_character_is_never_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], column: str, spec: str
) -> None:
    """``top: "\\0"`` was written into the hierarchy file (which reading then refuses)."""
    data = tmp_path / "data.csv"
    data.write_text('sex,note\nF,"a\tb"\nM,c\n')
    target = tmp_path / "h.csv"
    code, stderr = build(data, column, spec, target, capsys)
    assert code == 2 and "control character" in one_line(stderr), stderr
    assert not target.exists()


def test_every_label_above_the_values_is_checked_whatever_made_it() -> None:
    with pytest.raises(
        HierarchyError, match=r"level-2 label 'x\\x1by' of value 'a' holds the control character U\+001B"
    ):
        Hierarchy([("a", "A", "x\x1by"), ("b", "B", "*")], name="h")
    with pytest.raises(HierarchyError, match=r"U\+0000"):
        SuppressionBuilder(top="\x00").build(["F", "M"], name="sex")
    with pytest.raises(HierarchyError, match=r"U\+0085"):
        MaskingBuilder().build(["\x85ab", "abc"], name="code")
    assert Hierarchy([("a\tb", "*")], name="h").leaves == ("a\tb",)  # a value is the data's own


@pytest.mark.parametrize("engine", ENGINES)
def test_a_control_character_in_a_configured_builder_never_reaches_a_release(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], engine: str
) -> None:
    """A builder in the configuration is checked as a file is: ``top: "\\0"`` went into release.csv."""
    write_csv(tmp_path / "data.csv", ["age", "sex", "zip", "diag", "income", "name"], rows())
    attributes = (
        "attributes:\n"
        "  age: {role: quasi, hierarchy: {type: intervals, widths: [10, 20, 40, 80]}}\n"
        '  sex: {role: quasi, hierarchy: {type: suppression, top: "\\0"}}\n'
        "  zip: {role: identifying}\n  diag: {role: sensitive}\n"
        "  income: {role: insensitive}\n  name: {role: identifying}\n"
    )
    config = write_config(tmp_path, "data.csv", attributes=attributes)
    out = tmp_path / "out"
    code, _, stderr = anonymize(config, out, engine, capsys)
    assert code == 2 and "control character U+0000" in one_line(stderr), stderr
    assert not out.exists()


# ----------------------------------------------------------------------- item 8: the output is not an input
@pytest.mark.parametrize("how", ["same name", "symlink", "hardlink", "spec file"])
def test_hierarchy_build_never_overwrites_an_input(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], how: str
) -> None:
    """``hierarchy build --out data.csv`` replaced the data with its hierarchy."""
    before = data.read_bytes()
    spec = "{type: intervals, widths: [5, 10]}"
    target = data
    if how == "symlink":
        target = tmp_path / "link.csv"
        target.symlink_to(data)
    elif how == "hardlink":
        target = tmp_path / "link.csv"
        target.hardlink_to(data)
    elif how == "spec file":
        target = tmp_path / "age.csv"
        target.write_text("30;*\n41;*\n52;*\n")
        spec = f"{{type: file, path: {target}}}"
        before = target.read_bytes()
    code, stderr = build(data, "age", spec, target, capsys)
    assert code == 2 and "refusing to overwrite an input" in one_line(stderr), stderr
    assert (target if how == "spec file" else data).read_bytes() == before


def test_hierarchy_build_still_writes_a_new_file(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "age.csv"
    code, stderr = build(data, "age", "{type: intervals, widths: [5, 10]}", target, capsys)
    assert code == 0, stderr
    assert target.read_text() == "30;30-34;30-39;*\n41;40-44;40-49;*\n52;50-54;50-59;*\n"


# --------------------------------------------------------------------------- item 9: bounded hierarchies
def test_a_label_pattern_cannot_ask_for_gigabytes() -> None:
    """``label: "{low:>3000000000}"`` made every interval label 3 GB (at configuration time)."""
    with pytest.raises(
        errors.ConfigError, match=r"width or precision 300000000 is too large \(at most 100\)"
    ):
        IntervalBuilder(widths=[10], label="{low:>300000000}")
    with pytest.raises(errors.ConfigError, match="replacement field inside a format spec"):
        IntervalBuilder(widths=[10], label="{low:>{high}}")
    assert IntervalBuilder(widths=[10], label="{low:03d}").build(["7"]).mapping(1) == {"7": "000"}


def test_masking_a_long_value_is_refused_before_the_labels_are_made(monkeypatch: pytest.MonkeyPatch) -> None:
    """A value of n characters gives n labels of n characters: a 200,000-character cell asked 80 GB."""
    import safeshare.resources as resources

    monkeypatch.setattr(resources, "available_memory", lambda: 10_000_000)
    with pytest.raises(
        errors.ResourceError, match=r"code: a hierarchy of 2 values x 5,000 levels needs about"
    ):
        MaskingBuilder().build(["x" * 5000, "ab"], name="code")
    assert MaskingBuilder(max_masked=2).build(["x" * 5000, "ab"], name="code").height == 3  # and the top


def test_available_memory_honours_the_address_space_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    """``ulimit -v`` bounds what the process may still take (and ``check_memory`` with it)."""
    import resource

    import psutil

    import safeshare.resources as resources

    used = psutil.Process().memory_info().vms
    monkeypatch.setattr(resource, "getrlimit", lambda which: (used + 50_000_000, resource.RLIM_INFINITY))
    assert resources.available_memory() <= 50_000_000 + 10_000_000  # the process grows a little meanwhile
    with pytest.raises(
        errors.ResourceError, match=r"a test needs about 1 GB of memory, more than the \d+ MB"
    ):
        resources.check_memory(1e9, "a test", "ask for less")
    assert resources.format_bytes(2.4e12) == "2.4 TB" and resources.format_bytes(3e14) == "300 TB"
    assert resources.format_bytes(205 * 10**18) == "2.05e+20 B"
    assert resources.format_bytes(10**400) == "1.00e+400 B"  # no float holds it


# --------------------------------------------------------------------------- item 10: exit statuses
HUGE = 10**400


@pytest.mark.parametrize(
    "privacy",
    [
        f"  k-anonymity: {{k: 2}}\n  l-diversity: {{l: {HUGE}}}\n",
        f"  k-anonymity: {{k: 2}}\n  l-diversity: {{l: 2, variant: recursive, c: {HUGE}}}\n",
        f"  k-anonymity: {{k: 2}}\n  m-concealing: {{m: {HUGE}, knowledge: {{income: 0.1}}}}\n",
        f"  k-anonymity: {{k: 2}}\n  risk: {{measure: B, threshold: 0.5, population_size: {HUGE}}}\n",
        f"  k-anonymity: {{k: {'9' * 5000}}}\n",
    ],
    ids=["l", "recursive c", "m", "risk population_size", "5000-digit k"],
)
def test_a_huge_integer_in_a_configuration_is_exit_2_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], privacy: str
) -> None:
    """``internal error: OverflowError: int too large to convert to float`` (exit 1) before."""
    write_csv(tmp_path / "data.csv", ["age", "sex", "zip", "diag", "income", "name"], rows())
    text = write_config(tmp_path, "data.csv").read_text().replace("  k-anonymity: {k: 2}\n", privacy)
    config = tmp_path / "config.yaml"
    config.write_text(text)
    out = tmp_path / "out"
    code, _, stderr = anonymize(config, out, "memory", capsys)
    line = one_line(stderr)
    assert code == 2 and "an integer this large is not accepted" in line and "internal error" not in line, (
        line
    )
    assert not out.exists()


def test_the_population_size_key_is_bounded_too(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A top-level ``population_size: 1e400`` was accepted and reported (``A = 0.0``)."""
    write_csv(tmp_path / "data.csv", ["age", "sex", "zip", "diag", "income", "name"], rows())
    config = write_config(tmp_path, "data.csv", top=f"population_size: {HUGE}\n")
    code, _, stderr = anonymize(config, tmp_path / "out", "memory", capsys)
    assert code == 2 and "config.yaml line 3: an integer this large" in one_line(stderr), stderr


@pytest.mark.parametrize("size", [2**53 + 1, HUGE])
def test_a_huge_reference_size_is_exit_2_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], size: int
) -> None:
    """``anonymize --algorithm epsilon-safe --reference-size 1e400``: an internal OverflowError."""
    from tests.conftest import ADULT_DIR

    args = ["anonymize", str(ADULT_DIR / "adult-dp.yaml"), "--out", str(tmp_path / "out"), "--dry-run"]
    code, _, stderr = run_cli([*args, "--reference-size", str(size)], capsys)
    line = one_line(stderr)
    assert code == 2 and "--reference-size: expected an integer from 1 to 2**53" in line, line
    assert not (tmp_path / "out").exists()


def test_running_out_of_memory_suggests_no_option_the_command_lacks(
    data: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``inspect`` (no --engine) said "try --engine duckdb" when memory ran out."""
    import safeshare.risk.measures as measures

    def no_memory(*args: object, **kwargs: object) -> object:
        raise MemoryError

    monkeypatch.setattr(measures, "records_at_risk", no_memory)  # imported by inspect when it runs
    code, _, stderr = run_cli(["inspect", str(data), "--qi", "age,sex"], capsys)
    line = one_line(stderr)
    assert code == 1 and "memory ran out" in line and "--engine" not in line and "internal error" not in line


@pytest.mark.parametrize(
    ("switch", "advice"),
    [
        (None, "engine, which"),
        ("engine: duckdb in the configuration", "engine (engine: duckdb in the configuration), which"),
    ],
)
def test_the_memory_engine_advises_duckdb_as_its_caller_selects_it(
    data: Path, monkeypatch: pytest.MonkeyPatch, switch: str | None, advice: str
) -> None:
    from safeshare.data.engines import factory

    def no_memory(*args: object, **kwargs: object) -> object:
        raise MemoryError

    monkeypatch.setattr(pd, "read_csv", no_memory)
    with pytest.raises(errors.OutOfMemory, match=r"memory ran out reading .*data\.csv") as info:
        factory.make_engine("memory", TableSource(data), switch=switch)
    assert f"try the DuckDB {advice}" in str(info.value) and "--engine" not in str(info.value)


# --------------------------------------------------------------------------- item 11: inspect's shape checks
def test_inspect_refuses_a_mostly_empty_quasi_identifier(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The docs said inspect has anonymize's check; it printed reassuring figures instead."""
    body = [[str(20 + i), "" if i % 4 else "F", "1"] for i in range(40)]
    data = write_csv(tmp_path / "data.csv", ["age", "sex", "zip"], body)
    code, _, stderr = run_cli(["inspect", str(data), "--qi", "age,sex"], capsys)
    line = one_line(stderr)
    assert (
        code == 2 and "quasi-identifier 'sex' is empty in 30 of 40 records" in line and "--delimiter" in line
    )
    code, _, stderr = run_cli(["inspect", str(data), "--qi", "age,sex", "--missing", "?"], capsys)
    assert code == 0, stderr  # mostly missing on purpose, declared
    code, _, stderr = run_cli(["inspect", str(data), "--qi", "age,zip"], capsys)
    assert code == 0, stderr


# ---------------------------------------------------------------------- item 12: timestamps on both engines
MICROS = [0, 1, 120_000, 123_456, 999_999]


def timestamps(tmp_path: Path, tz: str | None = None) -> Path:
    """A Parquet file with a timestamp column: midnights (dates, as pandas writes them), times, fractions."""
    base = dt.datetime(2020, 1, 1, tzinfo=dt.UTC if tz else None)
    values = [
        base + dt.timedelta(days=d, hours=h, microseconds=m) for d in range(3) for h in (0, 9) for m in MICROS
    ]
    table = pa.table(
        {
            "admit": pa.array([*values, None], type=pa.timestamp("us", tz=tz)),
            "sex": pa.array(["F", "M"] * (len(values) // 2) + ["F"] * (len(values) % 2 + 1)),
        }
    )
    path = tmp_path / "admissions.parquet"
    pq.write_table(table, path)
    return path


@pytest.mark.parametrize("tz", [None, "Europe/Paris"])
def test_both_engines_render_each_timestamp_alike(tmp_path: Path, tz: str | None) -> None:
    """The text of a value depends on that value only, and not on the machine's time zone."""
    path = timestamps(tmp_path, tz)
    memory = MemoryEngine(TableSource(path)).grouped_counts(["admit"])
    duck = DuckDBEngine(TableSource(path)).grouped_counts(["admit"])
    texts = sorted(memory["admit"])
    assert texts == sorted(duck["admit"])
    suffix = "+00" if tz else ""
    assert {
        "",
        f"2020-01-01 00:00:00{suffix}",
        f"2020-01-01 09:00:00.000001{suffix}",
        f"2020-01-02 00:00:00.12{suffix}",
    } <= set(texts)
    midnights = pq.read_table(path).to_pandas()["admit"].dt.normalize().drop_duplicates().to_frame()
    alone = tmp_path / "midnights.parquet"
    midnights.to_parquet(alone)  # every value at midnight: pandas alone would drop the time
    assert sorted(MemoryEngine(TableSource(alone)).grouped_counts(["admit"])["admit"]) == sorted(
        DuckDBEngine(TableSource(alone)).grouped_counts(["admit"])["admit"]
    )


def test_a_parquet_timestamp_date_column_gets_one_answer_on_both_engines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Memory released it, DuckDB exited 2: now both refuse a date format, with the advice, and
    both release the same file with the timestamp format."""
    path = timestamps(tmp_path)
    frame = pq.read_table(path).to_pandas().dropna()
    frame["admit"] = frame["admit"].dt.normalize()  # dates, as a pandas datetime column writes them
    frame.to_parquet(path)
    config = tmp_path / "config.yaml"
    text = (
        f"input: {{path: {path.name}}}\n"
        "attributes:\n"
        "  admit: {role: quasi, hierarchy: {type: dates, levels: [month, year]FORMAT}}\n"
        "  sex: {role: quasi, hierarchy: {type: suppression}}\n"
        "privacy: {k-anonymity: {k: 10}}\nmax_suppression: 0.1\noutput: {format: csv}\n"
    )
    config.write_text(text.replace("FORMAT", ""))
    for engine in ENGINES:
        code, _, stderr = anonymize(config, tmp_path / engine, engine, capsys)
        line = one_line(stderr)
        assert code == 2 and "value '2020-01-01 00:00:00' is not a date in the format '%Y-%m-%d'" in line, (
            line
        )
        assert "use format: '%Y-%m-%d %H:%M:%S'" in line and not (tmp_path / engine).exists()
    config.write_text(text.replace("FORMAT", ', format: "%Y-%m-%d %H:%M:%S"'))
    releases = []
    for engine in ENGINES:
        code, _, stderr = anonymize(config, tmp_path / engine, engine, capsys)
        assert code == 0, stderr
        releases.append((tmp_path / engine / "release.csv").read_text())
    assert releases[0] == releases[1]
    assert len(releases[0].splitlines()) == 1 + len(frame)


def test_the_engines_release_the_same_timestamps(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = timestamps(tmp_path)
    config = tmp_path / "config.yaml"
    config.write_text(
        f"input: {{path: {path.name}}}\n"
        "attributes:\n"
        "  admit: {role: quasi, hierarchy:\n"
        '    {type: dates, levels: [day, month], format: "%Y-%m-%d %H:%M:%S", missing: [""]}}\n'
        "  sex: {role: quasi, hierarchy: {type: suppression}}\n"
        "privacy: {k-anonymity: {k: 1}}\nmax_suppression: 0\noutput: {format: csv}\n"
    )
    releases = []
    for engine in ENGINES:
        code, _, stderr = anonymize(config, tmp_path / engine, engine, capsys)
        assert code == 0, stderr
        releases.append((tmp_path / engine / "release.csv").read_bytes())
    assert releases[0] == releases[1]
    assert b"2020-01-01 09:00:00.000001" in releases[0]


# ---------------------------------------------------------------------- item 6: small-cells population file
@pytest.mark.parametrize("header", ["age,sex,Sex", "age,sex,sex", "age,sex, SEX "])
def test_small_cells_population_file_with_duplicate_names_is_refused(tmp_path: Path, header: str) -> None:
    """``sex`` and ``Sex``: the first was used silently (and ``sex,sex`` became ``sex.1``)."""
    from safeshare.risk.small_cells import read_population

    path = tmp_path / "population.csv"
    path.write_text(header + "\n30,F,M\n41,M,F\n")
    with pytest.raises(
        errors.DataError, match=r"population file .*population.csv: duplicate column name 'sex'"
    ):
        read_population(path, ("age", "sex"))
