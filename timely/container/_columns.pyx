"""Compiled column kernels: the string column, routing, partitioning, CRC-32.

:class:`StringColumn` holds text the way Arrow does (offsets and UTF-8
bytes); taking, filtering, slicing and concatenating rows work on those
buffers, and a Python ``str`` is made only for a row someone reads.

:func:`route` gives the worker of every row of a key column, exactly as
:func:`stable_hash` routes each key as a record: the same key reaches the
same worker on every run, in every process, in a batch or as a record. Every
column kind routes in C (``csrc/hash.c``): integers as themselves, floats
whose value is an integer as that integer and other floats by the CRC-32 of
their bits, text and bytes by the CRC-32 of their (UTF-8) bytes,
datetime64/timedelta64 as their int64 count. Only object columns look at
each row's Python type, through the C API.

>>> import numpy as np
>>> words = StringColumn.from_strings(["ab", "", "ключ"])
>>> len(words), words.type, words.offsets.tolist(), bytes(words.data)
(3, 'string', [0, 2, 2, 10], b'ab\\xd0\\xba\\xd0\\xbb\\xd1\\x8e\\xd1\\x87')
>>> words.take([2, 0, 0]).tolist()
['ключ', 'ab', 'ab']
>>> route(words, 4).tolist() == [stable_hash(w) % 4 for w in ["ab", "", "ключ"]]
True
>>> route(np.array([7, -1, 2.0, 2.5]), 3).tolist()
[1, 2, 2, 0]
"""

cimport cython
cimport numpy as cnp
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_Check, PyBytes_GET_SIZE
from cpython.dict cimport PyDict_Check
from cpython.float cimport PyFloat_AS_DOUBLE, PyFloat_Check
from cpython.long cimport (PyLong_AsLongLongAndOverflow, PyLong_AsUnsignedLongLongMask,
                           PyLong_Check, PyLong_FromDouble)
from cpython.number cimport PyNumber_Index, PyNumber_Remainder
from cpython.object cimport PyObject_GetAttr, PyObject_GetItem
from cpython.list cimport PyList_Check, PyList_GET_ITEM, PyList_GET_SIZE, PyList_New, PyList_SET_ITEM
from cpython.mem cimport PyMem_Free, PyMem_Malloc
from cpython.ref cimport Py_INCREF, PyObject
from cpython.tuple cimport PyTuple_Check, PyTuple_GET_ITEM, PyTuple_GET_SIZE
from cpython.unicode cimport PyUnicode_Check, PyUnicode_DecodeUTF8
from libc.stdint cimport INT32_MAX, SIZE_MAX, int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.math cimport floor, isfinite
from libc.string cimport memcmp, memcpy

import numpy as np

from timely.errors import RouteError

cnp.import_array()


cdef extern from "Python.h":
    # Declared on PyObject* so that reading a row of an object array takes
    # no reference: the array keeps its objects alive while they are read.
    bint unicode_check "PyUnicode_Check"(PyObject *o)
    int unicode_ready "PyUnicode_READY"(PyObject *o) except -1
    bint unicode_is_ascii "PyUnicode_IS_ASCII"(PyObject *o)
    Py_ssize_t unicode_length "PyUnicode_GET_LENGTH"(PyObject *o)
    int unicode_kind "PyUnicode_KIND"(PyObject *o)
    const void *unicode_data "PyUnicode_DATA"(PyObject *o)


tly_hash_init()

# Tuple keys nest at most this deep (Python's own recursion limit, roughly).
cdef int MAX_DEPTH = 1000

ctypedef fused offset_t:
    int32_t
    int64_t

ctypedef fused out_t:
    int32_t
    int64_t


# -- text ----------------------------------------------------------------------


cdef inline uint32_t crc_text(PyObject *s) except? 0:
    """CRC-32 of the UTF-8 of ``s`` (a str), lone surrogates as three bytes."""
    unicode_ready(s)
    cdef Py_ssize_t n = unicode_length(s)
    cdef const void *units = unicode_data(s)
    if unicode_is_ascii(s):
        return tly_crc32(0, units, <size_t>n)
    return tly_crc32_units(0, units, <size_t>n, unicode_kind(s))


def crc32(data, uint32_t start=0):
    """zlib's CRC-32 of a bytes-like object, continuing from ``start``."""
    cdef const unsigned char[::1] view = memoryview(data).cast("B")
    cdef uint32_t c
    with nogil:
        c = tly_crc32(start, &view[0] if view.shape[0] else NULL, view.shape[0])
    return c


# -- the string column ---------------------------------------------------------


cdef inline int64_t offset_at(const void *off, bint wide, Py_ssize_t i) noexcept nogil:
    if wide:
        return (<const int64_t *>off)[i]
    return (<const int32_t *>off)[i]


cdef Py_ssize_t bad_offset(const offset_t *off, Py_ssize_t n, int64_t size) noexcept nogil:
    """The first i where off[i] is out of [0, size] or off[i + 1] < off[i]; -1 if none."""
    cdef Py_ssize_t i
    if off[0] < 0 or off[0] > size:
        return 0
    for i in range(n):
        if off[i + 1] < off[i] or off[i + 1] > size:
            return i + 1
    return -1


cdef Py_ssize_t split_character(const offset_t *off, Py_ssize_t n,
                                const uint8_t *data) noexcept nogil:
    """The first row that starts inside a UTF-8 sequence; -1 if none. With the
    bytes between off[0] and off[n] valid UTF-8, every row is then valid."""
    cdef Py_ssize_t i
    for i in range(1, n):
        if off[i] < off[n] and (data[off[i]] & 0xC0) == 0x80:
            return i
    return -1


