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

import re
import struct

import numpy as np

from timely.container._columns import StringColumn, strings_or_none
from timely.container.batch import ArrowColumn

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

RAW_KINDS = frozenset("biufcmMSU")
_DTYPE_SPEC = re.compile(rb"[<>|][biufcmMSU][0-9]{1,6}(\[[0-9]{0,6}[A-Za-z]{1,2}\])?")
_U64 = struct.Struct("<Q")


class ColumnType:
    """What a spec stands for: how many parts a column has, what each part's
    size must be for a row count, and how the column is rebuilt from them."""

    __slots__ = ("spec", "kind", "dtype", "parts", "head", "sizes")

    RAW = "raw"
    STRING = "string"
    OBJECT = "object"
    LEGACY_UTF8 = "legacy utf8"       # capture format version 1: count, offsets, bytes in one part

    def __init__(self, spec: bytes, kind: str, dtype: np.dtype | None, parts: int):
        self.spec = spec
        self.kind = kind
        # a raw column's dtype, a string column's offsets'; None only for the
        # legacy str layout, whose code reads no dtype
        self.dtype: np.dtype = dtype  # type: ignore[assignment]
        self.parts = parts
        self.head = struct.Struct(f"<B{len(spec)}s{1 + parts}Q")
        self.sizes = struct.Struct(f"<{1 + parts}Q")      # rows, then each part's size

    def __repr__(self) -> str:
        return f"ColumnType({self.spec.decode('ascii')!r})"

    def check_sizes(self, rows: int, sizes) -> str | None:
        """Why ``sizes`` cannot be the parts of a column of ``rows`` rows, or None.

        ``rows`` and ``sizes`` are u64 read from untrusted bytes: these checks
        are done on Python ints, which do not wrap (in C, ``(rows + 1) * 8``
        wraps to a small number for rows near 2**61 and would pass). The
        caller then checks each size against the bytes left before reading."""
        if len(sizes) != self.parts:
            return f"{len(sizes)} parts, not {self.parts}"
        if self.kind == ColumnType.RAW and rows * self.dtype.itemsize != sizes[0]:
            return f"{rows} rows of {self.spec.decode('ascii')} are not {sizes[0]} bytes"
        if self.kind == ColumnType.STRING and (rows + 1) * self.dtype.itemsize != sizes[0]:
            return f"{rows} rows need {rows + 1} string offsets, not {sizes[0]} bytes of them"
        if self.kind == ColumnType.LEGACY_UTF8 and 8 * (rows + 2) > sizes[0]:
            return f"a str column of {sizes[0]} bytes cannot hold {rows} rows"
        return None

    def destinations(self, rows: int, sizes) -> list:
        """A fresh writable uint8 array for each part, viewing an array of the
        part's final dtype (so :meth:`build` makes aligned columns of them)."""
        if self.kind == ColumnType.RAW:
            return [np.empty(rows, dtype=self.dtype).view(np.uint8)]
        if self.kind == ColumnType.STRING:
            return [np.empty(rows + 1, dtype=self.dtype).view(np.uint8),
                    np.empty(sizes[1], dtype=np.uint8)]
        return [np.empty(size, dtype=np.uint8) for size in sizes]

    def build(self, rows: int, parts, check_utf8: bool = False):
        """The column of ``rows`` rows whose parts are the buffers ``parts``
        (views of them, no copy); their sizes passed :meth:`check_sizes`.
        ValueError when a string column's offsets do not fit its bytes, or
        (with ``check_utf8``, for untrusted input) a row is not UTF-8 or a
        fixed-width text column holds a code point that is not a Unicode
        scalar value (see :func:`check_code_points`)."""
        if self.kind == ColumnType.RAW:
            column = np.frombuffer(parts[0], dtype=self.dtype)
            if check_utf8 and self.dtype.kind == "U":
                check_code_points(column)
            return column
        if self.kind == ColumnType.STRING:
            offsets = np.frombuffer(parts[0], dtype=self.dtype)
            data = np.frombuffer(parts[1], dtype=np.uint8)
            return _strings(offsets, data, check_utf8)
        if self.kind == ColumnType.LEGACY_UTF8:
            body = np.frombuffer(parts[0], dtype=np.uint8)
            # an ndarray has the buffer protocol; numpy's stubs do not say so
            (count,) = _U64.unpack_from(body, 0)  # type: ignore[arg-type]
            if count != rows:
                raise ValueError(f"a str column of {count} rows where {rows} were announced")
            offsets = body[8:8 * (rows + 2)].view("<i8")
            return _strings(offsets, body[8 * (rows + 2):], check_utf8)
        raise ValueError("an object column's parts are the framing's to decode")


def check_code_points(array: np.ndarray) -> None:
    """Raises ValueError unless every code point of ``array`` (of numpy's
    fixed-width text kind ``U``, either byte order) is a Unicode scalar value:
    at most U+10FFFF and not a surrogate. numpy accepts any buffer as text and
    fails only when a row is read (a SystemError above U+10FFFF), so a reader
    of untrusted bytes checks first. O(bytes), vectorized, two temporaries of
    one byte per code point.

    >>> check_code_points(np.array(["ok", "ключ"]))
    >>> bad = np.frombuffer(np.array([0x110000], dtype="<u4").tobytes(), dtype="<U1")
    >>> check_code_points(bad)
    Traceback (most recent call last):
    ...
    ValueError: code point 0x110000 of row 0 is not a Unicode scalar value
    """
    if array.dtype.kind != "U" or array.size == 0:
        return
    units = np.ascontiguousarray(array).reshape(-1).view(array.dtype.byteorder + "u4")
    bad = (units > 0x10FFFF) | ((units >= 0xD800) & (units <= 0xDFFF))
    if bad.any():
        at = int(np.argmax(bad))
        raise ValueError(f"code point 0x{int(units[at]):X} of row "
                         f"{at // (array.dtype.itemsize // 4)} is not a Unicode scalar value")


