"""EventWriter / EventReader: every record type, container and time round
trips exactly; incremental reading of growing files, sockets and pipes; bad
headers and pickles are refused with typed errors."""

from __future__ import annotations

import io
import os
import pickle
import socket
import struct
import threading
import time
import zlib

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import timely
from tests.capture.helpers import same
from timely import Batch, CaptureFormatError, CaptureTypeError
from timely.capture import EventReader, EventWriter, Messages, Progress
from timely.capture.format import MAGIC, MAX_DEPTH, VERSION
from timely.container import StringColumn


def write(events, **options) -> bytes:
    buffer = io.BytesIO()
    writer = EventWriter(buffer, **options)
    for event in events:
        writer.push(event)
    writer.finish()
    return buffer.getvalue()


def read_all(data: bytes, **options) -> list:
    reader = EventReader(io.BytesIO(data), **options)
    events = list(reader)
    assert reader.ended and reader.terminated
    return events


def round_trip(events, **options):
    return read_all(write(events, **options), **options)


def same_event(a, b) -> bool:
    if type(a) is not type(b):
        return False
    if type(a) is Progress:
        return a.updates == b.updates and all(
            type(x[0]) is type(y[0]) for x, y in zip(a.updates, b.updates))
    if a.time != b.time or type(a.time) is not type(b.time):
        return False
    if isinstance(a.data, Batch):
        return (isinstance(b.data, Batch) and a.data.names == b.data.names
                and all(same(a.data[n], b.data[n]) for n in a.data.names))
    return same(a.data, b.data)


PLAIN = [
    None, True, False, 0, -1, 2**63 - 1, -(2**63), 2**63, -(2**63) - 1, 2**200, -(3**150),
    0.0, -0.0, 1.5, float("inf"), float("-inf"), float("nan"), "", "héllo", "\ud800", "\x00",
    b"", b"\x00\xff", (), (1,), [], [1, [2, [3]]], {}, {"a": 1, 2: [3], (4, 5): {"x": None}},
    ("nested", [{"k": (1, 2.5, b"z")}]),
]


def test_every_plain_record():
    events = [Messages(0, list(PLAIN))] + [Messages(i, [r]) for i, r in enumerate(PLAIN)]
    for a, b in zip(events, round_trip(events), strict=True):
        assert same_event(a, b), (a, b)


def test_fast_paths_for_ints_and_floats():
    ints = list(range(-5, 1000))
    floats = [x / 3 for x in range(1000)] + [float("nan")]
    mixed_bigint = [1, 2**64]
    events = [Messages(1, ints), Messages(2, floats), Messages(3, mixed_bigint), Messages(4, [])]
    for a, b in zip(events, round_trip(events), strict=True):
        assert same_event(a, b)
        assert all(type(x) is type(y) for x, y in zip(a.data, b.data))


def test_times_and_progress():
    events = [
        Progress([]),
        Progress([(0, -1), (1, 1)]),
        Progress([((0, 0), -1), ((0, 3), 2)]),
        Progress([((1, 2, 3), 5)]),
        Progress([((7,), 1)]),                       # a 1-tuple stays a tuple
        Messages(2**64 - 1, [1]),
        Messages((2**64 - 1, 0), [1]),
        Messages((1,), [1]),
    ]
    for a, b in zip(events, round_trip(events), strict=True):
        assert same_event(a, b), (a, b)


DTYPES = ["<i1", "<i2", "<i4", "<i8", ">i8", "<u1", "<u2", "<u4", "<u8", "<f2", "<f4", "<f8",
          ">f8", "<c8", "<c16", "|b1", "<M8[ns]", "<m8[s]", "|S5", "<U3"]


