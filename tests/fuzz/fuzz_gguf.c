/*
 * fuzz_gguf.c — fuzz target for the GGUF reader.
 *
 * With libFuzzer (make fuzz-gguf: clang -fsanitize=fuzzer,address)
 * LLVMFuzzerTestOneInput is the entry point.  Built with
 * -DTM_FUZZ_STANDALONE it is a plain program that runs every file named on
 * its command line (directories: every file in them) through the same
 * function (make fuzz-corpus, which CI runs under ASan + UBSan).
 *
 * Each input goes to tm_gguf_open_memory; when that accepts it, every key
 * and value (nested arrays walked to the bottom) is read through every
 * accessor, every tensor info is checked against the input's size, and
 * every tensor is cut, compared with the input's bytes at its validated
 * offset, and freed.  A broken invariant aborts (a finding), as does a
 * crash or a sanitizer report.
 */
#include "foundry.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_ASSERT(c)                                                        \
    do {                                                                      \
        if (!(c)) {                                                           \
            fprintf(stderr, "fuzz_gguf: invariant failed: %s (%s:%d)\n", #c,  \
                    __FILE__, __LINE__);                                      \
            abort();                                                          \
        }                                                                     \
    } while (0)

static const uint8_t *g_data;
static size_t g_size;

/* p[n] lies inside the input. */
static int inside(const void *p, size_t n)
{
    const uint8_t *b = p;
    return b >= g_data && n <= g_size && (size_t)(b - g_data) <= g_size - n;
}

static size_t scalar_size(tm_gguf_type t)
{
    switch (t) {
    case TM_GGUF_UINT8: case TM_GGUF_INT8: case TM_GGUF_BOOL: return 1;
    case TM_GGUF_UINT16: case TM_GGUF_INT16: return 2;
    case TM_GGUF_UINT32: case TM_GGUF_INT32: case TM_GGUF_FLOAT32: return 4;
    case TM_GGUF_UINT64: case TM_GGUF_INT64: case TM_GGUF_FLOAT64: return 8;
    default: return 0;
    }
}

static void walk(const tm_gguf_value *v, int depth)
{
    FUZZ_ASSERT(v && depth <= 8);
    tm_gguf_type t = tm_gguf_value_type(v);
    FUZZ_ASSERT((unsigned)t <= TM_GGUF_FLOAT64);
    FUZZ_ASSERT(strcmp(tm_gguf_type_name(t), "invalid"));
    uint64_t u;
    int64_t i;
    double f;
    tm_status su = tm_gguf_value_u64(v, &u), si = tm_gguf_value_i64(v, &i),
              sf = tm_gguf_value_f64(v, &f);
    size_t len = 0;
    const char *s = tm_gguf_value_str(v, &len);
    if (t == TM_GGUF_STRING) {
        FUZZ_ASSERT(s && s[len] == 0 && inside(s, 0) == 0);
        FUZZ_ASSERT(su == TM_EDTYPE && sf == TM_EDTYPE);
        return;
    }
    FUZZ_ASSERT(!s);
    if (t == TM_GGUF_ARRAY) {
        FUZZ_ASSERT(su == TM_EDTYPE && si == TM_EDTYPE && sf == TM_EDTYPE);
        tm_gguf_type et = tm_gguf_array_type(v);
        int64_t n = tm_gguf_array_len(v);
        FUZZ_ASSERT(n >= 0 && (uint64_t)n <= g_size);
        size_t es = scalar_size(et);
        const uint8_t *raw = tm_gguf_array_data(v);
        FUZZ_ASSERT(es ? (raw != NULL && inside(raw, (size_t)n * es))
                       : raw == NULL);
        for (int64_t j = 0; j < n; j++) {
            const tm_gguf_value *e = tm_gguf_array_get(v, j);
            FUZZ_ASSERT(e && tm_gguf_value_type(e) == et);
            walk(e, depth + 1);
            if (es && (et == TM_GGUF_UINT8 || et == TM_GGUF_UINT16 ||
                       et == TM_GGUF_UINT32 || et == TM_GGUF_UINT64)) {
                uint64_t x = 0, y = 0;
                memcpy(&x, raw + (size_t)j * es, es);
                FUZZ_ASSERT(tm_gguf_value_u64(e, &y) == TM_OK && x == y);
            }
        }
        FUZZ_ASSERT(tm_gguf_array_get(v, n) == NULL);
        return;
    }
    FUZZ_ASSERT(sf == TM_OK);
    if (t == TM_GGUF_FLOAT32 || t == TM_GGUF_FLOAT64)
        FUZZ_ASSERT(su == TM_EDTYPE && si == TM_EDTYPE);
    else
        FUZZ_ASSERT(su == TM_OK || si == TM_OK);
    if (t == TM_GGUF_BOOL) FUZZ_ASSERT(su == TM_OK && u <= 1);
}

