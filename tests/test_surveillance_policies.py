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