@pytest.mark.parametrize("dtype", DTYPES)
def test_arrays_and_batches_of_every_raw_dtype(dtype):
    rng = np.random.default_rng(1)
    raw = rng.integers(0, 256, size=7 * np.dtype(dtype).itemsize, dtype=np.uint8)
    if np.dtype(dtype).kind == "U":          # text holds code points below the surrogates
        raw = (raw.view("<u4") % 0xD800).astype("<u4").view(np.uint8)
    column = raw.view(dtype)
    events = [
        Messages(0, column),
        Messages(1, np.ascontiguousarray(np.stack([column, column]))),
        Messages(2, column[::2]),                    # not contiguous: written as a copy
        Messages(3, Batch({"x": column, "y": np.arange(7)})),
        Messages(4, Batch({"x": column[:0], "y": np.arange(0)})),
    ]
    for a, b in zip(events, round_trip(events), strict=True):
        assert same_event(a, b)
        data = b.data if not isinstance(b.data, Batch) else b.data["x"]
        sent = a.data if not isinstance(a.data, Batch) else a.data["x"]
        assert data.dtype == sent.dtype
        assert data.flags.writeable
    assert round_trip(events[:1])[0].data.dtype == np.dtype(dtype)


def test_object_columns_and_arrays():
    objects = np.array(["a", None, (1, 2), b"x", 2**70, {"k": [1]}], dtype=object)
    events = [
        Messages(0, Batch({"o": objects, "n": np.arange(6)})),
        Messages(1, objects.reshape(2, 3)),
    ]
    for a, b in zip(events, round_trip(events), strict=True):
        assert same_event(a, b)


def test_str_columns_are_written_as_offsets_and_utf8():
    words = np.array(["", "héllo", "日本", "a" * 70], dtype=object)
    batch = Batch(w=words, k=np.arange(4))
    data = write([Messages(0, batch)])
    assert b"|string" in data and b"|O" not in data
    (event,) = read_all(data)
    column = event.data.column("w")
    assert isinstance(column, StringColumn) and not column.decoded
    assert event.data["w"].tolist() == words.tolist()
    wide = Batch(w=StringColumn(np.array([0, 1, 3]), b"abc"))
    data = write([Messages(0, wide)])
    assert b"|large_string" in data and read_all(data)[0].data == wide
    mixed = Batch(w=np.array(["a", 1], dtype=object))
    assert b"|O" in write([Messages(0, mixed)])


def test_a_corrupt_str_column_names_its_offset():
    batch = Batch(w=np.array(["ab", "cd"], dtype=object))
    data = bytearray(write([Messages(0, batch)]))
    body = data.index(b"abcd")
    struct.pack_into("<i", data, body - 8, 7)          # the last offset past the bytes
    with pytest.raises(CaptureFormatError) as caught:
        read_all(rechecksummed(data), follow=False)
    assert "string column" in str(caught.value) and caught.value.offset is not None


def test_str_columns_that_are_not_utf8_are_refused():
    batch = Batch(w=np.array(["ab", "é"], dtype=object))
    data = bytearray(write([Messages(0, batch)]))
    body = data.index("abé".encode())
    data[body + 2] = 0xFF                              # not UTF-8
    with pytest.raises(CaptureFormatError, match="not UTF-8"):
        read_all(rechecksummed(data), follow=False)
    data[body + 2:body + 4] = "é".encode()
    struct.pack_into("<i", data, body - 12, 3)        # row 1 starts inside "é"
    with pytest.raises(CaptureFormatError, match="inside a UTF-8 character"):
        read_all(rechecksummed(data), follow=False)


def version_1_stream(words: list) -> bytes:
    """A stream as version 1 wrote a batch with a column of str: spec "|utf8",
    one part of row count, offsets and bytes."""
    encoded = [w.encode() for w in words]
    offsets = np.cumsum([0] + [len(w) for w in encoded]).tolist()
    body = struct.pack(f"<q{len(offsets)}q", len(words), *offsets) + b"".join(encoded)
    payload = bytearray(b"\x02\x00" + struct.pack("<Q", 4) + b"\x05" + struct.pack("<I", 1))
    payload += struct.pack("<H", 1) + b"w" + b"\x05|utf8" + struct.pack("<QQ", len(words),
                                                                       len(body))
    payload += bytes(-len(payload) % 16) + body + bytes(-len(body) % 16)
    end = b"\x03"
    frames = b"".join(struct.pack("<II", len(p), zlib.crc32(p)) + bytes(p) for p in (payload, end))
    return MAGIC + struct.pack("<HH", 1, 0) + frames


