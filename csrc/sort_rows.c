/*
 * Sorting rows of uint64 lexicographically, and compacting (row, diff) pairs.
 *
 * Sorting is an LSD radix sort on bytes, least significant coordinate first,
 * that skips every byte position on which all rows agree: small timestamps cost
 * one or two passes per coordinate. Short or already sorted inputs take an
 * insertion sort or no work at all. Cost: O(n * passes) time, O(n) scratch.
 */
#include <stdlib.h>

#include "rows.h"

#define TLY_SMALL_SORT 24

static void insertion_sort(const uint64_t *rows, size_t n, size_t k, uint32_t *perm)
{
    for (size_t i = 1; i < n; i++) {
        uint32_t cur = perm[i];
        size_t j = i;
        while (j > 0 && tly_row_cmp(rows + (size_t)perm[j - 1] * k, rows + (size_t)cur * k, k) > 0) {
            perm[j] = perm[j - 1];
            j--;
        }
        perm[j] = cur;
    }
}

int tly_sort_rows(const uint64_t *rows, size_t n, size_t k, uint32_t *perm)
{
    if (n > (size_t)UINT32_MAX) {
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        perm[i] = (uint32_t)i;
    }
    if (n < 2 || k == 0) {
        return 0;
    }
    int sorted = 1;
    for (size_t i = 1; i < n; i++) {
        if (tly_row_cmp(rows + (i - 1) * k, rows + i * k, k) > 0) {
            sorted = 0;
            break;
        }
    }
    if (sorted) {
        return 0;
    }
    if (n <= TLY_SMALL_SORT) {
        insertion_sort(rows, n, k, perm);
        return 0;
    }

    /* Which bytes of which coordinates differ between rows at all. */
    uint64_t *varying = calloc(k, sizeof(uint64_t));
    uint32_t *tmp = malloc(n * sizeof(uint32_t));
    size_t *count = malloc(256 * sizeof(size_t));
    if (varying == NULL || tmp == NULL || count == NULL) {
        free(varying);
        free(tmp);
        free(count);
        return -1;
    }
    for (size_t i = 1; i < n; i++) {
        const uint64_t *r = rows + i * k;
        for (size_t c = 0; c < k; c++) {
            varying[c] |= r[c] ^ rows[c];
        }
    }

    uint32_t *src = perm;
    uint32_t *dst = tmp;
    for (size_t cc = k; cc-- > 0;) {
        for (unsigned b = 0; b < 8; b++) {
            unsigned shift = 8 * b;
            if (((varying[cc] >> shift) & 0xFF) == 0) {
                continue;
            }
            memset(count, 0, 256 * sizeof(size_t));
            for (size_t i = 0; i < n; i++) {
                count[(rows[(size_t)src[i] * k + cc] >> shift) & 0xFF]++;
            }
            size_t total = 0;
            for (unsigned d = 0; d < 256; d++) {
                size_t c = count[d];
                count[d] = total;
                total += c;
            }
            for (size_t i = 0; i < n; i++) {
                uint32_t idx = src[i];
                dst[count[(rows[(size_t)idx * k + cc] >> shift) & 0xFF]++] = idx;
            }
            uint32_t *swap = src;
            src = dst;
            dst = swap;
        }
    }
    if (src != perm) {
        memcpy(perm, src, n * sizeof(uint32_t));
    }
    free(varying);
    free(tmp);
    free(count);
    return 0;
}

size_t tly_compact(uint64_t *rows, int64_t *diffs, size_t n, size_t k)
{
    if (n == 0) {
        return 0;
    }
    if (n == 1) {
        return diffs[0] == 0 ? 0 : 1;
    }
    uint32_t *perm = malloc(n * sizeof(uint32_t));
    if (perm == NULL) {
        return (size_t)-1;
    }
    if (tly_sort_rows(rows, n, k, perm) != 0) {
        free(perm);
        return (size_t)-1;
    }
    int identity = 1;
    for (size_t i = 0; i < n; i++) {
        if (perm[i] != i) {
            identity = 0;
            break;
        }
    }
    size_t out = 0;
    if (identity) {
        /* Already sorted: merge in place. */
        for (size_t i = 0; i < n;) {
            int64_t sum = diffs[i];
            size_t j = i + 1;
            while (j < n && tly_row_eq(rows + j * k, rows + i * k, k)) {
                sum += diffs[j];
                j++;
            }
            if (sum != 0) {
                if (out != i) {
                    tly_row_copy(rows + out * k, rows + i * k, k);
                }
                diffs[out] = sum;
                out++;
            }
            i = j;
        }
        free(perm);
        return out;
    }
    uint64_t *nrows = malloc(n * k * sizeof(uint64_t));
    int64_t *ndiffs = malloc(n * sizeof(int64_t));
    if (nrows == NULL || ndiffs == NULL) {
        free(nrows);
        free(ndiffs);
        free(perm);
        return (size_t)-1;
    }
    for (size_t i = 0; i < n;) {
        const uint64_t *r = rows + (size_t)perm[i] * k;
        int64_t sum = diffs[perm[i]];
        size_t j = i + 1;
        while (j < n && tly_row_eq(rows + (size_t)perm[j] * k, r, k)) {
            sum += diffs[perm[j]];
            j++;
        }
        if (sum != 0) {
            tly_row_copy(nrows + out * k, r, k);
            ndiffs[out] = sum;
            out++;
        }
        i = j;
    }
    memcpy(rows, nrows, out * k * sizeof(uint64_t));
    memcpy(diffs, ndiffs, out * sizeof(int64_t));
    free(nrows);
    free(ndiffs);
    free(perm);
    return out;
}
