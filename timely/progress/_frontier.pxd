from libc.stdint cimport uint64_t

from timely.progress._rows cimport tly_ma


cdef class Antichain:
    # rows[len * k], mutually incomparable, in lexicographic order.
    cdef uint64_t *rows
    cdef size_t len
    cdef size_t cap
    cdef Py_ssize_t k

    cdef int reserve(self, size_t n) except -1
    cdef bint insert_row(self, const uint64_t *t) except -1
    cdef bint le_row(self, const uint64_t *t) noexcept nogil
    cdef bint lt_row(self, const uint64_t *t) noexcept nogil
    cdef int assign(self, const uint64_t *rows, size_t n, Py_ssize_t k) except -1


cdef Antichain antichain_of(const uint64_t *rows, size_t n, Py_ssize_t k)


cdef class MutableAntichain:
    cdef tly_ma m
    cdef Py_ssize_t k

    cdef int set_arity(self, Py_ssize_t k) except -1
    cdef int update_row(self, const uint64_t *t, long long diff) except -1
    cdef list drain_changes(self)
