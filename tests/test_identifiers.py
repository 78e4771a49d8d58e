"""Pseudonyms and per-person shifted dates (issue 20): the key, the definitions, the engines
(the same bytes on every engine), the shift that keeps intervals, and the independent
verifier that recomputes both from the key on the written release."""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import os
import pickle
import tempfile
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from safeshare.data.engines.duckdb_engine import DuckDBEngine
from safeshare.data.engines.memory import MemoryEngine
from safeshare.data.identifiers import (
    IdentifierTreatment,
    PseudonymColumn,
    SecretKey,
    ShiftedDateColumn,
    load_key,
    write_new_key,
)
from safeshare.data.identifiers.date_shift import (
    check_date_format,
    day_shifts,
    shift_of_digest_words,
)
from safeshare.data.identifiers.key import DATE_SHIFT_LABEL, PSEUDONYM_LABEL
from safeshare.data.identifiers.pseudonym import check_length, check_no_collision, collision_bound, pseudonyms
from safeshare.data.schema import Attribute, Role, Schema
from safeshare.data.source import TableSource
from safeshare.errors import ConfigError, DataError
from safeshare.hierarchy.builders import DateBuilder
from safeshare.verify import verify_release, with_identifiers
from safeshare.verify.identifiers import own_shift
from tests.conftest import examples
from tests.identifier_helpers import (
    OTHER_KEY,
    TEST_KEY,
    TEST_KEY_BYTES,
    identifier_expectations,
    make_engine,
    read_release,
    release,
    visits,
    visits_schema,
)

ENGINES = ["memory", "duckdb"]


@pytest.fixture(scope="module")
def visits_csv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("visits") / "visits.csv"
    visits().to_csv(path, index=False)
    return path


# ------------------------------------------------------------------ the key
def _key_file(tmp_path: Path, text: str | bytes, mode: int = 0o600) -> Path:
    path = tmp_path / "release.key"
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    path.chmod(mode)
    return path


def test_a_hex_key_file_is_read_and_never_shown(tmp_path: Path) -> None:
    material = os.urandom(32)
    key = load_key(_key_file(tmp_path, "  " + material.hex().upper() + "\n"))
    assert key == SecretKey(material)
    shown = repr(key) + str(key) + f"{key}"
    # neither the key nor its fingerprint (which confirms a guessed key offline, issue 30)
    assert material.hex() not in shown.lower() and key.fingerprint not in shown
    with pytest.raises(TypeError):
        pickle.dumps(key)
    assert load_key(_key_file(tmp_path, os.urandom(40).hex())) != key


@pytest.mark.parametrize(
    ("content", "mode", "says"),
    [
        (None, 0o600, "no such file"),
        ("ab" * 31, 0o600, "31 bytes"),  # 31 bytes: short
        ("zz" * 32, 0o600, "hexadecimal"),
        ("a" * 65, 0o600, "hexadecimal"),  # an odd number of digits
        ("", 0o600, "hexadecimal"),
        ("ab" * 32 + "\nab", 0o600, "hexadecimal"),  # two lines
        ("ab" * 32, 0o644, "chmod 600"),
        ("ab" * 32, 0o640, "chmod 600"),
    ],
)
def test_bad_key_files_are_refused_in_one_line_without_their_content(
    tmp_path: Path, content: str | None, mode: int, says: str
) -> None:
    path = tmp_path / "release.key" if content is None else _key_file(tmp_path, content, mode)
    with pytest.raises(ConfigError) as info:
        load_key(path)
    message = str(info.value)
    assert "\n" not in message and says in message and str(path) in message
    if content:
        assert content.strip()[:16] not in message


def test_short_key_bytes_are_refused() -> None:
    with pytest.raises(ConfigError, match="at least 32"):
        SecretKey(b"\x01" * 31)


WEAK_KEYS = {
    "64 zeros": "0" * 64,
    "ab repeated": "ab" * 32,
    "a short pattern repeated": "0123456789abcdef" * 4,
    "deadbeef": "deadbeef" * 8,
    "a counter": bytes(range(32)).hex(),
    "a counter from 100": bytes(range(100, 132)).hex(),
    "a block repeated": hashlib.sha256(b"x").digest()[:16].hex() * 2,
    "the hex of a passphrase": b"correct horse battery staple 123".hex(),
}


