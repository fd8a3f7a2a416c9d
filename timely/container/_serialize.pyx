"""Compiled part of :mod:`timely.container.serialize`: the column types,
and a column's parts and head written and read with a fixed cost per
column (the layout is that module's docstring)."""

cimport numpy as cnp
from cpython.bytearray cimport PyByteArray_AS_STRING, PyByteArray_GET_SIZE, PyByteArray_Resize
from cpython.bytes cimport PyBytes_FromStringAndSize
from libc.stdint cimport uint8_t, uint64_t
from libc.string cimport memcpy

import re

import numpy as np

from timely.container._columns import StringColumn, strings_or_none
from timely.container.batch import ArrowColumn

cnp.import_array()

RAW_KINDS = frozenset("biufcmMSU")
_DTYPE_SPEC = re.compile(rb"[<>|][biufcmMSU][0-9]{1,6}(\[[0-9]{0,6}[A-Za-z]{1,2}\])?")

DEF MAX_PARTS = 2


cdef inline uint64_t get_u64(const uint8_t *p) noexcept nogil:
    return (<uint64_t>p[0] | <uint64_t>p[1] << 8 | <uint64_t>p[2] << 16 | <uint64_t>p[3] << 24
            | <uint64_t>p[4] << 32 | <uint64_t>p[5] << 40 | <uint64_t>p[6] << 48
            | <uint64_t>p[7] << 56)


cdef inline void put_u64(uint8_t *p, uint64_t v) noexcept nogil:
    cdef int i
    for i in range(8):
        p[i] = <uint8_t>(v >> (8 * i))


cdef class ColumnType:
    """What a spec stands for: how many parts a column has, what each part's
    size must be for a row count, and how the column is rebuilt from them."""

    RAW = "raw"
    STRING = "string"
    OBJECT = "object"
    LEGACY_UTF8 = "legacy utf8"       # capture format version 1: count, offsets, bytes in one part

    cdef readonly bytes spec
    cdef readonly str kind
    # a raw column's dtype, a string column's offsets'; None only for the
    # legacy str layout, whose code reads no dtype
    cdef readonly object dtype
    cdef readonly int parts
    cdef int code                    # 0 raw, 1 string, 2 object, 3 legacy
    cdef Py_ssize_t itemsize

    def __init__(self, bytes spec, str kind, dtype, int parts):
        if not 0 < parts <= MAX_PARTS:
            raise ValueError(f"a column has 1 or {MAX_PARTS} parts, not {parts}")
        self.spec = spec
        self.kind = kind
        self.dtype = dtype
        self.parts = parts
        self.code = {ColumnType.RAW: 0, ColumnType.STRING: 1, ColumnType.OBJECT: 2,
                     ColumnType.LEGACY_UTF8: 3}[kind]
        self.itemsize = dtype.itemsize if dtype is not None else 0

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
        if self.code == 0 and rows * self.itemsize != sizes[0]:
            return f"{rows} rows of {self.spec.decode('ascii')} are not {sizes[0]} bytes"
        if self.code == 1 and (rows + 1) * self.itemsize != sizes[0]:
            return f"{rows} rows need {rows + 1} string offsets, not {sizes[0]} bytes of them"
        if self.code == 3 and 8 * (rows + 2) > sizes[0]:
            return f"a str column of {sizes[0]} bytes cannot hold {rows} rows"
        return None

    def destinations(self, rows: int, sizes) -> list:
        """A fresh writable uint8 array for each part, viewing an array of the
        part's final dtype (so :meth:`build` makes aligned columns of them)."""
        if self.code == 0:
            return [np.empty(rows, dtype=self.dtype).view(np.uint8)]
        if self.code == 1:
            return [np.empty(rows + 1, dtype=self.dtype).view(np.uint8),
                    np.empty(sizes[1], dtype=np.uint8)]
        return [np.empty(size, dtype=np.uint8) for size in sizes]

    def build(self, rows: int, parts, bint check_utf8=False):
        """The column of ``rows`` rows whose parts are the buffers ``parts``
        (views of them, no copy); their sizes passed :meth:`check_sizes`.
        ValueError when a string column's offsets do not fit its bytes, or
        (with ``check_utf8``, for untrusted input) a row is not UTF-8 or a
        fixed-width text column holds a code point that is not a Unicode
        scalar value (see :func:`check_code_points`)."""
        if self.code == 0:
            column = np.frombuffer(parts[0], dtype=self.dtype)
            if check_utf8 and self.dtype.kind == "U":
                check_code_points(column)
            return column
        if self.code == 1:
            offsets = np.frombuffer(parts[0], dtype=self.dtype)
            data = np.frombuffer(parts[1], dtype=np.uint8)
            return _strings(offsets, data, check_utf8)
        if self.code == 3:
            body = np.frombuffer(parts[0], dtype=np.uint8)
            count = int(body[:8].view("<u8")[0])
            if count != rows:
                raise ValueError(f"a str column of {count} rows where {rows} were announced")
            offsets = body[8:8 * (rows + 2)].view("<i8")
            return _strings(offsets, body[8 * (rows + 2):], check_utf8)
        raise ValueError("an object column's parts are the framing's to decode")


def check_code_points(array) -> None:
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


cdef object _strings(offsets, data, bint check_utf8):
    first, last = offsets[0], offsets[offsets.shape[0] - 1]
    if first != 0 or last != data.shape[0]:
        raise ValueError(f"string offsets run from {first} to {last}, not from 0 "
                         f"to the {data.shape[0]} bytes")
    return StringColumn(offsets, data, check_utf8=check_utf8)


