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

import struct

from timely.communication._codec import (
    MAGIC,
    PREFIX_BYTES,
    SMALL_FRAME,
    VERSION,
    Header,
    decode,
    encode,
    frame_length,
)
from timely.errors import FrameError

# The prefix's fields, as ``struct`` reads them: magic, version, reserved,
# header length, columns, buffers, pickle length, reserved.
PREFIX = struct.Struct("<4sHHQIIII")

__all__ = ["MAGIC", "PREFIX", "PREFIX_BYTES", "SMALL_FRAME", "VERSION", "FrameError", "Header",
           "decode", "encode", "frame_length"]
