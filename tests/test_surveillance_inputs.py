"""Surveillance input readers: the shipped synthetic examples, and one-line errors naming file/line/column."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from safeshare.errors import DataError
from safeshare.surveillance import inputs, synthetic
from safeshare.surveillance.policies import default_space

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "surveillance"


def test_shipped_examples_are_what_the_generator_writes(tmp_path: Path) -> None:
    written = synthetic.generate(tmp_path, seed=1)
    for path in written:
        assert path.read_bytes() == (EXAMPLES / path.name).read_bytes(), path.name
        assert path.stat().st_size < 300_000
    assert "SYNTHETIC" in (EXAMPLES / "README.md").read_text()


def test_examples_read_and_agree() -> None:
    space = default_space()
    pop = inputs.read_population(EXAMPLES / "population.csv", space)
    assert pop.regions == ("99001", "99003", "99005")
    assert pop.totals == {"99001": 26_000, "99003": 8_000, "99005": 1_500}
    long = inputs.read_case_series(EXAMPLES / "cases_long.csv")
    jhu = inputs.read_jhu_series(EXAMPLES / "cases_jhu.csv")
    assert set(long) == set(jhu) == set(pop.regions)
    for region, series in long.items():
        assert series.step_days == 1
        np.testing.assert_array_equal(series.cases, jhu[region].cases)
        np.testing.assert_array_equal(series.dates, jhu[region].dates)
        inputs.check_cases_fit(series, pop)
    fc = inputs.read_forecasts(EXAMPLES / "forecasts.csv")
    assert set(fc["type"]) == {"point", "quantile"}
    assert (fc["horizon"] == 1).all()
    assert np.isnan(fc.loc[fc["type"] == "point", "quantile"]).all()
    rec = inputs.read_case_records(EXAMPLES / "case_records.csv", space)
    assert len(rec.bins) == len(rec.frame) > 0
    assert (pop.of("99003")[rec.bins] > 0).all()  # every case is somebody of the population


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


POP_HEADER = "region,age,race,sex,ethnicity,count\n"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("r1,5,white,female,hispanic,-3\n", r"pop.csv:2: column 'count' \(6\): -3 is below 0"),
        ("r1,5,white,female,hispanic,3\nr1,5,purple,female,hispanic,3\n", r"pop.csv:3: column 'race' \(3\)"),
        ("r1,101,white,female,hispanic,3\n", r"pop.csv:2: column 'age' \(2\): '101' is not a label of age"),
        ("r1,5,white,female,hispanic,x\n", r"pop.csv:2: column 'count'.*not a whole number"),
        (
            "r1,5,white,female,hispanic,3\nr1,5,white,female,hispanic,4\n",
            r"pop.csv:3: the region and bin of line 2",
        ),
        (",5,white,female,hispanic,3\n", r"pop.csv:2: column 'region' \(1\): empty region"),
    ],
)
def test_population_errors(tmp_path: Path, body: str, message: str) -> None:
    path = _write(tmp_path, "pop.csv", POP_HEADER + body)
    with pytest.raises(DataError, match=message) as info:
        inputs.read_population(path, default_space())
    assert "\n" not in str(info.value)


def test_population_missing_column(tmp_path: Path) -> None:
    path = _write(tmp_path, "pop.csv", "region,age,race,sex,count\nr1,5,white,female,3\n")
    with pytest.raises(DataError, match=r"pop.csv:1: missing column\(s\) \['ethnicity'\]"):
        inputs.read_population(path, default_space())


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("a,2020-08-01,3\na,2020-08-02,-1\n", r"cases.csv:3: column 'new_cases' \(3\): -1 is below 0"),
        ("a,2020-08-02,3\na,2020-08-01,1\n", r"cases.csv:3: column 'date' \(2\): 2020-08-01 is not after"),
        ("a,2020-08-01,3\na,2020-08-02,1\na,2020-08-04,1\n", r"cases.csv:4: .*2 days after the previous"),
        ("a,08/01/2020,3\n", r"cases.csv:2: column 'date'.*not a YYYY-MM-DD date"),
    ],
)
def test_case_series_errors(tmp_path: Path, body: str, message: str) -> None:
    path = _write(tmp_path, "cases.csv", "region,date,new_cases\n" + body)
    with pytest.raises(DataError, match=message):
        inputs.read_case_series(path)


def test_jhu_decrease_is_refused_naming_row_and_date(tmp_path: Path) -> None:
    path = _write(tmp_path, "jhu.csv", "FIPS,Admin2,1/1/21,1/2/21,1/3/21\n1001.0,A,1,3,4\n47037.0,B,5,9,8\n")
    with pytest.raises(DataError, match=r"jhu.csv:3: column '1/3/21' \(5\): cumulative count 8 is below"):
        inputs.read_jhu_series(path)
    path = _write(tmp_path, "jhu.csv", "FIPS,Admin2,1/1/21,1/2/21,1/3/21\n1001.0,A,1,3,4\n")
    series = inputs.read_jhu_series(path)
    assert list(series) == ["01001"]
    np.testing.assert_array_equal(series["01001"].cases, [2, 1])


def test_forecast_errors(tmp_path: Path) -> None:
    header = "forecast_date,target,target_end_date,location,type,quantile,value\n"
    ok = "2020-08-03,1 wk ahead inc case,2020-08-15,99001,point,NA,10\n"
    other = "2020-08-03,1 wk ahead inc death,2020-08-15,99001,point,NA,-5\n"
    fc = inputs.read_forecasts(_write(tmp_path, "f.csv", header + ok + other))
    assert len(fc) == 1  # other targets are skipped
    bad = "2020-08-03,1 wk ahead inc case,2020-08-15,99001,quantile,1.5,10\n"
    with pytest.raises(DataError, match=r"f.csv:4: column 'quantile' \(6\)"):
        inputs.read_forecasts(_write(tmp_path, "f.csv", header + ok + other + bad))
    bad = "2020-08-03,1 wk ahead inc case,2020-08-15,99001,mean,,10\n"
    with pytest.raises(DataError, match=r"f.csv:2: column 'type' \(5\)"):
        inputs.read_forecasts(_write(tmp_path, "f.csv", header + bad))


def test_more_cases_than_people_is_refused(tmp_path: Path) -> None:
    space = default_space()
    pop = inputs.read_population(
        _write(tmp_path, "p.csv", POP_HEADER + "a,5,white,female,hispanic,3\n"), space
    )
    series = inputs.read_case_series(
        _write(tmp_path, "c.csv", "region,date,new_cases\na,2020-08-01,2\na,2020-08-02,2\n")
    )
    with pytest.raises(DataError, match="'a' on 2020-08-02: 4 cases so far but only 3 people"):
        inputs.check_cases_fit(series["a"], pop)
    other = inputs.read_case_series(_write(tmp_path, "c.csv", "region,date,new_cases\nb,2020-08-01,2\n"))
    with pytest.raises(DataError, match="region 'b' is not in the population table"):
        inputs.check_cases_fit(other["b"], pop)


HEADER_FC = "forecast_date,target,target_end_date,location,type,quantile,value"


# issue 18: duplicate columns (item 6), overflowing counts (item 10), hostile forecasts (item 4)
@pytest.mark.parametrize(
    ("reader", "header", "row"),
    [
        ("population", "region,age,race,sex,ethnicity,count,Count", "r1,5,white,female,hispanic,3,4"),
        ("population", "region,age,race,sex,ethnicity,count,count ", "r1,5,white,female,hispanic,3,4"),
        ("cases", "region,date,new_cases,new_cases", "a,2020-08-01,3,4"),
        ("forecasts", HEADER_FC + ",Value", "2020-08-03,1 wk ahead inc case,2020-08-15,a,point,NA,1,2"),
    ],
)
def test_duplicate_column_names_are_refused(tmp_path: Path, reader: str, header: str, row: str) -> None:
    path = _write(tmp_path, "x.csv", f"{header}\n{row}\n")
    read = {
        "population": lambda p: inputs.read_population(p, default_space()),
        "cases": inputs.read_case_series,
        "forecasts": inputs.read_forecasts,
    }[reader]
    with pytest.raises(DataError, match=r"x.csv:1: column .* has the name of column"):
        read(path)


@pytest.mark.parametrize(
    ("count", "message"),
    [
        ("99999999999999999999", "is larger than 10,000,000,000"),
        ("10000000001", "is larger than 10,000,000,000"),
        ("-99999999999999999999", "is below 0"),
        ("+000000000000000000000007", None),
    ],
)
def test_counts_are_bounded_before_any_overflow(tmp_path: Path, count: str, message: str | None) -> None:
    path = _write(tmp_path, "pop.csv", POP_HEADER + f"r1,5,white,female,hispanic,{count}\n")
    if message is None:
        assert inputs.read_population(path, default_space()).totals == {"r1": 7}
        return
    with pytest.raises(DataError, match=rf"pop.csv:2: column 'count' \(6\): .* {message}"):
        inputs.read_population(path, default_space())


def test_forecasts_must_be_finite_once_and_within_the_population(tmp_path: Path) -> None:
    row = "2020-08-03,1 wk ahead inc case,2020-08-15,{loc},{kind},{q},{value}\n"
    for value in ("inf", "-inf", "1e300", "NaN"):
        path = _write(
            tmp_path, "f.csv", HEADER_FC + "\n" + row.format(loc="a", kind="point", q="NA", value=value)
        )
        with pytest.raises(DataError, match=r"f.csv:2: column 'value' \(7\): .* is not a count"):
            inputs.read_forecasts(path)
    twice = row.format(loc="a", kind="quantile", q="0.5", value=3) + row.format(
        loc="b", kind="point", q="", value=1
    )
    twice += row.format(loc="a", kind="quantile", q="0.50", value=4)
    with pytest.raises(DataError, match=r"f.csv:4: the forecast of line 2 again"):
        inputs.read_forecasts(_write(tmp_path, "f.csv", HEADER_FC + "\n" + twice))
    ok = row.format(loc="a", kind="point", q="NA", value=3) + row.format(
        loc="zz", kind="point", q="NA", value=9e9
    )
    fc = inputs.read_forecasts(_write(tmp_path, "f.csv", HEADER_FC + "\n" + ok))
    assert list(fc["line"]) == [2, 3]
    pop = inputs.read_population(
        _write(tmp_path, "p.csv", POP_HEADER + "a,5,white,female,hispanic,3\n"), default_space()
    )
    inputs.check_forecasts_fit(fc, pop, "f.csv")  # 3 <= 3 people; 'zz' is no region of the table
    over = inputs.read_forecasts(
        _write(tmp_path, "f.csv", HEADER_FC + "\n" + row.format(loc="a", kind="point", q="NA", value=3.5))
    )
    with pytest.raises(
        DataError,
        match=r"f.csv:2: column 'value' \(7\): 3.5 new cases forecast for region 'a', which has only 3",
    ):
        inputs.check_forecasts_fit(over, pop, "f.csv")
