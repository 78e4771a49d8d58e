"""Disclosure warnings beyond the configured model (issue 20): each fires on data built to
trigger it, its figures equal a direct pandas computation over the written release, and on
the Adult demo only the homogeneity warning fires, for the reason the test states."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from safeshare import Anonymizer, KAnonymity
from safeshare.config import load_config
from safeshare.data.engines.memory import MemoryEngine
from safeshare.data.schema import Attribute, Role, Schema
from safeshare.hierarchy.hierarchy import Hierarchy
from safeshare.models.risk import RiskThreshold
from safeshare.verify import Expectations, verify_release
from safeshare.verify.disclosure import DisclosureWarning, disclosure_check, disclosure_warnings
from safeshare.verify.sql import ROW_RECORDS
from safeshare.workflows.publish import write_release
from safeshare.workflows.release import ReleaseContext
from tests.conftest import ADULT_DIR, examples


def _codes(warnings: list[DisclosureWarning]) -> dict[tuple[str, str], float]:
    return {(w.code, w.columns[0]): w.value for w in warnings}


def _write(frame: pd.DataFrame, path: Path) -> Path:
    frame.to_csv(path, index=False)
    return path


def test_a_kept_follow_up_time_is_flagged(tmp_path: Path) -> None:
    """The issue's case: follow-up days kept as an insensitive column single out records."""
    rng = np.random.default_rng(3)
    n = 400
    frame = pd.DataFrame(
        {
            "age": rng.choice(["40-49", "50-59", "60-69"], n),
            "sex": rng.choice(["F", "M"], n),
            "followup_days": rng.integers(0, 3000, n).astype(str),
            "ward": rng.choice(["A", "B"], n),
        }
    )
    warnings = disclosure_warnings(
        _write(frame, tmp_path / "r.csv"), "csv", ["age", "sex"], kept_columns=["followup_days", "ward"]
    )
    assert [w.code for w in warnings] == ["kept-column-identifying"]
    (w,) = warnings
    unique = int((frame.groupby(["age", "sex", "followup_days"]).size() == 1).sum())
    assert w.columns == ("followup_days", "age", "sex")
    assert w.value == pytest.approx(unique / n) and w.value > 0.5
    alone = int((frame.groupby("followup_days").size() == 1).sum())
    assert f"{unique:,} of {n:,} released records" in w.message and f"({alone:,} on its own)" in w.message
    assert w.to_dict() == {"code": w.code, "columns": list(w.columns), "value": w.value, "message": w.message}


def test_classes_homogeneous_in_a_sensitive_column_are_flagged(tmp_path: Path) -> None:
    rows = (
        [("70+", "M", "died")] * 6  # homogeneous: everyone died
        + [("60-69", "F", "alive")] * 3
        + [("60-69", "F", "died")] * 2
        + [("50-59", "M", "?")] * 4  # only missing: discloses nothing
        + [("40-49", "F", "alive")] * 5  # homogeneous too
    )
    frame = pd.DataFrame(rows, columns=["age", "sex", "outcome"])
    warnings = disclosure_warnings(
        _write(frame, tmp_path / "r.csv"), "csv", ["age", "sex"], sensitive_columns=["outcome"], missing=["?"]
    )
    (w,) = warnings
    assert w.code == "homogeneous-classes" and w.columns == ("outcome", "age", "sex")
    assert w.value == pytest.approx(11 / 20)
    assert "2 released classes (11 of 20 released records (55.0%))" in w.message
    assert "'alive' in 1, the value of 40.0% of all released records" in w.message
    mixed = frame.assign(outcome=["died", "alive"] * 10)
    assert (
        disclosure_warnings(
            _write(mixed, tmp_path / "m.csv"), "csv", ["age", "sex"], sensitive_columns=["outcome"]
        )
        == []
    )


def _people(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "age": rng.integers(20, 90, n).astype(str),
            "zip": rng.choice([f"{z:05d}" for z in range(10100, 10160)], n),
            "dx": rng.choice(["flu", "cold", "asthma", "copd"], n),
        }
    )


