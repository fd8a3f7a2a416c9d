#include <stdlib.h>
#include <string.h>

#include "mutable_antichain.h"
#include "rows.h"

#define NIL (-1)

static inline tly_node *N(const tly_ma *m, int32_t x)
{
    return (tly_node *)(m->pool + (size_t)x * m->stride);
}

static uint32_t next_prio(tly_ma *m)
{
    /* xorshift64*: priorities only need to be independent of the keys. */
    uint64_t x = m->rng;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    m->rng = x;
    return (uint32_t)((x * 0x2545F4914F6CDD1DULL) >> 32);
}

int tly_ma_init(tly_ma *m, size_t k)
{
    memset(m, 0, sizeof(*m));
    m->k = k;
    m->stride = sizeof(tly_node) + 2 * k * sizeof(uint64_t);
    m->hstride = sizeof(tly_slot) + k * sizeof(uint64_t);
    m->root = NIL;
    m->free_head = NIL;
    m->rng = 0x9E3779B97F4A7C15ULL;
    return 0;
}

void tly_ma_free(tly_ma *m)
{
    free(m->pool);
    free(m->front);
    free(m->chg);
    free(m->chgd);
    free(m->htab);
    free(m->pend);
    size_t k = m->k;
    size_t stride = m->stride;
    memset(m, 0, sizeof(*m));
    m->k = k;
    m->stride = stride;
    m->hstride = sizeof(tly_slot) + k * sizeof(uint64_t);
    m->root = NIL;
    m->free_head = NIL;
}

void tly_ma_clear(tly_ma *m)
{
    size_t k = m->k;
    tly_ma_free(m);
    tly_ma_init(m, k);
}

static int grow_pool(tly_ma *m)
{
    size_t ncap = m->cap ? m->cap * 2 : 8;
    if (ncap > (size_t)INT32_MAX) {
        return -1;
    }
    unsigned char *p = realloc(m->pool, ncap * m->stride);
    if (p == NULL) {
        return -1;
    }
    m->pool = p;
    m->cap = ncap;
    return 0;
}

static int32_t alloc_node(tly_ma *m)
{
    if (m->free_head != NIL) {
        int32_t x = m->free_head;
        m->free_head = N(m, x)->left;
        return x;
    }
    if (m->high == m->cap && grow_pool(m) != 0) {
        return NIL;
    }
    return (int32_t)m->high++;
}

static void free_node(tly_ma *m, int32_t x)
{
    N(m, x)->left = m->free_head;
    m->free_head = x;
}

/* Recomputes the subtree aggregates of x from its children. */
static void pull(tly_ma *m, int32_t x)
{
    size_t k = m->k;
    uint64_t *mt = (N(m, x)->rows + k);
    int any = 0;
    if (N(m, x)->count > 0) {
        tly_row_copy(mt, N(m, x)->rows, k);
        any = 1;
    }
    int32_t kids[2] = {N(m, x)->left, N(m, x)->right};
    for (int s = 0; s < 2; s++) {
        int32_t c = kids[s];
        if (c == NIL || !N(m, c)->anypos) {
            continue;
        }
        const uint64_t *cm = (N(m, c)->rows + k);
        if (!any) {
            tly_row_copy(mt, cm, k);
            any = 1;
        } else {
            for (size_t i = 0; i < k; i++) {
                if (cm[i] < mt[i]) {
                    mt[i] = cm[i];
                }
            }
        }
    }
    N(m, x)->anypos = (uint8_t)any;
}

static int32_t rotate_right(tly_ma *m, int32_t x)
{
    int32_t l = N(m, x)->left;
    N(m, x)->left = N(m, l)->right;
    N(m, l)->right = x;
    pull(m, x);
    pull(m, l);
    return l;
}

static int32_t rotate_left(tly_ma *m, int32_t x)
{
    int32_t r = N(m, x)->right;
    N(m, x)->right = N(m, r)->left;
    N(m, r)->left = x;
    pull(m, x);
    pull(m, r);
    return r;
}