static void check_tensor(const tm_gguf *g, int64_t k)
{
    tm_gguf_tensor_info ti;
    FUZZ_ASSERT(tm_gguf_tensor_info_at(g, k, &ti) == TM_OK);
    FUZZ_ASSERT(ti.name && tm_gguf_find_tensor(g, ti.name) == k);
    FUZZ_ASSERT(ti.ndim >= 0 && ti.ndim <= 4);
    size_t a = tm_gguf_alignment(g), ds = tm_gguf_data_offset(g);
    FUZZ_ASSERT(ti.offset % a == 0);
    if (ti.nbytes)
        FUZZ_ASSERT(ds <= g_size && ti.offset <= g_size - ds &&
                    ti.nbytes <= g_size - ds - ti.offset);
    FUZZ_ASSERT(tm_dtype_of_gguf_type(ti.ggml_type) == (int)ti.dtype);
    tm_tensor *t = tm_gguf_tensor(g, k);
    if (!t) {
        FUZZ_ASSERT((int)ti.dtype < 0 ? tm_last_status() == TM_EUNSUPPORTED
                                      : tm_last_status() == TM_ENOMEM);
        return;
    }
    FUZZ_ASSERT((int)ti.dtype >= 0 && tm_dtype_of(t) == ti.dtype);
    FUZZ_ASSERT(tm_ndim(t) == ti.ndim && tm_nbytes(t) == ti.nbytes);
    for (int d = 0; d < ti.ndim; d++)
        FUZZ_ASSERT(tm_shape(t)[d] == ti.shape[d]);
    if (ti.nbytes)
        FUZZ_ASSERT(!memcmp(tm_data(t), g_data + ds + ti.offset, ti.nbytes));
    FUZZ_ASSERT(tm_storage_is_readonly(tm_storage_of(t)));
    tm_free(t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    g_data = data;
    g_size = size;
    tm_gguf *g = tm_gguf_open_memory(data, size);
    if (!g) {
        FUZZ_ASSERT(tm_last_status() == TM_EFORMAT ||
                    tm_last_status() == TM_ENOMEM);
        if (tm_last_status() == TM_EFORMAT)
            FUZZ_ASSERT(strstr(tm_last_error(),
                               "tm_gguf_open_memory: <memory>: "));
        return 0;
    }
    FUZZ_ASSERT(tm_gguf_version(g) == 2 || tm_gguf_version(g) == 3);
    size_t a = tm_gguf_alignment(g);
    FUZZ_ASSERT(a && !(a & (a - 1)) && tm_gguf_data_offset(g) % a == 0);
    int64_t nkv = tm_gguf_n_kv(g), nt = tm_gguf_n_tensors(g);
    FUZZ_ASSERT(nkv >= 0 && nt >= 0 && (uint64_t)(nkv + nt) <= size);
    for (int64_t k = 0; k < nkv; k++) {
        const char *key = tm_gguf_key(g, k);
        FUZZ_ASSERT(key && tm_gguf_find_key(g, key) == k);
        FUZZ_ASSERT(tm_gguf_get(g, key) == tm_gguf_kv_value(g, k));
        walk(tm_gguf_kv_value(g, k), 0);
    }
    FUZZ_ASSERT(tm_gguf_key(g, nkv) == NULL);
    for (int64_t k = 0; k < nt; k++) check_tensor(g, k);
    /* tensors outlive the reader */
    tm_tensor *first = nt ? tm_gguf_tensor(g, 0) : NULL;
    tm_gguf_close(g);
    if (first && tm_nbytes(first)) {
        volatile uint8_t x = ((const uint8_t *)tm_data(first))[0];
        (void)x;
    }
    tm_free(first);
    return 0;
}

#define TM_FUZZ_NAME "fuzz_gguf"
#include "standalone.h"
