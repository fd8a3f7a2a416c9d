"""The hash-aggregation kernel (GroupBy) against a dict oracle: integer,
fixed-width, string-column and object keys; updates and merges of partials."""

from __future__ import annotations

import doctest
import itertools
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import timely
import timely.container._aggregate
from tests.container.helpers import object_array, oracle
from tests.progress.strategies import capped
from timely.container import StringColumn
from timely.container.aggregate import GroupBy
from timely.errors import AggregateError

HOWS = ("count", "sum", "min", "max")


def as_dict(group: GroupBy) -> dict:
    keys, columns = group.result()
    assert all(len(c) == len(keys) == len(group) for c in columns.values())
    values = python_keys(keys)
    return {k: {h: columns[h][i].item() for h in group.how} for i, k in enumerate(values)}


def test_docstring_examples():
    result = doctest.testmod(timely.container._aggregate, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


# -- the kernel -------------------------------------------------------------------

INT_KEYS = st.integers(-(2**63), 2**63 - 1)
SMALL_INT_KEYS = st.integers(-5, 5)
TEXT_KEYS = st.sampled_from(["", "a", "b", "ab", "ключ", "鍵", "🦀", "a\x00b"])
LONG_TEXT_KEYS = st.sampled_from(["a\x00", "x" * 8, "x" * 20, "x" * 20 + "y", "y" + "x" * 20])
HOW = st.lists(st.sampled_from(HOWS), min_size=1, max_size=4, unique=True).map(tuple)


@st.composite
def keyed_rows(draw):
    """``(kind, keys, values)``: keys of one kind, values int64 or float64."""
    kind = draw(
        st.sampled_from(["int64", "int32", "uint64", "bool", "str", "strings", "mixed", "S", "U"]))
    n = draw(st.integers(0, 60))
    if kind == "int64":
        keys = np.array(
            draw(st.lists(st.one_of(SMALL_INT_KEYS, INT_KEYS), min_size=n, max_size=n)),
            dtype=np.int64,
        )
    elif kind == "int32":
        keys = np.array(draw(st.lists(SMALL_INT_KEYS, min_size=n, max_size=n)), dtype=np.int32)
    elif kind == "uint64":
        keys = np.array(
            draw(st.lists(st.sampled_from([0, 1, 2**63, 2**64 - 1]), min_size=n, max_size=n)),
            dtype=np.uint64,
        )
    elif kind == "bool":
        keys = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool)
    elif kind == "str":
        keys = object_array(draw(st.lists(TEXT_KEYS, min_size=n, max_size=n)))
    elif kind == "strings":
        words = draw(st.lists(st.one_of(TEXT_KEYS, LONG_TEXT_KEYS), min_size=n, max_size=n))
        keys = StringColumn.from_strings(words)
    elif kind == "mixed":
        # Equal values of different types are one key, as in a dict: 1 == 1.0 == True.
        keys = object_array(
            draw(
                st.lists(
                    st.one_of(
                        TEXT_KEYS, SMALL_INT_KEYS, st.sampled_from([1.0, True, (1, "a"), None])
                    ),
                    min_size=n,
                    max_size=n,
                )
            )
        )
    elif kind == "S":
        keys = np.array(draw(st.lists(st.binary(max_size=3), min_size=n, max_size=n)), dtype="S3")
    else:
        keys = np.array(
            draw(st.lists(st.text("ab\x00é", max_size=3), min_size=n, max_size=n)), dtype="U3"
        )
    if draw(st.booleans()):
        values = np.array(
            draw(st.lists(st.integers(-1000, 1000), min_size=n, max_size=n)), dtype=np.int64
        )
    else:
        values = np.array(
            draw(st.lists(st.floats(-1e6, 1e6), min_size=n, max_size=n)), dtype=np.float64
        )
    return kind, keys, values


def python_keys(keys) -> list:
    if isinstance(keys, StringColumn):
        return keys.tolist()
    return list(keys) if keys.dtype == object else keys.tolist()


@given(keyed_rows(), HOW, st.lists(st.integers(0, 60), max_size=4))
@settings(max_examples=capped(300), deadline=None)
def test_groupby_update_equals_a_dict(data, how, cuts):
    _, keys, values = data
    group = GroupBy(how)
    bounds = [0, *sorted(c for c in cuts if c <= len(keys)), len(keys)]
    for start, stop in itertools.pairwise(bounds):
        group.update(keys[start:stop], values[start:stop])
    want = oracle(zip(python_keys(keys), values.tolist()))
    got = as_dict(group)
    # Same keys in the same (first-arrival) order; values added in row order,
    # so float sums are equal to the last bit.
    assert list(got) == list(want)
    assert got == {k: {h: acc[h] for h in how} for k, acc in want.items()}
    result_keys, columns = group.result()
    assert columns.keys() == set(how)
    if isinstance(keys, StringColumn) and len(keys):
        assert isinstance(result_keys, StringColumn)
    elif len(keys):  # dtypes are known once rows have arrived
        assert result_keys.dtype == keys.dtype
        for h in how:
            assert columns[h].dtype == (np.int64 if h == "count" else values.dtype)


