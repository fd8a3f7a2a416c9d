"""The one serializer of columns: a column as typed buffers, and back.

The wire frame between workers (:mod:`timely.communication.codec`: trusted,
zero-copy) and the capture file (:mod:`timely.capture.format`: untrusted,
versioned, checksummed) both write a column this way; each keeps its own
framing (where the head goes, how parts are aligned, checksums, versions).

A column is a *spec* (ASCII), a row count and the *parts* the spec names,
each a buffer written as it is in memory:

- a numpy array of kind ``b i u f c m M S U``: spec numpy's ``dtype.str``
  (``"<i8"``, ``"|b1"``, ``"<M8[ns]"``, ``"|S16"``, ``">U8"``); one part,
  the C-order bytes, rows x itemsize;
- a :class:`~timely.container.StringColumn`: spec ``"|string"`` (int32
  offsets) or ``"|large_string"`` (int64 offsets); two parts, the rows + 1
  offsets (the first 0) and the UTF-8 bytes they index. An object array
  whose rows are all str (that have UTF-8) is written as one, encoded in C;
- any other column (Python objects, or an
  :class:`~timely.container.ArrowColumn`: nulls and nested Arrow types):
  spec ``"|O"``, one part, which the framing writes (the wire pickles an
  ArrowColumn as one Arrow array, its buffers out of band).

The *head* of a column is ``spec length u8, spec, rows u64`` and then the
byte size (u64, little-endian) of each part. Numbers inside parts are in the
byte order the spec says (``<``, ``>``; string offsets are little-endian).
Object columns are not the serializer's to encode: the wire pickles them,
the capture file writes tagged records; they only share the head. A column
with nulls would be a new spec with one more part (the validity bitmap,
first, as in Arrow); readers refuse specs they do not know.

Reading checks everything it is given before touching memory: the head's
lengths against the bytes left, each part's size against the row count and
the spec, and a string column's offsets (non-decreasing, from 0 to the
bytes' length) and, for untrusted input, its UTF-8. A column read back is a
view of the buffers it was read from (no copy).

>>> import numpy as np
>>> from timely.container import StringColumn
>>> kind, rows, parts = column_parts(StringColumn.from_strings(["ab", "c"]))
>>> kind.spec, rows, [bytes(p) for p in parts]
(b'|string', 2, [b'\\x00\\x00\\x00\\x00\\x02\\x00\\x00\\x00\\x03\\x00\\x00\\x00', b'abc'])
>>> head = bytearray()
>>> write_head(kind, rows, [len(p) for p in parts], head)
>>> kind2, rows2, sizes, end = read_head(memoryview(head), 0, len(head))
>>> kind2.build(rows2, parts).tolist(), end == len(head)
(['ab', 'c'], True)
"""

from __future__ import annotations

from timely.container._serialize import (
    OBJECT,
    ColumnType,
    check_code_points,
    column_parts,
    column_type,
    dtype_type,
    read_head,
    spec_type,
    write_head,
)

__all__ = [
    "OBJECT",
    "ColumnType",
    "check_code_points",
    "column_parts",
    "column_type",
    "dtype_type",
    "read_head",
    "spec_type",
    "write_head",
]
