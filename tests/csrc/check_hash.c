/*
 * Standalone checks of csrc/hash.c: CRC-32 against zlib's check value, the
 * UTF-8 kernels against a reference encoder and validator written here from
 * the Unicode tables, float routing against fmod (exact), the row routers
 * against the CRC of each row, and the partition against its definition.
 * Built and run by tests/test_csrc.py (also under sanitizers).
 * Exit status 0 on success; prints the number of cases run.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "hash.h"

static long cases = 0;

/* ---- references ---------------------------------------------------------- */

/* UTF-8 of one code point, the bytes filled from the last one backwards. */
static size_t ref_encode_one(uint32_t cp, uint8_t *out)
{
    if (cp > 0x10FFFF) cp = 0xFFFD;
    size_t n = cp <= 0x7F ? 1 : cp <= 0x7FF ? 2 : cp <= 0xFFFF ? 3 : 4;
    static const uint8_t lead[5] = {0, 0x00, 0xC0, 0xE0, 0xF0};
    for (size_t k = n - 1; k > 0; k--) {
        out[k] = (uint8_t)(0x80 | (cp & 0x3F));
        cp >>= 6;
    }
    out[0] = (uint8_t)(lead[n] | cp);
    return n;
}

/* Well-formed UTF-8 by the table of the Unicode standard (section 3.9,
 * table 3-7): the allowed range of every byte of every sequence form. */
static int64_t ref_check(const uint8_t *s, size_t len)
{
    static const uint8_t forms[9][4][2] = {
        {{0x00, 0x7F}},
        {{0xC2, 0xDF}, {0x80, 0xBF}},
        {{0xE0, 0xE0}, {0xA0, 0xBF}, {0x80, 0xBF}},
        {{0xE1, 0xEC}, {0x80, 0xBF}, {0x80, 0xBF}},
        {{0xED, 0xED}, {0x80, 0x9F}, {0x80, 0xBF}},
        {{0xEE, 0xEF}, {0x80, 0xBF}, {0x80, 0xBF}},
        {{0xF0, 0xF0}, {0x90, 0xBF}, {0x80, 0xBF}, {0x80, 0xBF}},
        {{0xF1, 0xF3}, {0x80, 0xBF}, {0x80, 0xBF}, {0x80, 0xBF}},
        {{0xF4, 0xF4}, {0x80, 0x8F}, {0x80, 0xBF}, {0x80, 0xBF}},
    };
    static const size_t sizes[9] = {1, 2, 3, 3, 3, 3, 4, 4, 4};
    size_t i = 0;
    while (i < len) {
        size_t used = 0;
        for (int f = 0; f < 9 && !used; f++) {
            if (s[i] < forms[f][0][0] || s[i] > forms[f][0][1]) continue;
            size_t k = 1;
            while (k < sizes[f] && i + k < len && s[i + k] >= forms[f][k][0]
                   && s[i + k] <= forms[f][k][1]) {
                k++;
            }
            if (k == sizes[f]) used = k;
            else return (int64_t)i;
        }
        if (!used) return (int64_t)i;
        i += used;
    }
    return -1;
}

static uint32_t random_code_point(int width)
{
    uint64_t r = rnd();
    switch (r % 8) {
    case 0: return (uint32_t)(rnd() % 0x80);
    case 1: return (uint32_t)(0xD800 + rnd() % 0x800);   /* surrogates */
    case 2: return (uint32_t)(rnd() % 0x800);
    default: break;
    }
    if (width == 1) return (uint32_t)(rnd() % 0x100);
    if (width == 2) return (uint32_t)(rnd() % 0x10000);
    if (r % 8 == 3) return (uint32_t)(0x110000 + rnd() % 0x1000);   /* not text */
    return (uint32_t)(rnd() % 0x110000);
}

/* ---- checks ---------------------------------------------------------------- */

static void check_crc(void)
{
    CHECK(tly_crc32(0, "123456789", 9) == 0xCBF43926u, "CRC-32 check value");
    CHECK(tly_crc32(0, "", 0) == 0, "CRC-32 of nothing");
    uint8_t data[300];
    for (size_t i = 0; i < sizeof data; i++) data[i] = (uint8_t)rnd();
    for (size_t cut = 0; cut <= sizeof data; cut += 7) {
        uint32_t whole = tly_crc32(0, data, sizeof data);
        CHECK(tly_crc32(tly_crc32(0, data, cut), data + cut, sizeof data - cut) == whole,
              "CRC-32 continues at %zu", cut);
        cases++;
    }
}

