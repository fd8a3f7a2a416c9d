"""The one column serializer: heads, parts and their checks, and round trips
of every column type through both framings that use it, the wire frame
between workers and the capture file."""

from __future__ import annotations

import doctest
import io
import math
import struct

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import timely.container.serialize
from tests.container.helpers import RAW_DTYPES, object_columns, raw_columns, string_columns
from timely.capture import EventReader, EventWriter, Messages
from timely.communication import codec
from timely.container import Batch, StringColumn
from timely.container._columns import strings_or_none
from timely.container.serialize import (
    OBJECT,
    column_parts,
    column_type,
    read_head,
    spec_type,
    write_head,
)
from timely.errors import CaptureTypeError


@st.composite
def batches(draw):
    n = draw(st.integers(0, 30))
    names = draw(st.lists(st.text(min_size=1, max_size=5), max_size=4, unique=True))
    kinds = st.one_of(raw_columns(n), string_columns(n), object_columns(n))
    return Batch({name: draw(kinds) for name in names})


def same_column(a, b) -> bool:
    if type(a) is not type(b):
        return False
    if type(a) is StringColumn:
        return a.type == b.type and a.equals(b)
    if a.dtype != b.dtype:
        return False
    if a.dtype == object:
        return all(x == y or (x != x and y != y) for x, y in zip(a.tolist(), b.tolist()))
    return a.tobytes() == b.tobytes()


def written(column):
    """The column a reader gets back: an object column of str arrives as a
    string column, every other column as it was."""
    if isinstance(column, np.ndarray) and column.dtype == object:
        strings = strings_or_none(column)
        if strings is not None:
            return strings
    return column


def same_batch(got: Batch, sent: Batch) -> bool:
    return (got.names == sent.names and len(got) == len(sent)
            and all(same_column(got.column(n), written(sent.column(n))) for n in got.names))


def through_the_wire(batch: Batch) -> Batch:
    frame = b"".join(bytes(p) for p in codec.encode([(3, (7, batch))]))
    ((identifier, (time, got)),) = codec.decode(frame)
    assert (identifier, time) == (3, 7)
    return got


def through_the_ring_buffers(batch: Batch) -> Batch:
    """As the ring receives a frame: segments copied into buffers made from the header."""
    frame = b"".join(bytes(p) for p in codec.encode([(3, (7, batch))]))
    header = codec.Header(frame)
    destinations = header.destinations()
    position = header.length + (-header.length % 8)
    for size, target in zip(header.sizes, destinations):
        memoryview(target).cast("B")[:size] = frame[position:position + size]
        position += size + (-size % 8)
    ((_, (_, got)),) = header.messages(destinations)
    return got


def through_a_capture_file(batch: Batch) -> Batch:
    buffer = io.BytesIO()
    writer = EventWriter(buffer)
    writer.push(Messages(7, batch))
    writer.finish()
    (event,) = list(EventReader(io.BytesIO(buffer.getvalue()), follow=False))
    return event.data


