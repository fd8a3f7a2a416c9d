/*
 * Stress check of csrc/ring.c: a producer thread and a consumer thread pass
 * millions of variable-size messages (some larger than the ring, carried in
 * chunks) through a small ring; every byte is checked against the
 * producer's pseudo-random stream. Built and run by tests/test_csrc.py,
 * also under ThreadSanitizer. Usage: check_ring MESSAGES RING_BYTES [wait]
 *
 * With "wait", a producer that finds the ring full asks for room
 * (tly_ring_want_room), tries once more and then sleeps on a semaphore that
 * the consumer posts only when tly_ring_room_wanted says it was asked: a
 * wake-up lost by the protocol leaves the producer asleep for ever (the
 * test's timeout).
 */
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ring.h"

static void *ring;
static unsigned long messages;
static unsigned long max_size;
static int waiting;            /* the producer sleeps on `room` when full */
static sem_t room;
static unsigned long sleeps;   /* the producer's sleeps, for the report */

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

static unsigned char byte_of(unsigned long message, unsigned long offset)
{
    return (unsigned char)mix((uint64_t)message * 0x9E3779B97F4A7C15ULL + offset);
}

static unsigned long size_of(unsigned long message)
{
    uint64_t r = mix(message + 12345);
    switch (r % 8) {
    case 0:
        return 0;
    case 1:
        return max_size;      /* larger than the ring: several chunks */
    default:
        return (unsigned long)(r >> 8) % 200;
    }
}

static void *produce(void *arg)
{
    (void)arg;
    unsigned long chunk_max = (unsigned long)tly_ring_max_record(ring);
    unsigned char *buf = malloc(chunk_max + 1);
    for (unsigned long m = 0; m < messages; m++) {
        unsigned long size = size_of(m);
        unsigned long sent = 0;
        do {
            unsigned long n = size - sent < chunk_max ? size - sent : chunk_max;
            for (unsigned long i = 0; i < n; i++) {
                buf[i] = byte_of(m, sent + i);
            }
            uint32_t flags = sent + n < size ? TLY_RING_MORE : 0;
            int rc;
            while ((rc = tly_ring_push(ring, buf, (uint32_t)n, flags)) == TLY_RING_FULL) {
                if (!waiting) {
                    sched_yield();
                    continue;
                }
                tly_ring_want_room(ring);
                rc = tly_ring_push(ring, buf, (uint32_t)n, flags);
                if (rc != TLY_RING_FULL) {
                    break;
                }
                sleeps++;
                while (sem_wait(&room) != 0) {
                }
            }
            if (rc != TLY_RING_OK) {
                fprintf(stderr, "push failed: %d\n", rc);
                exit(1);
            }
            sent += n;
        } while (sent < size);
    }
    free(buf);
    return NULL;
}

static void *consume(void *arg)
{
    (void)arg;
    for (unsigned long m = 0; m < messages; m++) {
        unsigned long size = size_of(m);
        unsigned long got = 0;
        for (;;) {
            const void *payload;
            uint32_t len, flags;
            int rc;
            while ((rc = tly_ring_peek(ring, &payload, &len, &flags)) == TLY_RING_EMPTY) {
                sched_yield();
            }
            if (rc != TLY_RING_OK) {
                fprintf(stderr, "peek failed: %d\n", rc);
                exit(1);
            }
            const unsigned char *p = payload;
            for (uint32_t i = 0; i < len; i++) {
                if (p[i] != byte_of(m, got + i)) {
                    fprintf(stderr, "message %lu byte %lu corrupt\n", m, got + i);
                    exit(1);
                }
            }
            got += len;
            tly_ring_pop(ring);
            if (waiting && tly_ring_room_wanted(ring)) {
                sem_post(&room);
            }
            if (!(flags & TLY_RING_MORE)) {
                break;
            }
        }
        if (got != size) {
            fprintf(stderr, "message %lu: %lu bytes, expected %lu\n", m, got, size);
            exit(1);
        }
    }
    return NULL;
}

int main(int argc, char **argv)
{
    messages = argc > 1 ? strtoul(argv[1], NULL, 10) : 1000000;
    size_t bytes = argc > 2 ? strtoul(argv[2], NULL, 10) : 4096 + TLY_RING_HEADER;
    waiting = argc > 3 && strcmp(argv[3], "wait") == 0;
    if (waiting && sem_init(&room, 0, 0) != 0) {
        fprintf(stderr, "sem_init failed\n");
        return 1;
    }
    void *mem = aligned_alloc(64, (bytes + 63) / 64 * 64);
    uint64_t cap = tly_ring_init(mem, bytes);
    if (cap == 0 || tly_ring_check(mem, bytes) != TLY_RING_OK) {
        fprintf(stderr, "init failed\n");
        return 1;
    }
    ring = mem;
    max_size = (unsigned long)cap * 3;
    /* Edge cases before the threads start. */
    if (tly_ring_push(ring, mem, (uint32_t)cap, 0) != TLY_RING_TOO_BIG) {
        fprintf(stderr, "an oversized record was accepted\n");
        return 1;
    }
    const void *p;
    uint32_t len, flags;
    if (tly_ring_peek(ring, &p, &len, &flags) != TLY_RING_EMPTY) {
        fprintf(stderr, "an empty ring had a record\n");
        return 1;
    }
    pthread_t a, b;
    pthread_create(&a, NULL, produce, NULL);
    pthread_create(&b, NULL, consume, NULL);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    if (tly_ring_used(ring) != 0) {
        fprintf(stderr, "bytes left in the ring\n");
        return 1;
    }
    if (waiting && tly_ring_room_wanted(ring)) {
        fprintf(stderr, "a request for room outlived the run\n");
        return 1;
    }
    printf("ring checks passed: %lu messages through a %llu-byte ring", messages,
           (unsigned long long)cap);
    if (waiting) {
        printf(", the producer slept %lu times", sleeps);
    }
    printf("\n");
    free(mem);
    return 0;
}
