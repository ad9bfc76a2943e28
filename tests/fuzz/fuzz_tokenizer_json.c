/*
 * fuzz_tokenizer_json.c — fuzz target for the tokenizer.json loader and
 * the encoder behind it (io/tokenizer_json.c, io/tokenizer_encode.c).
 *
 * With libFuzzer (make fuzz-tokenizer-json) LLVMFuzzerTestOneInput is the
 * entry point; with -DTM_FUZZ_STANDALONE it runs every file named on its
 * command line (make fuzz-corpus).
 *
 * Invariants: a refused input leaves a negative status and a message; an
 * accepted tokenizer saves to JSON that loads again with the same hash and
 * the same ids; encoding the input bytes either fails cleanly or gives ids
 * in range that decode.  A broken invariant aborts (a finding).
 */
#include "foundry.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_ASSERT(c)                                                        \
    do {                                                                      \
        if (!(c)) {                                                           \
            fprintf(stderr, "fuzz_tokenizer_json: invariant failed: %s (%s:%d)\n", \
                    #c, __FILE__, __LINE__);                                  \
            abort();                                                          \
        }                                                                     \
    } while (0)

static const char sample[] = "Hello world's 123 <|endoftext|> caf\xc3\xa9 \xf0\x9f\x98\x80\n\n  x\xff";

static void check_encode(const tm_tokenizer *t, const tm_tokenizer *u, const char *s, size_t n)
{
    tm_token_buf a = {0}, b = {0};
    tm_status sa = tm_tokenizer_encode_ex(t, s, n, true, &a);
    tm_status sb = tm_tokenizer_encode_ex(u, s, n, true, &b);
    FUZZ_ASSERT((sa < 0) == (sb < 0));
    if (sa == TM_OK) {
        FUZZ_ASSERT(a.n == b.n && (a.n == 0 || memcmp(a.ids, b.ids, (size_t)a.n * sizeof *a.ids) == 0));
        for (int64_t i = 0; i < a.n; i++)
            FUZZ_ASSERT(a.ids[i] >= 0 && a.ids[i] < tm_tokenizer_vocab_size(t));
        size_t len;
        char *d = tm_tokenizer_decode(t, a.ids, a.n, false, &len);
        FUZZ_ASSERT(d != NULL);
        free(d);
    } else {
        FUZZ_ASSERT(tm_last_error()[0] != '\0');
    }
    tm_token_buf_free(&a);
    tm_token_buf_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tm_clear_error();
    tm_tokenizer *t = tm_tokenizer_from_json((const char *)data, size);
    if (!t) {
        FUZZ_ASSERT(tm_last_status() < 0);
        FUZZ_ASSERT(tm_last_error()[0] != '\0');
        return 0;
    }
    size_t n;
    char *js = tm_tokenizer_to_json(t, &n);
    FUZZ_ASSERT(js != NULL);
    tm_tokenizer *u = tm_tokenizer_from_json(js, n);
    if (!u)
        fprintf(stderr, "fuzz_tokenizer_json: reload failed: %s\n", tm_last_error());
    FUZZ_ASSERT(u != NULL);
    FUZZ_ASSERT(tm_tokenizer_hash(t) == tm_tokenizer_hash(u));
    FUZZ_ASSERT(tm_tokenizer_vocab_size(t) == tm_tokenizer_vocab_size(u));
    check_encode(t, u, sample, sizeof sample - 1);
    check_encode(t, u, (const char *)data, size < 4096 ? size : 4096);
    free(js);
    tm_tokenizer_free(u);
    tm_tokenizer_free(t);
    return 0;
}

#define TM_FUZZ_NAME "fuzz_tokenizer_json"
#include "standalone.h"
