/*
 * fuzz_dataset.c — fuzz target for the token-dataset reader.
 *
 * With libFuzzer (make fuzz-dataset) LLVMFuzzerTestOneInput is the entry
 * point; built with -DTM_FUZZ_STANDALONE it runs every file named on its
 * command line (make fuzz-corpus, over tests/fuzz/corpus/dataset).
 *
 * Each input goes to tm_token_dataset_open_memory.  When that accepts it,
 * every split is listed, read whole and in a window crossing documents,
 * the unigram baseline is computed and a loader draws a batch: everything
 * must agree with the header (token counts per split add up, every token
 * below the vocab size).  A broken invariant aborts, as does a crash or a
 * sanitizer report.
 */
#include "foundry.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_ASSERT(c)                                                        \
    do {                                                                      \
        if (!(c)) {                                                           \
            fprintf(stderr, "fuzz_dataset: invariant failed: %s (%s:%d)\n",   \
                    #c, __FILE__, __LINE__);                                  \
            abort();                                                          \
        }                                                                     \
    } while (0)

static void check_split(tm_token_dataset *ds, tm_token_split s)
{
    int64_t n = tm_token_dataset_tokens(ds, s), vocab = tm_token_dataset_vocab_size(ds);
    FUZZ_ASSERT(n >= 0 && tm_token_dataset_docs(ds, s) >= 0 &&
                tm_token_dataset_bytes(ds, s) >= 0);
    int64_t m = n < 4096 ? n : 4096;
    int64_t *buf = malloc(sizeof(int64_t) * (size_t)(m + 1));
    if (!buf) return;
    FUZZ_ASSERT(tm_token_dataset_read(ds, s, n - m, m, buf) == TM_OK);
    for (int64_t i = 0; i < m; i++) FUZZ_ASSERT(buf[i] >= 0 && buf[i] < vocab);
    FUZZ_ASSERT(tm_token_dataset_read(ds, s, n, 1, buf) == TM_ERANGE);
    free(buf);
    if (n > 0 && vocab <= (1 << 20)) {
        double u = tm_token_dataset_unigram_loss(ds, TM_SPLIT_ALL, s);
        FUZZ_ASSERT(isfinite(u) && u >= 0);
    }
    if (n >= 3) {
        tm_token_loader *l = tm_token_loader_new(ds, s, 2, 2, 1);
        FUZZ_ASSERT(l);
        tm_tensor *x = NULL, *y = NULL;
        if (tm_token_loader_next(l, &x, &y) == TM_OK) {
            const int64_t *px = tm_data(x);
            for (int i = 0; i < 4; i++) FUZZ_ASSERT(px[i] >= 0 && px[i] < vocab);
        }
        tm_free(x);
        tm_free(y);
        tm_token_loader_free(l);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tm_token_dataset *ds = tm_token_dataset_open_memory(data, size);
    if (!ds) {
        FUZZ_ASSERT(tm_last_status() == TM_EFORMAT || tm_last_status() == TM_ENOMEM);
        if (tm_last_status() == TM_EFORMAT)
            FUZZ_ASSERT(strstr(tm_last_error(), "tm_token_dataset_open_memory: <memory>: "));
        return 0;
    }
    int64_t all = tm_token_dataset_tokens(ds, TM_SPLIT_ALL);
    FUZZ_ASSERT(tm_token_dataset_tokens(ds, TM_SPLIT_TRAIN) +
                tm_token_dataset_tokens(ds, TM_SPLIT_VAL) == all);
    FUZZ_ASSERT(tm_token_dataset_docs(ds, TM_SPLIT_TRAIN) +
                tm_token_dataset_docs(ds, TM_SPLIT_VAL) ==
                tm_token_dataset_docs(ds, TM_SPLIT_ALL));
    FUZZ_ASSERT(tm_token_dataset_bytes(ds, TM_SPLIT_TRAIN) +
                tm_token_dataset_bytes(ds, TM_SPLIT_VAL) ==
                tm_token_dataset_bytes(ds, TM_SPLIT_ALL));
    check_split(ds, TM_SPLIT_ALL);
    check_split(ds, TM_SPLIT_TRAIN);
    check_split(ds, TM_SPLIT_VAL);
    FUZZ_ASSERT(tm_token_dataset_set_val_fraction(ds, 0.5) == TM_OK ||
                tm_last_status() == TM_ENOMEM);
    check_split(ds, TM_SPLIT_VAL);
    tm_token_dataset_close(ds);
    return 0;
}

#define TM_FUZZ_NAME "fuzz_dataset"
#include "standalone.h"