static int32_t merge(tly_ma *m, int32_t a, int32_t b)
{
    if (a == NIL) {
        return b;
    }
    if (b == NIL) {
        return a;
    }
    if (N(m, a)->prio > N(m, b)->prio) {
        N(m, a)->right = merge(m, N(m, a)->right, b);
        pull(m, a);
        return a;
    }
    N(m, b)->left = merge(m, a, N(m, b)->left);
    pull(m, b);
    return b;
}

/* Adds d to the count of t below x; *old receives the previous count (0 when
 * absent); *err is set on OOM, leaving the tree as it was. */
static int32_t upd(tly_ma *m, int32_t x, const uint64_t *t, int64_t d, int64_t *old, int *err,
                   int32_t *made)
{
    size_t k = m->k;
    if (x == NIL) {
        int32_t n = alloc_node(m);
        if (n == NIL) {
            *err = 1;
            return NIL;
        }
        *made = n;
        tly_row_copy(N(m, n)->rows, t, k);
        N(m, n)->count = d;
        N(m, n)->left = NIL;
        N(m, n)->right = NIL;
        N(m, n)->prio = next_prio(m);
        pull(m, n);
        *old = 0;
        return n;
    }
    int c = tly_row_cmp(t, N(m, x)->rows, k);
    if (c == 0) {
        *old = N(m, x)->count;
        N(m, x)->count += d;
        if (N(m, x)->count == 0) {
            int32_t rest = merge(m, N(m, x)->left, N(m, x)->right);
            free_node(m, x);
            return rest;
        }
        pull(m, x);
        return x;
    }
    if (c < 0) {
        int32_t l = upd(m, N(m, x)->left, t, d, old, err, made);
        if (*err) {
            return x;
        }
        N(m, x)->left = l;
        if (l != NIL && N(m, l)->prio > N(m, x)->prio) {
            return rotate_right(m, x);
        }
    } else {
        int32_t r = upd(m, N(m, x)->right, t, d, old, err, made);
        if (*err) {
            return x;
        }
        N(m, x)->right = r;
        if (r != NIL && N(m, r)->prio > N(m, x)->prio) {
            return rotate_left(m, x);
        }
    }
    pull(m, x);
    return x;
}

/* ---- the table of counts ------------------------------------------------ */

static inline uint64_t hash_row(const uint64_t *t, size_t k)
{
    uint64_t h = 0x9E3779B97F4A7C15ULL;
    for (size_t i = 0; i < k; i++) {
        h ^= t[i];
        h *= 0xBF58476D1CE4E5B9ULL;
        h ^= h >> 31;
    }
    h *= 0x94D049BB133111EBULL;
    return h ^ (h >> 29);
}

#define NOSLOT ((size_t)-1)

static inline tly_slot *H(const tly_ma *m, size_t i)
{
    return (tly_slot *)(m->htab + i * m->hstride);
}

/* The slot holding t, or NOSLOT. */
static size_t ht_find(const tly_ma *m, const uint64_t *t)
{
    if (m->hcap == 0) {
        return NOSLOT;
    }
    size_t k = m->k;
    size_t mask = m->hcap - 1;
    size_t i = (size_t)hash_row(t, k) & mask;
    while (H(m, i)->node != TLY_MA_EMPTY) {
        if (tly_row_eq(H(m, i)->key, t, k)) {
            return i;
        }
        i = (i + 1) & mask;
    }
    return NOSLOT;
}

/* A free slot for t, which is absent; the table has room. */
static size_t ht_place(const tly_ma *m, const uint64_t *t)
{
    size_t mask = m->hcap - 1;
    size_t i = (size_t)hash_row(t, m->k) & mask;
    while (H(m, i)->node != TLY_MA_EMPTY) {
        i = (i + 1) & mask;
    }
    return i;
}

