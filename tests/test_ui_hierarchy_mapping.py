# ruff: noqa: F811  (the bench fixture, imported from tests/test_ui_api.py, is every test's argument)
"""A hierarchy's page shows what each value becomes (issue 35): the value -> label table at every
level, built in the child as a run builds it, equal to the hierarchy the run uses."""

from __future__ import annotations

import re
from html import unescape
from pathlib import Path

from safeshare.api import workbench
from tests.test_ui_api import AGE, Bench, bench  # noqa: F401  (the fixture)


def _mapping(html: str) -> list[list[str]]:
    table = html[html.index('data-testid="hierarchy-mapping"') :]
    table = table[: table.index("</table>")]
    rows = re.findall(r"<tr>(.*?)</tr>", table, flags=re.S)
    cells = [[unescape(c) for c in re.findall(r"<td>(.*?)</td>", r)] for r in rows]
    return [c for c in cells if c]  # the header row has <th> cells


def test_the_page_maps_every_value_to_its_labels(bench: Bench) -> None:
    pid = bench.project()
    html = bench.client.get(f"/p/{pid}/hierarchy/age").text
    shown = _mapping(html)
    expected = [line.split(";") for line in AGE.splitlines()]
    assert shown and all(row in expected for row in shown), shown[:3]
    assert {r[0] for r in shown} == {str(a) for a in range(20, 60)}  # every age of the data
    # a builder: masking of sex, level 1 masks the one character
    html = bench.client.get(f"/p/{pid}/hierarchy/sex").text
    assert sorted(_mapping(html)) == [["F", "*"], ["M", "*"]]


def test_the_mapping_is_cut_at_its_limit_and_says_so(tmp_path: Path) -> None:
    base = tmp_path
    values = [str(v) for v in range(workbench.MAPPING_ROWS + 50)]
    answer = workbench.hierarchy_answer({"type": "intervals", "widths": [10]}, base, values, "n", base)
    assert answer is not None
    assert answer["values"] == len(values) and len(answer["mapping"]) == workbench.MAPPING_ROWS
    assert all(len(row) == 1 + (len(answer["levels"]) - 1) for row in answer["mapping"])
    assert answer["mapping"][0][0] == "0"
