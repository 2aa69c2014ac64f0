/* Byte buffers and bounds-checked payload parsing. Everything here treats its input as hostile. */
#include "agent.h"

#include <stdlib.h>
#include <string.h>

int buf_append(struct buf *b, const void *p, size_t n) {
    if (n == 0) return 0;
    if (b->head + b->len + n > b->cap) {
        /* compact first: the consumed prefix is dead space */
        if (b->head > 0) {
            memmove(b->data, b->data + b->head, b->len);
            b->head = 0;
        }
        if (b->len + n > b->cap) {
            size_t cap = b->cap ? b->cap : 4096;
            while (cap < b->len + n) cap *= 2;
            unsigned char *d = realloc(b->data, cap);
            if (!d) return -1;
            b->data = d;
            b->cap = cap;
        }
    }
    memcpy(b->data + b->head + b->len, p, n);
    b->len += n;
    return 0;
}

void buf_consume(struct buf *b, size_t n) {
    if (n >= b->len) {
        b->head = 0;
        b->len = 0;
        /* give memory back after a burst (e.g. a 20 MB output) instead of keeping the high-water mark forever */
        if (b->cap > (4u << 20)) {
            free(b->data);
            b->data = NULL;
            b->cap = 0;
        }
        return;
    }
    b->head += n;
    b->len -= n;
}

void buf_free(struct buf *b) {
    free(b->data);
    b->data = NULL;
    b->head = b->len = b->cap = 0;
}

size_t rd_left(const struct rd *r) { return r->len - r->off; }

int rd_u8(struct rd *r, uint8_t *v) {
    if (rd_left(r) < 1) return -1;
    *v = r->p[r->off];
    r->off += 1;
    return 0;
}

int rd_u16(struct rd *r, uint16_t *v) {
    if (rd_left(r) < 2) return -1;
    const unsigned char *p = r->p + r->off;
    *v = (uint16_t)((p[0] << 8) | p[1]);
    r->off += 2;
    return 0;
}

int rd_u32(struct rd *r, uint32_t *v) {
    if (rd_left(r) < 4) return -1;
    const unsigned char *p = r->p + r->off;
    *v = ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
    r->off += 4;
    return 0;
}

int rd_u64(struct rd *r, uint64_t *v) {
    uint32_t hi, lo;
    if (rd_left(r) < 8) return -1;
    rd_u32(r, &hi);
    rd_u32(r, &lo);
    *v = ((uint64_t)hi << 32) | lo;
    return 0;
}

int rd_cstr(struct rd *r, char **out) {
    uint32_t n;
    *out = NULL;
    if (rd_u32(r, &n) < 0) return -1;
    if (n > MAX_PAYLOAD || n > rd_left(r)) return -1;
    if (memchr(r->p + r->off, 0, n)) return -1;
    char *s = malloc((size_t)n + 1);
    if (!s) return -1;
    memcpy(s, r->p + r->off, n);
    s[n] = 0;
    r->off += n;
    *out = s;
    return 0;
}

void put_u16(unsigned char *p, uint16_t v) {
    p[0] = (unsigned char)(v >> 8);
    p[1] = (unsigned char)v;
}

void put_u32(unsigned char *p, uint32_t v) {
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

void put_u64(unsigned char *p, uint64_t v) {
    put_u32(p, (uint32_t)(v >> 32));
    put_u32(p + 4, (uint32_t)v);
}