@pytest.mark.parametrize("name", list(WEAK_KEYS))
def test_a_low_entropy_key_is_refused_in_one_line_without_its_content(
    tmp_path: Path, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 30, item 6: a key of 64 zeros or ``ab`` repeated was accepted; whoever guessed it
    inverted every pseudonym. Refused by the library, the key file reader and the command (exit 2,
    one line naming the file, before anything is read or written)."""
    text = WEAK_KEYS[name]
    with pytest.raises(ConfigError, match="the key is not random"):
        SecretKey(bytes.fromhex(text))
    path = _key_file(tmp_path, text + "\n")
    with pytest.raises(ConfigError) as info:
        load_key(path)
    message = str(info.value)
    assert "\n" not in message and str(path) in message and "openssl rand -hex 32" in message
    assert text[:16] not in message
    # the command: exit 2, one line, nothing written (the data is never read)
    from tests.conftest import run_cli

    visits().head(40).to_csv(tmp_path / "visits.csv", index=False)
    (tmp_path / "c.yaml").write_text(
        "input: {path: visits.csv}\nkey_file: release.key\nattributes:\n"
        "  mrn: {role: pseudonym}\n  sex: {role: quasi, hierarchy: {type: masking}}\n"
        "  age: {role: identifying}\n  admitted: {role: identifying}\n  discharged: {role: identifying}\n"
        "  dx: {role: sensitive}\nprivacy: {k-anonymity: {k: 2}}\n"
    )
    code, _, stderr = run_cli(["anonymize", str(tmp_path / "c.yaml"), "--out", str(tmp_path / "o")], capsys)
    assert code == 2 and "the key is not random" in stderr and len(stderr.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()


def test_the_weak_key_rules_refuse_almost_no_random_key() -> None:
    """The rules refuse a uniformly random 32-byte key with probability below 2^-45 (key.py):
    20,000 keys from the operating system, none refused."""
    refused = 0
    for _ in range(20_000):
        try:
            SecretKey(os.urandom(32))
        except ConfigError:
            refused += 1
    assert refused == 0


def test_a_new_key_is_private_random_and_never_overwritten(tmp_path: Path) -> None:
    path = tmp_path / "new.key"
    key = write_new_key(path)
    assert path.stat().st_mode & 0o777 == 0o600
    assert load_key(path) == key
    with pytest.raises(ConfigError, match="exists already"):
        write_new_key(path)
    assert load_key(path) == key
    assert write_new_key(tmp_path / "other.key") != key


# ------------------------------------------------------------------ pseudonyms
def test_pseudonym_is_the_hmac_of_the_value_under_the_pseudonym_subkey() -> None:
    """The definition, pinned: k_p = HMAC(key, label), pseudonym = HMAC(k_p, utf8(value))[:L]."""
    k_p = hmac.new(TEST_KEY_BYTES, b"safeshare pseudonym v1", hashlib.sha256).digest()
    assert TEST_KEY.subkey(PSEUDONYM_LABEL) == k_p
    for value, length in [("MRN00001", 16), ("Åsa 42", 20), ("", 64)]:
        expected = hmac.new(k_p, value.encode(), hashlib.sha256).hexdigest()[:length]
        assert pseudonyms(TEST_KEY, [value], length) == [expected]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(min_size=1, max_size=12), min_size=1, max_size=30, unique=True), st.integers(16, 64))
def test_pseudonyms_are_stable_distinct_and_key_dependent(values: list[str], length: int) -> None:
    first = pseudonyms(TEST_KEY, values, length)
    assert pseudonyms(TEST_KEY, values, length) == first  # the same in every release
    assert all(len(p) == length and set(p) <= set("0123456789abcdef") for p in first)
    assert len(set(first)) == len(values)
    other = pseudonyms(OTHER_KEY, values, length)
    assert not set(first) & set(other)  # another key: unrelated pseudonyms
    assert not set(first) & set(values)


def test_pseudonym_length_and_collisions() -> None:
    for bad in (15, 65, 0, "16", True):
        with pytest.raises(ConfigError):
            check_length(bad)
    assert check_length(16) == 16
    assert collision_bound(10**6, 16) == pytest.approx(10**6 * (10**6 - 1) / 2 / 2**64)
    assert collision_bound(10**8, 16) < 3e-4 < collision_bound(10**8, 15)
    check_no_collision("mrn", 1000, 1000, 16)
    with pytest.raises(DataError, match="only 999 distinct pseudonyms"):
        check_no_collision("mrn", 1000, 999, 16)
    with pytest.raises(DataError, match="collide with probability"):
        check_no_collision("mrn", 10**9, 10**9, 16)  # 2.7 % likely: refused with a longer length
    check_no_collision("mrn", 10**9, 10**9, 20)


# ------------------------------------------------------------------ date shifts
@settings(max_examples=200, deadline=None)
@given(st.text(max_size=20), st.integers(1, 36_500))
def test_shift_is_a_nonzero_whole_number_of_days_within_max_days(person: str, max_days: int) -> None:
    (shift,) = day_shifts(TEST_KEY, [person], max_days)
    assert shift != 0 and -max_days <= shift <= max_days
    assert day_shifts(TEST_KEY, [person], max_days) == [shift]
    # the verifier's independent implementation of the same definition agrees
    assert own_shift(TEST_KEY.subkey(DATE_SHIFT_LABEL), person, max_days) == shift


def test_shifts_are_uniform_over_the_2n_values() -> None:
    """60,000 people, N = 3: each of the 6 shifts about 10,000 times (chi-square, fixed key)."""
    shifts = day_shifts(TEST_KEY, [f"p{i}" for i in range(60_000)], 3)
    counts = Counter(shifts)
    assert set(counts) == {-3, -2, -1, 1, 2, 3}
    assert stats.chisquare([counts[s] for s in sorted(counts)]).pvalue > 1e-3
    other = day_shifts(OTHER_KEY, [f"p{i}" for i in range(60_000)], 3)
    agree = np.mean(np.array(shifts) == np.array(other))
    assert abs(agree - 1 / 6) < 0.01  # another key: independent shifts


def test_rejection_sampling_has_no_modulo_bias() -> None:
    # span 6 does not divide 2^64: words at or above the largest multiple of 6 are rejected
    limit = (1 << 64) - (1 << 64) % 6
    assert shift_of_digest_words([limit, (1 << 64) - 1, 7], 3) == -2  # 7 % 6 = 1 -> 1 - 3
    assert shift_of_digest_words([limit - 1], 3) == 3  # (limit - 1) % 6 = 5 -> 5 - 3 + 1
    assert shift_of_digest_words([limit, limit + 1], 3) is None
    assert [shift_of_digest_words([r], 3) for r in range(6)] == [-3, -2, -1, 1, 2, 3]


@pytest.mark.parametrize(
    ("fmt", "ok"),
    [
        ("%Y-%m-%d", True),
        ("%d/%m/%Y", True),
        ("%Y%j", True),
        ("%d %b %Y", True),
        ("%Y-%m-%d %H:%M", False),
        ("%y-%m-%d", False),
        ("%m-%d", False),
        ("%Y-%m", False),
        ("2021", False),
        ("%Y-%m-%d%", False),
    ],
)
def test_date_formats_must_name_a_calendar_day(fmt: str, ok: bool) -> None:
    if ok:
        assert check_date_format(fmt) == fmt
    else:
        with pytest.raises(ConfigError):
            check_date_format(fmt)


def test_roles_take_their_parameters_and_refuse_others() -> None:
    assert Attribute("mrn", Role.PSEUDONYM).length == 16
    assert Attribute("d", Role.SHIFTED_DATE, person="mrn", max_days=5).date_format == "%Y-%m-%d"
    assert Role.parse("shifted-date") is Role.SHIFTED_DATE and Role.parse("pseudonym") is Role.PSEUDONYM
    with pytest.raises(ConfigError, match="needs person"):
        Attribute("d", Role.SHIFTED_DATE, max_days=5)
    with pytest.raises(ConfigError, match="needs max_days"):
        Attribute("d", Role.SHIFTED_DATE, person="mrn")
    with pytest.raises(ConfigError, match="another column"):
        Attribute("d", Role.SHIFTED_DATE, person="d", max_days=5)
    with pytest.raises(ConfigError, match="applies to the role pseudonym"):
        Attribute("x", Role.INSENSITIVE, length=16)
    with pytest.raises(ConfigError, match="applies to the role shifted_date"):
        Attribute("x", Role.PSEUDONYM, max_days=3)
    with pytest.raises(ConfigError, match="same format"):
        Attribute("d", Role.SHIFTED_DATE, DateBuilder(format="%d/%m/%Y"), person="mrn", max_days=5)
    schema = visits_schema()
    assert schema.quasi_identifiers == ["sex", "age", "discharged"]
    assert schema.identifier_columns == ["mrn", "admitted", "discharged"]
    lone = Schema.from_attributes(
        [Attribute("a", Role.SHIFTED_DATE, DateBuilder(), person="pid", max_days=3)]
    )
    with pytest.raises(DataError, match="its person column 'pid' is not in"):
        lone.check_columns(["a", "b"])
    with pytest.raises(ConfigError, match="need a key"):
        IdentifierTreatment.from_schema(schema, None)


# ------------------------------------------------------------------ engines
@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_every_engine_writes_the_same_verified_release(visits_csv: Path, fmt: str, tmp_path: Path) -> None:
    """CSV releases are the same bytes; Parquet ones the same rows in the same order (the
    writers' Parquet metadata differ, as for every release: tests/test_engines.py)."""
    schema = visits_schema()
    written = {}
    for name in ENGINES:
        engine = make_engine(name, TableSource(visits_csv), schema)
        done = release(engine, schema, tmp_path / f"{name}.{fmt}", fmt)
        assert done.verification.passed, done.verification.failures
        assert done.verification.checks["identifiers"]["records_checked"] == done.verification.records_out
        written[name] = done.path
    if fmt == "csv":
        assert len({hashlib.sha256(p.read_bytes()).hexdigest() for p in written.values()}) == 1
    else:
        pd.testing.assert_frame_equal(read_release(written["memory"]), read_release(written["duckdb"]))


def test_engines_read_the_same_treated_and_raw_values(visits_csv: Path) -> None:
    schema = visits_schema()
    memory, duck = (make_engine(n, TableSource(visits_csv), schema) for n in ENGINES)
    columns = ["mrn", "admitted", "discharged", "sex"]

    def grouped(frame: pd.DataFrame) -> pd.DataFrame:
        return frame.sort_values(columns).reset_index(drop=True)

    pd.testing.assert_frame_equal(
        grouped(memory.grouped_counts(columns)), grouped(duck.grouped_counts(columns))
    )
    raw_m = pd.concat(list(memory.raw_grouped_batches(columns)))
    raw_d = pd.concat(list(duck.raw_grouped_batches(columns, batch_rows=50)))
    pd.testing.assert_frame_equal(grouped(raw_m), grouped(raw_d))
    assert set(raw_m["mrn"]) == set(visits()["mrn"])


def test_release_holds_no_raw_identifier_and_no_record_keeps_its_date(
    visits_csv: Path, tmp_path: Path
) -> None:
    schema = visits_schema(discharged_quasi=False)
    raw = visits()
    done = release(make_engine("memory", TableSource(visits_csv), schema), schema, tmp_path / "r.csv")
    assert done.verification.passed, done.verification.failures
    out = read_release(done.path)
    assert not set(out["mrn"]) & set(raw["mrn"])
    # each released record is an input record with its dates moved by its person's shift
    person = dict(zip(pseudonyms(TEST_KEY, raw["mrn"].unique()), raw["mrn"].unique(), strict=True))
    shift = dict(zip(raw["mrn"].unique(), day_shifts(TEST_KEY, list(raw["mrn"].unique()), 30), strict=True))
    raw_pairs = Counter(zip(raw["mrn"], raw["admitted"], raw["discharged"], strict=True))
    for p, a, d in zip(out["mrn"], out["admitted"], out["discharged"], strict=True):
        mrn = person[p]
        back = [(dt.date.fromisoformat(x) - dt.timedelta(days=shift[mrn])).isoformat() for x in (a, d)]
        assert raw_pairs[(mrn, *back)] > 0
        assert (a, d) != tuple(back)


@settings(max_examples=examples(25, 10), deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 6), st.dates(dt.date(1990, 1, 1), dt.date(2030, 12, 31))),
        min_size=1,
        max_size=40,
    ),
    st.integers(1, 400),
    st.sampled_from(["%Y-%m-%d", "%d/%m/%Y", "%Y%j"]),
)
def test_intervals_within_a_person_are_kept(
    records: list[tuple[int, dt.date]], max_days: int, fmt: str
) -> None:
    # 30 people with one record each: 7 people alone would be a coarse person column (issue 30)
    records = records + [(100 + i, dt.date(2000, 1, 1) + dt.timedelta(days=i)) for i in range(30)]
    frame = pd.DataFrame(
        {"pid": [f"p{p}" for p, _ in records], "when": [d.strftime(fmt) for _, d in records]}
    )
    treatment = IdentifierTreatment(
        TEST_KEY, shifted_dates=(ShiftedDateColumn("when", "pid", max_days, fmt),)
    )
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "dates.csv"
        frame.to_csv(path, index=False)
        out = {}
        memory = MemoryEngine(TableSource(path), identifiers=treatment)
        with DuckDBEngine(TableSource(path), identifiers=treatment) as duck:
            for engine in (memory, duck):
                grouped = engine.grouped_counts(["pid", "when"])
                out[engine.name] = grouped.sort_values(["pid", "when"]).reset_index(drop=True)
    pd.testing.assert_frame_equal(out["memory"], out["duckdb"])
    treated = memory.frame
    moved = {}
    for pid, before, after in zip(frame["pid"], frame["when"], treated["when"], strict=True):
        delta = (dt.datetime.strptime(after, fmt) - dt.datetime.strptime(before, fmt)).days
        moved.setdefault(pid, set()).add(delta)
    for deltas in moved.values():
        (delta,) = deltas  # one shift per person: every interval within the person is kept
        assert delta != 0 and abs(delta) <= max_days


