"""Compiled part of :mod:`timely.communication.codec`: one frame of messages
from one worker to another, written and read with O(1) Python calls per
message and per column (never per record or row).

The layout, and what travels how, is :mod:`timely.communication.codec`'s
docstring.
"""

from cpython.bytearray cimport PyByteArray_AS_STRING, PyByteArray_FromStringAndSize
from libc.stdint cimport uint16_t, uint32_t, uint64_t
from libc.string cimport memcpy

import pickle

import numpy as np

from timely.container import Batch
from timely.container.records import decode_records, encode_records
from timely.container import serialize
from timely.container.serialize import column_parts, read_head, write_head
from timely.errors import FrameError

MAGIC = b"TLYF"
VERSION = 3
DEF PREFIX = 32
# The prefix's flags: the envelope is written tagged (else pickled).
DEF TAGGED_ENVELOPE = 1
# The kinds of envelope entries.
DEF INLINE = 0      # (kind, identifier, message): the message itself
DEF RAW = 1         # (kind, identifier, segment): a bytes message
DEF RECORDS = 2     # (kind, identifier, time, count, segment): tagged records
DEF COLUMNAR = 3    # (kind, identifier, time, names, layout): columns
PREFIX_BYTES = PREFIX
# Frames smaller than this are joined into one buffer before sending.
SMALL_FRAME = 1 << 16
cdef bytes PAD = bytes(8)
cdef object PickleBuffer = pickle.PickleBuffer
cdef object dumps = pickle.dumps
cdef object loads = pickle.loads
cdef object UnpicklingError = pickle.UnpicklingError
cdef object ndarray = np.ndarray
cdef object OBJECT = serialize.OBJECT     # the type of a column of objects
# Lists whose first record is of these types are written tagged.
cdef frozenset TAGGED = frozenset((str, int, tuple, bytes, float, type(None), bool, list, dict))


cdef inline void put_prefix(char *out, uint64_t header_len, uint16_t flags, uint32_t columns,
                            uint32_t buffers, uint32_t envelope, uint32_t raw) noexcept:
    cdef uint16_t version = VERSION
    memcpy(out, b"TLYF", 4)
    memcpy(out + 4, &version, 2)
    memcpy(out + 6, &flags, 2)
    memcpy(out + 8, &header_len, 8)
    memcpy(out + 16, &columns, 4)
    memcpy(out + 20, &buffers, 4)
    memcpy(out + 24, &envelope, 4)
    memcpy(out + 28, &raw, 4)


def encode(list messages):
    """The frame for ``[(identifier, message), ...]`` as a list of buffers
    to send back to back (the header first). Column bytes are not copied."""
    cdef list envelope = []     # entries, their data standing in as segment numbers
    cdef list columns = []      # (type, rows, parts)
    cdef list raw = []          # segments the envelope names by number
    cdef list buffers = []      # the pickle's out-of-band buffers
    cdef list segments = []
    cdef list body = []
    cdef tuple entry, message
    cdef Py_ssize_t total, nbytes, pad, header_len
    cdef bytearray head, tagged
    cdef bint simple = True     # the envelope may be written tagged
    cdef uint16_t flags = 0
    cdef uint64_t n64
    for item in messages:
        entry = <tuple>item
        identifier = entry[0]
        data = entry[1]
        if type(data) is tuple and len(<tuple>data) == 2:
            # (time, content): a Batch, a list of records or an array
            # travels raw; any other content goes inline below.
            message = <tuple>data
            time = message[0]
            content = message[1]
            if type(time) is not int:
                simple = False
            if type(content) is Batch and content.columns:
                layout = []
                for column in content.columns.values():
                    written = column_parts(column)
                    if written is None:
                        layout.append(column)          # pickled: Python objects
                        simple = False
                    else:
                        layout.append(len(columns))
                        columns.append(written)
                envelope.append((COLUMNAR, identifier, time, content.names, tuple(layout)))
                continue
            if type(content) is list and content and type((<list>content)[0]) in TAGGED:
                tagged = bytearray()
                encode_records(content, tagged, True)
                envelope.append((RECORDS, identifier, time, len(<list>content), len(raw)))
                raw.append(tagged)
                continue
            if type(content) is ndarray and content.ndim == 1:
                written = column_parts(content)
                if written is not None:
                    envelope.append((COLUMNAR, identifier, time, None, len(columns)))
                    columns.append(written)
                    continue
        elif type(data) is bytes:
            # A raw message (a progress batch): one segment.
            envelope.append((RAW, identifier, len(raw)))
            raw.append(data)
            continue
        envelope.append((INLINE, identifier, data))

    tagged = None
    if simple:
        tagged = bytearray()
        try:
            encode_records((envelope,), tagged, False)
        except TypeError:
            tagged = None            # a message of another type: pickled
    if tagged is not None:
        written_envelope = tagged
        flags = TAGGED_ENVELOPE
    else:
        written_envelope = dumps(envelope, protocol=5, buffer_callback=buffers.append)
    head = PyByteArray_FromStringAndSize(NULL, PREFIX)
    for written in columns:
        kind, rows, parts = written
        write_head(kind, rows, [memoryview(p).nbytes for p in parts], head)
        segments.extend(parts)
    for segment in raw:
        n64 = len(segment)
        head += (<char *>&n64)[:8]
        segments.append(segment)
    for buffer in buffers:
        view = (<object>buffer).raw()
        n64 = view.nbytes
        head += (<char *>&n64)[:8]
        segments.append(view)
    head += written_envelope
    header_len = len(head)
    put_prefix(PyByteArray_AS_STRING(head), header_len, flags, len(columns),
               len(raw) + len(buffers), len(written_envelope), len(raw))
    pad = (8 - (header_len & 7)) & 7
    if pad:
        head += PAD[:pad]
    total = len(head)
    for segment in segments:
        view = memoryview(segment)
        nbytes = view.nbytes
        pad = (8 - (nbytes & 7)) & 7
        if nbytes:
            body.append(view)
        if pad:
            body.append(PAD[:pad])
        total += nbytes + pad
    if total <= SMALL_FRAME:
        if not body:
            return [bytes(head)]
        return [b"".join([head, *body])]
    return [bytes(head), *body]


