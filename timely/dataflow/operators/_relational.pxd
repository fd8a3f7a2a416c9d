from libc.stdint cimport int64_t, uint64_t


cdef class KeyIndex:
    # Keys are rows of `width` int64 words, numbered 0..size-1 in the order
    # they first arrived; rows[g * width + j] is word j of key g. table[slots]
    # is an open-addressing table (linear probing, load <= 1/2) of key
    # numbers, -1 for an empty slot. Both buffers are malloc'd and owned here.
    cdef readonly Py_ssize_t width
    cdef Py_ssize_t size
    cdef Py_ssize_t capacity
    cdef int64_t *rows
    cdef int64_t *table
    cdef Py_ssize_t slots
    # Direct addressing while every key is one small non-negative integer:
    # direct[k] is key k's number or -1, for k < direct_cap; `table` is then
    # unused. The first key that does not fit moves the index to hashing.
    cdef bint dense
    cdef int64_t *direct
    cdef Py_ssize_t direct_cap

    cdef int reserve(self, Py_ssize_t extra) except -1
    cdef int fit(self, const int64_t *keys, Py_ssize_t n) except -1
    cdef Py_ssize_t find(self, const int64_t *row, uint64_t h) noexcept nogil