def test_version_1_streams_are_still_read():
    assert VERSION == 2
    words = ["", "héllo", "日本"]
    (event,) = read_all(version_1_stream(words))
    assert event.time == 4 and event.data["w"].tolist() == words
    assert isinstance(event.data.column("w"), StringColumn)
    # The version 1 str column is refused in a version 2 stream.
    data = bytearray(version_1_stream(words))
    struct.pack_into("<H", data, len(MAGIC), 2)
    with pytest.raises(CaptureFormatError, match="utf8"):
        read_all(bytes(data))


def rechecksummed(data: bytearray) -> bytes:
    """``data`` with every frame's CRC-32 recomputed (so the decoder sees the change)."""
    pos = len(MAGIC) + 4
    while pos < len(data):
        length = struct.unpack_from("<I", data, pos)[0]
        payload = bytes(data[pos + 8:pos + 8 + length])
        struct.pack_into("<I", data, pos + 4, zlib.crc32(payload))
        pos += 8 + length
    return bytes(data)


def test_large_batch_frames_are_aligned_views():
    batch = Batch({"a": np.arange(200_000, dtype=np.int64),
                   "b": np.arange(200_000, dtype=np.float64),
                   "s": np.array(["x", "y"] * 100_000, dtype=object)})
    (event,) = round_trip([Messages(5, batch)])
    strings = event.data.column("s")                # written and read as offsets and bytes
    assert not strings.decoded and strings.offsets.flags.aligned
    assert strings.offsets.base is not None and strings.data.base is not None
    assert event.data.equals(batch)
    for name in ("a", "b"):
        column = event.data[name]
        assert column.flags.aligned and column.flags.writeable
        assert column.base is not None          # a view of the frame, not a copy


# -- the tagged encoding, generated -------------------------------------------

leaves = (st.none() | st.booleans() | st.integers() | st.integers(-(2**300), 2**300)
          | st.floats(allow_nan=True, allow_infinity=True) | st.text() | st.binary())
hashables = st.recursive(leaves, lambda inner: st.tuples(inner, inner) | st.lists(
    inner, max_size=3).map(tuple), max_leaves=8)
records = st.recursive(
    leaves,
    lambda inner: (st.lists(inner, max_size=5) | st.lists(inner, max_size=5).map(tuple)
                   | st.dictionaries(hashables, inner, max_size=4)),
    max_leaves=30,
)


@given(st.lists(records, max_size=12), st.integers(0, 2**64 - 1))
def test_generated_records_round_trip_exactly(data, time):
    (event,) = round_trip([Messages(time, data)])
    assert event.time == time
    assert same(event.data, data)


@given(st.lists(st.tuples(st.tuples(st.integers(0, 2**64 - 1), st.integers(0, 2**64 - 1)),
                          st.integers(-(2**63), 2**63 - 1)), max_size=20))
def test_generated_progress_round_trips(updates):
    (event,) = round_trip([Progress(updates)])
    assert event == Progress(updates)


def test_nesting_limit():
    deep = []
    for _ in range(MAX_DEPTH + 5):
        deep = [deep]
    with pytest.raises(CaptureTypeError, match="nests deeper"):
        write([Messages(0, [deep])])
    cycle: list = []
    cycle.append(cycle)
    with pytest.raises(CaptureTypeError, match="cycle"):
        write([Messages(0, [cycle])])
    ok = []
    for _ in range(MAX_DEPTH - 2):
        ok = [ok]
    (event,) = round_trip([Messages(0, [ok])])
    assert event.data == [ok]


# -- types the format does not encode -----------------------------------------


class Custom:
    def __init__(self, x):
        self.x = x

    def __eq__(self, other):
        return type(other) is Custom and other.x == self.x


