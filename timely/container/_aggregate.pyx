"""Hash aggregation of columnar rows: count, sum, min and max per key.

A :class:`GroupBy` folds batches of ``(key, value)`` rows, or partial
aggregates made by another GroupBy, into one accumulator per distinct key.
Keys are integer columns (any int, uint or bool dtype), fixed-width byte or
text columns (``S``/``U``), string columns
(:class:`~timely.container.StringColumn`) or object columns (``str``, or any
hashable Python value); values are integer (summed as int64, wrapping on
overflow) or floating point (float64).

Every row costs one hash and one probe of an open-addressing table in C:
integers hash as themselves, fixed-width keys and string columns by their
bytes (no Python ``str`` is made), objects by ``PyObject_Hash`` and
``PyObject_RichCompareBool`` on the C level (the same equality a dict uses).
No Python code runs per row, except a key object's own ``__hash__``/``__eq__``.

>>> import numpy as np
>>> g = GroupBy(("count", "sum", "max"))
>>> g.update(np.array(["b", "a", "b"], dtype=object), np.array([1, 2, 3]))
>>> g.update(np.array(["a"], dtype=object), np.array([10]))
>>> keys, columns = g.result()
>>> keys.tolist(), columns["count"].tolist(), columns["sum"].tolist(), columns["max"].tolist()
(['b', 'a'], [2, 2], [4, 12], [3, 10])
"""

cimport cython
cimport numpy as cnp
from cpython.object cimport Py_EQ
from cpython.ref cimport PyObject
from libc.math cimport INFINITY
from libc.stdint cimport INT32_MAX, INT64_MAX, INT64_MIN, int64_t, uint8_t, uint32_t, uint64_t
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcmp, memcpy, memmove, memset

import numpy as np

from timely.container._columns cimport StringColumn, wrap_strings

from timely.container._columns import strings_or_none
from timely.errors import AggregateError, TimelyError

cnp.import_array()


cdef extern from "hash.h" nogil:
    uint64_t string_word "tly_string_word"(const uint8_t *p, size_t n)
    uint64_t hash_string "tly_hash_string"(const uint8_t *p, size_t n, uint64_t word)


cdef extern from "Python.h":
    # Declared on PyObject* so that reading a key from an array takes no
    # reference: the arrays being read keep their keys alive.
    Py_hash_t object_hash "PyObject_Hash"(PyObject *o) except? -1
    int object_equal "PyObject_RichCompareBool"(PyObject *a, PyObject *b, int op) except -1
    void incref "Py_INCREF"(PyObject *o)
    void xdecref "Py_XDECREF"(PyObject *o)
    PyObject *Py_None


AGGREGATES = ("count", "sum", "min", "max")

cdef enum:
    KEYS_UNSET = 0
    KEYS_INT = 1
    KEYS_FIXED = 2
    KEYS_OBJECT = 3
    KEYS_STRING = 4

cdef enum:
    VALUES_UNSET = 0
    VALUES_INT = 1
    VALUES_FLOAT = 2

# Rows are hashed into groups this many at a time (their group ids are held
# for the fold); a probing loop that finds the groups full stops, and its
# caller doubles them and goes on: the loops themselves never allocate.
cdef Py_ssize_t CHUNK = 1 << 14
# The groups a table first has room for; it doubles as keys arrive.
cdef Py_ssize_t FIRST_GROUPS = 256
# Fibonacci hashing: the top bits of h * 2^64/phi pick the slot, so keys that
# differ only in high bits, or are multiples of a power of two, still spread.
cdef uint64_t FIB = 0x9E3779B97F4A7C15ULL


@cython.overflowcheck(False)  # hashes wrap modulo 2**64 on purpose
cdef inline uint64_t hash_bytes(const unsigned char *p, Py_ssize_t width) noexcept nogil:
    # Trailing NULs are padding in numpy's fixed-width types: they do not
    # count, so a key hashes the same at every width it is stored at.
    cdef Py_ssize_t m = width
    cdef uint64_t h = 0xCBF29CE484222325ULL
    cdef Py_ssize_t i
    while m > 0 and p[m - 1] == 0:
        m -= 1
    for i in range(m):
        h = (h ^ p[i]) * 0x100000001B3ULL
    return h ^ (h >> 29)


ctypedef fused number:
    int64_t
    double


cdef number *grow(number *p, Py_ssize_t old, Py_ssize_t new, number fill) except NULL:
    """``p`` reallocated to ``new`` items, those past ``old`` set to ``fill``."""
    cdef number *q = <number *>realloc(p, <size_t>new * sizeof(number) if new else 8)
    cdef Py_ssize_t i
    if q == NULL:
        raise MemoryError()
    for i in range(old, new):
        q[i] = fill
    return q


@cython.overflowcheck(False)  # int64 sums wrap modulo 2**64 on purpose
cdef void fold_values(number *sums, number *mins, number *maxs, const int64_t *ids,
                      Py_ssize_t n, const number *sv, const number *lo,
                      const number *hi) noexcept nogil:
    """Folds values into the accumulators that are not NULL."""
    cdef Py_ssize_t i
    cdef int64_t g
    cdef number x
    if sums != NULL:
        for i in range(n):
            g = ids[i]
            if number is int64_t:
                sums[g] = <int64_t>(<uint64_t>sums[g] + <uint64_t>sv[i])
            else:
                sums[g] += sv[i]
    if mins != NULL:
        for i in range(n):
            g = ids[i]
            x = lo[i]
            if number is double:
                if x < mins[g] or x != x:       # NaN sticks, as in np.min
                    mins[g] = x
            else:
                if x < mins[g]:
                    mins[g] = x
    if maxs != NULL:
        for i in range(n):
            g = ids[i]
            x = hi[i]
            if number is double:
                if x > maxs[g] or x != x:
                    maxs[g] = x
            else:
                if x > maxs[g]:
                    maxs[g] = x


