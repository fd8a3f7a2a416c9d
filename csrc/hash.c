#include "hash.h"

#include <math.h>
#include <string.h>

static uint32_t crc_table[8][256];
static int crc_ready = 0;

void tly_hash_init(void)
{
    if (crc_ready) return;
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        crc_table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = crc_table[0][i];
        for (int t = 1; t < 8; t++) {
            c = crc_table[0][c & 0xFF] ^ (c >> 8);
            crc_table[t][i] = c;
        }
    }
    crc_ready = 1;
}

uint32_t tly_crc32(uint32_t crc, const void *data, size_t len)
{
    const unsigned char *p = (const unsigned char *)data;
    uint32_t c = ~crc;
    /* Slicing by 8: eight table lookups per 8 input bytes (little-endian). */
    while (len >= 8) {
        uint32_t lo = ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16
                       | (uint32_t)p[3] << 24) ^ c;
        uint32_t hi = (uint32_t)p[4] | (uint32_t)p[5] << 8 | (uint32_t)p[6] << 16
                      | (uint32_t)p[7] << 24;
        c = crc_table[7][lo & 0xFF] ^ crc_table[6][(lo >> 8) & 0xFF]
            ^ crc_table[5][(lo >> 16) & 0xFF] ^ crc_table[4][lo >> 24]
            ^ crc_table[3][hi & 0xFF] ^ crc_table[2][(hi >> 8) & 0xFF]
            ^ crc_table[1][(hi >> 16) & 0xFF] ^ crc_table[0][hi >> 24];
        p += 8;
        len -= 8;
    }
    if (len >= 4) {
        /* Slicing by 4 for the tail: short keys (words) are mostly tail. */
        c ^= (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
        c = crc_table[3][c & 0xFF] ^ crc_table[2][(c >> 8) & 0xFF]
            ^ crc_table[1][(c >> 16) & 0xFF] ^ crc_table[0][c >> 24];
        p += 4;
        len -= 4;
    }
    while (len--) c = crc_table[0][(c ^ *p++) & 0xFF] ^ (c >> 8);
    return ~c;
}

/* ---- text as code units ------------------------------------------------ */

static inline uint32_t unit_at(const void *units, size_t i, int width)
{
    if (width == 1) return ((const uint8_t *)units)[i];
    if (width == 2) return ((const uint16_t *)units)[i];
    return ((const uint32_t *)units)[i];
}

static inline size_t utf8_len(uint32_t cp)
{
    return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
}

/* Writes cp (at most U+10FFFF) as UTF-8; returns the bytes written. */
static inline size_t put_utf8(uint32_t cp, uint8_t *out)
{
    if (cp < 0x80) {
        out[0] = (uint8_t)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (uint8_t)(0xC0 | cp >> 6);
        out[1] = (uint8_t)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (uint8_t)(0xE0 | cp >> 12);
        out[1] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (uint8_t)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (uint8_t)(0xF0 | cp >> 18);
    out[1] = (uint8_t)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (uint8_t)(0x80 | (cp & 0x3F));
    return 4;
}

size_t tly_utf8_size(const void *units, size_t n, int width, int strict)
{
    size_t size = 0;
    if (width == 1) {
        const uint8_t *u = (const uint8_t *)units;
        for (size_t i = 0; i < n; i++) size += 1 + (u[i] >> 7);
        return size;
    }
    for (size_t i = 0; i < n; i++) {
        uint32_t cp = unit_at(units, i, width);
        if (cp > 0x10FFFF) {
            if (strict) return SIZE_MAX;
            cp = 0xFFFD;
        } else if (strict && cp >= 0xD800 && cp <= 0xDFFF) {
            return SIZE_MAX;
        }
        size += utf8_len(cp);
    }
    return size;
}

size_t tly_utf8_encode(const void *units, size_t n, int width, uint8_t *out)
{
    uint8_t *start = out;
    for (size_t i = 0; i < n; i++) {
        uint32_t cp = unit_at(units, i, width);
        out += put_utf8(cp > 0x10FFFF ? 0xFFFD : cp, out);
    }
    return (size_t)(out - start);
}

/* The body of tly_crc32_units for one width, a constant where it is
 * inlined: ASCII code units are copied as bytes without the encoder. */
static inline uint32_t crc32_units_of(uint32_t crc, const void *units, size_t n, int width)
{
    uint8_t buf[256];
    size_t fill = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t cp = unit_at(units, i, width);
        if (cp < 0x80) {
            buf[fill++] = (uint8_t)cp;
        } else {
            fill += put_utf8(cp > 0x10FFFF ? 0xFFFD : cp, buf + fill);
        }
        if (fill > sizeof buf - 4) {
            crc = tly_crc32(crc, buf, fill);
            fill = 0;
        }
    }
    return fill ? tly_crc32(crc, buf, fill) : crc;
}

