from libc.stdint cimport uint64_t

from timely.progress._rows cimport TLY_MAX_ARITY


cdef Py_ssize_t arity_of_time(object time) except -1
cdef Py_ssize_t settle_arity(Py_ssize_t have, object time) except -1
cdef int fill_row(object time, Py_ssize_t k, uint64_t *out) except -1
cdef object make_time(const uint64_t *row, Py_ssize_t k)
cdef int fill_summary(object summary, Py_ssize_t k, uint64_t *out) except -1
cdef Py_ssize_t summary_arity(object summary) except -1


cdef class PathSummary:
    cdef Py_ssize_t k
    cdef uint64_t inc[TLY_MAX_ARITY]