def test_a_risk_only_release_with_unique_classes_is_flagged(tmp_path: Path) -> None:
    """A population-to-sample threshold (A = J / N) holds with unique records when N is large:
    the release passes its model and its verifier, and the warning says what remains."""
    frame = _people(300, 5)
    age = Hierarchy([(str(a), f"{a // 10 * 10}s", "*") for a in range(20, 90)], "age")
    zipc = Hierarchy([(f"{z:05d}", f"{z // 10}*", "*") for z in range(10100, 10160)], "zip")
    schema = Schema.from_attributes(
        [
            Attribute("age", Role.QUASI, age),
            Attribute("zip", Role.QUASI, zipc),
            Attribute("dx", Role.SENSITIVE),
        ]
    )
    engine = MemoryEngine(frame)
    result = Anonymizer(schema, [RiskThreshold(0.05, measure="A", population_size=100_000)]).fit(engine)
    # the run's warnings that contradict its headline, acknowledged (issue 33): the singletons
    # beside an average threshold of 0.05 are the point, and dx kept singles out records
    accepted = ("singleton-classes", "kept-column-identifying")
    context = ReleaseContext(accepted_warnings=accepted)
    published = write_release(result, engine, tmp_path / "out", html=False, context=context)
    assert [a["code"] for a in published.report["certificate"]["acknowledged"]] == list(accepted)
    released = pd.read_csv(published.release, dtype=str, keep_default_na=False)
    sizes = released.groupby(["age", "zip"]).size()
    assert (sizes == 1).any()
    warnings = disclosure_warnings(published.release, "csv", ["age", "zip"], ["dx"], ["dx"])
    codes = _codes(warnings)
    assert codes[("singleton-classes", "age")] == pytest.approx((sizes == 1).sum() / len(released))
    k_anonymous = Anonymizer(schema, [KAnonymity(2)]).fit(engine)
    context = ReleaseContext(accepted_warnings=("kept-column-identifying",))  # dx, as above
    again = write_release(k_anonymous, engine, tmp_path / "out2", html=False, context=context)
    assert "singleton-classes" not in {
        w.code for w in disclosure_warnings(again.release, "csv", ["age", "zip"])
    }


@settings(max_examples=examples(40, 15), deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from("abc"), st.sampled_from("xy"), st.sampled_from(["", "1", "2", "3", "4", "5"])
        ),
        min_size=1,
        max_size=60,
    ),
    st.sampled_from(["csv", "parquet"]),
)
def test_figures_equal_a_direct_computation_over_the_release(
    rows: list[tuple[str, str, str]], fmt: str
) -> None:
    frame = pd.DataFrame(rows, columns=["q1", "q2", "v"])
    n = len(frame)

    def uniques(columns: list[str]) -> int:
        return int((frame.groupby(columns).size() == 1).sum())

    qi_unique = uniques(["q1", "q2"])
    extra = uniques(["q1", "q2", "v"]) - qi_unique
    classes = frame.groupby(["q1", "q2"])["v"].agg(["nunique", "first", "size"])
    homogeneous = classes[(classes["nunique"] == 1) & (classes["first"] != "")]
    expected: dict[tuple[str, str], float] = {}
    if qi_unique:
        expected[("singleton-classes", "q1")] = qi_unique / n
    if extra / n > 0.05:
        expected[("kept-column-identifying", "v")] = extra / n
    if len(homogeneous):
        expected[("homogeneous-classes", "v")] = homogeneous["size"].sum() / n
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"r.{fmt}"
        if fmt == "csv":
            frame.to_csv(path, index=False)
        else:
            frame.to_parquet(path, index=False)
        got = _codes(disclosure_warnings(path, fmt, ["q1", "q2"], ["v"], ["v"]))
        # the same warnings from the verifier's distinct rows of the file, which a publication
        # hands on (Verification.rows), as from the check's own scan of it
        rows = rows_read_by_the_verifier(path, fmt, frame, ["q1", "q2"])
        assert rows is not None and int(pa.compute.sum(rows.column(ROW_RECORDS)).as_py()) == n
        own = disclosure_check(path, fmt, ["q1", "q2"], ["v"], ["v"], value_counts=10)
        handed = disclosure_check(
            Path(tmp) / "absent", fmt, ["q1", "q2"], ["v"], ["v"], value_counts=10, rows=rows
        )
        assert [w.to_dict() for w in handed.warnings] == [w.to_dict() for w in own.warnings]
        assert handed.counts == own.counts
    assert got.keys() == expected.keys()
    for code, value in expected.items():
        assert got[code] == pytest.approx(value)


def rows_read_by_the_verifier(path: Path, fmt: str, frame: pd.DataFrame, qis: list[str]) -> pa.Table | None:
    """:attr:`Verification.rows` of the release at ``path`` (``frame`` as written), the
    verifier asked to keep them."""
    expected = Expectations(
        columns=list(frame.columns),
        quasi_identifiers=qis,
        allowed_labels={q: set(frame[q].astype(str)) for q in qis},
        records_in=len(frame),
        max_suppression=0.0,
    )
    verification = verify_release(path, fmt, expected, keep_rows=1 << 18)
    plain = verify_release(path, fmt, expected)
    assert verification.to_dict() == plain.to_dict() and verification.labels == plain.labels
    assert plain.rows is None
    return verification.rows