@pytest.mark.parametrize("record", [Custom(1), {1, 2}, 1 + 2j, np.int64(3), bytearray(b"x")])
def test_other_record_types_need_allow_pickle(record):
    buffer = io.BytesIO()
    writer = EventWriter(buffer)
    writer.push(Messages(0, [1]))
    before = buffer.getvalue() + bytes(writer._pending)
    with pytest.raises(CaptureTypeError, match=type(record).__name__):
        writer.push(Messages(1, [2, record]))
    assert buffer.getvalue() + bytes(writer._pending) == before   # nothing of it was written
    (event,) = round_trip([Messages(0, [record])], allow_pickle=True)
    assert event.data == [record] or (type(record) is set and event.data[0] == record)


def test_other_containers_and_times():
    with pytest.raises(CaptureTypeError, match="container of type tuple"):
        write([Messages(0, (1, 2))])
    with pytest.raises(CaptureTypeError, match="time"):
        write([Messages(-1, [1])])
    with pytest.raises(CaptureTypeError, match="time"):
        write([Messages("x", [1])])
    with pytest.raises(CaptureTypeError, match="shapes"):
        write([Progress([(0, 1), ((0, 1), 1)])])
    with pytest.raises(CaptureTypeError):
        write([("not", "an event")])
    with pytest.raises(CaptureTypeError, match="dtype"):
        write([Messages(0, np.zeros(3, dtype=[("a", "<i4")]))])
    (event,) = round_trip([Messages(0, (1, 2))], allow_pickle=True)
    assert event.data == (1, 2)


def test_pickles_are_not_loaded_by_default(tmp_path):
    """A pickle that would create a file when loaded: the default reader
    refuses it with the typed error, and the file never appears."""
    marker = tmp_path / "pwned"

    class Exploit:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    data = write([Messages(0, [1]), Messages(1, [Exploit()])], allow_pickle=True)
    assert not marker.exists()                  # pickling did not run it either
    path = tmp_path / "capture.bin"
    path.write_bytes(data)
    with open(path, "rb") as f:
        reader = EventReader(f)
        assert reader.next() == Messages(0, [1])
        with pytest.raises(CaptureFormatError, match="allow_pickle") as error:
            reader.next()
    assert error.value.offset is not None and error.value.offset > len(MAGIC)
    assert not marker.exists()
    # A pickled container is refused the same way.
    data = write([Messages(0, Exploit())], allow_pickle=True)
    with pytest.raises(CaptureFormatError, match="allow_pickle"):
        read_all(data)
    assert not marker.exists()


# -- headers -----------------------------------------------------------------


def test_wrong_magic_version_flags():
    good = write([Messages(0, [1])])
    with pytest.raises(CaptureFormatError, match="magic") as error:
        read_all(b"PK\x03\x04" + good[4:])
    assert error.value.offset == 0
    with pytest.raises(CaptureFormatError, match="magic"):
        EventReader(io.BytesIO(b"\x89TLX")).next()          # detected before 12 bytes arrive
    with pytest.raises(CaptureFormatError, match="version 3") as error:
        read_all(good[:8] + struct.pack("<H", 3) + good[10:])
    assert error.value.offset == 8
    with pytest.raises(CaptureFormatError, match="flags"):
        read_all(good[:10] + struct.pack("<H", 1) + good[12:])


def test_empty_and_short_streams():
    assert EventReader(io.BytesIO(b"")).next() is None        # following: maybe later
    with pytest.raises(CaptureFormatError, match="header"):
        EventReader(io.BytesIO(b""), follow=False).next()
    with pytest.raises(CaptureFormatError, match="header"):
        EventReader(io.BytesIO(MAGIC), follow=False).next()


def test_missing_end_frame():
    data = write([Messages(0, [1])])[:-9]                 # the end frame cut off
    reader = EventReader(io.BytesIO(data), follow=False)
    assert list(reader) == [Messages(0, [1])]
    assert reader.ended and not reader.terminated
    reader = EventReader(io.BytesIO(data))
    assert list(reader) == [Messages(0, [1])]
    assert not reader.ended