/* Makes room for one more entry (load at most 1/2). */
static int ht_reserve(tly_ma *m)
{
    if (2 * (m->size + 1) <= m->hcap) {
        return 0;
    }
    size_t k = m->k;
    size_t ncap = m->hcap ? m->hcap * 2 : 16;
    unsigned char *tab = malloc(ncap * m->hstride);
    if (tab == NULL) {
        return -1;
    }
    unsigned char *old = m->htab;
    size_t ocap = m->hcap;
    m->htab = tab;
    m->hcap = ncap;
    for (size_t i = 0; i < ncap; i++) {
        H(m, i)->node = TLY_MA_EMPTY;
    }
    for (size_t i = 0; i < ocap; i++) {
        const tly_slot *o = (const tly_slot *)(old + i * m->hstride);
        if (o->node != TLY_MA_EMPTY) {
            tly_slot *d = H(m, ht_place(m, o->key));
            d->count = o->count;
            d->node = o->node;
            tly_row_copy(d->key, o->key, k);
        }
    }
    free(old);
    return 0;
}

/* Frees slot i, moving back the entries of its probe run that would
 * otherwise be cut off from their home slot (no tombstones). */
static void ht_remove(tly_ma *m, size_t i)
{
    size_t k = m->k;
    size_t mask = m->hcap - 1;
    size_t j = i;
    for (;;) {
        j = (j + 1) & mask;
        if (H(m, j)->node == TLY_MA_EMPTY) {
            break;
        }
        size_t home = (size_t)hash_row(H(m, j)->key, k) & mask;
        /* Entry j may fill the hole at i unless its home lies cyclically in (i, j]. */
        int stays = (i <= j) ? (i < home && home <= j) : (i < home || home <= j);
        if (!stays) {
            tly_row_copy(H(m, i)->key, H(m, j)->key, k);
            H(m, i)->count = H(m, j)->count;
            H(m, i)->node = H(m, j)->node;
            i = j;
        }
    }
    H(m, i)->node = TLY_MA_EMPTY;
    m->size--;
}

/* ---- times waiting outside the tree --------------------------------------- */

static int pend_push(tly_ma *m, const uint64_t *t)
{
    size_t k = m->k;
    if (m->plen == m->pcap) {
        size_t ncap = m->pcap ? m->pcap * 2 : 8;
        uint64_t *p = realloc(m->pend, ncap * k * sizeof(uint64_t));
        if (p == NULL) {
            return -1;
        }
        m->pend = p;
        m->pcap = ncap;
    }
    tly_row_copy(m->pend + m->plen * k, t, k);
    m->plen++;
    return 0;
}

/* Post-order: computes the aggregates of a tree built without them. */
static void pull_all(tly_ma *m, int32_t x)
{
    if (x == NIL) {
        return;
    }
    pull_all(m, N(m, x)->left);
    pull_all(m, N(m, x)->right);
    pull(m, x);
}

/* Moves every pending time into the tree. The live ones are sorted; an empty
 * tree is built from them in one pass (a Cartesian tree on the nodes'
 * priorities, nodes allocated in time order), a non-empty one takes them in
 * time order, so that consecutive insertions walk neighbouring paths. */