def test_the_adult_demo_warns_only_of_classes_that_share_the_commonest_value(tmp_path: Path) -> None:
    """examples/adult/adult.yaml (k = 5): no kept column singles out more than 5 % of the
    records and no class is a single record; the homogeneity warning fires for the three
    sensitive columns, and why: capital-gain and capital-loss are 0 for 92 % and 95 % of the
    people, hours-per-week is 40 for 47 %, so some 5-record classes hold only that value.
    That is attribute disclosure of a value most people share, which the message states."""
    cfg = load_config(ADULT_DIR / "adult.yaml")
    engine = MemoryEngine(cfg.source)
    context = ReleaseContext(accepted_warnings=cfg.accept_warnings)  # the file's acknowledgements
    published = write_release(
        Anonymizer(cfg.spec()).fit(engine), engine, tmp_path / "out", html=False, context=context
    )
    schema = cfg.schema
    kept = [n for n, a in schema.attributes.items() if a.role in (Role.INSENSITIVE, Role.SENSITIVE)]
    warnings = disclosure_warnings(published.release, "csv", schema.quasi_identifiers, kept, schema.sensitive)
    assert {w.code for w in warnings} == {"homogeneous-classes"}
    assert {w.columns[0] for w in warnings} == {"capital-gain", "capital-loss", "hours-per-week"}
    released = pd.read_csv(published.release, dtype=str, keep_default_na=False)
    for w in warnings:
        commonest = released[w.columns[0]].value_counts().index[0]
        assert f"({commonest!r} in " in w.message  # the only value of those classes is the commonest
        assert w.value < 0.07


def test_an_empty_release_has_no_warning_and_bad_share_is_refused(tmp_path: Path) -> None:
    path = _write(pd.DataFrame({"a": [], "b": []}), tmp_path / "e.csv")
    assert disclosure_warnings(path, "csv", ["a"], ["b"], ["b"]) == []
    with pytest.raises(ValueError):
        disclosure_warnings(path, "csv", ["a"], unique_share=1.5)


# ------------------------------------------------------------------ the informed adversary (issue 30)
def _brute_force(
    frame: pd.DataFrame, group: list[str], dates: list[str], window: int, k: int
) -> dict[str, float]:
    """The informed adversary's figures by definition, record by record: a record's candidates for
    a true anchor D are the records of its group (QIs, coarse pseudonyms) with the same intervals
    and missing dates whose anchor is within ``window`` of D; the worst D of [a - N, a + N]."""
    import datetime as dt

    pattern, a = [], []
    for _, row in frame.iterrows():
        days = [dt.date.fromisoformat(row[d]).toordinal() if row[d] else None for d in dates]
        anchor = next((d for d in days if d is not None), None)
        intervals = tuple(None if d is None or anchor is None else d - anchor for d in days)
        pattern.append((*(row[g] for g in group), intervals))
        a.append(0 if anchor is None else anchor)
    fewest, expected = [], 0.0
    for i in range(len(frame)):
        others = [j for j in range(len(frame)) if pattern[j] == pattern[i]]
        counts = [
            sum(abs(a[j] - d) <= window for j in others) for d in range(a[i] - window, a[i] + window + 1)
        ]
        fewest.append(min(counts))
        expected += sum(c == 1 for c in counts) / (2 * window + 1)
    return {
        "smallest_candidates": min(fewest),
        "singled_out": sum(f == 1 for f in fewest),
        "singled_out_expected": expected,
        "below_k": sum(f < k for f in fewest),
    }


