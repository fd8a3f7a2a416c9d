"""Routing: the compiled hash of records and the compiled routing of every
column dtype, against the pure-Python oracle (``tests/reference/routing.py``)
and against each other: a key reaches the same worker in a column of any
dtype, in an object column and as a record, in every process."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from tests.container.helpers import object_array
from tests.reference import routing as ref
from timely.container import StringColumn
from timely.container.routing import crc32, partition, route, stable_hash
from timely.dataflow.channels import stable_hash as channels_stable_hash

ROOT = Path(__file__).resolve().parents[2]
PEERS = st.integers(1, 7)


def check_column(keys, peers: int) -> None:
    """The compiled route of ``keys`` is the oracle's, and is what the
    compiled stable_hash gives each key as a record."""
    got = route(keys, peers)
    assert got.dtype == np.int64
    assert got.tolist() == ref.route(keys, peers)
    assert got.tolist() == [stable_hash(k) % peers for k in ref.records(keys)]


# -- CRC-32 -----------------------------------------------------------------------


@given(st.binary(max_size=300), st.integers(0, 2**32 - 1))
def test_crc32_is_zlibs(data, start):
    assert crc32(data) == zlib.crc32(data)
    assert crc32(data, start) == zlib.crc32(data, start)
    assert crc32(bytearray(data)) == zlib.crc32(data)
    assert crc32(memoryview(data)) == zlib.crc32(data)


@given(st.binary(max_size=100), st.binary(max_size=100))
def test_crc32_continues(a, b):
    assert crc32(b, crc32(a)) == zlib.crc32(a + b)


def test_crc32_of_other_buffers():
    words = np.arange(100, dtype=np.int64)
    assert crc32(words) == zlib.crc32(words.tobytes())
    assert crc32(b"") == 0


# -- the hash of one key --------------------------------------------------------------

SURROGATES = st.sampled_from(["\ud800", "a\udfffb", "\udbff\udc00", "\ud83e\udd80"])
TEXT = st.one_of(st.text(max_size=12), SURROGATES)
NUMPY_SCALARS = st.one_of(
    st.integers(-(2**63), 2**63 - 1).map(np.int64),
    st.integers(0, 2**64 - 1).map(np.uint64),
    st.floats(width=32).map(np.float32),
    st.floats().map(np.float64),
    st.booleans().map(np.bool_),
    st.integers(-(2**40), 2**40).map(lambda v: np.datetime64(v, "s")),
    st.integers(-(2**40), 2**40).map(lambda v: np.timedelta64(v, "ms")),
    TEXT.map(np.str_),
)
SCALARS = st.one_of(
    TEXT,
    st.binary(max_size=12),
    st.integers(),
    st.integers(-(2**200), 2**200),
    st.none(),
    st.booleans(),
    st.floats(),
    st.floats(-1e6, 1e6).map(round).map(float),
    st.integers(-(2**80), 2**80).map(float),
    NUMPY_SCALARS,
)
OBJECTS = st.one_of(
    SCALARS,
    st.tuples(SCALARS, SCALARS),
    st.tuples(st.tuples(SCALARS), SCALARS, st.tuples()),
)


@given(OBJECTS)
def test_stable_hash_is_the_oracles(key):
    assert stable_hash(key) == ref.stable_hash(key)
    assert channels_stable_hash is stable_hash


@given(st.one_of(st.floats(), st.integers(-(2**1000), 2**1000).map(float)))
def test_a_float_with_an_integer_value_hashes_as_that_integer(x):
    h = stable_hash(x)
    if math.isfinite(x) and x == int(x):
        assert h == int(x) == stable_hash(int(x))
    else:
        assert 0 <= h < 2**32


def test_stable_hash_examples():
    assert stable_hash(2.0**70) == 2**70
    assert stable_hash(-0.0) == 0 and stable_hash(True) == 1 and stable_hash(None) == 0
    assert stable_hash(float("nan")) == stable_hash(-float("nan"))
    assert stable_hash("é") == zlib.crc32("é".encode())
    assert stable_hash(bytearray(b"ab")) == stable_hash(b"ab") == zlib.crc32(b"ab")
    assert stable_hash((1, "a")) == ref.stable_hash((1, "a"))
    with pytest.raises(TypeError, match="complex"):
        stable_hash(1j)
    with pytest.raises(TypeError, match="object"):
        stable_hash(object())
    deep = ()
    for _ in range(2000):
        deep = (deep,)
    with pytest.raises(RecursionError):
        stable_hash(deep)


# -- columns of every dtype -------------------------------------------------------------

INTEGER_DTYPES = ["i1", "i2", "i4", "i8", ">i8", "u1", "u2", "u4", "u8", ">u4", "?"]
FLOAT_DTYPES = ["f2", "f4", "f8", ">f4", ">f8"]
TIME_DTYPES = ["M8[ns]", "M8[s]", "M8[D]", "m8[ms]", ">m8[us]"]


@given(st.sampled_from(INTEGER_DTYPES).flatmap(lambda d: hnp.arrays(d, st.integers(0, 50))),
       PEERS)
def test_route_integer_columns(keys, peers):
    check_column(keys, peers)


@given(st.sampled_from(FLOAT_DTYPES).flatmap(lambda d: hnp.arrays(d, st.integers(0, 50))), PEERS)
def test_route_float_columns(keys, peers):
    check_column(keys, peers)
    # A float key goes where the same value goes as a Python float record.
    assert route(keys, peers).tolist() == route(object_array(keys.tolist()), peers).tolist()


@given(st.lists(st.integers(-(2**62), 2**62), max_size=30), PEERS)
def test_integral_floats_route_as_their_ints(values, peers):
    floats = np.array(values, dtype=np.float64)
    ints = object_array([int(f) for f in floats.tolist()])
    assert route(floats, peers).tolist() == route(ints, peers).tolist()
    huge = np.array([2.0**70, -(2.0**100), 2.0**1023], dtype=np.float64)
    assert route(huge, peers).tolist() == [int(x) % peers for x in huge.tolist()]


@given(st.sampled_from(TIME_DTYPES).flatmap(lambda d: hnp.arrays(d, st.integers(0, 50))), PEERS)
def test_route_datetime_columns(keys, peers):
    check_column(keys, peers)
    assert route(keys, peers).tolist() == route(keys.astype(np.int64), peers).tolist()


@given(st.lists(st.binary(max_size=8), max_size=30), PEERS)
def test_route_fixed_bytes(values, peers):
    keys = np.array(values, dtype="S8")
    # numpy drops trailing NULs on reading an element: records carry those bytes.
    check_column(keys, peers)
    assert route(keys, peers).tolist() == route(object_array(keys.tolist()), peers).tolist()


@given(st.lists(TEXT, max_size=30), PEERS, st.sampled_from(["<U12", ">U12"]))
def test_route_fixed_text(values, peers, dtype):
    keys = np.array(values, dtype=dtype)
    check_column(keys, peers)
    assert route(keys, peers).tolist() == route(object_array(keys.tolist()), peers).tolist()


@given(st.lists(st.text(max_size=12), max_size=30), PEERS)
def test_route_string_columns(values, peers):
    column = StringColumn.from_strings(values)
    check_column(column, peers)
    expected = [zlib.crc32(v.encode()) % peers for v in values]
    assert route(column, peers).tolist() == expected
    # The same keys as U (which drops trailing NULs), as objects, as a slice,
    # and with int64 offsets.
    if not any(v.endswith("\x00") for v in values):
        assert route(np.array(values, dtype="U12"), peers).tolist() == expected
    assert route(object_array(values), peers).tolist() == expected
    assert route(column[1:], peers).tolist() == expected[1:]
    wide = StringColumn(column.offsets.astype(np.int64), column.data)
    assert route(wide, peers).tolist() == expected


@given(st.lists(OBJECTS, max_size=30), PEERS)
def test_route_object_columns(values, peers):
    check_column(object_array(values), peers)


def test_route_of_nothing_and_bad_arguments():
    assert route(np.array([], dtype=np.int64), 3).tolist() == []
    assert route(object_array([]), 3).dtype == np.int64
    assert route(StringColumn.from_strings([]), 3).tolist() == []
    assert route([5, -5], 3).tolist() == [2, 1]
    with pytest.raises(ValueError, match="peers"):
        route(np.arange(3), 0)
    with pytest.raises(ValueError, match="1-D"):
        route(np.zeros((2, 2), dtype=np.int64), 2)
    with pytest.raises(TypeError, match="complex"):
        route(np.array([1j]), 2)
    with pytest.raises(TypeError, match="object"):
        route(object_array([object()]), 2)


def test_routing_is_the_same_in_another_process():
    """String hashing must not depend on the process (Python's str hash is salted)."""
    rng = np.random.default_rng(5)
    words = [f"w{i}é" for i in rng.integers(0, 10_000, 200)]
    floats = rng.normal(size=200) * 1e6
    here = {
        "str": route(StringColumn.from_strings(words), 5).tolist(),
        "U": route(np.array(words), 5).tolist(),
        "f8": route(floats, 5).tolist(),
        "record": [stable_hash(w) % 5 for w in words],
    }
    script = (
        "import json, sys, numpy as np\n"
        "from timely.container import StringColumn\n"
        "from timely.container.routing import route, stable_hash\n"
        "words, floats = json.loads(sys.stdin.read())\n"
        "print(json.dumps({'str': route(StringColumn.from_strings(words), 5).tolist(),\n"
        "  'U': route(np.array(words), 5).tolist(),\n"
        "  'f8': route(np.array(floats), 5).tolist(),\n"
        "  'record': [stable_hash(w) % 5 for w in words]}))\n")
    env = {**os.environ, "PYTHONHASHSEED": "12345", "PYTHONPATH": str(ROOT)}
    run = subprocess.run([sys.executable, "-c", script], input=json.dumps([words, floats.tolist()]),
                         capture_output=True, text=True, env=env, timeout=120)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout) == here


