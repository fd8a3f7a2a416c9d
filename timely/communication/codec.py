"""The wire format of one batch of messages from one worker to another.

A frame carries every message a worker sends to one peer during a step, as
``[(channel identifier, message), ...]``. Columnar data is never pickled: a
message ``(time, Batch)`` or ``(time, ndarray)`` travels as the head of each
column in the frame header and each column's parts as raw segments, written
by the one column serializer (:mod:`timely.container.serialize`): numbers,
datetimes and fixed-width bytes and text as their buffers, a string column
as its offsets and UTF-8 bytes (so does an object column of str, which
arrives as a string column). A column of other Python objects is pickled in
the envelope; the batch's other columns still travel raw. A list of Python
records whose first record is of a common shape (None, bool, int, float,
str, bytes, tuple, list, dict) is written by the compiled tagged encoding
(:mod:`timely.container.records`, the capture file's), several times faster
to write than pickle and as fast to read (``benchmarks/test_records.py``),
as one raw segment; a record of another type inside it is pickled alone.
A message that is ``bytes`` (a progress batch, already laid out by
:mod:`timely.dataflow._progcaster`) travels as one raw segment and arrives
as a writable buffer. Everything else (channel identifiers, times, lists of
other records) is pickled with protocol 5, its out-of-band buffers (numpy
arrays inside records, the tagged records' segments) again as raw segments. Pickle crosses only between
the computation's own workers: the frame is trusted, so a string column's
UTF-8 is not checked (its offsets are: the kernels rely on them).

Layout (version 2), little-endian::

    magic b"TLYF" | version u16 | reserved u16 | header length u64
    column count u32 | buffer count u32 | pickle length u32 | reserved u32
    per column: its head (serializer: spec, rows, part sizes)
    per pickle buffer: byte length u64
    pickled envelope
    then every column's parts, then every pickle buffer, each padded to a
    multiple of 8

The envelope lists ``(identifier, message)`` for pickled messages,
``(identifier, time, (count, segment))`` for tagged lists of records, and
``(identifier, time, names, columns)`` for columnar ones: ``columns`` has,
for each name, the number of a column in the header or the pickled object
column itself (``names`` is None for a bare array, ``columns`` then its
column's number). A receiver either decodes a frame held in one
buffer (columns become views of it, no copy), or allocates each segment's
final array from the header and has the ring copy the bytes straight into
it (``RingReader.recv_frame``).
"""

from __future__ import annotations

import pickle
import struct

import numpy as np

from timely.container import Batch
from timely.container.records import decode_records, encode_records
from timely.container.serialize import OBJECT, column_parts, read_head, write_head
from timely.errors import FrameError

MAGIC = b"TLYF"
VERSION = 2
# magic, version, reserved, header length, columns, buffers, pickle length, reserved
_PREFIX = struct.Struct("<4sHHQIIII")
PREFIX_BYTES = _PREFIX.size                  # 32
_SIZE = struct.Struct("<Q")
_PAD = bytes(8)
# Frames smaller than this are joined into one buffer before sending.
SMALL_FRAME = 1 << 16
# Lists whose first record is of these types are written tagged.
_TAGGED = frozenset((str, int, tuple, bytes, float, type(None), bool, list, dict))


def encode(messages) -> list:
    """The frame for ``[(identifier, message), ...]`` as a list of buffers
    to send back to back (the header first). Column bytes are not copied."""
    envelope: list[tuple] = []     # entries, or compact stand-ins for their data
    columns: list = []        # (type, rows, parts)
    for entry in messages:
        message = entry[1]
        if type(message) is tuple and len(message) == 2:
            data = message[1]
            if type(data) is Batch and data.columns:
                layout = []
                for column in data.columns.values():
                    written = column_parts(column)
                    if written is None:
                        layout.append(column)          # pickled: Python objects
                    else:
                        layout.append(len(columns))
                        columns.append(written)
                envelope.append((entry[0], message[0], data.names, tuple(layout)))
                continue
            if type(data) is list and data and type(data[0]) in _TAGGED:
                tagged = bytearray()
                encode_records(data, tagged, True)
                envelope.append((entry[0], message[0], (len(data), pickle.PickleBuffer(tagged))))
                continue
            if type(data) is np.ndarray and data.ndim == 1:
                written = column_parts(data)
                if written is not None:
                    envelope.append((entry[0], message[0], None, len(columns)))
                    columns.append(written)
                    continue
        elif type(message) is bytes:
            # A raw message (a progress batch): one out-of-band segment.
            envelope.append((entry[0], pickle.PickleBuffer(message)))
            continue
        envelope.append(entry)

    buffers: list = []
    pickled = pickle.dumps(envelope, protocol=5,
                           buffer_callback=lambda b: buffers.append(b.raw()))
    head = bytearray(PREFIX_BYTES)
    segments = []
    for kind, rows, parts in columns:
        write_head(kind, rows, [p.nbytes for p in parts], head)
        segments.extend(parts)
    for buffer in buffers:
        head += _SIZE.pack(buffer.nbytes)
        segments.append(buffer)
    head += pickled
    header_len = len(head)
    _PREFIX.pack_into(head, 0, MAGIC, VERSION, 0, header_len, len(columns), len(buffers),
                      len(pickled), 0)
    head += _PAD[:-header_len % 8]
    body: list[memoryview | bytes] = []
    total = len(head)
    for segment in segments:
        view = memoryview(segment)          # uint8 arrays and raw pickle buffers: bytes
        pad = -view.nbytes % 8
        if view.nbytes:
            body.append(view)
        if pad:
            body.append(_PAD[:pad])
        total += view.nbytes + pad
    if total <= SMALL_FRAME:
        return [b"".join([head, *body])]
    return [bytes(head), *body]


