/*
 * fuzz_idx.c — fuzz target for the IDX reader and the gzip / zlib /
 * DEFLATE decoder under it (io/idx.c, io/inflate.c).
 *
 * With libFuzzer (make fuzz-idx: clang -fsanitize=fuzzer,address)
 * LLVMFuzzerTestOneInput is the entry point.  Built with
 * -DTM_FUZZ_STANDALONE it is a plain program that runs every file named on
 * its command line (directories: every file in them) through the same
 * function (make fuzz-corpus).
 *
 * Each input goes to tm_idx_load_buffer (gzip detected by its magic), and
 * as a raw DEFLATE and a zlib stream to the decoder.  Invariants: a
 * failure leaves a negative status and a message; an accepted IDX tensor
 * has exactly (bytes - header) / element-size elements; a gzip input that
 * decodes gives the same tensor as its decoded bytes; decoded sizes stay
 * within the limit.  A broken invariant aborts (a finding), as does a
 * crash or a sanitizer report.
 */
#include "foundry.h"

#include "../../io/inflate.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void tm__dealloc(void *ptr);

#define FUZZ_ASSERT(c)                                                        \
    do {                                                                      \
        if (!(c)) {                                                           \
            fprintf(stderr, "fuzz_idx: invariant failed: %s (%s:%d)\n", #c,  \
                    __FILE__, __LINE__);                                      \
            abort();                                                          \
        }                                                                     \
    } while (0)

static void check_failure(void)
{
    FUZZ_ASSERT(tm_last_status() < 0);
    FUZZ_ASSERT(tm_last_error()[0] != '\0');
}

/* An accepted raw IDX buffer: its tensor must account for every byte. */
static void check_idx(const tm_tensor *t, const uint8_t *raw, size_t n)
{
    FUZZ_ASSERT(n >= 4 && raw[0] == 0 && raw[1] == 0);
    FUZZ_ASSERT(tm_ndim(t) == raw[3]);
    size_t header = 4 + 4 * (size_t)raw[3];
    FUZZ_ASSERT((size_t)tm_numel(t) * tm_dtype_size(tm_dtype_of(t)) ==
                n - header);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const size_t limit = 1 << 22;
    tm_clear_error();
    tm_tensor *t = tm_idx_load_buffer(data, size);
    uint8_t *raw = NULL;
    size_t rn = 0;
    if (tm__is_gzip(data, size)) {
        tm_status st = tm__gunzip(data, size, (size_t)-1 / 2, &raw, &rn,
                                  "fuzz", "input");
        FUZZ_ASSERT((st == TM_OK) == (raw != NULL));
        if (t) {
            FUZZ_ASSERT(st == TM_OK);
            check_idx(t, raw, rn);
            tm_tensor *u = tm_idx_load_buffer(raw, rn);
            FUZZ_ASSERT(u && tm_dtype_of(u) == tm_dtype_of(t) &&
                        tm_numel(u) == tm_numel(t));
            FUZZ_ASSERT(memcmp(tm_data(u), tm_data(t), tm_nbytes(t)) == 0);
            tm_free(u);
        }
        tm__dealloc(raw);
    } else if (t) {
        check_idx(t, data, size);
    }
    if (!t) check_failure();
    tm_free(t);

    size_t used = 0;
    raw = NULL;
    tm_clear_error();
    if (tm__inflate_raw(data, size, limit, &raw, &rn, &used, "fuzz",
                        "input") == TM_OK) {
        FUZZ_ASSERT(raw && rn <= limit && used <= size);
        tm__dealloc(raw);
    } else {
        check_failure();
    }
    raw = NULL;
    tm_clear_error();
    if (tm__zlib_uncompress(data, size, limit, &raw, &rn, "fuzz",
                            "input") == TM_OK) {
        FUZZ_ASSERT(raw && rn <= limit);
        tm__dealloc(raw);
    } else {
        check_failure();
    }
    return 0;
}

#define TM_FUZZ_NAME "fuzz_idx"
#include "standalone.h"
