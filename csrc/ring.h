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

/*
 * Room wanted: a producer that found the ring full asks the consumer to wake
 * it once room is freed, by the same store-fence-load pair as the park flag
 * below:
 *
 *   producer: tly_ring_want_room (set, seq_cst fence), then try its push
 *             again; wait for a wake-up only if the ring is still full.
 *   consumer: after popping, tly_ring_room_wanted (seq_cst fence, then take
 *             the request); wake the producer when it returns 1.
 *
 * Either the producer's second try sees the room the consumer freed, or the
 * consumer sees the request. A full ring holds data, so a consumer that does
 * not sleep while its rings hold data always comes to pop and look.
 */

/* Producer: asks to be woken when the consumer next frees room. */
void tly_ring_want_room(void *mem);

/* Consumer, after popping: 1 (once per request) when the producer asked to
 * be woken, else 0. */
int tly_ring_room_wanted(void *mem);

/*
 * A park flag: one 32-bit C11 atomic, in shared memory on a cache line of
 * its own (TLY_PARK_FLAG_BYTES, 8-byte aligned), telling senders whether its
 * owner (one consumer of several rings) is parked or about to park, so that
 * they wake it only then. The protocol, a store-fence-load pair on each side:
 *
 *   owner:  tly_park_announce (set, seq_cst fence), then look at its rings
 *           (tly_ring_used); block only if all are empty; tly_park_clear
 *           once awake.
 *   sender: push into the ring (release), then tly_park_wanted (seq_cst
 *           fence, load); wake the owner only when it returns 1.
 *
 * The two fences order each side's store before its load, so at least one
 * side sees the other's store: either the owner finds the data, or the
 * sender finds the flag set and wakes it. No wake-up is lost.
 */
#define TLY_PARK_FLAG_BYTES 64

/* Formats the flag at `mem` as clear. */
void tly_park_init(void *mem);

/* Owner: announces that it is about to park (then re-checks its rings). */
void tly_park_announce(void *mem);

/* Owner: it is awake again. */
void tly_park_clear(void *mem);

/* Sender, after writing into a ring of the owner: 1 when the owner must be
 * woken (it is parked or about to park), else 0. */
int tly_park_wanted(void *mem);

#endif