cdef inline const void *data_of(object array) noexcept:
    return cnp.PyArray_DATA(<cnp.ndarray>array)


def aggregate_names(how):
    """``how`` as a tuple of distinct aggregate names."""
    hows = (how,) if isinstance(how, str) else tuple(how)
    if not hows:
        raise AggregateError("no aggregate asked for: how is empty")
    for h in hows:
        if h not in AGGREGATES:
            raise AggregateError(f"unknown aggregate {h!r}; choose from {AGGREGATES}")
    if len(set(hows)) != len(hows):
        raise AggregateError(f"an aggregate is asked for twice in {hows}")
    return hows


def _column(values, Py_ssize_t n, str what):
    array = np.asarray(values)
    if array.ndim != 1 or array.shape[0] != n:
        raise AggregateError(f"{what} has shape {array.shape}; the keys have {n} rows")
    return array


cdef object key_column(object keys):
    """``keys`` as a StringColumn or a 1-D array."""
    if isinstance(keys, StringColumn):
        return keys
    keys = np.asarray(keys)
    if keys.ndim != 1:
        raise AggregateError(f"keys have shape {keys.shape}; they are 1-D")
    return keys


cdef int value_kind(object array, str what) except -1:
    kind = array.dtype.kind
    if kind in "iub":
        return VALUES_INT
    if kind == "f":
        return VALUES_FLOAT
    raise AggregateError(f"{what} has dtype {array.dtype}; values are integer or float")


