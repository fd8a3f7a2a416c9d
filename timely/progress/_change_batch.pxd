from libc.stdint cimport int64_t, uint64_t


cdef class ChangeBatch:
    # rows[len * k] and diffs[len]; the first `clean` entries are compacted.
    cdef uint64_t *rows
    cdef int64_t *diffs
    cdef size_t len
    cdef size_t cap
    cdef size_t clean
    cdef Py_ssize_t k

    cdef int reserve_raw(self, size_t extra) noexcept nogil
    cdef int compact_raw(self) noexcept nogil
    cdef int push_raw(self, const uint64_t *row, int64_t diff) noexcept nogil
    cdef int reserve(self, size_t extra) except -1
    cdef int push_row(self, const uint64_t *row, int64_t diff) except -1
    cdef int compact_now(self) except -1
    cdef int set_arity(self, Py_ssize_t k) except -1
    cdef list items(self)
