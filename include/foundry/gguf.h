/*
 * foundry/gguf.h — GGUF files (versions 2 and 3): read by mapping, write.
 *
 * A GGUF file is a header, typed key/value metadata, a table of tensor
 * infos (name, dims, ggml type, offset) and the aligned tensor data.  The
 * reader maps the file and validates every count, length, type, dim,
 * offset and alignment against the file's size before anything is used
 * (nothing is allocated from an unchecked count); tensors are zero-copy
 * views of the mapping, quantized ones included.  The mapping lives until
 * the reader and every tensor cut from it are gone.
 *
 *   tm_gguf *g = tm_gguf_open("model.gguf");
 *   int64_t k = tm_gguf_find_key(g, "general.architecture");
 *   const char *arch = tm_gguf_value_str(tm_gguf_kv_value(g, k), NULL);
 *   tm_tensor *w = tm_gguf_tensor_by_name(g, "token_embd.weight");
 *   ...; tm_free(w); tm_gguf_close(g);
 *
 * GGUF dims run innermost first (ne[0] is the row length); Foundry shapes
 * run outermost first, so a tensor with dims {4096, 11008} is shape
 * [11008, 4096] here.  All strings are borrowed from the reader (valid
 * until tm_gguf_close; strings are NOT NUL-terminated in the file: the
 * reader keeps a NUL-terminated copy of each key and string value).
 */
#ifndef FOUNDRY_GGUF_H
#define FOUNDRY_GGUF_H

#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Metadata value types, with GGUF's numbering. */
typedef enum tm_gguf_type {
    TM_GGUF_UINT8 = 0,
    TM_GGUF_INT8 = 1,
    TM_GGUF_UINT16 = 2,
    TM_GGUF_INT16 = 3,
    TM_GGUF_UINT32 = 4,
    TM_GGUF_INT32 = 5,
    TM_GGUF_FLOAT32 = 6,
    TM_GGUF_BOOL = 7,
    TM_GGUF_STRING = 8,
    TM_GGUF_ARRAY = 9,
    TM_GGUF_UINT64 = 10,
    TM_GGUF_INT64 = 11,
    TM_GGUF_FLOAT64 = 12
} tm_gguf_type;

/* "uint8", ..., "array"; "invalid" otherwise.  Static. */
const char *tm_gguf_type_name(tm_gguf_type t);

/* One metadata value (a scalar, a string or an array, possibly nested). */
typedef struct tm_gguf_value tm_gguf_value;

tm_gguf_type tm_gguf_value_type(const tm_gguf_value *v);
/* Scalars converted: any integer or bool type to u64/i64 (TM_ERANGE when
 * it does not fit), any number to f64; TM_EDTYPE for strings and arrays. */
tm_status tm_gguf_value_u64(const tm_gguf_value *v, uint64_t *out);
tm_status tm_gguf_value_i64(const tm_gguf_value *v, int64_t *out);
tm_status tm_gguf_value_f64(const tm_gguf_value *v, double *out);
/* A STRING value (NULL with TM_EDTYPE otherwise); *len (may be NULL) gets
 * its byte length (strings may hold NUL bytes).  Borrowed. */
const char *tm_gguf_value_str(const tm_gguf_value *v, size_t *len);
/* Arrays: element type, length, element j (a borrowed value; for nested
 * arrays and strings too), and for numeric element types the raw
 * little-endian elements packed (borrowed; NULL for strings/arrays). */
tm_gguf_type tm_gguf_array_type(const tm_gguf_value *v);
int64_t tm_gguf_array_len(const tm_gguf_value *v);
const tm_gguf_value *tm_gguf_array_get(const tm_gguf_value *v, int64_t j);
const void *tm_gguf_array_data(const tm_gguf_value *v);

/* ------------------------------------------------------------- reader */

typedef struct tm_gguf tm_gguf;

/* Maps and validates `path`.  NULL with an error naming the file and the
 * problem (bad magic or version, truncation, a count / length / dim /
 * offset out of the file or overflowing, a bad general.alignment,
 * duplicate keys or tensor names, more than 4 dims, an unknown value or
 * tensor type, misaligned or overlapping tensor data). */
tm_gguf *tm_gguf_open(const char *path);
/* The same over `size` bytes at `data`, which must stay valid and
 * unchanged until the reader and its tensors are gone (for tests, fuzzing
 * and embedded files). */
tm_gguf *tm_gguf_open_memory(const void *data, size_t size);
/* Closes the reader; tensors cut from it stay valid.  NULL is a no-op. */
void tm_gguf_close(tm_gguf *g);

uint32_t tm_gguf_version(const tm_gguf *g);
/* general.alignment (32 when absent). */
size_t tm_gguf_alignment(const tm_gguf *g);
/* Byte offset of the tensor data section within the file. */
size_t tm_gguf_data_offset(const tm_gguf *g);

