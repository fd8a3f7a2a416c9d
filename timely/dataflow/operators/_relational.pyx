"""Keyed state in arrays for the relational operators: a hash index of keys
(one or several key columns of any common kind) numbering each distinct key,
and the per-row kernels over those numbers (min/max improvement, bucketing,
join expansion, first rows).

A key column is first encoded to int64 codes by a :class:`KeyEncoder`, in C:
fixed-width numbers by their canonical 64-bit pattern, text and bytes by a
dense id from an exact string index the encoder keeps (open addressing on the
bytes, compared byte for byte). The :class:`KeyIndex` then numbers rows of
codes. Every loop is typed C over int64/float64 buffers or the columns' own
buffers; Python objects are only read (through the C API) for object columns
of str or bytes."""

cimport cython
cimport numpy as cnp
from cpython.ref cimport PyObject
from libc.stdint cimport INT32_MAX, INT64_MAX, int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcmp, memcpy, memset

import numpy as np

from timely.container import ArrowColumn, StringColumn
from timely.errors import ColumnarError

cnp.import_array()


cdef extern from "Python.h":
    # On PyObject*: reading a row of an object array takes no reference (the
    # array keeps its objects alive while they are read).
    bint unicode_check "PyUnicode_Check"(PyObject *o) noexcept
    bint bytes_check "PyBytes_Check"(PyObject *o) noexcept
    int unicode_ready "PyUnicode_READY"(PyObject *o) except -1
    bint unicode_is_ascii "PyUnicode_IS_ASCII"(PyObject *o) noexcept
    Py_ssize_t unicode_length "PyUnicode_GET_LENGTH"(PyObject *o) noexcept
    int unicode_kind "PyUnicode_KIND"(PyObject *o) noexcept
    const void *unicode_data "PyUnicode_DATA"(PyObject *o) noexcept
    const char *bytes_data "PyBytes_AS_STRING"(PyObject *o) noexcept
    Py_ssize_t bytes_size "PyBytes_GET_SIZE"(PyObject *o) noexcept


cdef extern from "hash.h" nogil:
    size_t tly_utf8_encode(const void *units, size_t n, int width, uint8_t *out)
    uint64_t string_word "tly_string_word"(const uint8_t *p, size_t n)
    uint64_t hash_string "tly_hash_string"(const uint8_t *p, size_t n, uint64_t word)


ctypedef fused number:
    int64_t
    double

ctypedef fused integer:
    int8_t
    int16_t
    int32_t
    int64_t
    uint8_t
    uint16_t
    uint32_t
    uint64_t

ctypedef fused real:
    float
    double

# What an encoder's codes stand for, fixed by the first column it encodes.
cdef enum:
    K_NONE = 0
    K_INT = 1
    K_FLOAT = 2
    K_TIME = 3
    K_BYTES = 4
    K_TEXT = 5

cdef tuple KIND_NAMES = ("", "integer", "float", "", "bytes", "text")

# intern() results besides an id.
cdef enum:
    MISSING = -1
    NO_MEMORY = -2
    NOT_TEXT = -3

cdef int64_t CANONICAL_NAN = 0x7FF8000000000000


@cython.overflowcheck(False)  # hashes wrap modulo 2**64 on purpose
cdef inline uint64_t mix(uint64_t h, uint64_t x) noexcept nogil:
    h ^= x + 0x9E3779B97F4A7C15ULL + (h << 6) + (h >> 2)
    h ^= h >> 33
    h *= 0xFF51AFD7ED558CCDULL
    h ^= h >> 33
    return h


@cython.overflowcheck(False)  # hashes wrap modulo 2**64 on purpose
cdef inline uint64_t hash_row(const int64_t *row, Py_ssize_t width) noexcept nogil:
    cdef uint64_t h = 0xCBF29CE484222325ULL
    cdef Py_ssize_t j
    for j in range(width):
        h = mix(h, <uint64_t>row[j])
    return h


cdef void int_codes(const integer *v, Py_ssize_t n, int64_t *out, bint *negative,
                    bint *high) noexcept nogil:
    # An integer's code is its value as int64; a uint64 of 2**63 or more wraps
    # to a negative code, exact as long as no negative value shares the encoder.
    cdef Py_ssize_t i
    cdef bint below = False
    for i in range(n):
        out[i] = <int64_t>v[i]
    if integer is int8_t or integer is int16_t or integer is int32_t or integer is int64_t:
        for i in range(n):
            below |= v[i] < 0
        negative[0] = below
    elif integer is uint64_t:
        for i in range(n):
            below |= v[i] > <uint64_t>INT64_MAX
        high[0] = below


cdef void float_codes(const real *v, Py_ssize_t n, int64_t *out) noexcept nogil:
    # The float64 bits of the value: -0.0 as 0.0, every NaN as one NaN.
    cdef Py_ssize_t i
    cdef double x
    cdef int64_t bits
    for i in range(n):
        x = <double>v[i]
        if x != x:
            bits = CANONICAL_NAN
        elif x == 0.0:
            bits = 0
        else:
            memcpy(&bits, &x, 8)
        out[i] = bits