static void check_units(void)
{
    uint32_t cps[64];
    uint8_t units[64 * 4];
    uint8_t want[64 * 4], got[64 * 4];
    for (int round = 0; round < 20000; round++) {
        int width = (int[]){1, 2, 4}[rnd() % 3];
        size_t n = rnd() % 64;
        size_t size = 0;
        int valid = 1;
        for (size_t i = 0; i < n; i++) {
            uint32_t cp = random_code_point(width);
            if (width == 1) {
                cps[i] = (uint8_t)cp;
                units[i] = (uint8_t)cp;
            } else if (width == 2) {
                uint16_t unit = (uint16_t)cp;
                cps[i] = unit;
                memcpy(units + 2 * i, &unit, 2);
            } else {
                cps[i] = cp;
                memcpy(units + 4 * i, &cp, 4);
            }
            size += ref_encode_one(cps[i], want + size);
            if ((cps[i] >= 0xD800 && cps[i] <= 0xDFFF) || cps[i] > 0x10FFFF) valid = 0;
        }
        CHECK(tly_utf8_size(units, n, width, 0) == size, "size of %zu units", n);
        CHECK(tly_utf8_size(units, n, width, 1) == (valid ? size : SIZE_MAX), "strict size");
        CHECK(tly_utf8_encode(units, n, width, got) == size, "encoded size");
        CHECK(memcmp(got, want, size) == 0, "encoded bytes of width %d", width);
        CHECK(tly_crc32_units(7, units, n, width) == tly_crc32(7, want, size), "CRC of units");
        if (valid) CHECK(ref_check(want, size) == -1, "the reference accepts an encoding");
        CHECK(tly_utf8_check(want, size) == ref_check(want, size), "check of an encoding");
        cases++;
    }
}

static void check_validation(void)
{
    uint8_t s[40];
    for (int round = 0; round < 200000; round++) {
        size_t n = rnd() % sizeof s;
        for (size_t i = 0; i < n; i++) {
            uint64_t r = rnd();
            /* Mostly bytes that can appear in UTF-8, in runs that may be valid. */
            s[i] = r % 4 == 0 ? (uint8_t)(0x80 + (r >> 8) % 0x40)
                 : r % 4 == 1 ? (uint8_t)((r >> 8) % 0x80)
                 : (uint8_t)(r >> 8);
        }
        CHECK(tly_utf8_check(s, n) == ref_check(s, n), "validation of %zu random bytes", n);
        cases++;
    }
    static const char *bad[] = {"\xC0\x80", "\xED\xA0\x80", "\xF4\x90\x80\x80", "\xE2\x82",
                                "\xF5\x80\x80\x80", "\x80", "abcdefgh\xFF"};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        CHECK(tly_utf8_check((const uint8_t *)bad[k], strlen(bad[k])) >= 0, "invalid %zu", k);
    }
    CHECK(tly_utf8_check((const uint8_t *)"abcdefgh\xF0\x9F\xA6\x80", 12) == -1, "a crab");
}

static double random_double(void)
{
    uint64_t r = rnd();
    double x;
    switch (r % 6) {
    case 0: return (double)(int64_t)rnd();
    case 1: return (double)((int64_t)(rnd() % 2001) - 1000);
    case 2: return ldexp((double)(rnd() >> 11), (int)(rnd() % 1000));   /* huge integers */
    case 3: return -ldexp((double)(rnd() >> 11), (int)(rnd() % 1000));
    case 4: return ((double)(int64_t)rnd()) / 1024.0 + 0.5;
    default:
        memcpy(&x, &r, 8);     /* any bits: NaNs, infinities, subnormals */
        return x;
    }
}

