"""Policies of the surveillance pillar are nodes of the core Lattice (issue 10)."""

from __future__ import annotations

import numpy as np
import pytest

from safeshare.core.lattice import Lattice
from safeshare.errors import ConfigError, InputError
from safeshare.surveillance.policies import default_space, space_from_mapping


def test_default_space_has_the_96_policies_of_the_paper() -> None:
    space = default_space()
    assert isinstance(space.lattice, Lattice)
    assert space.lattice.heights == (5, 3, 1, 1)
    assert len(space.policies()) == 96
    codes = {space.format(n) for n in space.policies()}
    assert len(codes) == 96
    assert {"1C*e", "3Ase", "****", "0Ase", "2Bse"} <= codes


def test_codes_match_the_issue_definition() -> None:
    space = default_space()
    assert space.parse("0Ase") == (0, 0, 0, 0)
    assert space.parse("1C*e") == (1, 2, 1, 0)
    assert space.parse("3Ase") == (3, 0, 0, 0)
    assert space.parse("****") == (5, 3, 1, 1)
    assert space.parse("4B**") == (4, 1, 1, 1)


def test_code_round_trip() -> None:
    space = default_space()
    for node in space.policies():
        assert space.parse(space.format(node)) == node


@pytest.mark.parametrize("code", ["", "0As", "5Ase", "0Dse", "0Axe", "0As?", "0Ase1"])
def test_bad_codes_are_input_errors_naming_the_character(code: str) -> None:
    with pytest.raises(InputError, match="policy code"):
        default_space().parse(code)


def test_default_group_labels() -> None:
    space = default_space()
    age, race, sex, eth = space.dimensions
    assert age.levels[1].groups[17] == "15-19"
    assert age.levels[2].groups[17] == "15-29"
    assert age.levels[4].groups[70] == "60+"
    assert race.levels[1].groups == ("white", "black", "other", "asian", "other", "other", "other")
    assert race.levels[2].groups == (
        "white-or-black",
        "white-or-black",
        "other",
        "other",
        "other",
        "other",
        "other",
    )
    assert sex.levels[1].groups == ("*", "*")
    assert eth.leaves == ("hispanic", "non-hispanic")


def test_partial_order_of_groupings_matches_the_lattice() -> None:
    """a <= b in the lattice exactly when b's groups are unions of a's groups (b coarsens a)."""
    space = default_space()
    nodes = space.policies()
    groupings = {n: space.grouping(n)[0] for n in nodes}

    def coarsens(fine: np.ndarray, coarse: np.ndarray) -> bool:
        pairs = np.unique(np.stack([fine, coarse]), axis=1)
        return len(np.unique(pairs[0])) == pairs.shape[1]  # each fine group maps to one coarse group

    rng = np.random.default_rng(0)
    for i in rng.choice(len(nodes), 40, replace=False):
        for j in rng.choice(len(nodes), 40, replace=False):
            a, b = nodes[i], nodes[j]
            assert coarsens(groupings[a], groupings[b]) == Lattice.leq(a, b), (a, b)


def test_group_counts() -> None:
    space = default_space()
    assert space.grouping(space.parse("****"))[1] == 1
    assert space.grouping(space.parse("0Ase"))[1] == space.n_bins == 101 * 7 * 2 * 2
    assert space.grouping(space.parse("4C**"))[1] == 2 * 2


def test_user_defined_space() -> None:
    space = space_from_mapping(
        {
            "dimensions": [
                {
                    "name": "race",
                    "leaves": ["white", "black", "other"],
                    "levels": [
                        {"code": "A"},
                        {"code": "B", "groups": {"white": ["white"], "nonwhite": ["black", "other"]}},
                        {"code": "*", "suppress": True},
                    ],
                },
                {
                    "name": "sex",
                    "leaves": ["f", "m"],
                    "levels": [{"code": "s"}, {"code": "*", "suppress": True}],
                },
            ]
        }
    )
    assert len(space.policies()) == 6
    assert space.format((1, 0)) == "Bs"
    assert space.grouping((1, 1))[1] == 2


def test_user_level_that_splits_a_group_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"dimensions\[0\].*splits a group"):
        space_from_mapping(
            {
                "dimensions": [
                    {
                        "name": "race",
                        "leaves": ["w", "b", "o"],
                        "levels": [
                            {"code": "A", "groups": {"x": ["w", "b"], "o": ["o"]}},
                            {"code": "B", "groups": {"y": ["w"], "z": ["b", "o"]}},
                        ],
                    }
                ]
            }
        )