uint32_t tly_crc32_units(uint32_t crc, const void *units, size_t n, int width)
{
    if (width == 1) return crc32_units_of(crc, units, n, 1);
    if (width == 2) return crc32_units_of(crc, units, n, 2);
    return crc32_units_of(crc, units, n, 4);
}

int64_t tly_utf8_check(const uint8_t *s, size_t len)
{
    size_t i = 0;
    while (i < len) {
        /* ASCII runs eight bytes at a time. */
        while (len - i >= 8) {
            uint64_t word;
            memcpy(&word, s + i, 8);
            if (word & 0x8080808080808080ULL) break;
            i += 8;
        }
        if (i == len) break;
        uint8_t c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t more;
        uint32_t cp;
        if (c >= 0xC2 && c <= 0xDF) {
            more = 1;
            cp = c & 0x1F;
        } else if ((c & 0xF0) == 0xE0) {
            more = 2;
            cp = c & 0x0F;
        } else if (c >= 0xF0 && c <= 0xF4) {
            more = 3;
            cp = c & 0x07;
        } else {
            return (int64_t)i;
        }
        if (len - i <= more) return (int64_t)i;
        for (size_t k = 1; k <= more; k++) {
            uint8_t b = s[i + k];
            if ((b & 0xC0) != 0x80) return (int64_t)i;
            cp = cp << 6 | (b & 0x3F);
        }
        if (more == 2 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) return (int64_t)i;
        if (more == 3 && (cp < 0x10000 || cp > 0x10FFFF)) return (int64_t)i;
        i += more + 1;
    }
    return -1;
}

/* ---- routing ------------------------------------------------------------- */

void tly_route_i64(const int64_t *keys, size_t n, int64_t peers, int64_t *dest)
{
    if ((peers & (peers - 1)) == 0) {
        /* A power of two: the low bits of two's complement are the
         * non-negative remainder, negative keys included; no division. */
        uint64_t mask = (uint64_t)peers - 1;
        for (size_t i = 0; i < n; i++) dest[i] = (int64_t)((uint64_t)keys[i] & mask);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        int64_t r = keys[i] % peers;
        dest[i] = r < 0 ? r + peers : r;
    }
}

void tly_route_u64(const uint64_t *keys, size_t n, uint64_t peers, int64_t *dest)
{
    if ((peers & (peers - 1)) == 0) {
        for (size_t i = 0; i < n; i++) dest[i] = (int64_t)(keys[i] & (peers - 1));
        return;
    }
    for (size_t i = 0; i < n; i++) dest[i] = (int64_t)(keys[i] % peers);
}

static uint32_t crc_of_bits(double x)
{
    uint64_t bits;
    uint8_t bytes[8];
    if (x != x) {
        bits = 0x7FF8000000000000ULL;
    } else {
        memcpy(&bits, &x, 8);
    }
    for (int k = 0; k < 8; k++) bytes[k] = (uint8_t)(bits >> (8 * k));
    return tly_crc32(0, bytes, 8);
}

static inline int integral(double x)
{
    return isfinite(x) && x == trunc(x);
}

int64_t tly_route_double(double x, int64_t peers)
{
    if (!integral(x)) return (int64_t)(crc_of_bits(x) % (uint64_t)peers);
    if (x >= -9223372036854775808.0 && x < 9223372036854775808.0) {
        int64_t r = (int64_t)x % peers;
        return r < 0 ? r + peers : r;
    }
    /* |x| = m * 2**s with m < 2**53 and s > 10: m mod peers, doubled s
     * times modulo peers (r < peers <= 2**63, so 2 * r cannot wrap). */
    int e;
    double f = frexp(fabs(x), &e);
    uint64_t p = (uint64_t)peers;
    uint64_t r = (uint64_t)ldexp(f, 53) % p;
    for (int s = e - 53; s > 0; s--) r = (2 * r) % p;
    if (x < 0 && r) r = p - r;
    return (int64_t)r;
}

uint64_t tly_hash64_double(double x)
{
    if (!integral(x)) return crc_of_bits(x);
    if (x >= -9223372036854775808.0 && x < 9223372036854775808.0) {
        return (uint64_t)(int64_t)x;
    }
    int e;
    double f = frexp(fabs(x), &e);
    uint64_t m = (uint64_t)ldexp(f, 53);
    int s = e - 53;
    uint64_t low = s >= 64 ? 0 : m << s;
    return x < 0 ? (uint64_t)0 - low : low;
}