def test_pseudonyms_and_dates_are_stable_across_releases_and_change_with_the_key(
    visits_csv: Path, tmp_path: Path
) -> None:
    schema = visits_schema(discharged_quasi=False)
    # a later release of more people (the first 100 again, plus 50 new ones) with the same key
    later = visits(150)
    first_rows = later[later["mrn"] < "MRN00100"]
    early_csv = tmp_path / "early.csv"
    first_rows.to_csv(early_csv, index=False)
    early = make_engine("memory", TableSource(early_csv), schema).frame  # type: ignore[attr-defined]
    again = make_engine("duckdb", TableSource(visits_csv), schema)
    again_frame = pd.concat(list(again.grouped_counts(["mrn", "admitted"]) for _ in [0]))
    assert set(zip(early["mrn"], early["admitted"], strict=True)) <= set(
        zip(again_frame["mrn"], again_frame["admitted"], strict=True)
    )
    other = make_engine("memory", TableSource(early_csv), schema, OTHER_KEY).frame  # type: ignore[attr-defined]
    assert not set(other["mrn"]) & set(early["mrn"])
    assert (other["admitted"] != early["admitted"]).mean() > 0.9  # another key, other shifts (1/60 agree)


def test_the_key_reaches_no_output(visits_csv: Path, tmp_path: Path) -> None:
    material = TEST_KEY_BYTES
    schema = visits_schema()
    done = release(
        make_engine("duckdb", TableSource(visits_csv), schema), schema, tmp_path / "r.parquet", "parquet"
    )
    secrets = [material.hex(), material.hex().upper(), TEST_KEY.subkey(PSEUDONYM_LABEL).hex()]
    shown = [
        done.path.read_bytes().decode("latin-1"),
        repr(done.verification.to_dict()),
        repr(done.engine.identifiers),
        repr(done.expected),
        repr(IdentifierTreatment.from_schema(schema, TEST_KEY).describe()),  # type: ignore[union-attr]
    ]
    for text in shown:
        for secret in secrets:
            assert secret not in text
        assert TEST_KEY.fingerprint not in text  # issue 30: it would confirm a guessed key


