/*
 * gguf_impl.h — what the GGUF reader, value accessors and writer share.
 * Internal: never installed.
 */
#ifndef FOUNDRY_IO_GGUF_IMPL_H
#define FOUNDRY_IO_GGUF_IMPL_H

#include "foundry/gguf.h"
#include "../tensor/core/tensor_impl.h"

#include <stdatomic.h>
#include <string.h>

/* Limits beyond "fits in the file": nesting of arrays in arrays, and the
 * byte length of a key or a tensor name (the GGUF spec caps keys at 65535
 * bytes; names get the same cap). */
#define TM__GGUF_MAX_DEPTH 8
#define TM__GGUF_MAX_NAME 65535u
#define TM__GGUF_DEFAULT_ALIGN 32u
#define TM__GGUF_MAX_DIMS 4

/* One ggml tensor type: GGUF's number, its name, values per block and
 * bytes per block, and Foundry's dtype (-1 when it has none). */
typedef struct tm__gguf_ggml_type {
    uint32_t id;
    const char *name;
    uint32_t block;
    uint32_t bytes;
    int dtype;
} tm__gguf_ggml_type;

/* The entry for GGUF type number `id`, or NULL when it is unknown. */
const tm__gguf_ggml_type *tm__gguf_ggml_type_of(uint32_t id);

/* A metadata value.  Scalars keep their payload widened in `u`/`i`/`f`
 * (by type); strings point to a NUL-terminated copy; arrays hold `n`
 * element values in `items` and, for numeric elements, the packed
 * little-endian bytes in `raw` (borrowed from the file or, in the writer,
 * owned). */
struct tm_gguf_value {
    uint8_t type;
    uint8_t elem;       /* arrays: the element type */
    uint64_t n;         /* strings: byte length; arrays: element count */
    union {
        uint64_t u;
        int64_t i;
        double f;
    } num;
    const char *str;    /* strings */
    const void *raw;    /* numeric arrays: packed elements */
    tm_gguf_value *items;
};

/* Bytes of one element of a numeric (or bool) type; 0 for STRING, ARRAY
 * and invalid types. */
size_t tm__gguf_scalar_size(uint32_t type);
/* The scalar at p (little-endian, `type` numeric) into v->num. */
void tm__gguf_scalar_load(tm_gguf_value *v, uint32_t type,
                          const unsigned char *p);

/* The bytes a reader's tensors and the reader share: a refcount, dropped
 * by the reader and by every tensor storage cut from it. */
typedef struct tm__gguf_map {
    atomic_long refs;
    void *base;
    size_t size;
    bool unmap; /* munmap on the last reference (tm_gguf_open) */
} tm__gguf_map;

typedef struct tm__gguf_kv {
    const char *key; /* NUL-terminated copy */
    size_t key_len;
    tm_gguf_value value;
} tm__gguf_kv;

typedef struct tm__gguf_tinfo {
    tm_gguf_tensor_info info;
    size_t name_len;
} tm__gguf_tinfo;

/* A name and the index it belongs to, for lookups by binary search. */
typedef struct tm__gguf_ref {
    const char *name;
    int64_t idx;
} tm__gguf_ref;

struct tm_gguf {
    char *label; /* the path or "<memory>" */
    tm__gguf_map *map;
    uint32_t version;
    size_t alignment;
    size_t data_offset;
    int64_t n_kv, n_tensors;
    tm__gguf_kv *kv;
    tm__gguf_tinfo *t;
    tm__gguf_ref *kv_sorted; /* keys sorted */
    tm__gguf_ref *t_sorted;  /* tensor names sorted */
    tm_gguf_value *values; /* every array element value, one block */
    char *strings;         /* every key, name and string, NUL-terminated */
};

/* The writer of foundry/gguf.h (gguf_write.c: values and setters;
 * gguf_write_file.c: the file). */
typedef struct tm__gguf_wkv {
    char *key;
    tm_gguf_value v; /* owned: str, raw and items allocated */
} tm__gguf_wkv;

typedef struct tm__gguf_wtensor {
    char *name;
    tm_tensor *t;
    uint32_t type;
    size_t nbytes, offset;
} tm__gguf_wtensor;

struct tm_gguf_writer {
    size_t alignment;
    tm__gguf_wkv *kv;
    int64_t nkv, kv_cap;
    tm__gguf_wtensor *t;
    int64_t nt, t_cap;
};

/* Parses and validates g->map's bytes into g (label, map set; the rest
 * zero).  On failure the error is set and g holds what must be freed. */
tm_status tm__gguf_parse(tm_gguf *g, const char *fn);

/* Binary search of `name` in refs[n]; -1 when absent. */
int64_t tm__gguf_ref_find(const tm__gguf_ref *refs, int64_t n,
                          const char *name);

#endif