cdef class GroupBy:
    """One accumulator per distinct key, for the aggregates in ``how``
    (``"count"``, ``"sum"``, ``"min"``, ``"max"``, one or several).

    ``update(keys, values)`` folds rows; ``merge(keys, partials)`` folds
    partial aggregates (the ``result()`` of other GroupBys with the same
    ``how``), so rows may be pre-aggregated where they are and merged where
    their key lives. ``result()`` gives the keys in the order they first
    arrived and one column per aggregate: ``count`` int64; ``sum``, ``min``,
    ``max`` int64 for integer values (sums wrap modulo 2**64) or float64 for
    float values (a NaN makes the group's sum, min and max NaN).

    The key kind (integer, fixed-width ``S`` or ``U``, string column,
    object) and the value kind (integer or float) are fixed by the first rows;
    later rows of another kind raise :class:`AggregateError`, except that
    string columns and object arrays of str mix (keys then stay the kind of
    the first rows). Fixed-width keys of different widths mix (shorter ones
    are padded, as numpy compares them). String-column keys give a
    StringColumn of keys.

    Integer values are read as int64 (uint64 values above 2**63 wrap), float
    values as float64.

    Nulls (keys or values given as a numpy masked array or an
    :class:`~timely.container.ArrowColumn`), as Spark's ``groupBy().agg()``:
    a null key is a group of its own, kept apart and given last by
    ``result()``; a null value is skipped by ``count``, ``sum``, ``min`` and
    ``max``, and a group without a non-null value has a null ``sum``,
    ``min`` and ``max``. A list, struct or map key raises AggregateError.

    Cost: amortized O(1) per row in C (one hash, one probe of a table kept at
    most half full, one update per aggregate); memory O(distinct keys). The
    loops run without the GIL: one GroupBy is not for several threads at
    once. After an error (an unhashable key, for instance) the GroupBy is not
    to be used.

    >>> import numpy as np
    >>> g = GroupBy(("sum", "min"))
    >>> g.update(np.array([7, 3, 7]), np.array([1.5, 2.0, -1.0]))
    >>> keys, columns = g.result()
    >>> keys.tolist(), columns["sum"].tolist(), columns["min"].tolist()
    ([7, 3], [0.5, 2.0], [-1.0, 2.0])
    >>> total = GroupBy(("sum", "min"))
    >>> total.merge(keys, columns); total.merge(keys, columns)
    >>> total.result()[1]["sum"].tolist()
    [1.0, 4.0]
    """

    def __cinit__(self):
        self.mode = KEYS_UNSET
        self.vkind = VALUES_UNSET
        self.size = 0
        self.capacity = 0
        self.width = 0
        self.index = NULL
        self.slots = 0
        self.shift = 64
        self.hashes = NULL
        self.ikeys = NULL
        self.fkeys = NULL
        self.okeys = NULL
        self.soffsets = NULL
        self.swords = NULL
        self.sdata = NULL
        self.sdata_cap = 0
        self.count = NULL
        self.nulls = None
        self.null_type = None
        self.isum = self.imin = self.imax = NULL
        self.fsum = self.fmin = self.fmax = NULL

    def __init__(self, how=("count",)):
        self.how = aggregate_names(how)
        self.count_asked = "count" in self.how
        self.sum_on = "sum" in self.how
        self.min_on = "min" in self.how
        self.max_on = "max" in self.how
        self.count_on = self.count_asked or self.sum_on or self.min_on or self.max_on
        self.nulls = None
        self.null_type = None

    def __dealloc__(self):
        cdef Py_ssize_t g
        if self.okeys != NULL:
            for g in range(self.size):
                xdecref(self.okeys[g])
        free(self.index)
        free(self.hashes)
        free(self.ikeys)
        free(self.fkeys)
        free(self.okeys)
        free(self.soffsets)
        free(self.swords)
        free(self.sdata)
        free(self.count)
        free(self.isum)
        free(self.imin)
        free(self.imax)
        free(self.fsum)
        free(self.fmin)
        free(self.fmax)

    def __len__(self):
        return self.size

    def __repr__(self):
        return f"GroupBy(how={self.how!r}, {self.size} groups)"

    @property
    def needs_values(self) -> bool:
        """Whether ``update`` needs values (any aggregate but ``count``)."""
        return self.sum_on or self.min_on or self.max_on

    # -- storage -------------------------------------------------------------

    @cython.overflowcheck(False)  # hashes wrap modulo 2**64 on purpose
    cdef int reserve(self, Py_ssize_t extra) except -1:
        """Room for ``extra`` more groups, the index kept at most half full."""
        cdef Py_ssize_t need = self.size + extra
        cdef Py_ssize_t old = self.capacity, cap, slots, s, g
        cdef int bits
        cdef uint64_t mask
        cdef unsigned char *fk
        if need <= old:
            return 0
        cap = max(need, 2 * old, 8)
        self.hashes = <uint64_t *>grow(<int64_t *>self.hashes, old, cap, 0)
        if self.mode == KEYS_INT:
            self.ikeys = grow(self.ikeys, old, cap, 0)
        elif self.mode == KEYS_FIXED:
            fk = <unsigned char *>realloc(self.fkeys, <size_t>(cap * self.width) + 1)
            if fk == NULL:
                raise MemoryError()
            self.fkeys = fk
        elif self.mode == KEYS_OBJECT:
            self.okeys = <PyObject **>grow(<int64_t *>self.okeys, old, cap, 0)
        elif self.mode == KEYS_STRING:
            # soffsets[g] is where group g's bytes start, soffsets[size] the bytes used.
            self.soffsets = grow(self.soffsets, old + 1 if old else 0, cap + 1, 0)
            self.swords = <uint64_t *>grow(<int64_t *>self.swords, old, cap, 0)
        if self.count_on:
            self.count = grow(self.count, old, cap, 0)
        if self.vkind == VALUES_INT:
            if self.sum_on:
                self.isum = grow(self.isum, old, cap, 0)
            if self.min_on:
                self.imin = grow(self.imin, old, cap, INT64_MAX)
            if self.max_on:
                self.imax = grow(self.imax, old, cap, INT64_MIN)
        elif self.vkind == VALUES_FLOAT:
            if self.sum_on:
                self.fsum = grow(self.fsum, old, cap, 0.0)
            if self.min_on:
                self.fmin = grow(self.fmin, old, cap, INFINITY)
            if self.max_on:
                self.fmax = grow(self.fmax, old, cap, -INFINITY)
        self.capacity = cap
        bits = 4
        # A quarter full while the index fits in cache (fewer probes per
        # row), half full beyond (where each probe is a miss anyway).
        while (<Py_ssize_t>1 << bits) < (4 if cap < 65536 else 2) * cap:
            bits += 1
        slots = <Py_ssize_t>1 << bits
        free(self.index)
        self.index = NULL
        self.index = grow(<int64_t *>NULL, 0, slots, -1)
        self.slots = slots
        self.shift = 64 - bits
        mask = <uint64_t>(slots - 1)
        for g in range(self.size):
            s = <Py_ssize_t>((self.hashes[g] * FIB) >> self.shift)
            while self.index[s] >= 0:
                s = <Py_ssize_t>((<uint64_t>s + 1) & mask)
            self.index[s] = g
        return 0

    cdef int reserve_bytes(self, int64_t extra) except -1:
        """Room for ``extra`` more bytes of string keys."""
        cdef int64_t need = self.soffsets[self.size] + extra
        cdef int64_t cap = self.sdata_cap
        cdef uint8_t *p
        if need <= cap:
            return 0
        cap = max(need, 2 * cap, 64)
        p = <uint8_t *>realloc(self.sdata, <size_t>cap)
        if p == NULL:
            raise MemoryError()
        self.sdata = p
        self.sdata_cap = cap
        return 0

    cdef int widen(self, Py_ssize_t width) except -1:
        """Stores the fixed-width keys at ``width`` bytes (more than now),
        NUL-padded; their hashes do not change."""
        cdef Py_ssize_t old = self.width, g
        cdef unsigned char *fk
        if width <= old:
            return 0
        fk = <unsigned char *>realloc(self.fkeys, <size_t>(self.capacity * width) + 1)
        if fk == NULL:
            raise MemoryError()
        # From the last group down: a row's new place never overlaps an
        # earlier row's old place that is still to be moved.
        g = self.size - 1
        while g >= 0:
            memmove(fk + g * width, fk + g * old, <size_t>old)
            memset(fk + g * width + old, 0, <size_t>(width - old))
            g -= 1
        self.fkeys = fk
        self.width = width
        return 0

    cdef int set_values(self, int vkind) except -1:
        if self.vkind == vkind:
            return 0
        if self.vkind != VALUES_UNSET:
            kinds = {VALUES_INT: "integer", VALUES_FLOAT: "float"}
            raise AggregateError(
                f"{kinds[vkind]} values cannot join {kinds[self.vkind]} ones already aggregated")
        # Groups are made only once values are known: none exist yet, and
        # the next reserve() allocates every buffer afresh.
        assert self.size == 0
        self.vkind = vkind
        self.capacity = 0
        return 0

    cdef object prepare_keys(self, object keys):
        """``keys`` as a contiguous array (a StringColumn of int64 offsets for
        string keys) in the storage format of this GroupBy's key kind, fixing
        the kind (and the result's dtype) on first use."""
        cdef StringColumn strings
        if isinstance(keys, StringColumn):
            if self.mode == KEYS_OBJECT:
                return np.ascontiguousarray(keys.to_numpy())
            if self.mode == KEYS_UNSET:
                self.set_mode(KEYS_STRING, "string")
            elif self.mode != KEYS_STRING:
                self.mismatch("string")
            strings = keys
            if strings.wide:
                return strings
            return wrap_strings(strings.offsets.astype(np.int64), strings.data, None)
        dtype = keys.dtype
        kind = dtype.kind
        if kind == "O" and self.mode == KEYS_STRING:
            strings = strings_or_none(keys) if len(keys) else wrap_strings(
                np.zeros(1, dtype=np.int64), np.empty(0, dtype=np.uint8), None)
            if strings is None:
                self.mismatch(dtype)
            return self.prepare_keys(strings)
        if kind in "iub":
            if self.mode == KEYS_UNSET:
                self.set_mode(KEYS_INT, dtype)
            elif self.mode != KEYS_INT:
                self.mismatch(dtype)
            elif dtype != self.key_dtype:
                promoted = np.promote_types(self.key_dtype, dtype)
                self.key_dtype = promoted if promoted.kind in "iub" else np.dtype(np.int64)
            # uint64 above 2**63 wraps here and back in result(): the bits are the key.
            return np.ascontiguousarray(keys.astype(np.int64, copy=False))
        if kind in "SU":
            if not dtype.isnative:
                keys = keys.astype(dtype.newbyteorder("="))
                dtype = keys.dtype
            if dtype.itemsize == 0:
                keys = keys.astype(f"{kind}1")
                dtype = keys.dtype
            if self.mode == KEYS_UNSET:
                self.set_mode(KEYS_FIXED, dtype)
                self.widen(dtype.itemsize)
            elif self.mode != KEYS_FIXED or self.key_dtype.kind != kind:
                self.mismatch(dtype)
            if dtype.itemsize > self.width:
                self.widen(dtype.itemsize)
                self.key_dtype = dtype
            elif dtype.itemsize < self.width:
                keys = keys.astype(self.key_dtype)
            return np.ascontiguousarray(keys)
        if kind == "O":
            if self.mode == KEYS_UNSET:
                self.set_mode(KEYS_OBJECT, dtype)
            elif self.mode != KEYS_OBJECT:
                self.mismatch(dtype)
            return np.ascontiguousarray(keys)
        raise AggregateError(
            f"keys of dtype {dtype} are not supported: use integer, fixed-width "
            "bytes or text (S, U), string, or object (str) keys")

    cdef int set_mode(self, int mode, object dtype) except -1:
        # Groups exist only once keys do: as in set_values.
        assert self.size == 0
        self.mode = mode
        self.key_dtype = dtype
        self.capacity = 0
        return 0

    cdef int mismatch(self, object dtype) except -1:
        raise AggregateError(f"keys of dtype {dtype} cannot join keys of dtype "
                             f"{self.key_dtype} already aggregated")

    # -- the hot loops -------------------------------------------------------

    @cython.overflowcheck(False)  # hashes wrap modulo 2**64 on purpose
    cdef Py_ssize_t assign_int(self, const int64_t *keys, Py_ssize_t n,
                               int64_t *ids) noexcept nogil:
        # Stops before the first row that needs a group when every group's
        # place is taken: returns the rows assigned.
        cdef int64_t *index = self.index
        cdef int64_t *stored = self.ikeys
        cdef uint64_t *hashes = self.hashes
        cdef uint64_t mask = <uint64_t>(self.slots - 1)
        cdef int shift = self.shift
        cdef Py_ssize_t size = self.size, cap = self.capacity, i = 0
        cdef uint64_t s
        cdef int64_t k, g
        while i < n:
            k = keys[i]
            s = (<uint64_t>k * FIB) >> shift
            while True:
                g = index[s]
                if g < 0:
                    if size == cap:
                        self.size = size
                        return i
                    g = size
                    size += 1
                    stored[g] = k
                    hashes[g] = <uint64_t>k
                    index[s] = g
                    break
                if stored[g] == k:
                    break
                s = (s + 1) & mask
            ids[i] = g
            i += 1
        self.size = size
        return n

    @cython.overflowcheck(False)  # hashes wrap modulo 2**64 on purpose
    cdef Py_ssize_t assign_fixed(self, const unsigned char *rows, Py_ssize_t n,
                                 int64_t *ids) noexcept nogil:
        # As assign_int: stops when the groups are full.
        cdef int64_t *index = self.index
        cdef unsigned char *stored = self.fkeys
        cdef uint64_t *hashes = self.hashes
        cdef uint64_t mask = <uint64_t>(self.slots - 1)
        cdef int shift = self.shift
        cdef Py_ssize_t size = self.size, width = self.width, cap = self.capacity, i = 0
        cdef const unsigned char *row
        cdef uint64_t s, h
        cdef int64_t g
        while i < n:
            row = rows + i * width
            h = hash_bytes(row, width)
            s = (h * FIB) >> shift
            while True:
                g = index[s]
                if g < 0:
                    if size == cap:
                        self.size = size
                        return i
                    g = size
                    size += 1
                    memcpy(stored + g * width, row, <size_t>width)
                    hashes[g] = h
                    index[s] = g
                    break
                if hashes[g] == h and memcmp(stored + g * width, row, <size_t>width) == 0:
                    break
                s = (s + 1) & mask
            ids[i] = g
            i += 1
        self.size = size
        return n

    @cython.overflowcheck(False)  # hashes wrap modulo 2**64 on purpose
    cdef Py_ssize_t assign_string(self, const int64_t *offsets, const uint8_t *data,
                                  Py_ssize_t n, int64_t *ids) noexcept nogil:
        # As assign_int: stops when the groups are full, or a new key's
        # bytes do not fit in what is stored.
        cdef int64_t *index = self.index
        cdef int64_t *starts = self.soffsets
        cdef uint64_t *words = self.swords
        cdef uint8_t *stored = self.sdata
        cdef uint64_t *hashes = self.hashes
        cdef uint64_t mask = <uint64_t>(self.slots - 1)
        cdef int shift = self.shift
        cdef Py_ssize_t size = self.size, cap = self.capacity, i = 0
        cdef int64_t room = self.sdata_cap
        cdef const uint8_t *row
        cdef int64_t length, g
        cdef uint64_t s, h, word
        while i < n:
            row = data + offsets[i]
            length = offsets[i + 1] - offsets[i]
            word = string_word(row, <size_t>length)
            h = hash_string(row, <size_t>length, word)
            s = (h * FIB) >> shift
            while True:
                g = index[s]
                if g < 0:
                    if size == cap or starts[size] + length > room:
                        self.size = size
                        return i
                    g = size
                    size += 1
                    if length:
                        memcpy(stored + starts[g], row, <size_t>length)
                    starts[g + 1] = starts[g] + length
                    words[g] = word
                    hashes[g] = h
                    index[s] = g
                    break
                if (hashes[g] == h and words[g] == word and starts[g + 1] - starts[g] == length
                        and (length <= 8 or memcmp(stored + starts[g] + 8, row + 8,
                                                   <size_t>(length - 8)) == 0)):
                    break
                s = (s + 1) & mask
            ids[i] = g
            i += 1
        self.size = size
        return n

    @cython.overflowcheck(False)  # hashes wrap modulo 2**64 on purpose
    cdef Py_ssize_t assign_object(self, PyObject **keys, Py_ssize_t n,
                                  int64_t *ids) except -1:
        # As assign_int: stops when the groups are full.
        # A key's __eq__ may run Python code; it cannot reach these buffers,
        # and `keys` stays alive because the caller holds its array.
        cdef int64_t *index = self.index
        cdef PyObject **stored = self.okeys
        cdef uint64_t *hashes = self.hashes
        cdef uint64_t mask = <uint64_t>(self.slots - 1)
        cdef int shift = self.shift
        cdef Py_ssize_t i = 0, cap = self.capacity
        cdef PyObject *key
        cdef PyObject *other
        cdef uint64_t s, h
        cdef int64_t g
        while i < n:
            key = keys[i]
            if key == NULL:
                key = Py_None
            h = <uint64_t>object_hash(key)
            s = (h * FIB) >> shift
            while True:
                g = index[s]
                if g < 0:
                    if self.size == cap:
                        return i
                    g = self.size
                    incref(key)
                    stored[g] = key
                    hashes[g] = h
                    index[s] = g
                    self.size = g + 1
                    break
                other = stored[g]
                if other == key or (hashes[g] == h and object_equal(other, key, Py_EQ)):
                    break
                s = (s + 1) & mask
            ids[i] = g
            i += 1
        return n

    @cython.overflowcheck(False)  # counts wrap like sums rather than check without the GIL
    cdef void fold(self, const int64_t *ids, Py_ssize_t n, const int64_t *counts,
                   const void *sums, const void *mins, const void *maxs) noexcept nogil:
        """Folds rows (``counts`` NULL: each row counts 1) or partial aggregates."""
        cdef Py_ssize_t i
        cdef int64_t *acc
        if self.count_on:
            acc = self.count
            if counts == NULL:
                for i in range(n):
                    acc[ids[i]] += 1
            else:
                for i in range(n):
                    acc[ids[i]] += counts[i]
        if self.vkind == VALUES_INT:
            fold_values(self.isum if self.sum_on else <int64_t *>NULL,
                        self.imin if self.min_on else <int64_t *>NULL,
                        self.imax if self.max_on else <int64_t *>NULL, ids, n,
                        <const int64_t *>sums, <const int64_t *>mins, <const int64_t *>maxs)
        elif self.vkind == VALUES_FLOAT:
            fold_values(self.fsum if self.sum_on else <double *>NULL,
                        self.fmin if self.min_on else <double *>NULL,
                        self.fmax if self.max_on else <double *>NULL, ids, n,
                        <const double *>sums, <const double *>mins, <const double *>maxs)

    cdef int absorb(self, object keys, object counts, object sums, object mins,
                    object maxs) except -1:
        """Hashes prepared ``keys`` into groups chunk by chunk and folds the
        matching rows of the prepared (contiguous, int64 or float64) columns."""
        cdef Py_ssize_t n = len(keys), start = 0, stop, m
        cdef Py_ssize_t vsize = 8
        cdef StringColumn strings = keys if self.mode == KEYS_STRING else None
        cdef const char *kp = (<const char *>data_of(keys) if strings is None
                               else <const char *>strings.bytes)
        cdef const int64_t *sp_off = (<const int64_t *>data_of(strings.offsets)
                                      if strings is not None else NULL)
        cdef const int64_t *cp = <const int64_t *>data_of(counts) if counts is not None else NULL
        cdef const char *sp = <const char *>data_of(sums) if sums is not None else NULL
        cdef const char *lo = <const char *>data_of(mins) if mins is not None else NULL
        cdef const char *hi = <const char *>data_of(maxs) if maxs is not None else NULL
        cdef int64_t *ids = <int64_t *>malloc(<size_t>min(n, CHUNK) * sizeof(int64_t) + 8)
        cdef Py_ssize_t kw, done, got, row
        if ids == NULL:
            raise MemoryError()
        try:
            if self.capacity == 0:
                self.reserve(min(n, FIRST_GROUPS))
            while start < n:
                stop = min(n, start + CHUNK)
                m = stop - start
                # The tables grow (doubling) only when a new key finds them
                # full: their size follows the distinct keys, not the rows.
                done = 0
                while True:
                    if self.mode == KEYS_INT:
                        with nogil:
                            got = self.assign_int(<const int64_t *>kp + start + done, m - done,
                                                  ids + done)
                    elif self.mode == KEYS_FIXED:
                        kw = self.width
                        with nogil:
                            got = self.assign_fixed(
                                <const unsigned char *>kp + (start + done) * kw, m - done,
                                ids + done)
                    elif self.mode == KEYS_STRING:
                        with nogil:
                            got = self.assign_string(sp_off + start + done, <const uint8_t *>kp,
                                                     m - done, ids + done)
                    else:
                        got = self.assign_object(<PyObject **>kp + start + done, m - done,
                                                 ids + done)
                    done += got
                    if done == m:
                        break
                    if self.size == self.capacity:
                        self.reserve(1)
                    if self.mode == KEYS_STRING:
                        row = start + done
                        self.reserve_bytes(sp_off[row + 1] - sp_off[row])
                with nogil:
                    self.fold(ids, m, cp + start if cp != NULL else NULL,
                              sp + start * vsize if sp != NULL else NULL,
                              lo + start * vsize if lo != NULL else NULL,
                              hi + start * vsize if hi != NULL else NULL)
                start = stop
        finally:
            free(ids)
        return 0

    # -- Python surface ------------------------------------------------------

    def update(self, keys, values=None):
        """Folds rows: ``keys`` and ``values`` are 1-D columns of one length
        (``values`` may be None when ``how`` is only ``count``). Either may
        hold nulls (a numpy masked array, true where null, or an
        :class:`~timely.container.ArrowColumn`): a null key is a group of its
        own, and a null value is skipped by every aggregate, ``count``
        included (as Spark's ``count(col)``, ``sum``, ``min``, ``max``)."""
        keys, kvalid, ktype = nullable_keys(keys)
        cdef Py_ssize_t n = len(keys)
        vvalid = None
        if values is not None:
            values, vvalid = nullable_values(values)
            values = _column(values, n, "the values")
        if kvalid is not None:
            self.null_type = self.null_type if self.null_type is not None else ktype
            self.null_group().update_valid(np.zeros(n - int(kvalid.sum()), dtype=np.int64),
                                           None if values is None else values[~kvalid],
                                           None if vvalid is None else vvalid[~kvalid])
            keep = np.flatnonzero(kvalid)
            keys = keys.take(keep)
            if values is not None:
                values = values[keep]
                vvalid = None if vvalid is None else vvalid[keep]
        self.update_valid(keys, values, vvalid)

    cdef int update_valid(self, object keys, object values, object valid) except -1:
        # Rows whose keys have no nulls; `valid` (or None: all) marks the
        # values that count.
        keys = key_column(keys)
        cdef Py_ssize_t n = len(keys)
        prepared = None
        if self.needs_values:
            if values is None:
                raise AggregateError(f"aggregates {self.how} need values")
            values = _column(values, n, "the values")
            vkind = value_kind(values, "the values")
            if n == 0:
                return 0
            self.set_values(vkind)
            prepared = np.ascontiguousarray(
                values, dtype=np.int64 if vkind == VALUES_INT else np.float64)
        elif values is not None:
            _column(values, n, "the values")
        if n == 0:
            return 0
        keys = self.prepare_keys(keys)
        if valid is None or valid.all():
            self.absorb(keys, None, prepared if self.sum_on else None,
                        prepared if self.min_on else None, prepared if self.max_on else None)
            return 0
        counts = valid.astype(np.int64)
        sums, mins, maxs = self.neutral(prepared, valid)
        self.absorb(keys, counts, sums, mins, maxs)
        return 0

    cdef tuple neutral(self, object prepared, object valid):
        """The sum, min and max columns with null rows replaced by values
        that change no accumulator (0, the largest and the smallest value)."""
        if prepared is None:
            return None, None, None
        if prepared.dtype == np.int64:
            big, small = INT64_MAX, INT64_MIN
        else:
            big, small = np.inf, -np.inf
        return (np.where(valid, prepared, 0).astype(prepared.dtype) if self.sum_on else None,
                np.where(valid, prepared, big).astype(prepared.dtype) if self.min_on else None,
                np.where(valid, prepared, small).astype(prepared.dtype) if self.max_on else None)

    cdef GroupBy null_group(self):
        if self.nulls is None:
            self.nulls = GroupBy(self.how)
        return <GroupBy>self.nulls

    def merge(self, keys, partials):
        """Folds partial aggregates: ``partials`` maps each name in ``how`` to
        a column of one value per key, as in another GroupBy's ``result()``
        (``count`` is added, ``sum`` added, ``min``/``max`` compared; a null
        ``sum``/``min``/``max``, a group without values, is skipped). A key
        may appear in several rows; a null key merges into the null group."""
        keys, kvalid, ktype = nullable_keys(keys)
        cdef Py_ssize_t n = len(keys)
        if kvalid is not None:
            self.null_type = self.null_type if self.null_type is not None else ktype
            nulls = np.flatnonzero(~kvalid)
            self.null_group().merge_valid(np.zeros(len(nulls), dtype=np.int64),
                                          take_partials(partials, self.how, nulls, n))
            keep = np.flatnonzero(kvalid)
            partials = take_partials(partials, self.how, keep, n)
            keys = keys.take(keep)
        self.merge_valid(keys, partials)

    cdef int merge_valid(self, object keys, object partials) except -1:
        keys = key_column(keys)
        cdef Py_ssize_t n = len(keys)
        columns = {}
        vkind = VALUES_UNSET
        valid = None
        for name in self.how:
            try:
                column = partials[name]
            except KeyError:
                raise AggregateError(f"the partial aggregates have no {name!r} column") from None
            column, column_valid = nullable_values(column)
            column = _column(column, n, f"the partial {name!r} column")
            if name == "count":
                if column.dtype.kind not in "iub":
                    raise AggregateError(f"partial counts have dtype {column.dtype}, not integer")
                columns[name] = np.ascontiguousarray(column, dtype=np.int64)
                continue
            if column_valid is not None:
                valid = column_valid if valid is None else valid & column_valid
            kind = value_kind(column, f"the partial {name!r} column")
            if vkind != VALUES_UNSET and kind != vkind:
                raise AggregateError("the partial aggregates mix integer and float columns")
            vkind = kind
            columns[name] = column
        if n == 0:
            return 0
        if vkind != VALUES_UNSET:
            self.set_values(vkind)
            dtype = np.int64 if vkind == VALUES_INT else np.float64
            for name in ("sum", "min", "max"):
                if name in columns:
                    columns[name] = np.ascontiguousarray(columns[name], dtype=dtype)
        counts = columns.get("count")
        if valid is not None and not valid.all():
            if counts is None:
                counts = valid.astype(np.int64)     # the hidden count: > 0 iff values
            else:
                counts = np.where(valid, counts, 0)
            first = next(columns[h] for h in ("sum", "min", "max") if h in columns)
            sums, mins, maxs = self.neutral(first, valid)
            if "sum" in columns:
                columns["sum"] = np.where(valid, columns["sum"], sums)
            if "min" in columns:
                columns["min"] = np.where(valid, columns["min"], mins)
            if "max" in columns:
                columns["max"] = np.where(valid, columns["max"], maxs)
        keys = self.prepare_keys(keys)
        self.absorb(keys, counts, columns.get("sum"), columns.get("min"),
                    columns.get("max"))
        return 0

    def result(self):
        """``(keys, {aggregate: column})``: one row per distinct key, in the
        order the keys first arrived, the null key's group (if a null key
        came) last; new columns (the GroupBy may go on). A column with a
        null (the key column with the null key; ``sum``, ``min``, ``max`` of
        a group whose values were all null) is an
        :class:`~timely.container.ArrowColumn`."""
        keys, columns = self.plain_result()
        if self.count_on and not self.count_asked and self.needs_values:
            counts = copy_out(self.count, self.size, np.int64)
        else:
            counts = columns.get("count")
        if self.nulls is not None and len(self.nulls):
            null_keys, null_columns = (<GroupBy>self.nulls).plain_result()
            null_counts = copy_out((<GroupBy>self.nulls).count, 1, np.int64)
            keys = keys_with_null(keys, self.null_type, self.mode == KEYS_UNSET)
            for name in self.how:
                columns[name] = join_column(columns[name], null_columns[name])
            counts = None if counts is None else np.concatenate([counts, null_counts])
        if self.needs_values and counts is not None:
            empty = counts == 0
            if empty.any():
                for name in ("sum", "min", "max"):
                    if name in columns:
                        columns[name] = with_nulls(columns[name], empty)
        return keys, columns

    cdef tuple plain_result(self):
        cdef Py_ssize_t n = self.size, g
        cdef int64_t total
        cdef PyObject **out
        if self.mode == KEYS_INT:
            keys = np.empty(n, dtype=np.int64)
            if n:
                memcpy(<void *>data_of(keys), self.ikeys, <size_t>n * sizeof(int64_t))
            if self.key_dtype != keys.dtype:
                keys = keys.astype(self.key_dtype)
        elif self.mode == KEYS_FIXED:
            keys = np.empty(n, dtype=self.key_dtype)
            if n:
                memcpy(<void *>data_of(keys), self.fkeys, <size_t>(n * self.width))
        elif self.mode == KEYS_STRING:
            total = self.soffsets[n] if self.soffsets != NULL else 0
            offsets = np.zeros(n + 1, dtype=np.int64)
            if n:
                memcpy(<void *>data_of(offsets), self.soffsets, <size_t>(n + 1) * sizeof(int64_t))
            if total <= INT32_MAX:
                offsets = offsets.astype(np.int32)
            data = np.empty(total, dtype=np.uint8)
            if total:
                memcpy(<void *>data_of(data), self.sdata, <size_t>total)
            keys = wrap_strings(offsets, data, None)
        else:
            keys = np.empty(n, dtype=object)
            out = <PyObject **>data_of(keys)
            for g in range(n):
                incref(self.okeys[g])
                xdecref(out[g])
                out[g] = self.okeys[g]
        columns = {}
        for name in self.how:
            if name == "count":
                columns[name] = copy_out(self.count, n, np.int64)
            elif self.vkind == VALUES_FLOAT:
                columns[name] = copy_out(
                    self.fsum if name == "sum" else self.fmin if name == "min" else self.fmax,
                    n, np.float64)
            elif self.vkind == VALUES_INT:
                columns[name] = copy_out(
                    self.isum if name == "sum" else self.imin if name == "min" else self.imax,
                    n, np.int64)
            else:
                columns[name] = np.empty(0, dtype=np.int64)
        return keys, columns