def test_frame_too_large_for_the_writer():
    writer = EventWriter(io.BytesIO(), max_frame=100)
    with pytest.raises(CaptureFormatError, match="max_frame"):
        writer.push(Messages(0, list(range(100))))
    writer.push(Messages(0, [1]))


# -- incremental reading -----------------------------------------------------


def events_sample():
    return [
        Messages(0, ["a", 1, (2, 3)]),
        Messages(0, Batch({"k": np.arange(50_000, dtype=np.int64)})),     # a large frame
        Progress([(0, -1), (1, 1)]),
        Messages(1, np.arange(10, dtype=np.float32)),
        Progress([(1, -1)]),
    ]


def test_growing_file_read_incrementally(tmp_path):
    """The file is written a few bytes at a time; the reader returns each event
    once it is complete, and the rest later."""
    data = write(events_sample())
    path = tmp_path / "growing.cap"
    path.write_bytes(b"")
    expected = events_sample()
    got = []
    with open(path, "rb") as f, open(path, "ab", buffering=0) as appender:
        reader = EventReader(f)
        step = 997
        nones = 0
        for start in range(0, len(data), step):
            appender.write(data[start:start + step])
            while True:
                event = reader.next()
                if event is None:
                    nones += 1
                    break
                got.append(event)
                # Nothing is returned before it is complete.
                assert reader.offset <= start + step
        assert reader.next() is None and reader.ended and reader.terminated
    assert len(got) == len(expected)
    assert all(same_event(a, b) for a, b in zip(expected, got))
    assert nones > 10


def test_trickling_stream_byte_by_byte():
    data = write(events_sample())

    class Trickle(io.RawIOBase):
        def __init__(self):
            self.n = 0

        def readable(self):
            return True

        def readinto(self, b):
            if self.n >= len(data):
                return 0
            b[0] = data[self.n]
            self.n += 1
            return 1

    reader = EventReader(Trickle())           # not seekable: end of input is the end
    got = list(reader)
    assert reader.terminated
    assert all(same_event(a, b) for a, b in zip(events_sample(), got, strict=True))


def test_socket_pair():
    """A writer thread sends through a socket (a large frame fills the socket
    buffer many times over); the non-blocking reader picks up whatever is
    complete each time it is asked."""
    send, receive = socket.socketpair()
    expected = events_sample()

    def writer_thread():
        writer = EventWriter(send)
        for event in expected:
            writer.push(event)
            writer.flush()
        send.shutdown(socket.SHUT_WR)                     # closed without the end frame

    try:
        reader = EventReader(receive)
        assert reader.next() is None                      # non-blocking: nothing yet
        thread = threading.Thread(target=writer_thread)
        thread.start()
        got = []
        nones = 0
        deadline = time.monotonic() + 60                  # a guard against a hang only
        while not reader.ended and time.monotonic() < deadline:
            event = reader.next()
            if event is None:
                nones += 1
                time.sleep(0.0005)
            else:
                got.append(event)
        thread.join()
        assert reader.ended and not reader.terminated
        assert all(same_event(a, b) for a, b in zip(expected, got, strict=True))
        print(f"socket pair: {nones} polls found nothing complete")
    finally:
        send.close()
        receive.close()


def test_socket_closed_inside_a_frame():
    send, receive = socket.socketpair()
    try:
        data = write([Messages(0, list(range(100)))])
        send.sendall(data[:40])
        send.close()
        reader = EventReader(receive)
        with pytest.raises(CaptureFormatError, match="ends inside a frame"):
            for _ in range(100):
                reader.next()
    finally:
        receive.close()


def test_pipe():
    r, w = os.pipe()
    os.set_blocking(r, False)
    data = write(events_sample())
    with open(r, "rb", buffering=0) as rf:
        reader = EventReader(rf)
        assert reader.next() is None
        got = []
        with open(w, "wb", buffering=0) as wf:
            for start in range(0, len(data), 4096):
                wf.write(data[start:start + 4096])
                got.extend(reader)
        got.extend(reader)
        assert reader.terminated
    assert all(same_event(a, b) for a, b in zip(events_sample(), got, strict=True))