@settings(max_examples=examples(40, 15), deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["F", "M"]),
            st.sampled_from(["a", "b", "c"]),
            st.one_of(st.none(), st.integers(0, 60)),
            st.one_of(st.none(), st.integers(0, 5)),
        ),
        min_size=1,
        max_size=40,
    ),
    st.integers(0, 12),
    st.integers(2, 5),
)
def test_the_informed_adversary_equals_its_definition(
    rows: list[tuple[str, str, int | None, int | None]], window: int, k: int
) -> None:
    """Kept shifted dates of one person (admitted, and a discharge some days later, each possibly
    missing) with a coarse pseudonym: the figures of the written release (DuckDB, then the range
    minimum) equal the definition computed record by record."""
    import datetime as dt

    from safeshare.verify.disclosure import disclosure_check
    from safeshare.verify.informed import KeptShiftedDate

    start = dt.date(2021, 3, 1)
    frame = pd.DataFrame(
        {
            "sex": [r[0] for r in rows],
            "zip": [f"pz{r[1]}" for r in rows],
            "admitted": ["" if r[2] is None else (start + dt.timedelta(days=r[2])).isoformat() for r in rows],
            "discharged": [
                "" if r[2] is None or r[3] is None else (start + dt.timedelta(days=r[2] + r[3])).isoformat()
                for r in rows
            ],
        }
    )
    dates = [KeptShiftedDate("admitted", "mrn", window), KeptShiftedDate("discharged", "mrn", window)]
    with tempfile.TemporaryDirectory() as tmp:
        path = _write(frame, Path(tmp) / "r.csv")
        found = disclosure_check(path, "csv", ["sex"], shifted_dates=dates, pseudonyms=["zip"], k=k)
        rows = rows_read_by_the_verifier(path, "csv", frame, ["sex"])
        handed = disclosure_check(
            path, "csv", ["sex"], shifted_dates=dates, pseudonyms=["zip"], k=k, rows=rows
        )
    assert handed == found  # from the verifier's distinct rows of the file as from the file
    adversary = found.adversary
    assert adversary is not None
    coarse = bool(adversary.coarse_pseudonyms)  # 3 zips are coarse once there are more than 2 records
    want = _brute_force(frame, ["sex", "zip"] if coarse else ["sex"], ["admitted", "discharged"], window, k)
    assert adversary.records == len(frame)
    assert adversary.smallest_candidates == want["smallest_candidates"]
    assert adversary.singled_out == want["singled_out"]
    assert adversary.below_k == want["below_k"]
    assert adversary.singled_out_expected == pytest.approx(want["singled_out_expected"])
    assert adversary.bound_holds == (want["smallest_candidates"] >= k)
    codes = {w.code for w in found.warnings}
    assert ("shifted-date-identifying" in codes) == (want["below_k"] > 0)
    assert ("coarse-pseudonym" in codes) == coarse


def test_a_pseudonym_of_a_coarse_column_is_the_column(tmp_path: Path) -> None:
    """Issue 30, item 4: ``zip`` released as 4 pseudonyms is the zip itself; the informed adversary
    knows it, so the classes are (QIs, zip); a pseudonym of a record number is not."""
    from safeshare.verify.disclosure import disclosure_check

    rng = np.random.default_rng(7)
    n = 600
    frame = pd.DataFrame(
        {
            "age": rng.choice(["40-49", "50-59"], n),
            "zip": rng.choice(["9f3a", "11bc", "c0de", "77aa"], n, p=[0.7, 0.2, 0.07, 0.03]),
            "mrn": [f"{i:016x}" for i in rng.permutation(n)],
        }
    )
    found = disclosure_check(
        _write(frame, tmp_path / "r.csv"), "csv", ["age"], pseudonyms=["zip", "mrn"], k=5
    )
    adversary = found.adversary
    assert adversary is not None and [p["column"] for p in adversary.coarse_pseudonyms] == ["zip"]
    sizes = frame.groupby(["age", "zip"]).size()
    assert adversary.smallest_candidates == int(sizes.min())
    assert adversary.below_k == int(sizes[sizes < 5].sum())
    assert adversary.singled_out == int(sizes[sizes == 1].sum())
    (coarse,) = [w for w in found.warnings if w.code == "coarse-pseudonym"]
    assert coarse.columns == ("zip",) and "4 distinct pseudonyms over 600 records" in coarse.message
    assert adversary.bound_holds == (sizes.min() >= 5)
    # the pseudonym of a record number, alone: not known, no adversary
    assert (
        disclosure_check(_write(frame, tmp_path / "m.csv"), "csv", ["age"], pseudonyms=["mrn"], k=5).adversary
        is None
    )


