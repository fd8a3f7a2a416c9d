/*
 * Hashing kernels for routing keys to workers, and the UTF-8 kernels of the
 * string column.
 *
 * Routing is defined by Python's `timely.container.stable_hash`: a key goes
 * to worker `stable_hash(key) mod peers` (the mathematical, non-negative
 * modulo). These kernels compute exactly that for whole columns:
 *
 *   - an integer routes as itself;
 *   - a float64 whose value is an integer routes as that integer (however
 *     large: 2.0**70 goes where 2**70 goes); any other float64 (fractional,
 *     infinite, NaN) by the CRC-32 of its IEEE-754 bits, little-endian, every
 *     NaN as the canonical quiet NaN 0x7FF8000000000000;
 *   - text routes by the CRC-32 of its UTF-8 bytes, bytes by their CRC-32.
 *     Text given as code units (1, 2 or 4 bytes each: Python's str storage,
 *     numpy's fixed-width `U`) is encoded on the fly; a surrogate code point
 *     is encoded as its three bytes ("surrogatepass"), a code point above
 *     U+10FFFF (not text; numpy cannot read it back) as U+FFFD.
 *
 * tly_crc32 is the CRC-32 of zlib and Python's zlib.crc32 (reflected
 * polynomial 0xEDB88320). Tables are built once by tly_hash_init; every other
 * function is a pure function of its input. Plain C: no Python, no allocation.
 */
#ifndef TIMELY_HASH_H
#define TIMELY_HASH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Builds the CRC tables; call once before anything else here (idempotent). */
void tly_hash_init(void);

/* zlib-compatible CRC-32 of `len` bytes, continuing from `crc` (0 to start). */
uint32_t tly_crc32(uint32_t crc, const void *data, size_t len);

/* ---- text as code units ------------------------------------------------ */

/* The UTF-8 size of `n` code units of `width` bytes (1, 2 or 4). With
 * `strict`, SIZE_MAX when one is a surrogate or above U+10FFFF (no valid
 * UTF-8 exists for it); otherwise those count as described above. */
size_t tly_utf8_size(const void *units, size_t n, int width, int strict);

/* Writes the UTF-8 of `n` code units of `width` bytes to `out` (room for
 * tly_utf8_size(units, n, width, 0) bytes); returns the bytes written. */
size_t tly_utf8_encode(const void *units, size_t n, int width, uint8_t *out);

/* The CRC-32 of the UTF-8 of `n` code units of `width` bytes, continuing
 * from `crc`: tly_crc32 of what tly_utf8_encode writes, without a buffer. */
uint32_t tly_crc32_units(uint32_t crc, const void *units, size_t n, int width);

/* -1 when `len` bytes are valid UTF-8 (RFC 3629: shortest form, no
 * surrogates, at most U+10FFFF); otherwise the offset of the first byte of
 * the first invalid sequence. */
int64_t tly_utf8_check(const uint8_t *data, size_t len);

/* ---- routing: dest[i] = stable_hash(key i) mod peers, peers >= 1 -------- */

void tly_route_i64(const int64_t *keys, size_t n, int64_t peers, int64_t *dest);
void tly_route_u64(const uint64_t *keys, size_t n, uint64_t peers, int64_t *dest);
void tly_route_f64(const double *keys, size_t n, int64_t peers, int64_t *dest);
void tly_route_f32(const float *keys, size_t n, int64_t peers, int64_t *dest);

/* The worker of one float64 key. */
int64_t tly_route_double(double x, int64_t peers);

/* stable_hash of one float64 key modulo 2**64 (two's complement for a
 * negative integer): what a tuple key combines. */
uint64_t tly_hash64_double(double x);

/* Rows of `width` bytes (numpy `S`): trailing NUL bytes are padding and do
 * not count, as numpy drops them on reading an element. */
void tly_route_fixed(const uint8_t *rows, size_t n, size_t width, int64_t peers, int64_t *dest);

/* Rows of `width` UCS-4 code units (numpy `U`, native byte order):
 * trailing U+0000 are padding and do not count. */
void tly_route_ucs4(const uint32_t *rows, size_t n, size_t width, int64_t peers, int64_t *dest);

/* Arrow-layout strings: row i is data[offsets[i] .. offsets[i + 1]). */
void tly_route_str64(const int64_t *offsets, const uint8_t *data, size_t n, int64_t peers,
                     int64_t *dest);
void tly_route_str32(const int32_t *offsets, const uint8_t *data, size_t n, int64_t peers,
                     int64_t *dest);

/* A stable counting sort of row positions by destination: on return
 * counts[j] is the number of rows for worker j and order[] lists the rows
 * for worker 0, then worker 1, ..., each in input order. Destinations must
 * be in [0, peers). */
void tly_partition(const int64_t *dest, size_t n, int64_t peers, int64_t *counts, int64_t *order);

/* ---- in-process hashing of byte strings, for hash tables ---------------
 * Not a routing hash: these values may change between versions and are never
 * sent anywhere. Every byte counts (a NUL too). */

/* A string's first eight bytes; for a string of at most eight bytes a word
 * that, with the length, determines the string (two overlapping 4-byte
 * reads, or three single bytes): such strings compare without reading
 * their bytes. */
static inline uint64_t tly_string_word(const uint8_t *p, size_t n)
{
    uint64_t w = 0;
    uint32_t lo, hi;
    if (n >= 8) {
        memcpy(&w, p, 8);
        return w;
    }
    if (n >= 4) {
        memcpy(&lo, p, 4);
        memcpy(&hi, p + n - 4, 4);
        return (uint64_t)lo | (uint64_t)hi << 32;
    }
    if (n > 0)
        return (uint64_t)p[0] | (uint64_t)p[n >> 1] << 8 | (uint64_t)p[n - 1] << 16;
    return 0;
}

/* The hash of `n` bytes at `p` whose tly_string_word is `word`: the word,
 * then eight bytes per multiply, the last eight overlapping the ones before. */
static inline uint64_t tly_hash_string(const uint8_t *p, size_t n, uint64_t word)
{
    uint64_t h = (word ^ (n * 0x9E3779B97F4A7C15ULL)) * 0xFF51AFD7ED558CCDULL;
    uint64_t w;
    size_t i = 8;
    if (n > 8) {
        while (i + 8 <= n) {
            memcpy(&w, p + i, 8);
            h = (h ^ (h >> 29) ^ w) * 0xC4CEB9FE1A85EC53ULL;
            i += 8;
        }
        memcpy(&w, p + n - 8, 8);
        h = (h ^ (h >> 29) ^ w) * 0xC4CEB9FE1A85EC53ULL;
    }
    return h ^ (h >> 32);
}

#endif
