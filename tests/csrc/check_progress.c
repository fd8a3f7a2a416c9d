/*
 * Standalone checks of csrc/: the row sort, compaction, and the counted
 * antichain, each against a brute-force model, over random inputs.
 * Built and run by tests/test_csrc.py (also under sanitizers).
 * Exit status 0 on success; prints the number of cases run.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mutable_antichain.h"
#include "rows.h"
#include "check.h"

static uint64_t coordinate(unsigned range)
{
    /* Mostly small values, sometimes values near the top of the range. */
    uint64_t r = rnd();
    if (r % 16 == 0) {
        return UINT64_MAX - (rnd() % 4);
    }
    if (r % 16 == 1) {
        return rnd();
    }
    return rnd() % range;
}

static void check_sort(size_t n, size_t k, unsigned range)
{
    uint64_t *rows = malloc(n * k * sizeof(uint64_t) + 1);
    uint32_t *perm = malloc(n * sizeof(uint32_t) + 1);
    for (size_t i = 0; i < n * k; i++) {
        rows[i] = coordinate(range);
    }
    CHECK(tly_sort_rows(rows, n, k, perm) == 0, "sort failed");
    char *seen = calloc(n + 1, 1);
    for (size_t i = 0; i < n; i++) {
        CHECK(perm[i] < n && !seen[perm[i]], "not a permutation");
        seen[perm[i]] = 1;
        if (i > 0) {
            int c = tly_row_cmp(rows + (size_t)perm[i - 1] * k, rows + (size_t)perm[i] * k, k);
            CHECK(c < 0 || (c == 0 && perm[i - 1] < perm[i]), "not sorted or not stable at %zu", i);
        }
    }
    free(seen);
    free(rows);
    free(perm);
}

/* n random (row, diff) updates. range 0: full 64-bit coordinates (no packing);
 * otherwise coordinates below range. Earlier rows repeat often, so that sums
 * cancel and merge. */
static void random_updates(uint64_t *rows, int64_t *diffs, size_t n, size_t k, unsigned range)
{
    for (size_t i = 0; i < n; i++) {
        for (size_t c = 0; c < k; c++) {
            rows[i * k + c] = range ? rnd() % range : rnd();
        }
        if (i > 0 && rnd() % 2 == 0) {
            memcpy(rows + i * k, rows + (rnd() % i) * k, k * sizeof(uint64_t));
        }
        diffs[i] = (int64_t)(rnd() % 5) - 2;
    }
}

static void check_compact(size_t n, size_t k, unsigned range)
{
    uint64_t *rows = malloc(n * k * sizeof(uint64_t) + 1);
    int64_t *diffs = malloc(n * sizeof(int64_t) + 1);
    uint64_t *orig = malloc(n * k * sizeof(uint64_t) + 1);
    int64_t *odiffs = malloc(n * sizeof(int64_t) + 1);
    random_updates(rows, diffs, n, k, range);
    memcpy(orig, rows, n * k * sizeof(uint64_t));
    memcpy(odiffs, diffs, n * sizeof(int64_t));
    size_t m = tly_compact(rows, diffs, n, k);
    CHECK(m != (size_t)-1, "compact failed");
    for (size_t i = 0; i < m; i++) {
        CHECK(diffs[i] != 0, "zero kept");
        if (i > 0) {
            CHECK(tly_row_cmp(rows + (i - 1) * k, rows + i * k, k) < 0, "not strictly sorted");
        }
        int64_t sum = 0;
        for (size_t j = 0; j < n; j++) {
            if (tly_row_eq(orig + j * k, rows + i * k, k)) {
                sum += odiffs[j];
            }
        }
        CHECK(sum == diffs[i], "wrong sum");
    }
    /* Every time with a non-zero sum is present. */
    for (size_t j = 0; j < n; j++) {
        int64_t sum = 0;
        for (size_t l = 0; l < n; l++) {
            if (tly_row_eq(orig + l * k, orig + j * k, k)) {
                sum += odiffs[l];
            }
        }
        int found = 0;
        for (size_t i = 0; i < m; i++) {
            found |= tly_row_eq(rows + i * k, orig + j * k, k);
        }
        CHECK(found == (sum != 0), "time with sum %lld %s", (long long)sum, found ? "kept" : "lost");
    }
    free(rows);
    free(diffs);
    free(orig);
    free(odiffs);
}

/* Large inputs: the compaction against sort-then-merge (the sort is checked above). */
static void check_compact_large(size_t n, size_t k, unsigned range)
{
    uint64_t *rows = calloc(n * k, sizeof(uint64_t));
    int64_t *diffs = malloc(n * sizeof(int64_t));
    uint32_t *perm = malloc(n * sizeof(uint32_t));
    uint64_t *expect = malloc(n * k * sizeof(uint64_t));
    int64_t *edif = malloc(n * sizeof(int64_t));
    random_updates(rows, diffs, n, k, range);
    CHECK(tly_sort_rows(rows, n, k, perm) == 0, "sort failed");
    size_t m = 0;
    for (size_t i = 0; i < n;) {
        const uint64_t *r = rows + (size_t)perm[i] * k;
        int64_t sum = 0;
        size_t j = i;
        while (j < n && tly_row_eq(rows + (size_t)perm[j] * k, r, k)) {
            sum += diffs[perm[j]];
            j++;
        }
        if (sum != 0) {
            tly_row_copy(expect + m * k, r, k);
            edif[m++] = sum;
        }
        i = j;
    }
    size_t got = tly_compact(rows, diffs, n, k);
    CHECK(got == m, "compacted to %zu entries, expected %zu", got, m);
    for (size_t i = 0; i < m; i++) {
        CHECK(tly_row_eq(rows + i * k, expect + i * k, k) && diffs[i] == edif[i], "entry %zu differs", i);
    }
    free(rows);
    free(diffs);
    free(perm);
    free(expect);
    free(edif);
}