def test_docstring_examples():
    result = doctest.testmod(timely.container.serialize, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


def scalar_values_only(column) -> bool:
    """False for a numpy ``U`` column holding a lone surrogate: the wire
    carries its code points as they are, a capture file (UTF-8 text) refuses it."""
    if not (isinstance(column, np.ndarray) and column.dtype.kind == "U"):
        return True
    points = column.astype(column.dtype.newbyteorder("=")).view(np.uint32)
    return not bool(((points >= 0xD800) & (points <= 0xDFFF)).any())


@given(batches())
def test_every_column_type_round_trips_through_both_framings(batch):
    for way in (through_the_wire, through_the_ring_buffers, through_a_capture_file):
        if way is through_a_capture_file and not all(
                scalar_values_only(batch.column(n)) for n in batch.names):
            with pytest.raises(CaptureTypeError, match="not a Unicode scalar value"):
                way(batch)
            continue
        got = way(batch)
        assert same_batch(got, batch), way.__name__
        for name in got.names:
            column = got.column(name)
            if type(column) is StringColumn:
                assert not column.decoded, way.__name__      # no str made on the way


@pytest.mark.parametrize("dtype", RAW_DTYPES, ids=str)
def test_raw_columns_travel_as_their_bytes(dtype):
    column = np.arange(6).astype(dtype)
    kind, rows, parts = column_parts(column)
    assert kind is column_type(column) and kind.spec == dtype.str.encode()
    assert rows == 6 and len(parts) == 1 and np.shares_memory(parts[0], column)
    assert spec_type(kind.spec) is kind
    for way in (through_the_wire, through_the_ring_buffers, through_a_capture_file):
        got = way(Batch(c=column)).column("c")
        assert got.dtype == dtype and got.tobytes() == column.tobytes()


def test_string_columns_travel_as_offsets_and_bytes():
    words = StringColumn.from_strings(["skip", "ab", "", "ключ", "end"])
    kind, rows, (offsets, data) = column_parts(words[1:4])
    assert kind.spec == b"|string" and rows == 3
    assert offsets.view("<i4").tolist() == [0, 2, 2, 10]       # moved to start at 0
    assert np.shares_memory(data, words.data) and bytes(data) == "abключ".encode()
    wide = StringColumn(words.offsets.astype(np.int64), words.data)
    assert column_parts(wide)[0].spec == b"|large_string"
    kind, rows, (offsets, data) = column_parts(np.array(["ab", "ключ"], dtype=object))
    assert kind.spec == b"|string" and bytes(data) == "abключ".encode()
    assert column_parts(np.array(["a", "\ud800"], dtype=object)) is None  # no UTF-8
    assert column_type(np.array(["a", None], dtype=object)) is None
    assert column_type(np.zeros(2, dtype=[("a", "i4")])) is None
    assert column_type(np.zeros(2, dtype="V4")) is None


# -- heads ------------------------------------------------------------------------------


def head_of(column) -> bytes:
    kind, rows, parts = column_parts(column)
    out = bytearray()
    write_head(kind, rows, [p.nbytes for p in parts], out)
    return bytes(out)


@pytest.mark.parametrize("column", [np.arange(3), StringColumn.from_strings(["a", "bc"])],
                         ids=["raw", "string"])
def test_every_truncated_head_is_refused(column):
    head = head_of(column)
    kind, rows, sizes, end = read_head(memoryview(head), 0, len(head))
    assert end == len(head) and rows == len(column)
    for cut in range(len(head)):
        with pytest.raises(ValueError, match="past the end"):
            read_head(memoryview(head), 0, cut)


@pytest.mark.parametrize(
    "spec",
    [b"|O8", b"<V8", b"<i8\x00", b"zz9", b"\xff\xfe?", b"<i0", b"|utf8", b"<U0", b"|string8",
     b"<i8[ns]x", b"<M8[1000000000000ns]"],
)
def test_unknown_specs_are_refused(spec):
    head = bytes([len(spec)]) + spec + struct.pack("<QQQ", 0, 0, 0)
    with pytest.raises(ValueError):
        read_head(memoryview(head), 0, len(head))


def test_sizes_that_do_not_fit_the_rows_are_refused():
    def head(spec, rows, *sizes):
        return memoryview(bytes([len(spec)]) + spec + struct.pack(f"<{1 + len(sizes)}Q", rows,
                                                                   *sizes))

    for bad in (head(b"<i8", 3, 25), head(b"<i8", 2**61, 2**64 - 8),
                head(b"|string", 2, 8, 5), head(b"|large_string", 2**64 - 1, 0, 0)):
        with pytest.raises(ValueError):
            read_head(bad, 0, len(bad))
    legacy = head(b"|utf8", 2, 8 * 4 + 3)
    assert read_head(legacy, 0, len(legacy), legacy=True)[0].spec == b"|utf8"
    short = head(b"|utf8", 2, 8 * 3)      # no room for the count and three offsets
    with pytest.raises(ValueError, match="cannot hold 2 rows"):
        read_head(short, 0, len(short), legacy=True)


def test_string_parts_are_checked_when_built():
    kind = spec_type(b"|string")

    def build(offsets, data, check_utf8=False):
        return kind.build(len(offsets) - 1, [np.array(offsets, "<i4").view(np.uint8), data],
                          check_utf8)

    assert build([0, 1, 3], b"abc").tolist() == ["a", "bc"]
    for offsets in ([1, 2, 3], [0, 1, 2], [0, 2, 1, 3], [0, 4, 3]):
        with pytest.raises(ValueError):
            build(offsets, b"abc")
    assert build([0, 2], b"\xff\xfe").offsets.tolist() == [0, 2]      # trusted: not checked
    with pytest.raises(ValueError, match="UTF-8"):
        build([0, 2], b"\xff\xfe", check_utf8=True)
    with pytest.raises(ValueError):
        OBJECT.build(1, [b"x"])


def test_legacy_string_parts():
    kind = spec_type(b"|utf8", legacy=True)
    body = struct.pack("<qqqq", 2, 0, 1, 3) + b"abc"
    assert kind.build(2, [body]).tolist() == ["a", "bc"]
    with pytest.raises(ValueError, match="2 rows where 3"):
        kind.build(3, [struct.pack("<qqqqq", 2, 0, 1, 3, 3) + b"abc"])
    with pytest.raises(ValueError):
        kind.build(2, [struct.pack("<qqqq", 2, 0, 1, 4) + b"abc"])


def test_nan_payloads_and_extremes_survive():
    floats = np.array([math.nan, -0.0, math.inf, 5e-324], dtype=np.float64)
    floats.view(np.uint64)[0] |= 1      # a NaN with another payload
    for way in (through_the_wire, through_the_ring_buffers, through_a_capture_file):
        assert way(Batch(f=floats)).column("f").tobytes() == floats.tobytes()
