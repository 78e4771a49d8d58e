"""Flattening longitudinal data to one row per person (thesis §4.2, §3.2, §6.1.3)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from safeshare import errors
from safeshare.data.engines.memory import read_frame
from safeshare.data.flatten import (
    EventSpec,
    FlattenStats,
    flatten,
    flatten_chain,
    flatten_files,
    flatten_frame,
    flatten_many,
)
from safeshare.data.source import TableSource
from safeshare.errors import ConfigError, DataError, InputError
from safeshare.io import OutputError

# Persons with 0 (p0), 1 (p1), 2 (p2) and 5 (p5) events; p5 has a tie on date (rows 0 and 5).
PERSONS = pd.DataFrame({"id": ["p0", "p1", "p2", "p5"], "sex": ["F", "M", "F", "M"]})
EVENTS = pd.DataFrame(
    {
        "id": ["p5", "p1", "p2", "p5", "p2", "p5", "p5", "p5"],
        "date": [
            "2020-03-01",
            "2019-06-30",
            "2021-01-15",
            "2020-01-10",
            "2020-12-31",
            "2020-03-01",
            "2020-02-29",
            "2022-07-04",
        ],
        "code": ["C", "A", "X", "A", "Y", "D", "B", "E"],
        "seq": ["2", "1", "10", "9", "9", "1", "3", "4"],
    }
)
NONE = ("", "", "")  # no such event: date, code, seq padded with the missing value


def expected(rows: dict[str, list[tuple[str, str, str]]], n: int, prefix: str = "event") -> pd.DataFrame:
    """PERSONS plus the given (date, code, seq) events per person, padded to ``n``."""
    out = PERSONS.copy()
    for i in range(n):
        for j, col in enumerate(("date", "code", "seq")):
            out[f"{prefix}{i + 1}_{col}"] = [(rows.get(pid, []) + [NONE] * n)[i][j] for pid in PERSONS["id"]]
    return out


def assert_same(actual: pd.DataFrame, wanted: pd.DataFrame) -> None:
    assert list(actual.columns) == list(wanted.columns)
    pd.testing.assert_frame_equal(actual.astype(object), wanted.astype(object))


# ---------------------------------------------------------------------------------------------- exact output


def test_first_three_events_by_date_exact() -> None:
    out = flatten(PERSONS, EVENTS, key="id", order_by=["date"], n_events=3)
    assert_same(
        out,
        expected(
            {
                "p1": [("2019-06-30", "A", "1")],
                "p2": [("2020-12-31", "Y", "9"), ("2021-01-15", "X", "10")],
                "p5": [("2020-01-10", "A", "9"), ("2020-02-29", "B", "3"), ("2020-03-01", "C", "2")],
            },
            3,
        ),
    )
    assert list(out.columns[:5]) == ["id", "sex", "event1_date", "event1_code", "event1_seq"]


def test_ties_are_broken_by_original_row_order() -> None:
    out = flatten(PERSONS, EVENTS, key="id", order_by=["date"], n_events=4, columns=["code"])
    assert list(out.loc[3, ["event3_code", "event4_code"]]) == ["C", "D"]  # rows 0 and 5, same date
    swapped = EVENTS.iloc[[5, 1, 2, 3, 4, 0, 6, 7]].reset_index(drop=True)
    out = flatten(PERSONS, swapped, key="id", order_by=["date"], n_events=4, columns=["code"])
    assert list(out.loc[3, ["event3_code", "event4_code"]]) == ["D", "C"]


def test_descending_most_recent_first_ties_keep_row_order() -> None:
    out = flatten(PERSONS, EVENTS, key="id", order_by=["date"], n_events=3, descending=True)
    assert_same(
        out,
        expected(
            {
                "p1": [("2019-06-30", "A", "1")],
                "p2": [("2021-01-15", "X", "10"), ("2020-12-31", "Y", "9")],
                "p5": [("2022-07-04", "E", "4"), ("2020-03-01", "C", "2"), ("2020-03-01", "D", "1")],
            },
            3,
        ),
    )


def test_no_order_by_keeps_row_order() -> None:
    out = flatten(PERSONS, EVENTS, key="id", n_events=2, columns=["code"])
    assert out["event1_code"].tolist() == ["", "A", "X", "C"]
    assert out["event2_code"].tolist() == ["", "", "Y", "A"]


def test_numeric_versus_text_ordering() -> None:
    text = flatten(PERSONS, EVENTS, key="id", order_by=["seq"], n_events=2, columns=["seq"])
    assert list(text.loc[2, ["event1_seq", "event2_seq"]]) == ["10", "9"]  # "10" < "9" as text
    numeric = flatten(
        PERSONS, EVENTS, key="id", order_by=["seq"], n_events=2, columns=["seq"], order_numeric=True
    )
    assert list(numeric.loc[2, ["event1_seq", "event2_seq"]]) == ["9", "10"]
    # p5's seq 9, 2, 1, 3, 4 -> numerically 1, 2, 3
    assert list(numeric.loc[3, ["event1_seq", "event2_seq"]]) == ["1", "2"]


def test_numeric_ordering_accepts_decimals_signs_and_exponents() -> None:
    persons = pd.DataFrame({"id": ["a"]})
    events = pd.DataFrame({"id": ["a"] * 5, "v": ["1e3", "-2.5", "10", " 7", "0.5"]})
    out = flatten(persons, events, key="id", order_by=["v"], n_events=5, order_numeric=True)
    assert out.iloc[0, 1:].tolist() == ["-2.5", "0.5", " 7", "10", "1e3"]


def test_date_ordering_with_a_format() -> None:
    persons = pd.DataFrame({"id": ["a"]})
    events = pd.DataFrame({"id": ["a", "a", "a"], "when": ["02/01/2021", "31/12/2020", "01/02/2020"]})
    as_text = flatten(persons, events, key="id", order_by=["when"], n_events=3)
    assert as_text.iloc[0, 1:].tolist() == ["01/02/2020", "02/01/2021", "31/12/2020"]
    as_dates = flatten(persons, events, key="id", order_by=["when"], n_events=3, order_dates="%d/%m/%Y")
    assert as_dates.iloc[0, 1:].tolist() == ["01/02/2020", "31/12/2020", "02/01/2021"]


def test_iso_dates_sort_correctly_as_text() -> None:
    as_text = flatten(PERSONS, EVENTS, key="id", order_by=["date"], n_events=5)
    as_dates = flatten(PERSONS, EVENTS, key="id", order_by=["date"], n_events=5, order_dates="%Y-%m-%d")
    assert_same(as_text, as_dates)


def test_per_column_numeric_and_date_modes() -> None:
    persons = pd.DataFrame({"id": ["a"]})
    events = pd.DataFrame(
        {
            "id": ["a"] * 4,
            "day": ["2/1/2020", "10/1/2020", "2/1/2020", "2/1/2020"],
            "n": ["10", "1", "9", "2"],
        }
    )
    out = flatten(
        persons,
        events,
        key="id",
        order_by=["day", "n"],
        n_events=4,
        columns=["n"],
        order_numeric=["n"],
        order_dates={"day": "%d/%m/%Y"},
    )
    assert out.iloc[0, 1:].tolist() == ["2", "9", "10", "1"]


def test_missing_order_values_sort_last_in_both_directions() -> None:
    persons = pd.DataFrame({"id": ["a"]})
    events = pd.DataFrame({"id": ["a"] * 4, "t": ["", "2", "1", ""], "c": ["w", "x", "y", "z"]})
    for kwargs in ({}, {"order_numeric": True}, {"order_dates": "%d"}):
        up = flatten(persons, events, key="id", order_by=["t"], n_events=4, columns=["c"], **kwargs)
        assert up.iloc[0, 1:].tolist() == ["y", "x", "w", "z"], kwargs
        down = flatten(
            persons, events, key="id", order_by=["t"], n_events=4, columns=["c"], descending=True, **kwargs
        )
        assert down.iloc[0, 1:].tolist() == ["x", "y", "w", "z"], kwargs


def test_columns_prefix_and_missing_token() -> None:
    out = flatten(
        PERSONS,
        EVENTS,
        key="id",
        order_by=["date"],
        n_events=2,
        columns=["code"],
        prefix="proc",
        missing="NONE",
    )
    assert list(out.columns) == ["id", "sex", "proc1_code", "proc2_code"]
    assert out["proc1_code"].tolist() == ["NONE", "A", "Y", "A"]
    assert out["proc2_code"].tolist() == ["NONE", "NONE", "X", "B"]


def test_event_key_differs_from_person_key() -> None:
    persons = PERSONS.rename(columns={"id": "subject_id"})
    events = EVENTS.rename(columns={"id": "patient"})
    out = flatten(persons, events, key="subject_id", event_key="patient", order_by=["date"], n_events=3)
    renamed = expected(
        {
            "p1": [("2019-06-30", "A", "1")],
            "p2": [("2020-12-31", "Y", "9"), ("2021-01-15", "X", "10")],
            "p5": [("2020-01-10", "A", "9"), ("2020-02-29", "B", "3"), ("2020-03-01", "C", "2")],
        },
        3,
    ).rename(columns={"id": "subject_id"})
    assert_same(out, renamed)


def test_persons_rows_order_index_and_columns_are_preserved() -> None:
    persons = pd.DataFrame(
        {"age": [40, 31, 55, 7], "id": ["p5", "", "p0", "p2"], "w": [1.5, 2.0, np.nan, 3.25]},
        index=[7, 3, 3, 9],
    )
    events = EVENTS[EVENTS["id"] != "p1"]
    out = flatten(persons, events, key="id", order_by=["date"], n_events=1, columns=["code"])
    assert list(out.index) == [7, 3, 3, 9]
    assert list(out.columns) == ["age", "id", "w", "event1_code"]
    pd.testing.assert_frame_equal(out[["age", "id", "w"]], persons)
    assert out["event1_code"].tolist() == ["A", "", "", "Y"]  # the person with an empty key gets nothing


def test_keys_are_matched_as_text() -> None:
    persons = pd.DataFrame({"id": [1, 2, 3]})
    events = pd.DataFrame({"id": ["3", "1", "3"], "v": [0.5, 2, None]})
    out = flatten(persons, events, key="id", n_events=2)
    assert out["event1_v"].tolist() == ["2.0", "", "0.5"]
    assert out["event2_v"].tolist() == ["", "", ""]  # a missing value renders as the empty string


def test_empty_tables() -> None:
    no_events = EVENTS.iloc[:0]
    out = flatten(PERSONS, no_events, key="id", order_by=["date"], n_events=2, columns=["code"])
    assert out["event1_code"].tolist() == [""] * 4
    no_persons = PERSONS.iloc[:0]
    out = flatten(no_persons, no_events, key="id", n_events=1, columns=["code"])
    assert list(out.columns) == ["id", "sex", "event1_code"] and len(out) == 0


def test_stats_and_dropped_orphans() -> None:
    events = pd.concat(
        [
            EVENTS,
            pd.DataFrame({"id": ["zz", ""], "date": ["2020", "2020"], "code": ["Q", "R"], "seq": ["1", "1"]}),
        ],
        ignore_index=True,
    )
    spec = EventSpec(key="id", n_events=3, order_by=["date"], on_orphans="drop")
    out, stats = flatten_frame(PERSONS, events, spec)
    assert_same(out, flatten(PERSONS, EVENTS, key="id", order_by=["date"], n_events=3))
    assert stats == FlattenStats(
        persons=4,
        events=10,
        events_kept=6,
        orphans_dropped=2,
        persons_without_events=1,
        persons_truncated=1,
        max_events=5,
        columns_added=tuple(f"event{i}_{c}" for i in (1, 2, 3) for c in ("date", "code", "seq")),
    )


# ---------------------------------------------------------------------------------------------- errors


def _flatten_error(**overrides: Any) -> InputError:
    kwargs: dict[str, Any] = {"key": "id", "order_by": ["date"], "n_events": 3}
    persons = overrides.pop("persons", PERSONS)
    events = overrides.pop("events", EVENTS)
    kwargs.update(overrides)
    with pytest.raises(InputError) as info:
        flatten(persons, events, **kwargs)
    message = str(info.value)
    assert "\n" not in message and message.strip() == message
    return info.value


@pytest.mark.parametrize(
    ("overrides", "kind", "fragments"),
    [
        ({"key": "pid"}, DataError, ["unknown key column 'pid'", "persons", "id, sex"]),
        (
            {"event_key": "pid"},
            DataError,
            ["unknown event key column 'pid'", "events", "id, date, code, seq"],
        ),
        ({"order_by": ["when"]}, DataError, ["unknown order-by column 'when'", "date"]),
        ({"columns": ["code", "icd"]}, DataError, ["unknown event column 'icd'", "events"]),
        ({"n_events": 0}, ConfigError, ["n_events must be a positive integer", "0"]),
        ({"n_events": -2}, ConfigError, ["n_events", "-2"]),
        ({"n_events": True}, ConfigError, ["n_events"]),
        ({"n_events": 2.0}, ConfigError, ["n_events"]),
        ({"columns": []}, ConfigError, ["columns is empty"]),
        ({"columns": ["code", "code"]}, ConfigError, ["'code' is listed twice"]),
        ({"order_by": [], "descending": True}, ConfigError, ["descending needs order_by"]),
        ({"on_orphans": "ignore"}, ConfigError, ["on_orphans", "'ignore'"]),
        ({"order_numeric": ["seq"]}, ConfigError, ["'seq'", "not an order_by column"]),
        ({"order_dates": {"seq": "%Y"}}, ConfigError, ["'seq'", "not an order_by column"]),
        ({"order_numeric": True, "order_dates": "%Y"}, ConfigError, ["cannot both"]),
        (
            {"order_numeric": ["date"], "order_dates": {"date": "%Y"}},
            ConfigError,
            ["both numeric and a date"],
        ),
        ({"order_dates": ""}, ConfigError, ["strptime format"]),
        ({"missing": None}, ConfigError, ["missing"]),
        ({"key": ""}, ConfigError, ["key must be a column name"]),
        (
            {
                "order_by": ["seq"],
                "order_numeric": True,
                "events": EVENTS.assign(seq=["1", "2", "x3", "4"] * 2),
            },
            DataError,
            ["order-by column 'seq'", "not a number", "'x3'", "data row 3"],
        ),
        (
            {"order_dates": "%d/%m/%Y"},
            DataError,
            [
                "order-by column 'date'",
                "does not match the date format '%d/%m/%Y'",
                "'2020-03-01'",
                "data row 1",
            ],
        ),
        (
            {"persons": pd.concat([PERSONS, PERSONS.iloc[[2]]], ignore_index=True)},
            DataError,
            [
                "key column 'id' is not unique",
                "1 duplicated value,",
                "'p2' in data rows 3 and 5",
                "one row per person",
            ],
        ),
        (
            {"events": EVENTS.assign(id=["p5", "p1", "p9", "p5", "p2", "x", "p5", "p5"])},
            DataError,
            ["2 events reference no person", "column 'id'", "'p9' in data row 3", "on_orphans='drop'"],
        ),
        (
            {"events": EVENTS.assign(id=["p5", "p1", "p2", "", "p2", "p5", "p5", "p5"])},
            DataError,
            ["1 event references no person", "an empty key in data row 4"],
        ),
        (
            {"persons": PERSONS.assign(event1_code="x")},
            DataError,
            ["output column 'event1_code' already exists", "another prefix than 'event'"],
        ),
        (
            {"events": pd.DataFrame([["p1", "a", "b"]], columns=["id", "date", "date"])},
            DataError,
            ["column 'date' appears twice"],
        ),
        ({"events": EVENTS[["id"]], "order_by": []}, DataError, ["no event column to stack"]),
    ],
)
def test_error_paths(overrides: dict[str, Any], kind: type[InputError], fragments: list[str]) -> None:
    error = _flatten_error(**overrides)
    assert isinstance(error, kind)
    for fragment in fragments:
        assert fragment in str(error), (fragment, str(error))


def test_unknown_column_message_lists_columns_briefly() -> None:
    wide = pd.DataFrame({f"c{i}": ["x"] for i in range(50)} | {"id": ["p1"]})
    error = _flatten_error(events=wide, key="id", order_by=["nope"])
    assert "c0, c1" in str(error) and "(51 in all)" in str(error) and "c30" not in str(error)


def test_errors_are_input_errors_for_exit_status_2() -> None:
    assert issubclass(DataError, InputError) and issubclass(ConfigError, InputError)
    with pytest.raises(ConfigError):
        EventSpec(key="id", n_events=0)


# ------------------------------------------------------------------------------------------- several tables


def test_flatten_many_applies_tables_in_sequence() -> None:
    diagnoses = pd.DataFrame({"id": ["p2", "p1", "p2"], "icd": ["I10", "E11", "J45"]})
    out = flatten_many(
        PERSONS,
        [
            (EVENTS, EventSpec(key="id", n_events=1, order_by=["date"], columns=["code"], prefix="proc")),
            (diagnoses, {"key": "id", "n_events": 2, "prefix": "dx"}),
        ],
    )
    assert list(out.columns) == ["id", "sex", "proc1_code", "dx1_icd", "dx2_icd"]
    assert out["proc1_code"].tolist() == ["", "A", "Y", "A"]
    assert out["dx1_icd"].tolist() == ["", "E11", "I10", ""]
    assert out["dx2_icd"].tolist() == ["", "", "J45", ""]


def test_flatten_many_same_prefix_collides() -> None:
    spec = EventSpec(key="id", n_events=1, columns=["code"])
    with pytest.raises(DataError, match="'event1_code' already exists"):
        flatten_many(PERSONS, [(EVENTS, spec), (EVENTS, spec)])
    with pytest.raises(ConfigError, match="event table 1"):
        flatten_many(PERSONS, [(EVENTS, {"key": "id", "n_events": 1, "colour": "red"})])


PATIENTS = pd.DataFrame({"subject_id": ["s1", "s2", "s3"], "sex": ["F", "M", "F"]})
ADMISSIONS = pd.DataFrame(
    {
        "hadm_id": ["h1", "h2", "h3", "h4"],
        "subject_id": ["s1", "s3", "s1", "s1"],
        "admittime": ["2101-05-01", "2150-01-01", "2100-02-03", "2102-11-30"],
    }
)
PROCEDURES = pd.DataFrame(
    {
        "hadm_id": ["h1", "h1", "h3", "h1", "h2", "h3"],
        "seq_num": ["2", "1", "1", "10", "1", "2"],
        "icd9": ["3893", "9604", "3961", "0040", "8856", "3995"],
    }
)
INNER = EventSpec(
    key="hadm_id", n_events=2, order_by=["seq_num"], order_numeric=True, columns=["icd9"], prefix="proc"
)
OUTER = EventSpec(
    key="subject_id",
    n_events=2,
    order_by=["admittime"],
    columns=["admittime", "proc1_icd9", "proc2_icd9"],
    prefix="adm",
)


def test_three_table_chain_exact() -> None:
    out = flatten_chain([PATIENTS, ADMISSIONS, PROCEDURES], [OUTER, INNER])
    wanted = PATIENTS.assign(
        adm1_admittime=["2100-02-03", "", "2150-01-01"],
        adm1_proc1_icd9=["3961", "", "8856"],
        adm1_proc2_icd9=["3995", "", ""],
        adm2_admittime=["2101-05-01", "", ""],
        adm2_proc1_icd9=["9604", "", ""],
        adm2_proc2_icd9=["3893", "", ""],
    )
    assert_same(out, wanted)
    # the thesis' recipe by hand: t(1,2) first, then t(0,1,2)
    t12 = flatten_frame(ADMISSIONS, PROCEDURES, INNER)[0]
    assert_same(out, flatten_frame(PATIENTS, t12, OUTER)[0])


def test_chain_first_procedures_of_one_admission_per_patient() -> None:
    """Thesis §6.1.3: demographics joined with the first three procedures of an admission."""
    inner = EventSpec(
        key="hadm_id", n_events=3, order_by=["seq_num"], order_numeric=True, columns=["icd9"], prefix="p"
    )
    outer = EventSpec(
        key="subject_id", n_events=1, order_by=["admittime"], columns=["p1_icd9", "p2_icd9", "p3_icd9"]
    )
    out = flatten_chain([PATIENTS, ADMISSIONS, PROCEDURES], [outer, inner])
    assert list(out.columns) == ["subject_id", "sex", "event1_p1_icd9", "event1_p2_icd9", "event1_p3_icd9"]
    assert out.iloc[0, 2:].tolist() == ["3961", "3995", ""]


def test_chain_errors_name_the_table() -> None:
    with pytest.raises(ConfigError, match="n - 1 specs"):
        flatten_chain([PATIENTS, ADMISSIONS, PROCEDURES], [OUTER])
    orphan = pd.concat([PROCEDURES, pd.DataFrame({"hadm_id": ["h9"], "seq_num": ["1"], "icd9": ["1"]})])
    with pytest.raises(DataError, match="table t2: 1 event references no person of table t1"):
        flatten_chain([PATIENTS, ADMISSIONS, orphan], [OUTER, INNER])


# ---------------------------------------------------------------------------------------------- files


def _write_inputs(tmp_path: Path, fmt: str) -> tuple[TableSource, TableSource]:
    persons = PERSONS.assign(note=['a "quoted", value', "x", "", "y"])
    paths = (tmp_path / f"persons.{fmt}", tmp_path / f"events.{fmt}")
    for frame, path in zip((persons, EVENTS), paths, strict=True):
        if fmt == "csv":
            frame.to_csv(path, index=False)
        else:
            frame.to_parquet(path, index=False)
    return TableSource(paths[0]), TableSource(paths[1])


@pytest.mark.parametrize(
    ("in_fmt", "out_name"), [("csv", "flat.csv"), ("parquet", "flat.parquet"), ("csv", "f.pq")]
)
def test_flatten_files_round_trip(tmp_path: Path, in_fmt: str, out_name: str) -> None:
    persons, events = _write_inputs(tmp_path, in_fmt)
    spec = EventSpec(key="id", n_events=3, order_by=["date"], descending=True)
    out = tmp_path / "out" / out_name
    stats = flatten_files(persons, events, key="id", n_events=3, order_by=["date"], descending=True, out=out)
    assert stats.persons == 4 and stats.events_kept == 6 and stats.max_events == 5
    back = read_frame(TableSource(out))
    wanted = flatten_frame(read_frame(persons), read_frame(events), spec)[0]
    assert_same(back, wanted)
    assert back.loc[0, "note"] == 'a "quoted", value' and back.loc[0, "event1_code"] == ""
    assert sorted(p.name for p in out.parent.iterdir()) == [out_name]  # no temporary file left


def test_flatten_files_explicit_format_and_delimiter(tmp_path: Path) -> None:
    persons, events = _write_inputs(tmp_path, "csv")
    out = tmp_path / "flat.txt"
    flatten_files(persons, events, key="id", n_events=1, out=out, fmt="csv", delimiter=";")
    assert out.read_text().splitlines()[0] == "id;sex;note;event1_date;event1_code;event1_seq"
    flatten_files(persons, events, key="id", n_events=1, out=out, fmt="parquet")
    assert len(pd.read_parquet(out)) == 4


def test_flatten_files_errors_name_the_file_and_write_nothing(tmp_path: Path) -> None:
    persons, events = _write_inputs(tmp_path, "csv")
    out = tmp_path / "flat.csv"
    with pytest.raises(
        DataError, match=r"unknown order-by column 'when' in .*events\.csv; it has columns id, date"
    ):
        flatten_files(persons, events, key="id", n_events=2, order_by=["when"], out=out)
    with pytest.raises(DataError, match=r"cannot read .*nope\.csv: no such file"):
        flatten_files(persons, TableSource(tmp_path / "nope.csv"), key="id", n_events=2, out=out)
    with pytest.raises(OutputError, match=r"is the input .*events\.csv: refusing to overwrite an input"):
        flatten_files(persons, events, key="id", n_events=2, out=events.path)
    with pytest.raises(ConfigError, match="unsupported output format"):
        flatten_files(persons, events, key="id", n_events=2, out=out, fmt="xlsx")  # type: ignore[arg-type]
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["events.csv", "persons.csv"]


def test_flatten_files_checks_parameters_before_reading(tmp_path: Path) -> None:
    absent = TableSource(tmp_path / "absent.csv")
    with pytest.raises(ConfigError, match="n_events must be a positive integer"):
        flatten_files(absent, absent, key="id", n_events=0, out=tmp_path / "flat.csv")


def test_cli_flatten_exit_statuses(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cli = pytest.importorskip("safeshare.cli")
    persons, events = _write_inputs(tmp_path, "csv")
    out = tmp_path / "flat.csv"
    args = [
        "flatten",
        str(persons.path),
        str(events.path),
        "--key",
        "id",
        "--order-by",
        "date",
        "--events",
        "3",
    ]
    assert cli.main([*args, "--out", str(out)]) == 0
    assert_same(
        read_frame(TableSource(out)),
        flatten(read_frame(persons), read_frame(events), key="id", order_by=["date"], n_events=3),
    )
    capsys.readouterr()
    assert cli.main([*args[:-1], "0", "--out", str(tmp_path / "bad.csv")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--events: expected an integer >= 1, got 0" in err
    assert not (tmp_path / "bad.csv").exists()


# ---------------------------------------------------------------------------------------------- properties


@st.composite
def tables(draw: st.DrawFn) -> tuple[pd.DataFrame, pd.DataFrame, bool, bool, int]:
    n_persons = draw(st.integers(0, 8))
    keys = draw(
        st.lists(
            st.text("abc01", min_size=1, max_size=3), min_size=n_persons, max_size=n_persons, unique=True
        )
    )
    numeric = draw(st.booleans())
    n_events = draw(st.integers(0, 30)) if keys else 0
    owner = draw(st.lists(st.sampled_from(keys), min_size=n_events, max_size=n_events)) if keys else []
    if numeric:
        order = [
            str(v) if v is not None else ""
            for v in draw(st.lists(st.none() | st.integers(-20, 20), min_size=n_events, max_size=n_events))
        ]
    else:
        order = draw(
            st.lists(
                st.sampled_from(["", "a", "b", "B", "ab", "10", "9"]), min_size=n_events, max_size=n_events
            )
        )
    persons = pd.DataFrame({"id": keys, "x": [f"x{i}" for i in range(len(keys))]})
    events = pd.DataFrame({"id": owner, "t": order, "row": [str(i) for i in range(n_events)]})
    return persons, events, numeric, draw(st.booleans()), draw(st.integers(1, 4))


def _reference(events: pd.DataFrame, pid: str, numeric: bool, descending: bool) -> list[str]:
    """The person's event rows, sorted the slow, obvious way (stable sorts, missing last)."""
    mine = [(t, r) for p, t, r in zip(events["id"], events["t"], events["row"], strict=True) if p == pid]

    def value(item: tuple[str, str]) -> Any:
        return int(item[0]) if numeric else item[0]

    known = sorted((e for e in mine if e[0] != ""), key=value, reverse=descending)
    return [r for _, r in known + [e for e in mine if e[0] == ""]]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables())