/* Brute-force model: a list of distinct times with counts. */
typedef struct {
    uint64_t t[64 * 3];
    int64_t c[64];
    size_t n;
} model;

static int64_t *model_count(model *md, const uint64_t *t, size_t k)
{
    for (size_t i = 0; i < md->n; i++) {
        if (tly_row_eq(md->t + i * k, t, k)) {
            return &md->c[i];
        }
    }
    tly_row_copy(md->t + md->n * k, t, k);
    md->c[md->n] = 0;
    return &md->c[md->n++];
}

static int model_in_frontier(const model *md, size_t i, size_t k)
{
    if (md->c[i] <= 0) {
        return 0;
    }
    for (size_t j = 0; j < md->n; j++) {
        if (j != i && md->c[j] > 0 && tly_row_le(md->t + j * k, md->t + i * k, k)) {
            return 0;
        }
    }
    return 1;
}

static void check_antichain(size_t k, unsigned range, size_t steps)
{
    tly_ma m;
    model md;
    md.n = 0;
    tly_ma_init(&m, k);
    uint64_t t[3];
    for (size_t s = 0; s < steps; s++) {
        for (size_t c = 0; c < k; c++) {
            t[c] = rnd() % range;
        }
        int64_t d = (int64_t)(rnd() % 5) - 2;
        if (md.n == 64) {
            break;
        }
        /* Frontier before, to check the logged change. */
        size_t before_n = m.flen;
        uint64_t before[64 * 3];
        if (before_n) {
            memcpy(before, m.front, before_n * k * sizeof(uint64_t));
        }
        CHECK(tly_ma_update(&m, t, d) == 0, "update failed");
        *model_count(&md, t, k) += d;
        /* Counts agree. */
        for (size_t i = 0; i < md.n; i++) {
            CHECK(tly_ma_count(&m, md.t + i * k) == md.c[i], "count mismatch");
        }
        /* Frontier agrees, and is sorted. */
        size_t expect = 0;
        for (size_t i = 0; i < md.n; i++) {
            if (model_in_frontier(&md, i, k)) {
                expect++;
                int found = 0;
                for (size_t f = 0; f < m.flen; f++) {
                    found |= tly_row_eq(m.front + f * k, md.t + i * k, k);
                }
                CHECK(found, "frontier misses a minimal time (step %zu)", s);
            }
        }
        CHECK(expect == m.flen, "frontier has %zu elements, expected %zu", m.flen, expect);
        for (size_t f = 1; f < m.flen; f++) {
            CHECK(tly_row_cmp(m.front + (f - 1) * k, m.front + f * k, k) < 0, "frontier unsorted");
        }
        /* The compacted change log is exactly after - before. */
        size_t n = tly_ma_compact_changes(&m);
        CHECK(n != (size_t)-1, "compact changes failed");
        for (size_t i = 0; i < n; i++) {
            const uint64_t *ct = m.chg + i * k;
            int was = 0, is = 0;
            for (size_t f = 0; f < before_n; f++) {
                was |= tly_row_eq(before + f * k, ct, k);
            }
            for (size_t f = 0; f < m.flen; f++) {
                is |= tly_row_eq(m.front + f * k, ct, k);
            }
            CHECK(m.chgd[i] == is - was && m.chgd[i] != 0, "wrong frontier change");
        }
        size_t moved = 0;
        for (size_t f = 0; f < before_n; f++) {
            int still = 0;
            for (size_t g = 0; g < m.flen; g++) {
                still |= tly_row_eq(before + f * k, m.front + g * k, k);
            }
            moved += !still;
        }
        for (size_t g = 0; g < m.flen; g++) {
            int was = 0;
            for (size_t f = 0; f < before_n; f++) {
                was |= tly_row_eq(before + f * k, m.front + g * k, k);
            }
            moved += !was;
        }
        CHECK(moved == n, "change log has %zu entries, expected %zu", n, moved);
        m.clen = 0;
    }
    tly_ma_free(&m);
}

int main(void)
{
    size_t cases = 0;
    for (size_t k = 1; k <= 3; k++) {
        for (size_t n = 0; n < 200; n += 7) {
            check_sort(n, k, 4);
            check_sort(n, k, 1000);
            check_compact(n, k, 5);
            cases += 3;
        }
        check_sort(100000, k, 1u << 20);
        cases++;
        /* dense, radix-on-packed-keys and row-sort paths of the compaction */
        check_compact(1500, k, 7);
        check_compact(1500, k, 1u << 30);
        check_compact(1500, k, 0);
        check_compact_large(100000, k, 1u << 31);
        check_compact_large(100000, k, 0);
        cases += 5;
        for (int rep = 0; rep < 300; rep++) {
            check_antichain(k, 4 + rep % 5, 120);
            cases++;
        }
    }
    printf("csrc checks passed: %zu cases\n", cases);
    return 0;
}