@pytest.mark.parametrize("name", ENGINES)
def test_bad_dates_and_missing_persons_are_refused_with_line_and_column(name: str, tmp_path: Path) -> None:
    schema = visits_schema()
    bad = visits(10)
    bad.loc[7, "admitted"] = "2021-02-30"
    path = tmp_path / "bad.csv"
    bad.to_csv(path, index=False)
    with pytest.raises(DataError) as info:
        make_engine(name, TableSource(path), schema)
    assert str(info.value) == (
        f"{path} line 9, column 'admitted': '2021-02-30' is not a date in the format '%Y-%m-%d' "
        "(e.g. '2022-01-31'); if it marks an unknown date, declare it a missing value (input.missing)"
    )
    no_person = visits(10)
    no_person.loc[4, "mrn"] = ""
    no_person.to_csv(path, index=False)
    with pytest.raises(DataError, match=rf"^{path} line 6, column 'mrn': missing, but it names the person"):
        make_engine(name, TableSource(path), schema)
    parquet = tmp_path / "bad.parquet"
    bad.to_parquet(parquet, index=False)
    with pytest.raises(DataError, match=rf"^{parquet} row 8, column 'admitted': '2021-02-30' is not a date"):
        make_engine(name, TableSource(parquet), schema)


@pytest.mark.parametrize("name", ENGINES)
def test_missing_dates_and_identifiers_stay_missing(name: str, tmp_path: Path) -> None:
    schema = visits_schema(discharged_quasi=False)
    frame = visits(10)
    frame.loc[2, "admitted"] = "?"
    frame.loc[3, "discharged"] = ""
    frame.loc[5, "mrn"] = "?"
    frame.loc[5, ["admitted", "discharged"]] = ["?", "?"]  # no date: the missing person is harmless
    path = tmp_path / "missing.csv"
    frame.to_csv(path, index=False)
    engine = make_engine(name, TableSource(path, missing=("?",)), schema)
    grouped = engine.grouped_counts(["mrn", "admitted", "discharged"])
    assert (grouped["mrn"] == "?").sum() == 1
    assert (grouped["admitted"] == "?").sum() == 2 and (grouped["discharged"] == "?").sum() == 2