# issue 18 item 5: the hierarchies file is read by the configuration's safe loader, labels are checked
@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a: &a [1, 2]\nb: [*a, *a]\n", "YAML aliases"),
        ("dimensions: []\ndimensions: []\n", "line 2: dimensions: duplicate key"),
        (
            'dimensions:\n  - {name: sex, leaves: ["f\\0", m], levels: [{code: s}]}\n',
            r"dimensions\[0\].leaves\[0\]: 'f\\x00' holds the control character U\+0000",
        ),
        (
            "dimensions:\n  - {name: sex, leaves: [f, m], levels: [{code: s}, {code: B, groups: "
            '{"a\\nb": [f, m]}}]}\n',
            r"dimensions\[0\].levels\[1\].groups: 'a\\nb' holds the control character U\+000A",
        ),
        (
            'dimensions:\n  - {name: "s\\x1bx", leaves: [f, m], levels: [{code: s}]}\n',
            r"dimensions\[0\].name",
        ),
        ('dimensions:\n  - {name: sex, leaves: [f, m], levels: [{code: "\\x85"}]}\n', r"levels\[0\].code"),
    ],
)
def test_hierarchies_file_is_read_safely(tmp_path, text: str, message: str) -> None:
    from safeshare.surveillance.policies import load_space

    path = tmp_path / "h.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message) as info:
        load_space(path)
    assert str(path) in str(info.value) and "\n" not in str(info.value)


def test_dimensions_built_in_code_refuse_control_characters() -> None:
    from safeshare.surveillance.policies import Dimension, Level

    with pytest.raises(ConfigError, match="control character"):
        Dimension("sex", ("f", "m"), (Level("s", ("f", "m")), Level("*", ("all\x00", "all\x00"))))


def test_the_default_is_the_papers_space_and_issue_10s_is_available_by_name() -> None:
    """Issue 22: the paper's age levels end at 90+ (its code: 5-year bands to 90, then [90, 120));
    issue 10's 5-year level goes on to 90-94, 95-99, 100+."""
    from safeshare.surveillance.policies import load_space

    paper, old = load_space(None), load_space("ages-to-100")
    assert load_space("paper").name == paper.name == "paper" and old.name == "ages-to-100"
    age = paper.dimensions[0]
    assert [lv.code for lv in age.levels] == ["0", "1", "2", "3", "4", "*"]
    by_level = [
        sorted(set(lv.groups), key=lambda g: int(g.split("-")[0].rstrip("+"))) for lv in age.levels[1:5]
    ]
    assert by_level[0] == [f"{a}-{a + 4}" for a in range(0, 90, 5)] + ["90+"]
    assert by_level[1] == [f"{a}-{a + 14}" for a in range(0, 90, 15)] + ["90+"]
    assert by_level[2] == ["0-29", "30-59", "60-89", "90+"]
    assert by_level[3] == ["0-59", "60+"]
    assert age.levels[0].groups[95] == "95" and age.levels[0].groups[100] == "100+"
    old_age = old.dimensions[0]
    assert {old_age.levels[1].groups[a] for a in (92, 97, 100)} == {"90-94", "95-99", "100+"}
    assert old_age.levels[2:] == age.levels[2:]  # the coarser levels are the same
    assert paper.dimensions[1:] == old.dimensions[1:]  # race (its four levels), sex, ethnicity
    races = paper.dimensions[1].leaves
    assert dict(zip(races, paper.static_groups["race"], strict=True)) == {
        "white": "white",
        "black": "black",
        "aian": "aian",
        "asian": "asian",
        "nhpi": "nhpi",
        "other": "other/multiple",
        "multiple": "other/multiple",
    }
    assert old.static_groups == {}


def test_open_age_band_in_a_hierarchies_file(tmp_path) -> None:
    from safeshare.surveillance.policies import load_space

    path = tmp_path / "h.yaml"
    path.write_text("dimensions:\n  - {name: age, age_widths: [1, 10, 20], max_age: 100, open_from: 80}\n")
    age = load_space(path).dimensions[0]
    assert (
        age.levels[1].groups[85] == age.levels[2].groups[99] == "80+" and age.levels[2].groups[79] == "60-79"
    )
    path.write_text("dimensions:\n  - {name: age, age_widths: [1, 20], open_from: 90}\n")
    with pytest.raises(
        ConfigError, match=r"dimensions\[0\].age_widths: open_from 90 splits a band of width 20"
    ):
        load_space(path)  # 80-99 split at 90