def test_checksum_covers_the_payload():
    data = bytearray(write([Messages(0, [1, 2, 3])]))
    data[12 + 8 + 3] ^= 0x01
    with pytest.raises(CaptureFormatError, match="checksum") as error:
        read_all(bytes(data))
    assert error.value.offset == 12


def test_crafted_frames_with_valid_checksums():
    """Hostile payloads that pass the checksum: each is refused by the decoder."""
    header = MAGIC + struct.pack("<HH", 1, 0)

    def frame(payload: bytes) -> bytes:
        return struct.pack("<II", len(payload), zlib.crc32(payload)) + payload

    time0 = b"\x00" + struct.pack("<Q", 0)
    crafted = {
        "unknown frame kind": b"\x09",
        "list count": b"\x02" + time0 + b"\x01" + struct.pack("<I", 2**31),
        "str length": b"\x02" + time0 + b"\x01" + struct.pack("<I", 1) + b"s"
                      + struct.pack("<I", 2**32 - 1),
        "nest": b"\x02" + time0 + b"\x01" + struct.pack("<I", 1)
                + (b"l" + struct.pack("<I", 1)) * 200 + b"N",
        "object count": b"\x02" + time0 + b"\x04" + b"\x02|O" + b"\x01"
                        + struct.pack("<QQ", 10**6, 1) + b"\x00" * 1 + b"N",
        "dtype": b"\x02" + time0 + b"\x04" + b"\x03<V8" + b"\x01" + struct.pack("<QQ", 1, 8),
        "huge array": b"\x02" + time0 + b"\x04" + b"\x03<i8" + b"\x01"
                      + struct.pack("<QQ", 2**40, 2**43),
        "unhashable key": b"\x02" + time0 + b"\x01" + struct.pack("<I", 1) + b"d"
                          + struct.pack("<I", 1) + b"l" + struct.pack("<I", 0) + b"N",
        "bad utf-8": b"\x02" + time0 + b"\x01" + struct.pack("<I", 1) + b"s"
                     + struct.pack("<I", 1) + b"\xff",
        "end with a body": b"\x03\x00",
        "progress length": b"\x01\x00" + struct.pack("<I", 10**9),
        "pickle": b"\x02" + time0 + b"\x01" + struct.pack("<I", 1) + b"p" + struct.pack("<I", 1)
                  + b".",
        "trailing bytes": b"\x02" + time0 + b"\x01" + struct.pack("<I", 0) + b"N",
        "batch rows": b"\x02" + time0 + b"\x05" + struct.pack("<I", 2)
                      + struct.pack("<H", 1) + b"a" + b"\x03|i1" + struct.pack("<QQ", 1, 1)
                      + struct.pack("<H", 1) + b"b" + b"\x03|i1" + struct.pack("<QQ", 2, 2),
    }
    for name, payload in crafted.items():
        with pytest.raises(CaptureFormatError) as error:
            read_all(header + frame(payload))
        assert error.value.offset is not None, name
    # An absurd frame length is refused at once, before anything is allocated.
    absurd = header + struct.pack("<II", 2**32 - 1, 0)
    with pytest.raises(CaptureFormatError, match="frame length"):
        EventReader(io.BytesIO(absurd)).next()


def test_exported_names():
    assert timely.CaptureFormatError is CaptureFormatError
    assert issubclass(CaptureFormatError, ValueError)
    assert issubclass(CaptureTypeError, TypeError)
    assert isinstance(pickle.dumps(CaptureFormatError("x", 3)), bytes)


def test_fixed_width_text_that_is_not_unicode_is_not_written():
    bad = np.frombuffer(np.array([0x61, 0x110000, 0xD800, 0x62], dtype="<u4").tobytes(),
                        dtype="<U2")
    for data in (bad, Batch({"u": bad})):
        writer = EventWriter(io.BytesIO())
        with pytest.raises(CaptureTypeError, match="code point 0x110000"):
            writer.push(Messages(0, data))