def test_a_shifted_quasi_identifier_is_generalized_after_the_shift(visits_csv: Path, tmp_path: Path) -> None:
    schema = visits_schema()
    done = release(make_engine("memory", TableSource(visits_csv), schema), schema, tmp_path / "r.csv")
    table = done.result.table
    hierarchy = table.hierarchies[table.qi_names.index("discharged")]
    treated = set(done.engine.grouped_counts(["discharged"])["discharged"])  # type: ignore[union-attr]
    assert set(hierarchy.leaves) == treated
    assert set(hierarchy.leaves) != set(visits()["discharged"])  # the raw dates are not its leaves
    assert done.verification.passed, done.verification.failures


def test_duckdb_sampling_keeps_the_treatment(tmp_path: Path) -> None:
    path = tmp_path / "visits.parquet"
    visits(40).to_parquet(path, index=False)
    schema = visits_schema()
    engine = make_engine("duckdb", TableSource(path), schema)
    assert isinstance(engine, DuckDBEngine)
    keep = np.arange(engine.n_records()) % 2 == 0
    sampled = engine.sampled(keep)
    whole = engine.grouped_counts(["mrn", "admitted"])
    part = sampled.grouped_counts(["mrn", "admitted"])
    assert set(zip(part["mrn"], part["admitted"], strict=True)) <= set(
        zip(whole["mrn"], whole["admitted"], strict=True)
    )
    assert int(part["__count__"].sum()) == int(keep.sum())
    assert not set(part["mrn"]) & set(visits(40)["mrn"])


# ------------------------------------------------------------------ the verifier
def _tampered(done_path: Path, edit: object) -> Path:
    frame = pd.read_csv(done_path, dtype=str, keep_default_na=False)
    frame = edit(frame)  # type: ignore[operator]
    path = done_path.with_name("tampered.csv")
    frame.to_csv(path, index=False)
    return path


def _shift_back(frame: pd.DataFrame) -> pd.DataFrame:
    """One record's admission date replaced by its raw date."""
    raw = visits()
    mrns = raw["mrn"].unique()
    person = dict(zip(pseudonyms(TEST_KEY, mrns), mrns, strict=True))
    shift = dict(zip(mrns, day_shifts(TEST_KEY, list(mrns), 30), strict=True))
    day = dt.date.fromisoformat(frame.loc[0, "admitted"]) - dt.timedelta(
        days=shift[person[frame.loc[0, "mrn"]]]
    )
    frame.loc[0, "admitted"] = day.isoformat()
    return frame


def _swap_dates(frame: pd.DataFrame) -> pd.DataFrame:
    last = len(frame) - 1
    frame.loc[[0, last], "admitted"] = frame.loc[[last, 0], "admitted"].to_numpy()
    return frame


def _raw_mrn(frame: pd.DataFrame) -> pd.DataFrame:
    raw = visits()
    person = dict(zip(pseudonyms(TEST_KEY, raw["mrn"].unique()), raw["mrn"].unique(), strict=True))
    frame.loc[0, "mrn"] = person[frame.loc[0, "mrn"]]
    return frame


