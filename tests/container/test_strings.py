"""The string column against Python lists: construction, take, filter, slice,
concat, Arrow in and out, the checks of its buffers, caching and pickling."""

from __future__ import annotations

import doctest
import pickle

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

import timely.container._columns
from timely.container import StringColumn

WORDS = st.lists(st.text(max_size=10), max_size=40)


def encoded(values) -> tuple[list, bytes]:
    """The offsets and bytes of ``values`` by their definition."""
    offsets, data = [0], b""
    for value in values:
        data += value.encode()
        offsets.append(len(data))
    return offsets, data


def same_buffers(column: StringColumn, values) -> bool:
    offsets, data = encoded(values)
    first = int(column.offsets[0])
    return ((column.offsets - first).tolist() == offsets
            and bytes(column.data[first:first + len(data)]) == data)


@st.composite
def columns(draw):
    """``(column, values)``: int32 or int64 offsets, maybe a slice of a larger column."""
    values = draw(WORDS)
    before = draw(st.lists(st.text(max_size=4), max_size=3))
    after = draw(st.lists(st.text(max_size=4), max_size=3))
    offsets, data = encoded(before + values + after)
    dtype = draw(st.sampled_from([np.int32, np.int64]))
    whole = StringColumn(np.array(offsets, dtype=dtype), data)
    return whole[len(before):len(before) + len(values)], values


