/*
 * Timestamps and path summaries as rows of uint64.
 *
 * A timestamp of arity k is k consecutive uint64 coordinates (epoch, loop1, ...).
 * Its partial order is the product order; its total order, used for sorting and
 * for time-ordered processing, is the lexicographic order, a linear extension of
 * the product order. A path summary is a row of per-coordinate increments.
 *
 * Plain C: no Python objects, no allocation.
 */
#ifndef TIMELY_ROWS_H
#define TIMELY_ROWS_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* The deepest nesting of scopes a timestamp may describe. */
#define TLY_MAX_ARITY 32

/* Lexicographic comparison: negative, zero or positive. */
static inline int tly_row_cmp(const uint64_t *a, const uint64_t *b, size_t k)
{
    for (size_t i = 0; i < k; i++) {
        if (a[i] != b[i]) {
            return a[i] < b[i] ? -1 : 1;
        }
    }
    return 0;
}

/* Product partial order: every coordinate of a is <= the one of b. */
static inline int tly_row_le(const uint64_t *a, const uint64_t *b, size_t k)
{
    for (size_t i = 0; i < k; i++) {
        if (a[i] > b[i]) {
            return 0;
        }
    }
    return 1;
}

static inline int tly_row_eq(const uint64_t *a, const uint64_t *b, size_t k)
{
    return memcmp(a, b, k * sizeof(uint64_t)) == 0;
}

/* out = a + s coordinate-wise; returns 0 when a coordinate overflows (out is
 * then unspecified), 1 otherwise. out may alias a or s. */
static inline int tly_row_add(const uint64_t *a, const uint64_t *s, uint64_t *out, size_t k)
{
    for (size_t i = 0; i < k; i++) {
        uint64_t v = a[i] + s[i];
        if (v < a[i]) {
            return 0;
        }
        out[i] = v;
    }
    return 1;
}

static inline void tly_row_copy(uint64_t *dst, const uint64_t *src, size_t k)
{
    memcpy(dst, src, k * sizeof(uint64_t));
}

static inline int tly_row_is_zero(const uint64_t *a, size_t k)
{
    for (size_t i = 0; i < k; i++) {
        if (a[i] != 0) {
            return 0;
        }
    }
    return 1;
}

/* Some row among the n rows of front is <= t: t is at or beyond that frontier. */
static inline int tly_front_le(const uint64_t *front, size_t n, size_t k, const uint64_t *t)
{
    for (size_t i = 0; i < n; i++) {
        if (tly_row_le(front + i * k, t, k)) {
            return 1;
        }
    }
    return 0;
}

/* Sorting and compaction (sort_rows.c). */

/* Writes into perm (n entries) the permutation that sorts the n rows of arity k
 * lexicographically; stable. Returns 0, or -1 when memory runs out or n does
 * not fit in uint32. */
int tly_sort_rows(const uint64_t *rows, size_t n, size_t k, uint32_t *perm);

/* Sorts the n (row, diff) pairs, sums the diffs of equal rows and drops those
 * that sum to zero, in place. Returns the new length, or (size_t)-1 when memory
 * runs out (the arrays are then unchanged). */
size_t tly_compact(uint64_t *rows, int64_t *diffs, size_t n, size_t k);

#endif
