/*
 * safetensors_impl.h — what the safetensors reader and writer share.
 * Internal: never installed.
 */
#ifndef FOUNDRY_IO_SAFETENSORS_IMPL_H
#define FOUNDRY_IO_SAFETENSORS_IMPL_H

#include "../tensor/core/tensor_impl.h"
#include "json.h"

/* The reference reader's limit on the header length. */
#define TM__ST_MAX_HEADER 100000000ull

/* One dtype of the format.  The table lists them in the order of the
 * reference implementation's Dtype enum (safetensors/src/tensor.rs), which
 * is the order its writer sorts by (descending), so the index is the rank. */
typedef struct tm__st_dtype {
    const char *name; /* as written in the header: "F32", "F8_E4M3", ... */
    int bits;         /* element width in bits (F4: 4, F6_*: 6) */
    int tm;           /* the tm_dtype, or -1 when Foundry has none */
} tm__st_dtype;

extern const tm__st_dtype tm__st_dtypes[];
extern const int tm__st_ndtypes;

/* Index in tm__st_dtypes of the name s[len], or -1. */
int tm__st_dtype_find(const char *s, size_t len);
/* Index in tm__st_dtypes of a dense Foundry dtype, or -1. */
int tm__st_dtype_of(tm_dtype dt);

/* One tensor of an open file. */
typedef struct tm__st_entry {
    const char *name; /* in the JSON document's string buffer */
    int dtype;        /* index in tm__st_dtypes */
    int ndim;
    int64_t shape[TM_MAX_DIMS];
    uint64_t begin, end; /* within the data section */
} tm__st_entry;

/* The open-file handle of foundry/io.h. */
struct tm_safetensors {
    char *label;           /* the path, or "<memory>", for messages */
    tm_storage *storage;   /* one reference: the mapping or the copy */
    const unsigned char *bytes;
    size_t size;
    uint64_t data_start;   /* 8 + header length */
    tm__json_doc doc;
    tm__st_entry *t;       /* in file order (by begin) */
    int nt;
    const tm__st_entry **by_name; /* entries of t, sorted by name */
    const tm__json_node **meta;   /* metadata values (key in ->key) */
    int nmeta;
    bool has_meta;
};

/* Size of the buffers names are formatted into for messages. */
#define TM__ST_NAME_BUF 96

/* `name` formatted for a message into buf[TM__ST_NAME_BUF]. */
const char *tm__st_name(char *buf, const char *name);

#endif
