from libc.stdint cimport int64_t, uint32_t, uint64_t


cdef extern from "hash.h" nogil:
    void tly_hash_init()
    uint32_t tly_crc32(uint32_t crc, const void *data, size_t len)
    void tly_route_i64(const int64_t *keys, size_t n, int64_t peers, int64_t *dest)
    void tly_route_u64(const uint64_t *keys, size_t n, uint64_t peers, int64_t *dest)
    void tly_partition(const int64_t *dest, size_t n, int64_t peers, int64_t *counts,
                       int64_t *order)