def test_dates_an_adversary_cannot_tell_apart_keep_the_bound(tmp_path: Path) -> None:
    """Many records on each of a few dates, a wide window: every record keeps at least k
    candidates whatever the true date, so the per-record bound holds against the informed
    adversary too, and the headline says so."""
    import datetime as dt

    from safeshare.verify.disclosure import disclosure_check
    from safeshare.verify.informed import KeptShiftedDate
    from safeshare.workflows.result import headline

    frame = pd.DataFrame(
        {
            "sex": ["F", "M"] * 200,
            "admitted": [
                (dt.date(2022, 1, 1) + dt.timedelta(days=7 * (i % 10))).isoformat() for i in range(400)
            ],
        }
    )
    found = disclosure_check(
        _write(frame, tmp_path / "r.csv"),
        "csv",
        ["sex"],
        shifted_dates=[KeptShiftedDate("admitted", "mrn", 30)],
        k=5,
    )
    adversary = found.adversary
    assert adversary is not None and adversary.bound_holds and adversary.singled_out == 0
    assert adversary.smallest_candidates >= 5 and not found.warnings
    doc = {"k": 5, "min_class_size": 200, "verified": True, "informed_adversary": adversary.to_dict()}
    head = headline(doc)
    assert head["prosecutor"]["bounded"] is True
    assert (
        "no record's prosecutor risk exceeds 1/5 = 0.2, also against an adversary who knows the true admitted"
        in head["text"]
    )
    weak = dict(adversary.to_dict(), bound_holds=False, smallest_candidates=1, singled_out=3, below_k=9)
    head = headline({**doc, "informed_adversary": weak})
    assert head["prosecutor"]["bounded"] is False and "exceeds 1/5" not in head["text"]
    assert (
        "the bound of 1/5 per record does not hold against an adversary who also knows the true admitted"
        in head["text"]
    )
    # not measured (a release not written): the bound is stated for the QI adversary only, and says so
    plain = headline(
        {**doc, "informed_adversary": None, "columns": [{"name": "admitted", "treatment": "shifted"}]}
    )
    assert "not measured against one who also knows the true admitted" in plain["text"]


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_the_kept_columns_counts_are_the_files_and_only_for_few_values(tmp_path: Path, fmt: str) -> None:
    """:attr:`Disclosure.counts` (the before / after's *after*, from the warnings' one scan):
    value -> released records of each kept column, a missing value as "", equal to pandas over
    the file; a column of more distinct values than asked for is left out."""
    rng = np.random.default_rng(5)
    n = 300
    frame = pd.DataFrame(
        {
            "q": rng.choice(["a", "b", "c"], n),
            "ward": rng.choice(["A", "B", "", "C"], n),
            "dx": rng.choice(["x", "y", "z", "w", "v", "u"], n),
        }
    )
    path = tmp_path / f"r.{fmt}"
    if fmt == "csv":
        frame.to_csv(path, index=False)
    else:
        frame.replace({"": None}).to_parquet(path, index=False)
    found = disclosure_check(path, fmt, ["q"], ["ward", "dx"], ["dx"], value_counts=4)
    assert set(found.counts) == {"ward"}  # dx has 6 values, more than 4
    assert found.counts["ward"] == {str(v): int(c) for v, c in frame["ward"].value_counts().items()}
    assert disclosure_check(path, fmt, ["q"], ["ward", "dx"], value_counts=6).counts["dx"] == {
        str(v): int(c) for v, c in frame["dx"].value_counts().items()
    }
    assert disclosure_check(path, fmt, ["q"], ["ward", "dx"]).counts == {}  # none asked for


def test_a_publication_reads_the_release_once_for_the_verifier_the_warnings_and_the_counts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Adult demo's disclosure check sums the verifier's distinct rows of the file, and its
    before / after takes the kept columns' released counts from the disclosure check: neither
    reads the file (each read a scan of the whole release: about 2-3 s for a 1 GB CSV release of
    10 million records). The warnings are those of the check's own scan (the demo's three)."""
    from safeshare.verify import disclosure
    from safeshare.workflows import before_after

    def unread(*args: object) -> str:
        raise AssertionError("the disclosure check read the release file")

    monkeypatch.setattr(disclosure, "release_relation", unread)

    asked: list[list[str]] = []
    read = before_after._released_counts

    def recorded(staged: Path, fmt: str, delimiter: str, columns: list[str]) -> dict[str, dict[str, int]]:
        asked.append(list(columns))
        return read(staged, fmt, delimiter, columns)

    monkeypatch.setattr(before_after, "_released_counts", recorded)
    cfg = load_config(ADULT_DIR / "adult.yaml")
    engine = MemoryEngine(cfg.source)
    context = ReleaseContext(accepted_warnings=cfg.accept_warnings)
    published = write_release(
        Anonymizer(cfg.spec()).fit(engine), engine, tmp_path / "out", html=False, context=context
    )
    assert asked == [[]]
    homogeneous = {
        w["columns"][0] for w in published.report["warnings"] if w["code"] == "homogeneous-classes"
    }
    assert homogeneous == {"capital-gain", "capital-loss", "hours-per-week"}
    columns = {c["column"]: c for c in published.report["before_after"]["columns"]}
    tabulated = [c for c, col in columns.items() if col["role"] != "quasi" and not col["skipped"]]
    assert tabulated  # the counts given were used: the kept columns of few values are tabulated
    released = pd.read_csv(published.release, dtype=str, keep_default_na=False)
    for name in tabulated:
        after = released[name].value_counts()
        for cat in columns[name]["categories"]:
            assert cat["after"] == after.get(cat["value"], 0)