@given(keyed_rows(), HOW, st.lists(st.integers(0, 60), max_size=4), st.randoms())
@settings(max_examples=capped(200), deadline=None)
def test_groupby_merge_of_partials_equals_a_dict(data, how, cuts, rnd):
    _, keys, values = data
    if values.dtype == np.float64:
        values = np.round(values)  # exact sums whatever the order
    bounds = [0, *sorted(c for c in cuts if c <= len(keys)), len(keys)]
    parts = []
    for start, stop in itertools.pairwise(bounds):
        part = GroupBy(how)
        part.update(keys[start:stop], values[start:stop])
        parts.append(part.result())
    rnd.shuffle(parts)
    total = GroupBy(how)
    for part_keys, columns in parts:
        total.merge(part_keys, columns)
    want = oracle(zip(python_keys(keys), values.tolist()))
    assert as_dict(total) == {k: {h: acc[h] for h in how} for k, acc in want.items()}


def test_groupby_many_keys_across_chunks_and_growth():
    rng = np.random.default_rng(7)
    n = 100_000
    ints = rng.integers(0, 60_000, n) * 1024  # multiples of a power of two
    values = rng.integers(-1000, 1000, n)
    group = GroupBy(HOWS)
    group.update(ints[:70_000], values[:70_000])
    group.update(ints[70_000:], values[70_000:])
    keys, columns = group.result()
    order = np.argsort(keys)
    unique, first, counts = np.unique(ints, return_index=True, return_counts=True)
    assert np.array_equal(keys, ints[np.sort(first)])  # first-arrival order
    assert np.array_equal(keys[order], unique)
    assert np.array_equal(columns["count"][order], counts)
    inverse = np.searchsorted(unique, ints)
    assert np.array_equal(columns["sum"][order], np.bincount(inverse, values).astype(np.int64))
    mins = np.full(len(unique), 10**9)
    np.minimum.at(mins, inverse, values)
    assert np.array_equal(columns["min"][order], mins)

    words = object_array([f"w{k}" for k in rng.integers(0, 30_000, n)])
    group = GroupBy("count")
    group.update(words)
    assert as_dict(group) == {k: {"count": c} for k, c in Counter(words.tolist()).items()}


def test_groupby_fixed_width_keys_of_several_widths():
    group = GroupBy(("count", "sum"))
    group.update(np.array(["a", "bb"], dtype="U2"), np.array([1, 2]))
    group.update(np.array(["bb", "cccc", "a"], dtype="U4"), np.array([10, 20, 30]))
    group.update(np.array(["a"], dtype=">U1"), np.array([100]))
    keys, columns = group.result()
    assert keys.dtype == np.dtype("U4")
    assert keys.tolist() == ["a", "bb", "cccc"]
    assert columns["sum"].tolist() == [131, 12, 20]
    assert columns["count"].tolist() == [3, 2, 1]

    group = GroupBy("count")
    group.update(np.array([b"x", b"x\x00"], dtype="S2"))
    group.update(np.array([b"x"], dtype="S1"))
    assert group.result()[0].tolist() == [b"x"] and group.result()[1]["count"].tolist() == [3]


def test_groupby_int_edge_cases():
    big = np.array([2**64 - 1, 2**63, 2**64 - 1], dtype=np.uint64)
    group = GroupBy("count")
    group.update(big)
    keys, columns = group.result()
    assert keys.dtype == np.uint64 and keys.tolist() == [2**64 - 1, 2**63]
    assert columns["count"].tolist() == [2, 1]

    group = GroupBy("sum")  # sums wrap modulo 2**64, as int64 arithmetic does in numpy
    group.update(np.array([1, 1]), np.array([2**63 - 1, 1]))
    assert group.result()[1]["sum"].tolist() == [-(2**63)]

    group = GroupBy(("sum", "min", "max"))
    group.update(np.array([1, 1, 2]), np.array([1.0, np.nan, 2.0]))
    _, columns = group.result()
    assert np.isnan(columns["sum"][0]) and np.isnan(columns["min"][0])
    assert np.isnan(columns["max"][0])
    assert columns["min"][1] == columns["max"][1] == 2.0


