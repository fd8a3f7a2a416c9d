/*
 * A single-producer single-consumer ring over caller-provided memory.
 *
 * Layout: a 192-byte header (head and tail on cache lines of their own, then
 * the capacity) followed by `capacity` data bytes, a power of two. Positions
 * are monotonically increasing byte counts; a position's offset is
 * `pos & (capacity - 1)`. Each record is an 8-byte header (payload length,
 * flags) and the payload padded to 8 bytes; a record never straddles the end:
 * the producer fills the tail of the data area with a skip record instead.
 *
 * The producer alone writes `head` (release) after writing a record; the
 * consumer alone writes `tail` (release) after it is done with one. Each
 * reads the other's index with acquire. Records larger than half the
 * capacity are refused: callers split messages into chunks and mark all but
 * the last with TLY_RING_MORE.
 *
 * Plain C11 atomics; no Python, no allocation, no locks.
 */
#ifndef TIMELY_RING_H
#define TIMELY_RING_H

#include <stddef.h>
#include <stdint.h>

#define TLY_RING_HEADER 192
#define TLY_RING_MORE 1u   /* more chunks of this message follow */

enum {
    TLY_RING_OK = 0,
    TLY_RING_FULL = -1,     /* not enough room now; retry later */
    TLY_RING_EMPTY = -2,    /* nothing to read now */
    TLY_RING_TOO_BIG = -3,  /* a record larger than half the capacity */
    TLY_RING_BAD = -4,      /* memory too small, capacity not a power of two, or corrupt */
};

/* Formats `size` bytes at `mem` (8-byte aligned) as an empty ring whose
 * capacity is the largest power of two that fits. Returns the capacity, or
 * 0 when `size` is too small. Call once, before any producer or consumer. */
uint64_t tly_ring_init(void *mem, size_t size);

/* Checks the header of a ring formatted by tly_ring_init over `size` bytes. */
int tly_ring_check(const void *mem, size_t size);

/* The largest payload one record can carry. */
uint64_t tly_ring_max_record(const void *mem);

/* Producer: appends one record. TLY_RING_OK, TLY_RING_FULL or TLY_RING_TOO_BIG. */
int tly_ring_push(void *mem, const void *payload, uint32_t len, uint32_t flags);

/* Consumer: the next record, without consuming it: sets *payload, *len and
 * *flags. TLY_RING_OK or TLY_RING_EMPTY (or TLY_RING_BAD on a corrupt record).
 * The payload stays valid until tly_ring_pop. */
int tly_ring_peek(void *mem, const void **payload, uint32_t *len, uint32_t *flags);

/* Consumer: consumes the record returned by the last successful peek. */
void tly_ring_pop(void *mem);

/* Bytes in use (for tests and metrics; approximate while others run). */
uint64_t tly_ring_used(const void *mem);

#endif
