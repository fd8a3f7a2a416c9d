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

    cdef int reserve(self, Py_ssize_t extra) except -1
    cdef Py_ssize_t find(self, const int64_t *row, uint64_t h) noexcept nogil