def _other_key(frame: pd.DataFrame) -> pd.DataFrame:
    raw = visits()
    mrns = raw["mrn"].unique()
    person = dict(zip(pseudonyms(TEST_KEY, mrns), mrns, strict=True))
    frame["mrn"] = pseudonyms(OTHER_KEY, [person[p] for p in frame["mrn"]])
    return frame


@pytest.mark.parametrize(
    ("edit", "says"),
    [
        (_raw_mrn, "raw values of column 'mrn' appear"),
        (_other_key, "not the pseudonyms of any input value"),
        (_shift_back, "no input record of the same values produces"),
        (_swap_dates, "no input record of the same values produces"),
    ],
    ids=["raw identifier", "another key", "a raw date", "dates of two people swapped"],
)
def test_verifier_recomputes_identifiers_and_catches_tampering(
    visits_csv: Path, tmp_path: Path, edit: object, says: str
) -> None:
    schema = visits_schema(discharged_quasi=False)
    done = release(make_engine("memory", TableSource(visits_csv), schema), schema, tmp_path / "r.csv")
    assert done.verification.passed, done.verification.failures
    bad = verify_release(_tampered(done.path, edit), "csv", done.expected)
    assert not bad.passed
    assert any(says in f for f in bad.failures), bad.failures


def test_identifier_columns_are_not_allowed_without_their_check(visits_csv: Path, tmp_path: Path) -> None:
    """Until the configuration passes the identifier expectations, a release with a pseudonym
    column fails verification: a raw identifier can never be published unchecked."""
    from safeshare.workflows.release import release_expectations

    schema = visits_schema()
    done = release(make_engine("memory", TableSource(visits_csv), schema), schema, tmp_path / "r.csv")
    plain = release_expectations(done.result, done.engine.columns())
    failed = verify_release(done.path, "csv", plain)
    assert not failed.passed and "release column 'mrn' is not allowed" in failed.failures[0]
    roles = {n: a.role.value for n, a in schema.attributes.items()}
    ids = done.expected.identifiers
    assert ids is not None
    with pytest.raises(ValueError, match="the identifier checks and the roles disagree on column 'dx'"):
        with_identifiers(plain, done.engine.columns(), {**roles, "dx": "pseudonym"}, None, ids)
    # allowed: the released roles and the checked identifier roles, a column without a role by the default
    header = done.engine.columns()
    checked = with_identifiers(plain, header, roles, None, ids)
    assert checked.identifiers is ids and checked.k == plain.k
    assert checked.columns == [
        c
        for c in header
        if roles.get(c) in {"quasi", "sensitive", "insensitive", "pseudonym", "shifted_date"}
    ]
    assert set(ids.columns) <= set(checked.columns)
    unlisted = next(c for c in header if roles.get(c) in {"sensitive", "insensitive"})
    fewer = {c: r for c, r in roles.items() if c != unlisted}
    assert unlisted not in with_identifiers(plain, header, fewer, None, ids).columns
    assert with_identifiers(plain, header, fewer, "insensitive", ids).columns == checked.columns


def test_an_engine_without_the_treatment_fails_the_check(visits_csv: Path, tmp_path: Path) -> None:
    """The raw data written by an engine that forgot the treatment is refused."""
    schema = visits_schema(discharged_quasi=False)
    treated = make_engine("memory", TableSource(visits_csv), schema)
    done = release(treated, schema, tmp_path / "r.csv")
    plain = MemoryEngine(TableSource(visits_csv))
    plan = done.result.release_plan(plain.columns(), "csv")
    plain.write_release(plan, tmp_path / "raw.csv")
    expected = identifier_expectations(treated, done.result, schema, TEST_KEY, treated.columns())
    bad = verify_release(tmp_path / "raw.csv", "csv", expected)
    assert not bad.passed and any("raw values of column 'mrn'" in f for f in bad.failures)


def test_treatment_refuses_a_person_that_is_a_shifted_date() -> None:
    with pytest.raises(ConfigError, match="is a shifted date"):
        IdentifierTreatment(
            TEST_KEY,
            (PseudonymColumn("mrn"),),
            (ShiftedDateColumn("a", "b", 3), ShiftedDateColumn("b", "mrn", 3)),
        )
    with pytest.raises(ConfigError, match="treated twice"):
        IdentifierTreatment(TEST_KEY, (PseudonymColumn("a"),), (ShiftedDateColumn("a", "mrn", 3),))
    schema = Schema.from_attributes([Attribute("a", Role.QUASI, DateBuilder())])
    assert IdentifierTreatment.from_schema(schema, None) is None


def test_a_sampled_memory_engine_keeps_the_treatment_and_its_raw_values(visits_csv: Path) -> None:
    from safeshare.data.engines.sampled import restrict_engine

    engine = make_engine("memory", TableSource(visits_csv), visits_schema())
    keep = np.arange(engine.n_records()) % 3 == 0
    sampled = restrict_engine(engine, keep)
    assert sampled.identifiers is engine.identifiers
    raw = pd.concat(list(sampled.raw_grouped_batches(["mrn", "admitted"])))
    assert int(raw["__count__"].sum()) == int(keep.sum())
    assert set(raw["mrn"]) <= set(visits()["mrn"])
    assert not set(sampled.grouped_counts(["mrn"])["mrn"]) & set(visits()["mrn"])