cdef object copy_out(const void *source, Py_ssize_t n, object dtype):
    """A new array of ``n`` 8-byte items of ``dtype`` copied from ``source``."""
    array = np.empty(n, dtype=dtype)
    if n:
        memcpy(<void *>data_of(array), source, <size_t>n * 8)
    return array


# -- nulls ---------------------------------------------------------------------


def nested_type(kind) -> bool:
    """Whether the Arrow type ``kind`` is nested (a list, struct or map):
    such values neither group nor route."""
    import pyarrow as pa

    return (pa.types.is_nested(kind) or pa.types.is_dictionary(kind)
            or pa.types.is_union(kind))


cdef tuple nullable_keys(object keys):
    """``(keys, valid, arrow type)``: a key column in a form the key kinds
    take (nulls filled with some value), a bool array true where the key is
    not null (None when none is null), and the column's Arrow type (None
    when it has no nulls)."""
    from timely.container.batch import ArrowColumn, is_masked

    if type(keys) is ArrowColumn:
        import pyarrow as pa

        array = keys.array
        if nested_type(array.type):
            raise AggregateError(f"keys of Arrow type {array.type} do not group")
        valid = array.is_valid().to_numpy(zero_copy_only=False) if array.null_count else None
        if pa.types.is_string(array.type) or pa.types.is_large_string(array.type):
            filled = array.fill_null("") if array.null_count else array
            return StringColumn.from_arrow(filled), valid, array.type
        values = keys.to_numpy()
        values = np.ma.getdata(values) if is_masked(values) else values
        return values, valid, array.type
    if is_masked(keys):
        mask = np.ma.getmaskarray(keys)
        if not mask.any():
            return np.ma.getdata(keys), None, None
        import pyarrow as pa

        data = np.ma.getdata(keys)
        kind = None if data.dtype == object else pa.from_numpy_dtype(data.dtype)
        return data, ~mask, kind
    keys = key_column(keys)
    return keys, None, None