# -- partition ----------------------------------------------------------------------------


def expected_partition(dest, peers):
    order = [i for j in range(peers) for i, d in enumerate(dest) if d == j]
    counts = [sum(1 for d in dest if d == j) for j in range(peers)]
    return order, counts


@given(st.data(), PEERS)
def test_partition_is_a_stable_grouping(data, peers):
    dest = data.draw(st.lists(st.integers(0, peers - 1), max_size=60))
    order, counts = partition(np.array(dest, dtype=np.int64), peers)
    want_order, want_counts = expected_partition(dest, peers)
    assert order.dtype == np.int64 and counts.dtype == np.int64
    assert order.tolist() == want_order
    assert counts.tolist() == want_counts


@given(st.lists(OBJECTS, max_size=30), PEERS)
def test_route_then_partition_groups_rows_by_worker(values, peers):
    dest = route(object_array(values), peers)
    order, counts = partition(dest, peers)
    start = 0
    for worker, count in enumerate(counts.tolist()):
        rows = order[start : start + count].tolist()
        assert rows == sorted(rows)
        assert all(dest[i] == worker for i in rows)
        start += count
    assert sorted(order.tolist()) == list(range(len(values)))


@pytest.mark.parametrize("bad", [-1, 3, 100])
def test_partition_refuses_workers_out_of_range(bad):
    with pytest.raises(ValueError, match=f"worker {bad}"):
        partition(np.array([0, bad, 1], dtype=np.int64), 3)


