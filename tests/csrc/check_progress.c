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

/* Larger runs against a growable model: many distinct times, so that new
 * times wait outside the tree, the waiting list outgrows the table and is
 * moved in, the tree empties and is rebuilt in one pass, and the table grows
 * and shrinks through removals. Counts are checked at every step, the
 * frontier every `every` steps, the dump at the end. `dominated` makes most
 * times land above a low time that is held throughout one phase. */
typedef struct {
    uint64_t *t;
    int64_t *c;
    size_t n, cap;
} big_model;

static int64_t *big_count(big_model *md, const uint64_t *t, size_t k)
{
    for (size_t i = 0; i < md->n; i++) {
        if (tly_row_eq(md->t + i * k, t, k)) {
            return &md->c[i];
        }
    }
    if (md->n == md->cap) {
        md->cap = md->cap ? md->cap * 2 : 64;
        md->t = realloc(md->t, md->cap * k * sizeof(uint64_t));
        md->c = realloc(md->c, md->cap * sizeof(int64_t));
    }
    tly_row_copy(md->t + md->n * k, t, k);
    md->c[md->n] = 0;
    return &md->c[md->n++];
}

static void check_big_frontier(const tly_ma *m, const big_model *md, size_t k, size_t step)
{
    size_t expect = 0;
    for (size_t i = 0; i < md->n; i++) {
        if (md->c[i] <= 0) {
            continue;
        }
        int minimal = 1;
        for (size_t j = 0; j < md->n && minimal; j++) {
            if (j != i && md->c[j] > 0 && tly_row_le(md->t + j * k, md->t + i * k, k)) {
                minimal = 0;
            }
        }
        if (!minimal) {
            continue;
        }
        expect++;
        int found = 0;
        for (size_t f = 0; f < m->flen; f++) {
            found |= tly_row_eq(m->front + f * k, md->t + i * k, k);
        }
        CHECK(found, "large: frontier misses a minimal time (step %zu)", step);
    }
    CHECK(expect == m->flen, "large: frontier has %zu elements, expected %zu (step %zu)",
          m->flen, expect, step);
}

static void check_antichain_large(size_t k, unsigned range, size_t steps, size_t every)
{
    tly_ma m;
    big_model md = {NULL, NULL, 0, 0};
    tly_ma_init(&m, k);
    uint64_t t[3];
    uint64_t low[3] = {0, 0, 0};
    for (size_t s = 0; s < steps; s++) {
        size_t phase = (s / 500) % 4;
        if (phase == 1 && s % 500 == 0) {
            /* Hold the least time for a phase: later times are dominated. */
            CHECK(tly_ma_update(&m, low, 1) == 0, "update failed");
            *big_count(&md, low, k) += 1;
        }
        if (phase == 2 && s % 500 == 0) {
            CHECK(tly_ma_update(&m, low, -1) == 0, "update failed");
            *big_count(&md, low, k) -= 1;
        }
        for (size_t c = 0; c < k; c++) {
            t[c] = 1 + rnd() % range;
        }
        /* Phase 3 retires what is held, so the tree empties now and then. */
        int64_t d = phase == 3 ? -1 : (int64_t)(rnd() % 5) - 2;
        if (phase == 3) {
            size_t live = 0;
            for (size_t i = 0; i < md.n; i++) {
                if (md.c[i] != 0) {
                    tly_row_copy(t, md.t + i * k, k);
                    d = -md.c[i];
                    live = 1;
                    break;
                }
            }
            if (!live) {
                continue;
            }
        }
        CHECK(tly_ma_update(&m, t, d) == 0, "update failed");
        int64_t *c = big_count(&md, t, k);
        *c += d;
        CHECK(tly_ma_count(&m, t) == *c, "large: count mismatch (step %zu)", s);
        if (s % every == 0) {
            check_big_frontier(&m, &md, k, s);
            size_t nonzero = 0;
            for (size_t i = 0; i < md.n; i++) {
                nonzero += md.c[i] != 0;
            }
            CHECK(nonzero == m.size, "large: %zu times held, expected %zu", m.size, nonzero);
        }
        m.clen = 0;
    }
    check_big_frontier(&m, &md, k, steps);
    size_t nonzero = 0;
    for (size_t i = 0; i < md.n; i++) {
        nonzero += md.c[i] != 0;
    }
    CHECK(nonzero == m.size, "large: %zu times held, expected %zu", m.size, nonzero);
    if (nonzero) {
        uint64_t *rows = malloc(nonzero * k * sizeof(uint64_t));
        int64_t *counts = malloc(nonzero * sizeof(int64_t));
        CHECK(tly_ma_dump(&m, rows, counts) == 0, "dump failed");
        for (size_t i = 0; i < nonzero; i++) {
            if (i > 0) {
                CHECK(tly_row_cmp(rows + (i - 1) * k, rows + i * k, k) < 0, "dump unsorted");
            }
            CHECK(*big_count(&md, rows + i * k, k) == counts[i], "dump count mismatch");
        }
        free(rows);
        free(counts);
    }
    free(md.t);
    free(md.c);
    tly_ma_free(&m);
}

/* Times that come and go above a held one: each waits outside the tree and
 * is removed before the tree is searched, so the waiting list fills with
 * times no longer held and must be emptied while it stays long. */
static void check_antichain_churn(size_t k)
{
    tly_ma m;
    tly_ma_init(&m, k);
    uint64_t low[3] = {0, 0, 0};
    uint64_t t[3];
    CHECK(tly_ma_update(&m, low, 1) == 0, "update failed");
    for (uint64_t i = 1; i <= 2000; i++) {
        for (size_t c = 0; c < k; c++) {
            t[c] = i % 7 == 0 ? 5 : i;     /* some times come back */
        }
        CHECK(tly_ma_update(&m, t, 2) == 0, "update failed");
        CHECK(tly_ma_count(&m, t) == 2, "churn: count mismatch");
        CHECK(tly_ma_update(&m, t, -2) == 0, "update failed");
        CHECK(tly_ma_count(&m, t) == 0, "churn: count not zero");
        CHECK(m.size == 1 && m.flen == 1, "churn: %zu times, frontier of %zu", m.size, m.flen);
        CHECK(m.plen <= 2 * m.size + 64, "churn: %zu times waiting", m.plen);
    }
    for (size_t c = 0; c < k; c++) {
        t[c] = 9;
    }
    CHECK(tly_ma_update(&m, t, 1) == 0, "update failed");
    CHECK(tly_ma_update(&m, low, -1) == 0, "update failed");
    CHECK(m.size == 1 && m.flen == 1 && tly_row_eq(m.front, t, k), "churn: wrong frontier");
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
        check_antichain_large(k, k == 1 ? 3000 : 40, 6000, 97);
        check_antichain_large(k, k == 1 ? 300 : 12, 6000, 31);
        check_antichain_churn(k);
        cases += 3;
    }
    printf("csrc checks passed: %zu cases\n", cases);
    return 0;
}
