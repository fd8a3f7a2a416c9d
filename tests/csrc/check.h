/*
 * What the standalone checks share: a seeded xorshift generator (the same
 * cases on every run) and CHECK, which names the failing line and exits 1.
 */
#ifndef TIMELY_CHECK_H
#define TIMELY_CHECK_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static uint64_t rng_state = 88172645463325252ULL;

static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

#define CHECK(cond, ...)                                            \
    do {                                                            \
        if (!(cond)) {                                              \
            fprintf(stderr, "check failed at line %d: ", __LINE__); \
            fprintf(stderr, __VA_ARGS__);                           \
            fprintf(stderr, "\n");                                  \
            exit(1);                                                \
        }                                                           \
    } while (0)

#endif