def _strings(offsets: np.ndarray, data: np.ndarray, check_utf8: bool) -> StringColumn:
    if offsets[0] != 0 or offsets[-1] != data.shape[0]:
        raise ValueError(f"string offsets run from {offsets[0]} to {offsets[-1]}, not from 0 "
                         f"to the {data.shape[0]} bytes")
    return StringColumn(offsets, data, check_utf8=check_utf8)


OBJECT = ColumnType(b"|O", ColumnType.OBJECT, None, 1)
_STRING = ColumnType(b"|string", ColumnType.STRING, np.dtype("<i4"), 2)
_LARGE_STRING = ColumnType(b"|large_string", ColumnType.STRING, np.dtype("<i8"), 2)
_LEGACY = ColumnType(b"|utf8", ColumnType.LEGACY_UTF8, None, 1)
_KNOWN = {t.spec: t for t in (OBJECT, _STRING, _LARGE_STRING)}
_BY_DTYPE: dict = {}
_CACHE_LIMIT = 256            # types kept; a hostile stream may name many dtypes


def dtype_type(dtype: np.dtype) -> ColumnType | None:
    """The type of a raw column (or array) of ``dtype``; None for object,
    structured, void and zero-width dtypes."""
    found = _BY_DTYPE.get(dtype)
    if found is not None:
        return found
    if (dtype.kind not in RAW_KINDS or dtype.fields is not None or dtype.subdtype is not None
            or dtype.itemsize == 0):
        return None
    spec = dtype.str.encode("ascii")
    found = _KNOWN.get(spec)
    if found is None:
        found = ColumnType(spec, ColumnType.RAW, dtype, 1)
        if len(_KNOWN) < _CACHE_LIMIT:
            _KNOWN[spec] = found
    if len(_BY_DTYPE) < _CACHE_LIMIT:
        _BY_DTYPE[dtype] = found
    return found


def column_type(column) -> ColumnType | None:
    """The type a column is written as; None for an object column (or one of
    a dtype the serializer does not write: structured, void, zero-width)."""
    if type(column) is StringColumn:
        return _LARGE_STRING if column.offsets.dtype.itemsize == 8 else _STRING
    if type(column) is ArrowColumn:
        return None
    return dtype_type(column.dtype)


def column_parts(column) -> tuple[ColumnType, int, list] | None:
    """``(type, rows, parts)`` of a column, each part a uint8 array to write
    as it is (the column's own memory; a sliced string column's offsets are
    moved to start at 0, a new array of rows + 1 entries; an object array of
    str is encoded first), or None when the serializer does not write this
    column (see :func:`column_type`; an object column of other values)."""
    kind = column_type(column)
    if kind is None:
        if type(column) is ArrowColumn:
            return None
        strings = strings_or_none(column) if column.dtype == object and column.ndim == 1 else None
        if strings is None:
            return None
        column = strings
        kind = column_type(column)
        if kind is None:        # a StringColumn always has one
            return None
    if kind.kind == ColumnType.STRING:
        column = column.compact()
        offsets = column.offsets
        if offsets.dtype != kind.dtype:          # a big-endian machine
            offsets = offsets.astype(kind.dtype)
        return kind, len(column), [offsets.view(np.uint8), column.data]
    raw = np.ascontiguousarray(column)
    return kind, raw.shape[0], [raw.view(np.uint8)]


def spec_type(spec: bytes, legacy: bool = False) -> ColumnType:
    """The type a spec names; ValueError for anything else. ``legacy`` also
    accepts ``"|utf8"``, the str column of capture format version 1."""
    found = _KNOWN.get(spec)
    if found is not None:
        return found
    if legacy and spec == _LEGACY.spec:
        return _LEGACY
    if not _DTYPE_SPEC.fullmatch(spec):
        raise ValueError(f"column spec {spec[:40]!r} is not one this format allows")
    try:
        dtype = np.dtype(spec.decode("ascii"))
    except (TypeError, ValueError):
        raise ValueError(f"column spec {spec!r} is not a dtype") from None
    found = dtype_type(dtype)
    if found is None or found.spec != spec:
        raise ValueError(f"column spec {spec!r} is not one this format allows")
    return found


def write_head(kind: ColumnType, rows: int, sizes, out: bytearray) -> None:
    """Appends the head of a column (spec, rows, part sizes) to ``out``."""
    out += kind.head.pack(len(kind.spec), kind.spec, rows, *sizes)


def read_head(view, pos: int, end: int, legacy: bool = False):
    """``(type, rows, part sizes, position after the head)`` of the head at
    ``pos`` in ``view`` (a memoryview of bytes), reading nothing at or past
    ``end``. ValueError when the head runs past ``end``, names an unknown
    spec, or its sizes cannot be the parts of its rows."""
    if pos >= end:
        raise ValueError("a column head runs past the end")
    n = view[pos]
    if pos + 1 + n > end:
        raise ValueError("a column spec runs past the end")
    kind = spec_type(bytes(view[pos + 1:pos + 1 + n]), legacy)
    pos += 1 + n
    if pos + kind.sizes.size > end:
        raise ValueError("a column head runs past the end")
    rows, *sizes = kind.sizes.unpack_from(view, pos)
    problem = kind.check_sizes(rows, sizes)
    if problem is not None:
        raise ValueError(f"column {kind.spec.decode('ascii')}: {problem}")
    return kind, rows, sizes, pos + kind.sizes.size