cpdef Py_ssize_t frame_length(prefix) except -1:
    """The header length announced by the first ``PREFIX_BYTES`` of a frame."""
    cdef const unsigned char[::1] view = memoryview(prefix).cast("B")
    cdef uint16_t version, flags
    cdef uint64_t header_len
    cdef uint32_t envelope_len
    if view.shape[0] < PREFIX:
        raise FrameError(f"a frame prefix of {view.shape[0]} bytes is shorter than {PREFIX}")
    if (view[0] != b"T"[0] or view[1] != b"L"[0] or view[2] != b"Y"[0]
            or view[3] != b"F"[0]):
        raise FrameError(f"a frame starts with {MAGIC!r}, not {bytes(view[:4])!r}")
    memcpy(&version, &view[4], 2)
    memcpy(&flags, &view[6], 2)
    memcpy(&header_len, &view[8], 8)
    memcpy(&envelope_len, &view[24], 4)
    if version != VERSION:
        raise FrameError(f"frame version {version} is not {VERSION}")
    if flags & ~TAGGED_ENVELOPE:
        raise FrameError(f"frame flags {flags:#x} name no known encoding")
    if header_len < <uint64_t>PREFIX + envelope_len or header_len > <uint64_t>(1 << 62):
        raise FrameError(f"frame header length {header_len} is out of range")
    return <Py_ssize_t>header_len


