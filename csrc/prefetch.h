/*
 * A hint to bring the cache line holding p closer before it is read: loops
 * that read memory at random (an index's table, a gather by node number)
 * issue it a few items ahead, so that their cache misses overlap instead of
 * following one another. It never faults and changes no result.
 *
 * Plain C: no Python objects.
 */
#ifndef TIMELY_PREFETCH_H
#define TIMELY_PREFETCH_H

static inline void tly_prefetch(const void *p)
{
#if defined(__GNUC__) || defined(__clang__)
    __builtin_prefetch(p);
#else
    (void)p;
#endif
}

#endif