static void check_floats(void)
{
    for (int round = 0; round < 200000; round++) {
        double x = random_double();
        int64_t peers = (int64_t)(1 + rnd() % 9);
        if (round % 97 == 0) peers = (int64_t)(rnd() >> 12) + 1;
        int64_t got = tly_route_double(x, peers);
        CHECK(got >= 0 && got < peers, "worker in range");
        if (isfinite(x) && x == trunc(x)) {
            double r = fmod(x, (double)peers);     /* exact */
            if (r < 0) r += (double)peers;
            CHECK(got == (int64_t)r, "integral %.17g mod %lld: %lld", x, (long long)peers,
                  (long long)got);
        } else {
            CHECK((uint64_t)got == tly_hash64_double(x) % (uint64_t)peers, "fractional");
        }
        float f = (float)x;
        int64_t dest;
        tly_route_f32(&f, 1, peers, &dest);
        CHECK(dest == tly_route_double((double)f, peers), "float32 as float64");
        cases++;
    }
    double nan1, nan2;
    uint64_t b1 = 0x7FF8000000000001ULL, b2 = 0xFFF0000000000100ULL;
    memcpy(&nan1, &b1, 8);
    memcpy(&nan2, &b2, 8);
    CHECK(tly_hash64_double(nan1) == tly_hash64_double(nan2), "every NaN alike");
    CHECK(tly_hash64_double(NAN) == tly_hash64_double(nan1), "the canonical NaN");
    CHECK(tly_hash64_double(3.0) == 3 && tly_hash64_double(-1.0) == UINT64_MAX, "small ints");
    CHECK(tly_hash64_double(-0.0) == 0, "negative zero");
    CHECK(tly_hash64_double(ldexp(1, 70)) == 0, "2**70");
    CHECK(tly_hash64_double(-ldexp(1, 63)) == (uint64_t)1 << 63, "-2**63");
    CHECK(tly_hash64_double(ldexp(1, 63) + 2048) == ((uint64_t)1 << 63) + 2048, "2**63 + 2048");
    CHECK(tly_hash64_double(-ldexp(3, 62)) == (uint64_t)1 << 62, "-3 * 2**62");
    CHECK(tly_route_double(ldexp(1, 70), 3) == 1 && tly_route_double(-ldexp(1, 70), 3) == 2,
          "2**70 mod 3");
}

static void check_rows(void)
{
    uint8_t fixed[50 * 6];
    uint32_t ucs[50 * 5];
    int64_t off64[51];
    int32_t off32[51];
    uint8_t data[50 * 20];
    int64_t dest[50], dest2[50];
    for (int round = 0; round < 2000; round++) {
        size_t n = rnd() % 50;
        int64_t peers = (int64_t)(1 + rnd() % 7);
        size_t used = 0;
        off64[0] = off32[0] = 0;
        for (size_t i = 0; i < n; i++) {
            size_t m = rnd() % 7;
            for (size_t k = 0; k < 6; k++) fixed[i * 6 + k] = k < m ? (uint8_t)(rnd() % 3) : 0;
            for (size_t k = 0; k < 5; k++) {
                ucs[i * 5 + k] = k < m ? random_code_point(4) % 0x110000 : 0;
            }
            size_t len = rnd() % 20;
            for (size_t k = 0; k < len; k++) data[used + k] = (uint8_t)rnd();
            used += len;
            off64[i + 1] = (int64_t)used;
            off32[i + 1] = (int32_t)used;
        }
        tly_route_fixed(fixed, n, 6, peers, dest);
        for (size_t i = 0; i < n; i++) {
            size_t m = 6;
            while (m && fixed[i * 6 + m - 1] == 0) m--;
            CHECK(dest[i] == (int64_t)(tly_crc32(0, fixed + i * 6, m) % (uint64_t)peers), "S");
        }
        tly_route_ucs4(ucs, n, 5, peers, dest);
        for (size_t i = 0; i < n; i++) {
            uint8_t utf8[20];
            size_t m = 5, size = 0;
            while (m && ucs[i * 5 + m - 1] == 0) m--;
            for (size_t k = 0; k < m; k++) size += ref_encode_one(ucs[i * 5 + k], utf8 + size);
            CHECK(dest[i] == (int64_t)(tly_crc32(0, utf8, size) % (uint64_t)peers), "U");
        }
        tly_route_str64(off64, data, n, peers, dest);
        tly_route_str32(off32, data, n, peers, dest2);
        for (size_t i = 0; i < n; i++) {
            uint32_t c = tly_crc32(0, data + off64[i], (size_t)(off64[i + 1] - off64[i]));
            CHECK(dest[i] == (int64_t)(c % (uint64_t)peers) && dest2[i] == dest[i], "strings");
        }
        int64_t counts[7], order[50];
        tly_partition(dest, n, peers, counts, order);
        size_t at = 0;
        for (int64_t j = 0; j < peers; j++) {
            int64_t c = 0;
            for (size_t i = 0; i < n; i++) {
                if (dest[i] == j) {
                    CHECK(order[at++] == (int64_t)i, "stable order");
                    c++;
                }
            }
            CHECK(counts[j] == c, "count of worker %lld", (long long)j);
        }
        cases++;
    }
}

int main(void)
{
    tly_hash_init();
    check_crc();
    check_units();
    check_validation();
    check_floats();
    check_rows();
    printf("hash checks passed: %ld cases\n", cases);
    return 0;
}