@pytest.mark.parametrize("peers", [2, 7, 1 << 40])
def test_fixed_width_text_with_ascii_runs_and_wide_code_points(peers):
    # ASCII runs of every length around the 8-unit step, then a wide code
    # point, a surrogate-free astral one, and ASCII again.
    words = ["a" * k + tail for k in range(20) for tail in ["", "é", "鍵x", "\U0001F600abc" * 3]]
    keys = np.array(words)
    assert route(keys, peers).tolist() == [zlib.crc32(w.encode()) % peers for w in words]
    assert route(keys.astype(">U80"), peers).tolist() == route(keys, peers).tolist()


@pytest.mark.parametrize("dtype", ["<i8", ">i8", "<i4", "<u8"])
def test_route_and_partition_take_any_integer_layout(dtype):
    keys = np.array([5, -3, 8, 0, 7, -1, 2] if dtype[1] == "i" else [5, 3, 8, 0, 7, 1, 2],
                    dtype=dtype)
    for peers in (2, 3, 4):
        want = [int(k) % peers for k in keys.tolist()]
        assert route(keys, peers).tolist() == want
        assert route(keys[::2], peers).tolist() == want[::2]          # not contiguous
        order, counts = partition(np.array(want, dtype=dtype if dtype[1] == "i" else "<i8"),
                                  peers)
        assert counts.tolist() == [want.count(w) for w in range(peers)]
        assert order.tolist() == sorted(range(len(want)), key=lambda i: (want[i], i))


@st.composite
def split_cases(draw):
    from tests.container.helpers import object_columns, raw_columns, string_columns

    n = draw(st.integers(0, 40))
    peers = draw(PEERS)
    kinds = draw(st.lists(st.sampled_from(["raw", "string", "object", "strided"]),
                          min_size=1, max_size=4))
    columns = {}
    for k, kind in enumerate(kinds):
        if kind == "raw":
            column = draw(raw_columns(n))
        elif kind == "string":
            column = draw(string_columns(n))
        elif kind == "object":
            column = draw(object_columns(n))
        else:
            column = np.arange(2 * n, dtype=np.int32)[::2]       # not contiguous
        columns[f"c{k}"] = column
    dest = draw(st.lists(st.integers(0, peers - 1), min_size=n, max_size=n))
    return columns, np.array(dest, dtype=np.int64), peers


def as_list(column):
    values = column.tolist()
    return [repr(v) if isinstance(v, float) else v for v in values]


@given(split_cases())
def test_split_columns_matches_taking_each_workers_rows(case):
    """Each worker's part holds its rows, in order, as ``take`` gives them,
    with the column's dtype; a worker with none or all of the rows gets
    None (the batch goes as it is)."""
    from timely.container.routing import split_columns

    columns, dest, peers = case
    n = len(dest)
    counts, parts = split_columns(columns, dest, peers)
    order, want_counts = partition(dest, peers)
    assert counts == want_counts.tolist()
    start = 0
    for j, count in enumerate(counts):
        rows = order[start:start + count]
        start += count
        if count == 0 or count == n:
            assert parts[j] is None
            continue
        assert list(parts[j]) == list(columns)
        for name, column in columns.items():
            got, want = parts[j][name], column.take(rows)
            assert type(got) is type(want) and len(got) == count
            if isinstance(want, np.ndarray):
                assert got.dtype == want.dtype
                assert got.tobytes() == want.tobytes() if want.dtype != object else \
                    as_list(got) == as_list(want)
            else:
                assert got.tolist() == want.tolist()
