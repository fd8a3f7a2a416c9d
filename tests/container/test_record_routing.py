"""Routing lists of records in compiled code (``route_records``,
``partition_records``, ``split_records``) against the pure-Python oracle:
every key form routes a record exactly as ``stable_hash(key) % peers``, so
a key reaches the same worker whichever form names it, and as a column row."""

from __future__ import annotations

import types
from collections import namedtuple

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.reference import routing as ref
from timely import RouteError
from timely.container.routing import (partition_records, route, route_records, split_records,
                                      stable_hash)

PEERS = st.integers(1, 7)
LEAVES = (st.integers() | st.floats() | st.text() | st.binary() | st.none() | st.booleans())
KEYS = st.recursive(LEAVES, lambda inner: st.tuples(inner, inner), max_leaves=6)
Point = namedtuple("Point", "name weight")


def expected(keys, peers):
    return [ref.stable_hash(k) % peers for k in keys]


@given(st.lists(st.tuples(KEYS, st.integers())), PEERS)
def test_a_field_index_routes_as_its_hash(records, peers):
    assert route_records(records, peers, key=0).tolist() == expected(
        [r[0] for r in records], peers)
    assert route_records(records, peers, key=-1).tolist() == expected(
        [r[1] for r in records], peers)
    lists = [list(r) for r in records]
    assert route_records(lists, peers, key=1).tolist() == expected([r[1] for r in records],
                                                                     peers)


@given(st.lists(KEYS), PEERS)
def test_every_form_routes_a_key_alike(keys, peers):
    want = expected(keys, peers)
    assert route_records(keys, peers).tolist() == want
    assert route_records([(k,) for k in keys], peers, key=0).tolist() == want
    assert route_records([{"k": k} for k in keys], peers, key="k").tolist() == want
    assert route_records([types.SimpleNamespace(k=k) for k in keys], peers,
                         key="k").tolist() == want
    assert route_records(keys, peers, fn=lambda k: k).tolist() == want
    assert route_records([(k, 0) for k in keys], peers, key=0, fn=lambda k: (k,)).tolist() == \
        expected([(k,) for k in keys], peers)
    if keys and all(type(k) is int for k in keys):
        assert route(np.array(keys, dtype=object), peers).tolist() == want


@given(st.lists(st.tuples(st.text(max_size=5), st.integers(-5, 5))), PEERS)
def test_partition_keeps_each_workers_records_in_order(records, peers):
    parts = partition_records(records, peers, key=0)
    assert len(parts) == peers
    for worker, part in enumerate(parts):
        assert part == [r for r in records if stable_hash(r[0]) % peers == worker]
    dest = route_records(records, peers, key=1)
    assert split_records(records, dest, peers) == [
        [r for r, d in zip(records, dest) if d == w] for w in range(peers)]


def test_names_take_dict_keys_then_attributes():
    records = [{"name": "a"}, Point("b", 1), types.SimpleNamespace(name="c")]
    assert route_records(records, 5, key="name").tolist() == expected(["a", "b", "c"], 5)


@pytest.mark.parametrize("records, key, words", [
    ([(1, 2), (3,)], 1, ["key 1", "record 1", "(3,)", "IndexError"]),
    ([{"a": 1}, {"b": 2}], "a", ["'a'", "record 1", "KeyError"]),
    ([Point("x", 1), object()], "name", ["'name'", "record 1", "AttributeError"]),
    ([5], 0, ["record 0", "int"]),
])
def test_a_missing_field_is_a_route_error(records, key, words):
    with pytest.raises(RouteError) as info:
        partition_records(records, 2, key=key)
    for word in words:
        assert word in str(info.value), str(info.value)
    assert info.value.__cause__ is not None


@pytest.mark.parametrize("key", [1.5, True, b"k", (0,)])
def test_a_key_that_is_not_a_field_is_a_route_error(key):
    with pytest.raises(RouteError, match="field index"):
        route_records([(1,)], 2, key=key)


def test_an_unhashable_key_names_the_route():
    with pytest.raises(RouteError, match="my_route.*list"):
        partition_records([([1],)], 2, key=0, name="my_route")


def test_what_the_function_raises_propagates():
    def broken(record):
        raise KeyError("inner")

    with pytest.raises(KeyError, match="inner"):
        partition_records([1, 2], 2, fn=broken)


def test_a_batch_that_changes_while_routed_is_refused():
    records = [1, 2, 3]
    with pytest.raises(RouteError, match="changed"):
        partition_records(records, 2, fn=lambda r: records.pop())


def test_split_checks_its_workers():
    with pytest.raises(ValueError, match="not in"):
        split_records([1, 2], [0, 2], 2)
    with pytest.raises(ValueError, match="1 workers for 2"):
        split_records([1, 2], [0], 2)
    assert split_records([], [], 3) == [[], [], []]


def test_records_keep_their_references():
    import sys

    record = ("k", object())
    before = sys.getrefcount(record)
    parts = partition_records([record] * 10, 3, key=0)
    assert sys.getrefcount(record) == before + 10
    del parts
    assert sys.getrefcount(record) == before