cdef class Header:
    """A parsed frame header: the segments to expect and the envelope.

    ``columns`` lists ``(type, rows, part sizes)`` of each column,
    ``buffers`` the sizes of the other segments (the raw messages', then
    the pickle's out-of-band buffers), ``sizes`` every segment's size in
    the order they follow the header, ``raw`` how many of ``buffers`` are
    raw messages' and ``tagged`` whether the envelope (``envelope``, a view
    of the header) is written tagged rather than pickled."""

    def __init__(self, header):
        cdef const unsigned char[::1] view
        cdef Py_ssize_t header_len, end, position, k
        cdef uint32_t ncolumns, nbuffers, envelope_len, nraw
        cdef uint16_t flags
        cdef uint64_t size
        header = memoryview(header).cast("B")
        view = header
        header_len = frame_length(header)
        if view.shape[0] < header_len:
            raise FrameError(f"a frame of {view.shape[0]} bytes is shorter than its "
                             f"{header_len}-byte header")
        memcpy(&flags, &view[6], 2)
        memcpy(&ncolumns, &view[16], 4)
        memcpy(&nbuffers, &view[20], 4)
        memcpy(&envelope_len, &view[24], 4)
        memcpy(&nraw, &view[28], 4)
        if nraw > nbuffers or (flags & TAGGED_ENVELOPE and nraw != nbuffers):
            raise FrameError(f"a frame of {nbuffers} buffers cannot carry {nraw} raw messages")
        end = header_len - envelope_len
        position = PREFIX
        columns = []
        sizes = []
        try:
            for _ in range(ncolumns):
                kind, rows, parts, position = read_head(header, position, end)
                if kind is OBJECT:
                    raise ValueError("a column of objects (they travel pickled)")
                columns.append((kind, rows, parts))
                sizes.extend(parts)
        except ValueError as error:
            raise FrameError(f"corrupt frame header: {error}") from None
        if nbuffers > <uint64_t>(end - position) // 8 or position + 8 * <Py_ssize_t>nbuffers != end:
            raise FrameError("frame header lengths do not add up")
        buffers = []
        for k in range(nbuffers):
            memcpy(&size, &view[position + 8 * k], 8)
            buffers.append(size)
        self.columns = columns
        self.buffers = buffers
        self.sizes = sizes + buffers
        self.raw = nraw
        self.tagged = flags & TAGGED_ENVELOPE
        self.envelope = header[end:header_len]
        self.length = header_len

    def destinations(self):
        """A fresh writable byte buffer for every segment; a column part's is
        the bytes (uint8 view) of an array of its final dtype, which
        :meth:`messages` views again at that dtype."""
        cdef list out = []
        for kind, rows, parts in self.columns:
            out.extend(kind.destinations(rows, parts))
        for size in self.buffers:
            out.append(bytearray(size))
        return out

    def messages(self, segments):
        """``[(identifier, message), ...]`` given every segment's contents."""
        cdef list columns = []
        cdef list out = []
        cdef Py_ssize_t at = 0, nparts, n
        cdef tuple entry
        try:
            for kind, rows, parts in self.columns:
                nparts = len(parts)
                columns.append(kind.build(rows, segments[at:at + nparts]))
                at += nparts
        except ValueError as error:
            raise FrameError(f"corrupt column: {error}") from None
        raw = segments[at:at + self.raw]
        if self.tagged:
            try:
                envelope, n = decode_records(self.envelope, 0, len(self.envelope), 1, False)
            except ValueError as error:
                raise FrameError(f"corrupt envelope: {error}") from None
            if n != len(self.envelope):
                raise FrameError("a frame's envelope has bytes after its end")
            envelope = envelope[0]
        else:
            try:
                envelope = loads(self.envelope, buffers=segments[at + self.raw:])
            except (UnpicklingError, EOFError, ValueError, IndexError) as error:
                raise FrameError(f"corrupt envelope: {error}") from None
        try:
            for item in envelope:
                entry = <tuple>item
                kind = entry[0]
                if kind == INLINE:
                    out.append((entry[1], entry[2]))
                elif kind == RAW:
                    out.append((entry[1], raw[entry[2]]))
                elif kind == RECORDS:
                    tagged = raw[entry[4]]
                    try:
                        records, n = decode_records(tagged, 0, len(tagged), entry[3], True)
                    except ValueError as error:
                        raise FrameError(f"corrupt records: {error}") from None
                    if n != len(tagged):
                        raise FrameError("a list of records has bytes after its last record")
                    out.append((entry[1], (entry[2], records)))
                elif kind == COLUMNAR:
                    identifier, time, names, layout = entry[1:]
                    if names is None:
                        out.append((identifier, (time, columns[layout])))
                        continue
                    cols = {name: columns[where] if type(where) is int else where
                            for name, where in zip(names, layout)}
                    rows = len(next(iter(cols.values())))
                    out.append((identifier, (time, Batch.from_columns(cols, rows))))
                else:
                    raise FrameError(f"an envelope entry of unknown kind {kind!r}")
        except (TypeError, IndexError, ValueError) as error:
            raise FrameError(f"corrupt envelope: {error!r}") from None
        return out


def decode(frame):
    """The messages of a frame held whole in ``frame`` (columns are views of it)."""
    cdef Py_ssize_t position, nbytes, total
    frame = memoryview(frame).cast("B")
    total = frame.nbytes
    if total < PREFIX:
        raise FrameError(f"a frame of {total} bytes is shorter than its prefix")
    header = Header(frame[:frame_length(frame)])
    position = header.length + ((8 - (header.length & 7)) & 7)
    segments = []
    for size in header.sizes:
        nbytes = size
        if nbytes < 0 or nbytes > total - position:
            raise FrameError("frame shorter than its segments")
        segments.append(frame[position:position + nbytes])
        position += nbytes + ((8 - (nbytes & 7)) & 7)
    return header.messages(segments)