cdef tuple nullable_values(object values):
    """``(values, valid)`` as for keys, the values a numpy array."""
    from timely.container.batch import ArrowColumn, is_masked

    if type(values) is ArrowColumn:
        values = values.to_numpy()
    if is_masked(values):
        mask = np.ma.getmaskarray(values)
        return np.ma.getdata(values), (~mask if mask.any() else None)
    return values, None


cdef dict take_partials(object partials, tuple how, object rows, Py_ssize_t n):
    from timely.container.batch import ArrowColumn

    taken = {}
    for name in how:
        if name not in partials:
            raise AggregateError(f"the partial aggregates have no {name!r} column")
        column = partials[name]
        if type(column) is ArrowColumn:
            taken[name] = column.take(rows)
        else:
            taken[name] = _column(column, n, f"the partial {name!r} column")[rows]
    return taken


cdef object keys_with_null(object keys, object null_type, bint only_null):
    """The key column with one null row after its keys, as an ArrowColumn."""
    import pyarrow as pa

    from timely.container.batch import ArrowColumn

    if only_null:
        array = pa.array([], type=null_type if null_type is not None else pa.null())
    elif type(keys) is StringColumn:
        array = keys.to_arrow()
    else:
        array = pa.array(keys)
    if null_type is not None and array.type != null_type:
        array = array.cast(null_type)
    return ArrowColumn(pa.concat_arrays([array, pa.nulls(1, type=array.type)]))


cdef object join_column(object column, object more):
    return np.concatenate([column, more])


cdef object with_nulls(object column, object empty):
    """``column`` (a numpy array) with the rows where ``empty`` is true null."""
    from timely.container.batch import ArrowColumn

    return ArrowColumn.from_masked(np.ma.masked_array(column, mask=empty))
