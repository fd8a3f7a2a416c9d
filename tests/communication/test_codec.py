"""Frames between workers: round trips, zero-copy decoding, corrupt frames,
and frames through the shared-memory ring (chunked, incremental, zero-copy)."""

from __future__ import annotations

import math
import mmap
import pickle
import struct
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.container.helpers import object_columns, raw_columns, string_columns
from timely import Batch
from timely.communication import codec
from timely.communication._ring import RingReader, RingWriter, format_ring
from timely.communication.codec import SMALL_FRAME, FrameError, Header, decode, encode
from timely.container import StringColumn
from timely.container.serialize import OBJECT, write_head

# -- equality that sees dtypes, NaNs and object columns ---------------------------


def same_array(a, b) -> bool:
    if type(a) is not np.ndarray or type(b) is not np.ndarray:
        return False
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype.hasobject:
        return same(a.tolist(), b.tolist())
    return a.tobytes() == b.tobytes()


def same(a, b) -> bool:
    """Structural equality: Batches and arrays by dtype and bytes, containers element-wise."""
    if type(a) is not type(b):
        return False
    if type(a) is Batch:
        return (
            a.names == b.names and len(a) == len(b) and all(same_array(a[n], b[n]) for n in a.names)
        )
    if type(a) is np.ndarray:
        return same_array(a, b)
    if type(a) in (list, tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if type(a) is float and math.isnan(a):
        return math.isnan(b)
    return a == b


def joined(parts) -> bytes:
    return b"".join(bytes(p) for p in parts)


def round_trip(messages):
    return decode(joined(encode(messages)))


# -- strategies -----------------------------------------------------------------------

TIMES = st.one_of(st.integers(0, 2**40), st.tuples(st.integers(0, 99), st.integers(0, 99)))
NAMES = st.text(min_size=1, max_size=6)


@st.composite
def batches(draw, max_rows=40):
    n = draw(st.integers(0, max_rows))
    names = draw(st.lists(NAMES, max_size=4, unique=True))
    kinds = st.one_of(raw_columns(n), string_columns(n))
    if draw(st.booleans()):
        kinds = st.one_of(kinds, object_columns(n))
    return Batch({name: draw(kinds) for name in names})


RECORDS = st.lists(
    st.one_of(
        st.integers(),
        st.text(max_size=8),
        st.binary(max_size=8),
        st.floats(),
        st.tuples(st.integers(), st.text(max_size=4)),
        st.none(),
    ),
    max_size=10,
)
PROGRESS = st.lists(
    st.tuples(
        st.tuples(st.booleans(), st.integers(0, 9), st.integers(0, 3), st.integers(0, 100)),
        st.integers(-5, 5),
    ),
    max_size=6,
)
MESSAGES = st.one_of(
    st.tuples(TIMES, RECORDS),  # records
    st.tuples(TIMES, batches()),  # columnar
    st.tuples(TIMES, st.integers(0, 30).flatmap(raw_columns)),  # a bare column
    PROGRESS,  # progress-like
    st.tuples(TIMES, RECORDS.map(lambda r: [np.arange(3), *r])),  # arrays inside records
)
IDENTIFIERS = st.one_of(st.integers(0, 1000), st.tuples(st.integers(0, 9), st.integers(0, 9)))
FRAMES = st.lists(st.tuples(IDENTIFIERS, MESSAGES), max_size=8)


# -- round trips -----------------------------------------------------------------------


@given(FRAMES)
def test_round_trip(messages):
    assert same(round_trip(messages), messages)


@given(FRAMES)
def test_round_trip_through_the_parts_as_sent(messages):
    parts = encode(messages)
    assert all(isinstance(memoryview(p), memoryview) for p in parts)
    assert sum(memoryview(p).nbytes for p in parts) % 8 == 0
    frame = bytearray(joined(parts))
    assert same(decode(frame), messages)
    assert same(decode(memoryview(frame)), messages)


def test_batches_of_every_shape():
    messages = [
        (1, (0, Batch())),  # no columns
        (2, (0, Batch(a=np.zeros(0, dtype=np.int32), b=np.zeros(0, dtype="S3")))),
        (3, (5, Batch(rows=np.arange(3)).select([]).take([0, 1, 2]))),  # 3 rows, no columns
        (
            4,
            (
                6,
                Batch(
                    flag=np.array([True, False, True]),
                    f=np.array([0.5, -1, 2], "f4"),
                    when=np.array(["2020-01-01", "NaT", "1969-12-31"], "M8[s]"),
                    tag=np.array([b"a", b"", b"abc\x00"], "S4"),
                ),
            ),
        ),
        (5, (7, Batch(s=np.array(["x", "y"], dtype=object), n=np.array([1, 2])))),
        (6, (8, np.array([1.5, np.nan]))),
        (7, (9, np.zeros(0, dtype="m8[ms]"))),
        (8, (1, np.arange(6).reshape(2, 3))),  # 2-D: pickled
    ]
    got = round_trip(messages)
    assert same(got, messages)
    assert len(got[2][1][1]) == 3


def test_columnar_messages_travel_as_raw_segments():
    batch = Batch(k=np.arange(10, dtype=np.int64), v=np.ones(10, dtype="f4"),
                  u=np.array(["ab"] * 10, dtype="U2"))
    header = Header(joined(encode([(3, (0, batch)), (4, (1, np.arange(5, dtype="u2")))])))
    assert [(kind.spec, rows) for kind, rows, _ in header.columns] == [
        (b"<i8", 10), (b"<f4", 10), (b"<U2", 10), (b"<u2", 5)]
    assert header.sizes == [80, 40, 80, 10]
    assert header.buffers == []


def test_a_string_column_travels_as_offsets_and_bytes():
    words = np.array(["", "héllo", "日本", "a" * 300], dtype=object)
    batch = Batch(w=words, k=np.arange(4))
    frame = joined(encode([(0, (0, batch))]))
    header = Header(frame)
    assert [kind.spec for kind, _, _ in header.columns] == [b"|string", b"<i8"]
    assert header.sizes[:2] == [5 * 4, sum(len(w.encode()) for w in words)]
    assert "héllo".encode() not in bytes(header.envelope)
    got = decode(frame)
    column = got[0][1][1].column("w")
    assert isinstance(column, StringColumn) and not column.decoded
    assert np.shares_memory(column.data, np.frombuffer(frame, dtype=np.uint8))
    assert same(got, [(0, (0, batch))])


def test_a_corrupt_string_column_is_a_frame_error():
    batch = Batch(w=np.array(["ab", "cd"], dtype=object))
    frame = bytearray(joined(encode([(0, (0, batch))])))
    header = Header(frame)
    start = header.length + (-header.length % 8)
    struct.pack_into("<i", frame, start + 4, 99)      # an offset past the bytes
    with pytest.raises(FrameError, match="string offset"):
        decode(frame)


def test_object_columns_are_pickled_and_the_others_travel_raw():
    batch = Batch(s=np.array(["a", None], dtype=object), k=np.array([1, 2]))
    frame = joined(encode([(0, (0, batch))]))
    assert [kind.spec for kind, _, _ in Header(frame).columns] == [b"<i8"]
    assert same(decode(frame), [(0, (0, batch))])


def test_a_structured_column_keeps_its_fields():
    column = np.array([(1, 2.5), (3, -1.0)], dtype=[("a", "<i4"), ("b", "<f8")])
    got = round_trip([(0, (0, Batch(s=column)))])[0][1][1]["s"]
    assert got.dtype == column.dtype
    assert got.tolist() == column.tolist()


def test_small_frames_are_one_buffer_and_large_ones_are_not_copied():
    small = Batch(k=np.arange(100, dtype=np.int64))
    parts = encode([(0, (0, small))])
    assert len(parts) == 1 and len(parts[0]) <= SMALL_FRAME

    column = np.arange(SMALL_FRAME, dtype=np.int64)  # 512 KiB
    other = (column % 7).astype(np.int8)
    parts = encode([(0, (0, Batch(k=column, o=other)))])
    assert len(parts) > 1
    bodies = [np.frombuffer(p, dtype=np.uint8) for p in parts[1:]]
    assert any(np.shares_memory(b, column) for b in bodies)  # sent from the column itself
    assert any(np.shares_memory(b, other) for b in bodies)
    assert same(decode(joined(parts)), [(0, (0, Batch(k=column, o=other)))])


def test_a_frame_just_above_the_small_size():
    for n in range(SMALL_FRAME // 8 - 40, SMALL_FRAME // 8 + 8):
        message = [(1, (0, np.arange(n, dtype=np.int64)))]
        parts = encode(message)
        total = sum(memoryview(p).nbytes for p in parts)
        assert (len(parts) == 1) == (total <= SMALL_FRAME)
        assert same(decode(joined(parts)), message)


def test_decoded_columns_are_views_of_the_frame():
    batch = Batch(k=np.arange(50, dtype=np.int64), f=np.linspace(0, 1, 50), b=np.ones(50, "?"))
    frame = bytearray(joined(encode([(9, (0, batch)), (10, (1, np.arange(7, dtype="i2")))])))
    whole = np.frombuffer(frame, dtype=np.uint8)
    got = decode(frame)
    columns = [*got[0][1][1].columns.values(), got[1][1][1]]
    for column in columns:
        assert np.shares_memory(column, whole)
        assert column.__array_interface__["data"][0] % column.dtype.alignment == 0
    got[0][1][1]["k"][3] = -1  # writes through to the frame
    assert same(decode(frame)[0][1][1]["k"][:5], np.array([0, 1, 2, -1, 4]))


def test_decoded_columns_of_bytes_are_read_only():
    frame = joined(encode([(0, (0, Batch(k=np.arange(4))))]))
    column = decode(frame)[0][1][1]["k"]
    assert not column.flags.writeable


# -- corrupt frames ---------------------------------------------------------------------


def sample_frame(segments=True) -> bytes:
    messages = [(1, [((False, 1, 0, 3), -1)]), (2, (0, ["record", 7]))]
    if segments:
        messages += [
            (3, (4, Batch(k=np.arange(9), s=np.array([b"ab"] * 9)))),
            (4, (5, [np.arange(4)])),
        ]
    return joined(encode(messages))


def frame_end(frame: bytes) -> int:
    """Where the frame's last meaningful byte ends (padding after it may be cut)."""
    header = Header(frame)
    end = header.length
    position = header.length + (-header.length % 8)
    for size in header.sizes:
        end = position + size
        position += size + (-size % 8)
    return end


def test_bad_magic():
    frame = bytearray(sample_frame())
    frame[:4] = b"NOPE"
    with pytest.raises(FrameError, match="NOPE"):
        decode(frame)


def test_wrong_version():
    frame = bytearray(sample_frame())
    struct.pack_into("<H", frame, 4, codec.VERSION + 1)
    with pytest.raises(FrameError, match="version"):
        decode(frame)


@pytest.mark.parametrize("segments", [True, False], ids=["segments", "pickle-only"])
def test_every_truncation_is_refused(segments):
    frame = sample_frame(segments)
    assert decode(frame)
    for n in range(frame_end(frame)):
        with pytest.raises(FrameError):
            decode(frame[:n])


FIELDS = ["magic", "version", "flags", "header", "columns", "buffers", "envelope", "raw"]


@pytest.mark.parametrize(
    "field,delta",
    [
        ("header", 8),
        ("header", -8),
        ("header", -1),
        ("header", 10**6),
        ("columns", 1),
        ("columns", -1),
        ("columns", 10**6),
        ("buffers", 1),
        ("buffers", -1),
        ("buffers", 10**6),
        ("envelope", 1),
        ("envelope", -1),
        ("envelope", 10**6),
        ("raw", 1),
        ("flags", 2),
    ],
)
def test_header_lengths_that_do_not_add_up(field, delta):
    frame = bytearray(sample_frame())
    values = dict(zip(FIELDS, codec.PREFIX.unpack_from(frame)))
    values[field] += delta
    codec.PREFIX.pack_into(frame, 0, *values.values())
    with pytest.raises(FrameError):
        decode(frame)


def test_corrupt_column_heads():
    frame = sample_frame()
    at = codec.PREFIX_BYTES
    assert frame[at : at + 4] == b"\x03<i8"
    rows, nbytes = struct.unpack_from("<QQ", frame, at + 4)

    def patched(rows=rows, nbytes=nbytes, spec=None):
        out = bytearray(frame)
        struct.pack_into("<QQ", out, at + 4, rows, nbytes)
        if spec is not None:
            out[at + 1 : at + 4] = spec
        return out

    with pytest.raises(FrameError, match="not 75 bytes"):
        decode(patched(nbytes=nbytes + 3))  # not the rows' bytes
    with pytest.raises(FrameError):
        decode(patched(rows=2**37, nbytes=2**40))  # more than the frame holds
    with pytest.raises(FrameError):
        decode(patched(spec=b"\xff\xfe?"))  # not a dtype at all
    with pytest.raises(FrameError):
        decode(patched(spec=b"zz9"))


def test_a_column_of_objects_is_refused():
    """Object columns are pickled, never raw: a head saying otherwise is corrupt."""
    head = bytearray(codec.PREFIX_BYTES)
    write_head(OBJECT, 1, [8], head)
    pickled = pickle.dumps([(3, 0, 0, None, 0)], protocol=5)
    head += pickled
    codec.PREFIX.pack_into(head, 0, codec.MAGIC, codec.VERSION, 0, len(head), 1, 0,
                            len(pickled), 0)
    frame = bytes(head) + bytes(-len(head) % 8) + bytes(8)
    with pytest.raises(FrameError, match="objects"):
        decode(frame)


def test_a_frame_shorter_than_its_prefix():
    with pytest.raises(FrameError, match="shorter"):
        decode(b"TLYF")
    with pytest.raises(FrameError):
        decode(b"")


# -- through the ring -------------------------------------------------------------------


def new_ring(capacity):
    memory = mmap.mmap(-1, capacity + 192)
    assert format_ring(memory) == capacity
    return memory, RingWriter(memory), RingReader(memory)


def pump(writer, reader, count, actions=()):
    """Receives ``count`` frames, following ``actions`` first (then alternating
    flush and receive). Returns the frames and how many receives came back empty."""
    got, empty = [], 0
    for action in actions:
        if action == "flush":
            writer.flush()
        else:
            frame = reader.recv_frame()
            if frame is None:
                empty += 1
            else:
                got.append(frame)
    while len(got) < count:
        frame = reader.recv_frame()
        if frame is None:
            empty += 1
            assert writer.queued_bytes or reader.used_bytes(), "a frame went missing"
            writer.flush()
        else:
            got.append(frame)
    assert reader.recv_frame() is None
    assert writer.queued_bytes == 0 and reader.used_bytes() == 0
    return got, empty


@given(
    st.lists(
        st.lists(
            st.tuples(IDENTIFIERS, st.one_of(MESSAGES, st.tuples(TIMES, batches(max_rows=3000)))),
            max_size=4,
        ),
        min_size=1,
        max_size=6,
    ),
    st.sampled_from([4096, 65536]),
    st.lists(st.sampled_from(["flush", "recv"]), max_size=30),
)
def test_frames_through_a_small_ring(frames, capacity, actions):
    _, writer, reader = new_ring(capacity)
    for messages in frames:
        writer.send_parts(encode(messages))
    got, _ = pump(writer, reader, len(frames), actions)
    assert same(got, frames)


def test_a_frame_many_times_larger_than_the_ring_arrives_incrementally():
    memory, writer, reader = new_ring(4096)
    batch = Batch(
        k=np.arange(100_000, dtype=np.int64),
        f=np.linspace(0, 1, 100_000, dtype="f4"),
        t=np.arange(100_000).astype("M8[ms]"),
        b=np.arange(100_000) % 3 == 0,
    )
    messages = [(7, (3, batch)), (8, [((False, 1, 0, 3), 100_000)])]
    parts = encode(messages)
    assert sum(memoryview(p).nbytes for p in parts) > 100 * 4096
    assert not writer.send_parts(parts)
    (got,), empty = pump(writer, reader, 1)
    assert empty > 100  # one ring's worth per round
    assert same(got, messages)
    for column in got[0][1][1].columns.values():
        assert column.flags.writeable and column.flags.c_contiguous
        assert not np.shares_memory(column, np.frombuffer(memory, np.uint8))


def test_a_frame_in_one_record_is_copied_out_whole():
    """A small frame (one ring record) is copied once into a buffer of its
    own: its columns and raw messages are writable, aligned views of it,
    not of the ring."""
    memory, writer, reader = new_ring(65536)
    batch = Batch(k=np.arange(5, dtype=np.int64), f=np.ones(5, dtype="f4"))
    messages = [(("progress", 0), bytes(range(40))), (3, (7, batch))]
    writer.send_parts(encode(messages))
    (got,), empty = pump(writer, reader, 1)
    assert empty == 0
    assert bytes(got[0][1]) == bytes(range(40)) and not memoryview(got[0][1]).readonly
    assert same(got[1:], messages[1:])
    for column in got[1][1][1].columns.values():
        assert column.flags.writeable and column.flags.aligned
        assert not np.shares_memory(column, np.frombuffer(memory, np.uint8))


def test_many_frames_in_a_row():
    _, writer, reader = new_ring(65536)
    frames = [
        [(i, (i, Batch(k=np.arange(i * 37, dtype=np.int64)))), (i + 1, (i, [i, "x"]))]
        for i in range(300)
    ]
    for messages in frames:
        writer.send_parts(encode(messages))
    got, _ = pump(writer, reader, len(frames))
    assert same(got, frames)


def test_frames_and_the_writer_interleave():
    _, writer, reader = new_ring(4096)
    sent, got = [], []
    for i in range(60):
        messages = [(i, (i, np.arange(i * 50, dtype=np.int32)))]
        writer.send_parts(encode(messages))
        sent.append(messages)
        frame = reader.recv_frame()
        if frame is not None:
            got.append(frame)
    more, _ = pump(writer, reader, len(sent) - len(got))
    assert same(got + more, sent)


def test_recv_view_lends_the_record_until_release():
    memory, writer, reader = new_ring(4096)
    messages = [bytes([i]) * 1000 for i in range(5)]
    sent = 0
    while writer.send(messages[sent]):
        sent += 1
    assert sent == 4 and writer.queued_bytes == 1000  # the ring is full
    view = reader.recv_view()
    assert isinstance(view, memoryview) and view.readonly
    assert view == messages[0]
    with pytest.raises(TypeError):
        view[0] = 1
    assert np.shares_memory(np.frombuffer(view, np.uint8), np.frombuffer(memory, np.uint8))
    used = reader.used_bytes()
    assert not writer.flush()  # the lent record still holds its space
    assert writer.queued_bytes == 1000
    reader.release()
    assert reader.used_bytes() < used
    assert writer.flush() and writer.queued_bytes == 0
    for expected in messages[1:]:
        view = reader.recv_view()  # each call gives back the last
        assert bytes(view) == expected
    reader.release()
    reader.release()  # twice is harmless
    assert reader.used_bytes() == 0
    assert reader.recv_view() is None


def test_recv_view_of_a_chunked_message_is_its_bytes():
    _, writer, reader = new_ring(4096)
    message = bytes(range(256)) * 40  # 10 KiB: several chunks
    small = b"after"
    writer.send(message)
    writer.send(small)
    got = None
    while got is None:
        got = reader.recv_view()
        writer.flush()
    assert type(got) is bytes and got == message
    view = None
    while view is None:
        writer.flush()
        view = reader.recv_view()
    assert view == small
    reader.release()


def test_recv_view_of_an_empty_message():
    _, writer, reader = new_ring(4096)
    writer.send(b"")
    view = reader.recv_view()
    assert view is not None and len(view) == 0
    reader.release()
    assert reader.used_bytes() == 0


def test_the_envelope_is_tagged_when_everything_in_it_is_of_the_common_shapes():
    """A progress frame, a columnar frame with int times and a credit need no
    pickle; a time of another type or an object column makes the envelope
    pickled, and both come back the same."""
    progress = bytes(range(48))
    batch = Batch(k=np.arange(4), v=np.ones(4))
    common = [(("progress", 0), progress), (3, (7, batch)), (("credit",), 2)]
    assert Header(joined(encode(common))).tagged
    got = decode(joined(encode(common)))
    assert bytes(got[0][1]) == progress and got[2] == (("credit",), 2)
    assert same(got[1:2], common[1:2])
    objects = Batch(s=np.array([Fraction(1, 2), None], dtype=object))
    for odd in ([(3, (Fraction(1, 2), batch))], [(3, (0, objects))], [(3, Fraction(1, 3))]):
        frame = joined(encode(common + odd))
        assert not Header(frame).tagged
        back = decode(frame)
        assert bytes(back[0][1]) == progress and len(back) == 4


def test_a_corrupt_tagged_envelope_is_a_frame_error():
    """Every flipped byte of the envelope is refused as a FrameError or
    decodes to messages of the frame's shape: never another exception."""
    frame = bytearray(joined(encode([(("progress", 0), bytes(16)), (("credit",), 2)])))
    header = Header(frame)
    assert header.tagged
    start = header.length - len(header.envelope)
    refused = 0
    for at in range(start, header.length):
        corrupt = bytearray(frame)
        corrupt[at] ^= 0xFF
        try:
            got = decode(corrupt)
        except FrameError:
            refused += 1
        else:
            assert all(type(entry) is tuple and len(entry) == 2 for entry in got)
    assert refused > 0