def frame_length(prefix) -> int:
    """The header length announced by the first ``PREFIX_BYTES`` of a frame."""
    magic, version, _, header_len, _, _, pickle_len, _ = _PREFIX.unpack_from(prefix)
    if magic != MAGIC:
        raise FrameError(f"a frame starts with {MAGIC!r}, not {bytes(magic)!r}")
    if version != VERSION:
        raise FrameError(f"frame version {version} is not {VERSION}")
    if header_len < PREFIX_BYTES + pickle_len:
        raise FrameError(f"frame header length {header_len} is too small")
    return header_len


class Header:
    """A parsed frame header: the segments to expect and the envelope.

    ``columns`` lists ``(type, rows, part sizes)`` of each column,
    ``buffers`` the sizes of the pickle's out-of-band buffers, ``sizes``
    every segment's size in the order they follow the header."""

    __slots__ = ("columns", "buffers", "sizes", "pickled", "length")

    def __init__(self, header):
        header = memoryview(header).cast("B")
        header_len = frame_length(header)
        if header.nbytes < header_len:
            raise FrameError(f"a frame of {header.nbytes} bytes is shorter than its "
                             f"{header_len}-byte header")
        _, _, _, _, ncolumns, nbuffers, pickle_len, _ = _PREFIX.unpack_from(header)
        end = header_len - pickle_len
        position = PREFIX_BYTES
        columns = []
        sizes: list = []
        try:
            for _ in range(ncolumns):
                kind, rows, parts, position = read_head(header, position, end)
                if kind is OBJECT:
                    raise ValueError("a column of objects (they travel pickled)")
                columns.append((kind, rows, parts))
                sizes.extend(parts)
        except ValueError as error:
            raise FrameError(f"corrupt frame header: {error}") from None
        if position + 8 * nbuffers != end:
            raise FrameError("frame header lengths do not add up")
        buffers = [_SIZE.unpack_from(header, position + 8 * k)[0] for k in range(nbuffers)]
        self.columns = columns
        self.buffers = buffers
        self.sizes = sizes + buffers
        self.pickled = header[end:header_len]
        self.length = header_len

    def destinations(self) -> list:
        """A fresh writable byte buffer for every segment; a column part's is
        the bytes (uint8 view) of an array of its final dtype, which
        :meth:`messages` views again at that dtype."""
        out = []
        for kind, rows, parts in self.columns:
            out.extend(kind.destinations(rows, parts))
        out.extend(bytearray(size) for size in self.buffers)
        return out

    def messages(self, segments) -> list:
        """``[(identifier, message), ...]`` given every segment's contents."""
        columns = []
        at = 0
        try:
            for kind, rows, parts in self.columns:
                columns.append(kind.build(rows, segments[at:at + len(parts)]))
                at += len(parts)
        except ValueError as error:
            raise FrameError(f"corrupt column: {error}") from None
        envelope = pickle.loads(self.pickled, buffers=segments[at:])
        out = []
        for entry in envelope:
            if len(entry) == 2:
                out.append(entry)
                continue
            if len(entry) == 3:
                count, tagged = entry[2]
                try:
                    records, end = decode_records(tagged, 0, len(tagged), count, True)
                except ValueError as error:
                    raise FrameError(f"corrupt records: {error}") from None
                if end != len(tagged):
                    raise FrameError("a list of records has bytes after its last record")
                out.append((entry[0], (entry[1], records)))
                continue
            identifier, time, names, layout = entry
            if names is None:
                out.append((identifier, (time, columns[layout])))
                continue
            cols = {name: columns[at] if type(at) is int else at
                    for name, at in zip(names, layout)}
            rows = len(next(iter(cols.values())))
            out.append((identifier, (time, Batch.from_columns(cols, rows))))
        return out


def decode(frame) -> list:
    """The messages of a frame held whole in ``frame`` (columns are views of it)."""
    frame = memoryview(frame).cast("B")
    if frame.nbytes < PREFIX_BYTES:
        raise FrameError(f"a frame of {frame.nbytes} bytes is shorter than its prefix")
    header = Header(frame[:frame_length(frame)])
    position = header.length + (-header.length % 8)
    segments = []
    for nbytes in header.sizes:
        if position + nbytes > frame.nbytes:
            raise FrameError("frame shorter than its segments")
        segments.append(frame[position:position + nbytes])
        position += nbytes + (-nbytes % 8)
    return header.messages(segments)
