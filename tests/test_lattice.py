"""The lattice and predictive tagging."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from safeshare.core.lattice import FAILED, MAX_TAGGED_NODES, SATISFIED, UNKNOWN, Lattice, TagStore, _BoxMasks
from safeshare.errors import InputError


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


@settings(max_examples=60, deadline=None)
@given(
    heights=st.lists(st.integers(0, 3), min_size=1, max_size=4),
    seed=st.integers(0, 2**32 - 1),
)
def test_box_masks_agree_with_numpy_slices(heights: list[int], seed: int) -> None:
    """The bit sets that decide whether a sub-lattice is settled equal numpy slices of a set."""
    rng = np.random.default_rng(seed)
    shape = tuple(h + 1 for h in heights)
    members = rng.random(shape) < 0.3
    masks = _BoxMasks(heights)
    bits = int.from_bytes(np.packbits(members.ravel(), bitorder="little").tobytes(), "little")
    for _ in range(20):
        a = tuple(int(rng.integers(0, s)) for s in shape)
        b = tuple(int(rng.integers(0, s)) for s in shape)
        bottom, top = tuple(map(min, a, b)), tuple(map(max, a, b))
        box = tuple(slice(lo, hi + 1) for lo, hi in zip(bottom, top, strict=True))
        assert masks.meets(bits, bottom, top) == bool(members[box].any())
        up = np.zeros(shape, dtype=bool)
        up[tuple(slice(lo, None) for lo in a)] = True
        down = np.zeros(shape, dtype=bool)
        down[tuple(slice(0, hi + 1) for hi in a)] = True
        for mask, ref in ((masks.up(a), up), (masks.down(a), down)):
            assert mask == int.from_bytes(np.packbits(ref.ravel(), bitorder="little").tobytes(), "little")


@settings(max_examples=40, deadline=None)
@given(
    heights=st.lists(st.integers(0, 3), min_size=1, max_size=4),
    seed=st.integers(0, 2**32 - 1),
    monotone=st.booleans(),
    walk_volume=st.sampled_from([0, 4, 64, 10**6]),
    bit_sets=st.booleans(),
)
def test_settled_agrees_with_the_tag_array(
    heights: list[int], seed: int, monotone: bool, walk_volume: int, bit_sets: bool
) -> None:
    """TagStore.settled (bit sets or slices, or the compiled walk over small boxes) and
    settled_children equal "no UNKNOWN in the slice" of the tag array, as tags grow."""
    rng = np.random.default_rng(seed)
    lat = Lattice(heights)
    tags = TagStore(lat, monotone=monotone, bit_sets=bit_sets)
    tags.walk_volume, tags.walk_from = walk_volume, 0
    nodes = list(lat.nodes())
    for _ in range(12):
        node = nodes[int(rng.integers(len(nodes)))]
        tags.tag(node, bool(rng.integers(2)))
        for _ in range(5):
            a, b = nodes[int(rng.integers(len(nodes)))], nodes[int(rng.integers(len(nodes)))]
            bottom, top = tuple(map(min, a, b)), tuple(map(max, a, b))
            box = tuple(slice(lo, hi + 1) for lo, hi in zip(bottom, top, strict=True))
            assert tags.settled(bottom, top) == bool((tags.array[box] != UNKNOWN).all())
            if monotone:
                inner = [n for n in nodes if Lattice.leq(bottom, n) and Lattice.leq(n, top)]
                flags = tags.settled_children(bottom, top, np.array(inner, dtype=np.int64))
                for node, flag in zip(inner, flags, strict=True):
                    status = tags.status(node)
                    child = (bottom, node) if status == SATISFIED else (node, top)
                    sub = tuple(slice(lo, hi + 1) for lo, hi in zip(*child, strict=True))
                    volume = int(np.prod([hi - lo + 1 for lo, hi in zip(*child, strict=True)]))
                    expected = status != UNKNOWN and volume <= walk_volume and bool(tags.array[sub].all())
                    assert bool(flag) == expected


def test_nodes_by_height_and_levels_array_hold_every_node() -> None:
    lat = Lattice([1, 2, 1])
    expected: list[list[tuple[int, ...]]] = [[] for _ in range(5)]
    for node in itertools.product(range(2), range(3), range(2)):
        expected[sum(node)].append(node)
    assert lat.nodes_by_height() == expected
    arr = lat.levels_array()
    assert arr.dtype == np.int16 and arr.shape == (12, 3)
    assert [tuple(row) for row in arr.tolist()] == list(lat.nodes())


def test_tags_propagate_up_and_down_and_counts_add_up() -> None:
    lat = Lattice([2, 1])
    for bit_sets in (True, False):
        tags = TagStore(lat, bit_sets=bit_sets)
        assert tags.array.dtype == np.int8

        def counts(store: TagStore) -> list[int]:
            return [int((store.array == v).sum()) for v in (SATISFIED, FAILED, UNKNOWN)]

        assert counts(tags) == [0, 0, 6]
        tags.tag((1, 1), True)  # up-set of (1, 1): (1, 1), (2, 1)
        assert [tags.status(n) for n in lat.nodes()] == [
            UNKNOWN,
            UNKNOWN,
            UNKNOWN,
            SATISFIED,
            UNKNOWN,
            SATISFIED,
        ]
        assert tags.settled((1, 1), (2, 1)) and not tags.settled((1, 0), (1, 1))
        tags.tag((0, 0), False)  # down-set of (0, 0): itself
        assert counts(tags) == [2, 1, 3]


def test_tag_store_size_limit_is_inclusive() -> None:
    """A lattice of exactly MAX_TAGGED_NODES nodes is tagged (the array is allocated lazily by
    the OS, nothing is touched); one more node is refused."""
    assert TagStore(Lattice([MAX_TAGGED_NODES - 1])).array.shape == (MAX_TAGGED_NODES,)
    with pytest.raises(InputError, match="more than the 200,000,000 an optimal search can tag"):
        TagStore(Lattice([MAX_TAGGED_NODES]))


def test_lattice_keeps_its_names_and_prints_its_size() -> None:
    lat = Lattice([1, 2], ["age", "zip"])
    assert lat.names == ("age", "zip")
    assert Lattice([1, 2]).names == ("qi0", "qi1")
    assert repr(lat) == "Lattice(heights=[1, 2], size=6)"
    with pytest.raises(InputError, match="one name per quasi-identifier"):
        Lattice([1, 2], ["age"])


def test_tag_store_keeps_bit_sets_below_walk_from_nodes_unless_told() -> None:
    """By default the untagged nodes are kept as a bit set on lattices of fewer than
    ``walk_from`` (2**16) nodes; an explicit ``bit_sets`` wins either way."""
    below, at = Lattice([1] * 15), Lattice([1] * 16)
    assert at.size == TagStore.walk_from == 2 * below.size
    assert TagStore(below)._boxes is not None and TagStore(below).lattice is below
    assert TagStore(at)._boxes is None
    assert TagStore(below, bit_sets=False)._boxes is None
    assert TagStore(at, bit_sets=True)._boxes is not None