cdef StringColumn wrap_strings(object offsets, object data, object objects):
    """A StringColumn of checked buffers: ``offsets`` a contiguous int32 or int64
    array whose entries never decrease and lie within ``data``, a contiguous
    uint8 array. ``objects`` is the rows as str, or None."""
    cdef StringColumn column = StringColumn.__new__(StringColumn)
    column.hold(offsets, data, objects)
    return column


cdef object as_bytes_array(object data):
    if type(data) is np.ndarray and data.dtype == np.uint8 and data.ndim == 1:
        return np.ascontiguousarray(data)
    return np.frombuffer(memoryview(data).cast("B"), dtype=np.uint8)


cdef object offsets_array(Py_ssize_t n, int64_t size):
    """A new array for n + 1 offsets into ``size`` bytes: int32 when they fit."""
    return np.empty(n + 1, dtype=np.int64 if size > INT32_MAX else np.int32)


@cython.final
cdef class StringColumn:
    """A column of text in Arrow's layout: row ``i`` is the UTF-8 of
    ``data[offsets[i]:offsets[i + 1]]``.

    ``offsets`` is an int32 array (Arrow's ``string``) or an int64 one
    (``large_string``) of ``len + 1`` entries that never decrease and lie
    within ``data``, a uint8 array; ``offsets[0]`` need not be 0, so a slice
    is a view. The constructor checks that (and, with ``check_utf8``, that
    every row is valid UTF-8) and raises ValueError otherwise.

    Columns are immutable. ``take``, ``filter``, ``slice``, ``concat`` and
    routing work on the buffers in compiled code: O(rows + bytes) and no
    Python object per row. Reading rows as ``str`` (``to_numpy()``,
    ``tolist()``, ``column[i]``, ``numpy.asarray(column)``) decodes them
    once; the object array is cached, and carried along by ``take`` and
    ``slice``.

    >>> c = StringColumn.from_strings(["x", "yy", "zzz"])
    >>> c[1], c[1:].tolist(), c.filter([True, False, True]).tolist()
    ('yy', ['yy', 'zzz'], ['x', 'zzz'])
    >>> StringColumn.concat([c, c[:1]]).tolist()
    ['x', 'yy', 'zzz', 'x']
    >>> StringColumn([0, 1, 3], b"abc").tolist()
    ['a', 'bc']
    """

    def __init__(self, offsets, data, *, bint check_utf8=False):
        offsets = np.asarray(offsets)
        if offsets.ndim != 1 or offsets.shape[0] < 1:
            raise ValueError(
                f"string offsets are 1-D with one entry more than rows, not of shape "
                f"{offsets.shape}")
        if offsets.dtype.kind not in "iu":
            raise ValueError(f"string offsets are integers, not {offsets.dtype}")
        wide = offsets.dtype != np.int32
        offsets = np.ascontiguousarray(offsets, dtype=np.int64 if wide else np.int32)
        self.hold(offsets, as_bytes_array(data), None)
        self.check(check_utf8)

    cdef int hold(self, object offsets, object data, object objects) except -1:
        # The pointers stay valid as long as this object holds the arrays.
        self.offsets = offsets
        self.data = data
        self.objects = objects
        self.rows = offsets.shape[0] - 1
        self.wide = offsets.dtype.itemsize == 8
        self.off = cnp.PyArray_DATA(<cnp.ndarray>offsets)
        self.bytes = <const uint8_t *>cnp.PyArray_DATA(<cnp.ndarray>data)
        return 0

    cdef int64_t start(self, Py_ssize_t i) noexcept nogil:
        return offset_at(self.off, self.wide, i)

    cdef int64_t size(self) noexcept nogil:
        return self.start(self.rows) - self.start(0)

    def check(self, bint utf8=True):
        """Raises ValueError unless the offsets fit the bytes (and, with
        ``utf8``, every row is valid UTF-8). O(rows), plus O(bytes) for UTF-8."""
        cdef Py_ssize_t bad, n = self.rows
        cdef int64_t size = self.data.shape[0], first, at
        with nogil:
            if self.wide:
                bad = bad_offset(<const int64_t *>self.off, n, size)
            else:
                bad = bad_offset(<const int32_t *>self.off, n, size)
        if bad >= 0:
            raise ValueError(
                f"string offset {bad} ({self.offsets[bad]}) is not within the column's "
                f"{size} bytes after offset {self.offsets[bad - 1] if bad else 0}")
        if not utf8:
            return
        first = self.start(0)
        with nogil:
            at = tly_utf8_check(self.bytes + first, <size_t>self.size())
            if at < 0:
                if self.wide:
                    bad = split_character(<const int64_t *>self.off, n, self.bytes)
                else:
                    bad = split_character(<const int32_t *>self.off, n, self.bytes)
        if at >= 0:
            raise ValueError(f"string bytes are not UTF-8 at byte {first + at}")
        if bad >= 0:
            raise ValueError(f"string row {bad} starts inside a UTF-8 character")

    # -- construction --------------------------------------------------------

    @staticmethod
    def from_strings(values):
        """The column of ``values``, an iterable of str; raises TypeError for
        another value and ValueError for a str with a lone surrogate (it has
        no UTF-8). O(rows + bytes), two passes in C."""
        array = object_array(values)
        if array.shape[0] == 0:
            return wrap_strings(np.zeros(1, dtype=np.int32), np.empty(0, dtype=np.uint8), array)
        column = strings_or_none(array)
        if column is None:
            for i, value in enumerate(array):
                if not isinstance(value, str):
                    raise TypeError(
                        f"row {i} of a string column is a {type(value).__name__}: {value!r}")
            raise ValueError("a str with a lone surrogate has no UTF-8 and cannot be stored "
                             "in a string column")
        return column

    @staticmethod
    def from_arrow(array):
        """The column of a pyarrow ``string`` or ``large_string`` array (or a
        chunked one, joined first) without nulls, sharing its buffers: no copy."""
        import pyarrow as pa

        if isinstance(array, pa.ChunkedArray):
            array = array.combine_chunks()
        if pa.types.is_string(array.type):
            dtype = np.int32
        elif pa.types.is_large_string(array.type):
            dtype = np.int64
        else:
            raise TypeError(f"an Arrow array of type {array.type} is not a string array")
        if array.null_count:
            raise ValueError(f"the Arrow array has {array.null_count} nulls; a string "
                             "column has none")
        _, offset_buffer, data_buffer = array.buffers()
        n = len(array)
        if offset_buffer is None:
            offsets = np.zeros(n + 1, dtype=dtype)
        else:
            offsets = np.frombuffer(offset_buffer, dtype=dtype)[array.offset:array.offset + n + 1]
        data = (np.frombuffer(data_buffer, dtype=np.uint8) if data_buffer is not None
                else np.empty(0, dtype=np.uint8))
        column = wrap_strings(offsets, data, None)
        column.check(False)
        return column

    def to_arrow(self):
        """A pyarrow ``string`` (int32 offsets) or ``large_string`` array
        sharing this column's buffers: no copy."""
        import pyarrow as pa

        kind = pa.large_string() if self.wide else pa.string()
        return pa.Array.from_buffers(
            kind, self.rows, [None, pa.py_buffer(self.offsets), pa.py_buffer(self.data)],
            null_count=0)

    # -- access --------------------------------------------------------------

    def __len__(self):
        return self.rows

    @property
    def type(self) -> str:
        """Arrow's name of the layout: ``"string"`` (int32 offsets) or ``"large_string"``."""
        return "large_string" if self.wide else "string"

    @property
    def decoded(self) -> bool:
        """Whether the rows exist as Python str (decoded, or given as such)."""
        return self.objects is not None

    @property
    def nbytes(self) -> int:
        """Bytes of the offsets and of the rows' UTF-8."""
        return self.offsets.nbytes + self.size()

    def __repr__(self):
        text = repr(self[:5].tolist())
        if self.rows > 5:
            text = text[:len(text) - 1] + ", ...]"
        if len(text) > 200:
            text = text[:196] + " ...]"
        return f"StringColumn({text}; {self.rows} rows, {self.type})"

    def to_numpy(self):
        """The rows as a (read-only) object array of str, decoded once and cached."""
        cdef Py_ssize_t i, n = self.rows
        cdef int64_t a, b
        cdef object[::1] rows
        if self.objects is None:
            out = np.empty(n, dtype=object)
            rows = out
            for i in range(n):
                a = self.start(i)
                b = self.start(i + 1)
                rows[i] = PyUnicode_DecodeUTF8(<const char *>self.bytes + a, b - a, NULL)
            out.flags.writeable = False
            self.objects = out
        return self.objects

    def __array__(self, dtype=None, copy=None):
        out = self.to_numpy()
        if dtype is not None and np.dtype(dtype) != out.dtype:
            return out.astype(dtype)
        return out.copy() if copy else out

    def tolist(self):
        """The rows as a list of str."""
        return self.to_numpy().tolist()

    def __iter__(self):
        return iter(self.to_numpy())

    def __getitem__(self, item):
        cdef Py_ssize_t i
        cdef int64_t a
        if isinstance(item, slice):
            start, stop, step = item.indices(self.rows)
            if step == 1:
                return self.slice(start, stop)
            return self.take(np.arange(start, stop, step, dtype=np.int64))
        if isinstance(item, (int, np.integer)):
            i = item
            if i < 0:
                i += self.rows
            if not 0 <= i < self.rows:
                raise IndexError(f"row {item} of a string column of {self.rows} rows")
            if self.objects is not None:
                return self.objects[i]
            a = self.start(i)
            return PyUnicode_DecodeUTF8(<const char *>self.bytes + a, self.start(i + 1) - a, NULL)
        index = np.asarray(item)
        if index.dtype == np.bool_:
            return self.filter(index)
        return self.take(index)

    def equals(self, other) -> bool:
        """The same rows (their bytes) as ``other``, a StringColumn."""
        cdef StringColumn that
        cdef Py_ssize_t i, n = self.rows
        cdef int64_t a, b, c
        cdef bint same = True
        if not isinstance(other, StringColumn):
            return False
        that = other
        if that.rows != n:
            return False
        with nogil:
            for i in range(n):
                a = self.start(i)
                b = self.start(i + 1)
                c = that.start(i)
                if that.start(i + 1) - c != b - a or memcmp(self.bytes + a, that.bytes + c,
                                                             <size_t>(b - a)) != 0:
                    same = False
                    break
        return same

    def __reduce__(self):
        column = self.compact()
        return (StringColumn, (column.offsets, column.data))

    # -- new columns ---------------------------------------------------------

    def compact(self):
        """This column with offsets starting at 0 and data exactly its rows'
        bytes (a view; new offsets only if they did not start at 0)."""
        cdef int64_t first = self.start(0)
        cdef int64_t last = self.start(self.rows)
        if first == 0 and last == self.data.shape[0]:
            return self
        offsets = self.offsets if first == 0 else self.offsets - self.offsets.dtype.type(first)
        return wrap_strings(offsets, self.data[first:last], self.objects)

    def slice(self, Py_ssize_t start, Py_ssize_t stop):
        """Rows ``start`` to ``stop`` (clamped to the column) as a view."""
        start = min(max(start, 0), self.rows)
        stop = min(max(stop, start), self.rows)
        objects = self.objects[start:stop] if self.objects is not None else None
        return wrap_strings(self.offsets[start:stop + 1], self.data, objects)

    def take(self, index):
        """The rows at the positions in ``index`` (integers; negative ones count
        from the end), in that order. O(rows + their bytes), in C."""
        index = np.asarray(index)
        if index.dtype.kind not in "iu":
            if index.shape[0] == 0 and index.ndim == 1:
                index = index.astype(np.int64)
            else:
                raise IndexError(f"rows are taken by integer positions, not {index.dtype}")
        cdef const int64_t[::1] idx = np.ascontiguousarray(index, dtype=np.int64)
        cdef Py_ssize_t n = idx.shape[0], bad = -1
        cdef int64_t total = 0
        with nogil:
            if self.wide:
                total = gather_size(<const int64_t *>self.off, self.rows, &idx[0] if n else NULL,
                                    n, &bad)
            else:
                total = gather_size(<const int32_t *>self.off, self.rows, &idx[0] if n else NULL,
                                    n, &bad)
        if bad >= 0:
            raise IndexError(
                f"row {idx[bad]} is out of bounds for a string column of {self.rows} rows")
        offsets = offsets_array(n, total) if not self.wide else np.empty(n + 1, np.int64)
        data = np.empty(total, dtype=np.uint8)
        gather_into(self, &idx[0] if n else NULL, n, offsets, data)
        objects = self.objects.take(index) if self.objects is not None else None
        return wrap_strings(offsets, data, objects)

    def filter(self, mask):
        """The rows where the boolean ``mask`` is true."""
        mask = np.asarray(mask)
        if mask.dtype != np.bool_ or mask.shape != (self.rows,):
            raise ValueError(f"a filter mask is a bool array of {self.rows} rows, "
                             f"not {mask.dtype} of shape {mask.shape}")
        return self.take(np.flatnonzero(mask))

    @staticmethod
    def concat(columns):
        """The rows of ``columns`` (StringColumns) one after another, in new buffers."""
        cdef list parts = list(columns)
        cdef StringColumn part
        cdef Py_ssize_t rows = 0, at = 0
        cdef int64_t total = 0, written = 0
        cdef bint wide = False
        for part in parts:
            rows += part.rows
            total += part.size()
            wide = wide or part.wide
        offsets = np.empty(rows + 1, dtype=np.int64) if wide else offsets_array(rows, total)
        data = np.empty(total, dtype=np.uint8)
        cdef uint8_t *target = <uint8_t *>cnp.PyArray_DATA(<cnp.ndarray>data)
        cdef void *out = cnp.PyArray_DATA(<cnp.ndarray>offsets)
        cdef bint out_wide = offsets.dtype.itemsize == 8
        cdef list cached = []
        for part in parts:
            with nogil:
                rebase_into(part, at, written, out, out_wide)
                memcpy(target + written, part.bytes + part.start(0), <size_t>part.size())
            at += part.rows
            written += part.size()
            if part.objects is not None:
                cached.append(part.objects)
        if not parts:
            (<int32_t *>out)[0] = 0
        objects = np.concatenate(cached) if cached and len(cached) == len(parts) else None
        return wrap_strings(offsets, data, objects)