int64_t tm_gguf_n_kv(const tm_gguf *g);
/* Key i (borrowed) and its value (borrowed); NULL when i is out of range. */
const char *tm_gguf_key(const tm_gguf *g, int64_t i);
const tm_gguf_value *tm_gguf_kv_value(const tm_gguf *g, int64_t i);
/* Index of `key`, or -1 (no error set) when absent. */
int64_t tm_gguf_find_key(const tm_gguf *g, const char *key);
/* The value of `key` or NULL (no error set) when absent. */
const tm_gguf_value *tm_gguf_get(const tm_gguf *g, const char *key);

typedef struct tm_gguf_tensor_info {
    const char *name;     /* borrowed */
    uint32_t ggml_type;   /* GGUF's type number */
    tm_dtype dtype;       /* Foundry's dtype; -1 when Foundry has none
                             (e.g. Q2_K, IQ types): tm_gguf_tensor fails */
    int ndim;             /* 1..4 */
    int64_t shape[4];     /* outermost first (reversed GGUF dims) */
    size_t offset;        /* bytes from the data section's start */
    size_t nbytes;
} tm_gguf_tensor_info;

int64_t tm_gguf_n_tensors(const tm_gguf *g);
tm_status tm_gguf_tensor_info_at(const tm_gguf *g, int64_t i,
                                 tm_gguf_tensor_info *out);
/* Index of tensor `name`, or -1 (no error set). */
int64_t tm_gguf_find_tensor(const tm_gguf *g, const char *name);
/* Tensor i as a read-only zero-copy view of the mapping (new reference;
 * it keeps the mapping alive).  TM_EUNSUPPORTED naming the ggml type for
 * types Foundry cannot compute with. */
tm_tensor *tm_gguf_tensor(const tm_gguf *g, int64_t i);
tm_tensor *tm_gguf_tensor_by_name(const tm_gguf *g, const char *name);

/* GGUF's type number for a Foundry dtype (-1 when GGUF has none), and the
 * reverse (-1 when Foundry has none). */
int tm_gguf_type_of_dtype(tm_dtype dt);
int tm_dtype_of_gguf_type(uint32_t ggml_type);

/* ------------------------------------------------------------- writer */

typedef struct tm_gguf_writer tm_gguf_writer;

/* An empty file description (version 3, alignment 32). */
tm_gguf_writer *tm_gguf_writer_new(void);
void tm_gguf_writer_free(tm_gguf_writer *w);
/* general.alignment (a power of two); also written as metadata. */
tm_status tm_gguf_writer_set_alignment(tm_gguf_writer *w, size_t alignment);

/* Metadata, in the order set; setting a key again replaces its value in
 * place.  Values are copied. */
tm_status tm_gguf_set_u8(tm_gguf_writer *w, const char *key, uint8_t v);
tm_status tm_gguf_set_i8(tm_gguf_writer *w, const char *key, int8_t v);
tm_status tm_gguf_set_u16(tm_gguf_writer *w, const char *key, uint16_t v);
tm_status tm_gguf_set_i16(tm_gguf_writer *w, const char *key, int16_t v);
tm_status tm_gguf_set_u32(tm_gguf_writer *w, const char *key, uint32_t v);
tm_status tm_gguf_set_i32(tm_gguf_writer *w, const char *key, int32_t v);
tm_status tm_gguf_set_u64(tm_gguf_writer *w, const char *key, uint64_t v);
tm_status tm_gguf_set_i64(tm_gguf_writer *w, const char *key, int64_t v);
tm_status tm_gguf_set_f32(tm_gguf_writer *w, const char *key, float v);
tm_status tm_gguf_set_f64(tm_gguf_writer *w, const char *key, double v);
tm_status tm_gguf_set_bool(tm_gguf_writer *w, const char *key, bool v);
/* A string of `len` bytes (len SIZE_MAX: strlen(s)). */
tm_status tm_gguf_set_str(tm_gguf_writer *w, const char *key,
                          const char *s, size_t len);
/* An array of `n` numeric elements of `elem` type, packed little-endian
 * at `data`. */
tm_status tm_gguf_set_array(tm_gguf_writer *w, const char *key,
                            tm_gguf_type elem, const void *data, int64_t n);
/* An array of n NUL-terminated strings. */
tm_status tm_gguf_set_str_array(tm_gguf_writer *w, const char *key,
                                const char *const *strs, int64_t n);
/* Any value (nested arrays too), e.g. one read from another file. */
tm_status tm_gguf_set_value(tm_gguf_writer *w, const char *key,
                            const tm_gguf_value *v);

/* Adds tensor `name` (a reference to `t` is kept until the writer is
 * freed; any dtype GGUF has; 1..4 dims; any device: copied to the host
 * when written).  Duplicate names are TM_EINVAL. */
tm_status tm_gguf_writer_add_tensor(tm_gguf_writer *w, const char *name,
                                    tm_tensor *t);
/* Writes the file (to a temporary beside it, then renamed: a failed write
 * leaves no partial file). */
tm_status tm_gguf_writer_write(const tm_gguf_writer *w, const char *path);

#ifdef __cplusplus
}
#endif
#endif