def test_docstring_examples():
    result = doctest.testmod(timely.container._columns, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


@given(WORDS)
def test_from_strings(values):
    column = StringColumn.from_strings(values)
    assert len(column) == len(values)
    assert column.type == "string" and column.offsets.dtype == np.int32
    assert same_buffers(column, values)
    assert column.tolist() == values
    assert [column[i] for i in range(len(values))] == values
    assert list(column) == values
    assert np.asarray(column).tolist() == values


@given(columns())
def test_decoding_is_cached(data):
    column, values = data
    assert not column.decoded
    rows = column.to_numpy()
    assert rows.dtype == object and rows.tolist() == values and not rows.flags.writeable
    assert column.decoded and column.to_numpy() is rows
    if values:
        assert column[-1] == values[-1]


@given(columns(), st.data())
def test_take(data, draw):
    column, values = data
    n = len(values)
    index = draw.draw(st.lists(st.integers(-n, n - 1), max_size=50)) if n else []
    got = column.take(np.array(index, dtype=np.int64))
    want = [values[i] for i in index]
    assert got.tolist() == want
    assert same_buffers(got, want) and got.offsets[0] == 0
    assert got.offsets.dtype == column.offsets.dtype
    assert column.take(index).tolist() == want  # a list of positions
    assert column[np.array(index, dtype=np.int64)].tolist() == want


@given(columns(), st.data())
def test_filter(data, draw):
    column, values = data
    mask = np.array(draw.draw(st.lists(st.booleans(), min_size=len(values),
                                       max_size=len(values))), dtype=bool)
    want = [v for v, keep in zip(values, mask) if keep]
    assert column.filter(mask).tolist() == want
    assert column[mask].tolist() == want


@given(columns(), st.integers(-5, 45), st.integers(-5, 45))
def test_slice(data, start, stop):
    column, values = data
    part = column[start:stop]
    assert part.tolist() == values[start:stop]
    assert part.data is column.data  # a view: the same bytes
    assert column[start:stop:2].tolist() == values[start:stop:2]
    lo, hi = max(start, 0), max(stop, 0)
    assert column.slice(lo, hi).tolist() == values[lo:hi]


@given(st.lists(columns(), max_size=5))
def test_concat(parts):
    got = StringColumn.concat(column for column, _ in parts)
    want = [v for _, values in parts for v in values]
    assert got.tolist() == want
    assert same_buffers(got, want) and got.offsets[0] == 0
    wide = any(column.offsets.dtype == np.int64 for column, _ in parts)
    assert got.offsets.dtype == (np.int64 if wide else np.int32)


@given(columns())
def test_to_arrow_shares_the_buffers(data):
    column, values = data
    array = column.to_arrow()
    array.validate(full=True)
    assert array.type == (pa.large_string() if column.offsets.dtype == np.int64 else pa.string())
    assert array.to_pylist() == values
    _, offsets, bytes_ = array.buffers()
    assert offsets.address == column.offsets.__array_interface__["data"][0]
    assert bytes_.address == column.data.__array_interface__["data"][0]


@given(WORDS, st.sampled_from([pa.string(), pa.large_string()]), st.integers(0, 5),
       st.booleans())
def test_from_arrow_shares_the_buffers(values, kind, skip, chunked):
    array = pa.array(values, type=kind).slice(min(skip, len(values)))
    want = values[min(skip, len(values)):]
    column = StringColumn.from_arrow(pa.chunked_array([array]) if chunked else array)
    assert column.tolist() == want
    assert column.type == str(kind)
    if not chunked:
        assert column.data.__array_interface__["data"][0] == array.buffers()[2].address
    assert StringColumn.from_arrow(column.to_arrow()).tolist() == want


def test_from_arrow_refusals():
    with pytest.raises(ValueError, match="nulls"):
        StringColumn.from_arrow(pa.array(["a", None]))
    with pytest.raises(TypeError, match="int64"):
        StringColumn.from_arrow(pa.array([1, 2]))


@given(columns())
def test_pickle_round_trip(data):
    column, values = data
    for protocol in (2, 5):
        back = pickle.loads(pickle.dumps(column, protocol=protocol))
        assert back.tolist() == values and back.equals(column)
        assert back.offsets[0] == 0 and back.data.shape[0] == back.offsets[-1]


@given(columns(), columns())
def test_equals(a, b):
    assert a[0].equals(a[0])
    assert a[0].equals(b[0]) == (a[1] == b[1])
    assert not a[0].equals(a[1])


def test_the_constructor_checks_the_buffers():
    assert StringColumn([0, 1, 3], b"abc").tolist() == ["a", "bc"]
    assert StringColumn(np.array([2, 3], dtype=np.int32), b"abc").tolist() == ["c"]
    with pytest.raises(ValueError, match="offset 2"):
        StringColumn([0, 2, 1], b"abc")  # decreasing
    with pytest.raises(ValueError, match="offset 1"):
        StringColumn([0, 4], b"abc")  # past the bytes
    with pytest.raises(ValueError, match="offset 0"):
        StringColumn([-1, 1], b"abc")
    with pytest.raises(ValueError, match="integers"):
        StringColumn([0.0, 1.0], b"abc")
    with pytest.raises(ValueError, match="1-D"):
        StringColumn(np.zeros((2, 2), dtype=np.int64), b"abc")
    with pytest.raises(ValueError, match="1-D"):
        StringColumn(np.zeros(0, dtype=np.int64), b"")
    StringColumn([0, 2], b"\xff\xfe")  # unchecked bytes are the caller's affair ...
    with pytest.raises(ValueError, match="not UTF-8 at byte 0"):
        StringColumn([0, 2], b"\xff\xfe", check_utf8=True)  # ... unless asked
    with pytest.raises(ValueError, match="row 1 starts inside"):
        StringColumn([0, 1, 2], "é".encode(), check_utf8=True)
    StringColumn([0, 2, 2], "é".encode(), check_utf8=True)
    with pytest.raises(UnicodeDecodeError):
        StringColumn([0, 1], b"\xff").tolist()


def test_from_strings_refusals():
    with pytest.raises(TypeError, match="row 1 .* int"):
        StringColumn.from_strings(["a", 1])
    with pytest.raises(ValueError, match="surrogate"):
        StringColumn.from_strings(["a", "\ud800"])
    assert StringColumn.from_strings([]).tolist() == []
    assert StringColumn.from_strings(iter(["a", "b"])).tolist() == ["a", "b"]


def test_index_errors():
    column = StringColumn.from_strings(["a", "b"])
    with pytest.raises(IndexError):
        column[2]
    with pytest.raises(IndexError):
        column[-3]
    with pytest.raises(IndexError, match="out of bounds"):
        column.take([0, 2])
    with pytest.raises(IndexError, match="integer positions"):
        column.take(np.array([0.5]))
    with pytest.raises(ValueError, match="mask"):
        column.filter([True])


def test_size_and_repr():
    column = StringColumn.from_strings(["ab", "é", "", "x", "y", "z"])
    assert column.nbytes == 7 * 4 + 7
    assert column[1:3].nbytes == 3 * 4 + 2
    assert repr(column) == "StringColumn(['ab', 'é', '', 'x', 'y', ...]; 6 rows, string)"
    assert "..." in repr(StringColumn.from_strings(["x" * 300]))


def test_offsets_wider_than_int32_when_the_bytes_need_them():
    # 2**31 bytes would be needed for real; the rule is what take and concat follow.
    small = StringColumn.from_strings(["a"])
    assert small.take([0] * 3).offsets.dtype == np.int32
    wide = StringColumn(np.array([0, 1], dtype=np.int64), b"a")
    assert wide.take([0, 0]).offsets.dtype == np.int64
    assert StringColumn.concat([small, wide]).offsets.dtype == np.int64
