/*
 * gguf_build.h — building GGUF byte images field by field in memory, for
 * the reader's tests (well-formed and deliberately broken files).
 */
#ifndef FOUNDRY_TEST_GGUF_BUILD_H
#define FOUNDRY_TEST_GGUF_BUILD_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct gb {
    unsigned char *p;
    size_t n, cap;
} gb;

static inline void gb_bytes(gb *b, const void *s, size_t n)
{
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n) cap *= 2;
        unsigned char *np = realloc(b->p, cap);
        if (!np) abort();
        b->p = np;
        b->cap = cap;
    }
    if (n) memcpy(b->p + b->n, s, n);
    b->n += n;
}

static inline void gb_le(gb *b, uint64_t v, int n)
{
    unsigned char d[8];
    for (int k = 0; k < n; k++) d[k] = (unsigned char)(v >> 8 * k);
    gb_bytes(b, d, (size_t)n);
}

static inline void gb_u8(gb *b, uint64_t v) { gb_le(b, v, 1); }
static inline void gb_u32(gb *b, uint64_t v) { gb_le(b, v, 4); }
static inline void gb_u64(gb *b, uint64_t v) { gb_le(b, v, 8); }

static inline void gb_str(gb *b, const char *s)
{
    gb_u64(b, strlen(s));
    gb_bytes(b, s, strlen(s));
}

/* magic, version, counts */
static inline void gb_header(gb *b, uint32_t version, uint64_t nt,
                             uint64_t nkv)
{
    gb_bytes(b, "GGUF", 4);
    gb_u32(b, version);
    gb_u64(b, nt);
    gb_u64(b, nkv);
}

/* key + uint32 value */
static inline void gb_kv_u32(gb *b, const char *key, uint32_t v)
{
    gb_str(b, key);
    gb_u32(b, 4);
    gb_u32(b, v);
}

/* A tensor info with dims ne[nd] (GGUF order, innermost first). */
static inline void gb_tinfo(gb *b, const char *name, uint32_t nd,
                            const uint64_t *ne, uint32_t type, uint64_t off)
{
    gb_str(b, name);
    gb_u32(b, nd);
    for (uint32_t k = 0; k < nd; k++) gb_u64(b, ne[k]);
    gb_u32(b, type);
    gb_u64(b, off);
}

/* Zero bytes up to a multiple of a. */
static inline void gb_pad(gb *b, size_t a)
{
    while (b->n % a) gb_u8(b, 0);
}

static inline void gb_fill(gb *b, size_t n, unsigned char c)
{
    for (size_t i = 0; i < n; i++) gb_u8(b, c);
}

#endif