OBJECT = ColumnType(b"|O", ColumnType.OBJECT, None, 1)
cdef ColumnType _STRING = ColumnType(b"|string", ColumnType.STRING, np.dtype("<i4"), 2)
cdef ColumnType _LARGE_STRING = ColumnType(b"|large_string", ColumnType.STRING, np.dtype("<i8"), 2)
cdef ColumnType _LEGACY = ColumnType(b"|utf8", ColumnType.LEGACY_UTF8, None, 1)
cdef dict _KNOWN = {t.spec: t for t in (OBJECT, _STRING, _LARGE_STRING)}
cdef dict _BY_DTYPE = {}
cdef Py_ssize_t _CACHE_LIMIT = 256    # types kept; a hostile stream may name many dtypes
cdef object _uint8 = np.dtype(np.uint8)


cpdef object dtype_type(dtype):
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


cpdef object column_type(column):
    """The type a column is written as; None for an object column (or one of
    a dtype the serializer does not write: structured, void, zero-width)."""
    if type(column) is StringColumn:
        return _LARGE_STRING if column.offsets.dtype.itemsize == 8 else _STRING
    if type(column) is ArrowColumn:
        return None
    return dtype_type(column.dtype)


cpdef object column_parts(column):
    """``(type, rows, parts)`` of a column, each part a uint8 array to write
    as it is (the column's own memory; a sliced string column's offsets are
    moved to start at 0, a new array of rows + 1 entries; an object array of
    str is encoded first), or None when the serializer does not write this
    column (see :func:`column_type`; an object column of other values)."""
    cdef ColumnType kind
    if (type(column) is np.ndarray and cnp.PyArray_NDIM(<cnp.ndarray>column) == 1
            and cnp.PyArray_IS_C_CONTIGUOUS(<cnp.ndarray>column)):
        # The common column: its type by dtype, its bytes as they are.
        found = _BY_DTYPE.get((<cnp.ndarray>column).dtype)
        if found is not None:
            return found, cnp.PyArray_DIM(<cnp.ndarray>column, 0), [column.view(_uint8)]
    found = column_type(column)
    if found is None:
        if type(column) is ArrowColumn:
            return None
        strings = strings_or_none(column) if column.dtype == object and column.ndim == 1 else None
        if strings is None:
            return None
        column = strings
        found = column_type(column)
        if found is None:        # a StringColumn always has one
            return None
    kind = <ColumnType>found
    if kind.code == 1:
        column = column.compact()
        offsets = column.offsets
        if offsets.dtype != kind.dtype:          # a big-endian machine
            offsets = offsets.astype(kind.dtype)
        return kind, len(column), [offsets.view(np.uint8), column.data]
    raw = np.ascontiguousarray(column)
    return kind, raw.shape[0], [raw.view(np.uint8)]


cpdef ColumnType spec_type(bytes spec, bint legacy=False):
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
    if found is None or (<ColumnType>found).spec != spec:
        raise ValueError(f"column spec {spec!r} is not one this format allows")
    return found


def write_head(ColumnType kind, rows, sizes, bytearray out) -> None:
    """Appends the head of a column (spec, rows, part sizes) to ``out``."""
    cdef Py_ssize_t n = len(kind.spec), at = PyByteArray_GET_SIZE(out), k
    cdef uint8_t *p
    if len(sizes) != kind.parts:
        raise ValueError(f"a {kind.spec.decode('ascii')} column has {kind.parts} parts, "
                         f"not {len(sizes)}")
    PyByteArray_Resize(out, at + 1 + n + 8 * (1 + kind.parts))
    p = <uint8_t *>PyByteArray_AS_STRING(out) + at
    p[0] = <uint8_t>n
    memcpy(p + 1, <const char *>kind.spec, n)
    put_u64(p + 1 + n, <uint64_t>rows)
    for k in range(kind.parts):
        put_u64(p + 1 + n + 8 * (1 + k), <uint64_t>sizes[k])


def read_head(view, Py_ssize_t pos, Py_ssize_t end, bint legacy=False):
    """``(type, rows, part sizes, position after the head)`` of the head at
    ``pos`` in ``view`` (a memoryview of bytes), reading nothing at or past
    ``end``. ValueError when the head runs past ``end``, names an unknown
    spec, or its sizes cannot be the parts of its rows."""
    cdef const uint8_t[::1] v = view
    cdef Py_ssize_t n, k
    cdef ColumnType kind
    if end > v.shape[0]:
        end = v.shape[0]
    if pos < 0 or pos >= end:
        raise ValueError("a column head runs past the end")
    n = v[pos]
    if pos + 1 + n > end:
        raise ValueError("a column spec runs past the end")
    kind = spec_type(PyBytes_FromStringAndSize(<const char *>&v[pos + 1], n), legacy)
    pos += 1 + n
    if pos + 8 * (1 + kind.parts) > end:
        raise ValueError("a column head runs past the end")
    rows = get_u64(&v[pos])
    sizes = [get_u64(&v[pos + 8 * (1 + k)]) for k in range(kind.parts)]
    problem = kind.check_sizes(rows, sizes)
    if problem is not None:
        raise ValueError(f"column {kind.spec.decode('ascii')}: {problem}")
    return kind, rows, sizes, pos + 8 * (1 + kind.parts)