cdef object object_array(object values):
    if type(values) is np.ndarray and values.dtype == object and values.ndim == 1:
        return values
    values = list(values)
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


cdef int64_t gather_size(const offset_t *off, Py_ssize_t rows, const int64_t *index,
                         Py_ssize_t n, Py_ssize_t *bad) noexcept nogil:
    """The bytes of the rows at ``index``; sets ``bad`` to the first position
    out of bounds."""
    cdef Py_ssize_t i
    cdef int64_t j, total = 0
    for i in range(n):
        j = index[i]
        if j < 0:
            j += rows
        if j < 0 or j >= rows:
            bad[0] = i
            return 0
        total += off[j + 1] - off[j]
    return total


cdef void gather(const offset_t *off, const uint8_t *data, Py_ssize_t rows,
                 const int64_t *index, Py_ssize_t n, out_t *out, uint8_t *target) noexcept nogil:
    """Rows at ``index`` (checked by gather_size) into new offsets and bytes."""
    cdef Py_ssize_t i
    cdef int64_t j, a, size, at = 0
    out[0] = 0
    for i in range(n):
        j = index[i]
        if j < 0:
            j += rows
        a = off[j]
        size = off[j + 1] - a
        memcpy(target + at, data + a, <size_t>size)
        at += size
        out[i + 1] = <out_t>at