def test_property_ith_event_is_ith_sorted_event(
    case: tuple[pd.DataFrame, pd.DataFrame, bool, bool, int],
) -> None:
    persons, events, numeric, descending, n = case
    out = flatten(
        persons, events, key="id", order_by=["t"], n_events=n, order_numeric=numeric, descending=descending
    )
    assert len(out) == len(persons)
    assert out["id"].tolist() == persons["id"].tolist() and out["x"].tolist() == persons["x"].tolist()
    assert list(out.columns[2:]) == [f"event{i}_{c}" for i in range(1, n + 1) for c in ("t", "row")]
    for position, pid in enumerate(persons["id"]):
        rows = _reference(events, pid, numeric, descending)
        for i in range(n):
            want_row = rows[i] if i < len(rows) else ""
            want_t = events["t"].iloc[int(want_row)] if want_row else ""
            assert out[f"event{i + 1}_row"].iloc[position] == want_row
            assert out[f"event{i + 1}_t"].iloc[position] == want_t


# ---------------------------------------------------------------------------------------------- speed


def _big(n_events: int, n_persons: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(7)
    persons = pd.DataFrame({"id": [f"p{i}" for i in range(n_persons)]}, dtype=str)
    days = np.datetime64("2000-01-01") + rng.integers(0, 8000, n_events).astype("timedelta64[D]")
    events = pd.DataFrame(
        {
            "id": np.char.add("p", rng.integers(0, n_persons, n_events).astype(str)),
            "date": np.datetime_as_string(days),
            "code": rng.integers(0, 4000, n_events).astype(str),
        },
        dtype=str,
    )
    return persons, events


def test_vectorized_on_100k_events() -> None:
    persons, events = _big(100_000, 20_000)
    start = time.perf_counter()
    out = flatten(persons, events, key="id", order_by=["date"], n_events=3)
    assert time.perf_counter() - start < 10
    first = events.sort_values(["id", "date"], kind="stable").groupby("id").head(1).set_index("id")
    sample = out.sample(200, random_state=1)
    assert (sample["event1_code"].to_numpy() == first.loc[sample["id"], "code"].to_numpy()).all()


@pytest.mark.slow
def test_one_million_events_in_seconds() -> None:
    persons, events = _big(1_000_000, 200_000)
    start = time.perf_counter()
    out = flatten(persons, events, key="id", order_by=["date"], n_events=3)
    assert time.perf_counter() - start < 20
    assert out.shape == (200_000, 7)


# --------------------------------------------------------------------------- issue 18: outputs and bounds
@pytest.mark.parametrize("link", ["symlink", "hardlink", "dotted"])
def test_output_that_is_an_input_through_a_link_is_refused(tmp_path: Path, link: str) -> None:
    """Issue 18 item 8: the output is compared as a file (resolved path, device and inode), not
    as a name: a hard link to the persons table was replaced by the flattened table."""
    persons, events = _write_inputs(tmp_path, "csv")
    before = persons.path.read_bytes()
    out = tmp_path / "flat.csv"
    if link == "symlink":
        out.symlink_to(persons.path)
    elif link == "hardlink":
        out.hardlink_to(persons.path)
    else:
        (tmp_path / "sub").mkdir()
        out = tmp_path / "sub" / ".." / persons.path.name
    with pytest.raises(OutputError, match="refusing to overwrite an input"):
        flatten_files(persons, events, key="id", n_events=2, out=out)
    assert persons.path.read_bytes() == before


def test_flatten_writes_atomically_and_leaves_nothing_on_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failure while writing leaves the previous output whole and no temporary file."""
    persons, events = _write_inputs(tmp_path, "csv")
    out = tmp_path / "flat.csv"
    out.write_text("previous\n")

    def broken(self: pd.DataFrame, path: Path, **kwargs: Any) -> None:
        Path(path).write_text("half")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(pd.DataFrame, "to_csv", broken)
    with pytest.raises(OSError, match="No space left"):
        flatten_files(persons, events, key="id", n_events=2, out=out)
    assert out.read_text() == "previous\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["events.csv", "flat.csv", "persons.csv"]


@pytest.mark.parametrize(
    ("n_events", "shown"),
    [(100_000_000, r"100,000,000 .* about 205 GB"), (10**400, r"10,000,000,.* about 2\.04e\+403 B")],
)
def test_events_beyond_memory_are_refused_before_reading(tmp_path: Path, n_events: int, shown: str) -> None:
    """Issue 18 item 9: ``--events 100000000`` for 3 persons ran for minutes and took 6 GB;
    it is refused at once with the figures, before the tables are read (they do not exist here)."""
    absent = TableSource(tmp_path / "absent.csv")
    refused = rf"flattening {shown} of memory, more than the .* available; ask for fewer events"
    with pytest.raises(errors.ResourceError, match=refused):
        flatten_files(absent, absent, key="id", n_events=n_events, out=tmp_path / "flat.csv")
    assert list(tmp_path.iterdir()) == []


def test_flattening_that_cannot_fit_is_refused_with_the_figures(monkeypatch: pytest.MonkeyPatch) -> None:
    """The estimate counts the persons once they are read; the hint gives the most events of a person."""
    import safeshare.resources as resources

    monkeypatch.setattr(resources, "available_memory", lambda: 10_000_000)  # 10 MB
    spec = EventSpec(key="id", n_events=10_000, columns=["code"])
    with pytest.raises(errors.ResourceError) as info:
        flatten_frame(PERSONS, EVENTS, spec)
    message = str(info.value)
    assert "flattening 4 persons x 10,000 events of 1 column(s) (10,000 added columns)" in message
    assert "more than the 10 MB available" in message and "no person has more than 5 events" in message
    flatten_frame(PERSONS, EVENTS, EventSpec(key="id", n_events=5, columns=["code"]))  # small: fits


def test_many_padding_columns_stay_cheap() -> None:
    """100,000 events per person for 4 persons: 100,000 added columns in one block, padded, at once
    (as one pandas column each they took 7.5 kB and 170 us apiece: 17 s for 100,000)."""
    out = flatten(PERSONS, EVENTS, key="id", order_by=["date"], n_events=100_000, columns=["code"])
    assert out.shape == (4, 2 + 100_000)
    assert out.loc[3, "event1_code"] == "A" and out.loc[3, "event5_code"] == "E"
    assert (out.loc[3, "event6_code":] == "").all() and (out.iloc[0, 2:] == "").all()
