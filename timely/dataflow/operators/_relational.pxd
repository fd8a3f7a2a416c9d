from cpython.ref cimport PyObject
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t


cdef class KeyEncoder:
    # `code` is the kind (K_* in the .pyx) fixed by the first column; `dtype`
    # the numpy dtype decoded to (promoted over the columns seen, for
    # integers and floats); `origin` (name, description) of that first
    # column, for errors. `negative`/`high`: a negative integer / an
    # unsigned one of 2**63 or more was encoded (never both).
    cdef int code
    cdef object dtype
    cdef object origin
    cdef bint negative
    cdef bint high
    # The string index (text and bytes): string g is
    # data[starts[g]:starts[g + 1]] with hash hashes[g]; table[slots] an
    # open-addressing table (linear probing, load <= 1/2) of ids, -1 empty.
    # scratch holds one row's UTF-8 while it is interned. All malloc'd and
    # owned here; ids are never reused or moved.
    cdef uint8_t *data
    cdef int64_t used
    cdef int64_t room
    cdef int64_t *starts
    cdef uint64_t *hashes
    cdef int64_t count
    cdef int64_t capacity
    cdef int64_t *table
    cdef Py_ssize_t slots
    cdef uint8_t *scratch
    cdef int64_t scratch_room

    cdef int settle(self, int code, object dtype, object name, str what) except -1
    cdef int rehash(self) noexcept nogil
    cdef int64_t intern(self, const uint8_t *p, int64_t n, bint add) noexcept nogil
    cdef int scratch_for(self, int64_t size) noexcept nogil
    cdef int64_t string_codes(self, const void *offsets, bint wide, const uint8_t *data,
                              Py_ssize_t n, int64_t *out, bint add) noexcept nogil
    cdef int64_t fixed_codes(self, const uint8_t *rows, Py_ssize_t n, Py_ssize_t width,
                             int64_t *out, bint add) noexcept nogil
    cdef int64_t ucs4_codes(self, const uint32_t *rows, Py_ssize_t n, Py_ssize_t width,
                            int64_t *out, bint add) noexcept nogil
    cdef int64_t object_codes(self, PyObject **rows, Py_ssize_t n, int64_t *out, bint add,
                              bint text) noexcept
    cdef object int64_column(self, object column, object name)
    cdef object encode_strings(self, object column, object name, bint add)
    cdef object decoded(self, object codes, bint fresh)


cdef class KeyIndex:
    # Keys are rows of `width` int64 codes (one KeyEncoder per column, in
    # `encoders`, possibly shared with other indexes), numbered 0..size-1 in
    # the order they first arrived; rows[g * width + j] is code j of key g
    # (with one column, only once `keyed`: its table holds its keys).
    # table[slots] is an open-addressing table (linear probing, load <= 3/4)
    # of key numbers, -1 for an empty slot; with one key column, tkeys[s] is
    # the key in slot s (a probe compares it, not rows). The buffers are
    # malloc'd and owned here; numbers fit int32 (at most INT32_MAX keys).
    cdef readonly Py_ssize_t width
    cdef readonly tuple encoders
    cdef Py_ssize_t size
    cdef Py_ssize_t capacity
    cdef int64_t *rows
    cdef bint keyed             # rows holds every key (always, for several columns)
    cdef int32_t *table
    cdef int64_t *tkeys
    cdef Py_ssize_t slots
    # Direct addressing while every key is one non-negative code and the
    # codes span at most DIRECT_SPAN cells a key: direct[k] is key k's
    # number or -1, for k < direct_cap; `table` is then unused. A key that
    # spreads the codes too far moves the index to hashing; keys dense
    # enough move it back. `lo` and `hi`: the least
    # and greatest code held (one key column).
    cdef bint dense
    cdef int32_t *direct
    cdef Py_ssize_t direct_cap
    cdef int64_t lo
    cdef int64_t hi

    cdef object codes(self, columns, names, bint add)
    cdef int reserve(self, Py_ssize_t extra) except -1
    cdef bint spans(self, Py_ssize_t keys) noexcept nogil
    cdef int rehash(self, Py_ssize_t slots) except -1
    cdef int keep_rows(self) except -1
    cdef int grow_direct(self, int64_t hi) except -1
    cdef int to_direct(self) except -1
    cdef int fit(self, const int64_t *keys, Py_ssize_t n) except -1
    cdef Py_ssize_t find(self, const int64_t *row, uint64_t h) noexcept nogil