@pytest.mark.parametrize("name", ENGINES)
def test_the_treated_release_does_not_follow_the_input_order(
    visits_csv: Path, tmp_path: Path, name: str
) -> None:
    """The same bytes from the input in reverse order, and on a second write (docs/security.md,
    "Reproducibility without leaking order"), with pseudonyms and shifted dates."""
    schema = visits_schema()
    reversed_csv = tmp_path / "reversed.csv"
    visits().iloc[::-1].to_csv(reversed_csv, index=False)
    digests = set()
    for n, path in enumerate([visits_csv, reversed_csv, visits_csv]):
        done = release(make_engine(name, TableSource(path), schema), schema, tmp_path / f"r{n}.csv")
        assert done.verification.passed
        digests.add(hashlib.sha256(done.path.read_bytes()).hexdigest())
    assert len(digests) == 1


def test_a_sql_source_is_treated_alike_and_its_connection_gets_its_settings_back(visits_csv: Path) -> None:
    """A caller's DuckDB connection: the same treated values as the memory engine; while the
    engine lives every statement keeps its joins as written (at a million records DuckDB
    otherwise built a hash table of the whole scan and ran out of memory), then the caller's
    ``disabled_optimizers`` is restored."""
    import duckdb

    schema = visits_schema()
    con = duckdb.connect()
    con.execute(f"CREATE TABLE visits AS SELECT * FROM read_csv('{visits_csv}', all_varchar=true)")
    con.execute("SET disabled_optimizers = 'compressed_materialization'")
    treatment = IdentifierTreatment.from_schema(schema, TEST_KEY)
    engine = DuckDBEngine.from_sql(con, "visits", identifiers=treatment)
    setting = con.execute("SELECT current_setting('disabled_optimizers')").fetchone()[0]  # type: ignore[index]
    assert {"compressed_materialization", "join_order", "build_side_probe_side"} <= set(setting.split(","))
    memory = make_engine("memory", TableSource(visits_csv), schema)
    columns = ["mrn", "admitted", "discharged"]
    got = engine.grouped_counts(columns).sort_values(columns).reset_index(drop=True)
    expected = memory.grouped_counts(columns).sort_values(columns).reset_index(drop=True)
    pd.testing.assert_frame_equal(got, expected)
    engine.close()
    after = con.execute("SELECT current_setting('disabled_optimizers')").fetchone()[0]  # type: ignore[index]
    assert after == "compressed_materialization"
    assert not [r for r in con.execute("SHOW ALL TABLES").fetchall() if "safeshare" in str(r)]


# ------------------------------------------------------------------ issue 30, items 5 and 7
def _visits_yaml(tmp_path: Path, attributes: str, frame: pd.DataFrame | None = None) -> Path:
    """A configuration over visits.csv (mrn, sex, age, admitted, discharged, dx) with ``attributes``."""
    (frame if frame is not None else visits(150)).to_csv(tmp_path / "visits.csv", index=False)
    if not (tmp_path / "release.key").exists():
        write_new_key(tmp_path / "release.key")
    path = tmp_path / "c.yaml"
    path.write_text(
        "input: {path: visits.csv}\nkey_file: release.key\nattributes:\n"
        + attributes
        + "privacy: {k-anonymity: {k: 3}}\nmax_suppression: 10%\n"
    )
    return path


TWO_WINDOWS = """\
  mrn: {role: pseudonym}
  sex: {role: quasi, hierarchy: {type: masking}}
  age: {role: quasi, hierarchy: {type: intervals, widths: [10, 20]}}
  admitted: {role: shifted_date, person: mrn, max_days: 30}
  discharged: {role: shifted_date, person: mrn, max_days: 60}
  dx: {role: sensitive}
"""


