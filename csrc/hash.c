#include "hash.h"

static uint32_t crc_table[8][256];
static int crc_ready = 0;

void tly_hash_init(void) {
    if (crc_ready) return;
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        crc_table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = crc_table[0][i];
        for (int t = 1; t < 8; t++) {
            c = crc_table[0][c & 0xFF] ^ (c >> 8);
            crc_table[t][i] = c;
        }
    }
    crc_ready = 1;
}

uint32_t tly_crc32(uint32_t crc, const void *data, size_t len) {
    const unsigned char *p = (const unsigned char *)data;
    uint32_t c = ~crc;
    /* Slicing by 8: eight table lookups per 8 input bytes (little-endian). */
    while (len >= 8) {
        uint32_t lo = ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16
                       | (uint32_t)p[3] << 24) ^ c;
        uint32_t hi = (uint32_t)p[4] | (uint32_t)p[5] << 8 | (uint32_t)p[6] << 16
                      | (uint32_t)p[7] << 24;
        c = crc_table[7][lo & 0xFF] ^ crc_table[6][(lo >> 8) & 0xFF]
            ^ crc_table[5][(lo >> 16) & 0xFF] ^ crc_table[4][lo >> 24]
            ^ crc_table[3][hi & 0xFF] ^ crc_table[2][(hi >> 8) & 0xFF]
            ^ crc_table[1][(hi >> 16) & 0xFF] ^ crc_table[0][hi >> 24];
        p += 8;
        len -= 8;
    }
    while (len--) c = crc_table[0][(c ^ *p++) & 0xFF] ^ (c >> 8);
    return ~c;
}

void tly_route_i64(const int64_t *keys, size_t n, int64_t peers, int64_t *dest) {
    for (size_t i = 0; i < n; i++) {
        int64_t r = keys[i] % peers;
        dest[i] = r < 0 ? r + peers : r;
    }
}

void tly_route_u64(const uint64_t *keys, size_t n, uint64_t peers, int64_t *dest) {
    for (size_t i = 0; i < n; i++) dest[i] = (int64_t)(keys[i] % peers);
}

void tly_partition(const int64_t *dest, size_t n, int64_t peers, int64_t *counts, int64_t *order) {
    for (int64_t j = 0; j < peers; j++) counts[j] = 0;
    for (size_t i = 0; i < n; i++) counts[dest[i]]++;
    /* counts doubles as the running offsets; restored afterwards. */
    int64_t start = 0;
    for (int64_t j = 0; j < peers; j++) {
        int64_t c = counts[j];
        counts[j] = start;
        start += c;
    }
    for (size_t i = 0; i < n; i++) order[counts[dest[i]]++] = (int64_t)i;
    int64_t prev = 0;
    for (int64_t j = 0; j < peers; j++) {
        int64_t end = counts[j];
        counts[j] = end - prev;
        prev = end;
    }
}
