from cpython.ref cimport PyObject
from libc.stdint cimport int64_t, uint8_t, uint64_t


cdef class GroupBy:
    # Groups are numbered 0..size-1 in the order their keys first arrived.
    # Per group: hashes[g], one of ikeys[g] / fkeys[g * width] / okeys[g] /
    # sdata[soffsets[g]:soffsets[g + 1]] and its word swords[g] (by mode),
    # and the accumulators that `how` asks for. index[slots] is an
    # open-addressing table (linear probing, load <= 1/2) of group numbers,
    # -1 for an empty slot. All buffers are malloc'd and owned here; okeys
    # holds one strong reference per group.
    cdef readonly tuple how
    # count_on is also set, as a hidden count of non-null values, whenever
    # sum/min/max are asked for: a group whose count is 0 has null aggregates.
    cdef bint count_on, sum_on, min_on, max_on, count_asked
    # The group of the null key: a GroupBy of its own keyed by 0 (None until
    # a null key arrives), and the Arrow type of the keys that had nulls.
    cdef object nulls
    cdef object null_type
    cdef int mode
    cdef int vkind
    cdef object key_dtype
    cdef Py_ssize_t size
    cdef Py_ssize_t capacity
    cdef Py_ssize_t width
    cdef int64_t *index
    cdef Py_ssize_t slots
    cdef int shift
    cdef uint64_t *hashes
    cdef int64_t *ikeys
    cdef unsigned char *fkeys
    cdef PyObject **okeys
    cdef int64_t *soffsets
    cdef uint64_t *swords
    cdef uint8_t *sdata
    cdef int64_t sdata_cap
    cdef int64_t *count
    cdef int64_t *isum
    cdef int64_t *imin
    cdef int64_t *imax
    cdef double *fsum
    cdef double *fmin
    cdef double *fmax

    cdef int reserve(self, Py_ssize_t extra) except -1
    cdef int reserve_bytes(self, int64_t extra) except -1
    cdef int widen(self, Py_ssize_t width) except -1
    cdef int set_values(self, int vkind) except -1
    cdef Py_ssize_t assign_int(self, const int64_t *keys, Py_ssize_t n,
                               int64_t *ids) noexcept nogil
    cdef Py_ssize_t assign_fixed(self, const unsigned char *rows, Py_ssize_t n,
                                 int64_t *ids) noexcept nogil
    cdef Py_ssize_t assign_string(self, const int64_t *offsets, const uint8_t *data,
                                  Py_ssize_t n, int64_t *ids) noexcept nogil
    cdef Py_ssize_t assign_object(self, PyObject **keys, Py_ssize_t n,
                                  int64_t *ids) except -1
    cdef void fold(self, const int64_t *ids, Py_ssize_t n, const int64_t *counts,
                   const void *sums, const void *mins, const void *maxs) noexcept nogil
    cdef int absorb(self, object keys, object counts, object sums, object mins,
                    object maxs) except -1
    cdef object prepare_keys(self, object keys)
    cdef int update_valid(self, object keys, object values, object valid) except -1
    cdef int merge_valid(self, object keys, object partials) except -1
    cdef tuple neutral(self, object prepared, object valid)
    cdef GroupBy null_group(self)
    cdef tuple plain_result(self)
    cdef int set_mode(self, int mode, object dtype) except -1
    cdef int mismatch(self, object dtype) except -1
