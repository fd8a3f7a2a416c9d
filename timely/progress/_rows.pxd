# C-level declarations of csrc/: rows of uint64, sorting, counted antichains.
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t


cdef extern from "rows.h" nogil:
    enum:
        TLY_MAX_ARITY
    int tly_row_cmp(const uint64_t *a, const uint64_t *b, size_t k)
    int tly_row_le(const uint64_t *a, const uint64_t *b, size_t k)
    int tly_row_eq(const uint64_t *a, const uint64_t *b, size_t k)
    int tly_row_add(const uint64_t *a, const uint64_t *s, uint64_t *out, size_t k)
    void tly_row_copy(uint64_t *dst, const uint64_t *src, size_t k)
    int tly_row_is_zero(const uint64_t *a, size_t k)
    int tly_front_le(const uint64_t *front, size_t n, size_t k, const uint64_t *t)
    int tly_sort_rows(const uint64_t *rows, size_t n, size_t k, uint32_t *perm)
    size_t tly_compact(uint64_t *rows, int64_t *diffs, size_t n, size_t k)


cdef extern from "mutable_antichain.h" nogil:
    ctypedef struct tly_ma:
        size_t k
        int32_t root
        size_t size
        uint64_t *front
        size_t flen
        uint64_t *chg
        int64_t *chgd
        size_t clen
    int tly_ma_init(tly_ma *m, size_t k)
    void tly_ma_free(tly_ma *m)
    void tly_ma_clear(tly_ma *m)
    int tly_ma_update(tly_ma *m, const uint64_t *t, int64_t diff)
    int64_t tly_ma_count(const tly_ma *m, const uint64_t *t)
    int tly_ma_less_equal(const tly_ma *m, const uint64_t *t)
    int tly_ma_less_than(const tly_ma *m, const uint64_t *t)
    size_t tly_ma_compact_changes(tly_ma *m)
    int tly_ma_dump(const tly_ma *m, uint64_t *rows, int64_t *counts)