static int flush_pending(tly_ma *m)
{
    size_t k = m->k;
    size_t n = m->plen;
    if (n == 0) {
        return 0;
    }
    /* Keep the live rows: in the table, still pending; mark them taken so a
     * duplicate row counts once. */
    size_t live = 0;
    for (size_t i = 0; i < n; i++) {
        const uint64_t *t = m->pend + i * k;
        size_t s = ht_find(m, t);
        if (s == NOSLOT || H(m, s)->node != TLY_MA_PENDING) {
            continue;
        }
        H(m, s)->node = NIL - 2;     /* taken: neither pending nor a node yet */
        if (live != i) {
            tly_row_copy(m->pend + live * k, t, k);
        }
        live++;
    }
    m->plen = 0;
    if (live == 0) {
        return 0;
    }
    uint32_t *perm = malloc(live * sizeof(uint32_t));
    int32_t *stack = NULL;
    if (perm == NULL || tly_sort_rows(m->pend, live, k, perm) != 0) {
        goto fail;
    }
    if (m->root == NIL) {
        /* An empty tree holds no node: the pool is reused from its start. */
        m->high = 0;
        m->free_head = NIL;
        stack = malloc(live * sizeof(int32_t));
        if (stack == NULL) {
            goto fail;
        }
        while (m->cap < m->high + live) {
            if (grow_pool(m) != 0) {
                goto fail;
            }
        }
        size_t depth = 0;
        for (size_t i = 0; i < live; i++) {
            const uint64_t *t = m->pend + (size_t)perm[i] * k;
            size_t s = ht_find(m, t);
            int32_t x = (int32_t)m->high++;
            tly_node *nd = N(m, x);
            tly_row_copy(nd->rows, t, k);
            nd->count = H(m, s)->count;
            nd->prio = next_prio(m);
            nd->right = NIL;
            nd->anypos = 0;
            int32_t last = NIL;
            while (depth > 0 && N(m, stack[depth - 1])->prio < nd->prio) {
                last = stack[--depth];
            }
            nd->left = last;
            if (depth > 0) {
                N(m, stack[depth - 1])->right = x;
            }
            stack[depth++] = x;
            H(m, s)->node = x;
        }
        m->root = stack[0];
        pull_all(m, m->root);
        free(stack);
        free(perm);
        return 0;
    }
    for (size_t i = 0; i < live; i++) {
        const uint64_t *t = m->pend + (size_t)perm[i] * k;
        size_t s = ht_find(m, t);
        int64_t old = 0;
        int err = 0;
        int32_t made = NIL;
        int32_t root = upd(m, m->root, t, H(m, s)->count, &old, &err, &made);
        if (err) {
            goto fail;
        }
        m->root = root;
        H(m, s)->node = made;
    }
    free(perm);
    return 0;
fail:
    /* Out of memory: the tree misses the times not yet placed. */
    free(perm);
    free(stack);
    return -1;
}

static int log_change(tly_ma *m, const uint64_t *t, int64_t d)
{
    size_t k = m->k;
    if (m->clen == m->ccap) {
        size_t ncap = m->ccap ? m->ccap * 2 : 8;
        uint64_t *r = realloc(m->chg, ncap * k * sizeof(uint64_t));
        if (r == NULL) {
            return -1;
        }
        m->chg = r;
        int64_t *dd = realloc(m->chgd, ncap * sizeof(int64_t));
        if (dd == NULL) {
            return -1;
        }
        m->chgd = dd;
        m->ccap = ncap;
    }
    tly_row_copy(m->chg + m->clen * k, t, k);
    m->chgd[m->clen] = d;
    m->clen++;
    return 0;
}

static int reserve_front(tly_ma *m, size_t extra)
{
    size_t need = m->flen + extra;
    if (need <= m->fcap) {
        return 0;
    }
    size_t ncap = m->fcap ? m->fcap : 4;
    while (ncap < need) {
        ncap *= 2;
    }
    uint64_t *f = realloc(m->front, ncap * m->k * sizeof(uint64_t));
    if (f == NULL) {
        return -1;
    }
    m->front = f;
    m->fcap = ncap;
    return 0;
}

/* Inserts t into the sorted frontier; the caller has reserved room. */
static void front_insert(tly_ma *m, const uint64_t *t)
{
    size_t k = m->k;
    size_t pos = m->flen;
    while (pos > 0 && tly_row_cmp(m->front + (pos - 1) * k, t, k) > 0) {
        pos--;
    }
    memmove(m->front + (pos + 1) * k, m->front + pos * k, (m->flen - pos) * k * sizeof(uint64_t));
    tly_row_copy(m->front + pos * k, t, k);
    m->flen++;
}

/* In-order walk over the positive times after `after` (or all when after is
 * NULL) that no frontier element is <= to; each one found is minimal and joins
 * the frontier. Subtrees whose meet is dominated are skipped whole. */