def test_one_person_has_one_shift_whatever_the_column(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 30, item 5: two shifted dates of one person with different max_days got different
    shifts (1,029 of 3,000 discharges fell before their admission). Refused: in the schema, the
    treatment and the configuration (exit 2, one line, before the data is read)."""
    with pytest.raises(ConfigError, match="max_days 60 differs from 'admitted''s 30"):
        Schema.from_attributes(
            [
                Attribute("admitted", Role.SHIFTED_DATE, person="mrn", max_days=30),
                Attribute("discharged", Role.SHIFTED_DATE, person="mrn", max_days=60),
            ]
        )
    with pytest.raises(ConfigError, match="max_days 60 differs"):
        IdentifierTreatment(
            TEST_KEY,
            shifted_dates=(
                ShiftedDateColumn("admitted", "mrn", 30),
                ShiftedDateColumn("discharged", "mrn", 60),
            ),
        )
    # another person column does not escape it: the shift is the key's and the person text's
    with pytest.raises(ConfigError, match="differs"):
        IdentifierTreatment(
            TEST_KEY,
            shifted_dates=(
                ShiftedDateColumn("admitted", "mrn", 30),
                ShiftedDateColumn("discharged", "pid", 60),
            ),
        )
    from tests.conftest import run_cli

    config = _visits_yaml(tmp_path, TWO_WINDOWS)
    code, _, stderr = run_cli(["anonymize", str(config), "--out", str(tmp_path / "o")], capsys)
    assert code == 2 and len(stderr.strip().splitlines()) == 1 and not (tmp_path / "o").exists()
    assert "attributes.discharged: max_days 60 differs from 'admitted''s 30" in stderr
    # one window: every date of a person moves by the same shift, on both engines, so no
    # discharge falls before its admission
    same = _visits_yaml(tmp_path, TWO_WINDOWS.replace("max_days: 60", "max_days: 30"))
    from safeshare.config import load_config

    cfg = load_config(same)
    raw = visits(150)
    key = cfg.identifiers.key  # type: ignore[union-attr]
    memory = make_engine("memory", TableSource(tmp_path / "visits.csv"), cfg.schema, key)
    treated = memory.frame  # type: ignore[attr-defined]
    shifts = {
        column: (pd.to_datetime(treated[column]) - pd.to_datetime(raw[column])).dt.days
        for column in ("admitted", "discharged")
    }
    assert (shifts["admitted"] == shifts["discharged"]).all()
    assert shifts["admitted"].groupby(raw["mrn"]).nunique().max() == 1
    assert (pd.to_datetime(treated["discharged"]) >= pd.to_datetime(treated["admitted"])).all()
    with make_engine("duckdb", TableSource(tmp_path / "visits.csv"), cfg.schema, key) as duck:
        columns = ["mrn", "admitted", "discharged"]
        pd.testing.assert_frame_equal(
            duck.grouped_counts(columns).sort_values(columns).reset_index(drop=True),
            memory.grouped_counts(columns).sort_values(columns).reset_index(drop=True),
        )


@pytest.mark.parametrize(
    ("person", "role", "says"),
    [
        ("sex", "{role: quasi, hierarchy: {type: masking}}", "is a quasi-identifier"),
        ("dx", "{role: sensitive}", "is a sensitive column"),
        ("notes", "{role: text}", "is free text"),
    ],
)
def test_a_person_column_that_is_not_a_person_is_refused_by_role(
    tmp_path: Path, person: str, role: str, says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 30, item 7: ``person: sex`` moved every woman's dates by the same number of days."""
    frame = visits(150).assign(notes=lambda f: "seen by Dr " + f["mrn"].str[-2:])
    attributes = (
        "  mrn: {role: pseudonym}\n  sex: {role: quasi, hierarchy: {type: masking}}\n"
        "  age: {role: quasi, hierarchy: {type: intervals, widths: [10, 20]}}\n"
        f"  admitted: {{role: shifted_date, person: {person}, max_days: 30}}\n"
        "  discharged: {role: identifying}\n  dx: {role: sensitive}\n  notes: {role: text}\n"
    )
    config = _visits_yaml(
        tmp_path, attributes.replace(f"  {person}: {role}\n", f"  {person}: {role}\n"), frame
    )
    from tests.conftest import run_cli

    code, _, stderr = run_cli(["anonymize", str(config), "--out", str(tmp_path / "o")], capsys)
    assert code == 2 and len(stderr.strip().splitlines()) == 1 and not (tmp_path / "o").exists()
    assert f"attributes.admitted: its person column {person!r} {says}" in stderr


@pytest.mark.parametrize("name", ENGINES)
def test_a_coarse_person_column_is_refused_by_its_values(name: str, tmp_path: Path) -> None:
    """Issue 30, item 7: a person column with far fewer distinct values than records (fewer than
    2 sqrt(n): a ward, an age, a sex kept as insensitive) gives many people one shift. Refused with
    the figures on both engines; a record number of the same data passes."""
    frame = visits(150).assign(ward=lambda f: "W" + (f.index % 4).astype(str))
    path = tmp_path / "visits.csv"
    frame.to_csv(path, index=False)
    coarse = Schema.from_attributes(
        [
            Attribute("ward", Role.INSENSITIVE),
            Attribute("admitted", Role.SHIFTED_DATE, person="ward", max_days=30),
        ],
        Role.IDENTIFYING,
    )
    with pytest.raises(DataError) as info:
        make_engine(name, TableSource(path), coarse)
    message = str(info.value)
    n = len(frame)
    assert (
        "\n" not in message
        and f"its person column 'ward' has 4 distinct values over {n:,} records" in message
    )
    assert f"2 sqrt(n) = {2 * n**0.5:,.0f}" in message
    by_age = Schema.from_attributes(
        [
            Attribute("age", Role.INSENSITIVE),
            Attribute("admitted", Role.SHIFTED_DATE, person="age", max_days=30),
        ],
        Role.IDENTIFYING,
    )
    if frame["age"].nunique() < 2 * n**0.5:
        with pytest.raises(DataError, match="its person column 'age' has"):
            make_engine(name, TableSource(path), by_age)
    fine = Schema.from_attributes(
        [Attribute("admitted", Role.SHIFTED_DATE, person="mrn", max_days=30)], Role.IDENTIFYING
    )
    make_engine(name, TableSource(path), fine).close()