cdef class KeyEncoder:
    """Encodes the values of one key position into int64 codes, exactly:
    equal keys get equal codes and unequal keys unequal codes, for every
    column this encoder is given, at any time.

    The first column fixes the kind of the position; a later column of
    another kind raises :class:`~timely.ColumnarError` naming both columns
    and their kinds. The kinds, and what is equal:

    - ``"integer"``: signed and unsigned integers of any width, and bool (as
      0 and 1), by value. One encoder refuses to hold both negative values
      and unsigned values of ``2**63`` or more (no 64-bit code is exact for
      both).
    - ``"float"``: float16/32/64 by value; ``-0.0`` equals ``0.0`` and all
      NaNs are one key. A float is never equal to an integer: a float column
      and an integer column are of different kinds.
    - ``"datetime64[unit]"``, ``"timedelta64[unit]"``: by count in that
      unit; all NaT are one key; another unit is another kind.
    - ``"bytes"``: numpy ``S`` (trailing NUL bytes are padding, as numpy
      reads them) and object columns of bytes, byte for byte.
    - ``"text"``: :class:`~timely.container.StringColumn`, numpy ``U``
      (trailing U+0000 is padding) and object columns of str, compared by
      their UTF-8 byte for byte (a lone surrogate as its three bytes).

    Numbers are coded by their canonical 64-bit pattern. Text and bytes get
    dense ids from a string index the encoder keeps (open addressing on the
    bytes' hash, then an exact byte compare), so ids stay valid for the
    encoder's life. Cost: one pass in C per column; for text and bytes one
    hash and an expected O(1) probe per row, and the distinct strings' bytes
    plus three words each held.

    >>> import numpy as np
    >>> encoder = KeyEncoder()
    >>> encoder.encode(np.array(["b", "a", "b"], dtype=object)).tolist()
    [0, 1, 0]
    >>> encoder.encode(np.array(["a", "c"]), add=False).tolist()
    [1, -1]
    >>> encoder.kind, encoder.decode([1, 0]).tolist()
    ('text', ['a', 'b'])
    """

    def __cinit__(self):
        self.code = K_NONE
        self.dtype = None
        self.origin = None
        self.negative = False
        self.high = False
        self.data = NULL
        self.used = 0
        self.room = 0
        self.starts = NULL
        self.hashes = NULL
        self.count = 0
        self.capacity = 0
        self.table = NULL
        self.slots = 0
        self.scratch = NULL
        self.scratch_room = 0

    def __dealloc__(self):
        free(self.data)
        free(self.starts)
        free(self.hashes)
        free(self.table)
        free(self.scratch)

    @property
    def kind(self) -> str:
        """The kind of key this encoder holds ("" until a column settles it)."""
        if self.code == K_TIME:
            return str(self.dtype)
        return KIND_NAMES[self.code]

    def __len__(self):
        """The distinct strings held (for text and bytes keys; 0 for others)."""
        return self.count

    cdef int settle(self, int code, object dtype, object name, str what) except -1:
        cdef str mine, theirs
        if self.code == K_NONE:
            self.code = code
            self.dtype = dtype
            self.origin = (name, what)
            return 0
        if self.code != code or (code == K_TIME and dtype != self.dtype):
            mine = what if code == K_TIME else f"{what}: {KIND_NAMES[code]}"
            theirs = self.origin[1] if self.code == K_TIME else f"{self.origin[1]}: {self.kind}"
            raise ColumnarError(
                f"key column {name!r} ({mine}) cannot be compared with key column "
                f"{self.origin[0]!r} ({theirs}); keys at one position are of one kind")
        if code == K_INT or code == K_FLOAT:
            self.dtype = np.promote_types(self.dtype, dtype)
        return 0

    cdef int rehash(self) noexcept nogil:
        # A table of at least twice the strings held, plus one; -1 without memory.
        cdef Py_ssize_t slots = 64, s, mask
        cdef int64_t g
        cdef int64_t *table
        while slots < 2 * (self.count + 1):
            slots *= 2
        table = <int64_t *>malloc(<size_t>slots * sizeof(int64_t))
        if table == NULL:
            return -1
        for s in range(slots):
            table[s] = -1
        mask = slots - 1
        for g in range(self.count):
            s = <Py_ssize_t>(self.hashes[g] & <uint64_t>mask)
            while table[s] != -1:
                s = (s + 1) & mask
            table[s] = g
        free(self.table)
        self.table = table
        self.slots = slots
        return 0

    cdef int64_t intern(self, const uint8_t *p, int64_t n, bint add) noexcept nogil:
        # The id of the string p[0:n]; a new id if `add`, else MISSING when it
        # is not held; NO_MEMORY when an allocation fails (nothing changed).
        cdef uint64_t h = hash_string(p, <size_t>n, string_word(p, <size_t>n))
        cdef Py_ssize_t s, mask
        cdef int64_t g, a, cap
        cdef uint8_t *data
        cdef int64_t *starts
        cdef uint64_t *hashes
        if add and 2 * (self.count + 1) > self.slots:
            if self.rehash() < 0:
                return NO_MEMORY
        if self.slots == 0:
            return MISSING
        mask = self.slots - 1
        s = <Py_ssize_t>(h & <uint64_t>mask)
        while True:
            g = self.table[s]
            if g == -1:
                break
            if self.hashes[g] == h:
                a = self.starts[g]
                if self.starts[g + 1] - a == n and (n == 0 or memcmp(self.data + a, p, <size_t>n) == 0):
                    return g
            s = (s + 1) & mask
        if not add:
            return MISSING
        if self.count + 2 > self.capacity:
            cap = max(2 * self.capacity, 64)
            starts = <int64_t *>realloc(self.starts, <size_t>cap * sizeof(int64_t))
            if starts == NULL:
                return NO_MEMORY
            self.starts = starts
            hashes = <uint64_t *>realloc(self.hashes, <size_t>cap * sizeof(uint64_t))
            if hashes == NULL:
                return NO_MEMORY
            self.hashes = hashes
            if self.capacity == 0:
                self.starts[0] = 0
            self.capacity = cap
        if self.used + n > self.room:
            cap = max(2 * self.room, self.used + n, 4096)
            data = <uint8_t *>realloc(self.data, <size_t>cap)
            if data == NULL:
                return NO_MEMORY
            self.data = data
            self.room = cap
        if n:
            memcpy(self.data + self.used, p, <size_t>n)
        self.used += n
        g = self.count
        self.hashes[g] = h
        self.starts[g + 1] = self.used
        self.table[s] = g
        self.count += 1
        return g

    cdef int scratch_for(self, int64_t size) noexcept nogil:
        # At least `size` bytes of scratch for encoding one row; -1 without memory.
        cdef uint8_t *grown
        if size > self.scratch_room:
            size = max(size, 2 * self.scratch_room, 256)
            grown = <uint8_t *>realloc(self.scratch, <size_t>size)
            if grown == NULL:
                return -1
            self.scratch = grown
            self.scratch_room = size
        return 0

    cdef int64_t string_codes(self, const void *offsets, bint wide, const uint8_t *data,
                              Py_ssize_t n, int64_t *out, bint add) noexcept nogil:
        # Arrow-layout strings: row i is data[off[i]:off[i + 1]], off int32 or int64.
        cdef Py_ssize_t i
        cdef int64_t c, a, b
        cdef const int32_t *narrow = <const int32_t *>offsets
        cdef const int64_t *broad = <const int64_t *>offsets
        for i in range(n):
            if wide:
                a = broad[i]
                b = broad[i + 1]
            else:
                a = narrow[i]
                b = narrow[i + 1]
            c = self.intern(data + a, b - a, add)
            if c == NO_MEMORY:
                return c
            out[i] = c
        return 0

    cdef int64_t fixed_codes(self, const uint8_t *rows, Py_ssize_t n, Py_ssize_t width,
                             int64_t *out, bint add) noexcept nogil:
        cdef Py_ssize_t i, m
        cdef const uint8_t *row
        cdef int64_t c
        for i in range(n):
            row = rows + i * width
            m = width
            while m > 0 and row[m - 1] == 0:
                m -= 1
            c = self.intern(row, m, add)
            if c == NO_MEMORY:
                return c
            out[i] = c
        return 0

    cdef int64_t ucs4_codes(self, const uint32_t *rows, Py_ssize_t n, Py_ssize_t width,
                            int64_t *out, bint add) noexcept nogil:
        # Each row's UTF-8 in the scratch buffer (room for 4 bytes a unit).
        cdef Py_ssize_t i, j, m
        cdef const uint32_t *row
        cdef int64_t c
        cdef size_t size
        for i in range(n):
            row = rows + i * width
            m = width
            while m > 0 and row[m - 1] == 0:
                m -= 1
            for j in range(m):
                if row[j] > 0x10FFFF:
                    return NOT_TEXT
            size = tly_utf8_encode(row, <size_t>m, 4, self.scratch)
            c = self.intern(self.scratch, <int64_t>size, add)
            if c == NO_MEMORY:
                return c
            out[i] = c
        return 0

    cdef int64_t object_codes(self, PyObject **rows, Py_ssize_t n, int64_t *out, bint add,
                              bint text) noexcept:
        # Every row is a ready str (text) or a bytes: object_kind checked it.
        cdef Py_ssize_t i, length
        cdef PyObject *row
        cdef const uint8_t *p
        cdef int64_t c, size
        for i in range(n):
            row = rows[i]
            if not text:
                p = <const uint8_t *>bytes_data(row)
                size = bytes_size(row)
            elif unicode_is_ascii(row):
                p = <const uint8_t *>unicode_data(row)
                size = unicode_length(row)
            else:
                length = unicode_length(row)
                if self.scratch_for(4 * length) < 0:
                    return NO_MEMORY
                size = <int64_t>tly_utf8_encode(unicode_data(row), <size_t>length,
                                                unicode_kind(row), self.scratch)
                p = self.scratch
            c = self.intern(p, size, add)
            if c == NO_MEMORY:
                return c
            out[i] = c
        return 0

    def encode(self, column, name="key", bint add=True):
        """The int64 code of each row of ``column`` (a numpy array, a
        StringColumn, a nulls-free ArrowColumn or a sequence). With ``add``
        false, a text or bytes key not held gets -1 (never the code of a
        held key) and nothing is added. ``name`` names the column in errors."""
        cdef cnp.ndarray array, codes
        cdef Py_ssize_t n, width
        cdef int64_t *out
        cdef const void *p
        cdef int64_t done = 0
        cdef bint negative = False, high = False
        cdef int code
        cdef str kind
        if type(column) is ArrowColumn:
            if column.null_count:
                raise ColumnarError(f"key column {name!r} has {column.null_count} nulls; "
                                    f"keys have none")
            column = column.to_numpy()
        if type(column) is StringColumn:
            return self.encode_strings(column, name, add)
        array = np.asarray(column)
        if array.ndim != 1:
            raise ColumnarError(f"key column {name!r} has shape {np.shape(array)}; keys are 1-D")
        kind = array.dtype.kind
        if array.dtype.isnative:
            array = np.ascontiguousarray(array)
        else:
            array = np.ascontiguousarray(array.astype(array.dtype.newbyteorder("=")))
        n = array.shape[0]
        codes = np.empty(n, dtype=np.int64)
        out = <int64_t *>cnp.PyArray_DATA(codes)
        p = cnp.PyArray_DATA(array)
        width = array.dtype.itemsize
        if kind in "biu":
            self.settle(K_INT, array.dtype, name, str(array.dtype))
            with nogil:
                if kind == "b" or (kind == "u" and width == 1):
                    int_codes(<const uint8_t *>p, n, out, &negative, &high)
                elif kind == "u" and width == 2:
                    int_codes(<const uint16_t *>p, n, out, &negative, &high)
                elif kind == "u" and width == 4:
                    int_codes(<const uint32_t *>p, n, out, &negative, &high)
                elif kind == "u":
                    int_codes(<const uint64_t *>p, n, out, &negative, &high)
                elif width == 1:
                    int_codes(<const int8_t *>p, n, out, &negative, &high)
                elif width == 2:
                    int_codes(<const int16_t *>p, n, out, &negative, &high)
                elif width == 4:
                    int_codes(<const int32_t *>p, n, out, &negative, &high)
                else:
                    int_codes(<const int64_t *>p, n, out, &negative, &high)
            self.negative |= negative
            self.high |= high
            if self.negative and self.high:
                raise ColumnarError(
                    f"key column {name!r}: one key position holds negative integers and "
                    f"unsigned integers of 2**63 or more; no 64-bit key is exact for both")
        elif kind == "f" and width <= 8:
            self.settle(K_FLOAT, array.dtype, name, str(array.dtype))
            if width == 2:
                array = array.astype(np.float32)
                p = cnp.PyArray_DATA(array)
                width = 4
            with nogil:
                if width == 4:
                    float_codes(<const float *>p, n, out)
                else:
                    float_codes(<const double *>p, n, out)
        elif kind in "mM":
            self.settle(K_TIME, array.dtype, name, str(array.dtype))
            memcpy(out, p, <size_t>n * sizeof(int64_t))
        elif kind == "S":
            self.settle(K_BYTES, None, name, str(array.dtype))
            with nogil:
                done = self.fixed_codes(<const uint8_t *>p, n, width, out, add)
        elif kind == "U":
            self.settle(K_TEXT, None, name, str(array.dtype))
            if self.scratch_for(width + 1) < 0:
                raise MemoryError()
            with nogil:
                done = self.ucs4_codes(<const uint32_t *>p, n, width // 4, out, add)
            if done == NOT_TEXT:
                raise ColumnarError(f"key column {name!r} holds a code point above U+10FFFF: "
                                    f"not text")
        elif kind == "O":
            code = object_kind(array, name)
            if code != K_NONE:
                self.settle(code, None, name, "object of str" if code == K_TEXT else
                            "object of bytes")
                done = self.object_codes(<PyObject **>p, n, out, add, code == K_TEXT)
        else:
            raise ColumnarError(f"key column {name!r} is of dtype {array.dtype}: keys are "
                                f"integers, bools, floats, datetimes, timedeltas, bytes or text")
        if done == NO_MEMORY:
            raise MemoryError()
        return codes

    cdef object int64_column(self, object column, object name):
        # An int64 column (native order, C-contiguous) of an integer
        # position: its codes are its values, so the column itself, not a
        # copy (the index only reads it); None for any other column.
        cdef cnp.ndarray array
        cdef Py_ssize_t n, i
        cdef const int64_t *v
        cdef bint below = False
        if type(column) is not np.ndarray:
            return None
        array = column
        if (cnp.PyArray_TYPE(array) != cnp.NPY_INT64 or cnp.PyArray_NDIM(array) != 1
                or not cnp.PyArray_IS_C_CONTIGUOUS(array) or not cnp.PyArray_ISNOTSWAPPED(array)
                or self.code not in (K_NONE, K_INT)):
            return None
        self.settle(K_INT, array.dtype, name, "int64")
        n = array.shape[0]
        v = <const int64_t *>cnp.PyArray_DATA(array)
        with nogil:
            for i in range(n):
                below |= v[i] < 0
        self.negative |= below
        if self.negative and self.high:
            raise ColumnarError(
                f"key column {name!r}: one key position holds negative integers and "
                f"unsigned integers of 2**63 or more; no 64-bit key is exact for both")
        return array

    cdef object encode_strings(self, object column, object name, bint add):
        self.settle(K_TEXT, None, name, "string")
        cdef cnp.ndarray offsets = np.ascontiguousarray(column.offsets)
        cdef cnp.ndarray data = np.ascontiguousarray(column.data, dtype=np.uint8)
        cdef Py_ssize_t n = offsets.shape[0] - 1
        cdef cnp.ndarray codes = np.empty(n, dtype=np.int64)
        cdef int64_t *out = <int64_t *>cnp.PyArray_DATA(codes)
        cdef const uint8_t *bytes_ = <const uint8_t *>cnp.PyArray_DATA(data)
        cdef const void *off
        cdef int64_t done
        if offsets.dtype != np.int32:
            offsets = np.ascontiguousarray(offsets, dtype=np.int64)
        off = cnp.PyArray_DATA(offsets)
        cdef bint wide = offsets.dtype.itemsize == 8
        with nogil:
            done = self.string_codes(off, wide, bytes_, n, out, add)
        if done == NO_MEMORY:
            raise MemoryError()
        return codes

    def decode(self, codes):
        """The keys of ``codes`` (codes this encoder gave; a text or bytes
        code must be held): integers as the widest integer dtype encoded
        (uint64 if a value of 2**63 or more was), floats as the widest float
        dtype (``-0.0`` comes back as ``0.0``, a NaN as numpy's NaN),
        datetimes and timedeltas in their dtype, bytes as a numpy ``S`` array,
        text as a :class:`~timely.container.StringColumn`. O(n) in C."""
        return self.decoded(codes, False)

    cdef object decoded(self, object codes, bint fresh):
        # decode(); with `fresh` (codes an array no one else holds), int64
        # keys are the codes themselves, not a copy.
        cdef cnp.ndarray c = np.ascontiguousarray(codes, dtype=np.int64)
        cdef Py_ssize_t n = c.shape[0], i
        cdef const int64_t *g = <const int64_t *>cnp.PyArray_DATA(c)
        cdef int64_t total = 0, longest = 0, size
        cdef cnp.ndarray offsets, data
        cdef int64_t *o
        cdef uint8_t *d
        if self.code == K_NONE:
            return c.copy()
        if self.code == K_INT:
            target = self.dtype
            if target.kind == "f":          # int64 and uint64 met: no value needs both
                target = np.dtype(np.uint64 if self.high else np.int64)
            if target == np.uint64:
                return c.view(np.uint64).copy()
            return c.astype(target, copy=not fresh)
        if self.code == K_FLOAT:
            return c.view(np.float64).astype(self.dtype)
        if self.code == K_TIME:
            return c.view(self.dtype).copy()
        for i in range(n):
            if g[i] < 0 or g[i] >= self.count:
                raise IndexError(f"no string coded {g[i]}")
            size = self.starts[g[i] + 1] - self.starts[g[i]]
            total += size
            longest = max(longest, size)
        if self.code == K_BYTES:
            longest = max(longest, 1)
            data = np.zeros(n, dtype=f"S{longest}")
            d = <uint8_t *>cnp.PyArray_DATA(data)
            with nogil:
                for i in range(n):
                    size = self.starts[g[i] + 1] - self.starts[g[i]]
                    if size:
                        memcpy(d + i * longest, self.data + self.starts[g[i]], <size_t>size)
            return data
        offsets = np.empty(n + 1, dtype=np.int64)
        data = np.empty(total, dtype=np.uint8)
        o = <int64_t *>cnp.PyArray_DATA(offsets)
        d = <uint8_t *>cnp.PyArray_DATA(data)
        o[0] = 0
        with nogil:
            for i in range(n):
                size = self.starts[g[i] + 1] - self.starts[g[i]]
                if size:
                    memcpy(d + o[i], self.data + self.starts[g[i]], <size_t>size)
                o[i + 1] = o[i] + size
        return StringColumn(offsets if total > INT32_MAX else offsets.astype(np.int32), data)


cdef int object_kind(cnp.ndarray array, object name) except -1:
    # K_TEXT if every row is a str (each made ready), K_BYTES if every row is
    # a bytes, K_NONE for no rows; else ColumnarError.
    cdef Py_ssize_t n = array.shape[0], i, texts = 0, blobs = 0
    cdef PyObject **rows = <PyObject **>cnp.PyArray_DATA(array)
    for i in range(n):
        if unicode_check(rows[i]):
            unicode_ready(rows[i])
            texts += 1
        elif bytes_check(rows[i]):
            blobs += 1
        else:
            value = <object>rows[i]
            raise ColumnarError(
                f"key column {name!r} is an object column holding a {type(value).__name__} "
                f"({value!r}) in row {i}: object key columns hold str or bytes")
    if texts and blobs:
        raise ColumnarError(f"key column {name!r} holds both str and bytes")
    return K_TEXT if texts else K_BYTES if blobs else K_NONE


cdef extern from "prefetch.h" nogil:
    void prefetch "tly_prefetch"(const void *p)

cdef enum:
    AHEAD = 16              # rows between a prefetch of a key's slot and its probe
    DIRECT_SPAN = 8         # direct while the codes span at most this many cells a key
    DIRECT_SLACK = 65536    # ... plus this many


@cython.overflowcheck(False)  # hashes wrap modulo 2**64 on purpose
cdef inline uint64_t hash_one(int64_t key) noexcept nogil:
    return mix(0xCBF29CE484222325ULL, <uint64_t>key)


# The probes of one key column, as plain functions over the index's
# buffers (the compiler keeps them in registers); each prefetches the slot
# of the row AHEAD rows on, so that a batch's cache misses overlap. `rows`
# is NULL while the index keeps no codes beside its table.

cdef Py_ssize_t insert_direct(const int64_t *r, Py_ssize_t n, int64_t *o, int32_t *direct,
                              int64_t *rows, Py_ssize_t size) noexcept nogil:
    # Every r[i] is a cell of `direct`; returns the new size.
    cdef Py_ssize_t i
    cdef int64_t k
    cdef int32_t g
    for i in range(n):
        if i + AHEAD < n:
            prefetch(direct + r[i + AHEAD])
        k = r[i]
        g = direct[k]
        if g == -1:
            g = <int32_t>size
            if rows != NULL:
                rows[size] = k
            direct[k] = g
            size += 1
        o[i] = g
    return size


cdef Py_ssize_t insert_one(const int64_t *r, Py_ssize_t n, int64_t *o, int32_t *table,
                           int64_t *tkeys, Py_ssize_t mask, int64_t *rows,
                           Py_ssize_t size) noexcept nogil:
    # The table has room for every new key; returns the new size.
    cdef Py_ssize_t i, s
    cdef int64_t k
    cdef int32_t g
    for i in range(n):
        if i + AHEAD < n:
            s = <Py_ssize_t>(hash_one(r[i + AHEAD]) & <uint64_t>mask)
            prefetch(tkeys + s)
            prefetch(table + s)
        k = r[i]
        s = <Py_ssize_t>(hash_one(k) & <uint64_t>mask)
        while True:
            g = table[s]
            if g == -1:
                g = <int32_t>size
                if rows != NULL:
                    rows[size] = k
                table[s] = g
                tkeys[s] = k
                size += 1
                break
            if tkeys[s] == k:
                break
            s = (s + 1) & mask
        o[i] = g
    return size


cdef inline void place(int32_t *table, int64_t *tkeys, uint64_t mask, int64_t key,
                       int32_t g) noexcept nogil:
    # Puts key number g in a table of one key column being rebuilt.
    cdef Py_ssize_t s = <Py_ssize_t>(hash_one(key) & mask)
    while table[s] != -1:
        s = (s + 1) & <Py_ssize_t>mask
    table[s] = g
    tkeys[s] = key


cdef void lookup_one(const int64_t *r, Py_ssize_t n, int64_t *o, const int32_t *table,
                     const int64_t *tkeys, Py_ssize_t mask) noexcept nogil:
    cdef Py_ssize_t i, s
    cdef int64_t k
    cdef int32_t g
    for i in range(n):
        if i + AHEAD < n:
            s = <Py_ssize_t>(hash_one(r[i + AHEAD]) & <uint64_t>mask)
            prefetch(tkeys + s)
            prefetch(table + s)
        k = r[i]
        s = <Py_ssize_t>(hash_one(k) & <uint64_t>mask)
        while True:
            g = table[s]
            if g == -1 or tkeys[s] == k:
                break
            s = (s + 1) & mask
        o[i] = g


cdef class KeyIndex:
    """Numbers distinct keys 0, 1, 2, ... in their order of arrival.

    A key is a row of ``width`` key columns, each of any kind a
    :class:`KeyEncoder` takes (integers, bools, floats, datetimes,
    timedeltas, bytes, text; kinds may differ between positions).
    ``encoders`` (one per position) may be shared with other indexes, as the
    two sides of a join share them, so that their codes agree; by default
    each index has its own. ``insert`` numbers new keys and gives each row
    its key's number; ``lookup`` gives -1 for a key not held. ``names``
    name the columns in errors (a column whose kind cannot be compared with
    what its position holds raises :class:`~timely.ColumnarError`).

    Cost: encoding (see :class:`KeyEncoder`), then per row one probe in C,
    the probes of a batch overlapping their cache misses. Memory: a table
    of 32-bit numbers (keys to numbers), hashed by linear probing at a load
    of at most 3/4 (5 to 11 bytes a key), and the ``width`` codes of each
    key (numbers to keys). One key column keeps its keys in its table
    instead: each hashed slot holds its key beside its number, so that a
    probe reads one place (16 to 32 bytes a key), or, when its codes are
    non-negative and span at most 8 cells a key (dense ids), the code is
    the cell (4 bytes a cell, no hashing); the index switches between the
    two as its keys go, and holds the codes beside the table (8 bytes a
    key) only from the first :meth:`keys` or :meth:`take` on. At most
    ``2**31 - 1`` keys (OverflowError beyond).

    >>> import numpy as np
    >>> index = KeyIndex(1)
    >>> index.insert([np.array([7, 3, 7])]).tolist()
    [0, 1, 0]
    >>> index.lookup([np.array([3, 5])]).tolist()
    [1, -1]
    >>> len(index), index.keys()[0].tolist()
    (2, [7, 3])
    >>> pairs = KeyIndex(2)
    >>> pairs.insert([np.array(["a", "b", "a"], dtype=object), np.array([1.5, 1.5, 1.5])]).tolist()
    [0, 1, 0]
    >>> [k.tolist() for k in pairs.keys()]
    [['a', 'b'], [1.5, 1.5]]
    """

    def __cinit__(self, Py_ssize_t width=1, encoders=None):
        if width < 1:
            raise ColumnarError("a key has at least one column")
        if encoders is None:
            encoders = tuple(KeyEncoder() for _ in range(width))
        else:
            encoders = tuple(encoders)
            if len(encoders) != width or not all(type(e) is KeyEncoder for e in encoders):
                raise ColumnarError(f"a key of {width} columns takes {width} KeyEncoders")
        self.encoders = encoders
        self.width = width
        self.size = 0
        self.capacity = 0
        self.rows = NULL
        self.keyed = width > 1
        self.table = NULL
        self.tkeys = NULL
        self.slots = 0
        self.dense = width == 1
        self.direct = NULL
        self.direct_cap = 0
        self.lo = INT64_MAX
        self.hi = -1

    def __dealloc__(self):
        free(self.rows)
        free(self.table)
        free(self.tkeys)
        free(self.direct)

    def __len__(self):
        return self.size

    cdef int reserve(self, Py_ssize_t extra) except -1:
        # Room for `extra` more keys: their codes, and table slots at a load
        # of at most 3/4 (a grown table is at most half full).
        cdef Py_ssize_t need = self.size + extra
        cdef Py_ssize_t cap, slots
        cdef int64_t *keys
        if need > INT32_MAX:
            raise OverflowError(f"a KeyIndex holds at most {INT32_MAX} keys, not {need}")
        if self.keyed and need > self.capacity:
            cap = min(max(need, 2 * self.capacity, 64), <Py_ssize_t>INT32_MAX)
            keys = <int64_t *>realloc(self.rows, <size_t>(cap * self.width) * sizeof(int64_t))
            if keys == NULL:
                raise MemoryError()
            self.rows = keys
            self.capacity = cap
        if not self.dense and 4 * need > 3 * self.slots:
            if self.width == 1 and self.spans(need):
                # The keys have become dense enough: address them directly.
                self.to_direct()
                return 0
            slots = 128
            while slots < 2 * need:
                slots *= 2
            self.rehash(slots)
        return 0

    cdef bint spans(self, Py_ssize_t keys) noexcept nogil:
        # Direct addressing of every code held pays for `keys` keys.
        return self.lo >= 0 and self.hi < DIRECT_SPAN * keys + DIRECT_SLACK

    cdef int rehash(self, Py_ssize_t slots) except -1:
        # A hashed table of `slots` slots over every key held, read from the
        # codes beside the table, else from the direct cells or the old table.
        cdef Py_ssize_t g, s, c, w = self.width
        cdef uint64_t mask = <uint64_t>(slots - 1)
        cdef int32_t *table = <int32_t *>malloc(<size_t>slots * sizeof(int32_t))
        cdef int64_t *tkeys = NULL
        if table == NULL:
            raise MemoryError()
        if w == 1:
            tkeys = <int64_t *>malloc(<size_t>slots * sizeof(int64_t))
            if tkeys == NULL:
                free(table)
                raise MemoryError()
        memset(table, 0xFF, <size_t>slots * sizeof(int32_t))
        with nogil:
            if self.keyed:
                for g in range(self.size):
                    if g + AHEAD < self.size:
                        s = <Py_ssize_t>(hash_row(self.rows + (g + AHEAD) * w, w) & mask)
                        prefetch(table + s)
                        if tkeys != NULL:
                            prefetch(tkeys + s)
                    s = <Py_ssize_t>(hash_row(self.rows + g * w, w) & mask)
                    while table[s] != -1:
                        s = (s + 1) & <Py_ssize_t>mask
                    table[s] = <int32_t>g
                    if tkeys != NULL:
                        tkeys[s] = self.rows[g]
            elif self.dense:
                for c in range(self.direct_cap):
                    if self.direct[c] != -1:
                        place(table, tkeys, mask, c, self.direct[c])
            else:
                for c in range(self.slots):
                    if self.table[c] != -1:
                        place(table, tkeys, mask, self.tkeys[c], self.table[c])
        free(self.table)
        free(self.tkeys)
        self.table = table
        self.tkeys = tkeys
        self.slots = slots
        return 0

    cdef int keep_rows(self) except -1:
        # Holds the codes of every key beside the table from now on (one key
        # column keeps them only once asked: they are in its table).
        cdef Py_ssize_t c, cap
        if self.keyed:
            return 0
        cap = max(self.size, 64)
        self.rows = <int64_t *>malloc(<size_t>cap * sizeof(int64_t))
        if self.rows == NULL:
            raise MemoryError()
        self.capacity = cap
        with nogil:
            if self.dense:
                for c in range(self.direct_cap):
                    if self.direct[c] != -1:
                        self.rows[self.direct[c]] = c
            else:
                for c in range(self.slots):
                    if self.table[c] != -1:
                        self.rows[self.table[c]] = self.tkeys[c]
        self.keyed = True
        return 0

    cdef int grow_direct(self, int64_t hi) except -1:
        # Direct cells for every code up to `hi`, new cells empty (-1).
        cdef Py_ssize_t cap
        cdef int32_t *direct
        if hi < self.direct_cap:
            return 0
        cap = max(<Py_ssize_t>hi + 1, self.direct_cap + self.direct_cap // 4, 1024)
        direct = <int32_t *>realloc(self.direct, <size_t>cap * sizeof(int32_t))
        if direct == NULL:
            raise MemoryError()
        memset(direct + self.direct_cap, 0xFF, <size_t>(cap - self.direct_cap) * sizeof(int32_t))
        self.direct = direct
        self.direct_cap = cap
        return 0

    cdef int to_direct(self) except -1:
        cdef Py_ssize_t g, c
        self.grow_direct(self.hi)
        with nogil:
            if self.keyed:
                for g in range(self.size):
                    self.direct[self.rows[g]] = <int32_t>g
            else:
                for c in range(self.slots):
                    if self.table[c] != -1:
                        self.direct[self.tkeys[c]] = self.table[c]
        self.dense = True
        free(self.table)
        free(self.tkeys)
        self.table = NULL
        self.tkeys = NULL
        self.slots = 0
        return 0

    cdef int fit(self, const int64_t *keys, Py_ssize_t n) except -1:
        # One key column: notes the least and greatest code; keeps direct
        # addressing while the codes allow it, growing it to the greatest,
        # else moves every held key to hashing.
        cdef int64_t lo = INT64_MAX, hi = -1, k
        cdef Py_ssize_t i, slots = 128
        if self.width != 1 or n == 0:
            return 0
        with nogil:
            lo = keys[0]
            hi = keys[0]
            for i in range(n):
                k = keys[i]
                if k < lo:
                    lo = k
                if k > hi:
                    hi = k
        self.lo = min(self.lo, lo)
        self.hi = max(self.hi, hi)
        if not self.dense:
            if self.spans(self.size + n):
                self.to_direct()
            return 0
        if self.spans(self.size + n):
            self.grow_direct(self.hi)
            return 0
        while slots < 2 * (self.size + n):
            slots *= 2
        self.rehash(slots)
        self.dense = False
        free(self.direct)
        self.direct = NULL
        self.direct_cap = 0
        return 0

    cdef Py_ssize_t find(self, const int64_t *row, uint64_t h) noexcept nogil:
        # The table slot holding `row`, or the empty slot where it would go.
        cdef Py_ssize_t mask = self.slots - 1
        cdef Py_ssize_t s = <Py_ssize_t>(h & <uint64_t>mask)
        cdef Py_ssize_t j, w = self.width
        cdef int32_t g
        cdef const int64_t *k
        while True:
            g = self.table[s]
            if g == -1:
                return s
            k = self.rows + <Py_ssize_t>g * w
            j = 0
            while j < w and k[j] == row[j]:
                j += 1
            if j == w:
                return s
            s = (s + 1) & mask

    cdef object codes(self, columns, names, bint add):
        # The key columns' codes as one C-contiguous (n, width) int64 array.
        cdef Py_ssize_t j, w = self.width
        if len(columns) != w:
            raise ColumnarError(f"{len(columns)} key columns for an index of width {w}")
        if names is None:
            names = range(w)
        elif len(names) != w:
            raise ColumnarError(f"{len(names)} names for {w} key columns")
        if w == 1:
            held = (<KeyEncoder>self.encoders[0]).int64_column(columns[0], names[0])
            if held is not None:
                return held.reshape(-1, 1)
        parts = [(<KeyEncoder>self.encoders[j]).encode(c, name, add)
                 for j, c, name in zip(range(w), columns, names)]
        if w == 1:
            return parts[0].reshape(-1, 1)
        if any(p.shape[0] != parts[0].shape[0] for p in parts):
            raise ColumnarError(f"key columns of different lengths: {[len(p) for p in parts]}")
        return np.ascontiguousarray(np.stack(parts, 1))

    def insert(self, columns, names=None, out=None):
        """The number of each row's key, numbering keys not yet held; in
        ``out`` (an int64 array of a cell per row) when given, which is
        returned, else in a new array."""
        cdef cnp.ndarray rows = self.codes(columns, names, True)
        cdef Py_ssize_t n = rows.shape[0], i, s, w = self.width
        if out is None:
            out = np.empty(n, dtype=np.int64)
        elif (type(out) is not np.ndarray or out.dtype != np.int64 or out.ndim != 1
              or out.shape[0] != n or not out.flags.c_contiguous or not out.flags.writeable):
            raise ColumnarError(f"out is a writable int64 array of {n} cells")
        cdef int64_t *o = <int64_t *>cnp.PyArray_DATA(<cnp.ndarray>out)
        cdef const int64_t *r = <const int64_t *>cnp.PyArray_DATA(rows)
        cdef int64_t k
        cdef int32_t g
        cdef Py_ssize_t mask
        self.fit(r, n)
        self.reserve(n)
        if self.dense:
            with nogil:
                self.size = insert_direct(r, n, o, self.direct, self.rows, self.size)
            return out
        if w == 1:
            with nogil:
                self.size = insert_one(r, n, o, self.table, self.tkeys, self.slots - 1,
                                       self.rows, self.size)
            return out
        with nogil:
            for i in range(n):
                s = self.find(r + i * w, hash_row(r + i * w, w))
                g = self.table[s]
                if g == -1:
                    g = <int32_t>self.size
                    memcpy(self.rows + <Py_ssize_t>g * w, r + i * w, <size_t>w * sizeof(int64_t))
                    self.table[s] = g
                    self.size += 1
                o[i] = g
        return out

    def lookup(self, columns, names=None):
        """The number of each row's key, -1 where the key is not held."""
        return self.lookup_codes(self.codes(columns, names, False))

    def encode(self, columns, names=None):
        """The key columns' codes as one ``(n, width)`` int64 array, as
        :meth:`lookup` makes them (adding no string): what
        :meth:`lookup_codes` takes, so that the keys of one batch probed in
        several indexes sharing these encoders are encoded once."""
        return self.codes(columns, names, False)

    def lookup_codes(self, codes):
        """:meth:`lookup` of keys already encoded (by :meth:`encode` of an
        index with the same encoders)."""
        cdef cnp.ndarray rows = np.ascontiguousarray(codes, dtype=np.int64)
        if rows.ndim != 2 or rows.shape[1] != self.width:
            raise ColumnarError(f"codes of shape {np.shape(rows)} for an index of width "
                                f"{self.width}")
        cdef Py_ssize_t n = rows.shape[0], i, w = self.width, s
        cdef cnp.ndarray out = np.empty(n, dtype=np.int64)
        cdef int64_t *o = <int64_t *>cnp.PyArray_DATA(out)
        cdef const int64_t *r = <const int64_t *>cnp.PyArray_DATA(rows)
        cdef int64_t k
        cdef int32_t g
        cdef Py_ssize_t mask
        if self.size == 0:
            out.fill(-1)
            return out
        if self.dense:
            with nogil:
                for i in range(n):
                    if i + AHEAD < n and 0 <= r[i + AHEAD] < self.direct_cap:
                        prefetch(self.direct + r[i + AHEAD])
                    k = r[i]
                    o[i] = self.direct[k] if 0 <= k < self.direct_cap else -1
            return out
        if w == 1:
            with nogil:
                lookup_one(r, n, o, self.table, self.tkeys, self.slots - 1)
            return out
        with nogil:
            for i in range(n):
                o[i] = self.table[self.find(r + i * w, hash_row(r + i * w, w))]
        return out

    def keys(self):
        """The held keys in number order, one column per key position, as
        :meth:`KeyEncoder.decode` gives them (int64 for integer keys)."""
        cdef cnp.ndarray flat = np.empty((self.size, self.width), dtype=np.int64)
        self.keep_rows()
        if self.size:
            memcpy(cnp.PyArray_DATA(flat), self.rows,
                   <size_t>(self.size * self.width) * sizeof(int64_t))
        return tuple((<KeyEncoder>self.encoders[j]).decoded(flat[:, j], True)
                     for j in range(self.width))

    def take(self, ids):
        """The keys numbered ``ids`` (each in ``0..len - 1``), one column per
        key position, as :meth:`keys` gives them."""
        cdef const int64_t[::1] g = np.ascontiguousarray(ids, dtype=np.int64)
        cdef Py_ssize_t n = g.shape[0], i, j, w = self.width
        cdef cnp.ndarray flat = np.empty((n, w), dtype=np.int64)
        cdef int64_t *o = <int64_t *>cnp.PyArray_DATA(flat)
        for i in range(n):
            if g[i] < 0 or g[i] >= self.size:
                raise IndexError(f"no key numbered {g[i]}")
        self.keep_rows()
        with nogil:
            for i in range(n):
                for j in range(w):
                    o[i * w + j] = self.rows[g[i] * w + j]
        return tuple((<KeyEncoder>self.encoders[j]).decoded(flat[:, j], True) for j in range(w))


def improve(number[::1] state, const int64_t[::1] ids, const number[::1] values, bint minimize=True):
    """Lowers (or raises) ``state[ids[i]]`` to ``values[i]`` where that is an
    improvement; returns ``(improved, rows)``: the distinct ids improved, in
    order of first improvement, and for each a row ``i`` of that id (the
    first that improved it).

    Cost: O(n) in C, plus a byte per id of ``state``."""
    cdef Py_ssize_t n = ids.shape[0], i, m = 0
    cdef int64_t g
    cdef cnp.ndarray mark = np.zeros(state.shape[0], dtype=np.uint8)
    cdef unsigned char[::1] mk = mark
    cdef cnp.ndarray out = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] o = out
    cdef cnp.ndarray where = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] at = where
    with nogil:
        for i in range(n):
            g = ids[i]
            if (values[i] < state[g]) if minimize else (values[i] > state[g]):
                state[g] = values[i]
                if not mk[g]:
                    mk[g] = 1
                    o[m] = g
                    at[m] = i
                    m += 1
    return out[:m], where[:m]