cdef int gather_into(StringColumn column, const int64_t *index, Py_ssize_t n, object offsets,
                     object data) except -1:
    cdef void *out = cnp.PyArray_DATA(<cnp.ndarray>offsets)
    cdef uint8_t *target = <uint8_t *>cnp.PyArray_DATA(<cnp.ndarray>data)
    cdef bint out_wide = offsets.dtype.itemsize == 8
    with nogil:
        if column.wide and out_wide:
            gather(<const int64_t *>column.off, column.bytes, column.rows, index, n,
                   <int64_t *>out, target)
        elif column.wide:
            gather(<const int64_t *>column.off, column.bytes, column.rows, index, n,
                   <int32_t *>out, target)
        elif out_wide:
            gather(<const int32_t *>column.off, column.bytes, column.rows, index, n,
                   <int64_t *>out, target)
        else:
            gather(<const int32_t *>column.off, column.bytes, column.rows, index, n,
                   <int32_t *>out, target)
    return 0


cdef void rebase(const offset_t *off, Py_ssize_t n, out_t *out, int64_t shift) noexcept nogil:
    """out[i] = off[i] + shift for the n + 1 offsets."""
    cdef Py_ssize_t i
    for i in range(n + 1):
        out[i] = <out_t>(off[i] + shift)


cdef void rebase_into(StringColumn part, Py_ssize_t at, int64_t written, void *out,
                      bint out_wide) noexcept nogil:
    """Writes part's offsets, moved to start at ``written``, from out[at] on."""
    cdef int64_t shift = written - part.start(0)
    if part.wide and out_wide:
        rebase(<const int64_t *>part.off, part.rows, <int64_t *>out + at, shift)
    elif part.wide:
        rebase(<const int64_t *>part.off, part.rows, <int32_t *>out + at, shift)
    elif out_wide:
        rebase(<const int32_t *>part.off, part.rows, <int64_t *>out + at, shift)
    else:
        rebase(<const int32_t *>part.off, part.rows, <int32_t *>out + at, shift)


