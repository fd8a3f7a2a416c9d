/*
 * A counted antichain: counts per timestamp, and the frontier of minimal times
 * whose count is positive.
 *
 * Times live in a treap ordered lexicographically (a linear extension of the
 * product order). Every node carries the coordinate-wise minimum ("meet") of
 * the positive times in its subtree. When a frontier element stops being
 * positive, the new minimal elements are found by an in-order walk over the
 * times lexicographically after it that skips every subtree whose meet is
 * already dominated by the frontier: for totally ordered times that walk is
 * one root-to-leaf path, so an update costs O(log n) rather than a rescan of
 * every outstanding time. Arity 2 has its own walk: the frontier is a
 * staircase, and only the first coordinates between the retired element and
 * its successor are probed, each in O(log n).
 *
 * Every time with a non-zero count is also in a hash table (open addressing,
 * linear probing) that holds its count and its tree node, so that reading or
 * changing a count costs O(1) cache misses, not a root-to-leaf walk. A new
 * time does not enter the tree at once: it waits in a pending list until the
 * tree is next searched (a frontier element retires, or the list outgrows the
 * table). The pending times are then sorted and inserted in order, or, into
 * an empty tree, built into a treap in one linear pass whose nodes lie in
 * time order, so later walks touch neighbouring memory. A workload that adds
 * n times in random order and then retires them costs O(n log n) in all,
 * with the random accesses of the additions going to the table alone.
 *
 * Frontier changes are appended to a change log (rows + diffs) that the owner
 * compacts and drains.
 *
 * Ownership: the struct owns every buffer it points to; tly_ma_free releases
 * them. Node indices stay valid across pool growth; pointers do not.
 */
#ifndef TIMELY_MUTABLE_ANTICHAIN_H
#define TIMELY_MUTABLE_ANTICHAIN_H

#include <stddef.h>
#include <stdint.h>

typedef struct tly_node {
    int64_t count;
    int32_t left;
    int32_t right;
    uint32_t prio;
    uint8_t anypos;        /* some positive count in the subtree */
    uint8_t pad[3];
    uint64_t rows[];       /* key[k], then meet[k] (valid where anypos) */
} tly_node;

typedef struct tly_slot {
    int64_t count;
    int32_t node;
    uint32_t pad;
    uint64_t key[];
} tly_slot;

#define TLY_MA_EMPTY (-2)
#define TLY_MA_PENDING (-1)

typedef struct tly_ma {
    size_t k;              /* arity */

    /* treap pool: nodes of `stride` bytes, each a tly_node header followed by
     * its key (k coordinates) and its subtree meet (k coordinates). One node
     * is one or two cache lines, which is what a root-to-leaf walk touches. */
    unsigned char *pool;
    size_t stride;
    size_t cap;
    size_t high;           /* nodes ever handed out */
    int32_t free_head;     /* free list threaded through the nodes' left */
    int32_t root;
    size_t size;           /* times with a non-zero count (entries of the table) */
    uint64_t rng;

    /* hash table of every time with a non-zero count: slots of `hstride`
     * bytes, each a tly_slot (count, tree node or TLY_MA_PENDING while not in
     * the tree, TLY_MA_EMPTY when free) followed by the key (k coordinates),
     * so that a look-up touches one cache line. hcap is 0 or a power of two. */
    unsigned char *htab;
    size_t hstride;
    size_t hcap;

    /* times not yet in the tree, in arrival order; may hold times since
     * removed or inserted (they are skipped when the list is flushed) */
    uint64_t *pend;        /* pcap * k */
    size_t plen;
    size_t pcap;

    /* frontier, lexicographically sorted */
    uint64_t *front;       /* fcap * k */
    size_t flen;
    size_t fcap;

    /* frontier change log, uncompacted */
    uint64_t *chg;         /* ccap * k */
    int64_t *chgd;
    size_t clen;
    size_t ccap;
} tly_ma;

int tly_ma_init(tly_ma *m, size_t k);
void tly_ma_free(tly_ma *m);
void tly_ma_clear(tly_ma *m);

/* Adds diff to the count of time t; logs frontier changes. Returns 0, or -1
 * when memory runs out: the tree is then unchanged if the time could not be
 * stored, otherwise the frontier or its change log may be incomplete and the
 * structure must be cleared before further use. */
int tly_ma_update(tly_ma *m, const uint64_t *t, int64_t diff);

int64_t tly_ma_count(const tly_ma *m, const uint64_t *t);

/* Some frontier element <= t / < t. */
int tly_ma_less_equal(const tly_ma *m, const uint64_t *t);
int tly_ma_less_than(const tly_ma *m, const uint64_t *t);

/* Compacts the change log in place; returns its length, or (size_t)-1 on OOM. */
size_t tly_ma_compact_changes(tly_ma *m);

/* Writes every (time, count) with a non-zero count, in lexicographic order,
 * into rows (size * k) and counts (size). Returns 0, or -1 when memory runs
 * out (the outputs are then incomplete; the structure is unchanged). */
int tly_ma_dump(const tly_ma *m, uint64_t *rows, int64_t *counts);

#endif