void tly_route_f64(const double *keys, size_t n, int64_t peers, int64_t *dest)
{
    for (size_t i = 0; i < n; i++) dest[i] = tly_route_double(keys[i], peers);
}

void tly_route_f32(const float *keys, size_t n, int64_t peers, int64_t *dest)
{
    for (size_t i = 0; i < n; i++) dest[i] = tly_route_double((double)keys[i], peers);
}

void tly_route_fixed(const uint8_t *rows, size_t n, size_t width, int64_t peers, int64_t *dest)
{
    for (size_t i = 0; i < n; i++) {
        const uint8_t *row = rows + i * width;
        size_t m = width;
        while (m > 0 && row[m - 1] == 0) m--;
        dest[i] = (int64_t)(tly_crc32(0, row, m) % (uint64_t)peers);
    }
}

/* The CRC-32 of the UTF-8 of m UCS-4 code units: eight ASCII units at a
 * time go straight into the slicing-by-8 step (as the bytes they encode
 * to), without an intermediate buffer; the rest through tly_crc32_units. */
static uint32_t crc32_ucs4(const uint32_t *row, size_t m)
{
    uint32_t c = ~0u;
    size_t i = 0;
    while (m - i >= 8) {
        const uint32_t *u = row + i;
        if ((u[0] | u[1] | u[2] | u[3] | u[4] | u[5] | u[6] | u[7]) >= 0x80) break;
        uint32_t lo = (u[0] | u[1] << 8 | u[2] << 16 | u[3] << 24) ^ c;
        uint32_t hi = u[4] | u[5] << 8 | u[6] << 16 | u[7] << 24;
        c = crc_table[7][lo & 0xFF] ^ crc_table[6][(lo >> 8) & 0xFF]
            ^ crc_table[5][(lo >> 16) & 0xFF] ^ crc_table[4][lo >> 24]
            ^ crc_table[3][hi & 0xFF] ^ crc_table[2][(hi >> 8) & 0xFF]
            ^ crc_table[1][(hi >> 16) & 0xFF] ^ crc_table[0][hi >> 24];
        i += 8;
    }
    for (; i < m && row[i] < 0x80; i++) c = crc_table[0][(c ^ row[i]) & 0xFF] ^ (c >> 8);
    return i < m ? tly_crc32_units(~c, row + i, m - i, 4) : ~c;
}

void tly_route_ucs4(const uint32_t *rows, size_t n, size_t width, int64_t peers, int64_t *dest)
{
    for (size_t i = 0; i < n; i++) {
        const uint32_t *row = rows + i * width;
        size_t m = width;
        while (m > 0 && row[m - 1] == 0) m--;
        dest[i] = (int64_t)(crc32_ucs4(row, m) % (uint64_t)peers);
    }
}

void tly_route_str64(const int64_t *offsets, const uint8_t *data, size_t n, int64_t peers,
                     int64_t *dest)
{
    for (size_t i = 0; i < n; i++) {
        uint32_t c = tly_crc32(0, data + offsets[i], (size_t)(offsets[i + 1] - offsets[i]));
        dest[i] = (int64_t)(c % (uint64_t)peers);
    }
}

void tly_route_str32(const int32_t *offsets, const uint8_t *data, size_t n, int64_t peers,
                     int64_t *dest)
{
    for (size_t i = 0; i < n; i++) {
        uint32_t c = tly_crc32(0, data + offsets[i], (size_t)(offsets[i + 1] - offsets[i]));
        dest[i] = (int64_t)(c % (uint64_t)peers);
    }
}

void tly_partition(const int64_t *dest, size_t n, int64_t peers, int64_t *counts, int64_t *order)
{
    for (int64_t j = 0; j < peers; j++) counts[j] = 0;
    for (size_t i = 0; i < n; i++) counts[dest[i]]++;
    /* counts doubles as the running offsets; restored afterwards. */
    int64_t start = 0;
    for (int64_t j = 0; j < peers; j++) {
        int64_t c = counts[j];
        counts[j] = start;
        start += c;
    }
    for (size_t i = 0; i < n; i++) order[counts[dest[i]]++] = (int64_t)i;
    int64_t prev = 0;
    for (int64_t j = 0; j < peers; j++) {
        int64_t end = counts[j];
        counts[j] = end - prev;
        prev = end;
    }
}