def strings_or_none(values):
    """A StringColumn of ``values`` (a 1-D object array) caching ``values`` as
    its rows, or None unless every row is a str that has UTF-8 (no lone
    surrogates). An empty array gives None: nothing says it holds text."""
    cdef Py_ssize_t n = values.shape[0], i, length
    cdef PyObject *row
    cdef size_t size
    cdef int64_t total = 0
    if n == 0:
        return None
    cdef object contiguous = np.ascontiguousarray(values)
    # The array holds its objects alive while they are read.
    cdef PyObject **rows = <PyObject **>cnp.PyArray_DATA(<cnp.ndarray>contiguous)
    cumulative = np.empty(n + 1, dtype=np.int64)
    cdef int64_t[::1] ends = cumulative
    ends[0] = 0
    for i in range(n):
        row = rows[i]
        if not unicode_check(row):
            return None
        unicode_ready(row)
        length = unicode_length(row)
        if unicode_is_ascii(row):
            size = <size_t>length
        else:
            size = tly_utf8_size(unicode_data(row), <size_t>length, unicode_kind(row), 1)
            if size == SIZE_MAX:
                return None
        total += <int64_t>size
        ends[i + 1] = total
    data = np.empty(total, dtype=np.uint8)
    cdef uint8_t *target = <uint8_t *>cnp.PyArray_DATA(<cnp.ndarray>data)
    for i in range(n):
        row = rows[i]
        length = unicode_length(row)
        if unicode_is_ascii(row):
            memcpy(target + ends[i], unicode_data(row), <size_t>length)
        else:
            tly_utf8_encode(unicode_data(row), <size_t>length, unicode_kind(row),
                            target + ends[i])
    offsets = cumulative if total > INT32_MAX else cumulative.astype(np.int32)
    return wrap_strings(offsets, data, values)


# -- record keys ---------------------------------------------------------------


cdef object canonical(object key):
    """``key`` as the plain value it routes as (str, bytes, int, float, tuple,
    None); TypeError when it is none of them."""
    if isinstance(key, (bytearray, memoryview)):
        return bytes(key)
    if isinstance(key, np.generic):
        kind = key.dtype.kind
        if kind == "f":
            return float(key)
        if kind == "b":
            return int(key)
        if kind in "mM":
            return int(key.view(np.int64))
    if key is not None and hasattr(type(key), "__index__"):
        return PyNumber_Index(key)
    raise TypeError(f"cannot route by a key of type {type(key).__name__}: {key!r}")


@cython.overflowcheck(False)    # the combination wraps modulo 2**64 on purpose
cdef int hash64(object key, uint64_t *out, int depth) except -1:
    """stable_hash(key) modulo 2**64."""
    cdef Py_ssize_t i
    cdef uint64_t h, part
    if PyUnicode_Check(key):
        out[0] = crc_text(<PyObject *>key)
    elif PyLong_Check(key):
        out[0] = PyLong_AsUnsignedLongLongMask(key)
    elif PyFloat_Check(key):
        out[0] = tly_hash64_double(PyFloat_AS_DOUBLE(key))
    elif PyBytes_Check(key):
        out[0] = tly_crc32(0, PyBytes_AS_STRING(key), <size_t>PyBytes_GET_SIZE(key))
    elif PyTuple_Check(key):
        if depth >= MAX_DEPTH:
            raise RecursionError(f"a key nests tuples deeper than {MAX_DEPTH} levels")
        h = 0x345678
        for i in range(PyTuple_GET_SIZE(key)):
            hash64(<object>PyTuple_GET_ITEM(key, i), &part, depth + 1)
            h = h * 1000003 ^ part
        out[0] = h
    elif key is None:
        out[0] = 0
    else:
        hash64(canonical(key), out, depth)
    return 0


cdef int64_t route_key(object key, int64_t peers) except -1:
    """The worker of one key: stable_hash(key) mod peers."""
    cdef int overflow = 0
    cdef long long v
    cdef int64_t r
    cdef uint64_t h
    if type(key) is str:
        return crc_text(<PyObject *>key) % <uint64_t>peers
    if type(key) is int:
        v = PyLong_AsLongLongAndOverflow(key, &overflow)
        if overflow:
            return PyNumber_Remainder(key, peers)
        r = v % peers
        return r + peers if r < 0 else r
    if PyFloat_Check(key):
        return tly_route_double(PyFloat_AS_DOUBLE(key), peers)
    if PyUnicode_Check(key):
        return crc_text(<PyObject *>key) % <uint64_t>peers
    if PyLong_Check(key):                             # bool, int subclasses
        return route_key(int(key), peers)
    if PyBytes_Check(key) or PyTuple_Check(key) or key is None:
        hash64(key, &h, 0)
        return <int64_t>(h % <uint64_t>peers)
    return route_key(canonical(key), peers)


