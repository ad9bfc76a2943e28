/*
 * dataset_impl.h — the token-dataset file layout and the open dataset,
 * shared by the reader (dataset.c), the writer (dataset_write.c) and the
 * loader (dataset_loader.c).  Internal; never installed.
 *
 * Layout (little-endian, docs/data.md):
 *   0   magic "FTOKDS\0\0"      8 bytes
 *   8   version                 u32 (1)
 *   12  token width             u32 (2 or 4 bytes)
 *   16  vocab_size              u64
 *   24  tokenizer_hash          u64
 *   32  n_docs                  u64
 *   40  n_tokens                u64
 *   48  n_bytes                 u64 (source text bytes)
 *   56  checksum                u64 (FNV-1a 64 of bytes 0..55)
 *   64  n_docs + 1 token offsets (u64), then n_docs byte counts (u64),
 *       then n_tokens tokens of `width` bytes; nothing after them.
 */
#ifndef FOUNDRY_IO_DATASET_IMPL_H
#define FOUNDRY_IO_DATASET_IMPL_H

#include "foundry/data.h"
#include "../tensor/core/tensor_impl.h"

#include <stdio.h>

#define TM__DS_MAGIC "FTOKDS\0\0"
#define TM__DS_HEADER 64

uint64_t tm__fnv1a64(const void *data, size_t n);
/* splitmix64's output for state x (one step from x). */
uint64_t tm__splitmix64(uint64_t x);

/* Tokens [start, start+n) of a split, already range-checked. */
tm_status tm__ds_read(const tm_token_dataset *ds, tm_token_split split,
                      int64_t start, int64_t n, int64_t *out);

/* One split: its documents (indices into the file's) in order, and the
 * running token count before each (cum[n] is the split's total). */
typedef struct tm__ds_split {
    int64_t n_docs;
    int64_t *docs;
    int64_t *cum;    /* n_docs + 1 entries */
    int64_t n_bytes;
} tm__ds_split;

struct tm_token_dataset {
    unsigned char *base;   /* the whole file */
    size_t size;
    bool mapped;           /* munmap at close; else tm__dealloc */
    uint32_t width;
    int64_t vocab;
    uint64_t hash;
    int64_t n_docs, n_tokens, n_bytes;
    const unsigned char *offsets, *bytes, *tokens;  /* into base */
    double val_fraction;
    tm__ds_split split[2]; /* TRAIN, VAL; ALL is the file itself */
};

struct tm_token_writer {
    char *path, *tmp;
    FILE *tokens;          /* anonymous: gone when closed or on a crash */
    int64_t vocab;
    uint64_t hash;
    uint32_t width;
    int64_t n_docs, cap, n_tokens, n_bytes;
    uint64_t *offsets;     /* n_docs + 1 used */
    uint64_t *bytes;       /* n_docs used */
    tm_status failed;      /* first failure of an add, reported at close */
    /* the text writer's state (dataset_text.c), released with the writer,
     * so the raw writer needs no tokenizer */
    void *text;
    void (*release_text)(void *text);
};

static inline uint64_t tm__ds_le64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

static inline uint32_t tm__ds_le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
           (uint32_t)p[3] << 24;
}

static inline void tm__ds_put64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static inline int64_t tm__ds_token(const tm_token_dataset *ds, int64_t i)
{
    const unsigned char *p = ds->tokens + (size_t)i * ds->width;
    return ds->width == 2 ? (int64_t)(p[0] | p[1] << 8) : (int64_t)tm__ds_le32(p);
}

static inline int64_t tm__ds_offset(const tm_token_dataset *ds, int64_t doc)
{
    return (int64_t)tm__ds_le64(ds->offsets + 8 * (size_t)doc);
}

#endif