def test_groupby_empty_and_refusals():
    group = GroupBy(("count", "sum"))
    group.update(np.array([], dtype=np.int64), np.array([], dtype=np.int64))
    group.merge(
        np.array([], dtype=object),
        {"count": np.array([], dtype=np.int64), "sum": np.array([], dtype=np.int64)},
    )
    assert len(group) == 0
    keys, columns = group.result()
    assert len(keys) == 0 and all(len(c) == 0 for c in columns.values())

    with pytest.raises(AggregateError, match="unknown aggregate 'mean'"):
        GroupBy("mean")
    with pytest.raises(AggregateError, match="twice"):
        GroupBy(("sum", "sum"))
    with pytest.raises(AggregateError, match="need values"):
        GroupBy("sum").update(np.arange(3))
    with pytest.raises(AggregateError, match="3 rows"):
        GroupBy("sum").update(np.arange(3), np.arange(4))
    with pytest.raises(AggregateError, match="float64 are not supported"):
        GroupBy("count").update(np.array([1.5]))
    with pytest.raises(AggregateError, match="values are integer or float"):
        GroupBy("sum").update(np.arange(2), np.array(["a", "b"], dtype=object))
    with pytest.raises(AggregateError, match="no 'sum' column"):
        GroupBy("sum").merge(np.arange(2), {"count": np.arange(2)})
    mixed = GroupBy("count")
    mixed.update(np.arange(3))
    with pytest.raises(AggregateError, match="cannot join"):
        mixed.update(object_array(["a"]))
    floats = GroupBy("sum")
    floats.update(np.arange(3), np.arange(3))
    with pytest.raises(AggregateError, match="float values cannot join integer"):
        floats.update(np.arange(3), np.arange(3.0))
    with pytest.raises(TypeError, match="unhashable"):
        GroupBy("count").update(object_array([[1]]))
    assert issubclass(AggregateError, timely.TimelyError)
    assert issubclass(AggregateError, ValueError)




def test_groupby_string_column_keys_mix_with_object_str_keys():
    words = StringColumn.from_strings(["b", "a", "b", "ключ", "a\x00", "a"])
    group = GroupBy(("count", "sum"))
    group.update(words, np.arange(6))
    group.update(object_array(["a", "zz"]), np.array([10, 20]))
    keys, columns = group.result()
    assert isinstance(keys, StringColumn) and not keys.decoded
    assert keys.tolist() == ["b", "a", "ключ", "a\x00", "zz"]
    assert columns["count"].tolist() == [2, 3, 1, 1, 1]
    assert columns["sum"].tolist() == [2, 16, 3, 4, 20]
    with pytest.raises(AggregateError, match="cannot join"):
        group.update(object_array(["a", 1]), np.array([1, 2]))

    objects = GroupBy("count")             # object keys first: they stay objects
    objects.update(object_array(["x", 2]))
    objects.update(words)
    keys, columns = objects.result()
    assert keys.dtype == object and keys.tolist() == ["x", 2, "b", "a", "ключ", "a\x00"]
    assert columns["count"].tolist() == [1, 1, 2, 2, 1, 1]


def test_groupby_many_string_keys():
    rng = np.random.default_rng(3)
    words = [f"word-{k}" * (1 + k % 3) for k in rng.integers(0, 40_000, 100_000)]
    group = GroupBy("count")
    column = StringColumn.from_strings(words)
    group.update(column[:60_000])
    group.update(column[60_000:])
    keys, columns = group.result()
    assert dict(zip(keys.tolist(), columns["count"].tolist())) == Counter(words)


@pytest.mark.parametrize("dtype", ["U6", "S6"])
def test_groupby_many_fixed_width_keys_grow_their_tables(dtype):
    # Tables start small and double as new keys arrive, within a chunk too.
    rng = np.random.default_rng(11)
    raw = [f"k{k}" for k in rng.integers(0, 50_000, 80_000)]
    keys = np.array(raw if dtype[0] == "U" else [k.encode() for k in raw], dtype=dtype)
    group = GroupBy("count")
    group.update(keys[:50_000])
    group.update(keys[50_000:])
    got = as_dict(group)
    assert got == {k: {"count": c} for k, c in Counter(keys.tolist()).items()}
    assert list(got) == list(dict.fromkeys(keys.tolist()))   # first-arrival order


def test_groupby_string_keys_grow_from_empty_and_empty_strings():
    # The first keys have no bytes: the key store grows only when a key
    # with bytes arrives.
    words = ["", "", "a", "", "bb" * 50, "a"] + [f"x{i}" for i in range(5000)]
    group = GroupBy("count")
    group.update(StringColumn.from_strings(words))
    keys, columns = group.result()
    assert dict(zip(keys.tolist(), columns["count"].tolist())) == Counter(words)
    assert keys.tolist() == list(dict.fromkeys(words))
