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

static size_t compact_rows(uint64_t *rows, int64_t *diffs, size_t n, size_t k)
{
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

typedef struct {
    uint64_t key;
    int64_t diff;
} pair_t;

/* LSD radix sort of pairs by key, on digits of `bits` bits, skipping digits
 * on which every key agrees. Sorted output ends in *out (one of a or b). */
static int radix_pairs(pair_t *a, pair_t *b, size_t n, pair_t **out)
{
    uint64_t varying = 0;
    for (size_t i = 1; i < n; i++) {
        varying |= a[i].key ^ a[0].key;
    }
    unsigned bits = n >= 65536 ? 16 : 8;
    size_t buckets = (size_t)1 << bits;
    size_t *count = malloc(buckets * sizeof(size_t));
    if (count == NULL) {
        return -1;
    }
    pair_t *src = a;
    pair_t *dst = b;
    for (unsigned shift = 0; shift < 64; shift += bits) {
        uint64_t mask = (uint64_t)(buckets - 1);
        if (((varying >> shift) & mask) == 0) {
            continue;
        }
        memset(count, 0, buckets * sizeof(size_t));
        for (size_t i = 0; i < n; i++) {
            count[(src[i].key >> shift) & mask]++;
        }
        size_t total = 0;
        for (size_t d = 0; d < buckets; d++) {
            size_t c = count[d];
            count[d] = total;
            total += c;
        }
        for (size_t i = 0; i < n; i++) {
            dst[count[(src[i].key >> shift) & mask]++] = src[i];
        }
        pair_t *swap = src;
        src = dst;
        dst = swap;
    }
    free(count);
    *out = src;
    return 0;
}

/* When the coordinates' ranges multiply to at most 2^64, each row maps to one
 * uint64 key by mixed radix, which preserves lexicographic order: rows then
 * compact as single keys. Returns 1 and fills mins/weights/spans, or 0. */
static int packable(const uint64_t *rows, size_t n, size_t k,
                    uint64_t *mins, uint64_t *spans, uint64_t *weights, uint64_t *top)
{
    uint64_t maxs[TLY_MAX_ARITY];
    for (size_t c = 0; c < k; c++) {
        mins[c] = maxs[c] = rows[c];
    }
    for (size_t i = 1; i < n; i++) {
        const uint64_t *r = rows + i * k;
        for (size_t c = 0; c < k; c++) {
            if (r[c] < mins[c]) {
                mins[c] = r[c];
            }
            if (r[c] > maxs[c]) {
                maxs[c] = r[c];
            }
        }
    }
    /* weights[c] = product of spans[c+1 .. k-1]; the largest key is top. */
    uint64_t weight = 1;
    uint64_t largest = 0;
    for (size_t cc = k; cc-- > 0;) {
        uint64_t range = maxs[cc] - mins[cc];     /* span - 1, never overflows */
        weights[cc] = weight;
        spans[cc] = range + 1;                    /* 0 means 2^64: only valid for cc == 0 */
        /* largest += range * weight, checked */
        if (range != 0 && weight > UINT64_MAX / range) {
            return 0;
        }
        uint64_t add = range * weight;
        if (largest > UINT64_MAX - add) {
            return 0;
        }
        largest += add;
        if (cc > 0) {
            if (range == UINT64_MAX || (range + 1 != 0 && weight > UINT64_MAX / (range + 1))) {
                return 0;
            }
            weight *= range + 1;
        }
    }
    *top = largest;
    return 1;
}

static inline uint64_t pack(const uint64_t *r, const uint64_t *mins, const uint64_t *weights, size_t k)
{
    uint64_t key = 0;
    for (size_t c = 0; c < k; c++) {
        key += (r[c] - mins[c]) * weights[c];
    }
    return key;
}

static inline void unpack(uint64_t key, uint64_t *r, const uint64_t *mins, const uint64_t *weights, size_t k)
{
    for (size_t c = 0; c < k; c++) {
        r[c] = mins[c] + key / weights[c];
        key %= weights[c];
    }
}

size_t tly_compact(uint64_t *rows, int64_t *diffs, size_t n, size_t k)
{
    if (n == 0) {
        return 0;
    }
    if (n == 1) {
        return diffs[0] == 0 ? 0 : 1;
    }
    uint64_t mins[TLY_MAX_ARITY], spans[TLY_MAX_ARITY], weights[TLY_MAX_ARITY], top;
    if (k > TLY_MAX_ARITY || !packable(rows, n, k, mins, spans, weights, &top)) {
        return compact_rows(rows, diffs, n, k);
    }
    size_t out = 0;
    if (top <= 2 * (uint64_t)n + 65536) {
        /* Dense: accumulate diffs by key, then read the keys back in order. */
        size_t range = (size_t)top + 1;
        int64_t *acc = calloc(range, sizeof(int64_t));
        if (acc == NULL) {
            return compact_rows(rows, diffs, n, k);
        }
        for (size_t i = 0; i < n; i++) {
            acc[pack(rows + i * k, mins, weights, k)] += diffs[i];
        }
        for (size_t key = 0; key < range; key++) {
            if (acc[key] != 0) {
                unpack(key, rows + out * k, mins, weights, k);
                diffs[out++] = acc[key];
            }
        }
        free(acc);
        return out;
    }
    pair_t *a = malloc(n * sizeof(pair_t));
    pair_t *b = malloc(n * sizeof(pair_t));
    pair_t *sorted;
    if (a == NULL || b == NULL) {
        free(a);
        free(b);
        return compact_rows(rows, diffs, n, k);
    }
    for (size_t i = 0; i < n; i++) {
        a[i].key = pack(rows + i * k, mins, weights, k);
        a[i].diff = diffs[i];
    }
    if (radix_pairs(a, b, n, &sorted) != 0) {
        free(a);
        free(b);
        return compact_rows(rows, diffs, n, k);
    }
    for (size_t i = 0; i < n;) {
        uint64_t key = sorted[i].key;
        int64_t sum = 0;
        while (i < n && sorted[i].key == key) {
            sum += sorted[i].diff;
            i++;
        }
        if (sum != 0) {
            unpack(key, rows + out * k, mins, weights, k);
            diffs[out++] = sum;
        }
    }
    free(a);
    free(b);
    return out;
}
