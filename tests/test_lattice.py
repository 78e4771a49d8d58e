"""The lattice and predictive tagging."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from safeshare.errors import InputError
from safeshare.lattice import FAILED, SATISFIED, UNKNOWN, Lattice, TagStore


def test_size_bottom_top_height() -> None:
    lat = Lattice([2, 2, 2, 2, 2, 1, 1, 1, 3])
    assert lat.size == 7776  # the thesis' UCI Adult lattice
    assert lat.bottom == (0,) * 9
    assert lat.top == (2, 2, 2, 2, 2, 1, 1, 1, 3)
    assert lat.max_height == 16
    assert sum(len(level) for level in lat.nodes_by_height()) == 7776


def test_successors_predecessors() -> None:
    lat = Lattice([1, 2])
    assert sorted(lat.successors((0, 0))) == [(0, 1), (1, 0)]
    assert lat.successors((1, 2)) == []
    assert sorted(lat.predecessors((1, 1))) == [(0, 1), (1, 0)]
    assert lat.predecessors((0, 0)) == []


@given(st.lists(st.integers(0, 3), min_size=1, max_size=4), st.data())
@settings(max_examples=60, deadline=None)
def test_interval_at_height_matches_brute_force(heights: list[int], data: st.DataObject) -> None:
    lat = Lattice(heights)
    nodes = list(lat.nodes())
    lower = data.draw(st.sampled_from(nodes))
    upper = data.draw(st.sampled_from([n for n in nodes if Lattice.leq(lower, n)]))
    steps = data.draw(st.integers(0, Lattice.height(upper) - Lattice.height(lower) + 1))
    expected = sorted(
        n for n in nodes if Lattice.leq(lower, n) and Lattice.leq(n, upper) and sum(n) == sum(lower) + steps
    )
    assert sorted(Lattice.interval_at_height(lower, upper, steps)) == expected


def test_index_roundtrip_and_levels_array() -> None:
    lat = Lattice([1, 3, 2])
    arr = lat.levels_array()
    for i, node in enumerate(lat.nodes()):
        assert lat.index(node) == i
        assert lat.node_at(i) == node
        assert tuple(arr[i]) == node


@given(st.lists(st.integers(0, 3), min_size=1, max_size=4), st.data())
@settings(max_examples=60, deadline=None)
def test_tagging_marks_exactly_the_up_and_down_sets(heights: list[int], data: st.DataObject) -> None:
    lat = Lattice(heights)
    node = data.draw(st.sampled_from(list(lat.nodes())))
    up = TagStore(lat)
    up.tag(node, True)
    down = TagStore(lat)
    down.tag(node, False)
    for other in lat.nodes():
        assert up.status(other) == (SATISFIED if Lattice.leq(node, other) else UNKNOWN)
        assert down.status(other) == (FAILED if Lattice.leq(other, node) else UNKNOWN)
    anti = TagStore(lat, monotone=False)
    anti.tag(node, True)
    for other in lat.nodes():
        assert anti.status(other) == (SATISFIED if Lattice.leq(other, node) else UNKNOWN)


def test_bad_lattices() -> None:
    with pytest.raises(InputError):
        Lattice([])
    with pytest.raises(InputError):
        Lattice([1, -1])
    lat = Lattice([1, 1])
    with pytest.raises(InputError):
        lat.validate((2, 0))
    assert lat.validate([1, 0]) == (1, 0)


def test_nodes_are_lexicographic() -> None:
    lat = Lattice([1, 2])
    assert list(lat.nodes()) == list(itertools.product(range(2), range(3)))
    assert np.array_equal(lat.levels_array()[:, 1], [0, 1, 2, 0, 1, 2])