def stable_hash(key):
    """A hash of ``key`` that is the same on every worker and every run; a
    record with key ``k`` goes to worker ``stable_hash(k) % peers``.

    Python's ``hash`` of a str is salted per process, so it cannot choose a
    worker. Here an int is itself (a bool 0 or 1, any ``__index__`` type its
    index); a float whose value is an integer is that integer, another float
    the CRC-32 of its IEEE-754 bits (little-endian, every NaN alike); a str
    the CRC-32 of its UTF-8 (a lone surrogate as its three bytes), bytes their
    CRC-32; None 0; a tuple combines its parts' hashes (modulo 2**64) as
    ``h = (h * 1000003) ^ part`` from ``h = 0x345678``; numpy scalars hash as
    the Python value they stand for (datetime64/timedelta64 as their int64
    count). A column of keys routes row by row the same (see :func:`route`).

    >>> stable_hash(7), stable_hash(-2.0), stable_hash(True), stable_hash(None)
    (7, -2, 1, 0)
    >>> import zlib
    >>> stable_hash("鍵") == zlib.crc32("鍵".encode())
    True
    """
    cdef uint64_t h
    cdef double x
    if type(key) is int:
        return key
    if PyLong_Check(key):
        return int(key)
    if PyFloat_Check(key):
        x = PyFloat_AS_DOUBLE(key)
        if isfinite(x) and x == floor(x):
            return PyLong_FromDouble(x)
        return tly_hash64_double(x)
    if PyUnicode_Check(key) or PyBytes_Check(key) or PyTuple_Check(key) or key is None:
        hash64(key, &h, 0)
        return h
    return stable_hash(canonical(key))


# -- routing -------------------------------------------------------------------


cdef int route_objects(object keys, int64_t peers, int64_t *dest) except -1:
    # The array holds its objects alive while they are read.
    cdef PyObject **rows = <PyObject **>cnp.PyArray_DATA(<cnp.ndarray>keys)
    cdef Py_ssize_t i, n = keys.shape[0]
    for i in range(n):
        dest[i] = route_key(<object>rows[i], peers)
    return 0


