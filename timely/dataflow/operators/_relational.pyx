"""Keyed state in arrays for the relational operators: a hash index of
integer keys (one or several int64 columns) numbering each distinct key, and
the per-row kernels over those numbers (min/max improvement, bucketing,
join expansion). Every loop is typed C over int64/float64 buffers."""

cimport cython
cimport numpy as cnp
from libc.stdint cimport int64_t, uint64_t
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcpy

import numpy as np

from timely.errors import ColumnarError

cnp.import_array()

ctypedef fused number:
    int64_t
    double


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


def _columns(columns, Py_ssize_t width):
    """The key columns as one C-contiguous (n, width) int64 array."""
    if len(columns) != width:
        raise ColumnarError(f"{len(columns)} key columns for an index of width {width}")
    arrays = [np.asarray(c) for c in columns]
    for a in arrays:
        if a.ndim != 1 or a.dtype.kind not in "iub":
            raise ColumnarError(f"key columns are integer columns, not {a.dtype}")
    if width == 1:
        return np.ascontiguousarray(arrays[0], dtype=np.int64).reshape(-1, 1)
    return np.ascontiguousarray(np.stack([a.astype(np.int64, copy=False) for a in arrays], 1))


cdef class KeyIndex:
    """Numbers distinct integer keys 0, 1, 2, ... in their order of arrival.

    A key is a row of ``width`` int64 columns. ``insert`` numbers new keys
    and gives each row its key's number; ``lookup`` gives -1 for a key not
    held. Cost: one hash and an expected O(1) probe per row, in C; memory
    ``width + 2`` words per key.

    >>> import numpy as np
    >>> index = KeyIndex(1)
    >>> index.insert([np.array([7, 3, 7])]).tolist()
    [0, 1, 0]
    >>> index.lookup([np.array([3, 5])]).tolist()
    [1, -1]
    >>> len(index), index.keys()[0].tolist()
    (2, [7, 3])
    """

    def __cinit__(self, Py_ssize_t width=1):
        if width < 1:
            raise ColumnarError("a key has at least one column")
        self.width = width
        self.size = 0
        self.capacity = 0
        self.rows = NULL
        self.table = NULL
        self.slots = 0
        self.dense = width == 1
        self.direct = NULL
        self.direct_cap = 0

    def __dealloc__(self):
        free(self.rows)
        free(self.table)
        free(self.direct)

    def __len__(self):
        return self.size

    cdef int reserve(self, Py_ssize_t extra) except -1:
        cdef Py_ssize_t need = self.size + extra
        cdef Py_ssize_t cap, slots, g, s
        cdef int64_t *keys
        cdef int64_t *table
        cdef uint64_t mask
        if need > self.capacity:
            cap = max(need, 2 * self.capacity, 64)
            keys = <int64_t *>realloc(self.rows, <size_t>(cap * self.width) * sizeof(int64_t))
            if keys == NULL:
                raise MemoryError()
            self.rows = keys
            self.capacity = cap
        if not self.dense and 2 * need > self.slots:
            slots = 128
            while slots < 2 * need:
                slots *= 2
            table = <int64_t *>malloc(<size_t>slots * sizeof(int64_t))
            if table == NULL:
                raise MemoryError()
            for s in range(slots):
                table[s] = -1
            mask = <uint64_t>(slots - 1)
            for g in range(self.size):
                s = <Py_ssize_t>(hash_row(self.rows + g * self.width, self.width) & mask)
                while table[s] != -1:
                    s = (s + 1) & <Py_ssize_t>mask
                table[s] = g
            free(self.table)
            self.table = table
            self.slots = slots
        return 0

    cdef int fit(self, const int64_t *keys, Py_ssize_t n) except -1:
        # Keeps direct addressing if the keys allow it (all in 0..limit), growing
        # the direct table to the largest; else moves every held key to hashing.
        cdef int64_t lo = 0, hi = -1, k
        cdef Py_ssize_t i, cap
        cdef int64_t *direct
        if not self.dense:
            return 0
        if n:
            lo = keys[0]
            hi = keys[0]
            for i in range(n):
                k = keys[i]
                if k < lo:
                    lo = k
                if k > hi:
                    hi = k
        if lo >= 0 and hi < 8 * (self.size + n) + 65536:
            if hi >= self.direct_cap:
                cap = max(<Py_ssize_t>hi + 1, 2 * self.direct_cap, 1024)
                direct = <int64_t *>realloc(self.direct, <size_t>cap * sizeof(int64_t))
                if direct == NULL:
                    raise MemoryError()
                for i in range(self.direct_cap, cap):
                    direct[i] = -1
                self.direct = direct
                self.direct_cap = cap
            return 0
        self.dense = False
        free(self.direct)
        self.direct = NULL
        self.direct_cap = 0
        self.reserve(0)
        return 0

    cdef Py_ssize_t find(self, const int64_t *row, uint64_t h) noexcept nogil:
        # The table slot holding `row`, or the empty slot where it would go.
        cdef Py_ssize_t mask = self.slots - 1
        cdef Py_ssize_t s = <Py_ssize_t>(h & <uint64_t>mask)
        cdef Py_ssize_t j, w = self.width
        cdef int64_t g
        cdef const int64_t *k
        while True:
            g = self.table[s]
            if g == -1:
                return s
            k = self.rows + g * w
            j = 0
            while j < w and k[j] == row[j]:
                j += 1
            if j == w:
                return s
            s = (s + 1) & mask

    def insert(self, columns):
        """The number of each row's key, numbering keys not yet held."""
        cdef cnp.ndarray rows = _columns(columns, self.width)
        cdef Py_ssize_t n = rows.shape[0], i, s, w = self.width
        cdef cnp.ndarray out = np.empty(n, dtype=np.int64)
        cdef int64_t *o = <int64_t *>cnp.PyArray_DATA(out)
        cdef const int64_t *r = <const int64_t *>cnp.PyArray_DATA(rows)
        cdef int64_t g, k
        self.fit(r, n if w == 1 else 0)
        self.reserve(n)
        if self.dense:
            with nogil:
                for i in range(n):
                    k = r[i]
                    g = self.direct[k]
                    if g == -1:
                        g = self.size
                        self.rows[g] = k
                        self.direct[k] = g
                        self.size += 1
                    o[i] = g
            return out
        with nogil:
            for i in range(n):
                s = self.find(r + i * w, hash_row(r + i * w, w))
                g = self.table[s]
                if g == -1:
                    g = self.size
                    memcpy(self.rows + g * w, r + i * w, <size_t>w * sizeof(int64_t))
                    self.table[s] = g
                    self.size += 1
                o[i] = g
        return out

    def lookup(self, columns):
        """The number of each row's key, -1 where the key is not held."""
        cdef cnp.ndarray rows = _columns(columns, self.width)
        cdef Py_ssize_t n = rows.shape[0], i, w = self.width
        cdef cnp.ndarray out = np.empty(n, dtype=np.int64)
        cdef int64_t *o = <int64_t *>cnp.PyArray_DATA(out)
        cdef const int64_t *r = <const int64_t *>cnp.PyArray_DATA(rows)
        cdef int64_t k
        if self.size == 0:
            out.fill(-1)
            return out
        if self.dense:
            with nogil:
                for i in range(n):
                    k = r[i]
                    o[i] = self.direct[k] if 0 <= k < self.direct_cap else -1
            return out
        with nogil:
            for i in range(n):
                o[i] = self.table[self.find(r + i * w, hash_row(r + i * w, w))]
        return out

    def keys(self):
        """The held keys in number order, one int64 array per key column."""
        cdef cnp.ndarray flat = np.empty((self.size, self.width), dtype=np.int64)
        if self.size:
            memcpy(cnp.PyArray_DATA(flat), self.rows,
                   <size_t>(self.size * self.width) * sizeof(int64_t))
        return tuple(flat[:, j].copy() for j in range(self.width))

    def take(self, ids):
        """The keys numbered ``ids`` (each in ``0..len - 1``), one int64 array per column."""
        cdef const int64_t[::1] g = np.ascontiguousarray(ids, dtype=np.int64)
        cdef Py_ssize_t n = g.shape[0], i, j, w = self.width
        cdef cnp.ndarray flat = np.empty((n, w), dtype=np.int64)
        cdef int64_t *o = <int64_t *>cnp.PyArray_DATA(flat)
        for i in range(n):
            if g[i] < 0 or g[i] >= self.size:
                raise IndexError(f"no key numbered {g[i]}")
        with nogil:
            for i in range(n):
                for j in range(w):
                    o[i * w + j] = self.rows[g[i] * w + j]
        return tuple(flat[:, j].copy() for j in range(w))


def improve(number[::1] state, const int64_t[::1] ids, const number[::1] values, bint minimize=True):
    """Lowers (or raises) ``state[ids[i]]`` to ``values[i]`` where that is an
    improvement; returns the distinct ids improved, in order of first improvement.

    Cost: O(n) in C, plus a byte per id of ``state``."""
    cdef Py_ssize_t n = ids.shape[0], i, m = 0
    cdef int64_t g
    cdef cnp.ndarray mark = np.zeros(state.shape[0], dtype=np.uint8)
    cdef unsigned char[::1] mk = mark
    cdef cnp.ndarray out = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] o = out
    with nogil:
        for i in range(n):
            g = ids[i]
            if (values[i] < state[g]) if minimize else (values[i] > state[g]):
                state[g] = values[i]
                if not mk[g]:
                    mk[g] = 1
                    o[m] = g
                    m += 1
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
