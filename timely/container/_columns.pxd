from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t


cdef extern from "hash.h" nogil:
    void tly_hash_init()
    uint32_t tly_crc32(uint32_t crc, const void *data, size_t len)
    size_t tly_utf8_size(const void *units, size_t n, int width, int strict)
    size_t tly_utf8_encode(const void *units, size_t n, int width, uint8_t *out)
    uint32_t tly_crc32_units(uint32_t crc, const void *units, size_t n, int width)
    int64_t tly_utf8_check(const uint8_t *data, size_t len)
    void tly_route_i64(const int64_t *keys, size_t n, int64_t peers, int64_t *dest)
    void tly_route_u64(const uint64_t *keys, size_t n, uint64_t peers, int64_t *dest)
    void tly_route_f64(const double *keys, size_t n, int64_t peers, int64_t *dest)
    void tly_route_f32(const float *keys, size_t n, int64_t peers, int64_t *dest)
    int64_t tly_route_double(double x, int64_t peers)
    uint64_t tly_hash64_double(double x)
    void tly_route_fixed(const uint8_t *rows, size_t n, size_t width, int64_t peers,
                         int64_t *dest)
    void tly_route_ucs4(const uint32_t *rows, size_t n, size_t width, int64_t peers,
                        int64_t *dest)
    void tly_route_str64(const int64_t *offsets, const uint8_t *data, size_t n, int64_t peers,
                         int64_t *dest)
    void tly_route_str32(const int32_t *offsets, const uint8_t *data, size_t n, int64_t peers,
                         int64_t *dest)
    void tly_partition(const int64_t *dest, size_t n, int64_t peers, int64_t *counts,
                       int64_t *order)


cdef class StringColumn:
    # Row i is the UTF-8 of data[offsets[i]:offsets[i + 1]], the Arrow
    # layout of `string` (int32 offsets) or `large_string` (int64 offsets).
    # offsets[0] need not be 0 (a slice shares its parent's buffers), but
    # offsets never decrease and stay within data: every constructor checks
    # it, and the kernels rely on it. `off` and `bytes` point into the two
    # arrays, which this object keeps alive. `objects` caches the rows as an
    # object array of str once someone asks for it. A validity bitmap (for
    # nulls) would be one more array and pointer here.
    cdef readonly object offsets
    cdef readonly object data
    cdef object objects
    cdef Py_ssize_t rows
    cdef bint wide
    cdef const void *off
    cdef const uint8_t *bytes

    cdef int hold(self, object offsets, object data, object objects) except -1
    cdef int64_t start(self, Py_ssize_t i) noexcept nogil
    cdef int64_t size(self) noexcept nogil


cdef StringColumn wrap_strings(object offsets, object data, object objects)