def route(keys, Py_ssize_t peers):
    """The worker (an int64 array) of each row of the key column ``keys``
    (a numpy array, a StringColumn, or a sequence) for ``peers`` workers:
    ``stable_hash(key) % peers`` for each row's key as a record carries it."""
    if peers < 1:
        raise ValueError(f"peers must be at least 1, not {peers}")
    cdef StringColumn strings
    cdef Py_ssize_t n
    if isinstance(keys, StringColumn):
        strings = keys
        n = strings.rows
        out = new_int64(n, False)
        if n:
            route_strings(strings, peers, <int64_t *>cnp.PyArray_DATA(<cnp.ndarray>out))
        return out
    if (type(keys) is np.ndarray and cnp.PyArray_TYPE(<cnp.ndarray>keys) == cnp.NPY_INT64
            and cnp.PyArray_NDIM(<cnp.ndarray>keys) == 1
            and cnp.PyArray_IS_C_CONTIGUOUS(<cnp.ndarray>keys)
            and cnp.PyArray_ISNOTSWAPPED(<cnp.ndarray>keys)):
        # The common key column, without the checks and conversions below.
        n = cnp.PyArray_DIM(<cnp.ndarray>keys, 0)
        out = new_int64(n, False)
        with nogil:
            tly_route_i64(<const int64_t *>cnp.PyArray_DATA(<cnp.ndarray>keys), n, peers,
                          <int64_t *>cnp.PyArray_DATA(<cnp.ndarray>out))
        return out
    keys = np.asarray(keys)
    if keys.ndim != 1:
        raise ValueError(f"keys must be 1-D, not of shape {keys.shape}")
    n = keys.shape[0]
    out = new_int64(n, False)
    cdef int64_t *dest = <int64_t *>cnp.PyArray_DATA(<cnp.ndarray>out)
    cdef str kind = keys.dtype.kind
    if kind not in "iubfmMSUO":
        raise TypeError(f"cannot route by a key column of dtype {keys.dtype}")
    if n == 0:
        return out
    if kind in "SO":
        keys = np.ascontiguousarray(keys)
    elif not keys.dtype.isnative:
        keys = np.ascontiguousarray(keys.astype(keys.dtype.newbyteorder("=")))
    else:
        keys = np.ascontiguousarray(keys)
    cdef const void *p = cnp.PyArray_DATA(<cnp.ndarray>keys)
    cdef size_t width = keys.dtype.itemsize
    if kind == "O":
        route_objects(keys, peers, dest)
    elif kind == "u" and width == 8:
        with nogil:
            tly_route_u64(<const uint64_t *>p, n, <uint64_t>peers, dest)
    elif kind in "iub":
        keys = np.ascontiguousarray(keys, dtype=np.int64)
        p = cnp.PyArray_DATA(<cnp.ndarray>keys)
        with nogil:
            tly_route_i64(<const int64_t *>p, n, peers, dest)
    elif kind in "mM":
        with nogil:
            tly_route_i64(<const int64_t *>p, n, peers, dest)
    elif kind == "f" and width == 4:
        with nogil:
            tly_route_f32(<const float *>p, n, peers, dest)
    elif kind == "f":
        if width != 8:
            keys = keys.astype(np.float64)
            p = cnp.PyArray_DATA(<cnp.ndarray>keys)
        with nogil:
            tly_route_f64(<const double *>p, n, peers, dest)
    elif kind == "S":
        with nogil:
            tly_route_fixed(<const uint8_t *>p, n, width, peers, dest)
    else:
        with nogil:
            tly_route_ucs4(<const uint32_t *>p, n, width // 4, peers, dest)
    return out


cdef int route_strings(StringColumn keys, int64_t peers, int64_t *dest) except -1:
    with nogil:
        if keys.wide:
            tly_route_str64(<const int64_t *>keys.off, keys.bytes, keys.rows, peers, dest)
        else:
            tly_route_str32(<const int32_t *>keys.off, keys.bytes, keys.rows, peers, dest)
    return 0


cdef inline object new_int64(Py_ssize_t n, bint zero):
    cdef cnp.npy_intp size = n
    if zero:
        return cnp.PyArray_ZEROS(1, &size, cnp.NPY_INT64, 0)
    return cnp.PyArray_EMPTY(1, &size, cnp.NPY_INT64, 0)


def partition(dest, Py_ssize_t peers):
    """``(order, counts)``: the row positions grouped by worker (stable), and
    the number of rows for each worker. ``dest`` holds workers in ``[0, peers)``.
    O(rows) in C, and a fixed cost of a few array headers (no memoryviews):
    it runs once per message of an exchange."""
    if peers < 1:
        raise ValueError(f"peers must be at least 1, not {peers}")
    if not (type(dest) is np.ndarray and cnp.PyArray_TYPE(<cnp.ndarray>dest) == cnp.NPY_INT64
            and cnp.PyArray_NDIM(<cnp.ndarray>dest) == 1
            and cnp.PyArray_IS_C_CONTIGUOUS(<cnp.ndarray>dest)
            and cnp.PyArray_ISNOTSWAPPED(<cnp.ndarray>dest)):
        dest = np.ascontiguousarray(dest, dtype=np.int64)
        if dest.ndim != 1:
            raise ValueError(f"workers are 1-D, not of shape {dest.shape}")
    cdef const int64_t *d = <const int64_t *>cnp.PyArray_DATA(<cnp.ndarray>dest)
    cdef Py_ssize_t n = cnp.PyArray_DIM(<cnp.ndarray>dest, 0), i, bad = -1
    order_array = new_int64(n, False)
    counts_array = new_int64(peers, True)
    cdef int64_t *order = <int64_t *>cnp.PyArray_DATA(<cnp.ndarray>order_array)
    cdef int64_t *counts = <int64_t *>cnp.PyArray_DATA(<cnp.ndarray>counts_array)
    with nogil:
        for i in range(n):
            if d[i] < 0 or d[i] >= peers:
                bad = i
                break
        if bad < 0 and n:
            tly_partition(d, n, peers, counts, order)
    if bad >= 0:
        raise ValueError(f"row {bad} routes to worker {d[bad]}, not in [0, {peers})")
    return order_array, counts_array


def split_columns(dict columns, dest, Py_ssize_t peers):
    """``(counts, parts)``: the rows of ``columns`` (a batch's, of equal
    length) split by worker, ``dest`` holding each row's worker in
    ``[0, peers)``. ``counts[j]`` is worker ``j``'s row count and
    ``parts[j]`` its ``{name: column}`` with its rows in their order, or
    None when it has none or all of them (the caller sends the batch as it
    is then). A numeric, datetime or fixed-width text column is scattered
    in one pass in C; other columns (strings, objects) are taken by
    position. O(rows x columns) with a fixed cost per worker and column."""
    order, counts_array = partition(dest, peers)
    cdef list counts = counts_array.tolist()
    cdef Py_ssize_t n = cnp.PyArray_DIM(<cnp.ndarray>order, 0), j, i, size, start, count
    cdef list parts = [None] * peers
    cdef list targets = [j for j in range(peers) if 0 < counts[j] < n]
    if not targets:
        return counts, parts
    for j in targets:
        parts[j] = {}
    cdef const int64_t *o = <const int64_t *>cnp.PyArray_DATA(<cnp.ndarray>order)
    cdef char **out = <char **>PyMem_Malloc(peers * sizeof(char *))
    cdef const char *src
    cdef cnp.ndarray array
    cdef bint wide
    if out == NULL:
        raise MemoryError()
    try:
        for name, column in columns.items():
            if (type(column) is np.ndarray and cnp.PyArray_NDIM(<cnp.ndarray>column) == 1
                    and cnp.PyArray_IS_C_CONTIGUOUS(<cnp.ndarray>column)
                    and not (<cnp.ndarray>column).dtype.hasobject
                    and cnp.PyArray_DIM(<cnp.ndarray>column, 0) == n):
                array = <cnp.ndarray>column
                size = cnp.PyArray_ITEMSIZE(array)
                wide = size == 8 and cnp.PyArray_ISALIGNED(array)
                src = <const char *>cnp.PyArray_DATA(array)
                for j in range(peers):
                    out[j] = NULL
                for j in targets:
                    part = np.empty(counts[j], dtype=array.dtype)
                    parts[j][name] = part
                    out[j] = <char *>cnp.PyArray_DATA(<cnp.ndarray>part)
                # Rows in order, each to its worker: ``order`` lists them
                # grouped by worker, so worker j's are o[start:start+count].
                start = 0
                for j in range(peers):
                    count = counts[j]
                    if out[j] != NULL:
                        with nogil:
                            if wide:
                                for i in range(count):
                                    (<int64_t *>out[j])[i] = (<const int64_t *>src)[o[start + i]]
                            else:
                                for i in range(count):
                                    memcpy(out[j] + i * size, src + o[start + i] * size, size)
                    start += count
            else:
                start = 0
                for j in range(peers):
                    if parts[j] is not None:
                        parts[j][name] = column.take(order[start:start + counts[j]])
                    start += counts[j]
    finally:
        PyMem_Free(out)
    return counts, parts


# -- records -------------------------------------------------------------------

# What failed while a record was routed: its key could not be taken, the
# route function raised, or the key does not hash.
cdef enum Stage:
    EXTRACT
    CALL
    HASH


cdef inline object field_of(object record, object key, bint by_index, Py_ssize_t index):
    """``record[index]`` (by_index) or, for a str ``key``, ``record[key]`` of a
    dict and ``record.key`` of anything else."""
    cdef Py_ssize_t n, i
    if by_index:
        if PyTuple_Check(record):
            n = PyTuple_GET_SIZE(record)
            i = index + n if index < 0 else index
            if 0 <= i < n:
                return <object>PyTuple_GET_ITEM(record, i)
        elif PyList_Check(record):
            n = PyList_GET_SIZE(record)
            i = index + n if index < 0 else index
            if 0 <= i < n:
                return <object>PyList_GET_ITEM(record, i)
        # Through the object protocol: indexing by a C integer would skip
        # the bounds check under boundscheck=False.
        return PyObject_GetItem(record, key)
    if PyDict_Check(record):
        return PyObject_GetItem(record, key)
    return PyObject_GetAttr(record, key)


cdef int check_key(object key) except -1:
    if key is None or type(key) is str or (type(key) is int):
        return 0
    raise RouteError(f"an exchange key is a field index (int) or a field name (str), "
                     f"not {key!r} of type {type(key).__name__}")


cdef int route_into(list records, Py_ssize_t n, int64_t peers, object key, object fn,
                    object name, int64_t *dest) except -1:
    """dest[i] = stable_hash(k) mod peers for the key k of records[i]: the record
    itself, its field ``key``, then ``fn`` of that when ``fn`` is not None.
    An exception of ``fn`` propagates as it is; the others become RouteError."""
    cdef bint by_index = type(key) is int
    cdef bint extract = key is not None
    cdef bint call = fn is not None
    cdef Py_ssize_t index = key if by_index else 0
    cdef Py_ssize_t i = 0
    cdef Stage stage = EXTRACT
    cdef object record = None, value = None
    try:
        for i in range(n):
            record = <object>PyList_GET_ITEM(records, i)
            value = record
            if extract:
                stage = EXTRACT
                value = field_of(record, key, by_index, index)
            if call:
                stage = CALL
                value = fn(value)
            stage = HASH
            dest[i] = route_key(value, peers)
            if PyList_GET_SIZE(records) != n:
                raise RouteError("the batch of records changed while it was routed")
    except RouteError:
        raise
    except Exception as error:
        if stage == CALL:
            raise
        if stage == EXTRACT:
            raise RouteError(f"the exchange key {key!r} is not a field of record {i}, "
                             f"{record!r:.80} of type {type(record).__name__} "
                             f"({type(error).__name__}: {error})") from error
        if isinstance(error, (TypeError, ValueError, RecursionError)):
            raise RouteError(
                f"the exchange route {name} gave the key {value!r:.80}, of type "
                f"{type(value).__name__}: keys are ints, floats, str, bytes, None or tuples "
                f"of them ({error})") from None
        raise
    return 0


cdef list split_into(list records, Py_ssize_t n, const int64_t *dest, int64_t peers):
    """The records for each worker, in order: one list per worker, made at its size."""
    cdef int64_t *fill = <int64_t *>PyMem_Malloc(<size_t>peers * sizeof(int64_t))
    if fill == NULL:
        raise MemoryError()
    cdef list out = []
    cdef Py_ssize_t i
    cdef int64_t j
    cdef object part
    cdef PyObject *record
    try:
        for j in range(peers):
            fill[j] = 0
        for i in range(n):
            fill[dest[i]] += 1
        for j in range(peers):
            out.append(PyList_New(fill[j]))
            fill[j] = 0
        for i in range(n):
            j = dest[i]
            part = <object>PyList_GET_ITEM(out, j)
            record = PyList_GET_ITEM(records, i)
            Py_INCREF(<object>record)
            PyList_SET_ITEM(part, fill[j], <object>record)
            fill[j] += 1
    finally:
        PyMem_Free(fill)
    return out


def route_records(list records, Py_ssize_t peers, key=None, fn=None, name="fn"):
    """The worker (an int64 array) of each record for ``peers`` workers:
    ``stable_hash(k) % peers`` of its key ``k``, which is ``fn(f)`` (``f``
    without ``fn``) for ``f`` the record itself (``key`` None), its field
    ``record[key]`` (an int ``key``), or, for a str ``key``, ``record[key]``
    of a dict and the attribute ``key`` of anything else.

    Costs one call of ``fn`` per record (if given) and nothing else in
    Python. Raises RouteError when a record lacks the field or a key does
    not hash (``name`` names the route in the message); what ``fn`` raises
    propagates unchanged.

    >>> route_records([("a", 1), ("b", 2)], 3, key=0).tolist() == [
    ...     stable_hash("a") % 3, stable_hash("b") % 3]
    True
    """
    if peers < 1:
        raise ValueError(f"peers must be at least 1, not {peers}")
    check_key(key)
    cdef Py_ssize_t n = len(records)
    out = np.empty(n, dtype=np.int64)
    route_into(records, n, peers, key, fn, name,
               <int64_t *>cnp.PyArray_DATA(<cnp.ndarray>out))
    return out


def partition_records(list records, Py_ssize_t peers, key=None, fn=None, name="fn"):
    """The records for each of ``peers`` workers, as :func:`route_records`
    routes them: a list of ``peers`` lists, each in input order. One pass to
    route, one to place; no per-record Python beyond ``fn``.

    >>> partition_records([3, 4, 5, "x"], 2)
    [[4], [3, 5, 'x']]
    """
    if peers < 1:
        raise ValueError(f"peers must be at least 1, not {peers}")
    check_key(key)
    cdef Py_ssize_t n = len(records)
    cdef int64_t *dest = <int64_t *>PyMem_Malloc(<size_t>(n if n else 1) * sizeof(int64_t))
    if dest == NULL:
        raise MemoryError()
    try:
        route_into(records, n, peers, key, fn, name, dest)
        return split_into(records, n, dest, peers)
    finally:
        PyMem_Free(dest)


def split_records(list records, dest, Py_ssize_t peers):
    """The records for each of ``peers`` workers by their workers ``dest`` (one
    per record, each in ``[0, peers)``; ValueError otherwise): a list of
    ``peers`` lists, each in input order."""
    cdef const int64_t[::1] d = np.ascontiguousarray(dest, dtype=np.int64)
    cdef Py_ssize_t n = len(records), i
    if d.shape[0] != n:
        raise ValueError(f"{d.shape[0]} workers for {n} records")
    for i in range(n):
        if d[i] < 0 or d[i] >= peers:
            raise ValueError(f"record {i} routes to worker {d[i]}, not in [0, {peers})")
    if n == 0:
        return [[] for _ in range(peers)]
    return split_into(records, n, &d[0], peers)
