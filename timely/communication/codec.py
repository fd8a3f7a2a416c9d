"""The wire format of one batch of messages from one worker to another.

A frame carries every message a worker sends to one peer during a step, as
``[(channel identifier, message), ...]``. Columnar data is never pickled: a
message ``(time, Batch)`` or ``(time, ndarray)`` travels as its column
descriptors (dtype, length) in the frame header and each column's bytes as
a raw segment; a column of Python str travels as its row count, byte offsets
and UTF-8 bytes (a batch with any other object column is pickled whole). Everything else (channel identifiers, times, lists of Python
records, progress batches) is pickled with protocol 5, its out-of-band
buffers (numpy arrays inside records, for instance) again as raw segments.
Pickle crosses only between the computation's own workers.

Layout, little-endian::

    magic b"TLYF" | version u16 | reserved u16 | header length u64
    segment count u32 | pickle length u32
    per segment: byte length u64 | kind u8 (0 column, 1 pickle buffer, 2 str column)
                 | dtype length u8 | dtype (numpy ``dtype.str``, ASCII)
    pickled envelope
    then each segment's bytes, each padded to a multiple of 8

The envelope lists ``(identifier, message)`` for pickled messages and
``(identifier, time, names, first segment)`` for columnar ones (``names``
is None for a bare array). A receiver either decodes a frame held in one
buffer (columns become views of it, no copy), or allocates each segment's
final array from the header and has the ring copy the bytes straight into
it (:meth:`timely.communication._ring.RingReader.recv_frame`).
"""

from __future__ import annotations

import pickle
import struct

import numpy as np

from timely.dataflow._columnar import decode_strings, encode_strings
from timely.dataflow.batch import Batch
from timely.errors import FrameError

MAGIC = b"TLYF"
VERSION = 1
_PREFIX = struct.Struct("<4sHHQII")        # magic, version, reserved, header length, segments, pickle
PREFIX_BYTES = _PREFIX.size                  # 24
_SEGMENT = struct.Struct("<QBB")
COLUMN, BUFFER, STRINGS = 0, 1, 2
_PAD = bytes(8)
# Frames smaller than this are joined into one buffer before sending.
SMALL_FRAME = 1 << 16


def _raw(column: np.ndarray) -> bool:
    # A structured dtype's ``str`` ("|V12") would lose its fields: pickle it.
    dtype = column.dtype
    return dtype.kind in "biufcmMSV" and not dtype.hasobject and dtype.names is None


def _columns(arrays):
    """``[(buffer, kind)]`` for columns that go raw (numbers as they are, str
    columns as offsets and UTF-8 bytes), or None when one must be pickled."""
    out = []
    for column in arrays:
        if _raw(column):
            out.append((np.ascontiguousarray(column), COLUMN))
        elif column.dtype.kind == "O":
            encoded = encode_strings(column)
            if encoded is None:
                return None
            out.append((encoded, STRINGS))
        else:
            return None
    return out


def encode(messages) -> list:
    """The frame for ``[(identifier, message), ...]`` as a list of buffers
    to send back to back (the header first). Column bytes are not copied."""
    envelope = []
    segments: list = []       # (buffer, kind, dtype str)
    for entry in messages:
        message = entry[1]
        if type(message) is tuple and len(message) == 2:
            data = message[1]
            if type(data) is Batch and data._columns:
                raw = _columns(data._columns.values())
                if raw is not None:
                    envelope.append((entry[0], message[0], tuple(data._columns), len(segments)))
                    segments.extend(raw)
                    continue
            elif type(data) is np.ndarray and data.ndim == 1:
                raw = _columns([data])
                if raw is not None:
                    envelope.append((entry[0], message[0], None, len(segments)))
                    segments.extend(raw)
                    continue
        envelope.append(entry)

    def out_of_band(buffer):
        segments.append((buffer.raw(), BUFFER))

    pickled = pickle.dumps(envelope, protocol=5, buffer_callback=out_of_band)
    table = []
    for buffer, kind in segments:
        dtype = buffer.dtype.str.encode("ascii") if kind == COLUMN else b""
        table.append(_SEGMENT.pack(buffer.nbytes, kind, len(dtype)))
        table.append(dtype)
    header_len = PREFIX_BYTES + sum(len(t) for t in table) + len(pickled)
    prefix = _PREFIX.pack(MAGIC, VERSION, 0, header_len, len(segments), len(pickled))
    head = [prefix, *table, pickled, _PAD[:-header_len % 8]]
    body = []
    total = header_len + (-header_len % 8)
    for buffer, kind in segments:
        # Bytes of a column, not the array: datetimes export no buffer.
        view = memoryview(buffer.view(np.uint8) if kind == COLUMN else buffer).cast("B")
        pad = -view.nbytes % 8
        if view.nbytes:
            body.append(view)
        if pad:
            body.append(_PAD[:pad])
        total += view.nbytes + pad
    if total <= SMALL_FRAME:
        return [b"".join(head + body)]
    return [b"".join(head), *body]