static int rescan(tly_ma *m, int32_t x, const uint64_t *after)
{
    size_t k = m->k;
    while (x != NIL) {
        if (!N(m, x)->anypos || tly_front_le(m->front, m->flen, k, (N(m, x)->rows + k))) {
            return 0;
        }
        const uint64_t *key = N(m, x)->rows;
        if (after != NULL && tly_row_cmp(key, after, k) <= 0) {
            x = N(m, x)->right;
            continue;
        }
        if (rescan(m, N(m, x)->left, after) != 0) {
            return -1;
        }
        if (N(m, x)->count > 0 && !tly_front_le(m->front, m->flen, k, key)) {
            if (reserve_front(m, 1) != 0 || log_change(m, key, 1) != 0) {
                return -1;
            }
            front_insert(m, key);
        }
        x = N(m, x)->right;
        after = NULL;
    }
    return 0;
}

/* The least positive time >= key (lexicographically) below x, or NIL. */
static int32_t first_positive_from(const tly_ma *m, int32_t x, const uint64_t *key)
{
    size_t k = m->k;
    while (x != NIL && N(m, x)->anypos) {
        if (tly_row_cmp(N(m, x)->rows, key, k) < 0) {
            x = N(m, x)->right;
            continue;
        }
        int32_t l = first_positive_from(m, N(m, x)->left, key);
        if (l != NIL) {
            return l;
        }
        if (N(m, x)->count > 0) {
            return x;
        }
        x = N(m, x)->right;
    }
    return NIL;
}

/* Arity 2: the frontier is a staircase, sorted by first coordinate ascending
 * and second descending. When t = (a0, b0) leaves it, with neighbours
 * (ap, bp) before and (an, bn) after, the times that may become minimal are
 * exactly the positive (a, b) with a0 <= a < an and b0 <= b < bp. Walk the
 * distinct first coordinates from a0, asking for the least b >= b0 at each;
 * each one below the running threshold is minimal. Cost: O(log n) per first
 * coordinate probed, and the walk stops once the threshold reaches b0. */
static int rescan2(tly_ma *m, const uint64_t *t, size_t pos)
{
    uint64_t a_next = pos < m->flen ? m->front[pos * 2] : 0;
    int has_next = pos < m->flen;
    uint64_t threshold = pos > 0 ? m->front[(pos - 1) * 2 + 1] : 0;
    int bounded = pos > 0;
    uint64_t probe[2] = {t[0], t[1]};
    for (;;) {
        int32_t x = first_positive_from(m, m->root, probe);
        if (x == NIL) {
            return 0;
        }
        const uint64_t *key = N(m, x)->rows;
        if (has_next && key[0] >= a_next) {
            return 0;
        }
        if (key[0] != probe[0]) {
            /* A new first coordinate: ask again from (a, b0). */
            probe[0] = key[0];
            continue;
        }
        if (!bounded || key[1] < threshold) {
            if (reserve_front(m, 1) != 0 || log_change(m, key, 1) != 0) {
                return -1;
            }
            front_insert(m, key);
            threshold = key[1];
            bounded = 1;
            if (threshold == t[1]) {
                return 0;
            }
        }
        if (probe[0] == UINT64_MAX) {
            return 0;
        }
        probe[0] += 1;
    }
}

