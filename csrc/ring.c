#include <stdatomic.h>
#include <string.h>

#include "ring.h"

#define RING_MAGIC 0x74696d656c797231ULL   /* "timelyr1" */
#define SKIP_FLAG 0x80000000u

typedef struct {
    _Alignas(64) _Atomic uint64_t head;      /* producer's line */
    char pad0[64 - sizeof(uint64_t)];
    _Alignas(64) _Atomic uint64_t tail;      /* consumer's line */
    uint64_t peeked;       /* consumer-private: bytes of the last peeked record */
    char pad1[64 - 2 * sizeof(uint64_t)];
    _Alignas(64) uint64_t capacity;          /* read-only after init */
    uint64_t magic;
    _Atomic uint32_t room_wanted;  /* set by a producer that found the ring full */
    char pad2[64 - 2 * sizeof(uint64_t) - sizeof(uint32_t)];
} ring_header;

_Static_assert(sizeof(ring_header) == TLY_RING_HEADER, "ring header layout");

static inline ring_header *H(void *mem)
{
    return (ring_header *)mem;
}

static inline unsigned char *DATA(void *mem)
{
    return (unsigned char *)mem + TLY_RING_HEADER;
}

static inline uint64_t pad8(uint64_t n)
{
    return (n + 7u) & ~(uint64_t)7u;
}

uint64_t tly_ring_init(void *mem, size_t size)
{
    if (mem == NULL || ((uintptr_t)mem & 7u) != 0 || size < TLY_RING_HEADER + 64) {
        return 0;
    }
    uint64_t room = (uint64_t)(size - TLY_RING_HEADER);
    uint64_t cap = 64;
    while (cap * 2 <= room) {
        cap *= 2;
    }
    ring_header *h = H(mem);
    memset(h, 0, sizeof(*h));
    h->capacity = cap;
    h->magic = RING_MAGIC;
    atomic_store_explicit(&h->head, 0, memory_order_relaxed);
    atomic_store_explicit(&h->tail, 0, memory_order_release);
    return cap;
}

int tly_ring_check(const void *mem, size_t size)
{
    const ring_header *h = (const ring_header *)mem;
    if (mem == NULL || size < TLY_RING_HEADER + 64 || h->magic != RING_MAGIC) {
        return TLY_RING_BAD;
    }
    uint64_t cap = h->capacity;
    if (cap < 64 || (cap & (cap - 1)) != 0 || cap > size - TLY_RING_HEADER) {
        return TLY_RING_BAD;
    }
    return TLY_RING_OK;
}

uint64_t tly_ring_max_record(const void *mem)
{
    return ((const ring_header *)mem)->capacity / 2 - 8;
}

int tly_ring_push(void *mem, const void *payload, uint32_t len, uint32_t flags)
{
    ring_header *h = H(mem);
    uint64_t cap = h->capacity;
    uint64_t need = 8 + pad8(len);
    if (need > cap / 2 || (flags & SKIP_FLAG)) {
        return TLY_RING_TOO_BIG;
    }
    uint64_t pos = atomic_load_explicit(&h->head, memory_order_relaxed);
    uint64_t tail = atomic_load_explicit(&h->tail, memory_order_acquire);
    uint64_t offset = pos & (cap - 1);
    uint64_t to_end = cap - offset;
    uint64_t total = need <= to_end ? need : to_end + need;
    if (pos + total - tail > cap) {
        return TLY_RING_FULL;
    }
    unsigned char *data = DATA(mem);
    if (need > to_end) {
        /* Fill the end with a skip record; the record starts at offset 0. */
        uint32_t skip[2] = {(uint32_t)(to_end - 8), SKIP_FLAG};
        memcpy(data + offset, skip, 8);
        pos += to_end;
        offset = 0;
    }
    uint32_t head[2] = {len, flags};
    memcpy(data + offset, head, 8);
    if (len) {
        memcpy(data + offset + 8, payload, len);
    }
    atomic_store_explicit(&h->head, pos + need, memory_order_release);
    return TLY_RING_OK;
}

int tly_ring_peek(void *mem, const void **payload, uint32_t *len, uint32_t *flags)
{
    ring_header *h = H(mem);
    uint64_t cap = h->capacity;
    uint64_t tail = atomic_load_explicit(&h->tail, memory_order_relaxed);
    unsigned char *data = DATA(mem);
    for (;;) {
        uint64_t head = atomic_load_explicit(&h->head, memory_order_acquire);
        if (tail == head) {
            return TLY_RING_EMPTY;
        }
        uint64_t offset = tail & (cap - 1);
        uint32_t rec[2];
        memcpy(rec, data + offset, 8);
        uint64_t span = 8 + pad8(rec[0]);
        if (span > cap - offset || span > head - tail) {
            return TLY_RING_BAD;
        }
        if (rec[1] & SKIP_FLAG) {
            tail += span;
            atomic_store_explicit(&h->tail, tail, memory_order_release);
            continue;
        }
        *payload = data + offset + 8;
        *len = rec[0];
        *flags = rec[1];
        h->peeked = span;
        return TLY_RING_OK;
    }
}

void tly_ring_pop(void *mem)
{
    ring_header *h = H(mem);
    uint64_t tail = atomic_load_explicit(&h->tail, memory_order_relaxed);
    atomic_store_explicit(&h->tail, tail + h->peeked, memory_order_release);
    h->peeked = 0;
}

uint64_t tly_ring_used(const void *mem)
{
    ring_header *h = H((void *)mem);
    uint64_t head = atomic_load_explicit(&h->head, memory_order_acquire);
    uint64_t tail = atomic_load_explicit(&h->tail, memory_order_acquire);
    return head - tail;
}

static inline _Atomic uint32_t *FLAG(void *mem)
{
    return (_Atomic uint32_t *)mem;
}

void tly_park_init(void *mem)
{
    atomic_store_explicit(FLAG(mem), 0, memory_order_seq_cst);
}

void tly_park_announce(void *mem)
{
    atomic_store_explicit(FLAG(mem), 1, memory_order_seq_cst);
    atomic_thread_fence(memory_order_seq_cst);
}

void tly_park_clear(void *mem)
{
    atomic_store_explicit(FLAG(mem), 0, memory_order_seq_cst);
}

int tly_park_wanted(void *mem)
{
    atomic_thread_fence(memory_order_seq_cst);
    return atomic_load_explicit(FLAG(mem), memory_order_seq_cst) != 0;
}

void tly_ring_want_room(void *mem)
{
    atomic_store_explicit(&H(mem)->room_wanted, 1, memory_order_seq_cst);
    atomic_thread_fence(memory_order_seq_cst);
}

int tly_ring_room_wanted(void *mem)
{
    ring_header *h = H(mem);
    atomic_thread_fence(memory_order_seq_cst);
    if (atomic_load_explicit(&h->room_wanted, memory_order_seq_cst) == 0) {
        return 0;
    }
    return atomic_exchange_explicit(&h->room_wanted, 0, memory_order_seq_cst) != 0;
}