def first_rows(const int64_t[::1] ids, int64_t start):
    """The row of the first occurrence of each id ``start, start + 1, ...``
    in ``ids``, numbered in order of first arrival as :meth:`KeyIndex.insert`
    gives them (so the ids from ``start`` on first occur in increasing order).
    O(n) in C."""
    cdef Py_ssize_t n = ids.shape[0], i, m = 0
    cdef int64_t following = start
    cdef cnp.ndarray out = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] o = out
    with nogil:
        for i in range(n):
            if ids[i] == following:
                o[m] = i
                m += 1
                following += 1
    return out[:m]


def bucket(const int64_t[::1] ids, Py_ssize_t groups):
    """A counting sort of rows by id (ids in ``0..groups-1``, or -1 to leave
    out): ``(order, starts)`` with the rows of id ``g`` at
    ``order[starts[g]:starts[g + 1]]``, in their original order. O(n + groups)."""
    cdef Py_ssize_t n = ids.shape[0], i, g
    cdef cnp.ndarray starts_a = np.zeros(groups + 1, dtype=np.int64)
    cdef int64_t[::1] starts = starts_a
    cdef cnp.ndarray fill_a
    cdef int64_t[::1] fill
    cdef cnp.ndarray order_a
    cdef int64_t[::1] order
    with nogil:
        for i in range(n):
            if ids[i] >= 0:
                starts[ids[i] + 1] += 1
        for g in range(groups):
            starts[g + 1] += starts[g]
    order_a = np.empty(starts[groups], dtype=np.int64)
    order = order_a
    fill_a = starts_a[:groups].copy()
    fill = fill_a
    with nogil:
        for i in range(n):
            g = ids[i]
            if g >= 0:
                order[fill[g]] = i
                fill[g] += 1
    return order_a, starts_a


def expand(const int64_t[::1] probe, const int64_t[::1] order, const int64_t[::1] starts):
    """The pairs of a join: for probe row ``i`` with id ``probe[i]`` (-1: no
    match) and every build row ``order[starts[g]:starts[g + 1]]`` of that id,
    one pair ``(i, build row)``. Returns two int64 arrays. O(n + pairs)."""
    cdef Py_ssize_t n = probe.shape[0], i, total = 0, k, p = 0
    cdef int64_t g
    with nogil:
        for i in range(n):
            g = probe[i]
            if g >= 0:
                total += starts[g + 1] - starts[g]
    cdef cnp.ndarray left_a = np.empty(total, dtype=np.int64)
    cdef cnp.ndarray right_a = np.empty(total, dtype=np.int64)
    cdef int64_t[::1] left = left_a
    cdef int64_t[::1] right = right_a
    with nogil:
        for i in range(n):
            g = probe[i]
            if g >= 0:
                for k in range(starts[g], starts[g + 1]):
                    left[p] = i
                    right[p] = order[k]
                    p += 1
    return left_a, right_a