int tly_ma_update(tly_ma *m, const uint64_t *t, int64_t diff)
{
    if (diff == 0) {
        return 0;
    }
    size_t k = m->k;
    /* Reserve what the bookkeeping may need before anything changes. */
    if (reserve_front(m, 1) != 0 || ht_reserve(m) != 0) {
        return -1;
    }
    int64_t old;
    size_t s = ht_find(m, t);
    if (s == NOSLOT) {
        /* A new time waits outside the tree until the tree is next searched;
         * a long list is moved in first, so it never outgrows the table. */
        if (m->plen >= 2 * m->size + 64 && flush_pending(m) != 0) {
            return -1;
        }
        if (pend_push(m, t) != 0) {
            return -1;
        }
        old = 0;
        s = ht_place(m, t);
        tly_row_copy(H(m, s)->key, t, k);
        H(m, s)->count = diff;
        H(m, s)->node = TLY_MA_PENDING;
        m->size++;
    } else {
        old = H(m, s)->count;
        int64_t next = old + diff;
        int32_t x = H(m, s)->node;
        if (x >= 0) {
            if (next == 0 || (old > 0) != (next > 0)) {
                /* The node leaves, or its subtree's positive times change:
                 * walk from the root to fix the aggregates on the way. */
                int64_t was = 0;
                int err = 0;
                int32_t made = NIL;
                m->root = upd(m, m->root, t, diff, &was, &err, &made);
            } else {
                N(m, x)->count = next;
            }
        }
        if (next == 0) {
            ht_remove(m, s);
        } else {
            H(m, s)->count = next;
        }
    }
    int64_t now = old + diff;
    if (old <= 0 && now > 0) {
        if (!tly_front_le(m->front, m->flen, k, t)) {
            /* t is new and minimal: it displaces the elements above it. */
            size_t w = 0;
            for (size_t i = 0; i < m->flen; i++) {
                const uint64_t *f = m->front + i * k;
                if (tly_row_le(t, f, k)) {
                    if (log_change(m, f, -1) != 0) {
                        return -1;
                    }
                } else {
                    if (w != i) {
                        tly_row_copy(m->front + w * k, f, k);
                    }
                    w++;
                }
            }
            m->flen = w;
            if (log_change(m, t, 1) != 0) {
                return -1;
            }
            front_insert(m, t);
        }
    } else if (old > 0 && now <= 0) {
        for (size_t i = 0; i < m->flen; i++) {
            if (tly_row_eq(m->front + i * k, t, k)) {
                memmove(m->front + i * k, m->front + (i + 1) * k,
                        (m->flen - i - 1) * k * sizeof(uint64_t));
                m->flen--;
                if (log_change(m, t, -1) != 0) {
                    return -1;
                }
                /* The tree is searched: it must hold every time. */
                if (flush_pending(m) != 0) {
                    return -1;
                }
                /* Only times >= t can have been dominated by t alone, and they
                 * all sort after t. */
                if (k == 2) {
                    return rescan2(m, t, i);
                }
                return rescan(m, m->root, t);
            }
        }
    }
    return 0;
}

int64_t tly_ma_count(const tly_ma *m, const uint64_t *t)
{
    size_t s = ht_find(m, t);
    return s == NOSLOT ? 0 : H(m, s)->count;
}

int tly_ma_less_equal(const tly_ma *m, const uint64_t *t)
{
    return tly_front_le(m->front, m->flen, m->k, t);
}

int tly_ma_less_than(const tly_ma *m, const uint64_t *t)
{
    size_t k = m->k;
    for (size_t i = 0; i < m->flen; i++) {
        const uint64_t *f = m->front + i * k;
        if (tly_row_le(f, t, k) && !tly_row_eq(f, t, k)) {
            return 1;
        }
    }
    return 0;
}

size_t tly_ma_compact_changes(tly_ma *m)
{
    size_t n = tly_compact(m->chg, m->chgd, m->clen, m->k);
    if (n != (size_t)-1) {
        m->clen = n;
    }
    return n;
}

int tly_ma_dump(const tly_ma *m, uint64_t *rows, int64_t *counts)
{
    size_t k = m->k;
    size_t n = m->size;
    if (n == 0) {
        return 0;
    }
    uint64_t *keys = malloc(n * k * sizeof(uint64_t));
    int64_t *found = malloc(n * sizeof(int64_t));
    uint32_t *perm = malloc(n * sizeof(uint32_t));
    if (keys == NULL || found == NULL || perm == NULL) {
        free(keys);
        free(found);
        free(perm);
        return -1;
    }
    size_t j = 0;
    for (size_t i = 0; i < m->hcap; i++) {
        if (H(m, i)->node != TLY_MA_EMPTY) {
            tly_row_copy(keys + j * k, H(m, i)->key, k);
            found[j] = H(m, i)->count;
            j++;
        }
    }
    int rc = tly_sort_rows(keys, n, k, perm);
    if (rc == 0) {
        for (size_t i = 0; i < n; i++) {
            tly_row_copy(rows + i * k, keys + (size_t)perm[i] * k, k);
            counts[i] = found[perm[i]];
        }
    }
    free(keys);
    free(found);
    free(perm);
    return rc;
}
