/*
 * Hashing kernels for routing records to workers.
 *
 * tly_crc32 is the CRC-32 of zlib and Python's zlib.crc32 (reflected
 * polynomial 0xEDB88320), so a string key routes to the same worker whether
 * it travels in a columnar batch or as a Python record. Tables are built once
 * by tly_hash_init; the kernels are pure functions of their input.
 */
#ifndef TIMELY_HASH_H
#define TIMELY_HASH_H

#include <stddef.h>
#include <stdint.h>

/* Builds the CRC tables; call once before tly_crc32 (idempotent). */
void tly_hash_init(void);

/* zlib-compatible CRC-32 of `len` bytes, continuing from `crc` (0 to start). */
uint32_t tly_crc32(uint32_t crc, const void *data, size_t len);

/* dest[i] = keys[i] mod peers, non-negative (Python's % for ints). */
void tly_route_i64(const int64_t *keys, size_t n, int64_t peers, int64_t *dest);
void tly_route_u64(const uint64_t *keys, size_t n, uint64_t peers, int64_t *dest);

/* A stable counting sort of row positions by destination: on return
 * counts[j] is the number of rows for worker j and order[] lists the rows
 * for worker 0, then worker 1, ..., each in input order. Destinations must
 * be in [0, peers). */
void tly_partition(const int64_t *dest, size_t n, int64_t peers, int64_t *counts, int64_t *order);

#endif
