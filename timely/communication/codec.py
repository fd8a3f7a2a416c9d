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
as a writable buffer. The rest (channel identifiers, times, other messages)
goes in the frame's *envelope*, which lists one entry per message with its
data standing in as segment numbers:

- ``(0, identifier, message)``: the message itself;
- ``(1, identifier, k)``: a bytes message, raw segment ``k``;
- ``(2, identifier, time, count, k)``: ``count`` tagged records, raw segment ``k``;
- ``(3, identifier, time, names, layout)``: columnar data: ``layout`` has,
  for each name, the number of a column in the header or the pickled
  object column itself (``names`` is None for a bare array, ``layout`` then
  its column's number).

The envelope is written in the tagged encoding when everything in it is of
the common shapes (times that are ints, no object column: what every
progress frame and most data frames hold), which costs a fraction of
pickle's fixed price; else it is pickled with protocol 5, its out-of-band
buffers (numpy arrays inside records, Arrow buffers) again as raw segments.
Pickle crosses only between the computation's own workers: the frame is
trusted, so a string column's UTF-8 is not checked (its offsets are: the
kernels rely on them).

Layout (version 3), little-endian::

    magic b"TLYF" | version u16 | flags u16 | header length u64
    column count u32 | buffer count u32 | envelope length u32 | raw count u32
    per column: its head (serializer: spec, rows, part sizes)
    per buffer: byte length u64 (the raw segments first, then the pickle's)
    envelope (flags bit 0: tagged; else pickled)
    then every column's parts, then every buffer, each padded to a
    multiple of 8

A receiver either decodes a frame held in one buffer (columns become views
of it, no copy), or allocates each segment's final array from the header
and has the ring copy the bytes straight into it (``RingReader.recv_frame``).
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

# The prefix's fields, as ``struct`` reads them: magic, version, flags,
# header length, columns, buffers, envelope length, raw buffers.
PREFIX = struct.Struct("<4sHHQIIII")

__all__ = ["MAGIC", "PREFIX", "PREFIX_BYTES", "SMALL_FRAME", "VERSION", "FrameError", "Header",
           "decode", "encode", "frame_length"]
