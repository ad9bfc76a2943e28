/*
 * fuzz_safetensors.c — fuzz target for the safetensors reader and the JSON
 * parser under it.
 *
 * With libFuzzer (make fuzz-safetensors: clang -fsanitize=fuzzer,address)
 * LLVMFuzzerTestOneInput is the entry point.  Built with
 * -DTM_FUZZ_STANDALONE it is a plain program that runs every file named on
 * its command line (directories: every file in them) through the same
 * function (make fuzz-corpus, which CI runs under ASan + UBSan).
 *
 * Each input goes to the JSON parser as is, then to
 * tm_safetensors_open_memory; when that accepts it, every listing call is
 * made, every tensor is read both as a view and as a copy, and the two must
 * hold the same bytes as the input at the validated offsets.  Anything the
 * library returns must be consistent, so a broken invariant aborts (a
 * finding), as does a crash or a sanitizer report.
 */
#include "foundry.h"

#include "../../io/json.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_ASSERT(c)                                                        \
    do {                                                                      \
        if (!(c)) {                                                           \
            fprintf(stderr, "fuzz_safetensors: invariant failed: %s (%s:%d)"  \
                    "\n", #c, __FILE__, __LINE__);                            \
            abort();                                                          \
        }                                                                     \
    } while (0)

static void check_tensor(const tm_safetensors *f, int i,
                         const uint8_t *data, size_t size)
{
    const char *name = tm_safetensors_name(f, i);
    FUZZ_ASSERT(name && tm_safetensors_find(f, name) == i);
    FUZZ_ASSERT(tm_safetensors_dtype_name(f, i));
    int nd = tm_safetensors_ndim(f, i);
    FUZZ_ASSERT(nd >= 0 && nd <= TM_MAX_DIMS);
    const int64_t *shape = tm_safetensors_shape(f, i);
    FUZZ_ASSERT(shape);
    uint64_t b, e, ds;
    FUZZ_ASSERT(tm_safetensors_offsets(f, i, &b, &e, &ds) == TM_OK);
    FUZZ_ASSERT(b <= e && ds + e <= size);
    tm_dtype dt;
    if (tm_safetensors_dtype(f, i, &dt) != TM_OK) {
        FUZZ_ASSERT(tm_last_status() == TM_EDTYPE);
        FUZZ_ASSERT(tm_safetensors_get(f, name) == NULL);
        return;
    }
    tm_tensor *v = tm_safetensors_get(f, name);
    tm_tensor *c = tm_safetensors_load(f, name);
    /* only allocation can fail here (the file is validated) */
    if (v && c) {
        FUZZ_ASSERT(tm_nbytes(v) == e - b && tm_nbytes(c) == e - b);
        FUZZ_ASSERT(tm_ndim(v) == nd);
        for (int d = 0; d < nd; d++) FUZZ_ASSERT(tm_shape(v)[d] == shape[d]);
        if (e > b) {
            FUZZ_ASSERT(!memcmp(tm_data(v), data + ds + b, e - b));
            FUZZ_ASSERT(!memcmp(tm_data(c), data + ds + b, e - b));
        }
        FUZZ_ASSERT(tm_fill_(v, 0) == TM_ESTATE); /* read-only view */
    } else {
        FUZZ_ASSERT(tm_last_status() == TM_ENOMEM);
    }
    tm_free(v);
    tm_free(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tm__json_doc doc;
    if (tm__json_parse(&doc, (const char *)data, size, "fuzz", "") == TM_OK) {
        FUZZ_ASSERT(doc.n >= 1 && doc.nodes[0].next == doc.n);
        tm__json_free(&doc);
    }
    tm_safetensors *f = tm_safetensors_open_memory(data, size);
    if (!f) {
        FUZZ_ASSERT(tm_last_status() == TM_EFORMAT ||
                    tm_last_status() == TM_ENOMEM);
        if (tm_last_status() == TM_EFORMAT)
            FUZZ_ASSERT(strstr(tm_last_error(),
                               "tm_safetensors_open_memory: <memory>: "));
        return 0;
    }
    int n = tm_safetensors_count(f);
    FUZZ_ASSERT(n >= 0);
    for (int i = 0; i < n; i++) check_tensor(f, i, data, size);
    FUZZ_ASSERT(tm_safetensors_name(f, n) == NULL);
    int nm = tm_safetensors_metadata_count(f);
    FUZZ_ASSERT(nm >= 0 && (nm == 0 || tm_safetensors_has_metadata(f)));
    for (int i = 0; i < nm; i++) {
        const char *k = tm_safetensors_metadata_key(f, i);
        const char *v = tm_safetensors_metadata_value(f, i);
        FUZZ_ASSERT(k && v && tm_safetensors_metadata_get(f, k) == v);
    }
    tm_safetensors_close(f);
    return 0;
}

#define TM_FUZZ_NAME "fuzz_safetensors"
#include "standalone.h"