def frame_length(prefix) -> int:
    """The header length announced by the first ``PREFIX_BYTES`` of a frame."""
    magic, version, _, header_len, count, pickle_len = _PREFIX.unpack_from(prefix)
    if magic != MAGIC:
        raise FrameError(f"a frame starts with {MAGIC!r}, not {bytes(magic)!r}")
    if version != VERSION:
        raise FrameError(f"frame version {version} is not {VERSION}")
    if header_len < PREFIX_BYTES + pickle_len:
        raise FrameError(f"frame header length {header_len} is too small")
    return header_len


class Header:
    """A parsed frame header: the segments to expect and the envelope."""

    __slots__ = ("sizes", "kinds", "dtypes", "pickled", "length")

    def __init__(self, header):
        header = memoryview(header)
        header_len = frame_length(header)
        if header.nbytes < header_len:
            raise FrameError(f"a frame of {header.nbytes} bytes is shorter than its "
                             f"{header_len}-byte header")
        _, _, _, _, count, pickle_len = _PREFIX.unpack_from(header)
        position = PREFIX_BYTES
        sizes, kinds, dtypes = [], [], []
        try:
            for _ in range(count):
                nbytes, kind, dtlen = _SEGMENT.unpack_from(header, position)
                position += _SEGMENT.size
                dtype = None
                if kind == COLUMN:
                    dtype = np.dtype(bytes(header[position:position + dtlen]).decode("ascii"))
                    if dtype.hasobject or nbytes % max(dtype.itemsize, 1):
                        raise FrameError(f"column segment of {nbytes} bytes and dtype {dtype}")
                elif kind not in (BUFFER, STRINGS):
                    raise FrameError(f"unknown segment kind {kind}")
                position += dtlen
                sizes.append(nbytes)
                kinds.append(kind)
                dtypes.append(dtype)
        except (struct.error, TypeError, UnicodeDecodeError) as error:
            raise FrameError(f"corrupt frame header: {error}") from None
        if position + pickle_len != header_len:
            raise FrameError("frame header lengths do not add up")
        self.sizes = sizes
        self.kinds = kinds
        self.dtypes = dtypes
        self.pickled = header[position:header_len]
        self.length = header_len

    def destinations(self) -> list:
        """A fresh writable byte buffer for every segment; a column's is the
        bytes (uint8 view) of an array of its final dtype, which
        :meth:`messages` views again at that dtype."""
        out = []
        for nbytes, kind, dtype in zip(self.sizes, self.kinds, self.dtypes):
            if kind == COLUMN:
                out.append(np.empty(nbytes // dtype.itemsize, dtype=dtype).view(np.uint8))
            else:
                out.append(bytearray(nbytes))
        return out

    def messages(self, segments) -> list:
        """``[(identifier, message), ...]`` given every segment's contents."""
        buffers = [s for s, k in zip(segments, self.kinds) if k == BUFFER]
        envelope = pickle.loads(self.pickled, buffers=buffers)
        columns = []
        for segment, kind, dtype in zip(segments, self.kinds, self.dtypes):
            if kind == COLUMN:
                columns.append(segment if segment.dtype == dtype else segment.view(dtype))
            elif kind == STRINGS:
                try:
                    columns.append(decode_strings(segment))
                except (ValueError, UnicodeDecodeError) as error:
                    raise FrameError(f"corrupt string column: {error}") from None
        # Column segments are numbered among all segments; map them.
        index = [i for i, k in enumerate(self.kinds) if k != BUFFER]
        where = {seg: n for n, seg in enumerate(index)}
        out = []
        for entry in envelope:
            if len(entry) == 2:
                out.append(entry)
                continue
            identifier, time, names, first = entry
            if names is None:
                out.append((identifier, (time, columns[where[first]])))
                continue
            start = where[first]
            cols = {name: columns[start + k] for k, name in enumerate(names)}
            length = cols[names[0]].shape[0]
            out.append((identifier, (time, Batch._trusted(cols, length))))
        return out


def decode(frame) -> list:
    """The messages of a frame held whole in ``frame`` (columns are views of it)."""
    frame = memoryview(frame).cast("B")
    if frame.nbytes < PREFIX_BYTES:
        raise FrameError(f"a frame of {frame.nbytes} bytes is shorter than its prefix")
    header = Header(frame[:frame_length(frame)])
    position = header.length + (-header.length % 8)
    segments = []
    for nbytes, kind, dtype in zip(header.sizes, header.kinds, header.dtypes):
        if position + nbytes > frame.nbytes:
            raise FrameError("frame shorter than its segments")
        chunk = frame[position:position + nbytes]
        segments.append(np.frombuffer(chunk, dtype=dtype) if kind == COLUMN else chunk)
        position += nbytes + (-nbytes % 8)
    return header.messages(segments)
